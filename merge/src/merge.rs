//! The multi-board merge: each board's stream is already in time order, so
//! the boards are interleaved by a k-way merge on the tick (ties go to the
//! lower board id). Records flow in blocks into a [`RecordSink`]; memory
//! stays bounded by one decoded block per board.

use hmtt_format::trace::TraceRecord;
use hmtt_format::AddressMapping;

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::reassemble::{BoardStream, ChannelJoin, DEFAULT_REORDER_DEPTH};
use crate::report::MergeReport;

/// Where merged records go.
pub trait RecordSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError>;
}

/// Keeps every record in memory (tests, small runs).
#[derive(Debug, Default)]
pub struct VecSink(pub Vec<TraceRecord>);

impl RecordSink for VecSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.0.extend_from_slice(records);
        Ok(())
    }
}

/// Counts records and drops them (measuring decode speed alone).
#[derive(Debug, Default)]
pub struct CountSink {
    pub records: u64,
    /// Sum of the packed words, so the work cannot be optimised away.
    pub checksum: u64,
}

impl RecordSink for CountSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.records += records.len() as u64;
        for r in records {
            self.checksum = self.checksum.wrapping_add(r.packed ^ r.tick);
        }
        Ok(())
    }
}

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Mapping file text (format.md §3); `None`: the linear mapping.
    pub mapping_toml: Option<String>,
    /// Packets each port may be out of place.
    pub reorder_depth: usize,
    /// With several boards, one per memory channel: the channel interleave
    /// (blocks of `1 << shift` bytes, channel = the board's rank among the
    /// board ids). `None`: each board's addresses are used as they are.
    pub interleave_shift: Option<u32>,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            mapping_toml: None,
            reorder_depth: DEFAULT_REORDER_DEPTH,
            interleave_shift: None,
        }
    }
}

/// Records per block handed to the sink.
const BLOCK: usize = 1 << 14;

struct Lane<'a> {
    stream: BoardStream<'a>,
    buf: Vec<TraceRecord>,
    pos: usize,
    done: bool,
}

impl Lane<'_> {
    /// Makes sure the lane has a record to offer, unless it is finished.
    fn ready(&mut self) -> Result<(), MergeError> {
        while self.pos == self.buf.len() && !self.done {
            self.buf.clear();
            self.pos = 0;
            while self.buf.len() < BLOCK {
                if !self.stream.fill(&mut self.buf)? {
                    self.done = true;
                    break;
                }
            }
        }
        Ok(())
    }
    fn head(&self) -> Option<u64> {
        self.buf.get(self.pos).map(|r| r.tick)
    }
}

/// Merges every board of `set` into `sink`. `progress` is called now and
/// then with the capture bytes consumed so far.
pub fn merge(
    set: &CaptureSet,
    opts: &MergeOptions,
    sink: &mut dyn RecordSink,
    progress: &mut dyn FnMut(u64),
) -> Result<MergeReport, MergeError> {
    let geometry = set.geometry.unwrap_or_default();
    let mapping = match &opts.mapping_toml {
        Some(text) => AddressMapping::from_toml(text, geometry)?,
        None => AddressMapping::linear(geometry),
    };
    let mut lanes = Vec::new();
    let channels = set.boards.len() as u64;
    for (rank, &board) in set.boards.keys().enumerate() {
        let channel = match opts.interleave_shift {
            Some(shift) if channels > 1 => Some(ChannelJoin {
                channels,
                channel: rank as u64,
                shift: shift.clamp(6, 40),
            }),
            _ => None,
        };
        lanes.push(Lane {
            stream: BoardStream::new(set, board, mapping.clone(), channel, opts.reorder_depth)?,
            buf: Vec::with_capacity(BLOCK + 4096),
            pos: 0,
            done: false,
        });
    }
    let mut records = 0u64;
    let mut out: Vec<TraceRecord> = Vec::with_capacity(BLOCK);
    let bytes_done = |lanes: &[Lane]| lanes.iter().map(|l| l.stream.report.bytes).sum::<u64>();
    if lanes.len() == 1 {
        let lane = &mut lanes[0];
        loop {
            lane.ready()?;
            if lane.pos == lane.buf.len() {
                break;
            }
            sink.write(&lane.buf[lane.pos..])?;
            records += (lane.buf.len() - lane.pos) as u64;
            lane.pos = lane.buf.len();
            progress(lane.stream.report.bytes);
        }
    } else {
        for l in lanes.iter_mut() {
            l.ready()?;
        }
        while lanes.len() == 2 {
            // Two boards (the common case): a tight two-way merge.
            let (a, b) = lanes.split_at_mut(1);
            let (a, b) = (&mut a[0], &mut b[0]);
            if a.pos == a.buf.len() || b.pos == b.buf.len() {
                break;
            }
            let (ab, bb) = (&a.buf, &b.buf);
            let (mut i, mut j) = (a.pos, b.pos);
            let room = BLOCK.saturating_sub(out.len()).max(1);
            let stop = out.len() + room;
            while i < ab.len() && j < bb.len() && out.len() < stop {
                // Ties go to lane 0, the lower board id.
                if ab[i].tick <= bb[j].tick {
                    out.push(ab[i]);
                    i += 1;
                } else {
                    out.push(bb[j]);
                    j += 1;
                }
            }
            a.pos = i;
            b.pos = j;
            if a.pos == a.buf.len() {
                a.ready()?;
            }
            if b.pos == b.buf.len() {
                b.ready()?;
            }
            if out.len() >= BLOCK {
                sink.write(&out)?;
                records += out.len() as u64;
                out.clear();
                progress(bytes_done(&lanes));
            }
        }
        loop {
            // The lane with the earliest head runs while it stays before the
            // second earliest head (ties go to the lower board).
            let mut first: Option<(u64, usize)> = None;
            let mut second: Option<(u64, usize)> = None;
            for (i, l) in lanes.iter().enumerate() {
                if let Some(t) = l.head() {
                    let key = (t, i);
                    if first.is_none_or(|f| key < f) {
                        second = first;
                        first = Some(key);
                    } else if second.is_none_or(|s| key < s) {
                        second = Some(key);
                    }
                }
            }
            let Some((_, i)) = first else { break };
            let lane = &mut lanes[i];
            let buf = &lane.buf;
            let mut p = lane.pos;
            match second {
                None => p = buf.len(),
                Some((t2, j)) => {
                    // Records of lane i at t2 go first only if i < j.
                    let bound = if i < j { t2.saturating_add(1) } else { t2 };
                    p += 1;
                    while p < buf.len() && buf[p].tick < bound {
                        p += 1;
                    }
                }
            }
            out.extend_from_slice(&buf[lane.pos..p]);
            lane.pos = p;
            if lane.pos == lane.buf.len() {
                lane.ready()?;
            }
            if out.len() >= BLOCK {
                sink.write(&out)?;
                records += out.len() as u64;
                out.clear();
                progress(bytes_done(&lanes));
            }
        }
        sink.write(&out)?;
        records += out.len() as u64;
    }
    progress(bytes_done(&lanes));
    Ok(MergeReport {
        boards: lanes.into_iter().map(|l| l.stream.report).collect(),
        files: set.sources.len(),
        input_bytes: set.total_bytes(),
        records,
        tick_ps: set.tick_ps,
    })
}
