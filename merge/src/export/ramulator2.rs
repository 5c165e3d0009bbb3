//! Ramulator 2's `LoadStoreTrace` frontend: one memory reference a line,
//! `LD 0xADDR` for a read and `ST 0xADDR` for a write, exactly two tokens
//! separated by one space (its reader splits on single spaces and refuses
//! any other count). The address is the physical byte address. The format
//! has no time: the frontend issues the requests in order as fast as the
//! memory takes them. Only references are written.

use std::io::Write;

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::text::push_hex;
use super::{ExportError, RecordWriter};

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

pub struct Ramulator2Writer<W: Write> {
    out: W,
    line: Vec<u8>,
}

impl<W: Write> Ramulator2Writer<W> {
    pub fn new(out: W) -> Self {
        Ramulator2Writer {
            out,
            line: Vec::with_capacity(CHUNK + 64),
        }
    }

    #[inline]
    fn push_line(&mut self, write: bool, pa: u64) {
        self.line
            .extend_from_slice(if write { b"ST " } else { b"LD " });
        push_hex(&mut self.line, pa);
        self.line.push(b'\n');
    }
}

impl<W: Write> RecordWriter for Ramulator2Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if v.is_access() {
            self.line.clear();
            self.push_line(v.is_write(), v.pa());
            self.out.write_all(&self.line)?;
        }
        Ok(())
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        self.line.clear();
        for r in records.iter().filter(|r| r.is_access()) {
            self.push_line(r.kind() == RecordKind::Write, r.pa());
            if self.line.len() >= CHUNK {
                self.out.write_all(&self.line)?;
                self.line.clear();
            }
        }
        Ok(self.out.write_all(&self.line)?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}
