//! The virtual trace file (`.hmttvtrace`, format.md §12): what `hmtt replay
//! --out` writes and `hmtt dump` reads. The physical trace (§11) after
//! replay: each reference carries the process and virtual address it was
//! translated to (or why it could not be), and whether it was a CPU or a DMA
//! access. A 128-byte header, fixed-size 32-byte records sorted by tick, a
//! time index and the event names, laid out like the physical trace so a
//! reader maps the file and indexes it directly.
//!
//! `VtraceView` is a zero-copy view over the whole file (after one check no
//! accessor panics); `VtraceHeader` and `VirtualRecord` have symmetric
//! parse/emit. Pure: no I/O here.

use crate::trace::{IndexEntry, NameTable, RecordKind, TraceRecord, INDEX_ENTRY_LEN};

/// "HMTTVTR\0".
pub const MAGIC: [u8; 8] = *b"HMTTVTR\0";
/// Virtual trace file version.
pub const VERSION: u16 = 1;
/// Header length written by this version.
pub const HEADER_LEN: usize = 128;
/// Length of a virtual-trace record.
pub const RECORD_LEN: usize = 32;
/// Default number of records between two index entries.
pub const DEFAULT_INDEX_STRIDE: u64 = 4096;
/// File extension.
pub const EXTENSION: &str = "hmttvtrace";
/// Header flag: the writer finished and the counts, index and names are valid.
pub const FLAG_COMPLETE: u16 = 1;
/// Header flag: a view (pid, range or event window) selected the references;
/// the others of the trace are not in the file.
pub const FLAG_SELECTION: u16 = 2;

/// Record flag: `pid` and `vaddr` are valid.
pub const REF_TRANSLATED: u8 = 1;
/// Record flag: a device's access (inside a logged DMA buffer during its
/// transfer); clear for the CPU's.
pub const REF_DMA: u8 = 2;
const MISS_SHIFT: u32 = 2;
const MISS_MASK: u8 = 3 << MISS_SHIFT;

mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..8;
    pub const VERSION: Range<usize> = 8..10;
    pub const HEADER_LEN: Range<usize> = 10..12;
    pub const RECORD_LEN: Range<usize> = 12..14;
    pub const FLAGS: Range<usize> = 14..16;
    pub const RECORD_COUNT: Range<usize> = 16..24;
    pub const INDEX_OFFSET: Range<usize> = 24..32;
    pub const INDEX_COUNT: Range<usize> = 32..40;
    pub const INDEX_STRIDE: Range<usize> = 40..48;
    pub const FIRST_TICK: Range<usize> = 48..56;
    pub const LAST_TICK: Range<usize> = 56..64;
    pub const START_NS: Range<usize> = 64..72;
    pub const TICK_PS: Range<usize> = 72..74;
    pub const BOARDS: usize = 74;
    pub const NAMES_OFFSET: Range<usize> = 80..88;
    pub const NAMES_LEN: Range<usize> = 88..96;
    pub const REFERENCES: Range<usize> = 96..104;
    pub const TRANSLATED: Range<usize> = 104..112;
    pub const LOG_PLACED: Range<usize> = 112..120;
    pub const LOG_UNPLACED: Range<usize> = 120..128;

    pub const REC_TICK: Range<usize> = 0..8;
    pub const REC_PACKED: Range<usize> = 8..16;
    pub const REC_VADDR: Range<usize> = 16..24;
    pub const REC_PID: Range<usize> = 24..28;
    pub const REC_FLAGS: usize = 28;
}

fn u16_at(b: &[u8], r: core::ops::Range<usize>) -> u16 {
    u16::from_le_bytes([b[r.start], b[r.start + 1]])
}
fn u32_at(b: &[u8], r: core::ops::Range<usize>) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[r]);
    u32::from_le_bytes(a)
}
fn u64_at(b: &[u8], r: core::ops::Range<usize>) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[r]);
    u64::from_le_bytes(a)
}

