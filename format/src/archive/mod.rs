//! The trace archive (`.hmttz`, format.md §13): a native trace (§11) in
//! independently decodable blocks of column-coded, zstd-compressed
//! records, with a time index over the blocks, and the trace's own header
//! and trailing bytes (time index, event names) kept so that unpacking
//! gives the trace back byte for byte.
//!
//! [`ArchiveWriter`] streams records into blocks on any `Write + Seek`;
//! [`pack`] converts a whole trace; [`ArchiveView`] reads an archive in
//! memory (a map), decoding only the blocks asked for and counting them;
//! [`unpack`] writes the trace back. [`AnyTrace`] reads a trace or an
//! archive alike. No files are opened here.

mod any;
pub mod block;
mod scan;
mod view;

use std::io::{Seek, SeekFrom, Write};

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::trace::{TraceRecord, TraceView, RECORD_LEN};

pub use any::{AnyTrace, AnyTraceError, Records};
pub use block::{ColumnError, Columns};
pub use view::ArchiveView;

/// "HMTTARC\0".
pub const MAGIC: [u8; 8] = *b"HMTTARC\0";
/// Archive version.
pub const VERSION: u16 = 1;
/// Header length written by this version.
pub const HEADER_LEN: usize = 64;
/// Length of one block-index entry.
pub const BLOCK_ENTRY_LEN: usize = 32;
/// Length of a block's own header (record count, first tick, column sizes).
pub const BLOCK_HEADER_LEN: usize = 40;
/// Records per block by default: big enough for the coder to learn a
/// program's patterns (a 2 M-record lackey trace: 2.18 bits per record in
/// blocks of 1 M, 2.27 in blocks of 256 K), small enough that a seek
/// decodes a few milliseconds' worth.
pub const DEFAULT_BLOCK_RECORDS: u32 = 1 << 20;
/// The most records a block may hold (16 times the default: 384 MiB of
/// decoded records). Writers refuse more, and readers refuse an archive
/// that claims more, so that no claimed count sizes a huge allocation.
pub const MAX_BLOCK_RECORDS: u32 = 1 << 24;
/// The most bytes a zstd frame of `len` bytes can decode to: a frame is a
/// sequence of blocks, each of at most 128 KiB of content and, when it is
/// a run of one byte (an RLE block), 4 bytes long with its header. A
/// column that claims more than its frame can hold is damaged, and is
/// refused before anything is allocated for it.
pub fn zstd_max_content(len: usize) -> usize {
    (len / 4 + 1).saturating_mul(128 << 10)
}
/// zstd level of the OP column (and the trailer) by default: the fastest
/// level that meets the size targets on the benchmark's traces (on the
/// lackey trace level 1 makes OP 4% bigger); level 9 is about 20% smaller
/// and 7 times slower.
pub const DEFAULT_LEVEL: i32 = 3;
/// zstd level of the AUX column, and of the DT column of short blocks, by
/// default. AUX holds what the columns' coding left over (wide deltas,
/// long steps), which zstd hardly shrinks: on a 452K-record `hmtt sim
/// --workload mix --n 4M` trace level 1 codes it 2.3 times as fast as
/// level 3 for the same size; on the lackey trace it is 6% of the
/// archive and 4% bigger at level 1. Short blocks' DT too: there zstd's
/// work for each frame weighs most (the benchmark's 3755-record `mix`
/// trace packs 9% faster for 0.5% more bytes; its quicksort trace: 11%
/// more bytes, still 0.29 times `zstd -19` of its capture files). Long
/// blocks' DT keeps the OP column's level: at level 1 the lackey trace,
/// whose size target is close, grows 0.4%.
pub const DEFAULT_SIDE_LEVEL: i32 = 1;
/// Hash and chain table sizes (log2 of entries) of the default level,
/// instead of zstd's 17 and 16 for inputs over 256 KiB: tables that fit a
/// core's L2 cache code a long block's OP and DT columns 10-20% faster,
/// within 0.3% of the size.
pub const DEFAULT_LEVEL_TABLE_LOGS: (u32, u32) = (16, 14);
/// Blocks of fewer records than this are short (see `side_level`).
pub const SHORT_BLOCK_RECORDS: usize = 1 << 16;
/// File extension.
pub const EXTENSION: &str = "hmttz";
/// Header flag: the writer finished (trailer and block index valid).
pub const FLAG_COMPLETE: u16 = 1;
/// Columns per block, in their order in the block.
pub const COLUMNS: [&str; 3] = ["OP", "DT", "AUX"];

