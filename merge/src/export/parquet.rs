//! Apache Parquet: one row per record, typed columns, written in row
//! groups of a bounded number of rows (the writer holds one group), so a
//! trace larger than memory exports in one pass and DuckDB, DataFusion or
//! Spark query it in place. Columns are zstd-compressed, after the
//! encodings of `docs/format.md` §14 (deltas for `tick` and `board`, byte
//! streams for `time_ns`, dictionaries for the strings), with statistics
//! per row group. The parquet crate's column writers write every column
//! but `kind`, whose pages this module encodes itself ([`kind_chunk`]). [`PartitionedParquetWriter`] writes the same files as a
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
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::{ExportError, RecordWriter, TraceKind, TraceMeta};
use crate::names::event_name;

/// Rows of one row group unless told otherwise (about 50 MB buffered).
pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 19;

/// Rows the column writers take between their page-size checks (the
/// crate's default, 1024, costs 2-3 % more CPU time).
const WRITE_BATCH_ROWS: usize = 8192;

/// zstd's level for every column (3 makes a file 12 % smaller for 8 %
/// more CPU time).
const ZSTD_LEVEL: i32 = 1;

/// The index of the `kind` column, which this module encodes itself.
const KIND_COLUMN: usize = 3;
/// Rows of one data page of `kind` (1 to 4 bits a row before zstd).
const KIND_PAGE_ROWS: usize = 1 << 20;
/// Values of one bit-packed run of `kind`'s indices: 63 groups of 8, the
/// most whose run header is one byte.
const KIND_RUN_VALUES: usize = 63 * 8;

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
    /// The kind bits of each row.
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
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
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
        Ok(ParquetWriter {
            file,
            tick_ns: meta.tick_ns(),
            meta,
            group_rows: group_rows.max(1),
            group: Group::default(),
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
        let kind_column = self.file.schema_descr().column(KIND_COLUMN);
        let columns = self.file.schema_descr().num_columns();
        let mut rg = self.file.next_row_group()?;
        for i in 0..columns {
            if i == KIND_COLUMN {
                let (chunk, close) = kind_chunk(kind_column.clone(), &g.kind)?;
                rg.append_column(&chunk, close)?;
                continue;
            }
            let Some(mut col) = rg.next_column()? else {
                break;
            };
            match i {
                0 => col.typed::<Int64Type>().write_batch(&g.tick, None, None)?,
                1 => col
                    .typed::<DoubleType>()
                    .write_batch(&g.time_ns, None, None)?,
                2 => col.typed::<Int32Type>().write_batch(&g.board, None, None)?,
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

/// The `kind` column chunk of a row group whose records have these kind
/// bits, encoded without the crate's per-value writer (a dictionary hash
/// and a string a row cost a third of the export): a dictionary page of
/// the kind names present (PLAIN), then data pages of RLE_DICTIONARY
/// indices in bit-packed runs, zstd-compressed like the other columns.
/// Returns the chunk's bytes and what
/// `SerializedRowGroupWriter::append_column` needs to splice them in.
fn kind_chunk(
    descr: parquet::schema::types::ColumnDescPtr,
    kinds: &[u8],
) -> Result<(bytes::Bytes, ColumnCloseResult), ExportError> {
    let present = kinds.iter().fold(0u16, |seen, &b| seen | 1 << (b & 15));
    // The dictionary index of each kind bits; the RESERVED kinds share one.
    let mut index = [0u8; 16];
    let mut names: Vec<&'static str> = Vec::new();
    for bits in (0..16u8).filter(|b| present & 1 << b != 0) {
        let name = RecordKind::from_bits(bits).name();
        index[usize::from(bits)] = match names.iter().position(|n| *n == name) {
            Some(i) => i as u8,
            None => {
                names.push(name);
                (names.len() - 1) as u8
            }
        };
    }
    // At most nine names: 1 to 4 bits an index.
    let width = (u8::BITS - (names.len().max(2) as u8 - 1).leading_zeros()) as usize;
    let mut dictionary = Vec::new();
    for name in &names {
        dictionary.extend_from_slice(&(name.len() as u32).to_le_bytes());
        dictionary.extend_from_slice(name.as_bytes());
    }
    let mut sink = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut sink);
    let mut uncompressed = 0;
    let spec = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            buf: zstd_page(&dictionary)?,
            num_values: names.len() as u32,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        dictionary.len(),
    ))?;
    uncompressed += spec.uncompressed_size;
    let mut first_data_page = None;
    let mut page_locations = Vec::new();
    for (page, page_kinds) in kinds.chunks(KIND_PAGE_ROWS).enumerate() {
        let mut buf = Vec::with_capacity(2 + page_kinds.len() * width / 8 + page_kinds.len() / 64);
        buf.push(width as u8);
        for run in page_kinds.chunks(KIND_RUN_VALUES) {
            let groups = run.len().div_ceil(8);
            buf.push((groups << 1 | 1) as u8);
            for group in run.chunks(8) {
                let packed = group.iter().enumerate().fold(0u32, |v, (j, &b)| {
                    v | u32::from(index[usize::from(b & 15)]) << (j * width)
                });
                buf.extend_from_slice(&packed.to_le_bytes()[..width]);
            }
        }
        let spec = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf: zstd_page(&buf)?,
                num_values: page_kinds.len() as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            buf.len(),
        ))?;
        uncompressed += spec.uncompressed_size;
        first_data_page.get_or_insert(spec.offset);
        page_locations.push(PageLocation {
            offset: spec.offset as i64,
            compressed_page_size: spec.bytes_written as i32,
            first_row_index: (page * KIND_PAGE_ROWS) as i64,
        });
    }
    pages.close()?;
    let chunk = bytes::Bytes::from(sink.into_inner()?);
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_num_values(kinds.len() as i64)
        .set_total_compressed_size(chunk.len() as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(first_data_page.unwrap_or(0) as i64)
        .build()?;
    let close = ColumnCloseResult {
        bytes_written: chunk.len() as u64,
        rows_written: kinds.len() as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        // The file writer writes an offset index for every column or none.
        offset_index: Some(OffsetIndexMetaData {
            page_locations,
            unencoded_byte_array_data_bytes: None,
        }),
    };
    Ok((chunk, close))
}

