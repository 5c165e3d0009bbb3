//! Co-simulation of the RDHPU (`hmtt_hdl::reuse`) in RustHDL against the
//! golden model (`ReuseUnit`, `P = 1`): every interval's record (the
//! histogram of stack distances, the skipped references, the hot pages
//! with their counts) equal, on random pages with locality, a stream
//! that fills the stack and pushes pages out, bursts of several
//! references a clock, and intervals of several lengths.

mod reuse_support;

use hmtt_hdl::reuse::{DEPTH, MIN_INTERVAL};
use reuse_support::*;

/// Pages of 18 bits (24-bit lines), one reference a clock or none, with
/// locality; intervals of the least length and longer.
#[test]
fn reuse_random_pages_with_locality() {
    let mut base = 0;
    let clocks = stream(1, 1600, &[MIN_INTERVAL, 400, 700], |rng, _| {
        if rng.below(4) == 0 {
            return Vec::new();
        }
        vec![(0, local_page(rng, &mut base, 40, (1 << 18) - 1))]
    });
    let hw = cosim::<8, 18>(&clocks);
    assert!(hw.len() >= 4);
    // Hits at many depths, misses, and a full hot list.
    let hist_sum: Vec<u32> = (0..=DEPTH)
        .map(|d| hw.iter().map(|r| r.0[d]).sum())
        .collect();
    assert!(hist_sum[..DEPTH].iter().filter(|&&h| h > 0).count() > 30);
    assert!(hist_sum[DEPTH] > 0);
    assert!(hw.iter().any(|r| r.2.len() == 8));
}

/// More than 128 pages in a cycle, so that each comes back after it
/// left the stack (deeper or new), and a cycle of 128 that hits at the
/// last position; back to back, one a clock.
#[test]
fn reuse_stack_filling_stream() {
    let clocks = stream(2, 1400, &[300, MIN_INTERVAL], |_, c| {
        let page = if c < 700 { c % 131 } else { 1000 + c % 128 };
        vec![(0, page as u64)]
    });
    let hw = cosim::<8, 18>(&clocks);
    let deep: u32 = hw.iter().map(|r| r.0[DEPTH - 1]).sum();
    let new: u32 = hw.iter().map(|r| r.0[DEPTH]).sum();
    assert!(deep > 100 && new > 600, "deep {deep}, new {new}");
}

/// Bursts of up to 4 references a clock in random lanes: the clock's
/// first goes to the stack, the others are skipped; pages of 42 bits
/// (the widest line).
#[test]
fn reuse_bursts_are_skipped_and_counted() {
    let mut base = 0;
    let clocks = stream(3, 1300, &[500, MIN_INTERVAL + 37], |rng, _| {
        let n = [0, 1, 1, 2, 3, 4][rng.below(6) as usize];
        let mut lanes: Vec<usize> = (0..8).collect();
        for i in 0..8 {
            lanes.swap(i, i + rng.below(8 - i as u64) as usize);
        }
        let mut refs: Vec<(usize, u64)> = lanes[..n]
            .iter()
            .map(|&lane| (lane, local_page(rng, &mut base, 24, (1 << 42) - 1)))
            .collect();
        refs.sort();
        refs
    });
    let hw = cosim::<8, 42>(&clocks);
    assert!(hw.iter().all(|r| r.1 > 0), "every interval skips some");
}

/// Two lanes (the iCE40's shape), every clock full, at intervals of
/// three lengths.
#[test]
fn reuse_two_lanes_full() {
    let mut base = 0;
    let clocks = stream(4, 1500, &[MIN_INTERVAL, 333, 512], |rng, _| {
        vec![
            (0, local_page(rng, &mut base, 12, (1 << 14) - 1)),
            (1, local_page(rng, &mut base, 12, (1 << 14) - 1)),
        ]
    });
    let hw = cosim::<2, 14>(&clocks);
    // Every clock's second reference is skipped.
    assert!(hw.iter().all(|r| r.1 == r.0.iter().sum::<u32>()));
    assert!(hw.iter().filter(|r| r.1 > 200).count() >= 4);
}

/// A close less than `MIN_INTERVAL` clocks after the one before sets
/// `overrun`; one exactly that far does not.
#[test]
fn reuse_closes_too_close_set_overrun() {
    let run = |gap: usize| {
        let mut clocks = stream(5, 10, &[], |_, c| vec![(0, c as u64)]);
        clocks[0].close = true;
        clocks.resize(gap, Inputs::default());
        clocks.push(Inputs {
            refs: vec![(0, 7)],
            close: true,
        });
        clocks.resize(gap + MIN_INTERVAL, Inputs::default());
        clocks.push(Inputs {
            refs: Vec::new(),
            close: true,
        });
        hdl_records::<1, 8>(&clocks)
    };
    let (records, overrun) = run(MIN_INTERVAL);
    assert!(!overrun);
    assert_eq!(records.len(), 3);
    let (_, overrun) = run(MIN_INTERVAL - 1);
    assert!(overrun);
}

/// Closes long after the last reference (the top snapshot's count
/// already in its slot, read while the interval's RAM still counts) and
/// right after one (still pending), with pages that stay in the stack
/// across intervals.
#[test]
fn reuse_closes_after_quiet_clocks() {
    let mut clocks = stream(6, 1500, &[300, MIN_INTERVAL, 450], |rng, c| {
        if (c % 300) < 160 && rng.below(3) != 0 {
            vec![(0, rng.below(9) + (c as u64 / 600) * 3)]
        } else {
            Vec::new()
        }
    });
    clocks.resize(clocks.len() + 2 * MIN_INTERVAL, Inputs::default());
    clocks.push(Inputs {
        refs: Vec::new(),
        close: true,
    });
    let hw = cosim::<8, 18>(&clocks);
    assert!(hw.iter().filter(|r| !r.2.is_empty()).count() >= 4);
}

/// The histogram read with pauses (the bin held while `hist_shift` is
/// low) and past its last bin (0), at intervals long enough for it.
#[test]
fn reuse_histogram_read_with_pauses() {
    let mut base = 0;
    let clocks = stream(9, 2400, &[600, 700, 540], |rng, _| {
        if rng.below(5) == 0 {
            return Vec::new();
        }
        vec![(0, local_page(rng, &mut base, 60, (1 << 18) - 1))]
    });
    let hw = cosim_read_by::<8, 18>(&clocks, Some(10));
    assert!(hw.len() >= 4);
    assert!(hw.iter().all(|r| r.0[DEPTH] > 0));
}
