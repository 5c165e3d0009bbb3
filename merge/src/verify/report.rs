//! How a trace compares with what it should hold, as `hmtt demo` prints it:
//! its first references beside the expected ones, and the verdict with its
//! `RESULT key=value ...` line (read by the tests and scripts).

use std::fmt;

use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::TickLength;

use super::Verdict;
use crate::names::event_name;

/// References shown side by side.
const SHOWN: usize = 4;

/// A trace's first references beside the expected ones, and its first tag
/// (its [`fmt::Display`]).
#[derive(Clone, Copy)]
pub struct FirstRecords<'a> {
    pub trace: &'a TraceView<'a>,
    pub expected: &'a [TraceRecord],
    /// The trace's tick length; `None` (unknown) prints every time as 0.
    pub tick: Option<TickLength>,
}

impl fmt::Display for FirstRecords<'_> {
    fn fmt(&self, w: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = |tick: u64| self.tick.map_or(0.0, |t| t.ns(tick));
        writeln!(w, "  first records (trace | ground truth):")?;
        let line = |r: &TraceRecord| {
            format!(
                "{:>12.3} ns  board {}  {:#012x} {:<5}",
                ns(r.tick),
                r.board(),
                r.pa(),
                r.kind().name()
            )
        };
        let expected = self.expected.iter().filter(|r| r.is_access());
        for (r, t) in self
            .trace
            .records()
            .filter(|r| r.is_access())
            .zip(expected)
            .take(SHOWN)
        {
            writeln!(w, "    {} | {}", line(&r), line(t))?;
        }
        if let Some(r) = self
            .trace
            .records()
            .find(|r| matches!(r.kind(), RecordKind::Tag { .. }))
        {
            writeln!(
                w,
                "    first tag: {} at {:.3} ns",
                event_name(r.value() as u32, self.trace.names()),
                ns(r.tick)
            )?;
        }
        Ok(())
    }
}

/// A [`Verdict`] and its `RESULT` line (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct VerdictReport<'a> {
    pub verdict: &'a Verdict,
    /// Packets lost on purpose (faults).
    pub lost_on_purpose: usize,
    /// Wall-clock seconds the whole run took.
    pub seconds: f64,
}

impl fmt::Display for VerdictReport<'_> {
    fn fmt(&self, w: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, lost_on_purpose) = (self.verdict, self.lost_on_purpose);
        let cmp = &v.comparison;
        writeln!(
            w,
            "  ground truth: {} of {} records match ({:.2}%), {} in the trace{}",
            cmp.matched,
            cmp.expected,
            cmp.match_percent(),
            cmp.got,
            if lost_on_purpose == 0 {
                String::new()
            } else {
                format!(
                    "; {lost_on_purpose} packets lost on purpose, {} reported missing",
                    v.reported.len()
                )
            }
        )?;
        if let Some((at, e, g)) = &cmp.first_difference {
            writeln!(
                w,
                "  FIRST DIFFERENCE at record {at}: expected {e:?}, got {g:?}"
            )?;
        }
        writeln!(w,
            "RESULT exact={} matched={} expected={} got={} missing_reported={} missing_expected={} duplicates={} seconds={:.2}",
            v.is_exact(),
            cmp.matched,
            cmp.expected,
            cmp.got,
            v.reported.len(),
            v.visible.len(),
            v.duplicates,
            self.seconds,
        )
    }
}
