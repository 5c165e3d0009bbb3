//! The ring receive path (`--rx ring`) of a UDP input: an AF_PACKET
//! socket with a TPACKET_V3 ring of blocks shared with the kernel, so one
//! wakeup hands over a whole block of datagrams with no system call per
//! datagram and no socket queue. A classic BPF filter in the kernel keeps
//! only IPv4 UDP datagrams to the input's address and port. The rings of
//! one capture form one fanout group ([`share_tap`]) whose program hands
//! each datagram to the ring of its port, so the kernel's per-datagram work
//! does not grow with the number of inputs.
//!
//! The input's UDP port is still bound by an ordinary socket (the *claim*)
//! so that the kernel answers no datagram with an ICMP "port unreachable";
//! a filter that refuses everything makes the claim drop each datagram at
//! once instead of queueing it (the kernel counts these in its UDP
//! `InErrors`). The ring sees datagrams before the IP layer, so it does
//! the IP layer's check itself: a datagram whose IPv4 header checksum is
//! wrong, which the socket path's kernel drops (counted only in its IP
//! `InCsumErrors`), is a reject here (in the port's reject file, counted
//! in its rejects), never a trace packet. It checks no UDP checksum (as
//! tcpdump does not): a payload damaged after the network card checked
//! its Ethernet frame (FCS) is kept and checked only as a board packet,
//! where the socket path's kernel would drop it (counted only in the
//! kernel's UDP `InCsumErrors`). A datagram the network fragmented
//! arrives as its first fragment, kept as a cut reject.

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::frame::extract_unchecked_ipv4;
use crate::input::{take_frame, Outlet};
use crate::stats::Tally;
use hmtt_format::capture::RECORD_FLAG_KERNEL_DROPS;
use std::sync::atomic::Ordering::Relaxed;

/// Bytes per ring block: room for the largest IPv4 datagram (64 KiB) with
/// its headers, so no datagram is cut by the ring.
pub const BLOCK_BYTES: usize = 1 << 20;
/// The ring's nominal frame size (TPACKET_V3 packs datagrams of any size
/// into a block; the kernel only checks this divides the block).
const FRAME_BYTES: usize = 2048;
/// A block holding at least one datagram is handed over within two of
/// these (the kernel closes a block at a timer tick when it was already
/// the open block at the tick before).
const BLOCK_TIMEOUT_MS: u32 = 10;
const POLL_MS: i32 = 50;
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// An AF_PACKET receive ring for one UDP input.
pub struct Ring {
    fd: OwnedFd,
    map: *mut u8,
    blocks: usize,
    next: usize,
    /// The socket that holds the UDP port (see the module's notes).
    claim: Socket,
    local: SocketAddrV4,
    kernel_drops: u64,
}

// SAFETY: the mapping is owned by this value alone and used by one thread.
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the ring mapped in `open`, once.
        unsafe { libc::munmap(self.map.cast(), self.blocks * BLOCK_BYTES) };
    }
}

pub(crate) fn os_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

pub(crate) fn setsockopt<T>(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: setsockopt with a pointer to a live value and its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// getsockopt into a `T` of plain old data (all-zero bytes a valid `T`).
pub(crate) fn getsockopt<T: Copy>(
    fd: libc::c_int,
    level: libc::c_int,
    opt: libc::c_int,
) -> io::Result<T> {
    // SAFETY: T is plain old data, for which zeroed bytes are a value.
    let mut value: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: getsockopt into a live `T` of the given size.
    let r = unsafe { libc::getsockopt(fd, level, opt, (&mut value as *mut T).cast(), &mut len) };
    if r == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

pub(crate) fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// A UDP socket whose filter refuses every datagram: bound, it claims a
/// port from the stack (no ICMP port unreachable), and counts in its drops
/// what reached it.
pub(crate) fn refusing_udp_socket() -> io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    attach_filter(s.as_raw_fd(), &[insn(RET_K, 0, 0, 0)])?;
    Ok(s)
}

pub(crate) fn attach_filter(fd: libc::c_int, prog: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr().cast_mut(),
    };
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
}

