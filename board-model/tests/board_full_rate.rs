//! The board at full rate: a legal DDR3-1600 stream at the densest spacing
//! (`hmtt_sim::full_rate`) never goes over the reference limit of the ECP5
//! board (L = 8, E = 3), and every reference is either in the packets or in
//! a LOST count, although the stream outruns the drain many times over.

mod board_common;

use board_common::*;
use hmtt_board_model::{run_commands, BoardConfig, BoardCounters};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_format::record::BoardEvent;
use hmtt_sim::full_rate::{full_rate_stream, FullRate};

/// Runs the stream; checks that every reference is accounted for: the
/// ACCESS events decoded from the packets are the expected ones minus the
/// dropped, in order, and decoded + LOST-reported + pending = references.
fn run_and_account(cfg: &BoardConfig, cmds: &[Command]) -> BoardCounters {
    let (packets, n) = run_commands(cfg.clone(), cmds.iter().copied()).unwrap();
    let expected = expected_events(cfg, cmds);
    assert_eq!(expected.len() as u64, n.references);
    let decoded = decode(cfg, &packets);
    let mut lost_in_packets = 0u64;
    let mut next = expected.iter();
    let mut accesses = 0u64;
    for e in &decoded {
        match e.event {
            BoardEvent::Lost { count } => lost_in_packets += u64::from(count),
            ev => {
                // A subsequence of the expected events, with their ticks.
                assert!(
                    next.any(|x| x.tick == e.tick && x.event == ev),
                    "{e:?} is not next in the stream's references"
                );
                accesses += 1;
            }
        }
    }
    assert_eq!(lost_in_packets, n.lost_reported);
    assert_eq!(accesses + n.lost_reported + n.lost_pending, n.references);
    assert_eq!(
        n.lost_reported + n.lost_pending,
        n.events_dropped + n.references_over_limit
    );
    n
}

#[test]
fn the_ecp5_board_takes_a_full_rate_legal_stream_without_protocol_violations() {
    let g = Geometry::ddr3_default();
    // Enough references to outrun the 16K-word FIFO at the ports' rate.
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 60_000, 11));
    let cfg = BoardConfig::new(g).with_lanes(8, 3);
    let n = run_and_account(&cfg, &cmds);
    assert_eq!(n.references, 60_000);
    assert_eq!(n.references_over_limit, 0);
    assert_eq!(n.clocks_over_limit, 0);
    assert_eq!(n.protocol_errors, 0);
    // The stream outruns the three ports: the FIFO overflows and LOST words
    // carry the count.
    assert!(n.events_dropped > 1_000, "{n:?}");
    assert!(n.lost_words > 0);
}

#[test]
fn two_references_a_clock_are_too_few_at_eight_lanes() {
    let g = Geometry::ddr3_default();
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 20_000, 11));
    let n = run_and_account(&BoardConfig::new(g).with_lanes(8, 2), &cmds);
    assert!(n.references_over_limit > 0);
    assert!(n.clocks_over_limit > 0);
    // At four lanes two a clock are enough again (board.md 2.2).
    let n = run_and_account(&BoardConfig::new(g).with_lanes(4, 2), &cmds);
    assert_eq!(n.references_over_limit, 0);
}
