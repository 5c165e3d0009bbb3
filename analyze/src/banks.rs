//! Where references fall on the DIMMs: each physical address decoded to
//! (board, rank, bank, row) with the trace's geometry and the address
//! mapping (and, for several boards on interleaved channels, the channel
//! interleave undone first), then counted per rank and per bank.

use hmtt_format::{AddressMapping, DdrCoord, Geometry};
use serde::Serialize;

/// Banks of one board a bank id leaves room for (rank_bits + bank_bits <= 7).
pub const BANKS_PER_BOARD: usize = 128;

/// Physical address → DDR coordinates of the board that holds it.
#[derive(Debug, Clone)]
pub struct BankDecoder {
    mapping: AddressMapping,
    /// Channels interleaved and log2 of the interleave block (1 channel: none).
    channels: u64,
    shift: u32,
    /// The linear mapping's fields as shifts and masks, for
    /// [`BankDecoder::bank_row`] (`None` for another mapping).
    linear: Option<LinearDecoder>,
}

/// [`BankDecoder::bank_row`] for the linear mapping, a copy of the few
/// numbers it needs: held in registers over a loop (read from the decoder
/// in the analyzer, they are read again after every count stored).
#[derive(Debug, Clone, Copy)]
pub struct LinearDecoder {
    channels: u64,
    shift: u32,
    fields: LinearFields,
}

impl LinearDecoder {
    /// As [`BankDecoder::bank_row`].
    #[inline(always)]
    pub fn bank_row(&self, board: u8, pa: u64) -> Option<(usize, u32)> {
        let f = &self.fields;
        let local = local_address(self.channels, self.shift, pa);
        if local >= f.capacity {
            return None;
        }
        let line = local >> 6;
        let bank = (line >> f.bank_shift) & f.bank_mask;
        let row = (line >> f.row_shift) & f.row_mask;
        let rank = line >> f.rank_shift;
        let id = usize::from(board) * BANKS_PER_BOARD + ((rank << f.bank_bits) | bank) as usize;
        Some((id, row as u32))
    }
}

/// The address on its board's DIMM of `pa` (the interleave of `channels`
/// channels in blocks of `2^shift` bytes undone).
#[inline(always)]
fn local_address(channels: u64, shift: u32, pa: u64) -> u64 {
    if channels > 1 {
        let low = pa & ((1 << shift) - 1);
        (((pa >> shift) / channels) << shift) | low
    } else {
        pa
    }
}

/// Where the bank, row and rank sit in a line index of the linear mapping.
#[derive(Debug, Clone, Copy)]
struct LinearFields {
    capacity: u64,
    bank_shift: u32,
    bank_mask: u64,
    row_shift: u32,
    row_mask: u64,
    rank_shift: u32,
    bank_bits: u32,
}

impl BankDecoder {
    /// `channels` boards on channels interleaved in blocks of `2^shift` bytes.
    pub fn new(mapping: AddressMapping, channels: u64, shift: u32) -> BankDecoder {
        let g = *mapping.geometry();
        let (channels, shift) = (channels.max(1), shift.clamp(6, 40));
        let fields = mapping.is_linear().then(|| LinearFields {
            capacity: g.capacity_bytes(),
            bank_shift: g.col_line_bits(),
            bank_mask: (1 << g.bank_bits()) - 1,
            row_shift: g.col_line_bits() + g.bank_bits(),
            row_mask: (1 << g.row_bits()) - 1,
            rank_shift: g.col_line_bits() + g.bank_bits() + g.row_bits(),
            bank_bits: g.bank_bits(),
        });
        BankDecoder {
            mapping,
            channels,
            shift,
            linear: fields.map(|fields| LinearDecoder {
                channels,
                shift,
                fields,
            }),
        }
    }

    /// The address on its board's DIMM of `pa` (the channel interleave
    /// undone).
    #[inline(always)]
    fn local(&self, pa: u64) -> u64 {
        local_address(self.channels, self.shift, pa)
    }

    /// The decoder of the linear mapping alone (`None` for another).
    pub fn linear(&self) -> Option<LinearDecoder> {
        self.linear
    }

    /// The bank id ([`BankDecoder::bank_id`]) and row of `pa` on board
    /// `board`; `None` beyond the DIMM. The same as `coord` then
    /// `bank_id`, with the linear mapping's fields taken by shifts.
    #[inline(always)]
    pub fn bank_row(&self, board: u8, pa: u64) -> Option<(usize, u32)> {
        let Some(linear) = self.linear else {
            let c = self.coord(pa)?;
            return Some((self.bank_id(board, &c), c.row));
        };
        linear.bank_row(board, pa)
    }

