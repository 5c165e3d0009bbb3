//! Twelve ports from four simulated boards (3 ports each) into one
//! capture, over loopback at a modest rate, on each receive path: the
//! merge of the capture must be the merge of the boards' own files.
//! `bench/receiver.sh` (HMTT_BENCH_BOARDS) runs the same at full rate.
//!
//! The ring needs CAP_NET_RAW (root): without it its test says SKIPPED.

mod boards;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use hmtt_receiver::{Capture, CaptureConfig, Input, RxPath};
use hmtt_sim::send::{PacketSender, SenderOptions};

const BOARDS: u8 = 4;
const PORTS: u8 = 3;

fn four_boards_merge_as_their_own_files(rx: RxPath) {
    let tmp = tempfile::tempdir().unwrap();
    // About 450 simulated packets, repeated to 1200.
    let boards = boards::simulated(BOARDS, PORTS, 8 << 20, 1200);
    assert!(boards.packet_count() >= 1200);
    let own = tmp.path().join("own");
    boards.write_own_files(&own);

    let capture = tmp.path().join("capture");
    let mut c = CaptureConfig::new(Input::loopback(BOARDS * PORTS), vec![capture.clone()]);
    c.rx = rx;
    c.progress = false;
    c.preallocate = false;
    c.rcvbuf_bytes = 8 << 20;
    c.name = "t".into();
    c.packets = Some(boards.packet_count());
    c.duration = Some(Duration::from_secs(60)); // a safety net only
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let dests: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    assert_eq!(dests.len(), boards.ports_in_all());
    let mut tx = PacketSender::new(
        &dests,
        SenderOptions {
            rate_bps: Some(0.2e9),
            ..Default::default()
        },
    )
    .unwrap();
    for (dest, bytes) in boards.send_order() {
        tx.send(dest, bytes).unwrap();
    }
    tx.flush().unwrap();
    let s = handle.wait().unwrap();
    assert!(s.ok, "{s:?}");
    assert_eq!(s.stop_reason, "packet count reached");
    assert_eq!(s.boards.len(), usize::from(BOARDS));
    for (b, packets) in s.boards.iter().zip(&boards.packets) {
        assert_eq!(
            (b.seq.received, b.seq.lost),
            (packets.len() as u64, 0),
            "board {}",
            b.board
        );
    }

    let want = tmp.path().join("own.hmtttrace");
    let got = tmp.path().join("capture.hmtttrace");
    let want_report = boards.merge(&[own], &want);
    let got_report = boards.merge(&[capture], &got);
    assert_eq!(got_report.packets(), boards.packet_count());
    assert_eq!(got_report.records, want_report.records);
    assert!(
        boards::same_trace(&got, &want),
        "the capture's merge differs from the boards' own files' merge"
    );
    // The comparison sees a difference in the records.
    let mut bytes = std::fs::read(&got).unwrap();
    bytes[200] ^= 1;
    std::fs::write(&got, bytes).unwrap();
    assert!(!boards::same_trace(&got, &want));
}

#[test]
fn four_boards_over_twelve_sockets_merge_as_their_own_files() {
    four_boards_merge_as_their_own_files(RxPath::Socket);
}

#[test]
fn four_boards_over_twelve_rings_merge_as_their_own_files() {
    // SAFETY: socket(2) then close(2) of the descriptor just made.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        println!("SKIPPED: no AF_PACKET socket; the ring needs CAP_NET_RAW");
        return;
    }
    unsafe { libc::close(fd) };
    four_boards_merge_as_their_own_files(RxPath::Ring);
}
