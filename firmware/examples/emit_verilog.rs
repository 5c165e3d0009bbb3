//! Writes one board's top-level Verilog without running the tools (for
//! looking at synthesis per module): `cargo run -p hmtt-firmware --example
//! emit_verilog -- ice40-hx8k OUT.v [board|flow-probe]`.

use hmtt_firmware::{tops, Board, TopChoice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [board, out, rest @ ..] = args.as_slice() else {
        return Err("usage: emit_verilog BOARD OUT.v [board|flow-probe]".into());
    };
    let choice = match rest.first().map(String::as_str) {
        Some("flow-probe") => TopChoice::FlowProbe,
        _ => TopChoice::Board,
    };
    let top = tops::generate(Board::from_name(board)?, choice).map_err(|e| e.to_string())?;
    std::fs::write(out, top.verilog)?;
    Ok(())
}
