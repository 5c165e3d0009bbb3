//! The options of `hmtt board` and the library's [`BoardOptions`] they
//! give.

use std::path::PathBuf;

use clap::ValueEnum;
use hmtt_board_model::{
    parse_config_bytes, parse_window, BoardOptions, DrainRate, MappingText, DEFAULT_CONFIG_BYTES,
};
use hmtt_firmware::Board as Core;
use hmtt_format::geometry::Geometry;

use crate::shared::{parse_number, parse_positive, usize_in};

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
    pub(super) commands: PathBuf,
    /// Engine: the golden model or a firmware core's Verilog under Verilator.
    #[arg(long, value_enum, default_value_t = EngineArg::Model)]
    pub(super) engine: EngineArg,
    /// Firmware core (ecp5-85f, ice40-hx8k) whose build parameters the run
    /// takes; --engine verilator runs it (default ecp5-85f), the model runs
    /// its exact configuration.
    #[arg(long)]
    pub(super) core: Option<Core>,
    /// Verilator's work directory: cached simulators and the run's scratch
    /// (default OUT/verilator).
    #[arg(long, value_name = "DIR")]
    pub(super) work: Option<PathBuf>,
    /// DIMM geometry: a preset (ddr-512m, ddr2-2g, ddr3-4g, ddr3-8g, ddr4-64g)
    /// or rank_bits,bank_bits,row_bits,col_line_bits [default: ddr3-4g, or
    /// the core's].
    #[arg(long)]
    pub(super) geometry: Option<Geometry>,
    /// Address mapping file (TOML, docs/format.md §3), used to find the
    /// config window of --config-base/--config-bytes; linear if absent.
    #[arg(long, value_name = "FILE")]
    pub(super) mapping: Option<PathBuf>,
    /// Physical base of the config space (default: the top --config-bytes).
    #[arg(long, value_parser = parse_number)]
    pub(super) config_base: Option<u64>,
    /// Size of the config space in bytes, 64..=1G (it is a few MiB; each of
    /// its lines is checked against the mapping).
    #[arg(long, value_parser = parse_config_bytes, default_value_t = DEFAULT_CONFIG_BYTES)]
    pub(super) config_bytes: u64,
    /// Config window in DDR coordinates, RANK,ROW_FIRST,ROW_COUNT (overrides
    /// --config-base/--config-bytes/--mapping).
    #[arg(long, value_name = "RANK,ROW_FIRST,ROW_COUNT", alias = "window",
          value_parser = parse_window)]
    pub(super) config_window: Option<[u32; 3]>,
    /// Ethernet ports the packets are dealt to [default: 3, or the core's].
    #[arg(long)]
    pub(super) ports: Option<u8>,
    /// Lanes: ticks the board samples per fabric clock, 1, 2, 4 or 8
    /// (default 8, halved while the drain would need a word or more per
    /// clock; docs/board.md; a core's own).
    #[arg(long)]
    pub(super) lanes: Option<u32>,
    /// References a fabric clock takes, 1..=lanes (default 3, at most the
    /// lanes; a core's own); more are counted lost.
    #[arg(long)]
    pub(super) refs_per_clock: Option<u32>,
    /// TX FIFO depth in words [default: 16384, or the core's].
    #[arg(long)]
    pub(super) fifo_depth: Option<usize>,
    /// Words per packet, 2..=2235 (360 for a 1500-byte MTU, 2235 for jumbo
    /// frames) [default: 360, or the core's].
    #[arg(long, value_parser = usize_in(2, hmtt_format::packet::MAX_WORDS_JUMBO as u64))]
    pub(super) max_words: Option<usize>,
    /// Ticks without a pop after which an open packet closes [default:
    /// 65536, or the core's].
    #[arg(long)]
    pub(super) idle_flush_ticks: Option<u64>,
    /// Drain rate NUM/DEN words per tick (default: the line rate of --ports
    /// Gigabit Ethernet ports, docs/board.md).
    #[arg(long, value_name = "NUM/DEN")]
    pub(super) drain: Option<DrainRate>,
    /// Length of a tick in picoseconds [default: 1250 (DDR3-1600), or the
    /// core's].
    #[arg(long)]
    pub(super) tick_ps: Option<u16>,
    /// Board id written in every packet [default: 0, or the core's].
    #[arg(long)]
    pub(super) board_id: Option<u8>,
    /// Start with tracing off (only CMD words until BEGIN_TRACING).
    #[arg(long)]
    pub(super) tracing_off: bool,
    /// Start in tags-only mode.
    #[arg(long)]
    pub(super) tags_only: bool,
    /// The Statistic Unit (docs/board.md; --engine verilator runs the
    /// ECP5 core with the unit, on from reset, no RDHPU, for the DDR3-4G
    /// geometry's ranks, banks and line bits): counters per interval of
    /// 2^K ticks, K in 6..=31, sent as statistics packets on the ports
    /// beside the trace (`hmtt stats` shows them after `hmtt merge`).
    /// Without it the board has no unit.
    #[arg(long, value_name = "K")]
    pub(super) stats_interval: Option<u8>,
    /// The statistics path's share of the ports' line, 1/2^S, S in 1..=8
    /// (the trace's drain gets the rest) [default: 5].
    #[arg(long, value_name = "S", requires = "stats_interval")]
    pub(super) stats_share: Option<u8>,
    /// Records the statistics path sends back to back, 1..=16 [default: 4].
    #[arg(long, value_name = "N", requires = "stats_interval")]
    pub(super) stats_burst: Option<u32>,
    /// The unit starts off (until the STATS_ON inner command).
    #[arg(long, requires = "stats_interval")]
    pub(super) stats_off: bool,
    /// The Reuse Distance & Hot Pages Unit beside the Statistic Unit
    /// (docs/board.md; the golden model only, no HDL top has it): per
    /// interval, the histogram of the stack distances of 4 KiB pages in a
    /// 128-page LRU stack, and the hot pages.
    #[arg(long, requires = "stats_interval")]
    pub(super) reuse_unit: bool,
    /// The RDHPU starts off (until REUSE_ON or STATS_ONLY).
    #[arg(long, requires = "reuse_unit")]
    pub(super) reuse_off: bool,
    /// Hot pages per record, 8..=64 [default: 8].
    #[arg(long, value_name = "N", requires = "reuse_unit")]
    pub(super) reuse_hot: Option<u8>,
    /// References the RDHPU's stack takes per fabric clock, 1..=8 (the
    /// rest are skipped and counted) [default: 3].
    #[arg(long, value_name = "N", requires = "reuse_unit")]
    pub(super) reuse_per_clock: Option<u32>,
    /// Wall-clock time of tick 0 in the capture files, ns since the epoch.
    #[arg(long, default_value_t = 0)]
    pub(super) start_ns: u64,
    /// Output directory (created if missing).
    #[arg(short, long)]
    pub(super) out: PathBuf,
    /// After the run, send its packets over UDP as the board sent them:
    /// HOST:PORT per port (port p to the p-th; one address takes all),
    /// e.g. to `hmtt capture --live`.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    pub(super) send: Vec<String>,
    /// --send's aggregate rate in Gb/s of packet bytes, positive and
    /// finite; default as fast as possible.
    #[arg(long, requires = "send", value_parser = parse_positive)]
    pub(super) rate: Option<f64>,
}

