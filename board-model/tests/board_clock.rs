//! The rules of board.md 2.2 that come from stepping the FIFO, the drain
//! and the packetizer once per fabric clock, and from the reference limit,
//! by hand; each stream is also run against the literal model.

mod board_common;

use board_common::*;
use hmtt_board_model::{Board, BoardConfig, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::Packet;
use hmtt_format::record::{BoardEvent, TimedEvent};

fn cmd(cycle: u64, cmd: DdrCmd, bank: u32, arg: u32) -> Command {
    Command {
        cycle,
        cmd,
        rank: 0,
        bank,
        arg,
    }
}

fn access(tick: u64, line: u64) -> TimedEvent {
    TimedEvent {
        tick,
        event: BoardEvent::Access { line, write: false },
    }
}

#[test]
fn a_word_pushed_in_clock_k_pops_in_clock_k_plus_one_at_the_earliest() {
    // 7/8 of a word per clock: after two idle clocks the credit is capped
    // at den and would pop at once; the RD's word still waits a clock.
    for lanes in [1u32, 8] {
        let l = u64::from(lanes);
        let mut cfg = BoardConfig::new(Geometry::ddr3_default()).with_lanes(lanes, 1);
        cfg.drain = per_clock_drain(lanes, 7, 8);
        let rd = 2 * l + l / 2;
        let cmds = [cmd(0, DdrCmd::Act, 1, 3), cmd(rd, DdrCmd::Rd, 1, 8)];
        let mut b = Board::new(cfg.clone()).unwrap();
        b.enable_probe();
        for c in &cmds {
            b.command(c).unwrap();
        }
        assert_eq!(b.current_clock(), 2);
        assert_eq!(b.fifo_level(), 1);
        b.finish();
        let p = b.probe().unwrap();
        assert_eq!(p.pushed.iter().map(|w| w.0).collect::<Vec<_>>(), vec![2]);
        assert_eq!(p.popped.iter().map(|w| w.0).collect::<Vec<_>>(), vec![3]);
        assert_eq!(p.levels(1, 4), vec![0, 1, 0, 0]);
        run_against_literal(&cfg, &cmds);
    }
}

#[test]
fn a_clock_is_open_with_room_for_two_clocks_of_words_less_the_previous_clocks() {
    // One lane, E = 1: a clock pushes at most 2 + 3E = 5 words, and it is
    // open when `depth - level_k + pushed_{k-1}` is at least 10, so with an
    // 11-word FIFO and one word a clock: clocks 0 and 1 (room 11), and
    // clock 2 (level 2, room 9 plus the word of clock 1) are pushed; clock
    // 3 (level 3, 8 + 1) and clock 4 (8 + 0) drop their RDs. At
    // 1/8 word per clock the pops come in clocks 7 and 15. A clock's own
    // pop counts only for the next clock: clock 15 sees level 2 (room 9)
    // and drops its RD, clock 16 sees level 1 (room 10) and pushes LOST(4)
    // and its RD.
    let mut cfg = BoardConfig::new(Geometry::ddr3_default()).with_lanes(1, 1);
    cfg.fifo_depth = 11;
    cfg.drain = DrainRate { num: 1, den: 8 };
    let mut cmds = vec![cmd(0, DdrCmd::Act, 1, 3)];
    for t in 0..5 {
        cmds.push(cmd(t, DdrCmd::Rd, 1, 8 * t as u32));
    }
    let mut b = Board::new(cfg.clone()).unwrap();
    b.enable_probe();
    b.commands(&cmds).unwrap();
    assert_eq!(b.fifo_level(), 3);
    assert_eq!(b.counters().events_dropped, 2);
    let late = [cmd(7, DdrCmd::Rd, 1, 0), cmd(15, DdrCmd::Rd, 1, 0)];
    b.commands(&late).unwrap();
    assert_eq!(b.fifo_level(), 2);
    assert_eq!(b.counters().events_dropped, 4);
    assert_eq!(b.counters().lost_words, 0);
    b.command(&cmd(16, DdrCmd::Rd, 1, 0)).unwrap();
    assert_eq!(b.fifo_level(), 3);
    assert_eq!(b.counters().lost_words, 1);
    assert_eq!(b.counters().lost_reported, 4);
    assert_eq!(b.counters().events_dropped, 4);
    b.advance_to(24).unwrap();
    let p = b.probe().unwrap();
    assert_eq!(
        p.popped.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![7, 15, 23]
    );
    assert_eq!(
        p.pushed.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 16, 16]
    );
    assert_eq!(b.counters().fifo_high_water, 3);
    cmds.extend(late);
    cmds.push(cmd(16, DdrCmd::Rd, 1, 0));
    run_against_literal(&cfg, &cmds);
}

