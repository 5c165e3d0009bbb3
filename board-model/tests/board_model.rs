//! The golden model against hand-computed references and against a literal
//! clock-by-clock model of board.md 2.2, for every lanes `L` and limit `E`.

mod board_common;

use board_common::*;
use hmtt_board_model::{run_commands, Board, BoardConfig, BoardError, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::ConfigWindow;
use hmtt_format::geometry::Geometry;
use hmtt_format::record::{BoardEvent, TimedEvent, KEEPER_GAP};

fn timed(e: &[Expected]) -> Vec<TimedEvent> {
    e.iter()
        .map(|e| TimedEvent {
            tick: e.tick,
            event: e.event,
        })
        .collect()
}

#[test]
fn decoded_packets_give_back_every_reference_in_order_and_time() {
    for (seed, name) in ["ddr-512m", "ddr2-2g", "ddr3-4g", "ddr3-8g", "ddr4-64g"]
        .iter()
        .enumerate()
    {
        let g = Geometry::preset(name).unwrap();
        let cfg = BoardConfig::new(g);
        let mut rng = Rng::new(seed as u64 + 1);
        let shape = StreamShape {
            commands: 20_000,
            // Sparse enough that the default FIFO never overflows.
            max_gap: 40,
            clock_limit: Some((cfg.lanes.into(), cfg.refs_per_clock)),
            ..StreamShape::default()
        };
        let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
        let (packets, counters) = run_commands(cfg.clone(), cmds.iter().copied()).unwrap();
        let expect = expected_events(&cfg, &cmds);
        assert!(expect.len() > 5_000, "{name}: stream too thin");
        assert_eq!(counters.events_dropped, 0, "{name}");
        assert_eq!(counters.references_over_limit, 0, "{name}: a legal stream");
        let got = decode(&cfg, &packets);
        assert_eq!(got.len(), expect.len(), "{name}");
        assert_eq!(got, timed(&expect), "{name}");
        assert_eq!(counters.references, expect.len() as u64);
        assert_eq!(counters.protocol_errors, 0);
        assert_eq!(counters.commands, cmds.len() as u64);
        assert_eq!(counters.words_pushed, counters.words_popped);
        assert_eq!(
            counters.packet_words,
            counters.words_popped + counters.injected_line_hi
        );
    }
}

#[test]
fn inner_commands_change_what_is_recorded() {
    let g = Geometry::ddr3_default();
    let cfg = BoardConfig::new(g);
    let mut rng = Rng::new(99);
    let shape = StreamShape {
        commands: 30_000,
        max_gap: 40,
        tag_percent: 5,
        inner_percent: 2,
        clock_limit: Some((cfg.lanes.into(), cfg.refs_per_clock)),
        ..StreamShape::default()
    };
    let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
    let (packets, counters) = run_commands(cfg.clone(), cmds.iter().copied()).unwrap();
    let expect = expected_events(&cfg, &cmds);
    assert_eq!(decode(&cfg, &packets), timed(&expect));
    assert!(packets.iter().all(|p| p.leave_tick % 8 == 0));
    assert!(counters.suppressed > 0, "mode changes suppressed something");
    assert!(counters.packets_closed_sync > 0, "SYNC closed packets");
    // Every SYNC's CMD word is the last word of its packet.
    for bp in &packets {
        let p = hmtt_format::packet::Packet::new_checked(&bp.bytes[..]).unwrap();
        let words: Vec<_> = p.events().map(|e| e.unwrap()).collect();
        for (i, e) in words.iter().enumerate() {
            if e.event == (BoardEvent::Cmd { code: 5 }) {
                assert_eq!(i, words.len() - 1, "SYNC closes right after its word");
            }
        }
    }
}

/// A random configuration for `g` with lanes `L` and limit `E`: FIFO,
/// packet size, idle flush, drain (at most one word per clock), ports,
/// board id and start mode.
fn random_config(g: Geometry, lanes: u32, refs: u32, rng: &mut Rng) -> BoardConfig {
    let mut cfg = BoardConfig::new(g).with_lanes(lanes, refs);
    cfg.ports = 1 + rng.below(4) as u8;
    cfg.max_words = [2, 3, 7, 360][rng.below(4) as usize];
    cfg.fifo_depth = [8, 9, 16, 64, 16384][rng.below(5) as usize].max(cfg.min_fifo_depth());
    cfg.idle_flush_ticks = [1, 5, 37, 1000, 65536][rng.below(5) as usize];
    cfg.drain = match rng.below(4) {
        0 => DrainRate::line_rate(cfg.ports, cfg.max_words, cfg.tick_ps),
        1 => per_clock_drain(lanes, 1, 2),
        2 => per_clock_drain(lanes, 3, 37),
        _ => per_clock_drain(lanes, 1 + rng.below(999), 1000),
    };
    if !cfg.drain.fits_lanes(lanes) {
        cfg.drain = per_clock_drain(lanes, 87, 100);
    }
    cfg.board_id = rng.below(256) as u8;
    cfg.start_tracing = rng.chance(80);
    cfg.start_tags_only = rng.chance(20);
    cfg
}

#[test]
fn golden_model_equals_the_literal_clock_by_clock_model_for_every_lanes_and_limit() {
    let geometries = [
        Geometry::ddr3_default(),
        Geometry::preset("ddr4-64g").unwrap(),
        Geometry::new(2, 4, 15, 7).unwrap(),
        Geometry::new(0, 1, 10, 3).unwrap(),
    ];
    let mut seen = hmtt_board_model::BoardCounters::default();
    let mut case = 0u64;
    for lanes in [1u32, 2, 4, 8] {
        for refs in 1..=lanes {
            for _ in 0..4 {
                case += 1;
                let mut rng = Rng::new(1000 + case);
                let g = geometries[(case % 4) as usize];
                let cfg = random_config(g, lanes, refs, &mut rng);
                let shape = StreamShape {
                    commands: 3000,
                    // From several references per clock (the limit) to
                    // sparse.
                    max_gap: [1, 2, 4, 12, 100][rng.below(5) as usize],
                    long_gap: [5000, 3 * KEEPER_GAP][rng.below(2) as usize],
                    long_gap_percent: 2,
                    tag_percent: 5,
                    inner_percent: 3,
                    noise_percent: 15,
                    illegal_percent: 3,
                    clock_limit: None,
                };
                let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
                let (board, packets) = run_against_literal(&cfg, &cmds);
                assert_eq!(board.fifo_level(), 0, "case {case}");
                assert!(
                    packets.iter().all(|p| p.leave_tick % u64::from(lanes) == 0),
                    "case {case}: packets leave at clock ticks"
                );
                let n = board.counters();
                seen.events_dropped += n.events_dropped;
                seen.references_over_limit += n.references_over_limit;
                seen.lost_words += n.lost_words;
                seen.time_fillers += n.time_fillers;
                seen.packets_closed_idle += n.packets_closed_idle;
                seen.packets_closed_sync += n.packets_closed_sync;
                seen.packets_closed_full += n.packets_closed_full;
                seen.injected_line_hi += n.injected_line_hi;
                seen.protocol_errors += n.protocol_errors;
                seen.cmd_events += n.cmd_events;
            }
        }
    }
    // The cases exercise every path.
    assert!(seen.events_dropped > 0 && seen.lost_words > 0, "{seen:?}");
    assert!(seen.references_over_limit > 0, "{seen:?}");
    assert!(seen.time_fillers > 0 && seen.cmd_events > 0, "{seen:?}");
    assert!(
        seen.packets_closed_idle > 0 && seen.packets_closed_sync > 0,
        "{seen:?}"
    );
    assert!(
        seen.packets_closed_full > 0 && seen.injected_line_hi > 0,
        "{seen:?}"
    );
    assert!(seen.protocol_errors > 0, "{seen:?}");
}

#[test]
fn long_streams_across_many_packetizer_batches_equal_the_literal_model() {
    // The packetizer takes popped words in batches of about a thousand;
    // mode changes make it catch up in between. Long streams cross many
    // batch boundaries, with and without overflow.
    let g = Geometry::ddr3_default();
    for case in 0..8u64 {
        let mut rng = Rng::new(7000 + case);
        let (lanes, refs) = [(1, 1), (2, 2), (4, 3), (8, 3)][(case % 4) as usize];
        let mut cfg = BoardConfig::new(g).with_lanes(lanes, refs);
        cfg.fifo_depth = [64, 2000, 16384][(case % 3) as usize];
        cfg.max_words = [360, 7][(case % 2) as usize];
        cfg.idle_flush_ticks = [3, 300, 65536][(case % 3) as usize];
        cfg.drain = if case >= 4 {
            per_clock_drain(lanes, 1, 7)
        } else {
            per_clock_drain(lanes, 7, 8)
        };
        let shape = StreamShape {
            commands: 25_000,
            max_gap: [2, 6, 30][(case % 3) as usize],
            long_gap: 3000,
            long_gap_percent: 1,
            tag_percent: 2,
            inner_percent: 1,
            noise_percent: 10,
            illegal_percent: 1,
            clock_limit: None,
        };
        let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
        let (board, _) = run_against_literal(&cfg, &cmds);
        // At least two batches of words.
        let popped = board.counters().words_popped;
        assert!(popped > 2000, "case {case}: {popped}");
    }
}

#[test]
fn slices_of_commands_without_the_probe_equal_the_literal_model_and_one_by_one() {
    // `Board::commands` runs long stretches on its fast path with the
    // state in locals; the probe-less variant is the one `hmtt sim` and
    // `hmtt board` use. Same packets and counters as the literal model and
    // as one call per command with the probe on.
    let geometries = [
        Geometry::ddr3_default(),
        Geometry::preset("ddr4-64g").unwrap(),
        Geometry::new(0, 1, 10, 3).unwrap(),
    ];
    for case in 0..24u64 {
        let mut rng = Rng::new(9100 + case);
        let g = geometries[(case % 3) as usize];
        let (lanes, refs) = random_lanes(&mut rng);
        let mut cfg = BoardConfig::new(g).with_lanes(lanes, refs);
        cfg.max_words = [3, 50, 360][rng.below(3) as usize];
        cfg.fifo_depth = [8, 64, 2000, 16384][rng.below(4) as usize].max(cfg.min_fifo_depth());
        cfg.idle_flush_ticks = [7, 1000, 65536][rng.below(3) as usize];
        cfg.drain = match rng.below(3) {
            0 => DrainRate::line_rate(1, cfg.max_words, cfg.tick_ps),
            1 => per_clock_drain(lanes, 1, 3),
            _ => per_clock_drain(lanes, 1 + rng.below(99), 100),
        };
        cfg.start_tags_only = rng.chance(10);
        let shape = StreamShape {
            commands: 20_000,
            max_gap: [1, 3, 10, 40][rng.below(4) as usize],
            long_gap: [100_000, 2 * KEEPER_GAP][rng.below(2) as usize],
            long_gap_percent: 1,
            tag_percent: 1,
            inner_percent: [0, 1][rng.below(2) as usize],
            noise_percent: 20,
            illegal_percent: [0, 1][rng.below(2) as usize],
            clock_limit: None,
        };
        let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
        let mut lit = LiteralBoard::new(cfg.clone());
        lit.run(&cmds);

        let mut sliced = Board::new(cfg.clone()).unwrap();
        let mut i = 0;
        while i < cmds.len() {
            let n = (1 + rng.below(5000) as usize).min(cmds.len() - i);
            sliced.commands(&cmds[i..i + n]).unwrap();
            i += n;
        }
        sliced.finish();
        let mut packets = Vec::new();
        sliced.drain_packets(&mut packets);
        assert_same(&format!("case {case}: packets"), &packets, &lit.packets);
        check_counters_against_literal(sliced.counters(), &lit, &format!("case {case}"));

        let mut one_by_one = Board::new(cfg.clone()).unwrap();
        one_by_one.enable_probe();
        for c in &cmds {
            one_by_one.command(c).unwrap();
        }
        one_by_one.finish();
        assert_eq!(one_by_one.counters(), sliced.counters(), "case {case}");
    }
}

#[test]
fn overflow_and_the_limit_are_reported_by_lost_words_that_add_up_exactly() {
    // A dense stream (about three references per clock of 8 ticks) into a
    // 24-word FIFO: both a full FIFO and the limit of 3 references a clock
    // drop references, and the LOST words account for every one.
    let g = Geometry::ddr3_default();
    let mut cfg = BoardConfig::new(g);
    cfg.fifo_depth = 24;
    cfg.drain = DrainRate { num: 1, den: 40 };
    cfg.max_words = 50;
    let mut rng = Rng::new(7);
    let shape = StreamShape {
        commands: 20_000,
        max_gap: 6,
        long_gap_percent: 1,
        long_gap: 3000,
        tag_percent: 3,
        ..StreamShape::default()
    };
    let mut cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
    // A quiet tail, then one INSERT_TAG: it finds room and carries the last
    // pending LOST count.
    let end = cmds.last().unwrap().cycle + 100_000;
    let first = cfg.window.first_line(&g);
    let c = g.coord(first + 4);
    cmds.push(Command {
        cycle: end,
        cmd: DdrCmd::Act,
        rank: c.rank,
        bank: c.bank,
        arg: c.row,
    });
    cmds.push(Command {
        cycle: end,
        cmd: DdrCmd::Rd,
        rank: c.rank,
        bank: c.bank,
        arg: c.col_line << 3,
    });
    let (packets, counters) = run_commands(cfg.clone(), cmds.iter().copied()).unwrap();
    let expect = expected_events(&cfg, &cmds);
    let got = decode(&cfg, &packets);
    assert!(counters.events_dropped > 1000, "the FIFO overflowed a lot");
    assert!(counters.references_over_limit > 100, "{counters:?}");
    assert!(counters.clocks_over_limit > 100, "{counters:?}");
    assert_eq!(counters.lost_pending, 0);
    // Walk both: a LOST of n stands for the next n expected references.
    let mut i = 0;
    let mut lost_sum = 0u64;
    for e in &got {
        match e.event {
            BoardEvent::Lost { count } => {
                i += count as usize;
                lost_sum += u64::from(count);
            }
            ev => {
                assert_eq!(
                    (expect[i].tick, expect[i].event),
                    (e.tick, ev),
                    "recorded event {i}"
                );
                i += 1;
            }
        }
    }
    assert_eq!(i, expect.len(), "every reference recorded or counted lost");
    let recorded = got
        .iter()
        .filter(|e| !matches!(e.event, BoardEvent::Lost { .. }))
        .count() as u64;
    assert_eq!(lost_sum, expect.len() as u64 - recorded);
    assert_eq!(
        lost_sum,
        counters.events_dropped + counters.references_over_limit
    );
    assert_eq!(lost_sum, counters.lost_reported);
    // A clock closes only when `level_k - pushed_{k-1}` is above depth -
    // 2(2 + 3E) words (board.md 2.2), so the mark lies above that and at
    // most at the depth.
    let most = 2 + 3 * u64::from(cfg.refs_per_clock);
    let depth = cfg.fifo_depth as u64;
    assert!(
        counters.fifo_high_water > depth - 2 * most && counters.fifo_high_water <= depth,
        "{counters:?}"
    );
}

#[test]
fn ddr4_sixteen_banks_several_ranks_and_wide_lines_decode_to_the_right_coordinates() {
    // ddr4-64g: 4 ranks, 16 banks, 17-bit rows, 30-bit lines; and a 28-bit
    // geometry. Both need LINE_HI.
    for g in [
        Geometry::preset("ddr4-64g").unwrap(),
        Geometry::new(2, 4, 15, 7).unwrap(),
    ] {
        let cfg = BoardConfig::new(g);
        let mut rng = Rng::new(g.line_bits().into());
        let shape = StreamShape {
            commands: 40_000,
            max_gap: 30,
            noise_percent: 35,
            clock_limit: Some((cfg.lanes.into(), cfg.refs_per_clock)),
            ..StreamShape::default()
        };
        let cmds = gen_stream(&g, &cfg.window, &shape, &mut rng);
        for k in [
            DdrCmd::Pre,
            DdrCmd::Prea,
            DdrCmd::Ref,
            DdrCmd::Mrs,
            DdrCmd::Zq,
            DdrCmd::Nop,
        ] {
            assert!(cmds.iter().any(|c| c.cmd == k), "{k:?} interleaved");
        }
        let (packets, counters) = run_commands(cfg.clone(), cmds.iter().copied()).unwrap();
        assert!(counters.injected_line_hi > 0 || packets.len() == 1);
        let got = decode(&cfg, &packets);
        // Every RD/WR outside the window, in order, with its coordinates.
        let mut open = std::collections::HashMap::new();
        let mut want = Vec::new();
        for c in &cmds {
            match c.cmd {
                DdrCmd::Act => {
                    open.insert((c.rank, c.bank), c.arg);
                }
                k if k.is_column() => {
                    let row = open[&(c.rank, c.bank)];
                    if !cfg.window.contains(c.rank, row) {
                        want.push((c.cycle, c.rank, c.bank, row, c.arg >> 3, k.is_write()));
                    }
                }
                _ => {}
            }
        }
        let have: Vec<_> = got
            .iter()
            .filter_map(|e| match e.event {
                BoardEvent::Access { line, write } => {
                    let d = g.coord(line);
                    assert!(line < g.lines());
                    Some((e.tick, d.rank, d.bank, d.row, d.col_line, write))
                }
                _ => None,
            })
            .collect();
        assert_eq!(have.len(), want.len());
        assert_eq!(have, want);
        assert!(have.iter().any(|h| h.1 == g.ranks() - 1));
        assert!(have.iter().any(|h| h.2 == 15));
        assert!(have
            .iter()
            .any(|h| (h.3 as u64) << (g.bank_bits() + 7) >= 1 << 24));
    }
}

#[test]
fn protocol_errors_and_unknown_commands_are_counted_never_fatal() {
    let g = Geometry::ddr3_default();
    let cfg = BoardConfig::new(g);
    let c = |cycle, cmd, rank, bank, arg| Command {
        cycle,
        cmd,
        rank,
        bank,
        arg,
    };
    let cmds = [
        c(0, DdrCmd::Rd, 0, 3, 8), // no open row
        c(1, DdrCmd::Unknown, 0, 0, 0),
        c(2, DdrCmd::Act, 0, 3, 77),
        c(3, DdrCmd::Rd, 0, 3, 8),
        c(4, DdrCmd::Act, 5, 0, 1),   // rank out of range
        c(5, DdrCmd::Wr, 0, 3, 5000), // column out of range
        c(6, DdrCmd::Pre, 0, 3, 0),
        c(7, DdrCmd::Wr, 0, 3, 16), // after PRE: still the open row
        c(8, DdrCmd::Wr, 1, 1, 16), // no open row
        c(9, DdrCmd::Unknown, 9, 9, 9),
    ];
    let (packets, n) = run_commands(cfg.clone(), cmds).unwrap();
    assert_eq!(n.protocol_errors, 2);
    assert_eq!(n.unknown_commands, 2);
    assert_eq!(n.out_of_range, 2);
    assert_eq!(n.references_after_precharge, 1);
    assert_eq!(n.references, 2);
    assert_eq!(n.commands, 10);
    assert_eq!(n.kind(DdrCmd::Unknown), 2);
    assert_eq!(n.kind(DdrCmd::Wr), 3);
    let got = decode(&cfg, &packets);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].tick, 3);
    assert_eq!(got[1].tick, 7);
    assert_eq!(
        got[1].event,
        BoardEvent::Access {
            line: (77 << 10) | (3 << 7) | 2,
            write: true
        }
    );
}