// Classic BPF opcodes (linux/filter.h).
const LD_B_ABS: u16 = 0x30;
const LD_H_ABS: u16 = 0x28;
const LD_W_ABS: u16 = 0x20;
const LD_H_IND: u16 = 0x48;
const LDX_B_MSH: u16 = 0xb1;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
/// The ancillary load of the packet's link-layer protocol (`skb->protocol`,
/// SKF_AD_OFF + SKF_AD_PROTOCOL): read from the kernel's packet
/// descriptor, not from the packet.
const AD_PROTOCOL: u32 = 0xffff_f000;

/// A filter over packets seen from their network header: IPv4 UDP to
/// `dst`, the first fragment or a whole datagram; the unspecified address
/// matches any. Every load past the link header of a jumbo frame the
/// kernel received in pages is a copy out of a page, and each ring's filter
/// sees every input's datagrams; so a header without options (the usual
/// case) is checked port first, two loads to refuse another input's
/// datagram, and only a header with options takes the general path.
fn udp_filter(dst: SocketAddrV4) -> Vec<libc::sock_filter> {
    let ip = u32::from(*dst.ip());
    let port = u32::from(dst.port());
    let checks_address = !dst.ip().is_unspecified();
    let mut p = vec![
        insn(LD_H_ABS, 0, 0, AD_PROTOCOL),
        insn(JEQ_K, 0, 0, u32::from(libc::ETH_P_IP as u16)),
        insn(LD_B_ABS, 0, 0, 0),      // version and header length
        insn(JEQ_K, 0, 0, 0x45),      // jf patched: to the general path
        insn(LD_H_ABS, 0, 0, 20 + 2), // UDP destination port after 20 bytes
        insn(JEQ_K, 0, 0, port),
    ];
    let to_general = 3;
    let rest = |p: &mut Vec<libc::sock_filter>| {
        p.push(insn(LD_B_ABS, 0, 0, 9)); // protocol
        p.push(insn(JEQ_K, 0, 0, 17));
        if checks_address {
            p.push(insn(LD_W_ABS, 0, 0, 16)); // destination address
            p.push(insn(JEQ_K, 0, 0, ip));
        }
        p.push(insn(LD_H_ABS, 0, 0, 6)); // flags and fragment offset
        p.push(insn(JSET_K, 0, 0, 0x1fff)); // a later fragment
    };
    rest(&mut p);
    p.push(insn(RET_K, 0, 0, u32::MAX)); // accept whole
    p[to_general].jf = (p.len() - to_general - 1) as u8;
    // The general path: any header length.
    rest(&mut p);
    p.push(insn(LDX_B_MSH, 0, 0, 0)); // X = header length
    p.push(insn(LD_H_IND, 0, 0, 2)); // UDP destination port
    p.push(insn(JEQ_K, 0, 0, port));
    p.push(insn(RET_K, 0, 0, u32::MAX)); // accept whole
    p.push(insn(RET_K, 0, 0, 0)); // refuse
    let refuse = p.len() - 1;
    for (i, x) in p.iter_mut().enumerate().take(refuse) {
        let to_refuse = (refuse - i - 1) as u8;
        match x.code {
            JEQ_K if i != to_general => x.jf = to_refuse,
            JSET_K => x.jt = to_refuse,
            _ => {}
        }
    }
    p
}

