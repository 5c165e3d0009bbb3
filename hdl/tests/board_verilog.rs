//! The whole board core's generated Verilog: yosys accepts it, no
//! `always @(*)` reads a signal before writing it, and
//! `verilator --lint-only -Wall` is clean with the capture chain's waivers
//! (`verilog/capture_lint.vlt`) and the packet path's
//! (`verilog/board_lint.vlt`), each justified there. Also the ECP5 flavour
//! of the RGMII transmitter against yosys' ECP5 cell library.

mod verilog_support;

use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
use hmtt_hdl::rgmii::{DdrFlavour, RgmiiTx};
use rust_hdl::prelude::*;
use std::process::Command;
use verilog_support::*;

fn board_verilog<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const DN: usize,
    const DNP1: usize,
>(
    geometry: Geometry,
) -> String {
    // The ECP5's core is too large for a test thread's stack.
    std::thread::Builder::new()
        .stack_size(1 << 28)
        .spawn(move || {
            let config = BoardTopConfig::new(geometry, P as u8, 0, 1250);
            let mut uut = BoardTop::<L, E, B, AB, P, DN, DNP1>::new(&config);
            uut.connect_all();
            generate_verilog(&uut)
        })
        .expect("generation thread")
        .join()
        .expect("generate_verilog")
}

fn lint(name: &str, verilog: &str) {
    verilator_lint(name, verilog, &["capture_lint.vlt", "board_lint.vlt"]);
}

/// The ECP5 board's core (board.md 2.2): DDR3-1600 at L = 8, E = 3, a
/// 16K-word TX FIFO in 16 banks (`2 + 3E` = 11 words a clock), three ports.
#[test]
fn board_top_l8_e3_verilog_passes_yosys_and_verilator() {
    let v = board_verilog::<8, 3, 16, 10, 3, 12, 13>(Geometry::preset("ddr3-4g").unwrap());
    yosys_validate("hmtt_board_top_l8_e3", &v).unwrap();
    lint("board_l8_e3", &v);
}

/// The iCE40 board's core: L = 2, E = 2, a 2K-word TX FIFO in 8 banks, one
/// port with a 1024-word data FIFO, DDR-512M geometry.
#[test]
fn board_top_l2_e2_verilog_passes_yosys_and_verilator() {
    let v = board_verilog::<2, 2, 8, 8, 1, 10, 11>(Geometry::preset("ddr-512m").unwrap());
    yosys_validate("hmtt_board_top_l2_e2", &v).unwrap();
    lint("board_l2_e2", &v);
}

/// L = 1 (DDR2-400 style), 16 banks and four ranks, two ports with
/// 1024-word data FIFOs.
#[test]
fn board_top_l1_e1_verilog_passes_yosys_and_verilator() {
    let v = board_verilog::<1, 1, 8, 11, 2, 10, 11>(Geometry::preset("ddr4-64g").unwrap());
    yosys_validate("hmtt_board_top_l1_e1", &v).unwrap();
    lint("board_l1_e1", &v);
}

#[test]
fn ecp5_rgmii_uses_oddrx1f_cells_yosys_knows() {
    let mut uut = RgmiiTx::new(DdrFlavour::Ecp5);
    uut.connect_all();
    let v = generate_verilog(&uut);
    assert_eq!(v.matches("ODDRX1F ").count(), 6);
    let dir = work_dir("rgmii_ecp5");
    std::fs::write(dir.join("top.v"), &v).unwrap();
    let out = Command::new("yosys")
        .current_dir(&dir)
        .arg("-p")
        .arg("read_verilog -lib +/ecp5/cells_bb.v; read_verilog top.v; hierarchy -check -top top; proc")
        .output()
        .expect("yosys is needed for this test");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !text.contains("ERROR"),
        "yosys:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
