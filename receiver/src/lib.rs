//! Capture of the board's packets from several ports (UDP sockets, an
//! AF_PACKET ring per UDP port, AF_XDP sockets, or raw Ethernet via
//! libpcap) to capture files striped over several directories.
//! It records packets byte-exact and counts what it sees; it never decodes
//! records beyond what its statistics need.
//!
//! `Capture::start` opens every input, then runs one receive thread per
//! input (per interface for the xdp path's inputs, all of whose sockets
//! one thread reads) and one writer thread per output directory, joined by
//! crossbeam-channel queues of reusable buffers; `CaptureHandle::wait`
//! returns the run's `Summary` once a stop condition holds.

pub mod batch;
pub mod config;
pub mod frame;
mod input;
pub mod live;
pub mod pcapng;
pub mod read;
pub mod repair;
pub mod report;
pub mod ring;
pub mod seq;
pub mod stats;
mod status;
pub mod writer;
pub mod xdp;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hmtt_format::atomic_file::AtomicFile;
use hmtt_format::capture::SourceKind;
use socket2::{Domain, Protocol, Socket, Type};

pub use config::{CaptureConfig, Input, RxPath, Source};
pub use stats::Summary;

use batch::{Batch, Pool};
use input::{Outlet, PcapHandle};
use stats::{PortSummary, Shared};
use writer::{InputMeta, Writer, WriterReport, WriterSettings};

/// Why a capture could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("input {input}: {msg}")]
    Input { input: String, msg: String },
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the summary to {}", path.display())]
    Summary {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn input_err(input: &Input, msg: impl std::fmt::Display) -> ReceiverError {
    ReceiverError::Input {
        input: input.source.name(),
        msg: msg.to_string(),
    }
}

/// A UDP socket set up for capture: big receive buffer, kernel drop counts,
/// kernel timestamps, a short timeout so the thread sees a stop request.
/// Returns the socket and the receive buffer size the kernel reports.
pub fn open_udp(addr: &str, rcvbuf: usize) -> std::io::Result<(Socket, usize)> {
    let addr: SocketAddr = addr.parse().map_err(|e| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("`{addr}`: {e}"))
    })?;
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    let size = rcvbuf.min(i32::MAX as usize / 2) as libc::c_int;
    // SO_RCVBUFFORCE passes rmem_max when we may (root); else SO_RCVBUF, capped.
    if setsockopt_int(&socket, libc::SO_RCVBUFFORCE, size).is_err() {
        socket.set_recv_buffer_size(size as usize)?;
    }
    setsockopt_int(&socket, libc::SO_RXQ_OVFL, 1)?;
    setsockopt_int(&socket, libc::SO_TIMESTAMPNS, 1)?;
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    socket.bind(&addr.into())?;
    let got = socket.recv_buffer_size()?;
    Ok((socket, got))
}

fn setsockopt_int(socket: &Socket, opt: libc::c_int, value: libc::c_int) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt with a pointer to a live c_int and its size.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

enum Opened {
    Udp(Socket),
    Ring(ring::Ring),
    Pcap(PcapHandle),
    /// Slot `.1` of the xdp interface `.0` (its thread serves every slot).
    Xdp(usize, usize),
}

/// A capture that is running.
pub struct CaptureHandle {
    config: CaptureConfig,
    shared: Arc<Shared>,
    started: Instant,
    start_ns: u64,
    inputs: Vec<JoinHandle<()>>,
    writers: Vec<JoinHandle<WriterReport>>,
    status: Option<JoinHandle<()>>,
    live: Option<live::Live>,
    local_addrs: Vec<Option<SocketAddr>>,
    buffer_bytes: Vec<Option<u64>>,
    kinds: Vec<SourceKind>,
    /// `IF: mode` per xdp interface.
    xdp_modes: Vec<String>,
    /// The summary's temporary file, with room reserved for it.
    summary_room: Option<AtomicFile>,
    /// Held until the handle is dropped: see [`lock_run_name`].
    _run_locks: Vec<std::fs::File>,
}

