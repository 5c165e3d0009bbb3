//! Mutation fuzzing of every reader (issue 19), on stable Rust with
//! proptest: valid seed files from `hmtt sim`, `merge` and `replay` are
//! damaged (bytes overwritten, u64 fields set to extreme values, bytes
//! inserted or deleted, cuts) and fed to the library entry points that read
//! them. Properties: no panic; a merged trace is in time order; statistics
//! stay small whatever the span; no hang (a watchdog aborts the run); a
//! damaged trace or virtual trace that opens as finished reads exactly as
//! its seed (the checksums of docs/format.md §11.1).
//!
//! `cargo test` runs a short, bounded budget of cases per reader.
//! `HMTT_FUZZ_SECONDS=N` runs rounds with fresh seeds until N seconds have
//! passed (e.g. 3600 for the long run).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hmtt_format::capture::CaptureReader;
use hmtt_format::events::EventNames;
use hmtt_format::klog;
use hmtt_format::trace::TraceView;
use hmtt_format::vtrace::VtraceView;
use hmtt_merge::replay::{ReplayFilter, Replayer};
use hmtt_merge::stats::TraceStats;
use hmtt_merge::{merge, CaptureSet, MergeOptions, VecSink};
use hmtt_receiver::frame::{build_udp_frame, extract, UdpEndpoints, LINKTYPE_ETHERNET};
use hmtt_receiver::pcapng::PcapngWriter;
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

mod support;
use support::cli::{ok, s, simulate_and_merge};

/// One damage to a file.
#[derive(Debug, Clone)]
enum Edit {
    /// Overwrites one byte.
    Byte {
        at: u64,
        value: u8,
    },
    /// Overwrites 8 bytes with an extreme little-endian u64.
    Word {
        at: u64,
        value: u64,
    },
    Insert {
        at: u64,
        value: u8,
    },
    Delete {
        at: u64,
    },
    /// Cuts the file there.
    Cut {
        at: u64,
    },
}

/// Extreme values and any value, for u64 fields.
fn extreme() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX - 99),
        Just(1 << 63),
        Just(u64::from(u32::MAX)),
        any::<u64>(),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    let extreme = extreme();
    prop_oneof![
        6 => (any::<u64>(), any::<u8>()).prop_map(|(at, value)| Edit::Byte { at, value }),
        3 => (any::<u64>(), extreme).prop_map(|(at, value)| Edit::Word { at, value }),
        1 => (any::<u64>(), any::<u8>()).prop_map(|(at, value)| Edit::Insert { at, value }),
        1 => any::<u64>().prop_map(|at| Edit::Delete { at }),
        1 => any::<u64>().prop_map(|at| Edit::Cut { at }),
    ]
}

/// `seed` with `edits` applied (positions wrap around the length).
fn damaged(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let pos = |at: u64, len: usize| (at % (len.max(1) as u64)) as usize;
        match *e {
            Edit::Byte { at, value } if !b.is_empty() => {
                let i = pos(at, b.len());
                b[i] = value;
            }
            Edit::Word { at, value } if b.len() >= 8 => {
                let i = pos(at, b.len() - 7);
                b[i..i + 8].copy_from_slice(&value.to_le_bytes());
            }
            Edit::Insert { at, value } => {
                let i = pos(at, b.len() + 1);
                b.insert(i, value);
            }
            Edit::Delete { at } if !b.is_empty() => {
                let i = pos(at, b.len());
                b.remove(i);
            }
            Edit::Cut { at } => b.truncate(pos(at, b.len() + 1)),
            _ => {}
        }
    }
    b
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    proptest::collection::vec(edit(), 1..6)
}

/// Valid files of one simulated run, read once.
struct Seeds {
    captures: Vec<(String, Vec<u8>)>,
    trace: Vec<u8>,
    vtrace: Vec<u8>,
    log: Vec<u8>,
    commands: Vec<u8>,
    events: Vec<u8>,
    dir: PathBuf,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        // One fixed place, cleared each run, so runs leave no heaps behind.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-readers");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (run, trace) =
            simulate_and_merge(&dir, &["--workload", "quicksort", "--n", "20000"], &[]);
        let log = run.join("pagetable.hmttlog");
        let vtrace = dir.join("t.hmttvtrace");
        ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
        let mut captures: Vec<(String, Vec<u8>)> = std::fs::read_dir(&run)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "hmttcap"))
            .map(|p| (s(&p).to_string(), std::fs::read(&p).unwrap()))
            .collect();
        captures.sort();
        assert!(!captures.is_empty());
        let read = |p: PathBuf| std::fs::read(p).unwrap();
        Seeds {
            captures,
            trace: read(trace),
            vtrace: read(vtrace),
            log: read(log),
            commands: read(run.join("commands-b0.txt")),
            events: read(run.join("events.toml")),
            dir,
        }
    })
}

