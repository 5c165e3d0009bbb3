//! `hmtt sim`: run the simulated traced machine and its boards, write the
//! outputs (docs/format.md §10) and/or send the packets over UDP.

use anyhow::{bail, Context};
use hmtt_format::{AddressMapping, Geometry};
use hmtt_sim::board::BoardPacket;
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::dram::{Scheduler, Timing};
use hmtt_sim::machine::{SimConfig, SimError};
use hmtt_sim::send::{PacketSender, SenderOptions};
use hmtt_sim::stream::{run_streamed, PacketSink, StreamOutputs, StreamSummary};
use hmtt_sim::workload::{read_trace_opts, TraceFormat, Workload};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `hmtt sim` (boxed: they are many, and the subcommand enum
/// stays small).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub sim: Box<SimArgs>,
}

/// The options of `hmtt sim`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  hmtt sim --workload quicksort --n 100000 --out out/qs
  hmtt sim --workload seq-read --n 4M --unit 64 --cache off --out out/seq
  hmtt sim --workload mix --processes 1 --boards 2 --ports 3 --out out/mix
  hmtt sim --workload trace --trace prog.lackey --out out/trace
  hmtt sim --workload seq-write --n 16M --send 127.0.0.1:5000,127.0.0.1:5001,127.0.0.1:5002 --rate 3")]
pub struct SimArgs {
    /// seq-read, seq-write, read-after-write, random-read, strided,
    /// quicksort, dma, mix (several processes with remaps and DMA), trace.
    #[arg(long, default_value = "seq-read")]
    pub workload: String,
    /// Workload size: bytes for the micro-benchmarks (K/M/G suffixes),
    /// elements for quicksort, transfers for dma, buffer bytes for mix.
    #[arg(long)]
    pub n: Option<String>,
    /// Bytes per reference.
    #[arg(long, default_value = "64")]
    pub unit: String,
    /// Distance between references of `strided`.
    #[arg(long, default_value = "4096")]
    pub stride: String,
    /// Run this many copies of the workload as interleaved processes.
    #[arg(long, default_value_t = 1)]
    pub processes: u32,
    /// Operations a process runs before another may be scheduled.
    #[arg(long, default_value_t = 64)]
    pub quantum: u32,
    /// Rounds per process, each on a fresh buffer (frees and remaps).
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Add a DMA device doing this many transfers alongside.
    #[arg(long, default_value_t = 0)]
    pub dma: u64,
    /// Trace file for `--workload trace`.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace format: auto, rw (`R|W <address> [size] [pid]`), lackey.
    #[arg(long, default_value = "auto")]
    pub trace_format: String,
    /// Keep lackey's instruction fetches (`I` lines) as reads.
    #[arg(long)]
    pub instructions: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Last-level cache on or off (off: the paper's cache-disabled mode).
    #[arg(long, default_value = "on")]
    pub cache: String,
    #[arg(long, default_value = "2M")]
    pub cache_size: String,
    #[arg(long, default_value_t = 16)]
    pub ways: u32,
    /// DIMM geometry per channel: a preset or rank,bank,row,col_line bits.
    #[arg(long, default_value = "ddr3-4g")]
    pub geometry: String,
    /// Address mapping file (TOML, docs/format.md §3); default linear.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// ddr3-1600, ddr2-400 or ddr-200.
    #[arg(long, default_value = "ddr3-1600")]
    pub speed: String,
    /// fcfs or frfcfs.
    #[arg(long, default_value = "frfcfs")]
    pub scheduler: String,
    #[arg(long, default_value_t = 16)]
    pub queue_depth: usize,
    /// CPU ticks per line referenced (the processor's pace).
    #[arg(long)]
    pub cpu_ticks: Option<u64>,
    /// Channels, one board each.
    #[arg(long, default_value_t = 1)]
    pub boards: u8,
    /// Channel interleave: blocks of 2^SHIFT bytes alternate channels.
    #[arg(long, default_value_t = 12)]
    pub interleave_shift: u32,
    /// Ethernet ports per board.
    #[arg(long, default_value_t = 3)]
    pub ports: u8,
    #[arg(long)]
    pub fifo_depth: Option<usize>,
    /// Lanes: ticks the board samples per fabric clock, 1, 2, 4 or 8
    /// (default 8, halved while the ports' line rate would need a word or
    /// more per clock, as for DDR2-400 or DDR-200; docs/board.md).
    #[arg(long)]
    pub lanes: Option<u32>,
    /// References a fabric clock takes, 1..=lanes (default 3, at most the
    /// lanes); more are counted lost.
    #[arg(long)]
    pub refs_per_clock: Option<u32>,
    /// Words per packet (360 for 1500-byte frames, up to 2235 for jumbo).
    #[arg(long)]
    pub max_words: Option<usize>,
    /// Write back every dirty line at the end.
    #[arg(long)]
    pub flush_at_end: bool,
    /// Output directory. Written as the run goes, in bounded memory (as
    /// are --send and --check).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the ground truth as CSV.
    #[arg(long)]
    pub truth_csv: bool,
    /// Check the DDR command streams against the timing rules.
    #[arg(long)]
    pub check: bool,
    /// Send the packets over UDP: HOST:PORT per board port (port p to the
    /// p-th; one address takes all; with several boards, boards*ports
    /// addresses board-major, or ports addresses shared by the boards).
    #[arg(long, value_delimiter = ',')]
    pub send: Vec<String>,
    /// Aggregate send rate in Gb/s of packet bytes; default as fast as possible.
    #[arg(long)]
    pub rate: Option<f64>,
}

/// Parses `123`, `4K`, `16M`, `2G`, `8KiB`.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mul = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => bail!("size '{s}': unknown suffix '{c}' (K, M or G)"),
            };
            (&t[..i], mul)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .with_context(|| format!("size '{s}' is not a number"))?;
    n.checked_mul(mul)
        .with_context(|| format!("size '{s}' is too large"))
}

