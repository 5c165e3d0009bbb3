//! `hmtt replay` through the binary: sim → merge → replay `--out` writes a
//! virtual trace whose references equal the ground truth (pid, virtual
//! address, CPU/DMA), `hmtt dump` reads it back by its magic, a window
//! between two named events holds exactly the ground truth between their
//! tags, and damaged files are refused with a clear message.

use std::path::{Path, PathBuf};

use hmtt_format::truth::{RefKind, TruthRecord};
use hmtt_format::vtrace::VtraceView;

mod support;
use support::cli::{fails, mix_merged_with_events, ok, ok_with_stderr, s, scratch};

/// A simulated run (several processes, remaps, DMA; 2 boards) merged:
/// (sim dir, trace, ground truth).
fn run(dir: &Path) -> (PathBuf, PathBuf, Vec<TruthRecord>) {
    let (sim, trace) = mix_merged_with_events(dir);
    let bytes = std::fs::read(sim.join("truth.hmtttruth")).unwrap();
    let (_, truth) = hmtt_format::truth::read_binary(&bytes).unwrap();
    (sim, trace, truth)
}

/// (tick, board, pa, rw, source, pid, va) of each access of a CSV dump.
fn dumped(csv: &str) -> Vec<Row> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let c = [
        col("tick"),
        col("board"),
        col("pa"),
        col("rw"),
        col("source"),
        col("pid"),
        col("va"),
    ];
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .map(|f| {
            (
                f[c[0]].parse().unwrap(),
                f[c[1]].parse().unwrap(),
                u64::from_str_radix(f[c[2]].trim_start_matches("0x"), 16).unwrap(),
                f[c[3]].to_string(),
                f[c[4]].to_string(),
                f[c[5]].to_string(),
                f[c[6]].to_string(),
            )
        })
        .collect()
}

type Row = (u64, u8, u64, String, String, String, String);

/// Equal row by row; a difference is shown with its neighbours.
fn same(got: &[Row], want: &[Row]) {
    if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
        let around = |v: &[Row]| v[i.saturating_sub(2)..(i + 3).min(v.len())].to_vec();
        panic!(
            "first difference at reference {i} of {} (want {}):\ngot  {:?}\nwant {:?}",
            got.len(),
            want.len(),
            around(got),
            around(want)
        );
    }
    assert_eq!(got.len(), want.len());
}

fn truth_row(t: &TruthRecord) -> Row {
    (
        t.tick,
        t.board,
        t.pa,
        if t.write { "W" } else { "R" }.to_string(),
        if t.kind == RefKind::Dma { "dma" } else { "cpu" }.to_string(),
        t.pid().map_or(String::new(), |p| p.to_string()),
        t.vaddr().map_or(String::new(), |a| format!("{a:#x}")),
    )
}

