//! The column chunks of a row group's record columns (`tick` to `event`),
//! encoded and compressed here rather than by the parquet crate's column
//! writers, which spend most of the export's time on per-value work
//! (bench/README.md, Export): each encoder takes the group's records as a
//! slice and writes whole pages, with the chunk statistics the crate would
//! write. The encodings are Parquet's (format 2.x, version 1 data pages),
//! so every reader decodes them.

use hmtt_format::events::EventNames;
use hmtt_format::trace::{RecordKind, TraceRecord, BOARD_SHIFT};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::super::ExportError;
use super::byte_split::byte_streams;
#[cfg(target_arch = "x86_64")]
use super::byte_split::byte_streams_avx2;
use super::delta::{constant_delta_binary_packed, delta_binary_packed, put_varint};
use hmtt_merge::names::event_name;

/// zstd's level for the pages written here. The level is not recorded in
/// the file (readers need only the codec); see bench/README.md, Export,
/// for the rates and sizes of the levels measured.
pub const ZSTD_LEVEL: i32 = 1;

/// Rows of one data page of the columns but `kind` (1 MiB of 8-byte
/// values, the crate's default page size).
pub const PAGE_ROWS: usize = 1 << 17;
/// Rows of one data page of `kind` (1 to 4 bits a row before zstd).
pub const KIND_PAGE_ROWS: usize = 1 << 20;
/// Values of one bit-packed run of `kind`'s indices: 63 groups of 8, the
/// most whose run header is one byte.
const KIND_RUN_VALUES: usize = 63 * 8;

/// How a column chunk's pages are compressed. zstd (level [`ZSTD_LEVEL`])
/// makes the smaller pages; Snappy, which every Parquet reader decodes,
/// takes about a third of zstd's instructions a byte on the delta-packed
/// pages of `tick` and `pa`, for 1.4 times their bytes (bench/README.md,
/// Export).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Zstd,
    Snappy,
}

/// The compressors of a writer's column chunks, kept from one row group
/// to the next.
pub struct Compressors {
    zstd: zstd::bulk::Compressor<'static>,
    snappy: snap::raw::Encoder,
    /// Snappy's output buffer, as large as the largest page needs (zeroed
    /// once, not for every page).
    snappy_out: Vec<u8>,
}

impl Compressors {
    pub fn new() -> Result<Self, ExportError> {
        Ok(Compressors {
            zstd: zstd::bulk::Compressor::new(ZSTD_LEVEL)?,
            snappy: snap::raw::Encoder::new(),
            snappy_out: Vec::new(),
        })
    }
}

/// A column chunk being written: its pages' bytes and what the file's
/// metadata needs of them.
pub struct Chunk<'z> {
    sink: TrackedWrite<Vec<u8>>,
    compressors: &'z mut Compressors,
    codec: Codec,
    uncompressed: usize,
    dictionary_page: bool,
    first_data_page: Option<u64>,
    locations: Vec<PageLocation>,
    rows: usize,
    encodings: Vec<Encoding>,
}

impl<'z> Chunk<'z> {
    pub fn new(compressors: &'z mut Compressors, codec: Codec) -> Self {
        Chunk {
            sink: TrackedWrite::new(Vec::new()),
            compressors,
            codec,
            uncompressed: 0,
            dictionary_page: false,
            first_data_page: None,
            locations: Vec::new(),
            rows: 0,
            encodings: Vec::new(),
        }
    }

    fn compress(&mut self, raw: &[u8]) -> Result<bytes::Bytes, ExportError> {
        let c = &mut *self.compressors;
        match self.codec {
            Codec::Zstd => {
                let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
                c.zstd.compress_to_buffer(raw, &mut out)?;
                Ok(out.into())
            }
            Codec::Snappy => {
                let bound = snap::raw::max_compress_len(raw.len());
                if c.snappy_out.len() < bound {
                    c.snappy_out.resize(bound, 0);
                }
                let n = c
                    .snappy
                    .compress(raw, &mut c.snappy_out)
                    .map_err(std::io::Error::from)?;
                Ok(bytes::Bytes::copy_from_slice(&c.snappy_out[..n]))
            }
        }
    }

    fn note(&mut self, encoding: Encoding) {
        if !self.encodings.contains(&encoding) {
            self.encodings.push(encoding);
        }
    }