fn workload(a: &SimArgs) -> anyhow::Result<Workload> {
    let unit = parse_size(&a.unit)?;
    let unit = u32::try_from(unit).context("--unit is too large")?;
    let stride = parse_size(&a.stride)?;
    let n = a.n.as_deref().map(parse_size).transpose()?;
    let mut w = match a.workload.as_str() {
        "trace" => {
            let path = a
                .trace
                .as_ref()
                .context("--workload trace needs --trace FILE")?;
            let format = match a.trace_format.as_str() {
                "auto" => None,
                "rw" => Some(TraceFormat::ReadWrite),
                "lackey" => Some(TraceFormat::Lackey),
                f => bail!("unknown trace format '{f}' (auto, rw or lackey)"),
            };
            read_trace_opts(path, format, a.instructions)?
        }
        name => {
            let default = match name {
                "quicksort" => 100_000,
                "dma" => 16,
                "mix" => 64 << 10,
                _ => 1 << 20,
            };
            Workload::by_name(name, n.unwrap_or(default), unit, stride)?
        }
    };
    if a.rounds > 1 {
        w = Workload::Rounds {
            inner: Box::new(w),
            rounds: a.rounds,
        };
    }
    w = w.processes(a.processes, a.quantum);
    if a.dma > 0 {
        w = Workload::Processes {
            parts: vec![
                w,
                Workload::Dma {
                    transfers: a.dma,
                    bytes: 4 * 4096,
                },
            ],
            quantum: a.quantum,
        };
    }
    Ok(w)
}

fn config(a: &SimArgs) -> anyhow::Result<SimConfig> {
    let geometry: Geometry = a.geometry.parse()?;
    let mut cfg = SimConfig::default().workload(workload(a)?).seed(a.seed);
    cfg.geometry = geometry;
    cfg.cache = match a.cache.as_str() {
        "on" => Some(CacheConfig {
            size_bytes: parse_size(&a.cache_size)?,
            ways: a.ways,
        }),
        "off" => None,
        c => bail!("--cache must be on or off, not '{c}'"),
    };
    if let Some(path) = &a.mapping {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading mapping file {}", path.display()))?;
        cfg.mapping = Some(
            AddressMapping::from_toml(&text, geometry)
                .with_context(|| format!("mapping file {}", path.display()))?,
        );
    }
    cfg.controller.timing = a.speed.parse::<Timing>().map_err(anyhow::Error::msg)?;
    cfg.controller.scheduler = a
        .scheduler
        .parse::<Scheduler>()
        .map_err(anyhow::Error::msg)?;
    if a.queue_depth == 0 {
        bail!("--queue-depth must be at least 1");
    }
    cfg.controller.queue_depth = a.queue_depth;
    if let Some(t) = a.cpu_ticks {
        cfg.cpu_ticks_per_ref = t;
    }
    cfg.boards = a.boards;
    cfg.interleave_shift = a.interleave_shift;
    cfg.board.ports = a.ports;
    if let Some(d) = a.fifo_depth {
        cfg.board.fifo_depth = d;
    }
    cfg.board.lanes = a.lanes;
    cfg.board.refs_per_clock = a.refs_per_clock;
    if let Some(m) = a.max_words {
        cfg.board.max_words = m;
    }
    cfg.flush_cache_at_end = a.flush_at_end;
    cfg.wall_start_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    Ok(cfg)
}

