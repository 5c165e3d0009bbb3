//! What the Statistic Unit's tests share: the capture chain with the unit
//! on its taps (`CaptureStats`), the golden model's records, and the
//! streams that exercise the unit.
#![allow(dead_code)]

use crate::capture_support::*;
use hmtt_board_model::{run_commands_with_statistics, BoardConfig, DrainRate, StatsConfig};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::{BankCounter, StatsAssembler, StatsPart};
use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::pins::DimmPins;
use hmtt_hdl::statistics::StatisticCounters;
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// The capture chain with the unit on its taps.
#[derive(LogicBlock)]
pub struct CaptureStats<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
> {
    pub clock: Signal<In, Clock>,
    pub pins: [DimmPins; L],
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    pub read_index: Signal<In, Bits<10>>,
    pub read_value: Signal<Out, Bits<32>>,
    // For the Verilog testbench (`verilog/statistics_tb.v`); the counters
    // it reads by their hierarchical names.
    pub record_valid: Signal<Out, Bit>,
    pub record_start: Signal<Out, Bits<64>>,
    pub record_end: Signal<Out, Bits<64>>,
    pub record_k: Signal<Out, Bits<5>>,
    pub dropped_tick_valid: Signal<Out, Bit>,
    pub dropped_tick: Signal<Out, Bits<64>>,
    pub aligned: Signal<Out, Bit>,
    pub references_over_limit: Signal<Out, Bits<32>>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub capture: Capture<L, E, B, AB>,
    pub su: StatisticCounters<L, E, R, NB, LB>,
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > CaptureStats<L, E, B, AB, R, NB, LB>
{
    pub fn new(capture: CaptureConfig, k: u32) -> Self {
        Self {
            clock: Default::default(),
            pins: hmtt_hdl::pins::lanes(),
            drain_num: Default::default(),
            drain_den: Default::default(),
            read_index: Default::default(),
            read_value: Default::default(),
            record_valid: Default::default(),
            record_start: Default::default(),
            record_end: Default::default(),
            record_k: Default::default(),
            dropped_tick_valid: Default::default(),
            dropped_tick: Default::default(),
            aligned: Default::default(),
            references_over_limit: Default::default(),
            events_dropped: Default::default(),
            su: StatisticCounters::new(capture.geometry, k),
            capture: Capture::new(capture),
        }
    }
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
        // The readout reads the last record, held at its record_valid.
        self.su.hold_write.next = self.su.record_valid.val();
        self.su.hold_slot.next = 0.into();
        self.su.read_slot.next = 0.into();
        self.su.read_index.next = self.read_index.val();
        self.read_value.next = self.su.read_value.val();
        self.record_valid.next = self.su.record_valid.val();
        self.record_start.next = self.su.record_start.val();
        self.record_end.next = self.su.record_end.val();
        self.record_k.next = self.su.record_k.val();
        self.dropped_tick_valid.next = self.capture.dropped_tick_valid.val();
        self.dropped_tick.next = self.capture.dropped_tick.val();
        self.aligned.next = self.su.aligned.val();
        self.references_over_limit.next = self.capture.references_over_limit.val();
        self.events_dropped.next = self.capture.events_dropped.val();
    }
}

/// One interval's record: start, end, k, counters in format.md §5.3 order.
pub type Record = (u64, u64, u8, Vec<u32>);

