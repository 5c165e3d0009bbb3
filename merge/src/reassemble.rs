//! One board's packets in `seq` order across its ports, decoded into trace
//! records. Each port's files hold its packets in `seq` order, so this is a
//! k-way merge by `seq` over the ports; a small per-port look-ahead puts
//! packets reordered on the way back in place. Memory is bounded by the
//! look-ahead, whatever the length of the capture.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hmtt_format::capture::{CaptureEnd, CaptureReader};
use hmtt_format::packet::Packet;
use hmtt_format::record::{BoardEvent, WordDecoder};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::{AddressMapping, Geometry};

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::report::{BoardReport, FileDamage, Gap, PacketNote};

/// Physical memory interleaved over the boards' channels in blocks of
/// `1 << shift` bytes: a board's local address → the system-wide address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelJoin {
    pub channels: u64,
    pub channel: u64,
    pub shift: u32,
}

impl ChannelJoin {
    #[inline]
    pub fn join(&self, local: u64) -> u64 {
        let block = local >> self.shift;
        let low = local & ((1u64 << self.shift) - 1);
        ((block * self.channels + self.channel) << self.shift) | low
    }
}

/// Packets each port may be ahead of its place (reordering it undoes).
pub const DEFAULT_REORDER_DEPTH: usize = 64;
/// Notes (duplicates, late or rejected packets) kept in full per board;
/// beyond this they are only counted.
pub const MAX_NOTES: usize = 1000;

struct PortCursor<'a> {
    /// (source index, reader) for each stripe, in order.
    parts: Vec<(usize, CaptureReader<'a>)>,
    part: usize,
    in_heap: usize,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending<'a> {
    seq: u64,
    port: usize,
    /// Arrival order within the port: equal seqs come out in file order.
    arrival: u64,
    source: usize,
    packet: &'a [u8],
}

/// One board's stream of trace records.
pub struct BoardStream<'a> {
    set: &'a CaptureSet,
    board: u8,
    ports: Vec<PortCursor<'a>>,
    heap: BinaryHeap<Reverse<Pending<'a>>>,
    depth: usize,
    arrivals: u64,
    mapping: AddressMapping,
    channel: Option<ChannelJoin>,
    geometry: Geometry,
    tick_ps: u16,
    next_seq: Option<u64>,
    last_tick: u64,
    pub report: BoardReport,
}