mod field {
    use crate::bytes::Field;
    pub const MAGIC: Field = 0..8;
    pub const VERSION: Field = 8..10;
    pub const HEADER_LEN: Field = 10..12;
    pub const FLAGS: Field = 12..14;
    pub const TRACE_HEADER_LEN: Field = 14..16;
    pub const RECORD_COUNT: Field = 16..24;
    pub const BLOCK_COUNT: Field = 24..32;
    pub const BLOCK_RECORDS: Field = 32..36;
    pub const TRAILER_OFFSET: Field = 40..48;
    pub const TRAILER_LEN: Field = 48..56;
    pub const TRAILER_RAW_LEN: Field = 56..64;

    pub const ENTRY_OFFSET: Field = 0..8;
    pub const ENTRY_FIRST_TICK: Field = 8..16;
    pub const ENTRY_LAST_TICK: Field = 16..24;
    pub const ENTRY_LEN: Field = 24..28;
    pub const ENTRY_RECORDS: Field = 28..32;

    pub const BLOCK_RECORD_COUNT: Field = 0..4;
    pub const BLOCK_FIRST_TICK: Field = 8..16;
    /// Then per column: u32 raw length, u32 compressed length.
    pub const BLOCK_COLUMNS: usize = 16;
}

/// Why an archive cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("file of {0} bytes is too short for an archive header")]
    TooShort(usize),
    #[error("not an hmtt trace archive (magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error("archive version {0} is not supported (this build reads version {VERSION})")]
    BadVersion(u16),
    #[error("the archive is incomplete: its writer did not finish")]
    Incomplete,
    #[error("archive damaged: {0}")]
    Damaged(String),
    #[error("archive block {block} damaged: {what}")]
    BadBlock { block: u64, what: String },
    #[error("the trace to pack is not usable")]
    Trace(#[from] crate::trace::TraceError),
    #[error("writing the archive")]
    Io(#[from] std::io::Error),
}

impl ArchiveError {
    fn block(block: usize, what: impl ToString) -> ArchiveError {
        ArchiveError::BadBlock {
            block: block as u64,
            what: what.to_string(),
        }
    }
}

/// How an archive is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveOptions {
    /// Records per block (the last block may hold fewer).
    pub block_records: u32,
    /// zstd level of the OP column, of long blocks' DT column and of the
    /// trailer.
    pub level: i32,
    /// zstd level of the AUX column, and of the DT column of blocks
    /// shorter than [`SHORT_BLOCK_RECORDS`] (longer blocks' DT uses
    /// `level`).
    pub side_level: i32,
}

impl ArchiveOptions {
    /// Every column at `level`.
    pub fn with_level(block_records: u32, level: i32) -> ArchiveOptions {
        ArchiveOptions {
            block_records,
            level,
            side_level: level,
        }
    }
}

impl Default for ArchiveOptions {
    fn default() -> ArchiveOptions {
        ArchiveOptions {
            block_records: DEFAULT_BLOCK_RECORDS,
            level: DEFAULT_LEVEL,
            side_level: DEFAULT_SIDE_LEVEL,
        }
    }
}

/// One block-index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEntry {
    /// Offset of the block from the start of the file.
    pub offset: u64,
    pub first_tick: u64,
    pub last_tick: u64,
    /// Length of the block in bytes.
    pub len: u32,
    pub records: u32,
}

impl BlockEntry {
    fn emit(&self) -> [u8; BLOCK_ENTRY_LEN] {
        let mut b = [0u8; BLOCK_ENTRY_LEN];
        put_u64(&mut b, field::ENTRY_OFFSET, self.offset);
        put_u64(&mut b, field::ENTRY_FIRST_TICK, self.first_tick);
        put_u64(&mut b, field::ENTRY_LAST_TICK, self.last_tick);
        put_u32(&mut b, field::ENTRY_LEN, self.len);
        put_u32(&mut b, field::ENTRY_RECORDS, self.records);
        b
    }
    fn parse(b: &[u8]) -> BlockEntry {
        BlockEntry {
            offset: u64_at(b, field::ENTRY_OFFSET),
            first_tick: u64_at(b, field::ENTRY_FIRST_TICK),
            last_tick: u64_at(b, field::ENTRY_LAST_TICK),
            len: u32_at(b, field::ENTRY_LEN),
            records: u32_at(b, field::ENTRY_RECORDS),
        }
    }
}

