//! Mutation fuzzing of every reader (issue 19), on stable Rust with
//! proptest: valid seed files from `hmtt sim`, `merge`, `replay` and
//! `pack` are damaged (bytes overwritten, u64 fields set to extreme values,
//! bytes inserted or deleted, cuts) and fed to the library entry points
//! that read them. Properties: no panic; a merged trace is in time order;
//! statistics stay small whatever the span; no hang (a watchdog aborts the
//! run); a damaged trace or virtual trace that opens as finished reads
//! exactly as its seed (the checksums of docs/format.md §11.1); an archive
//! whose block index lies (entries' offsets, ticks, lengths and counts set
//! to extremes or shifted a little), seeked to a tick range as `hmtt dump
//! --from-ns --to-ns` does, is refused or gives exactly the seed's records
//! of that range, and no allocation it makes is larger than twice the
//! seed's largest plus four times its length (issue 41).
//!
//! The option parser too (issue 41): the built `hmtt` runs with a value
//! drawn from extremes and junk for every numeric option of every command
//! that works on files ([`NUMERIC_OPTIONS`], checked against `--help`),
//! under a 20 s timeout and a 4 GiB address-space limit; it must exit 0
//! or with a documented error status, never panic or die by a signal.
//!
//! `cargo test` runs a short, bounded budget of cases per reader.
//! `HMTT_FUZZ_SECONDS=N` runs rounds with fresh seeds until N seconds have
//! passed (e.g. 3600 for the long run).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hmtt_format::archive::AnyTrace;
use hmtt_format::capture::CaptureReader;
use hmtt_format::events::EventNames;
use hmtt_format::klog;
use hmtt_format::trace::TraceRecord;
use hmtt_format::trace::TraceView;
use hmtt_format::vtrace::VtraceView;
use hmtt_merge::record_blocks::RecordBlocks;
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

/// The system allocator, noting the largest single allocation each thread
/// asks for: the archive target checks that no claimed count sizes an
/// allocation beyond what the file can hold.
struct LargestAllocation;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

/// The largest allocation this thread asked for since the last call.
fn take_largest_allocation() -> usize {
    LARGEST.with(|l| l.replace(0))
}

// SAFETY: every call is passed on to `System` unchanged; noting the size
// touches only a thread-local `Cell` that neither allocates nor drops.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

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
    /// The trace packed in blocks of [`SEED_BLOCK_RECORDS`].
    archive: Vec<u8>,
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
        let archive = dir.join("t.hmttz");
        let block_records = SEED_BLOCK_RECORDS.to_string();
        ok(&[
            "pack",
            s(&trace),
            "-o",
            s(&archive),
            "--block-records",
            &block_records,
        ]);
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
            archive: read(archive),
            vtrace: read(vtrace),
            log: read(log),
            commands: read(run.join("commands-b0.txt")),
            events: read(run.join("events.toml")),
            dir,
        }
    })
}

/// Records per block of the seed archive: small, so that the seed's ~1300
/// records make some twenty blocks for a seek to skip.
const SEED_BLOCK_RECORDS: u32 = 64;

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

/// A lie in an archive's block index (format.md §13): entry (wrapped
/// around the count), field (offset, first tick, last tick, length,
/// records), and the lie: an extreme value, or the true one shifted.
#[derive(Debug, Clone)]
struct IndexLie {
    entry: u64,
    field: u8,
    lie: Lie,
}

#[derive(Debug, Clone)]
enum Lie {
    Set(u64),
    Shift(i64),
}

fn index_lies() -> impl Strategy<Value = Vec<IndexLie>> {
    let lie = prop_oneof![
        extreme().prop_map(Lie::Set),
        prop_oneof![-3i64..=3, Just(-64), Just(64), any::<i64>()].prop_map(Lie::Shift),
    ];
    let one =
        (any::<u64>(), 0u8..5, lie).prop_map(|(entry, field, lie)| IndexLie { entry, field, lie });
    proptest::collection::vec(one, 0..4)
}

