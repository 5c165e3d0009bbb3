//! DSMU, reference limit and CU alone: open rows with in-clock forwarding
//! between lanes, protocol errors, unknown commands, line index geometry (8
//! and 16 banks, 24- and 28-bit lines); the limit's first `E` references
//! of a clock in lane order and its counters (board.md 2.2 step 2); config
//! window, inner commands and mode changes within one fabric clock. Plus
//! yosys on all three.

use hmtt_hdl::cu::{event_kind, ConfigUnit};
use hmtt_hdl::dcbu::kind;
use hmtt_hdl::dsmu::{Dsmu, LineGeometry, LATENCY};
use hmtt_hdl::ref_limit::RefLimit;
use rust_hdl::prelude::*;

const G28: LineGeometry = LineGeometry {
    rank_bits: 2,
    bank_bits: 4,
    row_bits: 15,
    col_line_bits: 7,
};
const G24: LineGeometry = LineGeometry {
    rank_bits: 1,
    bank_bits: 3,
    row_bits: 13,
    col_line_bits: 7,
};

/// (kind, rank, bank, arg) per lane per clock -> (valid, write, line) per tick.
fn run_dsmu<const L: usize>(
    g: LineGeometry,
    clocks: Vec<[(u64, u64, u64, u64); L]>,
) -> (Vec<(bool, bool, u64)>, u64, u64) {
    let mut uut = Dsmu::<L>::new(g);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Dsmu<L>>| x.clock.next = !x.clock.val());
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Dsmu<L>>| {
        let mut x = sim.init()?;
        let mut out = vec![];
        // The references come `dsmu::LATENCY` clocks after the commands.
        for k in 0..clocks.len() + LATENCY - 1 {
            for j in 0..L {
                let (kd, r, b, a) = clocks.get(k).map_or((kind::NONE, 0, 0, 0), |c| c[j]);
                x.cmd_kind[j].next = kd.to_bits();
                x.cmd_rank[j].next = r.to_bits();
                x.cmd_bank[j].next = b.to_bits();
                x.cmd_arg[j].next = a.to_bits();
            }
            x.tick_valid_in.next = true;
            wait_clock_cycle!(sim, clock, x);
            if k + 1 >= LATENCY {
                for j in 0..L {
                    out.push((
                        x.ref_valid[j].val(),
                        x.ref_write[j].val(),
                        x.ref_line[j].val().to_u64(),
                    ));
                }
            }
        }
        let errors = x.protocol_errors.val().to_u64();
        let unknown = x.unknown_commands.val().to_u64();
        tx.send((out, errors, unknown)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn dsmu_forwards_an_act_to_later_lanes_of_the_same_clock() {
    use kind::*;
    let clocks = vec![
        // RD before any ACT: protocol error; ACT then RD and WR in order.
        [
            (RD, 3, 15, 8),
            (ACT, 3, 15, 0x7ABC),
            (RD, 3, 15, 0x3F8),
            (UNKNOWN, 0, 0, 0),
        ],
        // A new row in lane 1 overrides for lane 2 only.
        [
            (WR, 3, 15, 0x10),
            (ACT, 3, 15, 0x0123),
            (WRA, 3, 15, 0x18),
            (ACT, 0, 1, 5),
        ],
        // PRE keeps the open row; RDA to the other bank.
        [
            (PRE, 3, 15, 0),
            (RDA, 3, 15, 0),
            (RD, 0, 1, 0x7F8),
            (NOP, 0, 0, 0),
        ],
    ];
    let (out, errors, unknown) = run_dsmu::<4>(G28, clocks);
    let none = (false, false, 0);
    let line = |r, row, b, col| G28.line(r, row, b, col);
    assert!(!out[0].0);
    assert_eq!(out[2], (true, false, line(3, 0x7ABC, 15, 0x3F8)));
    assert_eq!(out[4], (true, true, line(3, 0x7ABC, 15, 0x10)));
    assert_eq!(out[6], (true, true, line(3, 0x0123, 15, 0x18)));
    assert_eq!(out[9], (true, false, line(3, 0x0123, 15, 0)));
    assert_eq!(out[10], (true, false, line(0, 5, 1, 0x7F8)));
    for i in [1, 3, 5, 7, 8, 11] {
        assert!(!out[i].0, "tick {i}: {:?} should be {none:?}", out[i]);
    }
    assert!(
        line(3, 0x7ABC, 15, 0x3F8) >> 24 != 0,
        "28-bit lines reach LINE_HI"
    );
    assert_eq!(errors, 1);
    assert_eq!(unknown, 1);
}

#[test]
fn dsmu_keeps_the_last_act_of_a_clock_and_forwards_the_nearest() {
    use kind::*;
    let clocks = vec![
        // Two ACTs to one bank in one clock: each read sees the nearest
        // ACT before it; an ACT to another bank in between changes nothing.
        [
            (ACT, 1, 2, 0x111),
            (RD, 1, 2, 0x8),
            (ACT, 1, 3, 0x333),
            (ACT, 1, 2, 0x222),
            (WR, 1, 2, 0x10),
            (RD, 1, 3, 0x18),
            (NOP, 0, 0, 0),
            (NOP, 0, 0, 0),
        ],
        // The next clock reads the table: the clock's last ACT per bank.
        [
            (RD, 1, 2, 0x20),
            (RD, 1, 3, 0x28),
            (NOP, 0, 0, 0),
            (NOP, 0, 0, 0),
            (NOP, 0, 0, 0),
            (NOP, 0, 0, 0),
            (ACT, 1, 2, 0x444),
            (RD, 1, 2, 0x30),
        ],
    ];
    let (out, errors, _) = run_dsmu::<8>(G28, clocks);
    let line = |r, row, b, col| G28.line(r, row, b, col);
    assert_eq!(out[1], (true, false, line(1, 0x111, 2, 0x8)));
    assert_eq!(out[4], (true, true, line(1, 0x222, 2, 0x10)));
    assert_eq!(out[5], (true, false, line(1, 0x333, 3, 0x18)));
    assert_eq!(out[8], (true, false, line(1, 0x222, 2, 0x20)));
    assert_eq!(out[9], (true, false, line(1, 0x333, 3, 0x28)));
    assert_eq!(out[15], (true, false, line(1, 0x444, 2, 0x30)));
    let references = out.iter().filter(|o| o.0).count();
    assert_eq!(references, 6);
    assert_eq!(errors, 0);
}

#[test]
fn dsmu_24_bit_geometry_single_lane() {
    use kind::*;
    let clocks = vec![[(ACT, 1, 7, 0x1FFF)], [(WR, 1, 7, 0x3F8)], [(RD, 0, 7, 0)]];
    let (out, errors, _) = run_dsmu::<1>(G24, clocks);
    assert_eq!(
        out[1],
        (true, true, (1 << 24) - 1),
        "top line of a 24-bit geometry"
    );
    assert!(!out[2].0);
    assert_eq!(errors, 1);
}

type Ref = (bool, bool, u64, u64, u64);
/// (valid, kind, write, value, lane) of one CU slot.
type Event = (bool, u64, bool, u64, u64);
/// (tracing, tags_only) after a clock.
type ModeAfter = (bool, bool);

/// Feeds `clocks[k][s]` into slot `s` (lane `s`) of clock `k`; returns the
/// events per slot and the board mode after every clock.
fn run_cu<const E: usize>(
    g: LineGeometry,
    window: (u64, u64, u64),
    clocks: Vec<[Ref; E]>,
) -> (Vec<Event>, Vec<ModeAfter>) {
    let mut uut = ConfigUnit::<E>::new(true);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<ConfigUnit<E>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let first_line = g.line(window.0, window.1, 0, 0);
    sim.add_testbench(move |mut sim: Sim<ConfigUnit<E>>| {
        let mut x = sim.init()?;
        x.window_rank.next = window.0.to_bits();
        x.window_row_first.next = window.1.to_bits();
        x.window_row_count.next = window.2.to_bits();
        x.window_first_line.next = first_line.to_bits();
        let mut out = vec![];
        let mut modes = vec![];
        for k in 0..clocks.len() {
            for s in 0..E {
                let (v, w, r, row, line) = clocks.get(k).map_or((false, false, 0, 0, 0), |c| c[s]);
                x.ref_valid[s].next = v;
                x.ref_write[s].next = w;
                x.ref_rank[s].next = r.to_bits();
                x.ref_row[s].next = row.to_bits();
                x.ref_line[s].next = line.to_bits();
                x.ref_lane[s].next = (s as u64).to_bits();
            }
            x.tick_in.next = (4 * k as u64).to_bits();
            x.tick_valid_in.next = true;
            // The clock's edge registers the events and the mode after it.
            wait_clock_cycle!(sim, clock, x);
            assert_eq!(x.tick.val().to_u64(), 4 * k as u64, "tick of the events");
            for s in 0..E {
                out.push((
                    x.ev_valid[s].val(),
                    x.ev_kind[s].val().to_u64(),
                    x.ev_write[s].val(),
                    x.ev_value[s].val().to_u64(),
                    x.ev_lane[s].val().to_u64(),
                ));
            }
            modes.push((x.tracing.val(), x.tags_only.val()));
        }
        tx.send((out, modes)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn cu_inner_commands_change_the_mode_for_later_slots() {
    let g = G28;
    let window = (3u64, 0x7F00u64, 0x100u64);
    let in_window = |index: u64, write: bool| -> Ref {
        let line = g.line(window.0, window.1, 0, 0) + index;
        let row = (line >> (g.bank_bits + g.col_line_bits)) & ((1 << g.row_bits) - 1);
        (true, write, window.0, row, line)
    };
    let access = |write: bool| -> Ref {
        let line = g.line(1, 0x1234, 9, 0x88);
        (true, write, 1, 0x1234, line)
    };
    let idle: Ref = (false, false, 0, 0, 0);
    let clocks = vec![
        [
            access(false),
            in_window(1, false),
            access(true),
            in_window(0x40, true),
        ],
        [
            in_window(0, true),
            in_window(2, false),
            access(false),
            in_window(0x10005, false),
        ],
        [in_window(3, false), access(true), in_window(5, true), idle],
    ];
    let (out, modes) = run_cu::<4>(g, window, clocks);
    use event_kind::*;
    let line = g.line(1, 0x1234, 9, 0x88);
    // Tracing on: ACCESS; END_TRACING executes as CMD; the write after it
    // is suppressed; a user event is not recorded while tracing is off.
    assert_eq!(out[0], (true, ACCESS, false, line, 0));
    assert_eq!(out[1], (true, CMD, false, 1, 1));
    assert!(!out[2].0);
    assert!(!out[3].0);
    assert_eq!(modes[0], (false, false), "mode after clock 0");
    // BEGIN_TRACING, TAGS_ONLY: access suppressed, a log tag recorded.
    assert_eq!(out[4], (true, CMD, true, 0, 0));
    assert_eq!(out[5], (true, CMD, false, 2, 1));
    assert!(!out[6].0);
    assert_eq!(out[7], (true, TAG, false, 0x10005, 3));
    assert_eq!(modes[1], (true, true), "mode after clock 1");
    // TRACE_ALL, then an ACCESS again, SYNC is a CMD.
    assert_eq!(out[8], (true, CMD, false, 3, 0));
    assert_eq!(out[9], (true, ACCESS, true, line, 1));
    assert_eq!(out[10], (true, CMD, true, 5, 2));
    assert!(!out[11].0);
    assert_eq!(modes[2], (true, false), "mode after clock 2");
}

/// (valid, write, line, lane) of one limit slot.
type Slot = (bool, bool, u64, u64);

/// Feeds `clocks[k][j]` = (valid, write, line) into lane `j` of a
/// `RefLimit<L, E>`; returns the slots and the over count per clock and
/// the two counters at the end.
fn run_limit<const L: usize, const E: usize>(
    clocks: Vec<[(bool, bool, u64); L]>,
) -> (Vec<Vec<Slot>>, Vec<u64>, u64, u64) {
    let mut uut = RefLimit::<L, E>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<RefLimit<L, E>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<RefLimit<L, E>>| {
        let mut x = sim.init()?;
        let (mut slots, mut over) = (vec![], vec![]);
        // Two clocks more for the counters, a register behind the slots.
        for k in 0..clocks.len() + 2 {
            for j in 0..L {
                let (v, w, line) = clocks.get(k).map_or((false, false, 0), |c| c[j]);
                x.ref_valid[j].next = v;
                x.ref_write[j].next = w;
                x.ref_line[j].next = line.to_bits();
                x.ref_rank[j].next = 0.into();
                x.ref_row[j].next = 0.into();
            }
            x.tick_in.next = ((L * k) as u64).to_bits();
            x.tick_valid_in.next = true;
            wait_clock_cycle!(sim, clock, x);
            if k >= clocks.len() {
                continue;
            }
            assert_eq!(x.tick.val().to_u64(), (L * k) as u64);
            slots.push(
                (0..E)
                    .map(|s| {
                        (
                            x.slot_valid[s].val(),
                            x.slot_write[s].val(),
                            x.slot_line[s].val().to_u64(),
                            x.slot_lane[s].val().to_u64(),
                        )
                    })
                    .collect(),
            );
            over.push(x.over.val().to_u64());
        }
        let counters = (
            x.references_over_limit.val().to_u64(),
            x.clocks_over_limit.val().to_u64(),
        );
        tx.send((slots, over, counters.0, counters.1)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn the_limit_passes_the_first_e_references_of_a_clock_in_lane_order() {
    let r = |line: u64| (true, line % 2 == 1, line);
    let no = (false, false, 0);
    let clocks: Vec<[(bool, bool, u64); 8]> = vec![
        // Five references: lanes 1, 2, 5 go on, 6 and 7 are dropped.
        [no, r(11), r(12), no, no, r(15), r(16), r(17)],
        // Three: all pass, in slots 0..3.
        [r(20), no, no, no, no, no, r(26), r(27)],
        // None.
        [no; 8],
        // Eight: lanes 0, 1, 2 pass, five dropped.
        [r(30), r(31), r(32), r(33), r(34), r(35), r(36), r(37)],
    ];
    let (slots, over, references, clocks_over) = run_limit::<8, 3>(clocks);
    let s = |line: u64, lane: u64| (true, line % 2 == 1, line, lane);
    let empty = (false, false, 0, 0);
    assert_eq!(slots[0], vec![s(11, 1), s(12, 2), s(15, 5)]);
    assert_eq!(slots[1], vec![s(20, 0), s(26, 6), s(27, 7)]);
    assert_eq!(slots[2], vec![empty; 3]);
    assert_eq!(slots[3], vec![s(30, 0), s(31, 1), s(32, 2)]);
    assert_eq!(over, vec![2, 0, 0, 5]);
    assert_eq!(references, 7, "references over the limit");
    assert_eq!(clocks_over, 2, "clocks over the limit");
}

#[test]
fn the_limit_at_e_equal_l_passes_everything() {
    let clocks = vec![
        [(true, false, 1), (true, true, 2)],
        [(false, false, 0), (true, false, 3)],
    ];
    let (slots, over, references, clocks_over) = run_limit::<2, 2>(clocks);
    assert_eq!(
        slots,
        vec![
            vec![(true, false, 1, 0), (true, true, 2, 1)],
            vec![(true, false, 3, 1), (false, false, 0, 0)],
        ]
    );
    assert_eq!(over, vec![0, 0]);
    assert_eq!((references, clocks_over), (0, 0));
}

#[test]
fn dsmu_limit_and_cu_verilog_pass_yosys() {
    let mut uut = Dsmu::<4>::new(G28);
    uut.connect_all();
    yosys_validate("hmtt_dsmu_l4", &generate_verilog(&uut)).unwrap();
    let mut uut = RefLimit::<8, 3>::default();
    uut.connect_all();
    yosys_validate("hmtt_ref_limit_l8_e3", &generate_verilog(&uut)).unwrap();
    let mut uut = ConfigUnit::<3>::new(true);
    uut.connect_all();
    yosys_validate("hmtt_cu_e3", &generate_verilog(&uut)).unwrap();
}