/// The records' ticks never go down.
fn in_time_order(ticks: impl Iterator<Item = u64>) -> bool {
    let mut last = 0;
    ticks.into_iter().all(|t| {
        let ok = t >= last;
        last = t;
        ok
    })
}

/// Summary statistics of a trace, with a tiny interval so a huge span
/// would show: memory must stay bounded by the rows kept.
fn stats(ticks_and_records: &[hmtt_format::trace::TraceRecord]) {
    let mut s = TraceStats::new(1, 20);
    for r in ticks_and_records {
        s.add(r);
    }
    assert!(s.intervals().count() <= 20);
}

/// A packet header field set to `value`: (record index, field, value).
type FieldEdit = (u64, u8, u64);

fn field_edits() -> impl Strategy<Value = Vec<FieldEdit>> {
    proptest::collection::vec((any::<u64>(), 0u8..5, extreme()), 0..3)
}

/// Sets packet header fields in a capture file (format.md §5, §7): seq,
/// t0, nwords, tick_ps, or board and port.
fn with_fields(file: &[u8], fields: &[FieldEdit]) -> Vec<u8> {
    let Ok((_, records)) = CaptureReader::new(file) else {
        return file.to_vec();
    };
    let starts: Vec<usize> = records.map(|r| r.offset + 16).collect();
    let mut b = file.to_vec();
    for &(record, field, value) in fields {
        let Some(&at) = starts.get((record % starts.len().max(1) as u64) as usize) else {
            continue;
        };
        let (off, len) = [(8, 8), (16, 8), (24, 2), (30, 2), (6, 2)][usize::from(field)];
        b[at + off..at + off + len].copy_from_slice(&value.to_le_bytes()[..len]);
    }
    b
}

fn fuzz_captures(which: usize, fields: &[FieldEdit], edits: &[Edit]) {
    let seeds = seeds();
    let mut files = seeds.captures.clone();
    let i = which % files.len();
    files[i].1 = damaged(&with_fields(&files[i].1, fields), edits);
    let Ok(set) = CaptureSet::from_memory(files, u64::MAX) else {
        return;
    };
    let mut sink = VecSink::default();
    let opts = MergeOptions {
        decode_threads: false,
        ..Default::default()
    };
    if merge(&set, &opts, &mut sink, &mut |_| {}).is_ok() {
        assert!(
            in_time_order(sink.0.iter().map(|r| r.tick)),
            "merged trace out of time order"
        );
        stats(&sink.0);
    }
}

fn fuzz_trace(edits: &[Edit], seek: u64) {
    let seeds = seeds();
    let bytes = damaged(&seeds.trace, edits);
    let Ok(view) = TraceView::new_checked(&bytes[..]) else {
        return;
    };
    let records: Vec<_> = view.records().collect();
    stats(&records);
    let _ = view.seek_tick(seek);
    let _ = view.names();
    let log = klog::read_image(&seeds.log).expect("the seed log reads");
    let mut replayer = Replayer::new(&log.records, ReplayFilter::default());
    replayer.run(&view, &mut |_| {});
}

fn fuzz_vtrace(edits: &[Edit], seek: u64) {
    let bytes = damaged(&seeds().vtrace, edits);
    if let Ok(view) = VtraceView::new_checked(&bytes[..]) {
        let _ = view.records().count();
        let _ = view.seek_tick(seek);
    }
}

/// The checksum path (issue 41): a damaged trace that opens as finished
/// reads exactly as the seed (header, index, names, records); anything
/// else must have been refused. An unfinished one (the complete flag hit)
/// is read only with --allow-incomplete, unverified, so it is let go.
fn fuzz_trace_checksums(edits: &[Edit]) {
    let seed = &seeds().trace;
    let bytes = damaged(seed, edits);
    let Ok(view) = TraceView::new_checked(&bytes[..]) else {
        return;
    };
    if !view.header().is_complete() {
        return;
    }
    let original = TraceView::new_checked(&seed[..]).expect("the seed trace reads");
    assert!(view.header().common.has_checksums(), "read unchecked");
    assert_eq!(view.header(), original.header(), "header differs");
    assert_eq!(view.names(), original.names(), "names differ");
    assert!(view.index().eq(original.index()), "index differs");
    assert!(view.records().eq(original.records()), "records differ");
}

/// [`fuzz_trace_checksums`] for the virtual trace.
fn fuzz_vtrace_checksums(edits: &[Edit]) {
    let seed = &seeds().vtrace;
    let bytes = damaged(seed, edits);
    let Ok(view) = VtraceView::new_checked(&bytes[..]) else {
        return;
    };
    if !view.header().is_complete() {
        return;
    }
    let original = VtraceView::new_checked(&seed[..]).expect("the seed virtual trace reads");
    assert!(view.header().common.has_checksums(), "read unchecked");
    assert_eq!(view.header(), original.header(), "header differs");
    assert_eq!(view.names(), original.names(), "names differ");
    assert!(view.index().eq(original.index()), "index differs");
    assert!(view.records().eq(original.records()), "records differ");
}

