//! Reading an archive held in memory: the checks done once when it is
//! opened, then block decoding on demand, counted.

use std::cell::{Cell, RefCell};

use super::block::{self, Columns};
use super::{
    field, ArchiveError, ArchiveHeader, BlockEntry, BLOCK_ENTRY_LEN, BLOCK_HEADER_LEN, COLUMNS,
    FLAG_COMPLETE,
};
use crate::bytes::{u32_at, u64_at};
use crate::events::EventNames;
use crate::indexed::FileHeader;
use crate::trace::{TraceHeader, TraceRecord, RECORD_LEN};

/// A checked archive in memory (a map, typically). Opening it reads the
/// headers, the block index and the tail; records are decoded a block at a
/// time, only when asked for.
#[derive(Debug)]
pub struct ArchiveView<'a> {
    data: &'a [u8],
    header: ArchiveHeader,
    trace_header: TraceHeader,
    /// The trace's header bytes, then its bytes after the records.
    trailer: Vec<u8>,
    names: EventNames,
    index: Vec<BlockEntry>,
    blocks_decoded: Cell<u64>,
    /// Column buffers and a zstd context kept from block to block.
    scratch: RefCell<Option<Scratch>>,
}

struct Scratch {
    columns: Columns,
    zstd: zstd::bulk::Decompressor<'static>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

fn damaged(what: impl Into<String>) -> ArchiveError {
    ArchiveError::Damaged(what.into())
}

fn zstd_error(e: std::io::Error) -> String {
    format!("zstd: {e}")
}

impl<'a> ArchiveView<'a> {
    /// Checks the archive header, the block index (blocks in order inside
    /// the file, record counts adding up, ticks in order) and the trailer.
    pub fn new_checked(data: &'a [u8]) -> Result<ArchiveView<'a>, ArchiveError> {
        let (header, header_len) = ArchiveHeader::parse(data)?;
        if header.flags & FLAG_COMPLETE == 0 {
            return Err(ArchiveError::Incomplete);
        }
        let at = |off: u64, len: u64, what: &str| -> Result<&'a [u8], ArchiveError> {
            off.checked_add(len)
                .and_then(|end| data.get(usize::try_from(off).ok()?..usize::try_from(end).ok()?))
                .ok_or_else(|| {
                    damaged(format!(
                        "{what} ({len} bytes at {off}) lies outside the file"
                    ))
                })
        };
        let trailer_frame = at(header.trailer_offset, header.trailer_len, "trailer")?;
        let index_offset = header.trailer_offset + header.trailer_len;
        let index_len = header
            .block_count
            .checked_mul(BLOCK_ENTRY_LEN as u64)
            .ok_or_else(|| damaged("block count"))?;
        let index_bytes = at(index_offset, index_len, "block index")?;
        if index_offset + index_len != data.len() as u64 {
            return Err(damaged(format!(
                "the file is {} bytes long, the block index ends at {}",
                data.len(),
                index_offset + index_len
            )));
        }
        let index: Vec<BlockEntry> = index_bytes
            .chunks_exact(BLOCK_ENTRY_LEN)
            .map(BlockEntry::parse)
            .collect();
        if header.block_records > super::MAX_BLOCK_RECORDS {
            return Err(damaged(format!(
                "{} records a block, more than the {} an archive may have",
                header.block_records,
                super::MAX_BLOCK_RECORDS
            )));
        }
        let mut next = header_len as u64;
        let mut records = 0u64;
        let mut tick = 0u64;
        for (i, e) in index.iter().enumerate() {
            let last = i + 1 == index.len();
            if e.offset != next
                || e.records == 0
                || (!last && e.records != header.block_records)
                || e.records > header.block_records
                || e.first_tick > e.last_tick
                || e.first_tick < tick
            {
                return Err(ArchiveError::block(i, "its index entry is inconsistent"));
            }
            next += u64::from(e.len);
            records += u64::from(e.records);
            tick = e.last_tick;
        }
        if next != header.trailer_offset || records != header.record_count {
            return Err(damaged(format!(
                "the block index covers {records} records up to byte {next}; the header says {} records, trailer at {}",
                header.record_count, header.trailer_offset
            )));
        }
        // The raw length is checked against the frame's own before allocating.
        let raw_len = zstd::zstd_safe::get_frame_content_size(trailer_frame)
            .ok()
            .flatten()
            .filter(|&n| n == header.trailer_raw_len && n <= 1 << 32)
            .ok_or_else(|| damaged("the trailer's length"))?;
        let trailer = zstd::bulk::decompress(trailer_frame, raw_len as usize)
            .map_err(|e| damaged(format!("trailer: {}", zstd_error(e))))?;
        let th_len = usize::from(header.trace_header_len);
        if trailer.len() as u64 != raw_len || trailer.len() < th_len {
            return Err(damaged("the trailer's length"));
        }
        let (mut trace_header, parsed_len) = TraceHeader::parse(&trailer[..th_len])
            .map_err(|e| damaged(format!("the kept trace header: {e}")))?;
        if parsed_len != th_len {
            return Err(damaged("the kept trace header's length"));
        }
        let names = trace_names(
            &mut trace_header,
            th_len as u64,
            header.record_count,
            &trailer[th_len..],
        )?;
        Ok(ArchiveView {
            data,
            header,
            trace_header,
            trailer,
            names,
            index,
            blocks_decoded: Cell::new(0),
            scratch: RefCell::new(None),
        })
    }

