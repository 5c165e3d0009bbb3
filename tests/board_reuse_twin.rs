//! The board's Reuse Distance & Hot Pages Unit against its trace-side
//! twin (board.md "Reuse Distance & Hot Pages Unit"): `hmtt board
//! --reuse-unit`, `hmtt merge`, then `hmtt analyze --json`, whose
//! `board_statistics` holds the board's histogram and the one `hmtt
//! analyze` computes from the trace's READ and WRITE records in the same
//! 128-page LRU stack. On quicksort and mix runs that lose nothing they
//! are equal record by record (histogram and hot pages); a unit that skips
//! references is told apart.

use std::path::Path;

use serde_json::Value;

mod support;
use support::cli::{ok, s, scratch, simulate};

/// `hmtt board` with the RDHPU on the commands of board 0 of `sim`,
/// merged into `dir/NAME.hmtttrace`; `hmtt analyze --json -` of it.
fn board_and_analyze(dir: &Path, sim: &Path, name: &str, extra: &[&str]) -> Value {
    let out = dir.join(name);
    let commands = sim.join("commands-b0.txt");
    ok(&[
        &[
            "board",
            "--commands",
            s(&commands),
            "--stats-interval",
            "16",
            "--stats-share",
            "4",
            "--reuse-unit",
            "--out",
            s(&out),
            "-q",
        ][..],
        extra,
    ]
    .concat());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("board0-summary.json")).unwrap())
            .unwrap();
    let c = &summary["counters"];
    assert_eq!(c["statistics"]["records_unsent"], 0, "{name}");
    assert_eq!(c["events_dropped"], 0, "{name}: the trace lost references");
    assert_eq!(c["references_over_limit"], 0, "{name}");
    let trace = dir.join(format!("{name}.hmtttrace"));
    ok(&["merge", s(&out), "-o", s(&trace), "-q"]);
    serde_json::from_str(&ok(&["analyze", s(&trace), "--json", "-"])).unwrap()
}

