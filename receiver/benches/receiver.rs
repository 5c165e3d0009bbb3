//! Receiver benchmark: a board's stream sent over loopback to three ports at
//! rising rates; for each rate, this receiver on each receive path
//! (`--rx socket`, `--rx ring`, `--rx xdp`) and `tcpdump -w` (default buffer, and with
//! `-B` as large as the receiver's socket buffers) capture the same stream
//! in turn. Prints loss and CPU per step, the highest zero-loss rate of
//! each, and each one's CPU per Gb/s at the highest rate all sustained, for
//! 1500-byte and 9000-byte packets.
//!
//! The zero-loss rate is searched (`search.rs`): the listed rates up to
//! each tool's first loss, then a bisection between its highest target
//! without loss and its lowest with loss to HMTT_BENCH_RESOLUTION Gb/s
//! (default 0.25); every target runs HMTT_BENCH_REPEATS times (default
//! 2) and counts as loss-free only if no run lost, its rate the slowest
//! run's. Under each run that lost, where its datagrams went
//! (`losses.rs`): refused at the capture CPU's backlog (counted by the
//! sender; /proc/net/softnet_stat's `dropped` and `squeezed` of that CPU,
//! or of all CPUs on `lo`), dropped in the capture's kernel buffer (the
//! rings' `tp_drops`, tcpdump's "dropped by kernel"), not written by the
//! receiver, and `elsewhere` (the rest). Under each receiver run, its
//! receive and writer threads' cores over the send (per-thread
//! /proc/self/task ticks) with the CPUs they ran on, and the CPU-seconds
//! the receiver used after the send (its ring's backlog drained; not in
//! `cpu`, which is over the send alone).
//!
//! Rates count IPv4 packet bytes (UDP payload + 28). CPU is in cores: the
//! receiver's threads (process CPU minus the sender thread), tcpdump's
//! rusage, and the sender thread. On loopback the sender's thread also
//! runs the kernel's receive path: up to the socket queue for `--rx
//! socket`, and the copy into the AF_PACKET ring for `--rx ring` and
//! tcpdump. So the capture's own cost is `cpu`, and `cpu+snd` (the sum)
//! is the whole machine's cost of sending and capturing, which is what
//! compares fairly across paths. CPU counts from when a capture is ready
//! (`Capture::start` returned, tcpdump said "listening on") to the end of
//! the send: the start, mostly the kernel zeroing the rings (3 x 256 MiB
//! for `--rx ring`, 256 MiB for `tcpdump -B 262144`), is left out, and so
//! is the work of a capture that fell behind after the send (printed
//! apart for the receiver). `/Gb/s` columns are
//! cores per Gb/s (CPU-seconds per Gb); `us/pkt` is CPU microseconds per
//! packet, of the capture and of the sender thread (with the kernel's
//! receive work it runs). The sender sleeps between its batches and never
//! spins, so at a target it reaches its CPU is its work; at a target above
//! what it can send it never waits, and its `us/pkt` is its whole cost.
//!
//! Environment: HMTT_BENCH_DIR (output directory, default a temp dir on
//! /tmp), HMTT_BENCH_SECONDS (per step, default 2), HMTT_BENCH_SIZES
//! (default "1500,9000"; empty for none), HMTT_BENCH_RATES_1500 / _9000 (Gb/s lists),
//! HMTT_BENCH_TOOLS (default "socket,ring,tcpdump,tcpdump-B"; also `xdp`,
//! `--rx xdp`, whose XDP attach mode is printed at its first run and is in
//! its capture summary's `xdp_modes`),
//! HMTT_BENCH_PREALLOCATE=0 (the receiver's stripe files not preallocated),
//! HMTT_BENCH_BATCH (packets per batch, with as many fewer batches per
//! port, so the same memory).
//!
//! Many boards (issue 42), with HMTT_BENCH_BOARDS=N (N boards of 3 ports;
//! off by default: it simulates, writes and merges about a gigabyte):
//! the boards' simulated streams (a sequential read, cache off: 1500-byte
//! packets), repeated on in seq and time to HMTT_BENCH_SECONDS at the
//! highest of HMTT_BENCH_BOARDS_RATES (Gb/s, default "3"), are sent by
//! HMTT_BENCH_BOARDS_SENDERS threads (default 2; each sends whole boards,
//! each board's packets in the order it sends them, at its share of the
//! rate) to N x 3 ports of one capture,
//! on each receive path of HMTT_BENCH_TOOLS, with
//! HMTT_BENCH_BOARDS_RCVBUF_MIB (default 16) of buffer per port. Each
//! capture is merged and compared with the merge of the boards' own files.
//!
//! The sender (`sender.rs`): HMTT_BENCH_SENDER, "packet" (default:
//! prebuilt frames written to `lo` by an AF_PACKET socket with
//! PACKET_QDISC_BYPASS) or "udp" (a UDP socket), or both, comma-separated:
//! then every tool runs once with each sender, named with it in brackets,
//! each compared with the tcpdump -B run of the same sender.
//! HMTT_BENCH_SEND_BATCH: datagrams per sendmmsg call (default 32). The
//! bench runs in a network namespace of its own (it must run as root), so
//! that the `packet` sender's frames are delivered (see `sender.rs`)
//! without changing the host's network; tcpdump runs in it too.
//!
//! HMTT_BENCH_INGRESS_DROP=1: an nftables `netdev` ingress rule on the
//! namespace's `lo` drops every IPv4 UDP datagram after the packet taps
//! have seen it, so the kernel's IP and UDP work (which on loopback the
//! sender's thread pays, about half its cost a packet) is not done: the
//! ring and tcpdump, both packet taps, see every datagram, and the
//! sender's limit rises to what the taps cost. A host that receives a
//! board's datagrams does that IP/UDP work whichever tool captures, so
//! this compares the tools' own costs; `socket` (which needs the UDP
//! layer) cannot run in this mode.
//!
//! HMTT_BENCH_PATH=veth-rps (default `lo`, the above): the sender and the
//! capture each on a CPU of their own, as on a host whose NIC's receive
//! work runs on the receiving cores (`veth.rs`): the sender thread, pinned
//! to the first CPU, writes its frames (or datagrams) into a veth pair
//! from a namespace of its own; at the other end, in the capture's
//! namespace, receive packet steering (`rps_cpus`) runs the whole receive
//! path (the taps' copy into their rings, IP, UDP) in the last CPU's
//! softirq, and the capture (every receiver thread, tcpdump) is pinned to
//! that CPU. Then `busy` is that CPU's user + system + irq + softirq time
//! (/proc/stat) over the send, which counts the taps' softirq work
//! whichever process it interrupts, and the capture's CPU per Gb/s in the
//! summary is `busy`'s; `irq+si` is its interrupt part; `others >=` a
//! lower bound of other processes' own work on that CPU (busy minus the
//! capture's threads minus all interrupt time), which makes `busy`
//! overstate: the summary says so when it is above 0.02 cores. `gaps` is
//! the receiver's own count of missing seqs between the first and last
//! it received. HMTT_BENCH_INGRESS_DROP=1 puts its rule on the capturing
//! veth. HMTT_BENCH_BOARDS runs on `lo` only. HMTT_BENCH_SENDER_NICE=N
//! gives the sender thread nice N (e.g. -10 on a shared host, so that
//! other processes on its CPU do not hold it below its rate; the capture
//! keeps nice 0, as do the kernel's softirq threads).

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hmtt_format::geometry::Geometry;
use hmtt_format::packet::{PacketHeader, FLAG_TRACING};
use hmtt_format::record::{Opcode, RecordWord};
use hmtt_receiver::{Capture, CaptureConfig, Input, RxPath, Source};

