//! The DIMM of `hmtt qemu`: a QEMU TCG plugin that records every guest
//! memory access to RAM and streams the records to a file or FIFO.
//!
//! Arguments (`-plugin lib.so,out=PATH,cfg_base=N,ram_size=N`):
//! - `out`: where the records go (a FIFO that `hmtt qemu` reads as they come);
//! - `cfg_base`: physical base of the configuration space; recording starts
//!   at the store to its BEGIN_TRACING line (event 0) and stops after the
//!   store to its END_TRACING line (event 1), so the boot is not traced.
//!   Both stores are written out at once, so the reader sees the trace
//!   begin when the guest begins it; with one vCPU the stream is closed
//!   after END_TRACING (the reader sees its end while the guest shuts
//!   down), with several at QEMU's exit, when every vCPU's buffer is
//!   written out;
//! - `pid_base`, `pid_size` (optional): the range `hmtt_qemu_pid.ko` stores
//!   to on every context switch, at the slot of the process switched to;
//!   those stores are recorded whether or not the trace has begun, so the
//!   reader knows the running process when it begins;
//! - `ram_size`: guest RAM bytes; accesses at or above it are dropped
//!   (QEMU 7.2 reports ROM accesses offset by the RAM size), as are accesses
//!   to MMIO (`is_io`).
//!
//! Record format (24 bytes, little endian), shared with
//! `hmtt_sim::qemu::QemuAccess`: vaddr u64, paddr u64, then u64 info:
//! bits 0..=3 log2 of the size, bit 4 store, bits 32..=63 vCPU index.
//!
//! A panic must not unwind into QEMU's C frames: every entry point runs its
//! body under `catch_unwind` and aborts on a panic (a workspace cannot set
//! `panic = "abort"` for one member).

use qemu_plugin::install::{Args, Info, Value};
use qemu_plugin::plugin::{HasCallbacks, Register};
use qemu_plugin::{register, MemRW, MemoryInfo, PluginId, TranslationBlock};
use std::cell::UnsafeCell;
use std::fs::File;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Bytes per record.
const RECORD_BYTES: usize = 24;
/// Records a vCPU buffers before writing them out.
const BATCH_RECORDS: usize = 1 << 16;
/// vCPUs the plugin has buffers for.
const MAX_VCPUS: usize = 64;
/// Size of a configuration-space line.
const LINE_BYTES: u64 = 64;

/// One vCPU's pending records. Only that vCPU's thread touches it while the
/// guest runs (QEMU calls a vCPU's memory callbacks on its own thread, and
/// single-threaded TCG runs every vCPU on one thread), and the atexit
/// callback runs after every vCPU has stopped.
struct VcpuBuffer(UnsafeCell<Vec<u8>>);
// SAFETY: see above, one thread at a time per buffer.
unsafe impl Sync for VcpuBuffer {}

struct Shared {
    /// `None` once the stream is closed.
    out: Mutex<Option<File>>,
    /// One vCPU: its END_TRACING store may close the stream.
    single_vcpu: bool,
    buffers: Vec<VcpuBuffer>,
    cfg_begin: u64,
    cfg_end: u64,
    pid_base: u64,
    /// 0: no pid range.
    pid_size: u64,
    ram_size: u64,
    tracing: AtomicBool,
    /// The stream was closed after END_TRACING.
    closed: AtomicBool,
    recorded: AtomicU64,
    dropped_io: AtomicU64,
    /// Recorded after the stream was closed, so not written.
    late: AtomicU64,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn abort_on_panic<R>(body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("qemu-plugin-hmtt: panic; aborting rather than unwinding into QEMU");
            std::process::abort()
        }
    }
}

impl Shared {
    fn flush(&self, buf: &mut Vec<u8>) {
        if buf.is_empty() {
            return;
        }
        let records = (buf.len() / RECORD_BYTES) as u64;
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        match out.as_mut().map(|f| f.write_all(buf)) {
            Some(Ok(())) => {
                self.recorded.fetch_add(records, Ordering::Relaxed);
            }
            Some(Err(e)) => {
                eprintln!("qemu-plugin-hmtt: writing the records: {e}");
                std::process::abort();
            }
            // A second BEGIN_TRACING after the stream was closed: the
            // trace is one window per run.
            None => {
                self.late.fetch_add(records, Ordering::Relaxed);
            }
        }
        buf.clear();
    }

