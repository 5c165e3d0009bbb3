//! Writes the merge's records straight into a trace archive (format.md
//! §13), holding what unpacking needs to give back the very trace file
//! [`crate::writer::TraceWriter`] would have written: its header, time
//! index and names.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use hmtt_format::archive::{ArchiveError, ArchiveOptions, ArchiveWriter};
use hmtt_format::indexed::{CommonHeader, IndexBuilder};
use hmtt_format::trace::{NameTable, TraceRecord, DEFAULT_INDEX_STRIDE, HEADER_LEN, RECORD_LEN};
use hmtt_format::Geometry;

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::merge::{merge, MergeOptions, RecordSink};
use crate::report::MergeReport;
use crate::writer::trace_header;

/// Merges `set` into a new archive at `path`, with the event `names`;
/// `progress` as for [`merge`]. Returns the report and the archive's size.
pub fn merge_to_archive(
    set: &CaptureSet,
    opts: &MergeOptions,
    archive: ArchiveOptions,
    path: &Path,
    names: &NameTable,
    progress: &mut dyn FnMut(u64),
) -> Result<(MergeReport, u64), MergeError> {
    let mut writer = ArchiveTraceWriter::create(path, archive)?;
    let report = merge(set, opts, &mut writer, progress)?;
    let size = writer.finish(&report, set.geometry, set.start_ns, names)?;
    Ok((report, size))
}

/// Streams a merged trace into an archive file.
pub struct ArchiveTraceWriter {
    path: PathBuf,
    archive: ArchiveWriter<BufWriter<File>>,
    index: IndexBuilder,
    first_tick: Option<u64>,
    last_tick: u64,
}

impl ArchiveTraceWriter {
    pub fn create(path: &Path, opts: ArchiveOptions) -> Result<ArchiveTraceWriter, MergeError> {
        let file = File::create(path).map_err(|e| MergeError::io(path, e))?;
        let archive = ArchiveWriter::new(BufWriter::with_capacity(1 << 20, file), opts)
            .map_err(|e| archive_error(path, e))?;
        Ok(ArchiveTraceWriter {
            path: path.to_path_buf(),
            archive,
            index: IndexBuilder::new(DEFAULT_INDEX_STRIDE),
            first_tick: None,
            last_tick: 0,
        })
    }

    pub fn records(&self) -> u64 {
        self.archive.records()
    }

    /// Writes the last block and the trailer; returns the archive's size.
    pub fn finish(
        self,
        report: &MergeReport,
        geometry: Option<Geometry>,
        start_ns: u64,
        names: &NameTable,
    ) -> Result<u64, MergeError> {
        let names_bytes = names.emit();
        let common = CommonHeader {
            first_tick: self.first_tick.unwrap_or(0),
            last_tick: self.last_tick,
            ..CommonHeader::finished(
                HEADER_LEN,
                RECORD_LEN,
                self.archive.records(),
                &self.index,
                names_bytes.len(),
            )
        };
        let header = trace_header(common, report, geometry, start_ns).emit();
        let mut tail = self.index.emit();
        tail.extend_from_slice(&names_bytes);
        let (_, summary) = self
            .archive
            .finish(&header, &tail)
            .map_err(|e| archive_error(&self.path, e))?;
        Ok(summary.bytes)
    }
}

fn archive_error(path: &Path, source: ArchiveError) -> MergeError {
    match source {
        ArchiveError::Io(e) => MergeError::io(path, e),
        source => MergeError::Archive {
            path: path.to_path_buf(),
            source,
        },
    }
}

impl RecordSink for ArchiveTraceWriter {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(());
        };
        self.first_tick.get_or_insert(first.tick);
        self.last_tick = last.tick;
        self.index.push_block(self.archive.records(), records);
        self.archive
            .write(records)
            .map_err(|e| archive_error(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::TraceWriter;
    use hmtt_format::archive::{unpack, ArchiveView};
    use hmtt_format::trace::RecordKind;

    #[test]
    fn unpacking_gives_the_trace_the_trace_writer_writes() {
        let dir = tempfile::tempdir().unwrap();
        let recs: Vec<_> = (0..20_000u64)
            .map(|i| match i % 500 {
                7 => TraceRecord::new(i * 3, 1, RecordKind::Tag { write: false }, 0x41),
                _ => TraceRecord::access(i * 3, (i % 2) as u8, i % 4 == 0, (i % 777) * 64),
            })
            .collect();
        let names = NameTable {
            names: vec![(0x41, "phase".into())],
        };
        let report = MergeReport::default();
        let trace_path = dir.path().join("t.hmtttrace");
        let mut t = TraceWriter::create(&trace_path).unwrap();
        let archive_path = dir.path().join("t.hmttz");
        let opts = ArchiveOptions {
            block_records: 3000,
            level: 3,
        };
        let mut a = ArchiveTraceWriter::create(&archive_path, opts).unwrap();
        for piece in recs.chunks(1234) {
            t.write(piece).unwrap();
            a.write(piece).unwrap();
        }
        t.finish(&report, None, 42, &names).unwrap();
        let size = a.finish(&report, None, 42, &names).unwrap();
        let archive = std::fs::read(&archive_path).unwrap();
        assert_eq!(archive.len() as u64, size);
        let view = ArchiveView::new_checked(&archive).unwrap();
        let mut back = Vec::new();
        unpack(&view, &mut back).unwrap();
        assert!(back == std::fs::read(&trace_path).unwrap());
    }

    #[test]
    fn a_full_disk_is_an_error() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let opts = ArchiveOptions {
            block_records: 1000,
            level: 1,
        };
        let mut a = ArchiveTraceWriter::create(full, opts).unwrap();
        let recs: Vec<_> = (0..100_000u64)
            .map(|i| TraceRecord::access(i, 0, false, i * 4096 * 64))
            .collect();
        let wrote = a.write(&recs);
        let e = match wrote {
            Err(e) => e,
            Ok(()) => a
                .finish(&MergeReport::default(), None, 0, &NameTable::default())
                .unwrap_err(),
        };
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }
}
