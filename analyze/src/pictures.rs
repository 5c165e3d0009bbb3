//! The data of the pictures, gathered in a second pass once the first has
//! fixed the time span and the pages touched, into fixed grids whatever
//! the trace's length (a 100 M-record trace plots in the same memory as a
//! small one, plus the sorted list of its pages):
//!
//! - the address-versus-time scatter is two density grids (reads and
//!   writes) of [`SCATTER_COLS`] × [`SCATTER_ROWS`] counters. Its address axis is
//!   compressed: the pages touched, in address order, keep their gaps up
//!   to [`MAX_GAP_PAGES`] pages, and longer gaps (the OS scatters a
//!   program's pages over all of memory) shrink to one page, so the
//!   touched memory fills the picture; the axis labels give the real
//!   addresses where each stretch starts.
//! - the page heat map counts the references of the [`HEAT_PAGES`]
//!   hottest pages in [`HEAT_COLS`] time columns.
//! - the references the board dropped (LOST records) are counted in
//!   [`LOST_COLS`] time columns, each at the time of the last reference
//!   before it (a LOST record carries no time of its own).
//! - on a virtual trace, the [`PROCESS_PANELS`] processes with the most
//!   translated references get the address-versus-time grids again, each
//!   over its own virtual pages (found by one more pass before the
//!   second), so that a program's own pattern shows where the physical
//!   picture scatters it over the frames the OS gave it.

use std::collections::{HashMap, HashSet};

use super::page_hotness::PAGE_SHIFT;
use super::{
    Access, Analysis, AnalyzeError, AnalyzeOptions, Analyzer, Item, TraceInput, VirtualInfo,
};

pub const SCATTER_COLS: usize = 480;
pub const SCATTER_ROWS: usize = 320;
pub const HEAT_COLS: usize = 240;
pub const HEAT_PAGES: usize = 32;
pub const LOST_COLS: usize = 480;
/// Longest gap between touched pages kept on the address axis.
pub const MAX_GAP_PAGES: u64 = 16;
/// Processes of a virtual trace drawn in their own virtual addresses.
pub const PROCESS_PANELS: usize = 4;

/// The compressed address axis: page numbers in order and their positions.
#[derive(Debug, Clone, Default)]
pub struct AddressAxis {
    pages: Vec<u64>,
    pos: Vec<u64>,
}

impl AddressAxis {
    /// The axis over `pages` (page numbers, sorted, distinct).
    pub fn new(pages: Vec<u64>) -> AddressAxis {
        let mut pos = Vec::with_capacity(pages.len());
        for (i, &p) in pages.iter().enumerate() {
            pos.push(match i {
                0 => 0,
                _ => {
                    let gap = p - pages[i - 1];
                    pos[i - 1] + if gap <= MAX_GAP_PAGES { gap } else { 1 }
                }
            });
        }
        AddressAxis { pages, pos }
    }

    /// The page numbers on the axis, in order.
    pub fn pages(&self) -> &[u64] {
        &self.pages
    }

    /// Length of the axis in pages.
    pub fn span(&self) -> u64 {
        self.pos.last().map_or(1, |p| p + 1)
    }

    /// Where page number `page` is in the axis' pages.
    #[inline]
    fn index(&self, page: u64) -> Option<usize> {
        self.pages.binary_search(&page).ok()
    }

    /// Position of `pa` on the axis, in pages; `None` for an untouched page.
    #[inline]
    pub fn position(&self, pa: u64) -> Option<f64> {
        let i = self.index(pa >> PAGE_SHIFT)?;
        Some(self.pos[i] as f64 + (pa & ((1 << PAGE_SHIFT) - 1)) as f64 / 4096.0)
    }

    /// Positions where a gap longer than [`MAX_GAP_PAGES`] was cut (the
    /// axis breaks).
    pub fn breaks(&self) -> Vec<f64> {
        self.pages
            .windows(2)
            .zip(&self.pos[1..])
            .filter(|(w, _)| w[1] - w[0] > MAX_GAP_PAGES)
            .map(|(_, &p)| p as f64)
            .collect()
    }

