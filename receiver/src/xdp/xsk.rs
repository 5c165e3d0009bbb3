//! AF_XDP sockets in copy mode: per receive queue one UMEM (an area of
//! [`FRAME`]-byte frames) with its fill ring, shared by the sockets of
//! every capture port on that queue, each socket with its own rx ring and
//! its own drop counters. Rings are the kernel's single-producer,
//! single-consumer queues, mapped into this process.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::ring::{getsockopt, os_err, os_err_from, setsockopt};

/// Bytes of a UMEM frame: a page, so a 1500-byte frame takes one and a
/// 9000-byte jumbo frame three (multi-buffer, `XDP_USE_SG`).
pub const FRAME: usize = 4096;

struct Map {
    ptr: *mut u8,
    len: usize,
}

impl Map {
    fn new(fd: Option<libc::c_int>, len: usize, offset: u64, what: &str) -> io::Result<Map> {
        let (flags, fd) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        // SAFETY: a new mapping of `len` bytes, unmapped in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_err(what));
        }
        Ok(Map {
            ptr: ptr.cast(),
            len,
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped, once.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One mapped ring: `size` entries of `T` between a producer and a consumer index.
struct Ring<T> {
    _map: Map,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    desc: *mut T,
    mask: u32,
}

impl<T: Copy> Ring<T> {
    fn map(
        fd: libc::c_int,
        off: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
    ) -> io::Result<Self> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = Map::new(Some(fd), len, pgoff, "mapping an AF_XDP ring")?;
        // SAFETY: the offsets the kernel gave lie inside the mapping.
        unsafe {
            Ok(Ring {
                producer: map.ptr.add(off.producer as usize).cast(),
                consumer: map.ptr.add(off.consumer as usize).cast(),
                desc: map.ptr.add(off.desc as usize).cast(),
                mask: size - 1,
                _map: map,
            })
        }
    }
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned u32 in the live mapping, shared with the kernel.
        unsafe { &*self.producer }
    }
    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as in `producer`.
        unsafe { &*self.consumer }
    }
    fn at(&self, idx: u32) -> *mut T {
        // SAFETY: masked index inside the ring's entries.
        unsafe { self.desc.add((idx & self.mask) as usize) }
    }
}

fn socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2); the descriptor is owned at once.
    let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        let why = match e.raw_os_error() {
            Some(libc::EAFNOSUPPORT) => "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)",
            Some(libc::EPERM) | Some(libc::EACCES) => {
                "an AF_XDP socket needs CAP_NET_RAW (run as root)"
            }
            _ => "AF_XDP socket",
        };
        return Err(io::Error::new(e.kind(), format!("{why}: {e}")));
    }
    // SAFETY: a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn bind(fd: libc::c_int, ifindex: u32, queue: u32, flags: u16, shared: u32) -> io::Result<()> {
    let sa = libc::sockaddr_xdp {
        sxdp_family: libc::AF_XDP as u16,
        sxdp_flags: flags,
        sxdp_ifindex: ifindex,
        sxdp_queue_id: queue,
        sxdp_shared_umem_fd: shared,
    };
    // SAFETY: bind with a live sockaddr_xdp and its size.
    let r = unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_xdp).cast(),
            std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(os_err(&format!(
            "binding an AF_XDP socket to queue {queue}"
        )))
    }
}

/// A socket's receive side: its rx ring.
pub struct Xsk {
    fd: OwnedFd,
    rx: Ring<libc::xdp_desc>,
    /// The last drop count read, kept when a read fails.
    drops: std::cell::Cell<u64>,
}

impl Xsk {
    /// A socket with an rx ring of `size` entries (a power of two).
    fn new(fd: OwnedFd, size: u32) -> io::Result<Xsk> {
        let raw = fd.as_raw_fd();
        setsockopt(raw, libc::SOL_XDP, libc::XDP_RX_RING, &size)
            .map_err(|e| os_err_from("the AF_XDP rx ring", e))?;
        let off: libc::xdp_mmap_offsets = getsockopt(raw, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS)
            .map_err(|e| io::Error::new(e.kind(), format!("AF_XDP ring offsets: {e}")))?;
        let rx = Ring::map(raw, &off.rx, size, libc::XDP_PGOFF_RX_RING as u64)?;
        Ok(Xsk {
            fd,
            rx,
            drops: Default::default(),
        })
    }

    pub fn fd(&self) -> libc::c_int {
        self.fd.as_raw_fd()
    }

    /// Descriptors waiting, up to `max`, from the consumer index returned.
    pub fn peek(&self, max: u32) -> (u32, u32) {
        let cons = self.rx.consumer().load(Ordering::Relaxed);
        let prod = self.rx.producer().load(Ordering::Acquire);
        (cons, prod.wrapping_sub(cons).min(max))
    }

    pub fn desc(&self, idx: u32) -> libc::xdp_desc {
        // SAFETY: an entry the kernel published (below the producer index).
        unsafe { std::ptr::read_volatile(self.rx.at(idx)) }
    }

