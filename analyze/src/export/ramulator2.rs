//! Ramulator 2's `LoadStoreTrace` frontend: one memory reference a line,
//! `LD 0xADDR` for a read and `ST 0xADDR` for a write, exactly two tokens
//! separated by one space (its reader splits on single spaces and refuses
//! any other count). The address is the physical byte address. The format
//! has no time: the frontend issues the requests in order as fast as the
//! memory takes them. Only references are written.

use std::io::Write;

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::{ExportError, RecordWriter};
use hmtt_format::text::{hex_into, window, Lines};

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

/// The cell a line is written into: `LD `, the address (18 bytes), the
/// line break, then scratch bytes.
const LINE: usize = 32;

pub struct Ramulator2Writer<W: Write> {
    out: W,
    lines: Lines,
}

impl<W: Write> Ramulator2Writer<W> {
    pub fn new(out: W) -> Self {
        Ramulator2Writer {
            out,
            lines: Lines::new(CHUNK, LINE),
        }
    }

    #[inline(always)]
    fn push_line(&mut self, write: bool, pa: u64) {
        let cell = self.lines.cell::<LINE>();
        window::<3>(cell, 0).copy_from_slice(if write { b"ST " } else { b"LD " });
        let at = 3 + hex_into(window(cell, 3), pa);
        cell[at] = b'\n';
        self.lines.advance(at + 1);
    }
}

impl<W: Write> RecordWriter for Ramulator2Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if v.is_access() {
            self.push_line(v.is_write(), v.pa());
            self.out.write_all(self.lines.take())?;
        }
        Ok(())
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        for r in records.iter().filter(|r| r.is_access()) {
            self.push_line(r.kind() == RecordKind::Write, r.pa());
            if self.lines.is_full() {
                self.out.write_all(self.lines.take())?;
            }
        }
        Ok(self.out.write_all(self.lines.take())?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}
