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
            depth: depth.max(1),
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
    /// How the vector loop builds records for this mapping.
    fn vector_form(&self) -> VectorForm {
        VectorForm::LINE
    }
    /// The vector loop's records hold `line << 1 | write` and get their
    /// address fields from [`LineToPa::field`] afterwards (known at
    /// compile time, so that the linear loop carries nothing for it).
    const VECTOR_REMAP: bool = true;
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
    fn vector_form(&self) -> VectorForm {
        // The address field itself: line_lo at bit 6, LINE_HI at bit 30.
        VectorForm {
            lo_shift: 6,
            lo_mask: (self.mask & (LINE_LO_MASK * LINE_BYTES)) as u32,
            hi_shift: 30,
            payload_mask: (self.mask >> 30) as u32,
        }
    }
    const VECTOR_REMAP: bool = false;
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

/// The word loop's running state: time, the carried LINE_HI (in the form
/// the mapping wants), the next record slot and tallies kept in registers.
struct WordState {
    t: u64,
    hi: u64,
    dst: *mut TraceRecord,
    writes: u64,
    control_records: usize,
}

/// One record word `w` (format.md §4), the same as
/// [`hmtt_format::WordDecoder`] takes it. ACCESS, TIME and LINE_HI words
/// (LINE_HI is common under random access) go through one branch-free
/// step: a record is written for every word but kept only for ACCESS
/// words. TAG, CMD, LOST, PAD and reserved opcodes are rare and take
/// [`control_word`].
///
/// # Safety
/// `st.dst` is at most this word's slot in room reserved for one record
/// per word.
#[inline(always)]
unsafe fn word_step<M: LineToPa>(
    st: &mut WordState,
    w: u64,
    board: u8,
    board_bits: u64,
    map: &M,
    counts: &mut WordCounts,
) {
    st.t += w >> DT_SHIFT;
    // The K bit and the opcode as one number (format.md §4): below
    // KIND_TIME an ACCESS word, then TIME, LINE_HI, and the rare ones.
    // The accessors' enum would compile to branches here.
    let kind = (w >> 21) & 0x1f;
    if kind > KIND_LINE_HI {
        let (t2, rec) = control_word(RecordWord(w as u32), st.t, board, counts);
        st.t = t2;
        if let Some(rec) = rec {
            // SAFETY: fewer records than words so far, within the room
            // the caller promises.
            unsafe {
                st.dst.write(rec);
                st.dst = st.dst.add(1);
            }
            st.control_records += 1;
        }
        return;
    }
    // Bit 24 is W for an ACCESS word and the top opcode bit (0) for
    // TIME and LINE_HI: the write bit of the record, counted as is.
    let write = (w >> 24) & 1;
    // Written for TIME and LINE_HI too, and overwritten by the next
    // record; kept (the pointer moves on) when the K bit is clear.
    // SAFETY: as above, this word's slot is within the room reserved.
    unsafe {
        st.dst.write(TraceRecord {
            tick: st.t,
            packed: board_bits | map.field(st.hi, w) | write,
        });
        st.dst = st.dst.add(((w >> 25) & 1 ^ 1) as usize);
    }
    st.writes += write;
    let payload = w & PAYLOAD_MASK;
    st.t += if kind == KIND_TIME {
        payload * TIME_UNIT
    } else {
        0
    };
    st.hi = if kind == KIND_LINE_HI {
        map.hi(payload)
    } else {
        st.hi
    };
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

/// The hot loop: record words (format.md §4) straight from the map into
/// records, appended to `out`, the same as [`hmtt_format::WordDecoder`]
/// gives (see [`word_step`]). Returns the time of the last word. Not
/// inlined, so that the loop has the registers to itself.
#[inline(never)]
fn decode_words<M: LineToPa>(
    words: &[u8],
    t0: u64,
    board: u8,
    map: M,
    out: &mut Vec<TraceRecord>,
    counts: &mut WordCounts,
) -> u64 {
    let bits = board_bits(board);
    decode_words_with(words, t0, &map, out, counts, |st, words, counts| {
        for chunk in words.chunks_exact(4) {
            let w = u64::from(u32::from_le_bytes(chunk.try_into().expect("4 bytes")));
            // SAFETY: one slot per word is reserved and the state's
            // pointer never passes the word's own slot.
            unsafe { word_step(st, w, board, bits, &map, counts) };
        }
    })
}

/// The board's bits of a record's packed word.
#[inline(always)]
fn board_bits(board: u8) -> u64 {
    TraceRecord::access(0, board, false, 0).packed
}

/// Reserves a record slot per word in `out`, runs `body` over the words
/// from the start state, and keeps the records it wrote.
#[inline(always)]
fn decode_words_with<M: LineToPa>(
    words: &[u8],
    t0: u64,
    map: &M,
    out: &mut Vec<TraceRecord>,
    counts: &mut WordCounts,
    body: impl FnOnce(&mut WordState, &[u8], &mut WordCounts),
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
    let mut st = WordState {
        t: t0,
        hi: map.hi(0),
        dst: start,
        writes: 0,
        control_records: 0,
    };
    body(&mut st, &words[..4 * n], counts);
    // SAFETY: both pointers are within the slots reserved, `dst` after.
    let k = unsafe { st.dst.offset_from(start) } as usize;
    // SAFETY: the loop wrote the `k` slots after `base`, which fit the
    // capacity reserved above.
    unsafe { out.set_len(base + k) };
    counts.accesses += (k - st.control_records) as u64;
    counts.writes += st.writes;
    st.t
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

/// How the vector loop builds a record's packed word from a word's
/// `line_lo` (shifted left by `lo_shift`, then masked with `lo_mask`), its
/// write bit (bit 0) and the LINE_HI payload in force (masked with
/// `payload_mask`, then shifted left by `hi_shift`). With
/// [`LineToPa::VECTOR_REMAP`] that word holds `line << 1 | write`, and each
/// kept record is then given its address field by [`LineToPa::field`] and
/// the board's bits.
#[derive(Debug, Clone, Copy)]
struct VectorForm {
    lo_shift: u32,
    lo_mask: u32,
    hi_shift: u32,
    payload_mask: u32,
}

impl VectorForm {
    /// The line index, doubled, with the write bit: for any mapping.
    const LINE: VectorForm = VectorForm {
        lo_shift: 1,
        lo_mask: (LINE_LO_MASK as u32) << 1,
        hi_shift: 25,
        payload_mask: PAYLOAD_MASK as u32,
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Eight words per step for the common case, runs of ACCESS, TIME and
    //! LINE_HI words: the times are a prefix sum of the words' advances,
    //! the LINE_HI in force a prefix maximum of (position, payload), the
    //! ACCESS words' lanes are moved to the front and their records stored
    //! in four 32-byte stores, the slot pointer moving on past the ACCESS
    //! words only (as in [`super::word_step`]).

    use super::*;
    use std::arch::x86_64::*;

    /// For each 8-bit mask, the lanes of its set bits in order (then
    /// zeros), for `vpermd`, placed so that the unpacking into records
    /// gives them in order: lane `p` holds kept word `STORE_ORDER[p]`.
    static ACCESS_LANES: [[u8; 8]; 256] = {
        const STORE_ORDER: [usize; 8] = [0, 2, 4, 6, 1, 3, 5, 7];
        let mut table = [[0u8; 8]; 256];
        let mut mask = 0;
        while mask < 256 {
            let mut kept = [0u8; 8];
            let (mut bit, mut n) = (0, 0);
            while bit < 8 {
                if mask & (1 << bit) != 0 {
                    kept[n] = bit as u8;
                    n += 1;
                }
                bit += 1;
            }
            let mut lane = 0;
            while lane < 8 {
                table[mask][lane] = kept[STORE_ORDER[lane]];
                lane += 1;
            }
            mask += 1;
        }
        table
    };

    /// Inclusive prefix sums (`MAX`: prefix maxima, unsigned) of 8 lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn prefix<const MAX: bool>(x: __m256i) -> __m256i {
        let op = |a, b| {
            if MAX {
                _mm256_max_epu32(a, b)
            } else {
                _mm256_add_epi32(a, b)
            }
        };
        let x = op(x, _mm256_slli_si256::<4>(x));
        let x = op(x, _mm256_slli_si256::<8>(x));
        // The low half's last lane into every lane of the high half.
        let low_last = _mm256_shuffle_epi32::<0xff>(_mm256_permute2x128_si256::<0x08>(x, x));
        op(x, low_last)
    }

    /// The payload of the last LINE_HI word of `words`, if any.
    fn last_line_hi(words: &[u8]) -> Option<u32> {
        words
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
            .rev()
            .find(|&w| u64::from(w >> 21) & 0x1f == KIND_LINE_HI)
            .map(|w| w & PAYLOAD_MASK as u32)
    }

    /// See [`super::decode_words`]; the same records and counts.
    ///
    /// # Safety
    /// The CPU has AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn decode_words<M: LineToPa>(
        words: &[u8],
        t0: u64,
        board: u8,
        map: M,
        out: &mut Vec<TraceRecord>,
        counts: &mut WordCounts,
    ) -> u64 {
        let board_bits = board_bits(board);
        let form = map.vector_form();
        decode_words_with(words, t0, &map, out, counts, |st, words, counts| {
            let kind_mask = _mm256_set1_epi32(0x1f);
            let line_hi_kind = _mm256_set1_epi32(KIND_LINE_HI as i32);
            let time_kind = _mm256_set1_epi32(KIND_TIME as i32);
            let payload_bits = _mm256_set1_epi32(PAYLOAD_MASK as i32);
            // Position + 1 above the payload, so the last LINE_HI wins
            // the maximum and 0 means none in this step.
            let position = _mm256_setr_epi32(
                1 << 24,
                2 << 24,
                3 << 24,
                4 << 24,
                5 << 24,
                6 << 24,
                7 << 24,
                8 << 24,
            );
            let lo_mask = _mm256_set1_epi32(form.lo_mask as i32);
            let lo_shift = _mm_cvtsi32_si128(form.lo_shift as i32);
            let hi_shift = _mm_cvtsi32_si128(form.hi_shift as i32);
            let hi_shift_down = _mm_cvtsi32_si128(32 - form.hi_shift as i32);
            let payload_mask = _mm256_set1_epi32(form.payload_mask as i32);
            let one = _mm256_set1_epi32(1);
            let board_v = _mm256_set1_epi64x(if M::VECTOR_REMAP {
                0
            } else {
                board_bits as i64
            });
            // The state in locals: as fields it would live in a vector
            // register, taken apart and put together at every step. The
            // LINE_HI in force is kept as its payload.
            let (mut t0, mut payload, mut dst, mut writes) = (st.t, 0u32, st.dst, 0u64);
            // With VECTOR_REMAP, the records from here to `dst` hold LINE form;
            // they get their addresses a run of steps at a time, long
            // after their stores (not at once: loading a field of a wide
            // store still in flight stalls).
            let mut unmapped = dst;
            let give_addresses = |from: *mut TraceRecord, to: *mut TraceRecord| {
                if M::VECTOR_REMAP {
                    // SAFETY: records the steps stored, `from <= to`.
                    let records = unsafe {
                        std::slice::from_raw_parts_mut(from, to.offset_from(from) as usize)
                    };
                    for r in records {
                        let line = r.packed >> 1;
                        r.packed =
                            board_bits | map.field(line & !LINE_LO_MASK, line) | (r.packed & 1);
                    }
                }
            };
            let mut steps = words.chunks_exact(32);
            for step in &mut steps {
                // SAFETY: 32 bytes, unaligned load.
                let w = unsafe { _mm256_loadu_si256(step.as_ptr().cast()) };
                let kind = _mm256_and_si256(_mm256_srli_epi32::<21>(w), kind_mask);
                if _mm256_movemask_epi8(_mm256_cmpgt_epi32(kind, line_hi_kind)) != 0 {
                    give_addresses(unmapped, dst);
                    (st.t, st.hi, st.dst) = (t0, map.hi(u64::from(payload)), dst);
                    for word in step.chunks_exact(4) {
                        let w = u64::from(u32::from_le_bytes(word.try_into().expect("4 bytes")));
                        // SAFETY: one slot per word is reserved; the
                        // pointer never passes the word's own slot.
                        unsafe { word_step(st, w, board, board_bits, &map, counts) };
                    }
                    (t0, dst) = (st.t, st.dst);
                    unmapped = dst;
                    payload = last_line_hi(step).unwrap_or(payload);
                    continue;
                }
                let word_payload = _mm256_and_si256(w, payload_bits);
                let is_time = _mm256_cmpeq_epi32(kind, time_kind);
                let is_hi = _mm256_cmpeq_epi32(kind, line_hi_kind);
                // Each word's advance: dt, and a TIME word's payload * 64
                // (8 of them stay below 2^30).
                let advance = _mm256_add_epi32(
                    _mm256_srli_epi32::<26>(w),
                    _mm256_and_si256(is_time, _mm256_slli_epi32::<6>(word_payload)),
                );
                let elapsed = prefix::<false>(advance);
                let last_hi = prefix::<true>(_mm256_and_si256(
                    is_hi,
                    _mm256_or_si256(word_payload, position),
                ));
                let low = _mm256_or_si256(
                    _mm256_and_si256(_mm256_sll_epi32(w, lo_shift), lo_mask),
                    _mm256_and_si256(_mm256_srli_epi32::<24>(w), one),
                );
                // Bit i: word i is an ACCESS word (K clear).
                let access = !_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<6>(w)))
                    as u32
                    & 0xff;
                // The ACCESS words' lanes, in the order the stores want.
                // SAFETY: 8 bytes of the table's row.
                let order = _mm256_cvtepu8_epi32(unsafe {
                    _mm_loadl_epi64(ACCESS_LANES[access as usize].as_ptr().cast())
                });
                let kept = |x| _mm256_permutevar8x32_epi32(x, order);
                let (kept_hi, kept_elapsed, kept_low) = (kept(last_hi), kept(elapsed), kept(low));
                // The LINE_HI payload of each kept word: its step's last
                // one before it, or the one carried in.
                let none = _mm256_cmpeq_epi32(kept_hi, _mm256_setzero_si256());
                let hi = _mm256_and_si256(
                    _mm256_blendv_epi8(
                        _mm256_and_si256(kept_hi, payload_bits),
                        _mm256_set1_epi32(payload as i32),
                        none,
                    ),
                    payload_mask,
                );
                // The packed word's two halves, then as 64-bit lanes (kept
                // words 0, 1 and 4, 5 of the lane order; 2, 3 and 6, 7).
                let low = _mm256_or_si256(kept_low, _mm256_sll_epi32(hi, hi_shift));
                let high = _mm256_srl_epi32(hi, hi_shift_down);
                let packed_a = _mm256_or_si256(board_v, _mm256_unpacklo_epi32(low, high));
                let packed_b = _mm256_or_si256(board_v, _mm256_unpackhi_epi32(low, high));
                let t = _mm256_set1_epi64x(t0 as i64);
                let zero = _mm256_setzero_si256();
                let tick_a = _mm256_add_epi64(t, _mm256_unpacklo_epi32(kept_elapsed, zero));
                let tick_b = _mm256_add_epi64(t, _mm256_unpackhi_epi32(kept_elapsed, zero));
                // SAFETY: one slot per word is reserved and the pointer is
                // at most at the step's first word's slot, so its eight
                // slots are within the room; those past the kept records
                // are overwritten later or left beyond the length.
                unsafe {
                    _mm256_storeu_si256(dst.cast(), _mm256_unpacklo_epi64(tick_a, packed_a));
                    _mm256_storeu_si256(dst.add(2).cast(), _mm256_unpackhi_epi64(tick_a, packed_a));
                    _mm256_storeu_si256(dst.add(4).cast(), _mm256_unpacklo_epi64(tick_b, packed_b));
                    _mm256_storeu_si256(dst.add(6).cast(), _mm256_unpackhi_epi64(tick_b, packed_b));
                }
                let n = access.count_ones() as usize;
                // SAFETY: within the slots reserved, as above.
                dst = unsafe { dst.add(n) };
                // TIME and LINE_HI words have bit 24 clear.
                writes += u64::from(
                    (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<7>(w))) as u32)
                        .count_ones(),
                );
                t0 += u64::from(_mm256_extract_epi32::<7>(elapsed) as u32);
                let last = _mm256_extract_epi32::<7>(last_hi) as u32;
                if last != 0 {
                    payload = last & PAYLOAD_MASK as u32;
                }
            }
            give_addresses(unmapped, dst);
            (st.t, st.hi, st.dst) = (t0, map.hi(u64::from(payload)), dst);
            st.writes += writes;
            for word in steps.remainder().chunks_exact(4) {
                let w = u64::from(u32::from_le_bytes(word.try_into().expect("4 bytes")));
                // SAFETY: as above.
                unsafe { word_step(st, w, board, board_bits, &map, counts) };
            }
        })
    }
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

    /// The batch decoder's records and counts; `how`: the linear
    /// mapping's word loop to use instead of the generic one.
    fn fast<M: LineToPa>(
        words: &[u32],
        t0: u64,
        board: u8,
        map: M,
    ) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
        run_batch(words, |bytes, out, c| {
            decode_words(bytes, t0, board, map, out, c)
        })
    }

    fn fast_by<M: LineToPa>(
        words: &[u32],
        t0: u64,
        board: u8,
        map: M,
        how: WordLoop,
    ) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
        run_batch(words, |bytes, out, c| {
            decode_words_by(bytes, t0, board, map, out, c, how)
        })
    }

    fn run_batch(
        words: &[u32],
        decode: impl FnOnce(&[u8], &mut Vec<TraceRecord>, &mut WordCounts) -> u64,
    ) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        // Records already in the buffer stay and the new ones follow.
        let mut out = vec![TraceRecord::default(); 3];
        let mut c = WordCounts::default();
        let end = decode(&bytes, &mut out, &mut c);
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

    /// Every word loop this machine has.
    fn word_loops() -> Vec<WordLoop> {
        let mut loops = vec![WordLoop::Scalar];
        if WordLoop::detect() != WordLoop::Scalar {
            loops.push(WordLoop::detect());
        }
        loops
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
            let want = reference(&words, t0, board, |l| linear.pa_of(l));
            prop_assert_eq!(&fast(&words, t0, board, Linear::new(mask)), &want);
            for how in word_loops() {
                prop_assert_eq!(&fast_by(&words, t0, board, Linear::new(mask), how), &want, "{:?}", how);
            }
            let join = ChannelJoin { channels: 3, channel: 2, shift: 12 };
            prop_assert_eq!(
                fast(&words, t0, board, LinearJoin { mask, join }),
                reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
            );
            prop_assert_eq!(
                fast(&words, t0, board, Mapped { mapping: &linear, join: Some(join) }),
                reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
            );
            for how in word_loops() {
                let joined = reference(&words, t0, board, |l| join.join(linear.pa_of(l)));
                prop_assert_eq!(&fast_by(&words, t0, board, LinearJoin { mask, join }, how), &joined, "{:?}", how);
                let mapped = Mapped { mapping: &linear, join: Some(join) };
                prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &joined, "{:?}", how);
            }
        }
    }

    /// Runs of ACCESS, TIME and LINE_HI words (the vector loop's case)
    /// with now and then any other word, so that eight-word steps both
    /// with and without a rare word occur; LINE_HI payloads above the
    /// geometry's lines too.
    fn plain_word() -> impl Strategy<Value = u32> {
        let control = |op: u32| {
            (0u32..64, any::<u32>())
                .prop_map(move |(dt, p)| (dt << 26) | (1 << 25) | (op << 21) | (p & 0x1f_ffff))
        };
        prop_oneof![
            40 => any::<u32>().prop_map(|w| w & !(1 << 25)),
            4 => control(0),
            8 => control(1),
            1 => (0u32..16).prop_flat_map(control),
        ]
    }

    proptest! {
        #[test]
        fn every_word_loop_equals_the_word_decoder_on_plain_runs(
            words in proptest::collection::vec(plain_word(), 0..600),
            t0 in 0u64..(1 << 62),
            board: u8,
            preset in prop_oneof![Just("ddr4-64g"), Just("ddr3-4g"), Just("ddr2-2g"), Just("ddr-512m")],
        ) {
            let g = Geometry::preset(preset).unwrap();
            let linear = AddressMapping::linear(g);
            let mask = g.lines() - 1;
            let want = reference(&words, t0, board, |l| linear.pa_of(l));
            let join = ChannelJoin { channels: 3, channel: 1, shift: 13 };
            let joined = reference(&words, t0, board, |l| join.join(linear.pa_of(l)));
            // A hashed mapping where the geometry has one.
            let xor = (preset == "ddr3-4g").then(|| {
                AddressMapping::from_toml(hmtt_format::mapping::DDR3_BANK_XOR_TOML, g).unwrap()
            });
            for how in word_loops() {
                prop_assert_eq!(&fast_by(&words, t0, board, Linear::new(mask), how), &want, "{:?}", how);
                prop_assert_eq!(&fast_by(&words, t0, board, LinearJoin { mask, join }, how), &joined, "{:?}", how);
                let mapped = Mapped { mapping: &linear, join: None };
                prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &want, "{:?}", how);
                if let Some(xor) = &xor {
                    let mapped = Mapped { mapping: xor, join: Some(join) };
                    let hashed = reference(&words, t0, board, |l| join.join(xor.pa_of(l)));
                    prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &hashed, "{:?}", how);
                }
            }
        }
    }

    #[test]
    fn the_vector_loop_is_used_where_the_cpu_has_it() {
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            WordLoop::detect() == WordLoop::Avx2,
            std::arch::is_x86_feature_detected!("avx2")
        );
    }
}
