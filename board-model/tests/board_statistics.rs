//! The Statistic Unit of the golden model (board.md "Statistic Unit")
//! against an independent recount: `tests/scripts/statistics_recount.py`
//! reads the command file and the statistics packets of the capture files
//! and recounts every record's counters from the specification alone, on
//! an `hmtt sim` stream, on the saturated full-rate stream whose trace
//! drops references at the FIFO, and on one over the clock's limit, at
//! three interval lengths; the same for the Reuse Distance & Hot Pages
//! Unit's histogram, skipped references and hot pages. And the
//! statistics-only mode against the full trace.

use std::io::Write;
use std::path::Path;
use std::process::Command as Process;

use hmtt_board_model::output::CaptureWriters;
use hmtt_board_model::{
    run_commands, run_commands_with_statistics, BoardConfig, BoardCounters, ReuseConfig,
    StatsConfig,
};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::InnerCommand;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::{StatsAssembler, StatsPart, StatsRecord};
use hmtt_sim::full_rate::{full_rate_stream, FullRate};
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::Workload;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/statistics_recount.py"
);

fn stats_config(k: u8) -> StatsConfig {
    StatsConfig {
        interval_log2: k,
        start_enabled: true,
        // Half the line: records of 4096 ticks and more all go out.
        share_log2: 1,
        burst_records: 4,
        reuse: None,
    }
}

fn write_commands(path: &Path, cmds: &[Command]) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for c in cmds {
        writeln!(
            f,
            "{} {} {} {} {}",
            c.cycle,
            c.cmd.mnemonic(),
            c.rank,
            c.bank,
            c.arg
        )
        .unwrap();
    }
}

/// Runs the board with the unit, writes its capture files and the command
/// file, runs the recount; returns its JSON summary, the records and the
/// counters.
fn recount(
    name: &str,
    cfg: &BoardConfig,
    cmds: &[Command],
    extra: &[&str],
) -> (serde_json::Value, Vec<StatsRecord>, BoardCounters) {
    let dir = tempfile::tempdir().unwrap();
    let (packets, stats, counters) = run_commands_with_statistics(cfg.clone(), cmds).unwrap();
    let mut w = CaptureWriters::create(dir.path(), cfg, 0, "test").unwrap();
    w.write(&packets).unwrap();
    w.write(&stats).unwrap();
    let files = w.finish().unwrap();
    let commands = dir.path().join("commands.txt");
    write_commands(&commands, cmds);
    let g = cfg.geometry;
    let mut reuse_args = Vec::new();
    if let Some(rc) = cfg.statistics.and_then(|sc| sc.reuse) {
        reuse_args = vec![
            "--config-window".to_string(),
            format!("{},{}", cfg.window.first_line(&g), cfg.window.lines(&g)),
            "--lanes".to_string(),
            cfg.lanes.to_string(),
            "--reuse-per-clock".to_string(),
            rc.refs_per_clock.to_string(),
        ];
    }
    let out = Process::new("python3")
        .arg(SCRIPT)
        .arg("--commands")
        .arg(&commands)
        .arg("--geometry")
        .arg(format!(
            "{},{},{},{}",
            g.rank_bits(),
            g.bank_bits(),
            g.row_bits(),
            g.col_line_bits()
        ))
        .args(extra)
        .args(&reuse_args)
        .args(files.iter().map(|f| &f.path))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{name}: the recount differs from the board:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut a = StatsAssembler::default();
    let mut records: Vec<StatsRecord> = stats
        .iter()
        .filter_map(|p| a.push(StatsPart::parse(&p.bytes).unwrap()))
        .collect();
    assert_eq!(a.finish(), 0);
    records.sort_by_key(|r| r.start_tick);
    (summary, records, counters)
}

/// The unit was on from reset and sent every record: the recount covers
/// the whole stream, and the board-only counters add up to the board's.
fn check_complete(name: &str, cfg: &BoardConfig, cmds: &[Command]) -> serde_json::Value {
    check_complete_counters(name, cfg, cmds).0
}

