//! Sizes, lists and ranges of numbers as a user gives them (options,
//! configuration), each number read by [`parse_number`].

use super::{parse_number, NotANumber};

/// Why a size, list or range given as text is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GivenError {
    #[error("size '{text}': unknown suffix '{suffix}' (K, M, G or T)")]
    UnknownSuffix { text: String, suffix: char },
    // The number's error is in the message, not a source: clap, which
    // parses sizes and lists given as options, shows the message alone.
    #[error("size '{text}': {number}")]
    SizeNumber { text: String, number: NotANumber },
    #[error("size '{0}' is too large")]
    SizeTooLarge(String),
    #[error("{what} '{text}': expected {count} numbers")]
    ListLength {
        what: String,
        text: String,
        count: usize,
    },
    #[error("{what}: {number}")]
    ListNumber { what: String, number: NotANumber },
    #[error("'{0}' is not a range LO..HI")]
    NotARange(String),
    #[error("range '{0}' is empty")]
    EmptyRange(String),
    #[error(transparent)]
    Number(#[from] NotANumber),
    #[error("'{0}' is not a number")]
    NotAReal(String),
    #[error("'{0}' is not a positive, finite number")]
    NotPositive(String),
    #[error("'{0}' is not a finite number of at least 0")]
    Negative(String),
    #[error("'{0}' is not a percentage (0 to 100)")]
    NotAPercentage(String),
}

/// A size: a number with an optional K, M, G or T suffix (powers of
/// 1024), optionally followed by `B` or `iB` (`123`, `4K`, `16MiB`, `2g`,
/// `16T`).
pub fn parse_size(s: &str) -> Result<u64, GivenError> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mul) = match t.char_indices().last() {
        // Hexadecimal digits are not suffixes.
        Some((i, c)) if c.is_ascii_alphabetic() && !t.to_ascii_lowercase().starts_with("0x") => {
            let mul = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => {
                    return Err(GivenError::UnknownSuffix {
                        text: s.to_string(),
                        suffix: c,
                    })
                }
            };
            (&t[..i], mul)
        }
        _ => (t, 1),
    };
    let n = parse_number(num).map_err(|number| GivenError::SizeNumber {
        text: s.to_string(),
        number,
    })?;
    n.checked_mul(mul)
        .ok_or_else(|| GivenError::SizeTooLarge(s.to_string()))
}

/// A real number that `accept`s, or else the error `refused` makes.
fn parse_real(
    s: &str,
    accept: impl Fn(f64) -> bool,
    refused: fn(String) -> GivenError,
) -> Result<f64, GivenError> {
    match s.trim().parse::<f64>() {
        Ok(x) if accept(x) => Ok(x),
        Ok(_) => Err(refused(s.to_string())),
        Err(_) => Err(GivenError::NotAReal(s.to_string())),
    }
}

/// A number greater than 0 and finite (`--interval-ms 0.5`).
pub fn parse_positive(s: &str) -> Result<f64, GivenError> {
    parse_real(s, |x| x.is_finite() && x > 0.0, GivenError::NotPositive)
}

/// A number of at least 0, finite (`--from-ns 0`).
pub fn parse_non_negative(s: &str) -> Result<f64, GivenError> {
    parse_real(s, |x| x.is_finite() && x >= 0.0, GivenError::Negative)
}

/// A percentage, 0 to 100.
pub fn parse_percentage(s: &str) -> Result<f64, GivenError> {
    parse_real(
        s,
        |x| (0.0..=100.0).contains(&x),
        GivenError::NotAPercentage,
    )
}

/// `N` numbers separated by `,` or `/` (`1/7`, `3,100,2`), given as
/// `what` (named in errors).
pub fn parse_list<const N: usize>(what: &str, s: &str) -> Result<[u64; N], GivenError> {
    let parts: Vec<&str> = s.split([',', '/']).collect();
    if parts.len() != N {
        return Err(GivenError::ListLength {
            what: what.to_string(),
            text: s.to_string(),
            count: N,
        });
    }
    let mut out = [0u64; N];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = parse_number(p).map_err(|number| GivenError::ListNumber {
            what: what.to_string(),
            number,
        })?;
    }
    Ok(out)
}

/// `LO..HI`, a non-empty range of numbers.
pub fn parse_range(s: &str) -> Result<(u64, u64), GivenError> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| GivenError::NotARange(s.to_string()))?;
    let (a, b) = (parse_number(a)?, parse_number(b)?);
    if a >= b {
        return Err(GivenError::EmptyRange(s.to_string()));
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_numbers_in_their_ranges() {
        assert_eq!(parse_positive(" 0.5").unwrap(), 0.5);
        for bad in ["0", "-1", "nan", "inf"] {
            assert_eq!(
                parse_positive(bad).unwrap_err().to_string(),
                format!("'{bad}' is not a positive, finite number")
            );
        }
        assert_eq!(
            parse_positive("x").unwrap_err(),
            GivenError::NotAReal("x".into())
        );
        assert_eq!(parse_non_negative("0").unwrap(), 0.0);
        assert!(matches!(
            parse_non_negative("-0.1"),
            Err(GivenError::Negative(_))
        ));
        assert!(parse_non_negative("inf").is_err());
        assert_eq!(parse_percentage("100").unwrap(), 100.0);
        assert!(matches!(
            parse_percentage("100.5"),
            Err(GivenError::NotAPercentage(_))
        ));
        assert!(parse_percentage("nan").is_err());
    }

    #[test]
    fn sizes_lists_and_ranges() {
        assert_eq!(parse_size("123").unwrap(), 123);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("16TiB").unwrap(), 16 << 40);
        assert!(parse_size("16777216T").is_err(), "2^64 bytes");
        assert_eq!(parse_size("8kB").unwrap(), 8 << 10);
        assert_eq!(parse_size("0x1000").unwrap(), 4096);
        assert_eq!(parse_size("1_024K").unwrap(), 1 << 20);
        let e = parse_size("3X").unwrap_err();
        assert_eq!(
            e.to_string(),
            "size '3X': unknown suffix 'X' (K, M, G or T)"
        );
        assert!(matches!(
            parse_size("M"),
            Err(GivenError::SizeNumber { .. })
        ));
        assert_eq!(
            parse_size("0xZZ").unwrap_err().to_string(),
            "size '0xZZ': '0xZZ' is not a number (decimal or 0x hexadecimal)"
        );
        assert_eq!(
            parse_size("99999999999G"),
            Err(GivenError::SizeTooLarge("99999999999G".into()))
        );
        assert_eq!(parse_list::<2>("--drain", "1/7").unwrap(), [1, 7]);
        assert_eq!(parse_list::<3>("--w", "3, 0x64,2").unwrap(), [3, 100, 2]);
        let e = parse_list::<2>("--drain", "1/7/9").unwrap_err();
        assert_eq!(e.to_string(), "--drain '1/7/9': expected 2 numbers");
        assert!(matches!(
            parse_list::<2>("--drain", "1/x"),
            Err(GivenError::ListNumber { .. })
        ));
        assert_eq!(
            parse_list::<2>("drain rate", "1/x")
                .unwrap_err()
                .to_string(),
            "drain rate: 'x' is not a number (decimal or 0x hexadecimal)"
        );
        assert_eq!(parse_range("0x10..0x20").unwrap(), (16, 32));
        assert_eq!(
            parse_range("5..5"),
            Err(GivenError::EmptyRange("5..5".into()))
        );
        assert_eq!(parse_range("5"), Err(GivenError::NotARange("5".into())));
        assert_eq!(
            parse_range("5..y"),
            Err(GivenError::Number(NotANumber("y".into())))
        );
    }
}
