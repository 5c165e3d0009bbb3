//! The Statistic Unit's generated Verilog: `StatisticCounters` at the
//! boards' shapes has no `always @(*)` that reads a signal before writing
//! it and is `verilator --lint-only -Wall` clean with the waivers of
//! `verilog/capture_lint.vlt` and `verilog/statistics_lint.vlt` (each
//! justified there); and the capture chain with the unit on its taps,
//! under Icarus with `verilog/statistics_tb.v` reading a DDR command
//! stream file, gives every record of the golden model (start, end, `k`,
//! every counter) on the streams of `statistics_cosim`, and its readout,
//! walked one counter a clock, gives each counter two clocks after its
//! index.

mod capture_support;
mod statistics_support;
mod verilog_support;

use std::fmt::Write as _;
use std::process::Command as Process;

use capture_support::*;
use hmtt_board_model::{BoardConfig, DrainRate};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_hdl::dsmu::LineGeometry;
use hmtt_hdl::statistics::StatisticCounters;
use rust_hdl::prelude::*;
use statistics_support::*;
use verilog_support::*;

fn unit_verilog<
    const L: usize,
    const E: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    geometry: LineGeometry,
) -> String {
    // The unit's counters, each with its held records, make a block too
    // large for a test thread's stack.
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let mut uut = StatisticCounters::<L, E, R, NB, LB>::new(geometry, 20);
            uut.connect_all();
            generate_verilog(&uut)
        })
        .expect("generator thread")
        .join()
        .expect("generate_verilog")
}

fn lint(name: &str, verilog: &str) {
    verilator_lint(name, verilog, &["capture_lint.vlt", "statistics_lint.vlt"]);
}

/// The ECP5 board's shape: L = 8, E = 3, `ddr3-4g` (2 ranks of 8 banks,
/// 26 line bits); and the iCE40's: L = 2, E = 2, `ddr-512m`.
#[test]
fn statistics_verilog_is_lint_clean() {
    let ecp5 = line_geometry(&Geometry::preset("ddr3-4g").unwrap());
    lint("stats_l8_e3", &unit_verilog::<8, 3, 2, 16, 26>(ecp5));
    let ice40 = line_geometry(&Geometry::preset("ddr-512m").unwrap());
    assert_eq!(
        (ice40.rank_bits, ice40.bank_bits, ice40.line_bits()),
        (0, 2, 23)
    );
    lint("stats_l2_e2", &unit_verilog::<2, 2, 1, 4, 23>(ice40));
}

/// `stats_lanes`: packs the per-lane pins `pins$j$x` of the generated
/// `top` (a `CaptureStats`) into vectors for the testbench.
fn stats_wrapper(lanes: usize) -> String {
    let l = lanes;
    let outputs = [
        "record_valid",
        "record_start",
        "record_end",
        "record_k",
        "dropped_tick_valid",
        "dropped_tick",
        "aligned",
        "references_over_limit",
        "events_dropped",
    ];
    let mut v = String::new();
    writeln!(
        v,
        "module stats_lanes(clock, cs_n, ras_n, cas_n, we_n, cke, ba, addr, drain_num, drain_den, read_index, read_value, {});",
        outputs.join(", ")
    )
    .unwrap();
    writeln!(v, "input clock; input [{}:0] cs_n; input [{}:0] ras_n, cas_n, we_n, cke; input [{}:0] ba; input [{}:0] addr; input [31:0] drain_num, drain_den; input [9:0] read_index; output [31:0] read_value;", 4 * l - 1, l - 1, 4 * l - 1, 18 * l - 1).unwrap();
    writeln!(v, "output record_valid, dropped_tick_valid, aligned; output [63:0] record_start, record_end, dropped_tick; output [4:0] record_k; output [31:0] references_over_limit, events_dropped;").unwrap();
    write!(
        v,
        "top core(.clock(clock), .drain_num(drain_num), .drain_den(drain_den), .read_index(read_index), .read_value(read_value)"
    )
    .unwrap();
    for name in outputs {
        write!(v, ", .{name}({name})").unwrap();
    }
    for j in 0..l {
        write!(v, ", .pins${j}$cs_n(cs_n[{}:{}])", 4 * j + 3, 4 * j).unwrap();
        for pin in ["ras_n", "cas_n", "we_n", "cke"] {
            write!(v, ", .pins${j}${pin}({pin}[{j}])").unwrap();
        }
        write!(
            v,
            ", .pins${j}$ba(ba[{}:{}]), .pins${j}$addr(addr[{}:{}])",
            4 * j + 3,
            4 * j,
            18 * j + 17,
            18 * j
        )
        .unwrap();
    }
    writeln!(v, ");\nendmodule").unwrap();
    v
}