fn fuzz_log(edits: &[Edit]) {
    let seeds = seeds();
    let Ok(log) = klog::read_image(&damaged(&seeds.log, edits)) else {
        return;
    };
    let view = TraceView::new_checked(&seeds.trace[..]).expect("the seed trace reads");
    let mut replayer = Replayer::new(&log.records, ReplayFilter::default());
    replayer.run(&view, &mut |_| {});
}

fn fuzz_text(edits: &[Edit]) {
    let seeds = seeds();
    let commands = String::from_utf8_lossy(&damaged(&seeds.commands, edits)).into_owned();
    for line in commands.lines() {
        let _ = hmtt_format::command::parse_line(line);
    }
    let events = String::from_utf8_lossy(&damaged(&seeds.events, edits)).into_owned();
    let _ = EventNames::parse(&events);
}

/// A seed packet in a UDP frame, damaged, through the frame parser.
fn fuzz_frame(which: usize, edits: &[Edit]) {
    let seeds = seeds();
    let (_, file) = &seeds.captures[which % seeds.captures.len()];
    let (_, mut records) = CaptureReader::new(file).expect("a seed capture");
    let Some(packet) = records.next() else { return };
    let mut frame = Vec::new();
    build_udp_frame(
        &UdpEndpoints::board_defaults(0, 0),
        packet.packet,
        &mut frame,
    );
    let frame = damaged(&frame, edits);
    for port in [None, Some(5000)] {
        let _ = extract(LINKTYPE_ETHERNET, &frame, port);
    }
}

/// A classic pcap file of the seed packets in UDP frames.
fn pcap_of_seed() -> Vec<u8> {
    let seeds = seeds();
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes()); // nanosecond timestamps
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    for (port, (_, file)) in seeds.captures.iter().enumerate() {
        let (_, records) = CaptureReader::new(file).unwrap();
        for (i, r) in records.enumerate() {
            let mut frame = Vec::new();
            build_udp_frame(
                &UdpEndpoints::board_defaults(0, port as u8),
                r.packet,
                &mut frame,
            );
            f.extend_from_slice(&1u32.to_le_bytes());
            f.extend_from_slice(&(i as u32).to_le_bytes());
            f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            f.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            f.extend_from_slice(&frame);
        }
    }
    f
}

/// A pcapng file of the seed packets, as the receiver's `--pcapng` writes
/// them (one section, one Ethernet interface, an Enhanced Packet Block per
/// packet).
fn pcapng_of_seed() -> Vec<u8> {
    let seeds = seeds();
    let mut w = PcapngWriter::new(Vec::new(), "fuzz", 0, 0).unwrap();
    for (_, file) in &seeds.captures {
        let (_, records) = CaptureReader::new(file).unwrap();
        for r in records {
            w.write_packet(r.recv_ns, r.packet).unwrap();
        }
    }
    w.into_inner()
}

/// Packets in the seed capture files.
fn seed_packets() -> u64 {
    let seeds = seeds();
    let count = |(_, file): &(_, Vec<u8>)| CaptureReader::new(file).unwrap().1.count() as u64;
    seeds.captures.iter().map(count).sum()
}

/// Which kind of packet file [`fuzz_pcap`] damages.
#[derive(Debug, Clone, Copy)]
enum PacketFile {
    Pcap,
    Pcapng,
}

