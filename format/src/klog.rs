//! Kernel log file (`.hmttlog`) and its 64-byte records, docs/format.md
//! section 8 (version 3; version 1 files, which have no FORK or SWITCH
//! records, and version 2 files, which have no CPU_AREA records, are read
//! as well).
//!
//! The kernel module writes the records (`hmtt_printk`), `hmtt log` drains
//! them into a file behind a 32-byte header, and merge places each record
//! at the TAG that announced its sequence number
//! ([`log_tag_event`](crate::config::log_tag_event)).
//! [`FileHeader`] and [`Record`] are zero-copy views over byte buffers;
//! [`FileHeaderRepr`] and [`RecordRepr`] are their parsed forms, and
//! `parse`/`emit` convert between the two symmetrically.

use core::fmt;

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};

/// The eight magic bytes that open a `.hmttlog` file.
pub const FILE_MAGIC: [u8; 8] = *b"HMTTLOG\0";
/// Version of the kernel log format this module writes.
pub const VERSION: u16 = 3;
/// The oldest version this module reads: version 1 lacks FORK and SWITCH,
/// version 2 lacks CPU_AREA.
pub const OLDEST_READ_VERSION: u16 = 1;
/// Length of the file header in bytes.
pub const HEADER_LEN: usize = 32;
/// Length of one record in bytes.
pub const RECORD_LEN: usize = 64;
/// Length of the NUL-padded name field in bytes.
pub const NAME_LEN: usize = 16;
/// Why a header or record could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("buffer of {got} bytes is shorter than the {need} bytes needed")]
    Truncated { need: usize, got: usize },
    #[error("not a kernel log file (magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error("kernel log version {0} is not supported (this build reads versions 1 to 3)")]
    UnsupportedVersion(u16),
    #[error("record size {0} is not 64")]
    BadRecordSize(u16),
    #[error("unknown record kind {0}")]
    UnknownKind(u16),
    #[error("unknown DMA direction {0}")]
    BadDirection(u64),
    #[error("CPU_AREA record names CPU {0}, beyond a 16-bit CPU number")]
    BadCpu(u64),
}

pub type Result<T> = core::result::Result<T, Error>;

mod field {
    pub use crate::bytes::Field;

    pub const MAGIC: Field = 0..8;
    pub const VERSION: Field = 8..10;
    pub const RECORD_SIZE: Field = 10..12;
    pub const RESERVED0: Field = 12..16;
    pub const START_NS: Field = 16..24;
    pub const RESERVED1: Field = 24..32;

    pub const SEQ: Field = 0..8;
    pub const KIND: Field = 8..10;
    pub const CPU: Field = 10..12;
    pub const PID: Field = 12..16;
    pub const A: Field = 16..24;
    pub const B: Field = 24..32;
    pub const C: Field = 32..40;
    pub const TIME: Field = 40..48;
    pub const NAME: Field = 48..64;
}

/// A view of the 32-byte file header.
#[derive(Debug, Clone)]
pub struct FileHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> FileHeader<T> {
    /// Wrap a buffer without checking its length; accessors may panic.
    pub fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let header = Self::new_unchecked(buffer);
        header.check_len()?;
        Ok(header)
    }

    /// Ensure no accessor can panic.
    pub fn check_len(&self) -> Result<()> {
        let got = self.buffer.as_ref().len();
        if got < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN,
                got,
            });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn magic(&self) -> [u8; 8] {
        self.buffer.as_ref()[field::MAGIC]
            .try_into()
            .expect("field is 8 bytes")
    }

    pub fn version(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::VERSION)
    }

    pub fn record_size(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::RECORD_SIZE)
    }

    /// Wall-clock time when logging started, ns since the Unix epoch.
    pub fn start_ns(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::START_NS)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> FileHeader<T> {
    pub fn set_magic(&mut self, magic: [u8; 8]) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&magic);
    }

    pub fn set_version(&mut self, version: u16) {
        put_u16(self.buffer.as_mut(), field::VERSION, version);
    }

    pub fn set_record_size(&mut self, size: u16) {
        put_u16(self.buffer.as_mut(), field::RECORD_SIZE, size);
    }

    pub fn set_start_ns(&mut self, ns: u64) {
        put_u64(self.buffer.as_mut(), field::START_NS, ns);
    }

    /// Zero both reserved fields.
    pub fn clear_reserved(&mut self) {
        self.buffer.as_mut()[field::RESERVED0].fill(0);
        self.buffer.as_mut()[field::RESERVED1].fill(0);
    }
}

