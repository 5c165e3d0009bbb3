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

use hmtt_format::vtrace::VirtualRecord;

use super::time::TickTime;
use super::{event_cell, rw_cell, source_cell, ExportError, RecordWriter, TraceKind, TraceMeta};

/// The header line of a physical trace's CSV.
pub const PHYSICAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,event";
/// The header line of a virtual trace's CSV.
pub const VIRTUAL_HEADER: &str = "time_ns,tick,board,pa,rw,kind,source,pid,va,miss,event";

/// Writes the CSV of one trace kind; the header at creation.
pub struct CsvWriter<W: Write> {
    out: W,
    meta: TraceMeta,
}

impl<W: Write> CsvWriter<W> {
    pub fn new(mut out: W, meta: TraceMeta) -> std::io::Result<CsvWriter<W>> {
        let header = match meta.kind {
            TraceKind::Physical => PHYSICAL_HEADER,
            TraceKind::Virtual => VIRTUAL_HEADER,
        };
        writeln!(out, "{header}")?;
        Ok(CsvWriter { out, meta })
    }

    /// One line; a reference allocates nothing.
    pub fn write_record(&mut self, v: &VirtualRecord) -> std::io::Result<()> {
        let r = v.physical();
        let w = &mut self.out;
        let time = TickTime::new(r.tick, self.meta.tick_ps);
        write!(w, "{time},{},{},", r.tick, r.board())?;
        if r.is_access() {
            write!(w, "{:#x}", r.pa())?;
        }
        write!(w, ",{},{},", rw_cell(&r), r.kind().name())?;
        if self.meta.kind == TraceKind::Virtual {
            write!(w, "{},", source_cell(v))?;
            if let Some((pid, va)) = v.owner() {
                write!(w, "{pid},{va:#x},")?;
            } else {
                w.write_all(b",,")?;
            }
            write!(w, "{},", v.miss().map_or("", |m| m.name()))?;
        }
        if let Some(event) = event_cell(&r, &self.meta.names) {
            write_field(w, &event)?;
        }
        w.write_all(b"\n")
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A field, quoted when it holds a separator, a quote or a line break.
fn write_field(w: &mut dyn Write, s: &str) -> std::io::Result<()> {
    if s.contains([',', '"', '\n', '\r']) {
        write!(w, "\"{}\"", s.replace('"', "\"\""))
    } else {
        w.write_all(s.as_bytes())
    }
}

impl<W: Write> RecordWriter for CsvWriter<W> {
    fn write(&mut self, r: &VirtualRecord) -> Result<(), ExportError> {
        Ok(self.write_record(r)?)
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
