//! `hmtt stats`: counts, read/write mix, bandwidth over time (the paper's
//! Table 5), tags seen and losses of a trace file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::archive::AnyTrace;
use hmtt_format::stats::{BankCounter, RankCounter};
use hmtt_merge::board_statistics::{read_statistics, side_file_path, BoardStatistics};
use hmtt_merge::names::event_name;
use hmtt_merge::stats::TraceStats;

use crate::shared::{open_physical, positive_finite, tick_length, to_stdout, usize_in, TraceBytes};
use hmtt_format::TickLength;

/// Arguments of `hmtt stats`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt stats run.hmtttrace --interval-ms 10")]
pub struct Args {
    /// Trace file written by `hmtt merge`, or its archive (.hmttz).
    pub trace: PathBuf,
    /// Length of one bandwidth interval in milliseconds of traced time,
    /// positive and finite.
    #[arg(long, default_value_t = 1.0, value_parser = positive_finite)]
    pub interval_ms: f64,
    /// Most intervals to print (the rest are summed up), 1..=1048576.
    #[arg(long, default_value_t = 20, value_parser = usize_in(1, 1 << 20))]
    pub max_rows: usize,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes = TraceBytes::open(&args.trace)?;
    let view = open_physical(&args.trace, &bytes, "stats", args.incomplete, true)?;
    let h = view.header().clone();
    let tick = tick_length(&args.trace, "trace", &h.common)?;
    let interval_ticks = tick.ticks_in_ns(args.interval_ms * 1e6);
    let mut s = TraceStats::new(interval_ticks, args.max_rows);
    for r in view.records() {
        s.add(&r.with_context(|| format!("reading {}", args.trace.display()))?);
    }
    let span_ns = tick.ns(s.last_tick.saturating_sub(s.first_tick.unwrap_or(0)));
    let side = side_file_path(&args.trace);
    let board_stats = if side.is_file() {
        Some(read_statistics(&side, args.max_rows)?)
    } else {
        None
    };
    to_stdout("writing the statistics", |out| {
        print_stats(out, &args, &s, &view, interval_ticks, tick, span_ns)?;
        if let Some(boards) = &board_stats {
            print_board_statistics(out, &side, boards, &s, tick)?;
        }
        Ok(())
    })
}

/// The boards' Statistic Unit records (format.md §5.3), per interval and
/// in total, beside what the trace holds.
fn print_board_statistics(
    out: &mut dyn Write,
    side: &std::path::Path,
    boards: &[BoardStatistics],
    s: &TraceStats,
    tick: TickLength,
) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "board statistics (the boards' Statistic Unit, {}):",
        side.display()
    )?;
    let pct = |x: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            100.0 * x as f64 / of as f64
        }
    };
    for b in boards {
        writeln!(
            out,
            "  board {}: {} records over {:.3} ms, {} records the board could not send",
            b.board,
            b.records,
            tick.ms(b.ticks),
            b.unsent
        )?;
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
        for line in &b.first {
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
                pct(sum(c, BankCounter::Hit), rd + wr),
                sum(c, BankCounter::Conflict),
                sum(c, BankCounter::UnusedAct),
                pct(busy, ticks),
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
            pct(b.bank_total(BankCounter::Hit), columns),
            b.bank_total(BankCounter::Miss),
            pct(b.bank_total(BankCounter::Miss), columns),
            b.bank_total(BankCounter::Conflict),
            pct(b.bank_total(BankCounter::Conflict), columns),
            b.bank_total(BankCounter::UnusedAct)
        )?;
        let (tr, tw) = s.by_board.get(&b.board).copied().unwrap_or((0, 0));
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
    }
    Ok(())
}

/// One row of the bandwidth table.
fn row(
    out: &mut dyn Write,
    start_ms: f64,
    n: u64,
    r: u64,
    w: u64,
    secs: f64,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{start_ms:>12.3} {n:>12} {r:>10} {w:>10} {:>12.1} {:>12.1}",
        n as f64 * 64.0 / secs / 1e6,
        n as f64 * 4.0 / secs / 1e6
    )
}

fn print_stats(
    out: &mut dyn Write,
    args: &Args,
    s: &TraceStats,
    view: &AnyTrace,
    interval_ticks: u64,
    tick: TickLength,
    span_ns: f64,
) -> std::io::Result<()> {
    let h = view.header();
    writeln!(
        out,
        "trace {}: {} records, {} boards, tick {} ps{}",
        args.trace.display(),
        s.records,
        h.boards,
        h.common.tick_ps,
        if h.is_complete() {
            ""
        } else {
            " (INCOMPLETE: the writer did not finish)"
        }
    )?;
    writeln!(out, "time span: {:.3} ms", span_ns / 1e6)?;
    let refs = s.references();
    let pct = |x: u64| {
        if refs == 0 {
            0.0
        } else {
            100.0 * x as f64 / refs as f64
        }
    };
    writeln!(
        out,
        "references: {refs} ({} reads {:.1}%, {} writes {:.1}%)",
        s.reads,
        pct(s.reads),
        s.writes,
        pct(s.writes)
    )?;
    for (b, (r, w)) in &s.by_board {
        writeln!(out, "  board {b}: {r} reads, {w} writes")?;
    }
    if span_ns > 0.0 {
        writeln!(
            out,
            "average: {:.1} MB/s of memory traffic (64-byte lines), {:.1} MB/s of trace (4-byte records)",
            refs as f64 * 64.0 / span_ns * 1e3,
            refs as f64 * 4.0 / span_ns * 1e3
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "bandwidth over time (as the paper's Table 5), intervals of {} ms:",
        args.interval_ms
    )?;
    writeln!(
        out,
        "{:>12} {:>12} {:>10} {:>10} {:>12} {:>12}",
        "start_ms", "references", "reads", "writes", "mem MB/s", "trace MB/s"
    )?;
    let secs = tick.ns(interval_ticks) / 1e9;
    for iv in s.intervals() {
        row(
            out,
            tick.ms(iv.start_tick),
            iv.reads + iv.writes,
            iv.reads,
            iv.writes,
            secs,
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
    writeln!(out)?;
    if s.tags.is_empty() && s.commands.is_empty() {
        writeln!(out, "tags: none")?;
    } else {
        writeln!(out, "tags and inner commands seen:")?;
        let names = view.names();
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
            .take(50)
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
    }
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
    Ok(())
}
