//! The DIMM of `hmtt qemu`: a QEMU TCG plugin that records every guest
//! memory access to RAM and streams the records to a file or FIFO, every
//! vCPU's accesses in one order, the order they ran in.
//!
//! Arguments (`-plugin lib.so,out=PATH,cfg_base=N,ram_size=N`):
//! - `out`: where the records go (a FIFO that `hmtt qemu` reads as they come);
//! - `cfg_base`: physical base of the configuration space; recording starts
//!   at the store to its BEGIN_TRACING line (event 0) and stops after the
//!   access to its END_TRACING line (event 1), so the boot is not traced.
//!   Both stores are written out at once, so the reader sees the trace
//!   begin when the guest begins it, and the stream is closed right after
//!   END_TRACING (the reader sees its end while the guest shuts down);
//! - `pid_base`, `pid_size` (optional): the range `hmtt_qemu_pid.ko` stores
//!   to on every context switch, at the slot of the process switched to;
//!   those stores are recorded whether or not the trace has begun, so the
//!   reader knows the running process when it begins;
//! - `ram_size`: guest RAM bytes; accesses at or above it are dropped
//!   (QEMU 7.2 reports ROM accesses offset by the RAM size), as are accesses
//!   to MMIO (`is_io`).
//!
//! One order for every vCPU: QEMU must run every vCPU on one thread
//! (`-accel tcg,thread=single`, whose round-robin runs one vCPU at a time;
//! with one vCPU any TCG does), so the memory callbacks come one after the
//! other in the order the accesses ran, and the plugin appends every
//! vCPU's records to one buffer. A callback from a second thread (QEMU's
//! multi-threaded TCG with several vCPUs) aborts QEMU with a message
//! rather than interleaving the vCPUs wrongly.
//!
//! Record format (little endian), shared with `hmtt_sim::qemu::QemuAccess`:
//! 24 bytes, vaddr u64, paddr u64 (of the first byte), then u64 info: bits
//! 0..=3 log2 of the size, bit 4 store, bits 32..=63 vCPU index. An access
//! whose bytes run onto the next virtual page has bit 5 set and is followed
//! by one more u64: the physical address of that page's first byte, which
//! the plugin looks up in the vCPU's TLB (QEMU 7.2's
//! `qemu_plugin_get_hwaddr` takes any virtual address and finds it with
//! `tlb_plugin_lookup` in the main TLB; the access has just filled both
//! pages' entries, at two neighbouring indices). If the lookup fails, bit 6
//! is set and the word is 0 (the host counts the access and runs only its
//! first page's lines); if the next page is MMIO or ROM, bit 7 is set and
//! the word is 0 (those bytes are dropped, as MMIO accesses are). An access
//! whose own page the lookup does not find has bit 8 set and paddr 0 (the
//! host counts it and runs none of its lines). QEMU's own message for a
//! failed lookup is "invalid use of qemu_plugin_get_hwaddr".
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

/// Bytes of a record without the next page's word.
const RECORD_BYTES: usize = 24;
/// Bytes written out at a time (a record and its word are never split).
const BATCH_BYTES: usize = RECORD_BYTES << 16;
/// Size of a configuration-space line.
const LINE_BYTES: u64 = 64;
/// QEMU's page size for x86 (TARGET_PAGE_SIZE): the unit of its TLB.
const PAGE_BYTES: u64 = 4096;

/// Info bits (see the crate documentation).
const INFO_STORE: u64 = 1 << 4;
const INFO_NEXT_PAGE: u64 = 1 << 5;
const INFO_NEXT_UNTRANSLATED: u64 = 1 << 6;
const INFO_NEXT_NOT_RAM: u64 = 1 << 7;
const INFO_UNTRANSLATED: u64 = 1 << 8;

/// The records not written out yet, every vCPU's in one order. Only the
/// thread running the vCPUs touches it while the guest runs (checked by
/// [`Shared::on_vcpu_thread`]), and the atexit callback runs after every
/// vCPU has stopped.
struct Pending(UnsafeCell<PendingRecords>);

struct PendingRecords {
    bytes: Vec<u8>,
    records: u64,
}
// SAFETY: see above, one thread at a time.
unsafe impl Sync for Pending {}

/// What QEMU's TLB says of one page.
enum Frame {
    Ram(u64),
    /// MMIO, or ROM (reported offset by the RAM size).
    NotRam,
    Untranslated,
}

