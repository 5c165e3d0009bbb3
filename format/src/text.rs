//! Numbers as text: appended without `fmt` machinery, for writers of long
//! text streams (command files, truth and reference CSVs), and read the one
//! way every tool reads a number it is given ([`parse_number`]).

/// Two decimal digits per entry, "00" to "99".
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const HEX: &[u8; 16] = b"0123456789abcdef";

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

    /// `v` in decimal, as `{v}` writes it.
    #[inline]
    pub fn decimal(&mut self, v: u64) {
        self.len = put_decimal(&mut self.buf, self.len, v);
    }

    /// `v` in lower-case hex with a `0x` prefix, as `{v:#x}` writes it.
    #[inline]
    pub fn hex(&mut self, mut v: u64) {
        let n = (64 - (v | 1).leading_zeros() as usize).div_ceil(4);
        self.bytes(b"0x");
        let mut i = self.len + n;
        self.len = i;
        while i > self.len - n {
            i -= 1;
            self.buf[i] = HEX[(v & 0xF) as usize];
            v >>= 4;
        }
    }
}

/// Writes `v` in decimal, as `{v}` writes it, at `buf[at..]`; returns
/// where its digits end. For writers that assemble a line in a buffer of
/// their own; [`Row::decimal`] is this on a row.
#[inline(always)]
pub fn put_decimal(buf: &mut [u8], at: usize, mut v: u64) -> usize {
    if v < 10 {
        // Most small fields (ranks, banks, flags) are one digit.
        buf[at] = b'0' + v as u8;
        return at + 1;
    }
    let end = at + v.ilog10() as usize + 1;
    let mut i = end;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        buf[i - 2..i].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        buf[i - 1] = b'0' + v as u8;
    }
    end
}

/// Writes `v` (below 10,000) as exactly four digits, zeros in front, at
/// `buf[at..]`: the low digits of a number whose higher digits were
/// written before. Returns where they end.
#[inline]
pub fn put_four_digits(buf: &mut [u8], at: usize, v: u16) -> usize {
    debug_assert!(v < 10_000);
    let (hi, lo) = (usize::from(v / 100) * 2, usize::from(v % 100) * 2);
    buf[at..at + 2].copy_from_slice(&PAIRS[hi..hi + 2]);
    buf[at + 2..at + 4].copy_from_slice(&PAIRS[lo..lo + 2]);
    at + 4
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
    fn four_digits_are_zero_padded() {
        for v in [0u16, 7, 42, 999, 1000, 9999] {
            let mut buf = [b'x'; 6];
            assert_eq!(put_four_digits(&mut buf, 1, v), 5);
            assert_eq!(&buf, format!("x{v:04}x").as_bytes());
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
