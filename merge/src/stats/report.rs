//! What `hmtt stats` prints: a trace's [`TraceStats`] as text (counts, the
//! bandwidth table, tags, losses), and the boards' Statistic Unit records
//! (format.md §5.3) beside what the trace holds.

use std::fmt;

use hmtt_format::events::EventNames;
use hmtt_format::stats::{BankCounter, RankCounter};
use hmtt_format::trace::TraceHeader;
use hmtt_format::TickLength;

use super::TraceStats;
use crate::board_statistics::{BoardStatistics, ReuseTotals};
use crate::names::event_name;

/// Tags listed by name; the kernel log's tags are summed up.
const TAGS_LISTED: usize = 50;
/// Memory traffic per reference (a 64-byte line) and trace per reference
/// (a 4-byte record), in bytes.
const LINE_BYTES: f64 = 64.0;
const RECORD_BYTES: f64 = 4.0;

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

fn percent(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
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
        let span_ns = self
            .tick
            .ns(s.last_tick.saturating_sub(s.first_tick.unwrap_or(0)));
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
    /// The bandwidth over time (the paper's Table 5).
    fn bandwidth(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (s, tick) = (self.stats, self.tick);
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
        let interval_ticks = tick.ticks_in_ns(self.interval_ms * 1e6);
        let secs = tick.ns(interval_ticks) / 1e9;
        for iv in s.intervals() {
            let n = iv.reads + iv.writes;
            writeln!(
                out,
                "{:>12.3} {n:>12} {:>10} {:>10} {:>12.1} {:>12.1}",
                tick.ms(iv.start_tick),
                iv.reads,
                iv.writes,
                n as f64 * LINE_BYTES / secs / 1e6,
                n as f64 * RECORD_BYTES / secs / 1e6
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
        let (s, names) = (self.stats, self.names);
        if s.tags.is_empty() && s.commands.is_empty() {
            return writeln!(out, "tags: none");
        }
        writeln!(out, "tags and inner commands seen:")?;
        let log_tags: u64 = s
            .tags
            .iter()
            .filter(|((i, _), _)| (0x10000..0x20000).contains(i))
            .map(|(_, n)| n)
            .sum();
        for ((i, write), n) in s
            .tags
            .iter()
            .filter(|((i, _), _)| !(0x10000..0x20000).contains(i))
            .take(TAGS_LISTED)
        {
            writeln!(
                out,
                "  {:<24} {:>10} {}",
                event_name(*i, names),
                n,
                if *write { "(write)" } else { "" }
            )?;
        }
        if log_tags > 0 {
            writeln!(out, "  {:<24} {:>10}", "kernel log tags", log_tags)?;
        }
        for (c, n) in &s.commands {
            writeln!(
                out,
                "  {:<24} {:>10} (inner command)",
                event_name(*c, names),
                n
            )?;
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
            let sum = |c: &[u32], which: BankCounter| -> u64 {
                (0..l.ranks)
                    .flat_map(|r| (0..l.banks).map(move |k| (r, k)))
                    .map(|(r, k)| u64::from(c[l.bank(r, k, which)]))
                    .sum()
            };
            for line in b.first.iter().filter(|l| !l.counters.is_empty()) {
                let c = &line.counters;
                let (rd, wr) = (sum(c, BankCounter::Rd), sum(c, BankCounter::Wr));
                let busy: u64 = (0..l.ranks)
                    .map(|r| u64::from(c[l.rank(r, RankCounter::BusyTicks)]))
                    .sum();
                let ticks = line.end_tick.saturating_sub(line.start_tick) * l.ranks as u64;
                writeln!(
                    out,
                    "  {:>12.3} {:>10.3} {:>9} {:>9} {:>8} {:>8} {:>6.1} {:>9} {:>7} {:>6.1} {:>9} {:>9}",
                    tick.ms(line.start_tick),
                    tick.ns(line.end_tick.saturating_sub(line.start_tick)) / 1e3,
                    rd,
                    wr,
                    sum(c, BankCounter::Act),
                    sum(c, BankCounter::Pre),
                    percent(sum(c, BankCounter::Hit), rd + wr),
                    sum(c, BankCounter::Conflict),
                    sum(c, BankCounter::UnusedAct),
                    percent(busy, ticks),
                    c[l.over_limit()],
                    c[l.lost_fifo()]
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
            let (rd, wr) = (b.bank_total(BankCounter::Rd), b.bank_total(BankCounter::Wr));
            let columns = rd + wr;
            writeln!(
                out,
                "  total: {rd} RD, {wr} WR, {} ACT, {} PRE, {} REF; row hits {} ({:.1}%), misses {} ({:.1}%), conflicts {} ({:.1}%); {} unused activations",
                b.bank_total(BankCounter::Act),
                b.bank_total(BankCounter::Pre),
                b.rank_total(RankCounter::Ref),
                b.bank_total(BankCounter::Hit),
                percent(b.bank_total(BankCounter::Hit), columns),
                b.bank_total(BankCounter::Miss),
                percent(b.bank_total(BankCounter::Miss), columns),
                b.bank_total(BankCounter::Conflict),
                percent(b.bank_total(BankCounter::Conflict), columns),
                b.bank_total(BankCounter::UnusedAct)
            )?;
            let (tr, tw) = self.stats.by_board.get(&b.board).copied().unwrap_or((0, 0));
            writeln!(
                out,
                "  beside the trace: the board counted {} column commands, the trace holds {} references of board {} ({} reads, {} writes); the board dropped {} over the clock's limit and {} at its FIFO",
                columns,
                tr + tw,
                b.board,
                tr,
                tw,
                b.over_limit(),
                b.lost_fifo()
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
        for line in &b.first {
            let Some(x) = &line.reuse else { continue };
            let h: Vec<u64> = x.histogram.iter().map(|&v| u64::from(v)).collect();
            let taken = x.taken();
            let below = |d: usize| h.iter().take(d.min(h.len() - 1)).sum::<u64>();
            let (page, count) = x.hot.first().map_or((String::from("-"), 0), |p| {
                (format!("{:#x}", p.page), p.count)
            });
            writeln!(
                out,
                "  {:>12.3} {:>10.3} {:>9} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>8} {:>12} {:>7}",
                tick.ms(line.start_tick),
                tick.ns(line.end_tick.saturating_sub(line.start_tick)) / 1e3,
                taken,
                percent(below(1), taken),
                percent(below(8), taken),
                percent(below(128), taken),
                percent(h.last().copied().unwrap_or(0), taken),
                x.skipped,
                page,
                count
            )?;
        }
        let taken = r.taken();
        let mut bins = Vec::new();
        let mut lo = 0;
        while lo + 1 < r.histogram.len() {
            let hi = if lo == 0 {
                1
            } else {
                (2 * lo).min(r.histogram.len() - 1)
            };
            let n: u64 = r.histogram[lo..hi].iter().sum();
            bins.push(if hi - lo == 1 {
                format!("{lo} {:.1}%", percent(n, taken))
            } else {
                format!("{lo}-{} {:.1}%", hi - 1, percent(n, taken))
            });
            lo = hi;
        }
        writeln!(
            out,
            "  total: {taken} references taken, {} skipped; stack distance {}, deeper or new {:.1}%",
            r.skipped,
            bins.join(", "),
            percent(r.histogram.last().copied().unwrap_or(0), taken)
        )?;
        let shown: Vec<String> = r
            .hot
            .iter()
            .take(8)
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
