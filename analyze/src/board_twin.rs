//! The board's statistics in `hmtt analyze` (the `board_statistics` of
//! its report): the side file's records (format.md §5.3) summed per board,
//! and the trace-side twin of the board's Reuse Distance & Hot Pages Unit
//! (board.md): the same 128-page LRU stack fed by the trace's READ and
//! WRITE records, its histogram of page stack distances and hot pages
//! compared with the board's record by record.
//!
//! A pass of its own over the trace, made only when the trace has board
//! statistics or when asked (`hmtt analyze --board-twin`), so an analysis
//! without them costs nothing more. The twin equals the board's unit when
//! the unit was on from reset and skipped nothing, and the trace lost
//! nothing; the report says whether it does, and what was lost.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

use hmtt_format::stats::{BankCounter, HotPage, RankCounter};
use hmtt_format::AddressMapping;
use serde::Serialize;

use super::board_timeline::{BoardTimeline, TimelineBuilder};
use super::{AnalyzeError, AnalyzeOptions, FastMap, Item, TraceInput};
use hmtt_merge::board_statistics::{read_statistics, StatsFileError, StatsLine};

/// The board's stack depth, in pages.
pub const STACK_PAGES: usize = 128;
/// A page is `line >> 6` (4 KiB of 64-byte lines).
const PAGE_LINE_SHIFT: u32 = 6;
/// Hot pages of the twin's whole trace reported.
const HOT_REPORTED: usize = 16;

/// Why the board's statistics could not be put beside the analysis.
#[derive(Debug, thiserror::Error)]
pub enum BoardTwinError {
    #[error(transparent)]
    Side(#[from] StatsFileError),
    #[error(transparent)]
    Analyze(#[from] AnalyzeError),
}

/// A 128-page LRU stack, most recent first, with the references to each
/// page counted since the interval opened or the page came in.
#[derive(Debug, Clone)]
pub struct PageLru {
    stack: Vec<(u64, u64)>,
    /// Stack distance 0..127, then deeper or new: of the open interval.
    histogram: [u64; STACK_PAGES + 1],
}

impl Default for PageLru {
    fn default() -> PageLru {
        PageLru {
            stack: Vec::with_capacity(STACK_PAGES),
            histogram: [0; STACK_PAGES + 1],
        }
    }
}

impl PageLru {
    /// A reference to `page`: its stack distance's bin counts one.
    #[inline]
    pub fn reference(&mut self, page: u64) -> usize {
        // Most references are to the page on top.
        if let Some(top) = self.stack.first_mut().filter(|e| e.0 == page) {
            top.1 += 1;
            self.histogram[0] += 1;
            return 0;
        }
        let d = match self.stack.iter().position(|e| e.0 == page) {
            Some(d) => {
                self.stack[d].1 += 1;
                self.stack[..=d].rotate_right(1);
                d
            }
            None => {
                if self.stack.len() == STACK_PAGES {
                    self.stack.pop();
                }
                self.stack.insert(0, (page, 1));
                STACK_PAGES
            }
        };
        self.histogram[d] += 1;
        d
    }

    /// Starts an interval: the counts go to 0, the stack stays.
    pub fn open_interval(&mut self) {
        self.histogram = [0; STACK_PAGES + 1];
        for e in &mut self.stack {
            e.1 = 0;
        }
    }

    /// The open interval's histogram and its `hot` hottest pages (the most
    /// references first, of equal counts the more recent), as the board
    /// reports them.
    pub fn interval(&self, hot: usize) -> (Vec<u64>, Vec<HotPage>) {
        let mut ranked: Vec<(usize, (u64, u64))> = self
            .stack
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, e)| e.1 > 0)
            .collect();
        ranked.sort_by_key(|&(position, (_, count))| (std::cmp::Reverse(count), position));
        let pages = ranked
            .into_iter()
            .take(hot)
            .map(|(_, (page, count))| HotPage {
                page,
                count: count.min(u64::from(u32::MAX)) as u32,
            })
            .collect();
        (self.histogram.to_vec(), pages)
    }
}

