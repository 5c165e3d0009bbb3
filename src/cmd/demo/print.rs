//! What `hmtt demo` says of its run (the first records beside the ground
//! truth and the verdict are `hmtt_merge::verify`'s reports).

use std::io::{self, Write};
use std::path::Path;

use hmtt_format::truth::RefKind;
use hmtt_merge::MergeReport;
use hmtt_receiver::Summary as CaptureSummary;
use hmtt_sim::machine::SimOutput;
use hmtt_sim::send::SendStats;

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

/// What went over loopback to the `ports` ports and what the receiver
/// wrote into `dir`.
pub(super) fn sent(
    w: &mut dyn Write,
    sent: &SendStats,
    ports: usize,
    received: &CaptureSummary,
    dir: &Path,
) -> io::Result<()> {
    writeln!(
        w,
        "  sent:       {} packets ({} bytes) to {ports} ports on 127.0.0.1",
        sent.packets, sent.bytes,
    )?;
    let packets: u64 = received.ports.iter().map(|p| p.packets).sum();
    writeln!(
        w,
        "  received:   {packets} packets into {} ({})",
        dir.display(),
        received.stop_reason
    )
}

/// The merge into `trace`, and what it found missing.
pub(super) fn merged(w: &mut dyn Write, report: &MergeReport, trace: &Path) -> io::Result<()> {
    writeln!(
        w,
        "  merged:     {} packets, {} records into {}",
        report.packets(),
        report.records,
        trace.display()
    )?;
    if !report.is_clean() {
        for line in report.to_string().lines().skip(1) {
            writeln!(w, "    {line}")?;
        }
    }
    Ok(())
}
