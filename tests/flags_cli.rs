//! One spelling per concept across the commands (issue 37): `-o/--out`
//! for every output, `--json [FILE|-]` for every JSON report, `-q/--quiet`
//! and `-v/--verbose` everywhere, `board --config-window`, sizes with
//! suffixes (`capture --stripe-size`, `--rcvbuf`); the old spellings still
//! work for one release, with a warning naming the new one.

use std::path::Path;

use hmtt_format::capture::CaptureReader;
use hmtt_receiver::frame::{build_udp_frame, UdpEndpoints};

mod support;
use support::cli::{fails, hmtt, ok, ok_with_stderr, s, scratch, simulate, simulate_and_merge};

const DEPRECATED: &str = "is deprecated";

/// `hmtt args` spelled the present way: it succeeds without a warning.
fn new_spelling(args: &[&str]) {
    let (_, err) = ok_with_stderr(args);
    assert!(!err.contains(DEPRECATED), "hmtt {args:?} warned:\n{err}");
}

/// `hmtt args` spelled the old way (`old`): it succeeds and warns once,
/// naming `new`.
fn old_spelling(args: &[&str], old: &str, new: &str) {
    let (_, err) = ok_with_stderr(args);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains(DEPRECATED)).collect();
    assert_eq!(warnings.len(), 1, "hmtt {args:?}:\n{err}");
    assert!(
        warnings[0].contains(old) && warnings[0].contains(&format!("use {new}")),
        "hmtt {args:?}: {}",
        warnings[0]
    );
}

fn same_bytes(a: &Path, b: &Path) {
    assert!(
        std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
        "{} and {} differ",
        a.display(),
        b.display()
    );
}

#[test]
fn outputs_take_dash_o_and_dash_dash_out_and_the_old_output_warns() {
    let dir = scratch("out");
    let sim = dir.join("sim");
    new_spelling(&[
        "sim",
        "--workload",
        "seq-read",
        "--n",
        "4K",
        "--cache",
        "off",
        "-o",
        s(&sim),
    ]);

    let t_new = dir.join("new.hmtttrace");
    let t_long = dir.join("long.hmtttrace");
    let t_old = dir.join("old.hmtttrace");
    new_spelling(&["merge", s(&sim), "-o", s(&t_new), "-q"]);
    new_spelling(&["merge", s(&sim), &format!("--out={}", s(&t_long)), "-q"]);
    old_spelling(
        &["merge", s(&sim), "--output", s(&t_old), "-q"],
        "merge --output",
        "-o/--out",
    );
    same_bytes(&t_new, &t_long);
    same_bytes(&t_new, &t_old);

    let z_new = dir.join("new.hmttz");
    let z_old = dir.join("old.hmttz");
    new_spelling(&["pack", s(&t_new), "--out", s(&z_new)]);
    old_spelling(
        &["pack", s(&t_new), "--output", s(&z_old)],
        "pack --output",
        "-o/--out",
    );
    same_bytes(&z_new, &z_old);

    let u_new = dir.join("u-new.hmtttrace");
    let u_old = dir.join("u-old.hmtttrace");
    new_spelling(&["unpack", s(&z_new), "-o", s(&u_new)]);
    old_spelling(
        &["unpack", s(&z_new), &format!("--output={}", s(&u_old))],
        "unpack --output",
        "-o/--out",
    );
    same_bytes(&t_new, &u_new);
    same_bytes(&t_new, &u_old);

    // export's bandwidth interval is in ms, as analyze's: the old
    // --interval-ns still takes ns.
    let p_new = dir.join("new.pftrace");
    let p_old = dir.join("old.pftrace");
    let perfetto = ["export", s(&t_new), "-f", "perfetto", "-o"];
    new_spelling(&[&perfetto[..], &[s(&p_new), "--interval-ms", "0.002"]].concat());
    old_spelling(
        &[&perfetto[..], &[s(&p_old), "--interval-ns", "2000"]].concat(),
        "export --interval-ns",
        "--interval-ms",
    );
    same_bytes(&p_new, &p_old);
    let p_default = dir.join("default.pftrace");
    new_spelling(&[&perfetto[..], &[s(&p_default)]].concat());
    assert!(std::fs::read(&p_default).unwrap() != std::fs::read(&p_new).unwrap());

    // Both spellings at once are one option given twice.
    let err = fails(&["merge", s(&sim), "-o", s(&t_new), "--output", s(&t_old)]);
    assert!(err.contains("cannot be used multiple times"), "{err}");
}

