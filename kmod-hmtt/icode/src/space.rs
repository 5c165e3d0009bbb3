//! The mapped configuration space.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use hmtt_format::config::{ConfigWindow, InnerCommand, FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG};
use hmtt_format::mapping::AddressMapping;
use memmap2::{MmapOptions, MmapRaw};

use crate::abi;

/// How an event's line is touched. The board records both (a TAG's write
/// bit tells them apart); stores also leave the event index in the line,
/// which makes them checkable without a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Store the event index (a u64) at the start of the line.
    #[default]
    Write,
    /// Load the first u64 of the line, as in the paper.
    Read,
}

/// Why the configuration space could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    #[error("cannot open {}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("{} is not the hmtt device (HMTT_IOC_INFO failed); is kmod-hmtt loaded?", path.display())]
    NotDevice { path: PathBuf, source: io::Error },
    #[error("the hmtt module speaks interface version {0}; this library speaks {ver}", ver = abi::ABI_VERSION)]
    AbiVersion(u32),
    #[error("the hmtt module reports {0}-byte lines; this library needs 64")]
    LineSize(u32),
    #[error("a configuration space of {0} bytes is not a positive multiple of 64")]
    BadSize(u64),
    #[error("cannot map {}", path.display())]
    Map { path: PathBuf, source: io::Error },
    #[error("event {event:#x} is outside the configuration space ({lines:#x} lines)")]
    OutOfRange { event: u32, lines: u64 },
    #[error("event {0:#x} is a kernel log tag (0x10000..=0x1ffff), reserved for hmtt_printk")]
    ReservedForKernelLog(u32),
    #[error("event {event:#x} maps to physical address {phys:#x}, outside {base:#x}+{size:#x}")]
    MappedOutside {
        event: u32,
        phys: u64,
        base: u64,
        size: u64,
    },
    #[error("this is a plain file, not the hmtt device: {0} needs the kernel module")]
    NotADevice(&'static str),
    #[error("{what} failed")]
    Ioctl {
        what: &'static str,
        source: io::Error,
    },
}

enum Addressing {
    /// Line i at byte offset i * 64 (QEMU; linear memory controllers).
    Linear,
    /// Line i at the physical address the inverse mapping gives for the
    /// window's first line + i.
    Mapped {
        mapping: AddressMapping,
        first_line: u64,
        lines: u64,
    },
}

/// The configuration space, mapped from `/dev/hmtt` (or from a plain file
/// standing in for it in tests).
pub struct ConfigSpace {
    map: MmapRaw,
    file: File,
    path: PathBuf,
    base_phys: u64,
    size: u64,
    is_device: bool,
    access: Access,
    addressing: Addressing,
}

/// `path` opened for reading and writing, with the path kept for errors.
fn open_read_write(path: &Path) -> Result<(File, PathBuf), SpaceError> {
    let path = path.to_path_buf();
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map(|file| (file, path.clone()))
        .map_err(|source| SpaceError::Open { path, source })
}

impl ConfigSpace {
    /// Open and map the hmtt device (normally `/dev/hmtt`), whole.
    pub fn open_device(path: impl AsRef<Path>) -> Result<Self, SpaceError> {
        let (file, path) = open_read_write(path.as_ref())?;
        let mut info = abi::Info::default();
        // SAFETY: IOC_INFO takes a struct hmtt_info, mirrored by abi::Info.
        unsafe { abi::ioctl(file.as_raw_fd(), abi::IOC_INFO, &mut info) }.map_err(|source| {
            SpaceError::NotDevice {
                path: path.clone(),
                source,
            }
        })?;
        if info.version != abi::ABI_VERSION {
            return Err(SpaceError::AbiVersion(info.version));
        }
        if u64::from(info.line_size) != abi::LINE_SIZE {
            return Err(SpaceError::LineSize(info.line_size));
        }
        Self::map(file, path, info.base, info.size, true)
    }

    /// Map a plain file as if it were the configuration space at physical
    /// address `base_phys`; its length is the space's size. For tests and
    /// dry runs: stores show up in the file.
    pub fn from_file(path: impl AsRef<Path>, base_phys: u64) -> Result<Self, SpaceError> {
        let (file, path) = open_read_write(path.as_ref())?;
        let size = file
            .metadata()
            .map_err(|source| SpaceError::Open {
                path: path.clone(),
                source,
            })?
            .len();
        Self::map(file, path, base_phys, size, false)
    }

