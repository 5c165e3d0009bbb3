//! What `hmtt stats` prints: a trace's [`TraceStats`] as text (counts, the
//! bandwidth table, tags, losses), and the boards' Statistic Unit records
//! (format.md §5.3) beside what the trace holds.

use std::fmt;

use hmtt_format::events::EventNames;
use hmtt_format::trace::TraceHeader;
use hmtt_format::TickLength;

use super::rows::{percent, HOT_PAGES_LISTED, LINE_BYTES, RECORD_BYTES};
use super::TraceStats;
use crate::board_statistics::{BoardStatistics, ReuseTotals};

/// A trace's statistics as `hmtt stats` prints them (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct StatsReport<'a> {
    /// The trace as named to the user.
    pub trace: &'a str,
    pub header: &'a TraceHeader,
    pub names: &'a EventNames,
    pub stats: &'a TraceStats,
    pub tick: TickLength,
    /// Length of a bandwidth interval as given, ms.
    pub interval_ms: f64,
    /// The boards' Statistic Unit records, and the side file they came from.
    pub board_statistics: Option<(&'a str, &'a [BoardStatistics])>,
}

impl fmt::Display for StatsReport<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, h) = (self.stats, self.header);
        writeln!(
            out,
            "trace {}: {} records, {} boards, tick {} ps{}",
            self.trace,
            s.records,
            h.boards,
            h.common.tick_ps,
            if h.is_complete() {
                ""
            } else {
                " (INCOMPLETE: the writer did not finish)"
            }
        )?;
        let span_ns = self.span_ns();
        writeln!(out, "time span: {:.3} ms", span_ns / 1e6)?;
        let refs = s.references();
        writeln!(
            out,
            "references: {refs} ({} reads {:.1}%, {} writes {:.1}%)",
            s.reads,
            percent(s.reads, refs),
            s.writes,
            percent(s.writes, refs)
        )?;
        for (b, (r, w)) in &s.by_board {
            writeln!(out, "  board {b}: {r} reads, {w} writes")?;
        }
        if span_ns > 0.0 {
            writeln!(
                out,
                "average: {:.1} MB/s of memory traffic (64-byte lines), {:.1} MB/s of trace (4-byte records)",
                refs as f64 * LINE_BYTES / span_ns * 1e3,
                refs as f64 * RECORD_BYTES / span_ns * 1e3
            )?;
        }
        writeln!(out)?;
        self.bandwidth(out)?;
        writeln!(out)?;
        self.tags(out)?;
        writeln!(out)?;
        writeln!(out, "losses:")?;
        writeln!(
            out,
            "  packets merged {}, missing {} (in {} gaps), duplicates dropped {}, rejected {}",
            h.packets, h.packets_missing, s.gaps, h.packets_duplicate, h.packets_rejected
        )?;
        writeln!(
            out,
            "  references dropped by the boards (LOST words): {} in {} LOST records",
            s.references_lost, s.lost_words
        )?;
        if let Some((side, boards)) = self.board_statistics {
            self.board_statistics(out, side, boards)?;
        }
        Ok(())
    }
}