/// Everything `hmtt analyze` reports of the board's statistics.
#[derive(Debug, Clone, Serialize)]
pub struct BoardStatisticsReport {
    /// The side file read (`TRACE.stats.jsonl`), if there was one.
    pub side_file: Option<String>,
    pub boards: Vec<BoardReport>,
    /// References the trace lost (its LOST records) and packets missing
    /// from its captures (GAP records), over every board, when the twin
    /// was computed: where they are, the twin cannot equal the board.
    pub trace_lost: Option<u64>,
    pub trace_gap_packets: Option<u64>,
    /// The Statistic Unit's records over time, per board (the pictures'
    /// `board_row_hits` and `board_banks`; not in the JSON).
    #[serde(skip)]
    pub timelines: Vec<BoardTimeline>,
}

/// One board's statistics and its twin.
#[derive(Debug, Clone, Serialize)]
pub struct BoardReport {
    pub board: u8,
    /// Records of the side file, and those the board could not send.
    pub records: u64,
    pub unsent: u64,
    /// Ticks the records cover.
    pub ticks: u64,
    /// The Statistic Unit's counters summed over the records, by name
    /// (bank counters over every rank and bank, rank counters over every
    /// rank), when a record has them.
    pub counters: Option<BTreeMap<&'static str, u64>>,
    /// The RDHPU's sections summed, when a record has one.
    pub reuse: Option<BoardReuse>,
    /// The twin, computed from the trace.
    pub twin: Option<TwinReport>,
}

/// The RDHPU's sections of a board, summed.
#[derive(Debug, Clone, Serialize)]
pub struct BoardReuse {
    pub records: u64,
    /// References the unit took (the histogram's sum) and skipped.
    pub taken: u64,
    pub skipped: u64,
    /// Stack distance 0..127, then deeper or new.
    pub histogram: Vec<u64>,
}

/// The trace-side twin of one board's RDHPU.
#[derive(Debug, Clone, Serialize)]
pub struct TwinReport {
    /// The board's READ and WRITE records the twin took (those beyond the
    /// DIMM are not pages of it).
    pub references: u64,
    /// Its histogram over the whole trace.
    pub histogram: Vec<u64>,
    /// Its hottest pages over the whole trace, with their references.
    pub hot: Vec<HotPage>,
    /// Its histogram over the intervals of the board's records, summed.
    pub histogram_in_records: Vec<u64>,
    /// Records with an RDHPU section compared, and those whose histogram
    /// and hot pages the twin equals.
    pub records_compared: u64,
    pub records_equal: u64,
    /// `[start, end)` ticks of the first record that differs.
    pub first_difference: Option<(u64, u64)>,
    /// Every record compared is equal (and there was one).
    pub equal: bool,
}

/// The side file's records with an RDHPU section, per board in start
/// order, and every board's Statistic Unit timeline (for the pictures).
type SideRecords = (BTreeMap<u8, Vec<StatsLine>>, Vec<BoardTimeline>);

