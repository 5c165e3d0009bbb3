//! Resources of the ECP5 board's core with and without the Statistic
//! Unit: `BoardTop<8, 3, 16, 10, 3>` (L = 8, E = 3, a 16,384-word TX FIFO,
//! 3 ports, `ddr3-4g` at DDR3-1600, as the firmware's `Ecp5Core`) and the
//! same with the unit (`S = 1`, 2 ranks, 16 banks, 26 line bits; board.md's
//! defaults `k = 20`, `s = 5`, a burst of 4), each generated as its own
//! top (every output a top-level port, so synthesis keeps all of it) and
//! through `yosys synth_ecp5 -abc9 -nowidelut` (the firmware flow's
//! script), synthesis only.
//!
//! `cargo run --release -p hmtt-hdl --example board_statistics_size -- DIR
//! without|with` writes `DIR/<which>/core.v`, synthesizes it
//! (`yosys.log`, the cell counts in `stat.txt`) and prints the LUT4,
//! CCU2C, flip-flop, DP16KD and LUT-RAM counts, the LUT4 equivalents (a
//! CCU2C counted as two), their share of the ECP5-85F's 83,640 LUTs, and
//! the synthesis's CPU seconds.

use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardStatistics, BoardTop, BoardTopConfig};
use rust_hdl::prelude::*;
use std::process::Command;

/// The ECP5-85F's LUT4s.
const ECP5_85F_LUTS: u64 = 83_640;

type Without = BoardTop<8, 3, 16, 10, 3>;
type With = BoardTop<8, 3, 16, 10, 3, 12, 13, 1, 2, 16, 26>;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "board-size".into()));
    let which = args.next().unwrap_or_else(|| "with".into());
    anyhow::ensure!(
        which == "with" || which == "without",
        "the second argument is `with` or `without` (the Statistic Unit)"
    );
    let dir = dir.join(&which);
    std::fs::create_dir_all(&dir)?;
    let config = BoardTopConfig::new(Geometry::ddr3_default(), 3, 0, 1250);
    let with = which == "with";
    // The unit's counters make a block too large for the main thread's
    // stack.
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            if with {
                let mut core = With::new(&config.with_statistics(BoardStatistics::default()));
                core.connect_all();
                generate_verilog(&core)
            } else {
                let mut core = Without::new(&config);
                core.connect_all();
                generate_verilog(&core)
            }
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("generate_verilog panicked"))?;
    std::fs::write(dir.join("core.v"), verilog)?;
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
        .arg("read_verilog core.v; synth_ecp5 -abc9 -nowidelut -top top; tee -q -o stat.txt stat")
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
        "BoardTop {which} the Statistic Unit: {lut4} LUT4, {ccu2c} CCU2C, {} FF, {} DP16KD, {} TRELLIS_DPR16X4",
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
