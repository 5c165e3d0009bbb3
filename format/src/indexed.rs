//! What the physical trace (§11) and the virtual trace (§12) files share: a
//! header whose first 74 bytes and name-table fields sit at the same offsets,
//! fixed-size records sorted by tick (the tick in each record's first 8
//! bytes), a time index of `(tick, record)` entries and a table of event
//! names. Each file type adds its own magic, header fields and record layout
//! on top; this module checks and walks the common parts once for both.
//! Pure: no I/O here.

use crate::bytes::{put_u16, put_u64, u16_at, u32_at, u64_at};

/// Length of one time-index entry.
pub const INDEX_ENTRY_LEN: usize = 16;
/// Header flag: the writer finished and the counts, index and names are valid.
pub const FLAG_COMPLETE: u16 = 1;

/// Offsets of the header fields every indexed file has.
mod field {
    use crate::bytes::Field;
    pub const MAGIC: Field = 0..8;
    pub const VERSION: Field = 8..10;
    pub const HEADER_LEN: Field = 10..12;
    pub const RECORD_LEN: Field = 12..14;
    pub const FLAGS: Field = 14..16;
    pub const RECORD_COUNT: Field = 16..24;
    pub const INDEX_OFFSET: Field = 24..32;
    pub const INDEX_COUNT: Field = 32..40;
    pub const INDEX_STRIDE: Field = 40..48;
    pub const FIRST_TICK: Field = 48..56;
    pub const LAST_TICK: Field = 56..64;
    pub const START_NS: Field = 64..72;
    pub const TICK_PS: Field = 72..74;
    pub const NAMES_OFFSET: Field = 80..88;
    pub const NAMES_LEN: Field = 88..96;
    pub const REC_TICK: Field = 0..8;
}

/// One kind of indexed file: what tells it apart from the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileType {
    /// How errors name the file: "trace", "virtual trace".
    pub name: &'static str,
    pub magic: [u8; 8],
    pub version: u16,
    /// Header length this build writes (and the least it reads).
    pub header_len: usize,
    pub record_len: usize,
}

/// Why a trace file (physical or virtual) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceFileError {
    #[error("file of {len} bytes is too short for a {file} header")]
    TooShort { file: &'static str, len: usize },
    #[error("not an hmtt {file} file (magic {magic:02x?})")]
    BadMagic { file: &'static str, magic: [u8; 8] },
    #[error(
        "{file} file version {version} is not supported (this build reads version {supported})"
    )]
    BadVersion {
        file: &'static str,
        version: u16,
        supported: u16,
    },
    #[error("{file} header length {len} is invalid")]
    BadHeaderLen { file: &'static str, len: u16 },
    #[error("{file} record length {len} is not supported (this build reads {supported})")]
    BadRecordLen {
        file: &'static str,
        len: u16,
        supported: usize,
    },
    #[error("{file} claims {count} records but the file holds room for {room}")]
    BadRecordCount {
        file: &'static str,
        count: u64,
        room: u64,
    },
    #[error("{file} index ({count} entries at offset {offset}) lies outside the file")]
    BadIndex {
        file: &'static str,
        offset: u64,
        count: u64,
    },
    #[error(
        "{file} name table ({len} bytes at offset {offset}) lies outside the file or is malformed"
    )]
    BadNames {
        file: &'static str,
        offset: u64,
        len: u64,
    },
}

/// The header fields every indexed file has, as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommonHeader {
    pub flags: u16,
    pub record_count: u64,
    pub index_offset: u64,
    pub index_count: u64,
    pub index_stride: u64,
    pub first_tick: u64,
    pub last_tick: u64,
    pub start_ns: u64,
    pub tick_ps: u16,
    pub names_offset: u64,
    pub names_len: u64,
}

impl CommonHeader {
    pub fn is_complete(&self) -> bool {
        self.flags & FLAG_COMPLETE != 0
    }

