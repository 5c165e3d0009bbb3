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

use hmtt_format::vtrace::VirtualRecord;

use super::{ExportError, RecordWriter, TraceMeta};

pub struct Dramsim3Writer<W: Write> {
    out: W,
    first_tick: u64,
    tick_ps: u128,
    tck_ps: u128,
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
        })
    }
}

impl<W: Write> RecordWriter for Dramsim3Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        let ticks = u128::from(v.tick.saturating_sub(self.first_tick));
        let cycle = ticks * self.tick_ps / self.tck_ps;
        let op = if v.is_write() { "WRITE" } else { "READ" };
        writeln!(self.out, "{:#x} {op} {cycle}", v.pa())?;
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}