    pub fn header(&self) -> &ArchiveHeader {
        &self.header
    }
    /// The trace's header, as [`crate::trace::TraceView`] gives it.
    pub fn trace_header(&self) -> &TraceHeader {
        &self.trace_header
    }
    /// The trace's header bytes, as packed.
    pub fn trace_header_bytes(&self) -> &[u8] {
        &self.trailer[..usize::from(self.header.trace_header_len)]
    }
    /// The trace's bytes after its records (time index and names), as packed.
    pub fn tail(&self) -> &[u8] {
        &self.trailer[usize::from(self.header.trace_header_len)..]
    }
    pub fn names(&self) -> &EventNames {
        &self.names
    }
    pub fn len(&self) -> usize {
        self.header.record_count as usize
    }
    pub fn is_empty(&self) -> bool {
        self.header.record_count == 0
    }
    pub fn block_count(&self) -> usize {
        self.index.len()
    }
    pub fn block_entry(&self, b: usize) -> Option<&BlockEntry> {
        self.index.get(b)
    }
    /// Blocks decoded since the view was opened (seeks are meant to
    /// decode few; tests and `hmtt dump -v` read this).
    pub fn blocks_decoded(&self) -> u64 {
        self.blocks_decoded.get()
    }
    /// Position of block `b`'s first record in the trace.
    pub fn block_start(&self, b: usize) -> usize {
        b * self.header.block_records as usize
    }

    /// Decodes block `b` into `out` (cleared first).
    pub fn decode_block(&self, b: usize, out: &mut Vec<TraceRecord>) -> Result<(), ArchiveError> {
        out.clear();
        let (scratch, e) = self.block_columns(b)?;
        block::decode(&scratch.columns, e.records as usize, e.first_tick, out)
            .map_err(|err| ArchiveError::block(b, err))?;
        if out.last().map(|r| r.tick) != Some(e.last_tick) {
            return Err(ArchiveError::block(
                b,
                "its last tick disagrees with the block index",
            ));
        }
        Ok(())
    }

    /// Decodes block `b` a run of at most `run` records at a time into
    /// `buf` (cleared before each) and gives each run to `f`, in order:
    /// the records of [`ArchiveView::decode_block`], without a whole
    /// block in memory at once. An error found after some runs (a column
    /// longer than its records, a last tick that disagrees with the
    /// index) comes once `f` has seen them. `f` must not decode blocks of
    /// this view (the view's scratch buffers are in use).
    pub fn decode_block_runs(
        &self,
        b: usize,
        run: usize,
        buf: &mut Vec<TraceRecord>,
        mut f: impl FnMut(&[TraceRecord]),
    ) -> Result<(), ArchiveError> {
        let (scratch, e) = self.block_columns(b)?;
        let bad = |err| ArchiveError::block(b, err);
        let mut d = block::ColumnDecoder::new(&scratch.columns, e.records as usize, e.first_tick)
            .map_err(bad)?;
        let mut last_tick = None;
        while d.remaining() > 0 {
            buf.clear();
            d.decode_into(buf, run.max(1)).map_err(bad)?;
            last_tick = buf.last().map(|r| r.tick);
            f(buf);
        }
        d.finish().map_err(bad)?;
        if last_tick != Some(e.last_tick) {
            return Err(ArchiveError::block(
                b,
                "its last tick disagrees with the block index",
            ));
        }
        Ok(())
    }