/// Why a virtual trace file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VtraceError {
    #[error("file of {0} bytes is too short for a virtual trace header")]
    TooShort(usize),
    #[error("not an hmtt virtual trace file (magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error(
        "virtual trace file version {0} is not supported (this build reads version {VERSION})"
    )]
    BadVersion(u16),
    #[error("virtual trace header length {0} is invalid")]
    BadHeaderLen(u16),
    #[error("virtual trace record length {0} is not supported (this build reads {RECORD_LEN})")]
    BadRecordLen(u16),
    #[error("virtual trace claims {count} records but the file holds room for {room}")]
    BadRecordCount { count: u64, room: u64 },
    #[error("virtual trace index ({count} entries at offset {offset}) lies outside the file")]
    BadIndex { offset: u64, count: u64 },
    #[error(
        "virtual trace name table ({len} bytes at offset {offset}) lies outside the file or is malformed"
    )]
    BadNames { offset: u64, len: u64 },
}

/// Why a reference has no (pid, virtual address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Miss {
    /// A frame no process maps now.
    Unmapped,
    /// A page-table page (a PTE address of the log) or the kernel's own memory.
    Kernel,
    /// Inside a DMA buffer, in a frame no process maps.
    Dma,
}

impl Miss {
    pub const ALL: [Miss; 3] = [Miss::Unmapped, Miss::Kernel, Miss::Dma];

    /// The 2-bit code of the record flags (0 is "translated").
    pub fn code(self) -> u8 {
        match self {
            Miss::Unmapped => 1,
            Miss::Kernel => 2,
            Miss::Dma => 3,
        }
    }
    pub fn from_code(code: u8) -> Option<Miss> {
        match code & 3 {
            1 => Some(Miss::Unmapped),
            2 => Some(Miss::Kernel),
            3 => Some(Miss::Dma),
            _ => None,
        }
    }
    /// Lower-case name for dumps.
    pub fn name(self) -> &'static str {
        match self {
            Miss::Unmapped => "unmapped",
            Miss::Kernel => "kernel",
            Miss::Dma => "dma",
        }
    }
}

/// The record-flags byte of a reference: translated, DMA, miss class.
#[inline]
pub fn ref_flags(translated: bool, dma: bool, miss: Option<Miss>) -> u8 {
    u8::from(translated) | (u8::from(dma) << 1) | (miss.map_or(0, Miss::code) << MISS_SHIFT)
}

/// One virtual-trace record.
///
/// ```text
/// off size
///  0   8   tick
///  8   8   the physical record's second word (kind, value, board; §11)
/// 16   8   vaddr: virtual address of the reference (flags bit0)
/// 24   4   pid (flags bit0)
/// 28   1   flags: bit0 translated, bit1 DMA, bits 2..3 miss class
///              (0 none, 1 unmapped, 2 kernel, 3 DMA buffer), bits 4..7 zero
/// 29   3   reserved (0)
/// ```
///
/// Records other than READ/WRITE (tags, commands, losses, gaps) carry flags,
/// pid and vaddr zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct VirtualRecord {
    pub tick: u64,
    /// The physical record's packed second word; see [`TraceRecord`].
    pub packed: u64,
    pub vaddr: u64,
    pub pid: u32,
    pub flags: u8,
}

