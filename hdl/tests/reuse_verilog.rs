//! The RDHPU's generated Verilog: `ReuseDistanceUnit` at the boards'
//! shapes has no `always @(*)` that reads a signal before writing it and
//! is `verilator --lint-only -Wall` clean with the waivers of
//! `verilog/capture_lint.vlt` and `verilog/reuse_lint.vlt` (each
//! justified there); and under Icarus, fed the streams of `reuse_cosim`
//! clock by clock, it gives every record of the golden model.

mod reuse_support;
mod verilog_support;

use std::fmt::Write as _;
use std::process::Command as Process;

use hmtt_hdl::reuse::{ReuseDistanceUnit, DEPTH, HOT, MIN_INTERVAL, RECORD_LATENCY};
use reuse_support::*;
use rust_hdl::prelude::*;
use verilog_support::*;

fn unit_verilog<const L: usize, const W: usize>() -> String {
    let mut uut = ReuseDistanceUnit::<L, W>::default();
    uut.connect_all();
    generate_verilog(&uut)
}

fn lint(name: &str, verilog: &str) {
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

/// The testbench: reads a clock's inputs a line (`ref_valid close
/// hist_shift page_0 .. page_L-1`, hex) and writes the outputs of the
/// clock after it (`record_valid record_skipped hist_value` and the hot
/// pages and counts, decimal).
fn testbench(lanes: usize, page_bits: usize, clocks: usize) -> String {
    let mut v = String::new();
    writeln!(v, "module tb;").unwrap();
    writeln!(
        v,
        "reg clock = 0; reg [{}:0] ref_valid; reg close, hist_shift;",
        lanes - 1
    )
    .unwrap();
    writeln!(v, "reg [{}:0] page [0:{}];", page_bits - 1, lanes - 1).unwrap();
    writeln!(
        v,
        "wire record_valid, overrun; wire [31:0] record_skipped, hist_value;"
    )
    .unwrap();
    for j in 0..HOT {
        writeln!(v, "wire [{}:0] hp{j}; wire [31:0] hc{j};", page_bits - 1).unwrap();
    }
    write!(v, "top dut(.clock(clock), .ref_valid(ref_valid), .close(close), .hist_shift(hist_shift), .record_valid(record_valid), .record_skipped(record_skipped), .overrun(overrun), .hist_value(hist_value)").unwrap();
    for j in 0..lanes {
        write!(v, ", .ref_page${j}(page[{j}])").unwrap();
    }
    for j in 0..HOT {
        write!(v, ", .hot_page${j}(hp{j}), .hot_count${j}(hc{j})").unwrap();
    }
    writeln!(v, ");").unwrap();
    writeln!(v, "integer fin, fout, n, c, j;").unwrap();
    writeln!(v, "initial begin").unwrap();
    writeln!(
        v,
        "fin = $fopen(\"stimulus.txt\", \"r\"); fout = $fopen(\"outputs.txt\", \"w\");"
    )
    .unwrap();
    writeln!(v, "for (c = 0; c < {clocks}; c = c + 1) begin").unwrap();
    writeln!(
        v,
        "n = $fscanf(fin, \"%h %h %h\", ref_valid, close, hist_shift);"
    )
    .unwrap();
    writeln!(
        v,
        "for (j = 0; j < {lanes}; j = j + 1) n = $fscanf(fin, \" %h\", page[j]);"
    )
    .unwrap();
    writeln!(v, "#1 clock = 1; #1;").unwrap();
    write!(
        v,
        "$fwrite(fout, \"%0d %0d %0d\", record_valid, record_skipped, hist_value);"
    )
    .unwrap();
    for j in 0..HOT {
        write!(v, " $fwrite(fout, \" %0d %0d\", hp{j}, hc{j});").unwrap();
    }
    writeln!(v, " $fwrite(fout, \"\\n\");").unwrap();
    writeln!(v, "#1 clock = 0; #1;").unwrap();
    writeln!(v, "end").unwrap();
    writeln!(v, "$fclose(fout); $finish;").unwrap();
    writeln!(v, "end\nendmodule").unwrap();
    v
}

/// The records of the generated Verilog under Icarus.
fn icarus_records<const L: usize, const W: usize>(name: &str, clocks: &[Inputs]) -> Vec<Record> {
    require_tool("iverilog");
    let dir = work_dir(name);
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(unit_verilog::<L, W>)
        .unwrap()
        .join()
        .unwrap();
    std::fs::write(dir.join("top.v"), verilog).unwrap();
    let needed = RecordReader::clocks_needed(clocks);
    std::fs::write(dir.join("tb.v"), testbench(L, W, needed)).unwrap();
    // The histogram's chain shifts from each record's clock on.
    let mut shift = vec![false; needed];
    for (c, clock) in clocks.iter().enumerate() {
        if clock.close {
            let record = c + RECORD_LATENCY;
            shift[record..record + DEPTH].fill(true);
        }
    }
    let mut stimulus = String::new();
    for (c, &shift) in shift.iter().enumerate() {
        let input = clocks.get(c).cloned().unwrap_or_default();
        let mut pages = vec![0u64; L];
        let mut valid = 0u64;
        for &(lane, page) in &input.refs {
            valid |= 1 << lane;
            pages[lane] = page;
        }
        write!(
            stimulus,
            "{valid:x} {:x} {:x}",
            u8::from(input.close),
            u8::from(shift)
        )
        .unwrap();
        for p in pages {
            write!(stimulus, " {p:x}").unwrap();
        }
        stimulus.push('\n');
    }
    std::fs::write(dir.join("stimulus.txt"), stimulus).unwrap();
    let out = Process::new("iverilog")
        .args(["-g2005", "-o", "reuse.vvp", "tb.v", "top.v"])
        .current_dir(&dir)
        .output()
        .expect("run iverilog");
    assert!(
        out.status.success(),
        "iverilog failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Process::new("vvp")
        .args(["-n", "reuse.vvp"])
        .current_dir(&dir)
        .output()
        .expect("run vvp");
    assert!(
        out.status.success(),
        "vvp failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let text = std::fs::read_to_string(dir.join("outputs.txt")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut reader = RecordReader::new(clocks);
    let mut lines = 0;
    for (c, line) in text.lines().enumerate() {
        let f: Vec<u64> = line
            .split_whitespace()
            .map(|s| {
                s.parse()
                    .unwrap_or_else(|_| panic!("not a number {s:?} in {line:?}"))
            })
            .collect();
        assert_eq!(f.len(), 3 + 2 * HOT, "outputs line {line:?}");
        assert_eq!(
            shift[c],
            reader.shifts(),
            "the chain shifts as the reader reads"
        );
        let hot = (0..HOT)
            .map(|j| (f[3 + 2 * j], f[4 + 2 * j] as u32))
            .collect();
        reader.read(c + 1, f[0] == 1, f[1] as u32, hot, f[2] as u32);
        lines += 1;
    }
    assert_eq!(lines, needed);
    reader.records
}

/// The ECP5's lanes with `ddr3-4g`'s 20-bit pages, bursts (skipped
/// references) and intervals of two lengths; the iCE40's two lanes,
/// every clock full, pages drifting out of the stack.
#[test]
fn reuse_verilog_under_icarus_equals_the_model() {
    let mut base = 0;
    let clocks = stream(7, 900, &[MIN_INTERVAL, 400], |rng, _| {
        let n = [0, 1, 1, 1, 2, 3][rng.below(6) as usize];
        let mut refs: Vec<(usize, u64)> = (0..n)
            .map(|i| {
                (
                    2 * i + rng.below(2) as usize,
                    local_page(rng, &mut base, 30, (1 << 20) - 1),
                )
            })
            .collect();
        refs.sort();
        refs
    });
    let hw = icarus_records::<8, 20>("reuse_icarus_l8", &clocks);
    assert_records_equal(&hw, &model_records(8, &clocks));
    assert!(hw.len() >= 3 && hw.iter().any(|r| r.2.len() == HOT));
    let clocks = stream(8, 800, &[300, MIN_INTERVAL], |rng, c| {
        vec![(0, (c / 3) as u64 % 200), (1, rng.below(1 << 17))]
    });
    let hw = icarus_records::<2, 17>("reuse_icarus_l2", &clocks);
    assert_records_equal(&hw, &model_records(2, &clocks));
    assert!(hw.iter().any(|r| r.0[DEPTH] > 0 && r.1 > 0));
}
