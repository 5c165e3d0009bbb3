//! Long idle gaps (several `KEEPER_GAP = 64 * (2^21-1)` ticks, about 0.17 s
//! each at DDR3-1600) against the golden model's keeper, clock by clock
//! (format.md section 4.1, board.md 2.2 step 1): one filler TIME word in
//! the first clock with `k L - last >= KEEPER_GAP`, before the clock's
//! events, at most one per clock, and at most one TIME word per event.
//!
//! Simulating 10^9 ticks clock by clock is out of reach for RustHDL (a few
//! thousand clocks per second), so this runs the encoder with the drain's
//! pop decision (`encoder::Encoder`, the part of the capture chain that
//! owns time) and skips idle stretches: its tick input jumps ahead only when
//! nothing can happen in between, i.e. the FIFO has been empty long enough
//! for the drain's credit to sit at its cap (`den`), no event is due and the
//! keeper is not due (it is due `KEEPER_GAP` after the encoder's `last`,
//! the running time of the words pushed). The DCBU's free-running tick
//! counter cannot jump, so the whole chain is not run here; the events are
//! the references the DSMU would make of the same DDR command stream the
//! golden model gets, the first `E` of a clock in its slots (the limit).
//! Pushed words with their clocks, popped words with their clocks, the
//! fill level after every clock with activity and the counters must be
//! equal.

mod capture_support;