impl VirtualRecord {
    /// A record that is not a reference (tag, command, loss, gap), copied.
    #[inline]
    pub fn marker(r: TraceRecord) -> VirtualRecord {
        VirtualRecord {
            tick: r.tick,
            packed: r.packed,
            vaddr: 0,
            pid: 0,
            flags: 0,
        }
    }
    /// A reference: `owner` is (pid, virtual address) when translated.
    #[inline]
    pub fn reference(
        r: TraceRecord,
        owner: Option<(u32, u64)>,
        dma: bool,
        miss: Option<Miss>,
    ) -> VirtualRecord {
        let (pid, vaddr) = owner.unwrap_or((0, 0));
        VirtualRecord {
            tick: r.tick,
            packed: r.packed,
            vaddr,
            pid,
            flags: ref_flags(owner.is_some(), dma, miss),
        }
    }
    /// The physical record (tick, kind, value, board).
    #[inline]
    pub fn physical(&self) -> TraceRecord {
        TraceRecord {
            tick: self.tick,
            packed: self.packed,
        }
    }
    #[inline]
    pub fn kind(&self) -> RecordKind {
        self.physical().kind()
    }
    #[inline]
    pub fn board(&self) -> u8 {
        self.physical().board()
    }
    #[inline]
    pub fn is_access(&self) -> bool {
        self.physical().is_access()
    }
    #[inline]
    pub fn is_write(&self) -> bool {
        self.kind() == RecordKind::Write
    }
    /// Physical address of a READ/WRITE.
    #[inline]
    pub fn pa(&self) -> u64 {
        self.physical().pa()
    }
    /// (pid, virtual address) when the reference was translated.
    #[inline]
    pub fn owner(&self) -> Option<(u32, u64)> {
        (self.flags & REF_TRANSLATED != 0).then_some((self.pid, self.vaddr))
    }
    #[inline]
    pub fn is_dma(&self) -> bool {
        self.flags & REF_DMA != 0
    }
    #[inline]
    pub fn miss(&self) -> Option<Miss> {
        Miss::from_code((self.flags & MISS_MASK) >> MISS_SHIFT)
    }
    #[inline]
    pub fn emit(&self, out: &mut [u8]) {
        out[field::REC_TICK].copy_from_slice(&self.tick.to_le_bytes());
        out[field::REC_PACKED].copy_from_slice(&self.packed.to_le_bytes());
        out[field::REC_VADDR].copy_from_slice(&self.vaddr.to_le_bytes());
        out[field::REC_PID].copy_from_slice(&self.pid.to_le_bytes());
        out[field::REC_FLAGS] = self.flags;
        out[field::REC_FLAGS + 1..RECORD_LEN].fill(0);
    }
    #[inline]
    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        self.emit(&mut b);
        b
    }
    #[inline]
    pub fn parse(b: &[u8; RECORD_LEN]) -> VirtualRecord {
        VirtualRecord {
            tick: u64_at(b, field::REC_TICK),
            packed: u64_at(b, field::REC_PACKED),
            vaddr: u64_at(b, field::REC_VADDR),
            pid: u32_at(b, field::REC_PID),
            flags: b[field::REC_FLAGS],
        }
    }
}

/// The header as plain values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VtraceHeader {
    pub flags: u16,
    pub record_count: u64,
    pub index_offset: u64,
    pub index_count: u64,
    pub index_stride: u64,
    pub first_tick: u64,
    pub last_tick: u64,
    /// Start of the physical trace, ns since the Unix epoch (0: not known).
    pub start_ns: u64,
    pub tick_ps: u16,
    pub boards: u8,
    pub names_offset: u64,
    pub names_len: u64,
    /// READ/WRITE records of the physical trace replayed (before any view).
    pub references: u64,
    /// Of those, translated to (pid, virtual address).
    pub translated: u64,
    /// Kernel log records placed at their tags.
    pub log_placed: u64,
    /// Kernel log records not placed (tag lost, or after the trace's end).
    pub log_unplaced: u64,
}

impl VtraceHeader {
    pub fn is_complete(&self) -> bool {
        self.flags & FLAG_COMPLETE != 0
    }
    pub fn is_selection(&self) -> bool {
        self.flags & FLAG_SELECTION != 0
    }