    /// The chunk's dictionary page (it comes first), PLAIN values.
    fn dictionary(&mut self, raw: &[u8], values: usize) -> Result<(), ExportError> {
        let buf = self.compress(raw)?;
        let mut pages = SerializedPageWriter::new(&mut self.sink);
        let spec = pages.write_page(CompressedPage::new(
            Page::DictionaryPage {
                buf,
                num_values: values as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            },
            raw.len(),
        ))?;
        self.uncompressed += spec.uncompressed_size;
        self.dictionary_page = true;
        self.note(Encoding::PLAIN);
        Ok(())
    }

    /// A version 1 data page of `rows` rows (nulls included): `raw` holds
    /// the definition levels, if any, then the values in `encoding`.
    fn data_page(
        &mut self,
        raw: &[u8],
        rows: usize,
        encoding: Encoding,
    ) -> Result<(), ExportError> {
        let buf = self.compress(raw)?;
        let mut pages = SerializedPageWriter::new(&mut self.sink);
        let spec = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf,
                num_values: rows as u32,
                encoding,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            raw.len(),
        ))?;
        self.uncompressed += spec.uncompressed_size;
        self.first_data_page.get_or_insert(spec.offset);
        self.locations.push(PageLocation {
            offset: spec.offset as i64,
            compressed_page_size: spec.bytes_written as i32,
            first_row_index: self.rows as i64,
        });
        self.rows += rows;
        self.note(encoding);
        Ok(())
    }

    /// The chunk's bytes and what `SerializedRowGroupWriter::append_column`
    /// needs to splice them in at their place in the file.
    pub fn finish(
        mut self,
        descr: ColumnDescPtr,
        statistics: Option<Statistics>,
    ) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
        self.note(Encoding::RLE);
        let chunk = bytes::Bytes::from(self.sink.into_inner()?);
        let mut metadata = ColumnChunkMetaData::builder(descr)
            .set_compression(match self.codec {
                Codec::Zstd => Compression::ZSTD(ZstdLevel::default()),
                Codec::Snappy => Compression::SNAPPY,
            })
            .set_encodings(self.encodings)
            .set_num_values(self.rows as i64)
            .set_total_compressed_size(chunk.len() as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_dictionary_page_offset(self.dictionary_page.then_some(0))
            .set_data_page_offset(self.first_data_page.unwrap_or(0) as i64);
        if let Some(statistics) = statistics {
            metadata = metadata.set_statistics(statistics);
        }
        let close = ColumnCloseResult {
            bytes_written: chunk.len() as u64,
            rows_written: self.rows as u64,
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            // The file writer writes an offset index for every column or none.
            offset_index: Some(OffsetIndexMetaData {
                page_locations: self.locations,
                unencoded_byte_array_data_bytes: None,
            }),
        };
        Ok((chunk, close))
    }
}

/// Unsigned statistics of INTEGER(64, false) values held as i64: the
/// crate's form (the bits as i64, the order unsigned, no deprecated
/// min/max).
fn unsigned_stats(min_max: Option<(u64, u64)>, nulls: usize) -> Statistics {
    Statistics::int64(
        min_max.map(|(min, _)| min as i64),
        min_max.map(|(_, max)| max as i64),
        None,
        Some(nulls as u64),
        false,
    )
}

/// Appends an optional column's definition levels (bit width 1) for rows
/// of these kinds, in the RLE / bit-packed hybrid with its 4-byte length
/// first (version 1 data pages): runs of 16 or more equal levels that
/// start at a multiple of 8 rows as RLE runs, the rest bit-packed.
fn definition_levels(out: &mut Vec<u8>, groups: &[u8], rows: usize) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    // Groups of 8 rows; the last may be partial, padded with zeros, so
    // only a bit-packed run (whose padding readers ignore) holds it.
    let whole = rows / 8;
    let uniform = |i: usize| i < whole && (groups[i] == 0 || groups[i] == 0xff);
    let run_at = |i: usize| uniform(i) && i + 1 < whole && groups[i + 1] == groups[i];
    let mut i = 0;
    while i < groups.len() {
        if run_at(i) {
            let mut j = i + 2;
            while j < whole && groups[j] == groups[i] {
                j += 1;
            }
            put_varint(out, ((j - i) as u64 * 8) << 1);
            out.push(groups[i] & 1);
            i = j;
        } else {
            let mut j = i + 1;
            while j < groups.len() && !run_at(j) {
                j += 1;
            }
            put_varint(out, ((j - i) as u64) << 1 | 1);
            out.extend_from_slice(&groups[i..j]);
            i = j;
        }
    }
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// A set of kinds (bit k: kind bits k), for the columns defined on some.
#[derive(Clone, Copy)]
struct KindSet(u16);

