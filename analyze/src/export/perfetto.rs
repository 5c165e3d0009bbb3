//! A Perfetto trace (`perfetto.protos.Trace`: a stream of `TracePacket`s)
//! that opens in the Perfetto UI and its trace processor:
//!
//! - a counter track per board, and for a virtual trace one per process
//!   (under a process track with its pid), holding the bandwidth in MB/s
//!   of each interval of `interval_ns` (64 bytes per reference); a
//!   process's counter gets a value for each interval in which it
//!   referenced memory and a 0 where it goes idle, nothing while it stays
//!   idle (a counter holds its last value), so thousands of processes do
//!   not write a value each in every interval;
//! - an instant event for every I-code tag and inner command on the track
//!   "I-codes", named after the event (a tag that several boards saw within
//!   1 µs of each other is one event);
//! - a slice for every pair of user events named `X…begin` / `X…end`
//!   (`sort-begin`/`sort-end`, `phase_begin`/`phase_end`), on a track of
//!   its own per pair name, so slices of different pairs may overlap.
//!
//! Timestamps are ns since the trace's first record. The messages below
//! are this project's own declaration of the fields it uses, with the
//! field numbers of Perfetto's protos (`trace_packet.proto`,
//! `track_descriptor.proto`, `counter_descriptor.proto`,
//! `process_descriptor.proto`, `track_event.proto`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;

use hmtt_format::config::{classify_event, EventKind};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;
use prost::Message;

use super::{ExportError, RecordWriter, TraceKind, TraceMeta};
use hmtt_merge::names::event_name;

/// `Trace`: the file is its `packet` field repeated, so each packet is
/// written as a `Trace` holding that one packet.
#[derive(Clone, PartialEq, Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CounterDescriptor {
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TrackEvent {
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
}

/// `TrackEvent.Type`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
pub const TYPE_INSTANT: i32 = 3;
pub const TYPE_COUNTER: i32 = 4;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// The one writer sequence of the file.
pub const SEQUENCE_ID: u32 = 1;

/// Track uuids: fixed ranges so a board, a process and a pair never meet.
pub const ICODE_TRACK: u64 = 1;
pub const BOARD_TRACK_BASE: u64 = 0x100;
pub const PROCESS_TRACK_BASE: u64 = 1 << 40;
pub const PROCESS_COUNTER_BASE: u64 = 2 << 40;
pub const PAIR_TRACK_BASE: u64 = 3 << 40;

const LINE_BYTES: f64 = 64.0;
/// A tag that another board saw this close before is the same I-code
/// (boards see one I-code a few clocks apart).
pub const SAME_ICODE_PS: u64 = 1_000_000;

/// The pair name of a user event named `X…begin` or `X…end`, and whether
/// it begins: `sort-begin` → (`sort`, true).
pub fn slice_of(name: &str) -> Option<(&str, bool)> {
    let trim = |s: &'static str, begins: bool| {
        name.strip_suffix(s)
            .map(|p| (p.trim_end_matches(['-', '_', ' ', '.', ':']), begins))
    };
    trim("begin", true)
        .or_else(|| trim("BEGIN", true))
        .or_else(|| trim("end", false))
        .or_else(|| trim("END", false))
        .filter(|(p, _)| !p.is_empty())
}

pub struct PerfettoWriter<W: Write> {
    out: W,
    meta: TraceMeta,
    interval_ps: u64,
    /// Index of the interval being counted, and its references per board
    /// and per process.
    interval: Option<u64>,
    board_refs: Box<[u64; 256]>,
    process_refs: BTreeMap<u32, u64>,
    boards_seen: Vec<bool>,
    processes_seen: HashSet<u32>,
    /// Processes whose counter was last written above 0: they get one more
    /// value (0) when they go idle, and none after that until they
    /// reference memory again, so the file grows with the references, not
    /// with intervals × processes.
    processes_active: BTreeSet<u32>,
    /// Pair tracks by name, and how many slices are open on each.
    pairs: HashMap<String, (u64, u32)>,
    /// Per tag (kind and value), when and on which board it was last
    /// written: the same tag seen by another board within
    /// `SAME_ICODE_PS` is the same I-code.
    last_tags: HashMap<u64, (u64, u8)>,
    buf: Vec<u8>,
}

