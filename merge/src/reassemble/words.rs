//! The word loop: a packet's record words (format.md §4) straight into
//! trace records, one word at a time, specialised at compile time for each
//! way of turning a line index into a physical address ([`LineToPa`]).
//! The vector loop ([`super::avx2`]) shares its state, its step for the
//! words it does not take and its address forms.

use hmtt_format::record::{field, Opcode, RecordWord, LINE_LO_MASK, TIME_UNIT};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::{AddressMapping, LINE_BYTES};

use super::ChannelJoin;

/// Tallies of one packet's words, kept in locals by the word loop.
#[derive(Default)]
pub(super) struct WordCounts {
    pub(super) accesses: u64,
    pub(super) writes: u64,
    /// tags, tag writes, inner commands, LOST words.
    pub(super) control: [u64; 4],
    pub(super) lost: u64,
    pub(super) corrupt: u64,
}

/// Line index → the address field of a record (its physical address,
/// bits 6..55 of the packed word), resolved once per packet so that the
/// word loop is compiled for each case. The loop carries what LINE_HI
/// contributes (`hi`) from word to word, in the form the case wants: for
/// the linear mapping the address bits themselves, so an ACCESS word costs
/// one shift, one mask and one OR.
pub(super) trait LineToPa {
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

pub(super) struct Linear {
    /// `(lines - 1) * 64`: the line bits, in place in the address.
    pub(super) mask: u64,
}

impl Linear {
    pub(super) fn new(mask: u64) -> Linear {
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

pub(super) struct LinearJoin {
    pub(super) mask: u64,
    pub(super) join: ChannelJoin,
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

pub(super) struct Mapped<'m> {
    pub(super) mapping: &'m AddressMapping,
    pub(super) join: Option<ChannelJoin>,
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
pub(super) struct WordState {
    pub(super) t: u64,
    pub(super) hi: u64,
    pub(super) dst: *mut TraceRecord,
    pub(super) writes: u64,
    pub(super) control_records: usize,
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
pub(super) unsafe fn word_step<M: LineToPa>(
    st: &mut WordState,
    w: u64,
    board: u8,
    board_bits: u64,
    map: &M,
    counts: &mut WordCounts,
) {
    st.t += w >> field::DT_SHIFT;
    // The K bit and the opcode as one number (`field::KIND_MASK`): the
    // accessors' enum would compile to branches here.
    let kind = (w >> field::KIND_SHIFT) & u64::from(field::KIND_MASK);
    if kind > u64::from(field::KIND_LINE_HI) {
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
    let write = (w >> field::W_SHIFT) & 1;
    // Written for TIME and LINE_HI too, and overwritten by the next
    // record; kept (the pointer moves on) when the K bit is clear.
    // SAFETY: as above, this word's slot is within the room reserved.
    unsafe {
        st.dst.write(TraceRecord {
            tick: st.t,
            packed: board_bits | map.field(st.hi, w) | write,
        });
        st.dst = st.dst.add(((w >> field::K_SHIFT) & 1 ^ 1) as usize);
    }
    st.writes += write;
    let payload = w & u64::from(field::PAYLOAD_MASK);
    st.t += if kind == u64::from(field::KIND_TIME) {
        payload * TIME_UNIT
    } else {
        0
    };
    st.hi = if kind == u64::from(field::KIND_LINE_HI) {
        map.hi(payload)
    } else {
        st.hi
    };
}

/// The hot loop: record words (format.md §4) straight from the map into
/// records, appended to `out`, the same as [`hmtt_format::WordDecoder`]
/// gives (see [`word_step`]). Returns the time of the last word. Not
/// inlined, so that the loop has the registers to itself.
#[inline(never)]
pub(super) fn decode_words<M: LineToPa>(
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
pub(super) fn board_bits(board: u8) -> u64 {
    TraceRecord::access(0, board, false, 0).packed
}

/// Reserves a record slot per word in `out`, runs `body` over the words
/// from the start state, and keeps the records it wrote.
#[inline(always)]
pub(super) fn decode_words_with<M: LineToPa>(
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

/// How the vector loop builds a record's packed word from a word's
/// `line_lo` (shifted left by `lo_shift`, then masked with `lo_mask`), its
/// write bit (bit 0) and the LINE_HI payload in force (masked with
/// `payload_mask`, then shifted left by `hi_shift`). With
/// [`LineToPa::VECTOR_REMAP`] that word holds `line << 1 | write`, and each
/// kept record is then given its address field by [`LineToPa::field`] and
/// the board's bits.
#[derive(Debug, Clone, Copy)]
pub(super) struct VectorForm {
    pub(super) lo_shift: u32,
    pub(super) lo_mask: u32,
    pub(super) hi_shift: u32,
    pub(super) payload_mask: u32,
}

impl VectorForm {
    /// The line index, doubled, with the write bit: for any mapping.
    pub(super) const LINE: VectorForm = VectorForm {
        lo_shift: 1,
        lo_mask: field::LINE_LO_MASK << 1,
        hi_shift: 25,
        payload_mask: field::PAYLOAD_MASK,
    };
}

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