/// Runs the Icarus testbench on `cmds` until the counting stage's tick
/// reaches `stop`; returns the records and the capture chain's references
/// over the limit and events dropped.
fn icarus<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    cfg: &BoardConfig,
    cmds: &[Command],
    k: u8,
    stop: u64,
) -> (Vec<Record>, u64, u64) {
    require_tool("iverilog");
    // Tests of the same shape and `k` run side by side: a directory each.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = work_dir(&format!("stats_icarus_l{L}_e{E}_k{k}_{run}"));
    // The unit's 160-odd counters make a block too large for a test
    // thread's stack.
    let capture = capture_config(cfg);
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let mut uut = CaptureStats::<L, E, B, AB, R, NB, LB>::new(capture, k.into());
            uut.connect_all();
            generate_verilog(&uut)
        })
        .expect("generator thread")
        .join()
        .expect("generate_verilog");
    std::fs::write(dir.join("top.v"), verilog).unwrap();
    std::fs::write(dir.join("lanes.v"), stats_wrapper(L)).unwrap();
    let mut dump = String::new();
    for name in StatisticCounters::<L, E, R, NB, LB>::record_counter_names() {
        writeln!(dump, "$fwrite(out_file, \" %0d\", dut.core.su.{name});").unwrap();
    }
    std::fs::write(dir.join("record_counters.vh"), dump).unwrap();
    let names = StatisticCounters::<L, E, R, NB, LB>::record_held_names();
    let mut expect = String::from("case (read_index)\n");
    for (index, name) in names.iter().enumerate() {
        writeln!(expect, "  10'd{index}: read_expect = dut.core.su.{name};").unwrap();
    }
    expect.push_str("  default: read_expect = 32'd0;\nendcase\n");
    std::fs::write(dir.join("read_expect.vh"), expect).unwrap();
    let mut text = String::new();
    for c in cmds {
        writeln!(text, "{c}").unwrap();
    }
    std::fs::write(dir.join("commands.txt"), text).unwrap();
    let out = Process::new("iverilog")
        .args(["-g2005", &format!("-DLANES={L}"), "-I", "."])
        .arg(format!("-DCOUNTERS={}", names.len()))
        .args(["-o", "stats.vvp"])
        .arg(format!("-I{}", verilog_dir().display()))
        .arg(verilog_dir().join("statistics_tb.v"))
        .args(["lanes.v", "top.v"])
        .current_dir(&dir)
        .output()
        .expect("run iverilog");
    assert!(
        out.status.success(),
        "iverilog failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Process::new("vvp")
        .args([
            "-n",
            "stats.vvp",
            "+commands=commands.txt",
            "+out=records.txt",
        ])
        .arg(format!("+num={}", cfg.drain.num))
        .arg(format!("+den={}", cfg.drain.den))
        .arg(format!("+stop={stop}"))
        .current_dir(&dir)
        .output()
        .expect("run vvp");
    assert!(
        out.status.success(),
        "vvp failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = std::fs::read_to_string(dir.join("records.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (mut records, mut over, mut dropped, mut readout_nonzero) = (Vec::new(), None, None, None);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| -> u64 {
            s.parse()
                .unwrap_or_else(|_| panic!("not a number {s:?} in {line:?}"))
        };
        match f.as_slice() {
            ["R", start, end, k, counters @ ..] => records.push((
                num(start),
                num(end),
                num(k) as u8,
                counters.iter().map(|c| num(c) as u32).collect(),
            )),
            ["A", tick] => panic!("the taps' delay lines are misaligned at tick {tick}"),
            ["C", "references_over_limit", v] => over = Some(num(v)),
            ["C", "events_dropped", v] => dropped = Some(num(v)),
            ["C", "readout_nonzero", v] => readout_nonzero = Some(num(v)),
            ["X", index, expected, read] => panic!(
                "readout of counter {index}: {read}, not the snapshot {expected} of the clock of its index"
            ),
            _ => panic!("bad testbench output line {line:?}"),
        }
    }
    assert!(
        readout_nonzero.expect("readout_nonzero") > 0,
        "the readout must have read counts"
    );
    (
        records,
        over.expect("references_over_limit"),
        dropped.expect("events_dropped"),
    )
}

/// Runs the Icarus testbench and checks it against the golden model, as
/// `statistics_cosim` checks RustHDL's.
fn icarus_matches_golden<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    cfg: &BoardConfig,
    cmds: &[Command],
    k: u8,
) -> Vec<Record> {
    assert_eq!(cfg.fifo_depth, B << AB);
    check_against_model(cfg, L, E, cmds, k, |stop| {
        icarus::<L, E, B, AB, R, NB, LB>(cfg, cmds, k, stop)
    })
}

/// L = 8, E = 3 at the shortest interval: the limit and the FIFO drop,
/// and row hits, misses, conflicts and unused activations all occur.
#[test]
fn statistics_icarus_l8_e3_k6_limit_and_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = with_unused_activations(&random_stream(&cfg, 3, 1500, 2), 4, 7);
    let hw = icarus_matches_golden::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 6);
    assert_drops_and_row_outcomes(&cfg, &hw);
}

/// L = 2, E = 2, one rank, with commands outside the geometry and inner
/// commands that switch the unit and set `k`.
#[test]
fn statistics_icarus_l2_e2_k7_inner_commands() {
    let cfg = board_config(geometry_20(), 64, DrainRate { num: 1, den: 12 });
    let legal = random_stream(&cfg, 5, 900, 3);
    let cmds = with_interval_commands(&cfg, &with_out_of_range(&cfg, &legal, 9, 5), 7..=11, 3, 2);
    let hw = icarus_matches_golden::<2, 2, 8, 3, 1, 4, 20>(&cfg, &cmds, 7);
    assert_changes(&hw, 7);
}

/// L = 8 at the shortest interval on one bank: row outcomes across and
/// within clocks, past an interval's end, after REF and after RDA, as
/// worked out by hand ([`directed_row_stream`]).
#[test]
fn statistics_icarus_l8_e3_k6_directed_row_outcomes() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let (cmds, _) = directed_row_stream();
    let hw = icarus_matches_golden::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 6);
    assert_directed_outcomes(&cfg, &hw);
}