/// READ and WRITE (kinds 0 and 1) are references: they have an address.
const ACCESSES: KindSet = KindSet(0b11);
/// Every record but the references has a value.
const NOT_ACCESSES: KindSet = KindSet(!0b11);
/// READ, WRITE, TAG and TAG_W (kinds 0 to 3) have a direction: the
/// kind's low bit.
const DIRECTED: KindSet = KindSet(0b1111);
/// TAG, TAG_W and CMD name an event.
const EVENTS: KindSet = KindSet(0b11100);

impl KindSet {
    fn has(self, kind: u8) -> bool {
        self.0 >> (kind & 15) & 1 == 1
    }
}

/// The kind bits of a row group's records, and for each kind set of an
/// optional column whether each record is in it: a bit each, 8 to a
/// byte from the least significant bit, the last byte padded with zeros.
pub struct Kinds {
    bits: Vec<u8>,
    accesses: Vec<u8>,
    not_accesses: Vec<u8>,
    directed: Vec<u8>,
    events: Vec<u8>,
}

impl Kinds {
    /// The kinds of `records`. The four sets' bits come from one pass,
    /// kinds two at a time through a table of the 256 pairs whose byte s
    /// holds set s's bits of the pair.
    pub fn of(records: &[TraceRecord]) -> Kinds {
        let bits: Vec<u8> = records.iter().map(|r| r.kind().bits()).collect();
        let sets = [ACCESSES, NOT_ACCESSES, DIRECTED, EVENTS];
        let mut pairs = [0u32; 256];
        for (p, pair) in pairs.iter_mut().enumerate() {
            for (s, set) in sets.iter().enumerate() {
                let two =
                    u32::from(set.has(p as u8 & 15)) | u32::from(set.has((p >> 4) as u8)) << 1;
                *pair |= two << (8 * s);
            }
        }
        let bytes = bits.len().div_ceil(8);
        let mut out: [Vec<u8>; 4] = std::array::from_fn(|_| Vec::with_capacity(bytes));
        let eights = bits.chunks_exact(8);
        let rest = eights.remainder();
        for g in eights {
            let x = u64::from_le_bytes(g.try_into().expect("8 kinds")) & 0x0f0f_0f0f_0f0f_0f0f;
            // Byte 2j: kind 2j in its low nibble, kind 2j + 1 in its high one.
            let y = x | x >> 4;
            let pair = |j: u32| pairs[(y >> (16 * j)) as u8 as usize];
            // Byte s: set s's bits of the 8 kinds (no shift crosses a byte).
            let all = pair(0) | pair(1) << 2 | pair(2) << 4 | pair(3) << 6;
            for (s, set_bits) in out.iter_mut().enumerate() {
                set_bits.push((all >> (8 * s)) as u8);
            }
        }
        if !rest.is_empty() {
            for (set_bits, set) in out.iter_mut().zip(sets) {
                set_bits.push(
                    rest.iter()
                        .enumerate()
                        .fold(0u8, |b, (j, &k)| b | u8::from(set.has(k)) << j),
                );
            }
        }
        let [accesses, not_accesses, directed, events] = out;
        Kinds {
            bits,
            accesses,
            not_accesses,
            directed,
            events,
        }
    }
}

/// The records whose bit is set in `defined` (8 to a byte, from the least
/// significant bit), skipping the bytes of none at once.
fn rows_of<'r>(
    page: &'r [TraceRecord],
    defined: &'r [u8],
) -> impl Iterator<Item = &'r TraceRecord> {
    defined
        .iter()
        .enumerate()
        .filter(|(_, &bits)| bits != 0)
        .flat_map(move |(g, &bits)| {
            (0..8)
                .filter(move |j| bits >> j & 1 == 1)
                .map(move |j| &page[g * 8 + j])
        })
}

/// The least and the greatest of `values` read as u64, if any.
#[inline(always)]
fn unsigned_range(values: &[i64]) -> Option<(u64, u64)> {
    let (min, max) = values.iter().fold((u64::MAX, 0), |(min, max), &v| {
        (min.min(v as u64), max.max(v as u64))
    });
    (!values.is_empty()).then_some((min, max))
}

/// [`unsigned_range`] with AVX2's 64-bit compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn unsigned_range_avx2(values: &[i64]) -> Option<(u64, u64)> {
    unsigned_range(values)
}

