//! The whole capture chain against hand-computed expectations (format.md
//! 4.1, board.md 2.2 steps 2-3), and its generated Verilog through yosys.

mod capture_support;

use capture_support::*;
use hmtt_format::record::{Opcode, RecordWord};
use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::dsmu::DDR3_4G;
use rust_hdl::prelude::*;

fn access(dt: u32, write: bool, line: u64) -> u32 {
    RecordWord::access(dt, write, line & 0xFF_FFFF).unwrap().0
}

fn control(dt: u32, op: Opcode, payload: u32) -> u32 {
    RecordWord::control(dt, op, payload).unwrap().0
}

#[test]
fn two_references_and_a_time_word_l1() {
    let g = DDR3_4G;
    let cfg = CaptureConfig::with_default_window(g);
    let cmds = [
        cmd(0, ACT, 0, 1, 42),
        cmd(11, RD, 0, 1, 16),
        cmd(100, WR, 0, 1, 24),
    ];
    let trace = run_capture::<1, 1, 8, 3>(cfg, Drain { num: 1, den: 10 }, &cmds, 400);
    let l1 = g.line(0, 42, 1, 16);
    let l2 = g.line(0, 42, 1, 24);
    assert_eq!(
        trace.pushed,
        vec![
            (11, access(11, false, l1)),
            (100, control(0, Opcode::Time, 1)),
            (100, access(25, true, l2)),
        ]
    );
    // A word pushed in clock k pops in k + 1 at the earliest; credit is
    // capped at den while empty: pops at 12, 101, then 110 (credit 1 after
    // the pop at 101, den = 10 again nine clocks later).
    let pops: Vec<u64> = trace.popped.iter().map(|p| p.0).collect();
    assert_eq!(pops, vec![12, 101, 110]);
    let popped: Vec<u32> = trace.popped.iter().map(|p| p.1).collect();
    let pushed: Vec<u32> = trace.pushed.iter().map(|p| p.1).collect();
    assert_eq!(popped, pushed);
    assert_eq!(trace.levels[10], 0);
    assert_eq!(trace.levels[11], 1);
    assert_eq!(trace.levels[12], 0);
    assert_eq!(trace.levels[99], 0);
    assert_eq!(trace.levels[100], 2);
    assert_eq!(trace.levels[101], 1);
    assert_eq!(trace.levels[109], 1);
    assert_eq!(trace.levels[110], 0);
}

#[test]
fn capture_verilog_passes_yosys() {
    let cfg = CaptureConfig::with_default_window(DDR3_4G);
    let mut uut = Capture::<1, 1, 8, 3>::new(cfg);
    uut.connect_all();
    yosys_validate("hmtt_capture_l1", &generate_verilog(&uut)).unwrap();
    let mut uut = Capture::<4, 2, 8, 3>::new(cfg);
    uut.connect_all();
    yosys_validate("hmtt_capture_l4_e2", &generate_verilog(&uut)).unwrap();
}
