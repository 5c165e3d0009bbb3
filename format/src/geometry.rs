//! DIMM geometry and the line index `{rank, row, bank, col_line}` (format.md §2).

use std::fmt;
use std::str::FromStr;

/// Bytes per line: the unit of one memory reference (BL8 × 8 bytes).
pub const LINE_BYTES: u64 = 64;
/// Widest line index a record stream can carry: 24 bits of `line_lo` plus 21
/// bits of LINE_HI payload.
pub const MAX_LINE_BITS: u32 = 45;

/// Why a geometry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("{field} = {value} is outside {min}..={max}")]
    WidthOutOfRange {
        field: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
    #[error(
        "line index of {0} bits is wider than the {MAX_LINE_BITS} bits a record stream can carry"
    )]
    TooWide(u32),
    #[error("unknown geometry '{0}': use a preset ({presets}) or rank_bits,bank_bits,row_bits,col_line_bits", presets = Geometry::PRESETS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
    Unknown(String),
    #[error("{field} = {value} does not fit in {bits} bits")]
    CoordinateOutOfRange {
        field: &'static str,
        value: u64,
        bits: u32,
    },
}

/// The widths of the DDR coordinates of one DIMM (or one channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    rank_bits: u8,
    bank_bits: u8,
    row_bits: u8,
    col_line_bits: u8,
}

/// A location on the DIMM at line granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DdrCoord {
    pub rank: u32,
    pub bank: u32,
    pub row: u32,
    /// Column in lines (`column >> 3` for BL8).
    pub col_line: u32,
}

impl Geometry {
    /// Named presets (format.md §2).
    pub const PRESETS: &'static [(&'static str, Geometry)] = &[
        ("ddr-512m", Geometry::raw(0, 2, 14, 7)),
        ("ddr2-2g", Geometry::raw(1, 3, 14, 7)),
        ("ddr3-4g", Geometry::raw(1, 3, 15, 7)),
        ("ddr3-8g", Geometry::raw(1, 3, 16, 7)),
        ("ddr4-64g", Geometry::raw(2, 4, 17, 7)),
    ];

    const fn raw(rank_bits: u8, bank_bits: u8, row_bits: u8, col_line_bits: u8) -> Geometry {
        Geometry {
            rank_bits,
            bank_bits,
            row_bits,
            col_line_bits,
        }
    }

    /// Checks every width and the total.
    pub fn new(
        rank_bits: u32,
        bank_bits: u32,
        row_bits: u32,
        col_line_bits: u32,
    ) -> Result<Geometry, GeometryError> {
        fn check(field: &'static str, value: u32, min: u32, max: u32) -> Result<u8, GeometryError> {
            if (min..=max).contains(&value) {
                Ok(value as u8)
            } else {
                Err(GeometryError::WidthOutOfRange {
                    field,
                    value,
                    min,
                    max,
                })
            }
        }
        let g = Geometry {
            rank_bits: check("rank_bits", rank_bits, 0, 3)?,
            bank_bits: check("bank_bits", bank_bits, 1, 4)?,
            row_bits: check("row_bits", row_bits, 10, 18)?,
            col_line_bits: check("col_line_bits", col_line_bits, 3, 8)?,
        };
        if g.line_bits() > MAX_LINE_BITS {
            return Err(GeometryError::TooWide(g.line_bits()));
        }
        Ok(g)
    }

    /// A preset by name.
    pub fn preset(name: &str) -> Option<Geometry> {
        Self::PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, g)| *g)
    }

    /// The default geometry: a two-rank DDR3-1600 4 GiB UDIMM.
    pub fn ddr3_default() -> Geometry {
        Self::preset("ddr3-4g").expect("preset exists")
    }

    /// Decodes the three geometry bytes of a packet or capture header.
    pub fn from_header_bytes(
        row_bits: u8,
        rank_bank: u8,
        col_line_bits: u8,
    ) -> Result<Geometry, GeometryError> {
        Geometry::new(
            u32::from(rank_bank >> 4),
            u32::from(rank_bank & 0x0f),
            u32::from(row_bits),
            u32::from(col_line_bits),
        )
    }

    /// The three geometry bytes of a packet or capture header.
    pub fn header_bytes(&self) -> (u8, u8, u8) {
        (
            self.row_bits,
            (self.rank_bits << 4) | self.bank_bits,
            self.col_line_bits,
        )
    }

    pub fn rank_bits(&self) -> u32 {
        u32::from(self.rank_bits)
    }
    pub fn bank_bits(&self) -> u32 {
        u32::from(self.bank_bits)
    }
    pub fn row_bits(&self) -> u32 {
        u32::from(self.row_bits)
    }
    pub fn col_line_bits(&self) -> u32 {
        u32::from(self.col_line_bits)
    }
    pub fn ranks(&self) -> u32 {
        1 << self.rank_bits
    }
    pub fn banks(&self) -> u32 {
        1 << self.bank_bits
    }
    pub fn rows(&self) -> u32 {
        1 << self.row_bits
    }
    /// Lines in one row of one bank.
    pub fn lines_per_row(&self) -> u32 {
        1 << self.col_line_bits
    }
    /// Width of the line index.
    pub fn line_bits(&self) -> u32 {
        self.rank_bits() + self.bank_bits() + self.row_bits() + self.col_line_bits()
    }
    /// Number of lines on the DIMM.
    pub fn lines(&self) -> u64 {
        1u64 << self.line_bits()
    }
    /// Capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.lines() * LINE_BYTES
    }

    /// Packs coordinates into a line index; every field must fit its width.
    pub fn line_index(&self, c: DdrCoord) -> Result<u64, GeometryError> {
        let fits = |field: &'static str, v: u32, bits: u32| {
            if u64::from(v) >> bits == 0 {
                Ok(())
            } else {
                Err(GeometryError::CoordinateOutOfRange {
                    field,
                    value: u64::from(v),
                    bits,
                })
            }
        };
        fits("rank", c.rank, self.rank_bits())?;
        fits("bank", c.bank, self.bank_bits())?;
        fits("row", c.row, self.row_bits())?;
        fits("col_line", c.col_line, self.col_line_bits())?;
        Ok(self.line_index_unchecked(c))
    }

    /// Packs coordinates, truncating every field to its width (what the
    /// hardware's wires do).
    #[inline]
    pub fn line_index_unchecked(&self, c: DdrCoord) -> u64 {
        let mask = |v: u32, bits: u32| u64::from(v) & ((1u64 << bits) - 1);
        let mut line = mask(c.rank, self.rank_bits());
        line = (line << self.row_bits) | mask(c.row, self.row_bits());
        line = (line << self.bank_bits) | mask(c.bank, self.bank_bits());
        (line << self.col_line_bits) | mask(c.col_line, self.col_line_bits())
    }

    /// Splits a line index into coordinates (bits above `line_bits` are ignored).
    #[inline]
    pub fn coord(&self, line: u64) -> DdrCoord {
        let take = |line: &mut u64, bits: u32| {
            let v = (*line & ((1u64 << bits) - 1)) as u32;
            *line >>= bits;
            v
        };
        let mut l = line;
        let col_line = take(&mut l, self.col_line_bits());
        let bank = take(&mut l, self.bank_bits());
        let row = take(&mut l, self.row_bits());
        let rank = take(&mut l, self.rank_bits());
        DdrCoord {
            rank,
            bank,
            row,
            col_line,
        }
    }
}