/// [`check_complete`] with the board's counters.
fn check_complete_counters(
    name: &str,
    cfg: &BoardConfig,
    cmds: &[Command],
) -> (serde_json::Value, BoardCounters) {
    let (s, records, n) = recount(name, cfg, cmds, &["--complete"]);
    let su = n.statistics.clone().unwrap();
    assert_eq!(su.records_unsent, 0, "{name}");
    assert_eq!(su.records_sent as usize, records.len(), "{name}");
    assert_eq!(su.intervals, su.records_sent + su.empty_intervals, "{name}");
    let k = cfg.statistics.unwrap().interval_log2;
    for r in &records {
        assert_eq!(r.start_tick % (1 << k), 0, "{name}: {r:?}");
        assert_eq!(r.end_tick - r.start_tick, 1 << k, "{name}");
        assert_eq!(r.interval_log2, k);
    }
    let u = |key: &str| s[key].as_u64().unwrap();
    assert_eq!(u("over_limit"), n.references_over_limit, "{name}");
    assert_eq!(u("lost_fifo"), n.events_dropped, "{name}");
    let per_kind = |c: DdrCmd| n.per_kind[DdrCmd::ALL.iter().position(|&x| x == c).unwrap()];
    assert_eq!(
        u("rd"),
        per_kind(DdrCmd::Rd) + per_kind(DdrCmd::Rda),
        "{name}"
    );
    assert_eq!(
        u("wr"),
        per_kind(DdrCmd::Wr) + per_kind(DdrCmd::Wra),
        "{name}"
    );
    assert_eq!(u("act"), per_kind(DdrCmd::Act), "{name}");
    assert_eq!(u("ref"), per_kind(DdrCmd::Ref), "{name}");
    assert_eq!(
        u("hit") + u("miss") + u("conflict"),
        u("rd") + u("wr"),
        "{name}"
    );
    (s, n)
}

/// The trace path is the one of a board without the unit whose drain is
/// the unit's remainder of the line: the unit only watches.
fn check_trace_unchanged(cfg: &BoardConfig, cmds: &[Command]) {
    let mut plain = cfg.clone();
    plain.statistics = None;
    let (with_unit, _, n) = run_commands_with_statistics(cfg.clone(), cmds).unwrap();
    let (without, m) = run_commands(plain, cmds.iter().copied()).unwrap();
    assert_eq!(with_unit.len(), without.len());
    assert!(with_unit
        .iter()
        .zip(&without)
        .all(|(a, b)| a.bytes == b.bytes));
    let mut n = n;
    n.statistics = None;
    assert_eq!(n, m);
}

fn sim_stream() -> (Geometry, Vec<Command>) {
    quicksort_stream(1000)
}

fn quicksort_stream(n: u64) -> (Geometry, Vec<Command>) {
    let cfg = SimConfig::default()
        .workload(Workload::Quicksort { n })
        .cache_off();
    let out = simulate(&cfg).unwrap();
    (cfg.geometry, out.commands[0].clone())
}

#[test]
fn the_units_counters_equal_a_recount_of_a_sim_stream() {
    let (g, cmds) = sim_stream();
    for k in [12, 15, 18] {
        let cfg = BoardConfig::new(g).with_statistics(stats_config(k));
        let s = check_complete(&format!("sim k={k}"), &cfg, &cmds);
        let u = |key: &str| s[key].as_u64().unwrap();
        assert!(u("hit") > 0 && u("miss") > 0 && u("pre") > 0, "{s}");
        assert!(u("records") > 1, "{s}");
    }
    check_trace_unchanged(
        &BoardConfig::new(g).with_statistics(stats_config(15)),
        &cmds,
    );
}

