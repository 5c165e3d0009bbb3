//! The capture chain's generated Verilog: `verilator --lint-only -Wall`
//! clean with the waivers of `verilog/capture_lint.vlt` (each justified
//! there), and the Icarus testbench `verilog/capture_tb.v`, reading a DDR
//! command stream file, produces the golden model's FIFO pushes, pops and
//! fill levels.

mod capture_support;
mod verilog_support;

use std::fmt::Write as _;
use std::process::Command as Process;

use capture_support::*;
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_hdl::capture::Capture;
use hmtt_sim::board::{BoardConfig, DrainRate};
use rust_hdl::prelude::*;
use verilog_support::*;

/// The generated Verilog of a `Capture<L, B, AB>` for `cfg`.
fn capture_verilog<const L: usize, const B: usize, const AB: usize>(cfg: &BoardConfig) -> String {
    let mut uut = Capture::<L, B, AB>::new(capture_config(cfg));
    uut.connect_all();
    generate_verilog(&uut)
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
    lint("lint_l1", &capture_verilog::<1, 8, 3>(&cfg));
    lint("lint_l4", &capture_verilog::<4, 32, 1>(&cfg));
}

/// Runs the Icarus testbench on `cmds` and returns what it saw.
fn icarus<const L: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
    clocks: u64,
) -> CaptureTrace {
    require_tool("iverilog");
    let dir = work_dir(&format!("icarus_l{L}"));
    std::fs::write(dir.join("top.v"), capture_verilog::<L, B, AB>(cfg)).unwrap();
    std::fs::write(dir.join("lanes.v"), lanes_wrapper(L)).unwrap();
    let mut text = String::new();
    for c in cmds {
        writeln!(text, "{c}").unwrap();
    }
    std::fs::write(dir.join("commands.txt"), text).unwrap();
    let status = Process::new("iverilog")
        .args(["-g2005", &format!("-DLANES={L}"), "-o", "capture.vvp"])
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
        "icarus L={L}: {clocks} fabric clocks, {} command clocks in {seconds:.2} s = {:.0} command clocks/s",
        clocks * L as u64,
        (clocks * L as u64) as f64 / seconds
    );
    let trace = parse_fifo_file(&std::fs::read_to_string(dir.join("fifo.txt")).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    trace
}

fn parse_fifo_file(text: &str) -> CaptureTrace {
    let mut t = CaptureTrace::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["P", tick, word] => t.pushed.push((
                tick.parse().unwrap(),
                u32::from_str_radix(word, 16).unwrap(),
            )),
            ["O", tick, word] => t.popped.push((
                tick.parse().unwrap(),
                u32::from_str_radix(word, 16).unwrap(),
            )),
            ["F", tick, level] => {
                assert_eq!(
                    t.levels.len() as u64,
                    tick.parse::<u64>().unwrap(),
                    "ticks in order"
                );
                t.levels.push(level.parse().unwrap());
            }
            ["C", name, value] => {
                let v = value.parse().unwrap();
                match *name {
                    "protocol_errors" => t.protocol_errors = v,
                    "unknown_commands" => t.unknown_commands = v,
                    "events_dropped" => t.events_dropped = v,
                    "lost_words" => t.lost_words = v,
                    "high_water" => t.high_water = v,
                    _ => panic!("unknown counter {name}"),
                }
            }
            _ => panic!("bad testbench output line {line:?}"),
        }
    }
    t
}

fn icarus_matches_golden<const L: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
) {
    let probe = golden(cfg, cmds, 0);
    let last_pop = probe.popped.last().map_or(0, |p| p.0);
    let last_tick = last_pop.max(cmds.last().unwrap().cycle);
    // Latency: pushes appear 5 clocks after the pins, pops 7.
    let clocks = last_tick / L as u64 + 12;
    let hw = icarus::<L, B, AB>(cfg, cmds, clocks);
    let gold = golden(cfg, cmds, hw.levels.len() as u64);
    assert_eq!(hw.pushed.len(), gold.pushed.len(), "number of pushed words");
    for (i, (h, g)) in hw.pushed.iter().zip(&gold.pushed).enumerate() {
        assert_eq!(
            h, g,
            "pushed word {i} (tick, word): icarus {h:x?} golden {g:x?}"
        );
    }
    assert_eq!(hw.popped, gold.popped, "popped words and their ticks");
    assert_eq!(hw.levels, gold.levels, "fill level per tick");
    assert_eq!(hw.protocol_errors, gold.protocol_errors);
    assert_eq!(hw.unknown_commands, gold.unknown_commands);
    assert_eq!(hw.events_dropped, gold.events_dropped);
    assert_eq!(hw.lost_words, gold.lost_words);
    assert_eq!(hw.high_water, gold.high_water);
    assert!(
        hw.lost_words > 0,
        "the stream is meant to overflow the FIFO"
    );
}

#[test]
fn icarus_testbench_matches_golden_l1() {
    let cfg = board_config(
        Geometry::new(2, 4, 15, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let cmds = random_stream(&cfg, 11, 1000, 3);
    icarus_matches_golden::<1, 8, 3>(&cfg, &cmds);
}

#[test]
fn icarus_testbench_matches_golden_l4() {
    let cfg = board_config(
        Geometry::new(1, 3, 13, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let cmds = random_stream(&cfg, 12, 2000, 2);
    icarus_matches_golden::<4, 32, 1>(&cfg, &cmds);
}
