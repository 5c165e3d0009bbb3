//! Loss and reordering on a real network path (issue 19). This kernel has no
//! netem, so a veth pair joins two network namespaces made here, an nftables
//! rule in the receiving one drops about 1% of the board's UDP datagrams
//! (`numgen random`) and counts them, and the sender (this test, in the other
//! namespace) sends `hmtt sim`'s packets with about 5% of them displaced by 1
//! to 3 places. `hmtt capture` must report as lost exactly the sequence
//! numbers that did not arrive, all of them nftables' drops, merge must give
//! exactly those gaps, and the trace must be the one of the packets that
//! arrived. Skipped, with the reason, when not root or without `ip` or `nft`
//! (scripts/setup.sh installs iproute2 and nftables).

use std::collections::BTreeSet;
use std::fs::File;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use hmtt_format::capture::{emit_record_header, CaptureHeader, CaptureReader};
use hmtt_format::events::EventNames;
use hmtt_format::packet::Packet;
use hmtt_format::trace::TraceView;
use hmtt_merge::{merge_to_trace, CaptureSet, MergeOptions};

const PORTS: u16 = 3;
const FIRST_UDP_PORT: u16 = 5000;
const DROP_PERCENT: u32 = 1;

fn run(program: &str, args: &[&str]) -> Result<Output, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Why this test cannot run here, if it cannot.
fn missing_requirement() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: network namespaces and nftables need root".into());
    }
    for (tool, package) in [("ip", "iproute2"), ("nft", "nftables")] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!(
                "`{tool}` not found (package {package}; scripts/setup.sh installs it)"
            ));
        }
    }
    None
}

/// A network namespace, deleted (with its veth end) when dropped.
struct Netns(String);

impl Netns {
    fn add(name: String) -> Netns {
        run("ip", &["netns", "add", &name]).unwrap();
        Netns(name)
    }
    fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", self.0.as_str()];
        all.extend_from_slice(args);
        run("ip", &all).unwrap();
    }
    fn exec(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        let mut all = vec!["netns", "exec", self.0.as_str(), program];
        all.extend_from_slice(args);
        run("ip", &all)
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
        let _ = run("ip", &["netns", "del", &self.0]);
    }
}

/// One packet of the board: its seq, port and bytes.
struct Sent {
    seq: u64,
    port: u8,
    bytes: Vec<u8>,
}

/// The packets of `hmtt sim`'s capture files in `dir`, in seq order.
fn simulated_packets(dir: &Path) -> Vec<Sent> {
    let mut all = Vec::new();
    for port in 0..PORTS as u8 {
        let data = std::fs::read(dir.join(format!("board0-port{port}.hmttcap"))).unwrap();
        let (_, records) = CaptureReader::new(&data).unwrap();
        for r in records {
            let seq = Packet::new_checked(r.packet).unwrap().seq();
            all.push(Sent {
                seq,
                port,
                bytes: r.packet.to_vec(),
            });
        }
    }
    all.sort_by_key(|p| p.seq);
    all
}

/// `packets` with about 5% moved 1 to 3 places later (a fixed xorshift, so
/// every run reorders the same way).
fn reordered(mut packets: Vec<Sent>) -> (Vec<Sent>, usize) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut moved = 0;
    let mut i = 0;
    while i + 4 < packets.len() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 100 < 5 {
            let by = 1 + (x >> 32) as usize % 3;
            packets[i..=i + by].rotate_left(1);
            moved += 1;
            i += by;
        }
        i += 1;
    }
    (packets, moved)
}

/// The sequence numbers of the valid packets in the capture files of `dir`.
fn captured_seqs(dir: &Path) -> Vec<u64> {
    let mut seqs = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".hmttcap") || name.contains("reject") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let (_, records) = CaptureReader::new(&data).unwrap();
        seqs.extend(records.map(|r| Packet::new_checked(r.packet).unwrap().seq()));
    }
    seqs
}