    fn map(
        file: File,
        path: PathBuf,
        base_phys: u64,
        size: u64,
        is_device: bool,
    ) -> Result<Self, SpaceError> {
        if size == 0 || !size.is_multiple_of(abi::LINE_SIZE) {
            return Err(SpaceError::BadSize(size));
        }
        let len = usize::try_from(size).map_err(|_| SpaceError::BadSize(size))?;
        let map = MmapOptions::new()
            .len(len)
            .map_raw(&file)
            .map_err(|source| SpaceError::Map {
                path: path.clone(),
                source,
            })?;
        tracing::debug!(path = %path.display(), base_phys, size, "configuration space mapped");
        Ok(Self {
            map,
            file,
            path,
            base_phys,
            size,
            is_device,
            access: Access::Write,
            addressing: Addressing::Linear,
        })
    }

    /// Use `mapping` (a hashed memory-controller mapping) to find an event's
    /// line: event i is the line index `window.first_line + i`, touched at
    /// the physical address the inverse mapping gives, which must fall in
    /// the mapped space.
    pub fn with_mapping(mut self, mapping: AddressMapping, window: ConfigWindow) -> Self {
        let g = *mapping.geometry();
        self.addressing = Addressing::Mapped {
            first_line: window.first_line(&g),
            lines: window.lines(&g),
            mapping,
        };
        self
    }

