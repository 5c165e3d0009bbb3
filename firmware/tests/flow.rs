//! Full flows (Verilog, yosys, nextpnr, packer, report) for both boards.
//! They need the FPGA tools (scripts/setup.sh installs them) and fail with
//! the missing tool's name and install command otherwise.

use hmtt_firmware::board::{Board, REQUIRED_MARGIN};
use hmtt_firmware::flow::{build, BuildOptions, BuildPaths};
use hmtt_firmware::report::BuildReport;
use hmtt_firmware::tops::TopChoice;
use std::path::PathBuf;

fn out_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("firmware-flow")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn run_flow(board: Board, top: TopChoice, name: &str) -> BuildReport {
    let mut options = BuildOptions::new(board, out_dir(name));
    options.top = top;
    let report = build(&options).unwrap_or_else(|e| panic!("{board} flow failed: {e}"));
    println!("{}", report.to_text());

    // The bitstream is the packer's output, of plausible size for the device.
    let bytes = std::fs::read(&report.bitstream).expect("bitstream written");
    assert_eq!(bytes.len() as u64, report.bitstream_bytes);
    match board {
        // Uncompressed iCE40-HX8K images are 135100 bytes.
        Board::Ice40Hx8k => assert_eq!(bytes.len(), 135_100),
        // A compressed ECP5 image starts with the 0xFF 0x00 comment block
        // and its preamble 0xBD 0xB3.
        Board::Ecp5_85f => {
            assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
            assert!(
                bytes.windows(2).any(|w| w == [0xBD, 0xB3]),
                "no ECP5 preamble"
            );
        }
    }

    // The report on disk is the one returned, it timed every required
    // clock and found every budgeted crossing, and PASS means the margin.
    let paths = BuildPaths::new(board, &options.out_dir);
    assert_eq!(BuildReport::load(&paths.report_json).unwrap(), report);
    assert!(paths.report_text.is_file());
    for clock in &report.clocks {
        let fmax = clock
            .fmax_mhz
            .unwrap_or_else(|| panic!("{board}: clock {} not timed", clock.domain));
        assert!(fmax > 10.0, "{board}: {} at {fmax} MHz", clock.domain);
        assert_eq!(
            clock.pass,
            fmax >= clock.required_mhz * (1.0 + REQUIRED_MARGIN) - 1e-9
        );
    }
    assert_eq!(report.transfers.len(), board.transfers().len());
    for t in &report.transfers {
        let delay = t
            .delay_ns
            .unwrap_or_else(|| panic!("{board}: no path {} -> {}", t.from, t.to));
        assert!(delay > 0.0 && delay < 100.0, "{board}: {delay} ns");
    }
    assert_eq!(
        report.pass,
        report.clocks.iter().all(|c| c.pass) && report.transfers.iter().all(|t| t.pass)
    );
    let ios = report.summary.ios.as_ref().expect("I/O count");
    // Every constrained port is placed: the constraint file's ports are the design's.
    let constrained = constrained_ports(board);
    assert_eq!(
        ios.used as usize, constrained,
        "{board}: I/O used vs constrained ports"
    );
    assert!(report.summary.logic_cells.as_ref().unwrap().used > 0);
    report
}

fn constrained_ports(board: Board) -> usize {
    let (_, text) = board.constraints();
    text.lines()
        .filter(|l| l.starts_with("LOCATE COMP") || l.starts_with("set_io "))
        .count()
}

#[test]
fn ice40_flow_probe_builds() {
    let report = run_flow(Board::Ice40Hx8k, TopChoice::FlowProbe, "ice40-probe");
    assert!(report.placeholder);
    assert_eq!(report.summary.plls.as_ref().unwrap().used, 1);
}

#[test]
fn ecp5_flow_probe_builds() {
    let report = run_flow(Board::Ecp5_85f, TopChoice::FlowProbe, "ecp5-probe");
    assert!(report.placeholder);
    assert_eq!(report.summary.plls.as_ref().unwrap().used, 1);
}

#[test]
// The longest test of the suite: on an idle 2-core machine yosys takes ~3
// min and nextpnr-ecp5 (YoWASP, one thread) ~12 min, half of it routing.
fn ecp5_board_builds() {
    let report = run_flow(Board::Ecp5_85f, TopChoice::Board, "ecp5-board");
    assert!(!report.placeholder);
    // The 16384-word TX FIFO and three port buffers live in block RAM.
    assert!(report.summary.block_rams.as_ref().unwrap().used >= 32);
}

#[test]
fn ice40_board_builds() {
    let report = run_flow(Board::Ice40Hx8k, TopChoice::Board, "ice40-board");
    assert!(!report.placeholder);
    // The 2048-word TX FIFO (16 EBR) and the 1024-word port FIFO (8 EBR)
    // are block RAM, and the whole core fits the HX8K's 32.
    let rams = report.summary.block_rams.as_ref().unwrap();
    assert!(rams.used >= 24 && rams.used <= rams.available, "{rams:?}");
}
