//! `hmtt stats --json`: each figure of [`StatsReport`]'s text under a name.

use super::rows::{
    percent, BandwidthRow, BesideTrace, CounterRow, CounterTotals, DistanceBin, ReuseRow, TagRows,
    HOT_PAGES_LISTED, LINE_BYTES, RECORD_BYTES,
};
use super::StatsReport;
use crate::board_statistics::{BoardStatistics, ReuseTotals};

#[derive(serde::Serialize)]
struct StatsJson<'a> {
    trace: &'a str,
    /// Whether the trace's writer finished.
    complete: bool,
    records: u64,
    boards: u8,
    tick_ps: u16,
    time_span_ms: f64,
    references: u64,
    reads: u64,
    read_percent: f64,
    writes: u64,
    write_percent: f64,
    by_board: Vec<BoardReferencesJson>,
    /// Over the time span; `null` for a trace of no time.
    average: Option<AverageJson>,
    bandwidth: BandwidthJson,
    #[serde(flatten)]
    tags: TagRows,
    losses: LossesJson,
    /// The boards' Statistic Unit records, when the trace has them.
    board_statistics: Option<BoardStatisticsJson<'a>>,
}

#[derive(serde::Serialize)]
struct BoardReferencesJson {
    board: u8,
    reads: u64,
    writes: u64,
}

#[derive(serde::Serialize)]
struct AverageJson {
    memory_mb_per_s: f64,
    trace_mb_per_s: f64,
}

#[derive(serde::Serialize)]
struct BandwidthJson {
    interval_ms: f64,
    intervals: Vec<BandwidthRow>,
    /// The intervals past `--max-rows`, summed.
    later: Option<LaterJson>,
}

#[derive(serde::Serialize)]
struct LaterJson {
    intervals: u64,
    references: u64,
    reads: u64,
    writes: u64,
}

#[derive(serde::Serialize)]
struct LossesJson {
    packets_merged: u64,
    packets_missing: u64,
    gaps: u64,
    packets_duplicate: u64,
    packets_rejected: u64,
    /// References the boards dropped (the LOST records' words).
    references_lost: u64,
    lost_records: u64,
}

#[derive(serde::Serialize)]
struct BoardStatisticsJson<'a> {
    file: &'a str,
    boards: Vec<BoardJson>,
}

#[derive(serde::Serialize)]
struct BoardJson {
    board: u8,
    records: u64,
    span_ms: f64,
    /// Records the board could not send.
    unsent: u64,
    /// The Statistic Unit's first records, their totals and the trace
    /// beside them; `null` when the RDHPU alone was on.
    counters: Option<CountersJson>,
    reuse: Option<ReuseJson>,
}

#[derive(serde::Serialize)]
struct CountersJson {
    records: Vec<CounterRow>,
    more_records: u64,
    totals: CounterTotals,
    beside_trace: BesideTrace,
}

#[derive(serde::Serialize)]
struct ReuseJson {
    records: u64,
    span_ms: f64,
    intervals: Vec<ReuseRow>,
    references_taken: u64,
    skipped: u64,
    distance_bins: Vec<DistanceBin>,
    deeper_or_new_percent: f64,
    hot_pages: Vec<HotPageJson>,
}

#[derive(serde::Serialize)]
struct HotPageJson {
    /// The line index >> 6.
    page: u64,
    /// References in the intervals the page was hot.
    references: u64,
}

impl StatsReport<'_> {
    /// The report as JSON, each figure of the text under a name.
    pub fn write_json(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut out, &self.json())?;
        writeln!(out)
    }

    fn json(&self) -> StatsJson<'_> {
        let (s, h) = (self.stats, self.header);
        let span_ns = self.span_ns();
        let refs = s.references();
        StatsJson {
            trace: self.trace,
            complete: h.is_complete(),
            records: s.records,
            boards: h.boards,
            tick_ps: h.common.tick_ps,
            time_span_ms: span_ns / 1e6,
            references: refs,
            reads: s.reads,
            read_percent: percent(s.reads, refs),
            writes: s.writes,
            write_percent: percent(s.writes, refs),
            by_board: s
                .by_board
                .iter()
                .map(|(&board, &(reads, writes))| BoardReferencesJson {
                    board,
                    reads,
                    writes,
                })
                .collect(),
            average: (span_ns > 0.0).then(|| AverageJson {
                memory_mb_per_s: refs as f64 * LINE_BYTES / span_ns * 1e3,
                trace_mb_per_s: refs as f64 * RECORD_BYTES / span_ns * 1e3,
            }),
            bandwidth: BandwidthJson {
                interval_ms: self.interval_ms,
                intervals: self.bandwidth_rows(),
                later: s.later_intervals().map(|l| LaterJson {
                    intervals: l.intervals,
                    references: l.reads + l.writes,
                    reads: l.reads,
                    writes: l.writes,
                }),
            },
            tags: self.tag_rows(),
            losses: LossesJson {
                packets_merged: h.packets,
                packets_missing: h.packets_missing,
                gaps: s.gaps,
                packets_duplicate: h.packets_duplicate,
                packets_rejected: h.packets_rejected,
                references_lost: s.references_lost,
                lost_records: s.lost_words,
            },
            board_statistics: self
                .board_statistics
                .map(|(file, boards)| BoardStatisticsJson {
                    file,
                    boards: boards.iter().map(|b| self.board_json(b)).collect(),
                }),
        }
    }

    fn board_json(&self, b: &BoardStatistics) -> BoardJson {
        let counters = b.layout().filter(|_| b.counter_records > 0);
        BoardJson {
            board: b.board,
            records: b.records,
            span_ms: self.tick.ms(b.ticks),
            unsent: b.unsent,
            counters: counters.map(|l| CountersJson {
                records: self.counter_rows(b, &l),
                more_records: b.records.saturating_sub(b.first.len() as u64),
                totals: b.counter_totals(),
                beside_trace: self.beside_trace(b),
            }),
            reuse: b.reuse.as_ref().map(|r| self.reuse_json(b, r)),
        }
    }

    fn reuse_json(&self, b: &BoardStatistics, r: &ReuseTotals) -> ReuseJson {
        ReuseJson {
            records: r.records,
            span_ms: self.tick.ms(r.ticks),
            intervals: self.reuse_rows(b),
            references_taken: r.taken(),
            skipped: r.skipped,
            distance_bins: r.distance_bins(),
            deeper_or_new_percent: r.deeper_or_new_percent(),
            hot_pages: r
                .hot
                .iter()
                .take(HOT_PAGES_LISTED)
                .map(|&(page, references)| HotPageJson { page, references })
                .collect(),
        }
    }
}