/// Takes an exclusive lock on the run's name in each output directory (a
/// file `.NAME.lock`, locked with `flock`), so that a second capture of
/// the same name into the same directory is refused at its start instead
/// of sharing files with the first. The kernel drops the lock when the
/// process ends, however it ends; the empty lock file stays.
fn lock_run_name(config: &CaptureConfig) -> Result<Vec<std::fs::File>, ReceiverError> {
    let mut locks = Vec::new();
    for d in &config.dirs {
        let path = d.join(format!(".{}.lock", config.name));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| ReceiverError::Io {
                path: path.clone(),
                source: e,
            })?;
        match file.try_lock() {
            Ok(()) => locks.push(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(ReceiverError::Config(format!(
                    "another capture named {:?} is writing into {} (it holds {}): \
                     choose another name or directory",
                    config.name,
                    d.display(),
                    path.display()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(ReceiverError::Io { path, source: e })
            }
        }
    }
    Ok(locks)
}

/// Bytes reserved at the start for the JSON summary, so that a full disk
/// at the end still leaves room for it (a summary of a few ports and
/// boards takes a few KiB).
pub const SUMMARY_ROOM: u64 = 256 << 10;

/// Refuses a run that would clash with an earlier one's files (the
/// summary, or a port's first stripe), before anything is created, so a
/// failed second run cannot overwrite the first one's summary.
fn refuse_earlier_outputs(config: &CaptureConfig) -> Result<(), ReceiverError> {
    if config.overwrite {
        return Ok(());
    }
    let first_stripes = config.dirs.iter().flat_map(|d| {
        config
            .inputs
            .iter()
            .map(move |i| d.join(writer::file_name(&config.name, i.port, 0, false)))
    });
    for path in std::iter::once(config.summary_path()).chain(first_stripes) {
        if path.exists() {
            return Err(ReceiverError::Config(format!(
                "{} already exists (an earlier capture?): choose another directory or \
                 name, or overwrite",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Creates the summary's temporary file ([`AtomicFile`]) and reserves
/// [`SUMMARY_ROOM`] bytes for it; `None` (and a warning) when it cannot:
/// the summary is then written without reserved room.
fn reserve_summary_room(path: &std::path::Path) -> Option<AtomicFile> {
    use std::os::fd::AsRawFd;
    let file = match AtomicFile::create(path) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!("{}: {e}; the summary gets no reserved room", path.display());
            return None;
        }
    };
    // SAFETY: fallocate on an open descriptor; KEEP_SIZE leaves the
    // length at 0 until the summary is written.
    let r = unsafe {
        libc::fallocate(
            file.file().as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            0,
            SUMMARY_ROOM as i64,
        )
    };
    if r != 0 {
        tracing::info!(
            "{}: no room reserved ({})",
            file.writing_path().display(),
            std::io::Error::last_os_error()
        );
    }
    Some(file)
}

/// Writes `text` as `path`: into the temporary file (its reserved room when
/// there is one), then renamed over `path`, so the summary is whole or absent,
/// never cut.
fn write_summary(
    path: &std::path::Path,
    room: Option<AtomicFile>,
    text: &str,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = match room {
        Some(f) => f,
        None => AtomicFile::create(path)?,
    };
    file.write_all(text.as_bytes())?;
    file.file().set_len(text.len() as u64)?;
    file.commit()
}

/// Starts captures.
pub struct Capture;

impl Capture {
    /// Opens every input and output, then starts the threads. `stop` may be
    /// set from anywhere (a signal handler) to end the run cleanly.
    pub fn start(
        config: CaptureConfig,
        stop: Arc<AtomicBool>,
    ) -> Result<CaptureHandle, ReceiverError> {
        config.validate()?;
        refuse_earlier_outputs(&config)?;
        for d in &config.dirs {
            std::fs::create_dir_all(d).map_err(|e| ReceiverError::Io {
                path: d.clone(),
                source: e,
            })?;
        }
        let run_locks = lock_run_name(&config)?;
        // Checked again under the locks: a capture of the same name that
        // ended between the first check and the locks left its files.
        refuse_earlier_outputs(&config)?;
        let start_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut opened = Vec::new();
        let mut local_addrs = Vec::new();
        let mut buffer_bytes = Vec::new();
        let mut kinds = Vec::new();
        let mut xdp_ifaces = Vec::new();
        let mut xdp_at = std::collections::HashMap::new();
        if config.rx == RxPath::Xdp {
            let udp: Vec<(usize, &str)> = config
                .inputs
                .iter()
                .enumerate()
                .filter_map(|(i, inp)| match &inp.source {
                    Source::Udp(a) => Some((i, a.as_str())),
                    _ => None,
                })
                .collect();
            xdp_ifaces = xdp::open(&udp, config.rcvbuf_bytes, config.xdp_mode)
                .map_err(|(i, e)| input_err(&config.inputs[i], e))?;
            for (f, iface) in xdp_ifaces.iter().enumerate() {
                for (slot, (input, addr)) in iface
                    .inputs()
                    .into_iter()
                    .zip(iface.local_addrs())
                    .enumerate()
                {
                    xdp_at.insert(input, (f, slot, addr, iface.frame_bytes()));
                }
            }
        }
        let xdp_modes: Vec<String> = xdp_ifaces
            .iter()
            .map(|f| format!("{}: {}", f.name, f.mode))
            .collect();
        for (i, input) in config.inputs.iter().enumerate() {
            match &input.source {
                Source::Udp(_) if config.rx == RxPath::Xdp => {
                    let (f, slot, addr, bytes) = xdp_at[&i];
                    local_addrs.push(Some(SocketAddr::V4(addr)));
                    buffer_bytes.push(Some(bytes as u64));
                    kinds.push(SourceKind::Udp);
                    opened.push(Opened::Xdp(f, slot));
                }
                Source::Udp(addr) if config.rx == RxPath::Ring => {
                    let r = ring::Ring::open(addr, config.rcvbuf_bytes)
                        .map_err(|e| input_err(input, e))?;
                    local_addrs.push(Some(SocketAddr::V4(r.local_addr())));
                    buffer_bytes.push(Some(r.bytes() as u64));
                    kinds.push(SourceKind::Udp);
                    opened.push(Opened::Ring(r));
                }
                Source::Udp(addr) => {
                    let (s, got) =
                        open_udp(addr, config.rcvbuf_bytes).map_err(|e| input_err(input, e))?;
                    local_addrs.push(s.local_addr().ok().and_then(|a| a.as_socket()));
                    buffer_bytes.push(Some(got as u64));
                    if got < config.rcvbuf_bytes {
                        tracing::warn!(
                            "{addr}: receive buffer is {got} bytes, asked for {}",
                            config.rcvbuf_bytes
                        );
                    }
                    kinds.push(SourceKind::Udp);
                    opened.push(Opened::Udp(s));
                }
                Source::PcapLive(dev) => {
                    let buf = config.rcvbuf_bytes.min(i32::MAX as usize) as i32;
                    let mut cap = pcap::Capture::from_device(dev.as_str())
                        .and_then(|c| {
                            c.promisc(true)
                                .snaplen(65535)
                                .buffer_size(buf)
                                .timeout(50)
                                .precision(pcap::Precision::Nano)
                                .open()
                        })
                        // With TPACKET_V3 the read timeout does not expire while
                        // no packet arrives: poll the descriptor ourselves.
                        .and_then(|c| c.setnonblock())
                        .map_err(|e| input_err(input, e))?;
                    let filter = match input.udp_port {
                        Some(p) => format!("ether proto 0x88b5 or (udp dst port {p}) or vlan"),
                        None => "ether proto 0x88b5 or udp or vlan".to_string(),
                    };
                    // Some link types (e.g. `any`) do not take `ether`: then filter in user space only.
                    if let Err(e) = cap.filter(&filter, true) {
                        tracing::info!(
                            "{dev}: no kernel filter ({e}); filtering frames in user space"
                        );
                    }
                    local_addrs.push(None);
                    buffer_bytes.push(Some(buf as u64));
                    kinds.push(SourceKind::PcapLive);
                    opened.push(Opened::Pcap(PcapHandle::Live(cap)));
                }
                Source::PcapFile(path) => {
                    let cap = pcap::Capture::from_file_with_precision(path, pcap::Precision::Nano)
                        .map_err(|e| input_err(input, e))?;
                    local_addrs.push(None);
                    buffer_bytes.push(None);
                    kinds.push(SourceKind::PcapFile);
                    opened.push(Opened::Pcap(PcapHandle::File(cap)));
                }
            }
        }
        let rings: Vec<&ring::Ring> = opened
            .iter()
            .filter_map(|o| match o {
                Opened::Ring(r) => Some(r),
                _ => None,
            })
            .collect();
        if let Err(e) = ring::share_tap(&rings) {
            tracing::warn!(
                "the rings do not all share one packet tap (more kernel work per datagram): {e}"
            );
        }

        let mut shared = Shared::new(config.inputs.len(), config.dirs.len(), stop, config.packets);
        let live_queue = config.live.as_ref().map(|_| live::queue());
        shared.live = live_queue.as_ref().map(|(tap, _)| tap.clone());
        let shared = Arc::new(shared);
        let live = match (&config.live, live_queue) {
            (Some(opts), Some((tap, rx))) => Some(
                live::Live::start(opts.clone(), shared.clone(), tap, rx).map_err(|e| {
                    ReceiverError::Io {
                        path: "live view thread".into(),
                        source: e,
                    }
                })?,
            ),
            _ => None,
        };
        let pools: Vec<Pool> = config
            .inputs
            .iter()
            .enumerate()
            .map(|(i, inp)| {
                Pool::new(
                    config.buffers_per_input,
                    config.batch_packets,
                    config.max_packet,
                    i,
                    inp.port,
                )
            })
            .collect();
        let metas: Vec<InputMeta> = config
            .inputs
            .iter()
            .zip(&kinds)
            .zip(&local_addrs)
            .map(|((inp, &kind), addr)| InputMeta {
                port: inp.port,
                kind,
                name: addr.map_or_else(|| inp.source.name(), |a| a.to_string()),
            })
            .collect();
        let settings = WriterSettings {
            name: config.name.clone(),
            stripe_bytes: config.stripe_bytes,
            preallocate: config.preallocate,
            overwrite: config.overwrite,
            start_ns,
        };
        let mut writer_tx = Vec::new();
        let mut writers = Vec::new();
        for (i, dir) in config.dirs.iter().enumerate() {
            let (tx, rx) = crossbeam_channel::unbounded::<Batch>();
            writer_tx.push(tx);
            let w = Writer::new(
                i,
                dir.clone(),
                settings.clone(),
                metas.clone(),
                pools.clone(),
                shared.clone(),
            );
            writers.push(
                std::thread::Builder::new()
                    .name(format!("hmtt-writer-{i}"))
                    .spawn(move || w.run(rx))
                    .map_err(|e| ReceiverError::Io {
                        path: dir.clone(),
                        source: e,
                    })?,
            );
        }
        let mut inputs = Vec::new();
        let mut xdp_outs: Vec<Vec<Option<Outlet>>> = xdp_ifaces
            .iter()
            .map(|f| f.inputs().iter().map(|_| None).collect())
            .collect();
        for (i, (op, pool)) in opened.into_iter().zip(pools).enumerate() {
            let inp = &config.inputs[i];
            let pcapng = if config.pcapng {
                let path = config.dirs[0].join(format!("{}-p{:02}.pcapng", config.name, inp.port));
                let f = std::fs::File::create(&path).map_err(|e| ReceiverError::Io {
                    path: path.clone(),
                    source: e,
                })?;
                Some(
                    pcapng::PcapngWriter::new(
                        std::io::BufWriter::with_capacity(1 << 20, f),
                        &metas[i].name,
                        0,
                        inp.port,
                    )
                    .map_err(|e| ReceiverError::Io { path, source: e })?,
                )
            } else {
                None
            };
            let ndirs = config.dirs.len();
            let out = Outlet {
                input: i,
                free: pool,
                writers: writer_tx.clone(),
                shared: shared.clone(),
                stripe_bytes: config.stripe_bytes,
                stripe: 0,
                dir: usize::from(inp.port) % ndirs,
                in_stripe: 0,
                pcapng,
            };
            let flush = config.flush_after;
            let udp_port = inp.udp_port;
            let h = std::thread::Builder::new().name(format!("hmtt-recv-{}", inp.port));
            let h = match op {
                Opened::Xdp(f, slot) => {
                    xdp_outs[f][slot] = Some(out);
                    continue;
                }
                Opened::Udp(s) => h.spawn(move || input::run_udp(s, out, flush)),
                Opened::Ring(r) => h.spawn(move || ring::run_ring(r, out, flush)),
                Opened::Pcap(c) => h.spawn(move || input::run_pcap(c, udp_port, out, flush)),
            }
            .map_err(|e| input_err(inp, e))?;
            inputs.push(h);
        }
        for (iface, outs) in xdp_ifaces.into_iter().zip(xdp_outs) {
            let outs: Vec<Outlet> = outs.into_iter().flatten().collect();
            let first = &config.inputs[iface.inputs()[0]];
            let flush = config.flush_after;
            let h = std::thread::Builder::new()
                .name(format!("hmtt-recv-{}", iface.name))
                .spawn(move || xdp::run(iface, outs, flush))
                .map_err(|e| input_err(first, e))?;
            inputs.push(h);
        }
        drop(writer_tx);
        let status = if config.progress {
            let names: Vec<String> = metas
                .iter()
                .map(|m| format!("p{} {}", m.port, m.name))
                .collect();
            let sh = shared.clone();
            Some(std::thread::spawn(move || status::run(sh, names)))
        } else {
            None
        };
        let summary_room = reserve_summary_room(&config.summary_path());
        Ok(CaptureHandle {
            summary_room,
            _run_locks: run_locks,
            config,
            shared,
            started: Instant::now(),
            start_ns,
            inputs,
            writers,
            status,
            live,
            local_addrs,
            buffer_bytes,
            kinds,
            xdp_modes,
        })
    }
}

impl CaptureHandle {
    /// Local address of each UDP input (useful with port 0).
    pub fn local_addrs(&self) -> &[Option<SocketAddr>] {
        &self.local_addrs
    }

    /// Local address of every input, all of which must be UDP (a sender
    /// that feeds the capture over loopback).
    pub fn udp_addrs(&self) -> Result<Vec<SocketAddr>, ReceiverError> {
        self.local_addrs
            .iter()
            .map(|a| {
                a.ok_or_else(|| ReceiverError::Config("an input without a UDP address".into()))
            })
            .collect()
    }

    /// Receive buffer size obtained per input.
    pub fn buffer_bytes(&self) -> &[Option<u64>] {
        &self.buffer_bytes
    }

    /// The live view's snapshots (`hmtt capture --live`), once: one per
    /// board that sent statistics records, each refresh period, until the
    /// capture ends.
    pub fn live_snapshots(&mut self) -> Option<crossbeam_channel::Receiver<live::LiveSnapshot>> {
        self.live.as_mut().and_then(|l| l.snapshots())
    }

    /// Asks the capture to stop.
    pub fn stop(&self) {
        self.shared.request_stop("stopped by request");
    }

    /// Valid packets received so far over all ports.
    pub fn packets(&self) -> u64 {
        self.shared.total_packets.load(Relaxed)
    }

    /// Which output directories have failed so far (full disk, write error).
    pub fn failed_dirs(&self) -> Vec<bool> {
        self.shared
            .dir_failed
            .iter()
            .map(|f| f.load(Relaxed))
            .collect()
    }

    /// Waits for a stop condition, flushes everything, writes the JSON
    /// summary and returns it.
    pub fn wait(mut self) -> Result<Summary, ReceiverError> {
        loop {
            if self.shared.stopping() {
                break;
            }
            if self
                .config
                .duration
                .is_some_and(|d| self.started.elapsed() >= d)
            {
                self.shared.request_stop("duration reached");
                break;
            }
            if self.inputs.iter().all(|h| h.is_finished()) {
                self.shared.request_stop("every input ended");
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if self
            .shared
            .stop_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
        {
            self.shared.request_stop("signal");
        }
        for h in self.inputs.drain(..) {
            if h.join().is_err() {
                self.shared.error("a receive thread panicked".into());
            }
        }
        let mut reports = Vec::new();
        for h in self.writers.drain(..) {
            match h.join() {
                Ok(r) => reports.push(r),
                Err(_) => self.shared.error("a writer thread panicked".into()),
            }
        }
        if let Some(s) = self.status.take() {
            let _ = s.join();
        }
        let live = self.live.take().map(live::Live::finish);
        let mut summary = self.summary(&reports);
        summary.live = live;
        let path = self.config.summary_path();
        let json = serde_json::to_string_pretty(&summary).map_err(|e| ReceiverError::Summary {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        write_summary(&path, self.summary_room.take(), &(json + "\n"))
            .map_err(|e| ReceiverError::Summary { path, source: e })?;
        Ok(summary)
    }

    fn summary(&self, reports: &[WriterReport]) -> Summary {
        let shared = &self.shared;
        let ports = self
            .config
            .inputs
            .iter()
            .enumerate()
            .map(|(i, inp)| {
                let c = &shared.ports[i];
                let mut files: Vec<PathBuf> = reports
                    .iter()
                    .flat_map(|r| r.files.iter())
                    .filter(|f| f.input == i)
                    .map(|f| f.path.clone())
                    .collect();
                files.sort();
                PortSummary {
                    port: inp.port,
                    source: self.local_addrs[i]
                        .map_or_else(|| inp.source.name(), |a| a.to_string()),
                    kind: format!("{:?}", self.kinds[i]),
                    buffer_bytes: self.buffer_bytes[i],
                    packets: c.packets.load(Relaxed),
                    records: c.records.load(Relaxed),
                    bytes: c.bytes.load(Relaxed),
                    rejects: c.rejects.load(Relaxed),
                    reject_bytes: c.reject_bytes.load(Relaxed),
                    lost_words: c.lost_words.load(Relaxed),
                    lost_refs: c.lost_refs.load(Relaxed),
                    kernel_drops: c.kernel_drops.load(Relaxed),
                    ignored_frames: c.ignored_frames.load(Relaxed),
                    written_packets: c.written_packets.load(Relaxed),
                    unwritten_packets: c.unwritten_packets.load(Relaxed),
                    files,
                }
            })
            .collect::<Vec<_>>();
        let errors = shared
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let dirs: Vec<_> = reports.iter().map(|r| r.dir.clone()).collect();
        let ok = errors.is_empty() && ports.iter().all(|p| p.unwritten_packets == 0);
        Summary {
            name: self.config.name.clone(),
            start_ns: self.start_ns,
            duration_s: self.started.elapsed().as_secs_f64(),
            stop_reason: shared
                .stop_reason
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_default(),
            ok,
            ports,
            boards: shared.boards(),
            dirs,
            errors,
            xdp_modes: self.xdp_modes.clone(),
            live: None,
        }
    }
}

/// Sets `stop` on SIGINT or SIGTERM; a second signal ends the process at once.
pub fn stop_on_signals(stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())?;
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(())
}
