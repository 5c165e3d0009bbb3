//! Apache Parquet: one row per record, typed columns, written in row
//! groups of a bounded number of rows (the writer holds one group), so a
//! trace larger than memory exports in one pass and DuckDB, DataFusion or
//! Spark query it in place. Columns are zstd-compressed, after the
//! encodings of `docs/format.md` §14 (deltas for `tick` and `board`, byte
//! streams for `time_ns`, dictionaries for the strings), with statistics
//! per row group. [`PartitionedParquetWriter`] writes the same files as a
//! Hive-style dataset, one directory per window of traced time.
//!
//! Columns (`physical` and `virtual` traces alike, then the virtual ones):
//!
//! | column | type | value |
//! |---|---|---|
//! | `tick` | uint64 | board ticks since the boards' tick 0 |
//! | `time_ns` | double | `tick` in ns |
//! | `board` | uint8 (int32) | board id |
//! | `kind` | string | READ, WRITE, TAG, TAG_W, CMD, LOST, GAP_BEGIN, GAP_END, RESERVED |
//! | `pa` | uint64, null unless a reference | physical byte address of the line |
//! | `is_write` | bool, null unless a reference or a tag | written (`W` of the CSV) |
//! | `value` | uint64, null for a reference | event index (TAG, CMD), count (LOST, gaps) |
//! | `event` | string, null unless TAG or CMD | the event's name |
//! | `source` | string, null unless a reference (virtual) | `cpu` or `dma` |
//! | `pid` | uint32, null unless translated (virtual) | process id |
//! | `va` | uint64, null unless translated (virtual) | virtual byte address |
//! | `miss` | string, null unless untranslated (virtual) | `unmapped`, `kernel`, `dma` |

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::{ExportError, RecordWriter, TraceKind, TraceMeta};
use crate::names::event_name;

/// Rows of one row group unless told otherwise (about 50 MB buffered).
pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 19;

/// Rows the column writers take between their page-size checks (the
/// crate's default, 1024, costs 2-3 % more CPU time).
const WRITE_BATCH_ROWS: usize = 8192;

/// Rows of `kind` given to its column writer at a time.
const KIND_SLICE: usize = 8192;

const PHYSICAL_COLUMNS: &str = "
    required int64 tick (INTEGER(64,false));
    required double time_ns;
    required int32 board (INTEGER(8,false));
    required binary kind (STRING);
    optional int64 pa (INTEGER(64,false));
    optional boolean is_write;
    optional int64 value (INTEGER(64,false));
    optional binary event (STRING);";

const VIRTUAL_COLUMNS: &str = "
    optional binary source (STRING);
    optional int32 pid (INTEGER(32,false));
    optional int64 va (INTEGER(64,false));
    optional binary miss (STRING);";

/// One column's values of the row group being filled; an optional
/// column keeps its definition levels (1 present, 0 null) beside them.
#[derive(Default)]
struct Col<T> {
    values: Vec<T>,
    defined: Vec<i16>,
}

impl<T> Col<T> {
    fn push(&mut self, v: Option<T>) {
        self.defined.push(i16::from(v.is_some()));
        if let Some(v) = v {
            self.values.push(v);
        }
    }
    fn clear(&mut self) {
        self.values.clear();
        self.defined.clear();
    }
}

#[derive(Default)]
struct Group {
    rows: usize,
    tick: Vec<i64>,
    time_ns: Vec<f64>,
    board: Vec<i32>,
    /// The kind bits; their names are made a slice at a time when written.
    kind: Vec<u8>,
    pa: Col<i64>,
    is_write: Col<bool>,
    value: Col<i64>,
    event: Col<ByteArray>,
    source: Col<ByteArray>,
    pid: Col<i32>,
    va: Col<i64>,
    miss: Col<ByteArray>,
}

pub struct ParquetWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    meta: TraceMeta,
    tick_ns: f64,
    group_rows: usize,
    group: Group,
    /// The kind names by kind bits, shared by every row (no allocation).
    kind_names: Vec<ByteArray>,
    /// The names of a slice of `kind`, reused (a slice stays in cache).
    kind_slice: Vec<ByteArray>,
    cpu: ByteArray,
    dma: ByteArray,
}

