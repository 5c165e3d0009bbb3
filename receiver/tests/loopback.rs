//! Captures over loopback UDP: several ports, stripes over several
//! directories, garbage on a port, a cut capture file.

mod common;

use std::net::UdpSocket;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::{board_stream, captured, for_port};
use hmtt_format::capture::{CaptureEnd, RECORD_FLAG_CUT};
use hmtt_receiver::read::{port_files, CaptureFile};
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};

fn config(n: u8, dirs: Vec<std::path::PathBuf>) -> CaptureConfig {
    let mut c = CaptureConfig::new(Input::loopback(n), dirs);
    c.progress = false;
    c.name = "t".into();
    c.duration = Some(Duration::from_secs(60)); // a safety net only
    c
}

#[test]
fn three_ports_striped_over_two_dirs_hold_exactly_what_was_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().join("d0"), tmp.path().join("d1")];
    let (stream, lost_words) = board_stream(4, 3, 3000, 360);
    let mut c = config(3, dirs.clone());
    c.stripe_bytes = 256 << 10; // many stripes
    c.batch_packets = 16;
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    assert!(
        handle.buffer_bytes()[0].unwrap() >= 1 << 20,
        "receive buffer {:?}",
        handle.buffer_bytes()
    );
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in &stream {
        tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
    }
    let s = handle.wait().unwrap();
    assert!(s.ok, "{s:?}");
    assert_eq!(s.stop_reason, "packet count reached");
    for port in 0..3u8 {
        let got = captured(&dirs, "t", port);
        let want = for_port(&stream, port);
        assert_eq!(got.len(), want.len(), "port {port}");
        assert!(got == want, "port {port}: packets differ");
        let ps = &s.ports[usize::from(port)];
        assert_eq!(ps.packets, want.len() as u64);
        assert_eq!(ps.written_packets, want.len() as u64);
        assert_eq!(ps.rejects + ps.kernel_drops + ps.unwritten_packets, 0);
        assert!(
            ps.files.len() > 2,
            "port {port} has {} stripes",
            ps.files.len()
        );
    }
    // Stripes alternate over both directories.
    for d in &dirs {
        assert!(std::fs::read_dir(d).unwrap().count() > 2, "{}", d.display());
    }
    assert_eq!(
        s.ports.iter().map(|p| p.lost_words).sum::<u64>(),
        lost_words
    );
    assert_eq!(s.boards.len(), 1);
    assert_eq!(
        (
            s.boards[0].board,
            s.boards[0].seq.received,
            s.boards[0].seq.lost
        ),
        (4, 3000, 0)
    );
    let words: u64 = stream.iter().map(|p| (p.bytes.len() as u64 - 32) / 4).sum();
    assert_eq!(s.ports.iter().map(|p| p.records).sum::<u64>(), words);
    // The summary file is the same JSON.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dirs[0].join("t-summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["ports"][1]["packets"], s.ports[1].packets);
}

