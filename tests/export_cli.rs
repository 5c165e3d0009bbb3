//! `hmtt export` through the binary on a simulated run (2 boards, several
//! processes, DMA, I-code pairs), each format checked against the trace
//! itself: DRAMsim3 and Ramulator 2 lines record by record, gem5 and
//! Perfetto decoded with their protobuf schemas by Python's protobuf
//! runtime (gem5's messages declared in tests/data/gem5_packet.proto,
//! Perfetto's from the `perfetto` package; both independent of the
//! encoder's prost structs), Parquet read by DuckDB,
//! CSV equal to `hmtt dump --csv`, and the CSV of `hmtt replay --csv` with
//! the same header as the dump of a virtual trace.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::vtrace::{VirtualRecord, VtraceView};
use serde_json::Value;

mod support;
use support::cli::{mix_merged_with_events, ok, pack_in_small_blocks, s, scratch, Scratch};

/// A simulated run merged into a trace, packed, and replayed into a
/// virtual trace: (dir, trace, archive, vtrace).
fn run(name: &str) -> (Scratch, PathBuf, PathBuf, PathBuf) {
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

/// Decodes a protobuf export with its schema through
/// `tests/support/decode_protobuf.py` (pip packages `grpcio-tools` for
/// gem5's, `perfetto` for Perfetto's, both installed by scripts/setup.sh):
/// the messages as JSON, each field by its schema name, enums by name.
fn decode_with_schema(format: &str, file: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/decode_protobuf.py");
    let out = Command::new("python3")
        .arg(&script)
        .args([format, s(file)])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{format} export does not decode with its schema:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the decoder prints JSON")
}

#[test]
fn gem5_packet_trace_parses_back_with_its_schema() {
    let (dir, trace, archive, _) = run("gem5");
    let (tick_ps, first, records) = physical_records(&trace);
    let file = dir.join("t.gem5");
    let b = export(&trace, "gem5", &file, &[]);
    // The archive exports the same bytes.
    assert!(b == export(&archive, "gem5", &dir.join("z.gem5"), &[]));
    assert_eq!(&b[..4], b"gem5");
    assert_eq!(u32::from_le_bytes(b[..4].try_into().unwrap()), 0x356d_6567);
    let decoded = decode_with_schema("gem5", &file);
    let header = &decoded["header"];
    assert_eq!(header["obj_id"], "hmtt");
    assert_eq!(header["tick_freq"], 1_000_000_000_000u64);
    let accesses: Vec<_> = records.iter().filter(|r| r.is_access()).collect();
    let packets = decoded["packets"].as_array().unwrap();
    assert_eq!(packets.len(), accesses.len());
    // cmd is gem5's MemCmd: ReadReq 1, WriteReq 4.
    for (i, (p, r)) in packets.iter().zip(&accesses).enumerate() {
        assert_eq!(p["tick"], (r.tick - first) * u64::from(tick_ps), "{p}");
        let write = r.kind() == RecordKind::Write;
        assert_eq!(p["cmd"], if write { 4 } else { 1 }, "{p}");
        assert_eq!(p["addr"], r.value() << 6, "{p}");
        assert_eq!(p["size"], 64, "{p}");
        assert_eq!(p["pkt_id"], i as u64, "{p}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perfetto_trace_parses_back_with_counters_instants_and_slices() {
    let (dir, _, _, vtrace) = run("perfetto");
    let (first, records) = virtual_records(&vtrace);
    let interval_ns = 2000u64;
    let file = dir.join("t.perfetto-trace");
    export(
        &vtrace,
        "perfetto",
        &file,
        &["--interval-ns", &interval_ns.to_string()],
    );
    let decoded = decode_with_schema("perfetto", &file);
    let packets = decoded["packet"].as_array().unwrap();
    let mut tracks: HashMap<u64, &Value> = HashMap::new();
    let mut counter_sum: HashMap<u64, f64> = HashMap::new();
    let mut instants = Vec::new();
    let mut slices: Vec<(u64, &str, u64)> = Vec::new(); // (track, type, ts)
    let mut last_ts = 0;
    for p in packets {
        assert_eq!(p["trusted_packet_sequence_id"], 1, "{p}");
        if let Some(d) = p.get("track_descriptor") {
            let uuid = d["uuid"].as_u64().expect("a track has a uuid");
            if let Some(parent) = d["parent_uuid"].as_u64() {
                assert!(tracks.contains_key(&parent), "parent described first");
            }
            tracks.insert(uuid, d);
        }
        if let Some(e) = p.get("track_event") {
            let ts = p["timestamp"].as_u64().expect("an event has a timestamp");
            let track = e["track_uuid"].as_u64().unwrap();
            assert!(tracks.contains_key(&track), "track {track} described first");
            match e["type"].as_str() {
                Some("TYPE_COUNTER") => {
                    assert!(ts >= last_ts, "counters in time order");
                    last_ts = ts;
                    *counter_sum.entry(track).or_default() +=
                        e["double_counter_value"].as_f64().unwrap_or_else(|| {
                            panic!("a counter event without double_counter_value: {e}")
                        });
                }
                Some("TYPE_INSTANT") => instants.push((ts, e["name"].as_str().unwrap())),
                Some(t @ ("TYPE_SLICE_BEGIN" | "TYPE_SLICE_END")) => slices.push((track, t, ts)),
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
    let counters: Vec<(&u64, &&Value)> = tracks
        .iter()
        .filter(|(_, d)| d.get("counter").is_some())
        .collect();
    assert_eq!(counters.len(), want_board.len() + want_pid.len());
    let mut got_board = BTreeMap::new();
    let mut got_pid = BTreeMap::new();
    for (uuid, d) in counters {
        let bytes = to_bytes(counter_sum.get(uuid).copied().unwrap_or(0.0)).round() as u64;
        match d["parent_uuid"].as_u64() {
            None => {
                let name = d["name"].as_str().unwrap();
                let b: u8 = name.split(' ').nth(1).unwrap().parse().unwrap();
                got_board.insert(b, bytes);
            }
            Some(parent) => {
                let pid = tracks[&parent]["process"]["pid"].as_u64().unwrap() as u32;
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
    let named = |n: &str| instants.iter().filter(|(_, name)| *name == n).count();
    assert_eq!(named("quicksort_begin"), 1);
    // Slices: each *_begin/*_end pair, balanced, on its pair's track.
    let begins = instants
        .iter()
        .filter(|(_, n)| n.ends_with("_begin"))
        .count();
    assert!(begins >= 4, "{begins}");
    let of_type = |t: &str| slices.iter().filter(|s| s.1 == t).count();
    assert_eq!(of_type("TYPE_SLICE_BEGIN"), begins);
    assert_eq!(of_type("TYPE_SLICE_END"), begins);
    let quicksort = tracks
        .iter()
        .find(|(_, d)| d["name"] == "quicksort")
        .map(|(u, _)| *u)
        .expect("a track for the quicksort pair");
    let qs: Vec<_> = slices.iter().filter(|s| s.0 == quicksort).collect();
    assert_eq!(qs.len(), 2);
    assert!(qs[0].1 == "TYPE_SLICE_BEGIN" && qs[1].1 == "TYPE_SLICE_END" && qs[0].2 < qs[1].2);
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

/// Every value of the Parquet export of an archive read back row by row,
/// across row groups that do not line up with the archive's blocks: the
/// delta-packed ticks and board, the byte-split times, the kind strings
/// written without statistics.
#[test]
fn parquet_export_of_an_archive_holds_every_record_s_values_in_order() {
    let (dir, trace, archive, _) = run("parquet_rows");
    let (tick_ps, _, records) = physical_records(&trace);
    let pq = dir.join("a.parquet");
    // Groups of 3000 rows over the archive's blocks of 1000 records.
    export(&archive, "parquet", &pq, &["--row-group", "3000"]);
    let rows = duckdb(&format!(
        "select tick, board, kind, pa, is_write, value, event, \
         time_ns = tick::double * {} from read_parquet('{}', file_row_number = true) \
         order by file_row_number",
        f64::from(tick_ps) / 1000.0,
        s(&pq)
    ));
    // The event names as the CSV writes them (none of this run's is quoted).
    let dump = ok(&["dump", s(&trace), "--csv"]);
    let events: Vec<&str> = dump
        .lines()
        .skip(1)
        .map(|l| l.splitn(7, ',').nth(6).unwrap())
        .collect();
    assert_eq!(rows.len(), records.len());
    let none = || "None".to_string();
    for (i, ((row, r), event)) in rows.iter().zip(&records).zip(&events).enumerate() {
        let kind = r.kind();
        let directed = matches!(
            kind,
            RecordKind::Read | RecordKind::Write | RecordKind::Tag { .. }
        );
        let named = matches!(kind, RecordKind::Tag { .. } | RecordKind::Cmd);
        let want = [
            r.tick.to_string(),
            r.board().to_string(),
            kind.name().to_string(),
            if r.is_access() {
                r.pa().to_string()
            } else {
                none()
            },
            if directed {
                if matches!(kind, RecordKind::Write | RecordKind::Tag { write: true }) {
                    "True".into()
                } else {
                    "False".into()
                }
            } else {
                none()
            },
            if r.is_access() {
                none()
            } else {
                r.value().to_string()
            },
            if named { event.to_string() } else { none() },
            "True".into(),
        ]
        .join(",");
        assert_eq!(*row, want, "row {i}");
    }
    assert!(records.iter().any(|r| r.kind() == RecordKind::Write));
    assert!(records
        .iter()
        .any(|r| matches!(r.kind(), RecordKind::Tag { .. })));
    assert!(records.iter().any(|r| r.board() == 1));
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

#[test]
fn partitioned_parquet_dataset_holds_every_record_in_its_time_window() {
    let (dir, trace, archive, vtrace) = run("parquet_dataset");
    let (tick_ps, _, records) = physical_records(&trace);
    let span_ps = (records.last().unwrap().tick - records[0].tick) * u64::from(tick_ps);
    // About six windows over the trace, a whole number of ps each.
    let window_ps = span_ps / 6;
    let ms = format!("{}", window_ps as f64 / 1e9);
    let window_ps = (window_ps as f64 / 1e9 * 1e9).round() as u64;
    let single = dir.join("one.parquet");
    export(&archive, "parquet", &single, &["--row-group", "3000"]);
    let set = dir.join("set");
    ok(&[
        "export",
        s(&archive),
        "--format",
        "parquet",
        "--row-group",
        "3000",
        "--partition-ms",
        &ms,
        "-o",
        s(&set),
    ]);
    let columns = "tick, time_ns, board, kind, pa, is_write, value, event";
    let whole = duckdb(&format!(
        "select {columns} from read_parquet('{}', file_row_number = true) order by file_row_number",
        s(&single)
    ));
    let parts = duckdb(&format!(
        "select time_window, {columns} from read_parquet('{}/*/*.parquet', hive_partitioning = true, \
         file_row_number = true) order by time_window, file_row_number",
        s(&set)
    ));
    assert_eq!(parts.len(), records.len());
    let mut windows = std::collections::BTreeSet::new();
    for (i, ((part, row), r)) in parts.iter().zip(&whole).zip(&records).enumerate() {
        let (window, rest) = part.split_once(',').unwrap();
        assert_eq!(rest, row, "row {i}");
        let want = u128::from(r.tick) * u128::from(tick_ps) / u128::from(window_ps);
        assert_eq!(window, want.to_string(), "row {i} (tick {})", r.tick);
        windows.insert(window.to_string());
    }
    assert!(windows.len() >= 5, "{windows:?}");
    // One directory per window with records, one file each, and no
    // temporary directory left beside it.
    let mut names: Vec<String> = std::fs::read_dir(&set)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<String> = windows.iter().map(|w| format!("time_window={w}")).collect();
    want.sort();
    assert_eq!(names, want);
    for name in &names {
        let files: Vec<_> = std::fs::read_dir(set.join(name)).unwrap().collect();
        assert_eq!(files.len(), 1);
        assert!(set.join(name).join("part-00000.parquet").is_file());
    }
    assert!(!std::fs::read_dir(&dir).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .contains("partial")));
    // Every row group has the min and max of the time columns, so a time
    // filter skips the groups outside it.
    let unstated = duckdb(&format!(
        "select count(*) from parquet_metadata('{}/*/*.parquet') \
         where path_in_schema in ('tick', 'time_ns') \
         and (stats_min_value is null or stats_max_value is null)",
        s(&set)
    ));
    assert_eq!(unstated, ["0"]);
    let groups = duckdb(&format!(
        "select count(distinct (file_name, row_group_id)) from parquet_metadata('{}/*/*.parquet')",
        s(&set)
    ));
    assert!(
        groups[0].parse::<usize>().unwrap() > names.len(),
        "{groups:?}"
    );

    // A virtual trace makes the same dataset with its columns.
    let vset = dir.join("vset");
    ok(&[
        "export",
        s(&vtrace),
        "--format",
        "parquet",
        "--partition-ms",
        &ms,
        "-o",
        s(&vset),
    ]);
    let (_, vrecords) = virtual_records(&vtrace);
    let vrows = duckdb(&format!(
        "select count(*), count(source), count(distinct time_window) from \
         read_parquet('{}/*/*.parquet', hive_partitioning = true)",
        s(&vset)
    ));
    let sources = vrecords.iter().filter(|v| v.is_access()).count();
    assert_eq!(
        vrows,
        [format!("{},{sources},{}", vrecords.len(), windows.len())]
    );

    // Refused: a directory that holds files (the dataset is kept), the
    // input as the output, another format, a zero window.
    let again = support::cli::fails(&[
        "export",
        s(&archive),
        "--format",
        "parquet",
        "--partition-ms",
        &ms,
        "-o",
        s(&set),
    ]);
    assert!(again.contains("holds files"), "{again}");
    assert!(set.join(&names[0]).join("part-00000.parquet").is_file());
    let over = support::cli::fails(&[
        "export",
        s(&archive),
        "--format",
        "parquet",
        "--partition-ms",
        "1",
        "-o",
        s(&archive),
    ]);
    assert!(over.contains("is the input"), "{over}");
    let csv = support::cli::fails(&[
        "export",
        s(&archive),
        "--format",
        "csv",
        "--partition-ms",
        "1",
        "-o",
        s(&dir.join("x")),
    ]);
    assert!(csv.contains("needs --format parquet"), "{csv}");
    let tiny = support::cli::fails(&[
        "export",
        s(&archive),
        "--format",
        "parquet",
        "--partition-ms",
        "1e-12",
        "-o",
        s(&dir.join("x")),
    ]);
    assert!(tiny.contains("1e-12: a window is 1 ps"), "{tiny}");
    assert!(!dir.join("x").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