/// `hmtt sim`'s capture files with the packets of `dropped` taken out, in
/// `out`: what a perfect capture of the packets that arrived holds.
fn without(sim: &Path, dropped: &BTreeSet<u64>, out: &Path) {
    std::fs::create_dir_all(out).unwrap();
    for port in 0..PORTS as u8 {
        let name = format!("board0-port{port}.hmttcap");
        let data = std::fs::read(sim.join(&name)).unwrap();
        let (header, records) = CaptureReader::new(&data).unwrap();
        let mut kept = CaptureHeader::emit(&header).to_vec();
        for r in records {
            if !dropped.contains(&Packet::new_checked(r.packet).unwrap().seq()) {
                kept.extend_from_slice(&emit_record_header(
                    r.recv_ns,
                    r.packet.len() as u32,
                    r.flags,
                ));
                kept.extend_from_slice(r.packet);
            }
        }
        std::fs::write(out.join(name), kept).unwrap();
    }
}

/// The records of the trace merged from `dir`, and its merge report.
fn merged(
    dir: &Path,
    trace: &Path,
) -> (
    Vec<hmtt_format::trace::TraceRecord>,
    hmtt_merge::MergeReport,
) {
    let set = CaptureSet::open(&[dir.to_path_buf()], u64::MAX).unwrap();
    let (report, _) = merge_to_trace(
        &set,
        &MergeOptions::default(),
        trace,
        &EventNames::default(),
        &mut |_| {},
    )
    .unwrap();
    let bytes = std::fs::read(trace).unwrap();
    let view = TraceView::new_checked(&bytes).unwrap();
    (view.records().collect(), report)
}

