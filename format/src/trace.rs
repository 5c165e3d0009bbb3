//! The native trace file (`.hmtttrace`, format.md §11): what `hmtt merge`
//! writes and `dump`, `stats` and `replay` read. A 160-byte header, then
//! fixed-size 16-byte records sorted by tick, then a time index (one entry
//! every `index_stride` records) and a table of event names. Records are
//! 8-byte aligned, so a reader can map the file and index it directly.
//!
//! `TraceView` is a zero-copy view over the whole file (after one check no
//! accessor panics); `TraceHeader` and `TraceRecord` have symmetric
//! parse/emit. The layout shared with the virtual trace (header fields,
//! index, names, the checks) lives in [`crate::indexed`]. Pure: no I/O here.

use crate::bytes::{put_u64, u64_at};
use crate::indexed::{
    CommonHeader, FileHeader, FileRecord, FileType, IndexedView, Timed, TraceFileError,
};
pub use crate::indexed::{
    IndexBuilder, IndexEntry, TraceFileError as TraceError, FLAG_COMPLETE, INDEX_ENTRY_LEN,
};

/// "HMTTTRC\0".
pub const MAGIC: [u8; 8] = *b"HMTTTRC\0";
/// Trace file version.
pub const VERSION: u16 = 2;
/// Header length written by this version.
pub const HEADER_LEN: usize = 160;
/// Length of a physical-trace record.
pub const RECORD_LEN: usize = 16;
/// Default number of records between two index entries.
pub const DEFAULT_INDEX_STRIDE: u64 = 4096;
/// File extension.
pub const EXTENSION: &str = "hmtttrace";

/// Largest value a record carries (50 bits).
pub const VALUE_MAX: u64 = (1 << 50) - 1;
const KIND_MASK: u64 = 0xf;
const VALUE_SHIFT: u32 = 6;
/// Where the board sits in a record's packed word (for readers that take
/// fields of many records at once).
pub const BOARD_SHIFT: u32 = 56;

/// The physical trace among the indexed files.
const FILE: FileType = FileType {
    name: "trace",
    magic: MAGIC,
    version: VERSION,
    header_len: HEADER_LEN,
    record_len: RECORD_LEN,
};

/// Offsets of this file type's own header fields and of its record fields.
mod field {
    use crate::bytes::Field;
    pub const ROW_BITS: usize = 74;
    pub const RANK_BANK: usize = 75;
    pub const COL_LINE_BITS: usize = 76;
    pub const BOARDS: usize = 77;
    pub const PACKETS: Field = 96..104;
    pub const PACKETS_MISSING: Field = 104..112;
    pub const PACKETS_DUPLICATE: Field = 112..120;
    pub const PACKETS_REJECTED: Field = 120..128;

    pub const REC_TICK: Field = 0..8;
    pub const REC_PACKED: Field = 8..16;
}

/// What a record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A memory read; value = physical address >> 6.
    Read,
    /// A memory write; value = physical address >> 6.
    Write,
    /// A config-space reference with tracing on; value = event index.
    Tag { write: bool },
    /// An inner command executed; value = command index.
    Cmd,
    /// References the board dropped (TX FIFO overflow); value = count.
    Lost,
    /// Packets missing from the capture start after this record's tick;
    /// value = number of packets missing.
    GapBegin,
    /// The first tick covered again after a gap; value = packets missing.
    GapEnd,
    /// Kinds 8..=15: reserved; readers skip them.
    Reserved(u8),
}

impl RecordKind {
    pub fn from_bits(b: u8) -> RecordKind {
        match b & 0xf {
            0 => RecordKind::Read,
            1 => RecordKind::Write,
            2 => RecordKind::Tag { write: false },
            3 => RecordKind::Tag { write: true },
            4 => RecordKind::Cmd,
            5 => RecordKind::Lost,
            6 => RecordKind::GapBegin,
            7 => RecordKind::GapEnd,
            o => RecordKind::Reserved(o),
        }
    }
    pub fn bits(self) -> u8 {
        match self {
            RecordKind::Read => 0,
            RecordKind::Write => 1,
            RecordKind::Tag { write: false } => 2,
            RecordKind::Tag { write: true } => 3,
            RecordKind::Cmd => 4,
            RecordKind::Lost => 5,
            RecordKind::GapBegin => 6,
            RecordKind::GapEnd => 7,
            RecordKind::Reserved(b) => b & 0xf,
        }
    }
    /// Short upper-case name for dumps.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Read => "READ",
            RecordKind::Write => "WRITE",
            RecordKind::Tag { write: false } => "TAG",
            RecordKind::Tag { write: true } => "TAG_W",
            RecordKind::Cmd => "CMD",
            RecordKind::Lost => "LOST",
            RecordKind::GapBegin => "GAP_BEGIN",
            RecordKind::GapEnd => "GAP_END",
            RecordKind::Reserved(_) => "RESERVED",
        }
    }
}

