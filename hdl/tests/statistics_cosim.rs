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

use capture_support::*;
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::{StatsAssembler, StatsPart};
use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::dcbu::CommandPins;
use hmtt_hdl::pins::DimmPins;
use hmtt_hdl::statistics::StatisticCounters;
use hmtt_sim::board::{run_commands_with_statistics, BoardConfig, DrainRate, StatsConfig};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// The capture chain with the unit on its taps.
#[derive(LogicBlock)]
struct CaptureStats<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
> {
    clock: Signal<In, Clock>,
    pins: [DimmPins; L],
    drain_num: Signal<In, Bits<32>>,
    drain_den: Signal<In, Bits<32>>,
    capture: Capture<L, E, B, AB>,
    su: StatisticCounters<L, E, R, NB, LB>,
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > Logic for CaptureStats<L, E, B, AB, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.capture.clock.next = self.clock.val();
        self.su.clock.next = self.clock.val();
        self.capture.drain_num.next = self.drain_num.val();
        self.capture.drain_den.next = self.drain_den.val();
        for j in 0..L {
            self.capture.pins[j].cs_n.next = self.pins[j].cs_n.val();
            self.capture.pins[j].ras_n.next = self.pins[j].ras_n.val();
            self.capture.pins[j].cas_n.next = self.pins[j].cas_n.val();
            self.capture.pins[j].we_n.next = self.pins[j].we_n.val();
            self.capture.pins[j].cke.next = self.pins[j].cke.val();
            self.capture.pins[j].ba.next = self.pins[j].ba.val();
            self.capture.pins[j].addr.next = self.pins[j].addr.val();
            self.su.bus_kind[j].next = self.capture.bus_kind[j].val();
            self.su.bus_rank[j].next = self.capture.bus_rank[j].val();
            self.su.bus_bank[j].next = self.capture.bus_bank[j].val();
            self.su.bus_addr[j].next = self.capture.bus_addr[j].val();
            self.su.ref_valid[j].next = self.capture.ref_valid[j].val();
            self.su.ref_line[j].next = self.capture.ref_line[j].val();
        }
        for s in 0..E {
            self.su.cmd_valid[s].next = self.capture.cmd_valid[s].val();
            self.su.cmd_index[s].next = self.capture.cmd_index[s].val();
        }
        self.su.bus_tick.next = self.capture.bus_tick.val();
        self.su.ref_tick.next = self.capture.ref_tick.val();
        self.su.over.next = self.capture.over.val();
        self.su.over_tick.next = self.capture.over_tick.val();
        self.su.cmd_tick.next = self.capture.cmd_tick.val();
        self.su.dropped.next = self.capture.dropped.val();
        self.su.dropped_tick.next = self.capture.dropped_tick.val();
        self.su.dropped_tick_valid.next = self.capture.dropped_tick_valid.val();
    }
}