impl StatsReport<'_> {
    /// The time from the trace's first record to its last, ns.
    pub(super) fn span_ns(&self) -> f64 {
        let s = self.stats;
        self.tick
            .ns(s.last_tick.saturating_sub(s.first_tick.unwrap_or(0)))
    }

    /// The bandwidth over time (the paper's Table 5).
    fn bandwidth(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats;
        writeln!(
            out,
            "bandwidth over time (as the paper's Table 5), intervals of {} ms:",
            self.interval_ms
        )?;
        writeln!(
            out,
            "{:>12} {:>12} {:>10} {:>10} {:>12} {:>12}",
            "start_ms", "references", "reads", "writes", "mem MB/s", "trace MB/s"
        )?;
        for row in self.bandwidth_rows() {
            writeln!(
                out,
                "{:>12.3} {:>12} {:>10} {:>10} {:>12.1} {:>12.1}",
                row.start_ms,
                row.references,
                row.reads,
                row.writes,
                row.memory_mb_per_s,
                row.trace_mb_per_s
            )?;
        }
        if let Some(later) = s.later_intervals() {
            writeln!(
                out,
                "{:>12} {:>12} {:>10} {:>10}  ({} more intervals)",
                "...",
                later.reads + later.writes,
                later.reads,
                later.writes,
                later.intervals
            )?;
        }
        Ok(())
    }

    /// The tags and inner commands seen, by name.
    fn tags(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats;
        if s.tags.is_empty() && s.commands.is_empty() {
            return writeln!(out, "tags: none");
        }
        writeln!(out, "tags and inner commands seen:")?;
        let rows = self.tag_rows();
        for tag in &rows.tags {
            let write = if tag.write == Some(true) {
                "(write)"
            } else {
                ""
            };
            writeln!(out, "  {:<24} {:>10} {}", tag.name, tag.count, write)?;
        }
        if rows.kernel_log_tags > 0 {
            writeln!(
                out,
                "  {:<24} {:>10}",
                "kernel log tags", rows.kernel_log_tags
            )?;
        }
        for c in &rows.inner_commands {
            writeln!(out, "  {:<24} {:>10} (inner command)", c.name, c.count)?;
        }
        Ok(())
    }

    /// The boards' Statistic Unit records (format.md §5.3), per interval
    /// and in total, beside what the trace holds.
    fn board_statistics(
        &self,
        out: &mut fmt::Formatter<'_>,
        side: &str,
        boards: &[BoardStatistics],
    ) -> fmt::Result {
        let tick = self.tick;
        writeln!(out)?;
        writeln!(
            out,
            "board statistics (the boards' Statistic Unit, {side}):"
        )?;
        for b in boards {
            writeln!(
                out,
                "  board {}: {} records over {:.3} ms, {} records the board could not send",
                b.board,
                b.records,
                tick.ms(b.ticks),
                b.unsent
            )?;
            if b.counter_records == 0 {
                // The RDHPU alone was on.
                if let Some(r) = &b.reuse {
                    self.reuse(out, b, r)?;
                }
                continue;
            }
            let Some(l) = b.layout() else { continue };
            writeln!(
                out,
                "  {:>12} {:>10} {:>9} {:>9} {:>8} {:>8} {:>6} {:>9} {:>7} {:>6} {:>9} {:>9}",
                "start_ms",
                "length_us",
                "RD",
                "WR",
                "ACT",
                "PRE",
                "hit%",
                "conflicts",
                "unused",
                "busy%",
                "overlimit",
                "lost_fifo"
            )?;
            for row in self.counter_rows(b, &l) {
                writeln!(
                    out,
                    "  {:>12.3} {:>10.3} {:>9} {:>9} {:>8} {:>8} {:>6.1} {:>9} {:>7} {:>6.1} {:>9} {:>9}",
                    row.start_ms,
                    row.length_us,
                    row.rd,
                    row.wr,
                    row.act,
                    row.pre,
                    row.hit_percent,
                    row.conflicts,
                    row.unused_activations,
                    row.busy_percent,
                    row.over_limit,
                    row.lost_fifo
                )?;
            }
            if b.records > b.first.len() as u64 {
                writeln!(
                    out,
                    "  {:>12}  ({} more records)",
                    "...",
                    b.records - b.first.len() as u64
                )?;
            }
            let t = b.counter_totals();
            writeln!(
                out,
                "  total: {} RD, {} WR, {} ACT, {} PRE, {} REF; row hits {} ({:.1}%), misses {} ({:.1}%), conflicts {} ({:.1}%); {} unused activations",
                t.rd,
                t.wr,
                t.act,
                t.pre,
                t.refresh,
                t.row_hits,
                t.row_hit_percent,
                t.row_misses,
                t.row_miss_percent,
                t.row_conflicts,
                t.row_conflict_percent,
                t.unused_activations
            )?;
            let beside = self.beside_trace(b);
            writeln!(
                out,
                "  beside the trace: the board counted {} column commands, the trace holds {} references of board {} ({} reads, {} writes); the board dropped {} over the clock's limit and {} at its FIFO",
                beside.column_commands,
                beside.trace_references,
                b.board,
                beside.trace_reads,
                beside.trace_writes,
                beside.over_limit,
                beside.lost_fifo
            )?;
            if let Some(r) = &b.reuse {
                self.reuse(out, b, r)?;
            }
        }
        Ok(())
    }

    /// The RDHPU's sections of one board: per interval, then summed.
    fn reuse(
        &self,
        out: &mut fmt::Formatter<'_>,
        b: &BoardStatistics,
        r: &ReuseTotals,
    ) -> fmt::Result {
        let tick = self.tick;
        writeln!(
            out,
            "  page reuse (the board's 128-page LRU stack, 4 KiB pages): {} records over {:.3} ms",
            r.records,
            tick.ms(r.ticks)
        )?;
        writeln!(
            out,
            "  {:>12} {:>10} {:>9} {:>6} {:>6} {:>6} {:>6} {:>8} {:>12} {:>7}",
            "start_ms",
            "length_us",
            "refs",
            "d=0%",
            "d<8%",
            "d<128%",
            "new%",
            "skipped",
            "hottest",
            "refs"
        )?;
        for row in self.reuse_rows(b) {
            let page = row
                .hottest_page
                .map_or(String::from("-"), |p| format!("{p:#x}"));
            writeln!(
                out,
                "  {:>12.3} {:>10.3} {:>9} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>8} {:>12} {:>7}",
                row.start_ms,
                row.length_us,
                row.references,
                row.distance_0_percent,
                row.distance_below_8_percent,
                row.distance_below_128_percent,
                row.deeper_or_new_percent,
                row.skipped,
                page,
                row.hottest_references
            )?;
        }
        let bins: Vec<String> = r
            .distance_bins()
            .iter()
            .map(|bin| match bin.from == bin.to {
                true => format!("{} {:.1}%", bin.from, bin.percent),
                false => format!("{}-{} {:.1}%", bin.from, bin.to, bin.percent),
            })
            .collect();
        writeln!(
            out,
            "  total: {} references taken, {} skipped; stack distance {}, deeper or new {:.1}%",
            r.taken(),
            r.skipped,
            bins.join(", "),
            r.deeper_or_new_percent()
        )?;
        let shown: Vec<String> = r
            .hot
            .iter()
            .take(HOT_PAGES_LISTED)
            .map(|(page, n)| format!("{page:#x} ({n})"))
            .collect();
        writeln!(
            out,
            "  hot pages (page = line index >> 6; references in the intervals they were hot): {}",
            if shown.is_empty() {
                "none".to_string()
            } else {
                shown.join(", ")
            }
        )
    }
}
