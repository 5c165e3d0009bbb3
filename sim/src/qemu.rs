//! Guest memory accesses recorded by QEMU (the `qemu-plugin-hmtt` TCG
//! plugin) through the simulated memory path: LLC model on or off, memory
//! controller, DDR commands, the board's golden model.
//!
//! The plugin knows physical addresses, so the machine's OS model is not
//! used: its page-table log comes from the guest's `hmtt.ko` instead. A
//! store or load inside the guest's configuration space (the `memmap=`
//! range `hmtt.ko` maps uncached) becomes an uncached reference to the
//! same event of the board's window, i.e. an I-code.

use crate::machine::{Machine, SimError};
use hmtt_format::text::Row;
use hmtt_format::truth::RefKind;
use hmtt_format::LINE_BYTES;
use std::io::{self, Read};

/// Bytes of one plugin record (see the plugin's crate documentation); a
/// page-crossing access's record is followed by [`NEXT_PAGE_BYTES`] more.
pub const RECORD_BYTES: usize = 24;
/// Bytes of the word after a page-crossing access's record: the physical
/// address of its second page.
pub const NEXT_PAGE_BYTES: usize = 8;
/// QEMU's page size for x86 (its TLB's unit): an access runs onto a
/// second page when its bytes cross a multiple of this.
pub const PAGE_BYTES: u64 = 4096;

/// The largest access a record may claim, in bytes: x86's widest (an
/// AVX-512 access; QEMU 7.2's TCG splits vector accesses into 8-byte
/// ones), one cache line, so an access touches at most two lines on at
/// most two pages.
pub const MAX_ACCESS_BYTES: u64 = 64;

/// Bits of a record's info word (the plugin's crate documentation).
mod info {
    pub const SIZE_SHIFT: u64 = 0xF;
    pub const STORE: u64 = 1 << 4;
    pub const NEXT_PAGE: u64 = 1 << 5;
    pub const NEXT_UNTRANSLATED: u64 = 1 << 6;
    pub const NEXT_NOT_RAM: u64 = 1 << 7;
    pub const UNTRANSLATED: u64 = 1 << 8;
    /// Every bit a record may set below the vCPU index.
    pub const KNOWN: u64 =
        SIZE_SHIFT | STORE | NEXT_PAGE | NEXT_UNTRANSLATED | NEXT_NOT_RAM | UNTRANSLATED;
}

/// Where an access's bytes are in physical memory, as QEMU's TLB gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frames {
    /// Every byte is in the page of `paddr`.
    OnePage,
    /// The bytes run onto the next virtual page, whose first byte is at
    /// this physical address.
    TwoPages(u64),
    /// The bytes run onto the next virtual page, which is MMIO or ROM:
    /// only the first page's bytes are memory references.
    NextNotRam,
    /// The bytes run onto the next virtual page, which QEMU's TLB did not
    /// translate: only the first page's lines are known.
    NextUntranslated,
    /// QEMU's TLB did not translate the access's own page (`paddr` is 0):
    /// none of its lines is known.
    Untranslated,
}

/// One guest memory access as the plugin saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QemuAccess {
    pub vcpu: u32,
    pub vaddr: u64,
    /// Physical address of the first byte.
    pub paddr: u64,
    /// Bytes accessed (1, 2, 4, 8, 16, ...).
    pub size: u32,
    pub store: bool,
    pub frames: Frames,
}

impl QemuAccess {
    /// Whether the access's bytes run onto the next virtual page.
    pub fn crosses_page(&self) -> bool {
        (self.vaddr % PAGE_BYTES) + u64::from(self.size.max(1)) > PAGE_BYTES
    }

