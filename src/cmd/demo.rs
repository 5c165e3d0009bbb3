//! `hmtt demo`: the whole path on one machine. The simulated machine and
//! its boards run a workload; the packets go over loopback UDP, one socket
//! per board port, to the receiver, which writes capture files; merge turns
//! them into a trace; the trace is compared record by record with the
//! simulation's ground truth. Optional faults (dropped, duplicated,
//! reordered packets, a cut capture file) show that the merge reports
//! exactly what is missing and that everything else still matches. The
//! faults are `hmtt_sim::faults`, the checks `hmtt_merge::verify`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hmtt_format::text::parse_size;
use hmtt_format::trace::TraceView;
use hmtt_format::TickLength;
use hmtt_merge::merge::decode_threads_pay_off;
use hmtt_merge::verify::{expected_trace, FirstRecords, LostEvents, Verdict, VerdictReport};
use hmtt_merge::{merge_to_trace, CaptureSet, MergeOptions, MergeReport};
use hmtt_receiver::{Capture, CaptureConfig, Input};
use hmtt_sim::faults::{cut_capture, schedule, Faults, Send};
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::outdir::{events_toml, files};
use hmtt_sim::send::{PacketSender, SenderOptions};
use hmtt_sim::workload::{Workload, WorkloadKind};

use crate::shared::{load_names, non_negative_finite, parse_number, to_stdout, OnOff};

mod print;

/// Arguments of `hmtt demo`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  hmtt demo\n  \
hmtt demo --workload seq-read --n 1M --boards 2 --ports 3 --keep out/demo\n  \
hmtt demo --drop 0:5,1:9 --duplicate 0:3 --reorder 4 --truncate 1:2")]
pub struct Args {
    /// The simulated machine's workload (all but `trace`).
    #[arg(long, value_enum, default_value_t = WorkloadKind::Quicksort)]
    pub workload: WorkloadKind,
    /// Workload size: elements for quicksort, bytes (K/M/G) for the others.
    #[arg(long)]
    pub n: Option<String>,
    /// Bytes per reference of the micro-benchmarks.
    #[arg(long, default_value = "64")]
    pub unit: String,
    /// Distance between references of `strided`.
    #[arg(long, default_value = "4096")]
    pub stride: String,
    /// Boards (memory channels), each with its own ports.
    #[arg(long, default_value_t = 2)]
    pub boards: u8,
    /// Gigabit ports per board.
    #[arg(long, default_value_t = 3)]
    pub ports: u8,
    /// Cache on or off.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub cache: OnOff,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sending rate over all ports, Gb/s of UDP payload, finite (0: as
    /// fast as possible).
    #[arg(long, default_value_t = 1.0, value_parser = non_negative_finite)]
    pub rate: f64,
    /// Keep the captures, trace and outputs in this directory (default: a temporary one).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Fault: packets not sent, as BOARD:SEQ (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Fault: packets sent twice, as BOARD:SEQ.
    #[arg(long, value_delimiter = ',')]
    pub duplicate: Vec<String>,
    /// Fault: on every port swap each N-th packet with the next one when sending (0: off).
    #[arg(long, default_value_t = 0)]
    pub reorder: usize,
    /// Fault: cut the capture file of BOARD:PORT in the middle of a record half-way through.
    #[arg(long)]
    pub truncate: Option<String>,
}

/// `BOARD:NUMBER`.
fn board_seq(s: &str) -> anyhow::Result<(u8, u64)> {
    let (b, q) = s
        .split_once(':')
        .with_context(|| format!("'{s}' is not BOARD:NUMBER"))?;
    let board = u8::try_from(parse_number(b)?).with_context(|| format!("board in '{s}'"))?;
    Ok((board, parse_number(q)?))
}

fn board_seqs(specs: &[String]) -> anyhow::Result<BTreeSet<(u8, u64)>> {
    specs.iter().map(|s| board_seq(s)).collect()
}

