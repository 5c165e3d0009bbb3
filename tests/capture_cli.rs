//! `hmtt capture` as a program: SIGINT or SIGTERM mid-capture stops it
//! cleanly, with everything received on disk and the summary written, on
//! either receive path (`--rx`).

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmtt_format::capture::{CaptureEnd, CaptureReader};
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::{Packet, PacketHeader};
use hmtt_format::record::RecordWord;

fn packet(seq: u64) -> Vec<u8> {
    let h = PacketHeader {
        flags: 1,
        board: 0,
        port: 0,
        seq,
        t0: seq * 100,
        nwords: 0,
        geometry: Geometry::ddr3_default(),
        tick_ps: 1250,
    };
    let words: Vec<RecordWord> = (0..(1 + seq % 300))
        .map(|i| RecordWord(i as u32 & 0xFF_FFFF))
        .collect();
    h.build(&words)
}

/// The first number after `"key": ` in `json`.
fn json_number(json: &str, key: &str) -> u64 {
    let at = json
        .find(&format!("\"{key}\": "))
        .unwrap_or_else(|| panic!("{key} not in {json}"))
        + key.len()
        + 4;
    json[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap()
}

fn stop_mid_capture(signal: &str, options: &[&str]) {
    let tmp = std::env::temp_dir().join(format!(
        "hmtt-capture-cli-{}-{signal}{}",
        std::process::id(),
        options.join("")
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let mut child = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args([
            "capture",
            "-i",
            &format!("udp:127.0.0.1:{port}"),
            "--name",
            "c",
            "--quiet",
            "-o",
        ])
        .arg(&tmp)
        .args(options)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready once the port is taken; a capture that exits first (another
    // program took the probed port, say) says why.
    let t = Instant::now();
    while UdpSocket::bind(("127.0.0.1", port)).is_ok() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!("hmtt capture exited ({status}) before binding port {port}:\n{err}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "hmtt capture did not bind port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sending = Arc::new(AtomicBool::new(true));
    let sent = Arc::new(AtomicU64::new(0));
    let sender = {
        let (sending, sent) = (sending.clone(), sent.clone());
        std::thread::spawn(move || {
            let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut seq = 0;
            while sending.load(Ordering::Relaxed) {
                if tx.send_to(&packet(seq), ("127.0.0.1", port)).is_ok() {
                    seq += 1;
                    sent.store(seq, Ordering::Relaxed);
                }
                if seq % 20 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(700));
    let ok = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "hmtt capture did not stop after {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    sending.store(false, Ordering::Relaxed);
    sender.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "exit {status}: {stderr}");

    let summary = std::fs::read_to_string(tmp.join("c-summary.json")).unwrap();
    assert!(summary.contains("\"stop_reason\": \"signal\""), "{summary}");
    let received = json_number(&summary, "packets");
    assert!(received > 50, "only {received} packets before {signal}");
    assert!(received <= sent.load(Ordering::Relaxed));
    let file = std::fs::read(tmp.join("c-p00-s00000.hmttcap")).unwrap();
    let (_, mut reader) = CaptureReader::new(&file).unwrap();
    let mut n = 0;
    for rec in reader.by_ref() {
        // Everything the receiver counted is on disk, in the order sent.
        assert_eq!(rec.packet, &packet(n)[..], "record {n}");
        assert_eq!(Packet::new_checked(rec.packet).unwrap().seq(), n);
        n += 1;
    }
    assert_eq!(reader.end(), Some(CaptureEnd::Clean));
    assert_eq!(n, received);
    // A clean stop gives back the preallocation: merge must not take the
    // file for a killed capture's.
    let meta = std::fs::metadata(tmp.join("c-p00-s00000.hmttcap")).unwrap();
    assert!(
        !hmtt_format::capture::has_space_past_end(&meta),
        "{} bytes allocated for {} bytes",
        std::os::unix::fs::MetadataExt::blocks(&meta) * 512,
        meta.len()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn sigint_mid_capture_flushes_and_writes_the_summary() {
    stop_mid_capture("-INT", &[]);
}

#[test]
fn sigint_mid_capture_on_the_ring_path_flushes_and_writes_the_summary() {
    // SAFETY: socket(2) then close(2) of the descriptor just made.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        println!("SKIPPED: no AF_PACKET socket here (--rx ring needs CAP_NET_RAW)");
        return;
    }
    unsafe { libc::close(fd) };
    stop_mid_capture("-INT", &["--rx", "ring", "--rcvbuf", "8M"]);
}

#[test]
fn xdp_path_refusals_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("hmtt-xdp-refusal-{}", std::process::id()));
    let out_dir = dir.to_str().unwrap();
    for (args, says) in [
        (&["--xdp-mode", "fast"][..], "invalid value 'fast'"),
        (
            &["--rx", "xdp", "-i", "udp:192.0.2.77:5000"][..],
            "not an address of any interface",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hmtt"))
            .args(["capture", "-o", out_dir, "--quiet"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        // Without AF_XDP (or root) the second is refused for that instead.
        assert!(
            text.contains(says) || text.contains("AF_XDP"),
            "{args:?}: {text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_mid_capture_flushes_and_writes_the_summary() {
    stop_mid_capture("-TERM", &[]);
}

#[test]
fn help_shows_an_example() {
    let out = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(["capture", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("hmtt capture --udp-ports"), "{text}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args([
            "capture",
            "-i",
            "nonsense",
            "-o",
            "/tmp/hmtt-never",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("expected udp:HOST:PORT"), "{text}");
}