/// `archive` with its index entries changed as `lies` say; the index is
/// found through the header's trailer offset, length and block count.
fn with_index_lies(archive: &[u8], lies: &[IndexLie]) -> Vec<u8> {
    let u64_at = |at: usize| u64::from_le_bytes(archive[at..at + 8].try_into().unwrap());
    let index = (u64_at(40) + u64_at(48)) as usize;
    let blocks = u64_at(24);
    let mut b = archive.to_vec();
    for l in lies {
        let entry = index + 32 * (l.entry % blocks.max(1)) as usize;
        let (at, len) = [(0, 8), (8, 8), (16, 8), (24, 4), (28, 4)][usize::from(l.field)];
        let field = &mut b[entry + at..entry + at + len];
        let mut word = [0u8; 8];
        word[..len].copy_from_slice(field);
        let value = match l.lie {
            Lie::Set(v) => v,
            Lie::Shift(d) => u64::from_le_bytes(word).wrapping_add_signed(d),
        };
        field.copy_from_slice(&value.to_le_bytes()[..len]);
    }
    b
}

/// The records from tick `from` up to (not including) `to`, read as `hmtt
/// dump --from-ns --to-ns` reads them: a seek, then blocks until `to`.
fn seek_range(bytes: &[u8], from: u64, to: u64) -> Result<Vec<TraceRecord>, String> {
    let view = AnyTrace::new_checked(bytes).map_err(|e| e.to_string())?;
    let mut blocks = RecordBlocks::from_tick(&view, from).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(block) = blocks.next() {
        for r in block.map_err(|e| e.to_string())? {
            if r.tick >= to {
                return Ok(out);
            }
            out.push(*r);
        }
    }
    Ok(out)
}

/// The seed archive's records, and the largest allocation reading them
/// all takes.
fn seed_archive_records() -> &'static (Vec<TraceRecord>, usize) {
    static RECORDS: OnceLock<(Vec<TraceRecord>, usize)> = OnceLock::new();
    RECORDS.get_or_init(|| {
        let archive = &seeds().archive;
        take_largest_allocation();
        let records = seek_range(archive, 0, u64::MAX).expect("the seed archive reads");
        let largest = take_largest_allocation();
        let trace = TraceView::new_checked(&seeds().trace[..]).expect("the seed trace reads");
        assert!(records
            .iter()
            .eq(trace.records().collect::<Vec<_>>().iter()));
        assert!(AnyTrace::new_checked(archive).is_ok_and(|v| matches!(v, AnyTrace::Archive(_))));
        (records, largest)
    })
}

/// Damaged archives whose seek was read rather than refused (each read as
/// the seed): printed, to show the property is not met by refusals alone.
static DAMAGED_SEEKS_READ: AtomicU64 = AtomicU64::new(0);

/// Archive seeks with lying indexes (issue 41): a damaged archive, seeked
/// to a tick range, either fails or gives exactly the seed's records of
/// that range; nothing it claims sizes an allocation beyond what the seed
/// itself needs plus the file's length.
fn fuzz_archive_seek(lies: &[IndexLie], edits: &[Edit], from: u64, span: u64) {
    let (records, seed_largest) = seed_archive_records();
    let bytes = damaged(&with_index_lies(&seeds().archive, lies), edits);
    // A range around the seed's ticks (a little before and after too).
    let (first, last) = (records[0].tick, records[records.len() - 1].tick);
    let from = first.saturating_sub(8) + from % (last - first + 16);
    let to = from.saturating_add(span);
    let lo = records.partition_point(|r| r.tick < from);
    let hi = records.partition_point(|r| r.tick < to);
    take_largest_allocation();
    let got = seek_range(&bytes, from, to);
    let largest = take_largest_allocation();
    assert!(
        largest <= 2 * seed_largest + 4 * bytes.len(),
        "an allocation of {largest} bytes for a {}-byte archive (the seed's largest: {seed_largest})",
        bytes.len()
    );
    if let Ok(got) = got {
        if !lies.is_empty() || !edits.is_empty() {
            DAMAGED_SEEKS_READ.fetch_add(1, Ordering::Relaxed);
        }
        assert!(
            got == records[lo..hi],
            "ticks {from}..{to}: {} records read, the seed has {}",
            got.len(),
            hi - lo
        );
    }
}