    /// Checks magic, version and lengths, and reads the common fields;
    /// returns them and the header's length.
    pub fn parse(ty: &FileType, b: &[u8]) -> Result<(CommonHeader, usize), TraceFileError> {
        let file = ty.name;
        if b.len() < ty.header_len {
            return Err(TraceFileError::TooShort { file, len: b.len() });
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8 bytes");
        if magic != ty.magic {
            return Err(TraceFileError::BadMagic { file, magic });
        }
        let version = u16_at(b, field::VERSION);
        if version != ty.version {
            return Err(TraceFileError::BadVersion {
                file,
                version,
                supported: ty.version,
            });
        }
        let len = u16_at(b, field::HEADER_LEN);
        if usize::from(len) < ty.header_len || usize::from(len) > b.len() || !len.is_multiple_of(8)
        {
            return Err(TraceFileError::BadHeaderLen { file, len });
        }
        let rlen = u16_at(b, field::RECORD_LEN);
        if usize::from(rlen) != ty.record_len {
            return Err(TraceFileError::BadRecordLen {
                file,
                len: rlen,
                supported: ty.record_len,
            });
        }
        let header = CommonHeader {
            flags: u16_at(b, field::FLAGS),
            record_count: u64_at(b, field::RECORD_COUNT),
            index_offset: u64_at(b, field::INDEX_OFFSET),
            index_count: u64_at(b, field::INDEX_COUNT),
            index_stride: u64_at(b, field::INDEX_STRIDE),
            first_tick: u64_at(b, field::FIRST_TICK),
            last_tick: u64_at(b, field::LAST_TICK),
            start_ns: u64_at(b, field::START_NS),
            tick_ps: u16_at(b, field::TICK_PS),
            names_offset: u64_at(b, field::NAMES_OFFSET),
            names_len: u64_at(b, field::NAMES_LEN),
        };
        Ok((header, usize::from(len)))
    }

    /// Writes the identification and the common fields into `b` (at least
    /// `ty.header_len` bytes); the file type writes its own fields.
    pub fn emit(&self, ty: &FileType, b: &mut [u8]) {
        b[field::MAGIC].copy_from_slice(&ty.magic);
        put_u16(b, field::VERSION, ty.version);
        put_u16(b, field::HEADER_LEN, ty.header_len as u16);
        put_u16(b, field::RECORD_LEN, ty.record_len as u16);
        put_u16(b, field::FLAGS, self.flags);
        put_u64(b, field::RECORD_COUNT, self.record_count);
        put_u64(b, field::INDEX_OFFSET, self.index_offset);
        put_u64(b, field::INDEX_COUNT, self.index_count);
        put_u64(b, field::INDEX_STRIDE, self.index_stride);
        put_u64(b, field::FIRST_TICK, self.first_tick);
        put_u64(b, field::LAST_TICK, self.last_tick);
        put_u64(b, field::START_NS, self.start_ns);
        put_u16(b, field::TICK_PS, self.tick_ps);
        put_u64(b, field::NAMES_OFFSET, self.names_offset);
        put_u64(b, field::NAMES_LEN, self.names_len);
    }

    /// A finished file's counts and offsets, as laid out: the header
    /// (`header_len` bytes), `record_count` records of `record_len` bytes,
    /// `index`'s entries, then `names_len` bytes of names; flagged
    /// complete. Ticks, start time and tick length are the caller's.
    pub fn finished(
        header_len: usize,
        record_len: usize,
        record_count: u64,
        index: &IndexBuilder,
        names_len: usize,
    ) -> CommonHeader {
        let index_offset = header_len as u64 + record_count * record_len as u64;
        let index_count = index.entries().len() as u64;
        CommonHeader {
            flags: FLAG_COMPLETE,
            record_count,
            index_offset,
            index_count,
            index_stride: index.stride(),
            names_offset: index_offset + index_count * INDEX_ENTRY_LEN as u64,
            names_len: names_len as u64,
            ..CommonHeader::default()
        }
    }

    /// Converts ticks to nanoseconds with this file's tick length.
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * f64::from(self.tick_ps) / 1000.0
    }
}

/// One time-index entry: record `record` is the first with its tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub tick: u64,
    pub record: u64,
}

