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

#[path = "support/ecp5_flow.rs"]
#[allow(dead_code)]
mod ecp5_flow;

use hmtt_hdl::reuse::ReuseDistanceUnit;
use rust_hdl::prelude::*;

fn main() -> anyhow::Result<()> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "reuse-size".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let verilog = ecp5_flow::verilog_of(|| {
        let mut unit = ReuseDistanceUnit::<8, 20>::default();
        unit.connect_all();
        generate_verilog(&unit)
    })?;
    std::fs::write(dir.join("unit.v"), verilog)?;
    ecp5_flow::synthesize_and_report_size(&dir, "unit.v", "ReuseDistanceUnit<8, 20>")
}