#[path = "../tests/boards/mod.rs"]
mod boards;
#[path = "receiver/losses.rs"]
mod losses;
#[path = "receiver/many_boards.rs"]
mod many_boards;
#[path = "receiver/search.rs"]
mod search;
#[path = "receiver/sender.rs"]
mod sender;
#[path = "receiver/table.rs"]
mod table;
#[path = "receiver/veth.rs"]
mod veth;

use losses::{Losses, Softnet, Threads};
use sender::{SenderConfig, SenderKind};
use veth::CpuTimes;

/// Where the capture listens: the device its taps see and the address of
/// its ports; with HMTT_BENCH_PATH=veth-rps the CPU it is pinned to.
struct Net {
    device: String,
    address: Ipv4Addr,
    capture_cpu: Option<usize>,
}

impl Net {
    fn inputs(&self) -> Vec<Input> {
        (0..PORTS as u8)
            .map(|port| Input {
                source: Source::Udp(format!("{}:0", self.address)),
                port,
                udp_port: None,
            })
            .collect()
    }

    /// Runs `send` on a thread of its own (the sender's); with a capture
    /// CPU, also that CPU's time over the send, per second of it.
    fn send_timed(
        &self,
        send: impl FnOnce() -> sender::SendResult + Send,
    ) -> (sender::SendResult, Option<CpuTimes>) {
        let before = self.capture_cpu.map(CpuTimes::read);
        let s = std::thread::scope(|sc| sc.spawn(send).join().unwrap());
        let busy = self.capture_cpu.zip(before).map(|(cpu, before)| {
            let d = CpuTimes::read(cpu).since(before);
            CpuTimes {
                busy: d.busy / s.seconds,
                interrupts: d.interrupts / s.seconds,
            }
        });
        (s, busy)
    }
}

