//! Comma-separated values, one writer per trace kind, shared by
//! `hmtt dump --csv`, `hmtt replay --csv` and `hmtt export --format csv`.
//!
//! Columns of a physical trace (`PHYSICAL_HEADER`):
//! `time_ns` (ns since the boards' tick 0, three decimals), `tick`, `board`,
//! `pa` (`0x` hex physical byte address of the line; references only),
//! `rw` (`R`/`W`, also for tags), `kind` (READ, WRITE, TAG, TAG_W, CMD,
//! LOST, GAP_BEGIN, GAP_END), `event` (the event's name for TAG/CMD, the
//! count for LOST and gaps). A virtual trace (`VIRTUAL_HEADER`) adds before
//! `event`: `source` (`cpu`/`dma`), `pid` and `va` (`0x` hex; empty when
//! the reference was not translated) and `miss` (why not: `unmapped`,
//! `kernel`, `dma`). A field holding a comma or a quote is quoted.

use std::io::Write;

use hmtt_format::text::{
    decimal_into, hex_into, push_decimal, push_first, push_hex, push_time_ns, time_ns_into, window,
    Lines, RisingDecimal,
};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::{event_cell, rw_cell, source_cell, ExportError, RecordWriter, TraceKind, TraceMeta};

/// The header line of a physical trace's CSV.
pub const PHYSICAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,event";
/// The header line of a virtual trace's CSV.
pub const VIRTUAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,source,pid,va,miss,event";

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

/// Room for the longest `rw,kind,` cell pair (`,GAP_BEGIN,`).
const RW_KIND_BYTES: usize = 16;

/// The cell a reference's line is written into: `time_ns` of a u64 of
/// picoseconds (at most 21 bytes), `tick` (20), `board` (3), `pa` (18),
/// `rw,kind,` and the separators, then a number's scratch bytes.
const ACCESS_LINE: usize = 128;

/// Writes the CSV of one trace kind; the header at creation. Each call
/// writes whole lines to the output (nothing is held back).
pub struct CsvWriter<W: Write> {
    out: W,
    meta: TraceMeta,
    /// `rw,kind,` by kind bits, as bytes and length (see [`push_first`]);
    /// boxed, so that the writer stays small beside the table's.
    rw_kind: Box<[([u8; RW_KIND_BYTES], usize); 16]>,
    /// The `time_ns` column's whole nanoseconds and the `tick` column:
    /// rising numbers, whose high digits repeat from line to line.
    ns: RisingDecimal,
    tick: RisingDecimal,
    line: Vec<u8>,
    /// The lines of [`CsvWriter::write_physical`].
    lines: Lines,
}

impl<W: Write> CsvWriter<W> {
    pub fn new(mut out: W, meta: TraceMeta) -> std::io::Result<CsvWriter<W>> {
        let header = match meta.kind {
            TraceKind::Physical => PHYSICAL_HEADER,
            TraceKind::Virtual => VIRTUAL_HEADER,
        };
        writeln!(out, "{header}")?;
        let rw_kind = Box::new(std::array::from_fn(|bits| {
            let r = TraceRecord::new(0, 0, RecordKind::from_bits(bits as u8), 0);
            let cell = format!("{},{},", rw_cell(&r), r.kind().name());
            let mut bytes = [0u8; RW_KIND_BYTES];
            bytes[..cell.len()].copy_from_slice(cell.as_bytes());
            (bytes, cell.len())
        }));
        Ok(CsvWriter {
            out,
            meta,
            rw_kind,
            ns: RisingDecimal::new(),
            tick: RisingDecimal::new(),
            line: Vec::with_capacity(4096),
            lines: Lines::new(CHUNK, ACCESS_LINE),
        })
    }

    /// One line.
    pub fn write_record(&mut self, v: &VirtualRecord) -> std::io::Result<()> {
        self.line.clear();
        self.push_line(v);
        self.out.write_all(&self.line)
    }

