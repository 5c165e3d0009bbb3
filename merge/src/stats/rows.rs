//! The figures of `hmtt stats`' tables, worked out once for its text and
//! its JSON ([`StatsReport`]'s `Display` and `write_json`).

use hmtt_format::stats::{BankCounter, CounterLayout, RankCounter};

use super::StatsReport;
use crate::board_statistics::{BoardStatistics, ReuseTotals};
use crate::names::event_name;

/// Tags listed by name; the kernel log's tags are summed up.
const TAGS_LISTED: usize = 50;
/// Memory traffic per reference (a 64-byte line) and trace per reference
/// (a 4-byte record), in bytes.
pub(super) const LINE_BYTES: f64 = 64.0;
pub(super) const RECORD_BYTES: f64 = 4.0;
/// Hot pages listed of a board's RDHPU.
pub(super) const HOT_PAGES_LISTED: usize = 8;
/// The kernel log's tags (format.md §2).
const LOG_TAGS: std::ops::Range<u32> = 0x10000..0x20000;

/// `x` in percent of `of`; 0 of nothing.
pub(super) fn percent(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
}

/// One interval of the bandwidth table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BandwidthRow {
    pub start_ms: f64,
    pub references: u64,
    pub reads: u64,
    pub writes: u64,
    /// Memory traffic, 64-byte lines.
    pub memory_mb_per_s: f64,
    /// Trace, 4-byte records.
    pub trace_mb_per_s: f64,
}

/// A tag or inner command seen, by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TagRow {
    pub name: String,
    pub count: u64,
    /// A tag written (a tag read is `false`); `None` for an inner command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
}

/// The tags seen: the first [`TAGS_LISTED`] by name, the kernel log's
/// summed, the inner commands by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TagRows {
    pub tags: Vec<TagRow>,
    pub kernel_log_tags: u64,
    pub inner_commands: Vec<TagRow>,
}

/// One record of a board's Statistic Unit, summed over ranks and banks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CounterRow {
    pub start_ms: f64,
    pub length_us: f64,
    pub rd: u64,
    pub wr: u64,
    pub act: u64,
    pub pre: u64,
    /// Row hits among RD and WR.
    pub hit_percent: f64,
    pub conflicts: u64,
    pub unused_activations: u64,
    /// Ticks with a command, over the ranks.
    pub busy_percent: f64,
    pub over_limit: u32,
    pub lost_fifo: u32,
}

/// A board's Statistic Unit counters summed over every record.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CounterTotals {
    pub rd: u64,
    pub wr: u64,
    pub act: u64,
    pub pre: u64,
    #[serde(rename = "ref")]
    pub refresh: u64,
    pub row_hits: u64,
    pub row_hit_percent: f64,
    pub row_misses: u64,
    pub row_miss_percent: f64,
    pub row_conflicts: u64,
    pub row_conflict_percent: f64,
    pub unused_activations: u64,
}

/// A board's counts beside what the trace holds of it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BesideTrace {
    /// RD and WR the board counted.
    pub column_commands: u64,
    pub trace_references: u64,
    pub trace_reads: u64,
    pub trace_writes: u64,
    /// References the board dropped over the clock's limit.
    pub over_limit: u64,
    /// References the board dropped at its FIFO.
    pub lost_fifo: u64,
}

/// One record's RDHPU section.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReuseRow {
    pub start_ms: f64,
    pub length_us: f64,
    /// References the unit took.
    pub references: u64,
    pub distance_0_percent: f64,
    pub distance_below_8_percent: f64,
    pub distance_below_128_percent: f64,
    pub deeper_or_new_percent: f64,
    pub skipped: u32,
    pub hottest_page: Option<u64>,
    /// References to the hottest page (0 without one).
    pub hottest_references: u32,
}

/// A bin of stack distances `from..=to`, in percent of the references
/// taken.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DistanceBin {
    pub from: usize,
    pub to: usize,
    pub percent: f64,
}

