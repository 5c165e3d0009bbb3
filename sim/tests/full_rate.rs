//! The full-rate stream is legal by the independent checker and as dense as
//! its rules allow: three column commands in some aligned 8-tick windows,
//! never more; two in 4 ticks; a read on one rank right after a write on
//! the other; every command kind a controller issues.

use hmtt_format::{Command, DdrCmd, Geometry};
use hmtt_sim::dram::{check, Timing};
use hmtt_sim::full_rate::{full_rate_stream, FullRate};

fn columns(s: &[Command]) -> Vec<&Command> {
    s.iter()
        .filter(|c| c.cmd.needs_all_fields() && c.cmd != DdrCmd::Act)
        .collect()
}

/// Most column commands in one aligned window of `w` ticks.
fn densest(s: &[Command], w: u64) -> usize {
    let cols = columns(s);
    let mut best = 0;
    let mut i = 0;
    while i < cols.len() {
        let window = cols[i].cycle / w;
        let n = cols[i..]
            .iter()
            .take_while(|c| c.cycle / w == window)
            .count();
        best = best.max(n);
        i += n;
    }
    best
}

#[test]
fn ddr3_1600_two_ranks_is_legal_and_as_dense_as_the_rules_allow() {
    let g = Geometry::ddr3_default();
    assert_eq!(g.ranks(), 2);
    let s = full_rate_stream(&FullRate::ddr3_1600(g, 30_000, 7));
    assert_eq!(check(&s, &g, &Timing::DDR3_1600), vec![]);
    let cols = columns(&s);
    assert_eq!(cols.len(), 30_000);
    // board.md 2.2: at most 3 RD/WR in an 8-tick clock, 2 in a 4-tick one;
    // the stream reaches both bounds.
    assert_eq!(densest(&s, 8), 3);
    assert_eq!(densest(&s, 4), 2);
    // A write on one rank followed by a read on the other 3 ticks later
    // (CWL + burst + tRTRS - CL = 8 + 4 + 2 - 11).
    let switch = cols.windows(2).any(|p| {
        p[0].cmd == DdrCmd::Wr
            && p[1].cmd == DdrCmd::Rd
            && p[0].rank != p[1].rank
            && p[1].cycle - p[0].cycle == 3
    });
    assert!(
        switch,
        "no write-to-read rank switch at the closest spacing"
    );
    // Same-rank column commands are tCCD apart at the closest.
    let same_rank_min = cols
        .windows(2)
        .filter(|p| p[0].rank == p[1].rank)
        .map(|p| p[1].cycle - p[0].cycle)
        .min();
    assert_eq!(same_rank_min, Some(4));
    for kind in [
        DdrCmd::Act,
        DdrCmd::Pre,
        DdrCmd::Prea,
        DdrCmd::Ref,
        DdrCmd::Rd,
        DdrCmd::Wr,
    ] {
        assert!(s.iter().any(|c| c.cmd == kind), "no {kind:?}");
    }
    // The data bus is busy more than half the time (a burst is 4 ticks; the
    // pattern's read-write turnarounds and refreshes take the rest).
    let span = s.last().unwrap().cycle - s[0].cycle;
    let busy = 4.0 * cols.len() as f64 / span as f64;
    assert!(busy > 0.55, "data bus busy {busy:.2}");
}

#[test]
fn one_rank_geometry_is_legal_too() {
    let g = Geometry::preset("ddr-512m").unwrap();
    let s = full_rate_stream(&FullRate {
        geometry: g,
        timing: Timing::DDR3_1600,
        column_commands: 5_000,
        rows: g.rows() / 2,
        seed: 3,
    });
    assert_eq!(check(&s, &g, &Timing::DDR3_1600), vec![]);
    assert_eq!(densest(&s, 8), 2);
}
