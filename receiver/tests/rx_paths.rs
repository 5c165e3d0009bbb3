//! The receive paths of a UDP input, `RxPath::Socket` (recvmmsg),
//! `RxPath::Ring` (AF_PACKET TPACKET_V3) and `RxPath::Xdp` (XDP and AF_XDP),
//! fed the same stream: a board's packets over three ports with a gap in
//! their sequence numbers and garbage datagrams between them. Each must
//! leave the same per-port files (packets and rejects, striped over two
//! directories) and the same accounting as the socket. Over loopback, then
//! over a veth pair between two network namespaces; and under overflow,
//! where each path must count every datagram it lost.
//!
//! The ring needs CAP_NET_RAW (root), the xdp path root and a kernel with
//! AF_XDP: without them these tests say SKIPPED.

mod common;

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use common::{board_stream, captured, for_port, SimPacket};
use hmtt_receiver::read::{port_files, CaptureFile};
use hmtt_receiver::{Capture, CaptureConfig, Input, RxPath, Source, Summary};

const PORTS: u8 = 3;
/// Sequence numbers never sent: a gap the sequence accounting must see.
const GAP: [u64; 3] = [40, 41, 700];

fn ring_allowed() -> bool {
    // SAFETY: socket(2) then close(2) of the descriptor just made.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        println!(
            "SKIPPED: no AF_PACKET socket ({}); the ring needs CAP_NET_RAW",
            std::io::Error::last_os_error()
        );
        return false;
    }
    unsafe { libc::close(fd) };
    true
}

/// Whether this kernel has AF_XDP sockets (and we may make one); prints
/// SKIPPED and why when not.
fn xdp_allowed() -> bool {
    // SAFETY: socket(2) then close(2) of the descriptor just made.
    let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW, 0) };
    if fd < 0 {
        println!(
            "SKIPPED: no AF_XDP socket ({}); the xdp path needs a kernel with \
             CONFIG_XDP_SOCKETS, as root",
            std::io::Error::last_os_error()
        );
        return false;
    }
    unsafe { libc::close(fd) };
    true
}

/// Runs `f` on a thread in a new network namespace with `lo` up (an XDP
/// program on the host's `lo` would meet the other tests' programs).
fn in_netns<T: Send + 'static>(tag: &str, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let ns = match Netns::add(format!("hmtt-{tag}-{}", std::process::id())) {
        Ok(n) => n,
        Err(e) => {
            println!("SKIPPED: cannot create network namespaces here ({e})");
            return None;
        }
    };
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]).unwrap();
    let ns = Arc::new(ns);
    let n = ns.clone();
    let r = std::thread::spawn(move || {
        n.enter();
        f()
    })
    .join()
    .unwrap();
    Some(r)
}

/// What is sent: the board's packets (less the gap) with garbage on ports
/// 1 and 2, in a fixed order. `big`: include a datagram longer than any
/// record (cut on receipt), which must not cross a link of smaller MTU.
fn datagrams(big: bool) -> (Vec<(u8, Vec<u8>)>, Vec<SimPacket>) {
    let (stream, _) = board_stream(2, PORTS, 900, 400);
    let mut bad_magic = stream[0].bytes.clone();
    bad_magic[0] = b'X';
    let mut bad_version = stream[3].bytes.clone();
    bad_version[4] = 9;
    let mut garbage: Vec<Vec<u8>> = vec![
        b"hello".to_vec(),
        bad_magic,
        vec![],
        bad_version,
        stream[6].bytes[..stream[6].bytes.len() - 4].to_vec(),
        vec![0xAB; 1000],
    ];
    if big {
        garbage.push((0..20_000u32).map(|i| (i * 7) as u8).collect());
    }
    let kept: Vec<SimPacket> = stream
        .into_iter()
        .filter(|p| !GAP.contains(&p.seq))
        .collect();
    let mut out = Vec::new();
    for (i, p) in kept.iter().enumerate() {
        out.push((p.port, p.bytes.clone()));
        if i % 50 == 7 && i / 50 < garbage.len() {
            out.push((1 + (i / 50 % 2) as u8, garbage[i / 50].clone()));
        }
    }
    (out, kept)
}

