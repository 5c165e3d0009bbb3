//! A full output disk: a 1 MiB tmpfs mounted by the test. Writing stops in
//! that directory, what was written stays readable, the summary says so.

mod common;

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::{board_stream, captured, for_port};
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};

struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Mounts a 1 MiB tmpfs, or says why it cannot.
fn small_tmpfs(at: &Path) -> Result<Mount, String> {
    std::fs::create_dir_all(at).unwrap();
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(at)
        .output()
        .map_err(|e| format!("cannot run mount: {e}"))?;
    if out.status.success() {
        Ok(Mount(at.to_path_buf()))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn config(dirs: Vec<PathBuf>, summary: PathBuf) -> CaptureConfig {
    let inputs = (0..2)
        .map(|p| Input {
            source: Source::Udp("127.0.0.1:0".into()),
            port: p,
            udp_port: None,
        })
        .collect();
    let mut c = CaptureConfig::new(inputs, dirs);
    c.progress = false;
    c.name = "t".into();
    c.summary = Some(summary);
    c.duration = Some(Duration::from_secs(60));
    c.batch_packets = 16;
    c
}

/// Each captured packet in order is one of those sent, in order.
fn is_subsequence(got: &[Vec<u8>], sent: &[Vec<u8>]) -> bool {
    let mut it = sent.iter();
    got.iter().all(|g| it.any(|s| s == g))
}

/// Sends the stream at a pace a loaded receiver keeps up with, then waits
/// (at most 60 s) until the capture's first directory has failed. Sends
/// after the failure may find the sockets closed.
fn send_until_the_disk_fails(
    handle: &hmtt_receiver::CaptureHandle,
    addrs: &[std::net::SocketAddr],
    stream: &[common::SimPacket],
) {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for (i, p) in stream.iter().enumerate() {
        if handle.failed_dirs()[0] {
            break;
        }
        let _ = tx.send_to(&p.bytes, addrs[usize::from(p.port)]);
        if i % 200 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let waited = std::time::Instant::now();
    while !handle.failed_dirs()[0] {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the 1 MiB disk never filled"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_full_disk_stops_writing_and_keeps_what_was_written_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    let _mount = match small_tmpfs(&mnt) {
        Ok(m) => m,
        Err(e) => {
            println!("SKIPPED: cannot mount a 1 MiB tmpfs to fill up ({e})");
            return;
        }
    };
    let (stream, _) = board_stream(0, 2, 3000, 360); // about 3 MB
    let c = config(vec![mnt.clone()], tmp.path().join("summary.json"));
    // No packet count: with one, a capture on a loaded machine could count
    // every packet received before its writer met the full disk, and stop
    // for that reason instead. The capture ends when its only directory
    // fails, or after the configuration's 60 s.
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    send_until_the_disk_fails(&handle, &addrs, &stream);
    let s = handle.wait().unwrap();
    assert!(!s.ok);
    assert_eq!(s.stop_reason, "every output directory failed");
    assert!(s.dirs[0].failed);
    assert!(
        s.errors.iter().any(|e| e.contains("output disk full")),
        "{:?}",
        s.errors
    );
    let on_disk: u64 = s.ports.iter().map(|p| p.written_packets).sum();
    assert!(on_disk > 100, "only {on_disk} packets written");
    assert!(s.ports.iter().map(|p| p.unwritten_packets).sum::<u64>() > 0);
    for port in 0..2u8 {
        // `captured` asserts every file ends cleanly after its last whole record.
        let got = captured(std::slice::from_ref(&mnt), "t", port);
        let want = for_port(&stream, port);
        assert_eq!(got.len() as u64, s.ports[usize::from(port)].written_packets);
        assert!(
            got[..] == want[..got.len()],
            "port {port}: not the first packets sent"
        );
    }
    let json = std::fs::read_to_string(tmp.path().join("summary.json")).unwrap();
    assert!(json.contains("output disk full"));
}

#[test]
fn a_full_disk_among_two_moves_later_stripes_to_the_other() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    let _mount = match small_tmpfs(&mnt) {
        Ok(m) => m,
        Err(e) => {
            println!("SKIPPED: cannot mount a 1 MiB tmpfs to fill up ({e})");
            return;
        }
    };
    let big = tmp.path().join("big");
    let (stream, _) = board_stream(0, 2, 6000, 360); // about 4.4 MB, half of it striped to the 1 MiB disk
    let mut c = config(
        vec![mnt.clone(), big.clone()],
        tmp.path().join("summary.json"),
    );
    c.stripe_bytes = 200 << 10;
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    // The last two fifths are sent only once the writer has seen the small disk
    // fill: batches already queued to a directory when it fails are
    // counted unwritten, and only stripes begun after the failure is known
    // move. A loaded machine must not turn that into a different test.
    let tail = stream.len() * 3 / 5;
    for (i, p) in stream.iter().enumerate() {
        if i == tail {
            let waited = std::time::Instant::now();
            while !handle.failed_dirs()[0] {
                assert!(
                    waited.elapsed() < Duration::from_secs(60),
                    "the 1 MiB disk never filled"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
        if i % 200 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let s = handle.wait().unwrap();
    assert_eq!(s.stop_reason, "packet count reached");
    assert!(!s.ok, "a directory failed, so the run is not ok");
    assert!(s.dirs[0].failed && !s.dirs[1].failed);
    for port in 0..2u8 {
        let ps = &s.ports[usize::from(port)];
        let got = captured(&[mnt.clone(), big.clone()], "t", port);
        let want = for_port(&stream, port);
        assert_eq!(ps.written_packets + ps.unwritten_packets, want.len() as u64);
        assert_eq!(got.len() as u64, ps.written_packets);
        assert!(is_subsequence(&got, &want), "port {port}: out of order");
        // The tail of the capture is complete and on the healthy disk.
        assert_eq!(got.last(), want.last());
    }
}

#[test]
fn a_summary_on_the_full_disk_is_still_written_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    let _mount = match small_tmpfs(&mnt) {
        Ok(m) => m,
        Err(e) => {
            println!("SKIPPED: cannot mount a 1 MiB tmpfs to fill up ({e})");
            return;
        }
    };
    let (stream, _) = board_stream(0, 2, 3000, 360); // about 3 MB
    let summary = mnt.join("summary.json");
    // No packet count, as in the first test: the run must end because the
    // disk failed, however the machine is loaded.
    let c = config(vec![mnt.clone()], summary.clone());
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    // The disk fills up (with another program's file) once the capture
    // has started: nothing is left for the summary but its reserved room.
    fill_up(&mnt.join("filler"));
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    send_until_the_disk_fails(&handle, &addrs, &stream);
    let s = handle.wait().unwrap();
    assert!(!s.ok);
    let json = std::fs::read_to_string(&summary).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("a whole JSON summary");
    assert_eq!(parsed["stop_reason"], "every output directory failed");
    assert!(!hmtt_format::atomic_file::temp_path_of(&summary)
        .unwrap()
        .exists());
}

/// Writes `path` until the disk is full.
fn fill_up(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0xA5u8; 4096];
    while f.write_all(&block).and_then(|_| f.flush()).is_ok() {}
    assert!(f.write_all(&block).is_err(), "the disk did not fill up");
}
