//! What `hmtt demo` says of its run (the first records beside the ground
//! truth and the verdict are `hmtt_merge::verify`'s reports).

use std::io::{self, Write};

use hmtt_format::truth::RefKind;
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
