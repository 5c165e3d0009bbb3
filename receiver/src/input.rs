//! Receive threads: one per input. A UDP input receives with recvmmsg
//! straight into a batch's slots; a pcap input copies each frame's payload
//! into a slot. Both check every packet, count it, and hand full batches to
//! the writer of the port's current stripe.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use hmtt_format::capture::{RECORD_FLAG_CUT, RECORD_FLAG_KERNEL_DROPS};
use socket2::Socket;

use crate::batch::{Batch, Pool, SlotKind};
use crate::frame::{extract, Frame};
use crate::pcapng::PcapngWriter;
use crate::stats::{classify_datagram, Datagram, Shared, Tally};

/// Routes a port's batches to the stripes' writers.
pub struct Outlet {
    pub input: usize,
    pub free: Pool,
    pub writers: Vec<Sender<Batch>>,
    pub shared: Arc<Shared>,
    pub stripe_bytes: u64,
    pub stripe: u16,
    pub dir: usize,
    pub in_stripe: u64,
    pub pcapng: Option<PcapngWriter<io::BufWriter<std::fs::File>>>,
}

impl Outlet {
    /// An empty batch; waits for a writer to give one back.
    pub fn take(&self) -> Batch {
        self.free.take()
    }

    fn healthy(&self, dir: usize) -> bool {
        !self.shared.dir_failed[dir].load(Relaxed)
    }

    fn next_stripe(&mut self) {
        self.stripe = self.stripe.wrapping_add(1);
        self.in_stripe = 0;
        let n = self.writers.len();
        for k in 1..=n {
            let d = (self.dir + k) % n;
            if self.healthy(d) {
                self.dir = d;
                return;
            }
        }
    }

    /// Hands a filled batch on and returns an empty one.
    pub fn dispatch(&mut self, mut batch: Batch) -> Batch {
        if batch.is_empty() {
            return batch;
        }
        if !self.healthy(self.dir) {
            self.next_stripe();
        }
        if let Some(w) = &mut self.pcapng {
            for i in 0..batch.len() {
                if batch.kind(i) == SlotKind::Valid {
                    let rec = batch.record(i);
                    let ns = u64::from_le_bytes(rec[..8].try_into().expect("8 bytes"));
                    if let Err(e) = w.write_packet(ns, batch.packet(i)) {
                        self.shared
                            .error(format!("pcapng output: {e}; no more pcapng output"));
                        self.pcapng = None;
                        break;
                    }
                }
            }
        }
        batch.stripe = self.stripe;
        batch.dir = self.dir;
        let bytes = batch.bytes(SlotKind::Valid);
        let writer = &self.writers[self.dir];
        let _ = writer.send(batch);
        self.in_stripe += bytes;
        if self.in_stripe >= self.stripe_bytes {
            self.next_stripe();
        }
        self.take()
    }

    pub fn finish(&mut self) {
        if let Some(w) = &mut self.pcapng {
            if let Err(e) = w.flush() {
                self.shared.error(format!("pcapng output: {e}"));
            }
        }
    }
}

/// Files the slot just committed as valid or rejected and counts it.
#[inline]
fn classify(batch: &mut Batch, len: usize, recv_ns: u64, flags: u32, tally: &mut Tally) {
    let bytes = batch.commit(len, recv_ns, flags, SlotKind::Valid);
    match classify_datagram(bytes) {
        Datagram::Trace(info) => tally.valid(&info, len),
        // Kept with the trace packets for merge (format.md §5.3).
        Datagram::Statistics => tally.statistics_packet(bytes),
        Datagram::Reject => {
            batch.set_last_kind(SlotKind::Reject);
            tally.reject(len);
        }
    }
}

