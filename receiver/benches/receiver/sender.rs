//! The bench's senders, and the network namespace it runs in.
//!
//! Two senders (HMTT_BENCH_SENDER), both sendmmsg of
//! HMTT_BENCH_SEND_BATCH datagrams a call, paced a call at a time:
//! - `packet` (the default): prebuilt Ethernet + IPv4 + UDP frames (IPv4
//!   header checksum set, UDP checksum 0) written to `lo` by an AF_PACKET
//!   socket with PACKET_QDISC_BYPASS. It skips the UDP socket's route,
//!   socket and UDP work on the way out, which matters because on loopback
//!   the sending core also runs the kernel's receive path for every tool.
//! - `udp`: an ordinary UDP socket.
//!
//! A frame sent by AF_PACKET carries no route, so the kernel routes it on
//! input like one from the wire: it drops a 127.0.0.1 destination as
//! martian, and a local source fails source validation. So the bench runs
//! in a network namespace of its own (unshare(CLONE_NEWNET) at the start,
//! as root; tcpdump, a child, inherits it), whose `lo` is brought up with
//! `route_localnet` and `accept_local` on and `rp_filter` off: there the
//! frames reach the UDP sockets on 127.0.0.1 as the UDP sender's datagrams
//! do, and the host's network is not touched.
//!
//! With HMTT_BENCH_PATH=veth-rps each sender thread first moves to the
//! sender's namespace and CPU ([`Wire`]) and sends through its veth, the
//! frames addressed from its end's Ethernet and IPv4 addresses to the
//! capture's.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hmtt_format::packet::Packet;
use hmtt_receiver::frame::ipv4_header_checksum;

use super::{cpu_seconds, veth, PORTS};

/// linux/if_packet.h: frames go straight to the device's transmit routine.
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const ETH_BYTES: usize = 14;
const IPV4_BYTES: usize = 20;
/// Ethernet + IPv4 + UDP headers of a frame of the `packet` sender.
const HEADER_BYTES: usize = ETH_BYTES + IPV4_BYTES + 8;
/// The UDP source port of the `packet` sender's frames (never answered:
/// the destinations are bound and nothing replies).
const SOURCE_PORT: u16 = 9;

/// How the bench sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SenderKind {
    Udp,
    Packet,
}

impl SenderKind {
    pub fn name(self) -> &'static str {
        match self {
            SenderKind::Udp => "udp",
            SenderKind::Packet => "packet",
        }
    }

    pub fn parse(s: &str) -> Option<SenderKind> {
        match s.trim() {
            "udp" => Some(SenderKind::Udp),
            "packet" => Some(SenderKind::Packet),
            _ => None,
        }
    }
}

/// A sender and its datagrams per sendmmsg call.
#[derive(Clone, Copy, Debug)]
pub struct SenderConfig {
    pub kind: SenderKind,
    pub batch: usize,
    /// Where a sender thread sends from: `None` for the bench's own
    /// namespace and `lo`.
    pub wire: Option<Wire>,
}

/// A sender thread's namespace, CPU and device, and its frames' addresses
/// (HMTT_BENCH_PATH=veth-rps, see `veth.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Wire {
    pub netns: RawFd,
    pub cpu: usize,
    /// The sender thread's nice value (HMTT_BENCH_SENDER_NICE), if set.
    pub nice: Option<i32>,
    pub device: &'static str,
    pub source_ip: Ipv4Addr,
    pub source_mac: [u8; 6],
    pub destination_mac: [u8; 6],
}

/// Loopback's addresses: Ethernet all zero, IPv4 127.0.0.1.
const LOOPBACK_WIRE: (Ipv4Addr, [u8; 6], [u8; 6]) = (Ipv4Addr::LOCALHOST, [0; 6], [0; 6]);

fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Moves this thread (the main thread, before any other starts) into a new
/// network namespace set up as the module's notes say.
pub fn enter_own_netns() -> io::Result<()> {
    // SAFETY: unshare(2) with a flag; affects this thread only.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(os_err("unshare(CLONE_NEWNET) (needs root)"));
    }
    // SAFETY: socket(2); the descriptor is owned at once.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if raw < 0 {
        return Err(os_err("socket for ioctl"));
    }
    // SAFETY: `raw` is a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain old data.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo") {
        *d = *s as libc::c_char;
    }
    // SAFETY: the interface flag ioctls read and write the live ifreq.
    unsafe {
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) != 0 {
            return Err(os_err("SIOCGIFFLAGS lo"));
        }
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(fd.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) != 0 {
            return Err(os_err("SIOCSIFFLAGS lo up"));
        }
    }
    // /proc/sys/net is the writing thread's namespace: this one's.
    for (setting, value) in [
        ("all/rp_filter", "0"),
        ("lo/rp_filter", "0"),
        ("lo/route_localnet", "1"),
        ("lo/accept_local", "1"),
    ] {
        let path = format!("/proc/sys/net/ipv4/conf/{setting}");
        std::fs::write(&path, value)
            .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    }
    Ok(())
}