fn config(
    rx: RxPath,
    dirs: Vec<PathBuf>,
    inputs: Vec<Input>,
    packets: Option<u64>,
) -> CaptureConfig {
    let mut c = CaptureConfig::new(inputs, dirs);
    c.progress = false;
    c.name = "t".into();
    c.rx = rx;
    c.rcvbuf_bytes = 8 << 20;
    c.stripe_bytes = 48 << 10; // several stripes per port, over both dirs
    c.batch_packets = 16;
    c.packets = packets;
    c.duration = Some(Duration::from_secs(30)); // a safety net only
    c
}

/// Sends `out` to the ports' addresses, pausing now and then so that no
/// path overflows.
fn send(tx: &UdpSocket, addrs: &[SocketAddr], out: &[(u8, Vec<u8>)]) {
    for (i, (port, bytes)) in out.iter().enumerate() {
        tx.send_to(bytes, addrs[usize::from(*port)]).unwrap();
        if i % 64 == 63 {
            std::thread::sleep(Duration::from_micros(300));
        }
    }
}

/// The accounting of a run, without what differs by nature (times,
/// addresses, buffer sizes, the directories' paths, the stripe files).
fn accounting(s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["start_ns", "duration_s", "dirs", "xdp_modes"] {
        o.remove(k);
    }
    for p in o["ports"].as_array_mut().unwrap() {
        let p = p.as_object_mut().unwrap();
        p.remove("source");
        p.remove("buffer_bytes");
        p.remove("files");
    }
    v
}

/// Each port's reject records: (flags, bytes).
fn rejects(dirs: &[PathBuf], port: u8) -> Vec<(u32, Vec<u8>)> {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for d in dirs {
        for e in std::fs::read_dir(d).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(&format!("t-p{port:02}-")) && name.contains(".reject.") {
                files.push((name, path));
            }
        }
    }
    files.sort(); // by stripe
    let mut v = Vec::new();
    for (_, path) in files {
        let f = CaptureFile::open(&path).unwrap();
        let (_, r) = f.reader().unwrap();
        v.extend(r.map(|r| (r.flags, r.packet.to_vec())));
    }
    v
}

struct Run {
    summary: Summary,
    packets: Vec<Vec<Vec<u8>>>,
    rejects: Vec<Vec<(u32, Vec<u8>)>>,
    stripes: Vec<usize>,
}

fn collect(summary: Summary, dirs: &[PathBuf]) -> Run {
    Run {
        packets: (0..PORTS).map(|p| captured(dirs, "t", p)).collect(),
        rejects: (0..PORTS).map(|p| rejects(dirs, p)).collect(),
        stripes: (0..PORTS)
            .map(|p| port_files(dirs, "t", p).unwrap().len())
            .collect(),
        summary,
    }
}

/// The long datagram of [`datagrams`] is cut to a record's length and
/// flagged, once.
fn assert_long_datagram_cut(run: &Run) {
    let cut: Vec<_> = run
        .rejects
        .iter()
        .flatten()
        .filter(|r| r.1.len() == 9018)
        .collect();
    assert_eq!(cut.len(), 1);
    assert_ne!(cut[0].0 & hmtt_format::capture::RECORD_FLAG_CUT, 0);
}

