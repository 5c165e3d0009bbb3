//! DSMU and CU alone: open rows with in-clock forwarding between lanes,
//! protocol errors, unknown commands, line index geometry (8 and 16 banks,
//! 24- and 28-bit lines); config window, inner commands and mode changes
//! within one fabric clock. Plus yosys on both.

use hmtt_hdl::cu::{event_kind, ConfigUnit};
use hmtt_hdl::dcbu::kind;
use hmtt_hdl::dsmu::{Dsmu, LineGeometry};
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
        for k in 0..clocks.len() {
            for j in 0..L {
                let (kd, r, b, a) = clocks.get(k).map_or((kind::NONE, 0, 0, 0), |c| c[j]);
                x.cmd_kind[j].next = kd.to_bits();
                x.cmd_rank[j].next = r.to_bits();
                x.cmd_bank[j].next = b.to_bits();
                x.cmd_arg[j].next = a.to_bits();
            }
            x.tick_valid_in.next = true;
            wait_clock_cycle!(sim, clock, x);
            {
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
type Event = (bool, u64, bool, u64, bool, bool);

fn run_cu<const L: usize>(
    g: LineGeometry,
    window: (u64, u64, u64),
    clocks: Vec<[Ref; L]>,
) -> Vec<Event> {
    let mut uut = ConfigUnit::<L>::new(true);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<ConfigUnit<L>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let first_line = g.line(window.0, window.1, 0, 0);
    sim.add_testbench(move |mut sim: Sim<ConfigUnit<L>>| {
        let mut x = sim.init()?;
        x.window_rank.next = window.0.to_bits();
        x.window_row_first.next = window.1.to_bits();
        x.window_row_count.next = window.2.to_bits();
        x.window_first_line.next = first_line.to_bits();
        let mut out = vec![];
        for k in 0..clocks.len() {
            for j in 0..L {
                let (v, w, r, row, line) = clocks.get(k).map_or((false, false, 0, 0, 0), |c| c[j]);
                x.ref_valid[j].next = v;
                x.ref_write[j].next = w;
                x.ref_rank[j].next = r.to_bits();
                x.ref_row[j].next = row.to_bits();
                x.ref_line[j].next = line.to_bits();
            }
            wait_clock_cycle!(sim, clock, x);
            {
                for j in 0..L {
                    out.push((
                        x.ev_valid[j].val(),
                        x.ev_kind[j].val().to_u64(),
                        x.ev_write[j].val(),
                        x.ev_value[j].val().to_u64(),
                        x.tracing[j].val(),
                        x.tags_only[j].val(),
                    ));
                }
            }
        }
        tx.send(out).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn cu_inner_commands_change_the_mode_for_later_lanes() {
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
    let out = run_cu::<4>(g, window, clocks);
    use event_kind::*;
    let line = g.line(1, 0x1234, 9, 0x88);
    // Tracing on: ACCESS; END_TRACING executes as CMD; the write after it
    // is suppressed; a user event is not recorded while tracing is off.
    assert_eq!(out[0], (true, ACCESS, false, line, true, false));
    assert_eq!(out[1], (true, CMD, false, 1, false, false));
    assert!(!out[2].0);
    assert!(!out[3].0);
    // BEGIN_TRACING, TAGS_ONLY: access suppressed, a log tag recorded.
    assert_eq!(out[4], (true, CMD, true, 0, true, false));
    assert_eq!(out[5], (true, CMD, false, 2, true, true));
    assert!(!out[6].0);
    assert_eq!(out[7], (true, TAG, false, 0x10005, true, true));
    // TRACE_ALL, then an ACCESS again, SYNC is a CMD.
    assert_eq!(out[8], (true, CMD, false, 3, true, false));
    assert_eq!(out[9], (true, ACCESS, true, line, true, false));
    assert_eq!(out[10], (true, CMD, true, 5, true, false));
    assert!(!out[11].0);
}

#[test]
fn dsmu_and_cu_verilog_pass_yosys() {
    let mut uut = Dsmu::<4>::new(G28);
    uut.connect_all();
    yosys_validate("hmtt_dsmu_l4", &generate_verilog(&uut)).unwrap();
    let mut uut = ConfigUnit::<4>::new(true);
    uut.connect_all();
    yosys_validate("hmtt_cu_l4", &generate_verilog(&uut)).unwrap();
}
