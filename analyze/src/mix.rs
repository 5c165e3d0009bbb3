//! The read/write mix: references by kind and board, and for a virtual
//! trace by source (CPU or DMA) and translation, as the paper's Table 3.

use std::collections::BTreeMap;

use hmtt_format::trace::{TraceRecord, BOARD_SHIFT};
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
    pub fn references(&self) -> u64 {
        self.reads + self.writes
    }
}

/// The counts of [`Mix`] in the making, in fixed tables.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct MixCounts {
    /// board → [reads, writes].
    #[serde(with = "super::serde_tables::sparse")]
    by_board: Vec<[u64; 2]>,
    cpu_dma: [u64; 4],
    translated: u64,
    first_tick: Option<u64>,
    last_tick: u64,
    lost_references: u64,
    gaps: u64,
    gap_packets: u64,
}

impl Default for MixCounts {
    fn default() -> Self {
        MixCounts {
            by_board: vec![[0; 2]; 256],
            cpu_dma: [0; 4],
            translated: 0,
            first_tick: None,
            last_tick: 0,
            lost_references: 0,
            gaps: 0,
            gap_packets: 0,
        }
    }
}

impl MixCounts {
    /// A reference of `board` at `tick`.
    #[inline(always)]
    pub fn add(&mut self, tick: u64, board: u8, write: bool) {
        self.by_board[usize::from(board)][usize::from(write)] += 1;
        if self.first_tick.is_none() {
            self.first_tick = Some(tick);
        }
        self.last_tick = tick;
    }

    /// A run of READ/WRITE records, in order. A run of one board (the
    /// rule) is counted with one sum of its write bits.
    pub fn add_run(&mut self, run: &[TraceRecord]) {
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return;
        };
        self.first_tick.get_or_insert(first.tick);
        self.last_tick = last.tick;
        let board = first.packed >> BOARD_SHIFT;
        let (mut writes, mut other_boards) = (0u64, 0u64);
        for r in run {
            writes += r.packed & 1;
            other_boards |= (r.packed >> BOARD_SHIFT) ^ board;
        }
        if other_boards == 0 {
            let c = &mut self.by_board[board as usize];
            c[1] += writes;
            c[0] += run.len() as u64 - writes;
        } else {
            for r in run {
                self.by_board[usize::from(r.board())][(r.packed & 1) as usize] += 1;
            }
        }
    }

    /// What a virtual trace adds to a reference.
    #[inline]
    pub fn add_virtual(&mut self, v: &super::VirtualInfo, write: bool) {
        self.cpu_dma[usize::from(v.dma) * 2 + usize::from(write)] += 1;
        self.translated += u64::from(v.owner.is_some());
    }

    pub fn add_lost(&mut self, count: u64) {
        self.lost_references = self.lost_references.saturating_add(count);
    }

    pub fn add_gap(&mut self, packets: u64) {
        self.gaps += 1;
        self.gap_packets = self.gap_packets.saturating_add(packets);
    }

    pub fn first_tick(&self) -> Option<u64> {
        self.first_tick
    }

    pub fn last_tick(&self) -> u64 {
        self.last_tick
    }

    /// Adds the counts of the references that follow these.
    pub fn merge(&mut self, later: &MixCounts) {
        for (a, b) in self.by_board.iter_mut().zip(later.by_board.iter()) {
            a[0] += b[0];
            a[1] += b[1];
        }
        for (a, b) in self.cpu_dma.iter_mut().zip(later.cpu_dma) {
            *a += b;
        }
        self.translated += later.translated;
        if let Some(t) = later.first_tick {
            self.first_tick.get_or_insert(t);
            self.last_tick = later.last_tick;
        }
        self.lost_references = self.lost_references.saturating_add(later.lost_references);
        self.gaps += later.gaps;
        self.gap_packets = self.gap_packets.saturating_add(later.gap_packets);
    }

    pub fn references(&self) -> u64 {
        self.by_board.iter().map(|c| c[0] + c[1]).sum()
    }

    pub fn mix(&self) -> Mix {
        let by_board: BTreeMap<u8, (u64, u64)> = self
            .by_board
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] + c[1] > 0)
            .map(|(b, c)| (b as u8, (c[0], c[1])))
            .collect();
        Mix {
            reads: by_board.values().map(|c| c.0).sum(),
            writes: by_board.values().map(|c| c.1).sum(),
            by_board,
            cpu_dma: self.cpu_dma,
            translated: self.translated,
            first_tick: self.first_tick,
            last_tick: self.last_tick,
            lost_references: self.lost_references,
            gaps: self.gaps,
            gap_packets: self.gap_packets,
        }
    }
}
