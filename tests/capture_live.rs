//! `hmtt capture --live` with a board sending statistics over loopback
//! (`hmtt board --stats-interval --reuse-unit --send`): the live lines are
//! the records `hmtt merge` keeps in the side file, the live view shows
//! every record once, and the capture files keep every packet; lines that
//! cannot be written are reported without costing the capture anything.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::cli::{ok, s, scratch, simulate};

/// Three free loopback ports, as far as a probe can tell.
fn free_ports() -> [u16; 3] {
    let probes: Vec<UdpSocket> = (0..3)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let ports: Vec<u16> = probes
        .iter()
        .map(|p| p.local_addr().unwrap().port())
        .collect();
    [ports[0], ports[1], ports[2]]
}

/// A capture of `ports` into `out` with `live` options, started and ready.
fn start_capture(ports: [u16; 3], out: &Path, live: &[&str]) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .arg("capture")
        .args(
            ports
                .iter()
                .flat_map(|p| ["-i".to_string(), format!("udp:127.0.0.1:{p}")]),
        )
        .args(["--name", "c", "--duration", "6", "-o"])
        .arg(out)
        .args(live)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while ports
        .iter()
        .any(|&p| UdpSocket::bind(("127.0.0.1", p)).is_ok())
    {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the capture ended before it was ready: {status}");
        }
        assert!(t.elapsed() < Duration::from_secs(10), "capture never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The board's run of `commands`, with both statistics units, sent to `ports`.
fn send_board(commands: &Path, out: &Path, ports: [u16; 3]) -> String {
    let dests = ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    ok(&[
        "board",
        "--commands",
        s(commands),
        "--stats-interval",
        "12",
        "--reuse-unit",
        "--out",
        s(out),
        "--send",
        &dests,
        "--rate",
        "0.2",
        "-q",
    ])
}

fn sorted_lines(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("c-summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn board_run(dir: &Path) -> (PathBuf, PathBuf) {
    let sim = simulate(
        dir,
        &["--workload", "quicksort", "--n", "3000", "--cache", "off"],
    );
    (sim.join("commands-b0.txt"), dir.join("board"))
}

#[test]
fn live_lines_are_the_merged_side_file_and_the_view_shows_each_record_once() {
    let dir = scratch("live");
    let (commands, board) = board_run(&dir);
    let ports = free_ports();
    let captured = dir.join("captured");
    let lines = dir.join("live.jsonl");
    let capture = start_capture(ports, &captured, &["--live", "--live-jsonl", s(&lines)]);
    let sent = send_board(&commands, &board, ports);
    assert!(sent.contains("sent "), "{sent}");
    let out = capture.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");

    // Every record the board sent, once, as merge keeps it.
    let trace = dir.join("t.hmtttrace");
    ok(&["merge", s(&captured), "-o", s(&trace), "-q"]);
    let side = PathBuf::from(format!("{}.stats.jsonl", trace.display()));
    let live = sorted_lines(&lines);
    assert_eq!(live, sorted_lines(&side));
    let board_summary: Value =
        serde_json::from_str(&std::fs::read_to_string(board.join("board0-summary.json")).unwrap())
            .unwrap();
    let records_sent = board_summary["counters"]["statistics"]["records_sent"]
        .as_u64()
        .unwrap();
    assert!(records_sent > 10, "{board_summary}");
    assert_eq!(live.len() as u64, records_sent);
    assert!(
        live.iter().all(|l| l.contains("\"reuse\"")),
        "both units on"
    );

    // The view: each record in exactly one snapshot, with its figures.
    let shown: u64 = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("live board 0: "))
        .map(|l| l.split(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(shown, records_sent, "{stderr}");
    let first = stderr
        .lines()
        .find(|l| l.starts_with("live board 0:"))
        .unwrap();
    for part in ["GB/s", "row hits", "lost 0 at the FIFO", "hot pages 0x"] {
        assert!(first.contains(part), "{part} not in {first}");
    }
    let live_summary = &summary(&captured)["live"];
    assert_eq!(live_summary["records"], records_sent);
    assert_eq!(live_summary["lines_written"], records_sent);
    assert_eq!(live_summary["packets_dropped"], 0);
}

#[test]
fn lines_that_cannot_be_written_are_reported_and_the_capture_is_whole() {
    let dir = scratch("live-unwritable");
    let (commands, board) = board_run(&dir);
    let ports = free_ports();
    let captured = dir.join("captured");
    // A directory: the lines cannot be opened for writing.
    let capture = start_capture(ports, &captured, &["--live-jsonl", s(&dir)]);
    send_board(&commands, &board, ports);
    let out = capture.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("live board"),
        "no view asked for: {stderr}"
    );
    let live_summary = &summary(&captured)["live"];
    assert_eq!(live_summary["lines_written"], 0);
    assert!(
        live_summary["lines_error"]
            .as_str()
            .unwrap()
            .contains(s(&dir)),
        "{live_summary}"
    );
    // The capture kept every statistics record all the same.
    let trace = dir.join("t.hmtttrace");
    ok(&["merge", s(&captured), "-o", s(&trace), "-q"]);
    let side = PathBuf::from(format!("{}.stats.jsonl", trace.display()));
    assert_eq!(
        sorted_lines(&side).len() as u64,
        live_summary["records"].as_u64().unwrap()
    );
}
