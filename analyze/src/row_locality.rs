//! Row locality, an estimate: a reference "hits" when it is to the row the
//! same bank was last referenced in. The trace holds no ACTIVATE or
//! PRECHARGE, so whether the row was really still open (the controller's
//! page policy, refreshes, timeouts) is not known: this is the locality a
//! controller with an open-page policy and no other closes would see.

use serde::Serialize;

use super::banks::BANKS_PER_BOARD;

/// Last row per bank and the counts.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RowLocality {
    #[serde(with = "super::serde_tables::sparse_max")]
    last_row: Vec<u32>,
    /// The row of each bank's first reference (`u32::MAX`: none yet): a
    /// part of a trace that follows another counts it as a first in bank
    /// until [`RowLocality::merge`] compares it with the part before.
    #[serde(with = "super::serde_tables::sparse_max")]
    first_row: Vec<u32>,
    hits: u64,
    misses: u64,
    first: u64,
}

/// Hits and misses of the estimate.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RowReport {
    /// References to the row last referenced in their bank.
    pub same_row: u64,
    /// References to another row than the last in their bank.
    pub other_row: u64,
    /// First references to a bank (neither).
    pub first_in_bank: u64,
    /// `same_row / (same_row + other_row)`, percent.
    pub hit_percent: f64,
}

impl Default for RowLocality {
    fn default() -> Self {
        RowLocality {
            last_row: vec![u32::MAX; 256 * BANKS_PER_BOARD],
            first_row: vec![u32::MAX; 256 * BANKS_PER_BOARD],
            hits: 0,
            misses: 0,
            first: 0,
        }
    }
}

impl RowLocality {
    #[inline]
    pub fn add(&mut self, bank_id: usize, row: u32) {
        let last = std::mem::replace(&mut self.last_row[bank_id], row);
        if last == u32::MAX {
            self.first += 1;
            self.first_row[bank_id] = row;
        } else if last == row {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// Adds the references that follow these (`later` counted from no
    /// reference on).
    pub fn merge(&mut self, later: &RowLocality) {
        for (bank, &first) in later.first_row.iter().enumerate() {
            if first == u32::MAX {
                continue;
            }
            match self.last_row[bank] {
                u32::MAX => self.first_row[bank] = first,
                last => {
                    self.first -= 1;
                    if last == first {
                        self.hits += 1;
                    } else {
                        self.misses += 1;
                    }
                }
            }
            self.last_row[bank] = later.last_row[bank];
        }
        self.first += later.first;
        self.hits += later.hits;
        self.misses += later.misses;
    }

    pub fn report(&self) -> RowReport {
        RowReport {
            same_row: self.hits,
            other_row: self.misses,
            first_in_bank: self.first,
            hit_percent: super::percent(self.hits, self.hits + self.misses),
        }
    }
}
