//! Co-simulation of the Statistic Unit's counters (`hmtt_hdl::statistics`)
//! fed by the capture chain's taps: every record of a non-empty interval
//! (start and end tick, `k`, every counter in format.md §5.3 order) equals
//! the golden model's statistics record for the same stream, the model's
//! unit on from reset at the same `k` and its path given room for every
//! record. Streams: random ones with the limit and FIFO overflow at work,
//! unused activations, commands outside the geometry, and the inner
//! commands STATS_ON, STATS_OFF and STATS_INTERVAL_k, at several interval
//! lengths and lanes.

mod capture_support;
mod statistics_support;

use capture_support::*;
use hmtt_board_model::{BoardConfig, DrainRate};
use hmtt_format::command::Command;
use hmtt_hdl::capture::CaptureConfig;
use hmtt_hdl::dcbu::CommandPins;
use hmtt_hdl::statistics::READ_LATENCY;
use rust_hdl::prelude::*;
use statistics_support::*;
use std::collections::{BTreeMap, VecDeque};

/// Runs `cmds` through the capture chain and the unit, on from reset at
/// intervals of `2^k` ticks, until the counting stage's tick reaches
/// `stop`; returns the records and the capture chain's references over
/// the limit and events dropped.
fn run_hdl<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    capture: CaptureConfig,
    drain: DrainRate,
    cmds: &[Command],
    k: u32,
    stop: u64,
) -> (Vec<Record>, u64, u64) {
    // The unit's 160-odd counters make a block too large for a test
    // thread's stack.
    let cmds = cmds.to_vec();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            run_hdl_on_this_thread::<L, E, B, AB, R, NB, LB>(capture, drain, &cmds, k, stop)
        })
        .expect("simulation thread")
        .join()
        .expect("simulation")
}

fn run_hdl_on_this_thread<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    capture: CaptureConfig,
    drain: DrainRate,
    cmds: &[Command],
    k: u32,
    stop: u64,
) -> (Vec<Record>, u64, u64) {
    let pins = pin_commands(cmds);
    let by_tick: BTreeMap<u64, PinCommand> = pins.iter().map(|c| (c.tick, *c)).collect();
    assert_eq!(by_tick.len(), pins.len(), "one command per tick");
    let mut uut = CaptureStats::<L, E, B, AB, R, NB, LB>::new(capture, k);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<CaptureStats<L, E, B, AB, R, NB, LB>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<CaptureStats<L, E, B, AB, R, NB, LB>>| {
        let mut x = sim.init()?;
        x.drain_num.next = (drain.num * L as u64).to_bits();
        x.drain_den.next = drain.den.to_bits();
        let mut records = Vec::new();
        let mut clock = 0u64;
        // The readout walks the counters, one a clock, and must give the
        // held record (here the last, held at its record_valid) as it was
        // in the clock of the index, READ_LATENCY clocks later; past the
        // last counter it gives 0.
        let counters = x.su.record_counters().len() as u64;
        let mut nonzero_reads = 0u64;
        let mut reads_in_flight = VecDeque::new();
        loop {
            let index = clock % (counters + 1);
            x.read_index.next = index.to_bits();
            let expect =
                x.su.record_counters()
                    .get(index as usize)
                    .map_or(0, |c| c.held.val().to_u64());
            reads_in_flight.push_back((index, expect));
            for j in 0..L {
                let t = clock * L as u64 + j as u64;
                let p = match by_tick.get(&t) {
                    Some(c) => CommandPins::for_command(c.kind, c.rank, c.bank, c.arg),
                    None => CommandPins::DESELECT,
                };
                set_pins(&mut x.pins[j], p);
            }
            wait_clock_cycle!(sim, clock, x);
            clock += 1;
            if reads_in_flight.len() == READ_LATENCY {
                let (index, expect) = reads_in_flight.pop_front().unwrap();
                assert_eq!(
                    x.read_value.val().to_u64(),
                    expect,
                    "readout of counter {index} at clock {clock}"
                );
                nonzero_reads += u64::from(expect != 0);
            }
            if x.capture.dropped_tick_valid.val() {
                assert!(x.su.aligned.val(), "the taps' delay lines are misaligned");
            }
            if x.su.record_valid.val() {
                let start = x.su.record_start.val().to_u64();
                let end = x.su.record_end.val().to_u64();
                let k = x.su.record_k.val().to_u64() as u8;
                let counters =
                    x.su.record_counters()
                        .iter()
                        .map(|c| c.snapshot.val().to_u32())
                        .collect();
                records.push((start, end, k, counters));
            }
            if x.capture.dropped_tick_valid.val() && x.capture.dropped_tick.val().to_u64() >= stop {
                break;
            }
        }
        assert!(nonzero_reads > 0, "the readout must have read counts");
        let over = x.capture.references_over_limit.val().to_u64();
        let dropped = x.capture.events_dropped.val().to_u64();
        tx.send((records, over, dropped)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

/// Runs the RustHDL unit and checks it against the golden model.
fn cosim<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    cfg: &BoardConfig,
    cmds: &[Command],
    k: u8,
) -> Vec<Record> {
    assert_eq!(cfg.fifo_depth, B << AB);
    check_against_model(cfg, L, E, cmds, k, |stop| {
        run_hdl::<L, E, B, AB, R, NB, LB>(capture_config(cfg), cfg.drain, cmds, k.into(), stop)
    })
}

/// L = 8, E = 3 (the ECP5 board) at the shortest interval: the limit and
/// FIFO overflow both drop, and row hits, misses, conflicts and unused
/// activations all occur.
#[test]
fn statistics_l8_e3_k6_limit_and_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = with_unused_activations(&random_stream(&cfg, 3, 1500, 2), 4, 7);
    let hw = cosim::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 6);
    assert_drops_and_row_outcomes(&cfg, &hw);
}

/// L = 8 at a longer interval, with commands outside the geometry (they
/// count where their rank and bank fit, and yield no reference) and
/// inner commands that switch the unit and set `k`.
#[test]
fn statistics_l8_e3_k9_out_of_range() {
    let cfg = board_config(geometry_24(), 64, DrainRate { num: 1, den: 12 });
    let legal = random_stream(&cfg, 8, 1200, 4);
    let cmds = with_interval_commands(&cfg, &with_out_of_range(&cfg, &legal, 9, 5), 6..=9, 2, 1);
    let hw = cosim::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 9);
    assert_changes(&hw, 9);
}

/// L = 2, E = 2 (the iCE40's shape), one rank, from two interval lengths
/// at reset, with inner commands that switch the unit and set `k`.
#[test]
fn statistics_l2_e2_k7_and_k11() {
    let cfg = board_config(geometry_20(), 64, SLOW);
    let cmds = with_interval_commands(&cfg, &random_stream(&cfg, 5, 900, 3), 7..=11, 3, 2);
    let hw = cosim::<2, 2, 8, 3, 1, 4, 20>(&cfg, &cmds, 7);
    assert_changes(&hw, 7);
    let hw = cosim::<2, 2, 8, 3, 1, 4, 20>(&cfg, &cmds, 11);
    assert_changes(&hw, 11);
}

/// L = 8 at the shortest interval on one bank: row outcomes across and
/// within clocks, past an interval's end, after REF and after RDA, as
/// worked out by hand ([`directed_row_stream`]).
#[test]
fn statistics_l8_e3_k6_directed_row_outcomes() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let (cmds, _) = directed_row_stream();
    let hw = cosim::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 6);
    assert_directed_outcomes(&cfg, &hw);
}