/// The range of both, if any.
fn widen(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((lo, hi)), Some((l, h))) => Some((lo.min(l), hi.max(h))),
        (a, b) => a.or(b),
    }
}

/// A column chunk of `tick`, and the least and the greatest tick, if any
/// (the statistics of `time_ns` too).
pub type TickChunk = (bytes::Bytes, ColumnCloseResult, Option<(u64, u64)>);

/// `tick`: DELTA_BINARY_PACKED, Snappy, unsigned statistics.
pub fn tick_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
) -> Result<TickChunk, ExportError> {
    let mut chunk = Chunk::new(compressors, Codec::Snappy);
    let mut values = Vec::with_capacity(PAGE_ROWS);
    let mut raw = Vec::new();
    let mut range = None;
    for page in records.chunks(PAGE_ROWS) {
        values.clear();
        values.extend(page.iter().map(|r| r.tick as i64));
        range = widen(
            range,
            with_avx2!(unsigned_range, unsigned_range_avx2, &values),
        );
        raw.clear();
        delta_binary_packed(&mut raw, &values);
        chunk.data_page(&raw, page.len(), Encoding::DELTA_BINARY_PACKED)?;
    }
    let (bytes, close) = chunk.finish(descr, Some(unsigned_stats(range, 0)))?;
    Ok((bytes, close, range))
}

/// The least and the greatest board of a page's records. The board is
/// the packed word's top byte: the least and the greatest words hold the
/// least and the greatest boards.
#[inline(always)]
fn board_range(page: &[TraceRecord]) -> (i64, i64) {
    let (lo, hi) = page.iter().fold((u64::MAX, 0), |(lo, hi), r| {
        (lo.min(r.packed), hi.max(r.packed))
    });
    ((lo >> BOARD_SHIFT) as i64, (hi >> BOARD_SHIFT) as i64)
}

/// [`board_range`] with AVX2's 64-bit compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn board_range_avx2(page: &[TraceRecord]) -> (i64, i64) {
    board_range(page)
}

/// `board`: DELTA_BINARY_PACKED (a run of one board packs to nothing),
/// statistics.
pub fn board_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let mut chunk = Chunk::new(compressors, Codec::Zstd);
    let mut values = Vec::with_capacity(PAGE_ROWS);
    let mut raw = Vec::new();
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    for page in records.chunks(PAGE_ROWS) {
        let boards = page.iter().map(|r| i64::from(r.board()));
        let (page_min, page_max) = with_avx2!(board_range, board_range_avx2, page);
        (min, max) = (min.min(page_min), max.max(page_max));
        raw.clear();
        if page_min == page_max {
            constant_delta_binary_packed(&mut raw, page_min, page.len());
        } else {
            values.clear();
            values.extend(boards);
            delta_binary_packed(&mut raw, &values);
        }
        chunk.data_page(&raw, page.len(), Encoding::DELTA_BINARY_PACKED)?;
    }
    let stats = (!records.is_empty())
        .then(|| Statistics::int32(Some(min as i32), Some(max as i32), None, Some(0), false));
    chunk.finish(descr, stats)
}

/// `time_ns` (`tick` × `tick_ns`): BYTE_STREAM_SPLIT, statistics (a zero
/// minimum written -0.0 and a zero maximum +0.0, as the format asks).
/// The time rises with the tick (`tick_ns` ≥ 0), so its minimum and
/// maximum are those of the ticks' (`ticks`, from [`tick_chunk`]).
pub fn time_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    tick_ns: f64,
    ticks: Option<(u64, u64)>,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let mut chunk = Chunk::new(compressors, Codec::Zstd);
    let mut raw = Vec::new();
    // Below 2^63 a tick converts to f64 as a signed integer does: one
    // instruction, where the unsigned conversion takes several.
    let signed = ticks.is_some_and(|(_, max)| max < 1 << 63);
    for page in records.chunks(PAGE_ROWS) {
        let n = page.len();
        // Every byte is written below: the pages of a chunk but its last
        // have the same size, so only that one resizes.
        raw.resize(n * 8, 0);
        with_avx2!(
            byte_streams,
            byte_streams_avx2,
            &mut raw,
            page,
            tick_ns,
            signed
        );
        chunk.data_page(&raw, n, Encoding::BYTE_STREAM_SPLIT)?;
    }
    let stats = ticks.map(|(min, max)| {
        let (min, max) = (min as f64 * tick_ns, max as f64 * tick_ns);
        let min = if min == 0.0 { -0.0 } else { min };
        let max = if max == 0.0 { 0.0 } else { max };
        Statistics::double(Some(min), Some(max), None, Some(0), false)
    });
    chunk.finish(descr, stats)
}

