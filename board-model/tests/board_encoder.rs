//! Encoder and TX FIFO at board level: open and closed clocks and LOST, and the
//! probe's clocks, by hand.

use hmtt_board_model::{Board, BoardConfig, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{BoardEvent, Opcode};

fn rd(cycle: u64, bank: u32) -> Command {
    Command {
        cycle,
        cmd: DdrCmd::Rd,
        rank: 0,
        bank,
        arg: 0,
    }
}

#[test]
fn a_closed_clock_drops_its_events_and_the_next_open_one_pushes_lost_first() {
    let g = Geometry::ddr3_default();
    // Two lanes, two references a clock: a clock pushes at most 2 + 3E = 8
    // words, and it is open when `depth - level_k + pushed_{k-1}` is 16 or
    // more: with a 16-word FIFO, when the FIFO holds no word of the clocks
    // before the previous one.
    let mut cfg = BoardConfig::new(g).with_lanes(2, 2);
    cfg.fifo_depth = 16;
    // A quarter word per clock: pops in clocks 3, 7 and 11.
    cfg.drain = DrainRate { num: 1, den: 8 };
    let mut b = Board::new(cfg).unwrap();
    b.enable_probe();
    let act = |cycle, bank, row| Command {
        cycle,
        cmd: DdrCmd::Act,
        rank: 0,
        bank,
        arg: row,
    };
    // Bank 0 row 0 (LINE_HI 0), bank 1 a row with LINE_HI 1 (row bit 14).
    b.command(&act(0, 0, 0)).unwrap();
    b.command(&act(0, 1, 1 << 14)).unwrap();
    // Clock 0 is open: a word each.
    b.command(&rd(0, 0)).unwrap();
    b.command(&rd(1, 0)).unwrap();
    assert_eq!(b.fifo_level(), 2);
    // Clock 1 holds only clock 0's words: open.
    b.command(&rd(2, 0)).unwrap();
    assert_eq!(b.fifo_level(), 3);
    // Clock 2 starts with 3 words, 2 of them older than clock 1: its
    // one-word event is dropped although it would fit.
    b.command(&rd(4, 0)).unwrap();
    assert_eq!(b.fifo_level(), 3);
    assert_eq!(b.counters().events_dropped, 1);
    assert_eq!(b.counters().lost_pending, 1);
    // Clock 8 starts with a word: still closed.
    b.command(&rd(16, 0)).unwrap();
    assert_eq!(b.counters().events_dropped, 2);
    // Clock 12 starts empty: LOST(2) first, then both events (LINE_HI +
    // ACCESS each), 5 words in one clock.
    b.command(&rd(24, 1)).unwrap();
    b.command(&rd(25, 0)).unwrap();
    assert_eq!(b.fifo_level(), 5);
    assert_eq!(b.counters().lost_words, 1);
    assert_eq!(b.counters().lost_reported, 2);
    assert_eq!(b.counters().events_dropped, 2);
    assert_eq!(b.counters().lost_pending, 0);
    b.advance_to(26).unwrap();
    assert_eq!(b.counters().fifo_high_water, 5);
    let p = b.probe().unwrap();
    let clocks: Vec<u64> = p.pushed.iter().map(|w| w.0).collect();
    assert_eq!(clocks, vec![0, 0, 1, 12, 12, 12, 12, 12]);
    let ops: Vec<Option<Opcode>> = p.pushed[3..]
        .iter()
        .map(|w| w.1.is_control().then(|| w.1.opcode()))
        .collect();
    assert_eq!(
        ops,
        vec![
            Some(Opcode::Lost),
            Some(Opcode::LineHi),
            None,
            Some(Opcode::LineHi),
            None
        ]
    );
    assert_eq!(p.pushed[3].1.payload(), 2);
    assert_eq!(
        p.popped.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![3, 7, 11]
    );
    b.finish();
    let mut packets = vec![];
    b.drain_packets(&mut packets);
    let events: Vec<_> = packets
        .iter()
        .flat_map(|p| {
            hmtt_format::packet::Packet::new_checked(&p.bytes[..])
                .unwrap()
                .events()
                .map(|e| e.unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(events.len(), 6);
    assert_eq!(events[3].event, BoardEvent::Lost { count: 2 });
    assert_eq!(events[3].tick, 24);
}

#[test]
fn probe_levels_follow_pushes_and_pops_clock_by_clock() {
    // A quarter word per clock, a word pushed in each of clocks 0, 1 and
    // 2: the credit reaches den in clocks 3, 7 and 11 (clock 0's quarter
    // stays: the FIFO's level counts the first word from clock 1 on). The
    // same in clocks for 1 and 4 lanes.
    for (lanes, den) in [(1u32, 4u64), (4, 16)] {
        let g = Geometry::ddr3_default();
        let mut cfg = BoardConfig::new(g).with_lanes(lanes, 1);
        cfg.drain = DrainRate { num: 1, den };
        let mut b = Board::new(cfg).unwrap();
        b.enable_probe();
        b.command(&Command {
            cycle: 0,
            cmd: DdrCmd::Act,
            rank: 0,
            bank: 0,
            arg: 1,
        })
        .unwrap();
        // One reference a clock: ticks 0, L, 2L are clocks 0, 1, 2.
        let l = u64::from(lanes);
        for k in 0..3 {
            b.command(&rd(k * l, 0)).unwrap();
        }
        b.finish();
        let p = b.probe().unwrap();
        let pushes: Vec<u64> = p.pushed.iter().map(|w| w.0).collect();
        assert_eq!(pushes, vec![0, 1, 2]);
        let pops: Vec<u64> = p.popped.iter().map(|w| w.0).collect();
        assert_eq!(pops, vec![3, 7, 11], "L {lanes}");
        assert_eq!(p.levels(0, 12), vec![1, 2, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0]);
        // The last packet closes by idle flush: 65536 ticks after the
        // tick of the last pop's clock, in clocks.
        let mut packets = vec![];
        b.drain_packets(&mut packets);
        assert_eq!(packets.len(), 1);
        assert_eq!(packets[0].leave_tick, (11 + 65536 / l) * l);
    }
}
