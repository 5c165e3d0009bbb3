//! Flashing: the exact command line for openFPGALoader or iceprog, printed
//! on a dry run or executed with a clear error when the board or the tool
//! is missing.

use crate::board::{Board, Family};
use crate::error::FirmwareError;
use crate::tools::{self, Tool};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FlashTool {
    #[cfg_attr(feature = "clap", value(name = "openfpgaloader"))]
    OpenFpgaLoader,
    Iceprog,
}

impl FlashTool {
    pub fn tool(self) -> Tool {
        match self {
            FlashTool::OpenFpgaLoader => tools::OPENFPGALOADER,
            FlashTool::Iceprog => tools::ICEPROG,
        }
    }

    /// iceprog for the iCE40 (the HX8K breakout's FTDI), openFPGALoader otherwise.
    pub fn default_for(board: Board) -> FlashTool {
        match board.family() {
            Family::Ecp5 => FlashTool::OpenFpgaLoader,
            Family::Ice40 => FlashTool::Iceprog,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FlashOptions {
    pub board: Board,
    pub bitstream: PathBuf,
    pub tool: FlashTool,
    /// openFPGALoader's cable (`-c`); ignored by iceprog.
    pub cable: String,
    /// Write the configuration flash (persistent) instead of the FPGA's SRAM.
    pub to_flash: bool,
}

/// A command line, printable exactly as it would run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlashCommand {
    pub tool: Tool,
    pub args: Vec<String>,
}

impl fmt::Display for FlashCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tool.program)?;
        for a in &self.args {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                write!(f, " '{}'", a.replace('\'', r"'\''"))?;
            } else {
                write!(f, " {a}")?;
            }
        }
        Ok(())
    }
}

/// The default bitstream path of a build into `out_dir`.
pub fn default_bitstream(board: Board, out_dir: &Path) -> PathBuf {
    out_dir.join(format!("{}.{}", board.name(), board.bitstream_extension()))
}

pub fn command(options: &FlashOptions) -> FlashCommand {
    let bit = options.bitstream.to_string_lossy().into_owned();
    let args = match options.tool {
        FlashTool::OpenFpgaLoader => {
            let mut args = vec!["-c".to_string(), options.cable.clone()];
            if options.to_flash {
                args.push("--write-flash".into());
            }
            args.push(bit);
            args
        }
        FlashTool::Iceprog => {
            // iceprog writes the SPI flash by default; -S programs SRAM.
            let mut args = Vec::new();
            if !options.to_flash {
                args.push("-S".to_string());
            }
            args.push(bit);
            args
        }
    };
    FlashCommand {
        tool: options.tool.tool(),
        args,
    }
}

/// Runs the command: the bitstream must exist and the tool be installed; a
/// failure (typically no board or cable attached) carries the tool's output.
pub fn flash(options: &FlashOptions) -> Result<FlashCommand, FirmwareError> {
    let cmd = command(options);
    if !options.bitstream.is_file() {
        return Err(FirmwareError::BitstreamMissing(options.bitstream.clone()));
    }
    let program = cmd.tool.locate()?;
    tracing::info!(command = %cmd, "flashing");
    let output = Command::new(program)
        .args(&cmd.args)
        .output()
        .map_err(|e| FirmwareError::io("running", cmd.tool.program, e))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        return Err(FirmwareError::FlashFailed {
            tool: cmd.tool.program.to_string(),
            status: output.status.to_string(),
            output: text.trim().to_string(),
        });
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(board: Board, tool: FlashTool, to_flash: bool) -> FlashOptions {
        FlashOptions {
            board,
            bitstream: PathBuf::from("out dir/ecp5-85f.bit"),
            tool,
            cable: "ft2232".into(),
            to_flash,
        }
    }

    #[test]
    fn openfpgaloader_command_lines() {
        let c = command(&options(Board::Ecp5_85f, FlashTool::OpenFpgaLoader, false));
        assert_eq!(
            c.to_string(),
            "openFPGALoader -c ft2232 'out dir/ecp5-85f.bit'"
        );
        let c = command(&options(Board::Ecp5_85f, FlashTool::OpenFpgaLoader, true));
        assert_eq!(
            c.args,
            ["-c", "ft2232", "--write-flash", "out dir/ecp5-85f.bit"]
        );
    }

    #[test]
    fn iceprog_sram_unless_flash() {
        let c = command(&options(Board::Ice40Hx8k, FlashTool::Iceprog, false));
        assert_eq!(c.to_string(), "iceprog -S 'out dir/ecp5-85f.bit'");
        let c = command(&options(Board::Ice40Hx8k, FlashTool::Iceprog, true));
        assert_eq!(c.args, ["out dir/ecp5-85f.bit"]);
    }

    #[test]
    fn missing_bitstream_is_a_clear_error() {
        let mut o = options(Board::Ice40Hx8k, FlashTool::Iceprog, false);
        o.bitstream = PathBuf::from("/nonexistent/x.bin");
        let err = flash(&o).unwrap_err();
        assert!(matches!(err, FirmwareError::BitstreamMissing(_)), "{err}");
    }
}