#[test]
fn the_units_counters_stay_exact_where_the_trace_drops() {
    let g = Geometry::ddr3_default();
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 20_000, 11));
    for k in [12, 15, 18] {
        // The ECP5 board: its FIFO overflows at the ports' rate.
        let cfg = BoardConfig::new(g)
            .with_lanes(8, 3)
            .with_statistics(stats_config(k));
        let s = check_complete(&format!("saturated k={k}"), &cfg, &cmds);
        let u = |key: &str| s[key].as_u64().unwrap();
        assert!(u("lost_fifo") > 1_000, "{s}");
        assert_eq!(u("rd") + u("wr"), 20_000);
        // Two references a clock are too few at eight lanes.
        let cfg = BoardConfig::new(g)
            .with_lanes(8, 2)
            .with_statistics(stats_config(k));
        let s = check_complete(&format!("over the limit k={k}"), &cfg, &cmds);
        assert!(s["over_limit"].as_u64().unwrap() > 0, "{s}");
    }
    check_trace_unchanged(
        &BoardConfig::new(g)
            .with_lanes(8, 3)
            .with_statistics(stats_config(12)),
        &cmds,
    );
}

#[test]
fn records_the_path_cannot_carry_are_counted_and_reported() {
    let g = Geometry::ddr3_default();
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 20_000, 11));
    // 2^10 ticks at 1/32 of the line: far fewer records than intervals.
    let sc = StatsConfig {
        interval_log2: 10,
        share_log2: 5,
        ..stats_config(10)
    };
    let cfg = BoardConfig::new(g).with_lanes(8, 3).with_statistics(sc);
    let (s, records, n) = recount("unsent", &cfg, &cmds, &[]);
    let su = n.statistics.unwrap();
    assert!(su.records_unsent > su.records_sent, "{su:?}");
    assert_eq!(
        su.intervals,
        su.records_sent + su.records_unsent + su.empty_intervals
    );
    let reported: u64 = records.iter().map(|r| u64::from(r.unsent_before)).sum();
    assert_eq!(reported + su.unsent_pending, su.records_unsent);
    assert_eq!(s["unsent_reported"].as_u64().unwrap(), reported);
}

/// A config-space reference: ACT of the window's row, RD of the event's
/// column, PRE, on rank `rank`, bank `bank`.
fn inner_command(cfg: &BoardConfig, c: InnerCommand, tick: u64) -> [Command; 3] {
    let g = cfg.geometry;
    let line = cfg.window.line_of_event(&g, c.index()).unwrap();
    let d = g.coord(line);
    let cmd = |cycle, cmd, arg| Command {
        cycle,
        cmd,
        rank: d.rank,
        bank: d.bank,
        arg,
    };
    [
        cmd(tick, DdrCmd::Act, d.row),
        cmd(tick + 11, DdrCmd::Rd, d.col_line << 3),
        cmd(tick + 30, DdrCmd::Pre, 0),
    ]
}

#[test]
fn inner_commands_switch_the_unit_and_cut_its_intervals() {
    let (g, stream) = sim_stream();
    let sc = StatsConfig {
        start_enabled: false,
        ..stats_config(12)
    };
    let cfg = BoardConfig::new(g).with_statistics(sc);
    let mut cmds = Vec::new();
    cmds.extend(inner_command(&cfg, InnerCommand::StatsOn, 100));
    cmds.extend(inner_command(&cfg, InnerCommand::StatsInterval(13), 200));
    let shift = 1000;
    cmds.extend(stream.iter().map(|c| Command {
        cycle: c.cycle + shift,
        ..*c
    }));
    let last = cmds.last().unwrap().cycle;
    cmds.extend(inner_command(&cfg, InnerCommand::StatsOff, last + 5000));
    // Counted from the clock after STATS_ON's RD (tick 111, clock 13 of 8
    // ticks) to the clock after STATS_OFF's.
    let on = (111 / 8 + 1) * 8;
    let cut = (211 / 8 + 1) * 8;
    let off = ((last + 5011) / 8 + 1) * 8;
    let window = format!("{on},{off}");
    let (s, records, n) = recount("inner", &cfg, &cmds, &["--complete", "--window", &window]);
    assert_eq!(records[0].start_tick, on);
    assert_eq!(records[0].end_tick, cut);
    assert_eq!(records[0].interval_log2, 12);
    assert_eq!(records[1].start_tick, cut);
    assert_eq!(records[1].end_tick, 1 << 13);
    assert_eq!(records[1].interval_log2, 13);
    assert_eq!(records.last().unwrap().end_tick, off);
    let su = n.statistics.unwrap();
    assert_eq!(su.records_unsent, 0);
    // The first ACT and RD (before the unit was on) are all it missed.
    assert_eq!(s["act"].as_u64().unwrap() + 1, n.per_kind[0]);
}