impl IndexEntry {
    pub fn emit(&self) -> [u8; INDEX_ENTRY_LEN] {
        let mut b = [0u8; INDEX_ENTRY_LEN];
        put_u64(&mut b, 0..8, self.tick);
        put_u64(&mut b, 8..16, self.record);
        b
    }
    pub fn parse(b: &[u8]) -> IndexEntry {
        IndexEntry {
            tick: u64_at(b, 0..8),
            record: u64_at(b, 8..16),
        }
    }
}

/// Event names carried in the file: `(index, name)` pairs.
///
/// Encoding: repeated `u32 index, u16 length, length bytes of UTF-8`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameTable {
    pub names: Vec<(u32, String)>,
}

impl NameTable {
    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, name) in &self.names {
            let bytes = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
            out.extend_from_slice(&index.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }
    /// `None` if the bytes are malformed.
    pub fn parse(mut b: &[u8]) -> Option<NameTable> {
        let mut names = Vec::new();
        while !b.is_empty() {
            if b.len() < 6 {
                return None;
            }
            let index = u32_at(b, 0..4);
            let len = usize::from(u16_at(b, 4..6));
            let name = b.get(6..6 + len)?;
            names.push((index, String::from_utf8_lossy(name).into_owned()));
            b = &b[6 + len..];
        }
        Some(NameTable { names })
    }
    /// The name of event `index`, if any.
    pub fn get(&self, index: u32) -> Option<&str> {
        self.names
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, n)| n.as_str())
    }
}

/// A record that knows its time, so the index can be built over it.
pub trait Timed {
    fn tick(&self) -> u64;
}

/// Builds the time index while records stream out: one `(tick, record)`
/// entry every `stride` records.
#[derive(Debug, Clone)]
pub struct IndexBuilder {
    stride: u64,
    entries: Vec<IndexEntry>,
}

