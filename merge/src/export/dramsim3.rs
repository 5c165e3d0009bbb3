//! DRAMsim3's trace file (its `TraceBasedCPU`): one memory reference a
//! line, `0xADDR READ|WRITE CYCLE`, the address a physical byte address in
//! hexadecimal, the cycle a decimal count of the simulated memory's clock
//! (DRAMsim3 issues the request once its clock reaches it). Only
//! references are written; tags, commands, losses and gaps have no line.
//!
//! The cycle counts from the trace's first record. The board's tick is one
//! clock of the traced DIMM (tCK), so by default the cycle is the tick
//! offset itself; with another `tck_ps` (the simulated device's tCK) the
//! time is rescaled: `cycle = floor((tick - first_tick) * tick_ps / tck_ps)`.

use std::io::Write;

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::text::{push_first, push_hex, push_u128, push_u64};
use super::{ExportError, RecordWriter, TraceMeta};

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

pub struct Dramsim3Writer<W: Write> {
    out: W,
    first_tick: u64,
    tick_ps: u128,
    tck_ps: u128,
    line: Vec<u8>,
}

impl<W: Write> Dramsim3Writer<W> {
    pub fn new(out: W, meta: &TraceMeta, tck_ps: Option<u32>) -> Result<Self, ExportError> {
        let tck_ps = tck_ps.unwrap_or(u32::from(meta.tick_ps));
        if tck_ps == 0 {
            return Err(ExportError::Invalid(
                "the trace does not say its tick length: give the memory clock period (--tck-ps)"
                    .into(),
            ));
        }
        Ok(Dramsim3Writer {
            out,
            first_tick: meta.first_tick,
            tick_ps: u128::from(meta.tick_ps.max(1)),
            tck_ps: u128::from(tck_ps),
            line: Vec::with_capacity(CHUNK + 64),
        })
    }

    /// Appends the line of a reference.
    #[inline]
    fn push_line(&mut self, tick: u64, write: bool, pa: u64) {
        let l = &mut self.line;
        push_hex(l, pa);
        if write {
            push_first(l, b" WRITE ", 7);
        } else {
            push_first(l, b" READ  ", 6);
        }
        let ticks = tick.saturating_sub(self.first_tick);
        if self.tick_ps == self.tck_ps {
            push_u64(l, ticks);
        } else {
            push_u128(l, u128::from(ticks) * self.tick_ps / self.tck_ps);
        }
        l.push(b'\n');
    }
}

impl<W: Write> RecordWriter for Dramsim3Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        self.line.clear();
        self.push_line(v.tick, v.is_write(), v.pa());
        Ok(self.out.write_all(&self.line)?)
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        self.line.clear();
        for r in records.iter().filter(|r| r.is_access()) {
            self.push_line(r.tick, r.kind() == RecordKind::Write, r.pa());
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