impl<W: Write + Send> ParquetWriter<W> {
    pub fn new(out: W, meta: TraceMeta, group_rows: usize) -> Result<Self, ExportError> {
        let mut columns = PHYSICAL_COLUMNS.to_string();
        if meta.kind == TraceKind::Virtual {
            columns.push_str(VIRTUAL_COLUMNS);
        }
        let schema = Arc::new(parse_message_type(&format!(
            "message hmtt_trace {{{columns}\n}}"
        ))?);
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_max_row_group_size(group_rows.max(1))
            .set_created_by(format!("hmtt {}", env!("CARGO_PKG_VERSION")));
        // Times and addresses hardly repeat: a dictionary only costs there.
        for column in ["tick", "time_ns", "pa", "va", "board"] {
            props = props.set_column_dictionary_enabled(ColumnPath::from(column), false);
        }
        // Ticks rise by small steps and the board is a run of one value:
        // their deltas pack into a few bits a row (or none) before zstd
        // sees them. time_ns is a multiple of the tick length, so its
        // doubles' low mantissa bytes are zero: split into byte streams,
        // those are runs zstd passes at once.
        for (column, encoding) in [
            ("tick", Encoding::DELTA_BINARY_PACKED),
            ("board", Encoding::DELTA_BINARY_PACKED),
            ("time_ns", Encoding::BYTE_STREAM_SPLIT),
        ] {
            props = props.set_column_encoding(ColumnPath::from(column), encoding);
        }
        // Statistics per column chunk (a row group's min and max), not per
        // page, for the columns a query filters on (time, board, address);
        // none for `kind`, `is_write`, `value` and `event`, whose min and
        // max a reader gains little from: their comparisons and level
        // histograms cost a sixth of the export for `kind`, 3 % for the
        // other three (bench/README.md, Export).
        props = props.set_statistics_enabled(EnabledStatistics::Chunk);
        for column in ["kind", "is_write", "value", "event"] {
            props = props
                .set_column_statistics_enabled(ColumnPath::from(column), EnabledStatistics::None);
        }
        props = props.set_write_batch_size(WRITE_BATCH_ROWS);
        let props = props.build();
        let file = SerializedFileWriter::new(out, schema, Arc::new(props))?;
        // Static bytes: a clone per row copies a pointer, where a
        // reference-counted buffer's clone and drop are two atomic updates.
        let kind_names = (0..16u8)
            .map(|b| {
                ByteArray::from(bytes::Bytes::from_static(
                    RecordKind::from_bits(b).name().as_bytes(),
                ))
            })
            .collect();
        Ok(ParquetWriter {
            file,
            tick_ns: meta.tick_ns(),
            meta,
            group_rows: group_rows.max(1),
            group: Group::default(),
            kind_names,
            kind_slice: Vec::with_capacity(KIND_SLICE),
            cpu: ByteArray::from("cpu"),
            dma: ByteArray::from("dma"),
        })
    }

    fn push(&mut self, v: &VirtualRecord) {
        let r: TraceRecord = v.physical();
        let g = &mut self.group;
        let kind = r.kind();
        let access = r.is_access();
        g.rows += 1;
        g.tick.push(r.tick as i64);
        g.time_ns.push(r.tick as f64 * self.tick_ns);
        g.board.push(i32::from(r.board()));
        g.kind.push(kind.bits());
        g.pa.push(access.then_some(r.pa() as i64));
        g.is_write.push(match kind {
            RecordKind::Read | RecordKind::Tag { write: false } => Some(false),
            RecordKind::Write | RecordKind::Tag { write: true } => Some(true),
            _ => None,
        });
        g.value.push((!access).then_some(r.value() as i64));
        g.event.push(match kind {
            RecordKind::Tag { .. } | RecordKind::Cmd => Some(ByteArray::from(
                event_name(r.value() as u32, &self.meta.names).into_bytes(),
            )),
            _ => None,
        });
        if self.meta.kind == TraceKind::Virtual {
            g.source.push(access.then(|| {
                if v.is_dma() {
                    self.dma.clone()
                } else {
                    self.cpu.clone()
                }
            }));
            let owner = v.owner();
            g.pid.push(owner.map(|(p, _)| p as i32));
            g.va.push(owner.map(|(_, a)| a as i64));
            g.miss.push(v.miss().map(|m| ByteArray::from(m.name())));
        }
    }

