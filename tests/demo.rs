//! End to end through the `hmtt` binary: simulated machine and boards →
//! loopback UDP → receiver → capture files → merge → trace, compared record
//! by record with the ground truth (`hmtt demo`), with 2 boards of 3 ports;
//! the same with faults; bad input to `hmtt merge`; `--help` examples.

use std::process::Output;

mod support;
use support::cli::{fails, hmtt, ok, s};

/// The `RESULT key=value ...` line of `hmtt demo`.
fn result(out: &Output) -> std::collections::HashMap<String, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| {
            panic!(
                "no RESULT line; stdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    line[7..]
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn demo_is_exact(workload: &str, n: &str, extra: &[&str]) {
    let mut args = vec![
        "demo",
        "--workload",
        workload,
        "--n",
        n,
        "--boards",
        "2",
        "--ports",
        "3",
    ];
    args.extend_from_slice(extra);
    let out = hmtt(&args);
    let r = result(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(r["exact"], "true", "{workload}:\n{stdout}");
    assert!(out.status.success(), "{workload}:\n{stdout}");
    let matched: u64 = r["matched"].parse().unwrap();
    assert!(
        matched > 100,
        "{workload}: only {matched} records\n{stdout}"
    );
    assert_eq!(r["matched"], r["expected"]);
    assert_eq!(r["got"], r["expected"]);
    assert_eq!(r["missing_reported"], "0");
}

#[test]
fn seq_read_equals_the_ground_truth() {
    demo_is_exact("seq-read", "128K", &[]);
}

#[test]
fn seq_write_equals_the_ground_truth() {
    demo_is_exact("seq-write", "64K", &["--unit", "8"]);
}

#[test]
fn read_after_write_equals_the_ground_truth() {
    demo_is_exact("read-after-write", "64K", &[]);
}

#[test]
fn random_read_equals_the_ground_truth() {
    demo_is_exact("random-read", "256K", &["--cache", "off"]);
}

#[test]
fn strided_equals_the_ground_truth() {
    demo_is_exact("strided", "256K", &["--stride", "576", "--unit", "8"]);
}

#[test]
fn quicksort_equals_the_ground_truth() {
    demo_is_exact("quicksort", "3000", &[]);
}

#[test]
fn quicksort_without_cache_equals_the_ground_truth() {
    demo_is_exact("quicksort", "1000", &["--cache", "off"]);
}

#[test]
fn faults_are_reported_exactly_and_the_rest_matches() {
    let out = hmtt(&[
        "demo",
        "--workload",
        "quicksort",
        "--n",
        "5000",
        "--cache",
        "off",
        "--boards",
        "2",
        "--ports",
        "3",
        "--drop",
        "0:0,0:3,0:4,1:10",
        "--duplicate",
        "0:7,1:2",
        "--reorder",
        "5",
        "--truncate",
        "1:2",
    ]);
    let r = result(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(r["exact"], "true", "{stdout}");
    let missing: u64 = r["missing_reported"].parse().unwrap();
    // 4 dropped plus board 1 port 2's packets after the cut.
    assert!(missing > 4, "{stdout}");
    assert_eq!(r["missing_reported"], r["missing_expected"]);
    assert_eq!(r["duplicates"], "2");
    assert!(stdout.contains("is cut short"), "{stdout}");
    assert!(stdout.contains("packets missing"), "{stdout}");
}

#[test]
fn merge_refuses_bad_input_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.hmttcap");
    std::fs::write(
        &junk,
        b"this is not a capture file, it is just some text............",
    )
    .unwrap();
    let stderr = fails(&["merge", s(&junk), "-o", s(&dir.path().join("t"))]);
    assert!(stderr.contains("not a usable capture file"), "{stderr}");
    let missing = dir.path().join("missing.hmttcap");
    let stderr = fails(&["merge", s(&missing), "-o", "x"]);
    assert!(stderr.contains("missing.hmttcap"), "{stderr}");
    let stderr = fails(&["dump", s(&junk)]);
    assert!(
        stderr.contains("junk.hmttcap: not a usable trace file, archive or virtual trace"),
        "{stderr}"
    );
}

#[test]
fn every_subcommand_of_merge_shows_an_example() {
    for sub in ["merge", "dump", "stats", "demo"] {
        let help = ok(&[sub, "--help"]);
        assert!(help.contains("Example"), "{sub}");
    }
}

#[test]
fn merge_dump_and_stats_on_a_kept_demo() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("demo");
    let out = hmtt(&[
        "demo",
        "--workload",
        "seq-read",
        "--n",
        "64K",
        "--boards",
        "1",
        "--ports",
        "3",
        "--keep",
        s(&keep),
    ]);
    assert_eq!(result(&out)["exact"], "true");
    let trace = dir.path().join("again.hmtttrace");
    ok(&["merge", s(&keep.join("capture")), "-o", s(&trace)]);
    let original = std::fs::read(keep.join("demo.hmtttrace")).unwrap();
    let again = std::fs::read(&trace).unwrap();
    // Same records (the names table may differ: no events file given here).
    let (a, b) = (
        hmtt_format::trace::TraceView::new_checked(&original).unwrap(),
        hmtt_format::trace::TraceView::new_checked(&again).unwrap(),
    );
    assert!(a.records().eq(b.records()));
    let csv = ok(&["dump", s(&trace), "--csv", "--limit", "5"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "time_ns,tick,board,pa,rw,kind,event");
    assert_eq!(lines.len(), 6);
    let first = a.records().next().unwrap();
    assert!(lines[1].contains(&format!(",{},", first.tick)), "{csv}");
    let text = ok(&["stats", s(&trace)]);
    let refs = a.records().filter(|r| r.is_access()).count();
    assert!(text.contains(&format!("references: {refs} ")), "{text}");
    assert!(text.contains("Table 5"), "{text}");
}
