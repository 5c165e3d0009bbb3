//! `hmtt board --engine verilator` against `--engine model` through the
//! binary: on `hmtt sim`'s quicksort and mix streams and on a stream that
//! overflows the TX FIFO and the per-clock reference limit (LOST words),
//! with config-space commands (SYNC closes, tags-only, tracing off and on),
//! every capture file is byte-identical and every counter the Verilator run
//! gives equals the model's. The ECP5 core (`--core` default) and the iCE40
//! core on a DDR-200 stream, and the ECP5 core with the Statistic Unit at
//! three interval lengths (its statistics packets in the same files, its
//! counters equal). Needs Verilator; the simulators are cached in
//! the target directory, so only a first run compiles them (about a minute
//! for both cores).

use std::path::{Path, PathBuf};

use hmtt_board_model::default_window;
use hmtt_format::geometry::Geometry;
use serde_json::Value;

mod support;
use support::cli::{fails, ok, s, scratch, simulate};

/// Verilator's work directory, shared by the tests and kept between runs.
fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("hmtt-board-verilator")
}

/// `hmtt board --engine verilator --out OUT` with `more`, which must fail:
/// its error message.
fn verilator_refuses(out: &Path, more: &[&str]) -> String {
    let work = work();
    let base = [
        "board",
        "--engine",
        "verilator",
        "--work",
        s(&work),
        "--out",
        s(out),
    ];
    fails(&[&base[..], more].concat())
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("board0-summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs both engines on `commands` with `options`; the capture files must
/// be byte-identical and the Verilator run's figures equal the model's.
/// Returns the model's summary.
fn both_engines(dir: &Path, commands: &Path, options: &[&str]) -> Value {
    let (model, hw) = (dir.join("model"), dir.join("verilator"));
    let work = work();
    let run = |engine: &str, out: &Path| {
        let mut a = vec!["board", "--engine", engine, "--commands", s(commands)];
        a.extend_from_slice(&["--out", s(out), "--work", s(&work), "--quiet"]);
        a.extend_from_slice(options);
        ok(&a)
    };
    let printed = run("verilator", &hw);
    eprintln!("{printed}");
    run("model", &model);
    let (m, v) = (summary(&model), summary(&hw));
    assert_eq!(m["engine"], "model");
    assert_eq!(v["engine"], "verilator");
    assert_eq!(m["core"], v["core"]);
    let ports = m["ports"].as_u64().unwrap();
    for port in 0..ports {
        let name = format!("board0-port{port}.hmttcap");
        let (a, b) = (
            std::fs::read(model.join(&name)).unwrap(),
            std::fs::read(hw.join(&name)).unwrap(),
        );
        assert!(a.len() > 64, "{name}: packets");
        assert!(a == b, "{name} differs ({} and {} bytes)", a.len(), b.len());
    }
    for key in [
        "geometry",
        "lanes",
        "refs_per_clock",
        "fifo_depth",
        "max_words",
        "drain",
        "window",
        "start_mode",
        "end_mode",
    ] {
        assert_eq!(m[key], v[key], "{key}");
    }
    let (mc, vc) = (
        m["counters"].as_object().unwrap(),
        v["counters"].as_object().unwrap(),
    );
    assert_eq!(
        mc.keys().collect::<Vec<_>>(),
        vc.keys().collect::<Vec<_>>(),
        "the same counters, in the same order"
    );
    let not_measured: Vec<&str> = v["measurement"]["not_measured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for (key, value) in vc {
        if let (Value::Object(vs), Value::Object(ms)) = (value, &mc[key]) {
            assert_eq!(
                vs.keys().collect::<Vec<_>>(),
                ms.keys().collect::<Vec<_>>(),
                "the same {key} counters"
            );
            for (sub, v) in vs {
                let name = format!("{key}.{sub}");
                if v.is_null() {
                    assert!(not_measured.contains(&name.as_str()), "{name} null");
                } else {
                    assert_eq!(v, &ms[sub], "counter {name}");
                }
            }
        } else if value.is_null() {
            assert!(
                not_measured.contains(&key.as_str()),
                "{key} null but measured"
            );
        } else {
            assert_eq!(value, &mc[key], "counter {key}");
        }
    }
    for key in [
        "events_dropped",
        "lost_words",
        "fifo_high_water",
        "packets",
        "words_popped",
    ] {
        assert!(!vc[key].is_null(), "{key} is measured");
    }
    assert_eq!(v["measurement"]["packets_missing"], serde_json::json!([]));
    assert_eq!(v["measurement"]["packet_error"], false);
    m
}

/// The command stream of board 0 of `hmtt sim options`.
fn sim_stream(dir: &Path, options: &[&str]) -> PathBuf {
    simulate(dir, options).join("commands-b0.txt")
}

#[test]
fn quicksort_and_mix_streams_give_identical_files() {
    for (name, workload) in [
        ("quicksort", ["--workload", "quicksort", "--n", "1000"]),
        ("mix", ["--workload", "mix", "--n", "16K"]),
    ] {
        let dir = scratch(name);
        let commands = sim_stream(&dir, &[&workload[..], &["--cache", "off"]].concat());
        // The ECP5 core, the default of --engine verilator.
        let m = both_engines(&dir, &commands, &["--core", "ecp5-85f"]);
        let c = &m["counters"];
        assert!(c["commands"].as_u64().unwrap() > 20_000, "{name}: {c}");
        assert!(c["packets"].as_u64().unwrap() > 50, "{name}: {c}");
        assert!(c["config_events"].as_u64().unwrap() > 0, "{name}: tags");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Text lines of a command stream.
fn line(out: &mut String, tick: u64, cmd: &str, rank: u32, bank: u32, arg: u32) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "{tick} {cmd} {rank} {bank} {arg}");
}

/// A stream the ECP5 core (8 lanes, 3 references per clock, 16384 words)
/// cannot keep up with: a read or write every tick for 120,000 ticks, so
/// five references a clock go over the limit and the FIFO, drained at 0.88
/// words a clock, fills in about 86,000 ticks and overflows; config-space
/// reads (inner commands 0..5 and a user event) throughout, a sparse tail
/// while the FIFO drains (the pending LOST counts go out), and commands the
/// board counts: an unknown one, a read of a bank never opened, an ACT
/// beyond the rows.
fn overflow_stream() -> String {
    busy_stream(&[4, 5, 2, 0x40, 3, 1, 0x41, 0, 5])
}

/// The stream of [`overflow_stream`] with the config-space reads `config`
/// (inner command or event indices) every 6,000 ticks from tick 6,000.
fn busy_stream(config: &[u32]) -> String {
    let g = Geometry::ddr3_default();
    let w = default_window(&g);
    let mut out = String::from("# FIFO overflow and references over the limit\n");
    line(&mut out, 0, "ACT", 0, 0, 100);
    line(&mut out, 1, "ACT", w.rank, 0, w.row_first);
    line(&mut out, 2, "RD", 0, 5, 0);
    line(&mut out, 3, "ACT", 0, 1, g.rows() + 7);
    line(&mut out, 4, "CKE", 0, 0, 0);
    // Inner commands by event index (column = 8 * index in bank 0).
    let mut next_config = 0;
    for t in 10..120_000u64 {
        if t % 6_000 == 0 && next_config < config.len() {
            line(&mut out, t, "RD", w.rank, 0, config[next_config] * 8);
            next_config += 1;
        } else {
            let cmd = if t % 3 == 0 { "WR" } else { "RD" };
            line(&mut out, t, cmd, 0, 0, ((t % 128) * 8) as u32);
        }
    }
    for t in (120_000..240_000u64).step_by(97) {
        line(&mut out, t, "RD", 0, 0, ((t % 128) * 8) as u32);
    }
    // The last packet closes on SYNC.
    line(&mut out, 240_001, "RD", w.rank, 0, 5 * 8);
    out
}

#[test]
fn fifo_overflow_and_the_reference_limit_give_identical_files() {
    let dir = scratch("overflow");
    let commands = dir.join("overflow.txt");
    std::fs::write(&commands, overflow_stream()).unwrap();
    let m = both_engines(&dir, &commands, &["--core", "ecp5-85f"]);
    let c = &m["counters"];
    let n = |k: &str| c[k].as_u64().unwrap();
    assert!(n("events_dropped") > 1000, "{c}");
    assert!(n("references_over_limit") > 10_000, "{c}");
    assert!(n("lost_words") > 10, "{c}");
    assert!(n("packets_closed_sync") >= 2, "{c}");
    assert_eq!(
        (
            n("protocol_errors"),
            n("unknown_commands"),
            n("out_of_range")
        ),
        (1, 1, 1)
    );
    assert_eq!(n("lost_pending"), 0, "{c}");
    // Two commands at one tick, a rank beyond the chip selects: refused.
    let twice = dir.join("twice.txt");
    std::fs::write(&twice, "0 ACT 0 0 1\n5 RD 0 0 8\n5 RD 0 0 16\n").unwrap();
    let out = dir.join("bad");
    let e = verilator_refuses(&out, &["--commands", s(&twice)]);
    assert!(
        e.contains("twice.txt:3") && e.contains("one command per tick"),
        "{e}"
    );
    let rank = dir.join("rank.txt");
    std::fs::write(&rank, "0 ACT 5 0 1\n").unwrap();
    let e = verilator_refuses(&out, &["--commands", s(&rank)]);
    assert!(
        e.contains("rank.txt:1") && e.contains("chip selects"),
        "{e}"
    );
    let e = verilator_refuses(&out, &["--commands", s(&rank), "--ports", "2"]);
    assert!(
        e.contains("ecp5-85f core cannot run this") && e.contains("ports"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_ice40_core_on_a_ddr200_stream_gives_identical_files() {
    let dir = scratch("ice40");
    let commands = sim_stream(
        &dir,
        &[
            "--workload",
            "mix",
            "--n",
            "8K",
            "--cache",
            "off",
            "--speed",
            "ddr-200",
            "--geometry",
            "ddr-512m",
        ],
    );
    let m = both_engines(&dir, &commands, &["--core", "ice40-hx8k"]);
    assert_eq!(m["ports"], 1);
    assert!(m["counters"]["packets"].as_u64().unwrap() > 20);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ECP5 core with the Statistic Unit (`--stats-interval K`, half the
/// line its share) on the quicksort stream at `k` = 9, 11 and 12: the
/// statistics packets are in the same port files, in the same order and
/// with the same receive times as the model's, and the unit's counters
/// equal; at `k` = 9 and 11 the path's credit refuses records (unsent).
/// Likewise on the overflow stream with the unit switched and its interval
/// set by inner commands. The core refuses what its unit cannot do.
#[test]
fn the_statistic_unit_gives_identical_files_at_three_intervals() {
    let dir = scratch("statistics");
    let commands = sim_stream(
        &dir,
        &["--workload", "quicksort", "--n", "1000", "--cache", "off"],
    );
    let (mut unsent, mut held) = (0, 0);
    for k in ["9", "11", "12"] {
        let sub = dir.join(format!("k{k}"));
        let m = both_engines(
            &sub,
            &commands,
            &[
                "--core",
                "ecp5-85f",
                "--stats-interval",
                k,
                "--stats-share",
                "1",
            ],
        );
        let su = &m["counters"]["statistics"];
        let n = |key: &str| su[key].as_u64().unwrap();
        assert!(n("records_sent") >= 5, "k = {k}: {su}");
        assert_eq!(n("packets"), n("records_sent"), "k = {k}: one part");
        unsent += n("records_unsent");
        let v = summary(&sub.join("verilator"));
        held += v["measurement"]["statistics_held_behind_earlier_trace"]
            .as_u64()
            .unwrap();
    }
    assert!(unsent > 0, "the credit refused records");
    // The ports sent some statistics packets before a trace packet that
    // left earlier: the files still have the model's order.
    assert!(held > 0, "no statistics packet overtook a trace packet");
    // The TX FIFO overflowing (the unit counts the drops) and the unit
    // switched off and on, its interval set by inner commands (STATS_OFF 7,
    // STATS_ON 6, STATS_INTERVAL_k 32 + k), off at the end of the stream.
    let busy = dir.join("busy.txt");
    let config = [7, 6, 41, 2, 43, 3, 42, 7, 6, 40, 7, 5];
    std::fs::write(&busy, busy_stream(&config)).unwrap();
    let m = both_engines(
        &dir.join("busy"),
        &busy,
        &[
            "--core",
            "ecp5-85f",
            "--stats-interval",
            "10",
            "--stats-share",
            "2",
        ],
    );
    let c = &m["counters"];
    assert!(c["events_dropped"].as_u64().unwrap() > 1000, "{c}");
    assert!(c["inner_commands"].as_u64().unwrap() >= 12, "{c}");
    assert!(
        c["statistics"]["records_sent"].as_u64().unwrap() >= 5,
        "{c}"
    );
    let out = dir.join("bad");
    let base = ["--commands", s(&commands), "--stats-interval", "12"];
    for (more, says) in [
        (&["--reuse-unit"][..], "Reuse Distance"),
        (&["--stats-off"][..], "counts from reset"),
        (&["--core", "ice40-hx8k"][..], "no Statistic Unit"),
    ] {
        let e = verilator_refuses(&out, &[&base[..], more].concat());
        assert!(e.contains("cannot run this") && e.contains(says), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
