//! `hmtt board`: runs the board on a DDR command stream file and writes its
//! packets as capture files, one per port, with a JSON summary. The engine
//! is the golden model or a firmware core's generated Verilog under
//! Verilator (`hmtt_firmware::engine`).

use anyhow::Context;
use hmtt_board_model::output::capture_file_name;
use hmtt_board_model::BoardConfig;
use hmtt_firmware::engine::{self, BoardRun, CoreSpec};
use hmtt_sim::send::{PacketSender, SenderOptions};

use crate::output::{quiet, to_stdout};
use crate::shared::text_input;

mod args;
pub use args::{Args, EngineArg};

/// The firmware core the run takes its build parameters from, if any.
fn core(args: &Args) -> Option<CoreSpec> {
    engine::core_of_run(args.core, args.engine == EngineArg::Verilator)
}

/// The board's configuration: the options as the library takes them
/// ([`hmtt_board_model::BoardOptions`]), applied to the core's or board.md's defaults.
fn config(args: &Args, core: Option<&CoreSpec>) -> anyhow::Result<BoardConfig> {
    Ok(engine::board_config(core, &args.options()?)?)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let core = core(&args);
    let cfg = config(&args, core.as_ref())?;
    let name = args.commands.display().to_string();
    // A bar over the bytes of the command file, for long streams (the
    // Verilator engine is some thousand times slower than the model).
    let bar_from: u64 = match args.engine {
        EngineArg::Model => 64 << 20,
        EngineArg::Verilator => 256 << 10,
    };
    let (input, bar) = text_input(&args.commands, "board", bar_from)?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let run = match (args.engine, core) {
        (EngineArg::Verilator, Some(core)) => {
            let work = args.work.clone().unwrap_or(args.out.join("verilator"));
            let spinner = match quiet() {
                true => indicatif::ProgressBar::hidden(),
                false => indicatif::ProgressBar::new_spinner(),
            };
            spinner.set_message(format!(
                "generating the {} core and building its simulator in {}",
                core.board,
                work.display()
            ));
            spinner.enable_steady_tick(std::time::Duration::from_millis(200));
            let simulator = engine::build_simulator(&core, &cfg, &work);
            spinner.finish_and_clear();
            let (out, start_ns) = (&args.out, args.start_ns);
            let run =
                engine::run_verilator(&core, &cfg, simulator?, input, &name, out, start_ns, &work);
            BoardRun::Verilator(run?)
        }
        (_, core) => BoardRun::Model(engine::run_model(
            &cfg,
            core.map(|c| c.board),
            input,
            &name,
            &args.out,
            args.start_ns,
        )?),
    };
    bar.finish_and_clear();
    run.finish(&name, &args.out)?;
    let line = run.line(&args.out);
    to_stdout("writing the board summary", |out| write!(out, "{line}"))?;
    if !args.send.is_empty() {
        let files: Vec<_> = (0..cfg.ports)
            .map(|p| args.out.join(capture_file_name(cfg.board_id, p)))
            .collect();
        let dests = hmtt_sim::send::resolve(&args.send)?;
        let options = SenderOptions {
            rate_bps: args.rate.map(|g| g * 1e9),
            ..SenderOptions::default()
        };
        let mut sender = PacketSender::new(&dests, options).context("opening the UDP sender")?;
        let sent = hmtt_sim::send::send_capture_files(&files, &mut sender)?;
        to_stdout("writing the send summary", |out| writeln!(out, "{sent}"))?;
    }
    Ok(run.check_sent()?)
}

#[cfg(test)]
mod tests;
