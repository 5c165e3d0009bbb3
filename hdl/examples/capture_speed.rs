//! Simulation speed of the capture chain, in DDR command clocks per second:
//! RustHDL (rust-hdl's simulator), Icarus Verilog and Verilator on the same
//! burst (a read or write every tCK into the 16K-word FIFO). A benchmark,
//! not a test: `cargo run --release -p hmtt-hdl --example capture_speed
//! [ticks]`.

#[path = "../tests/capture_support/mod.rs"]
mod capture_support;

use std::fmt::Write as _;
use std::process::Command as Process;
use std::time::Instant;

use capture_support::*;
use hmtt_board_model::BoardConfig;
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_hdl::capture::Capture;
use rust_hdl::prelude::*;

fn burst(ticks: u64) -> Vec<Command> {
    let mut cmds = vec![Command {
        cycle: 0,
        cmd: DdrCmd::Act,
        rank: 0,
        bank: 2,
        arg: 77,
    }];
    cmds.extend((1..ticks).map(|t| Command {
        cycle: t,
        cmd: if t % 3 == 0 { DdrCmd::Wr } else { DdrCmd::Rd },
        rank: 0,
        bank: 2,
        arg: ((t % 128) * 8) as u32,
    }));
    cmds
}

fn rust_hdl_speed<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
    ticks: u64,
) -> f64 {
    let start = Instant::now();
    let trace = run_capture::<L, E, B, AB>(
        capture_config(cfg),
        Drain {
            num: cfg.drain.num,
            den: cfg.drain.den,
        },
        &pin_commands(cmds),
        ticks / L as u64,
    );
    (trace.levels.len() * L) as f64 / start.elapsed().as_secs_f64()
}

/// Runs the testbench under Icarus and Verilator; returns command clocks/s
/// of each simulation run (compilation not included), None if a tool is
/// missing or fails.
fn verilog_speeds<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
    ticks: u64,
) -> (Option<f64>, Option<f64>) {
    let dir = std::env::temp_dir().join(format!("hmtt_capture_speed_l{L}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut uut = Capture::<L, E, B, AB>::new(capture_config(cfg));
    uut.connect_all();
    std::fs::write(dir.join("top.v"), generate_verilog(&uut)).unwrap();
    std::fs::write(dir.join("lanes.v"), lanes_wrapper(L)).unwrap();
    let mut text = String::new();
    for c in cmds {
        writeln!(text, "{c}").unwrap();
    }
    std::fs::write(dir.join("commands.txt"), text).unwrap();
    let tb = concat!(env!("CARGO_MANIFEST_DIR"), "/verilog/capture_tb.v");
    // The testbench includes the shared command-pin tasks beside it.
    let include = concat!("-I", env!("CARGO_MANIFEST_DIR"), "/verilog");
    let clocks = ticks / L as u64;
    let plusargs = [
        "+commands=commands.txt".to_string(),
        "+out=fifo.txt".to_string(),
        format!("+num={}", cfg.drain.num),
        format!("+den={}", cfg.drain.den),
        format!("+clocks={clocks}"),
    ];
    let timed = |program: &str, args: &[String]| -> Option<f64> {
        let start = Instant::now();
        let ok = Process::new(program)
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()?
            .status
            .success();
        ok.then(|| (clocks * L as u64) as f64 / start.elapsed().as_secs_f64())
    };
    let icarus = Process::new("iverilog")
        .args([
            "-g2005",
            &format!("-DLANES={L}"),
            include,
            "-o",
            "capture.vvp",
            tb,
            "lanes.v",
            "top.v",
        ])
        .current_dir(&dir)
        .status()
        .ok()
        .filter(|s| s.success())
        .and_then(|_| {
            let mut args = vec!["-n".to_string(), "capture.vvp".to_string()];
            args.extend(plusargs.iter().cloned());
            timed("vvp", &args)
        });
    let verilator = Process::new("verilator")
        .args([
            "--binary",
            "--timing",
            "-O3",
            "-Wno-fatal",
            "-Wno-lint",
            "-Wno-UNOPTFLAT",
        ])
        .arg(format!("-DLANES={L}"))
        .arg(include)
        .args([
            "--top-module",
            "capture_tb",
            "-o",
            "capture_sim",
            tb,
            "lanes.v",
            "top.v",
        ])
        .current_dir(&dir)
        .output()
        .ok()
        .filter(|o| {
            if !o.status.success() {
                let err = String::from_utf8_lossy(&o.stderr);
                let head: Vec<&str> = err
                    .lines()
                    .filter(|l| l.contains("Error"))
                    .take(5)
                    .collect();
                eprintln!("verilator build failed:\n{}", head.join("\n"));
            }
            o.status.success()
        })
        .and_then(|_| timed("obj_dir/capture_sim", &plusargs));
    let _ = std::fs::remove_dir_all(&dir);
    (icarus, verilator)
}

fn main() {
    let ticks: u64 = std::env::args()
        .nth(1)
        .map_or(20_000, |a| a.parse().expect("ticks"));
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    let cmds = burst(ticks);
    let show = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.0}"));
    println!(
        "capture chain, 16K FIFO, burst of {ticks} command clocks (command clocks per second)"
    );
    println!(
        "{:<4} {:>12} {:>12} {:>12}",
        "L", "RustHDL", "Icarus", "Verilator"
    );
    let r = rust_hdl_speed::<1, 1, 8, 11>(&cfg, &cmds, ticks);
    let (i, v) = verilog_speeds::<1, 1, 8, 11>(&cfg, &cmds, ticks);
    println!("{:<4} {:>12.0} {:>12} {:>12}", 1, r, show(i), show(v));
    let r = rust_hdl_speed::<2, 2, 8, 11>(&cfg, &cmds, ticks);
    let (i, v) = verilog_speeds::<2, 2, 8, 11>(&cfg, &cmds, ticks);
    println!("{:<4} {:>12.0} {:>12} {:>12}", 2, r, show(i), show(v));
    // A reference every tick is more than E = 3 per clock at L = 8: the
    // limit drops the rest, which costs the simulators the same.
    let r = rust_hdl_speed::<8, 3, 16, 10>(&cfg, &cmds, ticks);
    let (i, v) = verilog_speeds::<8, 3, 16, 10>(&cfg, &cmds, ticks);
    println!("{:<4} {:>12.0} {:>12} {:>12}", 8, r, show(i), show(v));
}
