//! Numbers as text, the project's one home for it: appended without `fmt`
//! machinery, byte for byte as `{}` (decimal) and `{:#x}` (hex) print
//! them, for writers of long text streams (the exports, `hmtt dump`,
//! command files, truth and reference CSVs); and read the one way every
//! tool reads a number it is given ([`parse_number`]), with the sizes,
//! lists and ranges made of such numbers ([`given`]).

pub mod given;
pub use given::{
    parse_list, parse_non_negative, parse_percentage, parse_positive, parse_range, parse_size,
    GivenError,
};

/// Two decimal digits per entry, "00" to "99".
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Bytes a decimal u64 is written into (20 digits, then room for a
/// whole 8-byte store).
pub const DECIMAL_CELL: usize = 24;
/// Bytes a `0x` hex u64 is written into (2 + 16).
pub const HEX_CELL: usize = 18;

/// The first `len` bytes of `bytes`, copied as the whole fixed-size array
/// and cut back: a copy of a constant size is a few moves where one of a
/// variable size is a call to `memcpy`.
#[inline(always)]
pub fn push_first<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], len: usize) {
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
pub fn room<const N: usize>(out: &mut Vec<u8>) -> &mut [u8; N] {
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

/// "0000" to "9999": four digits in one load, where splitting them into
/// pairs took two multiplications by reciprocals (40 KB, read mostly at
/// the few entries near the last rising number's).
static QUADS: [[u8; 4]; 10_000] = {
    let mut quads = [[0u8; 4]; 10_000];
    let mut n = 0;
    while n < 10_000 {
        quads[n] = [
            b'0' + (n / 1000) as u8,
            b'0' + (n / 100 % 10) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
        ];
        n += 1;
    }
    quads
};

/// The 4 decimal digits of `n < 10^4`, zero-padded.
#[inline(always)]
fn decimal4(n: usize) -> [u8; 4] {
    QUADS[n]
}

/// Writes `n` in decimal at the start of `cell` (the bytes after it are
/// scratch); returns the digits' count.
#[inline(always)]
pub fn decimal_into(cell: &mut [u8; DECIMAL_CELL], n: u64) -> usize {
    const E8: u64 = 100_000_000;
    if n < 10 {
        // Ranks, banks, flags: most small fields are one digit, and the
        // logarithm and the word's arithmetic cost more than the digit.
        cell[0] = b'0' + n as u8;
        return 1;
    }
    let len = n.ilog10() as usize + 1;
    if n < E8 {
        // The leading zeros are the word's low bytes.
        let digits = decimal8(n as u32) >> (8 * (8 - len));
        cell[..8].copy_from_slice(&digits.to_le_bytes());
    } else if n < E8 * E8 {
        let high = decimal8((n / E8) as u32) >> (8 * (16 - len));
        let low = decimal8((n % E8) as u32);
        cell[..8].copy_from_slice(&high.to_le_bytes());
        cell[len - 8..len].copy_from_slice(&low.to_le_bytes());
    } else {
        let top = n / (E8 * E8);
        let rest = n % (E8 * E8);
        let high = decimal8(top as u32) >> (8 * (24 - len));
        cell[..8].copy_from_slice(&high.to_le_bytes());
        cell[len - 16..len - 8].copy_from_slice(&decimal8((rest / E8) as u32).to_le_bytes());
        cell[len - 8..len].copy_from_slice(&decimal8((rest % E8) as u32).to_le_bytes());
    }
    len
}

/// `n` in decimal, as `{n}` prints it.
#[inline(always)]
pub fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let at = out.len();
    let len = decimal_into(room::<DECIMAL_CELL>(out), n);
    out.truncate(at + len);
}

/// `n` in decimal, also beyond u64.
#[inline]
pub fn push_decimal_u128(out: &mut Vec<u8>, n: u128) {
    match u64::try_from(n) {
        Ok(n) => push_decimal(out, n),
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

/// Writes `n` as `0x` and lower-case hex digits (`0x0` for zero) at the
/// start of `cell`; returns the bytes written.
#[inline(always)]
pub fn hex_into(cell: &mut [u8; HEX_CELL], n: u64) -> usize {
    let digits = ((64 - n.leading_zeros() as usize).div_ceil(4)).max(1);
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
    2 + digits
}

/// `n` as `{n:#x}` prints it.
#[inline(always)]
pub fn push_hex(out: &mut Vec<u8>, n: u64) {
    let at = out.len();
    let len = hex_into(room::<HEX_CELL>(out), n);
    out.truncate(at + len);
}

/// The `N` bytes of `buf` from `at`: a window of constant size, so that a
/// number's fixed-width stores into it need no check of their own.
#[inline(always)]
pub fn window<const N: usize>(buf: &mut [u8], at: usize) -> &mut [u8; N] {
    (&mut buf[at..at + N])
        .try_into()
        .expect("a window of N bytes")
}

/// Lines written in place into one buffer and handed out in large
/// writes: each line is written into a window of constant size at the
/// buffer's end ([`Lines::cell`]) and kept by [`Lines::advance`], with no
/// length or capacity update per number.
pub struct Lines {
    buf: Vec<u8>,
    len: usize,
    chunk: usize,
    cell_max: usize,
}

impl Lines {
    /// A buffer handed out once it holds `chunk` bytes, with room past it
    /// for one cell of up to `cell_max` bytes.
    pub fn new(chunk: usize, cell_max: usize) -> Lines {
        Lines {
            buf: vec![0; chunk + cell_max],
            len: 0,
            chunk,
            cell_max,
        }
    }

    /// The `N` bytes after the kept lines, to write a line into.
    #[inline(always)]
    pub fn cell<const N: usize>(&mut self) -> &mut [u8; N] {
        window(&mut self.buf, self.len)
    }

    /// Keeps the first `n` bytes of the cell.
    #[inline(always)]
    pub fn advance(&mut self, n: usize) {
        self.len += n;
    }

    /// Appends bytes of any length (the buffer grows to keep room for a
    /// cell after them).
    pub fn extend(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end + self.cell_max > self.buf.len() {
            self.buf.resize(end + self.cell_max, 0);
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
    }

    /// Whether the lines fill a chunk: time to [`Lines::take`] them.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len >= self.chunk
    }

    /// The kept lines, after which the buffer is empty.
    pub fn take(&mut self) -> &[u8] {
        let len = std::mem::take(&mut self.len);
        &self.buf[..len]
    }
}

/// Low digits a [`RisingDecimal`] writes each time; the rest it copies.
const LOW_DIGITS: u64 = 10_000;

/// A decimal writer for numbers that mostly rise by small steps (ticks,
/// times): it keeps the digits of the last number's part above its four
/// low digits, and while that part repeats, copies them and writes only
/// the four low digits. The same bytes as [`push_decimal`] for any
/// sequence of numbers.
#[derive(Debug, Clone)]
pub struct RisingDecimal {
    /// `n / LOW_DIGITS` of the kept digits; 0 keeps nothing (a number
    /// below `LOW_DIGITS` has no high part and is written whole).
    high: u64,
    digits: [u8; DECIMAL_CELL],
    len: usize,
}

impl Default for RisingDecimal {
    fn default() -> Self {
        RisingDecimal::new()
    }
}

impl RisingDecimal {
    pub fn new() -> RisingDecimal {
        RisingDecimal {
            high: 0,
            digits: [0; DECIMAL_CELL],
            len: 0,
        }
    }

    #[cold]
    #[inline(never)]
    fn keep(&mut self, high: u64) {
        self.high = high;
        self.len = decimal_into(&mut self.digits, high);
    }

    /// Writes `n` in decimal at the start of `cell` (the bytes after it
    /// are scratch); returns the digits' count.
    #[inline(always)]
    pub fn write(&mut self, cell: &mut [u8; DECIMAL_CELL], n: u64) -> usize {
        let high = n / LOW_DIGITS;
        if high == 0 {
            return decimal_into(cell, n);
        }
        if high != self.high {
            self.keep(high);
        }
        // At most 16 digits above the low four: `len + 4 <= 20`.
        let len = self.len.min(DECIMAL_CELL - 4);
        cell.copy_from_slice(&self.digits);
        cell[len..len + 4].copy_from_slice(&decimal4((n % LOW_DIGITS) as usize));
        len + 4
    }

    /// `n` in decimal, as `{n}` prints it.
    #[inline(always)]
    pub fn push(&mut self, out: &mut Vec<u8>, n: u64) {
        let at = out.len();
        let len = self.write(room::<DECIMAL_CELL>(out), n);
        out.truncate(at + len);
    }
}

/// The time of `tick` ticks of `tick_ps` ps in nanoseconds with three
/// decimals (`ns.ppp`, the picoseconds exact), the whole nanoseconds
/// written by `ns`.
#[inline(always)]
pub fn push_time_ns(out: &mut Vec<u8>, ns: &mut RisingDecimal, tick: u64, tick_ps: u16) {
    // u64 picoseconds (every tick below 2^48 at any tick length) divide
    // without the u128 division's library call.
    if let Some(ps) = tick.checked_mul(u64::from(tick_ps)) {
        let at = out.len();
        let len = time_ns_into(room::<TIME_NS_CELL>(out), ns, ps);
        out.truncate(at + len);
        return;
    }
    let ps = u128::from(tick) * u128::from(tick_ps);
    push_decimal_u128(out, ps / 1000);
    let frac = (ps % 1000) as usize;
    let pair = (frac % 100) * 2;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        PAIRS[pair],
        PAIRS[pair + 1],
    ]);
}

/// Bytes [`time_ns_into`] writes into: a u64 of nanoseconds and `.ppp`,
/// then scratch.
pub const TIME_NS_CELL: usize = DECIMAL_CELL + 4;

/// Writes the time of `ps` picoseconds in nanoseconds with three decimals
/// (`ns.ppp`) at the start of `cell`, the whole nanoseconds written by
/// `ns`; returns the bytes written.
#[inline(always)]
pub fn time_ns_into(cell: &mut [u8; TIME_NS_CELL], ns: &mut RisingDecimal, ps: u64) -> usize {
    // The kept digits are those of `ps / 10^7`, the nanoseconds above
    // their four low digits.
    let high = ps / (1000 * LOW_DIGITS);
    let low = (ps % (1000 * LOW_DIGITS)) as u32;
    let len = if high == 0 {
        decimal_into(window(cell, 0), u64::from(low / 1000))
    } else {
        if high != ns.high {
            ns.keep(high);
        }
        let len = ns.len.min(DECIMAL_CELL - 4);
        window::<DECIMAL_CELL>(cell, 0).copy_from_slice(&ns.digits);
        window::<4>(cell, len).copy_from_slice(&decimal4((low / 1000) as usize));
        len + 4
    };
    let frac = decimal4((low % 1000) as usize);
    window::<4>(cell, len).copy_from_slice(&[b'.', frac[1], frac[2], frac[3]]);
    len + 4
}

/// Bytes of the longest [`Row`]: a row of ten numbers of 20 digits
/// with their separators fits.
pub const ROW_BYTES: usize = 256;

/// One text line built on the stack, then appended to its output in a
/// single copy: appending each number and separator to a `Vec` on its own
/// (a variable-length copy and a capacity check each) cost more than
/// making the digits. A row longer than [`ROW_BYTES`] panics.
pub struct Row {
    buf: [u8; ROW_BYTES],
    len: usize,
}

impl Default for Row {
    fn default() -> Self {
        Row::new()
    }
}

impl Row {
    #[inline]
    pub fn new() -> Row {
        Row {
            buf: [0; ROW_BYTES],
            len: 0,
        }
    }

    /// Empties the row for the next line (making a new one costs the
    /// zeroing of its buffer).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    #[inline]
    pub fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// The [`ROW_BYTES`]-bounded cell of `N` bytes at the row's end.
    #[inline(always)]
    fn cell<const N: usize>(&mut self) -> &mut [u8; N] {
        let tail: &mut [u8] = &mut self.buf[self.len..self.len + N];
        tail.try_into().expect("a cell of N bytes")
    }

    /// `v` in decimal, as `{v}` writes it.
    #[inline]
    pub fn decimal(&mut self, v: u64) {
        self.len += decimal_into(self.cell(), v);
    }

    /// `v` in lower-case hex with a `0x` prefix, as `{v:#x}` writes it.
    #[inline]
    pub fn hex(&mut self, v: u64) {
        self.len += hex_into(self.cell(), v);
    }
}

/// Writes `v` in decimal, as `{v}` writes it, at `buf[at..]`; returns
/// where its digits end. For writers that assemble a line in a buffer of
/// their own; [`Row::decimal`] is this on a row.
#[inline(always)]
pub fn put_decimal(buf: &mut [u8], at: usize, v: u64) -> usize {
    if let Some(cell) = buf.get_mut(at..at + DECIMAL_CELL) {
        return at + decimal_into(cell.try_into().expect("a decimal cell"), v);
    }
    // Near the buffer's end: the digits made apart, then copied.
    let mut cell = [0; DECIMAL_CELL];
    let len = decimal_into(&mut cell, v);
    buf[at..at + len].copy_from_slice(&cell[..len]);
    at + len
}

/// A text that is not a number as [`parse_number`] reads them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a number (decimal or 0x hexadecimal)")]
pub struct NotANumber(pub String);

/// A number: decimal or `0x` hexadecimal, `_` between digits allowed
/// (`4096`, `0x1000_0000`, `1_000_000`), spaces around it ignored.
pub fn parse_number(s: &str) -> Result<u64, NotANumber> {
    let t = s.trim().replace('_', "");
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    parsed.map_err(|_| NotANumber(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_in_decimal_or_hex_with_underscores() {
        for (text, n) in [
            ("123", 123),
            (" 0x10 ", 16),
            ("0X1f", 31),
            ("1_000", 1000),
            ("0x1000_0000", 0x1000_0000),
            ("18446744073709551615", u64::MAX),
        ] {
            assert_eq!(parse_number(text), Ok(n), "{text}");
        }
        for bad in ["", "x", "0x", "-1", "1.5", "18446744073709551616"] {
            assert_eq!(parse_number(bad), Err(NotANumber(bad.into())), "{bad}");
        }
    }

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    /// Edge values of every length and pseudo-random ones.
    fn samples() -> Vec<u64> {
        let mut samples = vec![0u64, 1, 9, 10, 99, 100, 101, 999, 1000, 9999, 10_000];
        samples.extend([u64::MAX, u64::MAX - 1]);
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
        samples
    }

    #[test]
    fn numbers_are_what_std_formatting_prints() {
        let mut rising = RisingDecimal::new();
        let mut ns = RisingDecimal::new();
        for n in samples() {
            assert_eq!(text(|o| push_decimal(o, n)), n.to_string());
            // In a buffer with room to spare and in one of the digits' size.
            for extra in [DECIMAL_CELL, 0] {
                let digits = n.to_string();
                let mut buf = vec![b'x'; 1 + digits.len() + extra];
                assert_eq!(put_decimal(&mut buf, 1, n), 1 + digits.len());
                assert_eq!(&buf[1..=digits.len()], digits.as_bytes());
            }
            assert_eq!(text(|o| rising.push(o, n)), n.to_string());
            assert_eq!(text(|o| push_hex(o, n)), format!("{n:#x}"));
            let wide = u128::from(n) * 65535 * 7;
            assert_eq!(text(|o| push_decimal_u128(o, wide)), wide.to_string());
            for tick_ps in [0u16, 1, 999, 1000, 1250, 2500, 65535] {
                let ps = u128::from(n) * u128::from(tick_ps);
                assert_eq!(
                    text(|o| push_time_ns(o, &mut ns, n, tick_ps)),
                    format!("{}.{:03}", ps / 1000, ps % 1000)
                );
            }
        }
    }

    /// Rising numbers keep their high digits: the copied digits must be
    /// those of the number written, across every carry into them.
    #[test]
    fn rising_numbers_are_what_std_formatting_prints() {
        let mut rising = RisingDecimal::new();
        let mut out = Vec::new();
        let mut expected = String::new();
        let starts = [
            0u64,
            9_990,
            99_990,
            999_990,
            10u64.pow(16) - 10,
            u64::MAX - 30_000,
        ];
        for start in starts {
            let mut n = start;
            for step in 0..20_000u64 {
                out.push(b' ');
                expected.push(' ');
                rising.push(&mut out, n);
                expected.push_str(&n.to_string());
                n = n.saturating_add(step % 7);
            }
            // And falling back below the kept digits.
            rising.push(&mut out, start / 3);
            expected.push_str(&(start / 3).to_string());
        }
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn rows_near_their_end_take_a_last_number() {
        let mut row = Row::new();
        for _ in 0..(ROW_BYTES - DECIMAL_CELL) {
            row.byte(b' ');
        }
        row.decimal(u64::MAX);
        assert!(row.as_bytes().ends_with(b" 18446744073709551615"));
    }

    #[test]
    fn numbers_match_fmt() {
        for v in [0, 1, 9, 10, 15, 16, 255, 4096, 0x7fff_1234_5678, u64::MAX] {
            let mut row = Row::new();
            row.decimal(v);
            row.byte(b',');
            row.hex(v);
            assert_eq!(row.as_bytes(), format!("{v},{v:#x}").as_bytes());
        }
    }

    #[test]
    fn every_length_matches_fmt() {
        let check = |v: u64| {
            let mut row = Row::new();
            row.decimal(v);
            row.byte(b' ');
            row.hex(v);
            assert_eq!(row.as_bytes(), format!("{v} {v:#x}").as_bytes());
        };
        for shift in 0..64 {
            let p = 1u64 << shift;
            for v in [p, p - 1, p + 1] {
                check(v);
            }
        }
        let mut p = 1u64;
        for _ in 0..19 {
            for v in [p - 1, p, p + 1, p * 9 + 9] {
                check(v);
            }
            p *= 10;
        }
        check(u64::MAX);
    }
}