const PORTS: usize = 3;

fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut r) };
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// User + system CPU seconds process `pid` has used so far.
fn process_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis: state is the first,
    // utime and stime (in clock ticks) the 12th and 13th.
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn tv(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

/// A board's full packets of `ip_bytes` IPv4 size, `PORTS` of them per seq
/// round; seq and port are rewritten in place when sent.
fn board_packets(ip_bytes: usize) -> Vec<Vec<u8>> {
    let nwords = (ip_bytes - 28 - 32) / 4;
    (0..64u64)
        .map(|k| {
            let mut words: Vec<RecordWord> = (0..nwords)
                .map(|i| {
                    RecordWord::access_unchecked(
                        (i % 60) as u32,
                        i % 4 == 0,
                        (k * 7919 + i as u64 * 64) & 0xFF_FFFF,
                    )
                })
                .collect();
            if k == 5 {
                words[3] = RecordWord::control_unchecked(0, Opcode::Lost, 2);
            }
            PacketHeader {
                flags: FLAG_TRACING,
                board: 0,
                port: 0,
                seq: 0,
                t0: k * 100_000,
                nwords: nwords as u16,
                geometry: Geometry::ddr3_default(),
                tick_ps: 1250,
            }
            .build(&words)
        })
        .collect()
}

#[derive(Clone)]
struct Step {
    sent: u64,
    got: u64,
    rate: f64,
    cpu: f64,
    sender_cpu: f64,
    /// The capture CPU's time over the send, cores (veth-rps only).
    busy: Option<CpuTimes>,
    /// The receiver's own count of sequence gaps.
    seq_gaps: Option<u64>,
    /// Where the lost datagrams went.
    losses: Losses,
    /// The receiver's threads over the send: cores and CPUs per kind,
    /// and the CPU-seconds its threads used after the send.
    threads: Option<(String, f64)>,
}

impl search::Run for Step {
    fn sent(&self) -> u64 {
        self.sent
    }
    fn got(&self) -> u64 {
        self.got
    }
    fn rate(&self) -> f64 {
        self.rate
    }
}

impl Step {
    /// The capture's cores: its CPU's busy time where the capture has a
    /// CPU of its own, else its own threads'.
    fn capture_cores(&self) -> f64 {
        self.busy.map_or(self.cpu, |b| b.busy)
    }

    /// At least this much of the capture CPU's busy time was other
    /// processes' own work: busy minus the capture's threads and all
    /// interrupt time (with tick accounting an interrupt's tick counts to
    /// the task it interrupts too, so this is a lower bound).
    fn others_at_least(&self) -> f64 {
        self.busy
            .map_or(0.0, |b| (b.busy - self.cpu - b.interrupts).max(0.0))
    }
}

/// The xdp path's attach mode is printed once, at its first run.
static XDP_MODE_SHOWN: AtomicBool = AtomicBool::new(false);

fn run_receiver(
    net: &Net,
    dir: &Path,
    packets: &mut [Vec<u8>],
    gbps: f64,
    total: u64,
    rx: RxPath,
    snd: SenderConfig,
) -> Step {
    let _ = std::fs::remove_dir_all(dir);
    let mut c = CaptureConfig::new(net.inputs(), vec![dir.to_path_buf()]);
    c.rx = rx;
    c.progress = false;
    c.name = "bench".into();
    c.packets = Some(total);
    c.overwrite = true;
    if std::env::var("HMTT_BENCH_PREALLOCATE").is_ok_and(|v| v == "0") {
        c.preallocate = false;
    }
    if let Some(b) = std::env::var("HMTT_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        c.buffers_per_input = c.buffers_per_input * c.batch_packets / b;
        c.batch_packets = b;
    }
    let limit = Duration::from_secs_f64(
        total as f64 / (gbps * 1e9 / 8.0 / (packets[0].len() + 28) as f64) + 3.0,
    );
    c.duration = Some(limit);
    let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
    let cpu0 = cpu_seconds(libc::RUSAGE_SELF);
    let dests: Vec<SocketAddr> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
    let ip_bytes = packets[0].len() + 28;
    let (threads0, softnet0) = (Threads::read(), Softnet::read(net.capture_cpu));
    let (s, busy) = net.send_timed(|| sender::send(snd, &dests, packets, gbps, total));
    let (threads1, cpu1) = (Threads::read(), cpu_seconds(libc::RUSAGE_SELF));
    let summary = handle.wait().unwrap();
    if !summary.xdp_modes.is_empty() && !XDP_MODE_SHOWN.swap(true, Ordering::Relaxed) {
        println!(
            "   hmtt --rx xdp: XDP attached as {}",
            summary.xdp_modes.join(", ")
        );
    }
    let softnet = Softnet::read(net.capture_cpu).since(softnet0);
    let cpu = cpu1 - cpu0 - s.cpu;
    let tail = cpu_seconds(libc::RUSAGE_SELF) - cpu1;
    let got: u64 = summary.ports.iter().map(|p| p.written_packets).sum();
    let _ = std::fs::remove_dir_all(dir);
    Step {
        sent: s.packets,
        got,
        rate: s.packets as f64 * ip_bytes as f64 * 8.0 / s.seconds / 1e9,
        cpu: cpu / s.seconds,
        sender_cpu: s.cpu / s.seconds,
        busy,
        seq_gaps: summary.boards.first().map(|b| b.seq.lost),
        losses: Losses {
            refused: s.refused,
            backlog: softnet.dropped,
            squeezed: softnet.squeezed,
            kernel: Some(summary.ports.iter().map(|p| p.kernel_drops).sum()),
            unwritten: summary.ports.iter().map(|p| p.unwritten_packets).sum(),
        },
        threads: Some((threads1.describe_since(&threads0, s.seconds), tail)),
    }
}

fn run_tcpdump(
    net: &Net,
    dir: &Path,
    packets: &mut [Vec<u8>],
    gbps: f64,
    total: u64,
    buffer_kib: Option<usize>,
    snd: SenderConfig,
) -> Step {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    // Sockets that take the datagrams and are never read (no ICMP replies).
    let sinks: Vec<UdpSocket> = (0..PORTS)
        .map(|_| UdpSocket::bind((net.address, 0)).unwrap())
        .collect();
    for s in &sinks {
        let _ = socket2::SockRef::from(s).set_recv_buffer_size(4096);
    }
    let dests: Vec<SocketAddr> = sinks.iter().map(|s| s.local_addr().unwrap()).collect();
    let filter = dests
        .iter()
        .map(|d| format!("udp dst port {}", d.port()))
        .collect::<Vec<_>>()
        .join(" or ");
    let file = dir.join("tcpdump.pcap");
    let mut cmd = Command::new("tcpdump");
    cmd.args(["-i", &net.device, "-n", "-q", "-s", "0", "-w"])
        .arg(&file);
    if let Some(b) = buffer_kib {
        cmd.args(["-B", &b.to_string()]);
    }
    cmd.arg(&filter);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump is needed by this benchmark");
    // Wait for "listening on".
    let mut err = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&seen).contains("listening on") {
        if std::io::Read::read(&mut err, &mut byte).unwrap() == 0 {
            panic!("tcpdump: {}", String::from_utf8_lossy(&seen));
        }
        seen.push(byte[0]);
    }
    let start_cpu = process_cpu_seconds(child.id());
    let ip_bytes = packets[0].len() + 28;
    let softnet0 = Softnet::read(net.capture_cpu);
    let (s, busy) = net.send_timed(|| sender::send(snd, &dests, packets, gbps, total));
    let send_end_cpu = process_cpu_seconds(child.id());
    // tcpdump hands packets over in ring blocks retired after its 1 s
    // timeout: wait for the last block before stopping it.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling and reaping our own child.
    let mut status = 0;
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
        libc::waitpid(child.id() as i32, &mut status, 0);
    }
    // Reaped by waitpid above; this only lets std forget the child.
    let _ = child.try_wait();
    let softnet = Softnet::read(net.capture_cpu).since(softnet0);
    // Its last words: "N packets dropped by kernel" (its ring's tp_drops).
    let mut last_words = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut last_words);
    let kernel_drops = last_words.lines().find_map(|l| {
        l.strip_suffix(" packets dropped by kernel")
            .and_then(|n| n.trim().parse::<u64>().ok())
    });
    let cpu = send_end_cpu - start_cpu;
    let mut cap = pcap::Capture::from_file(&file).unwrap();
    let mut got = 0u64;
    while cap.next_packet().is_ok() {
        got += 1;
    }
    drop(sinks);
    let _ = std::fs::remove_dir_all(dir);
    Step {
        sent: s.packets,
        got,
        rate: s.packets as f64 * ip_bytes as f64 * 8.0 / s.seconds / 1e9,
        cpu: cpu / s.seconds,
        sender_cpu: s.cpu / s.seconds,
        busy,
        seq_gaps: None,
        losses: Losses {
            refused: s.refused,
            backlog: softnet.dropped,
            squeezed: softnet.squeezed,
            kernel: kernel_drops,
            unwritten: 0,
        },
        threads: None,
    }
}