    /// The record's bytes: [`RECORD_BYTES`], and for an access with a
    /// second page the [`NEXT_PAGE_BYTES`] word.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let (bits, word) = match self.frames {
            Frames::OnePage => (0, None),
            Frames::TwoPages(p) => (info::NEXT_PAGE, Some(p)),
            Frames::NextNotRam => (info::NEXT_PAGE | info::NEXT_NOT_RAM, Some(0)),
            Frames::NextUntranslated => (info::NEXT_PAGE | info::NEXT_UNTRANSLATED, Some(0)),
            Frames::Untranslated => (info::UNTRANSLATED, None),
        };
        let info = u64::from(self.size.max(1).trailing_zeros())
            | if self.store { info::STORE } else { 0 }
            | bits
            | (u64::from(self.vcpu) << 32);
        out.extend_from_slice(&self.vaddr.to_le_bytes());
        out.extend_from_slice(&self.paddr.to_le_bytes());
        out.extend_from_slice(&info.to_le_bytes());
        if let Some(w) = word {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// A user-space address, else the kernel's half: canonical x86-64
    /// addresses have the top bit clear in the user half, with 4-level and
    /// 5-level paging alike (QEMU's `-cpu max` has LA57, so Debian's kernel
    /// uses 5 levels and lives from 0xff00_0000_0000_0000 up).
    pub fn is_user(&self) -> bool {
        self.vaddr >> 63 == 0
    }

    /// The physical lines the access touches, as up to two runs of
    /// consecutive lines (one per page), in the order of its virtual bytes:
    /// none for an untranslated access, only the first page's for an
    /// access whose second page is not known or not RAM.
    #[inline]
    pub fn line_runs(&self) -> [Option<LineRun>; 2] {
        let mask = !(LINE_BYTES - 1);
        let size = u64::from(self.size.max(1));
        let vlast = self.vaddr.wrapping_add(size - 1);
        let first = |last: u64| LineRun {
            first_pa: self.paddr & mask,
            last_pa: last & mask,
            first_va: self.vaddr & mask,
        };
        match self.frames {
            Frames::OnePage => [Some(first(self.paddr + (size - 1))), None],
            Frames::TwoPages(next) => [
                Some(first(self.paddr | (PAGE_BYTES - 1))),
                Some(LineRun {
                    first_pa: next & mask,
                    last_pa: (next + vlast % PAGE_BYTES) & mask,
                    first_va: vlast & !(PAGE_BYTES - 1),
                }),
            ],
            Frames::NextNotRam | Frames::NextUntranslated => {
                [Some(first(self.paddr | (PAGE_BYTES - 1))), None]
            }
            Frames::Untranslated => [None, None],
        }
    }

    /// Every line [`Self::line_runs`] gives: (physical, virtual) address
    /// of its first byte.
    pub fn lines(&self) -> impl Iterator<Item = (u64, u64)> {
        self.line_runs().into_iter().flatten().flat_map(|r| {
            (0..=(r.last_pa - r.first_pa) / LINE_BYTES).map(move |i| {
                (
                    r.first_pa + i * LINE_BYTES,
                    r.first_va.wrapping_add(i * LINE_BYTES),
                )
            })
        })
    }
}

/// Consecutive physical lines of one access on one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRun {
    pub first_pa: u64,
    /// The run's last line (line-aligned, `>= first_pa`).
    pub last_pa: u64,
    /// Virtual address of the first line.
    pub first_va: u64,
}

/// Reads plugin records until the end of the stream; a trailing partial
/// record is an error, and so is a record that contradicts itself (a
/// page-crossing access without its second page, unknown bits). Buffers by
/// itself and parses each record where it lies: a read call and a copy per
/// record cost more than the parsing.
pub struct QemuReader<R> {
    inner: R,
    /// Records read so far (for error messages).
    records: u64,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
}

/// Bytes [`QemuReader`] asks for at a time.
const READ_BYTES: usize = 1 << 20;

fn invalid(record: u64, what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("record {record}: {what}"),
    )
}

impl<R: Read> QemuReader<R> {
    pub fn new(inner: R) -> Self {
        QemuReader {
            inner,
            records: 0,
            buf: vec![0; READ_BYTES],
            pos: 0,
            end: 0,
        }
    }

