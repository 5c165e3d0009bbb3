//! `hmtt analyze` against independent computations on small simulated
//! traces: every figure is recomputed here from `hmtt dump --csv` (or the
//! kernel log) by the plainest method (a linear LRU stack walk for reuse
//! distances, a scan of all earlier chain ends for streams, bit slicing of
//! the address for banks), and compared with the library's one-pass
//! analysis; then the command line's pictures and JSON.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use hmtt_analyze::reuse_sampled::ReuseMode;
use hmtt_analyze::{analyze, Analysis, AnalyzeOptions, TraceInput};
use hmtt_format::archive::AnyTrace;
use hmtt_format::events::EventWindow;
use hmtt_format::vtrace::VtraceView;

mod support;
use support::cli::{ok, s, scratch, simulate_and_merge, MIX_ON_2_BOARDS};

/// One row of a CSV dump.
#[derive(Debug, Clone)]
struct Row {
    tick: u64,
    board: u8,
    pa: Option<u64>,
    write: bool,
    kind: String,
    event: String,
    dma: bool,
    owner: Option<(u32, u64)>,
}

/// Every record of `hmtt dump --csv`, columns found by their names.
fn dump(trace: &Path) -> Vec<Row> {
    let csv = ok(&["dump", s(trace), "--csv"]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (tick, board, pa, rw, kind, event) = (
        col("tick").unwrap(),
        col("board").unwrap(),
        col("pa").unwrap(),
        col("rw").unwrap(),
        col("kind").unwrap(),
        col("event").unwrap(),
    );
    let (source, pid, va) = (col("source"), col("pid"), col("va"));
    let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Row {
                tick: f[tick].parse().unwrap(),
                board: f[board].parse().unwrap(),
                pa: (!f[pa].is_empty()).then(|| hex(f[pa])),
                write: f[rw] == "W",
                kind: f[kind].to_string(),
                event: f[event].to_string(),
                dma: source.is_some_and(|c| f[c] == "dma"),
                owner: pid
                    .filter(|&c| !f[c].is_empty())
                    .map(|c| (f[c].parse().unwrap(), hex(f[va.unwrap()]))),
            }
        })
        .collect()
}

fn accesses(rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .filter(|r| r.kind == "READ" || r.kind == "WRITE")
        .cloned()
        .collect()
}

/// The library's analysis of `path` (trace or virtual trace).
fn analysis(path: &Path, opts: &AnalyzeOptions) -> Analysis {
    let bytes = std::fs::read(path).unwrap();
    if bytes.starts_with(&hmtt_format::vtrace::MAGIC) {
        let v = VtraceView::new_checked(&bytes).unwrap();
        analyze(&TraceInput::Virtual(&v), opts).unwrap().0
    } else {
        let t = AnyTrace::new_checked(&bytes).unwrap();
        analyze(&TraceInput::Physical(&t), opts).unwrap().0
    }
}

fn bucket(d: u64) -> usize {
    (64 - d.leading_zeros()) as usize
}

/// Reuse distances by walking an LRU stack: (first uses, bucket → count).
fn naive_reuse(lines: &[u64]) -> (u64, BTreeMap<usize, u64>) {
    let mut stack: Vec<u64> = Vec::new();
    let mut cold = 0;
    let mut hist = BTreeMap::new();
    for &l in lines {
        match stack.iter().rposition(|&x| x == l) {
            Some(i) => {
                let d = (stack.len() - 1 - i) as u64;
                *hist.entry(bucket(d)).or_insert(0) += 1;
                stack.remove(i);
            }
            None => cold += 1,
        }
        stack.push(l);
    }
    (cold, hist)
}

fn reuse_of(a: &Analysis) -> (u64, BTreeMap<usize, u64>) {
    let hist = a
        .reuse
        .buckets
        .iter()
        .filter(|b| b.2 > 0)
        .map(|&(lo, _, n)| (bucket(lo), n))
        .collect();
    (a.reuse.cold, hist)
}

/// Chain lengths of the stream definition, by scanning the `window`
/// references before each one for a chain end it continues.
fn naive_chains(lines: &[u64], window: usize) -> Vec<u64> {
    let n = lines.len();
    let (mut len, mut dir, mut end) = (vec![0u64; n], vec![0i64; n], vec![false; n]);
    for i in 0..n {
        let mut joined = None;
        for j in (i.saturating_sub(window)..i).rev() {
            let d = lines[i] as i64 - lines[j] as i64;
            if end[j] && d.abs() == 1 && (dir[j] == 0 || dir[j] == d) {
                joined = Some((j, d));
                break;
            }
        }
        match joined {
            Some((j, d)) => {
                end[j] = false;
                len[i] = len[j] + 1;
                dir[i] = d;
            }
            None => len[i] = 1,
        }
        end[i] = true;
    }
    (0..n).filter(|&i| end[i]).map(|i| len[i]).collect()
}

/// Runs of consecutive lines, one direction each, read straight off the
/// sequence (the stream definition with a window of one reference).
fn direct_runs(lines: &[u64]) -> Vec<u64> {
    let mut runs = Vec::new();
    let (mut len, mut dir) = (0u64, 0i64);
    for (i, &l) in lines.iter().enumerate() {
        let d = if i == 0 {
            0
        } else {
            l as i64 - lines[i - 1] as i64
        };
        if i > 0 && d.abs() == 1 && (dir == 0 || dir == d) {
            len += 1;
            dir = d;
        } else {
            if len > 0 {
                runs.push(len);
            }
            (len, dir) = (1, 0);
        }
    }
    if len > 0 {
        runs.push(len);
    }
    runs
}

fn check_streams(a: &hmtt_analyze::streams::StreamReport, chains: &[u64]) {
    let min = a.min_len;
    let long: Vec<u64> = chains.iter().copied().filter(|&l| l >= min).collect();
    assert_eq!(a.streams, long.len() as u64);
    assert_eq!(a.stream_references, long.iter().sum::<u64>());
    assert_eq!(a.longest, chains.iter().copied().max().unwrap_or(0));
    let mut hist = BTreeMap::new();
    for &l in chains {
        *hist.entry(bucket(l)).or_insert(0u64) += 1;
    }
    let got: BTreeMap<usize, u64> = a
        .run_lengths
        .iter()
        .filter(|b| b.2 > 0)
        .map(|&(lo, _, n)| (bucket(lo), n))
        .collect();
    assert_eq!(got, hist);
}

/// (board, rank, bank, row) of a DDR3-4G (1,3,15,7) linear mapping, with
/// `channels` boards interleaved in 4 KiB blocks.
fn ddr3_coord(board: u8, pa: u64, channels: u64) -> (u8, u64, u64, u64) {
    let local = ((pa >> 12) / channels) << 12 | (pa & 0xfff);
    let line = local >> 6;
    (
        board,
        (line >> 25) & 1,
        (line >> 7) & 7,
        (line >> 10) & 0x7fff,
    )
}