fn env_list(name: &str, default: &str) -> Vec<f64> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect()
}

/// A capture tool of the comparison.
#[derive(Clone, Copy)]
enum Tool {
    Receiver(RxPath),
    Tcpdump(Option<usize>),
}

/// The width of the first column: the longest of `names`, at least 22.
fn name_width<'a>(names: impl Iterator<Item = &'a String>) -> usize {
    names.map(|n| n.len()).fold(22, usize::max)
}

/// Cores per Gb/s.
fn per_gbps(cores: f64, gbps: f64) -> f64 {
    cores / gbps.max(1e-9)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let veth_path = match std::env::var("HMTT_BENCH_PATH").as_deref() {
        Err(_) | Ok("lo") => None,
        Ok("veth-rps") => match veth::VethPath::create() {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("receiver bench: HMTT_BENCH_PATH=veth-rps: {e}");
                std::process::exit(1);
            }
        },
        Ok(other) => {
            eprintln!("receiver bench: HMTT_BENCH_PATH: unknown path `{other}` (lo, veth-rps)");
            std::process::exit(1);
        }
    };
    // The namespaces are deleted when `veth_path` drops: on return and
    // on a panic's unwinding, not on exit.
    if let Err(e) = run(veth_path.as_ref()) {
        eprintln!("receiver bench: {e}");
        drop(veth_path);
        std::process::exit(1);
    }
}