    /// Reads until `need` bytes are buffered; false at the end of the
    /// stream on a record's boundary.
    #[cold]
    fn fill(&mut self, need: usize) -> io::Result<bool> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < need {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) if self.end == 0 => return Ok(false),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the access stream ends inside a record ({} of {need} bytes)",
                            self.end
                        ),
                    ))
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn word(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.buf[at..at + 8].try_into().expect("8 bytes"))
    }

    /// The next record, or `None` at the end of the stream.
    #[inline]
    pub fn next_access(&mut self) -> io::Result<Option<QemuAccess>> {
        if self.end - self.pos < RECORD_BYTES && !self.fill(RECORD_BYTES)? {
            return Ok(None);
        }
        let n = self.records;
        let (vaddr, paddr, bits) = (
            self.word(self.pos),
            self.word(self.pos + 8),
            self.word(self.pos + 16),
        );
        let mut used = RECORD_BYTES;
        let frames = if bits & info::NEXT_PAGE != 0 {
            if self.end - self.pos < RECORD_BYTES + NEXT_PAGE_BYTES {
                // Never false: the record's own bytes are buffered, so
                // the stream's end inside its word is an error.
                self.fill(RECORD_BYTES + NEXT_PAGE_BYTES)?;
            }
            used += NEXT_PAGE_BYTES;
            match bits & (info::NEXT_UNTRANSLATED | info::NEXT_NOT_RAM | info::UNTRANSLATED) {
                0 => Frames::TwoPages(self.word(self.pos + RECORD_BYTES)),
                info::NEXT_UNTRANSLATED => Frames::NextUntranslated,
                info::NEXT_NOT_RAM => Frames::NextNotRam,
                _ => return Err(invalid(n, format!("info {bits:#x} contradicts itself"))),
            }
        } else {
            match bits & (info::NEXT_UNTRANSLATED | info::NEXT_NOT_RAM | info::UNTRANSLATED) {
                0 => Frames::OnePage,
                info::UNTRANSLATED => Frames::Untranslated,
                _ => return Err(invalid(n, format!("info {bits:#x} contradicts itself"))),
            }
        };
        if bits as u32 as u64 & !info::KNOWN != 0 {
            return Err(invalid(n, format!("unknown bits in info {bits:#x}")));
        }
        self.pos += used;
        self.records += 1;
        let a = QemuAccess {
            vaddr,
            paddr,
            size: 1 << (bits & info::SIZE_SHIFT),
            store: bits & info::STORE != 0,
            vcpu: (bits >> 32) as u32,
            frames,
        };
        let size = u64::from(a.size);
        // A forged size would make one record thousands of lines, and the
        // memory path's work and memory grow with them.
        if size > MAX_ACCESS_BYTES {
            return Err(invalid(
                n,
                format!(
                    "an access of {size} bytes: QEMU reports at most {MAX_ACCESS_BYTES} (an x86 guest's widest access)"
                ),
            ));
        }
        match a.frames {
            Frames::Untranslated => {}
            Frames::OnePage if a.crosses_page() => {
                return Err(invalid(
                    n,
                    format!(
                        "{size} bytes at virtual {vaddr:#x} run onto the next page, but the record gives no frame for it (a plugin older than the page-crossing records?)"
                    ),
                ))
            }
            // QEMU never reports one; a forged record would wrap the line
            // walk.
            Frames::OnePage if paddr.checked_add(size - 1).is_none() => {
                return Err(invalid(
                    n,
                    format!(
                        "{size} bytes at physical {paddr:#x} run past the end of the address space"
                    ),
                ))
            }
            Frames::OnePage => {}
            _ if !a.crosses_page() => {
                return Err(invalid(
                    n,
                    format!(
                        "{size} bytes at virtual {vaddr:#x} stay on one page, but the record gives a second one"
                    ),
                ))
            }
            Frames::TwoPages(next)
                if next % PAGE_BYTES != 0 || next.checked_add(PAGE_BYTES - 1).is_none() =>
            {
                return Err(invalid(
                    n,
                    format!("second page at physical {next:#x} is not a page's first byte"),
                ))
            }
            _ if paddr.checked_add(PAGE_BYTES).is_none() => {
                return Err(invalid(
                    n,
                    format!("physical {paddr:#x} is in the address space's last page"),
                ))
            }
            _ => {}
        }
        Ok(Some(a))
    }
}