impl Default for Geometry {
    fn default() -> Self {
        Geometry::ddr3_default()
    }
}

impl fmt::Display for Geometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{},{}",
            self.rank_bits, self.bank_bits, self.row_bits, self.col_line_bits
        )
    }
}

impl FromStr for Geometry {
    type Err = GeometryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(g) = Geometry::preset(s) {
            return Ok(g);
        }
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 4 {
            return Err(GeometryError::Unknown(s.to_string()));
        }
        let mut v = [0u32; 4];
        for (slot, p) in v.iter_mut().zip(&parts) {
            *slot = p
                .parse()
                .map_err(|_| GeometryError::Unknown(s.to_string()))?;
        }
        Geometry::new(v[0], v[1], v[2], v[3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn presets_have_the_documented_capacities() {
        let gib = 1u64 << 30;
        assert_eq!(
            Geometry::preset("ddr-512m").unwrap().capacity_bytes(),
            gib / 2
        );
        assert_eq!(
            Geometry::preset("ddr2-2g").unwrap().capacity_bytes(),
            2 * gib
        );
        assert_eq!(
            Geometry::preset("ddr3-4g").unwrap().capacity_bytes(),
            4 * gib
        );
        assert_eq!(
            Geometry::preset("ddr3-8g").unwrap().capacity_bytes(),
            8 * gib
        );
        let ddr4 = Geometry::preset("ddr4-64g").unwrap();
        assert_eq!(ddr4.capacity_bytes(), 64 * gib);
        assert_eq!(ddr4.banks(), 16);
        assert_eq!(ddr4.ranks(), 4);
        assert_eq!(ddr4.rows(), 1 << 17);
        assert_eq!(ddr4.line_bits(), 30);
    }

    #[test]
    fn parse_and_display() {
        let g: Geometry = "1,3,15,7".parse().unwrap();
        assert_eq!(g, Geometry::ddr3_default());
        assert_eq!(g.to_string(), "1,3,15,7");
        assert!("1,3,15".parse::<Geometry>().is_err());
        assert!("9,3,15,7".parse::<Geometry>().is_err());
        assert!("x".parse::<Geometry>().is_err());
        assert!(matches!(
            Geometry::new(3, 4, 18, 8),
            Ok(g) if g.line_bits() == 33
        ));
        assert!(matches!(
            Geometry::new(0, 0, 14, 7),
            Err(GeometryError::WidthOutOfRange {
                field: "bank_bits",
                ..
            })
        ));
    }

    #[test]
    fn line_index_is_the_concatenation() {
        let g = Geometry::new(1, 3, 15, 7).unwrap();
        let c = DdrCoord {
            rank: 1,
            bank: 5,
            row: 0x1234,
            col_line: 0x55,
        };
        let expect = (1u64 << 25) | (0x1234 << 10) | (5 << 7) | 0x55;
        assert_eq!(g.line_index(c).unwrap(), expect);
        assert_eq!(g.coord(expect), c);
        assert!(g.line_index(DdrCoord { bank: 8, ..c }).is_err());
    }

    #[test]
    fn header_bytes_round_trip() {
        for (_, g) in Geometry::PRESETS {
            let (a, b, c) = g.header_bytes();
            assert_eq!(Geometry::from_header_bytes(a, b, c).unwrap(), *g);
        }
    }

    fn any_geometry() -> impl Strategy<Value = Geometry> {
        (0u32..=3, 1u32..=4, 10u32..=18, 3u32..=8)
            .prop_map(|(r, b, w, c)| Geometry::new(r, b, w, c).unwrap())
    }

    proptest! {
        #[test]
        fn coord_round_trip(g in any_geometry(), raw in any::<u64>()) {
            let line = raw & (g.lines() - 1);
            let c = g.coord(line);
            prop_assert_eq!(g.line_index(c).unwrap(), line);
        }
    }
}
