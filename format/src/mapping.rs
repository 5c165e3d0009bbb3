//! The memory controller's address mapping (format.md §3): physical address
//! ↔ line index, as a bijection over GF(2). Each line-index bit is the parity
//! of a set of physical-address bits; the inverse is found at load time.

use crate::geometry::{DdrCoord, Geometry, LINE_BYTES};
use serde::Deserialize;

/// Why a mapping was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    #[error("mapping file: {0}")]
    Toml(String),
    #[error("mapping file version {0} is not supported (this build reads version 1)")]
    BadVersion(u32),
    #[error("unknown mapping kind '{0}' (use \"linear\" or \"xor\")")]
    BadKind(String),
    #[error("mapping kind \"xor\" needs the list '{0}'")]
    MissingField(&'static str),
    #[error("'{field}' lists {got} bits but the geometry has {want}")]
    WrongWidth {
        field: &'static str,
        got: usize,
        want: u32,
    },
    #[error("'{field}' bit {index} uses physical-address bit {bit}, outside 6..{end}")]
    BitOutOfRange {
        field: &'static str,
        index: usize,
        bit: u32,
        end: u32,
    },
    #[error("'{field}' bit {index} is an empty XOR")]
    EmptyBit { field: &'static str, index: usize },
    #[error("the mapping is not invertible: two DDR coordinates share physical addresses (dependent bit {0} of the line index)")]
    NotInvertible(u32),
    #[error("physical address {pa:#x} is beyond the DIMM's {capacity:#x} bytes")]
    OutOfRange { pa: u64, capacity: u64 },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MappingFile {
    version: Option<u32>,
    kind: String,
    col_line: Option<Vec<Vec<u32>>>,
    bank: Option<Vec<Vec<u32>>>,
    row: Option<Vec<Vec<u32>>>,
    rank: Option<Vec<Vec<u32>>>,
}

/// A loaded mapping for one geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressMapping {
    geometry: Geometry,
    /// `geometry.lines() - 1`, kept for `pa_of`.
    line_mask: u64,
    /// `None` for the linear mapping (the fast path).
    forward: Option<Vec<u64>>,
    inverse: Option<Vec<u64>>,
    /// What `inverse` adds to the linear mapping, as byte tables, for
    /// `pa_of` (`None` for the linear mapping).
    pa_tables: Option<ByteTables>,
}

/// Bytes of a line index: `line_bits` is at most 45 (format.md §2).
const LINE_BYTES_MAX: usize = 6;

/// A GF(2)-linear map as one table per byte of the input bits it reads:
/// since the map is linear, its value is the XOR of the tables' entries
/// for those bytes, a load each instead of a parity per output bit. Only
/// the span of input bits the map reads gets tables: for a bank-XOR hash,
/// whose difference from the linear mapping reads a few row bits, that is
/// one table.
#[derive(Clone, PartialEq, Eq)]
struct ByteTables {
    /// The lowest input bit read.
    first_bit: u32,
    /// Tables in use (0 to 6); the others are all zero.
    count: usize,
    tables: Box<[[u64; 256]; LINE_BYTES_MAX]>,
}

impl ByteTables {
    /// Tables for `apply(masks, x) * scale`, `x` of at most 48 bits.
    fn new(masks: &[u64], scale: u64) -> ByteTables {
        let read = masks.iter().fold(0u64, |a, m| a | m) & ((1 << (8 * LINE_BYTES_MAX)) - 1);
        let first_bit = if read == 0 { 0 } else { read.trailing_zeros() };
        let span = if read == 0 {
            0
        } else {
            64 - read.leading_zeros() - first_bit
        };
        let count = span.div_ceil(8) as usize;
        let mut tables = Box::new([[0; 256]; LINE_BYTES_MAX]);
        for (byte, t) in tables.iter_mut().enumerate().take(count) {
            for (v, slot) in t.iter_mut().enumerate() {
                let shift = first_bit + 8 * byte as u32;
                *slot = apply(masks, ((v as u64) << shift) & read) * scale;
            }
        }
        ByteTables {
            first_bit,
            count,
            tables,
        }
    }

    /// Input bits beyond the first 48 are ignored.
    #[inline]
    fn get(&self, x: u64) -> u64 {
        let t = &self.tables;
        let x = (x & ((1 << (8 * LINE_BYTES_MAX)) - 1)) >> self.first_bit;
        let b = |i: usize| ((x >> (8 * i)) & 0xff) as usize;
        // Unused tables are zero: two lookups serve up to two bytes.
        if self.count <= 2 {
            t[0][b(0)] ^ t[1][b(1)]
        } else {
            (t[0][b(0)] ^ t[1][b(1)]) ^ (t[2][b(2)] ^ t[3][b(3)]) ^ (t[4][b(4)] ^ t[5][b(5)])
        }
    }
}

impl std::fmt::Debug for ByteTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ByteTables")
    }
}

#[inline]
fn apply(masks: &[u64], x: u64) -> u64 {
    masks.iter().enumerate().fold(0, |acc, (i, m)| {
        acc | (u64::from((x & m).count_ones() & 1) << i)
    })
}

