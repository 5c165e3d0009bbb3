//! The keeper (format.md §4.1, board.md step 1): filler TIME words in
//! exactly the clocks the HDL pushes them, also when the FIFO is full, and
//! the events dropped when a gap would need two TIME words; against the
//! literal model, for one lane and for several.

mod board_common;

use board_common::*;
use hmtt_board_model::{Board, BoardConfig, BoardCounters, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{Opcode, RecordWord, KEEPER_GAP};

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

fn filler_clocks(board: &Board) -> Vec<u64> {
    let p = board.probe().unwrap();
    p.pushed
        .iter()
        .filter(|(_, w)| *w == filler())
        .map(|(k, _)| *k)
        .collect()
}

fn check_lost_adds_up(n: &BoardCounters) {
    assert_eq!(
        n.lost_reported + n.lost_pending,
        n.events_dropped + n.references_over_limit,
        "{n:?}"
    );
}

/// The clock of the first filler due after `last`: the first whose tick
/// is `KEEPER_GAP` or more after it.
fn keeper_clock(last: u64, lanes: u64) -> u64 {
    (last + KEEPER_GAP).div_ceil(lanes)
}

#[test]
fn fillers_in_the_first_clock_of_every_keeper_gap_of_a_long_silence() {
    let g = Geometry::preset("ddr4-64g").unwrap();
    for lanes in [1u32, 8] {
        let mut cfgs = vec![BoardConfig::new(g).with_lanes(lanes, 1)];
        let mut c = BoardConfig::new(g).with_lanes(lanes, 1);
        c.max_words = 2;
        c.idle_flush_ticks = 3;
        c.ports = 2;
        c.set_line_rate();
        cfgs.push(c);
        // An idle flush longer than the keeper gap: fillers join the open
        // packet.
        let mut c = BoardConfig::new(g).with_lanes(lanes, 1);
        c.idle_flush_ticks = KEEPER_GAP + 1000;
        cfgs.push(c);
        let l = u64::from(lanes);
        for cfg in cfgs {
            // A gap of three and a half KEEPER_GAPs after tick 5, then a
            // LINE_HI change at a clock's tick.
            let gap_end = 7 + 3 * KEEPER_GAP + KEEPER_GAP / 2;
            let row = (g.rows() - 1) / 2;
            let wr = gap_end + 1;
            assert_eq!(wr % 8, 0);
            // Exactly one KEEPER_GAP after the WR, at a clock's tick: the
            // filler comes before the event of the same clock, which then
            // needs no TIME word.
            let end = wr + KEEPER_GAP;
            let cmds = vec![
                cmd(0, DdrCmd::Act, 1, row),
                cmd(5, DdrCmd::Rd, 1, 16),
                cmd(gap_end, DdrCmd::Act, 2, 7),
                cmd(wr, DdrCmd::Wr, 2, 8),
                cmd(end, DdrCmd::Rd, 2, 0),
            ];
            let (board, packets) = run_against_literal(&cfg, &cmds);
            let fillers = filler_clocks(&board);
            let (during, after): (Vec<u64>, Vec<u64>) =
                fillers.iter().partition(|&&k| k <= end / l);
            // The fillers stand for 5 + j * KEEPER_GAP: with 8 lanes they
            // are pushed in the clock of tick 8 + j * KEEPER_GAP (the gap is
            // a multiple of 64).
            assert_eq!(
                during,
                vec![
                    keeper_clock(5, l),
                    keeper_clock(5 + KEEPER_GAP, l),
                    keeper_clock(5 + 2 * KEEPER_GAP, l),
                    end / l
                ],
                "{cfg:?}"
            );
            if lanes == 8 {
                assert_eq!(during[0] * 8, 8 + KEEPER_GAP);
            }
            // After the stream, fillers go on only while the last packet is
            // open (an idle flush longer than KEEPER_GAP), KEEPER_GAP apart.
            if cfg.idle_flush_ticks < KEEPER_GAP {
                assert!(after.is_empty(), "{after:?}");
            } else {
                assert!(!after.is_empty());
                let mut prev = end / l;
                for k in after {
                    assert_eq!(k, prev + KEEPER_GAP / l);
                    prev = k;
                }
            }
            let pushed = &board.probe().unwrap().pushed;
            let last_event = pushed.iter().rfind(|(_, w)| *w != filler()).unwrap();
            assert_eq!(last_event.0, end / l);
            assert!(!last_event.1.is_control() && last_event.1.dt() == 0);
            assert_eq!(board.counters().time_fillers, fillers.len() as u64);
            assert_eq!(board.counters().events_dropped, 0);
            let got: Vec<u64> = decode(&cfg, &packets).iter().map(|e| e.tick).collect();
            assert_eq!(got, vec![5, wr, end]);
        }
    }
}

#[test]
fn an_event_late_in_a_clock_carries_a_gap_above_keeper_gap_in_one_time_word() {
    // 8 lanes, last push at tick 17: the keeper is due in the first clock
    // whose tick is 17 + KEEPER_GAP or more, that of tick 24 + KEEPER_GAP
    // (KEEPER_GAP is a multiple of 64). An event at the end of the clock
    // before has a gap of KEEPER_GAP + 5: no filler yet, one TIME word of
    // 2^21 - 1 and dt 5 (board.md "Why one TIME word is enough").
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    let late = 22 + KEEPER_GAP;
    assert_eq!(late - 17, KEEPER_GAP + 5);
    assert!(late / 8 * 8 < 17 + KEEPER_GAP);
    let cmds = vec![
        cmd(0, DdrCmd::Act, 1, 3),
        cmd(17, DdrCmd::Rd, 1, 16),
        cmd(late, DdrCmd::Rd, 1, 24),
    ];
    let (board, packets) = run_against_literal(&cfg, &cmds);
    // The event's TIME word looks like a filler; none was pushed.
    assert_eq!(board.counters().time_fillers, 0);
    let pushed: Vec<RecordWord> = board.probe().unwrap().pushed.iter().map(|p| p.1).collect();
    assert_eq!(pushed.len(), 3);
    assert_eq!(
        pushed[1],
        RecordWord::control_unchecked(0, Opcode::Time, (1 << 21) - 1)
    );
    assert_eq!((pushed[2].is_control(), pushed[2].dt()), (false, 5));
    let got: Vec<u64> = decode(&cfg, &packets).iter().map(|e| e.tick).collect();
    assert_eq!(got, vec![17, late]);
}

#[test]
fn fillers_queue_behind_words_still_in_the_fifo() {
    // A deep FIFO drained slowly still holds words when the keeper is due.
    for (lanes, refs) in [(1u32, 1u32), (8, 3)] {
        let mut cfg = BoardConfig::new(Geometry::ddr3_default()).with_lanes(lanes, refs);
        // Room for every RD: a clock is open with 2 + 3E words free.
        cfg.fifo_depth = 16384 + 16;
        cfg.drain = DrainRate {
            num: 1,
            den: 10_000,
        };
        let l = u64::from(lanes);
        // 16384 RD, E per clock from tick 1 on.
        let rd_tick = |i: u64| 1 + i / u64::from(refs) * l + i % u64::from(refs);
        let mut cmds = vec![cmd(0, DdrCmd::Act, 0, 3)];
        for i in 0..16384u64 {
            cmds.push(cmd(rd_tick(i), DdrCmd::Rd, 0, (i as u32 & 127) << 3));
        }
        let last = rd_tick(16383);
        cmds.push(cmd(3 * KEEPER_GAP, DdrCmd::Wr, 0, 8));
        let (board, packets) = run_against_literal(&cfg, &cmds);
        let fillers = filler_clocks(&board);
        assert_eq!(
            fillers,
            vec![keeper_clock(last, l), keeper_clock(last + KEEPER_GAP, l)]
        );
        // The first filler found the FIFO not yet empty.
        let popped_before = board
            .probe()
            .unwrap()
            .popped
            .iter()
            .filter(|(k, _)| *k < fillers[0])
            .count();
        assert!(popped_before < 16384, "{popped_before}");
        assert_eq!(board.counters().references_over_limit, 0);
        let decoded = decode(&cfg, &packets);
        assert_eq!(decoded.len(), 16385);
        assert_eq!(decoded.last().unwrap().tick, 3 * KEEPER_GAP);
    }
}

#[test]
fn a_keeper_that_finds_the_fifo_full_retries_after_the_next_pop_and_long_gaps_drop_events() {
    // A FIFO of 8 + (2 + 3E) words drained practically never: an RD, then
    // the keeper's fillers, one per KEEPER_GAP, until 8 words leave too
    // little room for the next (`depth - level_k + pushed_{k-1} >= 3 + 3E`,
    // board.md 2.2, the clock before pushing nothing).
    for (lanes, refs) in [(1u32, 1u32), (2, 2), (8, 2)] {
        let l = u64::from(lanes);
        let mut cfg = BoardConfig::new(Geometry::ddr3_default()).with_lanes(lanes, refs);
        cfg.fifo_depth = 8 + 2 + 3 * refs as usize;
        let den = 1000 * KEEPER_GAP;
        cfg.drain = DrainRate { num: 1, den };
        let mut cmds = vec![cmd(0, DdrCmd::Act, 0, 3), cmd(1, DdrCmd::Rd, 0, 8)];
        // Fillers 1..=7 (time 1 + j KEEPER_GAP) fill it; the eighth
        // is due at the clock of 1 + 8 KEEPER_GAP and blocked until the
        // clock after the first pop (L * (k + 1) >= den).
        let first_pop = den.div_ceil(l) - 1;
        // A closed clock (8 words in), the gap short enough: dropped
        // for want of room only.
        let short = 1 + 7 * KEEPER_GAP + 100;
        cmds.push(cmd(short, DdrCmd::Rd, 0, 16));
        // The gap from the seventh filler's time needs two TIME words:
        // dropped, counted as an overflow too.
        let long = 1 + 9 * KEEPER_GAP + 69;
        cmds.push(cmd(long, DdrCmd::Wr, 0, 0));
        let (board, packets) = run_against_literal(&cfg, &cmds);
        let fillers = filler_clocks(&board);
        let due: Vec<u64> = (0..7)
            .map(|j| keeper_clock(1 + j * KEEPER_GAP, l))
            .collect();
        assert_eq!(fillers[..7], due[..], "L {lanes}");
        assert_eq!(fillers[7], first_pop + 1, "L {lanes}: {fillers:?}");
        let n = board.counters();
        assert_eq!(n.events_dropped, 2, "{n:?}");
        assert_eq!(n.time_overflows, 1, "{n:?}");
        check_lost_adds_up(n);
        // No clock was open after the drops: the count stays pending.
        assert_eq!(n.lost_pending, 2);
        let decoded = decode(&cfg, &packets);
        let ticks: Vec<u64> = decoded.iter().map(|e| e.tick).collect();
        assert_eq!(ticks, vec![1]);
    }
}

#[test]
fn a_gap_beyond_the_models_limit_is_a_clear_error_not_hours_of_fillers() {
    use hmtt_board_model::{BoardError, MAX_COMMAND_GAP};
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    let mut b = Board::new(cfg).unwrap();
    b.command(&cmd(0, DdrCmd::Act, 0, 5)).unwrap();
    b.command(&cmd(10, DdrCmd::Rd, 0, 0)).unwrap();
    // The longest gap is taken (8192 fillers)...
    b.command(&cmd(10 + MAX_COMMAND_GAP, DdrCmd::Rd, 0, 8))
        .unwrap();
    assert_eq!(b.counters().time_fillers, MAX_COMMAND_GAP / KEEPER_GAP);
    // ... one tick more is refused, and the board is unchanged.
    let before = b.counters().clone();
    let far = 10 + 2 * MAX_COMMAND_GAP + 1;
    let err = b.command(&cmd(far, DdrCmd::Rd, 0, 16)).unwrap_err();
    assert!(matches!(err, BoardError::GapTooLong { .. }), "{err}");
    assert!(err.to_string().contains("2^40"), "{err}");
    assert_eq!(b.counters(), &before);
    let err = b.command(&cmd(u64::MAX, DdrCmd::Rd, 0, 16)).unwrap_err();
    assert!(matches!(err, BoardError::GapTooLong { .. }), "{err}");
    assert!(matches!(
        b.advance_to(u64::MAX).unwrap_err(),
        BoardError::GapTooLong { .. }
    ));
}
