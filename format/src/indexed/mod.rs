//! What the physical trace (§11) and the virtual trace (§12) files share: a
//! header whose first 74 bytes and name-table fields sit at the same offsets,
//! fixed-size records sorted by tick (the tick in each record's first 8
//! bytes), a time index of `(tick, record)` entries and a table of event
//! names. Each file type adds its own magic, header fields and record layout
//! on top; this module checks and walks the common parts once for both.
//! From version 2 a finished file carries CRC-32C checksums: one per block
//! of `index stride` records, one over its index, names and block
//! checksums, and one over its header; a reader verifies all of them when
//! it opens the file. Pure: no I/O here.

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::events::EventNames;

mod checksum;
use checksum::verify_checksums;
pub use checksum::{header_checksum, seal_file, seal_header, tail_checksum, BlockChecksums};

/// Length of one time-index entry.
pub const INDEX_ENTRY_LEN: usize = 16;
/// Header flag: the writer finished and the counts, index and names are valid.
pub const FLAG_COMPLETE: u16 = 1;
/// The version both indexed files had before they carried checksums; still
/// read, without any checksum to verify.
pub const UNCHECKED_VERSION: u16 = 1;
/// Header length of [`UNCHECKED_VERSION`] files.
pub const UNCHECKED_HEADER_LEN: usize = 128;
/// Length of one block checksum in the checksum table.
pub const CHECKSUM_LEN: usize = 4;

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
    pub const CHECKSUMS_OFFSET: Field = 128..136;
    pub const TAIL_CRC: Field = 136..140;
    pub const HEADER_CRC: Field = 140..144;
    pub const REC_TICK: Field = 0..8;
}

/// One kind of indexed file: what tells it apart from the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileType {
    /// How errors name the file: "trace", "virtual trace".
    pub name: &'static str,
    pub magic: [u8; 8],
    /// The version this build writes; [`UNCHECKED_VERSION`] is read too.
    pub version: u16,
    /// Header length this build writes (and the least it reads of its
    /// version).
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
    #[error("{file} index stride is 0")]
    BadStride { file: &'static str },
    #[error("{file} checksum table ({count} checksums at offset {offset}) lies outside the file")]
    BadChecksums {
        file: &'static str,
        offset: u64,
        count: u64,
    },
    #[error(
        "{file} header (bytes 0..{len}) fails its checksum (stored {stored:#010x}, computed {computed:#010x}): the file is damaged"
    )]
    HeaderChecksum {
        file: &'static str,
        len: usize,
        stored: u32,
        computed: u32,
    },
    #[error(
        "{file} index, name table and checksum table (bytes {offset}..{end}) fail their checksum (stored {stored:#010x}, computed {computed:#010x}): the file is damaged"
    )]
    TailChecksum {
        file: &'static str,
        offset: u64,
        end: u64,
        stored: u32,
        computed: u32,
    },
    #[error(
        "{file} block {block} (records {first_record}..{end_record}, bytes {offset}..{end}) fails its checksum (stored {stored:#010x}, computed {computed:#010x}): the file is damaged"
    )]
    BlockChecksum {
        file: &'static str,
        block: u64,
        first_record: u64,
        end_record: u64,
        offset: u64,
        end: u64,
        stored: u32,
        computed: u32,
    },
}

/// The header fields every indexed file has, as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommonHeader {
    /// The version read (a writer always writes its file type's).
    pub version: u16,
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
    /// Where the block checksums start (version 2: after the names).
    pub checksums_offset: u64,
    /// CRC-32C of the index, the names and the block checksums.
    pub tail_crc: u32,
}

impl CommonHeader {
    pub fn is_complete(&self) -> bool {
        self.flags & FLAG_COMPLETE != 0
    }

    /// Whether the file carries checksums (version 2 on): a file of
    /// [`UNCHECKED_VERSION`] is read without any.
    pub fn has_checksums(&self) -> bool {
        self.version > UNCHECKED_VERSION
    }

    /// The number of block checksums: one per `index_stride` records.
    pub fn block_count(&self) -> u64 {
        self.record_count.div_ceil(self.index_stride.max(1))
    }

