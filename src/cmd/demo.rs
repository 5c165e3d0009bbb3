//! `hmtt demo`: the whole path on one machine. The simulated machine and
//! its boards run a workload; the packets go over loopback UDP, one socket
//! per board port, to the receiver, which writes capture files; merge turns
//! them into a trace; the trace is compared record by record with the
//! simulation's ground truth. Optional faults (dropped, duplicated,
//! reordered packets, a cut capture file) show that the merge reports
//! exactly what is missing and that everything else still matches.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hmtt_format::record::BoardEvent;
use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::truth::{RefKind, TruthRecord};
use hmtt_format::Packet;
use hmtt_merge::names::event_name;
use hmtt_merge::verify::compare;
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::send::{PacketSender, SenderOptions};
use hmtt_sim::workload::{Workload, WorkloadKind};

use crate::shared::{parse_size, OnOff};

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
    /// Sending rate over all ports, Gb/s of UDP payload.
    #[arg(long, default_value_t = 1.0)]
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

fn board_seq(s: &str) -> anyhow::Result<(u8, u64)> {
    let (b, q) = s
        .split_once(':')
        .with_context(|| format!("'{s}' is not BOARD:NUMBER"))?;
    Ok((b.trim().parse()?, q.trim().parse()?))
}

/// The trace record the merge must produce for a ground-truth reference.
fn expected_record(out: &SimOutput, r: &TruthRecord) -> anyhow::Result<TraceRecord> {
    let board = out.board_configs[usize::from(r.board)].board_id;
    Ok(if r.kind == RefKind::Icode {
        let index = r.event.context("an I-code without an event index")?;
        if index < 64 {
            TraceRecord::new(r.tick, board, RecordKind::Cmd, u64::from(index))
        } else {
            TraceRecord::new(
                r.tick,
                board,
                RecordKind::Tag { write: r.write },
                u64::from(index),
            )
        }
    } else {
        TraceRecord::access(r.tick, board, r.write, r.pa)
    })
}

