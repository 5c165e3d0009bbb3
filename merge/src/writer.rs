//! Writes the native trace file (format.md §11) as the merge streams its
//! records, on the indexed-file writer ([`crate::indexed_writer`]), and
//! fills in the trace's own header fields at the end.

use std::path::Path;

use hmtt_format::events::EventNames;
use hmtt_format::indexed::CommonHeader;
use hmtt_format::trace::{TraceHeader, TraceRecord, DEFAULT_INDEX_STRIDE};
use hmtt_format::Geometry;

use crate::error::MergeError;
use crate::indexed_writer::{BlockFile, IndexedWriter, RecordStore};
use crate::input::CaptureSet;
use crate::merge::{merge, MergeOptions, RecordSink};
use crate::report::MergeReport;

/// Merges `set` into a new trace file at `path`, with the event `names`;
/// `progress` as for [`merge`]. Returns the report and the file's size.
pub fn merge_to_trace(
    set: &CaptureSet,
    opts: &MergeOptions,
    path: &Path,
    names: &EventNames,
    progress: &mut dyn FnMut(u64),
) -> Result<(MergeReport, u64), MergeError> {
    let mut writer = TraceWriter::create(path)?;
    writer.announce(set.tick_ps, set.start_ns);
    let report = merge(set, opts, &mut writer, progress)?;
    let size = writer.finish(&report, set.geometry, set.start_ns, names)?;
    Ok((report, size))
}

/// Streams a merged trace into a store: the trace file itself
/// ([`TraceWriter`]) or an archive
/// ([`crate::archive_writer::ArchiveTraceWriter`]).
pub struct MergedTraceWriter<S>(IndexedWriter<TraceRecord, S>);

/// Streams a trace file to disk.
pub type TraceWriter = MergedTraceWriter<BlockFile<TraceRecord>>;

impl TraceWriter {
    pub fn create(path: &Path) -> Result<TraceWriter, MergeError> {
        Ok(MergedTraceWriter::over(BlockFile::create(path)?))
    }
}

impl<S: RecordStore<TraceRecord>> MergedTraceWriter<S> {
    pub fn over(store: S) -> MergedTraceWriter<S> {
        MergedTraceWriter(IndexedWriter::over(store, DEFAULT_INDEX_STRIDE))
    }

    pub fn records(&self) -> u64 {
        self.0.records()
    }

    /// The tick length and start time, before the first records: an
    /// unfinished trace's header keeps them.
    pub fn announce(&mut self, tick_ps: u16, start_ns: u64) {
        self.0.announce(tick_ps, start_ns);
    }

    /// Stores the index, the names and the header; returns the stored size.
    pub fn finish(
        self,
        report: &MergeReport,
        geometry: Option<Geometry>,
        start_ns: u64,
        names: &EventNames,
    ) -> Result<u64, MergeError> {
        self.0.finish(names, |common| {
            trace_header(common, report, geometry, start_ns)
                .emit()
                .to_vec()
        })
    }
}

/// The header of a merged trace whose common fields (counts, offsets,
/// ticks) are `common`: the rest comes from the merge.
pub(crate) fn trace_header(
    common: CommonHeader,
    report: &MergeReport,
    geometry: Option<Geometry>,
    start_ns: u64,
) -> TraceHeader {
    TraceHeader {
        common: CommonHeader {
            start_ns,
            tick_ps: report.tick_ps,
            ..common
        },
        geometry_bytes: geometry.map_or((0, 0, 0), |g| g.header_bytes()),
        boards: report.boards.len().min(255) as u8,
        packets: report.packets(),
        packets_missing: report.packets_missing(),
        packets_duplicate: report.packets_duplicate(),
        packets_rejected: report.packets_rejected(),
    }
}

