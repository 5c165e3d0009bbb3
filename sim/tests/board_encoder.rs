//! Encoder and TX FIFO at board level: atomic pushes and LOST, and the
//! probe's clocks, by hand.

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{BoardEvent, Opcode};
use hmtt_sim::board::{Board, BoardConfig, DrainRate};

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
fn events_go_in_whole_or_not_at_all_and_lost_comes_first_when_there_is_room() {
    let g = Geometry::ddr3_default();
    // Two lanes, two references a clock: an 8-word FIFO is allowed.
    let mut cfg = BoardConfig::new(g).with_lanes(2, 2);
    cfg.fifo_depth = 8;
    // Practically no drain during the test.
    cfg.drain = DrainRate {
        num: 1,
        den: 1 << 40,
    };
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
    for t in 0..6 {
        b.command(&rd(t, 0)).unwrap(); // one word each
    }
    assert_eq!(b.fifo_level(), 6);
    // TIME + LINE_HI + ACCESS = 3 words: no room for all, nothing pushed.
    b.command(&rd(200, 1)).unwrap();
    assert_eq!(b.fifo_level(), 6);
    assert_eq!(b.counters().events_dropped, 1);
    assert_eq!(b.counters().lost_pending, 1);
    // Next event (TIME + ACCESS, 2 words): LOST goes first (TIME + LOST, 2
    // words) and fills the FIFO; the event itself is then dropped.
    b.command(&rd(300, 0)).unwrap();
    assert_eq!(b.fifo_level(), 8);
    assert_eq!(b.counters().lost_words, 1);
    assert_eq!(b.counters().lost_reported, 1);
    assert_eq!(b.counters().events_dropped, 2);
    assert_eq!(b.counters().lost_pending, 1);
    // The high-water mark is worked out with the pops, in batches.
    b.advance_to(300).unwrap();
    assert_eq!(b.counters().fifo_high_water, 8);
    let pushed = &b.probe().unwrap().pushed;
    assert_eq!(pushed.len(), 8);
    assert_eq!(pushed[6].1.opcode(), Opcode::Time);
    // Pushed in the clock of tick 300.
    assert_eq!(pushed[6].0, 150);
    assert_eq!(pushed[7].1.opcode(), Opcode::Lost);
    assert_eq!(pushed[7].1.payload(), 1);
    // Full: a LOST finds no room either and is not counted.
    b.command(&rd(300, 0)).unwrap();
    assert_eq!(b.counters().lost_words, 1);
    assert_eq!(b.counters().lost_pending, 2);
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
    assert_eq!(events.len(), 7);
    assert_eq!(events[6].event, BoardEvent::Lost { count: 1 });
    assert_eq!(events[6].tick, 300);
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
