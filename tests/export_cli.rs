//! `hmtt export` through the binary on a simulated run (2 boards, several
//! processes, DMA, I-code pairs), each format checked against the trace
//! itself: DRAMsim3 and Ramulator 2 lines record by record, gem5 and
//! Perfetto decoded by a protobuf wire reader written here from the
//! published schemas (independent of the encoder), Parquet read by DuckDB,
//! CSV equal to `hmtt dump --csv`, and the CSV of `hmtt replay --csv` with
//! the same header as the dump of a virtual trace.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::vtrace::{VirtualRecord, VtraceView};

mod support;
use support::cli::{mix_merged_with_events, ok, pack_in_small_blocks, s, scratch};

/// A simulated run merged into a trace, packed, and replayed into a
/// virtual trace: (dir, trace, archive, vtrace).
fn run(name: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let (sim, trace) = mix_merged_with_events(&dir);
    let archive = dir.join("run.hmttz");
    pack_in_small_blocks(&trace, &archive);
    let vtrace = dir.join("run.hmttvtrace");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&sim.join("pagetable.hmttlog")),
        "--out",
        s(&vtrace),
    ]);
    (dir, trace, archive, vtrace)
}

fn export(input: &Path, format: &str, out: &Path, extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["export", s(input), "--format", format, "-o", s(out)];
    args.extend_from_slice(extra);
    ok(&args);
    std::fs::read(out).unwrap()
}

fn physical_records(trace: &Path) -> (u16, u64, Vec<TraceRecord>) {
    let bytes = std::fs::read(trace).unwrap();
    let view = TraceView::new_checked(&bytes).unwrap();
    let h = view.header().common;
    (h.tick_ps, h.first_tick, view.records().collect())
}

fn virtual_records(vtrace: &Path) -> (u64, Vec<VirtualRecord>) {
    let bytes = std::fs::read(vtrace).unwrap();
    let view = VtraceView::new_checked(&bytes).unwrap();
    (view.header().common.first_tick, view.records().collect())
}

