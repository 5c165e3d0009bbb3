//! Bank-level parallelism: the number of distinct banks (board, rank,
//! bank) referenced in each short window of time (`blp_window_ns`,
//! default 100 ns, about two row cycles of DDR3: banks touched that close
//! together work at the same time). Windows with no reference are left
//! out. The windows' counts go into a histogram, and into the bandwidth
//! timeline as a mean per interval.

use std::collections::BTreeMap;

use serde::Serialize;

use super::banks::BANKS_PER_BOARD;

/// Default window of bank-level parallelism, ns.
pub const DEFAULT_WINDOW_NS: f64 = 100.0;

/// Distinct banks per window in the making.
pub struct BankParallelism {
    window_ticks: u64,
    /// Window number each bank was last counted in (+1; 0 never).
    stamp: Vec<u64>,
    current: Option<u64>,
    distinct: u32,
    histogram: BTreeMap<u32, u64>,
}

/// The distribution of distinct banks per window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ParallelismReport {
    pub window_ns: f64,
    /// Windows with at least one reference.
    pub windows: u64,
    pub mean: f64,
    pub max: u32,
    /// `(distinct banks, windows)`.
    pub histogram: Vec<(u32, u64)>,
}

/// A window that just ended: its first tick and its distinct banks.
pub type ClosedWindow = (u64, u32);

impl BankParallelism {
    pub fn new(window_ticks: u64) -> BankParallelism {
        BankParallelism {
            window_ticks: window_ticks.max(1),
            stamp: vec![0; 256 * BANKS_PER_BOARD],
            current: None,
            distinct: 0,
            histogram: BTreeMap::new(),
        }
    }

    /// A reference to bank `bank_id` at `tick`; returns the window it
    /// closed, if it opened a new one.
    #[inline]
    pub fn add(&mut self, tick: u64, bank_id: usize) -> Option<ClosedWindow> {
        let w = tick / self.window_ticks;
        let closed = match self.current {
            Some(c) if c == w => None,
            _ => self
                .close()
                .map(|d| (self.current.unwrap_or(0) * self.window_ticks, d)),
        };
        self.current = Some(w);
        if self.stamp[bank_id] != w + 1 {
            self.stamp[bank_id] = w + 1;
            self.distinct += 1;
        }
        closed
    }

    /// Ends the open window; returns its distinct banks.
    pub fn close(&mut self) -> Option<u32> {
        if self.distinct == 0 {
            return None;
        }
        let d = std::mem::take(&mut self.distinct);
        *self.histogram.entry(d).or_default() += 1;
        Some(d)
    }

    /// The open window, closed: its first tick and distinct banks.
    pub fn finish(&mut self) -> Option<ClosedWindow> {
        let start = self.current? * self.window_ticks;
        self.close().map(|d| (start, d))
    }

    pub fn report(&self, tick_ns: f64) -> ParallelismReport {
        let windows: u64 = self.histogram.values().sum();
        let sum: u64 = self.histogram.iter().map(|(&d, &n)| u64::from(d) * n).sum();
        ParallelismReport {
            window_ns: self.window_ticks as f64 * tick_ns,
            windows,
            mean: if windows == 0 {
                0.0
            } else {
                sum as f64 / windows as f64
            },
            max: self.histogram.keys().next_back().copied().unwrap_or(0),
            histogram: self.histogram.iter().map(|(&d, &n)| (d, n)).collect(),
        }
    }
}