#[test]
fn time_goes_on_across_huge_gaps() {
    let g = Geometry::ddr3_default();
    let cfg = BoardConfig::new(g);
    let c = |cycle, cmd, arg| Command {
        cycle,
        cmd,
        rank: 0,
        bank: 0,
        arg,
    };
    let big = 6 * ((1u64 << 21) - 1) * 64;
    let ticks = [
        5,
        5 + big,
        10 + 2 * big + 3,
        1 << 40,
        (1 << 40) + 63,
        (1 << 40) + 64,
    ];
    let mut cmds = vec![c(0, DdrCmd::Act, 1)];
    for t in ticks {
        cmds.push(c(t, DdrCmd::Rd, 8));
    }
    let (packets, n) = run_commands(cfg.clone(), cmds).unwrap();
    assert!(n.time_fillers > 0);
    let got: Vec<u64> = decode(&cfg, &packets).iter().map(|e| e.tick).collect();
    assert_eq!(got, ticks);
}

#[test]
fn refused_commands_change_nothing() {
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    let mut b = Board::new(cfg).unwrap();
    let c = |cycle| Command {
        cycle,
        cmd: DdrCmd::Nop,
        rank: 0,
        bank: 0,
        arg: 0,
    };
    b.command(&c(10)).unwrap();
    assert!(matches!(
        b.command(&c(9)),
        Err(BoardError::CycleDecreased {
            cycle: 9,
            current: 10
        })
    ));
    b.command(&c(10)).unwrap();
    assert_eq!(b.counters().commands, 2);
    b.finish();
    assert!(matches!(b.command(&c(11)), Err(BoardError::Finished)));
}

