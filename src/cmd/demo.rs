//! `hmtt demo`: the whole path on one machine. The simulated machine and
//! its boards run a workload; the packets go over loopback UDP, one socket
//! per board port, to the receiver, which writes capture files; merge turns
//! them into a trace; the trace is compared record by record with the
//! simulation's ground truth. Optional faults (dropped, duplicated,
//! reordered packets, a cut capture file) show that the merge reports
//! exactly what is missing and that everything else still matches. The
//! faults are `hmtt_sim::faults`, the checks `hmtt_merge::verify`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use hmtt_format::trace::TraceView;
use hmtt_format::TickLength;
use hmtt_merge::merge::decode_threads_pay_off;
use hmtt_merge::side_files::read_names;
use hmtt_merge::verify::{expected_trace, FirstRecords, LostEvents, Verdict, VerdictReport};
use hmtt_merge::{merge_to_trace, CaptureSet, MergeOptions, MergeReport};
use hmtt_receiver::{Capture, CaptureConfig};
use hmtt_sim::faults::{
    cut_capture, input_of, lost_packets, parse_board_number, schedule, Faults, Send,
};
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::outdir::{events_toml, files};
use hmtt_sim::send::{PacketSender, SenderOptions};
use hmtt_sim::workload::WorkloadKind;

use crate::output::to_stdout;
use crate::shared::{parse_non_negative, OnOff, WorkloadSize};

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
    #[command(flatten)]
    pub size: WorkloadSize,
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
    #[arg(long, default_value_t = 1.0, value_parser = parse_non_negative)]
    pub rate: f64,
    /// Keep the captures, trace and outputs in this directory (default: a temporary one).
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Fault: packets not sent, as BOARD:SEQ (comma separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_board_number)]
    pub drop: Vec<(u8, u64)>,
    /// Fault: packets sent twice, as BOARD:SEQ.
    #[arg(long, value_delimiter = ',', value_parser = parse_board_number)]
    pub duplicate: Vec<(u8, u64)>,
    /// Fault: on every port swap each N-th packet with the next one when sending (0: off).
    #[arg(long, default_value_t = 0)]
    pub reorder: usize,
    /// Fault: cut the capture file of BOARD:PORT in the middle of a record half-way through.
    #[arg(long, value_parser = parse_board_number)]
    pub truncate: Option<(u8, u64)>,
}

/// The simulated machine of `args`.
fn config(args: &Args) -> anyhow::Result<SimConfig> {
    if args.workload == WorkloadKind::Trace {
        bail!("hmtt demo has no trace workload (hmtt sim --workload trace has)");
    }
    let workload = args.size.spec(args.workload, args.workload.demo_size());
    let workload = workload.build()?;
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
    let inputs = args.boards * args.ports;
    let rcfg = CaptureConfig::loopback_run(inputs, capture_dir, "demo", sends.len() as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let handle = Capture::start(rcfg, stop).context("starting the receiver")?;
    let dests = handle.udp_addrs()?;
    let options = SenderOptions {
        rate_bps: (args.rate > 0.0).then_some(args.rate * 1e9),
        ..Default::default()
    };
    let mut tx = PacketSender::new(&dests, options).context("opening the UDP sender")?;
    let sent = tx.send_all(sends.iter().map(|s| (s.dest, s.bytes)));
    let sent = sent.context("sending")?;
    let summary = handle.wait().context("receiver")?;
    to_stdout("writing the demo's report", |w| {
        print::sent(w, &sent, dests.len(), &summary, capture_dir)
    })
}

/// `--truncate BOARD:PORT`: cuts that port's capture file; the packets
/// cut off join `lost`.
fn truncate(
    (b, p): (u8, u64),
    out: &SimOutput,
    ports: u8,
    capture_dir: &Path,
    lost: &mut BTreeSet<(u8, u64)>,
) -> anyhow::Result<()> {
    let input = input_of(out, ports, b, p).with_context(|| format!("--truncate: no board {b}"))?;
    let input_port = u8::try_from(input)?;
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
    let names = read_names(Some(&dir.join(files::EVENTS)), &[])?;
    let opts = MergeOptions {
        interleave_shift: (args.boards > 1).then_some(cfg.interleave_shift),
        decode_threads: decode_threads_pay_off(set.boards.len()),
        ..Default::default()
    };
    let (report, _) = merge_to_trace(&set, &opts, trace, &names, &mut |_| {})?;
    to_stdout("writing the demo's report", |w| {
        print::merged(w, &report, trace)
    })?;
    Ok(report)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let t_start = Instant::now();
    let inputs = u32::from(args.boards) * u32::from(args.ports);
    anyhow::ensure!(inputs > 0, "--boards and --ports must be at least 1");
    anyhow::ensure!(
        inputs <= 64,
        "{inputs} ports in all is more than this demo opens (64)"
    );
    let cfg = config(&args)?;
    // Removed when the demo ends, unless the outputs go to --keep.
    let temp = tempfile::Builder::new().prefix("hmtt-demo-").tempdir()?;
    let dir = args.keep.clone().unwrap_or(temp.path().to_path_buf());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
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
        drop: args.drop.iter().copied().collect(),
        duplicate: args.duplicate.iter().copied().collect(),
        reorder: args.reorder,
    };
    send_and_capture(&args, &schedule(&out, &faults), &capture_dir)?;

    // 3. Fault: cut a capture file after reception.
    let mut lost_seqs = faults.drop.clone();
    if let Some(spec) = args.truncate {
        truncate(spec, &out, args.ports, &capture_dir, &mut lost_seqs)?;
    }
    let lost: LostEvents = lost_packets(&out, &lost_seqs).collect();

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
