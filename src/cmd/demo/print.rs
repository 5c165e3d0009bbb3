//! What `hmtt demo` says: the run, the first records beside the ground
//! truth, and the verdict with its `RESULT key=value ...` line (read by the
//! tests and scripts).

use hmtt_format::TickLength;
use std::io::{self, Write};

use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::truth::RefKind;
use hmtt_merge::names::event_name;
use hmtt_merge::verify::Verdict;
use hmtt_sim::machine::SimOutput;

use super::Args;

/// The run and what the simulation gave.
pub(super) fn simulated(w: &mut dyn Write, args: &Args, out: &SimOutput) -> io::Result<()> {
    let refs = out
        .truth
        .iter()
        .filter(|r| r.kind != RefKind::Icode)
        .count();
    let icodes = out.truth.len() - refs;
    let total_packets: usize = out.packets.iter().map(Vec::len).sum();
    writeln!(
        w,
        "hmtt demo: {} on a simulated machine (cache {}), {} boards x {} ports, loopback UDP",
        args.workload.name(),
        args.cache.name(),
        args.boards,
        args.ports
    )?;
    writeln!(w,
        "  simulated:  {refs} memory references, {icodes} I-codes, {total_packets} packets from the boards' golden model"
    )?;
    let dropped_board: u64 = out.board_counters.iter().map(|c| c.events_dropped).sum();
    if dropped_board > 0 {
        writeln!(
            w,
            "  note: the boards dropped {dropped_board} events (TX FIFO overflow)"
        )?;
    }
    Ok(())
}

/// The first references of the trace beside the ground truth's, and the
/// first tag.
pub(super) fn first_records(
    w: &mut dyn Write,
    view: &TraceView,
    expected: &[TraceRecord],
    tick_ps: u16,
) -> io::Result<()> {
    // The simulated board's tick length is never 0 (its configuration
    // refuses it); 0 would print every time as 0.
    let ns = |tick: u64| TickLength::of_ps(tick_ps).map_or(0.0, |t| t.ns(tick));
    writeln!(w, "  first records (trace | ground truth):")?;
    let truth_refs = expected.iter().filter(|r| r.is_access());
    for (r, t) in view
        .records()
        .filter(|r| r.is_access())
        .zip(truth_refs)
        .take(4)
    {
        let line = |r: &TraceRecord| {
            format!(
                "{:>12.3} ns  board {}  {:#012x} {:<5}",
                ns(r.tick),
                r.board(),
                r.pa(),
                r.kind().name()
            )
        };
        writeln!(w, "    {} | {}", line(&r), line(t))?;
    }
    if let Some(r) = view
        .records()
        .find(|r| matches!(r.kind(), RecordKind::Tag { .. }))
    {
        writeln!(
            w,
            "    first tag: {} at {:.3} ns",
            event_name(r.value() as u32, view.names()),
            ns(r.tick)
        )?;
    }
    Ok(())
}

/// How the trace compares with the ground truth, and the RESULT line.
pub(super) fn verdict(
    w: &mut dyn Write,
    v: &Verdict,
    lost_on_purpose: usize,
    seconds: f64,
) -> io::Result<()> {
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
        "RESULT exact={} matched={} expected={} got={} missing_reported={} missing_expected={} duplicates={} seconds={seconds:.2}",
        v.is_exact(),
        cmp.matched,
        cmp.expected,
        cmp.got,
        v.reported.len(),
        v.visible.len(),
        v.duplicates,
    )?;
    Ok(())
}
