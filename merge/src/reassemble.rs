//! One board's packets in `seq` order across its ports, decoded into trace
//! records. Each port's files hold its packets in `seq` order, so this is a
//! k-way merge by `seq` over the ports; a small per-port look-ahead puts
//! packets reordered on the way back in place. Memory is bounded by the
//! look-ahead, whatever the length of the capture.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hmtt_format::capture::{CaptureEnd, CaptureReader};
use hmtt_format::packet::{Packet, HEADER_LEN as PACKET_HEADER_LEN};
use hmtt_format::record::{Opcode, RecordWord, TIME_UNIT};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::{AddressMapping, Geometry, LINE_BYTES};

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

    /// Decodes one packet's words, appending its records to `out`; picks
    /// the address decoding once so the word loop is specialised for it.
    fn decode(&mut self, pkt: &Packet<&[u8]>, t0: u64, out: &mut Vec<TraceRecord>) {
        let words = &pkt.as_bytes()[PACKET_HEADER_LEN..PACKET_HEADER_LEN + 4 * pkt.nwords()];
        let mut counts = WordCounts::default();
        let mask = self.geometry.lines() - 1;
        let end = match (self.mapping.is_linear(), self.channel) {
            (true, None) => {
                decode_words(words, t0, self.board, Linear::new(mask), out, &mut counts)
            }
            (true, Some(join)) => decode_words(
                words,
                t0,
                self.board,
                LinearJoin { mask, join },
                out,
                &mut counts,
            ),
            (false, join) => decode_words(
                words,
                t0,
                self.board,
                Mapped {
                    mapping: &self.mapping,
                    join,
                },
                out,
                &mut counts,
            ),
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

/// Tallies of one packet's words, kept in locals by the word loop.
#[derive(Default)]
struct WordCounts {
    accesses: u64,
    writes: u64,
    /// tags, tag writes, inner commands, LOST words.
    control: [u64; 4],
    lost: u64,
    corrupt: u64,
}

/// Line index → the address field of a record (its physical address,
/// bits 6..55 of the packed word), resolved once per packet so that the
/// word loop is compiled for each case. The loop carries what LINE_HI
/// contributes (`hi`) from word to word, in the form the case wants: for
/// the linear mapping the address bits themselves, so an ACCESS word costs
/// one shift, one mask and one OR.
trait LineToPa {
    /// The carried value for a LINE_HI payload (`line >> 24`).
    fn hi(&self, payload: u64) -> u64;
    /// The address field for an ACCESS word `w` (its `line_lo` in bits
    /// 0..24, other bits ignored) under the carried `hi`.
    fn field(&self, hi: u64, w: u64) -> u64;
}

/// The address field of a physical address (what `TraceRecord::access`
/// keeps of it).
#[inline(always)]
fn address_field(pa: u64) -> u64 {
    TraceRecord::access(0, 0, false, pa).packed
}

struct Linear {
    /// `(lines - 1) * 64`: the line bits, in place in the address.
    mask: u64,
}

impl Linear {
    fn new(mask: u64) -> Linear {
        Linear {
            mask: address_field(mask * LINE_BYTES),
        }
    }
}

impl LineToPa for Linear {
    #[inline(always)]
    fn hi(&self, payload: u64) -> u64 {
        ((payload << 24) * LINE_BYTES) & self.mask
    }
    #[inline(always)]
    fn field(&self, hi: u64, w: u64) -> u64 {
        // line_lo moves to bits 6..30; the mask also drops the bits of
        // the word above it.
        hi | ((w * LINE_BYTES) & (self.mask & (LINE_LO_MASK * LINE_BYTES)))
    }
}

/// `line_lo` of an ACCESS word (format.md §4).
const LINE_LO_MASK: u64 = (1 << 24) - 1;

struct LinearJoin {
    mask: u64,
    join: ChannelJoin,
}

impl LineToPa for LinearJoin {
    #[inline(always)]
    fn hi(&self, payload: u64) -> u64 {
        payload << 24
    }
    #[inline(always)]
    fn field(&self, hi: u64, w: u64) -> u64 {
        let line = hi | (w & LINE_LO_MASK);
        address_field(self.join.join((line & self.mask) * LINE_BYTES))
    }
}

struct Mapped<'m> {
    mapping: &'m AddressMapping,
    join: Option<ChannelJoin>,
}

impl LineToPa for Mapped<'_> {
    #[inline(always)]
    fn hi(&self, payload: u64) -> u64 {
        payload << 24
    }
    #[inline(always)]
    fn field(&self, hi: u64, w: u64) -> u64 {
        let local = self.mapping.pa_of(hi | (w & LINE_LO_MASK));
        address_field(match self.join {
            None => local,
            Some(c) => c.join(local),
        })
    }
}

