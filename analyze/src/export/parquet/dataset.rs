//! The Hive-style dataset of `hmtt export --partition-ms`: one
//! [`ParquetWriter`] file per window of traced time.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use hmtt_format::trace::TraceRecord;
use hmtt_format::vtrace::VirtualRecord;

use super::ParquetWriter;
use crate::export::{ExportError, RecordWriter, TraceMeta};

/// The partition column of a partitioned export (a Hive-style directory
/// `time_window=K`).
pub const PARTITION_COLUMN: &str = "time_window";

/// A Hive-style Parquet dataset (`hmtt export --partition-ms`): one
/// directory `time_window=K` per window of `window_ps` of traced time,
/// holding `part-00000.parquet`, a file of [`ParquetWriter`]'s schema with
/// the records whose `time_ns` is in `[K·window, (K+1)·window)`. The
/// records come in time order, so one file is open at a time (memory: one
/// row group), and each is closed and synced when the next window starts.
pub struct PartitionedParquetWriter {
    dir: PathBuf,
    meta: TraceMeta,
    group_rows: usize,
    window_ps: u128,
    /// The window being written: its index, first and past-the-end ticks.
    current: Option<OpenWindow>,
}

struct OpenWindow {
    index: u64,
    start_tick: u64,
    end_tick: u64,
    file: ParquetWriter<BufWriter<File>>,
}

impl PartitionedParquetWriter {
    /// A dataset in the directory `dir` (which exists and is empty: the
    /// temporary directory of an atomic output), windows of `window_ps`
    /// picoseconds (at least 1).
    pub fn new(
        dir: &Path,
        meta: TraceMeta,
        group_rows: usize,
        window_ps: u64,
    ) -> Result<Self, ExportError> {
        if window_ps == 0 {
            return Err(ExportError::Invalid(
                "a partition window is at least 1 ps long".into(),
            ));
        }
        Ok(PartitionedParquetWriter {
            dir: dir.to_path_buf(),
            meta,
            group_rows,
            window_ps: u128::from(window_ps),
            current: None,
        })
    }

    /// The window of a record at `tick`: all in window 0 when the trace
    /// holds no tick length.
    fn window_of(&self, tick: u64) -> u64 {
        let ps = u128::from(tick) * u128::from(self.meta.tick_ps);
        u64::try_from(ps / self.window_ps).unwrap_or(u64::MAX)
    }

    /// The first tick of window `index` (rounded up), saturating.
    fn first_tick_of(&self, index: u64) -> u64 {
        if self.meta.tick_ps == 0 {
            return if index == 0 { 0 } else { u64::MAX };
        }
        let ps = u128::from(index) * self.window_ps;
        u64::try_from(ps.div_ceil(u128::from(self.meta.tick_ps))).unwrap_or(u64::MAX)
    }

    /// The open window that takes a record at `tick`, opening it (and
    /// closing the one before) when it is a later one.
    fn window_for(&mut self, tick: u64) -> Result<&mut OpenWindow, ExportError> {
        let index = self.window_of(tick);
        match &self.current {
            Some(w) if w.index == index => {}
            Some(w) if w.index > index => {
                return Err(ExportError::Invalid(format!(
                    "a record at tick {tick} comes after the records of a later time window \
                     ({} > {index}): the trace is not in time order",
                    w.index
                )))
            }
            _ => {
                self.close_current()?;
                self.open(index)?;
            }
        }
        Ok(self.current.as_mut().expect("a window was opened"))
    }

    fn open(&mut self, index: u64) -> Result<(), ExportError> {
        let dir = self.dir.join(format!("{PARTITION_COLUMN}={index}"));
        std::fs::create_dir(&dir)?;
        let out = BufWriter::with_capacity(1 << 20, File::create(dir.join("part-00000.parquet"))?);
        self.current = Some(OpenWindow {
            index,
            start_tick: self.first_tick_of(index),
            end_tick: self.first_tick_of(index.saturating_add(1)),
            file: ParquetWriter::new(out, self.meta.clone(), self.group_rows)?,
        });
        Ok(())
    }

    fn close_current(&mut self) -> Result<(), ExportError> {
        if let Some(w) = self.current.take() {
            let file = w.file.close()?.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
        }
        Ok(())
    }
}

impl RecordWriter for PartitionedParquetWriter {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        self.window_for(v.physical().tick)?.file.write(v)
    }
    fn write_block(&mut self, mut records: &[TraceRecord]) -> Result<(), ExportError> {
        while let Some(first) = records.first() {
            let w = self.window_for(first.tick)?;
            let (start, end) = (w.start_tick, w.end_tick);
            let run = records
                .iter()
                .position(|r| r.tick < start || r.tick >= end)
                .unwrap_or(records.len());
            w.file.write_block(&records[..run])?;
            records = &records[run..];
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        // An empty trace still makes a dataset with the schema: one empty
        // file, which readers such as Spark need to infer it.
        if self.current.is_none() && std::fs::read_dir(&self.dir)?.next().is_none() {
            self.open(0)?;
        }
        self.close_current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::TraceKind;
    use hmtt_format::events::EventNames;
    use hmtt_format::trace::RecordKind;

    /// A record of an earlier window than the one being written stops the
    /// export with a message naming both windows.
    #[test]
    fn a_record_of_an_earlier_window_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let meta = TraceMeta {
            kind: TraceKind::Physical,
            tick_ps: 1000,
            first_tick: 0,
            names: EventNames::default(),
        };
        // Windows of 10 ticks.
        let mut w = PartitionedParquetWriter::new(dir.path(), meta, 16, 10_000).unwrap();
        let at = |tick| TraceRecord::new(tick, 0, RecordKind::Lost, 1);
        w.write_block(&[at(25)]).unwrap();
        let err = w.write_block(&[at(5)]).unwrap_err().to_string();
        assert_eq!(
            err,
            "a record at tick 5 comes after the records of a later time window (2 > 0): \
             the trace is not in time order"
        );
    }
}
