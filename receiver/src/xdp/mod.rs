//! The xdp receive path (`--rx xdp`) of UDP inputs: an XDP program on the
//! interface of each input's address redirects the capture's datagrams to
//! AF_XDP sockets (copy mode) before the kernel builds a socket buffer for
//! them or runs its IP and UDP layers; one thread per interface reads
//! every port's socket on every receive queue.
//!
//! As on the ring path, the input's UDP port is held by a socket (the
//! *claim*) that drops whatever reaches it, and the IP layer's check is
//! made here: a datagram whose IPv4 header checksum is wrong is a reject.
//! The UDP checksum is not checked. AF_XDP gives no receive time: a
//! record's time is when the thread took the datagram off the ring.
//! A datagram to the port at another address of the interface goes on to
//! the kernel's stack.

mod bpf;
mod xsk;

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use hmtt_format::capture::RECORD_FLAG_KERNEL_DROPS;
use serde::Deserialize;
use socket2::Socket;

use crate::batch::Batch;
use crate::frame::extract_unchecked_ipv4;
use crate::input::{take_frame, Outlet};
use crate::ring::{os_err, os_err_from};
use crate::stats::Tally;

/// How the XDP program is attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    /// Native if the driver has XDP, else generic.
    #[default]
    Auto,
    /// In the driver, before any socket buffer exists.
    Native,
    /// After the kernel built the socket buffer (any interface).
    Generic,
}

/// One UDP input on an interface.
struct Port {
    input: usize,
    local: SocketAddrV4,
    /// Its drops are datagrams the program missed (see [`socket_drops`]).
    claim: Socket,
    claim_drops: std::cell::Cell<u64>,
}

/// The xdp path's sockets, program and ports on one interface.
pub struct Iface {
    pub name: String,
    /// "native" or "generic".
    pub mode: &'static str,
    ports: Vec<Port>,
    queues: Vec<xsk::Queue>,
    // Dropped after the queues: closing the link detaches the program.
    _link: OwnedFd,
    _maps: [OwnedFd; 2],
}

/// The interface holding IPv4 address `ip`: its name and index.
fn interface_of(ip: Ipv4Addr) -> io::Result<(String, u32)> {
    if ip.is_unspecified() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the xdp receive path captures on one interface: bind the input to an \
             address of that interface, not 0.0.0.0",
        ));
    }
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(os_err("listing the interfaces"));
    }
    let mut found = None;
    let mut p = list;
    while !p.is_null() {
        // SAFETY: walking the list getifaddrs made; addresses of family
        // AF_INET are sockaddr_in.
        unsafe {
            let a = (*p).ifa_addr;
            if !a.is_null() && i32::from((*a).sa_family) == libc::AF_INET {
                let sin = &*(a as *const libc::sockaddr_in);
                if Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == ip {
                    let name = std::ffi::CStr::from_ptr((*p).ifa_name);
                    found = Some((
                        name.to_string_lossy().into_owned(),
                        libc::if_nametoindex(name.as_ptr()),
                    ));
                    break;
                }
            }
            p = (*p).ifa_next;
        }
    }
    // SAFETY: freeing the list getifaddrs made, once.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{ip} is not an address of any interface here (the xdp path needs one)"),
        )
    })
}

/// Receive queues of interface `name` (index `ifindex`): its
/// `/sys/class/net/NAME/queues/rx-*`, else ethtool's rx and combined
/// channels. A queue without sockets would hand its datagrams to the
/// stack, so more queues than the sockets map has room for are refused.
fn queue_count(name: &str, ifindex: u32) -> io::Result<u32> {
    let n = sysfs_rx_queues(name, ifindex).or_else(|| ethtool_rx_queues(name));
    let n = match n {
        Some(n) if n > 0 => n,
        _ => {
            tracing::warn!("{name}: no count of receive queues (sysfs, ethtool); taking 1");
            1
        }
    };
    if n > bpf::MAX_QUEUES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{name} has {n} receive queues; the xdp path serves at most {} \
                 (fewer with `ethtool -L {name} combined {}`)",
                bpf::MAX_QUEUES,
                bpf::MAX_QUEUES
            ),
        ));
    }
    Ok(n)
}