/// `--send`: the boards' packets to UDP destinations as the run makes them.
struct UdpSink {
    tx: PacketSender,
    /// Destinations per board: `ports` (board-major) or shared.
    per_board: usize,
    started: Option<Instant>,
}

impl UdpSink {
    fn new(a: &SimArgs) -> anyhow::Result<UdpSink> {
        let dests: Vec<SocketAddr> = a
            .send
            .iter()
            .map(|d| {
                d.to_socket_addrs()
                    .with_context(|| format!("bad destination '{d}'"))?
                    .next()
                    .with_context(|| format!("destination '{d}' resolves to nothing"))
            })
            .collect::<anyhow::Result<_>>()?;
        let ports = usize::from(a.ports);
        let boards = usize::from(a.boards);
        if ![1, ports, ports * boards].contains(&dests.len()) {
            bail!(
                "{} destinations for {boards} board(s) of {ports} ports: give 1, {ports} or {}",
                dests.len(),
                ports * boards
            );
        }
        let per_board = if dests.len() == ports * boards && boards > 1 {
            ports
        } else {
            0
        };
        let tx = PacketSender::new(
            &dests,
            SenderOptions {
                rate_bps: a.rate.map(|g| g * 1e9),
                ..Default::default()
            },
        )?;
        Ok(UdpSink {
            tx,
            per_board,
            started: None,
        })
    }

    fn report(&self) {
        let stats = self.tx.stats();
        let secs = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        println!(
            "sent {} packets ({} bytes) as the run went, over {:.3} s: {:.3} Gb/s, {} sendmmsg calls, {} retries",
            stats.packets,
            stats.bytes,
            secs,
            stats.bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
            stats.calls,
            stats.retries
        );
    }
}

impl PacketSink for UdpSink {
    fn packet(&mut self, board: usize, p: &BoardPacket) -> Result<(), SimError> {
        self.started.get_or_insert_with(Instant::now);
        let dest = board * self.per_board + usize::from(p.port);
        self.tx.send(dest, &p.bytes).map_err(|error| SimError::Io {
            path: format!("UDP destination {dest}"),
            error,
        })
    }

    fn finish(&mut self) -> Result<(), SimError> {
        self.tx.flush().map_err(|error| SimError::Io {
            path: "UDP send".into(),
            error,
        })
    }
}

/// What a run produced, and the events its boards lost.
fn report(s: &StreamSummary, secs: f64) {
    println!(
        "simulated {} references ({} memory requests, {} DDR commands, {} ticks) in {secs:.2} s",
        s.stats.references,
        s.stats.memory_requests,
        s.commands.iter().sum::<u64>(),
        s.stats.end_tick
    );
    println!(
        "kernel log: {} records; ground truth: {} rows; packets: {}",
        s.klog_records,
        s.truth_records,
        s.packets.iter().sum::<u64>()
    );
    for (b, c) in s.board_counters.iter().enumerate() {
        if c.events_dropped > 0 {
            println!(
                "board {b}: {} events lost to TX FIFO overflow (slow the CPU with --cpu-ticks or add ports)",
                c.events_dropped
            );
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let args = *args.sim;
    if args.out.is_none() && args.send.is_empty() {
        bail!("nothing to do: give --out DIR and/or --send HOST:PORT[,...]");
    }
    let cfg = config(&args)?;
    let mut sink = if args.send.is_empty() {
        None
    } else {
        Some(UdpSink::new(&args)?)
    };
    let start = Instant::now();
    let outputs = StreamOutputs {
        dir: args.out.as_deref(),
        truth_csv: args.truth_csv,
        check: args.check,
        packets: sink.as_mut().map(|s| s as &mut dyn PacketSink),
    };
    let run = run_streamed(cfg, outputs)?;
    report(&run.summary, start.elapsed().as_secs_f64());
    if let Some(dir) = &args.out {
        println!("wrote {}", dir.display());
    }
    if let Some(sink) = &sink {
        sink.report();
    }
    for (b, (kept, total)) in run.checks.iter().enumerate() {
        match kept.first() {
            None => println!("board {b}: command stream legal"),
            Some(first) => bail!("board {b}: {total} timing violations, first: {first}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("123").unwrap(), 123);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert!(parse_size("3X").is_err());
        assert!(parse_size("M").is_err());
    }
}