/// `kind`: a dictionary page of the kind names present (PLAIN), then
/// data pages of RLE_DICTIONARY indices in bit-packed runs; no
/// statistics.
pub fn kind_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    kinds: &Kinds,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let kinds = &kinds.bits;
    let present = kinds.iter().fold(0u16, |seen, &b| seen | 1 << (b & 15));
    // The dictionary index of each kind bits; the RESERVED kinds share one.
    let mut index = [0u8; 16];
    let mut names: Vec<&'static str> = Vec::new();
    for bits in (0..16u8).filter(|b| present & 1 << b != 0) {
        let name = RecordKind::from_bits(bits).name();
        index[usize::from(bits)] = match names.iter().position(|n| *n == name) {
            Some(i) => i as u8,
            None => {
                names.push(name);
                (names.len() - 1) as u8
            }
        };
    }
    // At most nine names: 1 to 4 bits an index.
    let width = (u8::BITS - (names.len().max(2) as u8 - 1).leading_zeros()) as usize;
    // The indices of two kinds (low nibble, high nibble) side by side.
    let mut pair_index = [0u16; 256];
    for (p, packed) in pair_index.iter_mut().enumerate() {
        *packed = u16::from(index[p & 15]) | u16::from(index[p >> 4]) << width;
    }
    let mut dictionary = Vec::new();
    for name in &names {
        dictionary.extend_from_slice(&(name.len() as u32).to_le_bytes());
        dictionary.extend_from_slice(name.as_bytes());
    }
    let mut chunk = Chunk::new(compressors, Codec::Zstd);
    chunk.dictionary(&dictionary, names.len())?;
    for page_kinds in kinds.chunks(KIND_PAGE_ROWS) {
        let mut buf = Vec::with_capacity(2 + page_kinds.len() * width / 8 + page_kinds.len() / 64);
        buf.push(width as u8);
        for run in page_kinds.chunks(KIND_RUN_VALUES) {
            let groups = run.len().div_ceil(8);
            buf.push((groups << 1 | 1) as u8);
            let eights = run.chunks_exact(8);
            let rest = eights.remainder();
            for group in eights {
                let x =
                    u64::from_le_bytes(group.try_into().expect("8 kinds")) & 0x0f0f_0f0f_0f0f_0f0f;
                let y = x | x >> 4;
                let packed = (0..4).fold(0u32, |v, j| {
                    v | u32::from(pair_index[(y >> (16 * j)) as u8 as usize]) << (2 * j * width)
                });
                buf.extend_from_slice(&packed.to_le_bytes()[..width]);
            }
            if !rest.is_empty() {
                let packed = rest.iter().enumerate().fold(0u32, |v, (j, &b)| {
                    v | u32::from(index[usize::from(b & 15)]) << (j * width)
                });
                buf.extend_from_slice(&packed.to_le_bytes()[..width]);
            }
        }
        chunk.data_page(&buf, page_kinds.len(), Encoding::RLE_DICTIONARY)?;
    }
    chunk.finish(descr, None)
}

/// `pa`: the address of each reference, null for the other records;
/// DELTA_BINARY_PACKED (a third of PLAIN's bytes to compress), Snappy,
/// unsigned statistics.
pub fn pa_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    kinds: &Kinds,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let mut chunk = Chunk::new(compressors, Codec::Snappy);
    let mut raw = Vec::new();
    let mut values = Vec::with_capacity(PAGE_ROWS);
    let (mut range, mut nulls) = (None, 0);
    let defined_pages = kinds.accesses.chunks(PAGE_ROWS / 8);
    for (page, defined) in records.chunks(PAGE_ROWS).zip(defined_pages) {
        raw.clear();
        definition_levels(&mut raw, defined, page.len());
        // Every record's address is stored and only a reference's kept
        // (the next one overwrites the others): no branch a record.
        values.resize(page.len(), 0);
        let mut kept = 0;
        for r in page {
            values[kept] = r.pa() as i64;
            kept += usize::from(r.is_access());
        }
        values.truncate(kept);
        range = widen(
            range,
            with_avx2!(unsigned_range, unsigned_range_avx2, &values),
        );
        nulls += page.len() - values.len();
        delta_binary_packed(&mut raw, &values);
        chunk.data_page(&raw, page.len(), Encoding::DELTA_BINARY_PACKED)?;
    }
    chunk.finish(descr, Some(unsigned_stats(range, nulls)))
}