    /// Parses the header; returns it and its length.
    pub fn parse(b: &[u8]) -> Result<(VtraceHeader, usize), VtraceError> {
        if b.len() < HEADER_LEN {
            return Err(VtraceError::TooShort(b.len()));
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(VtraceError::BadMagic(magic));
        }
        let version = u16_at(b, field::VERSION);
        if version != VERSION {
            return Err(VtraceError::BadVersion(version));
        }
        let hlen = u16_at(b, field::HEADER_LEN);
        if usize::from(hlen) < HEADER_LEN || usize::from(hlen) > b.len() || !hlen.is_multiple_of(8)
        {
            return Err(VtraceError::BadHeaderLen(hlen));
        }
        let rlen = u16_at(b, field::RECORD_LEN);
        if usize::from(rlen) != RECORD_LEN {
            return Err(VtraceError::BadRecordLen(rlen));
        }
        Ok((
            VtraceHeader {
                flags: u16_at(b, field::FLAGS),
                record_count: u64_at(b, field::RECORD_COUNT),
                index_offset: u64_at(b, field::INDEX_OFFSET),
                index_count: u64_at(b, field::INDEX_COUNT),
                index_stride: u64_at(b, field::INDEX_STRIDE),
                first_tick: u64_at(b, field::FIRST_TICK),
                last_tick: u64_at(b, field::LAST_TICK),
                start_ns: u64_at(b, field::START_NS),
                tick_ps: u16_at(b, field::TICK_PS),
                boards: b[field::BOARDS],
                names_offset: u64_at(b, field::NAMES_OFFSET),
                names_len: u64_at(b, field::NAMES_LEN),
                references: u64_at(b, field::REFERENCES),
                translated: u64_at(b, field::TRANSLATED),
                log_placed: u64_at(b, field::LOG_PLACED),
                log_unplaced: u64_at(b, field::LOG_UNPLACED),
            },
            usize::from(hlen),
        ))
    }

    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        let put = |b: &mut [u8; HEADER_LEN], r: core::ops::Range<usize>, v: u64| {
            b[r].copy_from_slice(&v.to_le_bytes())
        };
        b[field::MAGIC].copy_from_slice(&MAGIC);
        b[field::VERSION].copy_from_slice(&VERSION.to_le_bytes());
        b[field::HEADER_LEN].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[field::RECORD_LEN].copy_from_slice(&(RECORD_LEN as u16).to_le_bytes());
        b[field::FLAGS].copy_from_slice(&self.flags.to_le_bytes());
        put(&mut b, field::RECORD_COUNT, self.record_count);
        put(&mut b, field::INDEX_OFFSET, self.index_offset);
        put(&mut b, field::INDEX_COUNT, self.index_count);
        put(&mut b, field::INDEX_STRIDE, self.index_stride);
        put(&mut b, field::FIRST_TICK, self.first_tick);
        put(&mut b, field::LAST_TICK, self.last_tick);
        put(&mut b, field::START_NS, self.start_ns);
        b[field::TICK_PS].copy_from_slice(&self.tick_ps.to_le_bytes());
        b[field::BOARDS] = self.boards;
        put(&mut b, field::NAMES_OFFSET, self.names_offset);
        put(&mut b, field::NAMES_LEN, self.names_len);
        put(&mut b, field::REFERENCES, self.references);
        put(&mut b, field::TRANSLATED, self.translated);
        put(&mut b, field::LOG_PLACED, self.log_placed);
        put(&mut b, field::LOG_UNPLACED, self.log_unplaced);
        b
    }

    /// Converts ticks to nanoseconds with this trace's tick length.
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * f64::from(self.tick_ps) / 1000.0
    }
}

/// Builds the time index while records stream out (the same index as the
/// physical trace's: one `(tick, record)` entry every `stride` records).
#[derive(Debug, Clone)]
pub struct VtraceIndexBuilder {
    stride: u64,
    entries: Vec<IndexEntry>,
}

impl VtraceIndexBuilder {
    pub fn new(stride: u64) -> VtraceIndexBuilder {
        VtraceIndexBuilder {
            stride: stride.max(1),
            entries: Vec::new(),
        }
    }
    pub fn stride(&self) -> u64 {
        self.stride
    }
    /// Records `[first, first + records.len())` were written.
    #[inline]
    pub fn push_block(&mut self, first: u64, records: &[VirtualRecord]) {
        let end = first + records.len() as u64;
        let mut next = first.div_ceil(self.stride) * self.stride;
        while next < end {
            self.entries.push(IndexEntry {
                tick: records[(next - first) as usize].tick,
                record: next,
            });
            next += self.stride;
        }
    }
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }
    pub fn emit(&self) -> Vec<u8> {
        self.entries.iter().flat_map(|e| e.emit()).collect()
    }
}

/// A checked view of a whole virtual trace file in memory (a map, typically).
#[derive(Debug, Clone)]
pub struct VtraceView<'a> {
    header: VtraceHeader,
    records: &'a [u8],
    index: &'a [u8],
    names: NameTable,
}