/// One trace record.
///
/// ```text
/// off size
///  0   8   tick (board ticks; all boards of a trace share the tick length)
///  8   8   bits 0..3 kind, 4..5 zero, 6..55 value, 56..63 board id
/// ```
///
/// For READ/WRITE the value is the physical address >> 6, so the second word
/// masked with `0x00FF_FFFF_FFFF_FFC0` is the physical address itself.
///
/// `repr(C)` with two `u64`s: on a little-endian machine a record's memory
/// is its file layout, so [`records_as_bytes`] writes blocks without a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)]
pub struct TraceRecord {
    pub tick: u64,
    /// The packed second word; see the accessors.
    pub packed: u64,
}

impl TraceRecord {
    /// Packs a record; `value` is cut to 50 bits.
    #[inline]
    pub fn new(tick: u64, board: u8, kind: RecordKind, value: u64) -> TraceRecord {
        TraceRecord {
            tick,
            packed: (u64::from(board) << BOARD_SHIFT)
                | ((value & VALUE_MAX) << VALUE_SHIFT)
                | u64::from(kind.bits()),
        }
    }
    /// A READ or WRITE of physical address `pa` (its low 6 bits are dropped).
    #[inline]
    pub fn access(tick: u64, board: u8, write: bool, pa: u64) -> TraceRecord {
        TraceRecord {
            tick,
            packed: (u64::from(board) << BOARD_SHIFT)
                | (pa & (VALUE_MAX << VALUE_SHIFT))
                | u64::from(write),
        }
    }
    #[inline]
    pub fn kind(&self) -> RecordKind {
        RecordKind::from_bits((self.packed & KIND_MASK) as u8)
    }
    #[inline]
    pub fn board(&self) -> u8 {
        (self.packed >> BOARD_SHIFT) as u8
    }
    #[inline]
    pub fn value(&self) -> u64 {
        (self.packed >> VALUE_SHIFT) & VALUE_MAX
    }
    /// The physical address of a READ/WRITE record.
    #[inline]
    pub fn pa(&self) -> u64 {
        self.value() << VALUE_SHIFT
    }
    #[inline]
    pub fn is_access(&self) -> bool {
        self.packed & (KIND_MASK & !1) == 0
    }
    #[inline]
    pub fn emit(&self, out: &mut [u8]) {
        put_u64(out, field::REC_TICK, self.tick);
        put_u64(out, field::REC_PACKED, self.packed);
    }
    #[inline]
    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        self.emit(&mut b);
        b
    }
    #[inline]
    pub fn parse(b: &[u8; RECORD_LEN]) -> TraceRecord {
        TraceRecord {
            tick: u64_at(b, field::REC_TICK),
            packed: u64_at(b, field::REC_PACKED),
        }
    }
}

/// The file bytes of `records` (format.md §11 record layout). On
/// little-endian machines the records are borrowed as they are; elsewhere
/// they are converted into `scratch`.
#[inline]
pub fn records_as_bytes<'a>(records: &'a [TraceRecord], scratch: &'a mut Vec<u8>) -> &'a [u8] {
    #[cfg(target_endian = "little")]
    {
        let _ = scratch;
        // SAFETY: TraceRecord is repr(C) of two u64 (16 bytes, no padding,
        // every bit pattern a valid u8), so its memory is `len * 16`
        // initialised bytes that live as long as `records`; on a
        // little-endian machine they are exactly the file layout.
        unsafe {
            core::slice::from_raw_parts(
                records.as_ptr().cast::<u8>(),
                core::mem::size_of_val(records),
            )
        }
    }
    #[cfg(not(target_endian = "little"))]
    {
        scratch.resize(records.len() * RECORD_LEN, 0);
        for (chunk, r) in scratch.chunks_exact_mut(RECORD_LEN).zip(records) {
            r.emit(chunk);
        }
        scratch
    }
}

const _: () = assert!(core::mem::size_of::<TraceRecord>() == RECORD_LEN);

