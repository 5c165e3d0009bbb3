//! The pcap path across network namespaces: a "board" namespace sends
//! Ethernet frames (UDP/IPv4 on port 0, raw EtherType 0x88B5 on port 1) over
//! two veth pairs, one per port, to a "host" namespace where the receiver
//! captures each interface with libpcap.

mod common;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::{board_stream, captured, for_port};
use hmtt_receiver::frame::{build_raw_frame, build_udp_frame, UdpEndpoints};
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("the `ip` tool (iproute2) is needed by this test: {e}"));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

struct Netns(String);

impl Netns {
    fn add(name: String) -> Result<Netns, String> {
        ip(&["netns", "add", &name])?;
        Ok(Netns(name))
    }
    /// Moves the calling thread into this namespace.
    fn enter(&self) {
        let f = File::open(format!("/run/netns/{}", self.0)).unwrap();
        // SAFETY: setns on an open namespace file; affects this thread only.
        let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(
            r,
            0,
            "setns {}: {}",
            self.0,
            std::io::Error::last_os_error()
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

#[test]
fn two_ports_over_veth_pairs_captured_with_pcap() {
    let id = std::process::id();
    let host = match Netns::add(format!("hmtt-rx-{id}")) {
        Ok(n) => n,
        Err(e) if e.contains("Operation not permitted") || e.contains("Permission denied") => {
            println!("SKIPPED: cannot create network namespaces here ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let board = Netns::add(format!("hmtt-tx-{id}")).unwrap();
    let host_if: Vec<String> = (0..2).map(|p| format!("hr{id}p{p}")).collect();
    let board_if: Vec<String> = (0..2).map(|p| format!("ht{id}p{p}")).collect();
    for p in 0..2 {
        ip(&[
            "link",
            "add",
            &host_if[p],
            "netns",
            &host.0,
            "type",
            "veth",
            "peer",
            "name",
            &board_if[p],
            "netns",
            &board.0,
        ])
        .unwrap();
        ip(&[
            "-n",
            &host.0,
            "link",
            "set",
            &host_if[p],
            "mtu",
            "9000",
            "up",
        ])
        .unwrap();
        ip(&[
            "-n",
            &board.0,
            "link",
            "set",
            &board_if[p],
            "mtu",
            "9000",
            "up",
        ])
        .unwrap();
    }

    let (stream, lost_words) = board_stream(3, 2, 600, 2235);
    let garbage = b"HMTX not a packet, just bytes on the board's EtherType".to_vec();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().to_path_buf()];
    let inputs = vec![
        Input {
            source: Source::PcapLive(host_if[0].clone()),
            port: 0,
            udp_port: Some(5000),
        },
        Input {
            source: Source::PcapLive(host_if[1].clone()),
            port: 1,
            udp_port: None,
        },
    ];
    let mut c = CaptureConfig::new(inputs, dirs.clone());
    c.progress = false;
    c.name = "n".into();
    c.packets = Some(stream.len() as u64);
    c.duration = Some(Duration::from_secs(60));
    c.rcvbuf_bytes = 32 << 20;

    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = std::thread::spawn(move || {
        host.enter();
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        ready_tx.send(()).unwrap();
        let s = handle.wait().unwrap();
        (s, host)
    });
    ready_rx.recv().unwrap();
    let sent = stream.clone();
    let g = garbage.clone();
    let sender = std::thread::spawn(move || {
        board.enter();
        let mut caps: Vec<_> = board_if
            .iter()
            .map(|i| {
                pcap::Capture::from_device(i.as_str())
                    .unwrap()
                    .open()
                    .unwrap()
            })
            .collect();
        let mut frame = Vec::new();
        for (i, p) in sent.iter().enumerate() {
            frame.clear();
            if p.port == 0 {
                build_udp_frame(&UdpEndpoints::board_defaults(3, 0), &p.bytes, &mut frame);
            } else {
                frame = build_raw_frame([2, 0x48, 0x4d, 0x54, 3, 1], [0xff; 6], &p.bytes);
            }
            caps[usize::from(p.port)].sendpacket(&frame[..]).unwrap();
            if i == 100 {
                caps[1]
                    .sendpacket(build_raw_frame([2; 6], [0xff; 6], &g))
                    .unwrap();
                // UDP to another port: filtered out, neither captured nor rejected.
                let mut other = Vec::new();
                let mut ep = UdpEndpoints::board_defaults(3, 0);
                ep.dst_port = 6000;
                build_udp_frame(&ep, &p.bytes, &mut other);
                caps[0].sendpacket(&other[..]).unwrap();
            }
            if i % 50 == 49 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        board
    });
    let board = sender.join().unwrap();
    let (s, host) = receiver.join().unwrap();
    drop((board, host));
    assert!(s.ok, "{s:?}");
    assert_eq!(s.stop_reason, "packet count reached");
    for port in 0..2u8 {
        let got = captured(&dirs, "n", port);
        let want = for_port(&stream, port);
        assert_eq!(got.len(), want.len(), "port {port}");
        assert!(got == want, "port {port}: packets differ");
        let ps = &s.ports[usize::from(port)];
        assert_eq!(ps.kind, "PcapLive");
        assert_eq!(ps.kernel_drops, 0);
    }
    assert_eq!(s.ports[0].rejects, 0);
    assert_eq!(s.ports[1].rejects, 1);
    assert_eq!(
        s.ports.iter().map(|p| p.lost_words).sum::<u64>(),
        lost_words
    );
    assert_eq!(
        (
            s.boards[0].board,
            s.boards[0].seq.received,
            s.boards[0].seq.lost
        ),
        (3, 600, 0)
    );
    let rej =
        hmtt_receiver::read::CaptureFile::open(&tmp.path().join("n-p01-s00000.reject.hmttcap"))
            .unwrap();
    let (h, r) = rej.reader().unwrap();
    assert_eq!(h.source_kind, hmtt_format::capture::SourceKind::PcapLive);
    let recs: Vec<_> = r.collect();
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].packet, &garbage[..]);
}
