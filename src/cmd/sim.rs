//! `hmtt sim`: run the simulated traced machine and its boards, write the
//! outputs (docs/format.md §10) and/or send the packets over UDP.

use anyhow::bail;
use hmtt_format::atomic_file::refuse_output_over_input;
use hmtt_format::Geometry;
use hmtt_merge::side_files::read_mapping;
use hmtt_sim::dram::{Scheduler, Timing};
use hmtt_sim::machine::SimConfig;
use hmtt_sim::report::{Sent, SimReport};
use hmtt_sim::send::{resolve, UdpSink};
use hmtt_sim::stream::{run_streamed, PacketSink, StreamOutputs};
use hmtt_sim::workload::{TraceFormatChoice, Workload, WorkloadKind, WorkloadSpec};
use std::path::PathBuf;
use std::time::Instant;

use crate::output::{prints_text, to_stdout, JsonOut};
use crate::shared::{parse_positive, usize_in, CacheArgs, WorkloadSize};

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
    #[arg(long, value_enum, default_value_t = WorkloadKind::SeqRead)]
    pub workload: WorkloadKind,
    #[command(flatten)]
    pub size: WorkloadSize,
    /// Run this many copies of the workload as interleaved processes
    /// (1..=65536).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub processes: u32,
    /// Operations a process runs before another may be scheduled (at
    /// least 1).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub quantum: u32,
    /// Rounds per process, each on a fresh buffer (frees and remaps;
    /// 1..=65536).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub rounds: u32,
    /// Add a DMA device doing this many transfers alongside.
    #[arg(long, default_value_t = 0)]
    pub dma: u64,
    /// Trace file for `--workload trace`.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace file format.
    #[arg(long, value_enum, default_value_t = TraceFormatChoice::Auto)]
    pub trace_format: TraceFormatChoice,
    /// Keep lackey's instruction fetches (`I` lines) as reads.
    #[arg(long)]
    pub instructions: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// DIMM geometry per channel: a preset or rank,bank,row,col_line bits.
    #[arg(long, default_value = "ddr3-4g")]
    pub geometry: Geometry,
    /// Address mapping file (TOML, docs/format.md §3); default linear.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// ddr3-1600, ddr2-400 or ddr-200.
    #[arg(long, default_value = "ddr3-1600")]
    pub speed: Timing,
    /// fcfs or frfcfs.
    #[arg(long, default_value = "frfcfs")]
    pub scheduler: Scheduler,
    /// Memory controller request queue depth (1..=4096).
    #[arg(long, default_value_t = 16, value_parser = usize_in(1, 4096))]
    pub queue_depth: usize,
    /// CPU ticks per line referenced (the processor's pace; 0..=65536).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=65_536))]
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
    /// Words per packet, 2..=2235 (360 for 1500-byte frames, 2235 for
    /// jumbo).
    #[arg(long, value_parser = usize_in(2, hmtt_format::packet::MAX_WORDS_JUMBO as u64))]
    pub max_words: Option<usize>,
    /// Write back every dirty line at the end.
    #[arg(long)]
    pub flush_at_end: bool,
    /// Output directory. Written as the run goes, in bounded memory (as
    /// are --send and --check).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Also write the ground truth as CSV.
    #[arg(long)]
    pub truth_csv: bool,
    /// Write only what a merge reads (captures, kernel log, events,
    /// summary): no DDR command streams and no ground truth, which take
    /// about 68 bytes a reference against the captures' 5.
    #[arg(long, conflicts_with = "truth_csv")]
    pub captures_only: bool,
    /// Check the DDR command streams against the timing rules.
    #[arg(long)]
    pub check: bool,
    /// Send the packets over UDP: HOST:PORT per board port (port p to the
    /// p-th; one address takes all; with several boards, boards*ports
    /// addresses board-major, or ports addresses shared by the boards).
    #[arg(long, value_delimiter = ',')]
    pub send: Vec<String>,
    /// Aggregate send rate in Gb/s of packet bytes, positive and finite;
    /// default as fast as possible.
    #[arg(long, value_parser = parse_positive)]
    pub rate: Option<f64>,
    /// Write the run's summary as JSON to this file ("-": standard output,
    /// instead of the text).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

fn workload(a: &SimArgs) -> anyhow::Result<Workload> {
    let spec = WorkloadSpec {
        trace: a.trace.as_deref(),
        trace_format: a.trace_format.format(),
        instructions: a.instructions,
        ..a.size.spec(a.workload, a.workload.default_size())
    };
    Ok(spec
        .build()?
        .rounds(a.rounds)
        .processes(a.processes, a.quantum)
        .with_dma(a.dma, a.quantum))
}

fn config(a: &SimArgs) -> anyhow::Result<SimConfig> {
    let geometry = a.geometry;
    let mut cfg = SimConfig::default().workload(workload(a)?).seed(a.seed);
    cfg.geometry = geometry;
    cfg.cache = a.cache.config();
    cfg.mapping = a
        .mapping
        .as_deref()
        .map(|p| read_mapping(p, geometry))
        .transpose()?;
    cfg.controller.timing = a.speed;
    cfg.controller.scheduler = a.scheduler;
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
    Ok(cfg.starting_now())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let args = *args.sim;
    if args.out.is_none() && args.send.is_empty() {
        bail!("nothing to do: give --out DIR and/or --send HOST:PORT[,...]");
    }
    if let (Some(json), Some(mapping)) = (args.json.as_ref().and_then(JsonOut::file), &args.mapping)
    {
        refuse_output_over_input(json, [mapping.as_path()])?;
    }
    let cfg = config(&args)?;
    let mut sink = if args.send.is_empty() {
        None
    } else {
        let dests = resolve(&args.send)?;
        let rate = args.rate.map(|g| g * 1e9);
        Some(UdpSink::new(&dests, args.boards, args.ports, rate)?)
    };
    let start = Instant::now();
    let outputs = StreamOutputs {
        dir: args.out.as_deref(),
        truth_csv: args.truth_csv,
        captures_only: args.captures_only,
        check: args.check,
        packets: sink.as_mut().map(|s| s as &mut (dyn PacketSink + Send)),
    };
    let run = run_streamed(cfg, outputs)?;
    let secs = start.elapsed().as_secs_f64();
    let report = SimReport {
        run: &run,
        seconds: secs,
        out: args.out.as_deref(),
        sent: sink.as_ref().map(|sink| Sent {
            stats: sink.stats(),
            seconds: sink.seconds(),
        }),
    };
    if let Some(json) = &args.json {
        json.write("writing the run summary", |out| report.write_json(out))?;
    }
    if prints_text(args.json.as_ref()) {
        to_stdout("writing the run summary", |out| write!(out, "{report}"))?;
    }
    Ok(run.check_timing()?)
}