/// Files a captured frame into the next slot of `batch` and counts it:
/// a whole payload that fits is checked like a datagram, anything cut or
/// broken is a reject flagged [`RECORD_FLAG_CUT`], a whole corrupt one
/// (a wrong IPv4 header checksum) a reject unflagged. Returns false, and
/// files nothing, for a frame that is not the board's. The pcap and ring
/// paths both take their frames through here.
#[inline]
pub(crate) fn take_frame(
    batch: &mut Batch,
    frame: Frame<'_>,
    whole: bool,
    recv_ns: u64,
    flags: u32,
    tally: &mut Tally,
) -> bool {
    match frame {
        Frame::Other => false,
        Frame::Payload(payload) if whole && payload.len() <= batch.capacity() => {
            let i = batch.len();
            batch.payload_area(i)[..payload.len()].copy_from_slice(payload);
            classify(batch, payload.len(), recv_ns, flags, tally);
            true
        }
        Frame::Payload(payload) | Frame::Broken(payload) | Frame::Corrupt(payload) => {
            let n = payload.len().min(batch.capacity());
            let i = batch.len();
            batch.payload_area(i)[..n].copy_from_slice(&payload[..n]);
            let whole = whole && n == payload.len() && matches!(frame, Frame::Corrupt(_));
            let flags = if whole {
                flags
            } else {
                flags | RECORD_FLAG_CUT
            };
            batch.commit(n, recv_ns, flags, SlotKind::Reject);
            tally.reject(n);
            true
        }
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

const CTRL_LEN: usize = 64;
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Receives a UDP socket's datagrams until asked to stop, then drains what
/// the kernel still holds (for at most a second).
pub fn run_udp(socket: Socket, mut out: Outlet, flush_after: Duration) {
    let fd = socket.as_raw_fd();
    let input = out.input;
    let mut batch = out.take();
    let slots = batch.slots();
    let mut ctrl = vec![[0u64; CTRL_LEN / 8]; slots];
    let mut iov: Vec<libc::iovec> = vec![
        libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0
        };
        slots
    ];
    // SAFETY: mmsghdr is plain old data; all-zero is a valid empty header.
    let mut hdrs: Vec<libc::mmsghdr> = vec![unsafe { MaybeUninit::zeroed().assume_init() }; slots];
    let mut tally = Tally::of(&out.shared);
    let mut last_drops: u32 = 0;
    let mut started: Option<Instant> = None;
    let mut draining: Option<Instant> = None;
    loop {
        if draining.is_none() && out.shared.stopping() {
            draining = Some(Instant::now());
        }
        let first = batch.len();
        let free = slots - first;
        for k in 0..free {
            let i = first + k;
            iov[k] = libc::iovec {
                iov_base: batch.payload_ptr(i).cast(),
                iov_len: batch.capacity(),
            };
            let h = &mut hdrs[k].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut iov[k];
            h.msg_iovlen = 1;
            h.msg_control = ctrl[k].as_mut_ptr().cast();
            h.msg_controllen = CTRL_LEN as _;
            h.msg_flags = 0;
            hdrs[k].msg_len = 0;
        }
        let flags = if draining.is_some() {
            libc::MSG_DONTWAIT
        } else {
            libc::MSG_WAITFORONE
        };
        // SAFETY: the headers point at `free` slots of the batch, iovecs and
        // control buffers that live across the call.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                hdrs.as_mut_ptr(),
                free as u32,
                flags,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => {
                    if !batch.is_empty() {
                        batch = out.dispatch(batch);
                        started = None;
                    }
                    if draining.is_some() {
                        break;
                    }
                    continue;
                }
                _ => {
                    out.shared
                        .error(format!("port {input}: receive failed: {e}"));
                    break;
                }
            }
        }
        let now = now_ns();
        for m in &hdrs[..r as usize] {
            let h = &m.msg_hdr;
            let mut len = m.msg_len as usize;
            let mut rec_flags = 0;
            let mut recv_ns = now;
            // SAFETY: walking the control messages the kernel wrote into this header.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    let data = libc::CMSG_DATA(c);
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                        recv_ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    } else if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SO_RXQ_OVFL
                    {
                        let drops: u32 = std::ptr::read_unaligned(data.cast());
                        if drops != last_drops {
                            rec_flags |= RECORD_FLAG_KERNEL_DROPS;
                            out.shared.ports[input]
                                .kernel_drops
                                .store(u64::from(drops), Relaxed);
                            last_drops = drops;
                        }
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
            if h.msg_flags & libc::MSG_TRUNC != 0 {
                rec_flags |= RECORD_FLAG_CUT;
                len = len.min(batch.capacity());
                batch.commit(len, recv_ns, rec_flags, SlotKind::Reject);
                tally.reject(len);
                continue;
            }
            classify(&mut batch, len, recv_ns, rec_flags, &mut tally);
        }
        out.shared.add(input, &mut tally);
        if r > 0 && started.is_none() {
            started = Some(Instant::now());
        }
        if batch.is_full() || started.is_some_and(|s| s.elapsed() >= flush_after) {
            batch = out.dispatch(batch);
            started = None;
        }
        if draining.is_some_and(|d| d.elapsed() > DRAIN_LIMIT) {
            break;
        }
    }
    let _ = out.dispatch(batch);
    out.finish();
}

