//! Apache Parquet: one row per record, typed columns, written in row
//! groups of a bounded number of rows (the writer holds one group), so a
//! trace larger than memory exports in one pass and DuckDB, DataFusion or
//! Spark query it in place. Columns are compressed (Snappy for `tick`
//! and `pa`, zstd for the others) after the encodings of
//! `docs/format.md` §14 (deltas for `tick` and `board`, byte streams for
//! `time_ns`, a dictionary for `kind`), with statistics per row group.
//! The columns of every record (`tick` to `event`) are encoded by
//! [`pages`] a page at a time from the group's records; the parquet
//! crate's column writers write the virtual trace's columns.
//! [`PartitionedParquetWriter`] writes the same files as a Hive-style
//! dataset, one directory per window of traced time.
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

/// `$plain($args)`, or `$avx2($args)` (the same function compiled with
/// AVX2) where the CPU has AVX2.
macro_rules! with_avx2 {
    ($plain:ident, $avx2:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        let result = if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2.
            unsafe { $avx2($($arg),*) }
        } else {
            $plain($($arg),*)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let result = $plain($($arg),*);
        result
    }};
}

mod byte_split;
mod dataset;
mod delta;
mod pages;

use std::io::Write;
use std::sync::Arc;

use hmtt_format::trace::TraceRecord;
use hmtt_format::vtrace::VirtualRecord;
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::ColumnPath;

use super::{ExportError, RecordWriter, TraceKind, TraceMeta};

pub use dataset::{PartitionedParquetWriter, PARTITION_COLUMN};

/// Rows of one row group unless told otherwise (about 4 MB of records
/// buffered, 25 MB of a virtual trace's). Each column's pages read the
/// group's records again: 2^19 rows (8 MB) took 8-10 % more CPU time
/// for the same instructions (bench/export-history.md).
pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 18;

/// Rows the crate's column writers take between their page-size checks
/// (the crate's default, 1024, costs 2-3 % more CPU time).
const WRITE_BATCH_ROWS: usize = 8192;

/// The columns of every record, which [`pages`] encodes: their count.
const RECORD_COLUMNS: usize = 8;

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

