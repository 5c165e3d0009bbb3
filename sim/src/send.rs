//! Sends board packets over UDP, one destination per board port, paced by
//! a token bucket at an aggregate rate or as fast as the kernel takes
//! them. On Linux packets go out in batches with one `sendmmsg` call each.
//!
//! ```no_run
//! use hmtt_sim::send::{PacketSender, SenderOptions};
//! let dests = ["127.0.0.1:5000".parse().unwrap(), "127.0.0.1:5001".parse().unwrap()];
//! let mut tx = PacketSender::new(&dests, SenderOptions { rate_bps: Some(1e9), ..Default::default() })?;
//! tx.send(1, b"HMTT...")?;
//! tx.flush()?;
//! # Ok::<(), std::io::Error>(())
//! ```

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::machine::SimError;
use crate::stream::PacketSink;
use hmtt_board_model::BoardPacket;

/// How to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderOptions {
    /// Aggregate rate over all ports in bits per second of UDP payload
    /// (the packets' own bytes); `None`: as fast as possible.
    pub rate_bps: Option<f64>,
    /// Packets per `sendmmsg` call.
    pub batch: usize,
    /// Socket send buffer to ask for (bytes).
    pub send_buffer: Option<usize>,
}

impl Default for SenderOptions {
    fn default() -> Self {
        SenderOptions {
            rate_bps: None,
            batch: 32,
            send_buffer: Some(4 << 20),
        }
    }
}

/// Counters of a sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SendStats {
    pub packets: u64,
    pub bytes: u64,
    /// System calls that sent something.
    pub calls: u64,
    /// Sends retried after the kernel had no buffer space.
    pub retries: u64,
}

/// Paces by a virtual clock: a batch may go when the bytes sent before it
/// are due at the rate. Oversleeping once is made up by the next batches,
/// so the average rate holds; a sender that fell far behind (more than
/// `burst` bytes) does not burst to catch up.
struct TokenBucket {
    bytes_per_sec: f64,
    burst: f64,
    origin: Instant,
    /// Bytes accounted since `origin`.
    sent: f64,
}

impl TokenBucket {
    fn new(bits_per_sec: f64, burst_bytes: f64) -> TokenBucket {
        TokenBucket {
            bytes_per_sec: bits_per_sec / 8.0,
            burst: burst_bytes,
            origin: Instant::now(),
            sent: 0.0,
        }
    }

    /// Waits until `bytes` may go.
    fn take(&mut self, bytes: usize) {
        let elapsed = self.origin.elapsed().as_secs_f64();
        let allowed = elapsed * self.bytes_per_sec;
        if allowed - self.sent > self.burst {
            // Idle or stalled for a while: start counting afresh.
            self.sent = allowed - self.burst;
        }
        let due = self.sent / self.bytes_per_sec;
        loop {
            let now = self.origin.elapsed().as_secs_f64();
            if now >= due {
                break;
            }
            let wait = due - now;
            if wait > 200e-6 {
                std::thread::sleep(Duration::from_secs_f64(wait - 100e-6));
            } else {
                std::hint::spin_loop();
            }
        }
        self.sent += bytes as f64;
    }
}

impl std::fmt::Display for SendStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent {} packets ({} bytes), {} sendmmsg calls, {} retries",
            self.packets, self.bytes, self.calls, self.retries
        )
    }
}

/// A UDP sender of board packets.
pub struct PacketSender {
    socket: Socket,
    dests: Vec<SockAddr>,
    opts: SenderOptions,
    bucket: Option<TokenBucket>,
    /// Batched packets: destination index and range in `arena`.
    pending: Vec<(usize, usize, usize)>,
    arena: Vec<u8>,
    stats: SendStats,
}

