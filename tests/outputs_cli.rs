//! Outputs through the binary (issue 41): an output that is an input of
//! the same command is refused before anything is written, by device and
//! inode; a failed or killed command leaves no file under the output's
//! name; and the messages of a wrong output name the file and what failed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use hmtt_format::archive::ArchiveView;

mod support;
use support::cli::{
    fails, hmtt, mix_merged_with_events, ok, pack_in_small_blocks, s, scratch, Scratch,
};

/// A simulated run merged and packed: (dir, sim dir, trace, archive).
fn run(name: &str) -> (Scratch, PathBuf, PathBuf, PathBuf) {
    let dir = scratch(name);
    let (sim, trace) = mix_merged_with_events(&dir);
    let archive = dir.join("run.hmttz");
    pack_in_small_blocks(&trace, &archive);
    (dir, sim, trace, archive)
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs `args`, which must be refused because `output` is the input
/// `input`; `input` must be left as it was.
fn refused_as_input(args: &[&str], output: &Path, input: &Path) {
    let before = std::fs::read(input).unwrap();
    let ino = std::fs::metadata(input).unwrap().ino();
    let err = fails(args);
    assert!(
        err.contains(&format!(
            "the output {} is the input {}",
            output.display(),
            input.display()
        )),
        "{args:?}: {err}"
    );
    assert_eq!(std::fs::metadata(input).unwrap().ino(), ino, "{args:?}");
    assert!(
        std::fs::read(input).unwrap() == before,
        "{args:?} changed {}",
        input.display()
    );
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let (dir, sim, trace, archive) = run("same");
    let log = sim.join("pagetable.hmttlog");
    let t = s(&trace);
    let a = s(&archive);
    refused_as_input(&["unpack", a, "-o", a], &archive, &archive);
    refused_as_input(&["pack", t, "-o", t], &trace, &trace);
    for f in ["csv", "dramsim3", "parquet", "perfetto"] {
        refused_as_input(&["export", a, "--format", f, "-o", a], &archive, &archive);
    }
    refused_as_input(&["replay", t, "--log", s(&log), "--out", t], &trace, &trace);
    refused_as_input(
        &["replay", t, "--log", s(&log), "--csv", s(&log)],
        &log,
        &log,
    );
    refused_as_input(&["analyze", t, "--json", t], &trace, &trace);
    refused_as_input(&["analyze", t, "--plot", t], &trace, &trace);
    // Not by name: another path to the same file.
    let link = dir.join("link.hmtttrace");
    std::fs::hard_link(&trace, &link).unwrap();
    refused_as_input(&["analyze", t, "--json", s(&link)], &link, &trace);
    let dotted = dir.join(".").join("run.hmtttrace");
    refused_as_input(&["pack", t, "-o", s(&dotted)], &dotted, &trace);
    // A merge into one of its own capture files, named in a directory.
    let capture = sim.join("board0-port0.hmttcap");
    let before = std::fs::read(&capture).unwrap();
    let err = fails(&["merge", s(&sim), "-o", s(&capture), "--quiet"]);
    assert!(err.contains("is the input"), "{err}");
    assert!(err.contains("board0-port0.hmttcap"), "{err}");
    assert!(std::fs::read(&capture).unwrap() == before);
    // The output over a file that is no input is fine.
    let json = dir.join("a.json");
    std::fs::write(&json, "old").unwrap();
    ok(&["analyze", t, "--json", s(&json)]);
    assert!(std::fs::read_to_string(&json).unwrap().starts_with('{'));
}

#[test]
fn a_failed_export_leaves_no_output_file() {
    let (dir, _, _, archive) = run("failed");
    let bytes = std::fs::read(&archive).unwrap();
    let view = ArchiveView::new_checked(&bytes).unwrap();
    // A block two thirds in: the exports have written the blocks before.
    let b = view.block_count() * 2 / 3;
    assert!(b > 2);
    let e = *view.block_entry(b).unwrap();
    let mut bad = bytes.clone();
    bad[(e.offset + u64::from(e.len) / 2) as usize] ^= 0x5a;
    let damaged = dir.join("damaged.hmttz");
    std::fs::write(&damaged, &bad).unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    for (format, name) in [
        ("csv", "x.csv"),
        ("dramsim3", "x.trc"),
        ("ramulator2", "x.ramulator"),
        ("gem5", "x.gem5"),
        ("parquet", "x.parquet"),
        ("perfetto", "x.perfetto-trace"),
    ] {
        let out = out_dir.join(name);
        let err = fails(&["export", s(&damaged), "--format", format, "-o", s(&out)]);
        assert!(
            err.contains(&format!("archive block {b} damaged")),
            "{format}: {err}"
        );
        assert!(
            names_in(&out_dir).is_empty(),
            "{format}: {:?}",
            names_in(&out_dir)
        );
    }
    // Unpacking it fails the same way, and so does a merge's pictures and
    // JSON of it.
    let out = out_dir.join("x.hmtttrace");
    fails(&["unpack", s(&damaged), "-o", s(&out)]);
    fails(&[
        "analyze",
        s(&damaged),
        "--json",
        s(&out_dir.join("a.json")),
        "--plot",
        s(&out_dir.join("plots")),
    ]);
    let left: Vec<String> = names_in(&out_dir)
        .into_iter()
        .filter(|n| n != "plots")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_killed_export_or_merge_leaves_no_file_under_the_final_name() {
    let (dir, sim, trace, _) = run("killed");
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let commands: [(Vec<&str>, &str); 3] = [
        (vec!["export", s(&trace), "--format", "csv"], "csv"),
        (vec!["export", s(&trace), "--format", "gem5"], "gem5"),
        (vec!["merge", s(&sim), "--quiet"], "hmtttrace"),
    ];
    // What each writes when left to finish.
    let whole: Vec<Vec<u8>> = commands
        .iter()
        .map(|(cmd, ext)| {
            let out = dir.join(format!("whole.{ext}"));
            ok(&[&cmd[..], &["-o", s(&out)]].concat());
            std::fs::read(&out).unwrap()
        })
        .collect();
    // Killed at several moments: the final name holds the whole file (the
    // kill came after the rename) or nothing.
    let mut killed_before_the_end = 0;
    for (i, delay_ms) in [0u64, 2, 5, 10, 20, 40, 80, 160].into_iter().enumerate() {
        for ((cmd, ext), whole) in commands.iter().zip(&whole) {
            let out = out_dir.join(format!("k{i}.{ext}"));
            let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
                .args(cmd)
                .args(["-o", s(&out)])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(delay_ms));
            let _ = child.kill();
            child.wait().unwrap();
            match std::fs::read(&out) {
                Ok(bytes) => assert!(
                    bytes == *whole,
                    "{cmd:?} killed after {delay_ms} ms left {} bytes of {} under {}",
                    bytes.len(),
                    whole.len(),
                    out.display()
                ),
                Err(_) => killed_before_the_end += 1,
            }
        }
    }
    assert!(
        killed_before_the_end > 0,
        "every command finished before its kill"
    );
    // A killed writer's leftover (pid 2^22 + 1 is beyond Linux's pid_max,
    // so no process has it) is named by the next writer of the same
    // output, and kept.
    let out = out_dir.join("again.csv");
    let left = out_dir.join(".again.partial-4194305.csv");
    std::fs::write(&left, "part").unwrap();
    let (_, stderr) =
        support::cli::ok_with_stderr(&["export", s(&trace), "--format", "csv", "-o", s(&out)]);
    assert!(
        stderr.contains(".again.partial-4194305.csv: a temporary file (4 bytes)")
            && stderr.contains("left by a writer that was killed"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&left).unwrap(), b"part");
    assert_eq!(std::fs::read(&out).unwrap(), whole[0]);
}

#[test]
fn wrong_outputs_and_inputs_are_named_clearly() {
    let (dir, sim, trace, archive) = run("messages");
    // Unpacking onto a full disk: the trace is what could not be written.
    let err = fails(&["unpack", s(&archive), "-o", "/dev/full"]);
    assert!(err.contains("writing the trace /dev/full"), "{err}");
    assert!(!err.contains("archive"), "{err}");
    // --plot naming a file.
    let file = dir.join("plainfile");
    std::fs::write(&file, "x").unwrap();
    let err = fails(&["analyze", s(&trace), "--plot", s(&file)]);
    assert!(err.contains("a file of that name exists"), "{err}");
    // A picture that cannot be written: a human message, no debug text.
    let plots = dir.join("plots");
    std::fs::create_dir(&plots).unwrap();
    std::fs::create_dir(plots.join("bandwidth.png")).unwrap();
    let err = fails(&["analyze", s(&trace), "--plot", s(&plots)]);
    assert!(err.contains("bandwidth.png"), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    assert!(!err.contains("Os {") && !err.contains("Error("), "{err}");
    // A directory given as a trace.
    let err = fails(&["dump", s(&dir)]);
    assert!(err.contains("is a directory, not a trace file"), "{err}");
    // A bad mapping file is blamed, not the trace.
    let mapping = dir.join("bad-mapping.toml");
    std::fs::write(&mapping, "kind = \"nonsense\"\n").unwrap();
    let err = fails(&["analyze", s(&trace), "--mapping", s(&mapping)]);
    assert!(
        err.contains(&format!("mapping file {}", mapping.display())),
        "{err}"
    );
    assert!(
        !err.contains(&format!("reading {}", trace.display())),
        "{err}"
    );
    // merge parses it only after the captures: the file is named there too
    let merged = dir.join("mapped.hmtttrace");
    let err = fails(&[
        "merge",
        s(&sim),
        "-o",
        s(&merged),
        "-q",
        "--mapping",
        s(&mapping),
    ]);
    assert!(
        err.contains(&format!("mapping file {}", mapping.display())),
        "{err}"
    );
    assert!(!merged.exists());
    // An output into a directory that does not exist names it.
    let missing = dir.join("no/such/dir/x.csv");
    let out = hmtt(&["export", s(&trace), "--format", "csv", "-o", s(&missing)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("creating {}", missing.display())),
        "{err}"
    );
}

#[test]
fn numeric_options_out_of_range_are_refused_by_the_parser() {
    // Refused before the trace is even opened: exit status 2 (a wrong
    // command line) and the option named.
    for (args, option) in [
        (
            &["analyze", "t", "--stream-window", "18446744073709551615"][..],
            "--stream-window",
        ),
        (
            &["analyze", "t", "--stream-window", "4294967296"],
            "--stream-window",
        ),
        (&["analyze", "t", "--stream-window", "0"], "--stream-window"),
        (&["analyze", "t", "--interval-ms", "0"], "--interval-ms"),
        (&["analyze", "t", "--interval-ms", "nan"], "--interval-ms"),
        (&["analyze", "t", "--interval-ms", "inf"], "--interval-ms"),
        (&["analyze", "t", "--blp-ns=-1"], "--blp-ns"),
        (&["analyze", "t", "--threads", "0"], "--threads"),
        (
            &["analyze", "t", "--interleave-shift", "99"],
            "--interleave-shift",
        ),
        (&["stats", "t", "--interval-ms", "0"], "--interval-ms"),
        (&["dump", "t", "--from-ns", "nan"], "--from-ns"),
        (
            &[
                "export",
                "t",
                "-f",
                "perfetto",
                "-o",
                "x",
                "--interval-ns",
                "0",
            ],
            "--interval-ns",
        ),
        (
            &[
                "export",
                "t",
                "-f",
                "parquet",
                "-o",
                "x",
                "--row-group",
                "0",
            ],
            "--row-group",
        ),
        (
            &["export", "t", "-f", "dramsim3", "-o", "x", "--tck-ps", "0"],
            "--tck-ps",
        ),
        (
            &["merge", "d", "-o", "x", "--reorder-depth", "10000000"],
            "--reorder-depth",
        ),
        (
            &["merge", "d", "-o", "x", "--max-start-skew", "inf"],
            "--max-start-skew",
        ),
        (&["pack", "t", "-o", "x", "--level", "0"], "--level"),
        (&["pack", "t", "-o", "x", "--level", "23"], "--level"),
        (
            &["replay", "t", "--log", "l", "--max-unattributed", "101"],
            "--max-unattributed",
        ),
        (&["sim", "--processes", "0"], "--processes"),
        (&["sim", "--rate", "nan"], "--rate"),
    ] {
        let out = hmtt(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(option), "{args:?}: {err}");
    }
    let help = ok(&["analyze", "--help"]);
    assert!(help.contains("1..=65536"), "{help}");
    assert!(help.contains("positive and finite"), "{help}");
}

#[test]
fn a_trace_cut_short_in_place_under_a_reader_fails_it_naming_the_trace() {
    use std::io::{BufRead, BufReader, Read};
    let dir = scratch("cut-under-reader");
    let (_, trace) = support::cli::simulate_and_merge(
        &dir,
        &["--workload", "quicksort", "--n", "20000", "--cache", "off"],
        &[],
    );
    let cut = dir.join("cut.hmtttrace");
    std::fs::copy(&trace, &cut).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(["dump", s(&cut), "--csv"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first line says dump is past opening (and verifying) the trace;
    // the pipe, not read further, then holds it while another program
    // truncates the trace in place.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    let len = std::fs::metadata(&cut).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&cut)
        .unwrap()
        .set_len(len / 8)
        .unwrap();
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: the file was cut short", cut.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Standard output redirected to a regular file (written around the page
/// cache, through a file description of its own): the same bytes as
/// through a pipe, whether the file starts empty, with other bytes before
/// (an unaligned offset) or is appended to, and later writers of the same
/// redirection continue after the dump, not over it.
#[test]
fn a_dump_into_a_redirected_file_is_the_piped_dump() {
    let (dir, _sim, _trace, archive) = run("stdout-file");
    let args = ["dump", s(&archive), "--csv"];
    let piped = hmtt(&args);
    assert!(piped.status.success());
    assert!(piped.stdout.len() > 1 << 16, "a dump of some size");
    let into = |file: std::fs::File| {
        let status = Command::new(env!("CARGO_BIN_EXE_hmtt"))
            .args(args)
            .stdout(file)
            .status()
            .unwrap();
        assert!(status.success());
    };
    let path = dir.join("dump.csv");
    into(std::fs::File::create(&path).unwrap());
    assert!(
        std::fs::read(&path).unwrap() == piped.stdout,
        "into an empty file"
    );

    // The same description, shared with a writer before and after.
    let mut file = std::fs::File::create(&path).unwrap();
    std::io::Write::write_all(&mut file, b"before\n").unwrap();
    into(file.try_clone().unwrap());
    std::io::Write::write_all(&mut file, b"after\n").unwrap();
    let mut expected = b"before\n".to_vec();
    expected.extend_from_slice(&piped.stdout);
    expected.extend_from_slice(b"after\n");
    assert!(
        std::fs::read(&path).unwrap() == expected,
        "between other writes"
    );

    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    into(appended);
    expected.extend_from_slice(&piped.stdout);
    assert!(std::fs::read(&path).unwrap() == expected, "appended");
    std::fs::remove_dir_all(&dir).unwrap();
}
