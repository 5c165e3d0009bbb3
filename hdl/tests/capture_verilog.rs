//! The capture chain's generated Verilog: no `always @(*)` reads a signal
//! before writing it, `verilator --lint-only -Wall`
//! clean with the waivers of `verilog/capture_lint.vlt` (each justified
//! there), and the Icarus testbench `verilog/capture_tb.v`, reading a DDR
//! command stream file, produces the golden model's FIFO pushes, pops, fill
//! levels and modes clock by clock, and its counters (board.md 2.2), at
//! (L, E) = (2, 2) and (8, 3), the boards', and (1, 1).

mod capture_support;
mod verilog_support;

use std::fmt::Write as _;
use std::process::Command as Process;

use capture_support::*;
use hmtt_board_model::{Board, BoardConfig, DrainRate};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_hdl::capture::Capture;
use hmtt_hdl::encoder::GROUPS;
use rust_hdl::prelude::*;
use verilog_support::*;

/// The generated Verilog of a `Capture<L, E, B, AB>` for `cfg`.
fn capture_verilog<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
) -> String {
    let mut uut = Capture::<L, E, B, AB>::new(capture_config(cfg));
    uut.connect_all();
    generate_verilog(&uut)
}

/// `capture_lanes`: packs the per-lane pins `pins$j$x` and the per-group
/// push outputs `x$g` of the generated `top` into vectors for the
/// testbench.
fn capture_wrapper(lanes: usize) -> String {
    let (l, g) = (lanes, GROUPS);
    let single = [
        "drain_num",
        "drain_den",
        "push_tick_valid",
        "push_tick",
        "fill",
        "pop_valid",
        "pop_word",
        "tick",
        "tick_valid",
        "tracing",
        "tags_only",
        "protocol_errors",
        "unknown_commands",
        "out_of_range",
        "references_over_limit",
        "clocks_over_limit",
        "config_events",
        "events_dropped",
        "lost_words",
        "time_fillers",
        "time_overflows",
        "high_water",
    ];
    let pins = ["cs_n", "ras_n", "cas_n", "we_n", "cke", "ba", "addr"];
    let groups = ["push_count", "push_word0", "push_word1", "push_word2"];
    let mut v = String::new();
    let all: Vec<&str> = std::iter::once("clock")
        .chain(pins)
        .chain(groups)
        .chain(single)
        .collect();
    writeln!(v, "module capture_lanes({});", all.join(", ")).unwrap();
    writeln!(v, "input clock; input [{}:0] cs_n; input [{}:0] ras_n, cas_n, we_n, cke; input [{}:0] ba; input [{}:0] addr; input [31:0] drain_num, drain_den;", 4 * l - 1, l - 1, 4 * l - 1, 18 * l - 1).unwrap();
    writeln!(
        v,
        "output [{}:0] push_count; output [{}:0] push_word0, push_word1, push_word2;",
        2 * g - 1,
        32 * g - 1
    )
    .unwrap();
    writeln!(v, "output push_tick_valid, pop_valid, tick_valid, tracing, tags_only; output [63:0] push_tick, tick; output [31:0] fill, pop_word;").unwrap();
    writeln!(v, "output [31:0] {};", single[11..].join(", ")).unwrap();
    write!(v, "top core(.clock(clock)").unwrap();
    for name in single {
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
    for q in 0..g {
        write!(v, ", .push_count${q}(push_count[{}:{}])", 2 * q + 1, 2 * q).unwrap();
        for w in ["push_word0", "push_word1", "push_word2"] {
            write!(v, ", .{w}${q}({w}[{}:{}])", 32 * q + 31, 32 * q).unwrap();
        }
    }
    writeln!(v, ");\nendmodule").unwrap();
    v
}

fn lint(name: &str, verilog: &str) {
    verilator_lint(name, verilog, &["capture_lint.vlt"]);
}

#[test]
fn capture_verilog_is_lint_clean() {
    let cfg = board_config(
        Geometry::new(2, 4, 15, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    lint("lint_l1_e1", &capture_verilog::<1, 1, 8, 3>(&cfg));
    lint("lint_l2_e2", &capture_verilog::<2, 2, 8, 3>(&cfg));
    lint("lint_l8_e3", &capture_verilog::<8, 3, 16, 2>(&cfg));
}

/// Runs the Icarus testbench on `cmds` and returns what it saw.
fn icarus<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
    clocks: u64,
) -> CaptureTrace {
    require_tool("iverilog");
    let dir = work_dir(&format!("icarus_l{L}_e{E}"));
    std::fs::write(dir.join("top.v"), capture_verilog::<L, E, B, AB>(cfg)).unwrap();
    std::fs::write(dir.join("lanes.v"), capture_wrapper(L)).unwrap();
    let mut text = String::new();
    for c in cmds {
        writeln!(text, "{c}").unwrap();
    }
    std::fs::write(dir.join("commands.txt"), text).unwrap();
    let status = Process::new("iverilog")
        .args(["-g2005", &format!("-DLANES={L}"), "-o", "capture.vvp"])
        .arg(format!("-I{}", verilog_dir().display()))
        .arg(verilog_dir().join("capture_tb.v"))
        .args(["lanes.v", "top.v"])
        .current_dir(&dir)
        .status()
        .expect("run iverilog");
    assert!(status.success(), "iverilog failed");
    let start = std::time::Instant::now();
    let out = Process::new("vvp")
        .args([
            "-n",
            "capture.vvp",
            "+commands=commands.txt",
            "+out=fifo.txt",
        ])
        .arg(format!("+num={}", cfg.drain.num))
        .arg(format!("+den={}", cfg.drain.den))
        .arg(format!("+clocks={clocks}"))
        .current_dir(&dir)
        .output()
        .expect("run vvp");
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "vvp failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    eprintln!(
        "icarus L={L} E={E}: {clocks} fabric clocks, {} command clocks in {seconds:.2} s = {:.0} command clocks/s",
        clocks * L as u64,
        (clocks * L as u64) as f64 / seconds
    );
    let trace = parse_fifo_file(&std::fs::read_to_string(dir.join("fifo.txt")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    trace
}

fn parse_fifo_file(text: &str) -> CaptureTrace {
    let mut t = CaptureTrace::default();
    let hex = |w: &str| u32::from_str_radix(w, 16).unwrap();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["P", clock, word] => t.pushed.push((clock.parse().unwrap(), hex(word))),
            ["O", clock, word] => t.popped.push((clock.parse().unwrap(), hex(word))),
            ["F", clock, level] => {
                assert_eq!(t.levels.len() as u64, clock.parse::<u64>().unwrap());
                t.levels.push(level.parse().unwrap());
            }
            ["M", clock, flags] => {
                assert_eq!(t.modes.len() as u64, clock.parse::<u64>().unwrap());
                t.modes.push(flags.parse().unwrap());
            }
            ["C", name, value] => {
                let v = value
                    .parse()
                    .unwrap_or_else(|_| panic!("counter {name} is {value:?} at the end"));
                match *name {
                    "protocol_errors" => t.protocol_errors = v,
                    "unknown_commands" => t.unknown_commands = v,
                    "out_of_range" => t.out_of_range = v,
                    "references_over_limit" => t.references_over_limit = v,
                    "clocks_over_limit" => t.clocks_over_limit = v,
                    "config_events" => {}
                    "events_dropped" => t.events_dropped = v,
                    "lost_words" => t.lost_words = v,
                    "time_fillers" => t.time_fillers = v,
                    "time_overflows" => t.time_overflows = v,
                    "high_water" => t.high_water = v,
                    _ => panic!("unknown counter {name}"),
                }
            }
            _ => panic!("bad testbench output line {line:?}"),
        }
    }
    t
}

/// The golden model (`Board` with its probe, at `L` lanes and `E`
/// references per clock) over fabric clocks `0..clocks`: pushes and pops
/// with their clock, the fill level and the mode after every clock, the
/// counters. The stream must have ended and drained by then.
fn golden_trace(
    cfg: &BoardConfig,
    lanes: u64,
    refs: usize,
    cmds: &[Command],
    clocks: u64,
) -> CaptureTrace {
    let cfg = cfg.clone().with_lanes(lanes as u32, refs as u32);
    let mut board = Board::new(cfg).expect("valid board config");
    board.enable_probe();
    let mut trace = CaptureTrace::default();
    // The mode changes only with commands: feed them clock by clock.
    let mut next = 0;
    let mut flags = board.mode().header_flags();
    for k in 0..clocks {
        let end = cmds[next..]
            .iter()
            .position(|c| c.cycle >= (k + 1) * lanes)
            .map_or(cmds.len(), |p| next + p);
        if end > next {
            board.commands(&cmds[next..end]).expect("commands in order");
            next = end;
            flags = board.mode().header_flags();
        }
        trace.modes.push(flags);
    }
    assert_eq!(
        next,
        cmds.len(),
        "the stream must end before clock {clocks}"
    );
    board.finish();
    let probe = board.take_probe().expect("probe on");
    let word = |&(k, w): &(u64, hmtt_format::RecordWord)| (k, w.0);
    trace.pushed = probe.pushed.iter().map(word).collect();
    trace.popped = probe.popped.iter().map(word).collect();
    assert!(
        trace.popped.last().is_none_or(|p| p.0 < clocks),
        "the model popped after clock {clocks}"
    );
    trace.levels = probe.levels(0, clocks - 1);
    let c = board.counters();
    trace.protocol_errors = c.protocol_errors;
    trace.unknown_commands = c.unknown_commands;
    trace.out_of_range = c.out_of_range;
    trace.references_over_limit = c.references_over_limit;
    trace.clocks_over_limit = c.clocks_over_limit;
    trace.events_dropped = c.events_dropped;
    trace.lost_words = c.lost_words;
    trace.time_fillers = c.time_fillers;
    trace.time_overflows = c.time_overflows;
    trace.high_water = c.fifo_high_water;
    trace
}

/// Runs the testbench long enough for the golden model's last pop to come
/// out and compares everything clock by clock.
fn icarus_matches_golden<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
) -> CaptureTrace {
    assert_eq!(cfg.fifo_depth, B << AB, "FIFO depths differ");
    let last_tick = cmds.last().unwrap().cycle;
    let mut board = Board::new(cfg.clone().with_lanes(L as u32, E as u32)).unwrap();
    board.enable_probe();
    board.commands(cmds).unwrap();
    board.finish();
    let probe = board.take_probe().unwrap();
    let last_pop = probe.popped.last().map_or(0, |p| p.0);
    // The popped word comes out 11 clocks after its pins (capture.rs).
    let clocks = last_pop.max(last_tick / L as u64) + 16;
    let hw = icarus::<L, E, B, AB>(cfg, cmds, clocks);
    assert_eq!(hw.popped.len(), hw.pushed.len(), "the FIFO drained");
    let gold = golden_trace(cfg, L as u64, E, cmds, hw.levels.len() as u64);
    // The push side's observation (words held a clock for the fill level)
    // comes READ_LATENCY - 1 clocks ahead of the pop side.
    assert_eq!(
        hw.modes.len(),
        hw.levels.len() - 2,
        "pop side 2 clocks behind"
    );
    compare(&hw, &gold);
    hw
}

