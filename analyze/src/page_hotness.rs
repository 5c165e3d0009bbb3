//! Page hotness: references per 4 KiB physical page, and the hottest
//! pages. Pages of the DIMM's first [`MAX_TABLE_PAGES`] are counted in a
//! table indexed by page number (allocated zeroed, so only the parts
//! touched take memory); pages beyond, in a map. Memory: about one counter
//! per distinct page.

use serde::Serialize;

use super::FastMap;

pub const PAGE_SHIFT: u32 = 12;

/// Pages counted in the table (16 GiB of memory, a 64 MiB table at most).
pub const MAX_TABLE_PAGES: u64 = 1 << 22;

/// References per page.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct PageHotness {
    /// [reads, writes] of the pages below `table.len()`.
    #[serde(with = "super::serde_tables::sparse")]
    table: Vec<[u64; 2]>,
    /// Pages of the table with a reference.
    table_distinct: u64,
    /// The pages beyond the table.
    beyond: FastMap<u64, [u64; 2]>,
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
    /// Counts pages up to `capacity_bytes` (the DIMM's) in the table.
    pub fn new(capacity_bytes: u64) -> PageHotness {
        let pages = (capacity_bytes >> PAGE_SHIFT).min(MAX_TABLE_PAGES) as usize;
        PageHotness {
            table: vec![[0; 2]; pages],
            table_distinct: 0,
            beyond: FastMap::default(),
        }
    }

    #[inline(always)]
    pub fn add(&mut self, pa: u64, write: bool) {
        let page = pa >> PAGE_SHIFT;
        match self.table.get_mut(page as usize) {
            Some(c) => {
                self.table_distinct += u64::from(c[0] | c[1] == 0);
                c[usize::from(write)] += 1;
            }
            None => self.beyond.entry(page).or_default()[usize::from(write)] += 1,
        }
    }

    /// Every page referenced with its counts, in address order.
    pub fn counts(&self) -> impl Iterator<Item = (u64, [u64; 2])> + '_ {
        let mut beyond: Vec<(u64, [u64; 2])> = self.beyond.iter().map(|(&p, &c)| (p, c)).collect();
        beyond.sort_unstable_by_key(|e| e.0);
        self.table
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] | c[1] != 0)
            .map(|(p, &c)| (p as u64, c))
            .chain(beyond)
    }

    /// Adds the counts of the references that follow these.
    pub fn merge(&mut self, later: &PageHotness) {
        for (a, b) in self.table.iter_mut().zip(&later.table) {
            if b[0] | b[1] != 0 {
                self.table_distinct += u64::from(a[0] | a[1] == 0);
                a[0] += b[0];
                a[1] += b[1];
            }
        }
        for (&page, b) in &later.beyond {
            let a = self.beyond.entry(page).or_default();
            a[0] += b[0];
            a[1] += b[1];
        }
    }

    pub fn distinct(&self) -> u64 {
        self.table_distinct + self.beyond.len() as u64
    }

    /// The `n` hottest pages, hottest first.
    pub fn top(&self, n: usize) -> Vec<HotPage> {
        let order = |a: &(u64, [u64; 2]), b: &(u64, [u64; 2])| {
            (b.1[0] + b.1[1])
                .cmp(&(a.1[0] + a.1[1]))
                .then(a.0.cmp(&b.0))
        };
        let mut all: Vec<(u64, [u64; 2])> = self.counts().collect();
        if n == 0 {
            return Vec::new();
        }
        if all.len() > n {
            all.select_nth_unstable_by(n - 1, order);
            all.truncate(n);
        }
        all.sort_unstable_by(order);
        all.into_iter()
            .map(|(p, c)| HotPage {
                page: p << PAGE_SHIFT,
                reads: c[0],
                writes: c[1],
            })
            .collect()
    }

    /// Every page referenced (page numbers), in address order.
    pub fn sorted_pages(&self) -> Vec<u64> {
        self.counts().map(|(p, _)| p).collect()
    }

    pub fn report(&self, n: usize, references: u64) -> PageReport {
        let top = self.top(n);
        let in_top: u64 = top.iter().map(|p| p.reads + p.writes).sum();
        PageReport {
            distinct_pages: self.distinct(),
            top,
            top_share_percent: super::percent(in_top, references),
        }
    }
}