/// The guest's configuration space: the physical range reserved with
/// `memmap=` and given to `hmtt.ko` as `cfg_base`/`cfg_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestConfigSpace {
    pub base: u64,
    pub size: u64,
}

impl GuestConfigSpace {
    /// `hmtt qemu`'s: 8 MiB at 256 MiB.
    pub const DEFAULT: GuestConfigSpace = GuestConfigSpace {
        base: 0x1000_0000,
        size: 0x80_0000,
    };

    /// The event index of a physical address inside the space.
    pub fn event_of(&self, paddr: u64) -> Option<u32> {
        let off = paddr.checked_sub(self.base)?;
        if off >= self.size {
            return None;
        }
        u32::try_from(off / LINE_BYTES).ok()
    }
}

/// The range `hmtt_qemu_pid.ko` stores to on every context switch, next to
/// the configuration space: slot `tgid` ([`PID_SLOT_BYTES`] each) for the
/// process switched to, the last slot for a tgid past the range. QEMU 7.2's
/// plugin API can read neither registers nor guest memory, so the address
/// of that store is how the plugin learns which process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestPidSpace {
    pub base: u64,
    pub size: u64,
}

/// Bytes of one slot of a [`GuestPidSpace`].
pub const PID_SLOT_BYTES: u64 = 8;

/// vCPUs whose current process is followed; a record naming a higher vCPU
/// (none from QEMU with `-smp` up to this) leaves its process unknown.
const MAX_TRACKED_VCPUS: usize = 256;

impl GuestPidSpace {
    /// `hmtt qemu`'s: right after the default configuration space, with
    /// slots for tgids up to pid_max's default of 32768.
    pub const DEFAULT: GuestPidSpace = GuestPidSpace {
        base: GuestConfigSpace::DEFAULT.base + GuestConfigSpace::DEFAULT.size,
        size: 32768 * PID_SLOT_BYTES,
    };

    /// For an address inside the range, the process its slot names
    /// (`None`: the "unknown" slot); `None` outside.
    pub fn slot_of(&self, paddr: u64) -> Option<Option<u32>> {
        let off = paddr.checked_sub(self.base)?;
        if off >= self.size {
            return None;
        }
        let slot = off / PID_SLOT_BYTES;
        let unknown = (self.size / PID_SLOT_BYTES).saturating_sub(1);
        Some((slot < unknown).then_some(slot as u32))
    }
}

/// The process each vCPU runs, as the guest's last context switch on it
/// announced it ([`GuestPidSpace`]); unknown before the first.
#[derive(Debug, Default)]
pub struct GuestTasks {
    current: Vec<Option<u32>>,
    switches: u64,
}

impl GuestTasks {
    pub fn current(&self, vcpu: u32) -> Option<u32> {
        self.current.get(vcpu as usize).copied().flatten()
    }

    /// Context switches seen.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// Takes `a` if it is a store to the pid range (a context switch); true
    /// if it was in the range, so it is no memory reference of the trace.
    pub fn take(&mut self, a: &QemuAccess, pids: &GuestPidSpace) -> bool {
        let Some(pid) = pids.slot_of(a.paddr) else {
            return false;
        };
        let v = a.vcpu as usize;
        if a.store && v < MAX_TRACKED_VCPUS {
            if self.current.len() <= v {
                self.current.resize(v + 1, None);
            }
            self.current[v] = pid;
            self.switches += 1;
        }
        true
    }
}