fn with_reuse(k: u8, refs_per_clock: u32, hot_pages: u8) -> StatsConfig {
    StatsConfig {
        reuse: Some(ReuseConfig {
            start_enabled: true,
            hot_pages,
            refs_per_clock,
        }),
        ..stats_config(k)
    }
}

/// The RDHPU's totals of a recount summary: references it took and
/// skipped, its records.
fn reuse_totals(s: &serde_json::Value) -> (u64, u64, u64) {
    let taken = s["reuse_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_u64().unwrap())
        .sum();
    (
        taken,
        s["reuse_skipped"].as_u64().unwrap(),
        s["reuse_records"].as_u64().unwrap(),
    )
}

#[test]
fn the_reuse_units_histogram_and_hot_pages_equal_a_recount_of_a_sim_stream() {
    let (g, cmds) = sim_stream();
    // A record with the RDHPU's section takes more than 4096 ticks of
    // the path's half line: intervals of 2^13 ticks and more all go out.
    for (k, hot) in [(13, 8), (15, 16), (18, 64)] {
        let cfg = BoardConfig::new(g).with_statistics(with_reuse(k, 3, hot));
        let (s, n) = check_complete_counters(&format!("sim reuse k={k}"), &cfg, &cmds);
        let (taken, skipped, records) = reuse_totals(&s);
        // Every reference but the config window's, none skipped.
        assert_eq!(skipped, 0, "{s}");
        assert!(n.config_events > 0);
        assert_eq!(
            taken + n.config_events,
            s["rd"].as_u64().unwrap() + s["wr"].as_u64().unwrap()
        );
        assert_eq!(records, s["records"].as_u64().unwrap());
        let h = s["reuse_histogram"].as_array().unwrap();
        assert!(
            h[0].as_u64().unwrap() > 0 && h[128].as_u64().unwrap() > 0,
            "{s}"
        );
        assert!(h[1..128].iter().any(|x| x.as_u64().unwrap() > 0), "{s}");
        assert!(s["reuse_hot_pages"].as_u64().unwrap() >= records, "{s}");
    }
    check_trace_unchanged(
        &BoardConfig::new(g).with_statistics(with_reuse(15, 3, 8)),
        &cmds,
    );
}

#[test]
fn the_reuse_unit_counts_what_it_skips_where_the_trace_drops() {
    let g = Geometry::ddr3_default();
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 20_000, 11));
    for k in [13, 15, 18] {
        let cfg = BoardConfig::new(g)
            .with_lanes(8, 3)
            .with_statistics(with_reuse(k, 3, 8));
        let s = check_complete(&format!("saturated reuse k={k}"), &cfg, &cmds);
        assert!(s["lost_fifo"].as_u64().unwrap() > 1_000, "{s}");
        assert_eq!(reuse_totals(&s).0, 20_000, "{s}");
        // One reference a clock: the stack skips, and says so.
        let cfg = BoardConfig::new(g)
            .with_lanes(8, 3)
            .with_statistics(with_reuse(k, 1, 8));
        let s = check_complete(&format!("one a clock k={k}"), &cfg, &cmds);
        let (taken, skipped, _) = reuse_totals(&s);
        assert!(skipped > 0, "{s}");
        assert_eq!(taken + skipped, 20_000, "{s}");
    }
    // Records the path cannot carry: the stack goes on, the recount
    // starts each record's counts at its interval's start.
    let sc = StatsConfig {
        interval_log2: 10,
        share_log2: 5,
        ..with_reuse(10, 3, 8)
    };
    let cfg = BoardConfig::new(g).with_lanes(8, 3).with_statistics(sc);
    let (s, _, n) = recount("unsent reuse", &cfg, &cmds, &[]);
    assert!(n.statistics.unwrap().records_unsent > 0);
    assert!(reuse_totals(&s).2 > 0, "{s}");
}