/// A damaged pcap or pcapng file captured by the receiver (`capture -i
/// file:`, which reads both through libpcap).
fn fuzz_pcap(kind: PacketFile, case: u64, edits: &[Edit]) {
    static PCAP: OnceLock<Vec<u8>> = OnceLock::new();
    static PCAPNG: OnceLock<Vec<u8>> = OnceLock::new();
    let (seed, name) = match kind {
        PacketFile::Pcap => (PCAP.get_or_init(pcap_of_seed), "in.pcap"),
        PacketFile::Pcapng => (PCAPNG.get_or_init(pcapng_of_seed), "in.pcapng"),
    };
    let dir = seeds().dir.join(format!("{kind:?}-{case}"));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join(name);
    std::fs::write(&input, damaged(seed, edits)).unwrap();
    let mut c = CaptureConfig::new(
        vec![Input {
            source: Source::PcapFile(input.clone()),
            port: 0,
            udp_port: None,
        }],
        vec![dir.join("out")],
    );
    c.progress = false;
    c.name = "f".into();
    c.duration = Some(Duration::from_secs(20));
    if let Ok(handle) = Capture::start(c, Arc::new(AtomicBool::new(false))) {
        if let Ok(s) = handle.wait() {
            if edits.is_empty() {
                // The seed itself is read whole: the damage is what varies.
                let received: u64 = s.boards.iter().map(|b| b.seq.received).sum();
                assert_eq!(received, seed_packets(), "{kind:?} seed: {s:?}");
            }
            assert!(
                !s.errors.iter().any(|e| e.contains("panicked")),
                "{:?}",
                s.errors
            );
            for b in &s.boards {
                // A loss is never more than the packets' own numbers allow
                // around the ones seen (no 2^64 gaps from one forged seq).
                assert!(b.seq.lost < 1 << 32, "{:?}", b.seq);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `test` on `cases` inputs of `strategy`, in rounds with fresh
/// random seeds until `HMTT_FUZZ_SECONDS` have passed when it is set.
fn fuzz<S: Strategy>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value))
where
    S::Value: std::fmt::Debug,
{
    let long = std::env::var("HMTT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let start = Instant::now();
    let finished = Arc::new(AtomicBool::new(false));
    // Milliseconds since `start` at which the current case began.
    let case_began = Arc::new(AtomicU64::new(0));
    let watchdog = {
        let finished = finished.clone();
        let case_began = case_began.clone();
        let name = name.to_string();
        // A hang fails the run rather than stalling the suite: no single
        // case may take longer than this, however long the run.
        std::thread::spawn(move || {
            let longest_case = Duration::from_secs(120);
            while !finished.load(Ordering::Relaxed) {
                let began = Duration::from_millis(case_began.load(Ordering::Relaxed));
                if start.elapsed().saturating_sub(began) > longest_case {
                    eprintln!("fuzz {name}: one case ran over {longest_case:?}: a reader hangs");
                    std::process::abort();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut rounds = 0u64;
    let mut total = 0u64;
    loop {
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&rounds.to_le_bytes());
        seed[8..16].copy_from_slice(&(start.elapsed().as_nanos() as u64).to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
        let mut runner = TestRunner::new_with_rng(config, rng);
        let result = runner.run(&strategy, |v| {
            case_began.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            test(v);
            Ok(())
        });
        if let Err(e) = result {
            panic!("fuzz {name}, round {rounds} (seed {seed:02x?}): {e}");
        }
        rounds += 1;
        total += u64::from(cases);
        if long.is_none_or(|l| start.elapsed() >= l) {
            break;
        }
    }
    finished.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    eprintln!(
        "fuzz {name}: {total} cases in {rounds} rounds, {:.1} s, no failure",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn fuzz_capture_files_through_merge() {
    let edits = proptest::collection::vec(edit(), 0..4);
    let cases = (any::<usize>(), field_edits(), edits);
    fuzz("captures", 30000, cases, |(w, f, e)| {
        fuzz_captures(w, &f, &e)
    });
}

#[test]
fn fuzz_traces_through_view_stats_and_replay() {
    fuzz("traces", 3000, (edits(), any::<u64>()), |(e, t)| {
        fuzz_trace(&e, t)
    });
}

#[test]
fn fuzz_trace_checksums_refuse_or_read_the_original() {
    fuzz("trace checksums", 3000, edits(), |e| {
        fuzz_trace_checksums(&e)
    });
}

#[test]
fn fuzz_virtual_trace_checksums_refuse_or_read_the_original() {
    fuzz("vtrace checksums", 3000, edits(), |e| {
        fuzz_vtrace_checksums(&e)
    });
}

#[test]
fn fuzz_virtual_traces() {
    fuzz("vtraces", 3000, (edits(), any::<u64>()), |(e, t)| {
        fuzz_vtrace(&e, t)
    });
}

#[test]
fn fuzz_kernel_logs_through_replay() {
    fuzz("kernel logs", 3000, edits(), |e| fuzz_log(&e));
}

#[test]
fn fuzz_command_and_events_text() {
    fuzz("command and events text", 2000, edits(), |e| fuzz_text(&e));
}

#[test]
fn fuzz_frames_through_the_receiver() {
    fuzz("frames", 10000, (any::<usize>(), edits()), |(w, e)| {
        fuzz_frame(w, &e)
    });
}

// The pcap and pcapng readers get their own tests so that each one has the
// whole budget of a long run, in parallel with the others.
#[test]
fn fuzz_pcap_files_through_the_receiver() {
    fuzz_pcap(PacketFile::Pcap, 0, &[]);
    fuzz("pcap files", 150, (any::<u64>(), edits()), |(c, e)| {
        fuzz_pcap(PacketFile::Pcap, c, &e)
    });
}

#[test]
fn fuzz_pcapng_files_through_the_receiver() {
    fuzz_pcap(PacketFile::Pcapng, 0, &[]);
    fuzz("pcapng files", 150, (any::<u64>(), edits()), |(c, e)| {
        fuzz_pcap(PacketFile::Pcapng, c, &e)
    });
}
