//! How far a block's columns go on in the common case: records whose OP
//! code is a small-delta access (below `OP_WIDE`, 0xC0: its two top bits
//! are not both set) and whose time step fits the DT byte (not 0xFF).
//! The column decoder takes such a stretch in a loop without a branch a
//! record, and every other record one at a time. Two scans that find the
//! same end: eight bytes a step in a `u64` on any machine, thirty-two a
//! step with AVX2 where the CPU has it.

/// Records at the start of `ops` and `dts` (as long as each other) before
/// the first whose OP code is not a small-delta access or whose DT byte
/// is 0xFF (their length if none is).
pub(super) fn common_run(ops: &[u8], dts: &[u8]) -> usize {
    debug_assert_eq!(ops.len(), dts.len());
    let n = ops.len().min(dts.len());
    let mut i = 0;
    while i + 8 <= n {
        let o = u64::from_le_bytes(ops[i..i + 8].try_into().expect("8 bytes"));
        let d = u64::from_le_bytes(dts[i..i + 8].try_into().expect("8 bytes"));
        // Bit 7 of a byte: an OP code of 0xC0 or more (bits 7 and 6 set).
        let wide_op = o & (o << 1) & 0x8080_8080_8080_8080;
        // Bit 7 of a byte: a DT byte of 0xFF, exact up to the first one
        // (a borrow may mark bytes above it, never below).
        let not_d = !d;
        let wide_dt = not_d.wrapping_sub(0x0101_0101_0101_0101) & d & 0x8080_8080_8080_8080;
        let stop = wide_op | wide_dt;
        if stop != 0 {
            return i + (stop.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && !stops(ops[i], dts[i]) {
        i += 1;
    }
    i
}

/// Whether a record with OP code `op` and DT byte `dt` ends a common run.
#[inline(always)]
pub(super) fn stops(op: u8, dt: u8) -> bool {
    op >= super::block::OP_WIDE || dt == super::block::DT_WIDE
}

/// [`common_run`] with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn common_run_avx2(ops: &[u8], dts: &[u8]) -> usize {
    use std::arch::x86_64::*;
    debug_assert_eq!(ops.len(), dts.len());
    let n = ops.len().min(dts.len());
    let all_ones = _mm256_set1_epi8(-1);
    let mut i = 0;
    while i + 32 <= n {
        // SAFETY: `i + 32 <= n` bytes of both slices are read, unaligned.
        let (o, d) = unsafe {
            (
                _mm256_loadu_si256(ops.as_ptr().add(i).cast()),
                _mm256_loadu_si256(dts.as_ptr().add(i).cast()),
            )
        };
        // Bit 7 of each byte of `o & o << 1` is bit 7 and bit 6 of the
        // OP code (the 16-bit shift carries only into bit 0 of a byte).
        let wide_op = _mm256_and_si256(o, _mm256_slli_epi16::<1>(o));
        let stop = _mm256_movemask_epi8(wide_op) as u32
            | _mm256_movemask_epi8(_mm256_cmpeq_epi8(d, all_ones)) as u32;
        if stop != 0 {
            return i + stop.trailing_zeros() as usize;
        }
        i += 32;
    }
    i + common_run(&ops[i..n], &dts[i..n])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_byte(ops: &[u8], dts: &[u8]) -> usize {
        ops.iter()
            .zip(dts)
            .position(|(&o, &d)| stops(o, d))
            .unwrap_or(ops.len())
    }

    /// Bytes mostly of the common case, with a few that stop a run.
    fn columns() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        proptest::collection::vec(
            (
                prop_oneof![8 => 0u8..0xC0, 1 => any::<u8>()],
                prop_oneof![8 => 0u8..0xFF, 1 => Just(0xFF), 1 => any::<u8>()],
            ),
            0..200,
        )
        .prop_map(|v| v.into_iter().unzip())
    }

    proptest! {
        #[test]
        fn the_word_scan_stops_where_a_byte_scan_does((ops, dts) in columns()) {
            for start in [0, 1, 7, 31].into_iter().filter(|&s| s <= ops.len()) {
                prop_assert_eq!(common_run(&ops[start..], &dts[start..]), by_byte(&ops[start..], &dts[start..]));
            }
        }

        #[test]
        #[cfg(target_arch = "x86_64")]
        fn the_avx2_scan_stops_where_a_byte_scan_does((ops, dts) in columns()) {
            if std::arch::is_x86_feature_detected!("avx2") {
                for start in [0, 1, 7, 31].into_iter().filter(|&s| s <= ops.len()) {
                    // SAFETY: the CPU has AVX2.
                    let avx2 = unsafe { common_run_avx2(&ops[start..], &dts[start..]) };
                    prop_assert_eq!(avx2, by_byte(&ops[start..], &dts[start..]));
                }
            }
        }
    }

    fn both_scans_agree(ops: &[u8], dts: &[u8]) {
        let expected = by_byte(ops, dts);
        assert_eq!(common_run(ops, dts), expected, "{ops:?} {dts:?}");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            assert_eq!(
                unsafe { common_run_avx2(ops, dts) },
                expected,
                "{ops:?} {dts:?}"
            );
        }
    }

    #[test]
    fn every_boundary_byte_stops_or_not() {
        // Each OP code and DT byte alone, at each position of a word.
        for pos in 0..40 {
            for b in 0..=255u8 {
                let mut ops = vec![0u8; 40];
                let mut dts = vec![0u8; 40];
                ops[pos] = b;
                both_scans_agree(&ops, &dts);
                ops[pos] = 0;
                dts[pos] = b;
                both_scans_agree(&ops, &dts);
            }
        }
    }
}