/// What one access became on its way to memory, one per line touched (an
/// I-code is one reference), in the order the machine received them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineReference {
    pub vcpu: u32,
    /// The process the vCPU ran ([`GuestTasks`]), if known.
    pub pid: Option<u32>,
    /// Virtual address of the line's first byte (the plugin's vaddr).
    pub vaddr: u64,
    pub paddr: u64,
    pub write: bool,
    pub kind: RefKind,
    pub event: Option<u32>,
}

/// Header of [`reference_row_into`]'s CSV.
pub const REFERENCE_CSV_HEADER: &str = "n,vcpu,pid,vaddr,pa,rw,kind,event";

/// Reference `n`'s CSV row, newline included, into a row the caller
/// reuses and appends to its output (see [`Row`]).
#[inline]
pub fn reference_row_into(row: &mut Row, n: u64, r: &LineReference) {
    row.decimal(n);
    row.byte(b',');
    row.decimal(u64::from(r.vcpu));
    row.byte(b',');
    if let Some(pid) = r.pid {
        row.decimal(u64::from(pid));
    }
    row.byte(b',');
    row.hex(r.vaddr);
    row.byte(b',');
    row.hex(r.paddr);
    row.byte(b',');
    row.byte(if r.write { b'W' } else { b'R' });
    row.byte(b',');
    row.bytes(r.kind.name().as_bytes());
    row.byte(b',');
    if let Some(e) = r.event {
        row.hex(u64::from(e));
    }
    row.byte(b'\n');
}

impl Machine {
    /// Runs one guest access: an I-code inside the configuration space
    /// (uncached), else one cached reference per line it touches, of kind
    /// `cpu` for a user-space virtual address and `kernel` otherwise. `pid`
    /// is the process the vCPU runs ([`GuestTasks`]): the ground truth of a
    /// user-space reference carries it with the reference's virtual address;
    /// a kernel reference's carries neither (the owner of a frame is known
    /// only from the page-table log, which the truth must not use). The
    /// lines are [`QemuAccess::line_runs`]'s: an access that runs onto the
    /// next virtual page continues at that page's frame. Each line
    /// reference is handed to `seen`.
    pub fn guest_access(
        &mut self,
        a: &QemuAccess,
        space: &GuestConfigSpace,
        pid: Option<u32>,
        mut seen: impl FnMut(&LineReference),
    ) -> Result<(), SimError> {
        self.stats.references += 1;
        if let Some(event) = space.event_of(a.paddr) {
            if self
                .window
                .line_of_event(&self.cfg.geometry, event)
                .is_none()
            {
                return Err(SimError::Config(format!(
                    "guest event {event:#x} (physical {:#x}) is outside the board's window",
                    a.paddr
                )));
            }
            seen(&LineReference {
                vcpu: a.vcpu,
                pid,
                vaddr: a.vaddr & !(LINE_BYTES - 1),
                paddr: a.paddr & !(LINE_BYTES - 1),
                write: a.store,
                kind: RefKind::Icode,
                event: Some(event),
            });
            self.icode(event, a.store);
            return Ok(());
        }
        let kind = if a.is_user() {
            RefKind::Cpu
        } else {
            RefKind::Kernel
        };
        for run in a.line_runs().into_iter().flatten() {
            let (mut pa, mut va) = (run.first_pa, run.first_va);
            loop {
                seen(&LineReference {
                    vcpu: a.vcpu,
                    pid,
                    vaddr: va,
                    paddr: pa,
                    write: a.store,
                    kind,
                    event: None,
                });
                let owner = match kind {
                    RefKind::Cpu => pid.map(|p| (p, va)),
                    _ => None,
                };
                self.cached(pa, a.store, kind, owner);
                if pa == run.last_pa {
                    break;
                }
                pa += LINE_BYTES;
                va = va.wrapping_add(LINE_BYTES);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