#[test]
fn replay_out_writes_a_virtual_trace_equal_to_the_ground_truth() {
    let dir = scratch("out");
    let (sim, trace, truth) = run(&dir);
    let vtrace = dir.join("run.hmttvtrace");
    let csv = dir.join("refs.csv");
    let (summary, status) = ok_with_stderr(&[
        "replay",
        s(&trace),
        "--log",
        s(&sim.join("pagetable.hmttlog")),
        "--out",
        s(&vtrace),
        "--csv",
        s(&csv),
    ]);
    // The summary on standard output, what was written on standard error.
    for needle in ["miss rate", "Table 3", "Table 4", "not placed: 0"] {
        assert!(summary.contains(needle), "{needle}:\n{summary}");
    }
    assert!(
        status.contains("wrote") && !status.contains("Table 3"),
        "{status}"
    );
    let want: Vec<_> = truth
        .iter()
        .filter(|t| t.kind != RefKind::Icode)
        .map(truth_row)
        .collect();
    assert!(want.len() > 1000);
    assert!(want.iter().any(|w| w.4 == "dma") && want.iter().any(|w| !w.5.is_empty()));

    // The file itself.
    let bytes = std::fs::read(&vtrace).unwrap();
    let view = VtraceView::new_checked(&bytes).unwrap();
    let h = view.header();
    assert!(h.is_complete() && !h.is_selection());
    assert_eq!(h.references, want.len() as u64);
    assert_eq!(h.boards, 2);
    assert!(view.names().index_of("quicksort_begin").is_some());
    let accesses = view.records().filter(|v| v.is_access()).count();
    assert_eq!(accesses, want.len());
    assert!(view.len() > accesses, "tags are kept");

    // Read back by `hmtt dump`, and the CSV of `replay`.
    let dump = ok(&["dump", s(&vtrace), "--csv", "--accesses-only"]);
    let got = dumped(&dump);
    same(&got, &want);
    let got_csv = dumped(&std::fs::read_to_string(&csv).unwrap());
    same(&got_csv, &got);

    // Text dump with the time index: a slice in the middle.
    let mid = view.record(view.len() / 2).unwrap().tick;
    let ns = h.common.tick_length().expect("a tick length").ns(mid);
    let text = ok(&[
        "dump",
        s(&vtrace),
        "--from-ns",
        &format!("{ns}"),
        "--limit",
        "5",
    ]);
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.lines().next().unwrap().contains("pid"), "{text}");

    // The summary as JSON: on standard output instead of the text, or in a
    // file beside it; the same figures as the text's.
    let log = sim.join("pagetable.hmttlog");
    let (stdout, text) = ok_with_stderr(&["replay", s(&trace), "--log", s(&log), "--json", "-"]);
    assert!(!text.contains("Table 3"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["references"], want.len() as u64);
    let in_text = |prefix: &str| -> u64 {
        let rest = &summary[summary.find(prefix).unwrap() + prefix.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert_eq!(
        json["translated"],
        in_text("translated to (pid, virtual address): ")
    );
    assert_eq!(json["table3"]["dma_write"], in_text("DMA write "));
    assert_eq!(json["log"]["not_placed"], 0);
    let file = dir.join("replay.json");
    let (stdout, text) =
        ok_with_stderr(&["replay", s(&trace), "--log", s(&log), "--json", s(&file)]);
    assert!(
        stdout.contains("Table 3") && !text.contains("Table 3"),
        "{text}"
    );
    let mut from_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    from_file["seconds"] = json["seconds"].clone();
    assert_eq!(from_file, json);
    let err = fails(&[
        "replay",
        s(&trace),
        "--log",
        s(&log),
        "--json",
        "-",
        "--csv",
        "-",
    ]);
    assert!(err.contains("both write standard output"), "{err}");
    let err = fails(&["replay", s(&trace), "--log", s(&log), "--json", s(&log)]);
    assert!(err.contains("pagetable.hmttlog"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_window_between_named_events_holds_the_truth_between_their_tags() {
    let dir = scratch("window");
    let (sim, trace, truth) = run(&dir);
    let events = hmtt_icode::EventRegistry::open(sim.join("events.toml")).unwrap();
    let index = |name: &str| {
        events
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no event {name}"))
            .1
    };
    let (begin, end) = (index("quicksort_begin"), index("quicksort_end"));
    let mut open = [false; 2];
    let mut want = Vec::new();
    for t in &truth {
        let b = usize::from(t.board);
        if t.kind == RefKind::Icode {
            if t.event == Some(begin) {
                open[b] = true;
            } else if t.event == Some(end) {
                open[b] = false;
            }
        } else if open[b] {
            want.push(truth_row(t));
        }
    }
    assert!(!want.is_empty());
    let vtrace = dir.join("window.hmttvtrace");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&sim.join("pagetable.hmttlog")),
        "--window",
        "quicksort_begin,quicksort_end",
        "--out",
        s(&vtrace),
    ]);
    let bytes = std::fs::read(&vtrace).unwrap();
    let view = VtraceView::new_checked(&bytes).unwrap();
    assert!(view.header().is_selection());
    assert!(view.header().references > want.len() as u64);
    let dump = ok(&["dump", s(&vtrace), "--csv", "--accesses-only"]);
    same(&dumped(&dump), &want);
    // The same window by index, written as every number option reads
    // numbers (hexadecimal with `_`), selects the same references.
    let hex = format!("{begin:x}");
    let (high, low) = hex.split_at(1);
    let by_index = format!("0x{high}_{low},{end}");
    let vtrace = dir.join("window-by-index.hmttvtrace");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&sim.join("pagetable.hmttlog")),
        "--window",
        &by_index,
        "--out",
        s(&vtrace),
    ]);
    let dump = ok(&["dump", s(&vtrace), "--csv", "--accesses-only"]);
    same(&dumped(&dump), &want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_virtual_traces_and_bad_options_are_refused_clearly() {
    let dir = scratch("bad");
    let (sim, trace, _) = run(&dir);
    let log = sim.join("pagetable.hmttlog");
    let vtrace = dir.join("v.hmttvtrace");
    ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
    let bytes = std::fs::read(&vtrace).unwrap();

    // A finished file cut short: its header promises more records.
    let cut = dir.join("cut.hmttvtrace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = fails(&["dump", s(&cut)]);
    assert!(
        err.contains("not a usable virtual trace file") && err.contains("room for"),
        "{err}"
    );
    // A newer version.
    let mut newer = bytes.clone();
    newer[8] = 9;
    let path = dir.join("newer.hmttvtrace");
    std::fs::write(&path, &newer).unwrap();
    let err = fails(&["dump", s(&path)]);
    assert!(err.contains("version 9 is not supported"), "{err}");
    // A virtual trace is not a physical trace for replay or stats.
    let err = fails(&["replay", s(&vtrace), "--log", s(&log)]);
    assert!(
        err.contains("is a virtual trace (written by hmtt replay --out): replay reads a physical trace or its archive"),
        "{err}"
    );
    let err = fails(&["stats", s(&vtrace)]);
    assert!(
        err.contains("is a virtual trace (written by hmtt replay --out): stats reads a physical trace or its archive"),
        "{err}"
    );
    // Unknown event names.
    let err = fails(&[
        "replay",
        s(&trace),
        "--log",
        s(&log),
        "--window",
        "nope_begin,quicksort_end",
    ]);
    assert!(err.contains("no event named 'nope_begin'"), "{err}");
    let help = ok(&["replay", "--help"]);
    assert!(help.contains("Example") && help.contains("--out"), "{help}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn replay_threshold_counts_only_references_to_traced_processes_frames() {
    let dir = scratch("threshold");
    let (sim, trace, _) = run(&dir);
    let log = sim.join("pagetable.hmttlog");
    let args = |extra: &[&'static str]| {
        let mut a = vec!["replay", s(&trace), "--log", s(&log)];
        a.extend_from_slice(extra);
        a
    };
    // The simulator's log has no SWITCH records: no default threshold.
    let (stderr, _) = ok_with_stderr(&args(&[]));
    assert!(stderr.contains("not attributed for certain: "), "{stderr}");
    assert!(!stderr.contains("while a traced process ran"), "{stderr}");
    // Its references to frames no process maps (the kernel's, unmapped)
    // are not in the measure; each mapped frame has one owner, so none of
    // the rest is attributed by rule: 0 %, which even a threshold of 0
    // lets through (a share above it fails: merge/tests/replay_synthetic.rs
    // checks the measure).
    assert!(
        stderr.contains("no process maps the frame (unmapped)")
            && stderr.contains(
                " 0 not attributed for certain (0.00%, the measure of --max-unattributed)"
            ),
        "{stderr}"
    );
    ok(&args(&["--max-unattributed", "0"]));
    ok(&args(&["--max-unattributed", "100"]));
    let err = fails(&args(&["--max-unattributed", "150"]));
    assert!(
        err.contains("--max-unattributed") && err.contains("is not a percentage (0 to 100)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