/// A column defined on the records whose bit is set in `defined` (one of
/// the sets of [`Kinds`]; null for the others), PLAIN, without
/// statistics: each page holds the definition levels, then what `values`
/// appends for the page's records, their kinds and their bits of
/// `defined`.
fn plain_optional_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    kinds: &[u8],
    defined: &[u8],
    mut values: impl FnMut(&mut Vec<u8>, &[TraceRecord], &[u8], &[u8]),
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let mut chunk = Chunk::new(compressors, Codec::Zstd);
    let mut raw = Vec::new();
    let pages = records.chunks(PAGE_ROWS).zip(kinds.chunks(PAGE_ROWS));
    for ((page, page_kinds), defined) in pages.zip(defined.chunks(PAGE_ROWS / 8)) {
        raw.clear();
        definition_levels(&mut raw, defined, page.len());
        values(&mut raw, page, page_kinds, defined);
        chunk.data_page(&raw, page.len(), Encoding::PLAIN)?;
    }
    chunk.finish(descr, None)
}

/// `is_write`: the direction of references and tags, null for the other
/// records; PLAIN (bit-packed), no statistics.
pub fn is_write_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    kinds: &Kinds,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    plain_optional_chunk(
        compressors,
        descr,
        records,
        &kinds.bits,
        &kinds.directed,
        |raw, _, page_kinds, directed| {
            // The low bits of the directed kinds, 8 kinds at a time: byte j
            // of `x` holds kind j, whose low bit the multiplication moves to
            // bit 56 + j (no two partial products meet).
            let mut bits = BitWriter::default();
            let eights = page_kinds.chunks_exact(8);
            let rest = eights.remainder();
            for (eight, &directed) in eights.zip(directed) {
                let x = u64::from_le_bytes(eight.try_into().expect("8 kinds"));
                let writes =
                    ((x & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
                match directed {
                    0 => {}
                    0xff => bits.put(u64::from(writes), 8),
                    _ => {
                        let mut left = directed;
                        while left != 0 {
                            bits.put(u64::from(writes >> left.trailing_zeros() & 1), 1);
                            left &= left - 1;
                        }
                    }
                }
            }
            for &k in rest.iter().filter(|&&k| DIRECTED.has(k)) {
                bits.put(u64::from(k & 1), 1);
            }
            bits.finish(raw);
        },
    )
}

/// Bits appended from the least significant, 64 to a word.
#[derive(Default)]
struct BitWriter {
    words: Vec<u8>,
    pending: u128,
    used: u32,
}

impl BitWriter {
    /// Appends the low `count` bits of `bits` (the others are 0).
    fn put(&mut self, bits: u64, count: u32) {
        self.pending |= u128::from(bits) << self.used;
        self.used += count;
        if self.used >= 64 {
            self.words
                .extend_from_slice(&(self.pending as u64).to_le_bytes());
            self.pending >>= 64;
            self.used -= 64;
        }
    }

    /// Appends the bits to `out`, the last byte padded with zeros.
    fn finish(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.words);
        out.extend_from_slice(&self.pending.to_le_bytes()[..self.used.div_ceil(8) as usize]);
    }
}

/// `value`: the value of the records that are not references (event
/// index, count), null for references; PLAIN, no statistics.
pub fn value_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    kinds: &Kinds,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    plain_optional_chunk(
        compressors,
        descr,
        records,
        &kinds.bits,
        &kinds.not_accesses,
        |raw, page, _, defined| {
            for r in rows_of(page, defined) {
                raw.extend_from_slice(&r.value().to_le_bytes());
            }
        },
    )
}

/// `event`: the event name of TAG, TAG_W and CMD records, null for the
/// others; PLAIN, no statistics.
pub fn event_chunk(
    compressors: &mut Compressors,
    descr: ColumnDescPtr,
    records: &[TraceRecord],
    kinds: &Kinds,
    names: &EventNames,
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    plain_optional_chunk(
        compressors,
        descr,
        records,
        &kinds.bits,
        &kinds.events,
        |raw, page, _, defined| {
            for r in rows_of(page, defined) {
                let name = event_name(r.value() as u32, names);
                raw.extend_from_slice(&(name.len() as u32).to_le_bytes());
                raw.extend_from_slice(name.as_bytes());
            }
        },
    )
}