    /// The address at position `y` (the page at or below it).
    pub fn address_at(&self, y: f64) -> u64 {
        let at = y.max(0.0) as u64;
        let i = self.pos.partition_point(|&p| p <= at).saturating_sub(1);
        match (self.pages.get(i), self.pos.get(i)) {
            (Some(&page), Some(&p)) => {
                (page + at.saturating_sub(p).min(MAX_GAP_PAGES)) << PAGE_SHIFT
            }
            _ => 0,
        }
    }
}

/// Time columns of equal length over ticks `first..=last`: the column of a
/// tick is `(tick - first) * cols / (last - first + 1)` (at most the last),
/// found from the ticks where the columns start, so that a pass in time
/// order mostly compares with the column it is in instead of dividing.
#[derive(Debug, Clone)]
struct Columns {
    first: u64,
    /// `starts[c]`: the least `tick - first` in column `c`.
    starts: Vec<u64>,
    current: usize,
}

impl Columns {
    fn new(first: u64, last: u64, cols: usize) -> Columns {
        let span = u128::from(last.max(first) - first) + 1;
        let starts = (0..cols as u128)
            .map(|c| (c * span).div_ceil(cols as u128).min(u128::from(u64::MAX)) as u64)
            .collect();
        Columns {
            first,
            starts,
            current: 0,
        }
    }

    #[inline]
    fn of(&mut self, tick: u64) -> usize {
        let d = tick.saturating_sub(self.first);
        let c = self.current;
        let inside = d >= self.starts[c] && self.starts.get(c + 1).is_none_or(|&next| d < next);
        if !inside {
            self.current = self.starts.partition_point(|&s| s <= d) - 1;
        }
        self.current
    }
}

/// A page references fell in: its place on the address axis and its heat
/// map row, found once and kept in a small direct-mapped cache (a program's
/// streams go back and forth between a few pages: quicksort's partition
/// between two).
#[derive(Debug, Clone, Copy)]
struct PageSeen {
    page: u64,
    /// Its position on the axis, in pages (`None`: not on it).
    position: Option<u64>,
    heat_row: Option<usize>,
}

/// One process's address-versus-time grids, over its virtual pages.
#[derive(Debug, Clone)]
pub struct ProcessScatter {
    pub pid: u32,
    /// Its translated references in the window.
    pub references: u64,
    pub axis: AddressAxis,
    pub scatter_reads: Vec<u32>,
    pub scatter_writes: Vec<u32>,
}

/// The grids of the pictures.
#[derive(Debug, Clone)]
pub struct Pictures {
    pub first_tick: u64,
    pub last_tick: u64,
    pub axis: AddressAxis,
    /// The reads' density grid: row-major, row 0 at the lowest address.
    pub scatter_reads: Vec<u32>,
    /// The writes', likewise.
    pub scatter_writes: Vec<u32>,
    /// The [`HEAT_PAGES`] hottest pages (addresses), hottest first: row
    /// `i` of the heat map is `heat_pages[i]`.
    pub heat_pages: Vec<u64>,
    /// `(page, row)` in page order, to find a reference's row.
    heat_rows: Vec<(u64, usize)>,
    /// Row `i` for `heat_pages[i]`.
    pub heat: Vec<u32>,
    /// References lost, by time column.
    pub lost: Vec<u64>,
    /// Tick of the last reference seen, where a LOST record is counted.
    pub(super) last_seen: Option<u64>,
    /// References lost before the first reference of the records passed
    /// (counted at the last reference before them, which a run of blocks
    /// that does not start the trace does not know: see [`Pictures::append`]).
    pub(super) lost_before_first: u64,
    /// Virtual traces: the processes with the most translated references,
    /// the most first (ties by pid).
    pub processes: Vec<ProcessScatter>,
    scatter_columns: Columns,
    heat_columns: Columns,
    pages_seen: Box<[PageSeen; PAGES_SEEN]>,
}