#[test]
fn invalid_configurations_are_refused() {
    let g = Geometry::ddr3_default();
    let ok = BoardConfig::new(g);
    assert!(ok.validate().is_ok());
    let mut bad = vec![];
    let mut c = ok.clone();
    c.ports = 0;
    bad.push(c);
    // The FIFO holds twice the most one clock pushes: 2(2 + 3E) words.
    let mut c = ok.clone();
    c.fifo_depth = 21;
    bad.push(c);
    let mut c = ok.clone().with_lanes(2, 2);
    c.fifo_depth = 15;
    bad.push(c);
    for (lanes, refs) in [(3, 1), (16, 3), (0, 0), (8, 0), (4, 5), (1, 2)] {
        bad.push(ok.clone().with_lanes(lanes, refs));
    }
    let mut c = ok.clone();
    c.max_words = 1;
    bad.push(c);
    let mut c = ok.clone();
    c.max_words = 2236;
    bad.push(c);
    let mut c = ok.clone();
    c.idle_flush_ticks = 0;
    bad.push(c);
    let mut c = ok.clone();
    c.drain = DrainRate { num: 5, den: 5 };
    bad.push(c);
    // One word per clock of 8 ticks is too fast: L * num < den.
    let mut c = ok.clone();
    c.drain = DrainRate { num: 1, den: 8 };
    bad.push(c);
    let mut c = ok.clone().with_lanes(1, 1);
    c.drain = DrainRate { num: 1, den: 1 };
    bad.push(c);
    let mut c = ok.clone();
    c.drain = DrainRate { num: 0, den: 5 };
    bad.push(c);
    let mut c = ok.clone();
    c.window = ConfigWindow {
        rank: 2,
        row_first: 0,
        row_count: 1,
    };
    bad.push(c);
    for c in bad {
        assert!(Board::new(c.clone()).is_err(), "{c:?}");
    }
    // Just inside the bounds.
    let mut good = vec![];
    let mut c = ok.clone();
    c.fifo_depth = 22;
    c.drain = DrainRate { num: 1, den: 9 };
    good.push(c);
    let mut c = ok.clone().with_lanes(1, 1);
    c.fifo_depth = 10;
    c.drain = DrainRate { num: 1, den: 2 };
    good.push(c);
    let mut c = ok.clone().with_lanes(8, 8);
    c.fifo_depth = 52;
    good.push(c);
    for c in good {
        assert!(Board::new(c.clone()).is_ok(), "{c:?}");
    }
}