impl PacketSender {
    /// A sender to `dests` (port `p` goes to `dests[p]`; a single
    /// destination takes every port).
    pub fn new(dests: &[SocketAddr], opts: SenderOptions) -> io::Result<PacketSender> {
        let first = dests
            .first()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no destination"))?;
        if dests.iter().any(|d| d.is_ipv4() != first.is_ipv4()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "destinations mix IPv4 and IPv6",
            ));
        }
        let socket = Socket::new(
            Domain::for_address(*first),
            Type::DGRAM,
            Some(Protocol::UDP),
        )?;
        if let Some(n) = opts.send_buffer {
            // Best effort: capped by net.core.wmem_max.
            let _ = socket.set_send_buffer_size(n);
        }
        let batch = opts.batch.max(1);
        let bucket = match opts.rate_bps {
            Some(r) if r > 0.0 => Some(TokenBucket::new(r, (batch * 9000) as f64)),
            Some(r) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("rate {r} b/s must be positive"),
                ))
            }
            None => None,
        };
        Ok(PacketSender {
            socket,
            dests: dests.iter().map(|d| SockAddr::from(*d)).collect(),
            opts: SenderOptions { batch, ..opts },
            bucket,
            pending: Vec::with_capacity(batch),
            arena: Vec::with_capacity(batch * 9000),
            stats: SendStats::default(),
        })
    }

    pub fn stats(&self) -> SendStats {
        self.stats
    }

    /// The local address the packets come from (after the first send).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an IP socket"))
    }

    /// Queues one packet for `port`; sends the batch when full.
    pub fn send(&mut self, port: usize, packet: &[u8]) -> io::Result<()> {
        let dest = if self.dests.len() == 1 { 0 } else { port };
        if dest >= self.dests.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "packet for port {port} but only {} destinations",
                    self.dests.len()
                ),
            ));
        }
        let off = self.arena.len();
        self.arena.extend_from_slice(packet);
        self.pending.push((dest, off, packet.len()));
        if self.pending.len() >= self.opts.batch {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends every `(port, packet)` and flushes.
    pub fn send_all<'a>(
        &mut self,
        packets: impl IntoIterator<Item = (usize, &'a [u8])>,
    ) -> io::Result<SendStats> {
        for (port, p) in packets {
            self.send(port, p)?;
        }
        self.flush()?;
        Ok(self.stats)
    }

    /// Sends what is queued.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if let Some(b) = &mut self.bucket {
            b.take(self.arena.len());
        }
        let mut done = 0;
        while done < self.pending.len() {
            match self.send_some(done) {
                Ok(n) => {
                    for &(_, _, len) in &self.pending[done..done + n] {
                        self.stats.bytes += len as u64;
                    }
                    self.stats.packets += n as u64;
                    self.stats.calls += 1;
                    done += n;
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOBUFS)
                        || e.kind() == io::ErrorKind::WouldBlock =>
                {
                    self.stats.retries += 1;
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.pending.clear();
        self.arena.clear();
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn send_some(&self, from: usize) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let items = &self.pending[from..];
        let mut iovs: Vec<libc::iovec> = items
            .iter()
            .map(|&(_, off, len)| libc::iovec {
                iov_base: self.arena[off..].as_ptr() as *mut libc::c_void,
                iov_len: len,
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = items
            .iter()
            .zip(iovs.iter_mut())
            .map(|(&(dest, _, _), iov)| {
                // SAFETY: an all-zero msghdr is valid; the pointers set below
                // stay alive until sendmmsg returns.
                let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
                let addr = &self.dests[dest];
                h.msg_name = addr.as_ptr() as *mut libc::c_void;
                h.msg_namelen = addr.len();
                h.msg_iov = iov as *mut libc::iovec;
                h.msg_iovlen = 1;
                libc::mmsghdr {
                    msg_hdr: h,
                    msg_len: 0,
                }
            })
            .collect();
        // SAFETY: msgs and the buffers and addresses they point to are valid
        // for the call; the kernel only reads them (and writes msg_len).
        let n = unsafe {
            libc::sendmmsg(
                self.socket.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    #[cfg(not(target_os = "linux"))]
    fn send_some(&self, from: usize) -> io::Result<usize> {
        let (dest, off, len) = self.pending[from];
        self.socket
            .send_to(&self.arena[off..off + len], &self.dests[dest])?;
        Ok(1)
    }
}

/// `HOST:PORT` destinations as addresses (the first each resolves to).
pub fn resolve(dests: &[String]) -> Result<Vec<SocketAddr>, SimError> {
    dests
        .iter()
        .map(|d| {
            d.to_socket_addrs()
                .map_err(|e| SimError::Config(format!("bad destination '{d}': {e}")))?
                .next()
                .ok_or_else(|| SimError::Config(format!("destination '{d}' resolves to nothing")))
        })
        .collect()
}

/// A streamed run's packets to UDP destinations as the run makes them
/// (`hmtt sim --send`).
pub struct UdpSink {
    tx: PacketSender,
    /// Destinations per board: `ports` (board-major), or 0 when the boards
    /// share them.
    per_board: usize,
    started: Option<Instant>,
}

impl UdpSink {
    /// Sends board `b`'s port `p` to `dests[b * ports + p]` when there are
    /// `boards * ports` destinations, else to `dests[p]` (`ports` of them,
    /// shared by the boards) or `dests[0]` (one takes all); `rate_bps`
    /// paces the aggregate.
    pub fn new(
        dests: &[SocketAddr],
        boards: u8,
        ports: u8,
        rate_bps: Option<f64>,
    ) -> Result<UdpSink, SimError> {
        let (boards, ports) = (usize::from(boards), usize::from(ports));
        if ![1, ports, ports * boards].contains(&dests.len()) {
            return Err(SimError::Config(format!(
                "{} destinations for {boards} board(s) of {ports} ports: give 1, {ports} or {}",
                dests.len(),
                ports * boards
            )));
        }
        let per_board = if dests.len() == ports * boards && boards > 1 {
            ports
        } else {
            0
        };
        let tx = PacketSender::new(
            dests,
            SenderOptions {
                rate_bps,
                ..Default::default()
            },
        )
        .map_err(|error| SimError::Io {
            path: "UDP sender".into(),
            error,
        })?;
        Ok(UdpSink {
            tx,
            per_board,
            started: None,
        })
    }

    pub fn stats(&self) -> SendStats {
        self.tx.stats()
    }

    /// Seconds since the first packet went out.
    pub fn seconds(&self) -> f64 {
        self.started.map_or(0.0, |t| t.elapsed().as_secs_f64())
    }
}

impl PacketSink for UdpSink {
    fn packet(&mut self, board: usize, p: &BoardPacket) -> Result<(), SimError> {
        self.started.get_or_insert_with(Instant::now);
        let dest = board * self.per_board + usize::from(p.port);
        self.tx.send(dest, &p.bytes).map_err(|error| SimError::Io {
            path: format!("UDP destination {dest}"),
            error,
        })
    }

    fn finish(&mut self) -> Result<(), SimError> {
        self.tx.flush().map_err(|error| SimError::Io {
            path: "UDP send".into(),
            error,
        })
    }
}

/// Sends the packets of one board's capture files to UDP destinations, as
/// the board sent them (`hmtt board --send`): a file's packets go to its
/// port's destination, and the files' packets go out in the order of their
/// receive times, which a board run writes as its send times. The files
/// are mapped, not read whole. Returns what was sent.
pub fn send_capture_files(
    paths: &[std::path::PathBuf],
    sender: &mut PacketSender,
) -> Result<SendStats, SimError> {
    use hmtt_format::capture::CaptureReader;
    use hmtt_format::mapped_file::MappedFile;
    let failed = |p: &std::path::Path, e: io::Error| SimError::Io {
        path: p.display().to_string(),
        error: e,
    };
    let maps = paths
        .iter()
        .map(|p| MappedFile::open(p).map_err(|e| failed(p, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut readers = Vec::new();
    for (map, path) in maps.iter().zip(paths) {
        let (header, reader) = CaptureReader::new(map.bytes())
            .map_err(|e| failed(path, io::Error::new(io::ErrorKind::InvalidData, e)))?;
        readers.push((usize::from(header.port), reader.peekable()));
    }
    loop {
        let next = readers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, (_, r))| r.peek().map(|rec| (rec.recv_ns, i)))
            .min();
        let Some((_, i)) = next else {
            break;
        };
        let (port, reader) = &mut readers[i];
        let record = reader.next().expect("peeked above");
        sender
            .send(*port, record.packet)
            .map_err(|e| failed(&paths[i], e))?;
    }
    sender.flush().map_err(|e| SimError::Io {
        path: "the UDP destinations".into(),
        error: e,
    })?;
    Ok(sender.stats())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn packets_reach_their_port_in_order() {
        let rx: Vec<UdpSocket> = (0..2)
            .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        for r in &rx {
            r.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        let dests: Vec<SocketAddr> = rx.iter().map(|r| r.local_addr().unwrap()).collect();
        let mut tx = PacketSender::new(
            &dests,
            SenderOptions {
                batch: 3,
                ..Default::default()
            },
        )
        .unwrap();
        for i in 0..10u8 {
            tx.send(usize::from(i % 2), &[i; 40]).unwrap();
        }
        tx.flush().unwrap();
        assert_eq!(tx.stats().packets, 10);
        assert_eq!(tx.stats().bytes, 400);
        let mut buf = [0u8; 100];
        for i in 0..10u8 {
            let n = rx[usize::from(i % 2)].recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[i; 40]);
        }
        assert!(tx.send(2, b"x").is_err());
    }

    #[test]
    fn pacing_holds_the_rate() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dest = rx.local_addr().unwrap();
        // 40 packets of 1000 bytes at 8 Mb/s take about 40 ms.
        let mut tx = PacketSender::new(
            &[dest],
            SenderOptions {
                rate_bps: Some(8e6),
                batch: 4,
                ..Default::default()
            },
        )
        .unwrap();
        let start = Instant::now();
        for _ in 0..40 {
            tx.send(0, &[0u8; 1000]).unwrap();
        }
        tx.flush().unwrap();
        let took = start.elapsed().as_secs_f64();
        assert!(took >= 0.035, "sent 320 kbit in {took} s at 8 Mb/s");
    }
}
