//! Eight words per step for the common case, runs of ACCESS, TIME and
//! LINE_HI words: the times are a prefix sum of the words' advances,
//! the LINE_HI in force a prefix maximum of (position, payload), the
//! ACCESS words' lanes are moved to the front and their records stored
//! in four 32-byte stores, the slot pointer moving on past the ACCESS
//! words only (as in [`super::words::word_step`]).

use hmtt_format::record::{field, LINE_LO_MASK, TIME_UNIT};
use hmtt_format::trace::TraceRecord;

use super::words::{board_bits, decode_words_with, word_step, LineToPa, WordCounts};
use std::arch::x86_64::*;

// The word's fields (format.md §4) as the intrinsics' shift counts.
const KIND_SHIFT: i32 = field::KIND_SHIFT as i32;
const DT_SHIFT: i32 = field::DT_SHIFT as i32;
const W_SHIFT: i32 = field::W_SHIFT as i32;
/// A TIME payload counts `TIME_UNIT` ticks.
const TIME_SHIFT: i32 = TIME_UNIT.trailing_zeros() as i32;
/// Left shifts that move the K bit and the W bit to the sign bit.
const K_TO_SIGN: i32 = 31 - field::K_SHIFT as i32;
const W_TO_SIGN: i32 = 31 - field::W_SHIFT as i32;

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
        .find(|&w| (w >> field::KIND_SHIFT) & field::KIND_MASK == field::KIND_LINE_HI)
        .map(|w| w & field::PAYLOAD_MASK)
}

/// See [`super::words::decode_words`]; the same records and counts.
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
        let kind_mask = _mm256_set1_epi32(field::KIND_MASK as i32);
        let line_hi_kind = _mm256_set1_epi32(field::KIND_LINE_HI as i32);
        let time_kind = _mm256_set1_epi32(field::KIND_TIME as i32);
        let payload_bits = _mm256_set1_epi32(field::PAYLOAD_MASK as i32);
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
                let records =
                    unsafe { std::slice::from_raw_parts_mut(from, to.offset_from(from) as usize) };
                for r in records {
                    let line = r.packed >> 1;
                    r.packed = board_bits | map.field(line & !LINE_LO_MASK, line) | (r.packed & 1);
                }
            }
        };
        let mut steps = words.chunks_exact(32);
        for step in &mut steps {
            // SAFETY: 32 bytes, unaligned load.
            let w = unsafe { _mm256_loadu_si256(step.as_ptr().cast()) };
            let kind = _mm256_and_si256(_mm256_srli_epi32::<KIND_SHIFT>(w), kind_mask);
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
                _mm256_srli_epi32::<DT_SHIFT>(w),
                _mm256_and_si256(is_time, _mm256_slli_epi32::<TIME_SHIFT>(word_payload)),
            );
            let elapsed = prefix::<false>(advance);
            let last_hi = prefix::<true>(_mm256_and_si256(
                is_hi,
                _mm256_or_si256(word_payload, position),
            ));
            let low = _mm256_or_si256(
                _mm256_and_si256(_mm256_sll_epi32(w, lo_shift), lo_mask),
                _mm256_and_si256(_mm256_srli_epi32::<W_SHIFT>(w), one),
            );
            // Bit i: word i is an ACCESS word (K clear).
            let access = !_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<K_TO_SIGN>(w)))
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
                (_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<W_TO_SIGN>(w))) as u32)
                    .count_ones(),
            );
            t0 += u64::from(_mm256_extract_epi32::<7>(elapsed) as u32);
            let last = _mm256_extract_epi32::<7>(last_hi) as u32;
            if last != 0 {
                payload = last & field::PAYLOAD_MASK;
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