/// The rows of the row group being filled: the records, and a virtual
/// trace's own columns.
#[derive(Default)]
struct Group {
    records: Vec<TraceRecord>,
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
    compressors: pages::Compressors,
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
        // The crate writes the virtual columns: `source`, `pid` and `miss`
        // dictionary-encoded, `va` PLAIN (addresses hardly repeat), with
        // statistics per column chunk.
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
            .set_max_row_group_size(group_rows.max(1))
            .set_created_by(format!("hmtt {}", env!("CARGO_PKG_VERSION")))
            .set_column_dictionary_enabled(ColumnPath::from("va"), false)
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_write_batch_size(WRITE_BATCH_ROWS)
            .build();
        let file = SerializedFileWriter::new(out, schema, Arc::new(props))?;
        Ok(ParquetWriter {
            file,
            tick_ns: meta.tick_ns(),
            meta,
            group_rows: group_rows.max(1),
            group: Group::default(),
            compressors: pages::Compressors::new()?,
            cpu: ByteArray::from("cpu"),
            dma: ByteArray::from("dma"),
        })
    }

    fn push(&mut self, v: &VirtualRecord) {
        let g = &mut self.group;
        g.records.push(v.physical());
        if self.meta.kind == TraceKind::Virtual {
            g.source.push(v.physical().is_access().then(|| {
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

    /// Writes the buffered rows as one row group.
    fn flush_group(&mut self) -> Result<(), ExportError> {
        let g = &mut self.group;
        if g.records.is_empty() {
            return Ok(());
        }
        let records = &g.records;
        let kinds = pages::Kinds::of(records);
        let schema = self.file.schema_descr();
        let descrs: Vec<_> = (0..RECORD_COLUMNS).map(|i| schema.column(i)).collect();
        let column = |i: usize| descrs[i].clone();
        let z = &mut self.compressors;
        let mut rg = self.file.next_row_group()?;
        let (chunk, close, ticks) = pages::tick_chunk(z, column(0), records)?;
        rg.append_column(&chunk, close)?;
        for i in 1..RECORD_COLUMNS {
            let (chunk, close) = match i {
                1 => pages::time_chunk(z, column(i), records, self.tick_ns, ticks)?,
                2 => pages::board_chunk(z, column(i), records)?,
                3 => pages::kind_chunk(z, column(i), &kinds)?,
                4 => pages::pa_chunk(z, column(i), records, &kinds)?,
                5 => pages::is_write_chunk(z, column(i), records, &kinds)?,
                6 => pages::value_chunk(z, column(i), records, &kinds)?,
                _ => pages::event_chunk(z, column(i), records, &kinds, &self.meta.names)?,
            };
            rg.append_column(&chunk, close)?;
        }
        let mut i = RECORD_COLUMNS;
        while let Some(mut col) = rg.next_column()? {
            match i {
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
                _ => col.typed::<ByteArrayType>().write_batch(
                    &g.miss.values,
                    Some(&g.miss.defined),
                    None,
                )?,
            };
            col.close()?;
            i += 1;
        }
        rg.close()?;
        g.records.clear();
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
        if self.group.records.len() >= self.group_rows {
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
            let room = self.group_rows - self.group.records.len();
            let (now, rest) = records.split_at(room.min(records.len()));
            self.group.records.extend_from_slice(now);
            if self.group.records.len() >= self.group_rows {
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

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::events::EventNames;
    use hmtt_format::trace::RecordKind;
    use hmtt_merge::names::event_name;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::statistics::Statistics;
    use parquet::record::Field;

    fn meta(names: EventNames) -> TraceMeta {
        TraceMeta {
            kind: TraceKind::Physical,
            tick_ps: 1250,
            first_tick: 0,
            names,
        }
    }

    /// Records of every kind (the reserved ones among them) on four
    /// boards, their ticks rising by steps of 0 to 2^40 and past 2^63 (an
    /// unsigned order), runs of references and runs of other records (the
    /// definition levels' RLE and bit-packed runs), from a fixed
    /// pseudo-random sequence.
    fn mixed_records(rows: usize) -> Vec<TraceRecord> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut tick = (1u64 << 63) - 5_000_000;
        (0..rows)
            .map(|i| {
                let r = next();
                tick = tick.wrapping_add(match r % 100 {
                    0 => r >> 24,
                    1..=9 => 0,
                    _ => r % 300,
                });
                let board = ((i / 1000) % 4) as u8;
                // Stretches of references only, of other records only, and mixed.
                let kind = match (i / 5000) % 3 {
                    0 => RecordKind::from_bits((r >> 8) as u8 & 1),
                    1 => RecordKind::from_bits(2 + (r >> 8) as u8 % 14),
                    _ => RecordKind::from_bits((r >> 8) as u8 & 15),
                };
                match kind {
                    RecordKind::Read | RecordKind::Write => {
                        TraceRecord::access(tick, board, kind == RecordKind::Write, (r >> 12) << 6)
                    }
                    // Inner commands, user events (one named) and log tags.
                    _ => TraceRecord::new(
                        tick,
                        board,
                        kind,
                        [
                            0,
                            5,
                            0x30,
                            hmtt_format::config::FIRST_USER_EVENT + 3,
                            0x7fff_fff0,
                        ][(r >> 20) as usize % 5]
                            .into(),
                    ),
                }
            })
            .collect()
    }

    /// A chunk's statistics as (min, max, null count), the order flags aside.
    fn summary(s: &Statistics) -> (Option<String>, Option<String>, Option<u64>) {
        match s {
            Statistics::Int32(v) => (
                v.min_opt().map(|m| m.to_string()),
                v.max_opt().map(|m| m.to_string()),
                s.null_count_opt(),
            ),
            Statistics::Int64(v) => (
                v.min_opt().map(|m| (*m as u64).to_string()),
                v.max_opt().map(|m| (*m as u64).to_string()),
                s.null_count_opt(),
            ),
            Statistics::Double(v) => (
                v.min_opt().map(|m| format!("{m:?}")),
                v.max_opt().map(|m| format!("{m:?}")),
                s.null_count_opt(),
            ),
            other => panic!("no such statistics here: {other:?}"),
        }
    }

    /// A row as the crate's reader decodes it, from what each column holds
    /// by `docs/format.md`, computed from the record alone.
    fn expected_row(r: &TraceRecord, names: &EventNames) -> Vec<Field> {
        let bits = r.kind().bits();
        let access = bits < 2;
        let opt = |present: bool, f: Field| if present { f } else { Field::Null };
        vec![
            Field::ULong(r.tick),
            Field::Double(r.tick as f64 * 1.25),
            Field::UByte(r.board()),
            Field::Str(r.kind().name().to_string()),
            opt(access, Field::ULong(r.pa())),
            opt(bits < 4, Field::Bool(bits & 1 == 1)),
            opt(!access, Field::ULong(r.value())),
            opt(
                (2..=4).contains(&bits),
                Field::Str(event_name(r.value() as u32, names)),
            ),
        ]
    }

    /// Every column of every row reads back as its record's value through
    /// the crate's reader, over row groups of several pages and a last
    /// partial page and group; the chunk statistics of `tick`, `time_ns`,
    /// `board` and `pa` are those of the values.
    #[test]
    fn every_column_reads_back_with_its_statistics() {
        let rows = 2 * (pages::KIND_PAGE_ROWS + 3 * pages::PAGE_ROWS) + 1001;
        let group_rows = pages::KIND_PAGE_ROWS + 3 * pages::PAGE_ROWS + 5;
        let records = mixed_records(rows);
        let mut names = EventNames::default();
        let phase = hmtt_format::config::FIRST_USER_EVENT + 3;
        names.insert("phase", phase).unwrap();
        let mut w = ParquetWriter::new(Vec::new(), meta(names.clone()), group_rows).unwrap();
        // Blocks that straddle the row groups' ends.
        for block in records.chunks(100_003) {
            w.write_block(block).unwrap();
        }
        let file = bytes::Bytes::from(w.close().unwrap());
        let reader = SerializedFileReader::new(file).unwrap();
        let groups = reader.metadata().row_groups();
        assert_eq!(groups.len(), rows.div_ceil(group_rows));
        let mut read = 0;
        for (row, r) in reader.get_row_iter(None).unwrap().zip(&records) {
            let fields: Vec<Field> = row
                .unwrap()
                .get_column_iter()
                .map(|(_, f)| f.clone())
                .collect();
            assert_eq!(fields, expected_row(r, &names), "row {read}");
            read += 1;
        }
        assert_eq!(read, rows);
        for (g, group) in groups.iter().enumerate() {
            let part = &records[g * group_rows..((g + 1) * group_rows).min(rows)];
            let ticks = part.iter().map(|r| r.tick);
            let (tmin, tmax) = (ticks.clone().min().unwrap(), ticks.max().unwrap());
            let pas = part.iter().filter(|r| r.is_access()).map(|r| r.pa());
            let (pmin, pmax) = (pas.clone().min().unwrap(), pas.max().unwrap());
            let nulls = part.iter().filter(|r| !r.is_access()).count() as u64;
            let stats = |c: usize| summary(group.column(c).statistics().unwrap());
            let some = |v: String| Some(v);
            assert_eq!(
                stats(0),
                (some(tmin.to_string()), some(tmax.to_string()), Some(0))
            );
            let time = |t: u64| some(format!("{:?}", t as f64 * 1.25));
            assert_eq!(stats(1), (time(tmin), time(tmax), Some(0)));
            assert_eq!(stats(2), (some("0".into()), some("3".into()), Some(0)));
            assert_eq!(
                stats(4),
                (some(pmin.to_string()), some(pmax.to_string()), Some(nulls))
            );
            assert!(group.column(3).statistics().is_none());
            let codecs: Vec<&str> = group
                .columns()
                .iter()
                .map(|c| match c.compression() {
                    Compression::SNAPPY => "snappy",
                    Compression::ZSTD(_) => "zstd",
                    _ => "other",
                })
                .collect();
            assert_eq!(
                codecs,
                ["snappy", "zstd", "zstd", "zstd", "snappy", "zstd", "zstd", "zstd"]
            );
        }
    }

    /// A group of one row, and a group without a reference (`pa` all
    /// null, no minimum), read back; a time of zero is a -0.0 minimum.
    #[test]
    fn tiny_groups_and_a_group_without_references() {
        let records = [
            TraceRecord::new(0, 1, RecordKind::Cmd, 3),
            TraceRecord::new(0, 1, RecordKind::Lost, 9),
            TraceRecord::access(2, 1, true, 0x1000),
        ];
        let mut w = ParquetWriter::new(Vec::new(), meta(EventNames::default()), 2).unwrap();
        w.write_block(&records).unwrap();
        let file = bytes::Bytes::from(w.close().unwrap());
        let reader = SerializedFileReader::new(file).unwrap();
        for (row, r) in reader.get_row_iter(None).unwrap().zip(&records) {
            let fields: Vec<Field> = row
                .unwrap()
                .get_column_iter()
                .map(|(_, f)| f.clone())
                .collect();
            assert_eq!(fields, expected_row(r, &EventNames::default()));
        }
        let first = reader.metadata().row_group(0);
        assert_eq!(
            summary(first.column(4).statistics().unwrap()),
            (None, None, Some(2))
        );
        let time = first.column(1).statistics().unwrap();
        assert!(matches!(time, Statistics::Double(s) if s.min_opt().unwrap().is_sign_negative()));
        assert_eq!(reader.metadata().row_group(1).num_rows(), 1);
    }
}
