//! One board's packets in `seq` order across its ports, decoded into trace
//! records. Each port's files hold its packets in `seq` order, so this is a
//! k-way merge by `seq` over the ports; a small per-port look-ahead puts
//! packets reordered on the way back in place. Memory is bounded by the
//! look-ahead, whatever the length of the capture.
//!
//! The packets' words become records in [`words`] (one word at a time) or,
//! where the CPU has AVX2, in [`avx2`] (eight at a time where the words
//! allow); [`WordLoop`] picks the loop once per stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hmtt_format::capture::{CaptureEnd, CaptureReader};
use hmtt_format::packet::{Packet, HEADER_LEN as PACKET_HEADER_LEN, MAX_WORDS_JUMBO};
use hmtt_format::record::{DT_MAX, PAYLOAD_MAX, TIME_UNIT};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::{AddressMapping, Geometry};

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::report::{BoardReport, FileDamage, Gap, PacketNote};
use words::{decode_words, LineToPa, Linear, LinearJoin, Mapped, WordCounts};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(test)]
mod tests;
mod words;

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

/// Positions a packet may be late in its port's file (behind packets with
/// higher `seq`) and still be put in place: each port keeps this many
/// packets beyond the one due. 0: no reordering is undone.
pub const DEFAULT_REORDER_DEPTH: usize = 64;
/// Notes (duplicates, late or rejected packets) kept in full per board;
/// beyond this they are only counted.
pub const MAX_NOTES: usize = 1000;
/// Most ticks one record word can move time on: a TIME word's largest
/// payload and dt (format.md §4).
pub const MAX_WORD_TICKS: u64 = PAYLOAD_MAX as u64 * TIME_UNIT + DT_MAX as u64;
/// Most ticks one packet can span (a jumbo packet of TIME words). A board's
/// packets are cut from one word stream, so a packet starts where the one
/// before it (in `seq` order) ended, and `n` lost packets hide at most
/// `n` times this.
pub const MAX_PACKET_TICKS: u64 = MAX_WORDS_JUMBO as u64 * MAX_WORD_TICKS;
/// Largest `seq` jump taken on a packet's word alone: a packet further
/// than this from the stream's position is only placed when the packet
/// after it carries on from it (a long loss); otherwise its `seq` is
/// corrupt and the packet is rejected, not turned into a gap.
pub const MAX_SEQ_JUMP: u64 = 1 << 16;

/// Whether a packet (`seq`, `t0`) can follow a stream that expects `seq`
/// `from_seq` next and whose time is `from_tick`: a `seq` not far ahead
/// and a `t0` no later than the lost packets in between could reach.
fn can_follow(from_seq: u64, from_tick: u64, seq: u64, t0: u64) -> bool {
    let skipped = seq.saturating_sub(from_seq);
    skipped <= MAX_SEQ_JUMP
        && t0 <= from_tick.saturating_add((skipped + 1).saturating_mul(MAX_PACKET_TICKS))
}

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
    /// Offset of the packet's record in its file.
    offset: u64,
    packet: &'a [u8],
}