impl<'a> VtraceView<'a> {
    /// Checks the header and that every section lies inside `data`. A file
    /// whose writer did not finish (no FLAG_COMPLETE) is read up to its last
    /// whole record, without index or names.
    pub fn new_checked(data: &'a [u8]) -> Result<VtraceView<'a>, VtraceError> {
        let (mut header, hlen) = VtraceHeader::parse(data)?;
        let body = &data[hlen..];
        if !header.is_complete() {
            let n = body.len() / RECORD_LEN;
            header.record_count = n as u64;
            header.index_count = 0;
            header.names_len = 0;
            return Ok(VtraceView {
                header,
                records: &body[..n * RECORD_LEN],
                index: &[],
                names: NameTable::default(),
            });
        }
        let room = (body.len() / RECORD_LEN) as u64;
        if header.record_count > room {
            return Err(VtraceError::BadRecordCount {
                count: header.record_count,
                room,
            });
        }
        let records = &body[..header.record_count as usize * RECORD_LEN];
        let index = header
            .index_count
            .checked_mul(INDEX_ENTRY_LEN as u64)
            .and_then(|len| {
                let end = header.index_offset.checked_add(len)?;
                data.get(usize::try_from(header.index_offset).ok()?..usize::try_from(end).ok()?)
            })
            .ok_or(VtraceError::BadIndex {
                offset: header.index_offset,
                count: header.index_count,
            })?;
        let bad_names = VtraceError::BadNames {
            offset: header.names_offset,
            len: header.names_len,
        };
        let names = if header.names_len == 0 {
            NameTable::default()
        } else {
            let end = header
                .names_offset
                .checked_add(header.names_len)
                .ok_or(bad_names.clone())?;
            let bytes = usize::try_from(header.names_offset)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(s, e)| data.get(s..e))
                .ok_or(bad_names.clone())?;
            NameTable::parse(bytes).ok_or(bad_names)?
        };
        Ok(VtraceView {
            header,
            records,
            index,
            names,
        })
    }

