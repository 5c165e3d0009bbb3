//! Writes the native trace file (format.md §11) as records stream in: a
//! placeholder header, the records in the merge's large blocks, then the time
//! index and the names, and finally the real header. A writer that dies
//! leaves a file without FLAG_COMPLETE that readers still read.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use hmtt_format::trace::{
    records_as_bytes, IndexBuilder, NameTable, TraceHeader, TraceRecord, DEFAULT_INDEX_STRIDE,
    FLAG_COMPLETE, HEADER_LEN, RECORD_LEN,
};
use hmtt_format::Geometry;

use crate::error::MergeError;
use crate::merge::RecordSink;
use crate::report::MergeReport;

/// Streams a trace file to disk.
pub struct TraceWriter {
    path: PathBuf,
    /// Records go from the merge's blocks straight to the file: on
    /// little-endian machines their memory is the file layout.
    out: File,
    /// Byte conversion on big-endian machines only.
    staging: Vec<u8>,
    index: IndexBuilder,
    count: u64,
    first_tick: Option<u64>,
    last_tick: u64,
}

impl TraceWriter {
    pub fn create(path: &Path) -> Result<TraceWriter, MergeError> {
        let mut out = File::create(path).map_err(|e| MergeError::io(path, e))?;
        out.write_all(&TraceHeader::default().emit())
            .map_err(|e| MergeError::io(path, e))?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out,
            staging: Vec::new(),
            index: IndexBuilder::new(DEFAULT_INDEX_STRIDE),
            count: 0,
            first_tick: None,
            last_tick: 0,
        })
    }

    pub fn records(&self) -> u64 {
        self.count
    }

    /// Writes the index, the names and the header; returns the file's size.
    pub fn finish(
        mut self,
        report: &MergeReport,
        geometry: Option<Geometry>,
        start_ns: u64,
        names: &NameTable,
    ) -> Result<u64, MergeError> {
        let io = |e| MergeError::io(&self.path, e);
        let index = self.index.emit();
        let names_bytes = names.emit();
        let index_offset = (HEADER_LEN as u64) + self.count * RECORD_LEN as u64;
        self.out.write_all(&index).map_err(io)?;
        self.out.write_all(&names_bytes).map_err(io)?;
        let header = TraceHeader {
            flags: FLAG_COMPLETE,
            record_count: self.count,
            index_offset,
            index_count: self.index.entries().len() as u64,
            index_stride: self.index.stride(),
            first_tick: self.first_tick.unwrap_or(0),
            last_tick: self.last_tick,
            start_ns,
            tick_ps: report.tick_ps,
            geometry_bytes: geometry.map_or((0, 0, 0), |g| g.header_bytes()),
            boards: report.boards.len().min(255) as u8,
            names_offset: index_offset + index.len() as u64,
            names_len: names_bytes.len() as u64,
            packets: report.packets(),
            packets_missing: report.packets_missing(),
            packets_duplicate: report.packets_duplicate(),
            packets_rejected: report.packets_rejected(),
        };
        let mut f = self.out;
        f.seek(SeekFrom::Start(0)).map_err(io)?;
        f.write_all(&header.emit()).map_err(io)?;
        f.sync_data().ok();
        Ok(header.names_offset + header.names_len)
    }
}

impl RecordSink for TraceWriter {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Ok(());
        };
        self.first_tick.get_or_insert(first.tick);
        self.last_tick = last.tick;
        self.index.push_block(self.count, records);
        self.count += records.len() as u64;
        let bytes = records_as_bytes(records, &mut self.staging);
        self.out
            .write_all(bytes)
            .map_err(|e| MergeError::io(&self.path, e))
    }
}
