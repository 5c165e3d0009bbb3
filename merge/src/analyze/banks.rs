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
}

impl BankDecoder {
    /// `channels` boards on channels interleaved in blocks of `2^shift` bytes.
    pub fn new(mapping: AddressMapping, channels: u64, shift: u32) -> BankDecoder {
        BankDecoder {
            mapping,
            channels: channels.max(1),
            shift: shift.clamp(6, 40),
        }
    }

    pub fn geometry(&self) -> &Geometry {
        self.mapping.geometry()
    }

    /// The coordinates of `pa` on its board's DIMM; `None` beyond it.
    #[inline]
    pub fn coord(&self, pa: u64) -> Option<DdrCoord> {
        let local = if self.channels > 1 {
            let low = pa & ((1 << self.shift) - 1);
            (((pa >> self.shift) / self.channels) << self.shift) | low
        } else {
            pa
        };
        self.mapping.coord_of(local).ok()
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