/// Live or offline pcap capture.
pub enum PcapHandle {
    Live(pcap::Capture<pcap::Active>),
    File(pcap::Capture<pcap::Offline>),
}

impl PcapHandle {
    fn next(&mut self) -> Result<pcap::Packet<'_>, pcap::Error> {
        match self {
            PcapHandle::Live(c) => c.next_packet(),
            PcapHandle::File(c) => c.next_packet(),
        }
    }
    fn linktype(&self) -> i32 {
        match self {
            PcapHandle::Live(c) => c.get_datalink().0,
            PcapHandle::File(c) => c.get_datalink().0,
        }
    }
    fn drops(&mut self) -> Option<u64> {
        match self {
            PcapHandle::Live(c) => c
                .stats()
                .ok()
                .map(|s| u64::from(s.dropped) + u64::from(s.if_dropped)),
            PcapHandle::File(_) => None,
        }
    }
}

/// Reads frames from pcap until asked to stop (live) or the end of the file.
pub fn run_pcap(
    mut handle: PcapHandle,
    udp_port: Option<u16>,
    mut out: Outlet,
    flush_after: Duration,
) {
    let input = out.input;
    let linktype = handle.linktype();
    let live = matches!(handle, PcapHandle::Live(_));
    let mut batch = out.take();
    let mut tally = Tally::of(&out.shared);
    let mut started: Option<Instant> = None;
    let mut since_stats = 0u32;
    let mut stopping_since: Option<Instant> = None;
    loop {
        if out.shared.stopping() {
            // Live: keep reading what the kernel already holds, briefly.
            let s = *stopping_since.get_or_insert_with(Instant::now);
            if !live || s.elapsed() > Duration::from_millis(200) {
                break;
            }
        }
        let mut flush = false;
        match handle.next() {
            Ok(p) => {
                // A damaged file can hold any timestamp: saturate, not wrap.
                let recv_ns = (p.header.ts.tv_sec as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(p.header.ts.tv_usec as u64);
                let whole = p.header.caplen == p.header.len;
                let frame = extract(linktype, p.data, udp_port);
                if !take_frame(&mut batch, frame, whole, recv_ns, 0, &mut tally) {
                    out.shared.ports[input].ignored_frames.fetch_add(1, Relaxed);
                }
                if started.is_none() && !batch.is_empty() {
                    started = Some(Instant::now());
                }
                since_stats += 1;
            }
            Err(pcap::Error::TimeoutExpired) => {
                // Non-blocking live capture: nothing queued, wait a little.
                if let PcapHandle::Live(c) = &handle {
                    let mut pfd = libc::pollfd {
                        fd: c.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: poll on one live descriptor.
                    unsafe { libc::poll(&mut pfd, 1, 50) };
                }
                flush = true;
            }
            Err(pcap::Error::NoMorePackets) => break,
            Err(e) => {
                out.shared.error(format!("port {input}: pcap: {e}"));
                break;
            }
        }
        if flush || since_stats >= 4096 {
            since_stats = 0;
            if let Some(d) = handle.drops() {
                out.shared.ports[input].kernel_drops.store(d, Relaxed);
            }
        }
        if batch.is_full() || flush || started.is_some_and(|s| s.elapsed() >= flush_after) {
            out.shared.add(input, &mut tally);
            batch = out.dispatch(batch);
            started = None;
        }
    }
    out.shared.add(input, &mut tally);
    if let Some(d) = handle.drops() {
        out.shared.ports[input].kernel_drops.store(d, Relaxed);
    }
    let _ = out.dispatch(batch);
    out.finish();
}