/// Entries of the cache of pages seen.
const PAGES_SEEN: usize = 64;

impl Pictures {
    /// The empty grids of the first pass's `analysis`: its time span, the
    /// pages it touched and its hottest pages.
    pub(super) fn new(analysis: &Analysis, analyzer: &Analyzer) -> Pictures {
        // The map's own count of pages, whatever `--top` reports.
        let heat_pages: Vec<u64> = analyzer
            .pages
            .report(HEAT_PAGES, analysis.mix.references())
            .top
            .iter()
            .map(|p| p.page)
            .collect();
        Pictures::with_axes(
            analysis.mix.first_tick.unwrap_or(0),
            analysis.mix.last_tick,
            analyzer.pages.sorted_pages(),
            heat_pages,
        )
    }

    /// The empty grids over ticks `first_tick..=last_tick`, the touched
    /// `pages` (page numbers, sorted) and the `heat_pages` (addresses,
    /// hottest first).
    pub(super) fn with_axes(
        first_tick: u64,
        last_tick: u64,
        pages: Vec<u64>,
        heat_pages: Vec<u64>,
    ) -> Pictures {
        let mut heat_rows: Vec<(u64, usize)> = heat_pages
            .iter()
            .enumerate()
            .map(|(row, &page)| (page, row))
            .collect();
        heat_rows.sort_unstable();
        Pictures {
            first_tick,
            last_tick: last_tick.max(first_tick),
            axis: AddressAxis::new(pages),
            scatter_reads: vec![0; SCATTER_COLS * SCATTER_ROWS],
            scatter_writes: vec![0; SCATTER_COLS * SCATTER_ROWS],
            heat: vec![0; heat_pages.len() * HEAT_COLS],
            heat_pages,
            heat_rows,
            lost: vec![0; LOST_COLS],
            last_seen: None,
            lost_before_first: 0,
            processes: Vec::new(),
            scatter_columns: Columns::new(first_tick, last_tick, SCATTER_COLS),
            heat_columns: Columns::new(first_tick, last_tick, HEAT_COLS),
            pages_seen: Box::new(
                [PageSeen {
                    page: u64::MAX,
                    position: None,
                    heat_row: None,
                }; PAGES_SEEN],
            ),
        }
    }

    /// The [`PROCESS_PANELS`] processes of a virtual trace with the most
    /// translated references in the window, each with the axis of its
    /// virtual pages.
    fn processes(
        input: &TraceInput,
        opts: &AnalyzeOptions,
    ) -> Result<Vec<ProcessScatter>, AnalyzeError> {
        // pid → (references, virtual pages, the last page added).
        let mut seen: HashMap<u32, (u64, HashSet<u64>, u64)> = HashMap::new();
        input.each(opts.window.clone(), &mut |item| {
            if let Item::Access(Access {
                virt:
                    Some(VirtualInfo {
                        owner: Some((pid, va)),
                        ..
                    }),
                ..
            }) = item
            {
                let page = va >> PAGE_SHIFT;
                let e = seen
                    .entry(pid)
                    .or_insert_with(|| (0, HashSet::new(), u64::MAX));
                e.0 += 1;
                if e.2 != page {
                    e.1.insert(page);
                    e.2 = page;
                }
            }
        })?;
        let mut by_count: Vec<(u32, u64, HashSet<u64>)> = seen
            .into_iter()
            .map(|(pid, (n, pages, _))| (pid, n, pages))
            .collect();
        by_count.sort_unstable_by_key(|&(pid, n, _)| (std::cmp::Reverse(n), pid));
        by_count.truncate(PROCESS_PANELS);
        Ok(by_count
            .into_iter()
            .map(|(pid, references, pages)| {
                let mut pages: Vec<u64> = pages.into_iter().collect();
                pages.sort_unstable();
                ProcessScatter {
                    pid,
                    references,
                    axis: AddressAxis::new(pages),
                    scatter_reads: vec![0; SCATTER_COLS * SCATTER_ROWS],
                    scatter_writes: vec![0; SCATTER_COLS * SCATTER_ROWS],
                }
            })
            .collect())
    }