    pub fn header(&self) -> &VtraceHeader {
        &self.header
    }
    pub fn names(&self) -> &NameTable {
        &self.names
    }
    pub fn len(&self) -> usize {
        self.records.len() / RECORD_LEN
    }
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
    /// Record `i`; `None` past the end.
    #[inline]
    pub fn record(&self, i: usize) -> Option<VirtualRecord> {
        let b = self.records.get(i * RECORD_LEN..(i + 1) * RECORD_LEN)?;
        Some(VirtualRecord::parse(b.try_into().expect("32 bytes")))
    }
    /// The records from `start` on.
    pub fn records_from(&self, start: usize) -> impl Iterator<Item = VirtualRecord> + 'a {
        let start = start.min(self.len()) * RECORD_LEN;
        self.records[start..]
            .chunks_exact(RECORD_LEN)
            .map(|c| VirtualRecord::parse(c.try_into().expect("32 bytes")))
    }
    pub fn records(&self) -> impl Iterator<Item = VirtualRecord> + 'a {
        self.records_from(0)
    }
    /// The time-index entries.
    pub fn index(&self) -> impl Iterator<Item = IndexEntry> + 'a {
        self.index
            .chunks_exact(INDEX_ENTRY_LEN)
            .map(IndexEntry::parse)
    }
    fn index_entry(&self, i: usize) -> IndexEntry {
        IndexEntry::parse(&self.index[i * INDEX_ENTRY_LEN..(i + 1) * INDEX_ENTRY_LEN])
    }
    fn tick_at(&self, i: usize) -> u64 {
        u64_at(&self.records[i * RECORD_LEN..], field::REC_TICK)
    }

    /// Position of the first record with `tick >= t` (`len()` if none): the
    /// index narrows the search to one stride, then a binary search inside.
    pub fn seek_tick(&self, t: u64) -> usize {
        let n_index = self.index.len() / INDEX_ENTRY_LEN;
        let (mut lo, mut hi) = (0usize, self.len());
        if n_index > 0 {
            let (mut a, mut b) = (0usize, n_index);
            while a < b {
                let m = (a + b) / 2;
                if self.index_entry(m).tick < t {
                    a = m + 1;
                } else {
                    b = m;
                }
            }
            if a > 0 {
                lo = (self.index_entry(a - 1).record as usize).min(hi);
            }
            if a < n_index {
                hi = (self.index_entry(a).record as usize).min(hi);
            }
        }
        while lo < hi {
            let m = (lo + hi) / 2;
            if self.tick_at(m) < t {
                lo = m + 1;
            } else {
                hi = m;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn file(records: &[VirtualRecord], stride: u64, names: &NameTable) -> Vec<u8> {
        let mut idx = VtraceIndexBuilder::new(stride);
        idx.push_block(0, records);
        let index = idx.emit();
        let names_bytes = names.emit();
        let h = VtraceHeader {
            flags: FLAG_COMPLETE,
            record_count: records.len() as u64,
            index_offset: (HEADER_LEN + records.len() * RECORD_LEN) as u64,
            index_count: idx.entries().len() as u64,
            index_stride: stride,
            first_tick: records.first().map_or(0, |r| r.tick),
            last_tick: records.last().map_or(0, |r| r.tick),
            start_ns: 7,
            tick_ps: 1250,
            boards: 2,
            names_offset: (HEADER_LEN + records.len() * RECORD_LEN + index.len()) as u64,
            names_len: names_bytes.len() as u64,
            references: 100,
            translated: 90,
            log_placed: 5,
            log_unplaced: 1,
        };
        let mut f = h.emit().to_vec();
        for r in records {
            f.extend_from_slice(&r.to_bytes());
        }
        f.extend_from_slice(&index);
        f.extend_from_slice(&names_bytes);
        f
    }

    fn sample(i: u64) -> VirtualRecord {
        let phys = TraceRecord::access(i / 3 * 10, (i % 2) as u8, i.is_multiple_of(5), i * 64);
        match i % 4 {
            0 => VirtualRecord::reference(phys, Some((7, 0x4000_0000 + i * 64)), false, None),
            1 => VirtualRecord::reference(phys, None, true, Some(Miss::Dma)),
            2 => VirtualRecord::reference(phys, None, false, Some(Miss::Kernel)),
            _ => VirtualRecord::marker(TraceRecord::new(
                phys.tick,
                phys.board(),
                RecordKind::Tag { write: false },
                0x40,
            )),
        }
    }

    #[test]
    fn record_layout_matches_the_spec() {
        let phys = TraceRecord::access(0x0102_0304_0506_0708, 3, true, 0x1234_5678_9ac0);
        let r = VirtualRecord::reference(phys, Some((0xabcd, 0x7fff_1234_5ac0)), true, None);
        let b = r.to_bytes();
        assert_eq!(&b[0..16], &phys.to_bytes());
        assert_eq!(&b[16..24], &0x7fff_1234_5ac0u64.to_le_bytes());
        assert_eq!(&b[24..28], &0xabcdu32.to_le_bytes());
        assert_eq!(b[28], 0b0000_0011);
        assert_eq!(&b[29..32], &[0, 0, 0]);
        let m = VirtualRecord::reference(phys, None, false, Some(Miss::Kernel));
        assert_eq!(m.to_bytes()[28], 2 << 2);
        assert_eq!(m.miss(), Some(Miss::Kernel));
        assert_eq!(m.owner(), None);
        assert_eq!(r.owner(), Some((0xabcd, 0x7fff_1234_5ac0)));
        assert!(r.is_dma() && r.is_write() && r.is_access());
        assert_eq!((r.pa(), r.board()), (0x1234_5678_9ac0, 3));
        for miss in Miss::ALL {
            assert_eq!(Miss::from_code(miss.code()), Some(miss));
        }
    }

    #[test]
    fn header_round_trip_and_known_bytes() {
        let h = VtraceHeader {
            flags: FLAG_COMPLETE | FLAG_SELECTION,
            record_count: 2,
            tick_ps: 1250,
            references: 9,
            ..Default::default()
        };
        let b = h.emit();
        assert_eq!(&b[0..8], b"HMTTVTR\0");
        assert_eq!(&b[8..16], &[1, 0, 128, 0, 32, 0, 3, 0]);
        assert_eq!(&b[16..24], &2u64.to_le_bytes());
        assert_eq!(&b[72..74], &1250u16.to_le_bytes());
        assert_eq!(&b[96..104], &9u64.to_le_bytes());
        assert_eq!(VtraceHeader::parse(&b).unwrap(), (h, HEADER_LEN));
    }

    #[test]
    fn view_reads_records_index_and_names() {
        let recs: Vec<_> = (0..1000u64).map(sample).collect();
        let names = NameTable {
            names: vec![(64, "phase_one".into()), (65, "phase_two".into())],
        };
        let f = file(&recs, 64, &names);
        let v = VtraceView::new_checked(&f).unwrap();
        assert_eq!(v.len(), 1000);
        assert_eq!(v.record(999), Some(recs[999]));
        assert_eq!(v.record(1000), None);
        assert!(v.records().eq(recs.iter().copied()));
        assert_eq!(v.index().count(), 16);
        assert_eq!(v.names().get(65), Some("phase_two"));
        assert_eq!(v.header().translated, 90);
        for t in [0, 1, 9, 10, 11, 500, 3320, 3330, 3331, 99999] {
            let want = recs.iter().position(|r| r.tick >= t).unwrap_or(recs.len());
            assert_eq!(v.seek_tick(t), want, "tick {t}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let recs: Vec<_> = (0..3).map(sample).collect();
        let f = file(&recs, 4096, &NameTable::default());
        assert!(matches!(
            VtraceView::new_checked(&f[..10]),
            Err(VtraceError::TooShort(10))
        ));
        let mut bad = f.clone();
        bad[0] = b'X';
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadMagic(_))
        ));
        // A physical trace is not a virtual one.
        let mut phys = crate::trace::TraceHeader::default().emit().to_vec();
        phys.extend_from_slice(&[0; 64]);
        assert!(matches!(
            VtraceView::new_checked(&phys),
            Err(VtraceError::BadMagic(m)) if m == crate::trace::MAGIC
        ));
        let mut bad = f.clone();
        bad[8] = 2;
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadVersion(2))
        ));
        let mut bad = f.clone();
        bad[12] = 16;
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadRecordLen(16))
        ));
        let mut bad = f.clone();
        bad[10] = 12;
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadHeaderLen(12))
        ));
        let mut bad = f.clone();
        bad[16..24].copy_from_slice(&5u64.to_le_bytes());
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadRecordCount { count: 5, room: 3 })
        ));
        let mut bad = f.clone();
        bad[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadIndex { .. })
        ));
        let mut bad = f.clone();
        bad[88..96].copy_from_slice(&3u64.to_le_bytes());
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadNames { .. })
        ));
        // A complete file cut short.
        assert!(matches!(
            VtraceView::new_checked(&f[..HEADER_LEN + RECORD_LEN + 5]),
            Err(VtraceError::BadRecordCount { count: 3, room: 1 })
        ));
        let msg = VtraceView::new_checked(&f[..HEADER_LEN + RECORD_LEN + 5])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("3 records") && msg.contains("room for 1"),
            "{msg}"
        );
    }

    #[test]
    fn an_unfinished_file_reads_up_to_its_last_whole_record() {
        let recs: Vec<_> = (0..10).map(sample).collect();
        let mut f = VtraceHeader::default().emit().to_vec();
        for r in &recs {
            f.extend_from_slice(&r.to_bytes());
        }
        f.truncate(f.len() - 5);
        let v = VtraceView::new_checked(&f).unwrap();
        assert_eq!(v.len(), 9);
        assert!(v.records().eq(recs[..9].iter().copied()));
        assert_eq!(v.seek_tick(10), 3);
    }

    fn arb_record() -> impl Strategy<Value = VirtualRecord> {
        (
            any::<u64>(),
            any::<u8>(),
            0u8..8,
            0u64..=crate::trace::VALUE_MAX,
            any::<u64>(),
            any::<u32>(),
            any::<bool>(),
            0u8..4,
        )
            .prop_map(|(tick, board, kind, value, vaddr, pid, dma, miss)| {
                let phys = TraceRecord::new(tick, board, RecordKind::from_bits(kind), value);
                if !phys.is_access() {
                    return VirtualRecord::marker(phys);
                }
                let miss = Miss::from_code(miss);
                let owner = miss.is_none().then_some((pid, vaddr));
                VirtualRecord::reference(phys, owner, dma, miss)
            })
    }

    proptest! {
        #[test]
        fn record_round_trip(r in arb_record()) {
            let back = VirtualRecord::parse(&r.to_bytes());
            prop_assert_eq!(back, r);
            prop_assert_eq!(back.owner().is_some(), back.is_access() && back.miss().is_none());
        }

        #[test]
        fn file_round_trip(
            mut recs in proptest::collection::vec(arb_record(), 0..300),
            stride in 1u64..50,
            names in proptest::collection::vec((any::<u32>(), "[a-z_]{0,12}"), 0..5),
        ) {
            recs.sort_by_key(|r| r.tick);
            let names = NameTable { names };
            let f = file(&recs, stride, &names);
            let v = VtraceView::new_checked(&f).unwrap();
            prop_assert!(v.records().eq(recs.iter().copied()));
            prop_assert_eq!(v.names(), &names);
            prop_assert_eq!(v.index().count() as u64, (recs.len() as u64).div_ceil(stride));
            if let Some(r) = recs.get(recs.len() / 2) {
                let want = recs.iter().position(|x| x.tick >= r.tick).unwrap();
                prop_assert_eq!(v.seek_tick(r.tick), want);
            }
        }
    }
}