struct Shared {
    /// `None` once the stream is closed.
    out: Mutex<Option<File>>,
    pending: Pending,
    /// `pthread_self()` of the thread running the vCPUs, once one called.
    vcpu_thread: AtomicU64,
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
    /// Traced accesses whose page the TLB did not translate.
    untranslated: AtomicU64,
    /// Traced accesses whose next page the TLB did not translate.
    next_untranslated: AtomicU64,
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
    /// True on the one thread that runs the vCPUs; aborts on another.
    #[inline]
    fn on_vcpu_thread(&self) -> bool {
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as u64;
        let owner = self.vcpu_thread.load(Ordering::Relaxed);
        if owner == me {
            return true;
        }
        if owner == 0
            && self
                .vcpu_thread
                .compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return true;
        }
        eprintln!(
            "qemu-plugin-hmtt: vCPUs run on several threads; run QEMU with -accel tcg,thread=single so that every vCPU's accesses keep one order"
        );
        std::process::abort()
    }

    /// Writes the pending records out.
    fn flush(&self, pending: &mut PendingRecords) {
        if pending.bytes.is_empty() {
            return;
        }
        let records = std::mem::take(&mut pending.records);
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        match out.as_mut().map(|f| f.write_all(&pending.bytes)) {
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
        pending.bytes.clear();
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
    fn access(&self, vcpu: u32, vaddr: u64, paddr: u64, info: u64, next: Option<Frame>) {
        let store = info & INFO_STORE != 0;
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
        // The board stops tracing at any access to the END_TRACING line.
        let ends = paddr & !(LINE_BYTES - 1) == self.cfg_end;
        if ends {
            self.tracing.store(false, Ordering::Relaxed);
        }
        // SAFETY: only the vCPUs' thread gets here (see Pending).
        let pending = unsafe { &mut *self.pending.0.get() };
        let (next_info, word) = match next {
            None => (0, None),
            Some(Frame::Ram(p)) => (INFO_NEXT_PAGE, Some(p)),
            Some(Frame::NotRam) => (INFO_NEXT_PAGE | INFO_NEXT_NOT_RAM, Some(0)),
            Some(Frame::Untranslated) => {
                self.next_untranslated.fetch_add(1, Ordering::Relaxed);
                (INFO_NEXT_PAGE | INFO_NEXT_UNTRANSLATED, Some(0))
            }
        };
        let info = info | next_info | (u64::from(vcpu) << 32);
        let buf = &mut pending.bytes;
        buf.extend_from_slice(&vaddr.to_le_bytes());
        buf.extend_from_slice(&paddr.to_le_bytes());
        buf.extend_from_slice(&info.to_le_bytes());
        if let Some(w) = word {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        pending.records += 1;
        if begins || ends || pending.bytes.len() >= BATCH_BYTES {
            self.flush(pending);
        }
        if ends {
            self.close();
        }
    }

    /// Where QEMU's TLB maps `vaddr` for this access.
    #[inline]
    fn frame(&self, info: &MemoryInfo<'_>, vaddr: u64) -> Frame {
        // QEMU 7.2 keeps the answer in one thread-local struct: read it
        // out before the next lookup.
        match info.hwaddr(vaddr) {
            None => Frame::Untranslated,
            Some(hw) => {
                let paddr = hw.hwaddr();
                if hw.is_io() || paddr >= self.ram_size {
                    Frame::NotRam
                } else {
                    Frame::Ram(paddr)
                }
            }
        }
    }

    /// An access seen by QEMU: dropped unless it begins in RAM.
    #[inline]
    fn ram_access(&self, vcpu: u32, info: &MemoryInfo<'_>, vaddr: u64, store: bool) {
        if !self.on_vcpu_thread() {
            return;
        }
        let shift = info.size_shift() as u64 & 0xF;
        let store_bit = if store { INFO_STORE } else { 0 };
        let paddr = match self.frame(info, vaddr) {
            Frame::Ram(p) => p,
            Frame::NotRam => {
                if self.tracing.load(Ordering::Relaxed) {
                    self.dropped_io.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            Frame::Untranslated => {
                if self.tracing.load(Ordering::Relaxed) {
                    self.untranslated.fetch_add(1, Ordering::Relaxed);
                    self.access(vcpu, vaddr, 0, shift | store_bit | INFO_UNTRANSLATED, None);
                }
                return;
            }
        };
        let last = vaddr.wrapping_add((1 << shift) - 1);
        let next = (last / PAGE_BYTES != vaddr / PAGE_BYTES
            && self.tracing.load(Ordering::Relaxed))
        .then(|| self.frame(info, last & !(PAGE_BYTES - 1)));
        self.access(vcpu, vaddr, paddr, shift | store_bit, next);
    }

    fn finish(&self) {
        // SAFETY: every vCPU has stopped when QEMU runs atexit callbacks.
        self.flush(unsafe { &mut *self.pending.0.get() });
        self.close();
        eprintln!(
            "qemu-plugin-hmtt: {} records written (accesses and context switches), {} MMIO or ROM accesses dropped while tracing",
            self.recorded.load(Ordering::Relaxed),
            self.dropped_io.load(Ordering::Relaxed)
        );
        let (untranslated, next) = (
            self.untranslated.load(Ordering::Relaxed),
            self.next_untranslated.load(Ordering::Relaxed),
        );
        if untranslated + next > 0 {
            eprintln!(
                "qemu-plugin-hmtt: WARNING: QEMU's TLB did not translate {untranslated} traced accesses (none of their lines traced) and the second page of {next} page-crossing ones (only their first page's lines traced)"
            );
        }
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
    fn register(&mut self, id: PluginId, args: &Args, _info: &Info) -> qemu_plugin::Result<()> {
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
                    pending: Pending(UnsafeCell::new(PendingRecords {
                        // A record's word may take a batch past its size.
                        bytes: Vec::with_capacity(BATCH_BYTES + 2 * RECORD_BYTES),
                        records: 0,
                    })),
                    vcpu_thread: AtomicU64::new(0),
                    cfg_begin: cfg_base,
                    cfg_end: cfg_base + LINE_BYTES,
                    pid_base,
                    pid_size,
                    ram_size,
                    tracing: AtomicBool::new(false),
                    closed: AtomicBool::new(false),
                    recorded: AtomicU64::new(0),
                    dropped_io: AtomicU64::new(0),
                    untranslated: AtomicU64::new(0),
                    next_untranslated: AtomicU64::new(0),
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
