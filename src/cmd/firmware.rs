//! `hmtt firmware`: build, flash and report on the board's bitstreams.

use anyhow::Context as _;
use clap::Subcommand;
use hmtt_firmware::board::{Board, Units};
use hmtt_firmware::flash::{self, FlashOptions, FlashTool};
use hmtt_firmware::flow::{self, BuildOptions, BuildPaths};
use hmtt_firmware::report::{self, BuildReport};
use hmtt_firmware::tops::TopChoice;
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::write_atomically;

use crate::output::{to_stdout, JsonOut};

/// Arguments of `hmtt firmware`.
#[derive(clap::Args)]
#[command(
    after_help = "Example: hmtt firmware build --board ice40-hx8k --out build/fw\n         \
    hmtt firmware flash --board ice40-hx8k --out build/fw --dry-run\n         \
    hmtt firmware report --board ice40-hx8k --out build/fw"
)]
pub struct Args {
    #[command(subcommand)]
    command: FirmwareCommand,
}

#[derive(Subcommand)]
enum FirmwareCommand {
    /// Generate Verilog, synthesize, place and route, pack; write the bitstream and report.
    #[command(
        after_help = "Example: hmtt firmware build --board ecp5-85f --out build/fw --seed 1"
    )]
    Build(BuildArgs),
    /// Program the board with openFPGALoader or iceprog.
    #[command(
        after_help = "Example: hmtt firmware flash --board ecp5-85f --bitstream build/fw/ecp5-85f.bit --dry-run"
    )]
    Flash(FlashArgs),
    /// Print a build's report; optionally compare with and append to an fmax history.
    #[command(
        after_help = "Example: hmtt firmware report --board ecp5-85f --out build/fw --history bench/fmax-history.jsonl --record"
    )]
    Report(ReportArgs),
}

#[derive(clap::Args)]
struct BuildArgs {
    #[arg(long, value_enum)]
    board: Board,
    /// Output directory for the Verilog, logs, bitstream and report.
    #[arg(short, long, default_value = "build/firmware")]
    out: PathBuf,
    #[arg(long, value_enum, default_value = "board")]
    top: TopChoice,
    /// Optional units in the board's core: `statistics`, the Statistic
    /// Unit (ECP5 only; it does not yet meet the fabric clock).
    #[arg(long, value_enum, default_value = "none")]
    units: Units,
    /// nextpnr placer seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the report as JSON to this file ("-": standard output,
    /// instead of the text; a bare --json is its old spelling).
    #[arg(long, value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-",
          value_parser = JsonOut::parse)]
    json: Option<JsonOut>,
}

#[derive(clap::Args)]
struct FlashArgs {
    #[arg(long, value_enum)]
    board: Board,
    /// Bitstream to program (default: the build's in --out).
    #[arg(long)]
    bitstream: Option<PathBuf>,
    /// Build directory holding the default bitstream.
    #[arg(short, long, default_value = "build/firmware")]
    out: PathBuf,
    /// Programmer (default: iceprog for iCE40, openFPGALoader for ECP5).
    #[arg(long, value_enum)]
    tool: Option<FlashTool>,
    /// openFPGALoader cable.
    #[arg(long, default_value = "ft2232")]
    cable: String,
    /// Write the configuration flash instead of the FPGA's SRAM.
    #[arg(long)]
    to_flash: bool,
    /// Print the exact command and do nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(clap::Args)]
struct ReportArgs {
    #[arg(long, value_enum)]
    board: Board,
    #[arg(short, long, default_value = "build/firmware")]
    out: PathBuf,
    /// Write the report as JSON to this file ("-": standard output,
    /// instead of the text; a bare --json is its old spelling).
    #[arg(long, value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-",
          value_parser = JsonOut::parse)]
    json: Option<JsonOut>,
    /// JSON-lines fmax history to compare against.
    #[arg(long)]
    history: Option<PathBuf>,
    /// Append this build's figures to --history after comparing.
    #[arg(long, requires = "history")]
    record: bool,
    /// Commit to record with the figures.
    #[arg(long, default_value = "unknown")]
    commit: String,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        FirmwareCommand::Build(a) => build(a),
        FirmwareCommand::Flash(a) => flash_cmd(a),
        FirmwareCommand::Report(a) => report_cmd(a),
    }
}

fn build(a: BuildArgs) -> anyhow::Result<()> {
    let board = a.board;
    let mut options = BuildOptions::new(board, &a.out);
    options.seed = a.seed;
    options.top = a.top;
    options.units = a.units;
    let report = flow::build(&options).with_context(|| format!("building {board}"))?;
    print_report(&report, a.json.as_ref())?;
    if !report.pass {
        anyhow::bail!("{board}: a required clock is not met (see the report above)");
    }
    Ok(())
}

/// Prints the report, as JSON with `--json -`; `--json FILE` writes the
/// JSON there too.
fn print_report(report: &BuildReport, json: Option<&JsonOut>) -> anyhow::Result<()> {
    if let Some(path) = json.and_then(JsonOut::file) {
        write_atomically(path, format!("{}\n", report.to_json()).as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    to_stdout("writing the report", |out| match json {
        Some(JsonOut::Stdout) => writeln!(out, "{}", report.to_json()),
        _ => write!(out, "{}", report.to_text()),
    })
}

fn flash_cmd(a: FlashArgs) -> anyhow::Result<()> {
    let board = a.board;
    let options = FlashOptions {
        board,
        bitstream: a
            .bitstream
            .unwrap_or_else(|| flash::default_bitstream(board, &a.out)),
        tool: a.tool.unwrap_or_else(|| FlashTool::default_for(board)),
        cable: a.cable,
        to_flash: a.to_flash,
    };
    if a.dry_run {
        to_stdout("writing the report", |out| {
            writeln!(out, "{}", flash::command(&options))
        })?;
        return Ok(());
    }
    let cmd = flash::flash(&options)?;
    to_stdout("writing the report", |out| {
        writeln!(out, "programmed {board}: {cmd}")
    })?;
    Ok(())
}

fn report_path(board: Board, out: &Path) -> PathBuf {
    BuildPaths::new(board, out).report_json
}

fn report_cmd(a: ReportArgs) -> anyhow::Result<()> {
    let board = a.board;
    let path = report_path(board, &a.out);
    let report = BuildReport::load(&path)?;
    print_report(&report, a.json.as_ref())?;
    if let Some(history_path) = a.history {
        let (text, bad) =
            report::compare_with_history(&report, &history_path, &a.commit, a.record)?;
        if bad > 0 {
            tracing::warn!(bad, "skipped malformed lines in {}", history_path.display());
        }
        to_stdout("writing the report", |out| write!(out, "\n{text}"))?;
    }
    Ok(())
}