impl Ring {
    /// Claims the UDP port of `addr` (IPv4; port 0 = any free one) and sets
    /// up a ring of about `bytes` bytes (at least 4 blocks of
    /// [`BLOCK_BYTES`]) receiving its datagrams on every interface.
    pub fn open(addr: &str, bytes: usize) -> io::Result<Ring> {
        let addr: SocketAddr = addr
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("`{addr}`: {e}")))?;
        let SocketAddr::V4(addr) = addr else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{addr}: the ring receive path takes IPv4 addresses only (use --rx socket)"
                ),
            ));
        };
        let claim = refusing_udp_socket()?;
        // A given port is claimed once the ring receives, so that a sender
        // waiting for the port to be taken loses nothing; port 0 is claimed
        // first, to learn which port the filter must take.
        let local = if addr.port() == 0 {
            claim.bind(&SocketAddr::V4(addr).into())?;
            match claim.local_addr()?.as_socket() {
                Some(SocketAddr::V4(a)) => a,
                _ => addr,
            }
        } else {
            addr
        };

        // Protocol 0 until bound: no datagram enters before the filter and ring.
        // SAFETY: socket(2); the descriptor is owned at once.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) };
        if raw < 0 {
            return Err(os_err("AF_PACKET socket (needs CAP_NET_RAW)"));
        }
        // SAFETY: `raw` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        attach_filter(raw, &udp_filter(local)).map_err(|e| os_err_from("filter", e))?;
        let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
            .map_err(|e| os_err_from("TPACKET_V3", e))?;
        // Bound to every protocol, the ring sees each datagram a packet
        // tap sees, leaving and arriving (loopback shows both).
        if setsockopt(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32).is_err() {
            tracing::debug!("no PACKET_IGNORE_OUTGOING: outgoing copies are skipped in the ring");
        }
        let blocks = (bytes / BLOCK_BYTES).max(4);
        let req = libc::tpacket_req3 {
            tp_block_size: BLOCK_BYTES as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: FRAME_BYTES as u32,
            tp_frame_nr: (blocks * (BLOCK_BYTES / FRAME_BYTES)) as u32,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|e| {
            os_err_from(
                &format!("a ring of {blocks} blocks of {BLOCK_BYTES} bytes"),
                e,
            )
        })?;
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                blocks * BLOCK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(os_err("mapping the ring"));
        }
        let ring = Ring {
            fd,
            map: map.cast(),
            blocks,
            next: 0,
            claim,
            local,
            kernel_drops: 0,
        };
        // SAFETY: sockaddr_ll is plain old data.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        // Every protocol, and the filter keeps IPv4: a tap on every protocol
        // costs the kernel about 0.3 us less per 9000-byte datagram than
        // one on IPv4 alone (bench/receiver-history.md).
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = 0; // every interface
                             // SAFETY: bind with a live sockaddr_ll and its size.
        let r = unsafe {
            libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(os_err("binding the AF_PACKET socket"));
        }
        if addr.port() != 0 {
            ring.claim.bind(&SocketAddr::V4(addr).into())?;
        }
        Ok(ring)
    }

    /// The claimed address (with the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// Bytes of the ring.
    pub fn bytes(&self) -> usize {
        self.blocks * BLOCK_BYTES
    }

    /// Adds the drops the kernel counted since the last call (reading
    /// resets its counter); returns how many were new.
    fn read_drops(&mut self) -> u64 {
        let Ok(st) = getsockopt::<libc::tpacket_stats_v3>(
            self.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
        ) else {
            return 0;
        };
        self.kernel_drops += u64::from(st.tp_drops);
        u64::from(st.tp_drops)
    }

    fn block(&self, i: usize) -> *mut libc::tpacket_block_desc {
        // SAFETY: block `i < blocks` lies inside the mapping.
        unsafe { self.map.add(i * BLOCK_BYTES).cast() }
    }

    /// The status word of block `i`, read with acquire ordering: the
    /// kernel writes the block's packets before it sets the status.
    fn block_ready(&self, i: usize) -> bool {
        // SAFETY: the status is a u32 in the mapped block header, written
        // by the kernel; read it through an atomic view.
        let status = unsafe {
            let p = std::ptr::addr_of_mut!((*self.block(i)).hdr.bh1.block_status);
            (*(p as *const std::sync::atomic::AtomicU32)).load(std::sync::atomic::Ordering::Acquire)
        };
        status & libc::TP_STATUS_USER != 0
    }

    fn release_block(&self, i: usize) {
        // SAFETY: as in `block_ready`; release ordering so our reads of the
        // block are done before the kernel may refill it.
        unsafe {
            let p = std::ptr::addr_of_mut!((*self.block(i)).hdr.bh1.block_status);
            (*(p as *const std::sync::atomic::AtomicU32))
                .store(libc::TP_STATUS_KERNEL, std::sync::atomic::Ordering::Release);
        }
    }

    fn poll(&self, ms: i32) {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // SAFETY: poll on one live descriptor.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }
}

// linux/if_packet.h: a fanout group choosing its member by a classic BPF
// program, with an id the kernel picks, deaf to outgoing packets.
const PACKET_FANOUT_CBPF: u32 = 6;
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;
const PACKET_FANOUT_FLAG_IGNORE_OUTGOING: u32 = 0x4000;