/// A page's bytes compressed as the other columns' are.
fn zstd_page(raw: &[u8]) -> Result<bytes::Bytes, ExportError> {
    Ok(zstd::bulk::compress(raw, ZSTD_LEVEL)?.into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::events::EventNames;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    /// Every kind, the reserved ones among them, in a row group of more
    /// than one `kind` data page, reads back as its name.
    #[test]
    fn kind_pages_read_back_as_the_kind_names() {
        let rows = KIND_PAGE_ROWS + 1000;
        let records: Vec<TraceRecord> = (0..rows as u64)
            .map(|i| {
                let kind = RecordKind::from_bits((i * 7 % 16) as u8);
                TraceRecord::new(i, 0, kind, i % 100)
            })
            .collect();
        let meta = TraceMeta {
            kind: TraceKind::Physical,
            tick_ps: 1250,
            first_tick: 0,
            names: EventNames::default(),
        };
        let mut w = ParquetWriter::new(Vec::new(), meta, rows + 1).unwrap();
        w.write_block(&records).unwrap();
        let file = bytes::Bytes::from(w.close().unwrap());
        let reader = SerializedFileReader::new(file).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 1);
        let mut read = 0;
        for (row, r) in reader.get_row_iter(None).unwrap().zip(&records) {
            let row = row.unwrap();
            let (_, kind) = row.get_column_iter().nth(KIND_COLUMN).unwrap();
            assert_eq!(kind, &Field::Str(r.kind().name().to_string()), "row {read}");
            read += 1;
        }
        assert_eq!(read, rows);
    }
}