impl<S: RecordStore<TraceRecord>> RecordSink for MergedTraceWriter<S> {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.0.write(records)
    }

    /// Where the store has it (the trace file's block being filled),
    /// records are built straight into the bytes that are stored.
    fn spare(&mut self) -> Option<&mut [TraceRecord]> {
        self.0.spare()
    }

    fn commit(&mut self, n: usize) -> Result<(), MergeError> {
        self.0.commit(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexed_writer::BLOCK_BYTES;
    use hmtt_format::trace::{RecordKind, TraceView, HEADER_LEN, RECORD_LEN};

    fn records(n: u64) -> Vec<TraceRecord> {
        (0..n)
            .map(|i| TraceRecord::new(i / 3, (i % 4) as u8, RecordKind::Cmd, i))
            .collect()
    }

    /// Several blocks' worth of records in uneven pieces, read back whole.
    fn round_trip(dir: &Path) {
        let path = dir.join("w.hmtttrace");
        let recs = records((BLOCK_BYTES / RECORD_LEN) as u64 * 2 + 1234);
        let mut w = TraceWriter::create(&path).unwrap();
        for piece in recs.chunks(100_003) {
            w.write(piece).unwrap();
        }
        let names = EventNames::from_iter(vec![(0x41, "phase".into())]);
        let size = w.finish(&MergeReport::default(), None, 5, &names).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len() as u64, size);
        let v = TraceView::new_checked(&bytes).unwrap();
        assert_eq!(v.len(), recs.len());
        assert!(v.records().eq(recs.iter().copied()));
        assert_eq!(v.names().name_of(0x41), Some("phase"));
        assert_eq!(v.header().common.start_ns, 5);
        assert_eq!(v.index().count(), recs.len().div_ceil(4096));
        assert_eq!(v.seek_tick(1000), 3000);
    }

    #[test]
    fn blocks_round_trip_with_direct_io() {
        round_trip(tempfile::tempdir().unwrap().path());
    }

    #[test]
    fn blocks_round_trip_through_the_page_cache_where_direct_io_is_refused() {
        // tmpfs refuses O_DIRECT; skipped where there is no /dev/shm.
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            round_trip(tempfile::tempdir_in(shm).unwrap().path());
        }
    }

    #[test]
    fn a_writer_that_dies_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.hmtttrace");
        std::fs::write(&path, b"an earlier trace").unwrap();
        let recs = records((BLOCK_BYTES / RECORD_LEN) as u64 * 2);
        let mut w = TraceWriter::create(&path).unwrap();
        w.announce(1250, 77);
        w.write(&recs).unwrap();
        // Written so far under a temporary name; the earlier file is whole.
        assert_eq!(std::fs::read(&path).unwrap(), b"an earlier trace");
        drop(w);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["d.hmtttrace"]);
        assert_eq!(std::fs::read(&path).unwrap(), b"an earlier trace");
    }

    /// Two writers of one path (two merges to one output, issue 41), each
    /// with its own records, in several interleavings: the file left is
    /// one writer's trace exactly (the checksums would refuse a mix).
    #[test]
    fn two_writers_of_one_path_leave_one_trace_or_a_refused_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.hmtttrace");
        let per_block = (BLOCK_BYTES / RECORD_LEN) as u64;
        let a = records(per_block * 2 + 500);
        let b: Vec<TraceRecord> = records(per_block + 300)
            .into_iter()
            .map(|r| TraceRecord::new(r.tick * 2, r.board(), RecordKind::Lost, 7))
            .collect();
        let finish = |w: TraceWriter| {
            w.finish(&MergeReport::default(), None, 0, &EventNames::default())
                .unwrap()
        };
        let mut outcomes = Vec::new();
        for order in 0..4 {
            let mut wa = TraceWriter::create(&path).unwrap();
            let mut wb = TraceWriter::create(&path).unwrap();
            match order {
                0 => {
                    wa.write(&a).unwrap();
                    wb.write(&b).unwrap();
                    finish(wa);
                    finish(wb);
                }
                1 => {
                    wa.write(&a).unwrap();
                    wb.write(&b).unwrap();
                    finish(wb);
                    finish(wa);
                }
                2 => {
                    wb.write(&b).unwrap();
                    finish(wb);
                    wa.write(&a[..per_block as usize]).unwrap();
                    wa.write(&a[per_block as usize..]).unwrap();
                    finish(wa);
                }
                _ => {
                    wa.write(&a[..per_block as usize]).unwrap();
                    wb.write(&b).unwrap();
                    wa.write(&a[per_block as usize..]).unwrap();
                    finish(wb);
                    finish(wa);
                }
            }
            let bytes = std::fs::read(&path).unwrap();
            let outcome = match TraceView::new_checked(&bytes) {
                Err(e) => format!("refused: {e}"),
                Ok(v) if v.records().eq(a.iter().copied()) => "a".into(),
                Ok(v) if v.records().eq(b.iter().copied()) => "b".into(),
                Ok(v) => panic!(
                    "order {order}: a mixed trace of {} records passes (complete: {})",
                    v.len(),
                    v.header().is_complete()
                ),
            };
            outcomes.push(outcome);
        }
        // Each writer writes a file of its own and renames it into place
        // when finished: the one that finished last is left, whole.
        assert_eq!(outcomes, ["b", "a", "a", "a"]);
    }

    #[test]
    fn an_empty_trace_is_a_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.hmtttrace");
        let w = TraceWriter::create(&path).unwrap();
        let size = w
            .finish(&MergeReport::default(), None, 0, &EventNames::default())
            .unwrap();
        // The header and an empty checksum table.
        assert_eq!(size, HEADER_LEN as u64);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(TraceView::new_checked(&bytes).unwrap().len(), 0);
    }

    #[test]
    fn a_full_disk_is_an_error_not_a_panic() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let mut w = TraceWriter::create(full).unwrap();
        let recs = records(100_000);
        let mut failed = false;
        for _ in 0..10 {
            if w.write(&recs).is_err() {
                failed = true;
                break;
            }
        }
        let finished = w.finish(&MergeReport::default(), None, 0, &EventNames::default());
        assert!(failed || finished.is_err());
        // Further use after an error keeps failing cleanly.
        let mut w = TraceWriter::create(full).unwrap();
        while w.write(&recs).is_ok() {}
        let e = w.write(&recs).unwrap_err();
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }
}