#[test]
fn board_takes_config_window_and_the_old_window_warns() {
    let dir = scratch("board");
    let sim = simulate(
        &dir,
        &["--workload", "seq-read", "--n", "4K", "--cache", "off"],
    );
    let commands = sim.join("commands-b0.txt");
    let b_new = dir.join("b-new");
    let b_old = dir.join("b-old");
    for (out, window) in [(&b_new, "--config-window"), (&b_old, "--window")] {
        let args = [
            "board",
            "--commands",
            s(&commands),
            window,
            "0,100,2",
            "-o",
            s(out),
        ];
        if window == "--window" {
            old_spelling(&args, "board --window", "--config-window");
        } else {
            new_spelling(&args);
        }
    }
    same_bytes(
        &b_new.join("board0-port0.hmttcap"),
        &b_old.join("board0-port0.hmttcap"),
    );

    // The errors name the option as it is spelled now.
    for window in ["0,100", "99,0,1"] {
        let b = dir.join("b-bad");
        let err = fails(&[
            "board",
            "--commands",
            s(&commands),
            "--config-window",
            window,
            "-o",
            s(&b),
        ]);
        assert!(
            err.contains("--config-window"),
            "--config-window {window}: {err}"
        );
    }
    // --window is board's old spelling only: replay and analyze keep theirs.
    let help = ok(&["analyze", "--help"]);
    assert!(help.contains("--window"), "{help}");
}

/// A classic pcap file of the packets of a capture file of port 0, in UDP
/// frames.
fn pcap_of(capture: &Path, pcap: &Path) {
    let file = std::fs::read(capture).unwrap();
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    for (i, r) in CaptureReader::new(&file).unwrap().1.enumerate() {
        let mut frame = Vec::new();
        build_udp_frame(&UdpEndpoints::board_defaults(0, 0), r.packet, &mut frame);
        for field in [1, i as u32, frame.len() as u32, frame.len() as u32] {
            f.extend_from_slice(&field.to_le_bytes());
        }
        f.extend_from_slice(&frame);
    }
    std::fs::write(pcap, f).unwrap();
}

#[test]
fn capture_takes_sizes_and_the_old_mib_options_warn() {
    let dir = scratch("capture");
    let sim = simulate(
        &dir,
        &["--workload", "seq-read", "--n", "16K", "--cache", "off"],
    );
    let pcap = dir.join("p0.pcap");
    pcap_of(&sim.join("board0-port0.hmttcap"), &pcap);
    let input = format!("file:{}", s(&pcap));
    // The files written and their packets (a capture's header holds the
    // time it started).
    let capture = |name: &str, options: &[&str], old: Option<(&str, &str)>| {
        let out = dir.join(name);
        let args = [&["capture", "-i", &input, "-o", s(&out), "-q"], options].concat();
        match old {
            Some((old, new)) => old_spelling(&args, old, new),
            None => new_spelling(&args),
        }
        let mut files: Vec<(String, Vec<Vec<u8>>)> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|f| f.extension().is_some_and(|e| e == "hmttcap"))
            .map(|f| {
                let bytes = std::fs::read(&f).unwrap();
                let packets = CaptureReader::new(&bytes).unwrap().1;
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                (name, packets.map(|r| r.packet.to_vec()).collect())
            })
            .collect();
        files.sort();
        files
    };
    let new = capture("new", &["--stripe-size", "1MiB", "--rcvbuf", "8M"], None);
    assert!(
        new.iter().map(|(_, p)| p.len()).sum::<usize>() > 0,
        "{new:?}"
    );
    let stripe_mib = ["--stripe-mib", "1", "--rcvbuf", "8M"];
    let old = Some(("capture --stripe-mib", "--stripe-size"));
    assert_eq!(new, capture("stripe", &stripe_mib, old));
    let rcvbuf_mib = ["--stripe-size", "1M", "--rcvbuf-mib", "8"];
    let old = Some(("capture --rcvbuf-mib", "--rcvbuf"));
    assert_eq!(new, capture("rcvbuf", &rcvbuf_mib, old));
    for (option, size, range) in [
        ("--stripe-size", "1K", "1M to 16T"),
        ("--stripe-size", "17T", "1M to 16T"),
        ("--rcvbuf", "2G", "1M to 2047M"),
        ("--rcvbuf", "8X", "unknown suffix"),
    ] {
        let err = fails(&[
            "capture",
            "-i",
            &input,
            "-o",
            s(&dir.join("no")),
            option,
            size,
        ]);
        assert!(err.contains(range), "{option} {size}: {err}");
    }
    let both = ["--stripe-size", "1M", "--stripe-mib", "1"];
    let err = fails(
        &[
            &["capture", "-i", &input, "-o", s(&dir.join("no"))],
            &both[..],
        ]
        .concat(),
    );
    assert!(err.contains("cannot be used with"), "{err}");
}

/// The subcommands of `hmtt args --help`, as `args` plus the name.
fn subcommands(args: &[&str]) -> Vec<Vec<String>> {
    let help = ok(&[args, &["--help"]].concat());
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(|name| {
            args.iter()
                .map(|a| a.to_string())
                .chain([name.to_string()])
                .collect()
        })
        .collect()
}

