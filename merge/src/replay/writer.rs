//! Writes the virtual trace file (format.md §12) as replayed records stream
//! in: a placeholder header, the records through a large buffer, then the
//! time index and the names, and finally the real header. A writer that dies
//! leaves a file without FLAG_COMPLETE that readers still read.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hmtt_format::indexed::CommonHeader;
use hmtt_format::trace::NameTable;
use hmtt_format::vtrace::{
    IndexBuilder, VirtualRecord, VtraceHeader, DEFAULT_INDEX_STRIDE, FLAG_COMPLETE, FLAG_SELECTION,
    HEADER_LEN, RECORD_LEN,
};

use super::ReplayReport;
use crate::error::MergeError;

/// Bytes gathered before one write to the file.
const STAGING_BYTES: usize = 4 << 20;

/// What the header says besides the records: taken from the physical
/// trace and the replay.
#[derive(Debug, Clone, Default)]
pub struct VtraceInfo {
    pub start_ns: u64,
    pub tick_ps: u16,
    pub boards: u8,
    /// A view selected the references (not all of the trace's are here).
    pub selection: bool,
    pub names: NameTable,
}

/// Streams a virtual trace file to disk.
pub struct VtraceWriter {
    path: PathBuf,
    out: File,
    staging: Vec<u8>,
    index: IndexBuilder,
    count: u64,
    first_tick: Option<u64>,
    last_tick: u64,
}

impl VtraceWriter {
    pub fn create(path: &Path) -> Result<VtraceWriter, MergeError> {
        let mut out = File::create(path).map_err(|e| MergeError::io(path, e))?;
        out.write_all(&VtraceHeader::default().emit())
            .map_err(|e| MergeError::io(path, e))?;
        Ok(VtraceWriter {
            path: path.to_path_buf(),
            out,
            staging: Vec::with_capacity(STAGING_BYTES + 64 * 1024),
            index: IndexBuilder::new(DEFAULT_INDEX_STRIDE),
            count: 0,
            first_tick: None,
            last_tick: 0,
        })
    }

    pub fn records(&self) -> u64 {
        self.count
    }

    /// Appends records (in tick order).
    pub fn write(&mut self, records: &[VirtualRecord]) -> Result<(), MergeError> {
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(());
        };
        self.first_tick.get_or_insert(first.tick);
        self.last_tick = last.tick;
        self.index.push_block(self.count, records);
        self.count += records.len() as u64;
        let at = self.staging.len();
        self.staging.resize(at + records.len() * RECORD_LEN, 0);
        for (chunk, r) in self.staging[at..].chunks_exact_mut(RECORD_LEN).zip(records) {
            r.emit(chunk);
        }
        if self.staging.len() >= STAGING_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), MergeError> {
        self.out
            .write_all(&self.staging)
            .map_err(|e| MergeError::io(&self.path, e))?;
        self.staging.clear();
        Ok(())
    }

    /// Writes the index, the names and the header; returns the file's size.
    pub fn finish(mut self, info: &VtraceInfo, report: &ReplayReport) -> Result<u64, MergeError> {
        self.flush()?;
        let io = |e| MergeError::io(&self.path, e);
        let index = self.index.emit();
        let names_bytes = info.names.emit();
        self.out.write_all(&index).map_err(io)?;
        self.out.write_all(&names_bytes).map_err(io)?;
        let header = VtraceHeader {
            common: CommonHeader {
                flags: FLAG_COMPLETE | if info.selection { FLAG_SELECTION } else { 0 },
                first_tick: self.first_tick.unwrap_or(0),
                last_tick: self.last_tick,
                start_ns: info.start_ns,
                tick_ps: info.tick_ps,
                ..CommonHeader::finished(
                    HEADER_LEN,
                    RECORD_LEN,
                    self.count,
                    &self.index,
                    names_bytes.len(),
                )
            },
            boards: info.boards,
            references: report.references,
            translated: report.translated,
            log_placed: report.tags_placed,
            log_unplaced: report.unplaced_count,
        };
        let mut f = self.out;
        f.seek(SeekFrom::Start(0)).map_err(io)?;
        f.write_all(&header.emit()).map_err(io)?;
        f.sync_data().ok();
        Ok(header.common.names_offset + header.common.names_len)
    }
}