/// The fanout group's program: the index in `ports` of a datagram's UDP
/// destination port, 0 for anything else (that ring's own filter refuses
/// it). None when the jumps do not fit in a classic BPF program.
fn demux_filter(ports: &[u16]) -> Option<Vec<libc::sock_filter>> {
    let n = ports.len();
    // Loads and compares, then one return per port after the default;
    // the longest jump, from the protocol check to the default, is n + 2.
    if n + 2 > usize::from(u8::MAX) {
        return None;
    }
    let first_return = 4 + n;
    let mut p = vec![
        insn(LD_H_ABS, 0, 0, AD_PROTOCOL),
        insn(
            JEQ_K,
            0,
            (first_return - 2) as u8,
            u32::from(libc::ETH_P_IP as u16),
        ),
        insn(LDX_B_MSH, 0, 0, 0), // X = header length
        insn(LD_H_IND, 0, 0, 2),  // UDP destination port
    ];
    for (j, &port) in ports.iter().enumerate() {
        let at = p.len();
        let to_return = first_return + 1 + j - at - 1;
        p.push(insn(JEQ_K, to_return as u8, 0, u32::from(port)));
    }
    p.push(insn(RET_K, 0, 0, 0));
    p.extend((0..n).map(|j| insn(RET_K, 0, 0, j as u32)));
    Some(p)
}

/// Makes `rings` one fanout group whose program hands each datagram to the
/// ring of its UDP destination port: the kernel then runs one ring's
/// receive path and filter per datagram instead of every ring's (measured
/// ~0.6-0.9 us per 9000-byte datagram with three rings; bench/
/// receiver-history.md). Each ring still filters what it is handed, and a
/// ring that did not join keeps its own tap; so a failure here (an old
/// kernel) costs only speed, and is reported for the log.
pub fn share_tap(rings: &[&Ring]) -> io::Result<()> {
    let [first, rest @ ..] = rings else {
        return Ok(());
    };
    if rest.is_empty() {
        return Ok(());
    }
    let ports: Vec<u16> = rings.iter().map(|r| r.local.port()).collect();
    // The program tells rings apart by port alone: two inputs on one port
    // (at different addresses) would leave the second ring deaf.
    let mut sorted = ports.clone();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "two inputs listen on UDP port {}: each ring keeps its own tap",
                w[0]
            ),
        ));
    }
    let prog = demux_filter(&ports).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} rings in one program", rings.len()),
        )
    })?;
    let mode = PACKET_FANOUT_CBPF | PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
    let fd = first.fd.as_raw_fd();
    setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_FANOUT,
        &((mode | PACKET_FANOUT_FLAG_UNIQUEID) << 16),
    )
    .map_err(|e| os_err_from("creating the fanout group", e))?;
    let arg: u32 = getsockopt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT)
        .map_err(|e| os_err_from("reading the fanout group's id", e))?;
    // Set while the group has its first ring alone, so that each datagram
    // finds its ring in the group or on that ring's own tap.
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr().cast_mut(),
    };
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT_DATA, &fprog)
        .map_err(|e| os_err_from("the fanout group's program", e))?;
    for ring in rest {
        setsockopt(
            ring.fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_FANOUT,
            &((mode << 16) | (arg & 0xffff)),
        )
        .map_err(|e| os_err_from("joining the fanout group", e))?;
    }
    Ok(())
}

pub(crate) fn os_err_from(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// One datagram of a block, as the kernel laid it out.
struct Slot<'a> {
    ip: &'a [u8],
    whole: bool,
    outgoing: bool,
    losing: bool,
    recv_ns: u64,
}