impl IndexBuilder {
    pub fn new(stride: u64) -> IndexBuilder {
        IndexBuilder {
            stride: stride.max(1),
            entries: Vec::new(),
        }
    }
    pub fn stride(&self) -> u64 {
        self.stride
    }
    /// Records `[first, first + records.len())` were written.
    #[inline]
    pub fn push_block<R: Timed>(&mut self, first: u64, records: &[R]) {
        let end = first + records.len() as u64;
        let mut next = first.div_ceil(self.stride) * self.stride;
        while next < end {
            self.entries.push(IndexEntry {
                tick: records[(next - first) as usize].tick(),
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

/// The checked sections of a whole indexed file in memory: records, index
/// and names. After `new_checked` no accessor panics.
#[derive(Debug, Clone)]
pub struct Body<'a> {
    records: &'a [u8],
    index: &'a [u8],
    names: NameTable,
    record_len: usize,
}

impl<'a> Body<'a> {
    /// Checks that every section `header` names lies inside `data`. A file
    /// whose writer did not finish (no FLAG_COMPLETE) is read up to its last
    /// whole record, without index or names, and `header`'s counts are set
    /// to what was read.
    pub fn new_checked(
        ty: &FileType,
        header: &mut CommonHeader,
        header_len: usize,
        data: &'a [u8],
    ) -> Result<Body<'a>, TraceFileError> {
        let file = ty.name;
        let record_len = ty.record_len;
        let body = &data[header_len..];
        if !header.is_complete() {
            let n = body.len() / record_len;
            header.record_count = n as u64;
            header.index_count = 0;
            header.names_len = 0;
            return Ok(Body {
                records: &body[..n * record_len],
                index: &[],
                names: NameTable::default(),
                record_len,
            });
        }
        let room = (body.len() / record_len) as u64;
        if header.record_count > room {
            return Err(TraceFileError::BadRecordCount {
                file,
                count: header.record_count,
                room,
            });
        }
        let records = &body[..header.record_count as usize * record_len];
        let index = section(
            data,
            header.index_offset,
            header.index_count,
            INDEX_ENTRY_LEN,
        )
        .ok_or(TraceFileError::BadIndex {
            file,
            offset: header.index_offset,
            count: header.index_count,
        })?;
        let names = if header.names_len == 0 {
            NameTable::default()
        } else {
            section(data, header.names_offset, header.names_len, 1)
                .and_then(NameTable::parse)
                .ok_or(TraceFileError::BadNames {
                    file,
                    offset: header.names_offset,
                    len: header.names_len,
                })?
        };
        Ok(Body {
            records,
            index,
            names,
            record_len,
        })
    }

    pub fn names(&self) -> &NameTable {
        &self.names
    }
    pub fn len(&self) -> usize {
        self.records.len() / self.record_len
    }
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
    /// The bytes of record `i`; `None` past the end.
    #[inline]
    pub fn record_bytes(&self, i: usize) -> Option<&'a [u8]> {
        self.records
            .get(i * self.record_len..(i + 1) * self.record_len)
    }
    /// The bytes of the records from `start` on, one chunk a record.
    pub fn records_from(&self, start: usize) -> core::slice::ChunksExact<'a, u8> {
        let start = start.min(self.len()) * self.record_len;
        self.records[start..].chunks_exact(self.record_len)
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
        u64_at(&self.records[i * self.record_len..], field::REC_TICK)
    }

    /// Position of the first record with `tick >= t` (`len()` if none): the
    /// index narrows the search to one stride, then a binary search inside.
    pub fn seek_tick(&self, t: u64) -> usize {
        let n_index = self.index.len() / INDEX_ENTRY_LEN;
        let (mut lo, mut hi) = (0usize, self.len());
        if n_index > 0 {
            // Last index entry with tick < t bounds the start from below; the
            // next entry (tick >= t) bounds it from above.
            let a = partition_point(n_index, |m| self.index_entry(m).tick < t);
            if a > 0 {
                lo = (self.index_entry(a - 1).record as usize).min(hi);
            }
            if a < n_index {
                hi = (self.index_entry(a).record as usize).min(hi);
            }
        }
        lo + partition_point(hi.saturating_sub(lo), |m| self.tick_at(lo + m) < t)
    }
}

/// A record type of an indexed file.
pub trait FileRecord: Timed + Sized {
    /// The file type whose records these are.
    const FILE: FileType;
    /// Reads one record from exactly `FILE.record_len` bytes.
    fn parse_bytes(b: &[u8]) -> Self;
    /// Writes the record into exactly `FILE.record_len` bytes.
    fn emit_bytes(&self, b: &mut [u8]);
    /// The file bytes of `records`, converted into `scratch`; a type whose
    /// memory is its file layout borrows the records instead.
    fn as_file_bytes<'a>(records: &'a [Self], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        let len = Self::FILE.record_len;
        scratch.clear();
        scratch.resize(records.len() * len, 0);
        for (chunk, r) in scratch.chunks_exact_mut(len).zip(records) {
            r.emit_bytes(chunk);
        }
        scratch
    }
    /// `bytes` as records to build in place, where the type's memory is
    /// its file layout (and `bytes` aligned for it); `None` otherwise.
    fn in_file_bytes_mut(bytes: &mut [u8]) -> Option<&mut [Self]> {
        let _ = bytes;
        None
    }
}

/// A header type of an indexed file: the common fields plus its own.
pub trait FileHeader: Sized {
    fn parse(b: &[u8]) -> Result<(Self, usize), TraceFileError>;
    /// The fields every indexed file has (reading an unfinished file
    /// sets the counts it found).
    fn common_mut(&mut self) -> &mut CommonHeader;
}

/// A checked view of a whole indexed file in memory (a map, typically).
#[derive(Debug, Clone)]
pub struct IndexedView<'a, H, R> {
    header: H,
    body: Body<'a>,
    record: core::marker::PhantomData<R>,
}

