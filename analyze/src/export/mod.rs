//! Every text and columnar writer of traces, one file per format: the CSV
//! and the aligned table of `hmtt dump` and `hmtt replay --csv`, and the
//! formats of `hmtt export` for DRAM simulators (DRAMsim3, Ramulator 2),
//! gem5's packet trace, Parquet and Perfetto.
//!
//! A writer takes the records of a physical trace or of a virtual trace
//! one at a time as [`VirtualRecord`]s (a physical record is a
//! [`VirtualRecord::marker`] or an unowned reference) and holds at most a
//! bounded window of them, so traces larger than memory export in one pass.

pub mod csv;
pub mod dramsim3;
pub mod gem5;
pub mod parquet;
pub mod perfetto;
pub mod ramulator2;
pub mod table;
mod time;

use std::io::Write;

use hmtt_format::archive::AnyTrace;
use hmtt_format::events::EventNames;
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::{VirtualRecord, VtraceView};

use hmtt_merge::names::event_name;
use hmtt_merge::record_blocks::RecordBlocks;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("writing: {0}")]
    Io(#[from] std::io::Error),
    #[error("writing Parquet: {0}")]
    Parquet(#[from] ::parquet::errors::ParquetError),
    #[error("reading the trace: {0}")]
    Archive(#[from] hmtt_format::archive::ArchiveError),
    #[error("{0}")]
    Invalid(String),
}

/// Whether the records come from a physical (§11) or a virtual (§12) trace:
/// a virtual one has the source, pid, virtual address and miss columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    Physical,
    Virtual,
}

/// What every writer needs to know of the trace besides its records.
#[derive(Debug, Clone)]
pub struct TraceMeta {
    pub kind: TraceKind,
    /// Length of one tick in picoseconds (one DDR clock, tCK, on the board).
    pub tick_ps: u16,
    /// Tick of the first record: time 0 of the exports that count from it.
    pub first_tick: u64,
    /// User event names (the trace's name table, maybe with an events file).
    pub names: EventNames,
}

impl TraceMeta {
    /// Nanoseconds per tick; 0 when the trace holds no tick length.
    pub fn tick_ns(&self) -> f64 {
        hmtt_format::TickLength::of_ps(self.tick_ps)
            .map_or(0.0, hmtt_format::TickLength::ns_per_tick)
    }
    /// Picoseconds from the first record to `tick`.
    pub fn ps_since_start(&self, tick: u64) -> u64 {
        tick.saturating_sub(self.first_tick)
            .saturating_mul(u64::from(self.tick_ps))
    }
}

/// A format of `hmtt export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Dramsim3,
    Ramulator2,
    Gem5,
    Parquet,
    Perfetto,
}

/// The choices of an export besides its format.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// DRAMsim3 cycles: the memory clock period in ps the cycle column
    /// counts (default: the trace's tick, which is the traced DIMM's tCK).
    pub tck_ps: Option<u32>,
    /// Perfetto bandwidth counters: the width of one interval in ns.
    pub interval_ns: u64,
    /// Parquet: rows buffered per row group (bounds the writer's memory).
    pub row_group_rows: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            tck_ps: None,
            interval_ns: 10_000,
            row_group_rows: parquet::DEFAULT_ROW_GROUP_ROWS,
        }
    }
}

/// A writer of one format: takes records in trace order, then finishes.
pub trait RecordWriter {
    fn write(&mut self, r: &VirtualRecord) -> Result<(), ExportError>;
    /// The next records of a physical trace, the same as a
    /// [`VirtualRecord::marker`] each given to `write`; a writer with work
    /// to save per block overrides it.
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        for r in records {
            self.write(&VirtualRecord::marker(*r))?;
        }
        Ok(())
    }
    /// Flushes what is buffered and writes any trailer.
    fn finish(self: Box<Self>) -> Result<(), ExportError>;
}

