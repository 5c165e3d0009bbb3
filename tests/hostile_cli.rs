//! The binary on damaged input and into closed or full outputs (issue 19):
//! a clear message or a counted, reported anomaly with a documented exit
//! status; never a panic (101) or an abort (134).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hmtt_format::capture::CaptureReader;
use hmtt_format::trace::TraceView;

mod support;
use support::cli::{hmtt, ok, ok_with_stderr, s, scratch, simulate, Scratch};

/// `hmtt merge`'s status for a trace written with rejected input.
const EXIT_REJECTED_INPUT: i32 = 3;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory with `hmtt sim`'s outputs of quicksort in `run/`.
fn simulated(name: &str) -> (Scratch, PathBuf) {
    let dir = scratch(name);
    let run = simulate(&dir, &["--workload", "quicksort", "--n", "20000"]);
    (dir, run)
}

/// Offset in `file` of the `i`-th packet's t0.
fn t0_offset(file: &Path, i: usize) -> usize {
    let data = std::fs::read(file).unwrap();
    let (_, mut records) = CaptureReader::new(&data).unwrap();
    let r = records.nth(i).expect("enough packets");
    r.offset + hmtt_format::capture::RECORD_HEADER_LEN + 16
}

fn patch(file: &Path, at: usize, bytes: &[u8]) {
    let mut data = std::fs::read(file).unwrap();
    data[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(file, data).unwrap();
}

#[test]
fn a_t0_near_2_pow_64_is_rejected_with_status_3_and_stats_stays_small() {
    let (d, run) = simulated("t0");
    let port0 = run.join("board0-port0.hmttcap");
    // The repro: 2^64-100 over the second packet's t0.
    patch(&port0, t0_offset(&port0, 1), &(u64::MAX - 99).to_le_bytes());
    let trace = d.join("x.hmtttrace");
    let out = hmtt(&["merge", s(&run), "-o", s(&trace), "-q"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(EXIT_REJECTED_INPUT), "{stdout}");
    assert!(stdout.contains("1 packets rejected"), "{stdout}");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("INPUT REJECTED: 1 packets"),
        "{stdout}"
    );
    let bytes = std::fs::read(&trace).unwrap();
    let view = TraceView::new_checked(&bytes[..]).unwrap();
    let ticks: Vec<u64> = view.records().map(|r| r.tick).collect();
    assert!(ticks.windows(2).all(|w| w[0] <= w[1]), "out of time order");
    assert!(*ticks.last().unwrap() < 1 << 40);
    let stats = ok(&["stats", s(&trace)]);
    assert!(stats.contains("rejected 1"));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_bad_tick_in_a_capture_header_is_said_and_exits_3() {
    let (d, run) = simulated("tick");
    let port1 = run.join("board0-port1.hmttcap");
    // Byte 28 of the capture header is tick_ps (format.md §7).
    patch(&port1, 28, &65535u16.to_le_bytes());
    let trace = d.join("x.hmtttrace");
    let out = hmtt(&["merge", s(&port1), "-o", s(&trace), "-q"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(EXIT_REJECTED_INPUT), "{stdout}");
    assert!(stdout.contains("a tick of 1250 ps but the run's is 65535 ps"));
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("INPUT REJECTED"), "{stdout}");
    // The other ports, with good headers, merge with status 0.
    let port0 = run.join("board0-port0.hmttcap");
    ok(&["merge", s(&port0), "-o", s(&d.join("y.hmtttrace")), "-q"]);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn merge_help_documents_the_exit_statuses() {
    let help = ok(&["merge", "--help"]);
    assert!(help.contains("Exit status:"), "{help}");
    assert!(
        help.contains(&format!(
            "{EXIT_REJECTED_INPUT}  merged with rejected input"
        )),
        "{help}"
    );
    assert!(help.contains("--reorder-depth"));
    assert!(help.contains("0 undoes no"), "{help}");
}

/// `hmtt args` with standard output into a pipe that is closed after one
/// line: the status and standard error.
fn into_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    (out.status, text(&out.stderr))
}

/// `hmtt args` with standard output on a full disk (`/dev/full`).
fn onto_full_disk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(args)
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap()
}

#[test]
fn stats_merge_and_sim_end_quietly_into_a_closed_pipe_and_fail_clearly_on_a_full_disk() {
    let (d, run) = simulated("pipe");
    let trace = d.join("x.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&trace), "-q"]);
    let many_rows = [
        "stats",
        s(&trace),
        "--interval-ms",
        "0.001",
        "--max-rows",
        "100000",
    ];
    let (status, stderr) = into_closed_pipe(&many_rows);
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let full = onto_full_disk(&many_rows);
    assert_eq!(full.status.code(), Some(1), "{}", text(&full.stderr));
    assert!(text(&full.stderr).contains("writing the statistics"));
    let full = onto_full_disk(&["merge", s(&run), "-o", s(&trace), "-q"]);
    assert_eq!(full.status.code(), Some(1), "{}", text(&full.stderr));
    assert!(text(&full.stderr).contains("writing the merge summary"));
    let again = d.join("again");
    let full = onto_full_disk(&[
        "sim",
        "--workload",
        "strided",
        "--n",
        "1000",
        "--out",
        s(&again),
    ]);
    assert_eq!(full.status.code(), Some(1), "{}", text(&full.stderr));
    assert!(text(&full.stderr).contains("writing the run summary"));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn replay_of_a_cut_log_or_one_with_seq_holes_says_so() {
    let (d, run) = simulated("log");
    let trace = d.join("x.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&trace), "-q"]);
    let log = std::fs::read(run.join("pagetable.hmttlog")).unwrap();
    let (header, record) = (hmtt_format::klog::HEADER_LEN, hmtt_format::klog::RECORD_LEN);
    assert!(log.len() >= header + 10 * record);
    let replay = |bytes: &[u8]| {
        let path = d.join("damaged.hmttlog");
        std::fs::write(&path, bytes).unwrap();
        // The summary, on standard output.
        ok_with_stderr(&["replay", s(&trace), "--log", s(&path)]).0
    };
    let whole = replay(&log);
    assert!(
        !whole.contains("cut short") && !whole.contains("seq holes"),
        "{whole}"
    );
    let cut = replay(&log[..log.len() - 10]);
    assert!(
        cut.contains(&format!("kernel log cut short: {} bytes", record - 10)),
        "{cut}"
    );
    // Records 3 and 4 and record 7 taken out: two holes, three records.
    let mut holes = log[..header + 3 * record].to_vec();
    holes.extend_from_slice(&log[header + 5 * record..header + 7 * record]);
    holes.extend_from_slice(&log[header + 8 * record..]);
    let holed = replay(&holes);
    assert!(
        holed.contains("kernel log seq holes: 3 records missing in 2 holes"),
        "{holed}"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn capture_repair_cuts_a_partial_record_and_help_states_the_loss_bound() {
    let (d, run) = simulated("repair");
    let file = run.join("board0-port0.hmttcap");
    let whole = std::fs::read(&file).unwrap();
    let mut cut = whole.clone();
    cut.extend_from_slice(&whole[64..64 + 40]);
    std::fs::write(&file, &cut).unwrap();
    let (_, stderr) = ok_with_stderr(&["capture", "--repair", "-o", s(&run)]);
    assert!(
        stderr.contains("40 bytes of a partial record cut"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), whole);
    let help = ok(&["capture", "--help"]);
    assert!(help.contains("most the last 150 ms of packets"), "{help}");
    assert!(help.contains("--repair"));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_pcap_file_with_timestamps_before_1970_is_captured_without_a_panic() {
    use hmtt_receiver::frame::{build_udp_frame, UdpEndpoints};
    let (d, run) = simulated("pcapts");
    let data = std::fs::read(run.join("board0-port0.hmttcap")).unwrap();
    let (_, records) = CaptureReader::new(&data).unwrap();
    let mut pcap = 0xa1b2_3c4du32.to_le_bytes().to_vec();
    pcap.extend_from_slice(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    let mut sent = 0;
    for r in records {
        let mut frame = Vec::new();
        build_udp_frame(&UdpEndpoints::board_defaults(0, 0), r.packet, &mut frame);
        // A seconds field with the top bit set: negative in libpcap's time_t.
        pcap.extend_from_slice(&0x8000_0000u32.to_le_bytes());
        pcap.extend_from_slice(&0u32.to_le_bytes());
        pcap.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        pcap.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        pcap.extend_from_slice(&frame);
        sent += 1;
    }
    let input = d.join("in.pcap");
    std::fs::write(&input, &pcap).unwrap();
    let out_dir = d.join("out");
    let out = hmtt(&[
        "capture",
        "-i",
        &format!("file:{}", s(&input)),
        "-o",
        s(&out_dir),
        "-q",
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(&format!("{sent} received")), "{stderr}");
    std::fs::remove_dir_all(d).unwrap();
}

/// `hmtt args` with standard output a pipe whose reader is already gone,
/// so the first write fails however short the output: the status and
/// standard error.
fn into_pipe_closed_from_the_start(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

/// `hmtt args` with standard error a pipe closed from the start, or
/// `/dev/full`: status lines are dropped, the run goes on.
fn with_stderr_gone(args: &[&str], full: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hmtt"));
    cmd.args(args).stdout(Stdio::piped());
    if full {
        let dev_full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        return cmd.stderr(dev_full).output().unwrap();
    }
    let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stderr.take());
    child.wait_with_output().unwrap()
}

#[test]
fn every_printing_command_ends_quietly_into_a_closed_pipe_and_fails_clearly_on_a_full_disk() {
    let (d, run) = simulated("every");
    let trace = d.join("x.hmtttrace");
    let archive = d.join("x.hmttz");
    let restored = d.join("restored.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&trace), "-q"]);
    ok(&["pack", s(&trace), "-o", s(&archive)]);
    let commands = d.join("commands.txt");
    std::fs::write(&commands, "0 ACT 0 0 5\n10 RD 0 0 0\n20 WR 0 0 8\n").unwrap();
    let board_out = d.join("board").to_str().unwrap().to_string();
    let demo_out = d.join("demo").to_str().unwrap().to_string();
    let log = run.join("pagetable.hmttlog");
    // Each command that prints on standard output, with the context its
    // full-disk error names. Each run writes its files afresh.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--help"], "writing the help"),
        (vec!["dump", "--help"], "writing the help"),
        (vec!["--version"], "writing the help"),
        (
            vec!["board", "--commands", s(&commands), "--out", &board_out],
            "writing the board summary",
        ),
        (
            vec![
                "demo",
                "--workload",
                "quicksort",
                "--n",
                "2000",
                "--keep",
                &demo_out,
            ],
            "writing the demo's report",
        ),
        (
            vec!["firmware", "flash", "--board", "ice40-hx8k", "--dry-run"],
            "writing the report",
        ),
        (
            vec!["pack", s(&trace), "-o", s(&archive)],
            "writing the summary",
        ),
        (
            vec!["unpack", s(&archive), "-o", s(&restored)],
            "writing the summary",
        ),
        (vec!["dump", s(&archive)], "writing the dump"),
        (vec!["stats", s(&trace)], "writing the statistics"),
        (
            vec!["replay", s(&trace), "--log", s(&log), "--csv", "-"],
            "writing the CSV",
        ),
    ];
    for (args, what) in &cases {
        let closed = into_pipe_closed_from_the_start(args);
        let stderr = text(&closed.stderr);
        assert!(
            closed.status.success(),
            "{args:?} into a closed pipe: {:?}\n{stderr}",
            closed.status
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        let full = onto_full_disk(args);
        let stderr = text(&full.stderr);
        assert_eq!(
            full.status.code(),
            Some(1),
            "{args:?} onto /dev/full: {stderr}"
        );
        assert!(stderr.contains(what), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
    }
    // Commands that talk on standard error only: a capture goes on when
    // its status lines cannot be written.
    for full in [false, true] {
        let out_dir = d.join(format!("repaired-{full}"));
        std::fs::create_dir_all(&out_dir).unwrap();
        let file = out_dir.join("board0-port0.hmttcap");
        let mut cut = std::fs::read(run.join("board0-port0.hmttcap")).unwrap();
        cut.extend_from_within(64..64 + 40);
        std::fs::write(&file, &cut).unwrap();
        let out = with_stderr_gone(&["capture", "--repair", "-o", s(&out_dir)], full);
        assert!(out.status.success(), "capture, stderr full={full}: {out:?}");
        assert_eq!(std::fs::read(&file).unwrap().len() + 40, cut.len());
        let drained = d.join(format!("drained-{full}.hmttlog"));
        let out = with_stderr_gone(
            &[
                "log",
                "--device",
                s(&log),
                "--out",
                s(&drained),
                "--until-empty",
            ],
            full,
        );
        assert!(out.status.success(), "log, stderr full={full}: {out:?}");
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// Blocks of `file` on the disk, bytes.
fn allocated(file: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(file).unwrap().blocks() * 512
}

#[test]
fn merge_ignores_a_zero_tail_and_gives_back_a_killed_captures_preallocation() {
    let (d, run) = simulated("tails");
    let clean = d.join("clean.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&clean), "-q"]);
    // A zero tail, as a crash can show preallocated space, on port 0; a
    // preallocation past the end (fallocate --keep-size), as a killed
    // capture leaves it, on port 1.
    let port0 = run.join("board0-port0.hmttcap");
    let port1 = run.join("board0-port1.hmttcap");
    let len0 = std::fs::metadata(&port0).unwrap().len();
    let mut zeros = std::fs::read(&port0).unwrap();
    zeros.resize(len0 as usize + 4096 + 40, 0);
    std::fs::write(&port0, &zeros).unwrap();
    let prealloc = Command::new("fallocate")
        .args(["--keep-size", "--length", "8MiB", s(&port1)])
        .status()
        .is_ok_and(|s| s.success());
    let len1 = std::fs::metadata(&port1).unwrap().len();
    if prealloc {
        assert!(allocated(&port1) >= 8 << 20);
    } else {
        println!("no preallocation on this filesystem: only the zero tail is checked");
    }

    let tailed = d.join("tailed.hmtttrace");
    if prealloc {
        // A running capture holds a lock on the file it writes: merge
        // leaves that file's space alone.
        let held = std::fs::File::open(&port1).unwrap();
        held.lock().unwrap();
        let summary = ok(&["merge", s(&run), "-o", s(&tailed)]);
        assert!(!summary.contains("preallocated"), "{summary}");
        assert!(allocated(&port1) >= 8 << 20);
    }
    let summary = ok(&["merge", s(&run), "-o", s(&tailed)]);
    assert!(
        summary.contains(&format!(
            "board0-port0.hmttcap ends in {} bytes of zeros at offset {len0}: space no record was written into",
            4096 + 40
        )),
        "{summary}"
    );
    assert!(!summary.contains("rejected"), "{summary}");
    // The zeros are not records: the trace is the clean one, record for record.
    let dump = |t: &Path| ok(&["dump", s(t)]);
    assert_eq!(dump(&tailed), dump(&clean));
    // Merge reads the inputs and trims only space past their ends.
    assert_eq!(std::fs::read(&port0).unwrap(), zeros);
    assert_eq!(std::fs::metadata(&port1).unwrap().len(), len1);
    if prealloc {
        assert!(
            summary.contains("bytes of disk space preallocated past the ends of 1 capture files"),
            "{summary}"
        );
        assert!(allocated(&port1) < 1 << 20, "{}", allocated(&port1));
        let again = ok(&["merge", s(&run), "-o", s(&tailed)]);
        assert!(!again.contains("preallocated"), "{again}");
    }
    // repair cuts the zero tail.
    let (_, out) = ok_with_stderr(&["capture", "--repair", "-o", s(&run)]);
    assert!(out.contains("4136 bytes of zeros"), "{out}");
    assert_eq!(std::fs::metadata(&port0).unwrap().len(), len0);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn an_events_file_that_is_missing_a_device_or_a_mapping_device_is_an_error_naming_it() {
    let (d, run) = simulated("side_files");
    let trace = d.join("t.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&trace), "-q"]);
    let missing = d.join("no_such.toml");
    for args in [
        vec![
            "merge",
            s(&run),
            "-o",
            s(&d.join("u.hmtttrace")),
            "-q",
            "--events",
            s(&missing),
        ],
        vec!["dump", s(&trace), "--limit", "1", "--events", s(&missing)],
        vec!["analyze", s(&trace), "--events", s(&missing)],
    ] {
        let out = hmtt(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("events file") && stderr.contains("no_such.toml"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!d.join("u.hmtttrace").exists());
    for flag in ["--events", "--mapping"] {
        let out = hmtt(&[
            "merge",
            s(&run),
            "-o",
            s(&d.join("v.hmtttrace")),
            "-q",
            flag,
            "/dev/zero",
        ]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {stderr}");
        assert!(
            stderr.contains("/dev/zero: not a regular file"),
            "{flag}: {stderr}"
        );
    }
}

/// `hmtt args` is refused by the option parser (status 2), the value named
/// out of range, without a panic.
fn refused_by_the_parser(args: &[&str]) {
    let out = hmtt(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains("is not in") || stderr.contains("invalid value"),
        "{args:?}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
}

// Found by the option fuzzing of tests/fuzz_readers.rs: 2^64-1 overflowed
// the line-rate arithmetic (a panic in debug builds).
#[test]
fn max_words_beyond_a_jumbo_frame_is_refused_by_the_parser() {
    for v in ["0", "1", "2236", "18446744073709551615"] {
        refused_by_the_parser(&["sim", "--max-words", v]);
        refused_by_the_parser(&["board", "--commands", "c", "--out", "o", "--max-words", v]);
    }
}

// 2^32 asked the queue for a 320 GiB allocation (an abort), 2^64-1
// overflowed its capacity (a panic).
#[test]
fn a_queue_depth_beyond_4096_is_refused_by_the_parser() {
    for v in ["0", "4097", "4294967296", "18446744073709551615"] {
        refused_by_the_parser(&["sim", "--queue-depth", v]);
    }
}

// 2^32 ticks between two references made a 64-reference run go on for
// hours of idle ticks.
#[test]
fn cpu_ticks_beyond_65536_are_refused_by_the_parser() {
    for v in ["-1", "65537", "4294967296", "18446744073709551615"] {
        // `=`: a value of its own, "-1", would be taken for an option.
        refused_by_the_parser(&["sim", &format!("--cpu-ticks={v}")]);
    }
}

// 2^64-1 overflowed the workload's buffer layout (a panic in debug builds).
#[test]
fn a_workload_size_beyond_1t_is_an_error() {
    let dir = scratch("huge-n");
    for v in ["1099511627777", "18446744073709551615", "16777216G"] {
        let out = hmtt(&["sim", "--n", v, "--out", s(&dir.join("run"))]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--n {v}: {stderr}");
        assert!(
            stderr.contains("more than 1099511627776"),
            "--n {v}: {stderr}"
        );
    }
}

// Each of these panicked converting to a Duration.
#[test]
fn a_capture_duration_that_is_no_duration_is_refused_by_the_parser() {
    for v in ["nan", "inf", "-1", "1e309", "18446744073709551616"] {
        let duration = format!("--duration={v}");
        refused_by_the_parser(&["capture", "-i", "file:x.pcap", "-o", "d", &duration]);
    }
}

// 2^64 seconds and more panicked converting to a Duration.
#[test]
fn log_seconds_beyond_a_duration_is_an_error() {
    let dir = scratch("log-seconds");
    let raw = dir.join("raw");
    std::fs::write(&raw, []).unwrap();
    let log = dir.join("l.hmttlog");
    for v in ["18446744073709551616", "1e300"] {
        let args = ["log", "-o", s(&log), "--device", s(&raw), "--seconds", v];
        let out = hmtt(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--seconds {v}: {stderr}");
        assert!(
            stderr.contains("is not a duration"),
            "--seconds {v}: {stderr}"
        );
    }
}

// An interval of 2^64 ms and more overflowed the timeline's interval end
// (a panic in debug builds).
#[test]
fn analyze_with_an_interval_longer_than_the_tick_counter_reports_one_interval() {
    let (dir, run) = simulated("huge-interval");
    let trace = dir.join("t.hmtttrace");
    ok(&["merge", s(&run), "-o", s(&trace), "--quiet"]);
    for v in ["23058430092137", "18446744073709551615", "1e300"] {
        let out = ok(&["analyze", s(&trace), "--interval-ms", v]);
        assert!(out.contains("references"), "--interval-ms {v}: {out}");
    }
}

#[test]
fn archive_options_out_of_their_range_are_refused_by_the_parser() {
    for args in [
        ["--level", "0"],
        ["--level", "23"],
        ["--block-records", "0"],
        ["--block-records", "16777217"],
    ] {
        let out = hmtt(&["pack", "in.hmtttrace", "-o", "out.hmttz", args[0], args[1]]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is not in"), "{args:?}: {stderr}");
    }
}
