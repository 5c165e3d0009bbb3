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

/// Bytes of one plugin record (see the plugin's crate documentation).
pub const RECORD_BYTES: usize = 24;

/// One guest memory access as the plugin saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QemuAccess {
    pub vcpu: u32,
    pub vaddr: u64,
    pub paddr: u64,
    /// Bytes accessed (1, 2, 4, 8, 16, ...).
    pub size: u32,
    pub store: bool,
}

impl QemuAccess {
    #[inline]
    pub fn parse(b: &[u8; RECORD_BYTES]) -> QemuAccess {
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let info = word(2);
        QemuAccess {
            vaddr: word(0),
            paddr: word(1),
            size: 1 << (info & 0xF),
            store: info >> 4 & 1 == 1,
            vcpu: (info >> 32) as u32,
        }
    }

    pub fn to_bytes(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[..8].copy_from_slice(&self.vaddr.to_le_bytes());
        b[8..16].copy_from_slice(&self.paddr.to_le_bytes());
        let info = u64::from(self.size.max(1).trailing_zeros())
            | (u64::from(self.store) << 4)
            | (u64::from(self.vcpu) << 32);
        b[16..].copy_from_slice(&info.to_le_bytes());
        b
    }

    /// A user-space address, else the kernel's half: canonical x86-64
    /// addresses have the top bit clear in the user half, with 4-level and
    /// 5-level paging alike (QEMU's `-cpu max` has LA57, so Debian's kernel
    /// uses 5 levels and lives from 0xff00_0000_0000_0000 up).
    pub fn is_user(&self) -> bool {
        self.vaddr >> 63 == 0
    }
}