/// The parsed file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeaderRepr {
    /// Wall-clock time when logging started, ns since the Unix epoch.
    pub start_ns: u64,
}

impl FileHeaderRepr {
    pub fn parse<T: AsRef<[u8]>>(header: &FileHeader<T>) -> Result<Self> {
        header.check_len()?;
        if header.magic() != FILE_MAGIC {
            return Err(Error::BadMagic(header.magic()));
        }
        if !(OLDEST_READ_VERSION..=VERSION).contains(&header.version()) {
            return Err(Error::UnsupportedVersion(header.version()));
        }
        if usize::from(header.record_size()) != RECORD_LEN {
            return Err(Error::BadRecordSize(header.record_size()));
        }
        Ok(Self {
            start_ns: header.start_ns(),
        })
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header; the buffer must be at least [`HEADER_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut FileHeader<T>) {
        header.set_magic(FILE_MAGIC);
        header.set_version(VERSION);
        header.set_record_size(RECORD_LEN as u16);
        header.clear_reserved();
        header.set_start_ns(self.start_ns);
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut bytes = [0u8; HEADER_LEN];
        self.emit(&mut FileHeader::new_unchecked(&mut bytes[..]));
        bytes
    }
}

/// Record kinds (the `kind` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Kind {
    Map = 1,
    Unmap = 2,
    Exec = 3,
    Exit = 4,
    DmaMap = 5,
    DmaUnmap = 6,
    SnapshotMap = 7,
    Overrun = 8,
    Fork = 9,
    Switch = 10,
    CpuArea = 11,
}

impl TryFrom<u16> for Kind {
    type Error = Error;

    fn try_from(raw: u16) -> Result<Self> {
        Ok(match raw {
            1 => Kind::Map,
            2 => Kind::Unmap,
            3 => Kind::Exec,
            4 => Kind::Exit,
            5 => Kind::DmaMap,
            6 => Kind::DmaUnmap,
            7 => Kind::SnapshotMap,
            8 => Kind::Overrun,
            9 => Kind::Fork,
            10 => Kind::Switch,
            11 => Kind::CpuArea,
            other => return Err(Error::UnknownKind(other)),
        })
    }
}

/// DMA transfer direction (the `c` field of DMA records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DmaDirection {
    Bidirectional = 0,
    ToDevice = 1,
    FromDevice = 2,
    None = 3,
}

impl TryFrom<u64> for DmaDirection {
    type Error = Error;

    fn try_from(raw: u64) -> Result<Self> {
        Ok(match raw {
            0 => DmaDirection::Bidirectional,
            1 => DmaDirection::ToDevice,
            2 => DmaDirection::FromDevice,
            3 => DmaDirection::None,
            other => return Err(Error::BadDirection(other)),
        })
    }
}

/// A command or device name: up to 16 bytes, NUL-padded on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Name([u8; NAME_LEN]);

impl Name {
    /// The name from its field bytes; bytes after the first NUL are ignored.
    pub fn from_field(field: [u8; NAME_LEN]) -> Self {
        let len = field.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        let mut bytes = [0u8; NAME_LEN];
        bytes[..len].copy_from_slice(&field[..len]);
        Self(bytes)
    }

    /// A name from a string, cut to 16 bytes (the kernel cuts at 15).
    pub fn new(name: &str) -> Self {
        let mut bytes = [0u8; NAME_LEN];
        let len = name.len().min(NAME_LEN);
        bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
        Self::from_field(bytes)
    }

    /// The name without its padding.
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.0.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        &self.0[..len]
    }

    /// The padded field.
    pub fn field(&self) -> [u8; NAME_LEN] {
        self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Name({:?})", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// A view of one 64-byte record.
#[derive(Debug, Clone)]
pub struct Record<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Record<T> {
    /// Wrap a buffer without checking its length; accessors may panic.
    pub fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wrap a buffer after [`check_len`](Self::check_len).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let record = Self::new_unchecked(buffer);
        record.check_len()?;
        Ok(record)
    }

    /// Ensure no accessor can panic.
    pub fn check_len(&self) -> Result<()> {
        let got = self.buffer.as_ref().len();
        if got < RECORD_LEN {
            return Err(Error::Truncated {
                need: RECORD_LEN,
                got,
            });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn seq(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::SEQ)
    }

    pub fn kind(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::KIND)
    }

    pub fn cpu(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::CPU)
    }

    pub fn pid(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::PID)
    }

    pub fn a(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::A)
    }

    pub fn b(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::B)
    }

    pub fn c(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::C)
    }

    /// Kernel monotonic time of the event, ns.
    pub fn time_ns(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::TIME)
    }

    pub fn name(&self) -> [u8; NAME_LEN] {
        self.buffer.as_ref()[field::NAME]
            .try_into()
            .expect("field is 16 bytes")
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Record<T> {
    pub fn set_seq(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::SEQ, v);
    }

    pub fn set_kind(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::KIND, v);
    }

    pub fn set_cpu(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::CPU, v);
    }

    pub fn set_pid(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::PID, v);
    }

    pub fn set_a(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::A, v);
    }

    pub fn set_b(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::B, v);
    }

    pub fn set_c(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::C, v);
    }

    pub fn set_time_ns(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::TIME, v);
    }

    pub fn set_name(&mut self, name: [u8; NAME_LEN]) {
        self.buffer.as_mut()[field::NAME].copy_from_slice(&name);
    }
}

/// What a record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A page fault mapped virtual page `vpn` to frame `pfn`.
    Map { vpn: u64, pfn: u64, pte_phys: u64 },
    /// The entry mapping `vpn` to `pfn` is about to be zapped.
    Unmap { vpn: u64, pfn: u64, pte_phys: u64 },
    /// A present mapping found by a page-table walk.
    SnapshotMap { vpn: u64, pfn: u64, pte_phys: u64 },
    /// The process exec'd a program with this command name.
    Exec { comm: Name },
    /// The last thread of the process exited.
    Exit { comm: Name },
    /// A buffer was handed to a device (the paper's DMA_BEGIN).
    DmaMap {
        addr: u64,
        size: u64,
        dir: DmaDirection,
        device: Name,
    },
    /// A buffer was taken back from a device (the paper's DMA_END).
    DmaUnmap {
        addr: u64,
        size: u64,
        dir: DmaDirection,
        device: Name,
    },
    /// Records lost in the kernel ring since the previous OVERRUN.
    Overrun { lost: u64 },
    /// The record's pid is a new process (fork, vfork, or clone without
    /// CLONE_THREAD) of the traced process `parent`, made with the clone
    /// flags `flags`; it is traced from this record on. Without CLONE_VM
    /// its present mappings follow as SNAPSHOT_MAP records of its pid;
    /// with CLONE_VM it uses the parent's address space until it execs.
    Fork { parent: u32, flags: u64, comm: Name },
    /// The record's cpu switched from process `prev` to the record's pid.
    /// 0 on either side stands for a process that is not traced (or the
    /// idle task). Logged when either side is traced and they differ.
    Switch { prev: u32 },
    /// Frames `frame..frame + frames` hold memory only CPU `owner` uses
    /// (its entry area, its per-CPU variables): a reference to them is
    /// made by that CPU. `area` names which (`cpu-entry-area`, `percpu`).
    CpuArea {
        frame: u64,
        frames: u64,
        owner: u16,
        area: Name,
    },
}

/// The clone flag (`CLONE_VM`, as in `<linux/sched.h>`) with which a forked
/// process shares its parent's address space.
pub const CLONE_VM: u64 = 0x100;

impl Event {
    pub fn kind(&self) -> Kind {
        match self {
            Event::Map { .. } => Kind::Map,
            Event::Unmap { .. } => Kind::Unmap,
            Event::SnapshotMap { .. } => Kind::SnapshotMap,
            Event::Exec { .. } => Kind::Exec,
            Event::Exit { .. } => Kind::Exit,
            Event::DmaMap { .. } => Kind::DmaMap,
            Event::DmaUnmap { .. } => Kind::DmaUnmap,
            Event::Overrun { .. } => Kind::Overrun,
            Event::Fork { .. } => Kind::Fork,
            Event::Switch { .. } => Kind::Switch,
            Event::CpuArea { .. } => Kind::CpuArea,
        }
    }
}

/// A parsed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRepr {
    pub seq: u64,
    pub cpu: u16,
    pub pid: u32,
    /// Kernel monotonic time, ns.
    pub time_ns: u64,
    pub event: Event,
}

impl RecordRepr {
    pub fn parse<T: AsRef<[u8]>>(record: &Record<T>) -> Result<Self> {
        record.check_len()?;
        let (a, b, c) = (record.a(), record.b(), record.c());
        let name = Name::from_field(record.name());
        let event = match Kind::try_from(record.kind())? {
            Kind::Map => Event::Map {
                vpn: a,
                pfn: b,
                pte_phys: c,
            },
            Kind::Unmap => Event::Unmap {
                vpn: a,
                pfn: b,
                pte_phys: c,
            },
            Kind::SnapshotMap => Event::SnapshotMap {
                vpn: a,
                pfn: b,
                pte_phys: c,
            },
            Kind::Exec => Event::Exec { comm: name },
            Kind::Exit => Event::Exit { comm: name },
            Kind::DmaMap => Event::DmaMap {
                addr: a,
                size: b,
                dir: DmaDirection::try_from(c)?,
                device: name,
            },
            Kind::DmaUnmap => Event::DmaUnmap {
                addr: a,
                size: b,
                dir: DmaDirection::try_from(c)?,
                device: name,
            },
            Kind::Overrun => Event::Overrun { lost: a },
            Kind::Fork => Event::Fork {
                parent: a as u32,
                flags: b,
                comm: name,
            },
            Kind::Switch => Event::Switch { prev: a as u32 },
            Kind::CpuArea => Event::CpuArea {
                frame: a,
                frames: b,
                owner: u16::try_from(c).map_err(|_| Error::BadCpu(c))?,
                area: name,
            },
        };
        Ok(Self {
            seq: record.seq(),
            cpu: record.cpu(),
            pid: record.pid(),
            time_ns: record.time_ns(),
            event,
        })
    }

    pub fn buffer_len(&self) -> usize {
        RECORD_LEN
    }

    /// Write the record; the buffer must be at least [`RECORD_LEN`] bytes.
    /// Fields a kind does not use are written as zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, record: &mut Record<T>) {
        let (a, b, c, name) = match self.event {
            Event::Map { vpn, pfn, pte_phys }
            | Event::Unmap { vpn, pfn, pte_phys }
            | Event::SnapshotMap { vpn, pfn, pte_phys } => (vpn, pfn, pte_phys, Name::default()),
            Event::Exec { comm } | Event::Exit { comm } => (0, 0, 0, comm),
            Event::DmaMap {
                addr,
                size,
                dir,
                device,
            }
            | Event::DmaUnmap {
                addr,
                size,
                dir,
                device,
            } => (addr, size, dir as u64, device),
            Event::Overrun { lost } => (lost, 0, 0, Name::default()),
            Event::Fork {
                parent,
                flags,
                comm,
            } => (u64::from(parent), flags, 0, comm),
            Event::Switch { prev } => (u64::from(prev), 0, 0, Name::default()),
            Event::CpuArea {
                frame,
                frames,
                owner,
                area,
            } => (frame, frames, u64::from(owner), area),
        };
        record.set_seq(self.seq);
        record.set_kind(self.event.kind() as u16);
        record.set_cpu(self.cpu);
        record.set_pid(self.pid);
        record.set_a(a);
        record.set_b(b);
        record.set_c(c);
        record.set_time_ns(self.time_ns);
        record.set_name(name.field());
    }

    /// The record as bytes.
    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut bytes = [0u8; RECORD_LEN];
        self.emit(&mut Record::new_unchecked(&mut bytes[..]));
        bytes
    }
}

/// Parse a whole `.hmttlog` image: the header and an iterator over its
/// records. A file cut inside a record yields the whole records; the
/// iterator's [`Records::remainder`] says how many bytes were left over.
pub fn parse_file(bytes: &[u8]) -> Result<(FileHeaderRepr, Records<'_>)> {
    let header = FileHeaderRepr::parse(&FileHeader::new_checked(bytes)?)?;
    Ok((header, Records::new(&bytes[HEADER_LEN..])))
}

/// A kernel log read whole for replay: its records in `seq` order, one per
/// `seq`, and what was wrong with the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogImage {
    pub records: Vec<RecordRepr>,
    /// Bytes of a partial record at the end: the file was cut short.
    pub cut_short_bytes: usize,
    /// Runs of `seq` numbers missing between the first and last record.
    pub seq_holes: u64,
    /// `seq` numbers missing in those runs (saturating).
    pub seq_missing: u64,
    /// Records whose `seq` another record already had (dropped).
    pub duplicates: u64,
}

/// Reads a whole `.hmttlog` image (see [`LogImage`]); fails on a bad header
/// or on a record that does not parse, giving its index.
pub fn read_image(bytes: &[u8]) -> core::result::Result<LogImage, (Option<usize>, Error)> {
    let (_, records) = parse_file(bytes).map_err(|e| (None, e))?;
    let cut_short_bytes = records.remainder();
    let mut log = records
        .enumerate()
        .map(|(i, r)| r.map_err(|e| (Some(i), e)))
        .collect::<core::result::Result<Vec<_>, _>>()?;
    log.sort_by_key(|r| r.seq);
    let before = log.len();
    log.dedup_by_key(|r| r.seq);
    let (mut seq_holes, mut seq_missing) = (0u64, 0u64);
    for w in log.windows(2) {
        let missing = w[1].seq - w[0].seq - 1;
        if missing > 0 {
            seq_holes += 1;
            seq_missing = seq_missing.saturating_add(missing);
        }
    }
    Ok(LogImage {
        duplicates: (before - log.len()) as u64,
        records: log,
        cut_short_bytes,
        seq_holes,
        seq_missing,
    })
}

/// Iterator over the records of a byte slice holding whole records.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    rest: &'a [u8],
}

impl<'a> Records<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Self { rest: body }
    }

    /// Bytes after the last whole record (non-zero for a file cut short).
    pub fn remainder(&self) -> usize {
        self.rest.len() % RECORD_LEN
    }
}

impl Iterator for Records<'_> {
    type Item = Result<RecordRepr>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.len() < RECORD_LEN {
            return None;
        }
        let (record, rest) = self.rest.split_at(RECORD_LEN);
        self.rest = rest;
        Some(RecordRepr::parse(&Record::new_unchecked(record)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len() / RECORD_LEN;
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests;