/// The nftables rule of HMTT_BENCH_INGRESS_DROP on `device`, in this
/// thread's network namespace (the bench's own, or with veth-rps the
/// capture's): `nft` runs as a child, which inherits it.
pub fn drop_udp_after_taps(device: &str) -> Result<(), String> {
    let rules = format!(
        "table netdev hmtt_bench {{\n\
         \tchain ingress {{\n\
         \t\ttype filter hook ingress device \"{device}\" priority 0; policy accept;\n\
         \t\tmeta protocol ip ip protocol udp drop\n\
         \t}}\n\
         }}\n"
    );
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running nft (apt-get install nftables): {e}"))?;
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(rules.as_bytes())
        .map_err(|e| format!("writing the rules to nft: {e}"))?;
    let status = child.wait().map_err(|e| format!("waiting for nft: {e}"))?;
    if !status.success() {
        return Err(format!("nft refused the rules ({status})"));
    }
    Ok(())
}

/// One sending socket with its sendmmsg headers for a batch.
struct Sender {
    kind: SenderKind,
    fd: OwnedFd,
    /// Source IPv4, source and destination Ethernet addresses of a frame.
    addresses: (Ipv4Addr, [u8; 6], [u8; 6]),
    /// Through a veth: a frame the receiving CPU's backlog refuses
    /// (ENOBUFS) is not sent again, as a NIC drops what its host does not
    /// take; it counts as lost.
    drop_refused: bool,
    refused: u64,
    /// Each destination as a socket address (`udp`) and as IPv4 (`packet`).
    names: Vec<socket2::SockAddr>,
    dests: Vec<SocketAddrV4>,
    link: libc::sockaddr_ll,
    headers: Vec<[u8; HEADER_BYTES]>,
    iov: Vec<[libc::iovec; 2]>,
    msgs: Vec<libc::mmsghdr>,
}

/// Writes the Ethernet, IPv4 and UDP headers of a datagram of
/// `payload_bytes` from `addresses` (as [`Sender::addresses`]) to `dest`
/// into `h`.
fn write_headers(
    h: &mut [u8; HEADER_BYTES],
    addresses: (Ipv4Addr, [u8; 6], [u8; 6]),
    dest: SocketAddrV4,
    payload_bytes: usize,
) {
    let ip_total = (IPV4_BYTES + 8 + payload_bytes) as u16;
    let (source_ip, source_mac, destination_mac) = addresses;
    h[..6].copy_from_slice(&destination_mac);
    h[6..12].copy_from_slice(&source_mac);
    h[12..14].copy_from_slice(&(libc::ETH_P_IP as u16).to_be_bytes());
    let ip = &mut h[ETH_BYTES..ETH_BYTES + IPV4_BYTES];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
    ip[4..6].fill(0); // id: unused, as fragmenting is forbidden
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    ip[8] = 64;
    ip[9] = libc::IPPROTO_UDP as u8;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&source_ip.octets());
    ip[16..20].copy_from_slice(&dest.ip().octets());
    let sum = ipv4_header_checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut h[ETH_BYTES + IPV4_BYTES..];
    udp[0..2].copy_from_slice(&SOURCE_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&dest.port().to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_total - IPV4_BYTES as u16).to_be_bytes());
    udp[6..8].fill(0); // no checksum (IPv4 allows it)
}

