//! Commands beyond the geometry (rank, bank, row or column wider than the
//! DIMM's, as far as the pins can carry them): the DCBU decodes them as
//! out of range, the DSMU ignores them (no open row changes, no reference)
//! and they are counted, as in the golden model (board.md step 1). The
//! capture chain's pushes, pops, fill levels and counters equal the golden
//! model's on legal streams with such commands mixed in; each one is aimed
//! at a slot in use, so cutting its high bits instead would change the
//! trace.

mod capture_support;

use capture_support::*;
use hmtt_board_model::DrainRate;
use hmtt_format::geometry::Geometry;

#[test]
fn out_of_range_commands_are_counted_and_ignored_l1() {
    let cfg = board_config(
        Geometry::new(1, 3, 13, 7).unwrap(),
        64,
        DrainRate { num: 1, den: 6 },
    );
    let legal = random_stream(&cfg, 41, 700, 3);
    let cmds = with_out_of_range(&cfg, &legal, 42, 5);
    let hw = cosim::<1, 1, 8, 3>(&cfg, &cmds);
    assert!(hw.out_of_range > 60, "out of range: {}", hw.out_of_range);
    assert!(!hw.pushed.is_empty());
}

#[test]
fn out_of_range_commands_are_counted_and_ignored_l4_e2() {
    let cfg = board_config(
        Geometry::new(0, 2, 14, 6).unwrap(),
        64,
        DrainRate { num: 1, den: 9 },
    );
    let legal = random_stream(&cfg, 43, 1200, 2);
    let cmds = with_out_of_range(&cfg, &legal, 44, 4);
    let hw = cosim::<4, 2, 8, 3>(&cfg, &cmds);
    assert!(hw.out_of_range > 150, "out of range: {}", hw.out_of_range);
}