/// The writer of `format` over `out`.
pub fn writer<W: Write + Send + 'static>(
    format: ExportFormat,
    meta: &TraceMeta,
    opts: &ExportOptions,
    out: W,
) -> Result<Box<dyn RecordWriter>, ExportError> {
    Ok(match format {
        ExportFormat::Csv => Box::new(csv::CsvWriter::new(out, meta.clone())?),
        ExportFormat::Dramsim3 => Box::new(dramsim3::Dramsim3Writer::new(out, meta, opts.tck_ps)?),
        ExportFormat::Ramulator2 => Box::new(ramulator2::Ramulator2Writer::new(out)),
        ExportFormat::Gem5 => Box::new(gem5::Gem5Writer::new(out, meta)?),
        ExportFormat::Parquet => Box::new(parquet::ParquetWriter::new(
            out,
            meta.clone(),
            opts.row_group_rows,
        )?),
        ExportFormat::Perfetto => Box::new(perfetto::PerfettoWriter::new(
            out,
            meta.clone(),
            opts.interval_ns,
        )?),
    })
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Records given to the writer (every record of the trace).
    pub records: u64,
    /// Of them, memory references.
    pub accesses: u64,
}

/// Exports every record of a physical trace (or its archive).
pub fn export_trace(
    view: &AnyTrace<'_>,
    names: EventNames,
    w: impl FnOnce(&TraceMeta) -> Result<Box<dyn RecordWriter>, ExportError>,
) -> Result<ExportSummary, ExportError> {
    let header = view.header();
    let meta = TraceMeta {
        kind: TraceKind::Physical,
        tick_ps: header.common.tick_ps,
        first_tick: header.common.first_tick,
        names,
    };
    let mut out = w(&meta)?;
    let mut sum = ExportSummary::default();
    let mut blocks = RecordBlocks::new(view);
    while let Some(block) = blocks.next() {
        let block = block?;
        sum.records += block.len() as u64;
        sum.accesses += block.iter().filter(|r| r.is_access()).count() as u64;
        out.write_block(block)?;
    }
    out.finish()?;
    Ok(sum)
}

/// Exports every record of a virtual trace.
pub fn export_vtrace(
    view: &VtraceView<'_>,
    names: EventNames,
    w: impl FnOnce(&TraceMeta) -> Result<Box<dyn RecordWriter>, ExportError>,
) -> Result<ExportSummary, ExportError> {
    let header = view.header();
    let meta = TraceMeta {
        kind: TraceKind::Virtual,
        tick_ps: header.common.tick_ps,
        first_tick: header.common.first_tick,
        names,
    };
    let mut out = w(&meta)?;
    let mut sum = ExportSummary::default();
    for v in view.records() {
        sum.records += 1;
        sum.accesses += u64::from(v.is_access());
        out.write(&v)?;
    }
    out.finish()?;
    Ok(sum)
}

/// `R`, `W` or empty: the direction of a reference or of a tag.
pub(crate) fn rw_cell(r: &TraceRecord) -> &'static str {
    match r.kind() {
        RecordKind::Read | RecordKind::Tag { write: false } => "R",
        RecordKind::Write | RecordKind::Tag { write: true } => "W",
        _ => "",
    }
}

/// `cpu`, `dma`, or empty for what is not a reference.
pub(crate) fn source_cell(v: &VirtualRecord) -> &'static str {
    match (v.is_access(), v.is_dma()) {
        (false, _) => "",
        (true, true) => "dma",
        (true, false) => "cpu",
    }
}

/// The event column: the event's name for a tag or a command, the count
/// for a loss or a gap, empty for a reference.
pub(crate) fn event_cell(r: &TraceRecord, names: &EventNames) -> Option<String> {
    match r.kind() {
        RecordKind::Tag { .. } | RecordKind::Cmd => Some(event_name(r.value() as u32, names)),
        RecordKind::Lost => Some(format!("{} references", r.value())),
        RecordKind::GapBegin | RecordKind::GapEnd => Some(format!("{} packets missing", r.value())),
        RecordKind::Read | RecordKind::Write | RecordKind::Reserved(_) => None,
    }
}
