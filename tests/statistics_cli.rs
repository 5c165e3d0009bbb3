//! The Statistic Unit through the binary: `hmtt board --stats-interval`
//! puts statistics packets (format.md §5.3) into the capture files,
//! `hmtt merge` keeps their records beside the trace without counting them
//! rejected, `hmtt stats` shows them; a board without the unit writes
//! none, and a firmware core refuses what its unit lacks (the iCE40's has
//! none, the ECP5's no RDHPU).

use hmtt_format::stats::{BankCounter, RankCounter};
use hmtt_merge::board_statistics::{read_statistics, side_file_path};
use serde_json::Value;

mod support;
use support::cli::{fails, ok, s, scratch, simulate};

fn summary(dir: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(dir.join("board0-summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn board_merge_and_stats_carry_the_units_records() {
    let dir = scratch("statistics_cli");
    let sim = simulate(
        &dir,
        &["--workload", "quicksort", "--n", "2000", "--cache", "off"],
    );
    let commands = sim.join("commands-b0.txt");

    // Without the unit: no statistics in the summary, nor in the files.
    let plain = dir.join("plain");
    ok(&[
        "board",
        "--commands",
        s(&commands),
        "--out",
        s(&plain),
        "-q",
    ]);
    for port in 0..3 {
        let bytes = std::fs::read(plain.join(format!("board0-port{port}.hmttcap"))).unwrap();
        assert!(!bytes.windows(4).any(|w| w == b"HMTS"));
    }
    assert!(summary(&plain)["counters"].get("statistics").is_none());

    let with_unit = dir.join("unit");
    ok(&[
        "board",
        "--commands",
        s(&commands),
        "--stats-interval",
        "16",
        "--out",
        s(&with_unit),
        "-q",
    ]);
    let su = summary(&with_unit)["counters"]["statistics"].clone();
    let sent = su["records_sent"].as_u64().unwrap();
    assert!(sent > 5, "{su}");
    assert_eq!(su["records_unsent"], 0);

    let trace = dir.join("t.hmtttrace");
    let printed = ok(&["merge", s(&with_unit), "-o", s(&trace), "-q"]);
    let side = side_file_path(&trace);
    assert!(
        printed.contains(&format!("kept {sent} statistics records")),
        "{printed}"
    );
    let boards = read_statistics(&side, 4).unwrap();
    assert_eq!(boards.len(), 1);
    let b = &boards[0];
    assert_eq!(b.records, sent);
    assert_eq!(b.first.len(), 4);
    let per_kind = &summary(&with_unit)["counters"]["per_kind"];
    let n = |k: &str| per_kind[k].as_u64().unwrap();
    assert_eq!(b.bank_total(BankCounter::Rd), n("RD") + n("RDA"));
    assert_eq!(b.bank_total(BankCounter::Wr), n("WR") + n("WRA"));
    assert_eq!(b.bank_total(BankCounter::Act), n("ACT"));
    assert_eq!(b.rank_total(RankCounter::Ref), n("REF"));
    // The records are in time order and do not overlap.
    for w in b.first.windows(2) {
        assert!(w[0].end_tick <= w[1].start_tick);
    }

    let shown = ok(&["stats", s(&trace), "--max-rows", "4"]);
    assert!(shown.contains("board statistics"), "{shown}");
    assert!(
        shown.contains(&format!(
            "total: {} RD, {} WR",
            n("RD") + n("RDA"),
            n("WR") + n("WRA")
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("({} more records)", sent - 4)),
        "{shown}"
    );

    let json: Value =
        serde_json::from_str(&ok(&["stats", s(&trace), "--max-rows", "4", "--json", "-"])).unwrap();
    let board = &json["board_statistics"]["boards"][0];
    let counters = &board["counters"];
    assert_eq!(counters["totals"]["rd"], n("RD") + n("RDA"));
    assert_eq!(counters["totals"]["wr"], n("WR") + n("WRA"));
    assert_eq!(counters["totals"]["ref"], n("REF"));
    assert_eq!(counters["records"].as_array().unwrap().len(), 4);
    assert_eq!(counters["more_records"], sent - 4);
    assert_eq!(board["reuse"], Value::Null);

    // With the RDHPU: the same counters, and its section in every record.
    let unsent =
        |dir: &std::path::Path| summary(dir)["counters"]["statistics"]["records_unsent"].clone();
    let with_reuse = dir.join("reuse");
    ok(&[
        "board",
        "--commands",
        s(&commands),
        "--stats-interval",
        "16",
        "--reuse-unit",
        "--reuse-hot",
        "16",
        // A record with the RDHPU's section is 1,570 bytes here: a 16th
        // of the line carries one per 2^16 ticks.
        "--stats-share",
        "4",
        "--out",
        s(&with_reuse),
        "-q",
    ]);
    assert_eq!(unsent(&with_reuse), 0);
    let reuse_trace = dir.join("r.hmtttrace");
    ok(&["merge", s(&with_reuse), "-o", s(&reuse_trace), "-q"]);
    let boards = read_statistics(&side_file_path(&reuse_trace), 4).unwrap();
    let r = &boards[0];
    assert_eq!(
        r.totals, b.totals,
        "the counters do not depend on the RDHPU"
    );
    let reuse = r.reuse.as_ref().unwrap();
    assert_eq!(reuse.records, r.records);
    assert_eq!(reuse.skipped, 0);
    // Every column command but the config window's.
    let window = summary(&with_reuse)["counters"]["config_events"]
        .as_u64()
        .unwrap();
    assert_eq!(
        reuse.taken() + window,
        n("RD") + n("RDA") + n("WR") + n("WRA")
    );
    assert!(r
        .first
        .iter()
        .all(|l| l.reuse.as_ref().unwrap().hot.len() <= 16));
    let shown = ok(&["stats", s(&reuse_trace), "--max-rows", "4"]);
    assert!(
        shown.contains("page reuse (the board's 128-page LRU stack"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "total: {} references taken, 0 skipped",
            reuse.taken()
        )),
        "{shown}"
    );

    let json: Value = serde_json::from_str(&ok(&[
        "stats",
        s(&reuse_trace),
        "--max-rows",
        "4",
        "--json",
        "-",
    ]))
    .unwrap();
    let reuse_json = &json["board_statistics"]["boards"][0]["reuse"];
    assert_eq!(reuse_json["references_taken"], reuse.taken());
    assert_eq!(reuse_json["records"], reuse.records);
    assert_eq!(reuse_json["intervals"].as_array().unwrap().len(), 4);

    // No unit, no side file, not even an earlier merge's.
    ok(&["merge", s(&plain), "-o", s(&trace), "-q"]);
    assert!(!side_file_path(&trace).exists());
    assert!(!ok(&["stats", s(&trace)]).contains("board statistics"));

    // The iCE40's core has no unit, the ECP5's no RDHPU.
    for (core, more) in [("ice40-hx8k", &[][..]), ("ecp5-85f", &["--reuse-unit"][..])] {
        let out = dir.join("core");
        let base = [
            "board",
            "--commands",
            s(&commands),
            "--core",
            core,
            "--stats-interval",
            "16",
            "--out",
            s(&out),
            "-q",
        ];
        let err = fails(&[&base[..], more].concat());
        assert!(
            err.contains("core cannot run this") && err.contains("Statistic Unit"),
            "{core}: {err}"
        );
    }
}
