//! The RDHPU's generated Verilog: `ReuseDistanceUnit` at the boards'
//! shapes has no `always @(*)` that reads a signal before writing it and
//! is `verilator --lint-only -Wall` clean with the waivers of
//! `verilog/capture_lint.vlt` and `verilog/reuse_lint.vlt` (each
//! justified there).

mod verilog_support;

use hmtt_hdl::reuse::ReuseDistanceUnit;
use rust_hdl::prelude::*;
use verilog_support::*;

fn unit_verilog<const L: usize, const W: usize>() -> String {
    let mut uut = ReuseDistanceUnit::<L, W>::default();
    uut.connect_all();
    generate_verilog(&uut)
}

fn lint(name: &str, verilog: &str) {
    assert_no_read_before_write(name, verilog);
    verilator_lint(name, verilog, &["capture_lint.vlt", "reuse_lint.vlt"]);
}

/// The ECP5 board's lanes (L = 8) with the DSMU's widest line (48 bits:
/// 42-bit pages), and the iCE40's (L = 2) with `ddr-512m`'s 23-bit lines
/// (17-bit pages).
#[test]
fn reuse_verilog_is_lint_clean() {
    let (verilog, lint_name) = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| (unit_verilog::<8, 42>(), "reuse_l8_w42"))
        .unwrap()
        .join()
        .unwrap();
    lint(lint_name, &verilog);
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(unit_verilog::<2, 17>)
        .unwrap()
        .join()
        .unwrap();
    lint("reuse_l2_w17", &verilog);
}
