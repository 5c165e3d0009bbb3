//! Numbers appended as text without `fmt` machinery, for writers of long
//! text streams (command files, truth and reference CSVs).

/// Appends `v` in decimal.
pub fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `v` in lower-case hex with a `0x` prefix, as `{v:#x}` does.
pub fn push_hex(out: &mut Vec<u8>, mut v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = DIGITS[(v & 0xF) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(b"0x");
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_fmt() {
        for v in [0, 1, 9, 10, 15, 16, 255, 4096, 0x7fff_1234_5678, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, v);
            out.push(b',');
            push_hex(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v},{v:#x}"));
        }
    }
}
