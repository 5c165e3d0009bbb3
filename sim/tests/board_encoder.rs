//! Encoder and TX FIFO at board level: atomic pushes and LOST, by hand.

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
    let mut cfg = BoardConfig::new(g);
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
    assert_eq!(pushed[6].0, 300);
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
fn probe_levels_follow_pushes_and_pops() {
    let g = Geometry::ddr3_default();
    let mut cfg = BoardConfig::new(g);
    cfg.drain = DrainRate { num: 1, den: 4 };
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
    for _ in 0..3 {
        b.command(&rd(0, 0)).unwrap();
    }
    b.finish();
    // Credit 1/4 per tick: pops at ticks 3, 7, 11.
    let p = b.probe().unwrap();
    let pops: Vec<u64> = p.popped.iter().map(|w| w.0).collect();
    assert_eq!(pops, vec![3, 7, 11]);
    assert_eq!(p.levels(0, 12), vec![3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0]);
    // The last packet closes by idle flush.
    let mut packets = vec![];
    b.drain_packets(&mut packets);
    assert_eq!(packets.len(), 1);
    assert_eq!(packets[0].leave_tick, 11 + 65536);
}