#[test]
fn icarus_testbench_matches_golden_l1_e1() {
    let cfg = board_config(
        Geometry::new(2, 4, 15, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let cmds = random_stream(&cfg, 11, 1000, 3);
    let hw = icarus_matches_golden::<1, 1, 8, 3>(&cfg, &cmds);
    assert!(
        hw.lost_words > 0,
        "the stream is meant to overflow the FIFO"
    );
}

#[test]
fn icarus_testbench_matches_golden_l2_e2() {
    let cfg = board_config(
        Geometry::new(2, 4, 15, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let cmds = random_stream(&cfg, 13, 1500, 3);
    let hw = icarus_matches_golden::<2, 2, 8, 3>(&cfg, &cmds);
    assert!(
        hw.lost_words > 0,
        "the stream is meant to overflow the FIFO"
    );
}

#[test]
fn icarus_testbench_matches_golden_l8_e3() {
    let cfg = board_config(
        Geometry::new(1, 3, 13, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let cmds = random_stream(&cfg, 12, 2000, 2);
    let hw = icarus_matches_golden::<8, 3, 16, 2>(&cfg, &cmds);
    assert!(
        hw.lost_words > 0,
        "the stream is meant to overflow the FIFO"
    );
    assert!(
        hw.references_over_limit > 0,
        "the stream is meant to exceed the references per clock"
    );
}