/// One board's stream of trace records.
pub struct BoardStream<'a> {
    set: &'a CaptureSet,
    board: u8,
    ports: Vec<PortCursor<'a>>,
    heap: BinaryHeap<Reverse<Pending<'a>>>,
    /// Packets each port has in `heap`: the reorder depth plus the one due.
    per_port: usize,
    arrivals: u64,
    mapping: AddressMapping,
    channel: Option<ChannelJoin>,
    geometry: Geometry,
    tick_ps: u16,
    next_seq: Option<u64>,
    last_tick: u64,
    word_loop: WordLoop,
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
            per_port: depth.saturating_add(1),
            arrivals: 0,
            mapping,
            channel,
            geometry,
            tick_ps: set.tick_ps,
            next_seq: None,
            last_tick: 0,
            word_loop: WordLoop::detect(),
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
        while self.ports[p].in_heap < self.per_port {
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
            if hmtt_format::stats::is_stats_packet(rec.packet) {
                // The Statistic Unit's (format.md §5.3): kept apart by
                // `board_statistics`, not part of the trace.
                self.report.statistics_packets += 1;
                continue;
            }
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
            // The file-level checks (input.rs) made the run's geometry and
            // tick length sure; one packet that disagrees is damaged, so it
            // is rejected and counted like any bad packet, and its seq shows
            // up as a gap, instead of failing the whole merge.
            let disagreement = match pkt.geometry() {
                Ok(g) if g != self.geometry => Some(format!(
                    "packet seq {} has geometry {g} but the run's is {}",
                    pkt.seq(),
                    self.geometry
                )),
                Ok(_) if self.tick_ps != 0 && pkt.tick_ps() != self.tick_ps => Some(format!(
                    "packet seq {} has a tick of {} ps but the run's is {} ps",
                    pkt.seq(),
                    pkt.tick_ps(),
                    self.tick_ps
                )),
                Ok(_) => None,
                Err(e) => Some(format!("packet seq {}: {e}", pkt.seq())),
            };
            if let Some(reason) = disagreement {
                self.report.packets_rejected += 1;
                if self.report.notes.len() < MAX_NOTES {
                    self.report.notes.push(PacketNote::Rejected {
                        file: self.set.sources[source].name.clone(),
                        offset: rec.offset as u64,
                        reason,
                    });
                }
                continue;
            }
            self.arrivals += 1;
            self.heap.push(Reverse(Pending {
                seq: pkt.seq(),
                port: p,
                arrival: self.arrivals,
                source,
                offset: rec.offset as u64,
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
            if let Some(reason) = self.implausible(seq, t0, pkt.nwords()) {
                self.report.packets_rejected += 1;
                if self.report.notes.len() < MAX_NOTES {
                    self.report.notes.push(PacketNote::Rejected {
                        file: self.set.sources[next.source].name.clone(),
                        offset: next.offset,
                        reason,
                    });
                }
                continue;
            }
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
            self.next_seq = Some(seq.saturating_add(1));
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

    /// Why the packet (`seq`, `t0`, `nwords`) that comes next in `seq`
    /// order cannot be this board's: its words would run time past 2^64,
    /// or its `seq` or `t0` jumps further than lost packets explain and the
    /// packet after it does not carry on from it. `None`: it is placed.
    fn implausible(&self, seq: u64, t0: u64, nwords: usize) -> Option<String> {
        if t0.checked_add(nwords as u64 * MAX_WORD_TICKS).is_none() {
            return Some(format!(
                "packet seq {seq} has t0 {t0}: its words could run time past 2^64 ticks"
            ));
        }
        let after = self
            .heap
            .peek()
            .map(|Reverse(p)| (p.seq, Packet::new_unchecked(p.packet).t0()));
        // The stream carries on from this packet when the next one follows
        // it (a copy of it proves nothing).
        let carried_on = after
            .is_none_or(|(s, t)| s > seq && t >= t0 && can_follow(seq.saturating_add(1), t0, s, t));
        match self.next_seq {
            // The first packet has nothing before it: only what follows
            // it tells a corrupt one.
            None if carried_on => None,
            None => Some(format!(
                "packet seq {seq} (t0 {t0}) is the first, but the next packet does not follow it"
            )),
            Some(expected) => {
                if can_follow(expected, self.last_tick, seq, t0) {
                    return None;
                }
                let back_on_track =
                    after.is_some_and(|(s, t)| can_follow(expected, self.last_tick, s, t));
                (after.is_none() || !carried_on || back_on_track).then(|| {
                    format!(
                        "packet seq {seq} (t0 {t0}) cannot follow seq {} at tick {}: \
                         a jump no lost packets explain",
                        expected.wrapping_sub(1),
                        self.last_tick
                    )
                })
            }
        }
    }

    /// Decodes one packet's words, appending its records to `out`; picks
    /// the address decoding once so the word loop is specialised for it.
    fn decode(&mut self, pkt: &Packet<&[u8]>, t0: u64, out: &mut Vec<TraceRecord>) {
        let words = &pkt.as_bytes()[PACKET_HEADER_LEN..PACKET_HEADER_LEN + 4 * pkt.nwords()];
        let mut counts = WordCounts::default();
        let mask = self.geometry.lines() - 1;
        let how = self.word_loop;
        let end = match (self.mapping.is_linear(), self.channel) {
            (true, None) => {
                let map = Linear::new(mask);
                decode_words_by(words, t0, self.board, map, out, &mut counts, how)
            }
            (true, Some(join)) => {
                let map = LinearJoin { mask, join };
                decode_words_by(words, t0, self.board, map, out, &mut counts, how)
            }
            (false, join) => {
                let map = Mapped {
                    mapping: &self.mapping,
                    join,
                };
                decode_words_by(words, t0, self.board, map, out, &mut counts, how)
            }
        };
        let c = &mut self.report.counts;
        c[0] += counts.accesses - counts.writes;
        c[1] += counts.writes;
        for (total, n) in c[2..].iter_mut().zip(counts.control) {
            *total += n;
        }
        self.report.references_lost += counts.lost;
        self.report.corrupt_words += counts.corrupt;
        self.last_tick = end;
    }
}

/// Which word loop [`decode_words`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WordLoop {
    /// One word at a time (any mapping, any machine).
    Scalar,
    /// Eight words at a time with AVX2 where no rare word is among them
    /// (linear mapping without a channel join only; checked at run time).
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl WordLoop {
    /// The fastest loop this machine runs.
    fn detect() -> WordLoop {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            return WordLoop::Avx2;
        }
        WordLoop::Scalar
    }
}

/// [`decode_words`] with the loop `how`.
fn decode_words_by<M: LineToPa>(
    words: &[u8],
    t0: u64,
    board: u8,
    map: M,
    out: &mut Vec<TraceRecord>,
    counts: &mut WordCounts,
    how: WordLoop,
) -> u64 {
    match how {
        WordLoop::Scalar => decode_words(words, t0, board, map, out, counts),
        // SAFETY: `Avx2` is only chosen where the CPU has AVX2 and POPCNT.
        #[cfg(target_arch = "x86_64")]
        WordLoop::Avx2 => unsafe { avx2::decode_words(words, t0, board, map, out, counts) },
    }
}