/// Reads plugin records until the end of the stream; a trailing partial
/// record is an error. Buffers by itself and parses each record where it
/// lies: a read call and a copy per record cost more than the parsing.
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

    /// Reads until a whole record is buffered; false at the end of the
    /// stream.
    #[cold]
    fn fill(&mut self) -> io::Result<bool> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < RECORD_BYTES {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) if self.end == 0 => return Ok(false),
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the access stream ends inside a record ({} of {RECORD_BYTES} bytes)",
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

    /// The next record, or `None` at the end of the stream.
    #[inline]
    pub fn next_access(&mut self) -> io::Result<Option<QemuAccess>> {
        if self.end - self.pos < RECORD_BYTES && !self.fill()? {
            return Ok(None);
        }
        let record = self.buf[self.pos..self.pos + RECORD_BYTES]
            .try_into()
            .expect("a whole record is buffered");
        self.pos += RECORD_BYTES;
        self.records += 1;
        let a = QemuAccess::parse(record);
        // QEMU never reports one; a forged record would wrap the line walk.
        if a.paddr.checked_add(u64::from(a.size) - 1).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "record {}: {} bytes at physical {:#x} run past the end of the address space",
                    self.records - 1,
                    a.size,
                    a.paddr
                ),
            ));
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
    /// only from the page-table log, which the truth must not use). Each
    /// line reference is handed to `seen`.
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
        let first = a.paddr & !(LINE_BYTES - 1);
        let last = (a.paddr + u64::from(a.size.max(1)) - 1) & !(LINE_BYTES - 1);
        let mut pa = first;
        let mut va = a.vaddr & !(LINE_BYTES - 1);
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
            if pa == last {
                break;
            }
            pa += LINE_BYTES;
            va = va.wrapping_add(LINE_BYTES);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let a = QemuAccess {
            vcpu: 3,
            vaddr: 0x7fff_1234_5678,
            paddr: 0x1234_5640,
            size: 8,
            store: true,
        };
        assert_eq!(QemuAccess::parse(&a.to_bytes()), a);
    }

    #[test]
    fn reader_refuses_a_cut_record() {
        let a = QemuAccess {
            vcpu: 0,
            vaddr: 1,
            paddr: 2,
            size: 4,
            store: false,
        };
        let mut bytes = a.to_bytes().to_vec();
        bytes.extend_from_slice(&a.to_bytes()[..10]);
        let mut r = QemuReader::new(&bytes[..]);
        assert_eq!(r.next_access().unwrap(), Some(a));
        assert!(r.next_access().is_err());
    }

    #[test]
    fn reader_refuses_a_range_past_the_address_space() {
        let ok = QemuAccess {
            vcpu: 0,
            vaddr: 0,
            paddr: u64::MAX - 7,
            size: 8,
            store: false,
        };
        let wraps = QemuAccess {
            paddr: u64::MAX - 6,
            ..ok
        };
        let bytes: Vec<u8> = [ok, wraps].iter().flat_map(|a| a.to_bytes()).collect();
        let mut r = QemuReader::new(&bytes[..]);
        assert_eq!(r.next_access().unwrap(), Some(ok));
        let e = r.next_access().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().starts_with("record 1: 8 bytes"), "{e}");
    }

    /// Hands out at most 5 bytes a call, so records straddle reads.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = out.len().min(5).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn reader_joins_records_cut_by_reads() {
        let accesses: Vec<QemuAccess> = (0..1000u64)
            .map(|i| QemuAccess {
                vcpu: (i % 3) as u32,
                vaddr: i * 0x1000 + 7,
                paddr: i * 0x40,
                size: 1 << (i % 5),
                store: i % 2 == 0,
            })
            .collect();
        let bytes: Vec<u8> = accesses.iter().flat_map(|a| a.to_bytes()).collect();
        let mut r = QemuReader::new(Trickle(&bytes));
        let mut read = Vec::new();
        while let Some(a) = r.next_access().unwrap() {
            read.push(a);
        }
        assert_eq!(read, accesses);
    }

    #[test]
    fn reference_rows() {
        let mut out = Vec::new();
        let r = LineReference {
            vcpu: 0,
            pid: Some(87),
            vaddr: 0x7fff_1234_5640,
            paddr: 0x1234_5640,
            write: true,
            kind: RefKind::Cpu,
            event: None,
        };
        // One row reused for both, as the writer does.
        let mut row = Row::new();
        reference_row_into(&mut row, 7, &r);
        out.extend_from_slice(row.as_bytes());
        let icode = LineReference {
            pid: None,
            write: false,
            kind: RefKind::Icode,
            event: Some(0x10005),
            ..r
        };
        row.clear();
        reference_row_into(&mut row, 8, &icode);
        out.extend_from_slice(row.as_bytes());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "7,0,87,0x7fff12345640,0x12345640,W,cpu,\n8,0,,0x7fff12345640,0x12345640,R,icode,0x10005\n"
        );
    }

    #[test]
    fn user_and_kernel_halves() {
        let at = |vaddr| QemuAccess {
            vcpu: 0,
            vaddr,
            paddr: 0,
            size: 1,
            store: false,
        };
        assert!(at(0x7fff_ffff_f000).is_user());
        assert!(at(0x00ff_ffff_ffff_f000).is_user());
        assert!(!at(0xffff_8880_0000_0000).is_user());
        assert!(!at(0xff1a_0000_0000_0000).is_user());
    }

    #[test]
    fn context_switches_name_the_current_process() {
        let pids = GuestPidSpace {
            base: 0x1080_0000,
            size: 0x40,
        };
        let store = |vcpu, paddr| QemuAccess {
            vcpu,
            vaddr: 0xffff_8880_1080_0000,
            paddr,
            size: 1,
            store: true,
        };
        let mut tasks = GuestTasks::default();
        assert_eq!(tasks.current(0), None);
        assert!(tasks.take(&store(0, 0x1080_0000 + 87 % 7 * 8), &pids));
        assert_eq!(tasks.current(0), Some(3));
        assert!(tasks.take(&store(1, 0x1080_0010), &pids));
        assert_eq!((tasks.current(0), tasks.current(1)), (Some(3), Some(2)));
        // The last slot: a tgid past the range.
        assert!(tasks.take(&store(0, 0x1080_0038), &pids));
        assert_eq!(tasks.current(0), None);
        // Outside the range: an access, not a switch.
        assert!(!tasks.take(&store(0, 0x1080_0040), &pids));
        assert!(!tasks.take(&store(0, 0x107f_fff8), &pids));
        // A forged vCPU index is not followed (no table that large).
        assert!(tasks.take(&store(u32::MAX, 0x1080_0008), &pids));
        assert_eq!(tasks.current(u32::MAX), None);
        assert_eq!(tasks.switches(), 3);
    }

    #[test]
    fn config_space_events() {
        let s = GuestConfigSpace {
            base: 0x1000_0000,
            size: 0x80_0000,
        };
        assert_eq!(s.event_of(0x1000_0000), Some(0));
        assert_eq!(s.event_of(0x1000_0048), Some(1));
        assert_eq!(s.event_of(0x1080_0000), None);
        assert_eq!(s.event_of(0x0fff_ffff), None);
    }
}