/// Inverts a square GF(2) matrix given as row masks; `Err(row)` if singular.
fn invert(rows: &[u64]) -> Result<Vec<u64>, u32> {
    let n = rows.len();
    let mut a: Vec<u64> = rows.to_vec();
    let mut inv: Vec<u64> = (0..n).map(|i| 1u64 << i).collect();
    for col in 0..n {
        let pivot = (col..n).find(|&r| a[r] >> col & 1 == 1).ok_or(col as u32)?;
        a.swap(col, pivot);
        inv.swap(col, pivot);
        for r in 0..n {
            if r != col && a[r] >> col & 1 == 1 {
                a[r] ^= a[col];
                inv[r] ^= inv[col];
            }
        }
    }
    // Now inv * rows = I, so inv's rows give input bits from output bits.
    Ok(inv)
}

impl AddressMapping {
    /// `line = pa >> 6`.
    pub fn linear(geometry: Geometry) -> AddressMapping {
        AddressMapping {
            geometry,
            line_mask: geometry.lines() - 1,
            forward: None,
            inverse: None,
            pa_tables: None,
        }
    }

    /// Loads a mapping file's text for a geometry.
    pub fn from_toml(text: &str, geometry: Geometry) -> Result<AddressMapping, MappingError> {
        let f: MappingFile = toml::from_str(text).map_err(|e| MappingError::Toml(e.to_string()))?;
        if let Some(v) = f.version {
            if v != 1 {
                return Err(MappingError::BadVersion(v));
            }
        }
        match f.kind.as_str() {
            "linear" => Ok(AddressMapping::linear(geometry)),
            "xor" => {
                let g = geometry;
                let mut masks = Vec::with_capacity(g.line_bits() as usize);
                let end = 6 + g.line_bits();
                for (field, list, want) in [
                    ("col_line", f.col_line, g.col_line_bits()),
                    ("bank", f.bank, g.bank_bits()),
                    ("row", f.row, g.row_bits()),
                    ("rank", f.rank, g.rank_bits()),
                ] {
                    let list = match list {
                        Some(l) => l,
                        None if want == 0 => Vec::new(),
                        None => return Err(MappingError::MissingField(field)),
                    };
                    if list.len() != want as usize {
                        return Err(MappingError::WrongWidth {
                            field,
                            got: list.len(),
                            want,
                        });
                    }
                    for (index, bits) in list.iter().enumerate() {
                        if bits.is_empty() {
                            return Err(MappingError::EmptyBit { field, index });
                        }
                        let mut m = 0u64;
                        for &bit in bits {
                            if !(6..end).contains(&bit) {
                                return Err(MappingError::BitOutOfRange {
                                    field,
                                    index,
                                    bit,
                                    end,
                                });
                            }
                            m ^= 1u64 << (bit - 6);
                        }
                        masks.push(m);
                    }
                }
                AddressMapping::from_masks(geometry, masks)
            }
            other => Err(MappingError::BadKind(other.to_string())),
        }
    }

    /// A mapping from line-index bit masks over `pa >> 6` (least significant
    /// line-index bit first).
    pub fn from_masks(geometry: Geometry, masks: Vec<u64>) -> Result<AddressMapping, MappingError> {
        let inverse = invert(&masks).map_err(MappingError::NotInvertible)?;
        let identity = masks.iter().enumerate().all(|(i, &m)| m == 1u64 << i);
        Ok(if identity {
            AddressMapping::linear(geometry)
        } else {
            AddressMapping {
                geometry,
                line_mask: geometry.lines() - 1,
                pa_tables: Some(ByteTables::new(
                    &inverse
                        .iter()
                        .enumerate()
                        .map(|(i, m)| m ^ (1u64 << i))
                        .collect::<Vec<_>>(),
                    LINE_BYTES,
                )),
                forward: Some(masks),
                inverse: Some(inverse),
            }
        })
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn is_linear(&self) -> bool {
        self.forward.is_none()
    }

    /// Physical address → line index.
    #[inline]
    pub fn line_of(&self, pa: u64) -> Result<u64, MappingError> {
        let cap = self.geometry.capacity_bytes();
        if pa >= cap {
            return Err(MappingError::OutOfRange { pa, capacity: cap });
        }
        let x = pa / LINE_BYTES;
        Ok(match &self.forward {
            None => x,
            Some(m) => apply(m, x),
        })
    }

    /// Physical address → DDR coordinates.
    pub fn coord_of(&self, pa: u64) -> Result<DdrCoord, MappingError> {
        Ok(self.geometry.coord(self.line_of(pa)?))
    }

    /// Line index → physical address of the line's first byte.
    #[inline]
    pub fn pa_of(&self, line: u64) -> u64 {
        let line = line & self.line_mask;
        match &self.pa_tables {
            None => line * LINE_BYTES,
            Some(t) => (line * LINE_BYTES) ^ t.get(line),
        }
    }
}

/// A bank-hashing mapping file for the default DDR3 geometry: the bank bits
/// XORed with the low row bits, so rows stay whole. The example that tests,
/// benches and docs share.
pub const DDR3_BANK_XOR_TOML: &str = r#"
version = 1
kind = "xor"
col_line = [[6], [7], [8], [9], [10], [11], [12]]
bank = [[13, 16], [14, 17], [15, 18]]
row = [[16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30]]
rank = [[31]]
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const XOR_DDR3: &str = DDR3_BANK_XOR_TOML;

