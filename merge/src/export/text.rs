//! The numbers of the text exports, appended to a line buffer byte for
//! byte as `{}` (decimal) and `{:#x}` (hexadecimal) print them, without
//! the formatting machinery: the text writers' time goes into these.

/// "00" to "99".
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The first `len` bytes of `bytes`, copied as the whole fixed-size array
/// and cut back: a copy of a constant size is a few moves where one of a
/// variable size is a call to `memcpy`.
#[inline(always)]
pub(crate) fn push_first<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], len: usize) {
    let at = out.len();
    out.extend_from_slice(bytes);
    out.truncate(at + len);
}

/// Room for `N` bytes at the end of `out`, zeroed by a store of constant
/// size, for a writer to fill in place and cut back to what it wrote.
/// Bytes are written straight into the output: built in a small array
/// and copied over, a number was read back as a wide load right after its
/// byte-wide stores, which cannot forward and stalled the writers.
#[inline(always)]
pub(crate) fn room<const N: usize>(out: &mut Vec<u8>) -> &mut [u8; N] {
    let at = out.len();
    out.extend_from_slice(&[0u8; N]);
    let tail: &mut [u8] = &mut out[at..];
    tail.try_into().expect("N bytes were just added")
}

/// The 8 decimal digits of `n < 10^8`, zero-padded, as ASCII in the bytes
/// of a little-endian word (the most significant digit in its lowest byte):
/// the halves, quarters and digits split in parallel lanes by multiplying
/// with reciprocals (Khuong's `encode_ten_thousands`), with no division
/// chain.
#[inline(always)]
fn decimal8(n: u32) -> u64 {
    let n = u64::from(n);
    let merged = (n / 10_000) | ((n % 10_000) << 32);
    // Division by 100 of values below 10^4: 10486 / 2^20.
    let top = ((merged * 10486) >> 20) & ((0x7f << 32) | 0x7f);
    let bot = merged - 100 * top;
    let hundreds = (bot << 16) + top;
    // Division by 10 of values below 100: 103 / 2^10.
    let mut tens = (hundreds * 103) >> 10;
    tens &= (0xf << 48) | (0xf << 32) | (0xf << 16) | 0xf;
    tens += (hundreds - 10 * tens) << 8;
    tens + 0x3030_3030_3030_3030
}

/// `n` in decimal.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    const E8: u64 = 100_000_000;
    let len = n.checked_ilog10().map_or(1, |l| l as usize + 1);
    let at = out.len();
    if n < E8 {
        // The leading zeros are the word's low bytes.
        let digits = decimal8(n as u32) >> (8 * (8 - len));
        room::<8>(out).copy_from_slice(&digits.to_le_bytes());
    } else if n < E8 * E8 {
        let high = decimal8((n / E8) as u32) >> (8 * (16 - len));
        let low = decimal8((n % E8) as u32);
        let cell = room::<16>(out);
        cell[..8].copy_from_slice(&high.to_le_bytes());
        cell[len - 8..len].copy_from_slice(&low.to_le_bytes());
    } else {
        let cell = room::<24>(out);
        let top = n / (E8 * E8);
        let rest = n % (E8 * E8);
        let high = decimal8(top as u32) >> (8 * (24 - len));
        cell[..8].copy_from_slice(&high.to_le_bytes());
        cell[len - 16..len - 8].copy_from_slice(&decimal8((rest / E8) as u32).to_le_bytes());
        cell[len - 8..len].copy_from_slice(&decimal8((rest % E8) as u32).to_le_bytes());
    }
    out.truncate(at + len);
}

/// `n` in decimal, also beyond u64.
#[inline]
pub(crate) fn push_u128(out: &mut Vec<u8>, n: u128) {
    match u64::try_from(n) {
        Ok(n) => push_u64(out, n),
        Err(_) => out.extend_from_slice(n.to_string().as_bytes()),
    }
}

/// The 8 hex digits of `n`, zero-padded, as lower-case ASCII in the bytes
/// of a little-endian word (the most significant digit in its lowest
/// byte): the nibbles spread to bytes by shifts and masks, converted in
/// parallel lanes.
#[inline(always)]
fn hex8(n: u32) -> u64 {
    let mut x = u64::from(n);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Nibble k is in byte k; the most significant first.
    let x = x.swap_bytes();
    // 1 in each byte above 9: 'a' is 39 past '0' + 10.
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * 39
}

/// `n` as `0x` and lower-case hex digits (`0x0` for zero).
#[inline]
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    let digits = ((64 - n.leading_zeros() as usize).div_ceil(4)).max(1);
    let at = out.len();
    let cell = room::<18>(out);
    cell[..2].copy_from_slice(b"0x");
    if digits <= 8 {
        let word = hex8(n as u32) >> (8 * (8 - digits));
        cell[2..10].copy_from_slice(&word.to_le_bytes());
    } else {
        let high = hex8((n >> 32) as u32) >> (8 * (16 - digits));
        cell[2..10].copy_from_slice(&high.to_le_bytes());
        let low = hex8(n as u32);
        cell[digits - 6..digits + 2].copy_from_slice(&low.to_le_bytes());
    }
    out.truncate(at + 2 + digits);
}

/// The time of `tick` ticks of `tick_ps` ps in ns with three decimals,
/// as [`super::time::TickTime`] shows it without a width.
#[inline]
pub(crate) fn push_time_ns(out: &mut Vec<u8>, tick: u64, tick_ps: u16) {
    // u64 picoseconds (every tick below 2^48 at any tick length) divide
    // without the u128 division's library call.
    let frac = match tick.checked_mul(u64::from(tick_ps)) {
        Some(ps) => {
            push_u64(out, ps / 1000);
            (ps % 1000) as usize
        }
        None => {
            let ps = u128::from(tick) * u128::from(tick_ps);
            push_u128(out, ps / 1000);
            (ps % 1000) as usize
        }
    };
    let pair = (frac % 100) * 2;
    let cell = room::<4>(out);
    cell[0] = b'.';
    cell[1] = b'0' + (frac / 100) as u8;
    cell[2..].copy_from_slice(&PAIRS[pair..pair + 2]);
}

#[cfg(test)]
mod tests {
    use super::super::time::TickTime;
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn numbers_are_what_std_formatting_prints() {
        let mut samples = vec![
            0u64,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            u64::MAX,
            u64::MAX - 1,
        ];
        // Every number of up to five digits, and pseudo-random ones of
        // every length (an xorshift sequence cut to 1 to 64 bits).
        samples.extend(0..100_000u64);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            samples.push(x >> (x % 64));
        }
        for p in 1..20 {
            let p = 10u64.pow(p);
            samples.extend([p - 1, p, p + 1]);
        }
        for shift in 0..64 {
            samples.push(1 << shift);
            samples.push((1 << shift) - 1);
            samples.push(0x9e37_79b9_7f4a_7c15u64.rotate_left(shift) >> (shift / 2));
        }
        for n in samples {
            assert_eq!(text(|o| push_u64(o, n)), n.to_string());
            assert_eq!(text(|o| push_hex(o, n)), format!("{n:#x}"));
            let wide = u128::from(n) * 65535 * 7;
            assert_eq!(text(|o| push_u128(o, wide)), wide.to_string());
            for tick_ps in [0u16, 1, 999, 1000, 1250, 2500, 65535] {
                assert_eq!(
                    text(|o| push_time_ns(o, n, tick_ps)),
                    TickTime::new(n, tick_ps).to_string()
                );
            }
        }
    }
}
