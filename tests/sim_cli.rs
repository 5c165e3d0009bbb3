//! `hmtt sim` and `hmtt board` through the binary: the outputs directory
//! (docs/format.md §10) is complete, merging its captures gives back the
//! ground truth, `hmtt board` on the written command stream reproduces the
//! simulated board's packets byte for byte, `--send` delivers every packet
//! over UDP, and bad options are refused with a clear message.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::Path;
use std::time::Duration;

use hmtt_format::capture::CaptureReader;

mod support;
use support::cli::{fails, ok, s, scratch};

/// Packet payloads of one capture file, in file order.
fn packets(path: &Path) -> Vec<Vec<u8>> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (_, records) = CaptureReader::new(&data).unwrap();
    records.map(|r| r.packet.to_vec()).collect()
}

/// (tick, board, pa, rw) of every access in a CSV whose columns are named
/// by its header line; rows with an event (tags) are skipped.
fn accesses(csv: &str) -> Vec<(u64, u8, u64, String)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (tick, board, pa, rw, kind, event) = (
        col("tick"),
        col("board"),
        col("pa"),
        col("rw"),
        col("kind"),
        col("event"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[event].is_empty() && !matches!(f[kind], "tag" | "cmd" | "icode"))
        .map(|f| {
            (
                f[tick].parse().unwrap(),
                f[board].parse().unwrap(),
                u64::from_str_radix(f[pa].trim_start_matches("0x"), 16).unwrap(),
                f[rw].to_string(),
            )
        })
        .collect()
}

#[test]
fn sim_outputs_merge_back_to_the_ground_truth() {
    let dir = scratch("truth");
    let out = dir.join("run");
    let stdout = ok(&[
        "sim",
        "--workload",
        "quicksort",
        "--n",
        "3000",
        "--cache",
        "off",
        "--boards",
        "2",
        "--ports",
        "3",
        "--truth-csv",
        "--check",
        "--out",
        s(&out),
    ]);
    assert!(stdout.contains("board 0: command stream legal"), "{stdout}");
    assert!(stdout.contains("board 1: command stream legal"), "{stdout}");
    for name in [
        "commands-b0.txt",
        "commands-b1.txt",
        "truth.hmtttruth",
        "truth.csv",
        "pagetable.hmttlog",
        "events.toml",
    ] {
        assert!(out.join(name).is_file(), "{name} missing:\n{stdout}");
    }
    for b in 0..2 {
        for p in 0..3 {
            let f = out.join(format!("board{b}-port{p}.hmttcap"));
            assert!(!packets(&f).is_empty(), "{} has no packets", f.display());
        }
    }

    let trace = dir.join("run.hmtttrace");
    ok(&[
        "merge",
        s(&out),
        "-o",
        s(&trace),
        "--events",
        s(&out.join("events.toml")),
        // Two channels interleaved in 4 KiB blocks, as `hmtt sim` defaults to.
        "--interleave-shift",
        "12",
        "--quiet",
    ]);
    let dump = ok(&["dump", s(&trace), "--csv", "--accesses-only"]);
    let got = accesses(&dump);
    let want = accesses(&std::fs::read_to_string(out.join("truth.csv")).unwrap());
    assert!(want.len() > 10_000, "only {} truth accesses", want.len());
    assert_eq!(got.len(), want.len(), "access counts differ");
    let first_diff = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(
        first_diff, None,
        "first difference at access {first_diff:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn board_on_the_sim_command_stream_gives_the_same_packets() {
    // The default lanes (8, 3 references a clock) and two lanes taking one
    // reference a clock, passed to both.
    for (name, lanes) in [
        ("default", vec![]),
        ("lanes2", vec!["--lanes", "2", "--refs-per-clock", "1"]),
    ] {
        let dir = scratch(&format!("board-{name}"));
        let out = dir.join("run");
        let mut sim = vec![
            "sim",
            "--workload",
            "mix",
            "--n",
            "32K",
            "--processes",
            "2",
            "--ports",
            "3",
            "--out",
            s(&out),
        ];
        sim.extend_from_slice(&lanes);
        ok(&sim);
        let replayed = dir.join("board");
        let commands = out.join("commands-b0.txt");
        let mut board = vec![
            "board",
            "--commands",
            s(&commands),
            "--ports",
            "3",
            "--out",
            s(&replayed),
        ];
        board.extend_from_slice(&lanes);
        let stdout = ok(&board);
        assert!(stdout.contains("packets on 3 ports"), "{stdout}");
        let mut total = 0;
        for p in 0..3 {
            let name = format!("board0-port{p}.hmttcap");
            let want = packets(&out.join(&name));
            let got = packets(&replayed.join(&name));
            assert_eq!(got.len(), want.len(), "{name}: packet counts");
            assert!(got == want, "{name}: packet bytes differ");
            total += got.len();
        }
        assert!(total > 3, "only {total} packets");
        let summary = std::fs::read_to_string(replayed.join("board0-summary.json")).unwrap();
        assert!(summary.contains("\"protocol_errors\": 0"), "{summary}");
        let want_lanes = if lanes.is_empty() { "8" } else { "2" };
        assert!(
            summary.contains(&format!("\"lanes\": {want_lanes},")),
            "{summary}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn send_delivers_every_packet_to_its_port() {
    let dir = scratch("send");
    let sockets: Vec<UdpSocket> = (0..3)
        .map(|_| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            s
        })
        .collect();
    let dests: Vec<String> = sockets
        .iter()
        .map(|s| s.local_addr().unwrap().to_string())
        .collect();
    let out = dir.join("run");
    // Paced well below what loopback and the default socket buffers absorb,
    // so every datagram arrives.
    let stdout = ok(&[
        "sim",
        "--workload",
        "seq-read",
        "--n",
        "256K",
        "--ports",
        "3",
        "--out",
        s(&out),
        "--send",
        &dests.join(","),
        "--rate",
        "0.05",
    ]);
    assert!(stdout.contains("sent "), "{stdout}");
    for (p, sock) in sockets.iter().enumerate() {
        let want = packets(&out.join(format!("board0-port{p}.hmttcap")));
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while let Ok(n) = sock.recv(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        assert_eq!(got.len(), want.len(), "port {p}: datagrams received");
        assert!(got == want, "port {p}: datagrams differ from the capture");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_are_refused_clearly() {
    let dir = scratch("bad");
    let cases: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
        ("nothing to do", vec!["sim", "--workload", "seq-read"]),
        (
            "invalid value 'maybe' for '--cache",
            vec!["sim", "--cache", "maybe", "--out", s(&dir)],
        ),
        ("unknown suffix", vec!["sim", "--n", "3X", "--out", s(&dir)]),
        (
            "cannot be used with",
            vec!["sim", "--captures-only", "--truth-csv", "--out", s(&dir)],
        ),
        (
            "needs --trace",
            vec!["sim", "--workload", "trace", "--out", s(&dir)],
        ),
        (
            "destinations",
            vec!["sim", "--ports", "3", "--send", "127.0.0.1:9,127.0.0.1:10"],
        ),
        (
            "less than one word per fabric clock",
            vec![
                "sim",
                "--speed",
                "ddr-200",
                "--lanes",
                "8",
                "--n",
                "4K",
                "--out",
                s(&dir),
            ],
        ),
    ]);
    for (needle, args) in cases {
        let stderr = fails(&args);
        assert!(
            stderr.contains(needle),
            "{args:?}: no '{needle}' in:\n{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