/// One interval's record: start, end, k, counters in format.md §5.3 order.
type Record = (u64, u64, u8, Vec<u32>);

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
    let mut uut = CaptureStats::<L, E, B, AB, R, NB, LB> {
        clock: Default::default(),
        pins: hmtt_hdl::pins::lanes(),
        drain_num: Default::default(),
        drain_den: Default::default(),
        capture: Capture::new(capture),
        su: StatisticCounters::new(capture.geometry, k),
    };
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
        loop {
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
            if x.capture.dropped_tick_valid.val() {
                assert!(x.su.aligned.val(), "the taps' delay lines are misaligned");
            }
            if x.su.record_valid.val() {
                let start = x.su.record_start.val().to_u64();
                let end = x.su.record_end.val().to_u64();
                let k = x.su.record_k.val().to_u64() as u8;
                let mut counters = Vec::new();
                for b in &x.su.banks {
                    counters.extend(b.counters.iter().map(|c| c.snapshot.val().to_u32()));
                }
                for r in &x.su.ranks {
                    counters.push(r.refresh.snapshot.val().to_u32());
                    counters.push(r.busy.snapshot.val().to_u32());
                }
                counters.extend(x.su.toggles.iter().map(|c| c.snapshot.val().to_u32()));
                counters.push(x.su.over_limit.snapshot.val().to_u32());
                counters.push(x.su.lost_fifo.snapshot.val().to_u32());
                records.push((start, end, k, counters));
            }
            if x.capture.dropped_tick_valid.val() && x.capture.dropped_tick.val().to_u64() >= stop {
                break;
            }
        }
        let over = x.capture.references_over_limit.val().to_u64();
        let dropped = x.capture.events_dropped.val().to_u64();
        tx.send((records, over, dropped)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

/// The golden model's records for `cmds` with its unit on from reset at
/// `2^k` and a path with room for every record (a tick long enough that
/// the credit of one interval pays a record, share 1/2, burst 16).
fn model_records(cfg: &BoardConfig, lanes: u32, refs: u32, cmds: &[Command], k: u8) -> Vec<Record> {
    let mut cfg = cfg.clone().with_lanes(lanes, refs);
    cfg.tick_ps = u16::MAX;
    cfg.statistics = Some(StatsConfig {
        interval_log2: k,
        start_enabled: true,
        share_log2: 1,
        burst_records: 16,
        reuse: None,
    });
    let (_, packets, counters) = run_commands_with_statistics(cfg, cmds).expect("model runs");
    let su = counters.statistics.expect("the model has the unit");
    assert_eq!(
        su.records_unsent, 0,
        "the model's path must send every record"
    );
    let mut assembler = StatsAssembler::default();
    let records: Vec<Record> = packets
        .iter()
        .filter_map(|p| assembler.push(StatsPart::parse(&p.bytes).expect("valid part")))
        .map(|r| (r.start_tick, r.end_tick, r.interval_log2, r.counters))
        .collect();
    assert_eq!(assembler.finish(), 0, "every record whole");
    assert_eq!(records.len() as u64, su.records_sent);
    records
}

/// Runs both and compares every record, counter by counter.
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
    let gold = model_records(cfg, L as u32, E as u32, cmds, k);
    // Past the model's last record and the stream, by more than an
    // interval of the longest `k` the streams set.
    let last = gold.last().map_or(0, |r| r.1);
    let stop = last.max(cmds.last().map_or(0, |c| c.cycle)) + (1 << 12);
    let (hw, over, dropped) =
        run_hdl::<L, E, B, AB, R, NB, LB>(capture_config(cfg), cfg.drain, cmds, k.into(), stop);
    let layout = hmtt_format::stats::CounterLayout::new(&cfg.geometry);
    for (i, (h, g)) in hw.iter().zip(&gold).enumerate() {
        assert_eq!(
            (h.0, h.1, h.2),
            (g.0, g.1, g.2),
            "record {i}: interval and k"
        );
        for (c, (a, b)) in h.3.iter().zip(&g.3).enumerate() {
            assert_eq!(
                a,
                b,
                "record {i} [{}, {}): counter {c} of {}: hdl {a} model {b}",
                g.0,
                g.1,
                layout.len()
            );
        }
        assert_eq!(h.3.len(), g.3.len(), "record {i}: counters");
    }
    assert_eq!(hw.len(), gold.len(), "records");
    // The drops the records count are the capture chain's.
    // The drops the records count are the capture chain's (those while
    // the unit is off excepted).
    assert!(
        total(&hw, layout.over_limit()) <= over,
        "OVER_LIMIT in total"
    );
    assert!(
        total(&hw, layout.lost_fifo()) <= dropped,
        "LOST_FIFO in total"
    );
    hw
}

/// 2 ranks, 8 banks, 13 row bits, 7 column-line bits: 24-bit lines.
fn geometry_24() -> Geometry {
    Geometry::new(1, 3, 13, 7).unwrap()
}

/// 1 rank, 4 banks, 12 row bits, 6 column-line bits: 20-bit lines.
fn geometry_20() -> Geometry {
    Geometry::new(0, 2, 12, 6).unwrap()
}