impl<'a> BoardStream<'a> {
    /// The stream of `board` in `set`, decoding addresses with `mapping`
    /// (whose geometry is the run's).
    pub fn new(
        set: &'a CaptureSet,
        board: u8,
        mapping: AddressMapping,
        channel: Option<ChannelJoin>,
        depth: usize,
    ) -> Result<BoardStream<'a>, MergeError> {
        let ports = set
            .boards
            .get(&board)
            .map(|ports| {
                ports
                    .values()
                    .map(|files| PortCursor {
                        parts: files
                            .iter()
                            .filter_map(|&i| {
                                CaptureReader::new(set.sources[i].data())
                                    .ok()
                                    .map(|(_, r)| (i, r))
                            })
                            .collect(),
                        part: 0,
                        in_heap: 0,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let geometry = *mapping.geometry();
        let mut s = BoardStream {
            set,
            board,
            ports,
            heap: BinaryHeap::new(),
            depth: depth.max(1),
            arrivals: 0,
            mapping,
            channel,
            geometry,
            tick_ps: set.tick_ps,
            next_seq: None,
            last_tick: 0,
            report: BoardReport {
                board,
                ..Default::default()
            },
        };
        for p in 0..s.ports.len() {
            s.refill(p)?;
        }
        Ok(s)
    }

    pub fn board(&self) -> u8 {
        self.board
    }

    /// Tops up port `p`'s look-ahead from its files.
    fn refill(&mut self, p: usize) -> Result<(), MergeError> {
        while self.ports[p].in_heap < self.depth {
            let port = &mut self.ports[p];
            let Some((source, reader)) = port.parts.get_mut(port.part) else {
                return Ok(());
            };
            let source = *source;
            let Some(rec) = reader.next() else {
                match reader.end() {
                    Some(CaptureEnd::Clean) | None => {}
                    Some(end) => self.report.file_damage.push(FileDamage {
                        file: self.set.sources[source].name.clone(),
                        end,
                    }),
                }
                port.part += 1;
                continue;
            };
            self.report.bytes += rec.packet.len() as u64 + 16;
            let pkt = match Packet::new_checked(rec.packet) {
                Ok(p) => p,
                Err(e) => {
                    self.report.packets_rejected += 1;
                    if self.report.notes.len() < MAX_NOTES {
                        self.report.notes.push(PacketNote::Rejected {
                            file: self.set.sources[source].name.clone(),
                            offset: rec.offset as u64,
                            reason: e.to_string(),
                        });
                    }
                    continue;
                }
            };
            if pkt.board() != self.board {
                self.report.packets_rejected += 1;
                if self.report.notes.len() < MAX_NOTES {
                    self.report.notes.push(PacketNote::Rejected {
                        file: self.set.sources[source].name.clone(),
                        offset: rec.offset as u64,
                        reason: format!(
                            "packet of board {} in a capture of board {}",
                            pkt.board(),
                            self.board
                        ),
                    });
                }
                continue;
            }
            let g = pkt
                .geometry()
                .map_err(|e| MergeError::MixedRuns(e.to_string()))?;
            if g != self.geometry {
                return Err(MergeError::WrongGeometry {
                    path: self.set.sources[source].name.clone(),
                    board: self.board,
                    seq: pkt.seq(),
                    found: g.to_string(),
                    expected: self.geometry.to_string(),
                });
            }
            if self.tick_ps != 0 && pkt.tick_ps() != self.tick_ps {
                return Err(MergeError::MixedRuns(format!(
                    "{}: packet seq {} has a tick of {} ps but the run's is {} ps",
                    self.set.sources[source].name,
                    pkt.seq(),
                    pkt.tick_ps(),
                    self.tick_ps
                )));
            }
            self.arrivals += 1;
            self.heap.push(Reverse(Pending {
                seq: pkt.seq(),
                port: p,
                arrival: self.arrivals,
                source,
                packet: rec.packet,
            }));
            self.ports[p].in_heap += 1;
        }
        Ok(())
    }

    /// Decodes the next packet(s) in `seq` order, appending records to
    /// `out`; returns `false` once every port is exhausted.
    pub fn fill(&mut self, out: &mut Vec<TraceRecord>) -> Result<bool, MergeError> {
        loop {
            let Some(Reverse(next)) = self.heap.pop() else {
                return Ok(false);
            };
            self.ports[next.port].in_heap -= 1;
            self.refill(next.port)?;
            let seq = next.seq;
            let expected = self.next_seq.unwrap_or(0);
            if self.next_seq.is_some() && seq < expected {
                // Already passed: a copy, or a packet so late that its place
                // was reported as a gap.
                let late = self
                    .report
                    .gaps
                    .iter()
                    .rev()
                    .any(|g| (g.first_seq..=g.last_seq).contains(&seq));
                let file = self.set.sources[next.source].name.clone();
                if late {
                    self.report.packets_late += 1;
                    if self.report.notes.len() < MAX_NOTES {
                        self.report.notes.push(PacketNote::Late { seq, file });
                    }
                } else {
                    self.report.packets_duplicate += 1;
                    if self.report.notes.len() < MAX_NOTES {
                        self.report.notes.push(PacketNote::Duplicate { seq, file });
                    }
                }
                continue;
            }
            let pkt = Packet::new_unchecked(next.packet);
            let t0 = pkt.t0();
            if seq > expected {
                let missing = seq - expected;
                self.report.gaps.push(Gap {
                    board: self.board,
                    first_seq: expected,
                    last_seq: seq - 1,
                    from_tick: self.last_tick,
                    to_tick: t0.max(self.last_tick),
                });
                out.push(TraceRecord::new(
                    self.last_tick,
                    self.board,
                    RecordKind::GapBegin,
                    missing,
                ));
                out.push(TraceRecord::new(
                    t0.max(self.last_tick),
                    self.board,
                    RecordKind::GapEnd,
                    missing,
                ));
            }
            self.next_seq = Some(seq + 1);
            self.report.packets += 1;
            if self.report.first_seq.is_none() {
                self.report.first_seq = Some(seq);
            }
            self.report.last_seq = Some(seq);
            let start = if t0 < self.last_tick {
                // Time never runs backwards on one board: a corrupt t0.
                self.report.time_regressions += 1;
                self.last_tick
            } else {
                t0
            };
            self.decode(&pkt, start, out);
            return Ok(true);
        }
    }

    /// The hot loop: words straight from the map into records. Counters
    /// live in locals so the loop keeps them in registers.
    #[inline]
    fn decode(&mut self, pkt: &Packet<&[u8]>, t0: u64, out: &mut Vec<TraceRecord>) {
        let board = self.board;
        let mapping = &self.mapping;
        let channel = self.channel;
        let mut dec = WordDecoder::new(t0);
        out.reserve(pkt.nwords());
        let mut counts = [0u64; 6];
        let (mut lost, mut corrupt) = (0u64, 0u64);
        for w in pkt.words() {
            match dec.feed(w) {
                Ok(Some(ev)) => {
                    let rec = match ev.event {
                        BoardEvent::Access { line, write } => {
                            counts[usize::from(write)] += 1;
                            let local = mapping.pa_of(line);
                            let pa = match channel {
                                None => local,
                                Some(c) => c.join(local),
                            };
                            TraceRecord::access(ev.tick, board, write, pa)
                        }
                        BoardEvent::Tag { event, write } => {
                            counts[2 + usize::from(write)] += 1;
                            TraceRecord::new(
                                ev.tick,
                                board,
                                RecordKind::Tag { write },
                                u64::from(event),
                            )
                        }
                        BoardEvent::Cmd { code } => {
                            counts[4] += 1;
                            TraceRecord::new(ev.tick, board, RecordKind::Cmd, u64::from(code))
                        }
                        BoardEvent::Lost { count } => {
                            counts[5] += 1;
                            lost += u64::from(count);
                            TraceRecord::new(ev.tick, board, RecordKind::Lost, u64::from(count))
                        }
                    };
                    out.push(rec);
                }
                Ok(None) => {}
                Err(_) => corrupt += 1,
            }
        }
        for (total, n) in self.report.counts.iter_mut().zip(counts) {
            *total += n;
        }
        self.report.references_lost += lost;
        self.report.corrupt_words += corrupt;
        self.last_tick = dec.time();
    }
}
