//! Writes a board's top as `hmtt firmware build` generates it (module
//! `top`), for `firmware/ecp5-steps.sh`, which runs the flow's steps
//! apart so that routing experiments reuse one placement.
//!
//! `cargo run --release -p hmtt-firmware --example emit_verilog -- BOARD
//! OUT.v [UNITS]`: BOARD as `--board` names it (`ecp5-85f`,
//! `ice40-hx8k`), UNITS `none` (the default) or `statistics`.

use hmtt_firmware::board::Units;
use hmtt_firmware::{Board, TopChoice};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: emit_verilog BOARD OUT.v [none|statistics]";
    let board: Board = args.next().ok_or_else(|| anyhow::anyhow!(usage))?.parse()?;
    let out = args.next().ok_or_else(|| anyhow::anyhow!(usage))?;
    let units: Units = args.next().as_deref().unwrap_or("none").parse()?;
    let top = hmtt_firmware::tops::generate(board, TopChoice::Board, units)?;
    std::fs::write(&out, top.verilog)?;
    println!("{out}: {} (units {})", top.name, units.name());
    Ok(())
}