    /// Block `b`'s columns, decompressed into the view's scratch buffers
    /// and checked against its header and index entry, with that entry.
    fn block_columns(
        &self,
        b: usize,
    ) -> Result<(std::cell::RefMut<'_, Scratch>, BlockEntry), ArchiveError> {
        let e = *self
            .index
            .get(b)
            .ok_or_else(|| ArchiveError::block(b, "no such block"))?;
        self.blocks_decoded.set(self.blocks_decoded.get() + 1);
        let bytes = &self.data[e.offset as usize..(e.offset + u64::from(e.len)) as usize];
        let bad = |what: &str| ArchiveError::block(b, what);
        if bytes.len() < BLOCK_HEADER_LEN {
            return Err(bad("shorter than its header"));
        }
        let n = u32_at(bytes, field::BLOCK_RECORD_COUNT);
        let first_tick = u64_at(bytes, field::BLOCK_FIRST_TICK);
        if n != e.records || first_tick != e.first_tick {
            return Err(bad("its header disagrees with the block index"));
        }
        let mut guard = self.scratch.borrow_mut();
        if guard.is_none() {
            *guard = Some(Scratch {
                columns: Columns::default(),
                zstd: zstd::bulk::Decompressor::new().map_err(|e| bad(&format!("zstd: {e}")))?,
            });
        }
        let mut scratch = std::cell::RefMut::map(guard, |s| s.as_mut().expect("made just above"));
        let Scratch {
            columns: cols,
            zstd,
        } = &mut *scratch;
        let mut pos = BLOCK_HEADER_LEN;
        for (c, name) in COLUMNS.iter().enumerate() {
            let at = field::BLOCK_COLUMNS + 8 * c;
            let raw = u32_at(bytes, at..at + 4) as usize;
            let len = u32_at(bytes, at + 4..at + 8) as usize;
            // A column is at most a few bytes a record, and no more than
            // its frame can decode to.
            if raw > 24 * n as usize + 64 || raw > super::zstd_max_content(len) {
                return Err(bad(&format!(
                    "column {name} claims {raw} bytes from a frame of {len}"
                )));
            }
            let frame = bytes
                .get(pos..pos + len)
                .ok_or_else(|| bad(&format!("column {name} lies outside the block")))?;
            pos += len;
            let col = match c {
                0 => &mut cols.op,
                1 => &mut cols.dt,
                _ => &mut cols.aux,
            };
            col.clear();
            col.reserve(raw);
            zstd.decompress_to_buffer(frame, col)
                .map_err(|e| bad(&format!("column {name}: {}", zstd_error(e))))?;
            if col.len() != raw {
                return Err(bad(&format!("column {name} is not {raw} bytes long")));
            }
        }
        if pos != bytes.len() {
            return Err(bad("bytes after its columns"));
        }
        // Every record takes at least one byte of the OP column.
        if cols.op.len() < n as usize {
            return Err(bad(&format!(
                "{n} records claimed, {} bytes of operations decoded",
                cols.op.len()
            )));
        }
        Ok((scratch, e))
    }

    /// The block and the position in it of the first record with
    /// `tick >= t` (`(block_count, 0)` if none); decodes at most the one
    /// block that holds it. `buf` holds that block's records after the
    /// call when one was decoded (the returned flag).
    pub fn seek_tick(
        &self,
        t: u64,
        buf: &mut Vec<TraceRecord>,
    ) -> Result<(usize, usize, bool), ArchiveError> {
        // The first block whose last tick reaches t holds the record.
        let b = self.index.partition_point(|e| e.last_tick < t);
        // The seek skips every block before b on the strength of the
        // index's last ticks: the block just before b is decoded, which
        // checks its last tick against the index, so that a lowered last
        // tick is an error rather than records silently skipped.
        if b > 0 {
            self.decode_block(b - 1, buf)?;
            buf.clear();
        }
        let Some(e) = self.index.get(b) else {
            return Ok((self.index.len(), 0, false));
        };
        if e.first_tick >= t {
            return Ok((b, 0, false));
        }
        self.decode_block(b, buf)?;
        Ok((b, buf.partition_point(|r| r.tick < t), true))
    }

    /// The raw bytes of the archive.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }
}

/// The event names in the tail, and `trace_header`'s counts set as
/// [`crate::trace::TraceView`] sets them for an unfinished trace.
fn trace_names(
    trace_header: &mut TraceHeader,
    trace_header_len: u64,
    records: u64,
    tail: &[u8],
) -> Result<EventNames, ArchiveError> {
    let common = trace_header.common_mut();
    if !common.is_complete() {
        common.record_count = records;
        common.index_count = 0;
        common.names_len = 0;
        return Ok(EventNames::default());
    }
    if common.record_count != records {
        return Err(damaged(format!(
            "the trace header says {} records, the archive holds {records}",
            common.record_count
        )));
    }
    if common.names_len == 0 {
        return Ok(EventNames::default());
    }
    let tail_start = trace_header_len + records * RECORD_LEN as u64;
    common
        .names_offset
        .checked_sub(tail_start)
        .and_then(|off| {
            let end = off.checked_add(common.names_len)?;
            tail.get(usize::try_from(off).ok()?..usize::try_from(end).ok()?)
        })
        .and_then(EventNames::parse_section)
        .ok_or_else(|| damaged("the trace's name table lies outside its tail"))
}
