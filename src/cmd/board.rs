//! `hmtt board`: runs the board's golden model on a DDR command stream file
//! and writes its packets as capture files, one per port, with a JSON summary.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::command::CommandReader;
use hmtt_format::config::ConfigWindow;
use hmtt_format::geometry::Geometry;
use hmtt_format::mapping::AddressMapping;
use hmtt_sim::board::output::{window_for_range, CaptureWriters, RunSummary};
use hmtt_sim::board::{
    Board, BoardConfig, DrainRate, DEFAULT_CONFIG_BYTES, DEFAULT_FIFO_DEPTH,
    DEFAULT_IDLE_FLUSH_TICKS, DEFAULT_MAX_WORDS, DEFAULT_PORTS, DEFAULT_REFS_PER_CLOCK,
    DEFAULT_TICK_PS,
};

use crate::shared::{bytes_bar, load_mapping, parse_list, parse_number};

/// Arguments of `hmtt board`.
#[derive(clap::Args)]
#[command(
    after_help = "Example: hmtt board --commands run/commands-b0.txt --geometry ddr3-4g --ports 3 --out run/board0
Writes run/board0/board0-port{0,1,2}.hmttcap and run/board0/board0-summary.json.
The command file holds one `<cycle> <CMD> <rank> <bank> <arg>` per line (docs/format.md §1)."
)]
pub struct Args {
    /// DDR command stream, text (docs/format.md §1); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    commands: PathBuf,
    /// DIMM geometry: a preset (ddr-512m, ddr2-2g, ddr3-4g, ddr3-8g, ddr4-64g)
    /// or rank_bits,bank_bits,row_bits,col_line_bits.
    #[arg(long, default_value = "ddr3-4g")]
    geometry: String,
    /// Address mapping file (TOML, docs/format.md §3), used to find the
    /// config window of --config-base/--config-bytes; linear if absent.
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,
    /// Physical base of the config space (default: the top --config-bytes).
    #[arg(long, value_parser = parse_number)]
    config_base: Option<u64>,
    /// Size of the config space in bytes.
    #[arg(long, value_parser = parse_number, default_value_t = DEFAULT_CONFIG_BYTES)]
    config_bytes: u64,
    /// Config window in DDR coordinates, RANK,ROW_FIRST,ROW_COUNT (overrides
    /// --config-base/--config-bytes/--mapping).
    #[arg(long, value_name = "RANK,ROW_FIRST,ROW_COUNT")]
    window: Option<String>,
    /// Ethernet ports the packets are dealt to.
    #[arg(long, default_value_t = DEFAULT_PORTS)]
    ports: u8,
    /// Lanes: ticks the board samples per fabric clock, 1, 2, 4 or 8
    /// (default 8, halved while the drain would need a word or more per
    /// clock; docs/board.md).
    #[arg(long)]
    lanes: Option<u32>,
    /// References a fabric clock takes, 1..=lanes (default 3, at most the
    /// lanes); more are counted lost.
    #[arg(long)]
    refs_per_clock: Option<u32>,
    /// TX FIFO depth in words.
    #[arg(long, default_value_t = DEFAULT_FIFO_DEPTH)]
    fifo_depth: usize,
    /// Words per packet (360 for a 1500-byte MTU, up to 2235 for jumbo frames).
    #[arg(long, default_value_t = DEFAULT_MAX_WORDS)]
    max_words: usize,
    /// Ticks without a pop after which an open packet closes.
    #[arg(long, default_value_t = DEFAULT_IDLE_FLUSH_TICKS)]
    idle_flush_ticks: u64,
    /// Drain rate NUM/DEN words per tick (default: the line rate of --ports
    /// Gigabit Ethernet ports, docs/board.md).
    #[arg(long, value_name = "NUM/DEN")]
    drain: Option<String>,
    /// Length of a tick in picoseconds (1250 for DDR3-1600).
    #[arg(long, default_value_t = DEFAULT_TICK_PS)]
    tick_ps: u16,
    /// Board id written in every packet.
    #[arg(long, default_value_t = 0)]
    board_id: u8,
    /// Start with tracing off (only CMD words until BEGIN_TRACING).
    #[arg(long)]
    tracing_off: bool,
    /// Start in tags-only mode.
    #[arg(long)]
    tags_only: bool,
    /// Wall-clock time of tick 0 in the capture files, ns since the epoch.
    #[arg(long, default_value_t = 0)]
    start_ns: u64,
    /// Output directory (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn config(args: &Args) -> anyhow::Result<BoardConfig> {
    let geometry: Geometry = args.geometry.parse().context("--geometry")?;
    let mut cfg = BoardConfig::new(geometry);
    cfg.ports = args.ports;
    cfg.fifo_depth = args.fifo_depth;
    cfg.max_words = args.max_words;
    cfg.idle_flush_ticks = args.idle_flush_ticks;
    cfg.tick_ps = args.tick_ps;
    cfg.board_id = args.board_id;
    cfg.start_tracing = !args.tracing_off;
    cfg.start_tags_only = args.tags_only;
    cfg.set_line_rate();
    if let Some(d) = &args.drain {
        let [num, den] = parse_list::<2>("--drain", d)?;
        cfg.drain = DrainRate { num, den };
    }
    cfg.fit_lanes();
    if let Some(lanes) = args.lanes {
        cfg.lanes = lanes;
        cfg.refs_per_clock = DEFAULT_REFS_PER_CLOCK.min(lanes);
    }
    if let Some(e) = args.refs_per_clock {
        cfg.refs_per_clock = e;
    }
    cfg.window = if let Some(w) = &args.window {
        let [rank, first, count] = parse_list::<3>("--window", w)?;
        let n = |v: u64| u32::try_from(v).context("--window: number too large");
        ConfigWindow::new(&geometry, n(rank)?, n(first)?, n(count)?).context("--window")?
    } else {
        let mapping = match &args.mapping {
            Some(p) => load_mapping(p, geometry)?,
            None => AddressMapping::linear(geometry),
        };
        let base = match args.config_base {
            Some(b) => b,
            None => geometry
                .capacity_bytes()
                .checked_sub(args.config_bytes)
                .context("--config-bytes is larger than the DIMM")?,
        };
        if args.mapping.is_none()
            && args.config_base.is_none()
            && args.config_bytes == DEFAULT_CONFIG_BYTES
        {
            // The documented default, with its fallback for small DIMMs.
            cfg.window
        } else {
            window_for_range(&mapping, base, args.config_bytes).context("config space")?
        }
    };
    cfg.validate()?;
    Ok(cfg)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = config(&args)?;
    let name = args.commands.display().to_string();
    // A bar over the bytes of the command file, for long DRAM-simulator
    // streams; hidden for stdin.
    let mut bar = indicatif::ProgressBar::hidden();
    let input: Box<dyn std::io::BufRead> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = File::open(&args.commands).with_context(|| format!("opening {name}"))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        bar = bytes_bar("board", len, args.quiet);
        Box::new(BufReader::with_capacity(1 << 20, bar.wrap_read(f)))
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut writers = CaptureWriters::create(&args.out, &cfg, args.start_ns, "hmtt board")?;
    let mut board = Board::new(cfg.clone())?;
    let mut packets = Vec::new();
    let mut reader = CommandReader::new(input, name.clone());
    let mut n = 0u64;
    while let Some(c) = reader.next() {
        let c = c?;
        board
            .command(&c)
            .with_context(|| format!("{name}:{}", reader.line_no()))?;
        n += 1;
        if n.is_multiple_of(1 << 16) {
            board.drain_packets(&mut packets);
            writers.write(&packets)?;
            packets.clear();
        }
    }
    bar.finish_and_clear();
    board.finish();
    board.drain_packets(&mut packets);
    writers.write(&packets)?;
    let files = writers.finish()?;
    let c = board.counters().clone();
    tracing::info!(
        commands = c.commands,
        references = c.references,
        dropped = c.events_dropped,
        packets = c.packets,
        "board run done"
    );
    if c.protocol_errors + c.unknown_commands + c.out_of_range > 0 {
        tracing::warn!(
            protocol_errors = c.protocol_errors,
            unknown = c.unknown_commands,
            out_of_range = c.out_of_range,
            "{name}: commands the board could not use (counted, skipped)"
        );
    }
    let summary = RunSummary::new(name, &cfg, board.mode(), c, files);
    let path = args.out.join(format!("board{}-summary.json", cfg.board_id));
    std::fs::write(&path, summary.to_json() + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    println!(
        "{} commands, {} references, {} events dropped, {} packets on {} ports -> {}",
        summary.counters.commands,
        summary.counters.references,
        summary.counters.events_dropped,
        summary.counters.packets,
        cfg.ports,
        args.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests;