    /// The lines of the records of a physical trace, gathered into large
    /// writes.
    pub fn write_physical(&mut self, records: &[TraceRecord]) -> std::io::Result<()> {
        for r in records {
            if !(r.is_access() && self.access_line(r)) {
                self.line.clear();
                self.push_line(&VirtualRecord::marker(*r));
                self.lines.extend(&self.line);
            }
            if self.lines.is_full() {
                self.out.write_all(self.lines.take())?;
            }
        }
        self.out.write_all(self.lines.take())
    }

    /// Writes the line of a reference in place, the same bytes as
    /// [`CsvWriter::push_line`]; false, writing nothing, for a time beyond
    /// u64 picoseconds.
    #[inline(always)]
    fn access_line(&mut self, r: &TraceRecord) -> bool {
        let Some(ps) = r.tick.checked_mul(u64::from(self.meta.tick_ps)) else {
            return false;
        };
        let cell = self.lines.cell::<ACCESS_LINE>();
        let mut at = time_ns_into(window(cell, 0), &mut self.ns, ps);
        cell[at] = b',';
        at += 1;
        at += self.tick.write(window(cell, at), r.tick);
        cell[at] = b',';
        at += 1;
        let board = r.board();
        if board < 10 {
            window::<2>(cell, at).copy_from_slice(&[b'0' + board, b',']);
            at += 2;
        } else {
            at += decimal_into(window(cell, at), u64::from(board));
            cell[at] = b',';
            at += 1;
        }
        at += hex_into(window(cell, at), r.pa());
        cell[at] = b',';
        at += 1;
        let (bytes, len) = &self.rw_kind[usize::from(r.kind().bits())];
        window::<RW_KIND_BYTES>(cell, at).copy_from_slice(bytes);
        at += len;
        cell[at] = b'\n';
        self.lines.advance(at + 1);
        true
    }

    /// `time_ns,tick,board,pa,rw,kind,` of the record's physical part.
    #[inline]
    fn push_prefix(&mut self, r: &TraceRecord) {
        let l = &mut self.line;
        push_time_ns(l, &mut self.ns, r.tick, self.meta.tick_ps);
        l.push(b',');
        self.tick.push(l, r.tick);
        l.push(b',');
        let board = r.board();
        if board < 10 {
            l.extend_from_slice(&[b'0' + board, b',']);
        } else {
            push_decimal(l, u64::from(board));
            l.push(b',');
        }
        if r.is_access() {
            push_hex(l, r.pa());
        }
        l.push(b',');
        let (bytes, len) = &self.rw_kind[usize::from(r.kind().bits())];
        push_first(l, bytes, *len);
    }

