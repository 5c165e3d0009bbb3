//! Which of a reference's previous references it may continue: those
//! whose line is its line - 1 or + 1, compared on the lines' low 16 bits
//! (the keys), every previous reference of the window at once. A key
//! match is a candidate only: the run loop checks the whole line of the
//! one it takes.

/// The most previous references one call covers (windows up to 64).
pub(super) const LANES: usize = 64;

/// The key of `line`: its low 16 bits.
#[inline(always)]
pub(super) fn key(line: u64) -> u16 {
    line as u16
}

/// `(up, down)`: bit `k` of `up` set when `before[k]` is `key - 1`, of
/// `down` when it is `key + 1`, for the first 32 (`WIDE`: all 64) of
/// `before`.
#[inline(always)]
pub(super) fn portable<const WIDE: bool>(before: &[u16; LANES], key: u16) -> (u64, u64) {
    let lanes = if WIDE { 64 } else { 32 };
    let (below, above) = (key.wrapping_sub(1), key.wrapping_add(1));
    let (mut up, mut down) = (0u64, 0u64);
    for (k, &b) in before[..lanes].iter().enumerate() {
        up |= u64::from(b == below) << k;
        down |= u64::from(b == above) << k;
    }
    (up, down)
}

/// [`portable`] with SSE2 (which every x86-64 CPU has): eight keys a
/// comparison, two comparisons' results packed to bytes, their sign bits
/// gathered.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn sse2<const WIDE: bool>(before: &[u16; LANES], key: u16) -> (u64, u64) {
    use std::arch::x86_64::*;
    let lanes = if WIDE { 64 } else { 32 };
    let before = &before[..lanes];
    let (mut up, mut down) = (0u64, 0u64);
    // SAFETY: SSE2 is part of x86-64; keys `16 * part .. 16 * part + 16`
    // of the `lanes` of `before` are read, unaligned.
    unsafe {
        let below = _mm_set1_epi16(key.wrapping_sub(1) as i16);
        let above = _mm_set1_epi16(key.wrapping_add(1) as i16);
        for part in 0..lanes / 16 {
            let p = before.as_ptr().add(16 * part).cast::<__m128i>();
            let (a, b) = (_mm_loadu_si128(p), _mm_loadu_si128(p.add(1)));
            let u = _mm_packs_epi16(_mm_cmpeq_epi16(a, below), _mm_cmpeq_epi16(b, below));
            let d = _mm_packs_epi16(_mm_cmpeq_epi16(a, above), _mm_cmpeq_epi16(b, above));
            up |= u64::from(_mm_movemask_epi8(u) as u16) << (16 * part);
            down |= u64::from(_mm_movemask_epi8(d) as u16) << (16 * part);
        }
    }
    (up, down)
}

/// [`portable`] with AVX2: sixteen keys a comparison; the packing works
/// within 128-bit lanes, so the packed quarters are put back in order.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn avx2<const WIDE: bool>(before: &[u16; LANES], key: u16) -> (u64, u64) {
    use std::arch::x86_64::*;
    let lanes = if WIDE { 64 } else { 32 };
    let before = &before[..lanes];
    let below = _mm256_set1_epi16(key.wrapping_sub(1) as i16);
    let above = _mm256_set1_epi16(key.wrapping_add(1) as i16);
    let (mut up, mut down) = (0u64, 0u64);
    for part in 0..lanes / 32 {
        // SAFETY: keys `32 * part .. 32 * part + 32` of the `lanes` of
        // `before` are read, unaligned.
        let (a, b) = unsafe {
            let p = before.as_ptr().add(32 * part).cast::<__m256i>();
            (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)))
        };
        // Packed: a 0-7, b 0-7, a 8-15, b 8-15 (64-bit quarters 0 1 2 3);
        // in order: quarters 0 2 1 3.
        let u = _mm256_packs_epi16(_mm256_cmpeq_epi16(a, below), _mm256_cmpeq_epi16(b, below));
        let d = _mm256_packs_epi16(_mm256_cmpeq_epi16(a, above), _mm256_cmpeq_epi16(b, above));
        let u = _mm256_permute4x64_epi64::<0b11_01_10_00>(u);
        let d = _mm256_permute4x64_epi64::<0b11_01_10_00>(d);
        up |= u64::from(_mm256_movemask_epi8(u) as u32) << (32 * part);
        down |= u64::from(_mm256_movemask_epi8(d) as u32) << (32 * part);
    }
    (up, down)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The SIMD comparisons find the keys the plain one does, at both
        /// widths, keys at the ends of the range (wrapping) included.
        #[test]
        fn simd_candidates_are_the_plain_ones(
            before in prop::array::uniform32(prop::sample::select(vec![0u16, 1, 2, 3, 0xfffe, 0xffff, 77, 78, 79])),
            before_too in prop::array::uniform32(prop::sample::select(vec![0u16, 1, 2, 0xffff, 77, 79])),
            key in prop::sample::select(vec![0u16, 1, 2, 0xffff, 78]),
        ) {
            let mut all = [0u16; LANES];
            all[..32].copy_from_slice(&before);
            all[32..].copy_from_slice(&before_too);
            let before = all;
            for wide in [false, true] {
                let plain = if wide { portable::<true>(&before, key) } else { portable::<false>(&before, key) };
                #[cfg(target_arch = "x86_64")]
                {
                    let sse2 = if wide { sse2::<true>(&before, key) } else { sse2::<false>(&before, key) };
                    prop_assert_eq!(sse2, plain);
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU has AVX2.
                        let avx2 = unsafe {
                            if wide { avx2::<true>(&before, key) } else { avx2::<false>(&before, key) }
                        };
                        prop_assert_eq!(avx2, plain);
                    }
                }
                let lanes = if wide { 64 } else { 32 };
                let any = before[..lanes]
                    .iter()
                    .any(|&b| b == key.wrapping_sub(1) || b == key.wrapping_add(1));
                prop_assert_eq!(plain != (0, 0), any);
            }
        }
    }
}
