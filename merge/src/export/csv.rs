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

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::text::{push_first, push_hex, push_time_ns, push_u64};
use super::{event_cell, rw_cell, source_cell, ExportError, RecordWriter, TraceKind, TraceMeta};

/// The header line of a physical trace's CSV.
pub const PHYSICAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,event";
/// The header line of a virtual trace's CSV.
pub const VIRTUAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,source,pid,va,miss,event";

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

/// Room for the longest `rw,kind,` cell pair (`,GAP_BEGIN,`).
const RW_KIND_BYTES: usize = 16;

/// Writes the CSV of one trace kind; the header at creation. Each call
/// writes whole lines to the output (nothing is held back).
pub struct CsvWriter<W: Write> {
    out: W,
    meta: TraceMeta,
    /// `rw,kind,` by kind bits, as bytes and length (see [`push_first`]);
    /// boxed, so that the writer stays small beside the table's.
    rw_kind: Box<[([u8; RW_KIND_BYTES], usize); 16]>,
    line: Vec<u8>,
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
            line: Vec::with_capacity(CHUNK + 4096),
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
        self.line.clear();
        for r in records {
            if r.is_access() {
                self.push_prefix(r);
                self.line.push(b'\n');
            } else {
                self.push_line(&VirtualRecord::marker(*r));
            }
            if self.line.len() >= CHUNK {
                self.out.write_all(&self.line)?;
                self.line.clear();
            }
        }
        self.out.write_all(&self.line)
    }

    /// `time_ns,tick,board,pa,rw,kind,` of the record's physical part.
    #[inline]
    fn push_prefix(&mut self, r: &TraceRecord) {
        let l = &mut self.line;
        push_time_ns(l, r.tick, self.meta.tick_ps);
        l.push(b',');
        push_u64(l, r.tick);
        l.push(b',');
        push_u64(l, u64::from(r.board()));
        l.push(b',');
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
                push_u64(l, u64::from(pid));
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
    use hmtt_format::trace::{NameTable, RecordKind, TraceRecord};
    use hmtt_format::vtrace::{Miss, VirtualRecord};

    use super::*;

    fn meta(kind: TraceKind) -> TraceMeta {
        TraceMeta {
            kind,
            tick_ps: 1250,
            first_tick: 0,
            names: NameTable {
                names: vec![(0x40, "a,\"b\"".into())],
            },
        }
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
