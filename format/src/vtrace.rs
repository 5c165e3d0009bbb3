//! The virtual trace file (`.hmttvtrace`, format.md §12): what `hmtt replay
//! --out` writes and `hmtt dump` reads. The physical trace (§11) after
//! replay: each reference carries the process and virtual address it was
//! translated to (or why it could not be), and whether it was a CPU or a DMA
//! access. A 160-byte header, fixed-size 32-byte records sorted by tick, a
//! time index and the event names, laid out like the physical trace so a
//! reader maps the file and indexes it directly.
//!
//! `VtraceView` is a zero-copy view over the whole file (after one check no
//! accessor panics); `VtraceHeader` and `VirtualRecord` have symmetric
//! parse/emit. The layout shared with the physical trace (header fields,
//! index, names, the checks) lives in [`crate::indexed`]. Pure: no I/O here.

use crate::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::indexed::{
    CommonHeader, FileHeader, FileRecord, FileType, IndexedView, Timed, TraceFileError,
};
pub use crate::indexed::{IndexBuilder, IndexEntry, TraceFileError as VtraceError, FLAG_COMPLETE};
use crate::trace::{RecordKind, TraceRecord};

/// "HMTTVTR\0".
pub const MAGIC: [u8; 8] = *b"HMTTVTR\0";
/// Virtual trace file version.
pub const VERSION: u16 = 2;
/// Header length written by this version.
pub const HEADER_LEN: usize = 160;
/// Length of a virtual-trace record.
pub const RECORD_LEN: usize = 32;
/// Default number of records between two index entries.
pub const DEFAULT_INDEX_STRIDE: u64 = 4096;
/// File extension.
pub const EXTENSION: &str = "hmttvtrace";
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

/// The virtual trace among the indexed files.
const FILE: FileType = FileType {
    name: "virtual trace",
    magic: MAGIC,
    version: VERSION,
    header_len: HEADER_LEN,
    record_len: RECORD_LEN,
};

/// Offsets of this file type's own header fields and of its record fields.
mod field {
    use crate::bytes::Field;
    pub const BOARDS: usize = 74;
    pub const REFERENCES: Field = 96..104;
    pub const TRANSLATED: Field = 104..112;
    pub const LOG_PLACED: Field = 112..120;
    pub const LOG_UNPLACED: Field = 120..128;

    pub const REC_TICK: Field = 0..8;
    pub const REC_PACKED: Field = 8..16;
    pub const REC_VADDR: Field = 16..24;
    pub const REC_PID: Field = 24..28;
    pub const REC_FLAGS: usize = 28;
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
        put_u64(out, field::REC_TICK, self.tick);
        put_u64(out, field::REC_PACKED, self.packed);
        put_u64(out, field::REC_VADDR, self.vaddr);
        put_u32(out, field::REC_PID, self.pid);
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

impl Timed for VirtualRecord {
    #[inline]
    fn tick(&self) -> u64 {
        self.tick
    }
}

/// The header as plain values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VtraceHeader {
    /// The fields every indexed file has (counts, index, names, times).
    /// `start_ns`: the start of the physical trace, ns since the Unix
    /// epoch (0: not known).
    pub common: CommonHeader,
    pub boards: u8,
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
        self.common.is_complete()
    }
    pub fn is_selection(&self) -> bool {
        self.common.flags & FLAG_SELECTION != 0
    }

    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        self.common.emit(&FILE, &mut b);
        b[field::BOARDS] = self.boards;
        put_u64(&mut b, field::REFERENCES, self.references);
        put_u64(&mut b, field::TRANSLATED, self.translated);
        put_u64(&mut b, field::LOG_PLACED, self.log_placed);
        put_u64(&mut b, field::LOG_UNPLACED, self.log_unplaced);
        crate::indexed::seal_header(&mut b);
        b
    }
}

impl FileHeader for VtraceHeader {
    fn parse(b: &[u8]) -> Result<(VtraceHeader, usize), TraceFileError> {
        let (common, len) = CommonHeader::parse(&FILE, b)?;
        let header = VtraceHeader {
            common,
            boards: b[field::BOARDS],
            references: u64_at(b, field::REFERENCES),
            translated: u64_at(b, field::TRANSLATED),
            log_placed: u64_at(b, field::LOG_PLACED),
            log_unplaced: u64_at(b, field::LOG_UNPLACED),
        };
        Ok((header, len))
    }

