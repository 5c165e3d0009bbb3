//! Parquet's DELTA_BINARY_PACKED encoding of 64-bit values, written for
//! the export's `tick`, `board` and `pa` pages: blocks of 128 deltas in 4
//! miniblocks of 32, each miniblock bit-packed at the width of its largest
//! delta less the block's minimum.

/// DELTA_BINARY_PACKED's block: 128 deltas in 4 miniblocks of 32.
const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCK: usize = 32;

/// Writes `v` as an unsigned LEB128 varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Appends the 32 deltas of a miniblock less `min`, each `width` bits
/// (at most 64), packed from the least significant bit (`32 × width`
/// bits: whole bytes). One function per width: with the width a
/// constant, every value's word and shift are constants too and the
/// packing is branch-free.
fn bit_pack(out: &mut Vec<u8>, deltas: &[i64; DELTA_MINIBLOCK], min: i64, width: u32) {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                $($w => pack_width::<$w>(out, deltas, min),)*
                _ => {}
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
}

/// [`bit_pack`] for one width.
#[inline(always)]
fn pack_width<const W: usize>(out: &mut Vec<u8>, deltas: &[i64; DELTA_MINIBLOCK], min: i64) {
    // 32 values of W bits: W / 2 words (half a word more for odd W), at
    // most 32.
    let mut words = [0u64; DELTA_MINIBLOCK];
    // Written out value by value so that each one's word and shift are
    // constants (a loop of 32 is not always unrolled).
    macro_rules! put {
        ($($i:literal)*) => {$({
            let v = deltas[$i].wrapping_sub(min) as u64;
            let (word, shift) = ($i * W / 64, $i * W % 64);
            words[word] |= v << shift;
            if shift + W > 64 {
                words[word + 1] |= v >> (64 - shift);
            }
        })*};
    }
    put!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    let bytes = W * DELTA_MINIBLOCK / 8;
    let at = out.len();
    for w in &words[..bytes.div_ceil(8)] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.truncate(at + bytes);
}

/// A block's deltas: `deltas[i]` = `window[i + 1]` − `window[i]` (the
/// block's `window.len() - 1` deltas, the rest padded with their minimum,
/// which packs as zeros), their minimum, and the OR of each miniblock's
/// deltas less the minimum (whose highest bit is the miniblock's width).
#[inline(always)]
fn block_deltas(
    deltas: &mut [i64; DELTA_BLOCK],
    window: &[i64],
) -> (i64, [u64; DELTA_BLOCK / DELTA_MINIBLOCK]) {
    let n = window.len() - 1;
    for (d, pair) in deltas.iter_mut().zip(window.windows(2)) {
        *d = pair[1].wrapping_sub(pair[0]);
    }
    let min = deltas[..n].iter().copied().min().unwrap_or(0);
    deltas[n..].fill(min);
    let mut ors = [0u64; DELTA_BLOCK / DELTA_MINIBLOCK];
    for (or, mini) in ors.iter_mut().zip(deltas.chunks_exact(DELTA_MINIBLOCK)) {
        *or = mini.iter().fold(0, |a, &d| a | d.wrapping_sub(min) as u64);
    }
    (min, ors)
}

/// [`block_deltas`] with AVX2, whose 64-bit compares the baseline x86-64
/// target lacks (the minimum is then 3 to 4 times the instructions).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn block_deltas_avx2(
    deltas: &mut [i64; DELTA_BLOCK],
    window: &[i64],
) -> (i64, [u64; DELTA_BLOCK / DELTA_MINIBLOCK]) {
    block_deltas(deltas, window)
}

/// DELTA_BINARY_PACKED values (of an INT64 or an INT32 column whose
/// deltas fit in 32 bits: the deltas wrap as readers undo them).
pub(super) fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    put_varint(out, DELTA_BLOCK as u64);
    put_varint(out, (DELTA_BLOCK / DELTA_MINIBLOCK) as u64);
    put_varint(out, values.len() as u64);
    put_varint(out, zigzag(values.first().copied().unwrap_or(0)));
    let mut deltas = [0i64; DELTA_BLOCK];
    // Each block's deltas are those of values[start..start + n] from the
    // values before them.
    let mut start = 1;
    while start < values.len() {
        let n = (values.len() - start).min(DELTA_BLOCK);
        let window = &values[start - 1..start + n];
        let (min, ors) = with_avx2!(block_deltas, block_deltas_avx2, &mut deltas, window);
        put_varint(out, zigzag(min));
        // Miniblocks past the values: a width of 0 and no bytes.
        let miniblocks = n.div_ceil(DELTA_MINIBLOCK);
        let mut widths = [0u8; DELTA_BLOCK / DELTA_MINIBLOCK];
        for (w, or) in widths.iter_mut().zip(ors).take(miniblocks) {
            *w = (u64::BITS - or.leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (&w, mini) in widths
            .iter()
            .zip(deltas.chunks_exact(DELTA_MINIBLOCK))
            .take(miniblocks)
        {
            let mini = mini.try_into().expect("a miniblock");
            bit_pack(out, mini, min, u32::from(w));
        }
        start += n;
    }
}

/// [`delta_binary_packed`] of `count` times `value`: every delta 0, so a
/// block is its minimum delta (0) and four widths of 0.
pub(super) fn constant_delta_binary_packed(out: &mut Vec<u8>, value: i64, count: usize) {
    put_varint(out, DELTA_BLOCK as u64);
    put_varint(out, (DELTA_BLOCK / DELTA_MINIBLOCK) as u64);
    put_varint(out, count as u64);
    put_varint(out, zigzag(value));
    let blocks = count.saturating_sub(1).div_ceil(DELTA_BLOCK);
    out.resize(out.len() + blocks * (1 + DELTA_BLOCK / DELTA_MINIBLOCK), 0);
}
