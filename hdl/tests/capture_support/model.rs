//! The golden model (`hmtt_board_model::Board` with its co-simulation probe)
//! seen through the capture chain's probe outputs: words pushed and popped
//! with their clock, the fill level and the mode after every clock, and the
//! counters, over the same clocks the HDL ran.

use hmtt_board_model::{Board, BoardConfig};
use hmtt_format::command::Command;

use super::CaptureTrace;

/// Runs `cmds` (ticks increasing) through the golden model built with
/// `cfg` at `lanes` ticks per clock and `refs` references per clock, for
/// fabric clocks `0..clocks`.
pub fn model(
    cfg: &BoardConfig,
    lanes: u64,
    refs: usize,
    cmds: &[Command],
    clocks: u64,
) -> CaptureTrace {
    let cfg = cfg.clone().with_lanes(lanes as u32, refs as u32);
    let mut board = Board::new(cfg).expect("valid board config");
    board.enable_probe();
    let mut trace = CaptureTrace::default();
    // The mode changes only with commands: feed them clock by clock and
    // read the mode after each clock's commands.
    let mut next = 0;
    let mut flags = board.mode().header_flags();
    for k in 0..clocks {
        let end = cmds[next..]
            .iter()
            .position(|c| c.cycle >= (k + 1) * lanes)
            .map_or(cmds.len(), |p| next + p);
        if end > next {
            board.commands(&cmds[next..end]).expect("commands in order");
            next = end;
            flags = board.mode().header_flags();
        }
        trace.modes.push(flags);
    }
    assert_eq!(
        next,
        cmds.len(),
        "the stream must end before clock {clocks}"
    );
    // Every clock before `clocks` (and the keeper of clock `clocks`, left
    // out below).
    let end_tick = (clocks * lanes).max(board.current_tick());
    board.advance_to(end_tick).expect("time goes forward");
    let probe = board.take_probe().expect("probe on");
    let c = board.counters();
    let late_fillers = probe.pushed.iter().filter(|p| p.0 >= clocks).count() as u64;
    trace.pushed = probe
        .pushed
        .iter()
        .filter(|p| p.0 < clocks)
        .map(|(k, w)| (*k, w.0))
        .collect();
    trace.popped = probe
        .popped
        .iter()
        .filter(|p| p.0 < clocks)
        .map(|(k, w)| (*k, w.0))
        .collect();
    trace.levels = if clocks == 0 {
        vec![]
    } else {
        probe.levels(0, clocks - 1)
    };
    trace.protocol_errors = c.protocol_errors;
    trace.unknown_commands = c.unknown_commands;
    trace.out_of_range = c.out_of_range;
    trace.references_over_limit = c.references_over_limit;
    trace.clocks_over_limit = c.clocks_over_limit;
    trace.events_dropped = c.events_dropped;
    trace.lost_words = c.lost_words;
    trace.time_fillers = c.time_fillers - late_fillers;
    trace.time_overflows = c.time_overflows;
    trace.lost_pending = c.lost_pending;
    trace.high_water = if late_fillers == 0 {
        c.fifo_high_water
    } else {
        // The keeper of clock `clocks` may have set the model's mark: the
        // highest `level_k + pushed_k` of the clocks before it.
        let mut level = 0u64;
        let mut high = 0;
        for a in probe.activity().iter().filter(|a| a.clock < clocks) {
            high = high.max(level + u64::from(a.pushed));
            level = a.level.into();
        }
        high
    };
    trace
}