    fn common_mut(&mut self) -> &mut CommonHeader {
        &mut self.common
    }
}

/// A checked view of a whole virtual trace file in memory (a map, typically).
pub type VtraceView<'a> = IndexedView<'a, VtraceHeader, VirtualRecord>;

impl FileRecord for VirtualRecord {
    const FILE: FileType = FILE;
    #[inline]
    fn parse_bytes(b: &[u8]) -> VirtualRecord {
        VirtualRecord::parse(b.try_into().expect("32 bytes"))
    }
    #[inline]
    fn emit_bytes(&self, b: &mut [u8]) {
        self.emit(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventNames;
    use proptest::prelude::*;

    fn file(records: &[VirtualRecord], stride: u64, names: &EventNames) -> Vec<u8> {
        let mut idx = IndexBuilder::new(stride);
        idx.push_block(0, records);
        let index = idx.emit();
        let names_bytes = names.emit_section();
        let h = VtraceHeader {
            common: CommonHeader {
                first_tick: records.first().map_or(0, |r| r.tick),
                last_tick: records.last().map_or(0, |r| r.tick),
                start_ns: 7,
                tick_ps: 1250,
                ..CommonHeader::finished(
                    HEADER_LEN,
                    RECORD_LEN,
                    records.len() as u64,
                    &idx,
                    names_bytes.len(),
                )
            },
            boards: 2,
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
        crate::indexed::seal_file(&mut f);
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
            common: CommonHeader {
                version: VERSION,
                flags: FLAG_COMPLETE | FLAG_SELECTION,
                record_count: 2,
                tick_ps: 1250,
                ..CommonHeader::default()
            },
            references: 9,
            ..Default::default()
        };
        let b = h.emit();
        assert_eq!(&b[0..8], b"HMTTVTR\0");
        assert_eq!(&b[8..16], &[2, 0, 160, 0, 32, 0, 3, 0]);
        assert_eq!(&b[16..24], &2u64.to_le_bytes());
        assert_eq!(&b[72..74], &1250u16.to_le_bytes());
        assert_eq!(&b[96..104], &9u64.to_le_bytes());
        assert_eq!(VtraceHeader::parse(&b).unwrap(), (h, HEADER_LEN));
    }

    #[test]
    fn view_reads_records_index_and_names() {
        let recs: Vec<_> = (0..1000u64).map(sample).collect();
        let names = EventNames::from_iter(vec![(64, "phase_one".into()), (65, "phase_two".into())]);
        let f = file(&recs, 64, &names);
        let v = VtraceView::new_checked(&f).unwrap();
        assert_eq!(v.len(), 1000);
        assert_eq!(v.record(999), Some(recs[999]));
        assert_eq!(v.record(1000), None);
        assert!(v.records().eq(recs.iter().copied()));
        assert_eq!(v.index().count(), 16);
        assert_eq!(v.names().name_of(65), Some("phase_two"));
        assert_eq!(v.header().translated, 90);
        for t in [0, 1, 9, 10, 11, 500, 3320, 3330, 3331, 99999] {
            let want = recs.iter().position(|r| r.tick >= t).unwrap_or(recs.len());
            assert_eq!(v.seek_tick(t), want, "tick {t}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        // The checks themselves are `indexed`'s; here, that they name this file.
        let recs: Vec<_> = (0..3).map(sample).collect();
        let f = file(&recs, 4096, &EventNames::default());
        // A physical trace is not a virtual one.
        let mut phys = crate::trace::TraceHeader::default().emit().to_vec();
        phys.extend_from_slice(&[0; 64]);
        assert_eq!(
            VtraceView::new_checked(&phys).unwrap_err(),
            VtraceError::BadMagic {
                file: "virtual trace",
                magic: crate::trace::MAGIC
            }
        );
        let mut bad = f.clone();
        bad[12] = 16;
        assert!(matches!(
            VtraceView::new_checked(&bad),
            Err(VtraceError::BadRecordLen { len: 16, .. })
        ));
        let msg = VtraceView::new_checked(&f[..HEADER_LEN + RECORD_LEN + 5])
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "virtual trace claims 3 records but the file holds room for 1"
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
            let names = EventNames::from_iter(names);
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