#[test]
fn physical_analyses_match_independent_recounts() {
    let dir = scratch("physical");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "1500", "--cache", "off"],
        &[],
    );
    let rows = dump(&trace);
    let acc = accesses(&rows);
    assert!(acc.len() > 20_000, "{} references", acc.len());
    let opts = AnalyzeOptions::default();
    let a = analysis(&trace, &opts);
    let lines: Vec<u64> = acc.iter().map(|r| r.pa.unwrap() >> 6).collect();

    // Mix.
    let writes = acc.iter().filter(|r| r.write).count() as u64;
    assert_eq!(
        (a.mix.reads, a.mix.writes),
        (acc.len() as u64 - writes, writes)
    );

    // Reuse distances against the LRU stack walk.
    assert_eq!(reuse_of(&a), naive_reuse(&lines));
    let distinct: HashSet<u64> = lines.iter().copied().collect();
    assert_eq!(a.reuse.distinct_lines, distinct.len() as u64);

    // Streams against the scan of earlier chain ends (window 32), and
    // with a window of one against the direct scan of runs.
    check_streams(&a.streams, &naive_chains(&lines, 32));
    let one = AnalyzeOptions {
        stream_window: 1,
        ..AnalyzeOptions::default()
    };
    check_streams(&analysis(&trace, &one).streams, &direct_runs(&lines));

    // Banks, rows and bank-level parallelism against bit slicing.
    let mut banks: BTreeMap<(u8, u64, u64), (u64, u64)> = BTreeMap::new();
    let mut last_row: HashMap<(u8, u64, u64), u64> = HashMap::new();
    let (mut same, mut other) = (0u64, 0u64);
    let blp_ticks = (100.0 / (f64::from(a.tick_ps) / 1000.0)).round() as u64;
    let mut windows: BTreeMap<u64, HashSet<(u8, u64, u64)>> = BTreeMap::new();
    for r in &acc {
        let (b, rank, bank, row) = ddr3_coord(r.board, r.pa.unwrap(), 1);
        let c = banks.entry((b, rank, bank)).or_default();
        if r.write {
            c.1 += 1
        } else {
            c.0 += 1
        }
        match last_row.insert((b, rank, bank), row) {
            Some(x) if x == row => same += 1,
            Some(_) => other += 1,
            None => {}
        }
        windows
            .entry(r.tick / blp_ticks)
            .or_default()
            .insert((b, rank, bank));
    }
    let got: BTreeMap<(u8, u64, u64), (u64, u64)> = a
        .banks
        .banks
        .iter()
        .map(|b| {
            (
                (b.board, u64::from(b.rank), u64::from(b.bank)),
                (b.reads, b.writes),
            )
        })
        .collect();
    assert_eq!(got, banks);
    assert_eq!(a.banks.geometry, "1,3,15,7");
    assert_eq!(
        (a.row_locality.same_row, a.row_locality.other_row),
        (same, other)
    );
    let mut blp: BTreeMap<u32, u64> = BTreeMap::new();
    for w in windows.values() {
        *blp.entry(w.len() as u32).or_default() += 1;
    }
    assert_eq!(
        a.bank_parallelism.histogram,
        blp.into_iter().collect::<Vec<_>>()
    );

    // Hot pages.
    let mut pages: HashMap<u64, u64> = HashMap::new();
    for r in &acc {
        *pages.entry(r.pa.unwrap() >> 12 << 12).or_default() += 1;
    }
    let mut top: Vec<(u64, u64)> = pages.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(opts.top_pages);
    let got: Vec<(u64, u64)> = a
        .pages
        .top
        .iter()
        .map(|p| (p.page, p.reads + p.writes))
        .collect();
    assert_eq!(got, top);

    // Bandwidth timeline: every reference in one interval.
    let (r, w) = a
        .timeline
        .intervals
        .iter()
        .fold((0, 0), |(r, w), i| (r + i.reads, w + i.writes));
    assert_eq!((r, w), (a.mix.reads, a.mix.writes));
    assert!(a.timeline.intervals.len() <= 512);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_window_restricts_every_figure_to_its_span() {
    let dir = scratch("window");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "1500", "--cache", "off"],
        &[],
    );
    let rows = dump(&trace);
    // Between the tags of kernel log records 1 and 2 (indices 0x10001 and
    // 0x10002): a stretch in the middle of the run.
    let begin = rows.iter().position(|r| r.event == "LOG#1").unwrap();
    let end = rows.iter().position(|r| r.event == "LOG#2").unwrap();
    let inside = accesses(&rows[begin..end]);
    assert!(!inside.is_empty() && inside.len() < accesses(&rows).len());
    let names = hmtt_format::events::EventNames::default();
    let opts = AnalyzeOptions {
        window: Some(EventWindow::parse("0x10001,0x10002", &names).unwrap()),
        ..AnalyzeOptions::default()
    };
    let a = analysis(&trace, &opts);
    let lines: Vec<u64> = inside.iter().map(|r| r.pa.unwrap() >> 6).collect();
    let writes = inside.iter().filter(|r| r.write).count() as u64;
    assert_eq!(
        (a.mix.reads + a.mix.writes, a.mix.writes),
        (inside.len() as u64, writes)
    );
    assert_eq!(a.mix.first_tick, Some(inside[0].tick));
    assert_eq!(reuse_of(&a), naive_reuse(&lines));
    check_streams(&a.streams, &naive_chains(&lines, 32));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_boards_and_a_virtual_trace() {
    let dir = scratch("virtual");
    let (sim, trace) = simulate_and_merge(
        &dir,
        &[&MIX_ON_2_BOARDS[..], &["--dma", "8"]].concat(),
        &["--interleave-shift", "12"],
    );
    // Banks of two interleaved channels against bit slicing.
    let a = analysis(&trace, &AnalyzeOptions::default());
    let rows = dump(&trace);
    // Each board carries every tag: the timeline has each event once.
    let board0: Vec<String> = rows
        .iter()
        .filter(|r| r.board == 0 && r.kind.starts_with("TAG") && !r.event.starts_with("LOG#"))
        .map(|r| r.event.clone())
        .collect();
    assert!(rows.iter().any(|r| r.board == 1 && r.event == board0[0]));
    let marked: Vec<String> = a.timeline.events.iter().map(|e| e.name.clone()).collect();
    assert_eq!(marked, board0);
    let mut banks: BTreeMap<(u8, u64, u64), u64> = BTreeMap::new();
    for r in accesses(&rows) {
        let (b, rank, bank, _) = ddr3_coord(r.board, r.pa.unwrap(), 2);
        *banks.entry((b, rank, bank)).or_default() += 1;
    }
    let got: BTreeMap<(u8, u64, u64), u64> = a
        .banks
        .banks
        .iter()
        .map(|b| {
            (
                (b.board, u64::from(b.rank), u64::from(b.bank)),
                b.reads + b.writes,
            )
        })
        .collect();
    assert_eq!(got, banks);
    assert_eq!(a.banks.outside, 0);

    let vtrace = dir.join("run.hmttvtrace");
    let log = sim.join("pagetable.hmttlog");
    ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
    let v = analysis(&vtrace, &AnalyzeOptions::default());
    let acc = accesses(&dump(&vtrace));
    assert!(v.virtual_trace);
    // CPU/DMA split and footprints against the dump.
    let mut split = [0u64; 4];
    let mut per_pid: BTreeMap<u32, (u64, u64, HashSet<u64>)> = BTreeMap::new();
    for r in &acc {
        split[usize::from(r.dma) * 2 + usize::from(r.write)] += 1;
        if let Some((pid, va)) = r.owner {
            let e = per_pid.entry(pid).or_default();
            if r.write {
                e.1 += 1
            } else {
                e.0 += 1
            }
            e.2.insert(va >> 12);
        }
    }
    assert_eq!(v.mix.cpu_dma, split);
    let got: Vec<(u32, u64, u64, u64)> = v
        .processes
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| (p.pid, p.reads, p.writes, p.pages))
        .collect();
    let want: Vec<(u32, u64, u64, u64)> = per_pid
        .iter()
        .map(|(&pid, (r, w, p))| (pid, *r, *w, p.len() as u64))
        .collect();
    assert_eq!(got, want);
    // Virtual streams: per process, over virtual lines, as the scan sees
    // them when each process's lines are kept apart.
    let vlines: Vec<u64> = acc
        .iter()
        .filter_map(|r| r.owner.map(|(pid, va)| (u64::from(pid) << 44) | (va >> 6)))
        .collect();
    check_streams(
        v.virtual_streams.as_ref().unwrap(),
        &naive_chains(&vlines, 32),
    );
    // DMA request sizes: the estimate against the kernel log's DMA_MAPs.
    let image =
        hmtt_format::klog::read_image(&std::fs::read(&log).unwrap()).expect("a readable log");
    let mut logged: BTreeMap<bool, (u64, u64)> = BTreeMap::new();
    for r in &image.records {
        if let hmtt_format::klog::Event::DmaMap { size, dir, .. } = r.event {
            let write = dir == hmtt_format::klog::DmaDirection::FromDevice;
            let e = logged.entry(write).or_default();
            e.0 += 1;
            e.1 += size;
        }
    }
    assert!(!logged.is_empty());
    let got: BTreeMap<bool, (u64, u64)> = v
        .dma_requests
        .as_ref()
        .unwrap()
        .iter()
        .map(|d| (d.direction.contains("DMA write"), (d.requests, d.bytes)))
        .collect();
    assert_eq!(got, logged);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_command_line_writes_pictures_and_json() {
    let dir = scratch("cli");
    let (sim, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "1000", "--cache", "off"],
        &[],
    );
    let events = sim.join("events.toml");
    let plots = dir.join("plots");
    let json = dir.join("a.json");
    let text = ok(&[
        "analyze",
        s(&trace),
        "--window",
        "quicksort_begin,quicksort_end",
        "--events",
        s(&events),
        "--plot",
        s(&plots),
        "--json",
        s(&json),
    ]);
    assert!(text.contains("reuse distance"), "{text}");
    for name in [
        "address_time",
        "bandwidth",
        "reuse_cdf",
        "page_heat",
        "banks",
    ] {
        let png = std::fs::read(plots.join(format!("{name}.png"))).unwrap();
        assert!(
            png.len() > 1000 && png.starts_with(b"\x89PNG"),
            "{name}.png"
        );
        let svg = std::fs::read_to_string(plots.join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"), "{name}.svg");
    }
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let refs = j["mix"]["reads"].as_u64().unwrap() + j["mix"]["writes"].as_u64().unwrap();
    assert!(text.contains(&format!("{refs} references")), "{text}");
    assert_eq!(j["window"], serde_json::json!([64, 65]));
    for key in [
        "timeline",
        "banks",
        "bank_parallelism",
        "row_locality",
        "pages",
        "reuse",
        "streams",
    ] {
        assert!(j.get(key).is_some(), "{key} missing from the JSON");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page heat map holds the 32 hottest pages, hottest first, whatever
/// `--top` reports, and each row's cells add up to that page's references
/// in the dump (recounted here from `hmtt dump --csv`).
#[test]
fn the_page_heat_map_holds_the_32_hottest_pages_hottest_first() {
    use hmtt_analyze::pictures::{Pictures, HEAT_COLS, HEAT_PAGES};
    let dir = scratch("heat");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "60000", "--cache", "off"],
        &[],
    );
    let mut per_page: HashMap<u64, u64> = HashMap::new();
    for r in accesses(&dump(&trace)) {
        *per_page.entry(r.pa.unwrap() >> 12 << 12).or_default() += 1;
    }
    assert!(per_page.len() > HEAT_PAGES, "more pages than the map shows");
    let bytes = std::fs::read(&trace).unwrap();
    let t = AnyTrace::new_checked(&bytes).unwrap();
    let input = TraceInput::Physical(&t);
    let opts = AnalyzeOptions {
        top_pages: 5,
        ..AnalyzeOptions::default()
    };
    let (a, analyzer) = analyze(&input, &opts).unwrap();
    assert_eq!(a.pages.top.len(), 5, "--top reports its own count");
    let p = Pictures::collect(&input, &opts, &a, &analyzer).unwrap();
    assert_eq!(p.heat_pages.len(), HEAT_PAGES);
    let counts: Vec<u64> = p
        .heat_pages
        .iter()
        .enumerate()
        .map(|(row, page)| {
            let cells: u64 = p.heat[row * HEAT_COLS..(row + 1) * HEAT_COLS]
                .iter()
                .map(|&n| u64::from(n))
                .sum();
            assert_eq!(cells, per_page[page], "row {row}, page {page:#x}");
            cells
        })
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "hottest first: {counts:?}"
    );
    let mut all: Vec<u64> = per_page.values().copied().collect();
    all.sort_unstable_by(|x, y| y.cmp(x));
    assert_eq!(counts, all[..HEAT_PAGES], "the 32 hottest");
    let _ = std::fs::remove_dir_all(&dir);
}

