//! Writes the virtual trace file (format.md §12) as replayed records stream
//! in, on the indexed-file writer ([`crate::indexed_writer`]), and fills in
//! the virtual trace's own header fields at the end.

use std::path::Path;

use hmtt_format::events::EventNames;
use hmtt_format::indexed::CommonHeader;
use hmtt_format::vtrace::{
    VirtualRecord, VtraceHeader, DEFAULT_INDEX_STRIDE, FLAG_COMPLETE, FLAG_SELECTION,
};

use super::ReplayReport;
use crate::error::MergeError;
use crate::indexed_writer::IndexedWriter;

/// What the header says besides the records: taken from the physical
/// trace and the replay.
#[derive(Debug, Clone, Default)]
pub struct VtraceInfo {
    pub start_ns: u64,
    pub tick_ps: u16,
    pub boards: u8,
    /// A view selected the references (not all of the trace's are here).
    pub selection: bool,
    pub names: EventNames,
}

/// Streams a virtual trace file to disk.
pub struct VtraceWriter(IndexedWriter<VirtualRecord>);

impl VtraceWriter {
    pub fn create(path: &Path) -> Result<VtraceWriter, MergeError> {
        Ok(VtraceWriter(IndexedWriter::create(
            path,
            DEFAULT_INDEX_STRIDE,
        )?))
    }

    pub fn records(&self) -> u64 {
        self.0.records()
    }

    /// The tick length and start time, before the first records: an
    /// unfinished virtual trace's header keeps them.
    pub fn announce(&mut self, tick_ps: u16, start_ns: u64) {
        self.0.announce(tick_ps, start_ns);
    }

    /// Appends records (in tick order).
    pub fn write(&mut self, records: &[VirtualRecord]) -> Result<(), MergeError> {
        self.0.write(records)
    }

    /// Writes the index, the names and the header; returns the file's size.
    pub fn finish(self, info: &VtraceInfo, report: &ReplayReport) -> Result<u64, MergeError> {
        self.0.finish(&info.names, |common| {
            VtraceHeader {
                common: CommonHeader {
                    flags: FLAG_COMPLETE | if info.selection { FLAG_SELECTION } else { 0 },
                    start_ns: info.start_ns,
                    tick_ps: info.tick_ps,
                    ..common
                },
                boards: info.boards,
                references: report.references,
                translated: report.translated,
                log_placed: report.tags_placed,
                log_unplaced: report.unplaced_count,
            }
            .emit()
            .to_vec()
        })
    }
}