/// `bytes` seen as records (format.md §11 layout), without a copy. `None`
/// on big-endian machines or when `bytes` is not 8-byte aligned; a tail
/// shorter than a record is left out.
#[inline]
pub fn records_in_bytes(bytes: &[u8]) -> Option<&[TraceRecord]> {
    if cfg!(target_endian = "big") || bytes.as_ptr().align_offset(8) != 0 {
        return None;
    }
    // SAFETY: as for `records_in_bytes_mut`, shared instead of mutable.
    Some(unsafe {
        core::slice::from_raw_parts(
            bytes.as_ptr().cast::<TraceRecord>(),
            bytes.len() / RECORD_LEN,
        )
    })
}

/// `bytes` seen as records to build in place (format.md §11 layout), so a
/// writer's output block can be filled without a copy. `None` on
/// big-endian machines or when `bytes` is not 8-byte aligned; a tail
/// shorter than a record is left out.
#[inline]
pub fn records_in_bytes_mut(bytes: &mut [u8]) -> Option<&mut [TraceRecord]> {
    if cfg!(target_endian = "big") || bytes.as_ptr().align_offset(8) != 0 {
        return None;
    }
    // SAFETY: the pointer is 8-byte aligned (checked), TraceRecord is
    // repr(C) of two u64 (no padding, every bit pattern valid), and
    // `len * 16 <= bytes.len()`, so the records cover only bytes borrowed
    // mutably for the same lifetime; on a little-endian machine their
    // memory is the file layout.
    Some(unsafe {
        core::slice::from_raw_parts_mut(
            bytes.as_mut_ptr().cast::<TraceRecord>(),
            bytes.len() / RECORD_LEN,
        )
    })
}

impl Timed for TraceRecord {
    #[inline]
    fn tick(&self) -> u64 {
        self.tick
    }
}

/// The header as plain values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceHeader {
    /// The fields every indexed file has (counts, index, names, times).
    /// `start_ns`: the earliest capture start, ns since the Unix epoch
    /// (0: not known).
    pub common: CommonHeader,
    /// Geometry header bytes (row_bits, rank<<4|bank, col_line_bits) of the
    /// boards' DIMMs; zeros when not known.
    pub geometry_bytes: (u8, u8, u8),
    pub boards: u8,
    pub packets: u64,
    pub packets_missing: u64,
    pub packets_duplicate: u64,
    pub packets_rejected: u64,
}

impl TraceHeader {
    pub fn is_complete(&self) -> bool {
        self.common.is_complete()
    }

    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        self.common.emit(&FILE, &mut b);
        b[field::ROW_BITS] = self.geometry_bytes.0;
        b[field::RANK_BANK] = self.geometry_bytes.1;
        b[field::COL_LINE_BITS] = self.geometry_bytes.2;
        b[field::BOARDS] = self.boards;
        put_u64(&mut b, field::PACKETS, self.packets);
        put_u64(&mut b, field::PACKETS_MISSING, self.packets_missing);
        put_u64(&mut b, field::PACKETS_DUPLICATE, self.packets_duplicate);
        put_u64(&mut b, field::PACKETS_REJECTED, self.packets_rejected);
        crate::indexed::seal_header(&mut b);
        b
    }
}

impl FileHeader for TraceHeader {
    fn parse(b: &[u8]) -> Result<(TraceHeader, usize), TraceFileError> {
        let (common, len) = CommonHeader::parse(&FILE, b)?;
        let header = TraceHeader {
            common,
            geometry_bytes: (
                b[field::ROW_BITS],
                b[field::RANK_BANK],
                b[field::COL_LINE_BITS],
            ),
            boards: b[field::BOARDS],
            packets: u64_at(b, field::PACKETS),
            packets_missing: u64_at(b, field::PACKETS_MISSING),
            packets_duplicate: u64_at(b, field::PACKETS_DUPLICATE),
            packets_rejected: u64_at(b, field::PACKETS_REJECTED),
        };
        Ok((header, len))
    }

    fn common_mut(&mut self) -> &mut CommonHeader {
        &mut self.common
    }
}

/// A checked view of a whole trace file in memory (a map, typically).
pub type TraceView<'a> = IndexedView<'a, TraceHeader, TraceRecord>;

