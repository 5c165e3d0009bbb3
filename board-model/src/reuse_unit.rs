//! The Reuse Distance & Hot Pages Unit (board.md "Reuse Distance & Hot
//! Pages Unit", format.md §5.3): an LRU stack of 128 pages of 4 KiB fed by
//! the references of the command stream, with per interval the histogram
//! of their stack distances and the stack's pages with the most
//! references. It lives in the Statistic Unit, which gives it the
//! references its own DSMU decodes and closes its intervals.

use hmtt_format::stats::{
    HotPage, ReuseRecord, MAX_HOT_PAGES, MIN_HOT_PAGES, PAGE_LINE_SHIFT, REUSE_DEPTH,
};

/// The unit's build and reset parameters (board.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReuseConfig {
    /// Whether the unit takes references from reset (else from REUSE_ON
    /// or STATS_ONLY).
    pub start_enabled: bool,
    /// Hot pages a record reports, 8..=64.
    pub hot_pages: u8,
    /// References the stack takes per fabric clock, 1..=8; the others of
    /// the clock are skipped and counted.
    pub refs_per_clock: u32,
}

impl Default for ReuseConfig {
    fn default() -> ReuseConfig {
        ReuseConfig {
            start_enabled: true,
            hot_pages: MIN_HOT_PAGES,
            refs_per_clock: 3,
        }
    }
}

impl ReuseConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_HOT_PAGES..=MAX_HOT_PAGES).contains(&self.hot_pages) {
            return Err(format!(
                "{} hot pages: must be in {MIN_HOT_PAGES}..={MAX_HOT_PAGES}",
                self.hot_pages
            ));
        }
        if !(1..=8).contains(&self.refs_per_clock) {
            return Err(format!(
                "the reuse unit's {} references per clock: must be in 1..=8",
                self.refs_per_clock
            ));
        }
        Ok(())
    }
}

/// One entry of the stack: a page and the references to it counted in
/// the open interval since it entered the stack.
#[derive(Debug, Clone, Copy)]
struct Entry {
    page: u64,
    count: u64,
}

/// The RDHPU of one board.
#[derive(Debug, Clone)]
pub struct ReuseUnit {
    cfg: ReuseConfig,
    /// Most recently used first, at most [`REUSE_DEPTH`] entries.
    stack: Vec<Entry>,
    /// Stack distance 0..D-1, then deeper or new.
    histogram: Vec<u64>,
    skipped: u64,
    /// The clock of the last reference offered, and the references the
    /// stack took in it.
    clock: u64,
    taken: u32,
    /// `log2` of the lanes: a reference's clock is its tick `>> shift`.
    shift: u32,
}

impl ReuseUnit {
    pub fn new(cfg: ReuseConfig, lanes: u32) -> ReuseUnit {
        ReuseUnit {
            cfg,
            stack: Vec::with_capacity(usize::from(REUSE_DEPTH)),
            histogram: vec![0; usize::from(REUSE_DEPTH) + 1],
            skipped: 0,
            clock: u64::MAX,
            taken: 0,
            shift: lanes.trailing_zeros(),
        }
    }

    pub fn config(&self) -> &ReuseConfig {
        &self.cfg
    }

    /// Words of the unit's section of a record.
    pub fn record_words(&self) -> usize {
        ReuseRecord::words_of(REUSE_DEPTH, self.cfg.hot_pages)
    }

    /// Switched on: an empty stack.
    pub fn clear(&mut self) {
        self.stack.clear();
        self.histogram.fill(0);
        self.skipped = 0;
    }