/// The hot loop: record words (format.md §4) straight from the map into
/// records, the same as [`hmtt_format::WordDecoder`] gives. ACCESS, TIME
/// and LINE_HI words (LINE_HI is common under random access) go through one
/// branch-free step: a record is written for every word but kept only for
/// ACCESS words. TAG, CMD, LOST, PAD and reserved opcodes are rare and take
/// [`control_word`]. Returns the time of the last word. Not inlined, so
/// that the loop has the registers to itself.
#[inline(never)]
fn decode_words<M: LineToPa>(
    words: &[u8],
    t0: u64,
    board: u8,
    map: M,
    out: &mut Vec<TraceRecord>,
    counts: &mut WordCounts,
) -> u64 {
    let n = words.len() / 4;
    out.reserve(n);
    let base = out.len();
    // Written through a pointer: every word writes the slot after the
    // records kept so far, never beyond its own index, so a bounds check
    // per word would only cost the loop a register.
    let start = out.spare_capacity_mut()[..n]
        .as_mut_ptr()
        .cast::<TraceRecord>();
    let mut dst = start;
    let board_bits = TraceRecord::access(0, board, false, 0).packed;
    let mut t = t0;
    let mut hi = map.hi(0);
    let mut writes = 0u64;
    let mut control_records = 0usize;
    for chunk in words.chunks_exact(4) {
        let w = u64::from(u32::from_le_bytes(chunk.try_into().expect("4 bytes")));
        t += w >> DT_SHIFT;
        // The K bit and the opcode as one number (format.md §4): below
        // KIND_TIME an ACCESS word, then TIME, LINE_HI, and the rare ones.
        // The accessors' enum would compile to branches here.
        let kind = (w >> 21) & 0x1f;
        if kind > KIND_LINE_HI {
            let (t2, rec) = control_word(RecordWord(w as u32), t, board, counts);
            t = t2;
            if let Some(rec) = rec {
                // SAFETY: fewer records than words so far, within the n
                // slots reserved.
                unsafe {
                    dst.write(rec);
                    dst = dst.add(1);
                }
                control_records += 1;
            }
            continue;
        }
        // Bit 24 is W for an ACCESS word and the top opcode bit (0) for
        // TIME and LINE_HI: the write bit of the record, counted as is.
        let write = (w >> 24) & 1;
        // Written for TIME and LINE_HI too, and overwritten by the next
        // record; kept (the pointer moves on) when the K bit is clear.
        // SAFETY: as above, this word's slot is within the room reserved.
        unsafe {
            dst.write(TraceRecord {
                tick: t,
                packed: board_bits | map.field(hi, w) | write,
            });
            dst = dst.add(((w >> 25) & 1 ^ 1) as usize);
        }
        writes += write;
        let payload = w & PAYLOAD_MASK;
        t += if kind == KIND_TIME {
            payload * TIME_UNIT
        } else {
            0
        };
        hi = if kind == KIND_LINE_HI {
            map.hi(payload)
        } else {
            hi
        };
    }
    // SAFETY: both pointers are within the slots reserved, `dst` after.
    let k = unsafe { dst.offset_from(start) } as usize;
    // SAFETY: the loop wrote the `k` slots after `base`, which fit the
    // capacity reserved above.
    unsafe { out.set_len(base + k) };
    counts.accesses += (k - control_records) as u64;
    counts.writes += writes;
    t
}

/// Fields of a record word (format.md §4) the loop takes apart by hand.
const DT_SHIFT: u32 = 26;
const PAYLOAD_MASK: u64 = (1 << 21) - 1;

/// `(word >> 21) & 0x1f` (K bit and opcode) of a TIME and a LINE_HI word;
/// the batch-decode test checks these against the format crate's decoder.
const KIND_TIME: u64 = 0x10;
const KIND_LINE_HI: u64 = 0x11;