impl Sender {
    fn new(config: SenderConfig, dests: &[SocketAddr]) -> io::Result<Sender> {
        let v4: Vec<SocketAddrV4> = dests
            .iter()
            .map(|d| match d {
                SocketAddr::V4(a) => Ok(*a),
                SocketAddr::V6(a) => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{a}: the bench sends to IPv4 only"),
                )),
            })
            .collect::<io::Result<_>>()?;
        // SAFETY: sockaddr_ll is plain old data.
        let mut link: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let addresses = config.wire.map_or(LOOPBACK_WIRE, |w| {
            (w.source_ip, w.source_mac, w.destination_mac)
        });
        let fd = match config.kind {
            SenderKind::Udp => OwnedFd::from(UdpSocket::bind((addresses.0, 0))?),
            SenderKind::Packet => {
                // Protocol 0: this socket receives nothing.
                // SAFETY: socket(2); the descriptor is owned at once.
                let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
                if raw < 0 {
                    return Err(os_err("AF_PACKET socket (needs CAP_NET_RAW)"));
                }
                // SAFETY: `raw` is a new descriptor nobody else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(raw) };
                let one: libc::c_int = 1;
                // SAFETY: setsockopt with a live int and its size.
                let r = unsafe {
                    libc::setsockopt(
                        raw,
                        libc::SOL_PACKET,
                        PACKET_QDISC_BYPASS,
                        (&one as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                if r != 0 {
                    return Err(os_err("PACKET_QDISC_BYPASS"));
                }
                let device = config.wire.map_or("lo", |w| w.device);
                let name = std::ffi::CString::new(device)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                // SAFETY: if_nametoindex reads a NUL-terminated name.
                let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
                if index == 0 {
                    return Err(os_err(&format!("if_nametoindex({device})")));
                }
                link.sll_family = libc::AF_PACKET as u16;
                link.sll_protocol = (libc::ETH_P_IP as u16).to_be();
                link.sll_ifindex = index as i32;
                link.sll_halen = 6;
                fd
            }
        };
        let _ = socket2::SockRef::from(&fd).set_send_buffer_size(64 << 20);
        if config.wire.is_some() {
            // A frame's buffer counts against the socket until the capture
            // CPU has received it, and the default limit (net.core.wmem_max)
            // is a few hundred frames: the sender would wait for the
            // capture, where a NIC drops what its host does not take in
            // time. So the limit is raised past wmem_max (as root), and
            // frames the capture CPU cannot queue (netdev_max_backlog) are
            // dropped and counted as the capture's loss.
            let bytes: libc::c_int = 64 << 20;
            // SAFETY: setsockopt with a live int and its size.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_SNDBUFFORCE,
                    (&bytes as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r != 0 {
                return Err(os_err("SO_SNDBUFFORCE (needs CAP_NET_ADMIN)"));
            }
        }
        let batch = config.batch.max(1);
        let empty = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        Ok(Sender {
            kind: config.kind,
            fd,
            addresses,
            drop_refused: config.wire.is_some(),
            refused: 0,
            names: dests.iter().map(|&d| d.into()).collect(),
            dests: v4,
            link,
            headers: vec![[0; HEADER_BYTES]; batch],
            iov: vec![[empty; 2]; batch],
            // SAFETY: mmsghdr is plain old data.
            msgs: vec![unsafe { std::mem::zeroed() }; batch],
        })
    }

    /// Sends each `(destination index, UDP payload)` of `items` (at most a
    /// batch), in order, retrying while the kernel is short of buffers.
    fn send<'a>(&mut self, items: impl Iterator<Item = (usize, &'a [u8])>) {
        let mut n = 0;
        for (dest, payload) in items {
            let iov = &mut self.iov[n];
            let h = &mut self.msgs[n].msg_hdr;
            match self.kind {
                SenderKind::Udp => {
                    let name = &self.names[dest];
                    iov[0] = libc::iovec {
                        iov_base: payload.as_ptr() as *mut _,
                        iov_len: payload.len(),
                    };
                    h.msg_name = name.as_ptr() as *mut _;
                    h.msg_namelen = name.len();
                    h.msg_iovlen = 1;
                }
                SenderKind::Packet => {
                    let header = &mut self.headers[n];
                    write_headers(header, self.addresses, self.dests[dest], payload.len());
                    iov[0] = libc::iovec {
                        iov_base: header.as_mut_ptr().cast(),
                        iov_len: HEADER_BYTES,
                    };
                    iov[1] = libc::iovec {
                        iov_base: payload.as_ptr() as *mut _,
                        iov_len: payload.len(),
                    };
                    h.msg_name = (&mut self.link as *mut libc::sockaddr_ll).cast();
                    h.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
                    h.msg_iovlen = 2;
                }
            }
            h.msg_iov = iov.as_mut_ptr();
            n += 1;
        }
        let mut done = 0;
        while done < n {
            // SAFETY: the headers point at live buffers and addresses; the
            // kernel only reads the payloads.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    self.msgs[done..].as_mut_ptr(),
                    (n - done) as u32,
                    0,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if self.drop_refused && e.raw_os_error() == Some(libc::ENOBUFS) {
                    self.refused += 1;
                    done += 1;
                    continue;
                }
                if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) {
                    continue;
                }
                panic!("{} sender: sendmmsg: {e}", self.kind.name());
            }
            done += r as usize;
        }
    }
}

pub struct SendResult {
    pub packets: u64,
    pub seconds: f64,
    pub cpu: f64,
    /// Of `packets`, refused by the receiving CPU's backlog (veth only).
    pub refused: u64,
}

/// Sleeps until `due`. With [`new_sender`]'s timer slack a sleep ends
/// within microseconds, so the sender spins for none of its pacing: what
/// it would spin is CPU the capture could have had, counted as the sender's.
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
}