#[test]
fn the_limit_drops_the_references_after_the_eth_and_the_next_lost_reports_them() {
    let g = Geometry::ddr3_default();
    let cfg = BoardConfig::new(g);
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (8, 3));
    let first = cfg.window.first_line(&g);
    let end_tracing = g.coord(first + 1);
    let line = |col: u64| (3 << 10) | (1 << 7) | col;
    let mut cmds = vec![
        cmd(0, DdrCmd::Act, 1, 3),
        Command {
            cycle: 0,
            cmd: DdrCmd::Act,
            rank: end_tracing.rank,
            bank: end_tracing.bank,
            arg: end_tracing.row,
        },
    ];
    // Clock 1: five references, the last two over the limit.
    for t in 8..13 {
        cmds.push(cmd(t, DdrCmd::Rd, 1, 8 * (t as u32 - 8)));
    }
    // Clock 2: one reference, after the LOST of the two.
    cmds.push(cmd(16, DdrCmd::Rd, 1, 0));
    // Clock 3: END_TRACING as the fourth reference: dropped, it does not
    // execute, so the reference of clock 4 is still traced.
    for t in 24..27 {
        cmds.push(cmd(t, DdrCmd::Rd, 1, 8));
    }
    cmds.push(Command {
        cycle: 27,
        cmd: DdrCmd::Rd,
        rank: end_tracing.rank,
        bank: end_tracing.bank,
        arg: end_tracing.col_line << 3,
    });
    cmds.push(cmd(32, DdrCmd::Rd, 1, 16));
    let (board, packets) = run_against_literal(&cfg, &cmds);
    let n = board.counters();
    assert_eq!(n.references, 11);
    assert_eq!((n.references_over_limit, n.clocks_over_limit), (3, 2));
    assert_eq!((n.events_dropped, n.lost_words, n.lost_reported), (0, 2, 3));
    assert_eq!((n.config_events, n.inner_commands), (0, 0));
    assert!(board.mode().tracing);
    let lost = |tick, count| TimedEvent {
        tick,
        event: BoardEvent::Lost { count },
    };
    assert_eq!(
        decode(&cfg, &packets),
        vec![
            access(8, line(0)),
            access(9, line(1)),
            access(10, line(2)),
            lost(16, 2),
            access(16, line(0)),
            access(24, line(1)),
            access(25, line(1)),
            access(26, line(1)),
            lost(32, 1),
            access(32, line(2)),
        ]
    );
}

#[test]
fn packets_leave_at_the_tick_of_their_clock() {
    // 8 lanes, half a word per clock, two words a packet, idle flush 100
    // ticks (13 clocks: 104 ticks). RDs at ticks 3, 4, 5 (clock 0) pop in
    // clocks 1, 3 and 5; the first packet fills up in clock 3, the second
    // closes by idle flush in clock 5 + 13.
    let mut cfg = BoardConfig::new(Geometry::ddr3_default());
    cfg.drain = per_clock_drain(8, 1, 2);
    cfg.max_words = 2;
    cfg.idle_flush_ticks = 100;
    let cmds = [
        cmd(0, DdrCmd::Act, 1, 3),
        cmd(3, DdrCmd::Rd, 1, 0),
        cmd(4, DdrCmd::Rd, 1, 8),
        cmd(5, DdrCmd::Rd, 1, 16),
    ];
    let (board, packets) = run_against_literal(&cfg, &cmds);
    let pops: Vec<u64> = board.probe().unwrap().popped.iter().map(|w| w.0).collect();
    assert_eq!(pops, vec![1, 3, 5]);
    let leave: Vec<u64> = packets.iter().map(|p| p.leave_tick).collect();
    assert_eq!(leave, vec![3 * 8, (5 + 13) * 8]);
    let n = board.counters();
    assert_eq!((n.packets_closed_full, n.packets_closed_idle), (1, 1));
}

#[test]
fn a_packet_closing_in_a_clock_carries_the_mode_after_that_clock() {
    // The one-word packet of a RD at tick 3 (popped in clock 1) closes by
    // idle flush in clock 14 (tick 112). END_TRACING in clock 14, even at
    // its last tick, turns its flags to 0; in clock 15 it comes too late.
    let g = Geometry::ddr3_default();
    let mut cfg = BoardConfig::new(g);
    cfg.drain = per_clock_drain(8, 1, 2);
    cfg.idle_flush_ticks = 100;
    let end_tracing = g.coord(cfg.window.first_line(&g) + 1);
    for (tick, flags) in [(112 + 7, 0u8), (120, 1)] {
        let cmds = [
            cmd(0, DdrCmd::Act, 1, 3),
            Command {
                cycle: 0,
                cmd: DdrCmd::Act,
                rank: end_tracing.rank,
                bank: end_tracing.bank,
                arg: end_tracing.row,
            },
            cmd(3, DdrCmd::Rd, 1, 0),
            Command {
                cycle: tick,
                cmd: DdrCmd::Rd,
                rank: end_tracing.rank,
                bank: end_tracing.bank,
                arg: end_tracing.col_line << 3,
            },
        ];
        let (_, packets) = run_against_literal(&cfg, &cmds);
        assert_eq!(packets[0].leave_tick, 112);
        let p = Packet::new_checked(&packets[0].bytes[..]).unwrap();
        assert_eq!((p.nwords(), p.flags()), (1, flags), "END_TRACING at {tick}");
    }
}

#[test]
fn leave_ticks_are_multiples_of_the_lanes_on_random_streams() {
    for (lanes, refs) in [(2u32, 1u32), (4, 4), (8, 3)] {
        let g = Geometry::ddr3_default();
        let mut cfg = BoardConfig::new(g).with_lanes(lanes, refs);
        cfg.max_words = 17;
        cfg.idle_flush_ticks = 77;
        let mut rng = Rng::new(u64::from(lanes));
        let shape = StreamShape {
            commands: 5000,
            max_gap: 30,
            long_gap: 500,
            long_gap_percent: 5,
            inner_percent: 2,
            ..StreamShape::default()
        };
        let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
        let (board, packets) = run_against_literal(&cfg, &cmds);
        assert!(packets.len() > 100);
        assert!(packets.iter().all(|p| p.leave_tick % u64::from(lanes) == 0));
        let n = board.counters();
        assert!(n.packets_closed_idle > 0 && n.packets_closed_full > 0);
    }
}