/// The archive header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArchiveHeader {
    pub flags: u16,
    /// Length of the trace header at the start of the trailer.
    pub trace_header_len: u16,
    pub record_count: u64,
    pub block_count: u64,
    pub block_records: u32,
    /// Where the trailer starts (one zstd frame: the trace's header, then
    /// its bytes after the records); the block index follows it.
    pub trailer_offset: u64,
    /// Compressed and raw lengths of the trailer.
    pub trailer_len: u64,
    pub trailer_raw_len: u64,
}

impl ArchiveHeader {
    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::MAGIC].copy_from_slice(&MAGIC);
        put_u16(&mut b, field::VERSION, VERSION);
        put_u16(&mut b, field::HEADER_LEN, HEADER_LEN as u16);
        put_u16(&mut b, field::FLAGS, self.flags);
        put_u16(&mut b, field::TRACE_HEADER_LEN, self.trace_header_len);
        put_u64(&mut b, field::RECORD_COUNT, self.record_count);
        put_u64(&mut b, field::BLOCK_COUNT, self.block_count);
        put_u32(&mut b, field::BLOCK_RECORDS, self.block_records);
        put_u64(&mut b, field::TRAILER_OFFSET, self.trailer_offset);
        put_u64(&mut b, field::TRAILER_LEN, self.trailer_len);
        put_u64(&mut b, field::TRAILER_RAW_LEN, self.trailer_raw_len);
        b
    }

    /// Checks magic, version and length; returns the header and its length.
    pub fn parse(b: &[u8]) -> Result<(ArchiveHeader, usize), ArchiveError> {
        if b.len() < HEADER_LEN {
            return Err(ArchiveError::TooShort(b.len()));
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(ArchiveError::BadMagic(magic));
        }
        let version = u16_at(b, field::VERSION);
        if version != VERSION {
            return Err(ArchiveError::BadVersion(version));
        }
        let len = usize::from(u16_at(b, field::HEADER_LEN));
        if len < HEADER_LEN || len > b.len() || len % 8 != 0 {
            return Err(ArchiveError::Damaged(format!("header length {len}")));
        }
        Ok((
            ArchiveHeader {
                flags: u16_at(b, field::FLAGS),
                trace_header_len: u16_at(b, field::TRACE_HEADER_LEN),
                record_count: u64_at(b, field::RECORD_COUNT),
                block_count: u64_at(b, field::BLOCK_COUNT),
                block_records: u32_at(b, field::BLOCK_RECORDS),
                trailer_offset: u64_at(b, field::TRAILER_OFFSET),
                trailer_len: u64_at(b, field::TRAILER_LEN),
                trailer_raw_len: u64_at(b, field::TRAILER_RAW_LEN),
            },
            len,
        ))
    }
}

/// Sizes an archive writer reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArchiveSummary {
    pub records: u64,
    pub blocks: u64,
    /// Bytes of the whole archive.
    pub bytes: u64,
    /// Compressed bytes of each column, summed over the blocks.
    pub column_bytes: [u64; 3],
}

/// Streams records into an archive: blocks go out as they fill; the trace
/// header, tail and block index at [`ArchiveWriter::finish`], which then
/// writes the header (flagged complete) at the start.
pub struct ArchiveWriter<W: Write + Seek> {
    out: W,
    opts: ArchiveOptions,
    pending: Vec<TraceRecord>,
    index: Vec<BlockEntry>,
    offset: u64,
    records: u64,
    columns: Columns,
    frames: [Vec<u8>; 3],
    compressor: zstd::bulk::Compressor<'static>,
    column_bytes: [u64; 3],
}

