//! `hmtt board`: runs the board on a DDR command stream file and writes its
//! packets as capture files, one per port, with a JSON summary. The engine
//! is the golden model or a firmware core's generated Verilog under
//! Verilator (`hmtt_firmware::engine`).

use std::path::PathBuf;

use anyhow::Context;
use clap::ValueEnum;
use hmtt_firmware::engine::{self, BoardRun, CoreSpec};
use hmtt_firmware::Board as Core;
use hmtt_format::geometry::Geometry;
use hmtt_sim::board::{
    parse_config_bytes, parse_window, BoardConfig, BoardOptions, DrainRate, MappingText,
    DEFAULT_CONFIG_BYTES,
};

use crate::shared::{parse_number, quiet, text_input, to_stdout, usize_in};

/// Which engine runs the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// The golden model (hmtt-sim).
    Model,
    /// A firmware core's generated Verilog, built with Verilator.
    Verilator,
}

/// Arguments of `hmtt board`.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  hmtt board --commands run/commands-b0.txt --geometry ddr3-4g --ports 3 --out run/board0
  hmtt board --engine verilator --commands run/commands-b0.txt --out run/hw0
Writes OUT/board0-port{0,1,2}.hmttcap and OUT/board0-summary.json.
The command file holds one `<cycle> <CMD> <rank> <bank> <arg>` per line (docs/format.md §1).

Engines. `model` runs the golden model (docs/board.md). `verilator` runs the Verilog of a
firmware core (--core, default ecp5-85f), generated with the run's constants, built with
`verilator --binary --timing` (cached in --work by a hash of the Verilog, so only the first
run of a core and its constants compiles), and writes the packets its Ethernet ports send,
each with the tick its close was observed at, up to where the model ends the stream: the
capture files are byte-identical to `--engine model --core <same core>` with the same
options. The pins carry one command per tick: a second command at the same tick, or a rank,
bank, row or column beyond the pins, is refused. A core fixes its lanes, references per
clock, TX FIFO depth and ports (options that differ are refused); the other options
default to the core's and become constants of the generated Verilog.