#[test]
fn lost_packets_show_as_sequence_gaps_across_ports() {
    let tmp = tempfile::tempdir().unwrap();
    let (stream, _) = board_stream(1, 2, 400, 50);
    let mut c = config(2, vec![tmp.path().to_path_buf()]);
    let dropped: Vec<u64> = vec![5, 6, 101, 399];
    c.packets = Some(stream.len() as u64 - dropped.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in stream.iter().filter(|p| !dropped.contains(&p.seq)) {
        tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
    }
    let s = handle.wait().unwrap();
    // 399 is the last: a loss at the end is invisible without a later packet.
    assert_eq!(
        (s.boards[0].seq.first_seq, s.boards[0].seq.last_seq),
        (0, 398)
    );
    assert_eq!(s.boards[0].seq.lost, 3);
}

#[test]
fn garbage_datagrams_go_to_the_reject_file_and_capture_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().to_path_buf()];
    let (stream, _) = board_stream(0, 2, 200, 100);
    let mut c = config(2, dirs.clone());
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut bad_magic = stream[0].bytes.clone();
    bad_magic[0] = b'X';
    let mut bad_version = stream[2].bytes.clone();
    bad_version[4] = 9;
    let cut = stream[4].bytes[..stream[4].bytes.len() - 4].to_vec();
    let garbage: Vec<Vec<u8>> = vec![
        b"hello".to_vec(),
        bad_magic,
        vec![],
        bad_version,
        cut,
        (0..20_000u32).map(|i| (i * 7) as u8).collect(), // longer than any record
        vec![0xAB; 1000],
    ];
    for (i, p) in stream.iter().enumerate() {
        tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
        if i % 20 == 1 && i / 20 < garbage.len() {
            tx.send_to(&garbage[i / 20], addrs[1]).unwrap();
        }
    }
    let s = handle.wait().unwrap();
    assert!(s.ok, "{s:?}");
    assert_eq!(s.ports[1].rejects, garbage.len() as u64);
    assert_eq!(s.ports[0].rejects, 0);
    for port in 0..2 {
        assert!(
            captured(&dirs, "t", port) == for_port(&stream, port),
            "port {port}"
        );
    }
    let rej = CaptureFile::open(&tmp.path().join("t-p01-s00000.reject.hmttcap")).unwrap();
    let (h, r) = rej.reader().unwrap();
    assert_eq!(h.port, 1);
    let recs: Vec<_> = r.collect();
    assert_eq!(recs.len(), garbage.len());
    for (rec, g) in recs.iter().zip(&garbage) {
        if g.len() > hmtt_format::capture::MAX_RECORD_LEN {
            assert_eq!(rec.flags & RECORD_FLAG_CUT, RECORD_FLAG_CUT);
            assert_eq!(rec.packet, &g[..rec.packet.len()]);
        } else {
            assert_eq!(rec.flags, 0);
            assert_eq!(rec.packet, &g[..]);
        }
    }
}

#[test]
fn a_cut_capture_file_reads_up_to_its_last_whole_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().to_path_buf()];
    let (stream, _) = board_stream(0, 1, 50, 200);
    let mut c = config(1, dirs.clone());
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addr = handle.local_addrs()[0].unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in &stream {
        tx.send_to(&p.bytes, addr).unwrap();
    }
    handle.wait().unwrap();
    let path = port_files(&dirs, "t", 0).unwrap().remove(0);
    let full = std::fs::read(&path).unwrap();
    // Record offsets from the sizes sent.
    let mut offsets = vec![64usize];
    for p in &stream {
        offsets.push(offsets.last().unwrap() + 16 + p.bytes.len());
    }
    assert_eq!(*offsets.last().unwrap(), full.len());
    for (k, cut) in [
        (49, full.len() - 1),
        (10, offsets[10] + 3),
        (10, offsets[10] + 17),
        (0, 70),
        (31, offsets[31] + 16),
    ] {
        std::fs::write(&path, &full[..cut]).unwrap();
        let f = CaptureFile::open(&path).unwrap();
        let (pkts, end) = f.packets().unwrap();
        assert_eq!(pkts.len(), k, "cut at {cut}");
        for (p, want) in pkts.iter().zip(&stream) {
            assert_eq!(*p, &want.bytes[..]);
        }
        assert_eq!(
            end,
            CaptureEnd::Truncated {
                offset: offsets[k],
                leftover: cut - offsets[k]
            },
            "cut at {cut}"
        );
    }
}

#[test]
fn pcapng_output_opens_with_libpcap() {
    let tmp = tempfile::tempdir().unwrap();
    let (stream, _) = board_stream(2, 1, 30, 360);
    let mut c = config(1, vec![tmp.path().to_path_buf()]);
    c.pcapng = true;
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let addr = handle.local_addrs()[0].unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in &stream {
        tx.send_to(&p.bytes, addr).unwrap();
    }
    handle.wait().unwrap();
    // Read it back with libpcap and the receiver's own pcap-file input.
    let mut cap = pcap::Capture::from_file(tmp.path().join("t-p00.pcapng")).unwrap();
    let linktype = cap.get_datalink().0;
    let mut n = 0;
    while let Ok(p) = cap.next_packet() {
        match hmtt_receiver::frame::extract(linktype, p.data, Some(5000)) {
            hmtt_receiver::frame::Frame::Payload(b) => assert_eq!(b, &stream[n].bytes[..]),
            other => panic!("packet {n}: {other:?}"),
        }
        n += 1;
    }
    assert_eq!(n, stream.len());
    let out = tmp.path().join("again");
    let mut c = CaptureConfig::new(
        vec![Input {
            source: Source::PcapFile(tmp.path().join("t-p00.pcapng")),
            port: 0,
            udp_port: None,
        }],
        vec![out.clone()],
    );
    c.progress = false;
    c.name = "t".into();
    let s = Capture::start(c, Arc::new(AtomicBool::new(false)))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(s.stop_reason, "every input ended");
    assert!(captured(&[out], "t", 0) == for_port(&stream, 0));
}