/// The `rx-*` entries in sysfs, if sysfs shows this interface (a network
/// namespace entered without remounting /sys shows another's).
fn sysfs_rx_queues(name: &str, ifindex: u32) -> Option<u32> {
    let dir = std::path::Path::new("/sys/class/net").join(name);
    let index = std::fs::read_to_string(dir.join("ifindex")).ok()?;
    if index.trim().parse::<u32>().ok()? != ifindex {
        return None;
    }
    let n = std::fs::read_dir(dir.join("queues"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count();
    u32::try_from(n).ok()
}

/// ethtool's rx_count + combined_count, if the driver gives them.
fn ethtool_rx_queues(name: &str) -> Option<u32> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let mut ch = [0u32; 9];
    ch[0] = ETHTOOL_GCHANNELS;
    let mut ifr = [0u8; 40];
    let n = name.len().min(15);
    ifr[..n].copy_from_slice(&name.as_bytes()[..n]);
    ifr[16..24].copy_from_slice(&(ch.as_mut_ptr() as u64).to_ne_bytes());
    // SAFETY: socket(2), closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: SIOCETHTOOL with an ifreq pointing at a live ethtool_channels.
    let r = unsafe { libc::ioctl(fd, SIOCETHTOOL as _, ifr.as_mut_ptr()) };
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    // rx_count + combined_count
    (r == 0).then(|| ch[5].saturating_add(ch[8]))
}

/// Datagrams the kernel's stack dropped at socket `s` (SO_MEMINFO's
/// SK_MEMINFO_DROPS); `None` when it cannot be read.
fn socket_drops(s: &Socket) -> Option<u64> {
    const SK_MEMINFO_DROPS: usize = 8;
    let mut v = [0u32; 9];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: getsockopt into a live array of its size.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            v.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (r == 0 && len as usize > SK_MEMINFO_DROPS * 4).then(|| u64::from(v[SK_MEMINFO_DROPS]))
}

/// A claim on the UDP port of `addr` (see the module's notes).
fn claim(addr: SocketAddrV4) -> io::Result<(Socket, SocketAddrV4)> {
    let s = crate::ring::refusing_udp_socket()
        .map_err(|e| os_err_from("the port's claim socket", e))?;
    s.bind(&SocketAddr::V4(addr).into())?;
    let local = match s.local_addr()?.as_socket() {
        Some(SocketAddr::V4(a)) => a,
        _ => addr,
    };
    Ok((s, local))
}

/// Opens the xdp path for `inputs` (index, address): one [`Iface`] per
/// interface. `rcvbuf` bytes of frames per port. An error names the
/// input it concerns.
pub fn open(
    inputs: &[(usize, &str)],
    rcvbuf: usize,
    mode: XdpMode,
) -> Result<Vec<Iface>, (usize, io::Error)> {
    let mut by_if: Vec<(String, u32, Vec<Port>)> = Vec::new();
    for &(input, spec) in inputs {
        let fail = |e| (input, e);
        let addr = match spec.parse::<SocketAddr>() {
            Ok(SocketAddr::V4(a)) => a,
            Ok(_) => {
                return Err(fail(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the xdp receive path takes IPv4 addresses only (use --rx socket)",
                )))
            }
            Err(e) => {
                return Err(fail(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{spec}`: {e}"),
                )))
            }
        };
        let (name, ifindex) = interface_of(*addr.ip()).map_err(fail)?;
        let (claim, local) = claim(addr).map_err(fail)?;
        let port = Port {
            input,
            local,
            claim,
            claim_drops: Default::default(),
        };
        match by_if.iter_mut().find(|(_, i, _)| *i == ifindex) {
            Some((_, _, ports)) => ports.push(port),
            None => by_if.push((name, ifindex, vec![port])),
        }
    }
    by_if
        .into_iter()
        .map(|(name, ifindex, ports)| {
            let first = ports[0].input;
            open_iface(name, ifindex, ports, rcvbuf, mode).map_err(|e| (first, e))
        })
        .collect()
}

fn open_iface(
    name: String,
    ifindex: u32,
    ports: Vec<Port>,
    rcvbuf: usize,
    mode: XdpMode,
) -> io::Result<Iface> {
    let mut seen: Vec<u16> = ports.iter().map(|p| p.local.port()).collect();
    seen.sort_unstable();
    if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{name}: two inputs on UDP port {}: the xdp path tells ports apart by number",
                w[0]
            ),
        ));
    }
    let bpf_err = |what: &str, e: io::Error| {
        let hint = if e.raw_os_error() == Some(libc::EPERM) {
            " (needs CAP_BPF and CAP_NET_ADMIN: run as root)"
        } else {
            ""
        };
        os_err_from(&format!("{name}: {what}{hint}"), e)
    };
    let nq = queue_count(&name, ifindex)?;
    let per_queue = (rcvbuf.saturating_mul(ports.len()) / xsk::FRAME / nq as usize).max(64);
    let frames = (1u32 << per_queue.ilog2().min(18)).max(64);
    let port_map = bpf::ports_map().map_err(|e| bpf_err("the ports map", e))?;
    let xsk_map = bpf::xsk_map(ports.len() as u32).map_err(|e| bpf_err("the sockets map", e))?;
    let mut queues: Vec<xsk::Queue> = Vec::new();
    for q in 0..nq {
        let sg = queues.first().is_none_or(xsk::Queue::sg);
        let queue = xsk::Queue::open(ifindex, q, ports.len(), frames, sg)
            .map_err(|e| os_err_from(&format!("{name} queue {q}"), e))?;
        if sg && !queue.sg() {
            tracing::warn!(
                "{name}: this kernel has no multi-buffer AF_XDP (6.6 or later): a frame \
                 longer than {} bytes is dropped by the kernel and counted as a kernel drop",
                xsk::FRAME
            );
        }
        for (slot, s) in queue.sockets.iter().enumerate() {
            let key = slot as u32 * bpf::MAX_QUEUES + q;
            bpf::map_set(&xsk_map, key, &(s.fd() as u32))
                .map_err(|e| bpf_err("the sockets map", e))?;
        }
        queues.push(queue);
    }
    let frags = queues.iter().all(xsk::Queue::sg);
    let prog = bpf::load(
        &bpf::program(port_map.as_raw_fd(), xsk_map.as_raw_fd()),
        frags,
    )
    .map_err(|e| bpf_err("loading the XDP program", e))?;
    for (slot, p) in ports.iter().enumerate() {
        let v = bpf::PortValue {
            slot1: slot as u32 + 1,
            daddr: p.local.ip().octets(),
        };
        bpf::map_set(&port_map, u32::from(p.local.port()), &v)
            .map_err(|e| bpf_err("the ports map", e))?;
    }
    let tries: &[(u32, &'static str)] = match mode {
        XdpMode::Auto => &[
            (bpf::XDP_FLAGS_DRV, "native"),
            (bpf::XDP_FLAGS_SKB, "generic"),
        ],
        XdpMode::Native => &[(bpf::XDP_FLAGS_DRV, "native")],
        XdpMode::Generic => &[(bpf::XDP_FLAGS_SKB, "generic")],
    };
    let mut last = None;
    for &(flags, mode) in tries {
        match bpf::attach(&prog, ifindex, flags) {
            Ok(link) => {
                tracing::info!("{name}: XDP program attached in {mode} mode, {nq} queue(s), {frames} frames each");
                return Ok(Iface {
                    name,
                    mode,
                    ports,
                    queues,
                    _link: link,
                    _maps: [port_map, xsk_map],
                });
            }
            Err(e) => {
                tracing::info!("{name}: no {mode} XDP: {e}");
                last = Some(bpf_err(
                    &format!("attaching the XDP program in {mode} mode"),
                    e,
                ));
            }
        }
    }
    Err(last.expect("at least one mode is tried"))
}

impl Iface {
    /// The input indices of its ports, in slot order.
    pub fn inputs(&self) -> Vec<usize> {
        self.ports.iter().map(|p| p.input).collect()
    }
    /// The claimed address of each port, in slot order.
    pub fn local_addrs(&self) -> Vec<SocketAddrV4> {
        self.ports.iter().map(|p| p.local).collect()
    }
    /// Datagrams of slot `si` the kernel dropped: at its AF_XDP sockets,
    /// and at its claim (datagrams the program left to the stack, such as
    /// those that came before it was attached).
    fn drops(&self, si: usize) -> u64 {
        let xsk: u64 = self.queues.iter().map(|q| q.sockets[si].drops()).sum();
        let p = &self.ports[si];
        let claim = match socket_drops(&p.claim) {
            Some(n) => {
                p.claim_drops.set(n);
                n
            }
            None => p.claim_drops.get(),
        };
        xsk + claim
    }
    /// Bytes of frames per port.
    pub fn frame_bytes(&self) -> usize {
        self.queues
            .iter()
            .map(|q| q.frames() as usize * xsk::FRAME)
            .sum::<usize>()
            / self.ports.len()
    }
}

/// A port's receive state in the interface's thread.
struct Slot {
    out: Outlet,
    batch: Batch,
    tally: Tally,
    started: Option<Instant>,
    drops: u64,
    drops_flag: bool,
    local: SocketAddrV4,
    ignored: u64,
}

impl Slot {
    fn take(&mut self, pkt: &[u8], now: u64, whole: bool) {
        let ip = match pkt.get(12..14) {
            Some([8, 0]) => &pkt[14..],
            _ => {
                self.ignored += 1;
                return;
            }
        };
        if ip.get(16..20) != Some(&self.local.ip().octets()[..]) {
            self.ignored += 1;
            return;
        }
        let frame = extract_unchecked_ipv4(ip, Some(self.local.port()));
        let flags = if self.drops_flag {
            RECORD_FLAG_KERNEL_DROPS
        } else {
            0
        };
        if !take_frame(&mut self.batch, frame, whole, now, flags, &mut self.tally) {
            self.ignored += 1;
            return;
        }
        self.drops_flag = false;
        self.started.get_or_insert_with(Instant::now);
        if self.batch.is_full() {
            self.dispatch();
        }
    }

    fn dispatch(&mut self) {
        let input = self.out.input;
        self.out.shared.add(input, &mut self.tally);
        if self.ignored > 0 {
            self.out.shared.ports[input]
                .ignored_frames
                .fetch_add(self.ignored, Relaxed);
            self.ignored = 0;
        }
        let b = std::mem::replace(&mut self.batch, Batch::new(0, 0, 0, 0));
        self.batch = self.out.dispatch(b);
        self.started = None;
    }
}

/// The largest datagram assembled from several frames: an IPv4 datagram
/// with its Ethernet header. Longer is cut (and rejected as cut).
const MAX_FRAME: usize = 65_535 + 14;
/// An empty turn sleeps this long, so that the next one finds a batch of
/// datagrams rather than one.
const IDLE_SLEEP: Duration = Duration::from_micros(100);
/// After this long without a datagram the ports' batches go to their
/// writers (the ring path's block timeout) and the thread waits in
/// poll() for the sockets rather than waking every `IDLE_SLEEP`: handing
/// a batch over at every empty turn cost a writer's wake-up and write
/// per few datagrams at moderate rates.
const IDLE_DISPATCH: Duration = Duration::from_millis(1);
const POLL_MS: i32 = 10;
const DRAIN_POLL_MS: i32 = 2;
/// How often the sockets' drop counters are read (a system call each).
const STATS_EVERY: Duration = Duration::from_millis(10);
const DRAIN_LIMIT: Duration = Duration::from_secs(1);
const DRAIN_IDLE: Duration = Duration::from_millis(20);
const BUDGET: u32 = 256;

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Receives the interface's datagrams until asked to stop, then what the
/// rings still hold. `outs` in the interface's slot order.
pub fn run(iface: Iface, outs: Vec<Outlet>, flush_after: Duration) {
    let mut slots: Vec<Slot> = outs
        .into_iter()
        .zip(iface.local_addrs())
        .map(|(out, local)| Slot {
            batch: out.take(),
            tally: Tally::of(&out.shared),
            out,
            started: None,
            drops: 0,
            drops_flag: false,
            local,
            ignored: 0,
        })
        .collect();
    let shared = slots[0].out.shared.clone();
    // Per queue and socket: the frames of a datagram not yet complete.
    let mut partial: Vec<Vec<(Vec<u8>, bool)>> = iface
        .queues
        .iter()
        .map(|q| q.sockets.iter().map(|_| (Vec::new(), true)).collect())
        .collect();
    let mut addrs: Vec<u64> = Vec::with_capacity(BUDGET as usize);
    let mut draining: Option<Instant> = None;
    let mut stats_at = Instant::now();
    let mut idle_since: Option<Instant> = None;
    let mut waits: Vec<libc::pollfd> = iface
        .queues
        .iter()
        .flat_map(|q| &q.sockets)
        .map(|s| libc::pollfd {
            fd: s.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        if draining.is_none() && shared.stopping() {
            draining = Some(Instant::now());
        }
        let mut got = 0;
        for (qi, q) in iface.queues.iter().enumerate() {
            for (si, s) in q.sockets.iter().enumerate() {
                let (cons, n) = s.peek(BUDGET);
                if n == 0 {
                    continue;
                }
                let now = now_ns();
                let slot = &mut slots[si];
                let (buf, whole) = &mut partial[qi][si];
                for k in 0..n {
                    let d = s.desc(cons.wrapping_add(k));
                    addrs.push(d.addr);
                    let data = q.data(&d);
                    let more = d.options & libc::XDP_PKT_CONTD != 0;
                    if more || !buf.is_empty() {
                        let room = MAX_FRAME.saturating_sub(buf.len());
                        *whole &= data.len() <= room;
                        buf.extend_from_slice(&data[..data.len().min(room)]);
                        if !more {
                            slot.take(buf, now, *whole);
                            buf.clear();
                            *whole = true;
                        }
                    } else {
                        slot.take(data, now, true);
                    }
                }
                s.release(cons, n);
                q.refill(&addrs);
                addrs.clear();
                got += n;
            }
        }
        if stats_at.elapsed() >= STATS_EVERY {
            stats_at = Instant::now();
            for (si, slot) in slots.iter_mut().enumerate() {
                let drops = iface.drops(si);
                if drops != slot.drops {
                    slot.drops = drops;
                    slot.drops_flag = true;
                    shared.ports[slot.out.input]
                        .kernel_drops
                        .store(drops, Relaxed);
                }
            }
        }
        let idle = if got == 0 {
            idle_since.get_or_insert_with(Instant::now).elapsed()
        } else {
            idle_since = None;
            Duration::ZERO
        };
        for slot in &mut slots {
            if idle >= IDLE_DISPATCH && !slot.batch.is_empty()
                || slot.started.is_some_and(|s| s.elapsed() >= flush_after)
            {
                slot.dispatch();
            }
        }
        if got == 0 {
            // What was on its way when the stop came has reached the rings by now.
            if draining.is_some_and(|d| d.elapsed() > DRAIN_IDLE) {
                break;
            }
            if idle < IDLE_DISPATCH {
                std::thread::sleep(IDLE_SLEEP);
            } else {
                let ms = if draining.is_some() {
                    DRAIN_POLL_MS
                } else {
                    POLL_MS
                };
                // SAFETY: poll on the interface's live sockets, `waits.len()` entries.
                unsafe { libc::poll(waits.as_mut_ptr(), waits.len() as libc::nfds_t, ms) };
            }
        }
        if draining.is_some_and(|d| d.elapsed() > DRAIN_LIMIT) {
            break;
        }
    }
    for (si, slot) in slots.iter_mut().enumerate() {
        let drops = iface.drops(si);
        shared.ports[slot.out.input]
            .kernel_drops
            .store(drops, Relaxed);
        slot.dispatch();
        slot.out.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_counts_the_datagrams_it_drops() {
        let (c, local) = claim("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_eq!(socket_drops(&c), Some(0));
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..3 {
            tx.send_to(b"x", local).unwrap();
        }
        let t = Instant::now();
        while socket_drops(&c) != Some(3) && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(socket_drops(&c), Some(3));
    }

    #[test]
    fn loopback_has_one_receive_queue() {
        // SAFETY: a NUL-terminated name.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(queue_count("lo", lo).unwrap(), 1);
        assert_eq!(sysfs_rx_queues("lo", lo + 1000), None);
    }
}