    /// A reference to `line` by a column command at `tick`.
    #[inline]
    pub fn reference(&mut self, line: u64, tick: u64) {
        let clock = tick >> self.shift;
        if clock != self.clock {
            self.clock = clock;
            self.taken = 0;
        }
        if self.taken >= self.cfg.refs_per_clock {
            self.skipped += 1;
            return;
        }
        self.taken += 1;
        let page = line >> PAGE_LINE_SHIFT;
        match self.stack.iter().position(|e| e.page == page) {
            Some(d) => {
                self.histogram[d] += 1;
                self.stack[d].count += 1;
                self.stack[..=d].rotate_right(1);
            }
            None => {
                self.histogram[usize::from(REUSE_DEPTH)] += 1;
                if self.stack.len() == usize::from(REUSE_DEPTH) {
                    self.stack.pop();
                }
                self.stack.insert(0, Entry { page, count: 1 });
            }
        }
    }

    /// Whether the open interval counted nothing.
    pub fn is_empty(&self) -> bool {
        self.skipped == 0 && self.histogram.iter().all(|&h| h == 0)
    }

    /// Closes the open interval: its section, and the counts start again
    /// (the stack stays).
    pub fn take_record(&mut self) -> ReuseRecord {
        let sat = |c: u64| c.min(u64::from(u32::MAX)) as u32;
        let mut hot: Vec<(usize, Entry)> = self
            .stack
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, e)| e.count > 0)
            .collect();
        // The most references first; of equal counts, the most recent.
        hot.sort_by_key(|&(position, e)| (std::cmp::Reverse(e.count), position));
        hot.truncate(usize::from(self.cfg.hot_pages));
        let record = ReuseRecord {
            depth: REUSE_DEPTH,
            page_shift: PAGE_LINE_SHIFT,
            hot_entries: self.cfg.hot_pages,
            histogram: self.histogram.iter().map(|&h| sat(h)).collect(),
            skipped: sat(self.skipped),
            hot: hot
                .into_iter()
                .map(|(_, e)| HotPage {
                    page: e.page,
                    count: sat(e.count),
                })
                .collect(),
        };
        self.histogram.fill(0);
        self.skipped = 0;
        for e in &mut self.stack {
            e.count = 0;
        }
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(refs_per_clock: u32) -> ReuseUnit {
        ReuseUnit::new(
            ReuseConfig {
                refs_per_clock,
                ..ReuseConfig::default()
            },
            8,
        )
    }

    #[test]
    fn distances_are_stack_positions_of_pages() {
        let mut u = unit(8);
        // Pages 0, 1, 0 (line 3 is page 0), 2, 1: new, new, 1, new, 2.
        for (i, line) in [0u64, 64, 3, 128, 64].into_iter().enumerate() {
            u.reference(line, 8 * i as u64);
        }
        let r = u.take_record();
        assert_eq!(r.histogram[1], 1);
        assert_eq!(r.histogram[2], 1);
        assert_eq!(r.histogram[128], 3);
        assert_eq!(r.skipped, 0);
        assert_eq!(
            r.hot,
            vec![
                HotPage { page: 1, count: 2 },
                HotPage { page: 0, count: 2 },
                HotPage { page: 2, count: 1 },
            ]
        );
        // The stack stays, the counts start again.
        u.reference(0, 100);
        let r = u.take_record();
        assert_eq!(r.histogram[2], 1);
        assert_eq!(r.hot, vec![HotPage { page: 0, count: 1 }]);
    }

    #[test]
    fn the_129th_page_pushes_the_oldest_out() {
        let mut u = unit(1);
        for p in 0..=128u64 {
            u.reference(p << 6, 8 * p);
        }
        u.reference(0, 8 * 200);
        u.reference(128 << 6, 8 * 201);
        let r = u.take_record();
        assert_eq!(r.histogram[128], 130);
        assert_eq!(r.histogram[1], 1);
    }

    #[test]
    fn references_over_the_clocks_take_are_skipped_and_counted() {
        let mut u = unit(2);
        for tick in [0, 1, 2, 7, 8, 9] {
            u.reference(0, tick);
        }
        let r = u.take_record();
        assert_eq!(r.skipped, 2);
        assert_eq!(r.histogram.iter().sum::<u32>(), 4);
    }
}