/// References to inner commands `first` and `then` in the clock of ticks
/// `base..base + 8` (`base` a multiple of 8), the second's line last: the
/// change applies at `base + 8`.
fn inner_pair(
    cfg: &BoardConfig,
    first: InnerCommand,
    then: InnerCommand,
    base: u64,
) -> Vec<Command> {
    inner_commands(cfg, &[first, then], base)
}

/// References to inner commands `cs` (at most 3) in the clock of ticks
/// `base..base + 8`, in order.
fn inner_commands(cfg: &BoardConfig, cs: &[InnerCommand], base: u64) -> Vec<Command> {
    let g = cfg.geometry;
    let at = |c: InnerCommand| g.coord(cfg.window.line_of_event(&g, c.index()).unwrap());
    let a = at(cs[0]);
    let cmd = |cycle, cmd, arg| Command {
        cycle: base + cycle,
        cmd,
        rank: a.rank,
        bank: a.bank,
        arg,
    };
    let mut out = vec![cmd(0, DdrCmd::Act, a.row)];
    for (i, &c) in cs.iter().enumerate() {
        let d = at(c);
        assert_eq!((a.rank, a.bank, a.row), (d.rank, d.bank, d.row));
        out.push(cmd(2 + i as u64, DdrCmd::Rd, d.col_line << 3));
    }
    out.push(cmd(6, DdrCmd::Pre, 0));
    out
}

/// `stream` moved to start 1000 ticks after `base`; the next base.
fn stream_after(cmds: &mut Vec<Command>, stream: &[Command], base: u64) -> u64 {
    cmds.extend(stream.iter().map(|c| Command {
        cycle: c.cycle + base + 1000,
        ..*c
    }));
    (cmds.last().unwrap().cycle + 2000) & !7
}

#[test]
fn reuse_inner_commands_switch_the_unit_and_cut_its_intervals() {
    let (g, stream) = sim_stream();
    let sc = StatsConfig {
        start_enabled: false,
        reuse: Some(ReuseConfig {
            start_enabled: false,
            ..ReuseConfig::default()
        }),
        ..stats_config(13)
    };
    let cfg = BoardConfig::new(g).with_statistics(sc);
    // The RDHPU alone, then both, then the counters alone.
    let mut cmds = inner_pair(&cfg, InnerCommand::ReuseOn, InnerCommand::InsertTag, 96);
    let both = stream_after(&mut cmds, &stream, 96);
    cmds.extend(inner_pair(
        &cfg,
        InnerCommand::StatsOn,
        InnerCommand::InsertTag,
        both,
    ));
    let counters = stream_after(&mut cmds, &stream, both);
    cmds.extend(inner_pair(
        &cfg,
        InnerCommand::ReuseOff,
        InnerCommand::InsertTag,
        counters,
    ));
    stream_after(&mut cmds, &stream, counters);
    let (both, counters) = (both + 8, counters + 8);
    let (s, records, n) = recount(
        "reuse inner",
        &cfg,
        &cmds,
        &["--reuse-on", &format!("104,{counters}")],
    );
    assert_eq!(n.statistics.as_ref().unwrap().records_unsent, 0);
    assert_eq!(records[0].start_tick, 104);
    let phase = |r: &StatsRecord| (!r.counters.is_empty(), r.reuse.is_some());
    for r in &records {
        let want = if r.end_tick <= both {
            (false, true)
        } else if r.start_tick >= both && r.end_tick <= counters {
            (true, true)
        } else {
            assert!(r.start_tick >= counters, "{r:?}");
            (true, false)
        };
        assert_eq!(phase(r), want, "[{}, {})", r.start_tick, r.end_tick);
    }
    assert!(records.iter().any(|r| r.end_tick == both));
    assert!(records.iter().any(|r| r.start_tick == both));
    assert!(records.iter().any(|r| r.end_tick == counters));
    assert!(records.iter().any(|r| r.start_tick == counters));
    // The stream twice under the RDHPU, every reference taken but the
    // config window's (the stream's, a third of those not of the pairs).
    assert_eq!(reuse_totals(&s).1, 0);
    let refs = stream
        .iter()
        .filter(|c| matches!(c.cmd, DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra))
        .count() as u64;
    let window = (n.config_events - 6) / 3;
    assert_eq!(reuse_totals(&s).0, 2 * (refs - window));
}

