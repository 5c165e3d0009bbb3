//! Bank-level parallelism: the number of distinct banks (board, rank,
//! bank) referenced in each short window of time (`blp_window_ns`,
//! default 100 ns, about two row cycles of DDR3: banks touched that close
//! together work at the same time). Windows with no reference are left
//! out. The windows' counts go into a histogram, and into the bandwidth
//! timeline as a mean per interval.

use hmtt_format::TickLength;
use serde::Serialize;

use super::banks::BANKS_PER_BOARD;

/// Default window of bank-level parallelism, ns.
pub const DEFAULT_WINDOW_NS: f64 = 100.0;

/// Entries of the histogram: 0 to every bank of 256 boards.
const HISTOGRAM_LEN: usize = 256 * BANKS_PER_BOARD + 1;

/// Distinct banks per window in the making.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BankParallelism {
    window_ticks: u64,
    /// Window number each bank was last counted in (+1; 0 never).
    #[serde(with = "super::serde_tables::sparse")]
    stamp: Vec<u64>,
    current: Option<u64>,
    distinct: u32,
    /// The ticks `lo..hi` of the open window.
    current_lo: u64,
    current_hi: u64,
    /// The open window's number + 1 (the bank stamps').
    current_stamp: u64,
    /// Windows by their distinct banks.
    #[serde(
        serialize_with = "super::serde_tables::count_map::serialize",
        deserialize_with = "super::serde_tables::count_map::deserialize::<_, HISTOGRAM_LEN>"
    )]
    histogram: Vec<u64>,
    /// A part of a trace that follows another: its first window may go on
    /// from the part before, so when it ends it is kept here (window
    /// number, banks) for [`BankParallelism::merge`], not counted.
    later_part: bool,
    first_window: Option<(u64, Vec<u32>)>,
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
            current_lo: 1,
            current_hi: 0,
            current_stamp: 0,
            histogram: vec![0; HISTOGRAM_LEN],
            later_part: false,
            first_window: None,
        }
    }

    /// A reference to bank `bank_id` at `tick`; returns the window it
    /// closed, if it opened a new one.
    #[inline(always)]
    pub fn add(&mut self, tick: u64, bank_id: usize) -> Option<ClosedWindow> {
        let closed = if tick >= self.current_lo && tick < self.current_hi {
            None
        } else {
            self.open(tick)
        };
        if self.stamp[bank_id] != self.current_stamp {
            self.stamp[bank_id] = self.current_stamp;
            self.distinct += 1;
        }
        closed
    }

    /// The same for a part of a trace that follows another.
    pub fn for_later_part(window_ticks: u64) -> BankParallelism {
        BankParallelism {
            later_part: true,
            ..BankParallelism::new(window_ticks)
        }
    }

    /// The banks counted in the open window.
    fn open_banks(&self) -> Vec<u32> {
        if self.distinct == 0 {
            return Vec::new();
        }
        (0..self.stamp.len() as u32)
            .filter(|&b| self.stamp[b as usize] == self.current_stamp)
            .collect()
    }

    /// Adds the part of the trace that follows this one (made by
    /// [`BankParallelism::for_later_part`]); returns the windows that
    /// closed, for the timeline.
    pub fn merge(&mut self, later: BankParallelism) -> Vec<ClosedWindow> {
        let mut closed = Vec::new();
        let (first, banks, only) = match &later.first_window {
            Some((w, banks)) => (Some(*w), banks.clone(), false),
            None => (later.current, later.open_banks(), true),
        };
        if let Some(w) = first.filter(|_| !banks.is_empty()) {
            closed.extend(self.open(w * self.window_ticks));
            for b in banks {
                if self.stamp[b as usize] != self.current_stamp {
                    self.stamp[b as usize] = self.current_stamp;
                    self.distinct += 1;
                }
            }
            if !only {
                let start = w * self.window_ticks;
                closed.extend(self.close().map(|d| (start, d)));
                for b in later.open_banks() {
                    self.stamp[b as usize] = later.current_stamp;
                }
                self.current = later.current;
                self.current_lo = later.current_lo;
                self.current_hi = later.current_hi;
                self.current_stamp = later.current_stamp;
                self.distinct = later.distinct;
            }
        }
        for (a, b) in self.histogram.iter_mut().zip(&later.histogram) {
            *a += b;
        }
        closed
    }

    /// Makes the window of `tick` the open one; returns the window it
    /// closed, if another was open.
    #[inline(never)]
    fn open(&mut self, tick: u64) -> Option<ClosedWindow> {
        // A dense trace goes on to the next window: no division then.
        let w = match self.current {
            Some(c) if tick >= self.current_hi && tick - self.current_hi < self.window_ticks => {
                c + 1
            }
            _ => tick / self.window_ticks,
        };
        let closed = match self.current {
            Some(c) if c == w => None,
            Some(c) if self.later_part && self.first_window.is_none() => {
                self.first_window = Some((c, self.open_banks()));
                self.distinct = 0;
                None
            }
            _ => self
                .close()
                .map(|d| (self.current.unwrap_or(0) * self.window_ticks, d)),
        };
        self.current = Some(w);
        self.current_stamp = w + 1;
        self.current_lo = w * self.window_ticks;
        self.current_hi = self.current_lo.saturating_add(self.window_ticks);
        closed
    }

    /// Ends the open window; returns its distinct banks.
    pub fn close(&mut self) -> Option<u32> {
        if self.distinct == 0 {
            return None;
        }
        let d = std::mem::take(&mut self.distinct);
        self.histogram[d as usize] += 1;
        Some(d)
    }

    /// The open window, closed: its first tick and distinct banks.
    pub fn finish(&mut self) -> Option<ClosedWindow> {
        let start = self.current? * self.window_ticks;
        self.close().map(|d| (start, d))
    }

    pub fn report(&self, tick: TickLength) -> ParallelismReport {
        let counted = || {
            self.histogram
                .iter()
                .enumerate()
                .filter(|(_, &n)| n != 0)
                .map(|(d, &n)| (d as u32, n))
        };
        let windows: u64 = counted().map(|(_, n)| n).sum();
        let sum: u64 = counted().map(|(d, n)| u64::from(d) * n).sum();
        ParallelismReport {
            window_ns: tick.ns(self.window_ticks),
            windows,
            mean: if windows == 0 {
                0.0
            } else {
                sum as f64 / windows as f64
            },
            max: counted().next_back().map_or(0, |(d, _)| d),
            histogram: counted().collect(),
        }
    }
}
