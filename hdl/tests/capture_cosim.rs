//! Co-simulation: the capture chain's FIFO push stream, pop stream and fill
//! level per tick equal the golden model's (`hmtt_sim::board`) for random
//! legal streams, L = 1 and L = 4, 24- and 28-bit line indices, 8 and 16
//! banks, with and without FIFO overflow (LOST words).

mod capture_support;

use capture_support::*;
use hmtt_format::geometry::Geometry;
use hmtt_sim::board::DrainRate;

/// 2 ranks, 8 banks, 13 row bits, 7 column-line bits: 24-bit lines.
fn geometry_24() -> Geometry {
    Geometry::new(1, 3, 13, 7).unwrap()
}

/// 4 ranks, 16 banks, 15 row bits: 28-bit lines (LINE_HI words).
fn geometry_28() -> Geometry {
    Geometry::new(2, 4, 15, 7).unwrap()
}

const SLOW: DrainRate = DrainRate { num: 1, den: 9 };

#[test]
fn cosim_l1_24bit_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = random_stream(&cfg, 1, 1500, 3);
    let hw = cosim::<1, 8, 3>(&cfg, &cmds);
    assert!(
        hw.lost_words > 0 && hw.events_dropped > 0,
        "the test must overflow"
    );
}

#[test]
fn cosim_l1_28bit_no_overflow() {
    let cfg = board_config(geometry_28(), 64, DrainRate { num: 1, den: 5 });
    let cmds = random_stream(&cfg, 2, 600, 12);
    let hw = cosim::<1, 8, 3>(&cfg, &cmds);
    assert_eq!(hw.events_dropped, 0);
    assert!(
        hw.pushed.iter().any(|(_, w)| w >> 21 & 0x1F == 0x11),
        "LINE_HI words expected"
    );
}

#[test]
fn cosim_l4_28bit_overflow() {
    let cfg = board_config(geometry_28(), 64, SLOW);
    let cmds = random_stream(&cfg, 3, 1500, 2);
    let hw = cosim::<4, 32, 1>(&cfg, &cmds);
    assert!(hw.lost_words > 0);
}

#[test]
fn cosim_l4_24bit_default_rate() {
    let cfg = board_config(geometry_24(), 64, DrainRate::line_rate(3, 360, 1250));
    let cmds = random_stream(&cfg, 4, 1500, 6);
    cosim::<4, 32, 1>(&cfg, &cmds);
}

#[test]
fn cosim_l2_28bit_overflow() {
    let cfg = board_config(geometry_28(), 64, SLOW);
    let cmds = random_stream(&cfg, 5, 1000, 2);
    let hw = cosim::<2, 16, 2>(&cfg, &cmds);
    assert!(hw.lost_words > 0);
}