impl Args {
    /// The options as the library takes them: the mapping file is read
    /// only where the window comes from the config space.
    pub(super) fn options(&self) -> anyhow::Result<BoardOptions> {
        let mapping = match (&self.config_window, &self.mapping) {
            (None, Some(p)) => Some(MappingText {
                name: p.display().to_string(),
                text: hmtt_merge::side_files::read_mapping_text(p)?,
            }),
            _ => None,
        };
        Ok(BoardOptions {
            geometry: self.geometry,
            ports: self.ports,
            lanes: self.lanes,
            refs_per_clock: self.refs_per_clock,
            fifo_depth: self.fifo_depth,
            max_words: self.max_words,
            idle_flush_ticks: self.idle_flush_ticks,
            drain: self.drain,
            tick_ps: self.tick_ps,
            board_id: self.board_id,
            tracing_off: self.tracing_off,
            tags_only: self.tags_only,
            stats_interval_log2: self.stats_interval,
            stats_share_log2: self.stats_share,
            stats_burst: self.stats_burst,
            stats_off: self.stats_off,
            reuse: self.reuse_unit,
            reuse_off: self.reuse_off,
            reuse_hot_pages: self.reuse_hot,
            reuse_refs_per_clock: self.reuse_per_clock,
            window: self.config_window,
            mapping,
            config_base: self.config_base,
            config_bytes: self.config_bytes,
        })
    }
}