#[test]
fn a_second_capture_into_the_same_directory_is_refused_before_touching_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = vec![tmp.path().join("d0")];
    let (stream, _) = board_stream(1, 2, 200, 360);
    let mut c = config(2, dirs.clone());
    c.packets = Some(stream.len() as u64);
    let handle = Capture::start(c.clone(), Arc::new(AtomicBool::new(false))).unwrap();
    let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in &stream {
        tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
    }
    let s = handle.wait().unwrap();
    assert!(s.ok, "{s:?}");
    let summary = c.summary_path();
    let first = std::fs::read(&summary).unwrap();
    assert!(!hmtt_format::atomic_file::temp_path_of(&summary)
        .unwrap()
        .exists());
    let listing = |d: &std::path::Path| {
        let mut names: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing(&dirs[0]);
    let err = match Capture::start(c.clone(), Arc::new(AtomicBool::new(false))) {
        Ok(_) => panic!("a second run into the same directory started"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(std::fs::read(&summary).unwrap(), first);
    assert_eq!(listing(&dirs[0]), before);
    // With only the summary gone, the first stripe files still refuse it.
    std::fs::remove_file(&summary).unwrap();
    assert!(Capture::start(c.clone(), Arc::new(AtomicBool::new(false))).is_err());
    assert!(!summary.exists());
}

#[test]
fn a_second_capture_of_the_same_name_into_the_same_directory_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let first = Capture::start(
        config(1, vec![dir.clone()]),
        Arc::new(AtomicBool::new(false)),
    )
    .expect("the first capture starts");
    let second = Capture::start(
        config(1, vec![dir.clone()]),
        Arc::new(AtomicBool::new(false)),
    );
    let message = match second {
        Ok(_) => panic!("a second capture named t into the same directory started"),
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains("another capture named \"t\" is writing into"),
        "{message}"
    );
    // Another name into the same directory is a different run.
    let mut other = config(1, vec![dir.clone()]);
    other.name = "u".into();
    let other = Capture::start(other, Arc::new(AtomicBool::new(false))).expect("another name");
    other.stop();
    let s = other.wait().unwrap();
    assert_eq!(s.name, "u");
    first.stop();
    let s = first.wait().unwrap();
    assert_eq!(s.name, "t");
    let json = std::fs::read_to_string(dir.join("t-summary.json")).unwrap();
    assert!(json.contains("\"name\": \"t\""));
}

#[test]
fn a_directory_whose_name_is_not_utf8_is_named_in_the_summary_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff"));
    let handle = Capture::start(
        config(1, vec![dir.clone()]),
        Arc::new(AtomicBool::new(false)),
    )
    .expect("the capture starts");
    let addr = handle.local_addrs()[0].unwrap();
    let (stream, _) = board_stream(0, 1, 20, 64);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for p in &stream {
        tx.send_to(&p.bytes, addr).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    handle.stop();
    let s = handle.wait().expect("the summary is written");
    let json = std::fs::read_to_string(dir.join("t-summary.json")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let path = &parsed["dirs"][0]["path"];
    assert!(
        path["bytes_hex"]
            .as_str()
            .unwrap()
            .ends_with("636166e92dff"),
        "{path}"
    );
    assert!(path["display"].as_str().unwrap().contains("caf"), "{path}");
    assert!(s.ports[0].packets > 0);
}
