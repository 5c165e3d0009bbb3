//! Shared test harness: drives `Capture` with a DDR command stream through
//! rust-hdl's `Simulation` and records the push side (words and fill level
//! per tick) and the pop side (words and their pop ticks).
#![allow(dead_code)]

use std::collections::BTreeMap;

use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::dcbu::{kind, CommandPins};
use rust_hdl::prelude::*;

/// One command for the pins: a [`kind`] code, rank, bank, arg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinCommand {
    pub tick: u64,
    pub kind: u64,
    pub rank: u64,
    pub bank: u64,
    pub arg: u64,
}

/// What the capture chain did, tick by tick.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureTrace {
    /// Every word pushed, with its tick.
    pub pushed: Vec<(u64, u32)>,
    /// Every word popped, with its pop tick.
    pub popped: Vec<(u64, u32)>,
    /// Fill level after every tick, from tick 0.
    pub levels: Vec<u32>,
    pub protocol_errors: u64,
    pub unknown_commands: u64,
    pub events_dropped: u64,
    pub lost_words: u64,
    pub time_overflows: u64,
    pub high_water: u64,
    /// Fabric clocks simulated.
    pub clocks: u64,
}

pub struct Drain {
    pub num: u64,
    pub den: u64,
}

macro_rules! set_lane_pins {
    ($x: expr, $j: expr, $p: expr) => {
        $x.cs_n[$j].next = $p.cs_n.to_bits();
        $x.ras_n[$j].next = $p.ras_n;
        $x.cas_n[$j].next = $p.cas_n;
        $x.we_n[$j].next = $p.we_n;
        $x.cke[$j].next = $p.cke;
        $x.ba[$j].next = $p.ba.to_bits();
        $x.addr[$j].next = $p.addr.to_bits();
    };
}

/// Runs `commands` (ticks strictly increasing) through a `Capture<L, B, AB>`
/// until the stream has ended, the FIFO is empty and every pop came out,
/// or `max_ticks` ticks. Lanes per clock: `L`.
pub fn run_capture<const L: usize, const B: usize, const AB: usize>(
    config: CaptureConfig,
    drain: Drain,
    commands: &[PinCommand],
    max_ticks: u64,
) -> CaptureTrace {
    let by_tick: BTreeMap<u64, PinCommand> = commands.iter().map(|c| (c.tick, *c)).collect();
    assert_eq!(
        by_tick.len(),
        commands.len(),
        "one command per tick on the pins"
    );
    let last_command = commands.last().map_or(0, |c| c.tick);
    let mut uut = Capture::<L, B, AB>::new(config);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Capture<L, B, AB>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Capture<L, B, AB>>| {
        let mut x = sim.init()?;
        x.drain_num.next = drain.num.to_bits();
        x.drain_den.next = drain.den.to_bits();
        let mut trace = CaptureTrace::default();
        let mut clock = 0u64;
        let mut drained_since = None;
        loop {
            for j in 0..L {
                let t = clock * L as u64 + j as u64;
                let pins = match by_tick.get(&t) {
                    Some(c) => CommandPins::for_command(c.kind, c.rank, c.bank, c.arg),
                    None => CommandPins::DESELECT,
                };
                set_lane_pins!(x, j, pins);
            }
            wait_clock_cycle!(sim, clock, x);
            clock += 1;
            if x.push_tick_valid.val() {
                let base = x.push_tick.val().to_u64();
                for j in 0..L {
                    let t = base + j as u64;
                    let words = [
                        x.push_word0[j].val().to_u32(),
                        x.push_word1[j].val().to_u32(),
                        x.push_word2[j].val().to_u32(),
                        x.push_word3[j].val().to_u32(),
                        x.push_word4[j].val().to_u32(),
                    ];
                    let n = x.push_count[j].val().to_u64() as usize;
                    for w in &words[..n] {
                        trace.pushed.push((t, *w));
                    }
                    assert_eq!(trace.levels.len() as u64, t, "ticks out of order");
                    trace.levels.push(x.fill[j].val().to_u32());
                }
            }
            if x.pop_valid.val() {
                trace
                    .popped
                    .push((x.pop_tick.val().to_u64(), x.pop_word.val().to_u32()));
            }
            let tick_seen = trace.levels.len() as u64;
            let empty = trace.levels.last() == Some(&0);
            if tick_seen > last_command && empty && trace.popped.len() == trace.pushed.len() {
                // A few clocks more so a late pop would show up.
                let since = *drained_since.get_or_insert(clock);
                if clock >= since + 4 {
                    break;
                }
            }
            if tick_seen >= max_ticks {
                break;
            }
        }
        trace.protocol_errors = x.protocol_errors.val().to_u64();
        trace.unknown_commands = x.unknown_commands.val().to_u64();
        trace.events_dropped = x.events_dropped.val().to_u64();
        trace.lost_words = x.lost_words.val().to_u64();
        trace.time_overflows = x.time_overflows.val().to_u64();
        trace.high_water = x.high_water.val().to_u64();
        trace.clocks = clock;
        tx.send(trace).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

pub fn cmd(tick: u64, kind: u64, rank: u64, bank: u64, arg: u64) -> PinCommand {
    PinCommand {
        tick,
        kind,
        rank,
        bank,
        arg,
    }
}

pub use kind::*;