    pub fn geometry(&self) -> &Geometry {
        self.mapping.geometry()
    }

    /// The coordinates of `pa` on its board's DIMM; `None` beyond it.
    #[inline]
    pub fn coord(&self, pa: u64) -> Option<DdrCoord> {
        self.mapping.coord_of(self.local(pa)).ok()
    }

    /// The bank id of board `board`'s `(rank, bank)`: `board * 128 + rank
    /// << bank_bits | bank`.
    #[inline]
    pub fn bank_id(&self, board: u8, c: &DdrCoord) -> usize {
        usize::from(board) * BANKS_PER_BOARD
            + ((c.rank as usize) << self.geometry().bank_bits())
            + c.bank as usize
    }
}

/// References per rank and per bank.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BankCounts {
    #[serde(with = "super::serde_tables::sparse")]
    per_bank: Vec<[u64; 2]>,
    outside: u64,
}

/// One bank's references.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BankRow {
    pub board: u8,
    pub rank: u32,
    pub bank: u32,
    pub reads: u64,
    pub writes: u64,
}

/// The distribution over ranks and banks.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BankReport {
    /// `rank_bits,bank_bits,row_bits,col_line_bits`.
    pub geometry: String,
    /// Where the geometry came from: "trace header", "option" or "assumed".
    pub geometry_source: String,
    /// Banks that were referenced, by board, rank, bank.
    pub banks: Vec<BankRow>,
    /// `(board, rank, references)`.
    pub ranks: Vec<(u8, u32, u64)>,
    /// References beyond the DIMM (not decoded).
    pub outside: u64,
}

impl Default for BankCounts {
    fn default() -> Self {
        BankCounts {
            per_bank: vec![[0; 2]; 256 * BANKS_PER_BOARD],
            outside: 0,
        }
    }
}

impl BankCounts {
    #[inline]
    pub fn add(&mut self, bank_id: usize, write: bool) {
        self.per_bank[bank_id][usize::from(write)] += 1;
    }
    #[inline]
    pub fn outside(&mut self) {
        self.outside += 1;
    }

    /// Adds the counts of the references that follow these.
    pub fn merge(&mut self, later: &BankCounts) {
        for (a, b) in self.per_bank.iter_mut().zip(&later.per_bank) {
            a[0] += b[0];
            a[1] += b[1];
        }
        self.outside += later.outside;
    }

    pub fn report(&self, geometry: &Geometry, source: &str) -> BankReport {
        let bank_bits = geometry.bank_bits();
        let banks: Vec<BankRow> = self
            .per_bank
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] + c[1] > 0)
            .map(|(id, c)| {
                let within = (id % BANKS_PER_BOARD) as u32;
                BankRow {
                    board: (id / BANKS_PER_BOARD) as u8,
                    rank: within >> bank_bits,
                    bank: within & ((1 << bank_bits) - 1),
                    reads: c[0],
                    writes: c[1],
                }
            })
            .collect();
        let mut ranks: Vec<(u8, u32, u64)> = Vec::new();
        for b in &banks {
            match ranks.last_mut() {
                Some(r) if r.0 == b.board && r.1 == b.rank => r.2 += b.reads + b.writes,
                _ => ranks.push((b.board, b.rank, b.reads + b.writes)),
            }
        }
        BankReport {
            geometry: geometry.to_string(),
            geometry_source: source.to_string(),
            banks,
            ranks,
            outside: self.outside,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::mapping::DDR3_BANK_XOR_TOML;
    use proptest::prelude::*;

    fn by_coord(d: &BankDecoder, board: u8, pa: u64) -> Option<(usize, u32)> {
        d.coord(pa).map(|c| (d.bank_id(board, &c), c.row))
    }

    proptest! {
        #[test]
        fn bank_row_is_coord_then_bank_id(
            pa in 0u64..(1 << 36),
            board in 0u8..4,
            channels in 1u64..4,
            rank_bits in 0u32..3,
        ) {
            let g = Geometry::new(rank_bits, 3, 15, 7).expect("a geometry");
            for mapping in [
                AddressMapping::linear(g),
                AddressMapping::from_toml(DDR3_BANK_XOR_TOML, Geometry::ddr3_default())
                    .expect("the example mapping"),
            ] {
                let d = BankDecoder::new(mapping, channels, 12);
                prop_assert_eq!(d.bank_row(board, pa), by_coord(&d, board, pa));
            }
        }
    }
}
