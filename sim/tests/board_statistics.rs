//! The Statistic Unit of the golden model (board.md "Statistic Unit")
//! against an independent recount: `scripts/statistics_recount.py`
//! reads the command file and the statistics packets of the capture files
//! and recounts every record's counters from the specification alone, on
//! an `hmtt sim` stream, on the saturated full-rate stream whose trace
//! drops references at the FIFO, and on one over the clock's limit, at
//! three interval lengths.

use std::io::Write;
use std::path::Path;
use std::process::Command as Process;

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::InnerCommand;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::{StatsAssembler, StatsPart, StatsRecord};
use hmtt_sim::board::output::CaptureWriters;
use hmtt_sim::board::{
    run_commands, run_commands_with_statistics, BoardConfig, BoardCounters, StatsConfig,
};
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
    s
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
    let cfg = SimConfig::default()
        .workload(Workload::Quicksort { n: 1000 })
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