impl FileRecord for TraceRecord {
    const FILE: FileType = FILE;
    #[inline]
    fn parse_bytes(b: &[u8]) -> TraceRecord {
        TraceRecord::parse(b.try_into().expect("16 bytes"))
    }
    #[inline]
    fn emit_bytes(&self, b: &mut [u8]) {
        self.emit(b)
    }
    #[inline]
    fn as_file_bytes<'a>(records: &'a [TraceRecord], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        records_as_bytes(records, scratch)
    }
    #[inline]
    fn in_file_bytes_mut(bytes: &mut [u8]) -> Option<&mut [TraceRecord]> {
        records_in_bytes_mut(bytes)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::events::EventNames;
    use proptest::prelude::*;

    #[test]
    fn record_layout_matches_the_spec() {
        let r = TraceRecord::access(0x0102_0304_0506_0708, 3, true, 0x1234_5678_9ac0 | 0x3f);
        let b = r.to_bytes();
        assert_eq!(&b[0..8], &0x0102_0304_0506_0708u64.to_le_bytes());
        let packed = u64::from_le_bytes(b[8..16].try_into().unwrap());
        assert_eq!(packed, (3u64 << 56) | 0x1234_5678_9ac0 | 1);
        assert_eq!(r.pa(), 0x1234_5678_9ac0);
        assert_eq!(r.kind(), RecordKind::Write);
        assert_eq!(r.board(), 3);
        assert!(r.is_access());
        assert_eq!(TraceRecord::parse(&b), r);
        let t = TraceRecord::new(5, 1, RecordKind::Tag { write: false }, 0x10003);
        assert_eq!(t.value(), 0x10003);
        assert!(!t.is_access());
        assert_eq!(t.kind().name(), "TAG");
        for bits in 0..16u8 {
            assert_eq!(RecordKind::from_bits(bits).bits(), bits);
        }
    }

    fn bytemuck_free_bytes(v: &mut [u64]) -> &mut [u8] {
        // SAFETY: u64 storage seen as its bytes; u8 has no alignment needs.
        unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 8) }
    }

    /// A whole, sealed trace file of `records` in memory (a test's input).
    pub(crate) fn file(records: &[TraceRecord], stride: u64, names: &EventNames) -> Vec<u8> {
        let mut idx = IndexBuilder::new(stride);
        idx.push_block(0, records);
        let index = idx.emit();
        let names_bytes = names.emit_section();
        let h = TraceHeader {
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
            geometry_bytes: (15, 0x13, 7),
            boards: 2,
            packets: 10,
            packets_missing: 1,
            packets_duplicate: 2,
            packets_rejected: 3,
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

    #[test]
    fn header_round_trip_and_known_bytes() {
        let h = TraceHeader {
            common: CommonHeader {
                version: VERSION,
                flags: FLAG_COMPLETE,
                record_count: 2,
                tick_ps: 1250,
                ..CommonHeader::default()
            },
            ..Default::default()
        };
        let b = h.emit();
        assert_eq!(&b[0..8], b"HMTTTRC\0");
        assert_eq!(&b[8..16], &[2, 0, 160, 0, 16, 0, 1, 0]);
        assert_eq!(&b[16..24], &2u64.to_le_bytes());
        assert_eq!(&b[72..74], &1250u16.to_le_bytes());
        assert_eq!(TraceHeader::parse(&b).unwrap(), (h, HEADER_LEN));
    }

    #[test]
    fn view_reads_records_index_and_names() {
        let recs: Vec<_> = (0..1000u64)
            .map(|i| TraceRecord::access(i / 3 * 10, (i % 2) as u8, i % 5 == 0, i * 64))
            .collect();
        let names = EventNames::from_iter(vec![(64, "phase_one".into()), (65, "phase_two".into())]);
        let f = file(&recs, 64, &names);
        let v = TraceView::new_checked(&f).unwrap();
        assert_eq!(v.len(), 1000);
        assert_eq!(v.record(999), Some(recs[999]));
        assert_eq!(v.record(1000), None);
        assert!(v.records().eq(recs.iter().copied()));
        assert_eq!(v.index().count(), 16);
        assert_eq!(v.names().name_of(65), Some("phase_two"));
        assert_eq!(v.header().packets_duplicate, 2);
        for t in [0, 1, 9, 10, 11, 500, 3320, 3330, 3331, 99999] {
            let want = recs.iter().position(|r| r.tick >= t).unwrap_or(recs.len());
            assert_eq!(v.seek_tick(t), want, "tick {t}");
        }
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        // The checks themselves are `indexed`'s; here, that they name this file.
        let recs = [TraceRecord::access(1, 0, false, 64)];
        let f = file(&recs, 4096, &EventNames::default());
        let mut bad = f.clone();
        bad[12] = 32;
        assert_eq!(
            TraceView::new_checked(&bad).unwrap_err(),
            TraceError::BadRecordLen {
                file: "trace",
                len: 32,
                supported: 16
            }
        );
        let mut vtrace = crate::vtrace::VtraceHeader::default().emit().to_vec();
        vtrace.extend_from_slice(&[0; 64]);
        let msg = TraceView::new_checked(&vtrace).unwrap_err().to_string();
        assert!(msg.starts_with("not an hmtt trace file"), "{msg}");
        let mut bad = f.clone();
        bad[16..24].copy_from_slice(&5u64.to_le_bytes());
        let msg = TraceView::new_checked(&bad).unwrap_err().to_string();
        assert!(
            msg.starts_with("trace header (bytes 0..160) fails its checksum"),
            "{msg}"
        );
        crate::indexed::seal_header(&mut bad[..HEADER_LEN]);
        let msg = TraceView::new_checked(&bad).unwrap_err().to_string();
        assert_eq!(msg, "trace claims 5 records but the file holds room for 2");
    }

    #[test]
    fn an_unfinished_file_reads_up_to_its_last_whole_record() {
        let recs: Vec<_> = (0..10)
            .map(|i| TraceRecord::access(i, 0, false, i * 64))
            .collect();
        let mut f = TraceHeader::default().emit().to_vec();
        for r in &recs {
            f.extend_from_slice(&r.to_bytes());
        }
        f.truncate(f.len() - 5);
        let v = TraceView::new_checked(&f).unwrap();
        assert_eq!(v.len(), 9);
        assert_eq!(v.seek_tick(4), 4);
    }

    #[test]
    fn an_unfinished_file_ends_at_its_records_not_at_the_sections_after_them() {
        // A writer killed after its index, names and checksum table and
        // before the complete flag (issue 41, 3): those bytes are not records.
        let recs: Vec<_> = (0..10)
            .map(|i| TraceRecord::access(100 + i, 0, false, i * 64))
            .collect();
        let mut f = file(&recs, 4, &EventNames::default());
        f[14] &= !1;
        let v = TraceView::new_checked(&f).unwrap();
        assert!(!v.header().is_complete());
        assert_eq!(v.len(), 10);
        assert_eq!(v.header().common.record_count, 10);
        // and unwritten space after them (tick 0) is not read either
        let mut cut = TraceHeader::default().emit().to_vec();
        for r in &recs[..6] {
            cut.extend_from_slice(&r.to_bytes());
        }
        cut.resize(cut.len() + 4 * RECORD_LEN, 0);
        assert_eq!(TraceView::new_checked(&cut).unwrap().len(), 6);
    }

    proptest! {
        #[test]
        fn record_round_trip(tick: u64, board: u8, kind in 0u8..8, value in 0u64..=VALUE_MAX) {
            let k = RecordKind::from_bits(kind);
            let r = TraceRecord::new(tick, board, k, value);
            let back = TraceRecord::parse(&r.to_bytes());
            prop_assert_eq!((back.tick, back.board(), back.kind(), back.value()), (tick, board, k, value));
        }

        #[test]
        fn records_built_in_bytes_are_the_file_layout(recs in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..50), extra in 0usize..16) {
            // u64 storage: 8-byte aligned bytes.
            let mut store = vec![0u64; (recs.len() * RECORD_LEN + extra).div_ceil(8)];
            let len = recs.len() * RECORD_LEN + extra;
            let bytes: &mut [u8] = &mut bytemuck_free_bytes(&mut store)[..len];
            if let Some(slots) = records_in_bytes_mut(bytes) {
                prop_assert_eq!(slots.len(), recs.len());
                for (slot, &(tick, packed)) in slots.iter_mut().zip(&recs) {
                    *slot = TraceRecord { tick, packed };
                }
                let want: Vec<u8> = recs.iter().flat_map(|&(tick, packed)| TraceRecord { tick, packed }.to_bytes()).collect();
                prop_assert_eq!(&bytes[..want.len()], &want[..]);
            } else {
                prop_assert!(cfg!(target_endian = "big"));
            }
            // Misaligned bytes are refused.
            if len > 1 {
                prop_assert!(records_in_bytes_mut(&mut bytemuck_free_bytes(&mut store)[1..len]).is_none());
            }
        }

        #[test]
        fn block_bytes_equal_emitted_records(recs in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..50)) {
            let recs: Vec<TraceRecord> = recs.into_iter().map(|(tick, packed)| TraceRecord { tick, packed }).collect();
            let mut scratch = Vec::new();
            let bytes = records_as_bytes(&recs, &mut scratch).to_vec();
            let emitted: Vec<u8> = recs.iter().flat_map(|r| r.to_bytes()).collect();
            prop_assert_eq!(bytes, emitted);
        }
    }
}