/// The simulated machine of `args`.
fn config(args: &Args) -> anyhow::Result<SimConfig> {
    if args.workload == WorkloadKind::Trace {
        bail!("hmtt demo has no trace workload (hmtt sim --workload trace has)");
    }
    let size = args.n.as_deref().map(parse_size).transpose()?;
    let unit = u32::try_from(parse_size(&args.unit)?).context("--unit")?;
    let stride = parse_size(&args.stride)?;
    let size = size.unwrap_or(args.workload.demo_size());
    let workload = Workload::of_kind(args.workload, size, unit, stride)?;
    let mut cfg = SimConfig::default()
        .workload(workload)
        .seed(args.seed)
        .boards(args.boards)
        .ports(args.ports);
    if args.cache == OnOff::Off {
        cfg = cfg.cache_off();
    }
    Ok(cfg.starting_now())
}

/// Starts the receiver on a loopback UDP socket per board port, sends it
/// `sends` and waits until it has them all (or times out); prints what
/// went.
fn send_and_capture(args: &Args, sends: &[Send], capture_dir: &Path) -> anyhow::Result<()> {
    let mut rcfg = CaptureConfig::new(
        Input::loopback(args.boards * args.ports),
        vec![capture_dir.to_path_buf()],
    );
    rcfg.name = "demo".into();
    rcfg.progress = false;
    rcfg.preallocate = false;
    rcfg.rcvbuf_bytes = 64 << 20;
    rcfg.packets = Some(sends.len() as u64);
    rcfg.duration = Some(Duration::from_secs(30 + sends.len() as u64 / 20_000));
    let stop = Arc::new(AtomicBool::new(false));
    let handle = Capture::start(rcfg, stop).context("starting the receiver")?;
    let dests: Vec<SocketAddr> = handle
        .local_addrs()
        .iter()
        .map(|a| a.context("a receiver input without a UDP address"))
        .collect::<anyhow::Result<_>>()?;
    let options = SenderOptions {
        rate_bps: (args.rate > 0.0).then_some(args.rate * 1e9),
        ..Default::default()
    };
    let mut tx = PacketSender::new(&dests, options).context("opening the UDP sender")?;
    for s in sends {
        tx.send(s.dest, s.bytes).context("sending")?;
    }
    tx.flush()?;
    let sent = tx.stats();
    let summary = handle.wait().context("receiver")?;
    let received: u64 = summary.ports.iter().map(|p| p.packets).sum();
    to_stdout("writing the demo's report", |w| {
        writeln!(
            w,
            "  sent:       {} packets ({} bytes) to {} ports on 127.0.0.1",
            sent.packets,
            sent.bytes,
            dests.len()
        )?;
        writeln!(
            w,
            "  received:   {received} packets into {} ({})",
            capture_dir.display(),
            summary.stop_reason
        )?;
        Ok(())
    })?;
    Ok(())
}

/// `--truncate BOARD:PORT`: cuts that port's capture file; the packets
/// cut off join `lost`.
fn truncate(
    spec: &str,
    out: &SimOutput,
    ports: u8,
    capture_dir: &Path,
    lost: &mut BTreeSet<(u8, u64)>,
) -> anyhow::Result<()> {
    let (b, p) = board_seq(spec)?;
    let bi = out
        .board_configs
        .iter()
        .position(|c| c.board_id == b)
        .with_context(|| format!("--truncate: no board {b}"))?;
    let input_port = u8::try_from(bi * usize::from(ports) + p as usize)?;
    let name = hmtt_receiver::writer::file_name("demo", input_port, 0, false);
    let path = capture_dir.join(name);
    let cut = cut_capture(&path).context("--truncate")?;
    lost.extend(cut.lost.iter().map(|&s| (b, s)));
    to_stdout("writing the demo's report", |w| {
        writeln!(w, "  fault:      cut {} at byte {}", path.display(), cut.at)
    })?;
    Ok(())
}