    /// Choose loads instead of stores (or back).
    pub fn with_access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Physical address of the space's first byte.
    pub fn base_phys(&self) -> u64 {
        self.base_phys
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Number of event lines.
    pub fn lines(&self) -> u64 {
        match &self.addressing {
            Addressing::Linear => self.size / abi::LINE_SIZE,
            Addressing::Mapped { lines, .. } => *lines,
        }
    }

    /// Byte offset, inside the mapping, of event `event`'s line.
    pub fn offset_of(&self, event: u32) -> Result<u64, SpaceError> {
        let lines = self.lines();
        if u64::from(event) >= lines {
            return Err(SpaceError::OutOfRange { event, lines });
        }
        match &self.addressing {
            Addressing::Linear => Ok(u64::from(event) * abi::LINE_SIZE),
            Addressing::Mapped {
                mapping,
                first_line,
                ..
            } => {
                let phys = mapping.pa_of(first_line + u64::from(event));
                match phys.checked_sub(self.base_phys) {
                    Some(off) if off < self.size => Ok(off),
                    _ => Err(SpaceError::MappedOutside {
                        event,
                        phys,
                        base: self.base_phys,
                        size: self.size,
                    }),
                }
            }
        }
    }

    /// Inject event `event` (an inner command below 0x40, a user event at
    /// or above): touch its line once. Kernel log tags are refused.
    pub fn icode(&self, event: u32) -> Result<(), SpaceError> {
        self.touch(event, self.access)
    }

    /// Inject event `event` with an explicit access kind.
    pub fn touch(&self, event: u32, access: Access) -> Result<(), SpaceError> {
        if (FIRST_LOG_TAG..FIRST_HIGH_USER_EVENT).contains(&event) {
            return Err(SpaceError::ReservedForKernelLog(event));
        }
        let offset = self.offset_of(event)?;
        // offset_of keeps offset + 8 within the mapping (64-byte lines), and
        // offset is 8-byte aligned because the mapping is page aligned.
        let line = unsafe { self.map.as_mut_ptr().add(offset as usize) } as *mut u64;
        match access {
            // SAFETY: line points into our live shared mapping.
            Access::Write => unsafe { line.write_volatile(u64::from(event)) },
            // SAFETY: as above.
            Access::Read => {
                unsafe { line.read_volatile() };
            }
        }
        Ok(())
    }

    /// Run an inner command (BEGIN_TRACING, END_TRACING, ...).
    pub fn inner(&self, command: InnerCommand) -> Result<(), SpaceError> {
        self.icode(command.index())
    }

    /// The module's view: base, size, log counters (device only).
    pub fn info(&self) -> Result<abi::Info, SpaceError> {
        let mut info = abi::Info::default();
        self.device_ioctl("HMTT_IOC_INFO", abi::IOC_INFO, &mut info)?;
        Ok(info)
    }

    /// Have the kernel module touch the line (linear addressing only);
    /// returns the physical address it touched.
    pub fn kernel_icode(&self, event: u32, access: Access) -> Result<u64, SpaceError> {
        let mut req = abi::IcodeReq {
            event,
            flags: if access == Access::Write {
                abi::ICODE_WRITE
            } else {
                0
            },
            phys: 0,
        };
        self.device_ioctl("HMTT_IOC_ICODE", abi::IOC_ICODE, &mut req)?;
        Ok(req.phys)
    }

    /// The request that makes the module's own touches (kernel log tags,
    /// `hmtt_icode`, [`kernel_icode`](Self::kernel_icode)) follow this
    /// space's addressing: the inverse mapping as GF(2) columns, or linear.
    pub fn kernel_mapping_request(&self) -> abi::MappingReq {
        let mut req = abi::MappingReq::default();
        if let Addressing::Mapped {
            mapping,
            first_line,
            ..
        } = &self.addressing
        {
            let bits = mapping.geometry().line_bits().min(abi::MAP_MAX_BITS as u32);
            req.first_line = *first_line;
            req.nbits = bits;
            for b in 0..bits as usize {
                // The inverse mapping is linear over GF(2): one column per bit.
                req.columns[b] = mapping.pa_of(1u64 << b);
            }
        }
        req
    }

    /// Load [`kernel_mapping_request`](Self::kernel_mapping_request) into
    /// the module (needs CAP_SYS_ADMIN; the module checks that every event
    /// lands on its own line of the space).
    pub fn load_kernel_mapping(&self) -> Result<(), SpaceError> {
        let mut req = self.kernel_mapping_request();
        self.device_ioctl("HMTT_IOC_SET_MAPPING", abi::IOC_SET_MAPPING, &mut req)
    }

    /// Start (or stop) logging the page-table changes of process `pid`
    /// (0: the caller).
    pub fn trace_pid(&self, pid: i32, on: bool) -> Result<(), SpaceError> {
        let mut pid = pid;
        let (what, request) = if on {
            ("HMTT_IOC_TRACE_PID", abi::IOC_TRACE_PID)
        } else {
            ("HMTT_IOC_UNTRACE_PID", abi::IOC_UNTRACE_PID)
        };
        self.device_ioctl(what, request, &mut pid)
    }

    /// Log every present mapping of process `pid` (0: the caller) as
    /// SNAPSHOT_MAP; returns (records logged, records dropped).
    pub fn snapshot(&self, pid: i32) -> Result<(u64, u64), SpaceError> {
        let mut req = abi::SnapshotReq {
            pid,
            ..Default::default()
        };
        self.device_ioctl("HMTT_IOC_SNAPSHOT", abi::IOC_SNAPSHOT, &mut req)?;
        Ok((req.logged, req.dropped))
    }

    fn device_ioctl<T>(
        &self,
        what: &'static str,
        request: u32,
        arg: &mut T,
    ) -> Result<(), SpaceError> {
        if !self.is_device {
            return Err(SpaceError::NotADevice(what));
        }
        // SAFETY: callers pair each request with its abi struct.
        unsafe { abi::ioctl(self.file.as_raw_fd(), request, arg) }
            .map_err(|source| SpaceError::Ioctl { what, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;
    use std::io::Write;

    const BASE: u64 = 0x1000_0000;

    fn space_file(bytes: usize) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![0u8; bytes]).unwrap();
        f.flush().unwrap();
        f
    }

    /// (offset, u64 value) of every non-zero u64 of the file.
    fn touched(path: &Path) -> Vec<(u64, u64)> {
        let bytes = std::fs::read(path).unwrap();
        bytes
            .chunks_exact(8)
            .enumerate()
            .filter_map(|(i, w)| {
                let v = u64::from_le_bytes(w.try_into().unwrap());
                (v != 0).then_some((i as u64 * 8, v))
            })
            .collect()
    }

    #[test]
    fn icode_touches_exactly_the_event_line() {
        let file = space_file(8 << 20);
        let space = ConfigSpace::from_file(file.path(), BASE).unwrap();
        assert_eq!(space.lines(), 0x20000);
        for event in [0x40u32, 0x41, 0x1234, 0xffff] {
            space.icode(event).unwrap();
        }
        space.inner(InnerCommand::EndTracing).unwrap();
        assert_eq!(
            touched(file.path()),
            vec![
                (0x40, 1), // END_TRACING: event 1 at byte 0x40, as in the paper
                (0x40 * 64, 0x40),
                (0x41 * 64, 0x41),
                (0x1234 * 64, 0x1234),
                (0xffff * 64, 0xffff),
            ]
        );
    }

    #[test]
    fn reads_leave_no_trace_and_sync_stores_at_line_5() {
        let file = space_file(8 << 20);
        let space = ConfigSpace::from_file(file.path(), BASE)
            .unwrap()
            .with_access(Access::Read);
        space.icode(0x99).unwrap();
        space.inner(InnerCommand::Sync).unwrap();
        assert!(touched(file.path()).is_empty());
        let space = space.with_access(Access::Write);
        space.inner(InnerCommand::Sync).unwrap();
        assert_eq!(touched(file.path()), vec![(5 * 64, 5)]);
    }

    #[test]
    fn out_of_range_and_log_tags_are_refused_without_touching() {
        let file = space_file(8 << 20);
        let space = ConfigSpace::from_file(file.path(), BASE).unwrap();
        assert!(matches!(
            space.icode(0x2_0000),
            Err(SpaceError::OutOfRange {
                event: 0x2_0000,
                lines: 0x20000
            })
        ));
        assert!(matches!(
            space.icode(u32::MAX),
            Err(SpaceError::OutOfRange { .. })
        ));
        for tag in [0x1_0000u32, 0x1_8000, 0x1_ffff] {
            assert!(matches!(
                space.icode(tag),
                Err(SpaceError::ReservedForKernelLog(t)) if t == tag
            ));
        }
        assert!(touched(file.path()).is_empty());
    }

    #[test]
    fn small_space_has_fewer_lines() {
        let file = space_file(4096);
        let space = ConfigSpace::from_file(file.path(), BASE).unwrap();
        assert_eq!(space.lines(), 64);
        space.icode(63).unwrap();
        assert!(space.icode(64).is_err());
        assert_eq!(touched(file.path()), vec![(63 * 64, 63)]);
    }

    #[test]
    fn bad_sizes_and_device_only_calls_are_errors() {
        let empty = space_file(0);
        assert!(matches!(
            ConfigSpace::from_file(empty.path(), BASE),
            Err(SpaceError::BadSize(0))
        ));
        let odd = space_file(100);
        assert!(matches!(
            ConfigSpace::from_file(odd.path(), BASE),
            Err(SpaceError::BadSize(100))
        ));
        let file = space_file(4096);
        let space = ConfigSpace::from_file(file.path(), BASE).unwrap();
        assert!(matches!(space.info(), Err(SpaceError::NotADevice(_))));
        assert!(matches!(
            space.load_kernel_mapping(),
            Err(SpaceError::NotADevice(_))
        ));
        assert_eq!(space.kernel_mapping_request().nbits, 0, "linear");
        assert!(matches!(
            ConfigSpace::open_device(file.path()),
            Err(SpaceError::NotDevice { .. })
        ));
        assert!(matches!(
            ConfigSpace::open_device("/nonexistent/hmtt"),
            Err(SpaceError::Open { .. })
        ));
    }

    #[test]
    fn hashed_mapping_touches_the_inverse_mapped_address() {
        let g = Geometry::preset("ddr3-4g").unwrap();
        // The top 8 MiB of the DIMM, bank bits XORed with low row bits.
        let mapping =
            AddressMapping::from_toml(hmtt_format::mapping::DDR3_BANK_XOR_TOML, g).unwrap();
        let base = (4u64 << 30) - (8 << 20);
        let window = ConfigWindow::top_of_memory(&g, 8 << 20).unwrap();
        let file = space_file(8 << 20);
        let space = ConfigSpace::from_file(file.path(), base)
            .unwrap()
            .with_mapping(mapping.clone(), window);
        let event = 0x41u32;
        space.icode(event).unwrap();
        let line = window.line_of_event(&g, event).unwrap();
        let phys = mapping.pa_of(line);
        assert_eq!(mapping.line_of(phys).unwrap(), line);
        assert_eq!(touched(file.path()), vec![(phys - base, 0x41)]);
        // Row 1 of the window (odd row bit 0) flips bank bit 0 = pa bit 13:
        // event (1 << 10) | 3 is not at its linear offset.
        let event = (1u32 << 10) | 3;
        assert_eq!(space.offset_of(event).unwrap(), 0x1_0000 + 0x2000 + 3 * 64);
        // The kernel's XOR-of-columns form gives the same address for every
        // event of the window.
        let req = space.kernel_mapping_request();
        assert_eq!(req.nbits, g.line_bits());
        for event in (0..space.lines() as u32).step_by(97) {
            if (0x1_0000..0x2_0000).contains(&event) {
                continue;
            }
            let line = req.first_line + u64::from(event);
            let phys = (0..req.nbits as usize)
                .filter(|b| line >> b & 1 == 1)
                .fold(0, |pa, b| pa ^ req.columns[b]);
            assert_eq!(
                phys - base,
                space.offset_of(event).unwrap(),
                "event {event:#x}"
            );
        }
    }
}
