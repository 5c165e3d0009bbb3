//! Page hotness: references per 4 KiB physical page, and the hottest
//! pages. Memory: one counter per distinct page.

use serde::Serialize;

use super::FastMap;

pub const PAGE_SHIFT: u32 = 12;

/// References per page.
#[derive(Default)]
pub struct PageHotness {
    pub(crate) counts: FastMap<u64, [u64; 2]>,
}

/// One of the hottest pages.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HotPage {
    /// Physical address of the page.
    pub page: u64,
    pub reads: u64,
    pub writes: u64,
}

/// The hottest pages.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PageReport {
    pub distinct_pages: u64,
    /// The hottest first (ties: lower address first).
    pub top: Vec<HotPage>,
    /// Share of all references that go to the pages in `top`, percent.
    pub top_share_percent: f64,
}

impl PageHotness {
    #[inline]
    pub fn add(&mut self, pa: u64, write: bool) {
        self.counts.entry(pa >> PAGE_SHIFT).or_default()[usize::from(write)] += 1;
    }

    /// The `n` hottest pages, hottest first.
    pub fn top(&self, n: usize) -> Vec<HotPage> {
        let mut all: Vec<(u64, [u64; 2])> = self.counts.iter().map(|(&p, &c)| (p, c)).collect();
        all.sort_unstable_by(|a, b| {
            (b.1[0] + b.1[1])
                .cmp(&(a.1[0] + a.1[1]))
                .then(a.0.cmp(&b.0))
        });
        all.into_iter()
            .take(n)
            .map(|(p, c)| HotPage {
                page: p << PAGE_SHIFT,
                reads: c[0],
                writes: c[1],
            })
            .collect()
    }

    /// Every page referenced (page numbers), in address order.
    pub fn sorted_pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.counts.keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub fn report(&self, n: usize, references: u64) -> PageReport {
        let top = self.top(n);
        let in_top: u64 = top.iter().map(|p| p.reads + p.writes).sum();
        PageReport {
            distinct_pages: self.counts.len() as u64,
            top,
            top_share_percent: super::percent(in_top, references),
        }
    }
}