/// The two runs hold the same files and accounting, and what was sent.
fn check_same(socket: &Run, ring: &Run, kept: &[SimPacket], garbage: u64) {
    for s in [&socket.summary, &ring.summary] {
        assert!(s.ok, "{s:?}");
        assert_eq!(s.stop_reason, "packet count reached");
        assert_eq!(s.boards.len(), 1);
        assert_eq!(
            (s.boards[0].seq.received, s.boards[0].seq.lost),
            (kept.len() as u64, GAP.len() as u64),
            "the gap's packets are lost"
        );
        assert_eq!(s.ports.iter().map(|p| p.rejects).sum::<u64>(), garbage);
        assert_eq!(s.ports.iter().map(|p| p.kernel_drops).sum::<u64>(), 0);
    }
    for port in 0..PORTS {
        let p = usize::from(port);
        assert!(
            socket.packets[p] == for_port(kept, port),
            "socket path, port {port}: packets differ from those sent"
        );
        assert!(
            ring.packets[p] == socket.packets[p],
            "port {port}: the ring's packets differ from the socket's"
        );
        assert_eq!(ring.rejects[p], socket.rejects[p], "port {port}: rejects");
        // Where a stripe ends depends on how packets were batched, which
        // depends on timing: both paths must stripe, not at the same packet.
        for (rx, run) in [("socket", socket), ("ring", ring)] {
            assert!(
                run.stripes[p] > 2,
                "{rx}, port {port}: {} stripes",
                run.stripes[p]
            );
        }
    }
    assert_eq!(accounting(&ring.summary), accounting(&socket.summary));
}

fn tmp_dirs(tmp: &Path, rx: RxPath) -> Vec<PathBuf> {
    (0..2).map(|d| tmp.join(format!("{rx:?}{d}"))).collect()
}

#[test]
fn loopback_ring_and_socket_give_the_same_files_and_accounting() {
    if !ring_allowed() {
        return;
    }
    let (out, kept) = datagrams(true);
    let garbage = (out.len() - kept.len()) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut runs = Vec::new();
    for rx in [RxPath::Socket, RxPath::Ring] {
        let dirs = tmp_dirs(tmp.path(), rx);
        let c = config(
            rx,
            dirs.clone(),
            Input::loopback(PORTS),
            Some(kept.len() as u64),
        );
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
        send(&tx, &addrs, &out);
        runs.push(collect(handle.wait().unwrap(), &dirs));
    }
    check_same(&runs[0], &runs[1], &kept, garbage);
    assert_long_datagram_cut(&runs[1]);
}

/// The xdp path on `lo` (generic XDP, multi-buffer for the long
/// datagram), in a namespace of its own, against the socket path.
#[test]
fn loopback_xdp_and_socket_give_the_same_files_and_accounting() {
    if !xdp_allowed() {
        return;
    }
    let (out, kept) = datagrams(true);
    let garbage = (out.len() - kept.len()) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().to_path_buf();
    let Some(runs) = in_netns("rxl", move || {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut runs = Vec::new();
        for rx in [RxPath::Socket, RxPath::Xdp] {
            let dirs = tmp_dirs(&base, rx);
            let c = config(
                rx,
                dirs.clone(),
                Input::loopback(PORTS),
                Some(kept.len() as u64),
            );
            let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
            let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
            send(&tx, &addrs, &out);
            runs.push(collect(handle.wait().unwrap(), &dirs));
        }
        (runs, kept)
    }) else {
        return;
    };
    let (runs, kept) = runs;
    check_same(&runs[0], &runs[1], &kept, garbage);
    assert_eq!(runs[1].summary.xdp_modes, vec!["lo: generic".to_string()]);
    assert_long_datagram_cut(&runs[1]);
}

