//! Writes the merge's records straight into a trace archive (format.md
//! §13), holding what unpacking needs to give back the very trace file
//! [`crate::writer::TraceWriter`] would have written: its header, time
//! index and names.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use hmtt_format::archive::{ArchiveError, ArchiveOptions, ArchiveWriter};
use hmtt_format::events::EventNames;
use hmtt_format::trace::TraceRecord;

use hmtt_format::atomic_file::AtomicFile;

use crate::error::MergeError;
use crate::indexed_writer::{FinishedParts, RecordStore};
use crate::input::CaptureSet;
use crate::merge::{merge, MergeOptions};
use crate::report::MergeReport;
use crate::writer::MergedTraceWriter;

/// Merges `set` into a new archive at `path`, with the event `names`;
/// `progress` as for [`merge`]. Returns the report and the archive's size.
pub fn merge_to_archive(
    set: &CaptureSet,
    opts: &MergeOptions,
    archive: ArchiveOptions,
    path: &Path,
    names: &EventNames,
    progress: &mut dyn FnMut(u64),
) -> Result<(MergeReport, u64), MergeError> {
    let mut writer = ArchiveTraceWriter::create(path, archive)?;
    let report = merge(set, opts, &mut writer, progress)?;
    let size = writer.finish(&report, set.geometry, set.start_ns, names)?;
    Ok((report, size))
}

/// Streams a merged trace into an archive file.
pub type ArchiveTraceWriter = MergedTraceWriter<ArchiveStore>;

/// An archive file as the store of a trace's records: the header, index
/// and names go into its trailer (format.md §13).
pub struct ArchiveStore {
    path: PathBuf,
    /// The archive under its temporary name until it is finished.
    out: AtomicFile,
    archive: ArchiveWriter<BufWriter<File>>,
}

impl ArchiveTraceWriter {
    pub fn create(path: &Path, opts: ArchiveOptions) -> Result<ArchiveTraceWriter, MergeError> {
        let out = AtomicFile::create(path).map_err(|e| MergeError::io(path, e))?;
        let file = out
            .file()
            .try_clone()
            .map_err(|e| MergeError::io(path, e))?;
        let archive = ArchiveWriter::new(BufWriter::with_capacity(1 << 20, file), opts)
            .map_err(|e| archive_error(path, e))?;
        Ok(MergedTraceWriter::over(ArchiveStore {
            path: path.to_path_buf(),
            out,
            archive,
        }))
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

impl RecordStore<TraceRecord> for ArchiveStore {
    fn put(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.archive
            .write(records)
            .map_err(|e| archive_error(&self.path, e))
    }

    fn keep(&mut self, _: usize) -> Result<&mut [TraceRecord], MergeError> {
        Err(MergeError::io(
            &self.path,
            std::io::Error::other("an archive builds no records in place"),
        ))
    }

    fn finish(self, parts: FinishedParts) -> Result<u64, MergeError> {
        let mut tail = parts.index;
        tail.extend_from_slice(&parts.names);
        tail.extend_from_slice(&parts.checksums);
        let (file, summary) = self
            .archive
            .finish(&parts.header, &tail)
            .map_err(|e| archive_error(&self.path, e))?;
        let io = |e| MergeError::io(&self.path, e);
        file.into_inner().map_err(|e| io(e.into_error()))?;
        self.out.commit().map_err(io)?;
        Ok(summary.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::RecordSink;
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
        let names = EventNames::from_iter(vec![(0x41, "phase".into())]);
        let report = MergeReport::default();
        let trace_path = dir.path().join("t.hmtttrace");
        let mut t = TraceWriter::create(&trace_path).unwrap();
        let archive_path = dir.path().join("t.hmttz");
        let opts = ArchiveOptions {
            block_records: 3000,
            ..ArchiveOptions::default()
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
        let opts = ArchiveOptions::with_level(1000, 1);
        let mut a = ArchiveTraceWriter::create(full, opts).unwrap();
        let recs: Vec<_> = (0..100_000u64)
            .map(|i| TraceRecord::access(i, 0, false, i * 4096 * 64))
            .collect();
        let wrote = a.write(&recs);
        let e = match wrote {
            Err(e) => e,
            Ok(()) => a
                .finish(&MergeReport::default(), None, 0, &EventNames::default())
                .unwrap_err(),
        };
        assert!(e.to_string().contains("/dev/full"), "{e}");
    }
}