    #[inline]
    fn column(&self, tick: u64, cols: usize) -> usize {
        let span = (self.last_tick - self.first_tick + 1) as u128;
        let c = (u128::from(tick.saturating_sub(self.first_tick)) * cols as u128 / span) as usize;
        c.min(cols - 1)
    }

    /// The scatter cell of address `addr` at `tick` on `axis`.
    #[inline]
    fn cell(&self, axis: &AddressAxis, addr: u64, tick: u64) -> Option<usize> {
        let y = axis.position(addr)?;
        let row = ((y / axis.span() as f64) * SCATTER_ROWS as f64) as usize;
        Some(row.min(SCATTER_ROWS - 1) * SCATTER_COLS + self.column(tick, SCATTER_COLS))
    }

    /// The axis position and heat map row of `pa`'s page.
    #[inline]
    fn page_of(&mut self, pa: u64) -> PageSeen {
        let page = pa >> PAGE_SHIFT;
        let slot = page as usize % PAGES_SEEN;
        if page != self.pages_seen[slot].page {
            let address = page << PAGE_SHIFT;
            self.pages_seen[slot] = PageSeen {
                page,
                position: self.axis.index(page).map(|i| self.axis.pos[i]),
                heat_row: self
                    .heat_rows
                    .binary_search_by_key(&address, |&(p, _)| p)
                    .ok()
                    .map(|k| self.heat_rows[k].1),
            };
        }
        self.pages_seen[slot]
    }

    #[inline]
    pub(super) fn add(&mut self, a: &Access) {
        self.last_seen = Some(a.tick);
        let seen = self.page_of(a.pa);
        if let Some(pos) = seen.position {
            // As `cell` computes it.
            let y = pos as f64 + (a.pa & ((1 << PAGE_SHIFT) - 1)) as f64 / 4096.0;
            let row = ((y / self.axis.span() as f64) * SCATTER_ROWS as f64) as usize;
            let cell = row.min(SCATTER_ROWS - 1) * SCATTER_COLS + self.scatter_columns.of(a.tick);
            let grid = match a.write {
                false => &mut self.scatter_reads,
                true => &mut self.scatter_writes,
            };
            grid[cell] += 1;
        }
        if let Some(VirtualInfo {
            owner: Some((pid, va)),
            ..
        }) = a.virt
        {
            if let Some(k) = self.processes.iter().position(|p| p.pid == pid) {
                if let Some(cell) = self.cell(&self.processes[k].axis, va, a.tick) {
                    let p = &mut self.processes[k];
                    let grid = match a.write {
                        false => &mut p.scatter_reads,
                        true => &mut p.scatter_writes,
                    };
                    grid[cell] += 1;
                }
            }
        }
        if let Some(i) = seen.heat_row {
            let col = self.heat_columns.of(a.tick);
            self.heat[i * HEAT_COLS + col] += 1;
        }
    }

    /// The second pass over `input`, with the first pass's `analysis`.
    pub fn collect(
        input: &TraceInput,
        opts: &AnalyzeOptions,
        analysis: &Analysis,
        analyzer: &Analyzer,
    ) -> Result<Pictures, AnalyzeError> {
        let mut p = Pictures::new(analysis, analyzer);
        if input.is_virtual() {
            p.processes = Pictures::processes(input, opts)?;
        }
        input.each(opts.window.clone(), &mut |item| match item {
            Item::Access(a) => p.add(&a),
            Item::Lost { count } => p.add_lost(count),
            _ => {}
        })?;
        p.settle_lost_before_first();
        Ok(p)
    }