/// References the board dropped (LOST records, here from a 24-word TX
/// FIFO behind one port) are in no figure, and `analyze` says how many.
#[test]
fn lost_references_are_counted_and_reported() {
    let dir = scratch("lost");
    let (_, trace) = simulate_and_merge(
        &dir,
        &[
            "--workload",
            "quicksort",
            "--n",
            "1000",
            "--cache",
            "off",
            "--ports",
            "1",
            "--fifo-depth",
            "24",
        ],
        &[],
    );
    let rows = dump(&trace);
    let lost: u64 = rows
        .iter()
        .filter(|r| r.kind == "LOST")
        .map(|r| {
            let n = r.event.split(' ').next().unwrap();
            n.parse::<u64>().unwrap()
        })
        .sum();
    assert!(lost > 0, "the 24-word FIFO overflows");
    let a = analysis(&trace, &AnalyzeOptions::default());
    assert_eq!(a.mix.lost_references, lost);
    assert_eq!(a.mix.references(), accesses(&rows).len() as u64);
    // The bandwidth picture marks them: every one in some time column.
    {
        use hmtt_analyze::pictures::Pictures;
        let bytes = std::fs::read(&trace).unwrap();
        let t = AnyTrace::new_checked(&bytes).unwrap();
        let input = TraceInput::Physical(&t);
        let opts = AnalyzeOptions::default();
        let (a, analyzer) = analyze(&input, &opts).unwrap();
        let p = Pictures::collect(&input, &opts, &a, &analyzer).unwrap();
        assert_eq!(p.lost.iter().sum::<u64>(), lost);
    }
    assert_eq!((a.mix.gaps, a.mix.gap_packets), (0, 0));
    let text = ok(&["analyze", s(&trace)]);
    assert!(
        text.contains(&format!(
            "not in any figure: {lost} references the board dropped (LOST records), 0 capture gaps"
        )),
        "{text}"
    );
}