/// Every numeric option of every command the suite can run on files
/// (issue 41), as the command line of one run: `{v}` is the value drawn,
/// the option is the argument before it, and the other placeholders name
/// the seed files ([`option_run`]). Options that take several numbers
/// have one of them drawn.
///
/// Not run: `demo` (a capture over loopback UDP sockets, seconds a run),
/// `firmware` (FPGA toolchain and board), `qemu` (QEMU and its kit), and
/// the options in [`NETWORK_OPTIONS`]. [`numeric_options_cover_the_cli`]
/// checks this table against every option `--help` lists.
const NUMERIC_OPTIONS: &[&str] = &[
    "sim --workload seq-read --cache off --out {out}/s --n {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --unit {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --stride {v}",
    "sim --workload mix --n 4K --cache off --out {out}/s --processes {v}",
    "sim --workload mix --n 4K --cache off --out {out}/s --quantum {v}",
    "sim --workload mix --n 4K --cache off --out {out}/s --rounds {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --dma {v}",
    "sim --workload quicksort --n 1000 --cache off --out {out}/s --seed {v}",
    "sim --workload seq-read --n 4K --out {out}/s --cache-size {v}",
    "sim --workload seq-read --n 4K --out {out}/s --ways {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --geometry {v},3,15,7",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --queue-depth {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --cpu-ticks {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --boards {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --boards 2 --interleave-shift {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --ports {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --fifo-depth {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --lanes {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --refs-per-clock {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --max-words {v}",
    "sim --workload seq-read --n 4K --cache off --out {out}/s --rate {v}",
    "board --commands {commands} --out {out}/b --geometry 1,3,{v},7",
    "board --commands {commands} --out {out}/b --config-base {v}",
    "board --commands {commands} --out {out}/b --config-bytes {v}",
    "board --commands {commands} --out {out}/b --config-window 0,{v},4",
    "board --commands {commands} --out {out}/b --ports {v}",
    "board --commands {commands} --out {out}/b --lanes {v}",
    "board --commands {commands} --out {out}/b --refs-per-clock {v}",
    "board --commands {commands} --out {out}/b --fifo-depth {v}",
    "board --commands {commands} --out {out}/b --max-words {v}",
    "board --commands {commands} --out {out}/b --idle-flush-ticks {v}",
    "board --commands {commands} --out {out}/b --stats-interval {v}",
    "board --commands {commands} --out {out}/b --stats-interval 12 --stats-share {v}",
    "board --commands {commands} --out {out}/b --stats-interval 12 --stats-burst {v}",
    "board --commands {commands} --out {out}/b --stats-interval 12 --reuse-unit --reuse-hot {v}",
    "board --commands {commands} --out {out}/b --stats-interval 12 --reuse-unit --reuse-per-clock {v}",
    "board --commands {commands} --out {out}/b --drain 1/{v}",
    "board --commands {commands} --out {out}/b --tick-ps {v}",
    "board --commands {commands} --out {out}/b --board-id {v}",
    "board --commands {commands} --out {out}/b --start-ns {v}",
    "capture -i file:{pcap} -o {out}/c --name f --stripe-size {v}",
    "capture -i file:{pcap} -o {out}/c --name f --rcvbuf {v}",
    "capture -i file:{pcap} -o {out}/c --name f --duration {v}",
    "capture -i file:{pcap} -o {out}/c --name f --packets {v}",
    "merge {run} --compress -o {out}/m.hmttz --block-records {v}",
    "merge {run} --compress -o {out}/m.hmttz --level {v}",
    "merge {run} -o {out}/m.hmtttrace --interleave-shift {v}",
    "merge {run} -o {out}/m.hmtttrace --reorder-depth {v}",
    "merge {run} -o {out}/m.hmtttrace --max-start-skew {v}",
    "pack {trace} -o {out}/p.hmttz --block-records {v}",
    "pack {trace} -o {out}/p.hmttz --level {v}",
    "dump {archive} --limit 100 --from-ns {v}",
    "dump {vtrace} --limit 100 --from-ns {v}",
    "dump {archive} --to-ns {v}",
    "dump {archive} --board {v}",
    "dump {archive} --limit {v}",
    "export {trace} -f dramsim3 -o {out}/e.trace --tck-ps {v}",
    "export {trace} -f perfetto -o {out}/e.pftrace --interval-ms {v}",
    "export {trace} -f parquet -o {out}/e.parquet --row-group {v}",
    "export {trace} -f parquet -o {out}/ds --partition-ms {v}",
    "stats {trace} --interval-ms {v}",
    "stats {trace} --max-rows {v}",
    "replay {trace} --log {log} --pid {v}",
    "replay {trace} --log {log} --window {v},1",
    "replay {trace} --log {log} --pa 0..{v}",
    "replay {trace} --log {log} --va {v}..0x7fffffffffff",
    "replay {trace} --log {log} --max-unattributed {v}",
    "analyze {trace} --window 0,{v}",
    "analyze {trace} --interval-ms {v}",
    "analyze {trace} --blp-ns {v}",
    "analyze {trace} --geometry 1,3,15,{v}",
    "analyze {trace} --interleave-shift {v}",
    "analyze {trace} --top {v}",
    "analyze {trace} --stream-window {v}",
    "analyze {trace} --threads {v}",
    "analyze {trace} --partial {out}/p --blocks 0..{v}",
    "icode --file {cfg} --base {v} 0",
    "icode --file {cfg} --geometry 1,{v},15,7 0",
    "log -o {out}/l.hmttlog --device {log} --count {v}",
    "log -o {out}/l.hmttlog --device {log} --seconds {v}",
    "log -o {out}/l.hmttlog --device {log} --config-device {cfg} --trace-pid {v}",
    "log -o {out}/l.hmttlog --device {log} --config-device {cfg} --snapshot {v}",
];

/// Options that take no number, by command.
const OTHER_OPTIONS: &[(&str, &[&str])] = &[
    (
        "sim",
        &[
            "--workload",
            "--trace",
            "--trace-format",
            "--cache",
            "--mapping",
            "--speed",
        ],
    ),
    ("sim", &["--scheduler", "--out", "--send", "--json"]),
    (
        "board",
        &[
            "--commands",
            "--engine",
            "--core",
            "--work",
            "--mapping",
            "--out",
            "--send",
        ],
    ),
    (
        "capture",
        &[
            "--input",
            "--bind",
            "--out",
            "--run",
            "--name",
            "--summary",
            "--rx",
            "--xdp-mode",
            "--live-jsonl",
        ],
    ),
    (
        "merge",
        &[
            "--out",
            "--events",
            "--mapping",
            "--decode-threads",
            "--json",
        ],
    ),
    ("pack", &["--out"]),
    ("unpack", &["--out"]),
    ("dump", &["--events"]),
    ("stats", &["--json"]),
    ("export", &["--format", "--out", "--events"]),
    ("replay", &["--log", "--events", "--out", "--csv", "--json"]),
    (
        "analyze",
        &[
            "--mapping",
            "--reuse",
            "--partial",
            "--combine",
            "--events",
            "--log",
            "--plot",
            "--plot-format",
            "--plot-axes",
            "--write-plot-axes",
            "--json",
        ],
    ),
    (
        "icode",
        &["--device", "--file", "--events-file", "--mapping"],
    ),
    ("log", &["--out", "--device", "--config-device"]),
];

/// Numeric options not run: they open network sockets.
const NETWORK_OPTIONS: &[(&str, &str)] = &[
    ("capture", "--udp-ports"),
    // A send rate needs a destination to send to.
    ("board", "--rate"),
];

/// Commands whose options are not run (see [`NUMERIC_OPTIONS`]).
const COMMANDS_NOT_RUN: &[&str] = &["demo", "firmware", "qemu", "help"];

/// Runs of an option that scale the work asked for (a workload's size): a
/// huge value is a long run the user asked for, so such a run is stopped
/// early and passes if it had not failed by then.
const WORK_SIZE_OPTIONS: &[(&str, &str)] = &[
    ("sim", "--n"),
    ("sim", "--dma"),
    ("sim", "--rounds"),
    ("sim", "--processes"),
    // A tiny window is a dataset of as many directories as the trace has
    // ticks: an output of the size asked for.
    ("export", "--partition-ms"),
];

/// (command, option) of a [`NUMERIC_OPTIONS`] line.
fn command_and_option(line: &str) -> (&str, &str) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let v = words.iter().position(|w| w.contains("{v}")).expect("a {v}");
    (words[0], words[v - 1])
}

/// The options that take a value in `hmtt COMMAND --help`.
fn options_with_values(command: &str) -> Vec<String> {
    let help = ok(&[command, "--help"]);
    help.lines()
        .filter_map(|line| {
            let t = line.trim_start();
            // `-o, --out <DIR>`: the short form first.
            let t = match t.strip_prefix('-') {
                Some(rest) if !rest.starts_with('-') => rest.get(3..)?,
                _ => t,
            };
            let name = t.strip_prefix("--")?.split(' ').next()?;
            t[2 + name.len()..]
                .starts_with(" <")
                .then(|| format!("--{name}"))
        })
        .collect()
}

/// The commands of `hmtt --help`.
fn commands() -> Vec<String> {
    let help = ok(&["--help"]);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The seed files on disk that the runs of [`NUMERIC_OPTIONS`] read.
struct SeedPaths {
    trace: PathBuf,
    archive: PathBuf,
    vtrace: PathBuf,
    run: PathBuf,
    pcap: PathBuf,
}

fn seed_paths() -> &'static SeedPaths {
    static PATHS: OnceLock<SeedPaths> = OnceLock::new();
    PATHS.get_or_init(|| {
        let seeds = seeds();
        let dir = seeds.dir.join("options-seed");
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let run = PathBuf::from(&seeds.captures[0].0)
            .parent()
            .unwrap()
            .to_path_buf();
        SeedPaths {
            trace: write("t.hmtttrace", &seeds.trace),
            archive: write("t.hmttz", &seeds.archive),
            vtrace: write("t.hmttvtrace", &seeds.vtrace),
            run,
            pcap: write("in.pcap", &pcap_of_seed()),
        }
    })
}

/// How long one run may take, and its address space.
const OPTION_RUN_TIMEOUT: Duration = Duration::from_secs(20);
const WORK_SIZE_RUN_TIME: Duration = Duration::from_secs(2);
const OPTION_RUN_ADDRESS_SPACE: u64 = 4 << 30;

/// Values for numeric options: extremes, junk and any number.
fn option_value() -> impl Strategy<Value = String> {
    const FIXED: &[&str] = &[
        "0",
        "-1",
        "1",
        "2",
        "nan",
        "inf",
        "-inf",
        "1e309",
        "1e-300",
        "0.5",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775808",
        "4294967295",
        "4294967296",
        "65536",
        "",
        " ",
        "0x10",
        "0xffffffffffffffff",
        "1_000",
        "16M",
        "1G",
        "abc",
    ];
    prop_oneof![
        3 => proptest::sample::select(FIXED).prop_map(str::to_string),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => (0u64..5000).prop_map(|v| v.to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
    ]
}

static OPTION_RUNS: AtomicU64 = AtomicU64::new(0);

/// Runs `hmtt` with line `which` of [`NUMERIC_OPTIONS`] and `value`, in
/// bounded time and address space. It must exit 0 or with one of the
/// documented error statuses (1 error, 2 usage, 3 rejected merge input, 4
/// incomplete input), not panic (101) or die by a signal.
fn option_run(which: usize, value: &str) {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let line = NUMERIC_OPTIONS[which % NUMERIC_OPTIONS.len()];
    let (command, option) = command_and_option(line);
    let work_size = WORK_SIZE_OPTIONS.contains(&(command, option));
    let paths = seed_paths();
    let case = OPTION_RUNS.fetch_add(1, Ordering::Relaxed);
    let out = seeds().dir.join(format!("options-{case}"));
    std::fs::create_dir_all(&out).unwrap();
    let cfg = out.join("config-space");
    std::fs::write(&cfg, vec![0u8; 1 << 20]).unwrap();
    let args: Vec<String> = line
        .split_whitespace()
        .map(|w| {
            w.replace("{v}", value)
                .replace("{out}", s(&out))
                .replace("{trace}", s(&paths.trace))
                .replace("{archive}", s(&paths.archive))
                .replace("{vtrace}", s(&paths.vtrace))
                .replace("{run}", s(&paths.run))
                .replace("{commands}", s(&paths.run.join("commands-b0.txt")))
                .replace("{log}", s(&paths.run.join("pagetable.hmttlog")))
                .replace("{pcap}", s(&paths.pcap))
                .replace("{cfg}", s(&cfg))
        })
        .collect();
    let stderr_path = out.join("stderr");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hmtt"));
    cmd.args(&args)
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: OPTION_RUN_ADDRESS_SPACE,
                rlim_max: OPTION_RUN_ADDRESS_SPACE,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("hmtt starts");
    let allowed = if work_size {
        WORK_SIZE_RUN_TIME
    } else {
        OPTION_RUN_TIMEOUT
    };
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > allowed {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let shown = || format!("hmtt {}\nstderr:\n{stderr}", args.join(" "));
    match status {
        None => assert!(work_size, "ran over {allowed:?}: {}", shown()),
        Some(st) => {
            assert!(
                st.signal().is_none(),
                "killed by signal {:?}: {}",
                st.signal(),
                shown()
            );
            assert!(
                matches!(st.code(), Some(0..=4)),
                "exit status {:?}: {}",
                st.code(),
                shown()
            );
        }
    }
    assert!(!stderr.contains("panicked"), "panicked: {}", shown());
    let _ = std::fs::remove_dir_all(&out);
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
    // Stops the watchdog however this returns: a failing test unwinds past
    // the end, and its watchdog must not then abort the other tests' run.
    struct StopWatchdog(Arc<AtomicBool>);
    impl Drop for StopWatchdog {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let stop_watchdog = StopWatchdog(finished.clone());
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
    drop(stop_watchdog);
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
fn fuzz_archive_seeks_with_lying_indexes() {
    let edits = proptest::collection::vec(edit(), 0..3);
    let span = prop_oneof![0u64..64, 0u64..100_000, any::<u64>()];
    let cases = (index_lies(), edits, any::<u64>(), span);
    fuzz("archive seeks", 3000, cases, |(l, e, from, span)| {
        fuzz_archive_seek(&l, &e, from, span)
    });
    eprintln!(
        "fuzz archive seeks: {} damaged archives read as the seed, the rest refused",
        DAMAGED_SEEKS_READ.load(Ordering::Relaxed)
    );
}

#[test]
fn numeric_options_cover_the_cli() {
    let listed: Vec<(&str, &str)> = NUMERIC_OPTIONS
        .iter()
        .map(|l| command_and_option(l))
        .collect();
    let mut missing = Vec::new();
    let all = commands();
    assert!(
        all.iter().any(|c| c == "analyze"),
        "no commands in hmtt --help: {all:?}"
    );
    for command in all
        .iter()
        .filter(|c| !COMMANDS_NOT_RUN.contains(&c.as_str()))
    {
        let known = options_with_values(command);
        for option in &known {
            let key = (command.as_str(), option.as_str());
            let other = OTHER_OPTIONS
                .iter()
                .any(|(c, o)| *c == key.0 && o.contains(&key.1));
            if !listed.contains(&key) && !other && !NETWORK_OPTIONS.contains(&key) {
                missing.push(format!("{command} {option}"));
            }
        }
        for (c, o) in &listed {
            assert!(
                *c != command || known.iter().any(|k| k == o),
                "NUMERIC_OPTIONS names {c} {o}, which hmtt {c} --help does not list"
            );
        }
    }
    assert!(
        missing.is_empty(),
        "options neither in NUMERIC_OPTIONS nor OTHER_OPTIONS: {missing:?}"
    );
}

#[test]
fn fuzz_numeric_options_of_every_command() {
    let cases = (0..NUMERIC_OPTIONS.len(), option_value());
    fuzz("numeric options", 40, cases, |(w, v)| option_run(w, &v));
}

#[test]
fn fuzz_virtual_traces() {
    fuzz("vtraces", 3000, (edits(), any::<u64>()), |(e, t)| {
        fuzz_vtrace(&e, t)
    });
}

/// The cases the long runs found, kept as regression tests.
#[test]
fn fuzz_kernel_logs_found_cases() {
    // A tag whose sequence number resolves to 2^64 - 1 (a log whose
    // numbers were damaged): the window arithmetic overflowed.
    fuzz_log(&[
        Edit::Cut {
            at: 16194117359942838172,
        },
        Edit::Word {
            at: 7413868225563989504,
            value: u64::MAX,
        },
    ]);
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