    fn push_line(&mut self, v: &VirtualRecord) {
        let r = v.physical();
        self.push_prefix(&r);
        let l = &mut self.line;
        if self.meta.kind == TraceKind::Virtual {
            l.extend_from_slice(source_cell(v).as_bytes());
            l.push(b',');
            if let Some((pid, va)) = v.owner() {
                push_decimal(l, u64::from(pid));
                l.push(b',');
                push_hex(l, va);
                l.push(b',');
            } else {
                l.extend_from_slice(b",,");
            }
            l.extend_from_slice(v.miss().map_or("", |m| m.name()).as_bytes());
            l.push(b',');
        }
        if let Some(event) = event_cell(&r, &self.meta.names) {
            push_field(l, &event);
        }
        l.push(b'\n');
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A field, quoted when it holds a separator, a quote or a line break.
fn push_field(l: &mut Vec<u8>, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        l.push(b'"');
        l.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        l.push(b'"');
    } else {
        l.extend_from_slice(s.as_bytes());
    }
}

impl<W: Write> RecordWriter for CsvWriter<W> {
    fn write(&mut self, r: &VirtualRecord) -> Result<(), ExportError> {
        Ok(self.write_record(r)?)
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        Ok(self.write_physical(records)?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use hmtt_format::events::EventNames;
    use hmtt_format::trace::{RecordKind, TraceRecord};
    use hmtt_format::vtrace::{Miss, VirtualRecord};

    use super::*;

    fn meta(kind: TraceKind) -> TraceMeta {
        TraceMeta {
            kind,
            tick_ps: 1250,
            first_tick: 0,
            names: EventNames::from_iter(vec![(0x40, "a,\"b\"".into())]),
        }
    }

    /// The lines of references written in place are those of `format!`,
    /// over ticks, boards and addresses at the edges of every formatter
    /// (digit counts, the kept high digits, picoseconds beyond u64).
    #[test]
    fn reference_lines_are_what_std_formatting_prints() {
        let mut ticks = vec![0u64, 1, 7, 9, 10, 99, 100, 7999, 8000, 9999, 10_000, 10_001];
        for p in 1..20 {
            let p = 10u64.pow(p);
            ticks.extend([p - 1, p, p + 1, p / 8 * 10 - 1, p / 8 * 10]);
        }
        ticks.extend([
            (1u64 << 48) - 1,
            1 << 48,
            u64::MAX / 1250,
            u64::MAX - 1,
            u64::MAX,
        ]);
        // A rising run across carries into the kept digits.
        ticks.extend((0..40_000u64).map(|i| 99_990_000 + i * 3));
        let mut records = Vec::new();
        let mut expected = format!("{PHYSICAL_HEADER}\n");
        for (i, &tick) in ticks.iter().enumerate() {
            let board = [0u8, 9, 10, 99, 100, 255][i % 6];
            let pa = [0u64, 0x40, 0xffff_ffc0, 0x1_0000_0000, u64::MAX << 6][i % 5];
            let write = i % 3 == 0;
            records.push(TraceRecord::access(tick, board, write, pa));
            let ps = u128::from(tick) * 1250;
            let (rw, kind) = if write { ("W", "WRITE") } else { ("R", "READ") };
            expected.push_str(&format!(
                "{}.{:03},{tick},{},{:#x},{rw},{kind},\n",
                ps / 1000,
                ps % 1000,
                records[i].board(),
                records[i].pa()
            ));
        }
        let mut w = CsvWriter::new(Vec::new(), meta(TraceKind::Physical)).unwrap();
        w.write_physical(&records).unwrap();
        assert_eq!(String::from_utf8(w.into_inner()).unwrap(), expected);
    }

    #[test]
    fn lines_have_the_header_s_columns_and_quote_names() {
        let mut w = CsvWriter::new(Vec::new(), meta(TraceKind::Virtual)).unwrap();
        let read = TraceRecord::access(8, 1, false, 0x1000);
        w.write_record(&VirtualRecord::reference(
            read,
            Some((7, 0x2040)),
            false,
            None,
        ))
        .unwrap();
        let dma = TraceRecord::access(9, 0, true, 0x3000);
        w.write_record(&VirtualRecord::reference(dma, None, true, Some(Miss::Dma)))
            .unwrap();
        let tag = TraceRecord::new(10, 0, RecordKind::Tag { write: false }, 0x40);
        w.write_record(&VirtualRecord::marker(tag)).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                VIRTUAL_HEADER,
                "10.000,8,1,0x1000,R,READ,cpu,7,0x2040,,",
                "11.250,9,0,0x3000,W,WRITE,dma,,,dma,",
                "12.500,10,0,,R,TAG,,,,,\"a,\"\"b\"\"\"",
            ]
        );
        let mut w = CsvWriter::new(Vec::new(), meta(TraceKind::Physical)).unwrap();
        w.write_record(&VirtualRecord::marker(TraceRecord::new(
            4,
            2,
            RecordKind::Lost,
            3,
        )))
        .unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text,
            format!("{PHYSICAL_HEADER}\n5.000,4,2,,,LOST,3 references\n")
        );
    }
}