use capture_support::{board_config, Rng};
use hmtt_board_model::{Board, BoardConfig, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{Opcode, RecordWord, KEEPER_GAP};
use hmtt_hdl::cu::event_kind;
use hmtt_hdl::encoder::{Encoder, GROUPS, KEEPER_GAP as HDL_KEEPER_GAP, LATENCY};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// One ACCESS event for the encoder: (tick, write, line).
type Access = (u64, bool, u64);

/// What both sides did to the FIFO.
#[derive(Debug, Default, PartialEq, Eq)]
struct FifoTrace {
    pushed: Vec<(u64, u32)>,
    popped: Vec<(u64, u32)>,
    /// (tick, fill level after it) for every tick with a push or a pop.
    activity: Vec<(u64, u32)>,
    events_dropped: u64,
    lost_words: u64,
    time_fillers: u64,
    time_overflows: u64,
}

/// Bursts of reads and writes (one per tick, an ACT first) separated by
/// `gaps`; ranks 0..=2 only, so nothing falls into the config window (top
/// of rank 3). Returns the command stream and the references it makes.
fn stream(g: &Geometry, gaps: &[u64], burst: usize, seed: u64) -> (Vec<Command>, Vec<Access>) {
    let mut rng = Rng(seed);
    let mut cmds = vec![];
    let mut refs = vec![];
    let mut t = 10;
    for &gap in gaps {
        let rank = rng.below(3) as u32;
        let bank = rng.below(g.banks().into()) as u32;
        let row = rng.below(g.rows().into()) as u32;
        cmds.push(Command {
            cycle: t,
            cmd: DdrCmd::Act,
            rank,
            bank,
            arg: row,
        });
        t += 1;
        for _ in 0..burst {
            let col = (rng.below(g.lines_per_row().into()) << 3) as u32;
            let write = rng.below(2) == 0;
            let cmd = if write { DdrCmd::Wr } else { DdrCmd::Rd };
            cmds.push(Command {
                cycle: t,
                cmd,
                rank,
                bank,
                arg: col,
            });
            let line = (((u64::from(rank) << g.row_bits() | u64::from(row)) << g.bank_bits()
                | u64::from(bank))
                << g.col_line_bits())
                | u64::from(col >> 3);
            refs.push((t, write, line));
            t += 1 + rng.below(2);
        }
        t += gap;
    }
    (cmds, refs)
}

fn golden(cfg: &BoardConfig, cmds: &[Command]) -> FifoTrace {
    let mut board = Board::new(cfg.clone()).expect("valid board config");
    board.enable_probe();
    board.commands(cmds).expect("legal stream");
    board.finish();
    let probe = board.take_probe().expect("probe on");
    let c = board.counters();
    FifoTrace {
        pushed: probe.pushed.iter().map(|(k, w)| (*k, w.0)).collect(),
        popped: probe.popped.iter().map(|(k, w)| (*k, w.0)).collect(),
        activity: probe
            .activity()
            .iter()
            .map(|a| (a.clock, a.level))
            .collect(),
        events_dropped: c.events_dropped,
        lost_words: c.lost_words,
        time_fillers: c.time_fillers,
        time_overflows: c.time_overflows,
    }
}

/// The running time after `w` from `t` (format.md 4.1: `+ dt`, and
/// `+ payload * 64` for TIME).
fn time_after(t: u64, w: u32) -> u64 {
    let word = RecordWord(w);
    let t = t + u64::from(word.dt());
    if word.is_control() && word.opcode() == Opcode::Time {
        t + u64::from(word.payload()) * 64
    } else {
        t
    }
}

/// Runs `refs` through an `Encoder<E>` at `L` ticks per clock up to clock
/// `end`, skipping idle stretches (see the module documentation); the
/// harness applies the limit (a clock's first `E` references go into the
/// slots, the others are counted in `over`). Returns the trace and the
/// number of fabric clocks simulated.
fn run_encoder<const L: usize, const E: usize>(
    refs: &[Access],
    depth: u64,
    drain: DrainRate,
    end: u64,
) -> (FifoTrace, u64) {
    let by_tick: BTreeMap<u64, (bool, u64)> = refs.iter().map(|&(t, w, l)| (t, (w, l))).collect();
    let lanes = L as u64;
    // Idle clocks with an empty FIFO after which the credit is at its cap.
    let settle = drain.den.div_ceil(drain.num * lanes) + 2;
    let mut uut = Encoder::<E>::new(L >= 4);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Encoder<E>>| x.clock.next = !x.clock.val());
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Encoder<E>>| {
        let mut x = sim.init()?;
        x.depth.next = depth.to_bits();
        x.drain_num.next = (drain.num * lanes).to_bits();
        x.drain_den.next = drain.den.to_bits();
        let mut trace = FifoTrace::default();
        let (mut base, mut clocks) = (0u64, 0u64);
        let (mut empty_run, mut last) = (0u64, 0u64);
        // The outputs come `LATENCY` clocks after the inputs: `seen` is
        // the first clock whose outputs have not come out yet. Idle
        // stretches are skipped on what has come out; the clocks still in
        // the pipeline hold no event (checked) and no keeper push (the
        // target stays at or below `last + KEEPER_GAP`), so nothing
        // happens in them either.
        let mut seen = 0u64;
        // A clock's fill level comes a clock after its words and pop: the
        // clock and whether it pushed or popped wait here for it. The level
        // after the clock before is then known with a clock's words.
        let mut awaiting_fill: Option<(u64, bool)> = None;
        let mut last_fill = 0;
        let mut flush = 0;
        while flush < LATENCY + 2 {
            if base / lanes > end {
                flush += 1;
            }
            x.tick_in.next = base.to_bits();
            x.tick_valid_in.next = true;
            let events: Vec<(u64, bool, u64)> = (0..lanes)
                .filter_map(|j| {
                    by_tick
                        .get(&(base + j))
                        .filter(|_| base / lanes <= end)
                        .map(|e| (j, e.0, e.1))
                })
                .collect();
            for s in 0..E {
                let ev = events.get(s);
                x.ev_valid[s].next = ev.is_some();
                x.ev_kind[s].next = event_kind::ACCESS.to_bits();
                x.ev_lane[s].next = ev.map_or(0, |e| e.0).to_bits();
                x.ev_write[s].next = ev.is_some_and(|e| e.1);
                x.ev_value[s].next = ev.map_or(0, |e| e.2).to_bits();
            }
            x.over.next = (events.len().saturating_sub(E) as u64).to_bits();
            wait_clock_cycle!(sim, clock, x);
            clocks += 1;
            if let Some((k, active)) = awaiting_fill.take() {
                assert!(
                    x.fill_tick_valid.val(),
                    "fill level a clock after the words"
                );
                assert_eq!(x.fill_tick.val().to_u64() / lanes, k, "fill level's clock");
                last_fill = x.fill.val().to_u32();
                if active {
                    trace.activity.push((k, last_fill));
                }
            }
            let k = x.tick.val().to_u64() / lanes;
            if x.tick_valid.val() && k <= end {
                assert!(k >= seen, "encoder tick output in order");
                let mut n = 0;
                for g in 0..GROUPS {
                    let group = [
                        x.group_word0[g].val().to_u32(),
                        x.group_word1[g].val().to_u32(),
                        x.group_word2[g].val().to_u32(),
                    ];
                    for &w in &group[..x.group_count[g].val().to_u64() as usize] {
                        trace.pushed.push((k, w));
                        // The encoder's `last` is the running time.
                        last = time_after(last, w);
                        n += 1;
                    }
                }
                let popped = x.pop.val();
                if popped {
                    let ptr = x.pop_ptr.val().to_u64() as usize;
                    trace.popped.push((k, trace.pushed[ptr].1));
                }
                // Clocks with nothing pushed or popped and an empty FIFO
                // (its level the one after the clock before): after
                // `settle` of them the credit is at its cap.
                let active = n > 0 || popped;
                empty_run = if last_fill == 0 && !active {
                    empty_run + 1
                } else {
                    0
                };
                awaiting_fill = Some((k, active));
                seen = k + 1;
            }
            let mut next = base + lanes;
            if empty_run >= settle && base / lanes <= end {
                let event = by_tick
                    .range(seen * lanes..)
                    .next()
                    .map_or(u64::MAX, |(t, _)| *t);
                let target = event.min(last + HDL_KEEPER_GAP).min((end + 1) * lanes);
                next = next.max(target / lanes * lanes);
            }
            base = next;
        }
        trace.events_dropped = x.events_dropped.val().to_u64();
        trace.lost_words = x.lost_words.val().to_u64();
        trace.time_fillers = x.time_fillers.val().to_u64();
        trace.time_overflows = x.time_overflows.val().to_u64();
        tx.send((trace, clocks)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

/// A record word for failure messages: dt, then ACCESS or the opcode.
fn describe(w: u32) -> String {
    let dt = w >> 26;
    if w & (1 << 25) == 0 {
        format!("dt {dt} ACCESS line_lo {:06x}", w & 0xFF_FFFF)
    } else {
        format!("dt {dt} op {} payload {}", (w >> 21) & 15, w & 0x1F_FFFF)
    }
}

/// Fails with the neighbourhood of the first entry where `hw` and `gold`
/// differ, if any (`words`: the second field is a record word).
fn first_difference<T: Copy + PartialEq + Into<u64>>(
    what: &str,
    hw: &[(u64, T)],
    gold: &[(u64, T)],
    words: bool,
) {
    let Some(i) = (0..hw.len().max(gold.len())).find(|&i| hw.get(i) != gold.get(i)) else {
        return;
    };
    let show = |v: &[(u64, T)]| {
        v.iter()
            .skip(i.saturating_sub(4))
            .take(10)
            .map(|&(t, x)| {
                let x: u64 = x.into();
                if words {
                    format!("{t} {x:08x} {}", describe(x as u32))
                } else {
                    format!("{t} {x}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "{what} {i} differs\nhdl:\n{}\ngolden:\n{}",
        show(hw),
        show(gold)
    );
}

fn long_gaps<const L: usize, const E: usize>(seed: u64) {
    assert_eq!(KEEPER_GAP, HDL_KEEPER_GAP, "one keeper gap for both sides");
    let g = Geometry::new(2, 4, 15, 7).unwrap();
    let drain = DrainRate { num: 1, den: 9 };
    // 16 words, or the least the room test allows (board.md 2.2).
    let mut cfg = board_config(g, 16, drain).with_lanes(L as u32, E as u32);
    cfg.fifo_depth = cfg.fifo_depth.max(cfg.min_fifo_depth());
    let depth = cfg.fifo_depth;
    let gaps = [
        KEEPER_GAP - 3,
        KEEPER_GAP + 1,
        3 * KEEPER_GAP + 12_345,
        2 * KEEPER_GAP + 63,
        KEEPER_GAP / 2,
        4 * KEEPER_GAP + 64 * 7,
        100,
    ];
    // 30 references per burst: more than the FIFO takes, so LOST counts
    // are pending across the gaps.
    let (cmds, refs) = stream(&g, &gaps, 30, seed);
    let gold = golden(&cfg, &cmds);
    let end = gold.activity.last().expect("activity").0;
    let (hw, clocks) = run_encoder::<L, E>(&refs, depth as u64, drain, end);
    eprintln!(
        "L={L} E={E}: {} clocks simulated of {end}; {} words, {} fillers, {} dropped",
        clocks,
        gold.pushed.len(),
        gold.time_fillers,
        gold.events_dropped
    );
    assert!(gold.time_fillers >= 10, "fillers: {}", gold.time_fillers);
    assert!(gold.events_dropped > 0 && gold.lost_words > 0);
    // The earliest divergence in time first.
    first_difference(
        "activity (clock, level)",
        &hw.activity,
        &gold.activity,
        false,
    );
    first_difference("pushed word", &hw.pushed, &gold.pushed, true);
    first_difference("popped word", &hw.popped, &gold.popped, true);
    assert_eq!(hw.pushed, gold.pushed, "pushed words and their clocks");
    assert_eq!(hw.popped, gold.popped, "popped words and their clocks");
    assert_eq!(
        hw.activity, gold.activity,
        "fill level after each active clock"
    );
    assert_eq!(hw.events_dropped, gold.events_dropped, "events dropped");
    assert_eq!(hw.lost_words, gold.lost_words, "LOST words");
    assert_eq!(hw.time_fillers, gold.time_fillers, "keeper fillers");
    assert_eq!(hw.time_overflows, gold.time_overflows, "time overflows");
}

#[test]
fn keeper_matches_golden_over_long_gaps_l1_e1() {
    long_gaps::<1, 1>(51);
}

#[test]
fn keeper_matches_golden_over_long_gaps_l2_e2() {
    long_gaps::<2, 2>(53);
}

#[test]
fn keeper_matches_golden_over_long_gaps_l8_e3() {
    long_gaps::<8, 3>(52);
}
