//! `time_ns`'s values as BYTE_STREAM_SPLIT: the times of a page's records
//! cut into their 8 byte streams, 8 values at a time through an 8×8 byte
//! transpose (with AVX2 byte shuffles where the CPU has them).

use hmtt_format::trace::TraceRecord;

/// Writes the time of each record (its tick × `tick_ns`, the tick
/// converted as an i64 if `signed`) as BYTE_STREAM_SPLIT: `raw` (8 bytes
/// a record) holds the first bytes of every value, then the second
/// bytes, and so on.
#[inline(always)]
pub(super) fn byte_streams(raw: &mut [u8], page: &[TraceRecord], tick_ns: f64, signed: bool) {
    if signed {
        split_times(
            raw,
            page,
            |t| (t as i64 as f64 * tick_ns).to_bits(),
            transpose_bytes,
        );
    } else {
        split_times(
            raw,
            page,
            |t| (t as f64 * tick_ns).to_bits(),
            transpose_bytes,
        );
    }
}

/// [`byte_streams`] with AVX2: the 8×8 byte transposes by byte shuffles.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn byte_streams_avx2(raw: &mut [u8], page: &[TraceRecord], tick_ns: f64, signed: bool) {
    let transpose = |x| transpose_bytes_avx2(x);
    if signed {
        split_times(
            raw,
            page,
            |t| (t as i64 as f64 * tick_ns).to_bits(),
            transpose,
        );
    } else {
        split_times(raw, page, |t| (t as f64 * tick_ns).to_bits(), transpose);
    }
}

/// [`byte_streams`] of `time(tick)`, 8 values at a time through
/// `transpose` (as [`transpose_bytes`]).
#[inline(always)]
fn split_times(
    raw: &mut [u8],
    page: &[TraceRecord],
    time: impl Fn(u64) -> u64,
    transpose: impl Fn([u64; 8]) -> [u64; 8],
) {
    let n = page.len();
    let mut streams: [&mut [u8]; 8] = Default::default();
    for (stream, bytes) in streams.iter_mut().zip(raw.chunks_exact_mut(n)) {
        *stream = bytes;
    }
    let eights = page.chunks_exact(8);
    let rest = eights.remainder();
    for (g, eight) in eights.enumerate() {
        let mut words = [0u64; 8];
        for (w, r) in words.iter_mut().zip(eight) {
            *w = time(r.tick);
        }
        // words[k] becomes byte k of the 8 values: stream k's bytes.
        for (stream, word) in streams.iter_mut().zip(transpose(words)) {
            stream[g * 8..g * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
    }
    let done = n - rest.len();
    for (i, r) in rest.iter().enumerate() {
        for (stream, b) in streams.iter_mut().zip(time(r.tick).to_le_bytes()) {
            stream[done + i] = b;
        }
    }
}

/// The 8×8 byte matrix whose row i is the little-endian bytes of
/// `rows[i]`, transposed: word k of the result holds byte k of every row,
/// row i's in its byte i. Three rounds of block swaps (4×4, 2×2, 1×1).
pub(super) fn transpose_bytes(mut x: [u64; 8]) -> [u64; 8] {
    for (shift, mask, pairs) in [
        (
            32,
            0x0000_0000_ffff_ffffu64,
            [(0, 4), (1, 5), (2, 6), (3, 7)],
        ),
        (16, 0x0000_ffff_0000_ffff, [(0, 2), (1, 3), (4, 6), (5, 7)]),
        (8, 0x00ff_00ff_00ff_00ff, [(0, 1), (2, 3), (4, 5), (6, 7)]),
    ] {
        for (a, b) in pairs {
            let t = ((x[a] >> shift) ^ x[b]) & mask;
            x[a] ^= t << shift;
            x[b] ^= t;
        }
    }
    x
}

/// [`transpose_bytes`] with AVX2: in each 128-bit lane (two values) a
/// byte shuffle puts byte k of both side by side (16-bit element k); the
/// lanes regrouped, 16-bit interleaves make 32-bit element k of a lane
/// byte k of four values, and a 32-bit permutation pairs the two lanes'
/// halves of each word.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) fn transpose_bytes_avx2(x: [u64; 8]) -> [u64; 8] {
    use std::arch::x86_64::*;
    // SAFETY: both loads read 32 of the array's 64 bytes (unaligned).
    let (a, b) = unsafe {
        (
            _mm256_loadu_si256(x.as_ptr().cast()),
            _mm256_loadu_si256(x[4..].as_ptr().cast()),
        )
    };
    let pairs = _mm256_setr_epi8(
        0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5,
        13, 6, 14, 7, 15,
    );
    // Lanes: values 0 and 1 | 2 and 3, then 4 and 5 | 6 and 7.
    let (a, b) = (_mm256_shuffle_epi8(a, pairs), _mm256_shuffle_epi8(b, pairs));
    // Lanes: 0 and 1 | 4 and 5, then 2 and 3 | 6 and 7.
    let c = _mm256_permute2x128_si256::<0x20>(a, b);
    let d = _mm256_permute2x128_si256::<0x31>(a, b);
    // 32-bit element k of the low lane: byte k (`low`) or 4 + k (`high`)
    // of values 0 to 3; of the high lane: of values 4 to 7.
    let low = _mm256_unpacklo_epi16(c, d);
    let high = _mm256_unpackhi_epi16(c, d);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let low = _mm256_permutevar8x32_epi32(low, order);
    let high = _mm256_permutevar8x32_epi32(high, order);
    let mut out = [0u64; 8];
    // SAFETY: both stores write 32 of the array's 64 bytes (unaligned).
    unsafe {
        _mm256_storeu_si256(out.as_mut_ptr().cast(), low);
        _mm256_storeu_si256(out[4..].as_mut_ptr().cast(), high);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte k of word i becomes byte i of word k, in both transposes, over
    /// words of a fixed pseudo-random sequence.
    #[test]
    fn byte_transposes_swap_rows_and_columns() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..1000 {
            let words: [u64; 8] = std::array::from_fn(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            });
            let expected: [u64; 8] = std::array::from_fn(|k| {
                (0..8).fold(0, |w, i| w | (words[i] >> (8 * k) & 0xff) << (8 * i))
            });
            assert_eq!(transpose_bytes(words), expected);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: this CPU has AVX2.
                assert_eq!(unsafe { transpose_bytes_avx2(words) }, expected);
            }
        }
    }
}
