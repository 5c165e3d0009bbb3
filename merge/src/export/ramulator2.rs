//! Ramulator 2's `LoadStoreTrace` frontend: one memory reference a line,
//! `LD 0xADDR` for a read and `ST 0xADDR` for a write, exactly two tokens
//! separated by one space (its reader splits on single spaces and refuses
//! any other count). The address is the physical byte address. The format
//! has no time: the frontend issues the requests in order as fast as the
//! memory takes them. Only references are written.

use std::io::Write;

use hmtt_format::vtrace::VirtualRecord;

use super::{ExportError, RecordWriter};

pub struct Ramulator2Writer<W: Write> {
    out: W,
}

impl<W: Write> Ramulator2Writer<W> {
    pub fn new(out: W) -> Self {
        Ramulator2Writer { out }
    }
}

impl<W: Write> RecordWriter for Ramulator2Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if v.is_access() {
            let op = if v.is_write() { "ST" } else { "LD" };
            writeln!(self.out, "{op} {:#x}", v.pa())?;
        }
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}