#[test]
fn every_command_takes_quiet_and_verbose_and_every_writer_dash_o_out() {
    let writers = [
        "sim", "board", "capture", "merge", "pack", "unpack", "export", "replay", "log", "qemu",
    ];
    let mut commands = subcommands(&[]);
    assert!(commands.len() >= 16, "{commands:?}");
    commands.extend(subcommands(&["firmware"]));
    for command in &commands {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        let help = ok(&[&args[..], &["--help"]].concat());
        for flag in ["-q, --quiet", "-v, --verbose"] {
            assert!(
                help.contains(flag),
                "hmtt {args:?} --help lacks {flag}:\n{help}"
            );
        }
        let writes = writers.contains(&args[0]) || args[0] == "firmware" && args.len() > 1;
        if writes {
            assert!(
                help.contains("-o, --out <"),
                "hmtt {args:?} --help lacks -o/--out:\n{help}"
            );
        }
        assert!(
            !help.contains("--output"),
            "hmtt {args:?} --help shows --output:\n{help}"
        );
    }
    // Before or after the command, together too (-q is about progress,
    // -v about the log).
    let dir = scratch("quiet");
    let sim = dir.join("sim");
    ok(&[
        "-q",
        "sim",
        "--workload",
        "seq-read",
        "--n",
        "4K",
        "--cache",
        "off",
        "-o",
        s(&sim),
    ]);
    ok(&["merge", "-v", s(&sim), "-o", s(&dir.join("t.hmtttrace"))]);
    ok(&[
        "merge",
        "-q",
        "-vv",
        s(&sim),
        "-o",
        s(&dir.join("u.hmtttrace")),
    ]);
    same_bytes(&dir.join("t.hmtttrace"), &dir.join("u.hmtttrace"));
    // The bare binary still answers.
    assert!(hmtt(&["--version"]).status.success());
}

#[test]
fn json_takes_a_file_or_a_dash_for_standard_output() {
    let dir = scratch("json");
    let sim_args = ["--workload", "seq-read", "--n", "4K", "--cache", "off"];
    let (_, trace) = simulate_and_merge(&dir, &sim_args, &[]);
    let file = dir.join("a.json");
    let text = ok(&["analyze", s(&trace), "--json", s(&file)]);
    assert!(!text.starts_with('{'), "{text}");
    let (stdout, err) = ok_with_stderr(&["analyze", s(&trace), "--json", "-"]);
    assert!(!err.contains(DEPRECATED), "{err}");
    assert!(!dir.join("-").exists());
    assert_eq!(stdout, std::fs::read_to_string(&file).unwrap() + "\n");

    // stats: the same figures as its text.
    let stats_file = dir.join("stats.json");
    let text = ok(&["stats", s(&trace), "--json", s(&stats_file)]);
    let stdout = ok(&["stats", s(&trace), "--json", "-"]);
    assert_eq!(stdout, std::fs::read_to_string(&stats_file).unwrap());
    let stats: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stats["trace"], s(&trace));
    let (refs, reads) = (&stats["references"], &stats["reads"]);
    assert!(refs.as_u64().unwrap() > 0, "{stdout}");
    assert!(
        text.contains(&format!("references: {refs} ({reads} reads")),
        "{text}"
    );
    let first = &stats["bandwidth"]["intervals"][0];
    let row = format!(
        "{:>12.3} {:>12} {:>10} {:>10} {:>12.1}",
        first["start_ms"].as_f64().unwrap(),
        first["references"].as_u64().unwrap(),
        first["reads"].as_u64().unwrap(),
        first["writes"].as_u64().unwrap(),
        first["memory_mb_per_s"].as_f64().unwrap()
    );
    assert!(text.contains(&row), "{row}\n{text}");
    assert_eq!(stats["losses"]["packets_missing"], 0);
    assert_eq!(stats["board_statistics"], serde_json::Value::Null);

    let sim_dir = dir.join("sim2");
    let sim = json_to_a_file_or_instead_of_the_text(
        &dir.join("sim.json"),
        &["sim", "--out", s(&sim_dir), "--check"]
            .into_iter()
            .chain(sim_args)
            .collect::<Vec<_>>(),
    );
    assert_eq!(sim["out"], s(&sim_dir));
    assert_eq!(sim["timing_checks"][0]["violations"], 0);
    let merged = dir.join("m.hmtttrace");
    let merge = json_to_a_file_or_instead_of_the_text(
        &dir.join("merge.json"),
        &["merge", s(&sim_dir), "-o", s(&merged)],
    );
    assert_eq!(
        merge["boards"][0]["counts"]["reads"],
        sim["stats"]["references"]
    );
    assert_eq!(merge["out"], s(&merged));
    let err = fails(&[
        "merge",
        s(&sim_dir),
        "-o",
        s(&merged),
        "--json",
        s(&sim_dir.join("events.toml")),
    ]);
    assert!(err.contains("events.toml"), "{err}");
}

/// `args --json FILE` prints the text and writes the JSON to `file`;
/// `args --json -` prints the same JSON instead of the text (its
/// wall-clock `seconds` aside). Returns the JSON.
fn json_to_a_file_or_instead_of_the_text(file: &Path, args: &[&str]) -> serde_json::Value {
    let with = |json| [args, &["--json", json]].concat();
    let text = ok(&with(s(file)));
    assert!(!text.is_empty() && !text.starts_with('{'), "{text}");
    let mut in_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let stdout = ok(&with("-"));
    let on_stdout: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(on_stdout["seconds"].as_f64().unwrap() > 0.0, "{stdout}");
    in_file["seconds"] = on_stdout["seconds"].clone();
    assert_eq!(in_file, on_stdout, "hmtt {args:?}");
    on_stdout
}