impl<W: Write + Seek> ArchiveWriter<W> {
    /// Starts an archive at the current position of `out` (an incomplete
    /// header is written at once, so a writer that dies leaves a file
    /// readers refuse by name).
    pub fn new(mut out: W, opts: ArchiveOptions) -> Result<ArchiveWriter<W>, ArchiveError> {
        if opts.block_records > MAX_BLOCK_RECORDS {
            return Err(ArchiveError::Damaged(format!(
                "{} records a block is more than the {MAX_BLOCK_RECORDS} an archive may have",
                opts.block_records
            )));
        }
        let opts = ArchiveOptions {
            block_records: opts.block_records.max(1),
            ..opts
        };
        let start = out.stream_position()?;
        if start != 0 {
            return Err(ArchiveError::Damaged(
                "an archive starts at the start of its file".into(),
            ));
        }
        out.write_all(&ArchiveHeader::default().emit())?;
        let mut compressor = zstd::bulk::Compressor::new(opts.level)?;
        // A damaged column is then found by its checksum, not decoded.
        compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
        Ok(ArchiveWriter {
            out,
            opts,
            // Grown as records wait: a small archive's one short block
            // does not pay for a whole block's buffer.
            pending: Vec::new(),
            index: Vec::new(),
            offset: HEADER_LEN as u64,
            records: 0,
            columns: Columns::default(),
            frames: Default::default(),
            compressor,
            column_bytes: [0; 3],
        })
    }

    /// Records written so far (in blocks or waiting for the next).
    pub fn records(&self) -> u64 {
        self.records + self.pending.len() as u64
    }

    /// Adds records (in trace order).
    pub fn write(&mut self, mut records: &[TraceRecord]) -> Result<(), ArchiveError> {
        let per_block = self.opts.block_records as usize;
        while !records.is_empty() {
            if self.pending.is_empty() && records.len() >= per_block {
                let (block, rest) = records.split_at(per_block);
                self.write_block(block)?;
                records = rest;
                continue;
            }
            let take = (per_block - self.pending.len()).min(records.len());
            self.pending.extend_from_slice(&records[..take]);
            records = &records[take..];
            if self.pending.len() == per_block {
                let block = std::mem::take(&mut self.pending);
                let r = self.write_block(&block);
                self.pending = block;
                self.pending.clear();
                r?;
            }
        }
        Ok(())
    }

    fn write_block(&mut self, block: &[TraceRecord]) -> Result<(), ArchiveError> {
        self.columns.clear();
        block::encode(block, &mut self.columns);
        let raw = [&self.columns.op, &self.columns.dt, &self.columns.aux];
        let mut head = [0u8; BLOCK_HEADER_LEN];
        put_u32(&mut head, field::BLOCK_RECORD_COUNT, block.len() as u32);
        put_u64(&mut head, field::BLOCK_FIRST_TICK, block[0].tick);
        for (c, column) in raw.iter().enumerate() {
            let level = match c {
                0 => self.opts.level,
                1 if block.len() >= SHORT_BLOCK_RECORDS => self.opts.level,
                _ => self.opts.side_level,
            };
            set_level(&mut self.compressor, level)?;
            let frame = &mut self.frames[c];
            frame.clear();
            frame.reserve(zstd::zstd_safe::compress_bound(column.len()));
            self.compressor.compress_to_buffer(column, frame)?;
            let at = field::BLOCK_COLUMNS + 8 * c;
            put_u32(&mut head, at..at + 4, column.len() as u32);
            put_u32(&mut head, at + 4..at + 8, frame.len() as u32);
            self.column_bytes[c] += frame.len() as u64;
        }
        self.out.write_all(&head)?;
        for frame in &self.frames {
            self.out.write_all(frame)?;
        }
        let len = BLOCK_HEADER_LEN + self.frames.iter().map(Vec::len).sum::<usize>();
        self.index.push(BlockEntry {
            offset: self.offset,
            first_tick: block[0].tick,
            last_tick: block[block.len() - 1].tick,
            len: len as u32,
            records: block.len() as u32,
        });
        self.offset += len as u64;
        self.records += block.len() as u64;
        Ok(())
    }