#[test]
fn nftables_drops_and_reordering_are_reported_as_exactly_the_missing_seqs() {
    if let Some(why) = missing_requirement() {
        println!("SKIPPED: {why}");
        return;
    }
    let started = Instant::now();
    let id = std::process::id();
    let tmp = tempfile::tempdir().unwrap();
    let sim = tmp.path().join("sim");
    let out = Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args([
            "sim",
            "--workload",
            "seq-read",
            "--n",
            "64M",
            "--ports",
            "3",
        ])
        .arg("--out")
        .arg(&sim)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let (packets, moved) = reordered(simulated_packets(&sim));
    assert!(
        packets.len() > 2000 && moved > 50,
        "{} packets, {moved} moved",
        packets.len()
    );

    let rx = Netns::add(format!("hmtt-lrx-{id}"));
    let tx = Netns::add(format!("hmtt-ltx-{id}"));
    let (rx_if, tx_if) = (format!("hl{id}r"), format!("hl{id}t"));
    run(
        "ip",
        &[
            "link", "add", &tx_if, "netns", &tx.0, "type", "veth", "peer", "name", &rx_if, "netns",
            &rx.0,
        ],
    )
    .unwrap();
    tx.ip(&["addr", "add", "10.77.0.1/24", "dev", &tx_if]);
    rx.ip(&["addr", "add", "10.77.0.2/24", "dev", &rx_if]);
    tx.ip(&["link", "set", &tx_if, "up"]);
    rx.ip(&["link", "set", &rx_if, "up"]);
    let last_udp_port = FIRST_UDP_PORT + PORTS - 1;
    let rules = format!(
        "table inet hmtt_loss {{
            counter dropped {{ }}
            chain ingress {{
                type filter hook prerouting priority -300; policy accept;
                udp dport {FIRST_UDP_PORT}-{last_udp_port} numgen random mod 100 < {DROP_PERCENT} counter name dropped drop
            }}
        }}"
    );
    let rules_file = tmp.path().join("loss.nft");
    std::fs::write(&rules_file, rules).unwrap();
    rx.exec("nft", &["-f", rules_file.to_str().unwrap()])
        .unwrap();

    let cap = tmp.path().join("cap");
    let udp_ports = format!("{FIRST_UDP_PORT}-{last_udp_port}");
    let mut capture = Command::new("ip")
        .args([
            "netns",
            "exec",
            &rx.0,
            env!("CARGO_BIN_EXE_hmtt"),
            "capture",
        ])
        .args([
            "--udp-ports",
            &udp_ports,
            "--bind",
            "10.77.0.2",
            "--name",
            "n",
        ])
        .args(["--duration", "50", "-q", "-o"])
        .arg(&cap)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The sockets are bound once the capture file directory exists.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cap.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));

    let sent_seqs: Vec<u64> = packets.iter().map(|p| p.seq).collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            tx.enter();
            let socket = UdpSocket::bind("10.77.0.1:0").unwrap();
            for (i, p) in packets.iter().enumerate() {
                let to = ("10.77.0.2", FIRST_UDP_PORT + u16::from(p.port));
                socket.send_to(&p.bytes, to).unwrap();
                // Paced, so the only losses are nftables' drops.
                if i % 32 == 31 {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
        });
    });
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill on the capture's pid (`ip netns exec` execs hmtt).
    unsafe { libc::kill(capture.id() as i32, libc::SIGINT) };
    let status = capture.wait().unwrap();
    let mut capture_stderr = String::new();
    std::io::Read::read_to_string(&mut capture.stderr.take().unwrap(), &mut capture_stderr)
        .unwrap();
    assert!(status.success(), "{status:?}: {capture_stderr}");

    let counter = rx
        .exec("nft", &["list", "counter", "inet", "hmtt_loss", "dropped"])
        .unwrap();
    let counter = String::from_utf8_lossy(&counter.stdout).into_owned();
    let nft_dropped: u64 = counter
        .split_whitespace()
        .skip_while(|w| *w != "packets")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no packet count in {counter}"));
    drop((rx, tx));

    let received: BTreeSet<u64> = captured_seqs(&cap).into_iter().collect();
    let missing: BTreeSet<u64> = sent_seqs
        .iter()
        .copied()
        .filter(|s| !received.contains(s))
        .collect();
    // Every loss is one of nftables' drops, and there were some.
    assert_eq!(missing.len() as u64, nft_dropped, "{capture_stderr}");
    assert!(nft_dropped > 5, "{nft_dropped} dropped");
    // What the capture can see: the holes before the last packet received.
    let last = *received.last().unwrap();
    let visible: BTreeSet<u64> = missing.iter().copied().filter(|&s| s < last).collect();

    // The capture counts the holes after the first packet it received (it
    // may start mid-stream); merge counts from seq 0, where a board's
    // stream starts. They differ when nftables drops the first packets.
    let first = *received.first().unwrap();
    let capture_lost = visible.iter().filter(|&&s| s > first).count();

    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cap.join("n-summary.json")).unwrap()).unwrap();
    let board = &summary["boards"][0];
    assert_eq!(board["lost"], capture_lost as u64, "{board}");
    assert_eq!(board["received"], received.len() as u64, "{board}");
    assert_eq!(board["duplicates"], 0, "{board}");
    assert_eq!(board["corrupt_seq"], 0, "{board}");
    assert!(
        capture_stderr.contains(&format!("{capture_lost} lost (sequence gaps)")),
        "{capture_stderr}"
    );

    let (got, report) = merged(&cap, &tmp.path().join("captured.hmtttrace"));
    let gaps: BTreeSet<u64> = report.boards[0]
        .gaps
        .iter()
        .flat_map(|g| g.first_seq..=g.last_seq)
        .collect();
    assert_eq!(gaps, visible, "merge's gaps are the missing seqs");
    assert_eq!(report.packets_rejected(), 0);
    let expected_dir = tmp.path().join("expected");
    without(&sim, &missing, &expected_dir);
    let (want, _) = merged(&expected_dir, &tmp.path().join("expected.hmtttrace"));
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "the trace differs from that of the packets that arrived"
    );
    println!(
        "{} packets sent ({moved} displaced), {nft_dropped} dropped by nftables, {} reported missing; {:.1} s",
        sent_seqs.len(),
        visible.len(),
        started.elapsed().as_secs_f64()
    );
}