/// The merge of the captures in `dir`, with the demo's event names.
fn merge_captures(
    args: &Args,
    cfg: &SimConfig,
    dir: &Path,
    trace: &Path,
) -> anyhow::Result<MergeReport> {
    let set = CaptureSet::open(&[dir.join("capture")], 600_000_000_000)?;
    let names = load_names(Some(&dir.join(files::EVENTS)), &[])?;
    let opts = MergeOptions {
        interleave_shift: (args.boards > 1).then_some(cfg.interleave_shift),
        decode_threads: decode_threads_pay_off(set.boards.len()),
        ..Default::default()
    };
    let (report, _) = merge_to_trace(&set, &opts, trace, &names, &mut |_| {})?;
    to_stdout("writing the demo's report", |w| {
        writeln!(
            w,
            "  merged:     {} packets, {} records into {}",
            report.packets(),
            report.records,
            trace.display()
        )?;
        if !report.is_clean() {
            for line in report.to_string().lines().skip(1) {
                writeln!(w, "    {line}")?;
            }
        }
        Ok(())
    })?;
    Ok(report)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let t_start = Instant::now();
    if args.boards == 0 || args.ports == 0 {
        bail!("--boards and --ports must be at least 1");
    }
    let inputs = u32::from(args.boards) * u32::from(args.ports);
    if inputs > 64 {
        bail!("{inputs} ports in all is more than this demo opens (64)");
    }
    let cfg = config(&args)?;
    let temp;
    let dir: PathBuf = match &args.keep {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new().prefix("hmtt-demo-").tempdir()?;
            temp.path().to_path_buf()
        }
    };
    let capture_dir = dir.join("capture");
    if capture_dir.exists() {
        std::fs::remove_dir_all(&capture_dir)
            .with_context(|| format!("clearing {}", capture_dir.display()))?;
    }

    // 1. The simulated machine and its boards.
    let out = simulate(&cfg).context("simulating the machine")?;
    to_stdout("writing the demo's report", |w| {
        print::simulated(w, &args, &out)
    })?;
    std::fs::write(dir.join(files::EVENTS), events_toml(&out.events))?;

    // 2. Over loopback UDP to the receiver, with the faults.
    let faults = Faults {
        drop: board_seqs(&args.drop)?,
        duplicate: board_seqs(&args.duplicate)?,
        reorder: args.reorder,
    };
    send_and_capture(&args, &schedule(&out, &faults), &capture_dir)?;

    // 3. Fault: cut a capture file after reception.
    let mut lost_seqs = faults.drop.clone();
    if let Some(spec) = &args.truncate {
        truncate(spec, &out, args.ports, &capture_dir, &mut lost_seqs)?;
    }
    let mut lost = LostEvents::default();
    for (packets, config) in out.packets.iter().zip(&out.board_configs) {
        for p in packets {
            if lost_seqs.contains(&(config.board_id, p.seq)) {
                lost.add_packet(config.board_id, &p.bytes);
            }
        }
    }

    // 4. Merge.
    let trace_path = dir.join("demo.hmtttrace");
    let report = merge_captures(&args, &cfg, &dir, &trace_path)?;

    // 5. Compare with the ground truth, less what the faults took.
    let bytes = std::fs::read(&trace_path)?;
    let view = TraceView::new_checked(&bytes)?;
    let board_ids: Vec<u8> = out.board_configs.iter().map(|c| c.board_id).collect();
    let expected = expected_trace(&out.truth, &board_ids, lost)?;
    let first = FirstRecords {
        trace: &view,
        expected: &expected,
        tick: TickLength::of_ps(out.tick_ps),
    };
    to_stdout("writing the demo's report", |w| write!(w, "{first}"))?;
    let verdict = Verdict::new(
        &expected,
        view.records(),
        &report,
        &lost_seqs,
        &faults.duplicate,
    );
    let seconds = t_start.elapsed().as_secs_f64();
    let report = VerdictReport {
        verdict: &verdict,
        lost_on_purpose: lost_seqs.len(),
        seconds,
    };
    to_stdout("writing the demo's report", |w| write!(w, "{report}"))?;
    if !verdict.is_exact() {
        bail!("the merged trace does not match the ground truth");
    }
    Ok(())
}