/// Statistics-only mode (STATS_ONLY): the same statistics records as the
/// full trace, at a small part of its bytes.
#[test]
fn statistics_only_mode_sends_under_a_percent_of_the_full_trace_with_equal_counters() {
    let (g, stream) = quicksort_stream(10_000);
    let sc = StatsConfig {
        start_enabled: false,
        reuse: Some(ReuseConfig {
            start_enabled: false,
            ..ReuseConfig::default()
        }),
        ..StatsConfig::default()
    };
    let cfg = BoardConfig::new(g).with_statistics(sc);
    let run = |mut cmds: Vec<Command>| {
        cmds.extend(stream.iter().map(|c| Command {
            cycle: c.cycle + 1000,
            ..*c
        }));
        run_commands_with_statistics(cfg.clone(), &cmds).unwrap()
    };
    // Both switch the units on at tick 104; the full trace goes back to
    // all references in the same clock. Both end the clock on the same
    // line (the toggles count from it).
    use InnerCommand::{InsertTag, StatsOnly, TraceAll};
    let (trace, stats, full) = run(inner_commands(&cfg, &[StatsOnly, TraceAll, InsertTag], 96));
    let (only_trace, only_stats, only) =
        run(inner_commands(&cfg, &[StatsOnly, InsertTag, InsertTag], 96));
    let bytes = |t: &[hmtt_board_model::BoardPacket], s: &[hmtt_board_model::BoardPacket]| {
        t.iter().chain(s).map(|p| p.bytes.len() as u64).sum::<u64>()
    };
    let (full_bytes, only_bytes) = (bytes(&trace, &stats), bytes(&only_trace, &only_stats));
    assert_eq!(full.events_dropped + full.references_over_limit, 0);
    assert!(full.access_events > 100_000, "{full:?}");
    assert_eq!(only.access_events, 0);
    assert!(
        only_bytes * 100 < full_bytes,
        "statistics-only {only_bytes} bytes, the full trace {full_bytes}"
    );
    let records = |s: &[hmtt_board_model::BoardPacket]| {
        let mut a = StatsAssembler::default();
        let mut r: Vec<StatsRecord> = s
            .iter()
            .filter_map(|p| a.push(StatsPart::parse(&p.bytes).unwrap()))
            .collect();
        assert_eq!(a.finish(), 0);
        r.sort_by_key(|r| r.start_tick);
        r
    };
    let (a, b) = (records(&stats), records(&only_stats));
    assert!(a.len() > 1);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!(x.reuse.is_some() && !x.counters.is_empty());
        assert_eq!(x.flags & 2, 0);
        assert_eq!(y.flags & 2, 2, "tags-only mode in the header");
        assert_eq!((&x.counters, &x.reuse), (&y.counters, &y.reuse));
        assert_eq!((x.start_tick, x.end_tick), (y.start_tick, y.end_tick));
    }
}
