//! The records of a trace (§11) or of its archive (§13) a block at a
//! time, as slices: a reader that does per-record work in a tight loop over
//! a slice pays no iterator or closure dispatch per record. An archive
//! yields its own blocks as it decodes them; a trace file is cut into
//! blocks of [`TRACE_BLOCK_RECORDS`] records, parsed into one reused
//! buffer, so memory stays one block whatever the trace's size.

use hmtt_format::archive::{AnyTrace, ArchiveError};
use hmtt_format::trace::TraceRecord;

/// Records per block read from a trace file (1 MiB of records).
pub const TRACE_BLOCK_RECORDS: usize = 1 << 16;

/// The blocks of an [`AnyTrace`] from a tick on; see the module doc.
pub struct RecordBlocks<'v, 'a> {
    view: &'v AnyTrace<'a>,
    /// Trace file: the next record; archive: the next block to decode.
    next: usize,
    /// Archive: records to skip at the start of the block already in
    /// `buf` (the one a seek decoded), or `None` when `buf` holds nothing
    /// to yield.
    pending: Option<usize>,
    buf: Vec<TraceRecord>,
    failed: bool,
}

impl<'v, 'a> RecordBlocks<'v, 'a> {
    /// Every record of `view`.
    pub fn new(view: &'v AnyTrace<'a>) -> RecordBlocks<'v, 'a> {
        RecordBlocks {
            view,
            next: 0,
            pending: None,
            buf: Vec::new(),
            failed: false,
        }
    }

    /// The records from the first with `tick >= t` on; an archive decodes
    /// at most one block here.
    pub fn from_tick(view: &'v AnyTrace<'a>, t: u64) -> Result<RecordBlocks<'v, 'a>, ArchiveError> {
        let mut blocks = RecordBlocks::new(view);
        if t == 0 {
            return Ok(blocks);
        }
        match view {
            AnyTrace::Trace(v) => blocks.next = v.seek_tick(t),
            AnyTrace::Archive(a) => {
                let (block, pos, decoded) = a.seek_tick(t, &mut blocks.buf)?;
                blocks.next = block + usize::from(decoded);
                blocks.pending = decoded.then_some(pos);
            }
        }
        Ok(blocks)
    }

    /// The next block of records (never empty), `None` at the end. An
    /// archive block that cannot be decoded is an `Err`, after which the
    /// reader ends.
    #[allow(clippy::should_implement_trait)] // yields a borrow of its own buffer
    pub fn next(&mut self) -> Option<Result<&[TraceRecord], ArchiveError>> {
        if self.failed {
            return None;
        }
        match self.view {
            AnyTrace::Trace(v) => {
                let end = v.len().min(self.next + TRACE_BLOCK_RECORDS);
                if self.next >= end {
                    return None;
                }
                self.buf.clear();
                self.buf
                    .extend(v.records_from(self.next).take(end - self.next));
                self.next = end;
                Some(Ok(&self.buf))
            }
            AnyTrace::Archive(a) => {
                if let Some(skip) = self.pending.take() {
                    if skip < self.buf.len() {
                        return Some(Ok(&self.buf[skip..]));
                    }
                }
                loop {
                    if self.next >= a.block_count() {
                        return None;
                    }
                    let b = self.next;
                    self.next += 1;
                    if let Err(e) = a.decode_block(b, &mut self.buf) {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    if !self.buf.is_empty() {
                        return Some(Ok(&self.buf));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::archive::{pack, ArchiveOptions};
    use hmtt_format::indexed::{CommonHeader, IndexBuilder};
    use hmtt_format::trace::{TraceHeader, DEFAULT_INDEX_STRIDE, HEADER_LEN, RECORD_LEN};

    /// A complete trace file of `n` references, three a tick.
    fn trace_bytes(n: u64) -> Vec<u8> {
        let records: Vec<TraceRecord> = (0..n)
            .map(|i| TraceRecord::access(10 + i / 3, (i % 2) as u8, i % 5 == 0, i * 64))
            .collect();
        let mut idx = IndexBuilder::new(DEFAULT_INDEX_STRIDE);
        idx.push_block(0, &records);
        let h = TraceHeader {
            common: CommonHeader {
                first_tick: records[0].tick,
                last_tick: records[records.len() - 1].tick,
                tick_ps: 1250,
                ..CommonHeader::finished(HEADER_LEN, RECORD_LEN, n, &idx, 0)
            },
            ..Default::default()
        };
        let mut f = h.emit().to_vec();
        for r in &records {
            f.extend_from_slice(&r.to_bytes());
        }
        f.extend_from_slice(&idx.emit());
        hmtt_format::indexed::seal_file(&mut f);
        f
    }

    fn all(view: &AnyTrace<'_>, t: u64) -> Vec<TraceRecord> {
        let mut blocks = RecordBlocks::from_tick(view, t).unwrap();
        let mut out = Vec::new();
        while let Some(b) = blocks.next() {
            let b = b.unwrap();
            assert!(!b.is_empty());
            out.extend_from_slice(b);
        }
        out
    }

    #[test]
    fn blocks_hold_the_records_of_the_iterator_from_any_tick() {
        let n = TRACE_BLOCK_RECORDS as u64 * 2 + 17;
        let trace = trace_bytes(n);
        let (archive, _) = pack(
            &trace,
            std::io::Cursor::new(Vec::new()),
            ArchiveOptions::with_level(4096, 1),
        )
        .unwrap();
        let archive = archive.into_inner();
        let plain = AnyTrace::new_checked(&trace).unwrap();
        let packed = AnyTrace::new_checked(&archive).unwrap();
        assert!(matches!(packed, AnyTrace::Archive(_)));
        for t in [0, 1, 10, 11, 5000, 10 + n / 3, 10 + n / 3 + 1, u64::MAX] {
            let want: Vec<TraceRecord> = plain
                .records_from_tick(t)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(all(&plain, t), want, "trace from tick {t}");
            assert_eq!(all(&packed, t), want, "archive from tick {t}");
        }
    }
}