fn numbers(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

/// The twin equals the board on every record.
fn check_equal(name: &str, a: &Value) {
    let boards = a["board_statistics"]["boards"].as_array().unwrap();
    assert_eq!(boards.len(), 1, "{name}");
    assert_eq!(a["board_statistics"]["trace_lost"], 0, "{name}");
    assert_eq!(a["board_statistics"]["trace_gap_packets"], 0, "{name}");
    let b = &boards[0];
    let (board, twin) = (&b["reuse"], &b["twin"]);
    assert_eq!(board["skipped"], 0, "{name}");
    let compared = twin["records_compared"].as_u64().unwrap();
    assert!(compared > 3, "{name}: {twin}");
    assert_eq!(board["records"].as_u64().unwrap(), compared, "{name}");
    assert_eq!(
        twin["records_equal"].as_u64().unwrap(),
        compared,
        "{name}: {twin}"
    );
    assert_eq!(twin["equal"], true, "{name}");
    assert_eq!(
        numbers(&twin["histogram_in_records"]),
        numbers(&board["histogram"]),
        "{name}"
    );
    // The records cover the whole run: the twin took what the board took,
    // the trace's references all.
    assert_eq!(twin["references"], board["taken"], "{name}");
    assert_eq!(
        twin["references"],
        a["mix"]["reads"].as_u64().unwrap() + a["mix"]["writes"].as_u64().unwrap(),
        "{name}"
    );
    let h = numbers(&board["histogram"]);
    assert!(
        h[0] > 0 && h[128] > 0 && h[1..128].iter().any(|&x| x > 0),
        "{name}: {h:?}"
    );
    // The Statistic Unit's counters are there too.
    assert!(b["counters"]["rd"].as_u64().unwrap() > 0, "{name}");
}

#[test]
fn the_board_reuse_histogram_equals_the_analyze_twin_on_quicksort_and_mix() {
    let dir = scratch("board_reuse_twin");
    let quicksort = simulate(
        &dir.join("q"),
        &["--workload", "quicksort", "--n", "3000", "--cache", "off"],
    );
    let a = board_and_analyze(&dir, &quicksort, "quicksort", &[]);
    check_equal("quicksort", &a);
    // The board's pictures are drawn beside the others.
    let pictures = dir.join("quicksort-pictures");
    ok(&[
        "analyze",
        s(&dir.join("quicksort.hmtttrace")),
        "--plot",
        s(&pictures),
        "-q",
    ]);
    assert_eq!(
        board_pictures(&pictures),
        [
            "board_banks.png",
            "board_banks.svg",
            "board_reuse.png",
            "board_reuse.svg",
            "board_row_hits.png",
            "board_row_hits.svg"
        ]
    );
    let svg = |name: &str| {
        let png = std::fs::read(pictures.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        std::fs::read_to_string(pictures.join(format!("{name}.svg"))).unwrap()
    };
    // A bar for every bin the board counted (and the background).
    let bins = numbers(&a["board_statistics"]["boards"][0]["reuse"]["histogram"])
        .iter()
        .filter(|&&n| n > 0)
        .count();
    assert!(bins > 2);
    assert!(svg("board_reuse").matches("<rect").count() > bins);
    assert!(
        svg("board_banks").matches("<rect").count() > 16,
        "a cell per bank at least"
    );
    assert!(
        svg("board_row_hits").matches("<polyline").count() >= 2,
        "hits and conflicts"
    );

    // One reference a clock: the unit skips some and the twin, which
    // takes every reference, is not equal on those records.
    let a = board_and_analyze(&dir, &quicksort, "one-a-clock", &["--reuse-per-clock", "1"]);
    let b = &a["board_statistics"]["boards"][0];
    assert!(b["reuse"]["skipped"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(b["twin"]["equal"], false, "{b}");
    assert!(!b["twin"]["first_difference"].is_null());

    let mix = simulate(
        &dir.join("m"),
        &["--workload", "mix", "--n", "256K", "--cache", "off"],
    );
    let a = board_and_analyze(&dir, &mix, "mix", &[]);
    check_equal("mix", &a);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_without_board_statistics_has_none_unless_asked_for_the_twin() {
    let dir = scratch("board_reuse_twin_plain");
    let sim = simulate(
        &dir,
        &["--workload", "quicksort", "--n", "500", "--cache", "off"],
    );
    let trace = dir.join("plain.hmtttrace");
    ok(&["merge", s(&sim), "-o", s(&trace), "-q"]);
    let plain: Value = serde_json::from_str(&ok(&["analyze", s(&trace), "--json", "-"])).unwrap();
    assert!(plain.get("board_statistics").is_none());
    assert!(!ok(&["analyze", s(&trace)]).contains("board statistics"));
    let asked: Value =
        serde_json::from_str(&ok(&["analyze", s(&trace), "--board-twin", "--json", "-"])).unwrap();
    let boards = asked["board_statistics"]["boards"].as_array().unwrap();
    assert!(asked["board_statistics"]["side_file"].is_null());
    let twin = &boards[0]["twin"];
    assert_eq!(twin["records_compared"], 0);
    assert_eq!(twin["equal"], false);
    let taken: u64 = numbers(&twin["histogram"]).iter().sum();
    assert_eq!(taken, twin["references"].as_u64().unwrap());
    assert!(taken > 0);
    assert!(ok(&["analyze", s(&trace), "--board-twin"]).contains("twin (the trace's READ/WRITE"));
    // Without the board's records there are no board pictures (the twin
    // alone draws none either).
    let pictures = dir.join("pictures");
    ok(&[
        "analyze",
        s(&trace),
        "--board-twin",
        "--plot",
        s(&pictures),
        "-q",
    ]);
    assert!(pictures.join("banks.png").is_file());
    assert_eq!(board_pictures(&pictures), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).ok();
}

/// The board pictures in `dir`, sorted.
fn board_pictures(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("board_"))
        .collect();
    names.sort();
    names
}