    /// Checks magic, version and lengths, and reads the common fields;
    /// returns them and the header's length.
    pub fn parse(ty: &FileType, b: &[u8]) -> Result<(CommonHeader, usize), TraceFileError> {
        let file = ty.name;
        if b.len() < ty.header_len.min(UNCHECKED_HEADER_LEN) {
            return Err(TraceFileError::TooShort { file, len: b.len() });
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8 bytes");
        if magic != ty.magic {
            return Err(TraceFileError::BadMagic { file, magic });
        }
        let version = u16_at(b, field::VERSION);
        let least_len = match version {
            v if v == ty.version => ty.header_len,
            UNCHECKED_VERSION => UNCHECKED_HEADER_LEN,
            _ => {
                return Err(TraceFileError::BadVersion {
                    file,
                    version,
                    supported: ty.version,
                })
            }
        };
        let len = u16_at(b, field::HEADER_LEN);
        // No writer of the unchecked version wrote a longer header, so a
        // checked file whose version byte was damaged is not read unchecked.
        let too_long = version == UNCHECKED_VERSION && usize::from(len) != UNCHECKED_HEADER_LEN;
        if usize::from(len) < least_len
            || usize::from(len) > b.len()
            || !len.is_multiple_of(8)
            || too_long
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
        let mut header = CommonHeader {
            version,
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
            ..CommonHeader::default()
        };
        if header.has_checksums() {
            header.checksums_offset = u64_at(b, field::CHECKSUMS_OFFSET);
            header.tail_crc = u32_at(b, field::TAIL_CRC);
            // An unfinished file's header is a placeholder without one.
            if header.is_complete() {
                let len = usize::from(len);
                let stored = u32_at(b, field::HEADER_CRC);
                let computed = header_checksum(&b[..len]);
                if stored != computed {
                    return Err(TraceFileError::HeaderChecksum {
                        file,
                        len,
                        stored,
                        computed,
                    });
                }
            }
        }
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
        put_u64(b, field::CHECKSUMS_OFFSET, self.checksums_offset);
        put_u32(b, field::TAIL_CRC, self.tail_crc);
    }

    /// A finished file's counts and offsets, as laid out: the header
    /// (`header_len` bytes), `record_count` records of `record_len` bytes,
    /// `index`'s entries, `names_len` bytes of names, then the block
    /// checksums; flagged complete. Ticks, start time, tick length and the
    /// tail checksum ([`tail_checksum`]) are the caller's.
    pub fn finished(
        header_len: usize,
        record_len: usize,
        record_count: u64,
        index: &IndexBuilder,
        names_len: usize,
    ) -> CommonHeader {
        let index_offset = header_len as u64 + record_count * record_len as u64;
        let index_count = index.entries().len() as u64;
        let names_offset = index_offset + index_count * INDEX_ENTRY_LEN as u64;
        CommonHeader {
            flags: FLAG_COMPLETE,
            record_count,
            index_offset,
            index_count,
            index_stride: index.stride(),
            names_offset,
            names_len: names_len as u64,
            checksums_offset: names_offset + names_len as u64,
            ..CommonHeader::default()
        }
    }

    /// The file's tick length; `None` when its header holds 0 (unknown).
    pub fn tick_length(&self) -> Option<crate::TickLength> {
        crate::TickLength::of_ps(self.tick_ps)
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
    names: EventNames,
    record_len: usize,
}

impl<'a> Body<'a> {
    /// Checks that every section `header` names lies inside `data`. A file
    /// whose writer did not finish (no FLAG_COMPLETE) is read up to its last
    /// whole record in tick order
    /// ([`records_in_order`]), without index or names, and `header`'s counts are set
    /// to what was read.
    pub fn new_checked(
        ty: &FileType,
        header: &mut CommonHeader,
        header_len: usize,
        data: &'a [u8],
    ) -> Result<Body<'a>, TraceFileError> {
        Body::new_checked_blocks(ty, header, header_len, data, true)
    }

    /// [`new_checked`](Self::new_checked), verifying the block checksums
    /// only if `verify_blocks`.
    fn new_checked_blocks(
        ty: &FileType,
        header: &mut CommonHeader,
        header_len: usize,
        data: &'a [u8],
        verify_blocks: bool,
    ) -> Result<Body<'a>, TraceFileError> {
        let file = ty.name;
        let record_len = ty.record_len;
        let body = &data[header_len..];
        if !header.is_complete() {
            let n = records_in_order(body, record_len);
            header.record_count = n as u64;
            header.index_count = 0;
            header.names_len = 0;
            return Ok(Body {
                records: &body[..n * record_len],
                index: &[],
                names: EventNames::default(),
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
            EventNames::default()
        } else {
            section(data, header.names_offset, header.names_len, 1)
                .and_then(EventNames::parse_section)
                .ok_or(TraceFileError::BadNames {
                    file,
                    offset: header.names_offset,
                    len: header.names_len,
                })?
        };
        if header.has_checksums() {
            verify_checksums(ty, header, header_len, data, records, index, verify_blocks)?;
        }
        Ok(Body {
            records,
            index,
            names,
            record_len,
        })
    }

    pub fn names(&self) -> &EventNames {
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
    /// whole record in tick order, without index or names.
    pub fn new_checked(data: &'a [u8]) -> Result<IndexedView<'a, H, R>, TraceFileError> {
        IndexedView::open(data, true)
    }

    /// [`new_checked`](Self::new_checked) of bytes a view made by
    /// `new_checked` has verified already (another thread's view of the
    /// same map): every check but the pass over the block checksums.
    pub fn new_checked_again(data: &'a [u8]) -> Result<IndexedView<'a, H, R>, TraceFileError> {
        IndexedView::open(data, false)
    }

    fn open(data: &'a [u8], verify_blocks: bool) -> Result<IndexedView<'a, H, R>, TraceFileError> {
        let (mut header, len) = H::parse(data)?;
        let body =
            Body::new_checked_blocks(&R::FILE, header.common_mut(), len, data, verify_blocks)?;
        Ok(IndexedView {
            header,
            body,
            record: core::marker::PhantomData,
        })
    }

    pub fn header(&self) -> &H {
        &self.header
    }
    pub fn names(&self) -> &EventNames {
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

/// The whole records at the start of an unfinished file's `body`, up to
/// the first whose tick is below the one before it. A writer writes its
/// records in tick order and then its index, names and checksum table, and
/// sets the complete flag last, so a writer killed just before that flag
/// leaves those sections (the index's first tick is record 0's) after the
/// records; and unwritten space reads as tick 0. Neither is read as records.
fn records_in_order(body: &[u8], record_len: usize) -> usize {
    let tick = |r: &[u8]| u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
    let mut last = 0;
    for (i, r) in body.chunks_exact(record_len).enumerate() {
        let t = tick(r);
        if t < last {
            return i;
        }
        last = t;
    }
    body.len() / record_len
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
mod tests;
