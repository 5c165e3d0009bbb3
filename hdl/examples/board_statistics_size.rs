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

#[path = "support/ecp5_flow.rs"]
#[allow(dead_code)]
mod ecp5_flow;

use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardStatistics, BoardTop, BoardTopConfig};
use rust_hdl::prelude::*;

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
    let verilog = ecp5_flow::verilog_of(move || {
        if with {
            let mut core = With::new(&config.with_statistics(BoardStatistics::default()));
            core.connect_all();
            generate_verilog(&core)
        } else {
            let mut core = Without::new(&config);
            core.connect_all();
            generate_verilog(&core)
        }
    })?;
    std::fs::write(dir.join("core.v"), verilog)?;
    ecp5_flow::synthesize_and_report_size(
        &dir,
        "core.v",
        &format!("BoardTop {which} the Statistic Unit"),
    )
}