    /// Ends the stream: the reader sees its end at once.
    fn close(&self) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut f) = out.take() {
            let _ = f.flush();
        }
        self.closed.store(true, Ordering::Relaxed);
    }

    #[inline]
    fn access(&self, vcpu: u32, vaddr: u64, paddr: u64, size_shift: u32, store: bool) {
        let switches = store && paddr.wrapping_sub(self.pid_base) < self.pid_size;
        let begins = store && paddr == self.cfg_begin;
        if begins {
            self.tracing.store(true, Ordering::Relaxed);
        }
        if switches && self.closed.load(Ordering::Relaxed) {
            return;
        }
        if !switches && !self.tracing.load(Ordering::Relaxed) {
            return;
        }
        let ends = store && paddr == self.cfg_end;
        if ends {
            self.tracing.store(false, Ordering::Relaxed);
        }
        let slot = &self.buffers[(vcpu as usize).min(MAX_VCPUS - 1)];
        // SAFETY: only this vCPU's thread uses its buffer (see VcpuBuffer).
        let buf = unsafe { &mut *slot.0.get() };
        let info = u64::from(size_shift & 0xF) | (u64::from(store) << 4) | (u64::from(vcpu) << 32);
        buf.extend_from_slice(&vaddr.to_le_bytes());
        buf.extend_from_slice(&paddr.to_le_bytes());
        buf.extend_from_slice(&info.to_le_bytes());
        if begins || ends || buf.len() >= BATCH_RECORDS * RECORD_BYTES {
            self.flush(buf);
        }
        if ends && self.single_vcpu {
            self.close();
        }
    }

    /// An access seen by QEMU: dropped unless it is to RAM.
    #[inline]
    fn ram_access(&self, vcpu: u32, info: &MemoryInfo<'_>, vaddr: u64, store: bool) {
        let Some(hw) = info.hwaddr(vaddr) else { return };
        let paddr = hw.hwaddr();
        if hw.is_io() || paddr >= self.ram_size {
            if self.tracing.load(Ordering::Relaxed) {
                self.dropped_io.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        self.access(vcpu, vaddr, paddr, info.size_shift() as u32, store);
    }

    fn finish(&self) {
        for slot in &self.buffers {
            // SAFETY: every vCPU has stopped when QEMU runs atexit callbacks.
            self.flush(unsafe { &mut *slot.0.get() });
        }
        self.close();
        eprintln!(
            "qemu-plugin-hmtt: {} records written (accesses and context switches), {} MMIO or ROM accesses dropped while tracing",
            self.recorded.load(Ordering::Relaxed),
            self.dropped_io.load(Ordering::Relaxed)
        );
        let late = self.late.load(Ordering::Relaxed);
        if late > 0 {
            eprintln!(
                "qemu-plugin-hmtt: {late} accesses after the stream was closed not recorded (a second BEGIN_TRACING)"
            );
        }
    }
}

fn number(args: &Args, key: &str) -> Result<u64, String> {
    match args.parsed.get(key) {
        Some(Value::Integer(i)) => u64::try_from(*i).map_err(|_| format!("{key} is negative")),
        Some(Value::String(s)) => {
            let t = s.trim();
            let parsed = match t.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => t.parse(),
            };
            parsed.map_err(|_| format!("{key}={s} is not a number"))
        }
        _ => Err(format!("argument {key}=N missing")),
    }
}

struct HmttPlugin;

impl Register for HmttPlugin {
    fn register(&mut self, id: PluginId, args: &Args, info: &Info) -> qemu_plugin::Result<()> {
        abort_on_panic(|| {
            let setup = || -> Result<Shared, String> {
                let out = match args.parsed.get("out") {
                    Some(Value::String(p)) => p.clone(),
                    _ => return Err("argument out=PATH missing".into()),
                };
                let cfg_base = number(args, "cfg_base")?;
                let (pid_base, pid_size) = match args.parsed.get("pid_base") {
                    Some(_) => (number(args, "pid_base")?, number(args, "pid_size")?),
                    None => (0, 0),
                };
                let ram_size = number(args, "ram_size")?;
                let file = File::create(&out).map_err(|e| format!("{out}: {e}"))?;
                Ok(Shared {
                    out: Mutex::new(Some(file)),
                    single_vcpu: info.system.as_ref().is_some_and(|s| s.max_vcpus == 1),
                    buffers: (0..MAX_VCPUS)
                        .map(|_| VcpuBuffer(UnsafeCell::new(Vec::new())))
                        .collect(),
                    cfg_begin: cfg_base,
                    cfg_end: cfg_base + LINE_BYTES,
                    pid_base,
                    pid_size,
                    ram_size,
                    tracing: AtomicBool::new(false),
                    closed: AtomicBool::new(false),
                    recorded: AtomicU64::new(0),
                    dropped_io: AtomicU64::new(0),
                    late: AtomicU64::new(0),
                })
            };
            let shared = match setup() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("qemu-plugin-hmtt: {e}");
                    std::process::abort();
                }
            };
            for b in &shared.buffers {
                // SAFETY: no vCPU runs yet.
                unsafe { &mut *b.0.get() }.reserve(BATCH_RECORDS * RECORD_BYTES);
            }
            let _ = SHARED.set(shared);
            qemu_plugin::qemu_plugin_register_atexit_cb(id, |_| {
                abort_on_panic(|| {
                    if let Some(s) = SHARED.get() {
                        s.finish();
                    }
                })
            })
        })
    }
}

impl HasCallbacks for HmttPlugin {
    fn on_translation_block_translate(
        &mut self,
        _id: PluginId,
        tb: TranslationBlock,
    ) -> qemu_plugin::Result<()> {
        abort_on_panic(|| {
            for insn in tb.instructions() {
                // One callback for loads and stores (QEMU 7.2 ran separate
                // load and store callbacks on every access). Until the trace
                // begins a load returns at once: only stores look up their
                // physical address, to see the store that begins it.
                insn.register_memory_access_callback(
                    |vcpu, info, vaddr| {
                        abort_on_panic(|| {
                            let Some(s) = SHARED.get() else { return };
                            let store = info.is_store();
                            if store || s.tracing.load(Ordering::Relaxed) {
                                s.ram_access(vcpu, &info, vaddr, store);
                            }
                        })
                    },
                    MemRW::QEMU_PLUGIN_MEM_RW,
                );
            }
            Ok(())
        })
    }
}

register!(HmttPlugin);