#[test]
fn dramsim3_and_ramulator2_lines_match_the_trace_record_by_record() {
    let (dir, trace, _, _) = run("text");
    let (tick_ps, first, records) = physical_records(&trace);
    assert_eq!(tick_ps, 1250, "DDR3-1600: one tick is one DDR clock");
    let accesses: Vec<_> = records.iter().filter(|r| r.is_access()).collect();
    assert!(accesses.len() > 20_000);
    assert!(accesses.iter().any(|r| r.kind() == RecordKind::Write));

    let text = export(&trace, "dramsim3", &dir.join("t.trc"), &[]);
    let lines: Vec<&str> = std::str::from_utf8(&text).unwrap().lines().collect();
    assert_eq!(lines.len(), accesses.len());
    // Half the clock period: twice the cycles.
    let text2 = export(
        &trace,
        "dramsim3",
        &dir.join("t2.trc"),
        &["--tck-ps", "625"],
    );
    let lines2: Vec<&str> = std::str::from_utf8(&text2).unwrap().lines().collect();
    for ((line, line2), r) in lines.iter().zip(&lines2).zip(&accesses) {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 3, "{line}");
        let addr = u64::from_str_radix(f[0].strip_prefix("0x").unwrap(), 16).unwrap();
        assert_eq!(addr, r.value() << 6, "{line}");
        let write = r.kind() == RecordKind::Write;
        assert_eq!(f[1], if write { "WRITE" } else { "READ" }, "{line}");
        assert_eq!(f[2].parse::<u64>().unwrap(), r.tick - first, "{line}");
        let c2: u64 = line2.rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!(c2, 2 * (r.tick - first), "{line2}");
    }

    let text = export(&trace, "ramulator2", &dir.join("t.ls"), &[]);
    let lines: Vec<&str> = std::str::from_utf8(&text).unwrap().lines().collect();
    assert_eq!(lines.len(), accesses.len());
    for (line, r) in lines.iter().zip(&accesses) {
        let (op, addr) = line.split_once(' ').unwrap();
        assert!(!addr.contains(' '), "exactly two tokens: {line}");
        let write = r.kind() == RecordKind::Write;
        assert_eq!(op, if write { "ST" } else { "LD" }, "{line}");
        assert_eq!(addr, format!("0x{:x}", r.value() << 6), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A protobuf wire reader: the fields of one message as (number, value).
#[derive(Debug, Clone)]
enum Field {
    Varint(u64),
    Fixed64(u64),
    Bytes(Vec<u8>),
}

fn varint(b: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = b[*at];
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint longer than 10 bytes");
}

fn fields(b: &[u8]) -> Vec<(u64, Field)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < b.len() {
        let key = varint(b, &mut at);
        let value = match key & 7 {
            0 => Field::Varint(varint(b, &mut at)),
            1 => {
                let v = u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
                at += 8;
                Field::Fixed64(v)
            }
            2 => {
                let n = varint(b, &mut at) as usize;
                at += n;
                Field::Bytes(b[at - n..at].to_vec())
            }
            // No field of these schemas is a fixed32 (wire type 5).
            w => panic!("wire type {w}"),
        };
        out.push((key >> 3, value));
    }
    assert_eq!(at, b.len(), "the message ends where its fields end");
    out
}

/// The fields of a message by number (the last value of each, or all).
struct Msg(Vec<(u64, Field)>);

impl Msg {
    fn parse(b: &[u8]) -> Msg {
        Msg(fields(b))
    }
    fn get(&self, n: u64) -> Option<&Field> {
        self.0.iter().rev().find(|(k, _)| *k == n).map(|(_, v)| v)
    }
    fn uint(&self, n: u64) -> Option<u64> {
        match self.get(n)? {
            Field::Varint(v) => Some(*v),
            f => panic!("field {n} is {f:?}"),
        }
    }
    fn double(&self, n: u64) -> Option<f64> {
        match self.get(n)? {
            Field::Fixed64(v) => Some(f64::from_bits(*v)),
            f => panic!("field {n} is {f:?}"),
        }
    }
    fn bytes(&self, n: u64) -> Option<&[u8]> {
        match self.get(n)? {
            Field::Bytes(v) => Some(v),
            f => panic!("field {n} is {f:?}"),
        }
    }
    fn string(&self, n: u64) -> Option<String> {
        self.bytes(n)
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
    }
    fn msg(&self, n: u64) -> Option<Msg> {
        self.bytes(n).map(Msg::parse)
    }
}

#[test]
fn gem5_packet_trace_parses_back_with_its_schema() {
    let (dir, trace, archive, _) = run("gem5");
    let (tick_ps, first, records) = physical_records(&trace);
    let b = export(&trace, "gem5", &dir.join("t.gem5"), &[]);
    // The archive exports the same bytes.
    assert!(b == export(&archive, "gem5", &dir.join("z.gem5"), &[]));
    assert_eq!(&b[..4], b"gem5");
    assert_eq!(u32::from_le_bytes(b[..4].try_into().unwrap()), 0x356d_6567);
    let mut at = 4;
    let mut messages = Vec::new();
    while at < b.len() {
        let n = varint(&b, &mut at) as usize;
        messages.push(Msg::parse(&b[at..at + n]));
        at += n;
    }
    // PacketHeader: obj_id = 1, tick_freq = 3.
    let header = &messages[0];
    assert_eq!(header.string(1).as_deref(), Some("hmtt"));
    assert_eq!(header.uint(3), Some(1_000_000_000_000));
    // Packet: tick = 1, cmd = 2 (MemCmd ReadReq 1, WriteReq 4), addr = 3,
    // size = 4, pkt_id = 6.
    let accesses: Vec<_> = records.iter().filter(|r| r.is_access()).collect();
    assert_eq!(messages.len() - 1, accesses.len());
    for (i, (p, r)) in messages[1..].iter().zip(&accesses).enumerate() {
        assert_eq!(p.uint(1), Some((r.tick - first) * u64::from(tick_ps)));
        let write = r.kind() == RecordKind::Write;
        assert_eq!(p.uint(2), Some(if write { 4 } else { 1 }));
        assert_eq!(p.uint(3), Some(r.value() << 6));
        assert_eq!(p.uint(4), Some(64));
        assert_eq!(p.uint(6), Some(i as u64));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perfetto_trace_parses_back_with_counters_instants_and_slices() {
    let (dir, _, _, vtrace) = run("perfetto");
    let (first, records) = virtual_records(&vtrace);
    let interval_ns = 2000u64;
    let b = export(
        &vtrace,
        "perfetto",
        &dir.join("t.perfetto-trace"),
        &["--interval-ns", &interval_ns.to_string()],
    );
    // Trace: repeated TracePacket packet = 1.
    let packets: Vec<Msg> = fields(&b)
        .into_iter()
        .map(|(n, f)| {
            assert_eq!(n, 1, "a Trace holds packets only");
            match f {
                Field::Bytes(p) => Msg::parse(&p),
                f => panic!("{f:?}"),
            }
        })
        .collect();
    // TracePacket: timestamp 8, trusted_packet_sequence_id 10,
    // track_event 11, track_descriptor 60. TrackDescriptor: uuid 1, name 2,
    // process 3 (ProcessDescriptor pid 1), parent_uuid 5, counter 8.
    // TrackEvent: type 9 (1 begin, 2 end, 3 instant, 4 counter),
    // track_uuid 11, name 23, double_counter_value 44.
    let mut tracks: HashMap<u64, Msg> = HashMap::new();
    let mut counter_sum: HashMap<u64, f64> = HashMap::new();
    let mut instants = Vec::new();
    let mut slices: Vec<(u64, u64, u64)> = Vec::new(); // (track, type, ts)
    let mut last_ts = 0;
    for p in &packets {
        assert_eq!(p.uint(10), Some(1));
        if let Some(d) = p.msg(60) {
            let uuid = d.uint(1).expect("a track has a uuid");
            if let Some(parent) = d.uint(5) {
                assert!(tracks.contains_key(&parent), "parent described first");
            }
            tracks.insert(uuid, d);
        }
        if let Some(e) = p.msg(11) {
            let ts = p.uint(8).expect("an event has a timestamp");
            let track = e.uint(11).unwrap();
            assert!(tracks.contains_key(&track), "track {track} described first");
            match e.uint(9) {
                Some(4) => {
                    assert!(ts >= last_ts, "counters in time order");
                    last_ts = ts;
                    *counter_sum.entry(track).or_default() += e.double(44).unwrap();
                }
                Some(3) => instants.push((ts, e.string(23).unwrap())),
                Some(t @ (1 | 2)) => slices.push((track, t, ts)),
                t => panic!("event type {t:?}"),
            }
        }
    }
    // Bandwidth: MB/s over intervals of 2 µs; summed back to bytes per board
    // and per process they are 64 bytes per reference.
    let to_bytes = |mbs: f64| mbs * 1e6 * interval_ns as f64 * 1e-9;
    let mut want_board: BTreeMap<u8, u64> = BTreeMap::new();
    let mut want_pid: BTreeMap<u32, u64> = BTreeMap::new();
    for v in records.iter().filter(|v| v.is_access()) {
        *want_board.entry(v.board()).or_default() += 64;
        if let Some((pid, _)) = v.owner() {
            *want_pid.entry(pid).or_default() += 64;
        }
    }
    assert_eq!(want_board.len(), 2);
    assert!(want_pid.len() >= 2, "{want_pid:?}");
    let counters: Vec<(&u64, &Msg)> = tracks.iter().filter(|(_, d)| d.msg(8).is_some()).collect();
    assert_eq!(counters.len(), want_board.len() + want_pid.len());
    let mut got_board = BTreeMap::new();
    let mut got_pid = BTreeMap::new();
    for (uuid, d) in counters {
        let bytes = to_bytes(counter_sum.get(uuid).copied().unwrap_or(0.0)).round() as u64;
        match d.uint(5) {
            None => {
                let name = d.string(2).unwrap();
                let b: u8 = name.split(' ').nth(1).unwrap().parse().unwrap();
                got_board.insert(b, bytes);
            }
            Some(parent) => {
                let pid = tracks[&parent].msg(3).unwrap().uint(1).unwrap() as u32;
                got_pid.insert(pid, bytes);
            }
        }
    }
    assert_eq!(got_board, want_board);
    assert_eq!(got_pid, want_pid);

    // One instant per I-code: both boards see each one, up to a few clocks
    // apart; the same tag from another board within 1 µs is the same one.
    let mut last: HashMap<u64, (u64, u8)> = HashMap::new();
    let mut want_tags: Vec<(u64, u64)> = Vec::new();
    for v in records
        .iter()
        .filter(|v| matches!(v.kind(), RecordKind::Tag { .. } | RecordKind::Cmd))
    {
        let tag = v.packed & !(0xff << 56);
        let again = last
            .get(&tag)
            .is_some_and(|&(t, b)| b != v.board() && (v.tick - t) * 1250 <= 1_000_000);
        last.insert(tag, (v.tick, v.board()));
        if !again {
            want_tags.push((v.tick, tag));
        }
    }
    assert!(want_tags.len() * 3 < records.iter().filter(|v| !v.is_access()).count() * 2);
    assert_eq!(instants.len(), want_tags.len());
    for ((ts, _), (tick, _)) in instants.iter().zip(&want_tags) {
        assert_eq!(*ts, (tick - first) * 1250 / 1000);
    }
    let named = |n: &str| instants.iter().filter(|(_, name)| name == n).count();
    assert_eq!(named("quicksort_begin"), 1);
    // Slices: each *_begin/*_end pair, balanced, on its pair's track.
    let begins = instants
        .iter()
        .filter(|(_, n)| n.ends_with("_begin"))
        .count();
    assert!(begins >= 4, "{begins}");
    assert_eq!(slices.iter().filter(|s| s.1 == 1).count(), begins);
    assert_eq!(slices.iter().filter(|s| s.1 == 2).count(), begins);
    let quicksort = tracks
        .iter()
        .find(|(_, d)| d.string(2).as_deref() == Some("quicksort"))
        .map(|(u, _)| *u)
        .expect("a track for the quicksort pair");
    let qs: Vec<_> = slices.iter().filter(|s| s.0 == quicksort).collect();
    assert_eq!(qs.len(), 2);
    assert!(qs[0].1 == 1 && qs[1].1 == 2 && qs[0].2 < qs[1].2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs a DuckDB query through Python; returns its rows as text.
fn duckdb(sql: &str) -> Vec<String> {
    let script = format!(
        "import duckdb\nfor row in duckdb.sql({sql:?}).fetchall():\n    print(','.join(str(x) for x in row))\n"
    );
    let out = Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "DuckDB (pip package duckdb, installed by scripts/setup.sh):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn duckdb_reads_the_parquet_export_and_its_counts_match_the_trace() {
    let (dir, trace, _, vtrace) = run("parquet");
    let (_, _, records) = physical_records(&trace);
    // Small row groups: the file spans several.
    let pq = dir.join("t.parquet");
    export(&trace, "parquet", &pq, &["--row-group", "4096"]);
    let count = |k: RecordKind| records.iter().filter(|r| r.kind() == k).count();
    let pa_sum: u128 = records
        .iter()
        .filter(|r| r.is_access())
        .map(|r| u128::from(r.value() << 6))
        .sum();
    let rows = duckdb(&format!(
        "select count(*), count(*) filter (where kind = 'READ'), \
         count(*) filter (where kind = 'WRITE'), \
         count(*) filter (where is_write and pa is not null), sum(pa::hugeint), \
         count(distinct board), count(event) \
         from read_parquet('{}')",
        s(&pq)
    ));
    let tags = records
        .iter()
        .filter(|r| matches!(r.kind(), RecordKind::Tag { .. } | RecordKind::Cmd))
        .count();
    let want = format!(
        "{},{},{},{},{},2,{}",
        records.len(),
        count(RecordKind::Read),
        count(RecordKind::Write),
        count(RecordKind::Write),
        pa_sum,
        tags
    );
    assert_eq!(rows, vec![want]);
    let groups = duckdb(&format!(
        "select count(distinct row_group_id) from parquet_metadata('{}')",
        s(&pq)
    ));
    assert_eq!(groups, vec![records.len().div_ceil(4096).to_string()]);

    // The virtual trace: per-process counts and the DMA split.
    let (_, vrecords) = virtual_records(&vtrace);
    let vpq = dir.join("v.parquet");
    export(&vtrace, "parquet", &vpq, &[]);
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for v in vrecords.iter().filter(|v| v.is_access()) {
        let pid = v.owner().map_or("None".to_string(), |(p, _)| p.to_string());
        let src = if v.is_dma() { "dma" } else { "cpu" };
        *want.entry(format!("{pid},{src}")).or_default() += 1;
    }
    let got: BTreeMap<String, u64> = duckdb(&format!(
        "select pid, source, count(*) from read_parquet('{}') where pa is not null \
         group by pid, source",
        s(&vpq)
    ))
    .into_iter()
    .map(|l| {
        let (k, n) = l.rsplit_once(',').unwrap();
        (k.to_string(), n.parse().unwrap())
    })
    .collect();
    assert!(want.len() >= 3, "{want:?}");
    assert_eq!(got, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn csv_export_equals_the_dump_and_replay_writes_the_same_columns() {
    let (dir, trace, archive, vtrace) = run("csv");
    for input in [&trace, &archive, &vtrace] {
        let exported = export(input, "csv", &dir.join("t.csv"), &[]);
        let dumped = ok(&["dump", s(input), "--csv"]);
        assert!(
            exported == dumped.as_bytes(),
            "{}: export and dump differ",
            input.display()
        );
    }
    let header = |text: &str| text.lines().next().unwrap().to_string();
    let dumped = ok(&["dump", s(&vtrace), "--csv", "--accesses-only"]);
    assert_eq!(
        header(&dumped),
        "time_ns,tick,board,pa,rw,kind,source,pid,va,miss,event"
    );
    let sim = dir.join("run");
    let csv = dir.join("r.csv");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&sim.join("pagetable.hmttlog")),
        "--csv",
        s(&csv),
    ]);
    let replayed = std::fs::read_to_string(&csv).unwrap();
    assert!(
        replayed == dumped,
        "replay --csv and dump --csv --accesses-only differ"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
