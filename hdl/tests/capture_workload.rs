//! Co-simulation on the simulator's own DDR command streams (quicksort
//! through the DRAM controller model, cache on and off): the capture
//! chain's pushes, pops and fill level per tick equal the golden model's.

mod capture_support;

use capture_support::*;
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::Workload;

fn workload_stream(
    cache_on: bool,
) -> (
    hmtt_board_model::BoardConfig,
    Vec<hmtt_format::command::Command>,
) {
    let mut cfg =
        SimConfig::default().workload(Workload::by_name("quicksort", 3000, 4, 0).unwrap());
    if !cache_on {
        cfg = cfg.cache_off();
    }
    cfg.run_boards = false;
    let out = simulate(&cfg).expect("simulation runs");
    let board = out.board_configs[0].clone();
    assert!(!board.start_tags_only);
    // The first 20000 ticks keep the RustHDL run short.
    let cmds: Vec<_> = out.commands[0]
        .iter()
        .filter(|c| c.cycle < 20_000)
        .copied()
        .collect();
    assert!(
        cmds.windows(2).all(|w| w[0].cycle < w[1].cycle),
        "one command per tick on the pins"
    );
    (board, cmds)
}

#[test]
fn cosim_quicksort_cache_on_l2_e2() {
    let (cfg, cmds) = workload_stream(true);
    assert!(cmds.len() > 50, "a real stream: {} commands", cmds.len());
    let hw = cosim::<2, 2, 8, 11>(&cfg, &cmds);
    assert!(!hw.pushed.is_empty());
}

#[test]
fn cosim_quicksort_cache_off_l8_e3() {
    let (cfg, cmds) = workload_stream(false);
    assert!(cmds.len() > 50, "a real stream: {} commands", cmds.len());
    let hw = cosim::<8, 3, 16, 10>(&cfg, &cmds);
    assert!(!hw.pushed.is_empty());
}
