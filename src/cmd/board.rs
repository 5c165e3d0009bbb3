//! `hmtt board`: runs the board's golden model on a DDR command stream file
//! and writes its packets as capture files, one per port, with a JSON summary.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{bail, Context};
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
    #[arg(long, value_parser = parse_u64)]
    config_base: Option<u64>,
    /// Size of the config space in bytes.
    #[arg(long, value_parser = parse_u64, default_value_t = DEFAULT_CONFIG_BYTES)]
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

fn parse_u64(s: &str) -> Result<u64, String> {
    let s = s.trim().replace('_', "");
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("'{s}': {e}"))
}

fn parse_list<const N: usize>(what: &str, s: &str) -> anyhow::Result<[u64; N]> {
    let parts: Vec<&str> = s.split([',', '/']).map(str::trim).collect();
    if parts.len() != N {
        bail!("{what} '{s}': expected {N} numbers");
    }
    let mut out = [0u64; N];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = parse_u64(p).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    }
    Ok(out)
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
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?;
                AddressMapping::from_toml(&text, geometry)
                    .with_context(|| format!("{}", p.display()))?
            }
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
    // streams; hidden for stdin, small files and when stderr is no terminal.
    let mut bar = indicatif::ProgressBar::hidden();
    let input: Box<dyn std::io::BufRead> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = File::open(&args.commands).with_context(|| format!("opening {name}"))?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if !args.quiet && len >= (64 << 20) {
            bar = indicatif::ProgressBar::new(len);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "board {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
                )
                .expect("valid template"),
            );
        }
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
mod tests {
    use super::*;
    use clap::Parser;
    use hmtt_format::capture::CaptureReader;
    use hmtt_format::packet::Packet;
    use hmtt_format::record::BoardEvent;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hmtt-board-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(extra: &[&str]) -> Args {
        let mut v = vec!["hmtt-board"];
        v.extend_from_slice(extra);
        Cli::try_parse_from(v).unwrap().args
    }

    #[test]
    fn writes_one_capture_per_port_and_a_summary() {
        let dir = scratch("ok");
        let cmds = dir.join("cmds.txt");
        let mut text = String::from("# a tiny stream\n0 ACT 0 1 0x55\n");
        for i in 0..40u64 {
            text.push_str(&format!("{} RD 0 1 {}\n", 5 + i * 7, (i % 128) * 8));
            text.push_str(&format!("{} REF\n", 6 + i * 7));
        }
        text.push_str("400 CKE 0 0 0\n");
        std::fs::write(&cmds, text).unwrap();
        let out = dir.join("out");
        run(args(&[
            "--commands",
            cmds.to_str().unwrap(),
            "--ports",
            "2",
            "--max-words",
            "8",
            "--out",
            out.to_str().unwrap(),
        ]))
        .unwrap();
        let mut events = vec![];
        let mut seqs = vec![];
        for port in 0..2u8 {
            let data = std::fs::read(out.join(format!("board0-port{port}.hmttcap"))).unwrap();
            let (h, r) = CaptureReader::new(&data).unwrap();
            assert_eq!(h.port, port);
            assert_eq!(h.source_kind, hmtt_format::capture::SourceKind::Simulation);
            assert_eq!(h.geometry, Some(Geometry::ddr3_default()));
            for rec in r {
                let p = Packet::new_checked(rec.packet).unwrap();
                assert_eq!(p.port(), port);
                seqs.push(p.seq());
                events.extend(p.events().map(|e| (p.seq(), e.unwrap())));
            }
        }
        seqs.sort();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        events.sort_by_key(|e| e.0);
        let ticks: Vec<u64> = events.iter().map(|e| e.1.tick).collect();
        assert_eq!(ticks, (0..40).map(|i| 5 + i * 7).collect::<Vec<_>>());
        assert!(matches!(
            events[0].1.event,
            BoardEvent::Access { write: false, .. }
        ));
        let summary = std::fs::read_to_string(out.join("board0-summary.json")).unwrap();
        assert!(summary.contains("\"unknown_commands\": 1"), "{summary}");
        assert!(summary.contains("\"references\": 40"), "{summary}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn malformed_file_names_the_file_and_line() {
        let dir = scratch("bad");
        let cmds = dir.join("bad.txt");
        std::fs::write(&cmds, "0 ACT 0 0 1\n\n3 RD 0 zero 8\n").unwrap();
        let e = run(args(&[
            "--commands",
            cmds.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]))
        .unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains(&format!("{}:3", cmds.display())), "{msg}");
        assert!(msg.contains("bank 'zero' is not a number"), "{msg}");
        let e = run(args(&[
            "--commands",
            dir.join("missing.txt").to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]))
        .unwrap_err();
        assert!(format!("{e:#}").contains("missing.txt"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn options_shape_the_board() {
        let a = args(&[
            "--commands",
            "x",
            "--geometry",
            "ddr4-64g",
            "--drain",
            "1/7",
            "--window",
            "3,100,2",
            "--board-id",
            "4",
            "--tracing-off",
            "--out",
            "o",
        ]);
        let cfg = config(&a).unwrap();
        assert_eq!(cfg.drain, DrainRate { num: 1, den: 7 });
        assert_eq!(
            (cfg.window.rank, cfg.window.row_first, cfg.window.row_count),
            (3, 100, 2)
        );
        assert_eq!(cfg.board_id, 4);
        assert!(!cfg.start_tracing);
        // 1/7 word per tick would be 8/7 per clock at 8 lanes: 4 lanes.
        assert_eq!((cfg.lanes, cfg.refs_per_clock), (4, 3));
        let bad = args(&["--commands", "x", "--drain", "7/7", "--out", "o"]);
        assert!(config(&bad).is_err());
        let lanes = |extra: &[&str]| {
            let mut v = vec!["--commands", "x", "--out", "o"];
            v.extend_from_slice(extra);
            config(&args(&v)).map(|c| (c.lanes, c.refs_per_clock))
        };
        assert_eq!(lanes(&[]).unwrap(), (8, 3));
        assert_eq!(
            lanes(&["--lanes", "4", "--refs-per-clock", "2"]).unwrap(),
            (4, 2)
        );
        assert_eq!(lanes(&["--lanes", "2"]).unwrap(), (2, 2));
        // DDR-200 with 3 ports: 0.88 words per tick, one lane by default;
        // 8 lanes would pop 7 words per clock.
        assert_eq!(lanes(&["--tick-ps", "10000"]).unwrap(), (1, 1));
        assert!(lanes(&["--tick-ps", "10000", "--lanes", "8"]).is_err());
        assert!(lanes(&["--lanes", "3"]).is_err());
        assert!(lanes(&["--lanes", "4", "--refs-per-clock", "5"]).is_err());
        let range = args(&[
            "--commands",
            "x",
            "--config-base",
            "0x10000000",
            "--out",
            "o",
        ]);
        let cfg = config(&range).unwrap();
        let g = Geometry::ddr3_default();
        assert_eq!(cfg.window.first_line(&g), 0x1000_0000 / 64);
    }
}