fn run(veth_path: Option<&veth::VethPath>) -> Result<(), String> {
    // First, while this is the only thread: every thread and child after
    // this one is in the namespace (and with veth-rps on the capture's CPU).
    let net = match veth_path {
        Some(v) => {
            v.enter_capture()
                .map_err(|e| format!("the capture's namespace: {e}"))?;
            Net {
                device: v.capture_dev.clone(),
                address: veth::CAPTURE_IP,
                capture_cpu: Some(v.capture_cpu),
            }
        }
        None => {
            sender::enter_own_netns()
                .map_err(|e| format!("a network namespace of its own: {e}"))?;
            Net {
                device: "lo".into(),
                address: Ipv4Addr::LOCALHOST,
                capture_cpu: None,
            }
        }
    };
    let wire = veth_path.map(|v| sender::Wire {
        netns: v.sender_ns(),
        cpu: v.sender_cpu,
        nice: std::env::var("HMTT_BENCH_SENDER_NICE")
            .ok()
            .and_then(|n| n.parse().ok()),
        device: Box::leak(v.sender_dev.clone().into_boxed_str()),
        source_ip: veth::SENDER_IP,
        source_mac: veth::SENDER_MAC,
        destination_mac: veth::CAPTURE_MAC,
    });
    let ingress_drop = std::env::var("HMTT_BENCH_INGRESS_DROP").is_ok_and(|v| v == "1");
    if ingress_drop {
        sender::drop_udp_after_taps(&net.device)
            .map_err(|e| format!("HMTT_BENCH_INGRESS_DROP: {e}"))?;
    }
    let seconds: f64 = std::env::var("HMTT_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let base: PathBuf = std::env::var("HMTT_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            std::env::temp_dir().join(format!("hmtt-bench-{}", std::process::id()))
        });
    let sizes = env_list("HMTT_BENCH_SIZES", "1500,9000");
    let rcvbuf_kib = CaptureConfig::new(vec![], vec![]).rcvbuf_bytes / 1024;
    let wanted = std::env::var("HMTT_BENCH_TOOLS")
        .unwrap_or_else(|_| "socket,ring,tcpdump,tcpdump-B".into());
    let batch: usize = std::env::var("HMTT_BENCH_SEND_BATCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let kinds: Vec<SenderKind> = std::env::var("HMTT_BENCH_SENDER")
        .unwrap_or_else(|_| "packet".into())
        .split(',')
        .map(|k| {
            SenderKind::parse(k)
                .unwrap_or_else(|| panic!("HMTT_BENCH_SENDER: unknown sender `{k}` (packet, udp)"))
        })
        .collect();
    let mut tools: Vec<(String, Tool, SenderConfig)> = Vec::new();
    for w in wanted.split(',').map(str::trim) {
        let (name, tool): (String, Tool) = match w {
            "socket" if ingress_drop => panic!(
                "HMTT_BENCH_INGRESS_DROP=1 drops datagrams before the UDP layer: \
                 leave `socket` out of HMTT_BENCH_TOOLS"
            ),
            "socket" => ("hmtt --rx socket".into(), Tool::Receiver(RxPath::Socket)),
            "ring" => ("hmtt --rx ring".into(), Tool::Receiver(RxPath::Ring)),
            "xdp" => ("hmtt --rx xdp".into(), Tool::Receiver(RxPath::Xdp)),
            "tcpdump" => ("tcpdump -w".into(), Tool::Tcpdump(None)),
            "tcpdump-B" => (
                format!("tcpdump -w -B {rcvbuf_kib}"),
                Tool::Tcpdump(Some(rcvbuf_kib)),
            ),
            other => panic!(
                "HMTT_BENCH_TOOLS: unknown tool `{other}` (socket, ring, xdp, tcpdump, tcpdump-B)"
            ),
        };
        for &kind in &kinds {
            let name = if kinds.len() > 1 {
                format!("{name} [{}]", kind.name())
            } else {
                name.clone()
            };
            tools.push((name, tool, SenderConfig { kind, batch, wire }));
        }
    }
    println!(
        "receiver benchmark: {PORTS} ports on {} ({}), {seconds} s per step, output in {}",
        net.device,
        net.address,
        base.display()
    );
    let senders = kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(" and ");
    match veth_path {
        None => println!(
            "sender: {senders} with sendmmsg of {batch} datagrams, in the bench's own network \
             namespace"
        ),
        Some(v) => println!(
            "HMTT_BENCH_PATH=veth-rps: sender ({senders}, sendmmsg of {batch}) on CPU {} \
             through {}; the capture and its receive path (rps_cpus) on CPU {}: `busy` is \
             that CPU's user+system+irq+softirq time (/proc/stat), `irq+si` its \
             interrupt part, `gaps` the receiver's own sequence accounting",
            v.sender_cpu, v.sender_dev, v.capture_cpu
        ),
    }
    if ingress_drop {
        println!(
            "HMTT_BENCH_INGRESS_DROP=1: UDP datagrams dropped at {}'s ingress, after the packet taps",
            net.device
        );
    }
    println!(
        "rate = IPv4 bytes; CPU in cores (1.0 = one core busy) over the send time; \
         machine has {} cores, load average {}",
        // SAFETY: sysconf has no preconditions. (available_parallelism
        // would count the CPUs this thread is pinned to.)
        unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let board_count: u8 = std::env::var("HMTT_BENCH_BOARDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if board_count > 0 && veth_path.is_some() {
        return Err("HMTT_BENCH_BOARDS runs on `lo` only: leave HMTT_BENCH_PATH unset".into());
    }
    if board_count > 0 {
        let rx_paths: Vec<(String, RxPath, SenderConfig)> = tools
            .iter()
            .filter_map(|(name, t, snd)| match t {
                Tool::Receiver(rx) => Some((name.clone(), *rx, *snd)),
                Tool::Tcpdump(_) => None,
            })
            .collect();
        std::fs::create_dir_all(&base).unwrap();
        many_boards::run(&base, board_count, seconds, &rx_paths);
    }
    for size in sizes {
        let size = size as usize;
        let rates = if size <= 1500 {
            env_list("HMTT_BENCH_RATES_1500", "0.5,1,2,3,4,5,6,8")
        } else {
            env_list("HMTT_BENCH_RATES_9000", "2,4,6,8,10,12,15,20")
        };
        let mut packets = board_packets(size);
        let w = name_width(tools.iter().map(|(name, _, _)| name));
        println!();
        println!(
            "== {size}-byte packets ({} B UDP payload, {} record words) ==",
            size - 28,
            (size - 60) / 4
        );
        let busy_columns = net.capture_cpu.is_some();
        for line in [
            [
                "capture", "target", "sent", "sent", "lost", "loss%", "cpu", "sender", "cpu",
                "cpu+snd", "cpu", "sender", "busy", "irq+si", "others", "busy", "gaps",
            ],
            [
                "", "Gb/s", "Gb/s", "packets", "packets", "", "cores", "cores", "/Gb/s", "/Gb/s",
                "us/pkt", "us/pkt", "cores", "cores", ">=", "/Gb/s", "",
            ],
        ] {
            let h = line.map(|c| c.to_string());
            println!("{}", table::columns(w, &h, busy_columns));
        }
        let settings = search::Settings::from_env();
        let (bounds, clean) = search::zero_loss_rates(tools.len(), &rates, settings, |t, gbps| {
            let (name, tool, snd) = &tools[t];
            let total = (gbps * 1e9 / 8.0 / size as f64 * seconds) as u64;
            let dir = base.join(format!("{size}-{t}"));
            let step = match *tool {
                Tool::Receiver(rx) => run_receiver(&net, &dir, &mut packets, gbps, total, rx, *snd),
                Tool::Tcpdump(b) => run_tcpdump(&net, &dir, &mut packets, gbps, total, b, *snd),
            };
            table::print_step(name, w, gbps, size, &step, busy_columns);
            step
        });
        println!(
            "-- highest target sent with zero loss in {} runs each (all lower listed targets \
             too), bisected to {} Gb/s, {size}-byte packets:",
            settings.repeats, settings.resolution
        );
        for (t, (name, _, _)) in tools.iter().enumerate() {
            let lossy = bounds[t]
                .lossy
                .map_or("  (no loss at any rate tried)".into(), |l| {
                    format!(
                        "  (lost {:.3} % at the {:.2} Gb/s target, {:.2} sent)",
                        l.loss_percent, l.target, l.rate
                    )
                });
            match &bounds[t].clean {
                Some((_, s)) => println!(
                    "   {name:<w$} {:>6.2} Gb/s  {} {:.2} cores{lossy}",
                    s.rate,
                    if busy_columns { "busy" } else { "cpu" },
                    s.capture_cores(),
                ),
                None => println!("   {name:<w$} none{lossy}"),
            }
        }
        // Each tool's reference: tcpdump -B fed by the same sender.
        let reference: Vec<Option<usize>> = tools
            .iter()
            .map(|(_, _, snd)| {
                tools
                    .iter()
                    .position(|(_, t, s)| matches!(t, Tool::Tcpdump(Some(_))) && s.kind == snd.kind)
            })
            .collect();
        for (t, (name, tool, _)) in tools.iter().enumerate() {
            if let (Tool::Receiver(_), Some(r)) = (tool, reference[t]) {
                if let (Some((_, a)), Some((_, b))) = (&bounds[t].clean, &bounds[r].clean) {
                    println!("   ratio {name} / {}: {:.2}x", tools[r].0, a.rate / b.rate);
                }
            }
        }
        // CPU per Gb/s of each tool against the reference's, at the
        // highest target both sustained (CPU per Gb/s falls as the rate
        // rises: fixed costs spread thinner, so compare at one rate).
        if reference.iter().any(Option::is_some) {
            println!(
                "-- CPU per Gb/s (capture alone{}; capture + sender) at the highest target \
                 each and the tcpdump -B run of its sender sustained:",
                if busy_columns {
                    ": its CPU's busy time"
                } else {
                    ""
                }
            );
            for (t, (name, _, _)) in tools.iter().enumerate() {
                let Some(r) = reference[t] else {
                    continue;
                };
                let both = clean
                    .iter()
                    .rev()
                    .find_map(|(g, st)| Some((*g, st[t].as_ref()?, st[r].as_ref()?)));
                match both {
                    Some((g, a, b)) => {
                        println!(
                            "   {name:<w$} at {g:>4} Gb/s: {:.3} and {:.3} cores per Gb/s, \
                             {:.2}x and {:.2}x the reference's",
                            per_gbps(a.capture_cores(), a.rate),
                            per_gbps(a.capture_cores() + a.sender_cpu, a.rate),
                            per_gbps(a.capture_cores(), a.rate)
                                / per_gbps(b.capture_cores(), b.rate),
                            per_gbps(a.capture_cores() + a.sender_cpu, a.rate)
                                / per_gbps(b.capture_cores() + b.sender_cpu, b.rate)
                        );
                        let others = a.others_at_least().max(b.others_at_least());
                        if others > 0.02 {
                            // Both bounds of the capture's own cost: its
                            // threads + all interrupt time can only overstate.
                            let own = |s: &Step| {
                                let i = s.busy.map_or(0.0, |b| b.interrupts);
                                per_gbps(s.cpu + i, s.rate)
                            };
                            println!(
                                "   {:<w$} UNRELIABLE: other processes took >= {others:.2} cores \
                                 of the capture CPU; its threads + irq+si instead: {:.3}, \
                                 {:.2}x the reference's",
                                "",
                                own(a),
                                own(a) / own(b)
                            );
                        }
                    }
                    None => println!("   {name:<w$} no target both sustained"),
                }
            }
        }
    }
    if std::env::var("HMTT_BENCH_DIR").is_err() {
        let _ = std::fs::remove_dir_all(&base);
    }
    Ok(())
}
