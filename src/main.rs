//! `hmtt`: the command-line front end. Each `cmd` module parses one
//! subcommand's arguments, calls the library crates, which do the work,
//! and prints what they return; `shared` holds what several subcommands
//! share (number and size syntax, the progress bar, opening traces).

use std::io::IsTerminal as _;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

mod cmd;
mod output;
mod renamed;
mod shared;

#[derive(Parser)]
#[command(name = "hmtt", version, about = "Hybrid memory trace tool", long_about = None)]
struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// No progress bars or live status lines (warnings and errors still
    /// show).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the simulated traced machine and board.
    Sim(cmd::sim::Args),
    /// Run the board (golden model, or a core's Verilog under Verilator) on a DDR command stream file.
    Board(cmd::board::Args),
    /// Capture the board's packets from several ports to disk.
    Capture(cmd::capture::Args),
    /// Merge capture files into a physical-address trace.
    Merge(cmd::merge::Args),
    /// Compress a trace into a seekable archive (.hmttz).
    Pack(cmd::pack::PackArgs),
    /// Restore the exact trace file an archive holds.
    Unpack(cmd::pack::UnpackArgs),
    /// Print a trace as text or CSV.
    Dump(cmd::dump::Args),
    /// Write a trace for DRAMsim3, Ramulator 2, gem5, Perfetto, or as CSV or Parquet.
    Export(cmd::export::Args),
    /// Summarise a trace.
    Stats(cmd::stats::Args),
    /// Replay a trace into a virtual-address trace with the kernel logs.
    Replay(cmd::replay::Args),
    /// Analyse a trace: mix, bandwidth, banks, rows, pages, reuse, streams; pictures.
    Analyze(cmd::analyze::Args),
    /// Simulate, capture over loopback, merge and check against the ground truth.
    Demo(cmd::demo::Args),
    /// Build and flash the board's bitstreams.
    Firmware(cmd::firmware::Args),
    /// Inject an I-code through /dev/hmtt.
    Icode(cmd::icode::Args),
    /// Drain the kernel module's log to a file.
    Log(cmd::log::Args),
    /// Trace a command in Linux under QEMU TCG (hmtt.ko in the guest, a TCG plugin as the DIMM).
    Qemu(Box<cmd::qemu::Args>),
}

fn main() -> anyhow::Result<()> {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let cli = match parsed {
        Ok((cli, matches)) => {
            if let Some(command) = matches.subcommand_name() {
                renamed::warn_renamed_options(command, std::env::args_os());
            }
            cli
        }
        // Help and version into a file or pipe go through the commands'
        // standard output, so a full disk is an error there too.
        Err(e) if !e.use_stderr() && !std::io::stdout().is_terminal() => {
            return output::to_stdout("writing the help", |out| write!(out, "{}", e.render()));
        }
        Err(e) => e.exit(),
    };
    output::set_quiet(cli.quiet);
    let default_level = match cli.verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        // Its own report of a failed write goes to the same closed or full
        // standard error, with a panic; a log line is not worth either.
        .log_internal_errors(false)
        .init();
    // A panic caused by the zeros read from an input cut short under the
    // reader is that cut's fault: report the cut instead (mapped_file).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Err(cut) = hmtt_format::mapped_file::check_inputs() {
            eprintln!("Error: {cut}");
            std::process::exit(1);
        }
        default_hook(info);
    }));
    let result = match cli.command {
        Command::Sim(a) => cmd::sim::run(a),
        Command::Board(a) => cmd::board::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Merge(a) => cmd::merge::run(a),
        Command::Pack(a) => cmd::pack::run_pack(a),
        Command::Unpack(a) => cmd::pack::run_unpack(a),
        Command::Dump(a) => cmd::dump::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Stats(a) => cmd::stats::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Analyze(a) => cmd::analyze::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Firmware(a) => cmd::firmware::run(a),
        Command::Icode(a) => cmd::icode::run(a),
        Command::Log(a) => cmd::log::run(a),
        Command::Qemu(a) => cmd::qemu::run(*a),
    };
    // An input cut short under the reader voids whatever the command did
    // with it, success or error: the cut is the cause to report.
    if let Err(cut) = hmtt_format::mapped_file::check_inputs() {
        match &result {
            Err(e) if hmtt_format::mapped_file::is_input_cut(e.as_ref()) => {
                eprintln!("Error: {e:?}")
            }
            Err(e) => eprintln!("Error: {cut}\n\nThe command then failed: {e:?}"),
            Ok(()) => eprintln!("Error: {cut}"),
        }
        std::process::exit(1);
    }
    // A refused unfinished input has its own status, so scripts can tell
    // "run again with --allow-incomplete" from other failures.
    if let Err(e) = &result {
        if hmtt_format::input::InputError::is_incomplete(e.as_ref()) {
            eprintln!("Error: {e:?}");
            std::process::exit(shared::EXIT_INCOMPLETE_INPUT);
        }
    }
    result
}