#[test]
fn default_drain_is_the_line_rate_of_three_gigabit_ports() {
    let cfg = BoardConfig::new(Geometry::ddr3_default());
    let per_tick = cfg.drain.words_per_tick();
    assert!((per_tick - 0.1097).abs() < 1e-4, "{per_tick}");
    let words_per_s = per_tick * 1e12 / f64::from(cfg.tick_ps);
    assert!((words_per_s / 1e6 - 87.8).abs() < 0.1, "{words_per_s}");
    let one = cfg.clone().with_ports(1);
    assert_eq!(one.drain.num * 3, cfg.drain.num);
    // 0.878 words per clock of 8 ticks.
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (8, 3));
    let per_clock = per_tick * f64::from(cfg.lanes);
    assert!((per_clock - 0.878).abs() < 1e-3, "{per_clock}");
}

#[test]
fn the_default_lanes_fit_the_drain() {
    // DDR3-1600, 3 ports: 0.878 words per clock at L = 8.
    let mut cfg = BoardConfig::new(Geometry::ddr3_default());
    cfg.fit_lanes();
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (8, 3));
    // DDR2-400 (5000 ps), 3 ports: 0.439 words per tick, so 2 lanes (0.878
    // per clock); 4 would be 1.76.
    cfg.tick_ps = 5000;
    cfg.set_line_rate();
    cfg.fit_lanes();
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (2, 2));
    assert!(cfg.validate().is_ok());
    // DDR-200 (10 ns), 3 ports: 0.878 words per tick, one lane.
    cfg.tick_ps = 10_000;
    cfg.set_line_rate();
    cfg.fit_lanes();
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (1, 1));
    assert!(cfg.validate().is_ok());
    // The iCE40 board's DDR-200 with one port: 0.293 words per tick, two
    // lanes as the board samples.
    let mut ice = cfg.clone().with_ports(1);
    ice.fit_lanes();
    assert_eq!((ice.lanes, ice.refs_per_clock), (2, 2));
}
