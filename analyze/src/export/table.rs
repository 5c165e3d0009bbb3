//! The aligned text table of `hmtt dump`: the CSV's columns (see
//! [`super::csv`]) padded to fixed widths for reading in a terminal.

use std::io::Write;

use hmtt_format::vtrace::VirtualRecord;

use super::time::TickTime;
use super::{event_cell, rw_cell, source_cell, TraceKind, TraceMeta};

/// Writes the table of one trace kind; the header line at creation.
pub struct TableWriter<W: Write> {
    out: W,
    meta: TraceMeta,
}

impl<W: Write> TableWriter<W> {
    pub fn new(mut out: W, meta: TraceMeta) -> std::io::Result<TableWriter<W>> {
        write!(
            out,
            "{:>16} {:>14} {:>5} {:>14} {:>2} {:<9} ",
            "time_ns", "tick", "board", "pa", "rw", "kind"
        )?;
        if meta.kind == TraceKind::Virtual {
            write!(
                out,
                "{:<6} {:>7} {:>18} {:<8} ",
                "source", "pid", "va", "miss"
            )?;
        }
        writeln!(out, "event")?;
        Ok(TableWriter { out, meta })
    }

    pub fn write_record(&mut self, v: &VirtualRecord) -> std::io::Result<()> {
        let r = v.physical();
        let w = &mut self.out;
        let time = TickTime::new(r.tick, self.meta.tick_ps);
        write!(w, "{time:>16} {:>14} {:>5} ", r.tick, r.board())?;
        if r.is_access() {
            write!(w, "{:>#14x} ", r.pa())?;
        } else {
            write!(w, "{:>14} ", "")?;
        }
        write!(w, "{:>2} {:<9} ", rw_cell(&r), r.kind().name())?;
        if self.meta.kind == TraceKind::Virtual {
            write!(w, "{:<6} ", source_cell(v))?;
            match v.owner() {
                Some((pid, va)) => write!(w, "{pid:>7} {va:>#18x} ")?,
                None => write!(w, "{:>7} {:>18} ", "", "")?,
            }
            write!(w, "{:<8} ", v.miss().map_or("", |m| m.name()))?;
        }
        if let Some(event) = event_cell(&r, &self.meta.names) {
            w.write_all(event.as_bytes())?;
        }
        w.write_all(b"\n")
    }
}