impl<W: Write> PerfettoWriter<W> {
    pub fn new(out: W, meta: TraceMeta, interval_ns: u64) -> Result<Self, ExportError> {
        if interval_ns == 0 {
            return Err(ExportError::Invalid("the interval must be > 0 ns".into()));
        }
        let mut w = PerfettoWriter {
            out,
            meta,
            interval_ps: interval_ns.saturating_mul(1000),
            interval: None,
            board_refs: Box::new([0; 256]),
            process_refs: BTreeMap::new(),
            boards_seen: vec![false; 256],
            processes_seen: HashSet::new(),
            processes_active: BTreeSet::new(),
            pairs: HashMap::new(),
            last_tags: HashMap::new(),
            buf: Vec::with_capacity(256),
        };
        w.packet(TracePacket {
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(ICODE_TRACK),
                name: Some("I-codes".into()),
                ..Default::default()
            }),
            ..Default::default()
        })?;
        Ok(w)
    }

    fn packet(&mut self, mut p: TracePacket) -> Result<(), ExportError> {
        p.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        self.buf.clear();
        Trace { packet: vec![p] }
            .encode(&mut self.buf)
            .map_err(|e| ExportError::Invalid(e.to_string()))?;
        self.out.write_all(&self.buf)?;
        Ok(())
    }

    fn descriptor(&mut self, d: TrackDescriptor) -> Result<(), ExportError> {
        self.packet(TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        })
    }

    fn event(&mut self, ts_ns: u64, e: TrackEvent) -> Result<(), ExportError> {
        self.packet(TracePacket {
            timestamp: Some(ts_ns),
            track_event: Some(e),
            ..Default::default()
        })
    }

    fn counter(&mut self, ts_ns: u64, track: u64, value: f64) -> Result<(), ExportError> {
        self.event(
            ts_ns,
            TrackEvent {
                r#type: Some(TYPE_COUNTER),
                track_uuid: Some(track),
                double_counter_value: Some(value),
                ..Default::default()
            },
        )
    }

    /// Writes the counters of the interval being counted (every track seen
    /// so far gets a value, 0 when idle, so the UI draws the drop).
    fn close_interval(&mut self) -> Result<(), ExportError> {
        let Some(i) = self.interval else {
            return Ok(());
        };
        let ts_ns = i * self.interval_ps / 1000;
        let per_ref_mbs = LINE_BYTES / (self.interval_ps as f64 * 1e-12) / 1e6;
        let boards: Vec<u8> = (0..=255u8)
            .filter(|b| self.boards_seen[usize::from(*b)])
            .collect();
        for b in boards {
            let n = self.board_refs[usize::from(b)];
            self.counter(
                ts_ns,
                BOARD_TRACK_BASE + u64::from(b),
                n as f64 * per_ref_mbs,
            )?;
        }
        // The processes that referenced memory in this interval, and those
        // that did in the last one written (their counter drops to 0).
        let mut pids: Vec<u32> = self.process_refs.keys().copied().collect();
        pids.extend(self.processes_active.iter().copied());
        pids.sort_unstable();
        pids.dedup();
        for p in pids {
            let n = self.process_refs.get(&p).copied().unwrap_or(0);
            self.counter(
                ts_ns,
                PROCESS_COUNTER_BASE + u64::from(p),
                n as f64 * per_ref_mbs,
            )?;
            if n > 0 {
                self.processes_active.insert(p);
            } else {
                self.processes_active.remove(&p);
            }
        }
        self.board_refs.fill(0);
        self.process_refs.clear();
        Ok(())
    }

    /// Counts a reference of board `b` at `tick` in its interval, closing
    /// the intervals before it.
    #[inline]
    fn count_board(&mut self, tick: u64, b: u8) -> Result<(), ExportError> {
        let i = self.meta.ps_since_start(tick) / self.interval_ps;
        if self.interval != Some(i) || !self.boards_seen[usize::from(b)] {
            self.enter(i, b)?;
        }
        self.board_refs[usize::from(b)] += 1;
        Ok(())
    }

    /// Makes `i` the interval being counted and `b` a board seen.
    fn enter(&mut self, i: u64, b: u8) -> Result<(), ExportError> {
        if self.interval != Some(i) {
            self.close_interval()?;
            // After an idle stretch the counters drop to 0 where it starts.
            if let Some(prev) = self.interval {
                if i > prev + 1 {
                    self.interval = Some(prev + 1);
                    self.close_interval()?;
                }
            }
            self.interval = Some(i);
        }
        if !self.boards_seen[usize::from(b)] {
            self.boards_seen[usize::from(b)] = true;
            self.descriptor(TrackDescriptor {
                uuid: Some(BOARD_TRACK_BASE + u64::from(b)),
                name: Some(format!("board {b} bandwidth (MB/s)")),
                counter: Some(CounterDescriptor {
                    unit: None,
                    unit_name: Some("MB/s".into()),
                }),
                ..Default::default()
            })?;
        }
        Ok(())
    }

    fn count_access(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        self.count_board(v.tick, v.board())?;
        if self.meta.kind == TraceKind::Virtual {
            if let Some((pid, _)) = v.owner() {
                if self.processes_seen.insert(pid) {
                    self.descriptor(TrackDescriptor {
                        uuid: Some(PROCESS_TRACK_BASE + u64::from(pid)),
                        process: Some(ProcessDescriptor {
                            pid: Some(pid as i32),
                            process_name: Some(format!("pid {pid}")),
                        }),
                        ..Default::default()
                    })?;
                    self.descriptor(TrackDescriptor {
                        uuid: Some(PROCESS_COUNTER_BASE + u64::from(pid)),
                        parent_uuid: Some(PROCESS_TRACK_BASE + u64::from(pid)),
                        name: Some(format!("pid {pid} bandwidth (MB/s)")),
                        counter: Some(CounterDescriptor {
                            unit: None,
                            unit_name: Some("MB/s".into()),
                        }),
                        ..Default::default()
                    })?;
                }
                *self.process_refs.entry(pid).or_insert(0) += 1;
            }
        }
        Ok(())
    }

    fn tag(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        let r = v.physical();
        let ps = self.meta.ps_since_start(r.tick);
        let tag = r.packed & !(0xff << 56);
        if let Some(&(last_ps, board)) = self.last_tags.get(&tag) {
            if board != r.board() && ps - last_ps <= SAME_ICODE_PS {
                return Ok(());
            }
        }
        self.last_tags.insert(tag, (ps, r.board()));
        let index = r.value() as u32;
        let name = event_name(index, &self.meta.names);
        let ts_ns = ps / 1000;
        self.event(
            ts_ns,
            TrackEvent {
                r#type: Some(TYPE_INSTANT),
                track_uuid: Some(ICODE_TRACK),
                categories: vec![match r.kind() {
                    RecordKind::Cmd => "command".into(),
                    _ => "icode".into(),
                }],
                name: Some(name.clone()),
                ..Default::default()
            },
        )?;
        if !matches!(classify_event(index), EventKind::User(_)) || r.kind() == RecordKind::Cmd {
            return Ok(());
        }
        let Some((pair, begins)) = slice_of(&name) else {
            return Ok(());
        };
        let next_uuid = PAIR_TRACK_BASE + self.pairs.len() as u64;
        let (uuid, open) = match self.pairs.get(pair) {
            Some(&t) => t,
            None => {
                self.pairs.insert(pair.to_string(), (next_uuid, 0));
                self.descriptor(TrackDescriptor {
                    uuid: Some(next_uuid),
                    name: Some(pair.to_string()),
                    ..Default::default()
                })?;
                (next_uuid, 0)
            }
        };
        // An END without its BEGIN stays an instant only.
        if !begins && open == 0 {
            return Ok(());
        }
        self.pairs.insert(
            pair.to_string(),
            (uuid, if begins { open + 1 } else { open - 1 }),
        );
        self.event(
            ts_ns,
            TrackEvent {
                r#type: Some(if begins {
                    TYPE_SLICE_BEGIN
                } else {
                    TYPE_SLICE_END
                }),
                track_uuid: Some(uuid),
                name: begins.then(|| pair.to_string()),
                ..Default::default()
            },
        )
    }
}