fn reuse_records(path: &Path) -> Result<SideRecords, StatsFileError> {
    let io = |source| StatsFileError::Io {
        path: path.into(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut out: BTreeMap<u8, Vec<StatsLine>> = BTreeMap::new();
    let mut timelines = TimelineBuilder::default();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let s: StatsLine = serde_json::from_str(&line).map_err(|e| StatsFileError::Bad {
            path: path.into(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        timelines.add(&s);
        if s.reuse.is_some() {
            out.entry(s.board).or_default().push(s);
        }
    }
    for lines in out.values_mut() {
        lines.sort_by_key(|l| l.start_tick);
    }
    Ok((out, timelines.finish()))
}

/// One board's twin in the making.
struct Twin {
    lru: PageLru,
    /// The whole trace's histogram and references per page.
    histogram: [u64; STACK_PAGES + 1],
    pages: FastMap<u64, u64>,
    references: u64,
    records: Vec<StatsLine>,
    /// The next record to close, and the record whose interval is open.
    next: usize,
    opened: Option<usize>,
    in_records: [u64; STACK_PAGES + 1],
    compared: u64,
    equal: u64,
    first_difference: Option<(u64, u64)>,
}

impl Twin {
    fn new(records: Vec<StatsLine>) -> Twin {
        Twin {
            lru: PageLru::default(),
            histogram: [0; STACK_PAGES + 1],
            pages: FastMap::default(),
            references: 0,
            records,
            next: 0,
            opened: None,
            in_records: [0; STACK_PAGES + 1],
            compared: 0,
            equal: 0,
            first_difference: None,
        }
    }

    /// Closes the records that end by `tick`, and opens the interval of
    /// the record holding it (the counts before it were of intervals the
    /// board did not send).
    fn reach(&mut self, tick: u64) {
        while self.next < self.records.len() && tick >= self.records[self.next].end_tick {
            self.close();
        }
        if self.next < self.records.len()
            && tick >= self.records[self.next].start_tick
            && self.opened != Some(self.next)
        {
            self.opened = Some(self.next);
            self.lru.open_interval();
        }
    }

    fn close(&mut self) {
        let r = &self.records[self.next];
        let reuse = r.reuse.as_ref().expect("reuse records only");
        let inside = self.opened == Some(self.next);
        let (histogram, hot) = if inside {
            self.lru.interval(usize::from(reuse.hot_entries))
        } else {
            (vec![0; STACK_PAGES + 1], Vec::new())
        };
        for (t, h) in self.in_records.iter_mut().zip(&histogram) {
            *t += h;
        }
        let board: Vec<u64> = reuse.histogram.iter().map(|&h| u64::from(h)).collect();
        self.compared += 1;
        if board == histogram && reuse.hot == hot {
            self.equal += 1;
        } else if self.first_difference.is_none() {
            self.first_difference = Some((r.start_tick, r.end_tick));
        }
        if inside {
            self.lru.open_interval();
        }
        self.next += 1;
    }

    fn reference(&mut self, tick: u64, page: u64) {
        self.reach(tick);
        let d = self.lru.reference(page);
        self.histogram[d] += 1;
        *self.pages.entry(page).or_default() += 1;
        self.references += 1;
    }

    fn report(mut self) -> TwinReport {
        while self.next < self.records.len() {
            self.close();
        }
        let mut hot: Vec<(u64, u64)> = self.pages.into_iter().collect();
        hot.sort_by_key(|&(page, n)| (std::cmp::Reverse(n), page));
        TwinReport {
            references: self.references,
            histogram: self.histogram.to_vec(),
            hot: hot
                .into_iter()
                .take(HOT_REPORTED)
                .map(|(page, n)| HotPage {
                    page,
                    count: n.min(u64::from(u32::MAX)) as u32,
                })
                .collect(),
            histogram_in_records: self.in_records.to_vec(),
            records_compared: self.compared,
            records_equal: self.equal,
            first_difference: self.first_difference,
            equal: self.compared > 0 && self.equal == self.compared,
        }
    }
}

/// The line index of `pa` on its board's DIMM (the channel interleave
/// taken out as `analyze::banks` does); `None` beyond it.
fn line_of(mapping: &AddressMapping, channels: u64, shift: u32, pa: u64) -> Option<u64> {
    let local = if channels > 1 {
        let low = pa & ((1 << shift) - 1);
        (((pa >> shift) / channels) << shift) | low
    } else {
        pa
    };
    mapping.line_of(local).ok()
}

/// The board's statistics of the trace whose side file is `side` (if it
/// exists), with the twin when the side file has RDHPU sections or
/// `twin` asks for it; `None` when there is neither.
pub fn board_statistics(
    input: &TraceInput,
    side: &Path,
    opts: &AnalyzeOptions,
    twin: bool,
) -> Result<Option<BoardStatisticsReport>, BoardTwinError> {
    let has_side = side.is_file();
    if !has_side && !twin {
        return Ok(None);
    }
    let (boards, (mut reuse, timelines)) = if has_side {
        (read_statistics(side, 0)?, reuse_records(side)?)
    } else {
        (Vec::new(), (BTreeMap::new(), Vec::new()))
    };
    let mut reports: BTreeMap<u8, BoardReport> = boards
        .iter()
        .map(|b| {
            let counters = (b.counter_records > 0).then(|| {
                let mut c = BTreeMap::new();
                for k in BankCounter::ALL {
                    c.insert(k.name(), b.bank_total(k));
                }
                for k in RankCounter::ALL {
                    c.insert(k.name(), b.rank_total(k));
                }
                c.insert("over_limit", b.over_limit());
                c.insert("lost_fifo", b.lost_fifo());
                c
            });
            let report = BoardReport {
                board: b.board,
                records: b.records,
                unsent: b.unsent,
                ticks: b.ticks,
                counters,
                reuse: b.reuse.as_ref().map(|r| BoardReuse {
                    records: r.records,
                    taken: r.taken(),
                    skipped: r.skipped,
                    histogram: r.histogram.clone(),
                }),
                twin: None,
            };
            (b.board, report)
        })
        .collect();
    let (mut lost, mut gaps) = (None, None);
    if twin || !reuse.is_empty() {
        let geometry = opts.geometry.or(input.geometry()).unwrap_or_default();
        let mapping = match &opts.mapping_toml {
            Some(t) => AddressMapping::from_toml(t, geometry).map_err(AnalyzeError::from)?,
            None => AddressMapping::linear(geometry),
        };
        let channels = u64::from(input.boards().max(1));
        let mut twins: BTreeMap<u8, Twin> = BTreeMap::new();
        let (lost, gaps) = (lost.insert(0), gaps.insert(0));
        input.each(None, &mut |item| match item {
            Item::Access(a) => {
                let Some(line) = line_of(&mapping, channels, opts.interleave_shift, a.pa) else {
                    return;
                };
                twins
                    .entry(a.board)
                    .or_insert_with(|| Twin::new(reuse.remove(&a.board).unwrap_or_default()))
                    .reference(a.tick, line >> PAGE_LINE_SHIFT);
            }
            Item::Lost { count } => *lost += count,
            Item::Gap { packets } => *gaps += packets,
            Item::Event { .. } => {}
        })?;
        // Boards with records and no reference in the trace.
        for (board, records) in reuse {
            twins.insert(board, Twin::new(records));
        }
        for (board, t) in twins {
            let report = reports.entry(board).or_insert_with(|| BoardReport {
                board,
                records: 0,
                unsent: 0,
                ticks: 0,
                counters: None,
                reuse: None,
                twin: None,
            });
            report.twin = Some(t.report());
        }
    }
    Ok(Some(BoardStatisticsReport {
        side_file: has_side.then(|| side.display().to_string()),
        boards: reports.into_values().collect(),
        trace_lost: lost,
        trace_gap_packets: gaps,
        timelines,
    }))
}

/// Bins of a stack distance histogram by powers of two: `"0 a%, 1 b%,
/// 2-3 c%, ..., deeper or new z%"`.
fn distance_bins(h: &[u64]) -> String {
    let total: u64 = h.iter().sum();
    let pct = |n: u64| super::percent(n, total);
    let mut parts = Vec::new();
    let mut lo = 0;
    while lo + 1 < h.len() {
        let hi = if lo == 0 {
            1
        } else {
            (2 * lo).min(h.len() - 1)
        };
        let n: u64 = h[lo..hi].iter().sum();
        if hi - lo == 1 {
            parts.push(format!("{lo} {:.1}%", pct(n)));
        } else {
            parts.push(format!("{lo}-{} {:.1}%", hi - 1, pct(n)));
        }
        lo = hi;
    }
    parts.push(format!(
        "deeper or new {:.1}%",
        pct(h.last().copied().unwrap_or(0))
    ));
    parts.join(", ")
}

impl std::fmt::Display for BoardStatisticsReport {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.side_file {
            Some(side) => writeln!(out, "\nboard statistics ({side}):")?,
            None => writeln!(
                out,
                "\nboard statistics (none beside the trace; the twin alone):"
            )?,
        }
        for b in &self.boards {
            writeln!(
                out,
                "  board {}: {} records over {} ticks, {} the board could not send",
                b.board, b.records, b.ticks, b.unsent
            )?;
            if let Some(c) = &b.counters {
                let columns = c["rd"] + c["wr"];
                writeln!(
                    out,
                    "    counters: {} RD, {} WR, {} ACT; row hits {:.1}%, misses {:.1}%, conflicts {:.1}%; {} unused activations; {} over the clock's limit, {} lost at the FIFO",
                    c["rd"],
                    c["wr"],
                    c["act"],
                    super::percent(c["hit"], columns),
                    super::percent(c["miss"], columns),
                    super::percent(c["conflict"], columns),
                    c["unused_act"],
                    c["over_limit"],
                    c["lost_fifo"]
                )?;
            }
            if let Some(r) = &b.reuse {
                writeln!(
                    out,
                    "    page reuse (the board's 128-page LRU stack): {} references taken, {} skipped; stack distance {}",
                    r.taken,
                    r.skipped,
                    distance_bins(&r.histogram)
                )?;
            }
            if let Some(t) = &b.twin {
                writeln!(
                    out,
                    "    twin (the trace's READ/WRITE records in the same stack): {} references; stack distance {}",
                    t.references,
                    distance_bins(&t.histogram)
                )?;
                if t.records_compared > 0 {
                    writeln!(
                        out,
                        "    twin against the board: {} of {} records equal{}",
                        t.records_equal,
                        t.records_compared,
                        match t.first_difference {
                            Some((a, z)) => format!(", the first that differs [{a}, {z})"),
                            None => String::new(),
                        }
                    )?;
                }
            }
        }
        if let (Some(lost), Some(gaps)) = (self.trace_lost, self.trace_gap_packets) {
            if lost + gaps > 0 {
                writeln!(
                    out,
                    "  the trace lost {lost} references and {gaps} packets: where they were, the twin cannot equal the board"
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_gives_page_distances_and_forgets_the_129th() {
        let mut lru = PageLru::default();
        assert_eq!(lru.reference(5), STACK_PAGES);
        assert_eq!(lru.reference(5), 0);
        assert_eq!(lru.reference(6), STACK_PAGES);
        assert_eq!(lru.reference(5), 1);
        for p in 100..228 {
            lru.reference(p);
        }
        // 5 and 6 were pushed out by 128 newer pages.
        assert_eq!(lru.reference(5), STACK_PAGES);
        assert_eq!(lru.reference(227), 1);
    }

    #[test]
    fn hot_pages_rank_by_count_then_recency_and_restart_per_interval() {
        let mut lru = PageLru::default();
        for p in [1, 2, 2, 3, 1] {
            lru.reference(p);
        }
        let (h, hot) = lru.interval(2);
        assert_eq!(h.iter().sum::<u64>(), 5);
        assert_eq!(
            hot,
            vec![HotPage { page: 1, count: 2 }, HotPage { page: 2, count: 2 }]
        );
        lru.open_interval();
        lru.reference(3);
        let (h, hot) = lru.interval(8);
        assert_eq!(h[1], 1);
        assert_eq!(hot, vec![HotPage { page: 3, count: 1 }]);
    }
}