/// A datagram to the captured UDP port at another address of the
/// interface is not the capture's: it reaches the socket bound there.
#[test]
fn xdp_leaves_the_port_at_another_address_to_the_stack() {
    if !xdp_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dirs = tmp_dirs(tmp.path(), RxPath::Xdp);
    let Some((got, summary)) = in_netns("rxa", move || {
        let stop = Arc::new(AtomicBool::new(false));
        let c = config(RxPath::Xdp, dirs, Input::loopback(1), None);
        let handle = Capture::start(c, stop.clone()).unwrap();
        let port = handle.local_addrs()[0].unwrap().port();
        let other = UdpSocket::bind(("127.0.0.2", port)).unwrap();
        other
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut got = 0;
        let mut buf = [0u8; 64];
        for _ in 0..5 {
            tx.send_to(b"not the board's", ("127.0.0.2", port)).unwrap();
            if other.recv(&mut buf).is_ok() {
                got += 1;
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (got, handle.wait().unwrap())
    }) else {
        return;
    };
    assert_eq!(got, 5);
    let p = &summary.ports[0];
    assert_eq!((p.ignored_frames, p.rejects, p.kernel_drops), (0, 0, 0));
}

/// Drops every capability of the calling thread.
fn drop_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    let header = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let none = [0u32; 6]; // effective, permitted, inheritable; twice
                          // SAFETY: capset(2) of the calling thread with a v3 header and its
                          // two data words of each set.
    let r = unsafe { libc::syscall(libc::SYS_capset, &header, none.as_ptr()) };
    assert_eq!(r, 0, "capset: {}", std::io::Error::last_os_error());
}

/// The xdp path refuses, clearly and before capturing, what it cannot do;
/// these refusals need neither privilege nor AF_XDP, so the thread that
/// asks has dropped every capability.
#[test]
fn xdp_refuses_an_address_on_no_interface_and_the_any_address() {
    std::thread::spawn(refuse_addresses_unprivileged)
        .join()
        .unwrap();
}

fn refuse_addresses_unprivileged() {
    drop_capabilities();
    let tmp = tempfile::tempdir().unwrap();
    for (addr, says) in [
        ("192.0.2.77:5000", "not an address of any interface"),
        ("0.0.0.0:5000", "not 0.0.0.0"),
        ("[::1]:5000", "IPv4 addresses only"),
    ] {
        let inputs = vec![Input {
            source: Source::Udp(addr.into()),
            port: 0,
            udp_port: None,
        }];
        let c = config(RxPath::Xdp, tmp_dirs(tmp.path(), RxPath::Xdp), inputs, None);
        let e = Capture::start(c, Arc::new(AtomicBool::new(false)))
            .err()
            .expect("refused");
        assert!(e.to_string().contains(says), "{addr}: {e}");
    }
}

/// An interface with more receive queues than the sockets map holds per
/// port is refused, not captured with queues that nobody reads.
#[test]
fn xdp_refuses_an_interface_with_more_queues_than_it_serves() {
    if !xdp_allowed() {
        return;
    }
    let id = std::process::id();
    let ns = match Netns::add(format!("hmtt-rq-{id}")) {
        Ok(n) => Arc::new(n),
        Err(e) => {
            println!("SKIPPED: cannot create network namespaces here ({e})");
            return;
        }
    };
    let (a, b) = (format!("rqa{id}"), format!("rqb{id}"));
    ip(&[
        "-n",
        &ns.0,
        "link",
        "add",
        &a,
        "numrxqueues",
        "70",
        "type",
        "veth",
        "peer",
        "name",
        &b,
    ])
    .unwrap();
    ip(&["-n", &ns.0, "addr", "add", "10.78.0.1/24", "dev", &a]).unwrap();
    ip(&["-n", &ns.0, "link", "set", &a, "up"]).unwrap();
    ip(&["-n", &ns.0, "link", "set", &b, "up"]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = tmp_dirs(tmp.path(), RxPath::Xdp);
    let n = ns.clone();
    let e = std::thread::spawn(move || {
        n.enter();
        let inputs = vec![Input {
            source: Source::Udp("10.78.0.1:5000".into()),
            port: 0,
            udp_port: None,
        }];
        let c = config(RxPath::Xdp, dirs, inputs, None);
        Capture::start(c, Arc::new(AtomicBool::new(false)))
            .err()
            .expect("refused")
            .to_string()
    })
    .join()
    .unwrap();
    assert!(e.contains("70 receive queues"), "{e}");
}

/// Without privilege (a thread that dropped every capability) the xdp
/// path is refused with an error that says so, not a panic.
#[test]
fn xdp_without_privilege_is_refused_clearly() {
    if !xdp_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dirs = tmp_dirs(tmp.path(), RxPath::Xdp);
    let e = in_netns("rxp", move || {
        drop_capabilities();
        let c = config(RxPath::Xdp, dirs, Input::loopback(1), None);
        Capture::start(c, Arc::new(AtomicBool::new(false)))
            .err()
            .expect("refused")
            .to_string()
    });
    let Some(e) = e else {
        return;
    };
    assert!(e.contains("run as root"), "{e}");
}

/// Inputs on one UDP port at three loopback addresses: the rings' shared
/// tap tells rings apart by port alone, so it must not be used here, and
/// each ring must still take exactly its own address's datagrams.
#[test]
fn rings_on_one_udp_port_at_several_addresses_each_take_their_own() {
    if !ring_allowed() {
        return;
    }
    let (out, kept) = datagrams(false);
    let garbage = (out.len() - kept.len()) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut runs = Vec::new();
    for rx in [RxPath::Socket, RxPath::Ring] {
        let dirs = tmp_dirs(tmp.path(), rx);
        let inputs = (0..PORTS)
            .map(|port| Input {
                source: Source::Udp(format!("127.0.0.{}:{udp_port}", port + 1)),
                port,
                udp_port: None,
            })
            .collect();
        let c = config(rx, dirs.clone(), inputs, Some(kept.len() as u64));
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
        send(&tx, &addrs, &out);
        runs.push(collect(handle.wait().unwrap(), &dirs));
    }
    check_same(&runs[0], &runs[1], &kept, garbage);
}

/// Sends bursts of large datagrams to a small ring or socket buffer behind
/// a receiver held back by a small pool of buffers, then a slow tail, then
/// stops. Every valid packet sent was either received or counted dropped
/// by the kernel, and the sequence gaps say as many.
#[test]
fn overflow_drops_are_counted_by_both_paths() {
    if !ring_allowed() {
        return;
    }
    overflow(&[RxPath::Socket, RxPath::Ring]);
}

/// As above, the xdp path, on `lo` of a namespace of its own.
#[test]
fn overflow_drops_are_counted_by_the_xdp_path() {
    if !xdp_allowed() {
        return;
    }
    in_netns("rxo", || overflow(&[RxPath::Xdp]));
}

fn overflow(rxs: &[RxPath]) {
    let (stream, _) = board_stream(5, PORTS, 4000, 2235); // up to 8972 bytes
    let tmp = tempfile::tempdir().unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let _ = socket2::SockRef::from(&tx).set_send_buffer_size(64 << 20);
    for &rx in rxs {
        let dirs = vec![tmp.path().join(format!("{rx:?}"))];
        let mut c = config(rx, dirs, Input::loopback(PORTS), None);
        c.rcvbuf_bytes = 256 << 10; // the ring takes its minimum, 4 MiB
        c.buffers_per_input = 2;
        c.batch_packets = 4;
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        let addrs: Vec<_> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
        // The head and tail arrive slowly, so that the first and last
        // sequence numbers are seen (a loss is a gap between two packets
        // received), and the socket path learns the drop count from the
        // datagrams after the burst.
        let slowly = |packets: &[common::SimPacket]| {
            for p in packets {
                std::thread::sleep(Duration::from_millis(3));
                tx.send_to(&p.bytes, addrs[usize::from(p.port)]).unwrap();
            }
        };
        let (head, rest) = stream.split_at(30);
        let (burst, tail) = rest.split_at(rest.len() - 30);
        // Until the count of packets received holds still for 300 ms (a
        // loaded host may take longer than that to hand the ring's last
        // block on), at most 10 s.
        let settle = || {
            let mut seen = handle.packets();
            let t = std::time::Instant::now();
            loop {
                std::thread::sleep(Duration::from_millis(300));
                let now = handle.packets();
                if now == seen || t.elapsed() > Duration::from_secs(10) {
                    break;
                }
                seen = now;
            }
        };
        slowly(head);
        for p in burst {
            let _ = tx.send_to(&p.bytes, addrs[usize::from(p.port)]);
        }
        // The tail goes to a drained buffer, so that on a loaded host too
        // its last packet is received rather than dropped behind the burst.
        settle();
        slowly(tail);
        settle();
        handle.stop();
        let s = handle.wait().unwrap();
        let got: u64 = s.ports.iter().map(|p| p.packets).sum();
        let drops: u64 = s.ports.iter().map(|p| p.kernel_drops).sum();
        assert!(drops > 0, "{rx:?}: no overflow happened ({got} received)");
        assert_eq!(got + drops, stream.len() as u64, "{rx:?}: {s:?}");
        assert_eq!(s.ports.iter().map(|p| p.written_packets).sum::<u64>(), got);
        let seq = &s.boards[0].seq;
        assert_eq!((seq.first_seq, seq.last_seq), (0, stream.len() as u64 - 1));
        assert_eq!(seq.lost, drops, "{rx:?}: sequence gaps");
        println!("{rx:?}: {got} received, {drops} dropped and counted");
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("the `ip` tool (iproute2) is needed: {e}"))?;
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

/// A veth pair (MTU 9000) between a "host" namespace, where the receiver
/// runs, at 10.77.0.1, and a "board" namespace at 10.77.0.2; None (and
/// SKIPPED printed) where namespaces cannot be made.
fn veth_pair(tag: &str) -> Option<(Arc<Netns>, Arc<Netns>)> {
    let id = std::process::id();
    let host = match Netns::add(format!("hmtt-{tag}h-{id}")) {
        Ok(n) => n,
        Err(e) => {
            println!("SKIPPED: cannot create network namespaces here ({e})");
            return None;
        }
    };
    let board = Netns::add(format!("hmtt-{tag}b-{id}")).unwrap();
    let (hif, bif) = (format!("{tag}h{id}"), format!("{tag}b{id}"));
    ip(&[
        "link", "add", &hif, "netns", &host.0, "type", "veth", "peer", "name", &bif, "netns",
        &board.0,
    ])
    .unwrap();
    for (ns, dev, addr) in [
        (&host, &hif, "10.77.0.1/24"),
        (&board, &bif, "10.77.0.2/24"),
    ] {
        ip(&["-n", &ns.0, "addr", "add", addr, "dev", dev]).unwrap();
        ip(&["-n", &ns.0, "link", "set", dev, "mtu", "9000", "up"]).unwrap();
    }
    Some((Arc::new(host), Arc::new(board)))
}

/// One capture per receive path in `rxs`, in the host namespace, of `out`
/// sent from the board namespace over the veth pair.
fn over_veth(
    pair: &(Arc<Netns>, Arc<Netns>),
    tmp: &Path,
    rxs: &[RxPath],
    out: &[(u8, Vec<u8>)],
    packets: u64,
) -> Vec<Run> {
    let (host, board) = pair;
    let mut runs = Vec::new();
    for &rx in rxs {
        let dirs = tmp_dirs(tmp, rx);
        let inputs = (0..PORTS)
            .map(|port| Input {
                source: Source::Udp("10.77.0.1:0".into()),
                port,
                udp_port: None,
            })
            .collect();
        let c = config(rx, dirs.clone(), inputs, Some(packets));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let h = host.clone();
        let receiver = std::thread::spawn(move || {
            h.enter();
            let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
            let addrs: Vec<SocketAddr> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
            addr_tx.send(addrs).unwrap();
            handle.wait().unwrap()
        });
        let addrs = addr_rx.recv().unwrap();
        let b = board.clone();
        let out = out.to_vec();
        std::thread::spawn(move || {
            b.enter();
            let tx = UdpSocket::bind("10.77.0.2:0").unwrap();
            send(&tx, &addrs, &out);
        })
        .join()
        .unwrap();
        runs.push(collect(receiver.join().unwrap(), &dirs));
    }
    runs
}

/// A "board" namespace sends over a veth pair (MTU 9000) to the receiver
/// in a "host" namespace, on a real interface rather than loopback: the
/// ring and the xdp path (where the kernel has AF_XDP) against the socket.
#[test]
fn veth_ring_xdp_and_socket_give_the_same_files_and_accounting() {
    if !ring_allowed() {
        return;
    }
    let Some(pair) = veth_pair("rx") else {
        return;
    };
    let (out, kept) = datagrams(false);
    let garbage = (out.len() - kept.len()) as u64;
    let tmp = tempfile::tempdir().unwrap();
    let mut rxs = vec![RxPath::Socket, RxPath::Ring];
    if xdp_allowed() {
        rxs.push(RxPath::Xdp);
    }
    let runs = over_veth(&pair, tmp.path(), &rxs, &out, kept.len() as u64);
    for run in &runs[1..] {
        check_same(&runs[0], run, &kept, garbage);
    }
    if let Some(x) = runs.get(2) {
        let modes = &x.summary.xdp_modes;
        assert!(modes.len() == 1 && modes[0].starts_with("rxh"), "{modes:?}");
        println!("xdp on veth: {modes:?}");
    }
}

/// 9000-byte Ethernet frames (8972-byte packets) arrive at the xdp path in
/// several buffers each; it keeps them byte-exact, as the socket does.
#[test]
fn veth_xdp_keeps_jumbo_frames_byte_exact() {
    if !xdp_allowed() {
        return;
    }
    let Some(pair) = veth_pair("rj") else {
        return;
    };
    let (stream, _) = board_stream(3, PORTS, 600, 2235);
    assert!(stream.iter().any(|p| p.bytes.len() == 8972));
    let out: Vec<(u8, Vec<u8>)> = stream.iter().map(|p| (p.port, p.bytes.clone())).collect();
    let tmp = tempfile::tempdir().unwrap();
    let runs = over_veth(
        &pair,
        tmp.path(),
        &[RxPath::Socket, RxPath::Xdp],
        &out,
        stream.len() as u64,
    );
    for port in 0..PORTS {
        let p = usize::from(port);
        assert!(
            runs[1].packets[p] == for_port(&stream, port),
            "port {port}: xdp's packets differ from those sent"
        );
        assert!(runs[0].packets[p] == runs[1].packets[p]);
    }
    assert_eq!(accounting(&runs[1].summary), accounting(&runs[0].summary));
}

/// Sends whole Ethernet frames on `lo` (of the calling thread's namespace)
/// from an AF_PACKET socket, as a network card would hand them up.
fn send_frames_on_lo(frames: &[Vec<u8>]) {
    // SAFETY: socket(2); the descriptor is closed below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: sockaddr_ll is plain old data; if_nametoindex reads a C string.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_IP as u16).to_be();
    sll.sll_ifindex = unsafe { libc::if_nametoindex(c"lo".as_ptr()) } as i32;
    sll.sll_halen = 6;
    for f in frames {
        // SAFETY: sendto with a live buffer and sockaddr_ll.
        let r = unsafe {
            libc::sendto(
                fd,
                f.as_ptr().cast(),
                f.len(),
                0,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        assert_eq!(r, f.len() as isize, "{}", std::io::Error::last_os_error());
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
}

/// The ring sees datagrams before the kernel's IP layer, which drops one
/// whose IPv4 header checksum is wrong: the ring must reject it too
/// (counted, in the reject file), never keep it as a trace packet.
#[test]
fn ring_rejects_a_wrong_ipv4_header_checksum() {
    if !ring_allowed() {
        return;
    }
    rejects_a_wrong_ipv4_header_checksum(RxPath::Ring);
}

/// So does the xdp path, which sees them before the IP layer too.
#[test]
fn xdp_rejects_a_wrong_ipv4_header_checksum() {
    if !xdp_allowed() {
        return;
    }
    rejects_a_wrong_ipv4_header_checksum(RxPath::Xdp);
}

fn rejects_a_wrong_ipv4_header_checksum(rx: RxPath) {
    let ns = match Netns::add(format!("hmtt-rxc{rx:?}-{}", std::process::id())) {
        Ok(n) => n,
        Err(e) => {
            println!("SKIPPED: cannot create network namespaces here ({e})");
            return;
        }
    };
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]).unwrap();
    let (stream, _) = board_stream(2, 1, 3, 400);
    let tmp = tempfile::tempdir().unwrap();
    let dirs = tmp_dirs(tmp.path(), rx);
    let inputs = vec![Input {
        source: Source::Udp("127.0.0.1:0".into()),
        port: 0,
        udp_port: None,
    }];
    let c = config(rx, dirs.clone(), inputs, Some(2));
    let ns = Arc::new(ns);
    let n = ns.clone();
    let summary = std::thread::spawn(move || {
        n.enter();
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        let port = handle.local_addrs()[0].unwrap().port();
        let ep = hmtt_receiver::frame::UdpEndpoints {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src_ip: [127, 0, 0, 1],
            dst_ip: [127, 0, 0, 1],
            src_port: 9,
            dst_port: port,
        };
        let frames: Vec<Vec<u8>> = stream
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut f = Vec::new();
                hmtt_receiver::frame::build_udp_frame(&ep, &p.bytes, &mut f);
                if i == 0 {
                    f[14 + 10] ^= 0x01; // the IPv4 header checksum
                }
                f
            })
            .collect();
        send_frames_on_lo(&frames);
        (handle.wait().unwrap(), stream)
    });
    let (summary, stream) = summary.join().unwrap();
    let p = &summary.ports[0];
    assert_eq!((p.packets, p.rejects), (2, 1), "packets, rejects");
    assert_eq!(
        captured(&dirs, "t", 0),
        vec![stream[1].bytes.clone(), stream[2].bytes.clone()]
    );
    assert_eq!(rejects(&dirs, 0), vec![(0, stream[0].bytes.clone())]);
}

/// A frame whose IP version is not 4, or whose header length is under 20
/// bytes, is not the capture's: the xdp program leaves it to the stack
/// (which drops it), so it is neither a packet nor a reject.
#[test]
fn xdp_leaves_a_frame_that_is_not_ipv4_to_the_stack() {
    if !xdp_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dirs = tmp_dirs(tmp.path(), RxPath::Xdp);
    let (stream, _) = board_stream(2, 1, 4, 400);
    let r = in_netns("rxv", move || {
        let inputs = vec![Input {
            source: Source::Udp("127.0.0.1:0".into()),
            port: 0,
            udp_port: None,
        }];
        let c = config(RxPath::Xdp, dirs, inputs, Some(2));
        let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
        let port = handle.local_addrs()[0].unwrap().port();
        let ep = hmtt_receiver::frame::UdpEndpoints {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src_ip: [127, 0, 0, 1],
            dst_ip: [127, 0, 0, 1],
            src_port: 9,
            dst_port: port,
        };
        let frames: Vec<Vec<u8>> = stream
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut f = Vec::new();
                hmtt_receiver::frame::build_udp_frame(&ep, &p.bytes, &mut f);
                match i {
                    0 => f[14] = 0x65, // version 6
                    1 => f[14] = 0x44, // 16-byte header
                    _ => {}
                }
                f
            })
            .collect();
        send_frames_on_lo(&frames);
        handle.wait().unwrap()
    });
    let Some(summary) = r else {
        return;
    };
    let p = &summary.ports[0];
    assert_eq!(
        (p.packets, p.rejects, p.ignored_frames),
        (2, 0, 0),
        "packets, rejects, ignored"
    );
}