impl StatsReport<'_> {
    /// The bandwidth table's rows (the intervals beyond `max_rows` are
    /// [`super::TraceStats::later_intervals`]).
    pub(super) fn bandwidth_rows(&self) -> Vec<BandwidthRow> {
        let tick = self.tick;
        let interval_ticks = tick.ticks_in_ns(self.interval_ms * 1e6);
        let secs = tick.ns(interval_ticks) / 1e9;
        self.stats
            .intervals()
            .map(|iv| {
                let n = iv.reads + iv.writes;
                BandwidthRow {
                    start_ms: tick.ms(iv.start_tick),
                    references: n,
                    reads: iv.reads,
                    writes: iv.writes,
                    memory_mb_per_s: n as f64 * LINE_BYTES / secs / 1e6,
                    trace_mb_per_s: n as f64 * RECORD_BYTES / secs / 1e6,
                }
            })
            .collect()
    }

    pub(super) fn tag_rows(&self) -> TagRows {
        let (s, names) = (self.stats, self.names);
        let tags = s.tags.iter().filter(|((i, _), _)| !LOG_TAGS.contains(i));
        TagRows {
            tags: tags
                .take(TAGS_LISTED)
                .map(|((i, write), n)| TagRow {
                    name: event_name(*i, names),
                    count: *n,
                    write: Some(*write),
                })
                .collect(),
            kernel_log_tags: s
                .tags
                .iter()
                .filter(|((i, _), _)| LOG_TAGS.contains(i))
                .map(|(_, n)| n)
                .sum(),
            inner_commands: s
                .commands
                .iter()
                .map(|(c, n)| TagRow {
                    name: event_name(*c, names),
                    count: *n,
                    write: None,
                })
                .collect(),
        }
    }

    /// The first records of a board's Statistic Unit.
    pub(super) fn counter_rows(&self, b: &BoardStatistics, l: &CounterLayout) -> Vec<CounterRow> {
        let tick = self.tick;
        let sum = |c: &[u32], which: BankCounter| l.bank_total(c, which);
        let rows = b.first.iter().filter(|l| !l.counters.is_empty());
        rows.map(|line| {
            let c = &line.counters;
            let (rd, wr) = (sum(c, BankCounter::Rd), sum(c, BankCounter::Wr));
            let busy: u64 = (0..l.ranks)
                .map(|r| u64::from(c[l.rank(r, RankCounter::BusyTicks)]))
                .sum();
            let ticks = line.end_tick.saturating_sub(line.start_tick) * l.ranks as u64;
            CounterRow {
                start_ms: tick.ms(line.start_tick),
                length_us: tick.ns(line.end_tick.saturating_sub(line.start_tick)) / 1e3,
                rd,
                wr,
                act: sum(c, BankCounter::Act),
                pre: sum(c, BankCounter::Pre),
                hit_percent: percent(sum(c, BankCounter::Hit), rd + wr),
                conflicts: sum(c, BankCounter::Conflict),
                unused_activations: sum(c, BankCounter::UnusedAct),
                busy_percent: percent(busy, ticks),
                over_limit: c[l.over_limit()],
                lost_fifo: c[l.lost_fifo()],
            }
        })
        .collect()
    }

    pub(super) fn beside_trace(&self, b: &BoardStatistics) -> BesideTrace {
        let (tr, tw) = self.stats.by_board.get(&b.board).copied().unwrap_or((0, 0));
        BesideTrace {
            column_commands: b.bank_total(BankCounter::Rd) + b.bank_total(BankCounter::Wr),
            trace_references: tr + tw,
            trace_reads: tr,
            trace_writes: tw,
            over_limit: b.over_limit(),
            lost_fifo: b.lost_fifo(),
        }
    }

    /// The RDHPU sections of a board's first records.
    pub(super) fn reuse_rows(&self, b: &BoardStatistics) -> Vec<ReuseRow> {
        let tick = self.tick;
        let sections = b
            .first
            .iter()
            .filter_map(|l| l.reuse.as_ref().map(|x| (l, x)));
        sections
            .map(|(line, x)| {
                let h: Vec<u64> = x.histogram.iter().map(|&v| u64::from(v)).collect();
                let taken = x.taken();
                let below = |d: usize| h.iter().take(d.min(h.len() - 1)).sum::<u64>();
                ReuseRow {
                    start_ms: tick.ms(line.start_tick),
                    length_us: tick.ns(line.end_tick.saturating_sub(line.start_tick)) / 1e3,
                    references: taken,
                    distance_0_percent: percent(below(1), taken),
                    distance_below_8_percent: percent(below(8), taken),
                    distance_below_128_percent: percent(below(128), taken),
                    deeper_or_new_percent: percent(h.last().copied().unwrap_or(0), taken),
                    skipped: x.skipped,
                    hottest_page: x.hot.first().map(|p| p.page),
                    hottest_references: x.hot.first().map_or(0, |p| p.count),
                }
            })
            .collect()
    }
}

impl BoardStatistics {
    /// The Statistic Unit's counters summed over every record.
    pub fn counter_totals(&self) -> CounterTotals {
        let (rd, wr) = (
            self.bank_total(BankCounter::Rd),
            self.bank_total(BankCounter::Wr),
        );
        let columns = rd + wr;
        let (hits, misses, conflicts) = (
            self.bank_total(BankCounter::Hit),
            self.bank_total(BankCounter::Miss),
            self.bank_total(BankCounter::Conflict),
        );
        CounterTotals {
            rd,
            wr,
            act: self.bank_total(BankCounter::Act),
            pre: self.bank_total(BankCounter::Pre),
            refresh: self.rank_total(RankCounter::Ref),
            row_hits: hits,
            row_hit_percent: percent(hits, columns),
            row_misses: misses,
            row_miss_percent: percent(misses, columns),
            row_conflicts: conflicts,
            row_conflict_percent: percent(conflicts, columns),
            unused_activations: self.bank_total(BankCounter::UnusedAct),
        }
    }
}

impl ReuseTotals {
    /// The stack distances in bins 0, 1, 2-3, 4-7, ... up to the last
    /// distance (the last bin, deeper or new, apart).
    pub fn distance_bins(&self) -> Vec<DistanceBin> {
        let taken = self.taken();
        let mut bins = Vec::new();
        let mut lo = 0;
        while lo + 1 < self.histogram.len() {
            let hi = if lo == 0 {
                1
            } else {
                (2 * lo).min(self.histogram.len() - 1)
            };
            let n: u64 = self.histogram[lo..hi].iter().sum();
            bins.push(DistanceBin {
                from: lo,
                to: hi - 1,
                percent: percent(n, taken),
            });
            lo = hi;
        }
        bins
    }

    /// References deeper than the stack or new, in percent of those taken.
    pub fn deeper_or_new_percent(&self) -> f64 {
        percent(self.histogram.last().copied().unwrap_or(0), self.taken())
    }
}
