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
    /// References the board dropped (LOST records): in no figure.
    pub lost_references: u64,
    /// Capture gaps (GAP_BEGIN records) and the packets they miss: their
    /// references are in no figure either.
    pub gaps: u64,
    pub gap_packets: u64,
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

    pub fn add_lost(&mut self, count: u64) {
        self.lost_references = self.lost_references.saturating_add(count);
    }

    pub fn add_gap(&mut self, packets: u64) {
        self.gaps += 1;
        self.gap_packets = self.gap_packets.saturating_add(packets);
    }

    pub fn references(&self) -> u64 {
        self.reads + self.writes
    }
}