    /// Writes the last block, the trailer (`trace_header`: the trace's
    /// header bytes; `tail`: its bytes after the records) and the header.
    /// Returns the output and what was written.
    pub fn finish(
        mut self,
        trace_header: &[u8],
        tail: &[u8],
    ) -> Result<(W, ArchiveSummary), ArchiveError> {
        if !self.pending.is_empty() {
            let block = std::mem::take(&mut self.pending);
            self.write_block(&block)?;
        }
        let trace_header_len = u16::try_from(trace_header.len())
            .map_err(|_| ArchiveError::Damaged("trace header over 64 KiB".into()))?;
        let mut trailer = Vec::with_capacity(trace_header.len() + tail.len());
        trailer.extend_from_slice(trace_header);
        trailer.extend_from_slice(tail);
        set_level(&mut self.compressor, self.opts.level)?;
        let frame = self.compressor.compress(&trailer)?;
        self.out.write_all(&frame)?;
        for e in &self.index {
            self.out.write_all(&e.emit())?;
        }
        let header = ArchiveHeader {
            flags: FLAG_COMPLETE,
            trace_header_len,
            record_count: self.records,
            block_count: self.index.len() as u64,
            block_records: self.opts.block_records,
            trailer_offset: self.offset,
            trailer_len: frame.len() as u64,
            trailer_raw_len: trailer.len() as u64,
        };
        let bytes = self.offset + frame.len() as u64 + (self.index.len() * BLOCK_ENTRY_LEN) as u64;
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header.emit())?;
        self.out.seek(SeekFrom::Start(bytes))?;
        self.out.flush()?;
        Ok((
            self.out,
            ArchiveSummary {
                records: self.records,
                blocks: self.index.len() as u64,
                bytes,
                column_bytes: self.column_bytes,
            },
        ))
    }
}

/// Sets the compressor's level, with the default level's smaller tables
/// (0: the level's own).
fn set_level(compressor: &mut zstd::bulk::Compressor<'_>, level: i32) -> std::io::Result<()> {
    use zstd::zstd_safe::CParameter;
    let (hash_log, chain_log) = if level == DEFAULT_LEVEL {
        DEFAULT_LEVEL_TABLE_LOGS
    } else {
        (0, 0)
    };
    compressor.set_parameter(CParameter::CompressionLevel(level))?;
    compressor.set_parameter(CParameter::HashLog(hash_log))?;
    compressor.set_parameter(CParameter::ChainLog(chain_log))
}

/// Packs a whole trace file (`trace`, checked as §11 says) into `out`.
pub fn pack<W: Write + Seek>(
    trace: &[u8],
    out: W,
    opts: ArchiveOptions,
) -> Result<(W, ArchiveSummary), ArchiveError> {
    let view = TraceView::new_checked(trace)?;
    let header_len = usize::from(u16_at(trace, 10..12));
    let records_end = header_len + view.len() * RECORD_LEN;
    let mut w = ArchiveWriter::new(out, opts)?;
    // A mapped trace's records are used in place; elsewhere they are read
    // a block at a time.
    match crate::trace::records_in_bytes(&trace[header_len..records_end]) {
        Some(records) => {
            for block in records.chunks(w.opts.block_records as usize) {
                w.write_block(block)?;
            }
        }
        None => {
            let mut buf = Vec::with_capacity(opts.block_records.max(1) as usize);
            let mut it = view.records();
            loop {
                buf.clear();
                buf.extend(it.by_ref().take(opts.block_records.max(1) as usize));
                if buf.is_empty() {
                    break;
                }
                w.write(&buf)?;
            }
        }
    }
    w.finish(&trace[..header_len], &trace[records_end..])
}

/// Writes the trace an archive holds to `out`, byte for byte the packed
/// one; returns its length.
pub fn unpack(archive: &ArchiveView<'_>, out: &mut dyn Write) -> Result<u64, ArchiveError> {
    out.write_all(archive.trace_header_bytes())?;
    let mut written = archive.trace_header_bytes().len() as u64;
    let mut buf = Vec::new();
    let mut scratch = Vec::new();
    for b in 0..archive.block_count() {
        archive.decode_block(b, &mut buf)?;
        let bytes = crate::trace::records_as_bytes(&buf, &mut scratch);
        out.write_all(bytes)?;
        written += bytes.len() as u64;
    }
    out.write_all(archive.tail())?;
    written += archive.tail().len() as u64;
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests;