/// A rare CONTROL word (TAG, CMD, LOST, PAD, reserved): the time after it
/// and the record it makes, if any. TIME and LINE_HI are the loop's.
#[inline(never)]
fn control_word(
    w: RecordWord,
    t: u64,
    board: u8,
    counts: &mut WordCounts,
) -> (u64, Option<TraceRecord>) {
    let payload = w.payload();
    let (kind, slot, value) = match w.opcode() {
        Opcode::Time => return (t + u64::from(payload) * TIME_UNIT, None),
        // LINE_HI changes state only the loop holds; it never comes here.
        Opcode::LineHi | Opcode::Pad => return (t, None),
        Opcode::Tag => {
            let (event, write) = RecordWord::split_tag_payload(payload);
            (RecordKind::Tag { write }, usize::from(write), event)
        }
        Opcode::Cmd => (RecordKind::Cmd, 2, payload),
        Opcode::Lost => {
            counts.lost += u64::from(payload);
            (RecordKind::Lost, 3, payload)
        }
        Opcode::Reserved(_) => {
            counts.corrupt += 1;
            return (t, None);
        }
    };
    counts.control[slot] += 1;
    (t, Some(TraceRecord::new(t, board, kind, u64::from(value))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::record::{BoardEvent, WordDecoder};
    use proptest::prelude::*;

    /// The format crate's word-by-word decoder, as records.
    fn reference(
        words: &[u32],
        t0: u64,
        board: u8,
        pa_of: impl Fn(u64) -> u64,
    ) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
        let mut dec = WordDecoder::new(t0);
        let (mut out, mut counts, mut lost, mut corrupt) = (Vec::new(), [0u64; 6], 0, 0);
        for &w in words {
            match dec.feed(RecordWord(w)) {
                Ok(Some(ev)) => out.push(match ev.event {
                    BoardEvent::Access { line, write } => {
                        counts[usize::from(write)] += 1;
                        TraceRecord::access(ev.tick, board, write, pa_of(line))
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
                }),
                Ok(None) => {}
                Err(_) => corrupt += 1,
            }
        }
        (out, counts, lost, corrupt, dec.time())
    }

    fn fast<M: LineToPa>(
        words: &[u32],
        t0: u64,
        board: u8,
        map: M,
    ) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        // Records already in the buffer stay and the new ones follow.
        let mut out = vec![TraceRecord::default(); 3];
        let mut c = WordCounts::default();
        let end = decode_words(&bytes, t0, board, map, &mut out, &mut c);
        assert_eq!(out[..3], [TraceRecord::default(); 3]);
        out.drain(..3);
        let counts = [
            c.accesses - c.writes,
            c.writes,
            c.control[0],
            c.control[1],
            c.control[2],
            c.control[3],
        ];
        (out, counts, c.lost, c.corrupt, end)
    }

    /// Mostly ACCESS words, with every CONTROL opcode (reserved ones too).
    fn word() -> impl Strategy<Value = u32> {
        prop_oneof![
            6 => any::<u32>().prop_map(|w| w & !(1 << 25)),
            2 => any::<u32>().prop_map(|w| w | (1 << 25)),
            1 => (0u32..64, 0u32..16, any::<u32>())
                .prop_map(|(dt, op, p)| (dt << 26) | (1 << 25) | (op << 21) | (p & 0x1f_ffff)),
        ]
    }

    proptest! {
        #[test]
        fn batch_decode_equals_the_word_decoder(
            words in proptest::collection::vec(word(), 0..400),
            t0 in 0u64..(1 << 60),
            board: u8,
        ) {
            let g = Geometry::preset("ddr4-64g").unwrap();
            let linear = AddressMapping::linear(g);
            let mask = g.lines() - 1;
            prop_assert_eq!(
                fast(&words, t0, board, Linear::new(mask)),
                reference(&words, t0, board, |l| linear.pa_of(l))
            );
            let join = ChannelJoin { channels: 3, channel: 2, shift: 12 };
            prop_assert_eq!(
                fast(&words, t0, board, LinearJoin { mask, join }),
                reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
            );
            prop_assert_eq!(
                fast(&words, t0, board, Mapped { mapping: &linear, join: Some(join) }),
                reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
            );
        }
    }
}
