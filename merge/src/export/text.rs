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

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `n` in decimal.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if n >= 10 {
        let d = n as usize * 2;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        i -= 1;
        tmp[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&tmp[i..]);
}

/// `n` in decimal, also beyond u64.
#[inline]
pub(crate) fn push_u128(out: &mut Vec<u8>, n: u128) {
    match u64::try_from(n) {
        Ok(n) => push_u64(out, n),
        Err(_) => out.extend_from_slice(n.to_string().as_bytes()),
    }
}

/// `n` as `0x` and lower-case hex digits (`0x0` for zero).
#[inline]
pub(crate) fn push_hex(out: &mut Vec<u8>, n: u64) {
    let digits = ((64 - n.leading_zeros() as usize).div_ceil(4)).max(1);
    let mut tmp = [0u8; 18];
    tmp[0] = b'0';
    tmp[1] = b'x';
    for (k, c) in tmp[2..2 + digits].iter_mut().enumerate() {
        *c = HEX[((n >> (4 * (digits - 1 - k))) & 0xf) as usize];
    }
    out.extend_from_slice(&tmp[..2 + digits]);
}

/// The time of `tick` ticks of `tick_ps` ps in ns with three decimals,
/// as [`super::time::TickTime`] shows it without a width.
#[inline]
pub(crate) fn push_time_ns(out: &mut Vec<u8>, tick: u64, tick_ps: u16) {
    let ps = u128::from(tick) * u128::from(tick_ps);
    push_u128(out, ps / 1000);
    let frac = (ps % 1000) as usize;
    out.push(b'.');
    out.push(b'0' + (frac / 100) as u8);
    out.extend_from_slice(&PAIRS[(frac % 100) * 2..(frac % 100) * 2 + 2]);
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