/// The pictures of a trace split into runs of blocks, on threads and
/// through files (`--write-plot-axes`, `--plot-axes`, `--combine --plot`),
/// are those of one pass, LOST records at the start of a run included
/// (counted at the last reference of the runs before).
#[test]
fn split_pictures_are_the_one_pass_pictures() {
    use hmtt_analyze::pictures::Pictures;
    use hmtt_analyze::pictures_partial::collect_in_parts;
    use hmtt_format::trace::RecordKind;
    use hmtt_format::trace_blocks::BlockReader;
    let dir = scratch("split-pictures");
    let (_, trace) = simulate_and_merge(
        &dir,
        &[
            "--workload",
            "quicksort",
            "--n",
            "1500",
            "--cache",
            "off",
            "--ports",
            "1",
            "--fifo-depth",
            "24",
        ],
        &[],
    );
    let archive = dir.join("small-blocks.hmttz");
    ok(&[
        "pack",
        s(&trace),
        "-o",
        s(&archive),
        "--block-records",
        "64",
    ]);
    let bytes = std::fs::read(&archive).unwrap();
    let t = AnyTrace::new_checked(&bytes).unwrap();
    let mut reader = BlockReader::new(&t);
    let blocks = reader.block_count();
    let lost_first = (1..blocks)
        .filter(|&b| {
            let block = reader.block(b).unwrap();
            let first_access = block.iter().position(|r| r.is_access());
            let first_lost = block.iter().position(|r| r.kind() == RecordKind::Lost);
            first_lost.is_some_and(|l| first_access.is_none_or(|a| l < a))
        })
        .count();
    assert!(
        lost_first >= 3,
        "{lost_first} of {blocks} blocks lose references before their first"
    );
    let input = TraceInput::Physical(&t);
    let opts = AnalyzeOptions::default();
    let (a, analyzer) = analyze(&input, &opts).unwrap();
    let whole = Pictures::collect(&input, &opts, &a, &analyzer).unwrap();
    assert_eq!(whole.lost.iter().sum::<u64>(), a.mix.lost_references);
    for threads in [2, 3, 7, blocks] {
        let split = collect_in_parts(&bytes, &a, &analyzer, threads).unwrap();
        assert_eq!(split.lost, whole.lost, "{threads} threads");
        assert_eq!(
            split.scatter_reads, whole.scatter_reads,
            "{threads} threads"
        );
        assert_eq!(
            split.scatter_writes, whole.scatter_writes,
            "{threads} threads"
        );
        assert_eq!(
            (&split.heat_pages, &split.heat),
            (&whole.heat_pages, &whole.heat)
        );
    }

    // Through files: the pictures are the same bytes as one pass's.
    ok(&[
        "analyze",
        s(&archive),
        "--threads",
        "1",
        "--plot",
        s(&dir.join("one")),
        "--plot-format",
        "png,svg",
    ]);
    let cut = [0, 1, blocks / 3, blocks / 2 + 1, blocks];
    let axes = dir.join("axes.json");
    let mut partials = Vec::new();
    for (i, w) in cut.windows(2).enumerate() {
        let p = dir.join(format!("analysis{i}.json"));
        ok(&[
            "analyze",
            s(&archive),
            "--partial",
            s(&p),
            "--blocks",
            &format!("{}..{}", w[0], w[1]),
        ]);
        partials.push(p);
    }
    // `--combine`'s files, then `extra`.
    let combine_args = |more: &[PathBuf], extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["analyze", "--combine"].map(String::from).to_vec();
        v.extend(partials.iter().chain(more).map(|p| s(p).to_string()));
        v.extend(extra.iter().map(|e| e.to_string()));
        v
    };
    let run =
        |args: &[String]| support::cli::hmtt(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run(&combine_args(&[], &["--write-plot-axes", s(&axes)]))
        .status
        .success());
    let without = run(&combine_args(&[], &["--plot", s(&dir.join("none"))]));
    assert!(!without.status.success());
    assert!(String::from_utf8_lossy(&without.stderr).contains("needs the pictures partials"));
    let mut pictures = Vec::new();
    for (i, w) in cut.windows(2).enumerate().rev() {
        let p = dir.join(format!("pictures{i}.json"));
        let blocks = format!("{}..{}", w[0], w[1]);
        ok(&[
            "analyze",
            s(&archive),
            "--blocks",
            &blocks,
            "--plot-axes",
            s(&axes),
            "--partial",
            s(&p),
        ]);
        pictures.push(p);
    }
    let all = run(&combine_args(&pictures, &["--plot", s(&dir.join("split"))]));
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let mut names: Vec<_> = std::fs::read_dir(dir.join("one"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        assert_eq!(
            std::fs::read(dir.join("one").join(name)).unwrap(),
            std::fs::read(dir.join("split").join(name)).unwrap(),
            "{name:?}"
        );
    }
    // A run missing, or grids over the axes of another analysis: refused.
    let out = run(&combine_args(
        &pictures[1..],
        &["--plot", s(&dir.join("short"))],
    ));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in no pictures partial"));
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&axes).unwrap()).unwrap();
    forged["last_tick"] = (forged["last_tick"].as_u64().unwrap() + 1).into();
    let other = dir.join("other-axes.json");
    std::fs::write(&other, forged.to_string()).unwrap();
    // Axes that would size or order the grids wrongly are refused.
    let bad_axes = dir.join("bad-axes.json");
    for (field, value, says) in [
        ("pages", serde_json::json!([5, 3]), "not in ascending order"),
        (
            "heat_pages",
            serde_json::json!(vec![4096; 33]),
            "more than 32",
        ),
    ] {
        let mut bad = forged.clone();
        bad[field] = value;
        std::fs::write(&bad_axes, bad.to_string()).unwrap();
        let out = support::cli::hmtt(&[
            "analyze",
            s(&archive),
            "--blocks",
            "0..1",
            "--plot-axes",
            s(&bad_axes),
            "--partial",
            s(&dir.join("never.json")),
        ]);
        assert!(!out.status.success() && !dir.join("never.json").exists());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{field}"
        );
    }
    let stray = dir.join("stray.json");
    let last = format!("{}..{}", cut[3], cut[4]);
    ok(&[
        "analyze",
        s(&archive),
        "--blocks",
        &last,
        "--plot-axes",
        s(&other),
        "--partial",
        s(&stray),
    ]);
    let mut mixed = pictures[1..].to_vec();
    mixed.push(stray);
    let out = run(&combine_args(&mixed, &["--plot", s(&dir.join("mixed"))]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("other plot axes"), "{err}");
    assert!(!dir.join("mixed").exists() && !dir.join("short").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The analysis of `trace` (a physical trace) split at every `blocks`-th
/// block of its archive packed in blocks of `block_records`, each part
/// analysed apart and merged in order (no fallback to one pass: a merge
/// that fails fails the test), as JSON; and the one-pass JSON.
fn split_and_whole(trace: &Path, block_records: u32, opts: &AnalyzeOptions) -> (String, String) {
    use hmtt_analyze::{analyze_blocks, first_reference_tick};
    use hmtt_format::trace_blocks::BlockReader;
    let archive = trace.with_extension(format!("{block_records}.hmttz"));
    ok(&[
        "pack",
        s(trace),
        "-o",
        s(&archive),
        "--block-records",
        &block_records.to_string(),
    ]);
    let bytes = std::fs::read(&archive).unwrap();
    let t = AnyTrace::new_checked(&bytes).unwrap();
    let input = TraceInput::Physical(&t);
    let whole = serde_json::to_string_pretty(&analyze(&input, opts).unwrap().0).unwrap();
    let blocks = BlockReader::new(&t).block_count();
    assert!(blocks >= 4, "{blocks} blocks: too few to split");
    let origin = first_reference_tick(&t).unwrap();
    let mut merged = analyze_blocks(&input, opts, 0..1, None).unwrap();
    for b in 1..blocks {
        let part = analyze_blocks(&input, opts, b..b + 1, Some(origin)).unwrap();
        merged.merge(part).unwrap();
    }
    let split = serde_json::to_string_pretty(&merged.finish(&input, opts)).unwrap();
    (whole, split)
}

/// `hmtt analyze --threads 2 --json` and `--threads 1 --json`, byte for byte.
fn threads_give_the_same_json(dir: &Path, trace: &Path) {
    let (one, two) = (dir.join("t1.json"), dir.join("t2.json"));
    ok(&["analyze", s(trace), "--threads", "1", "--json", s(&one)]);
    ok(&["analyze", s(trace), "--threads", "2", "--json", s(&two)]);
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(&two).unwrap(),
        "{}",
        trace.display()
    );
}

#[test]
fn parts_merge_into_the_one_pass_analysis_of_quicksort() {
    let dir = scratch("parts-quicksort");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "60000", "--cache", "off"],
        &[],
    );
    let (whole, split) = split_and_whole(&trace, 8192, &AnalyzeOptions::default());
    assert_eq!(whole, split);
    let sampled = AnalyzeOptions {
        reuse: ReuseMode::FixedRate(0.05),
        ..AnalyzeOptions::default()
    };
    let (whole, split) = split_and_whole(&trace, 8192, &sampled);
    assert_eq!(whole, split);
    threads_give_the_same_json(&dir, &trace);

    // Partial analyses saved and combined: the same JSON.
    let (p1, p2, json) = (dir.join("p1"), dir.join("p2"), dir.join("combined.json"));
    ok(&[
        "analyze",
        s(&trace),
        "--partial",
        s(&p2),
        "--blocks",
        "1..100",
    ]);
    ok(&[
        "analyze",
        s(&trace),
        "--partial",
        s(&p1),
        "--blocks",
        "0..1",
    ]);
    ok(&["analyze", "--combine", s(&p2), s(&p1), "--json", s(&json)]);
    assert_eq!(
        std::fs::read(&json).unwrap(),
        std::fs::read(dir.join("t1.json")).unwrap()
    );
    // A gap between partials is refused.
    let out = support::cli::hmtt(&["analyze", "--combine", s(&p2)]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("blocks 0..1 are in no partial analysis"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn parts_merge_into_the_one_pass_analysis_of_mix() {
    let dir = scratch("parts-mix");
    let (_, trace) = simulate_and_merge(
        &dir,
        &[
            "--workload",
            "mix",
            "--n",
            "1M",
            "--cache",
            "off",
            "--boards",
            "2",
        ],
        &[],
    );
    let (whole, split) = split_and_whole(&trace, 4096, &AnalyzeOptions::default());
    assert_eq!(whole, split);
    threads_give_the_same_json(&dir, &trace);
    let _ = std::fs::remove_dir_all(&dir);
}

/// valgrind's lackey trace of a real program (`ls` of a directory), its
/// instruction fetches kept (scripts/setup.sh installs valgrind).
#[test]
fn parts_merge_into_the_one_pass_analysis_of_a_lackey_trace() {
    let dir = scratch("parts-lackey");
    let lackey = dir.join("ls.lackey");
    let ran = std::process::Command::new("valgrind")
        .args(["--tool=lackey", "--trace-mem=yes"])
        .arg(format!("--log-file={}", lackey.display()))
        .args(["ls", "/"])
        .output();
    assert!(
        ran.as_ref().is_ok_and(|o| o.status.success()),
        "valgrind --tool=lackey did not run (scripts/setup.sh installs it): {ran:?}"
    );
    let (_, trace) = simulate_and_merge(
        &dir,
        &[
            "--workload",
            "trace",
            "--trace",
            s(&lackey),
            "--trace-format",
            "lackey",
            "--instructions",
            "--cache",
            "off",
        ],
        &[],
    );
    let (whole, split) = split_and_whole(&trace, 16384, &AnalyzeOptions::default());
    assert_eq!(whole, split);
    threads_give_the_same_json(&dir, &trace);
    let _ = std::fs::remove_dir_all(&dir);
}

/// SHARDS at 1 % on a trace of many lines: the reuse CDF from 100 lines
/// on (the distances a 1 % sample tells apart) within 0.01 of the exact
/// one (mean absolute error), the fixed-size variant too.
#[test]
fn sampled_reuse_distances_are_close_to_the_exact_ones() {
    use hmtt_analyze::reuse_sampled::cdf_mean_absolute_error;
    let dir = scratch("sampled");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "60000", "--cache", "off"],
        &[],
    );
    let exact = analysis(&trace, &AnalyzeOptions::default());
    for mode in [ReuseMode::FixedRate(0.01), ReuseMode::FixedSize(2048)] {
        let opts = AnalyzeOptions {
            reuse: mode,
            ..AnalyzeOptions::default()
        };
        let sampled = analysis(&trace, &opts);
        let s = sampled.reuse.sampling.as_ref().unwrap();
        assert!(s.sampled_references > 0);
        assert!(s.sampled_references < exact.mix.reads + exact.mix.writes);
        let all = cdf_mean_absolute_error(&exact.reuse, &sampled.reuse, 0);
        let resolved = cdf_mean_absolute_error(&exact.reuse, &sampled.reuse, 100);
        eprintln!(
            "{mode}: mean absolute error of the reuse CDF {all:.4}, from 100 lines {resolved:.4}"
        );
        assert!(resolved <= 0.01, "{mode}: mean absolute error {resolved}");
        // Every other figure is the exact analysis'.
        assert_eq!(
            serde_json::to_string(&sampled.streams).unwrap(),
            serde_json::to_string(&exact.streams).unwrap()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The values the pictures draw are the JSON's: each is recomputed here
/// from `hmtt analyze --json` and compared with what `plot` draws from
/// the library's analysis of the same trace.
#[test]
fn the_pictures_draw_the_figures_of_the_json() {
    use hmtt_analyze::plot;
    let dir = scratch("drawn");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "3000", "--cache", "off"],
        &[],
    );
    let json = dir.join("a.json");
    ok(&["analyze", s(&trace), "--json", s(&json)]);
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let bytes = std::fs::read(&trace).unwrap();
    let t = AnyTrace::new_checked(&bytes).unwrap();
    let input = TraceInput::Physical(&t);
    let opts = AnalyzeOptions::default();
    let (a, analyzer) = analyze(&input, &opts).unwrap();
    let p = hmtt_analyze::pictures::Pictures::collect(&input, &opts, &a, &analyzer).unwrap();

    // address_time: the reads' panel holds the JSON's reads, the writes'
    // its writes.
    let sum = |grid: &[u32]| grid.iter().map(|&n| u64::from(n)).sum::<u64>();
    assert_eq!(sum(&p.scatter_reads), j["mix"]["reads"].as_u64().unwrap());
    assert_eq!(sum(&p.scatter_writes), j["mix"]["writes"].as_u64().unwrap());

    // reuse_cdf: at each bucket's bound (one past its last distance), the
    // share of the JSON's reuses below it.
    let buckets: Vec<(u64, u64)> = j["reuse"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b[1].as_u64().unwrap(), b[2].as_u64().unwrap()))
        .collect();
    let reuses: u64 = buckets.iter().map(|b| b.1).sum();
    assert!(reuses > 0);
    let drawn = plot::reuse_cdf_points(&a.reuse);
    assert_eq!(drawn.len(), buckets.len());
    for (k, (&(bound, share), &(hi, _))) in drawn.iter().zip(&buckets).enumerate() {
        let below: u64 = buckets[..=k].iter().map(|b| b.1).sum();
        assert_eq!(bound, hi + 1, "bucket {k}");
        assert!(bound.is_power_of_two(), "bucket {k}: {bound}");
        assert!(
            (share - below as f64 / reuses as f64).abs() < 1e-12,
            "bucket {k}"
        );
    }
    assert_eq!(drawn.last().unwrap().1, 1.0);

    // bandwidth: reads, and writes stacked on them, per interval of the
    // JSON's timeline.
    let timeline = &j["timeline"];
    let interval_ns = timeline["interval_ns"].as_f64().unwrap();
    let intervals = timeline["intervals"].as_array().unwrap();
    let stack = plot::bandwidth_stack(&a);
    // The pictures count time from the first reference.
    let origin_ns = j["mix"]["first_tick"].as_f64().unwrap() * j["tick_ps"].as_f64().unwrap() / 1e3;
    assert!(origin_ns > 0.0);
    assert_eq!(stack.len(), intervals.len());
    for (k, (drawn, row)) in stack.iter().zip(intervals).enumerate() {
        let start_ms = (row["start_ns"].as_f64().unwrap() - origin_ns) / 1e6;
        let reads = row["reads"].as_u64().unwrap() as f64;
        let refs = reads + row["writes"].as_u64().unwrap() as f64;
        // Every interval is the JSON's long but the last, which ends with
        // the last reference.
        let length_ns = (drawn.end_ms - drawn.start_ms) * 1e6;
        if k + 1 < stack.len() {
            assert!((length_ns - interval_ns).abs() < 1e-6, "interval {k}");
        } else {
            assert!(length_ns > 0.0 && length_ns <= interval_ns + 1e-6);
        }
        let mb = |refs: f64| refs * 64.0 / length_ns * 1e3;
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * y.abs().max(1.0);
        assert!((drawn.start_ms - start_ms).abs() < 1e-9, "interval {k}");
        assert_eq!(drawn.total_mb_per_s, row["mb_per_s"].as_f64().unwrap());
        assert!(close(drawn.total_mb_per_s, mb(refs)), "interval {k}");
        assert!(
            close(drawn.reads_mb_per_s, mb(reads)),
            "interval {k}: {} drawn, {} in the JSON",
            drawn.reads_mb_per_s,
            mb(reads)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `scripts/gallery.sh`, which regenerates docs/gallery/, runs (on a
/// small quicksort) and writes every picture as a PNG whose chunks are
/// whole: the signature, IHDR first, IDAT, IEND last, every CRC right.
#[test]
fn the_gallery_script_writes_every_picture() {
    let dir = scratch("gallery");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gallery.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .arg("3000")
        .env("HMTT", env!("CARGO_BIN_EXE_hmtt"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let program = ["address_time_program"];
    let pictures = hmtt_analyze::plot::PICTURES.iter();
    for name in pictures
        .chain(&hmtt_analyze::plot::BOARD_PICTURES)
        .chain(&program)
    {
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        let chunks = png_chunks(&png).unwrap_or_else(|e| panic!("{name}.png: {e}"));
        assert_eq!(chunks.first().map(|c| &c[..]), Some("IHDR"), "{name}");
        assert_eq!(chunks.last().map(|c| &c[..]), Some("IEND"), "{name}");
        assert!(chunks.iter().any(|c| c == "IDAT"), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The chunk types of a PNG file, each chunk's CRC checked.
fn png_chunks(png: &[u8]) -> Result<Vec<String>, String> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let mut rest = png
        .strip_prefix(b"\x89PNG\r\n\x1a\n")
        .ok_or("no PNG signature")?;
    let mut types = Vec::new();
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest.get(..4).ok_or("cut length")?.try_into().unwrap());
        let body = rest.get(4..8 + len as usize).ok_or("cut chunk")?;
        let crc = rest
            .get(8 + len as usize..12 + len as usize)
            .ok_or("cut CRC")?;
        if crc32(body).to_be_bytes() != crc {
            return Err(format!("bad CRC in chunk {}", types.len()));
        }
        types.push(String::from_utf8_lossy(&body[..4]).into_owned());
        rest = &rest[12 + len as usize..];
    }
    Ok(types)
}

/// On a virtual trace the processes with the most translated references
/// are drawn again, each in its own virtual addresses: each one's panels
/// hold its reads and writes of the JSON, the picture files are written,
/// and an input named as one is not written over.
#[test]
fn each_process_of_a_virtual_trace_is_drawn_in_its_virtual_addresses() {
    use hmtt_analyze::pictures::{Pictures, PROCESS_PANELS};
    use hmtt_analyze::plot;
    let dir = scratch("process_pictures");
    let (sim, trace) = simulate_and_merge(&dir, &MIX_ON_2_BOARDS, &["--interleave-shift", "12"]);
    let vtrace = dir.join("run.hmttvtrace");
    let log = sim.join("pagetable.hmttlog");
    ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
    let bytes = std::fs::read(&vtrace).unwrap();
    let v = VtraceView::new_checked(&bytes).unwrap();
    let input = TraceInput::Virtual(&v);
    let opts = AnalyzeOptions::default();
    let (a, analyzer) = analyze(&input, &opts).unwrap();
    let p = Pictures::collect(&input, &opts, &a, &analyzer).unwrap();

    let mut rows = a.processes.clone().unwrap();
    assert!(rows.len() > 1, "the mix runs several processes");
    rows.sort_by_key(|r| (std::cmp::Reverse(r.reads + r.writes), r.pid));
    rows.truncate(PROCESS_PANELS);
    let sum = |grid: &[u32]| grid.iter().map(|&n| u64::from(n)).sum::<u64>();
    let drawn: Vec<(u32, u64, u64, u64)> = p
        .processes
        .iter()
        .map(|q| {
            (
                q.pid,
                q.references,
                sum(&q.scatter_reads),
                sum(&q.scatter_writes),
            )
        })
        .collect();
    let want: Vec<(u32, u64, u64, u64)> = rows
        .iter()
        .map(|r| (r.pid, r.reads + r.writes, r.reads, r.writes))
        .collect();
    assert_eq!(drawn, want);

    let plots = dir.join("plots");
    ok(&["analyze", s(&vtrace), "--plot", s(&plots)]);
    for r in &rows {
        let name = plot::process_picture(r.pid);
        for ext in ["png", "svg"] {
            assert!(
                plots.join(format!("{name}.{ext}")).is_file(),
                "{name}.{ext}"
            );
        }
    }
    // A trace kept under a process picture's name in the plot directory.
    let kept = plots.join(format!("{}.png", plot::process_picture(rows[0].pid)));
    std::fs::copy(&vtrace, &kept).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(["analyze", s(&kept), "--plot", s(&plots)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&kept).unwrap(), bytes, "the input is kept");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CDF points of a JSON reuse histogram: at each bucket's bound (one
/// past its last distance), the share of its reuses below it.
fn json_cdf(reuse: &serde_json::Value) -> Vec<(u64, f64)> {
    let buckets: Vec<(u64, u64)> = reuse["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b[1].as_u64().unwrap(), b[2].as_u64().unwrap()))
        .collect();
    let reuses: u64 = buckets.iter().map(|b| b.1).sum();
    let mut below = 0;
    buckets
        .iter()
        .map(|&(hi, n)| {
            below += n;
            (hi + 1, below as f64 / reuses as f64)
        })
        .collect()
}

/// `--reuse exact,sampled:RATE`: both histograms from one pass, each the
/// same as its mode's alone (the exact one in `reuse`, the estimate in
/// `reuse_sampled`), the same with `--threads 2` and from partials, and
/// the reuse CDF draws both, each from its JSON histogram.
#[test]
fn exact_and_sampled_reuse_distances_together() {
    use hmtt_analyze::plot;
    let dir = scratch("reuse-both");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "20000", "--cache", "off"],
        &[],
    );
    let json = |name: &str, args: &[&str]| -> serde_json::Value {
        let path = dir.join(name);
        let mut all = vec!["analyze", s(&trace), "--json", s(&path)];
        all.extend(args);
        ok(&all);
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    };
    let exact = json("exact.json", &["--threads", "1"]);
    let sampled = json("sampled.json", &["--reuse", "sampled:0.05"]);
    let mut both = json(
        "both.json",
        &["--reuse", "exact,sampled:0.05", "--threads", "1"],
    );
    assert!(
        exact.get("reuse_sampled").is_none(),
        "one mode, one histogram"
    );
    assert_eq!(both["reuse_sampled"], sampled["reuse"]);
    assert!(both["reuse_sampled"]["sampling"].is_object());
    assert!(both["reuse"]["sampling"].is_null());
    let both_sampled = both
        .as_object_mut()
        .unwrap()
        .remove("reuse_sampled")
        .unwrap();
    assert_eq!(both, exact, "every other figure is the exact run's");
    let reversed = json("reversed.json", &["--reuse", "sampled:0.05,exact"]);
    assert_eq!(reversed["reuse_sampled"], both_sampled);

    // Two threads, and two partials combined: the same bytes.
    json(
        "both2.json",
        &["--reuse", "exact,sampled:0.05", "--threads", "2"],
    );
    assert_eq!(
        std::fs::read(dir.join("both.json")).unwrap(),
        std::fs::read(dir.join("both2.json")).unwrap()
    );
    let (p1, p2, combined) = (dir.join("p1"), dir.join("p2"), dir.join("combined.json"));
    for (p, blocks) in [(&p1, "0..3"), (&p2, "3..1000")] {
        ok(&[
            "analyze",
            s(&trace),
            "--reuse",
            "exact,sampled:0.05",
            "--partial",
            s(p),
            "--blocks",
            blocks,
        ]);
    }
    ok(&[
        "analyze",
        "--combine",
        s(&p1),
        s(&p2),
        "--json",
        s(&combined),
    ]);
    assert_eq!(
        std::fs::read(&combined).unwrap(),
        std::fs::read(dir.join("both.json")).unwrap()
    );
    // A fixed-size sample depends on every line before: no partial.
    let out = support::cli::hmtt(&[
        "analyze",
        s(&trace),
        "--reuse",
        "exact,sampled-size:100",
        "--partial",
        s(&dir.join("p3")),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sampled-size"));

    // The picture's curves: the exact histogram's, then the estimate's.
    let bytes = std::fs::read(&trace).unwrap();
    let t = AnyTrace::new_checked(&bytes).unwrap();
    let opts = AnalyzeOptions {
        reuse: ReuseMode::Exact,
        reuse_beside: Some(ReuseMode::FixedRate(0.05)),
        ..AnalyzeOptions::default()
    };
    let (a, _) = analyze(&TraceInput::Physical(&t), &opts).unwrap();
    let curves = plot::reuse_curves(&a);
    assert_eq!(curves.len(), 2);
    let histograms = [("reuse", &exact["reuse"]), ("reuse_sampled", &both_sampled)];
    for (curve, (key, histogram)) in curves.iter().zip(histograms) {
        let drawn = plot::reuse_cdf_points(curve);
        let want = json_cdf(histogram);
        assert_eq!(drawn.len(), want.len(), "{key}");
        for ((bound, share), (want_bound, want_share)) in drawn.iter().zip(&want) {
            assert_eq!(bound, want_bound, "{key}");
            assert!((share - want_share).abs() < 1e-12, "{key} at {bound}");
        }
    }
    let plots = dir.join("plots");
    ok(&[
        "analyze",
        s(&trace),
        "--reuse",
        "exact,sampled:0.05",
        "--plot",
        s(&plots),
    ]);
    let svg = std::fs::read_to_string(plots.join("reuse_cdf.svg")).unwrap();
    assert!(svg.contains("exact (") && svg.contains("SHARDS estimate, 5 % of lines"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `hmtt analyze TRACE --log KERNEL_LOG`: the physical trace replayed with
/// its log and analysed as its virtual trace. The JSON and every picture
/// are, byte for byte, those of `hmtt replay --out` then `hmtt analyze` of
/// the virtual trace; the busiest processes are drawn in their virtual
/// addresses, their panels holding the same references as the virtual
/// trace's.
#[test]
fn a_physical_trace_with_its_kernel_log_is_drawn_in_virtual_addresses() {
    use hmtt_analyze::pictures::Pictures;
    let dir = scratch("log_pictures");
    let (sim, trace) = simulate_and_merge(&dir, &MIX_ON_2_BOARDS, &["--interleave-shift", "12"]);
    let log = sim.join("pagetable.hmttlog");
    let vtrace = dir.join("run.hmttvtrace");
    ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
    let (replayed, direct) = (dir.join("replayed"), dir.join("direct"));
    let (replayed_json, direct_json) = (dir.join("replayed.json"), dir.join("direct.json"));
    ok(&[
        "analyze",
        s(&vtrace),
        "--plot",
        s(&replayed),
        "--json",
        s(&replayed_json),
    ]);
    ok(&[
        "analyze",
        s(&trace),
        "--log",
        s(&log),
        "--plot",
        s(&direct),
        "--json",
        s(&direct_json),
    ]);
    let json = std::fs::read(&direct_json).unwrap();
    assert_eq!(json, std::fs::read(&replayed_json).unwrap());
    let j: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(j["virtual_trace"], true);
    let names = |d: &Path| {
        let mut n: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    };
    let files = names(&direct);
    assert_eq!(files, names(&replayed));
    assert!(
        files.iter().any(|f| f.starts_with("address_time_pid")),
        "{files:?}"
    );
    for f in &files {
        assert!(
            std::fs::read(direct.join(f)).unwrap() == std::fs::read(replayed.join(f)).unwrap(),
            "{f} differs"
        );
    }

    // The library's replay, analysed: the process panels of the virtual
    // trace `hmtt replay` wrote.
    let panels = |path: &Path| {
        let bytes = std::fs::read(path).unwrap();
        let v = VtraceView::new_checked(&bytes).unwrap();
        let input = TraceInput::Virtual(&v);
        let opts = AnalyzeOptions::default();
        let (a, analyzer) = analyze(&input, &opts).unwrap();
        let p = Pictures::collect(&input, &opts, &a, &analyzer).unwrap();
        p.processes
            .iter()
            .map(|q| {
                (
                    q.pid,
                    q.references,
                    q.scatter_reads.clone(),
                    q.scatter_writes.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    let trace_bytes = std::fs::read(&trace).unwrap();
    let t = AnyTrace::new_checked(&trace_bytes).unwrap();
    let image = hmtt_format::klog::read_image(&std::fs::read(&log).unwrap())
        .unwrap_or_else(|e| panic!("{e:?}"));
    let library = dir.join("library.hmttvtrace");
    let report =
        hmtt_analyze::replayed::replay_into(&t, &image.records, t.names(), &library).unwrap();
    assert!(report.translated > 0);
    let drawn = panels(&library);
    assert!(drawn.len() > 1, "the mix runs several processes");
    assert_eq!(drawn, panels(&vtrace));

    // A virtual trace has no physical trace to replay; a partial is of a
    // physical trace.
    for args in [
        vec!["analyze", s(&vtrace), "--log", s(&log)],
        vec![
            "analyze",
            s(&trace),
            "--log",
            s(&log),
            "--partial",
            s(&dir.join("p")),
        ],
    ] {
        let out = support::cli::hmtt(&args);
        assert!(!out.status.success(), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bytes of each stream of a PDF, inflated when compressed.
fn pdf_streams(pdf: &[u8]) -> Vec<Vec<u8>> {
    let find = |from: usize, what: &[u8]| {
        pdf[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| from + i)
    };
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = find(at, b"stream\n") {
        let dict_start = pdf[..start]
            .windows(2)
            .rposition(|w| w == b"<<")
            .unwrap_or(0);
        let body = start + b"stream\n".len();
        let end = find(body, b"endstream").expect("a stream ends");
        let raw = pdf[body..end]
            .strip_suffix(b"\n")
            .unwrap_or(&pdf[body..end]);
        let flate = pdf[dict_start..start]
            .windows(12)
            .any(|w| w == b"/FlateDecode");
        out.push(if flate {
            miniz_oxide::inflate::decompress_to_vec_zlib(raw).unwrap_or_default()
        } else {
            raw.to_vec()
        });
        at = end + b"endstream".len();
    }
    out
}

/// The bytes of a PDF literal string's body (`\\ddd` octal and `\\(`-style
/// escapes undone).
fn pdf_literal(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < body.len() {
        if body[k] != b'\\' {
            out.push(body[k]);
            k += 1;
            continue;
        }
        let digits = body[k + 1..]
            .iter()
            .take(3)
            .take_while(|b| (b'0'..=b'7').contains(b))
            .count();
        if digits > 0 {
            let octal = std::str::from_utf8(&body[k + 1..k + 1 + digits]).unwrap();
            out.push(u8::from_str_radix(octal, 8).unwrap() as u8);
            k += 1 + digits;
        } else {
            out.push(match body.get(k + 1) {
                Some(b'n') => b'\n',
                Some(b'r') => b'\r',
                Some(b't') => b'\t',
                Some(b'b') => 0x08,
                Some(b'f') => 0x0c,
                Some(&c) => c,
                None => break,
            });
            k += 2;
        }
    }
    out
}

/// The text a PDF shows: the two-byte glyph codes of its content streams'
/// strings (literal, as svg2pdf writes them), decoded by the ToUnicode
/// maps of its fonts (every map's entries merged: enough for a PDF of one
/// embedded font), in drawing order.
fn pdf_text(pdf: &[u8]) -> String {
    let streams = pdf_streams(pdf);
    let hex = |h: &str| u32::from_str_radix(h, 16).ok();
    let mut glyphs: HashMap<u32, String> = HashMap::new();
    for s in &streams {
        let text = String::from_utf8_lossy(s);
        for block in text.split("beginbfchar").skip(1) {
            let block = block.split("endbfchar").next().unwrap_or("");
            let codes: Vec<&str> = block
                .split(['<', '>'])
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .collect();
            for pair in codes.chunks(2) {
                if let [gid, uni] = pair {
                    let units: Vec<u16> = (0..uni.len() / 4)
                        .filter_map(|k| hex(&uni[4 * k..4 * k + 4]).map(|u| u as u16))
                        .collect();
                    if let Some(g) = hex(gid) {
                        glyphs.insert(g, String::from_utf16_lossy(&units));
                    }
                }
            }
        }
    }
    let mut shown = String::new();
    for s in &streams {
        // A literal string: from "(" to the next ")" not escaped.
        let mut k = 0;
        while let Some(open) = s[k..].iter().position(|&b| b == b'(') {
            let start = k + open + 1;
            let mut end = start;
            while end < s.len() && s[end] != b')' {
                end += if s[end] == b'\\' { 2 } else { 1 };
            }
            for code in pdf_literal(&s[start..end.min(s.len())]).chunks(2) {
                if let [hi, lo] = code {
                    let g = u32::from(*hi) << 8 | u32::from(*lo);
                    shown.push_str(glyphs.get(&g).map_or("\u{fffd}", String::as_str));
                }
            }
            k = end + 1;
            if k >= s.len() {
                break;
            }
        }
    }
    shown
}

/// `--plot-format pdf`: every picture as a whole PDF (header, cross
/// reference table where `startxref` says, `%%EOF`), its font embedded and
/// its axis titles in its text; no PNG or SVG written.
#[test]
fn every_picture_is_a_whole_pdf_with_its_text() {
    let dir = scratch("pdf");
    let (_, trace) = simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "1000", "--cache", "off"],
        &[],
    );
    let plots = dir.join("plots");
    ok(&[
        "analyze",
        s(&trace),
        "--plot",
        s(&plots),
        "--plot-format",
        "pdf",
    ]);
    let titles = [
        ("address_time", "time from the first reference (ms)"),
        ("bandwidth", "MB/s (64-byte lines)"),
        ("reuse_cdf", "reuse distance d (64-byte lines)"),
        ("page_heat", "page, hottest on top"),
        ("banks", "references"),
    ];
    for (name, title) in titles {
        let pdf = std::fs::read(plots.join(format!("{name}.pdf"))).unwrap();
        assert!(pdf.starts_with(b"%PDF-1."), "{name}");
        let tail = String::from_utf8_lossy(&pdf[pdf.len().saturating_sub(64)..]).into_owned();
        assert!(tail.trim_end().ends_with("%%EOF"), "{name}: {tail}");
        let xref: usize = tail
            .split("startxref")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no startxref"));
        assert!(pdf[xref..].starts_with(b"xref"), "{name}: xref at {xref}");
        assert!(
            pdf.windows(10).any(|w| w == b"/FontFile2"),
            "{name}: the font is embedded"
        );
        // Spaces may be drawn or not: compared without them.
        let squeeze = |t: &str| t.split_whitespace().collect::<String>();
        let text = squeeze(&pdf_text(&pdf));
        assert!(
            text.contains(&squeeze(title)),
            "{name}: {title:?} not in {text}"
        );
        for ext in ["png", "svg"] {
            assert!(
                !plots.join(format!("{name}.{ext}")).exists(),
                "{name}.{ext}"
            );
        }
    }
    let out = support::cli::hmtt(&[
        "analyze",
        s(&trace),
        "--plot",
        s(&plots),
        "--plot-format",
        "png,gif",
    ]);
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
