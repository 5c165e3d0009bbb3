//! Co-simulation: the capture chain's FIFO push stream, pop stream, fill
//! level and mode per clock and its counters equal the golden model's
//! (`hmtt_board_model::Board` and its probe) for random streams, for the (L, E)
//! pairs the boards use (8, 3) and (2, 2) and a few others, 24- and 28-bit
//! line indices, 8 and 16 banks, with and without FIFO overflow (LOST
//! words), and with more than E references per clock (the limit).

mod capture_support;

use capture_support::*;
use hmtt_board_model::DrainRate;
use hmtt_format::geometry::Geometry;
use hmtt_format::record::RecordWord;
use hmtt_sim::full_rate::{full_rate_stream, FullRate};

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
fn cosim_l1_e1_24bit_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = random_stream(&cfg, 1, 1500, 3);
    let hw = cosim::<1, 1, 8, 3>(&cfg, &cmds);
    assert!(
        hw.lost_words > 0 && hw.events_dropped > 0,
        "the test must overflow"
    );
}

#[test]
fn cosim_l2_e2_28bit_no_overflow() {
    let cfg = board_config(geometry_28(), 64, DrainRate { num: 1, den: 5 });
    let cmds = random_stream(&cfg, 2, 600, 12);
    let hw = cosim::<2, 2, 8, 3>(&cfg, &cmds);
    assert_eq!(hw.events_dropped, 0);
    assert!(
        hw.pushed.iter().any(|(_, w)| w >> 21 & 0x1F == 0x11),
        "LINE_HI words expected"
    );
}

#[test]
fn cosim_l2_e2_28bit_overflow() {
    let cfg = board_config(geometry_28(), 64, SLOW);
    let cmds = random_stream(&cfg, 5, 1000, 2);
    let hw = cosim::<2, 2, 8, 3>(&cfg, &cmds);
    assert!(hw.lost_words > 0);
}

#[test]
fn cosim_l8_e3_28bit_overflow_and_limit() {
    let cfg = board_config(geometry_28(), 64, SLOW);
    let cmds = random_stream(&cfg, 3, 1500, 2);
    let hw = cosim::<8, 3, 16, 2>(&cfg, &cmds);
    assert!(hw.lost_words > 0);
    assert!(hw.references_over_limit > 0, "the stream must exceed E");
}

#[test]
fn cosim_l8_e3_24bit_default_rate() {
    let cfg = board_config(geometry_24(), 64, DrainRate::line_rate(3, 360, 1250));
    let cmds = random_stream(&cfg, 4, 1500, 6);
    cosim::<8, 3, 16, 2>(&cfg, &cmds);
}

#[test]
fn cosim_l4_e2_28bit_limit() {
    let cfg = board_config(geometry_28(), 64, DrainRate { num: 1, den: 5 });
    let cmds = random_stream(&cfg, 6, 1200, 1);
    let hw = cosim::<4, 2, 8, 3>(&cfg, &cmds);
    assert!(hw.references_over_limit > 0 && hw.clocks_over_limit > 0);
}

#[test]
fn cosim_l4_e4_24bit_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = random_stream(&cfg, 7, 1200, 2);
    let hw = cosim::<4, 4, 16, 2>(&cfg, &cmds);
    assert!(hw.lost_words > 0);
    assert_eq!(hw.references_over_limit, 0);
}

/// The ECP5 board's worst legal case: a DDR3-1600 stream at the densest
/// spacing the timing allows (`hmtt_sim::full_rate`) never has more than
/// E = 3 references in a clock of L = 8 ticks, on either side, and the
/// chain matches the model word for word through FIFO overflow.
#[test]
fn cosim_l8_e3_full_rate_legal_stream() {
    let g = Geometry::ddr3_default();
    let cmds = full_rate_stream(&FullRate::ddr3_1600(g, 3000, 11));
    let cfg = board_config(g, 256, DrainRate::line_rate(3, 360, 1250));
    let (hw, gold) = cosim_with_model::<8, 3, 16, 4>(&cfg, &cmds);
    assert_eq!(hw.references_over_limit, 0, "HDL: references over E = 3");
    assert_eq!(
        gold.references_over_limit, 0,
        "model: references over E = 3"
    );
    assert_eq!(hw.clocks_over_limit + gold.clocks_over_limit, 0);
    assert_eq!(hw.protocol_errors, 0);
    let accesses = hw
        .pushed
        .iter()
        .filter(|(_, w)| !RecordWord(*w).is_control())
        .count() as u64;
    assert_eq!(
        accesses + hw.events_dropped,
        3000,
        "every RD/WR is an ACCESS word or dropped"
    );
    assert!(hw.events_dropped > 0, "the stream outruns the drain");
}