/// `cmds` with some of its references to the unit's inner commands
/// STATS_ON (6) and STATS_OFF (7) in the config window (`random_stream`
/// makes them) moved to STATS_INTERVAL_k (`32 + k`) for `k` in `ks`, one
/// in `every`: the same row, another column.
fn with_interval_commands(
    cfg: &BoardConfig,
    cmds: &[Command],
    ks: std::ops::RangeInclusive<u64>,
    every: u64,
    seed: u64,
) -> Vec<Command> {
    let g = &cfg.geometry;
    let first = cfg.window.first_line(g);
    let mut rng = Rng(seed);
    let mut open = BTreeMap::new();
    let mut moved = 0;
    let out: Vec<Command> = cmds
        .iter()
        .map(|c| {
            let mut c = *c;
            if c.cmd == DdrCmd::Act {
                open.insert((c.rank, c.bank), c.arg);
            }
            if !matches!(c.cmd, DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra) {
                return c;
            }
            let Some(&row) = open.get(&(c.rank, c.bank)) else {
                return c;
            };
            let line = (((u64::from(c.rank) << g.row_bits()) | u64::from(row)) << g.bank_bits()
                | u64::from(c.bank))
                << g.col_line_bits()
                | u64::from(c.arg >> 3);
            let index = line.wrapping_sub(first);
            if matches!(index, 6 | 7) && rng.below(every) == 0 {
                let k = ks.start() + rng.below(ks.end() - ks.start() + 1);
                c.arg += ((32 + k - index) << 3) as u32;
                moved += 1;
            }
            c
        })
        .collect();
    assert!(moved > 0, "the stream must set the interval");
    out
}

/// `cmds` with a PRE of the bank right after about one ACT in `every`
/// (the bus then shows the bank idle at its next column command, which
/// the DSMU still maps to the row), re-timed one command per tick.
fn with_unused_activations(cmds: &[Command], every: u64, seed: u64) -> Vec<Command> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(cmds.len() * 2);
    let mut shift = 0;
    for c in cmds {
        out.push(Command {
            cycle: c.cycle + shift,
            ..*c
        });
        if c.cmd == DdrCmd::Act && rng.below(every) == 0 {
            shift += 1;
            out.push(Command {
                cycle: c.cycle + shift,
                cmd: DdrCmd::Pre,
                arg: 0,
                ..*c
            });
        }
    }
    out
}

const SLOW: DrainRate = DrainRate { num: 1, den: 9 };

fn total(records: &[Record], c: usize) -> u64 {
    records.iter().map(|r| u64::from(r.3[c])).sum()
}

/// L = 8, E = 3 (the ECP5 board) at the shortest interval: the limit and
/// FIFO overflow both drop, and row hits, misses, conflicts and unused
/// activations all occur.
#[test]
fn statistics_l8_e3_k6_limit_and_overflow() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let cmds = with_unused_activations(&random_stream(&cfg, 3, 1500, 2), 4, 7);
    let hw = cosim::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, 6);
    let layout = hmtt_format::stats::CounterLayout::new(&cfg.geometry);
    assert!(total(&hw, layout.over_limit()) > 0, "the limit must drop");
    assert!(total(&hw, layout.lost_fifo()) > 0, "the FIFO must drop");
    for c in [
        hmtt_format::stats::BankCounter::Hit,
        hmtt_format::stats::BankCounter::Miss,
        hmtt_format::stats::BankCounter::Conflict,
        hmtt_format::stats::BankCounter::UnusedAct,
    ] {
        let n: u64 = (0..2)
            .flat_map(|r| (0..8).map(move |b| (r, b)))
            .map(|(r, b)| total(&hw, layout.bank(r, b, c)))
            .sum();
        assert!(n > 0, "{c:?} must occur");
    }
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

/// The stream's inner commands must have changed `k` and opened
/// intervals off the multiples of `2^k`.
fn assert_changes(records: &[Record], k: u8) {
    assert!(records.iter().any(|r| r.2 != k), "no record at another k");
    assert!(
        records.iter().any(|r| r.0 % (1 << r.2) != 0),
        "no interval opened by an inner command"
    );
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
