//! Runs one board's flow without the `hmtt` CLI (handy while the rest of the
//! workspace is being edited): `cargo run -p hmtt-firmware --example
//! build_board -- ice40-hx8k OUT_DIR [board|flow-probe] [seed]`.

use hmtt_firmware::{build, Board, BuildOptions, TopChoice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [board, out, rest @ ..] = args.as_slice() else {
        return Err("usage: build_board BOARD OUT_DIR [board|flow-probe] [seed]".into());
    };
    let mut options = BuildOptions::new(Board::from_name(board)?, out);
    if rest.first().map(String::as_str) == Some("flow-probe") {
        options.top = TopChoice::FlowProbe;
    }
    if let Some(seed) = rest.get(1) {
        options.seed = seed.parse()?;
    }
    let report = build(&options).map_err(|e| e.to_string())?;
    print!("{}", report.to_text());
    Ok(())
}