    #[test]
    fn linear_is_pa_shift() {
        let m = AddressMapping::linear(Geometry::ddr3_default());
        assert_eq!(m.line_of(0x1234_5678).unwrap(), 0x1234_5678 / 64);
        assert_eq!(m.pa_of(0x48d159), 0x48d159 * 64);
        assert!(matches!(
            m.line_of(1 << 32),
            Err(MappingError::OutOfRange { .. })
        ));
        let t = AddressMapping::from_toml("kind = \"linear\"", Geometry::ddr3_default()).unwrap();
        assert!(t.is_linear());
    }

    #[test]
    fn xor_bank_hash() {
        let g = Geometry::ddr3_default();
        let m = AddressMapping::from_toml(XOR_DDR3, g).unwrap();
        assert!(!m.is_linear());
        // Row 1 (pa bit 16) flips bank bit 0.
        let c = m.coord_of(1 << 16).unwrap();
        assert_eq!((c.row, c.bank), (1, 1));
        let c = m.coord_of((1 << 16) | (1 << 13)).unwrap();
        assert_eq!((c.row, c.bank), (1, 0));
        for pa in [0u64, 64, 1 << 20, (1 << 32) - 64, 0xdead_beef & !63] {
            assert_eq!(m.pa_of(m.line_of(pa).unwrap()), pa);
        }
    }

    #[test]
    fn residual_tables_of_every_width() {
        // Identity but for bit 3, XORed with bits `first` and `last` (of 30):
        // the difference from the linear mapping reads those bits only.
        let g = Geometry::preset("ddr4-64g").unwrap();
        for (first, last) in [(12, 12), (12, 19), (12, 20), (9, 29), (1, 29)] {
            let masks: Vec<u64> = (0..g.line_bits())
                .map(|i| {
                    let m = 1u64 << i;
                    if i == 3 {
                        m | (1u64 << first) | (1u64 << last)
                    } else {
                        m
                    }
                })
                .collect();
            let m = AddressMapping::from_masks(g, masks).unwrap();
            let want = (last - first) / 8 + 1;
            assert_eq!(m.pa_tables.as_ref().unwrap().count, want as usize);
            let inverse = m.inverse.clone().unwrap();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let line = x & (g.lines() - 1);
                assert_eq!(m.pa_of(line), apply(&inverse, line) * LINE_BYTES);
                assert_eq!(m.line_of(m.pa_of(line)).unwrap(), line);
            }
        }
    }

    #[test]
    fn bad_mapping_files() {
        let g = Geometry::ddr3_default();
        let e = |t: &str| AddressMapping::from_toml(t, g).unwrap_err();
        assert!(matches!(e("kind = \"zigzag\""), MappingError::BadKind(_)));
        assert!(matches!(
            e("kind = \"xor\""),
            MappingError::MissingField("col_line")
        ));
        assert!(matches!(
            e("version = 2\nkind = \"linear\""),
            MappingError::BadVersion(2)
        ));
        assert!(matches!(e("kind ="), MappingError::Toml(_)));
        let dup = XOR_DDR3.replace("[[13, 16],", "[[6],");
        assert!(matches!(e(&dup), MappingError::NotInvertible(_)));
        let wide = XOR_DDR3.replace("[[31]]", "[[38]]");
        assert!(matches!(
            e(&wide),
            MappingError::BitOutOfRange { bit: 38, .. }
        ));
        let short = XOR_DDR3.replace("[[31]]", "[]");
        assert!(matches!(
            e(&short),
            MappingError::WrongWidth { field: "rank", .. }
        ));
    }

    proptest! {
        #[test]
        fn random_invertible_mappings_round_trip(seed: u64, pa: u64) {
            let g = Geometry::preset("ddr4-64g").unwrap();
            let n = g.line_bits();
            // Identity plus upper-triangular XORs is always invertible.
            let mut s = seed | 1;
            let masks: Vec<u64> = (0..n).map(|i| {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                let above = if i + 1 < n { (s & ((1u64 << n) - 1)) >> (i + 1) << (i + 1) } else { 0 };
                (1u64 << i) | above
            }).collect();
            let m = AddressMapping::from_masks(g, masks).unwrap();
            let pa = (pa % g.capacity_bytes()) & !63;
            let line = m.line_of(pa).unwrap();
            prop_assert!(line < g.lines());
            prop_assert_eq!(m.pa_of(line), pa);
            // The byte tables give what the parity of each bit gives, and
            // bits beyond the geometry are ignored.
            let inverse = m.inverse.as_ref().unwrap();
            prop_assert_eq!(m.pa_of(line), apply(inverse, line) * LINE_BYTES);
            prop_assert_eq!(m.pa_of(line | (seed << g.line_bits())), pa);
        }
    }
}