/// The golden model's records for `cmds` with its unit on from reset at
/// `2^k` and a path with room for every record (a tick long enough that
/// the credit of one interval pays a record, share 1/2, burst 16).
pub fn model_records(
    cfg: &BoardConfig,
    lanes: u32,
    refs: u32,
    cmds: &[Command],
    k: u8,
) -> Vec<Record> {
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

/// 2 ranks, 8 banks, 13 row bits, 7 column-line bits: 24-bit lines.
pub fn geometry_24() -> Geometry {
    Geometry::new(1, 3, 13, 7).unwrap()
}

/// 1 rank, 4 banks, 12 row bits, 6 column-line bits: 20-bit lines.
pub fn geometry_20() -> Geometry {
    Geometry::new(0, 2, 12, 6).unwrap()
}

/// `cmds` with some of its references to the unit's inner commands
/// STATS_ON (6) and STATS_OFF (7) in the config window (`random_stream`
/// makes them) moved to STATS_INTERVAL_k (`32 + k`) for `k` in `ks`, one
/// in `every`: the same row, another column.
pub fn with_interval_commands(
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
pub fn with_unused_activations(cmds: &[Command], every: u64, seed: u64) -> Vec<Command> {
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

pub const SLOW: DrainRate = DrainRate { num: 1, den: 9 };

pub fn total(records: &[Record], c: usize) -> u64 {
    records.iter().map(|r| u64::from(r.3[c])).sum()
}

/// The stream's inner commands must have changed `k` and opened
/// intervals off the multiples of `2^k`.
pub fn assert_changes(records: &[Record], k: u8) {
    assert!(records.iter().any(|r| r.2 != k), "no record at another k");
    assert!(
        records.iter().any(|r| r.0 % (1 << r.2) != 0),
        "no interval opened by an inner command"
    );
}

/// Every record of `hw` equals `gold`'s: interval, `k`, each counter.
pub fn assert_records_equal(cfg: &BoardConfig, hw: &[Record], gold: &[Record]) {
    let layout = hmtt_format::stats::CounterLayout::new(&cfg.geometry);
    for (i, (h, g)) in hw.iter().zip(gold).enumerate() {
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
}

/// Runs `engine` (the unit under test, given the counting stage's tick
/// to stop at) on `cmds` and checks it against the golden model with
/// `lanes` lanes and `refs` references per clock, on from reset at `2^k`:
/// every record equal, and the OVER_LIMIT and LOST_FIFO totals within the
/// capture chain's drops (those while the unit is off are not counted).
/// `engine` returns the records, the references over the limit and the
/// events dropped.
pub fn check_against_model(
    cfg: &BoardConfig,
    lanes: usize,
    refs: usize,
    cmds: &[Command],
    k: u8,
    engine: impl FnOnce(u64) -> (Vec<Record>, u64, u64),
) -> Vec<Record> {
    let gold = model_records(cfg, lanes as u32, refs as u32, cmds, k);
    // Past the model's last record and the stream, by more than an
    // interval of the longest `k` the streams set.
    let last = gold.last().map_or(0, |r| r.1);
    let stop = last.max(cmds.last().map_or(0, |c| c.cycle)) + (1 << 12);
    let (hw, over, dropped) = engine(stop);
    assert_records_equal(cfg, &hw, &gold);
    let layout = hmtt_format::stats::CounterLayout::new(&cfg.geometry);
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

/// The limit and the FIFO dropped, and row hits, misses, conflicts and
/// unused activations all occurred, in `records` of `cfg`'s geometry.
pub fn assert_drops_and_row_outcomes(cfg: &BoardConfig, records: &[Record]) {
    let g = &cfg.geometry;
    let layout = hmtt_format::stats::CounterLayout::new(g);
    assert!(
        total(records, layout.over_limit()) > 0,
        "the limit must drop"
    );
    assert!(total(records, layout.lost_fifo()) > 0, "the FIFO must drop");
    let (ranks, banks) = (1usize << g.rank_bits(), 1usize << g.bank_bits());
    for c in [
        BankCounter::Hit,
        BankCounter::Miss,
        BankCounter::Conflict,
        BankCounter::UnusedAct,
    ] {
        let n: u64 = (0..ranks)
            .flat_map(|r| (0..banks).map(move |b| (r, b)))
            .map(|(r, b)| total(records, layout.bank(r, b, c)))
            .sum();
        assert!(n > 0, "{c:?} must occur");
    }
}

/// Rows of [`directed_row_stream`].
const ROW_A: u32 = 0x10;
const ROW_B: u32 = 0x20;

/// Rank 0 bank 0 at 8 lanes a clock and `k` = 6: row outcomes decided
/// across clocks, within one clock (PRE and ACT in the same clock), past
/// an interval's end, after a REF and after an auto-precharge, with the
/// outcomes its column commands must have as `(tick, outcome)`, worked
/// out by hand from the DDR rules rather than by the model: a miss when
/// the ACT found the bank idle (first use, after a REF, after RDA, or an
/// ACT with no PRE since the last), a conflict when a PRE closed another
/// row.
pub fn directed_row_stream() -> (Vec<Command>, Vec<(u64, BankCounter)>) {
    use BankCounter::{Conflict, Miss};
    let at = |cycle, cmd, arg| Command {
        cycle,
        cmd,
        rank: 0,
        bank: 0,
        arg,
    };
    let (a, b) = (ROW_A, ROW_B);
    let cmds = vec![
        at(0, DdrCmd::Act, b),
        at(1, DdrCmd::Rd, 0),
        at(7, DdrCmd::Pre, 0),
        at(16, DdrCmd::Act, a),
        at(17, DdrCmd::Rd, 1),
        at(23, DdrCmd::Pre, 0),
        at(24, DdrCmd::Act, b),
        at(25, DdrCmd::Rd, 2),
        at(40, DdrCmd::Act, a),
        at(41, DdrCmd::Rd, 3),
        at(48, DdrCmd::Pre, 0),
        at(49, DdrCmd::Act, a),
        at(50, DdrCmd::Rd, 4),
        at(56, DdrCmd::Pre, 0),
        at(57, DdrCmd::Act, b),
        at(58, DdrCmd::Rd, 5),
        at(63, DdrCmd::Pre, 0),
        at(64, DdrCmd::Act, a),
        at(65, DdrCmd::Rd, 6),
        at(72, DdrCmd::Pre, 0),
        at(79, DdrCmd::Ref, 0),
        at(80, DdrCmd::Act, b),
        at(81, DdrCmd::Rd, 7),
        at(88, DdrCmd::Pre, 0),
        at(89, DdrCmd::Act, a),
        at(90, DdrCmd::Rda, 8),
        at(96, DdrCmd::Act, b),
        at(97, DdrCmd::Rd, 9),
    ];
    let outcomes = vec![
        (1, Miss),
        (17, Conflict),
        (25, Conflict),
        (41, Miss),
        (50, Miss),
        (58, Conflict),
        (65, Conflict),
        (81, Miss),
        (90, Conflict),
        (97, Miss),
    ];
    (cmds, outcomes)
}

/// `records` (of [`directed_row_stream`], `k` = 6) count, per interval,
/// the outcomes it lists for rank 0 bank 0, and no row hit.
pub fn assert_directed_outcomes(cfg: &BoardConfig, records: &[Record]) {
    let (_, outcomes) = directed_row_stream();
    let layout = hmtt_format::stats::CounterLayout::new(&cfg.geometry);
    for c in [BankCounter::Hit, BankCounter::Miss, BankCounter::Conflict] {
        for r in records {
            let want = outcomes
                .iter()
                .filter(|&&(tick, o)| o == c && (r.0..r.1).contains(&tick))
                .count();
            assert_eq!(
                r.3[layout.bank(0, 0, c)] as usize,
                want,
                "{c:?} in [{}, {})",
                r.0,
                r.1
            );
        }
        let all = outcomes.iter().filter(|&&(_, o)| o == c).count() as u64;
        assert_eq!(total(records, layout.bank(0, 0, c)), all, "{c:?} in total");
    }
}
