//! Resources of the RDHPU alone at the ECP5 board's shape:
//! `ReuseDistanceUnit<8, 20>` (L = 8, `ddr3-4g`'s 20-bit pages), its
//! Verilog through `yosys synth_ecp5 -abc9 -nowidelut` (the firmware
//! flow's script), synthesis only (no place and route).
//!
//! `cargo run --release -p hmtt-hdl --example reuse_size -- DIR`
//! writes `DIR/unit.v`, synthesizes it (`DIR/yosys.log`, the cell counts
//! in `DIR/stat.txt`) and prints the LUT4, CCU2C, flip-flop, DP16KD and
//! LUT-RAM counts, the LUT4 equivalents (a CCU2C counted as two) and the
//! share of the ECP5-85F's 83,640 LUTs they take, and the synthesis's CPU
//! seconds.

use hmtt_hdl::reuse::ReuseDistanceUnit;
use rust_hdl::prelude::*;
use std::process::Command;

/// The ECP5-85F's LUT4s.
const ECP5_85F_LUTS: u64 = 83_640;

fn main() -> anyhow::Result<()> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "reuse-size".into()),
    );
    std::fs::create_dir_all(&dir)?;
    // 128 cells make a block too large for the main thread's stack.
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| {
            let mut unit = ReuseDistanceUnit::<8, 20>::default();
            unit.connect_all();
            generate_verilog(&unit)
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("generate_verilog panicked"))?;
    std::fs::write(dir.join("unit.v"), verilog)?;
    let yosys = Command::new("/usr/bin/time")
        .current_dir(&dir)
        .args([
            "-f",
            "%U %S",
            "-o",
            "yosys.time",
            "yosys",
            "-q",
            "-l",
            "yosys.log",
            "-p",
        ])
        .arg("read_verilog unit.v; synth_ecp5 -abc9 -nowidelut -top top; tee -q -o stat.txt stat")
        .status()?;
    anyhow::ensure!(yosys.success(), "yosys failed (see yosys.log)");
    let stat = std::fs::read_to_string(dir.join("stat.txt"))?;
    let cells = |name: &str| -> u64 {
        stat.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(name))
                    .then(|| f.next().and_then(|n| n.parse::<u64>().ok()))
                    .flatten()
            })
            .sum()
    };
    let cpu: f64 = std::fs::read_to_string(dir.join("yosys.time"))?
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse::<f64>().ok())
        .sum();
    let lut4 = cells("LUT4");
    let ccu2c = cells("CCU2C");
    let lut4_equivalent = lut4 + 2 * ccu2c;
    println!(
        "ReuseDistanceUnit<8, 20>: {lut4} LUT4, {ccu2c} CCU2C, {} FF, {} DP16KD, {} TRELLIS_DPR16X4",
        cells("TRELLIS_FF"),
        cells("DP16KD"),
        cells("TRELLIS_DPR16X4")
    );
    println!(
        "LUT4 + 2 x CCU2C = {lut4_equivalent} ({:.1} % of the ECP5-85F's {ECP5_85F_LUTS} LUTs); yosys {cpu:.0} CPU s",
        100.0 * lut4_equivalent as f64 / ECP5_85F_LUTS as f64
    );
    Ok(())
}
