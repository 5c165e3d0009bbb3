//! Replay from a trace archive (format.md §13): the records come from
//! decoded blocks, the last two kept, so a replay decodes each block about
//! once. A block that cannot be decoded ends the records early; the error
//! is kept for the caller to report.

use std::cell::RefCell;

use hmtt_format::archive::{ArchiveError, ArchiveView};
use hmtt_format::trace::TraceRecord;

use super::RecordSource;

/// An archive as a [`RecordSource`].
pub struct ArchiveSource<'v, 'a> {
    view: &'v ArchiveView<'a>,
    /// Up to two decoded blocks, most recently used first.
    cache: RefCell<Vec<(usize, Vec<TraceRecord>)>>,
    error: RefCell<Option<ArchiveError>>,
}

impl<'v, 'a> ArchiveSource<'v, 'a> {
    pub fn new(view: &'v ArchiveView<'a>) -> ArchiveSource<'v, 'a> {
        ArchiveSource {
            view,
            cache: RefCell::new(Vec::new()),
            error: RefCell::new(None),
        }
    }

    /// The first block that could not be decoded, if any: the records
    /// given ended before it.
    pub fn take_error(&self) -> Option<ArchiveError> {
        self.error.borrow_mut().take()
    }

    /// Runs `f` on the decoded block holding record `i`; `None` past the
    /// end or after a damaged block.
    fn with_block<T>(&self, i: usize, f: impl FnOnce(usize, &[TraceRecord]) -> T) -> Option<T> {
        if i >= self.view.len() || self.error.borrow().is_some() {
            return None;
        }
        let per_block = self.view.header().block_records.max(1) as usize;
        let b = i / per_block;
        let mut cache = self.cache.borrow_mut();
        match cache.iter().position(|(k, _)| *k == b) {
            Some(0) => {}
            Some(at) => {
                let hit = cache.remove(at);
                cache.insert(0, hit);
            }
            None => {
                let mut buf = if cache.len() >= 2 {
                    cache.pop().map(|(_, v)| v).unwrap_or_default()
                } else {
                    Vec::new()
                };
                if let Err(e) = self.view.decode_block(b, &mut buf) {
                    *self.error.borrow_mut() = Some(e);
                    return None;
                }
                cache.insert(0, (b, buf));
            }
        }
        let (_, records) = &cache[0];
        Some(f(b * per_block, records))
    }
}

impl RecordSource for ArchiveSource<'_, '_> {
    fn len(&self) -> usize {
        self.view.len()
    }

    /// Record `i`; a record of zeros where the archive is damaged (the
    /// error is kept: see [`ArchiveSource::take_error`]).
    fn get(&self, i: usize) -> TraceRecord {
        self.with_block(i, |first, records| {
            records.get(i - first).copied().unwrap_or_default()
        })
        .unwrap_or_default()
    }

    /// Up to `len` records from `start`, never past the end of `start`'s
    /// block; none where the archive is damaged.
    fn block<'s>(
        &'s self,
        start: usize,
        len: usize,
        buf: &'s mut Vec<TraceRecord>,
    ) -> &'s [TraceRecord] {
        buf.clear();
        self.with_block(start, |first, records| {
            let from = (start - first).min(records.len());
            let to = from.saturating_add(len).min(records.len());
            buf.extend_from_slice(&records[from..to]);
        });
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::archive::{pack, ArchiveOptions};
    use hmtt_format::indexed::{CommonHeader, IndexBuilder};
    use hmtt_format::trace::{TraceHeader, HEADER_LEN, RECORD_LEN};

    fn archive_of(records: &[TraceRecord], block_records: u32) -> Vec<u8> {
        let idx = IndexBuilder::new(4096);
        let mut trace = TraceHeader {
            common: CommonHeader::finished(HEADER_LEN, RECORD_LEN, records.len() as u64, &idx, 0),
            ..Default::default()
        }
        .emit()
        .to_vec();
        for r in records {
            trace.extend_from_slice(&r.to_bytes());
        }
        trace.extend_from_slice(&idx.emit());
        hmtt_format::indexed::seal_file(&mut trace);
        let opts = ArchiveOptions::with_level(block_records, 1);
        pack(&trace, std::io::Cursor::new(Vec::new()), opts)
            .unwrap()
            .0
            .into_inner()
    }

    #[test]
    fn blocks_and_records_match_the_slice() {
        let recs: Vec<_> = (0..5000u64)
            .map(|i| TraceRecord::access(i, 0, i % 3 == 0, (i * 7 % 1000) * 64))
            .collect();
        let bytes = archive_of(&recs, 700);
        let view = ArchiveView::new_checked(&bytes).unwrap();
        let src = ArchiveSource::new(&view);
        assert_eq!(RecordSource::len(&src), 5000);
        let mut got = Vec::new();
        let mut buf = Vec::new();
        while got.len() < recs.len() {
            let b = src.block(got.len(), 1024, &mut buf);
            assert!(!b.is_empty());
            got.extend_from_slice(b);
        }
        assert_eq!(got, recs);
        assert_eq!(view.blocks_decoded(), 8);
        for i in [4999, 0, 701, 700, 699] {
            assert_eq!(src.get(i), recs[i]);
        }
        assert!(src.take_error().is_none());
    }

    #[test]
    fn a_damaged_block_ends_the_records_and_is_kept() {
        let recs: Vec<_> = (0..3000u64)
            .map(|i| TraceRecord::access(i, 0, false, i * 64))
            .collect();
        let mut bytes = archive_of(&recs, 1000);
        let e = *ArchiveView::new_checked(&bytes)
            .unwrap()
            .block_entry(1)
            .unwrap();
        bytes[(e.offset + u64::from(e.len) - 10) as usize] ^= 0xff;
        let view = ArchiveView::new_checked(&bytes).unwrap();
        let src = ArchiveSource::new(&view);
        let mut buf = Vec::new();
        assert_eq!(src.block(0, 5000, &mut buf).len(), 1000);
        assert!(src.block(1000, 10, &mut buf).is_empty());
        let msg = src.take_error().unwrap().to_string();
        assert!(msg.contains("block 1"), "{msg}");
    }
}
