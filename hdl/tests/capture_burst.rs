//! Burst: a read or write every tCK (two per clock at L = 2, E = 2) into
//! the 16K-word TX FIFO at the default drain rate. No record is lost until
//! a clock's room test fails (board.md 2.2), and the fill level
//! follows the golden model clock for clock.

mod capture_support;

use capture_support::*;
use hmtt_board_model::BoardConfig;
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;

#[test]
fn burst_fills_the_16k_fifo_without_loss_then_reports_lost() {
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    assert_eq!(cfg.fifo_depth, 16384);
    let ticks = 19_000u64;
    let mut cmds = vec![Command {
        cycle: 0,
        cmd: DdrCmd::Act,
        rank: 0,
        bank: 2,
        arg: 77,
    }];
    cmds.extend((1..ticks).map(|t| Command {
        cycle: t,
        cmd: if t % 3 == 0 { DdrCmd::Wr } else { DdrCmd::Rd },
        rank: 0,
        bank: 2,
        arg: ((t % 128) * 8) as u32,
    }));
    let pins = pin_commands(&cmds);
    let start = std::time::Instant::now();
    let hw = run_capture::<2, 2, 8, 11>(
        capture_config(&cfg),
        Drain {
            num: cfg.drain.num,
            den: cfg.drain.den,
        },
        &pins,
        ticks / 2 + 50,
    );
    eprintln!(
        "RustHDL L=2, 16K FIFO: {} fabric clocks in {:.1} s = {:.0} clocks/s",
        hw.levels.len(),
        start.elapsed().as_secs_f64(),
        hw.levels.len() as f64 / start.elapsed().as_secs_f64()
    );
    let n = hw.levels.len() as u64;
    let gold = model(&cfg, 2, 2, &cmds, n);
    assert_eq!(hw.levels, gold.levels, "fill level per clock");
    assert_eq!(hw.pushed, gold.pushed, "pushed words");
    // Pops come out READ_LATENCY - 1 clocks after the push side.
    let settled = |v: &[(u64, u32)]| -> Vec<(u64, u32)> {
        v.iter().filter(|p| p.0 + 8 < n).copied().collect()
    };
    assert_eq!(settled(&hw.popped), settled(&gold.popped), "popped words");
    // Two references a clock, one word each: every clock pushes two words
    // until the first clock whose room test `depth - level_k +
    // pushed_{k-1}` (two words before it) falls below 2(2 + 3E) = 16
    // (board.md 2.2), i.e. at a level above 16384 - 14.
    let mut per_clock = vec![0u32; n as usize];
    for (k, _) in &hw.pushed {
        per_clock[*k as usize] += 1;
    }
    let first_drop = (1..ticks / 2)
        .find(|&k| per_clock[k as usize] < 2)
        .expect("the burst overflows");
    // `levels[k]` is the level after clock k, the level at the start of
    // clock k + 1.
    assert!(
        hw.levels[(first_drop - 1) as usize] > 16384 - 14,
        "first loss only when closed"
    );
    assert!(hw.levels[..first_drop as usize - 1]
        .iter()
        .all(|&l| l <= 16384 - 14));
    assert!(hw.lost_words > 0, "LOST words once room returns");
    assert!(hw.high_water > 16384 - 14 && hw.high_water <= 16384);
}
