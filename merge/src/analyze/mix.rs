//! The read/write mix: references by kind and board, and for a virtual
//! trace by source (CPU or DMA) and translation, as the paper's Table 3.

use std::collections::BTreeMap;

use serde::Serialize;

/// Counts of the references analysed.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Mix {
    pub reads: u64,
    pub writes: u64,
    /// board → (reads, writes).
    pub by_board: BTreeMap<u8, (u64, u64)>,
    /// Virtual traces: [CPU read, CPU write, DMA read, DMA write].
    pub cpu_dma: [u64; 4],
    /// Virtual traces: references translated to (pid, virtual address).
    pub translated: u64,
    pub first_tick: Option<u64>,
    pub last_tick: u64,
}

impl Mix {
    #[inline]
    pub fn add(&mut self, a: &super::Access) {
        if a.write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        let b = self.by_board.entry(a.board).or_default();
        if a.write {
            b.1 += 1;
        } else {
            b.0 += 1;
        }
        if let Some(v) = &a.virt {
            self.cpu_dma[usize::from(v.dma) * 2 + usize::from(a.write)] += 1;
            self.translated += u64::from(v.owner.is_some());
        }
        self.first_tick.get_or_insert(a.tick);
        self.last_tick = a.tick;
    }

    pub fn references(&self) -> u64 {
        self.reads + self.writes
    }
}