impl<'a, H: FileHeader, R: FileRecord + 'a> IndexedView<'a, H, R> {
    /// Checks the header and that every section lies inside `data`. A file
    /// whose writer did not finish (no FLAG_COMPLETE) is read up to its last
    /// whole record, without index or names.
    pub fn new_checked(data: &'a [u8]) -> Result<IndexedView<'a, H, R>, TraceFileError> {
        let (mut header, len) = H::parse(data)?;
        let body = Body::new_checked(&R::FILE, header.common_mut(), len, data)?;
        Ok(IndexedView {
            header,
            body,
            record: core::marker::PhantomData,
        })
    }

    pub fn header(&self) -> &H {
        &self.header
    }
    pub fn names(&self) -> &NameTable {
        self.body.names()
    }
    pub fn len(&self) -> usize {
        self.body.len()
    }
    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }
    /// Record `i`; `None` past the end.
    #[inline]
    pub fn record(&self, i: usize) -> Option<R> {
        self.body.record_bytes(i).map(R::parse_bytes)
    }
    /// The bytes of every record, in file order (`len() * record length`).
    pub fn records_bytes(&self) -> &'a [u8] {
        self.body.records
    }
    /// The records from `start` on.
    pub fn records_from(&self, start: usize) -> impl Iterator<Item = R> + 'a {
        self.body.records_from(start).map(R::parse_bytes)
    }
    pub fn records(&self) -> impl Iterator<Item = R> + 'a {
        self.records_from(0)
    }
    /// The time-index entries.
    pub fn index(&self) -> impl Iterator<Item = IndexEntry> + 'a {
        self.body.index()
    }
    /// Position of the first record with `tick >= t` (`len()` if none).
    pub fn seek_tick(&self, t: u64) -> usize {
        self.body.seek_tick(t)
    }
}

/// `count` items of `item_len` bytes at `offset` in `data`, if they fit.
fn section(data: &[u8], offset: u64, count: u64, item_len: usize) -> Option<&[u8]> {
    let end = offset.checked_add(count.checked_mul(item_len as u64)?)?;
    data.get(usize::try_from(offset).ok()?..usize::try_from(end).ok()?)
}

