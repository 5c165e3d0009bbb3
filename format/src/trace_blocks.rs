//! The records of a trace file (§11) or its archive (§13) as numbered
//! blocks of records, for readers that work a block at a time (one loop
//! over a slice instead of one iterator step per record) and for readers
//! that split a trace over threads by block. An archive's blocks are its
//! compressed blocks; a trace file's are runs of [`TRACE_BLOCK_RECORDS`]
//! records, borrowed from the file without a copy where the platform
//! allows.

use crate::archive::{AnyTrace, ArchiveError};
use crate::trace::{records_in_bytes, TraceRecord, RECORD_LEN};

/// Records in one block of a trace file (an archive has its own blocks).
pub const TRACE_BLOCK_RECORDS: usize = 1 << 16;

/// Reads the blocks of one trace or archive; holds the buffer an archive
/// block is decoded into, so a reader allocates once.
pub struct BlockReader<'v, 'a> {
    trace: &'v AnyTrace<'a>,
    buf: Vec<TraceRecord>,
}

impl<'v, 'a> BlockReader<'v, 'a> {
    pub fn new(trace: &'v AnyTrace<'a>) -> BlockReader<'v, 'a> {
        BlockReader {
            trace,
            buf: Vec::new(),
        }
    }

    /// The number of blocks.
    pub fn block_count(&self) -> usize {
        match self.trace {
            AnyTrace::Trace(v) => v.len().div_ceil(TRACE_BLOCK_RECORDS),
            AnyTrace::Archive(a) => a.block_count(),
        }
    }

    /// The records of block `b` (empty past the last block).
    pub fn block(&mut self, b: usize) -> Result<&[TraceRecord], ArchiveError> {
        match self.trace {
            AnyTrace::Trace(v) => {
                let bytes = v.records_bytes();
                let start = (b.saturating_mul(TRACE_BLOCK_RECORDS) * RECORD_LEN).min(bytes.len());
                let end = (start + TRACE_BLOCK_RECORDS * RECORD_LEN).min(bytes.len());
                let bytes = &bytes[start..end];
                if let Some(records) = records_in_bytes(bytes) {
                    return Ok(records);
                }
                self.buf.clear();
                self.buf.extend(
                    bytes
                        .chunks_exact(RECORD_LEN)
                        .map(|c| TraceRecord::parse(c.try_into().expect("16 bytes"))),
                );
                Ok(&self.buf)
            }
            AnyTrace::Archive(a) => {
                if b >= a.block_count() {
                    return Ok(&[]);
                }
                a.decode_block(b, &mut self.buf)?;
                Ok(&self.buf)
            }
        }
    }

    /// The records of block `b` a run of at most `run` records at a time,
    /// in order (none past the last block): for readers that work on a
    /// few thousand records at once, which then stay in cache (an archive
    /// block is decoded run by run, never whole). An error found in a
    /// block after some of its runs comes once `f` has seen them.
    pub fn block_runs(
        &mut self,
        b: usize,
        run: usize,
        mut f: impl FnMut(&[TraceRecord]),
    ) -> Result<(), ArchiveError> {
        match self.trace {
            AnyTrace::Trace(_) => {
                for records in self.block(b)?.chunks(run.max(1)) {
                    f(records);
                }
                Ok(())
            }
            AnyTrace::Archive(a) => {
                if b >= a.block_count() {
                    return Ok(());
                }
                a.decode_block_runs(b, run, &mut self.buf, f)
            }
        }
    }

    /// The first tick of block `b` (`None` past the last block or for an
    /// empty one).
    pub fn first_tick(&self, b: usize) -> Option<u64> {
        match self.trace {
            AnyTrace::Trace(v) => v
                .record(b.checked_mul(TRACE_BLOCK_RECORDS)?)
                .map(|r| r.tick),
            AnyTrace::Archive(a) => a.block_entry(b).map(|e| e.first_tick),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::{pack, ArchiveOptions, ArchiveView};
    use crate::events::EventNames;
    use crate::trace::TraceView;

    fn trace_file(records: &[TraceRecord]) -> Vec<u8> {
        crate::trace::tests::file(
            records,
            crate::trace::DEFAULT_INDEX_STRIDE,
            &EventNames::default(),
        )
    }

    #[test]
    fn blocks_hold_every_record_in_order() {
        let records: Vec<TraceRecord> = (0..(2 * TRACE_BLOCK_RECORDS as u64 + 7))
            .map(|i| TraceRecord::access(i, 0, i % 3 == 0, i * 64))
            .collect();
        let file = trace_file(&records);
        let view = TraceView::new_checked(&file).unwrap();
        let any = AnyTrace::Trace(view);
        let mut r = BlockReader::new(&any);
        assert_eq!(r.block_count(), 3);
        let mut all = Vec::new();
        for b in 0..r.block_count() {
            all.extend_from_slice(r.block(b).unwrap());
        }
        assert_eq!(all, records);
        assert!(r.block(3).unwrap().is_empty());
        assert_runs_hold(&mut r, &records);

        let (packed, _) = pack(
            &file,
            std::io::Cursor::new(Vec::new()),
            ArchiveOptions::with_level(50_000, 1),
        )
        .unwrap();
        let bytes = packed.into_inner();
        let any = AnyTrace::Archive(ArchiveView::new_checked(&bytes).unwrap());
        let mut r = BlockReader::new(&any);
        let mut all = Vec::new();
        for b in 0..r.block_count() {
            assert_eq!(r.first_tick(b), Some(b as u64 * 50_000));
            all.extend_from_slice(r.block(b).unwrap());
        }
        assert_eq!(all, records);

        assert_runs_hold(&mut r, &records);
    }

    /// Runs of several lengths give every record of the reader's blocks.
    fn assert_runs_hold(r: &mut BlockReader, records: &[TraceRecord]) {
        for run in [1, 4096, 50_001] {
            let mut all = Vec::new();
            for b in 0..=r.block_count() {
                r.block_runs(b, run, |records| {
                    assert!(!records.is_empty() && records.len() <= run);
                    all.extend_from_slice(records);
                })
                .unwrap();
            }
            assert_eq!(all, records, "runs of {run}");
        }
    }
}