impl<W: Write> RecordWriter for PerfettoWriter<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        match v.kind() {
            RecordKind::Read | RecordKind::Write => self.count_access(v),
            RecordKind::Tag { .. } | RecordKind::Cmd => self.tag(v),
            _ => Ok(()),
        }
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        for r in records {
            if r.is_access() {
                self.count_board(r.tick, r.board())?;
            } else if matches!(r.kind(), RecordKind::Tag { .. } | RecordKind::Cmd) {
                self.tag(&VirtualRecord::marker(*r))?;
            }
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        self.close_interval()?;
        // A last zero so the final interval has a width in the UI.
        if let Some(i) = self.interval {
            self.interval = Some(i + 1);
            self.close_interval()?;
        }
        if self.pairs.values().any(|&(_, open)| open > 0) {
            tracing::warn!("some BEGIN events have no END: their slices stay open");
        }
        Ok(self.out.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::TraceKind;
    use hmtt_format::events::EventNames;

    /// Issue 41: 4,000 processes, each referencing memory in one interval
    /// of 4,000, write a few values each, not one in every interval.
    #[test]
    fn a_process_counter_is_written_only_around_its_references() {
        let meta = TraceMeta {
            kind: TraceKind::Virtual,
            tick_ps: 1000,
            first_tick: 0,
            names: EventNames::default(),
        };
        let mut w = PerfettoWriter::new(Vec::new(), meta, 1).unwrap();
        let processes = 4000u32;
        for pid in 0..processes {
            let r = TraceRecord::access(u64::from(pid), 0, false, u64::from(pid) * 64);
            w.write(&VirtualRecord::reference(
                r,
                Some((pid + 1, 0x1000)),
                false,
                None,
            ))
            .unwrap();
        }
        let out = std::mem::take(&mut w.out);
        let trace = Trace::decode(&out[..]).unwrap();
        let mut per_track: HashMap<u64, Vec<f64>> = HashMap::new();
        for p in &trace.packet {
            if let Some(e) = &p.track_event {
                if e.r#type == Some(TYPE_COUNTER) {
                    per_track
                        .entry(e.track_uuid.unwrap())
                        .or_default()
                        .push(e.double_counter_value.unwrap());
                }
            }
        }
        // Every process but the last two (the interval of the last is
        // still open, so the one before has not gone idle yet): its value,
        // then 0 when it goes idle.
        for pid in 1..processes - 1 {
            let values = &per_track[&(PROCESS_COUNTER_BASE + u64::from(pid))];
            assert_eq!(values.len(), 2, "pid {pid}: {values:?}");
            assert!(values[0] > 0.0 && values[1] == 0.0, "pid {pid}: {values:?}");
        }
        assert!(out.len() < 1 << 20, "{} bytes", out.len());
    }

    #[test]
    fn pairs_are_named_by_what_precedes_begin_or_end() {
        assert_eq!(slice_of("sort-begin"), Some(("sort", true)));
        assert_eq!(slice_of("phase_end"), Some(("phase", false)));
        assert_eq!(slice_of("a begin"), Some(("a", true)));
        assert_eq!(slice_of("LOADBEGIN"), Some(("LOAD", true)));
        assert_eq!(slice_of("begin"), None);
        assert_eq!(slice_of("-end"), None);
        assert_eq!(slice_of("weekend_trip"), None);
    }
}