Summary. Both engines write the same keys (`engine` says which ran). The Verilator run's
counters hold what the hardware counts (64-bit extended), what its frames show (packets,
words, close reasons, LOST sums), what the command file held (commands, per kind, last
tick), the words popped (observed) and lost_pending derived from them; the figures the
hardware does not measure (references, events by kind, suppressed, inner commands,
references after precharge, words pushed) are null, listed in measurement.not_measured,
and never taken from the model. measurement also says where each figure came from,
whether a port buffer overflowed, and the simulation speed.")]
pub struct Args {
    /// DDR command stream, text (docs/format.md §1); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    commands: PathBuf,
    /// Engine: the golden model or a firmware core's Verilog under Verilator.
    #[arg(long, value_enum, default_value_t = EngineArg::Model)]
    engine: EngineArg,
    /// Firmware core (ecp5-85f, ice40-hx8k) whose build parameters the run
    /// takes; --engine verilator runs it (default ecp5-85f), the model runs
    /// its exact configuration.
    #[arg(long)]
    core: Option<Core>,
    /// Verilator's work directory: cached simulators and the run's scratch
    /// (default OUT/verilator).
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// DIMM geometry: a preset (ddr-512m, ddr2-2g, ddr3-4g, ddr3-8g, ddr4-64g)
    /// or rank_bits,bank_bits,row_bits,col_line_bits [default: ddr3-4g, or
    /// the core's].
    #[arg(long)]
    geometry: Option<Geometry>,
    /// Address mapping file (TOML, docs/format.md §3), used to find the
    /// config window of --config-base/--config-bytes; linear if absent.
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,
    /// Physical base of the config space (default: the top --config-bytes).
    #[arg(long, value_parser = parse_number)]
    config_base: Option<u64>,
    /// Size of the config space in bytes, 64..=1G (it is a few MiB; each of
    /// its lines is checked against the mapping).
    #[arg(long, value_parser = parse_config_bytes, default_value_t = DEFAULT_CONFIG_BYTES)]
    config_bytes: u64,
    /// Config window in DDR coordinates, RANK,ROW_FIRST,ROW_COUNT (overrides
    /// --config-base/--config-bytes/--mapping).
    #[arg(long, value_name = "RANK,ROW_FIRST,ROW_COUNT", alias = "window",
          value_parser = parse_window)]
    config_window: Option<[u32; 3]>,
    /// Ethernet ports the packets are dealt to [default: 3, or the core's].
    #[arg(long)]
    ports: Option<u8>,
    /// Lanes: ticks the board samples per fabric clock, 1, 2, 4 or 8
    /// (default 8, halved while the drain would need a word or more per
    /// clock; docs/board.md; a core's own).
    #[arg(long)]
    lanes: Option<u32>,
    /// References a fabric clock takes, 1..=lanes (default 3, at most the
    /// lanes; a core's own); more are counted lost.
    #[arg(long)]
    refs_per_clock: Option<u32>,
    /// TX FIFO depth in words [default: 16384, or the core's].
    #[arg(long)]
    fifo_depth: Option<usize>,
    /// Words per packet, 2..=2235 (360 for a 1500-byte MTU, 2235 for jumbo
    /// frames) [default: 360, or the core's].
    #[arg(long, value_parser = usize_in(2, hmtt_format::packet::MAX_WORDS_JUMBO as u64))]
    max_words: Option<usize>,
    /// Ticks without a pop after which an open packet closes [default:
    /// 65536, or the core's].
    #[arg(long)]
    idle_flush_ticks: Option<u64>,
    /// Drain rate NUM/DEN words per tick (default: the line rate of --ports
    /// Gigabit Ethernet ports, docs/board.md).
    #[arg(long, value_name = "NUM/DEN")]
    drain: Option<DrainRate>,
    /// Length of a tick in picoseconds [default: 1250 (DDR3-1600), or the
    /// core's].
    #[arg(long)]
    tick_ps: Option<u16>,
    /// Board id written in every packet [default: 0, or the core's].
    #[arg(long)]
    board_id: Option<u8>,
    /// Start with tracing off (only CMD words until BEGIN_TRACING).
    #[arg(long)]
    tracing_off: bool,
    /// Start in tags-only mode.
    #[arg(long)]
    tags_only: bool,
    /// The Statistic Unit (docs/board.md, the golden model only): counters
    /// per interval of 2^K ticks, K in 6..=31, sent as statistics packets
    /// on the ports beside the trace (`hmtt stats` shows them after
    /// `hmtt merge`). Without it the board has no unit.
    #[arg(long, value_name = "K")]
    stats_interval: Option<u8>,
    /// The statistics path's share of the ports' line, 1/2^S, S in 1..=8
    /// (the trace's drain gets the rest) [default: 5].
    #[arg(long, value_name = "S", requires = "stats_interval")]
    stats_share: Option<u8>,
    /// Records the statistics path sends back to back, 1..=16 [default: 4].
    #[arg(long, value_name = "N", requires = "stats_interval")]
    stats_burst: Option<u32>,
    /// The unit starts off (until the STATS_ON inner command).
    #[arg(long, requires = "stats_interval")]
    stats_off: bool,
    /// The Reuse Distance & Hot Pages Unit beside the Statistic Unit
    /// (docs/board.md, the golden model only): per interval, the histogram
    /// of the stack distances of 4 KiB pages in a 128-page LRU stack, and
    /// the hot pages.
    #[arg(long, requires = "stats_interval")]
    reuse_unit: bool,
    /// The RDHPU starts off (until REUSE_ON or STATS_ONLY).
    #[arg(long, requires = "reuse_unit")]
    reuse_off: bool,
    /// Hot pages per record, 8..=64 [default: 8].
    #[arg(long, value_name = "N", requires = "reuse_unit")]
    reuse_hot: Option<u8>,
    /// References the RDHPU's stack takes per fabric clock, 1..=8 (the
    /// rest are skipped and counted) [default: 3].
    #[arg(long, value_name = "N", requires = "reuse_unit")]
    reuse_per_clock: Option<u32>,
    /// Wall-clock time of tick 0 in the capture files, ns since the epoch.
    #[arg(long, default_value_t = 0)]
    start_ns: u64,
    /// Output directory (created if missing).
    #[arg(short, long)]
    out: PathBuf,
}

/// The firmware core the run takes its build parameters from, if any.
fn core(args: &Args) -> Option<CoreSpec> {
    engine::core_of_run(args.core, args.engine == EngineArg::Verilator)
}

/// The board's configuration: the options as the library takes them
/// ([`BoardOptions`]), applied to the core's or board.md's defaults.
fn config(args: &Args, core: Option<&CoreSpec>) -> anyhow::Result<BoardConfig> {
    // Read only where the window comes from the config space.
    let mapping = match (&args.config_window, &args.mapping) {
        (None, Some(p)) => Some(MappingText {
            name: p.display().to_string(),
            text: hmtt_merge::side_files::read_mapping_text(p)?,
        }),
        _ => None,
    };
    let options = BoardOptions {
        geometry: args.geometry,
        ports: args.ports,
        lanes: args.lanes,
        refs_per_clock: args.refs_per_clock,
        fifo_depth: args.fifo_depth,
        max_words: args.max_words,
        idle_flush_ticks: args.idle_flush_ticks,
        drain: args.drain,
        tick_ps: args.tick_ps,
        board_id: args.board_id,
        tracing_off: args.tracing_off,
        tags_only: args.tags_only,
        stats_interval_log2: args.stats_interval,
        stats_share_log2: args.stats_share,
        stats_burst: args.stats_burst,
        stats_off: args.stats_off,
        reuse: args.reuse_unit,
        reuse_off: args.reuse_off,
        reuse_hot_pages: args.reuse_hot,
        reuse_refs_per_clock: args.reuse_per_clock,
        window: args.config_window,
        mapping,
        config_base: args.config_base,
        config_bytes: args.config_bytes,
    };
    Ok(engine::board_config(core, &options)?)
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
    Ok(run.check_sent()?)
}

#[cfg(test)]
mod tests;