/// The datagrams of a block that the kernel handed over.
fn block_slots(block: &[u8]) -> impl Iterator<Item = Slot<'_>> + '_ {
    let word = |at: usize| -> u32 {
        block
            .get(at..at + 4)
            .map_or(0, |b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
    };
    // tpacket_block_desc: version, offset_to_priv, then tpacket_hdr_v1.
    let num = word(12) as usize;
    let mut off = word(16) as usize;
    let hdr_len = std::mem::size_of::<libc::tpacket3_hdr>().next_multiple_of(16);
    (0..num).map_while(move |_| {
        let h = block.get(off..off + std::mem::size_of::<libc::tpacket3_hdr>())?;
        let at = |k: usize| u32::from_ne_bytes(h[k..k + 4].try_into().expect("4 bytes"));
        let next = at(0) as usize;
        let (sec, nsec, snaplen, len, status) = (at(4), at(8), at(12), at(16), at(20));
        let net = usize::from(u16::from_ne_bytes([h[26], h[27]]));
        // sockaddr_ll follows the aligned header: family(2) protocol(2)
        // ifindex(4) hatype(2) pkttype(1).
        let pkttype = *block.get(off + hdr_len + 10)?;
        let ip = block.get(off + net..off + net + snaplen as usize)?;
        let slot = Slot {
            ip,
            whole: snaplen == len,
            outgoing: pkttype == libc::PACKET_OUTGOING,
            losing: status & libc::TP_STATUS_LOSING != 0,
            recv_ns: u64::from(sec) * 1_000_000_000 + u64::from(nsec),
        };
        off = if next == 0 { block.len() } else { off + next };
        Some(slot)
    })
}

/// Receives the ring's datagrams until asked to stop, then the blocks the
/// kernel still hands over (for at most a second). Each datagram goes
/// through the same checks and accounting as the pcap path's frames.
pub fn run_ring(mut ring: Ring, mut out: Outlet, flush_after: Duration) {
    let input = out.input;
    let port = ring.local.port();
    let shared = out.shared.clone();
    let counters = &shared.ports[input];
    let mut batch = out.take();
    let mut tally = Tally::of(&shared);
    let mut started: Option<Instant> = None;
    let mut draining: Option<Instant> = None;
    let mut ignored = 0u64;
    // A block open when the stop came is handed over at its timeout.
    let drain_wait = Duration::from_millis(u64::from(BLOCK_TIMEOUT_MS) * 3 + 20);
    loop {
        if draining.is_none() && shared.stopping() {
            draining = Some(Instant::now());
        }
        let i = ring.next;
        if ring.block_ready(i) {
            // SAFETY: a block marked for user space is ours until released.
            let block =
                unsafe { std::slice::from_raw_parts(ring.block(i).cast::<u8>(), BLOCK_BYTES) };
            for slot in block_slots(block) {
                if slot.outgoing {
                    continue;
                }
                let mut flags = 0;
                if slot.losing && ring.read_drops() > 0 {
                    flags |= RECORD_FLAG_KERNEL_DROPS;
                    counters.kernel_drops.store(ring.kernel_drops, Relaxed);
                }
                let frame = extract_unchecked_ipv4(slot.ip, Some(port));
                if !take_frame(
                    &mut batch,
                    frame,
                    slot.whole,
                    slot.recv_ns,
                    flags,
                    &mut tally,
                ) {
                    ignored += 1;
                    continue;
                }
                if started.is_none() {
                    started = Some(Instant::now());
                }
                if batch.is_full() {
                    shared.add(input, &mut tally);
                    batch = out.dispatch(batch);
                    started = None;
                }
            }
            ring.release_block(i);
            ring.next = (i + 1) % ring.blocks;
            shared.add(input, &mut tally);
        } else {
            if ring.read_drops() > 0 {
                counters.kernel_drops.store(ring.kernel_drops, Relaxed);
            }
            if !batch.is_empty() {
                shared.add(input, &mut tally);
                batch = out.dispatch(batch);
                started = None;
            }
            if draining.is_some_and(|d| d.elapsed() > drain_wait) {
                break;
            }
            ring.poll(if draining.is_some() { 5 } else { POLL_MS });
        }
        if ignored > 0 {
            counters.ignored_frames.fetch_add(ignored, Relaxed);
            ignored = 0;
        }
        if started.is_some_and(|s| s.elapsed() >= flush_after) {
            shared.add(input, &mut tally);
            batch = out.dispatch(batch);
            started = None;
        }
        if draining.is_some_and(|d| d.elapsed() > DRAIN_LIMIT) {
            break;
        }
    }
    ring.read_drops();
    counters.kernel_drops.store(ring.kernel_drops, Relaxed);
    shared.add(input, &mut tally);
    let _ = out.dispatch(batch);
    out.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// Runs a classic BPF program of the opcodes `udp_filter` uses over
    /// `packet` (from its network header) with link protocol `protocol`,
    /// as the kernel does: a load past the end refuses the packet.
    fn run(prog: &[libc::sock_filter], protocol: u16, packet: &[u8]) -> u32 {
        let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
        let load = |at: usize, n: usize| -> Option<u32> {
            let b = packet.get(at..at + n)?;
            Some(b.iter().fold(0u32, |v, &c| (v << 8) | u32::from(c)))
        };
        loop {
            let i = prog[pc];
            pc += 1;
            let k = i.k as usize;
            let loaded = match i.code {
                LD_H_ABS if i.k == AD_PROTOCOL => Some(u32::from(protocol)),
                LD_B_ABS => load(k, 1),
                LD_H_ABS => load(k, 2),
                LD_W_ABS => load(k, 4),
                LD_H_IND => load(x as usize + k, 2),
                LDX_B_MSH => {
                    let Some(b) = load(k, 1) else { return 0 };
                    x = (b & 0xf) * 4;
                    continue;
                }
                JEQ_K => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                    continue;
                }
                JSET_K => {
                    pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf });
                    continue;
                }
                RET_K => return i.k,
                other => panic!("opcode {other:#x} not modelled"),
            };
            match loaded {
                Some(v) => a = v,
                None => return 0,
            }
        }
    }

    /// An IPv4 UDP datagram with `options` words of IP options.
    fn datagram(options: u8, protocol: u8, dst: Ipv4Addr, frag: u16, port: u16) -> Vec<u8> {
        let ihl = 5 + options;
        let mut p = vec![0u8; usize::from(ihl) * 4 + 8 + 16];
        p[0] = 0x40 | ihl;
        p[6..8].copy_from_slice(&frag.to_be_bytes());
        p[9] = protocol;
        p[16..20].copy_from_slice(&dst.octets());
        let udp = usize::from(ihl) * 4;
        p[udp..udp + 2].copy_from_slice(&9u16.to_be_bytes());
        p[udp + 2..udp + 4].copy_from_slice(&port.to_be_bytes());
        p
    }

    #[test]
    fn demux_hands_each_port_to_its_ring() {
        const IP: u16 = libc::ETH_P_IP as u16;
        let local = Ipv4Addr::new(127, 0, 0, 1);
        let ports: Vec<u16> = (0..12).map(|j| 7000 + 3 * j).collect();
        let prog = demux_filter(&ports).unwrap();
        for options in [0, 3] {
            for (j, &port) in ports.iter().enumerate() {
                let d = datagram(options, 17, local, 0, port);
                assert_eq!(run(&prog, IP, &d), j as u32, "{options} {port}");
                assert_eq!(run(&prog, libc::ETH_P_ARP as u16, &d), 0);
            }
            assert_eq!(run(&prog, IP, &datagram(options, 17, local, 0, 6999)), 0);
        }
        assert!(demux_filter(&[1; 253]).is_some());
        assert!(demux_filter(&[1; 254]).is_none());
    }

    #[test]
    fn filter_keeps_only_whole_or_first_fragment_udp_to_the_input() {
        const ACCEPT: u32 = u32::MAX;
        const IP: u16 = libc::ETH_P_IP as u16;
        let local = Ipv4Addr::new(127, 0, 0, 1);
        let other = Ipv4Addr::new(10, 1, 2, 3);
        let prog = udp_filter(SocketAddrV4::new(local, 5000));
        let any = udp_filter(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 5000));
        for options in [0, 1, 10] {
            let case = |proto, dst, frag, port| datagram(options, proto, dst, frag, port);
            let whole = case(17, local, 0x4000, 5000);
            assert_eq!(run(&prog, IP, &whole), ACCEPT, "{options}");
            let first_fragment = case(17, local, 0x2000, 5000);
            assert_eq!(run(&prog, IP, &first_fragment), ACCEPT, "{options}");
            assert_eq!(run(&prog, IP, &case(17, local, 0x2001, 5000)), 0);
            assert_eq!(run(&prog, IP, &case(17, local, 0, 5001)), 0, "{options}");
            assert_eq!(run(&prog, IP, &case(6, local, 0, 5000)), 0, "{options}");
            assert_eq!(run(&prog, IP, &case(17, other, 0, 5000)), 0, "{options}");
            assert_eq!(run(&any, IP, &case(17, other, 0, 5000)), ACCEPT);
            assert_eq!(run(&any, IP, &case(17, other, 0, 5001)), 0);
            assert_eq!(run(&prog, libc::ETH_P_IPV6 as u16, &whole), 0);
            assert_eq!(run(&prog, IP, &whole[..20]), 0, "cut short");
        }
    }
}