    /// A LOST record of `count` references.
    #[inline]
    pub(super) fn add_lost(&mut self, count: u64) {
        match self.last_seen {
            Some(tick) => {
                let col = self.column(tick, LOST_COLS);
                self.lost[col] = self.lost[col].saturating_add(count);
            }
            None => self.lost_before_first = self.lost_before_first.saturating_add(count),
        }
    }

    /// Counts the references lost before the first reference at the
    /// trace's start: what a pass over the whole trace, or the first of
    /// its runs of blocks, does.
    pub(super) fn settle_lost_before_first(&mut self) {
        self.lost[0] = self.lost[0].saturating_add(std::mem::take(&mut self.lost_before_first));
    }

    /// Adds the grids of the run of blocks that follows this one's: the
    /// references it lost before its first reference count at this
    /// one's last reference (or at the trace's start, where this one has
    /// none).
    pub(super) fn append(&mut self, next: Pictures) {
        // Saturating: a pictures partial read from a file may lie.
        let add = |to: &mut Vec<u32>, from: Vec<u32>| {
            to.iter_mut()
                .zip(from)
                .for_each(|(t, f)| *t = t.saturating_add(f));
        };
        add(&mut self.scatter_reads, next.scatter_reads);
        add(&mut self.scatter_writes, next.scatter_writes);
        add(&mut self.heat, next.heat);
        self.lost
            .iter_mut()
            .zip(next.lost)
            .for_each(|(t, f)| *t = t.saturating_add(f));
        match self.last_seen {
            Some(_) => self.add_lost(next.lost_before_first),
            None => {
                self.lost_before_first = self
                    .lost_before_first
                    .saturating_add(next.lost_before_first)
            }
        }
        self.last_seen = next.last_seen.or(self.last_seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column a start table finds is the one the division gives, in
    /// and out of time order, at the spans' edges.
    #[test]
    fn columns_by_their_starts_are_the_divided_ones() {
        let divided = |first: u64, last: u64, cols: usize, tick: u64| {
            let span = u128::from(last - first) + 1;
            let c = (u128::from(tick.saturating_sub(first)) * cols as u128 / span) as usize;
            c.min(cols - 1)
        };
        let spans = [
            (0, 0),
            (5, 5),
            (0, 478),
            (0, 479),
            (0, 480),
            (7, 1_000_003),
            (1, u64::MAX - 1),
            (0, u64::MAX),
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (first, last) in spans {
            for cols in [1, 240, 480] {
                let mut columns = Columns::new(first, last, cols);
                let mut ticks: Vec<u64> = vec![
                    0,
                    first,
                    last,
                    first.saturating_sub(1),
                    last.saturating_add(1),
                ];
                for _ in 0..2000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ticks.push(first + x % (last - first).saturating_add(1).max(1));
                }
                let mut ordered = ticks.clone();
                ordered.sort_unstable();
                for t in ticks.into_iter().chain(ordered) {
                    assert_eq!(
                        columns.of(t),
                        divided(first, last, cols, t),
                        "{first}..={last} {cols} {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn long_gaps_shrink_and_addresses_come_back() {
        let axis = AddressAxis::new(vec![10, 11, 20, 1000, 1001]);
        // Positions 0, 1, 10 (a gap of 9 pages kept), 11 (980 shrunk to 1), 12.
        assert_eq!(axis.span(), 13);
        assert_eq!(axis.position(11 << 12), Some(1.0));
        assert_eq!(axis.position((20 << 12) + 2048), Some(10.5));
        assert_eq!(axis.position(1000 << 12), Some(11.0));
        assert_eq!(axis.position(500 << 12), None);
        assert_eq!(axis.address_at(11.3), 1000 << 12);
        assert_eq!(axis.address_at(10.0), 20 << 12);
        assert_eq!(axis.address_at(5.0), 15 << 12);
        assert_eq!(axis.breaks(), vec![11.0]);
    }
}