    /// Appends the rows of records of a physical trace, column by column.
    fn push_physical(&mut self, records: &[TraceRecord]) {
        let g = &mut self.group;
        let tick_ns = self.tick_ns;
        g.rows += records.len();
        g.tick.extend(records.iter().map(|r| r.tick as i64));
        g.time_ns
            .extend(records.iter().map(|r| r.tick as f64 * tick_ns));
        g.board.extend(records.iter().map(|r| i32::from(r.board())));
        g.kind.extend(records.iter().map(|r| r.kind().bits()));
        g.pa.defined
            .extend(records.iter().map(|r| i16::from(r.is_access())));
        g.pa.values.extend(
            records
                .iter()
                .filter(|r| r.is_access())
                .map(|r| r.pa() as i64),
        );
        // READ, WRITE, TAG and TAG_W (kinds 0 to 3) have a direction: the
        // kind's low bit.
        let directed = |r: &&TraceRecord| r.kind().bits() < 4;
        g.is_write
            .defined
            .extend(records.iter().map(|r| i16::from(directed(&r))));
        g.is_write.values.extend(
            records
                .iter()
                .filter(directed)
                .map(|r| r.kind().bits() & 1 == 1),
        );
        g.value
            .defined
            .extend(records.iter().map(|r| i16::from(!r.is_access())));
        g.value.values.extend(
            records
                .iter()
                .filter(|r| !r.is_access())
                .map(|r| r.value() as i64),
        );
        for r in records {
            g.event.push(match r.kind() {
                RecordKind::Tag { .. } | RecordKind::Cmd => Some(ByteArray::from(
                    event_name(r.value() as u32, &self.meta.names).into_bytes(),
                )),
                _ => None,
            });
        }
    }

    /// Writes the buffered rows as one row group.
    fn flush_group(&mut self) -> Result<(), ExportError> {
        if self.group.rows == 0 {
            return Ok(());
        }
        let g = &mut self.group;
        let mut rg = self.file.next_row_group()?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column()? {
            match i {
                0 => col.typed::<Int64Type>().write_batch(&g.tick, None, None)?,
                1 => col
                    .typed::<DoubleType>()
                    .write_batch(&g.time_ns, None, None)?,
                2 => col.typed::<Int32Type>().write_batch(&g.board, None, None)?,
                3 => {
                    let col = col.typed::<ByteArrayType>();
                    for bits in g.kind.chunks(KIND_SLICE) {
                        self.kind_slice.clear();
                        self.kind_slice.extend(
                            bits.iter()
                                .map(|&b| self.kind_names[usize::from(b)].clone()),
                        );
                        col.write_batch(&self.kind_slice, None, None)?;
                    }
                    0
                }
                4 => {
                    col.typed::<Int64Type>()
                        .write_batch(&g.pa.values, Some(&g.pa.defined), None)?
                }
                5 => col.typed::<BoolType>().write_batch(
                    &g.is_write.values,
                    Some(&g.is_write.defined),
                    None,
                )?,
                6 => col.typed::<Int64Type>().write_batch(
                    &g.value.values,
                    Some(&g.value.defined),
                    None,
                )?,
                7 => col.typed::<ByteArrayType>().write_batch(
                    &g.event.values,
                    Some(&g.event.defined),
                    None,
                )?,
                8 => col.typed::<ByteArrayType>().write_batch(
                    &g.source.values,
                    Some(&g.source.defined),
                    None,
                )?,
                9 => col.typed::<Int32Type>().write_batch(
                    &g.pid.values,
                    Some(&g.pid.defined),
                    None,
                )?,
                10 => {
                    col.typed::<Int64Type>()
                        .write_batch(&g.va.values, Some(&g.va.defined), None)?
                }
                11 => col.typed::<ByteArrayType>().write_batch(
                    &g.miss.values,
                    Some(&g.miss.defined),
                    None,
                )?,
                _ => unreachable!("the schema has at most 12 columns"),
            };
            col.close()?;
            i += 1;
        }
        rg.close()?;
        g.rows = 0;
        g.tick.clear();
        g.time_ns.clear();
        g.board.clear();
        g.kind.clear();
        g.pa.clear();
        g.is_write.clear();
        g.value.clear();
        g.event.clear();
        g.source.clear();
        g.pid.clear();
        g.va.clear();
        g.miss.clear();
        Ok(())
    }
}

impl<W: Write + Send> RecordWriter for ParquetWriter<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        self.push(v);
        if self.group.rows >= self.group_rows {
            self.flush_group()?;
        }
        Ok(())
    }
    fn write_block(&mut self, mut records: &[TraceRecord]) -> Result<(), ExportError> {
        if self.meta.kind == TraceKind::Virtual {
            for r in records {
                self.write(&VirtualRecord::marker(*r))?;
            }
            return Ok(());
        }
        while !records.is_empty() {
            let room = self.group_rows - self.group.rows;
            let (now, rest) = records.split_at(room.min(records.len()));
            self.push_physical(now);
            if self.group.rows >= self.group_rows {
                self.flush_group()?;
            }
            records = rest;
        }
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), ExportError> {
        self.close()?;
        Ok(())
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Writes the last row group and the footer; the output, flushed.
    fn close(mut self) -> Result<W, ExportError> {
        self.flush_group()?;
        let mut out = self.file.into_inner()?;
        out.flush()?;
        Ok(out)
    }
}

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
                    "a record at tick {tick} comes after the records of a later time window                      ({} > {index}): the trace is not in time order",
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