/// A sender for this thread, whose sleeps end as close to their due time
/// as the kernel can; with a [`Wire`], this thread moves to its namespace
/// and CPU first.
fn new_sender(config: SenderConfig, dests: &[SocketAddr]) -> Sender {
    // SAFETY: prctl with a value argument; affects this thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    if let Some(w) = config.wire {
        veth::enter(w.netns)
            .and_then(|()| veth::pin_to_cpu(w.cpu))
            .and_then(|()| w.nice.map_or(Ok(()), veth::set_nice))
            .unwrap_or_else(|e| panic!("{} sender: {e}", config.kind.name()));
    }
    Sender::new(config, dests).unwrap_or_else(|e| panic!("{} sender: {e}", config.kind.name()))
}

/// Sends `total` packets round-robin to `dests` at `gbps`, a batch a
/// call, pacing each batch; each packet's seq and port are written in
/// place before it is sent. A batch is at most `packets.len()`, so each of
/// its packets has its own buffer.
pub fn send(
    config: SenderConfig,
    dests: &[SocketAddr],
    packets: &mut [Vec<u8>],
    gbps: f64,
    total: u64,
) -> SendResult {
    let mut sender = new_sender(config, dests);
    let ip_bytes = packets[0].len() + 28;
    let pps = gbps * 1e9 / 8.0 / ip_bytes as f64;
    let batch = config.batch.clamp(1, packets.len()) as u64;
    let ports = dests.len() as u64;
    let cpu0 = cpu_seconds(libc::RUSAGE_THREAD);
    let start = Instant::now();
    let mut seq = 0u64;
    while seq < total {
        wait_until(start + Duration::from_secs_f64(seq as f64 / pps));
        let n = batch.min(total - seq);
        for s in seq..seq + n {
            let buf = &mut packets[(s as usize) % packets.len()];
            let mut p = Packet::new_unchecked(&mut buf[..]);
            p.set_seq(s);
            p.set_port((s % ports) as u8);
        }
        let packets = &*packets;
        sender.send((seq..seq + n).map(|s| {
            (
                (s % ports) as usize,
                &packets[(s as usize) % packets.len()][..],
            )
        }));
        seq += n;
    }
    SendResult {
        packets: seq,
        seconds: start.elapsed().as_secs_f64(),
        cpu: cpu_seconds(libc::RUSAGE_THREAD) - cpu0,
        refused: sender.refused,
    }
}

/// Sends each `(destination index, packet)` of `list` in order at `gbps`
/// (IPv4 bytes), a batch a call, pacing each batch.
fn send_list(
    config: SenderConfig,
    dests: &[SocketAddr],
    list: &[(usize, &[u8])],
    gbps: f64,
) -> SendResult {
    let mut sender = new_sender(config, dests);
    let bytes_per_sec = gbps * 1e9 / 8.0;
    let cpu0 = cpu_seconds(libc::RUSAGE_THREAD);
    let start = Instant::now();
    let mut sent_bytes = 0u64;
    for batch in list.chunks(config.batch.max(1)) {
        wait_until(start + Duration::from_secs_f64(sent_bytes as f64 / bytes_per_sec));
        sent_bytes += batch.iter().map(|(_, b)| b.len() as u64 + 28).sum::<u64>();
        sender.send(batch.iter().copied());
    }
    SendResult {
        packets: list.len() as u64,
        seconds: start.elapsed().as_secs_f64(),
        cpu: cpu_seconds(libc::RUSAGE_THREAD) - cpu0,
        refused: sender.refused,
    }
}

/// Sends `list` as [`send_list`] does, from `threads` threads: each sends
/// the packets of every `threads`-th board, in the list's order, at its
/// share of `gbps`. So each board's packets leave in its own order, as
/// from one board, while the boards' streams go out side by side.
pub fn send_boards(
    config: SenderConfig,
    dests: &[SocketAddr],
    list: &[(usize, &[u8])],
    gbps: f64,
    threads: usize,
) -> SendResult {
    let shares: Vec<Vec<(usize, &[u8])>> = (0..threads)
        .map(|t| {
            list.iter()
                .filter(|(dest, _)| (dest / PORTS) % threads == t)
                .copied()
                .collect()
        })
        .collect();
    let all_bytes: usize = list.iter().map(|(_, b)| b.len() + 28).sum();
    let results: Vec<SendResult> = std::thread::scope(|sc| {
        let senders: Vec<_> = shares
            .iter()
            .filter(|share| !share.is_empty())
            .map(|share| {
                let bytes: usize = share.iter().map(|(_, b)| b.len() + 28).sum();
                let rate = gbps * bytes as f64 / all_bytes as f64;
                sc.spawn(move || send_list(config, dests, share, rate))
            })
            .collect();
        senders.into_iter().map(|h| h.join().unwrap()).collect()
    });
    SendResult {
        packets: results.iter().map(|r| r.packets).sum(),
        seconds: results.iter().map(|r| r.seconds).fold(0.0, f64::max),
        cpu: results.iter().map(|r| r.cpu).sum(),
        refused: results.iter().map(|r| r.refused).sum(),
    }
}