/// (board, tick, kind) of every event a packet carries: what is lost with it.
fn events_of(board: u8, bytes: &[u8], lost: &mut HashMap<(u8, u64, u8), u32>) {
    if let Ok(p) = Packet::new_checked(bytes) {
        for e in p.events().flatten() {
            let k = match e.event {
                BoardEvent::Access { write, .. } => u8::from(write),
                BoardEvent::Tag { write, .. } => 2 + u8::from(write),
                BoardEvent::Cmd { .. } => 4,
                BoardEvent::Lost { .. } => 5,
            };
            *lost.entry((board, e.tick, k)).or_default() += 1;
        }
    }
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
    let size = args.n.as_deref().map(parse_size).transpose()?;
    let unit = u32::try_from(parse_size(&args.unit)?).context("--unit")?;
    let stride = parse_size(&args.stride)?;
    if args.workload == WorkloadKind::Trace {
        bail!("hmtt demo has no trace workload (hmtt sim --workload trace has)");
    }
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
    cfg = cfg.starting_now();

    let temp;
    let dir: PathBuf = match &args.keep {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d.clone()
        }
        None => {
            temp = TempDir::new()?;
            temp.0.clone()
        }
    };
    let capture_dir = dir.join("capture");
    if capture_dir.exists() {
        std::fs::remove_dir_all(&capture_dir)
            .with_context(|| format!("clearing {}", capture_dir.display()))?;
    }

    // 1. The simulated machine and its boards.
    let out = simulate(&cfg).context("simulating the machine")?;
    let refs = out
        .truth
        .iter()
        .filter(|r| r.kind != RefKind::Icode)
        .count();
    let icodes = out.truth.len() - refs;
    let total_packets: usize = out.packets.iter().map(Vec::len).sum();
    println!(
        "hmtt demo: {} on a simulated machine (cache {}), {} boards x {} ports, loopback UDP",
        args.workload.name(),
        args.cache.name(),
        args.boards,
        args.ports
    );
    println!(
        "  simulated:  {refs} memory references, {icodes} I-codes, {total_packets} packets from the boards' golden model"
    );
    let dropped_board: u64 = out.board_counters.iter().map(|c| c.events_dropped).sum();
    if dropped_board > 0 {
        println!("  note: the boards dropped {dropped_board} events (TX FIFO overflow)");
    }
    let events = hmtt_format::events::emit(out.events.iter().map(|(n, i)| (n.as_str(), *i)));
    std::fs::write(dir.join("events.toml"), events)?;

    // 2. The receiver, one UDP socket per board port.
    let mut rx_inputs = Vec::new();
    for b in 0..args.boards {
        for p in 0..args.ports {
            rx_inputs.push(Input {
                source: Source::Udp("127.0.0.1:0".into()),
                port: b * args.ports + p,
                udp_port: None,
            });
        }
    }
    let mut rcfg = CaptureConfig::new(rx_inputs, vec![capture_dir.clone()]);
    rcfg.name = "demo".into();
    rcfg.progress = false;
    rcfg.preallocate = false;
    rcfg.rcvbuf_bytes = 64 << 20;

    // 3. What to send, in the order the boards would, with the faults.
    let drops: BTreeSet<(u8, u64)> = args
        .drop
        .iter()
        .map(|s| board_seq(s))
        .collect::<Result<_, _>>()?;
    let dups: BTreeSet<(u8, u64)> = args
        .duplicate
        .iter()
        .map(|s| board_seq(s))
        .collect::<Result<_, _>>()?;
    let mut schedule: Vec<(u64, usize, &[u8], u8, u64)> = Vec::new();
    for (bi, packets) in out.packets.iter().enumerate() {
        let board = out.board_configs[bi].board_id;
        let mut per_port: Vec<Vec<&hmtt_sim::board::BoardPacket>> =
            vec![Vec::new(); usize::from(args.ports)];
        for p in packets {
            per_port[usize::from(p.port)].push(p);
        }
        for (port, list) in per_port.iter_mut().enumerate() {
            // Send times stay in place; reordering swaps the packets in them.
            let times: Vec<u64> = list.iter().map(|p| p.leave_tick).collect();
            if args.reorder > 0 {
                let mut i = args.reorder - 1;
                while i + 1 < list.len() {
                    list.swap(i, i + 1);
                    i += args.reorder;
                }
            }
            let dest = bi * usize::from(args.ports) + port;
            for (k, p) in list.iter().enumerate() {
                if drops.contains(&(board, p.seq)) {
                    continue;
                }
                let when = times[k];
                schedule.push((when, dest, &p.bytes, board, p.seq));
                if dups.contains(&(board, p.seq)) {
                    schedule.push((when, dest, &p.bytes, board, p.seq));
                }
            }
        }
    }
    // Stable: each port keeps its own order.
    schedule.sort_by_key(|s| s.0);
    let stop = Arc::new(AtomicBool::new(false));
    rcfg.packets = Some(schedule.len() as u64);
    rcfg.duration = Some(Duration::from_secs(30 + schedule.len() as u64 / 20_000));
    let handle = Capture::start(rcfg, stop).context("starting the receiver")?;
    let dests: Vec<SocketAddr> = handle
        .local_addrs()
        .iter()
        .map(|a| a.context("a receiver input without a UDP address"))
        .collect::<anyhow::Result<_>>()?;
    let mut tx = PacketSender::new(
        &dests,
        SenderOptions {
            rate_bps: (args.rate > 0.0).then_some(args.rate * 1e9),
            ..Default::default()
        },
    )
    .context("opening the UDP sender")?;
    for (_, dest, bytes, _, _) in &schedule {
        tx.send(*dest, bytes).context("sending")?;
    }
    tx.flush()?;
    let sent = tx.stats();
    let summary = handle.wait().context("receiver")?;
    let received: u64 = summary.ports.iter().map(|p| p.packets).sum();
    println!(
        "  sent:       {} packets ({} bytes) to {} ports on 127.0.0.1",
        sent.packets,
        sent.bytes,
        dests.len()
    );
    println!(
        "  received:   {received} packets into {} ({})",
        capture_dir.display(),
        summary.stop_reason
    );

    // 4. Fault: cut a capture file after reception.
    let mut lost: HashMap<(u8, u64, u8), u32> = HashMap::new();
    let mut lost_seqs: BTreeSet<(u8, u64)> = drops.clone();
    if let Some(spec) = &args.truncate {
        let (b, p) = board_seq(spec)?;
        let bi = out
            .board_configs
            .iter()
            .position(|c| c.board_id == b)
            .with_context(|| format!("--truncate: no board {b}"))?;
        let input_port = u8::try_from(bi * usize::from(args.ports) + p as usize)?;
        let path = capture_dir.join(hmtt_receiver::writer::file_name(
            "demo", input_port, 0, false,
        ));
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let (_, reader) = hmtt_format::capture::CaptureReader::new(&bytes)?;
        let recs: Vec<_> = reader
            .map(|r| (r.offset, r.packet.len(), r.packet.to_vec()))
            .collect();
        if recs.len() < 2 {
            bail!(
                "--truncate: {} holds too few packets to cut",
                path.display()
            );
        }
        let (cut, len, _) = recs[recs.len() / 2];
        for (_, _, pkt) in &recs[recs.len() / 2..] {
            if let Ok(v) = Packet::new_checked(&pkt[..]) {
                lost_seqs.insert((b, v.seq()));
            }
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len((cut + 16 + len / 2) as u64))
            .with_context(|| format!("cutting {}", path.display()))?;
        println!(
            "  fault:      cut {} at byte {}",
            path.display(),
            cut + 16 + len / 2
        );
    }
    for (bi, packets) in out.packets.iter().enumerate() {
        let board = out.board_configs[bi].board_id;
        for p in packets {
            if lost_seqs.contains(&(board, p.seq)) {
                events_of(board, &p.bytes, &mut lost);
            }
        }
    }

    // 5. Merge.
    let trace_path = dir.join("demo.hmtttrace");
    let margs = crate::cmd::merge::Args {
        inputs: vec![capture_dir.clone()],
        output: trace_path.clone(),
        events: Some(dir.join("events.toml")),
        mapping: None,
        interleave_shift: (args.boards > 1).then_some(cfg.interleave_shift),
        reorder_depth: hmtt_merge::reassemble::DEFAULT_REORDER_DEPTH,
        max_start_skew: 600.0,
        quiet: true,
        decode_threads: crate::cmd::merge::DecodeThreads::Auto,
    };
    let report = crate::cmd::merge::merge_files(&margs)?;
    println!(
        "  merged:     {} packets, {} records into {}",
        report.packets(),
        report.records,
        trace_path.display()
    );
    if !report.is_clean() {
        for line in report.to_string().lines().skip(1) {
            println!("    {line}");
        }
    }

    // 6. Compare with the ground truth.
    let bytes = std::fs::read(&trace_path)?;
    let view = TraceView::new_checked(&bytes)?;
    let mut expected = Vec::with_capacity(out.truth.len());
    for r in &out.truth {
        let rec = expected_record(&out, r)?;
        let k = rec.kind().bits().min(5);
        if let Some(n) = lost.get_mut(&(rec.board(), rec.tick, k)) {
            if *n > 0 {
                *n -= 1;
                continue;
            }
        }
        expected.push(rec);
    }
    let cmp = compare(expected.iter().copied(), view.records());
    let tick_ns = f64::from(out.tick_ps) / 1000.0;
    println!("  first records (trace | ground truth):");
    let truth_refs = expected.iter().filter(|r| r.is_access());
    for (r, t) in view
        .records()
        .filter(|r| r.is_access())
        .zip(truth_refs)
        .take(4)
    {
        let line = |r: &TraceRecord| {
            format!(
                "{:>12.3} ns  board {}  {:#012x} {:<5}",
                r.tick as f64 * tick_ns,
                r.board(),
                r.pa(),
                r.kind().name()
            )
        };
        println!("    {} | {}", line(&r), line(t));
    }
    if let Some(r) = view
        .records()
        .find(|r| matches!(r.kind(), RecordKind::Tag { .. }))
    {
        println!(
            "    first tag: {} at {:.3} ns",
            event_name(r.value() as u32, view.names()),
            r.tick as f64 * tick_ns
        );
    }
    let reported: BTreeSet<(u8, u64)> = report
        .boards
        .iter()
        .flat_map(|b| {
            b.gaps
                .iter()
                .flat_map(move |g| (g.first_seq..=g.last_seq).map(move |s| (b.board, s)))
        })
        .collect();
    // A loss after a board's last merged packet leaves no gap anyone can see.
    let visible: BTreeSet<(u8, u64)> = lost_seqs
        .iter()
        .copied()
        .filter(|(b, s)| {
            report
                .boards
                .iter()
                .find(|r| r.board == *b)
                .and_then(|r| r.last_seq)
                .is_some_and(|last| *s < last)
        })
        .collect();
    let losses_exact = reported == visible;
    let dup_expected = dups.iter().filter(|d| !lost_seqs.contains(d)).count() as u64;
    println!(
        "  ground truth: {} of {} records match ({:.2}%), {} in the trace{}",
        cmp.matched,
        cmp.expected,
        cmp.match_percent(),
        cmp.got,
        if lost_seqs.is_empty() {
            String::new()
        } else {
            format!(
                "; {} packets lost on purpose, {} reported missing",
                lost_seqs.len(),
                reported.len()
            )
        }
    );
    if let Some((at, e, g)) = &cmp.first_difference {
        println!("  FIRST DIFFERENCE at record {at}: expected {e:?}, got {g:?}");
    }
    let ok = cmp.is_exact() && losses_exact && report.packets_duplicate() == dup_expected;
    println!(
        "RESULT exact={} matched={} expected={} got={} missing_reported={} missing_expected={} duplicates={} seconds={:.2}",
        ok,
        cmp.matched,
        cmp.expected,
        cmp.got,
        reported.len(),
        visible.len(),
        report.packets_duplicate(),
        t_start.elapsed().as_secs_f64()
    );
    if !ok {
        bail!("the merged trace does not match the ground truth");
    }
    Ok(())
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> anyhow::Result<TempDir> {
        let base = std::env::temp_dir();
        for i in 0..1000u32 {
            let p = base.join(format!("hmtt-demo-{}-{i}", std::process::id()));
            if std::fs::create_dir(&p).is_ok() {
                return Ok(TempDir(p));
            }
        }
        bail!("cannot create a temporary directory in {}", base.display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
