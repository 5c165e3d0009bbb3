//! The keeper (format.md §4.1): filler TIME words at exactly the ticks the
//! HDL pushes them, also when the FIFO is full, and the events dropped when
//! a gap would need two TIME words; against the literal model.

mod board_common;

use board_common::*;
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{BoardEvent, Opcode, RecordWord, KEEPER_GAP};
use hmtt_sim::board::{Board, BoardConfig, BoardCounters, DrainRate};

fn cmd(cycle: u64, cmd: DdrCmd, bank: u32, arg: u32) -> Command {
    Command {
        cycle,
        cmd,
        rank: 0,
        bank,
        arg,
    }
}

fn filler() -> RecordWord {
    RecordWord::control_unchecked(0, Opcode::Time, (1 << 21) - 1)
}

fn filler_ticks(board: &Board) -> Vec<u64> {
    let p = board.probe().unwrap();
    p.pushed
        .iter()
        .filter(|(_, w)| *w == filler())
        .map(|(t, _)| *t)
        .collect()
}

fn check_lost_adds_up(n: &BoardCounters) {
    assert_eq!(n.lost_reported + n.lost_pending, n.events_dropped, "{n:?}");
}

#[test]
fn fillers_at_exactly_every_keeper_gap_of_a_long_silence() {
    let g = Geometry::preset("ddr4-64g").unwrap();
    let mut cfgs = vec![BoardConfig::new(g)];
    let mut c = BoardConfig::new(g);
    c.max_words = 2;
    c.idle_flush_ticks = 3;
    c.ports = 2;
    c.set_line_rate();
    cfgs.push(c);
    // An idle flush longer than the keeper gap: fillers join the open packet.
    let mut c = BoardConfig::new(g);
    c.idle_flush_ticks = KEEPER_GAP + 1000;
    cfgs.push(c);
    for cfg in cfgs {
        let gap_end = 5 + 3 * KEEPER_GAP + KEEPER_GAP / 2;
        let row = (g.rows() - 1) / 2;
        let cmds = vec![
            cmd(0, DdrCmd::Act, 1, row),
            cmd(5, DdrCmd::Rd, 1, 16),
            // A gap of three and a half KEEPER_GAPs, then a LINE_HI change.
            cmd(gap_end, DdrCmd::Act, 2, 7),
            cmd(gap_end + 1, DdrCmd::Wr, 2, 8),
            // Exactly one KEEPER_GAP: the filler comes before the event
            // of the same tick, which then needs no TIME word.
            cmd(gap_end + 1 + KEEPER_GAP, DdrCmd::Rd, 2, 0),
        ];
        let end = gap_end + 1 + KEEPER_GAP;
        let (board, packets) = run_against_literal(&cfg, &cmds);
        let fillers = filler_ticks(&board);
        let (during, after): (Vec<u64>, Vec<u64>) = fillers.iter().partition(|&&t| t <= end);
        assert_eq!(
            during,
            vec![5 + KEEPER_GAP, 5 + 2 * KEEPER_GAP, 5 + 3 * KEEPER_GAP, end],
            "{cfg:?}"
        );
        // After the stream, fillers go on only while the last packet is
        // open (an idle flush longer than KEEPER_GAP), KEEPER_GAP apart.
        if cfg.idle_flush_ticks < KEEPER_GAP {
            assert!(after.is_empty(), "{after:?}");
        } else {
            assert!(!after.is_empty());
            let mut prev = end;
            for t in after {
                assert_eq!(t, prev + KEEPER_GAP);
                prev = t;
            }
        }
        let pushed = &board.probe().unwrap().pushed;
        let last_event = pushed.iter().rfind(|(_, w)| *w != filler()).unwrap();
        assert_eq!(last_event.0, end);
        assert!(!last_event.1.is_control() && last_event.1.dt() == 0);
        assert_eq!(board.counters().time_fillers, fillers.len() as u64);
        assert_eq!(board.counters().events_dropped, 0);
        let got: Vec<u64> = decode(&cfg, &packets).iter().map(|e| e.tick).collect();
        assert_eq!(got, vec![5, gap_end + 1, gap_end + 1 + KEEPER_GAP]);
    }
}