    /// Hands `n` descriptors from `cons` back to the kernel.
    pub fn release(&self, cons: u32, n: u32) {
        self.rx
            .consumer()
            .store(cons.wrapping_add(n), Ordering::Release);
    }

    /// Datagrams the kernel dropped for this socket: no room in its rx
    /// ring, or no free frame for it (`rx_dropped` counts a datagram
    /// dropped for an empty fill ring, which the fill ring's own
    /// `rx_fill_ring_empty_descs` counts again, per queue rather than
    /// per socket, so it is not added). The last count when it cannot be
    /// read: a total never goes back.
    pub fn drops(&self) -> u64 {
        if let Ok(s) =
            getsockopt::<libc::xdp_statistics>(self.fd(), libc::SOL_XDP, libc::XDP_STATISTICS)
        {
            self.drops.set(s.rx_dropped + s.rx_ring_full);
        }
        self.drops.get()
    }
}

/// A receive queue's UMEM, its fill ring and the sockets bound to the queue.
pub struct Queue {
    area: Map,
    frames: u32,
    sg: bool,
    fill: Ring<u64>,
    _completion: Ring<u64>,
    /// The first socket owns the UMEM; one socket per capture port.
    pub sockets: Vec<Xsk>,
}

// SAFETY: the mappings are owned by this value alone and used by one thread.
unsafe impl Send for Queue {}

impl Queue {
    /// Binds `ports` sockets to queue `queue` of `ifindex`, sharing a UMEM
    /// of `frames` frames (a power of two), multi-buffer if `sg` and the
    /// kernel has it (see [`Queue::sg`]).
    pub fn open(
        ifindex: u32,
        queue: u32,
        ports: usize,
        frames: u32,
        sg: bool,
    ) -> io::Result<Queue> {
        let first = socket()?;
        let raw = first.as_raw_fd();
        let area = Map::new(None, frames as usize * FRAME, 0, "the AF_XDP frame area")?;
        let reg = libc::xdp_umem_reg {
            addr: area.ptr as u64,
            len: area.len as u64,
            chunk_size: FRAME as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
            .map_err(|e| os_err_from("registering the AF_XDP frame area", e))?;
        setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_FILL_RING, &frames)
            .map_err(|e| os_err_from("the AF_XDP fill ring", e))?;
        let done: u32 = 64;
        setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_COMPLETION_RING, &done)
            .map_err(|e| os_err_from("the AF_XDP completion ring", e))?;
        let xsk = Xsk::new(first, frames)?;
        let off: libc::xdp_mmap_offsets = getsockopt(raw, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS)?;
        let fill = Ring::map(raw, &off.fr, frames, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let completion = Ring::map(raw, &off.cr, done, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let mut q = Queue {
            area,
            frames,
            sg,
            fill,
            _completion: completion,
            sockets: vec![xsk],
        };
        for f in 0..frames {
            // SAFETY: the fill ring is ours to produce into; nothing is published yet.
            unsafe { *q.fill.at(f) = u64::from(f) * FRAME as u64 };
        }
        q.fill.producer().store(frames, Ordering::Release);
        let copy = libc::XDP_COPY;
        if !sg {
            bind(raw, ifindex, queue, copy, 0)?;
        } else if let Err(e) = bind(raw, ifindex, queue, copy | libc::XDP_USE_SG, 0) {
            // Kernels before 6.6 refuse the flag, before any other check.
            if e.kind() != io::ErrorKind::InvalidInput {
                return Err(e);
            }
            bind(raw, ifindex, queue, copy, 0)?;
            q.sg = false;
        }
        for _ in 1..ports {
            let xsk = Xsk::new(socket()?, frames)?;
            bind(xsk.fd(), ifindex, queue, libc::XDP_SHARED_UMEM, raw as u32)?;
            q.sockets.push(xsk);
        }
        Ok(q)
    }

    /// Whether a datagram longer than a frame arrives in several
    /// (`XDP_USE_SG`, kernel 6.6 or later); without, the kernel drops it
    /// and counts it in the socket's `rx_dropped`.
    pub fn sg(&self) -> bool {
        self.sg
    }

    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// The bytes of a received descriptor.
    pub fn data(&self, d: &libc::xdp_desc) -> &[u8] {
        let at = d.addr as usize;
        let len = (d.len as usize).min(self.area.len.saturating_sub(at));
        // SAFETY: inside the frame area, which the kernel wrote before
        // publishing the descriptor and does not touch until the frame is
        // given back through the fill ring.
        unsafe { std::slice::from_raw_parts(self.area.ptr.add(at.min(self.area.len)), len) }
    }

    /// Gives frames back to the kernel to fill. There is always room: the
    /// ring holds every frame of the area.
    pub fn refill(&self, addrs: &[u64]) {
        let prod = self.fill.producer().load(Ordering::Relaxed);
        for (k, &a) in addrs.iter().enumerate() {
            // SAFETY: entries between the producer and the consumer plus
            // the ring's size are ours to write.
            unsafe { *self.fill.at(prod.wrapping_add(k as u32)) = a & !(FRAME as u64 - 1) };
        }
        self.fill
            .producer()
            .store(prod.wrapping_add(addrs.len() as u32), Ordering::Release);
    }
}
