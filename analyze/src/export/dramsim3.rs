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

use hmtt_format::text::{hex_into, push_decimal_u128, window, Lines, RisingDecimal};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;

use super::{ExportError, RecordWriter, TraceMeta};

/// Bytes of lines gathered before one write to the output.
const CHUNK: usize = 1 << 16;

/// The cell a line is written into: the address (18 bytes), ` WRITE `,
/// a cycle of up to 39 digits and the line break, then scratch bytes.
const LINE: usize = 96;

pub struct Dramsim3Writer<W: Write> {
    out: W,
    first_tick: u64,
    tick_ps: u128,
    tck_ps: u128,
    /// The cycle column: rising numbers.
    cycle: RisingDecimal,
    lines: Lines,
    /// A cycle beyond u64.
    wide: Vec<u8>,
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
            cycle: RisingDecimal::new(),
            lines: Lines::new(CHUNK, LINE),
            wide: Vec::new(),
        })
    }

    /// Appends the line of a reference.
    #[inline(always)]
    fn push_line(&mut self, tick: u64, write: bool, pa: u64) {
        let ticks = tick.saturating_sub(self.first_tick);
        let cell = self.lines.cell::<LINE>();
        let mut at = hex_into(window(cell, 0), pa);
        if write {
            window::<8>(cell, at).copy_from_slice(b" WRITE  ");
            at += 7;
        } else {
            window::<8>(cell, at).copy_from_slice(b" READ   ");
            at += 6;
        }
        if self.tick_ps == self.tck_ps {
            at += self.cycle.write(window(cell, at), ticks);
        } else {
            self.wide.clear();
            push_decimal_u128(
                &mut self.wide,
                u128::from(ticks) * self.tick_ps / self.tck_ps,
            );
            // At most 39 digits.
            cell[at..at + self.wide.len()].copy_from_slice(&self.wide);
            at += self.wide.len();
        }
        cell[at] = b'\n';
        self.lines.advance(at + 1);
    }
}

impl<W: Write> RecordWriter for Dramsim3Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        self.push_line(v.tick, v.is_write(), v.pa());
        Ok(self.out.write_all(self.lines.take())?)
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        for r in records.iter().filter(|r| r.is_access()) {
            self.push_line(r.tick, r.kind() == RecordKind::Write, r.pa());
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