/// The first `i` in `0..n` for which `below(i)` is false (`below` is true
/// on a prefix).
fn partition_point(n: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let m = (lo + hi) / 2;
        if below(m) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TEST_FILE: FileType = FileType {
        name: "test",
        magic: *b"TESTIDX\0",
        version: 3,
        header_len: 128,
        record_len: 24,
    };

    struct Rec(u64);
    impl Timed for Rec {
        fn tick(&self) -> u64 {
            self.0
        }
    }

    /// A complete file of records whose ticks are `ticks`.
    fn file(ticks: &[u64], stride: u64, names: &NameTable) -> Vec<u8> {
        let ty = &TEST_FILE;
        let recs: Vec<Rec> = ticks.iter().map(|&t| Rec(t)).collect();
        let mut idx = IndexBuilder::new(stride);
        idx.push_block(0, &recs);
        let index = idx.emit();
        let names_bytes = names.emit();
        let records_end = ty.header_len + ticks.len() * ty.record_len;
        let h = CommonHeader {
            flags: FLAG_COMPLETE,
            record_count: ticks.len() as u64,
            index_offset: records_end as u64,
            index_count: idx.entries().len() as u64,
            index_stride: stride,
            names_offset: (records_end + index.len()) as u64,
            names_len: names_bytes.len() as u64,
            ..Default::default()
        };
        let mut f = vec![0u8; ty.header_len];
        h.emit(ty, &mut f);
        for t in ticks {
            let mut r = vec![0xa5u8; ty.record_len];
            r[0..8].copy_from_slice(&t.to_le_bytes());
            f.extend_from_slice(&r);
        }
        f.extend_from_slice(&index);
        f.extend_from_slice(&names_bytes);
        f
    }

    fn open(data: &[u8]) -> Result<(CommonHeader, Body<'_>), TraceFileError> {
        let (mut h, len) = CommonHeader::parse(&TEST_FILE, data)?;
        let body = Body::new_checked(&TEST_FILE, &mut h, len, data)?;
        Ok((h, body))
    }

    #[test]
    fn header_round_trip_and_known_bytes() {
        let h = CommonHeader {
            flags: FLAG_COMPLETE,
            record_count: 2,
            tick_ps: 1250,
            names_len: 9,
            ..Default::default()
        };
        let mut b = [0u8; 128];
        h.emit(&TEST_FILE, &mut b);
        assert_eq!(&b[0..8], b"TESTIDX\0");
        assert_eq!(&b[8..16], &[3, 0, 128, 0, 24, 0, 1, 0]);
        assert_eq!(&b[16..24], &2u64.to_le_bytes());
        assert_eq!(&b[72..74], &1250u16.to_le_bytes());
        assert_eq!(&b[88..96], &9u64.to_le_bytes());
        assert_eq!(CommonHeader::parse(&TEST_FILE, &b).unwrap(), (h, 128));
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let f = file(&[1, 2, 3], 4096, &NameTable::default());
        let file = "test";
        assert!(matches!(
            open(&f[..10]),
            Err(TraceFileError::TooShort { len: 10, .. })
        ));
        let mut bad = f.clone();
        bad[0] = b'X';
        assert!(matches!(open(&bad), Err(TraceFileError::BadMagic { .. })));
        let mut bad = f.clone();
        bad[8] = 2;
        assert_eq!(
            open(&bad).unwrap_err(),
            TraceFileError::BadVersion {
                file,
                version: 2,
                supported: 3
            }
        );
        let mut bad = f.clone();
        bad[12] = 16;
        assert!(matches!(
            open(&bad),
            Err(TraceFileError::BadRecordLen { len: 16, .. })
        ));
        let mut bad = f.clone();
        bad[10] = 12;
        assert!(matches!(
            open(&bad),
            Err(TraceFileError::BadHeaderLen { len: 12, .. })
        ));
        let mut bad = f.clone();
        bad[16..24].copy_from_slice(&5u64.to_le_bytes());
        assert_eq!(
            open(&bad).unwrap_err(),
            TraceFileError::BadRecordCount {
                file,
                count: 5,
                room: 3
            }
        );
        let mut bad = f.clone();
        bad[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(open(&bad), Err(TraceFileError::BadIndex { .. })));
        let mut bad = f.clone();
        bad[88..96].copy_from_slice(&3u64.to_le_bytes());
        assert!(matches!(open(&bad), Err(TraceFileError::BadNames { .. })));
        // A complete file cut short.
        let err = open(&f[..128 + 24 + 5]).unwrap_err();
        assert_eq!(
            err,
            TraceFileError::BadRecordCount {
                file,
                count: 3,
                room: 1
            }
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("test claims 3 records") && msg.contains("room for 1"),
            "{msg}"
        );
    }

    #[test]
    fn an_unfinished_file_reads_up_to_its_last_whole_record() {
        let mut f = vec![0u8; 128];
        CommonHeader::default().emit(&TEST_FILE, &mut f);
        for t in 0..10u64 {
            let mut r = [0u8; 24];
            r[0..8].copy_from_slice(&(t * 2).to_le_bytes());
            f.extend_from_slice(&r);
        }
        f.truncate(f.len() - 5);
        let (h, body) = open(&f).unwrap();
        assert_eq!((h.record_count, body.len()), (9, 9));
        assert_eq!(body.records_from(7).count(), 2);
        assert_eq!(body.seek_tick(5), 3);
        assert_eq!(body.seek_tick(100), 9);
    }

    proptest! {
        #[test]
        fn index_and_seek_agree_with_a_scan(
            mut ticks in proptest::collection::vec(0u64..1000, 0..300),
            stride in 1u64..50,
            probes in proptest::collection::vec(0u64..1100, 1..10),
        ) {
            ticks.sort_unstable();
            let f = file(&ticks, stride, &NameTable::default());
            let (_, body) = open(&f).unwrap();
            prop_assert_eq!(body.len(), ticks.len());
            prop_assert_eq!(body.index().count() as u64, (ticks.len() as u64).div_ceil(stride));
            for e in body.index() {
                prop_assert_eq!(e.tick, ticks[e.record as usize]);
            }
            for t in probes {
                let want = ticks.iter().position(|&x| x >= t).unwrap_or(ticks.len());
                prop_assert_eq!(body.seek_tick(t), want, "tick {}", t);
            }
        }

        #[test]
        fn names_round_trip(names in proptest::collection::vec((any::<u32>(), "[a-z_]{0,20}"), 0..20)) {
            let t = NameTable { names };
            prop_assert_eq!(NameTable::parse(&t.emit()), Some(t.clone()));
            let f = file(&[5], 1, &t);
            let (_, body) = open(&f).unwrap();
            prop_assert_eq!(body.names(), &t);
        }
    }
}