#[test]
fn fillers_queue_behind_words_still_in_the_fifo() {
    // A deep FIFO drained slowly still holds words when the keeper is due.
    let mut cfg = BoardConfig::new(Geometry::ddr3_default());
    cfg.fifo_depth = 16384;
    cfg.drain = DrainRate {
        num: 1,
        den: 10_000,
    };
    let mut cmds = vec![cmd(0, DdrCmd::Act, 0, 3)];
    for i in 0..16384u64 {
        cmds.push(cmd(1 + i, DdrCmd::Rd, 0, (i as u32 & 127) << 3));
    }
    cmds.push(cmd(3 * KEEPER_GAP, DdrCmd::Wr, 0, 8));
    let (board, packets) = run_against_literal(&cfg, &cmds);
    let fillers = filler_ticks(&board);
    assert_eq!(fillers, vec![16384 + KEEPER_GAP, 16384 + 2 * KEEPER_GAP]);
    // The first filler found the FIFO not yet empty.
    let popped_before = board
        .probe()
        .unwrap()
        .popped
        .iter()
        .filter(|(t, _)| *t < fillers[0])
        .count();
    assert!(popped_before < 16384, "{popped_before}");
    let decoded = decode(&cfg, &packets);
    assert_eq!(decoded.len(), 16385);
    assert_eq!(decoded.last().unwrap().tick, 3 * KEEPER_GAP);
}

#[test]
fn a_keeper_that_finds_the_fifo_full_retries_after_the_next_pop_and_long_gaps_drop_events() {
    // Drain slower than one word per KEEPER_GAP, an 8-word FIFO.
    let mut cfg = BoardConfig::new(Geometry::ddr3_default());
    cfg.fifo_depth = 8;
    let den = KEEPER_GAP + KEEPER_GAP / 2;
    cfg.drain = DrainRate { num: 1, den };
    let mut cmds = vec![cmd(0, DdrCmd::Act, 0, 3)];
    for i in 1..=9u64 {
        cmds.push(cmd(i, DdrCmd::Rd, 0, (i as u32) << 3));
    }
    // FIFO full since tick 8; the first pop is at den-1, the keeper due at
    // 8 + KEEPER_GAP is blocked until den.
    let first_pop = den - 1;
    // Full FIFO, gap short enough: dropped for lack of room only.
    let short = first_pop + 100;
    cmds.push(cmd(short, DdrCmd::Rd, 0, 0));
    // The gap from the last filler's time (8 + KEEPER_GAP) needs two TIME
    // words by the time of this event: dropped, counted as overflow.
    let long = 8 + 2 * KEEPER_GAP + 64 + 5;
    cmds.push(cmd(long, DdrCmd::Wr, 0, 0));
    let (board, packets) = run_against_literal(&cfg, &cmds);
    let fillers = filler_ticks(&board);
    assert_eq!(fillers[0], first_pop + 1, "{fillers:?}");
    let n = board.counters();
    assert_eq!(n.events_dropped, 3, "{n:?}");
    assert_eq!(n.time_overflows, 1, "{n:?}");
    check_lost_adds_up(n);
    // No LOST was ever pushed: every event after the drops found the FIFO
    // full; the count stays pending.
    assert_eq!(n.lost_pending, 3);
    let decoded = decode(&cfg, &packets);
    let ticks: Vec<u64> = decoded.iter().map(|e| e.tick).collect();
    assert_eq!(ticks, (1..=8).collect::<Vec<_>>());
    assert!(decoded
        .iter()
        .all(|e| matches!(e.event, BoardEvent::Access { .. })));
}
