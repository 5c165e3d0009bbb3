//! Shared checks of the machine tests: decode the board's packets and
//! compare with the ground truth, check the command streams.
#![allow(dead_code)]

use hmtt_format::record::{BoardEvent, TimedEvent};
use hmtt_format::Packet;
use hmtt_sim::dram;
use hmtt_sim::machine::{SimConfig, SimOutput};
use hmtt_sim::truth::{RefKind, TruthRecord};

/// Every event of board `b`'s packets, packets taken in `seq` order.
pub fn decode_board(out: &SimOutput, b: usize) -> Vec<TimedEvent> {
    let mut packets: Vec<_> = out.packets[b].iter().collect();
    packets.sort_by_key(|p| p.seq);
    let mut events = Vec::new();
    for (i, p) in packets.iter().enumerate() {
        let view = Packet::new_checked(&p.bytes[..]).expect("valid packet");
        assert_eq!(view.seq(), i as u64, "packet seq numbers are consecutive");
        assert_eq!(view.board(), out.board_configs[b].board_id);
        for e in view.events() {
            events.push(e.expect("no corrupt word"));
        }
    }
    events
}

/// What the board should record for a ground-truth row.
pub fn expected_event(out: &SimOutput, r: &TruthRecord) -> TimedEvent {
    let cfg = &out.board_configs[r.board as usize];
    let event = if r.kind == RefKind::Icode {
        let index = cfg
            .window
            .event_index(&cfg.geometry, r.line)
            .expect("an I-code is inside the config window");
        assert_eq!(Some(index), r.event);
        if index < 64 {
            BoardEvent::Cmd { code: index }
        } else {
            BoardEvent::Tag {
                event: index,
                write: r.write,
            }
        }
    } else {
        assert_eq!(
            cfg.window.event_index(&cfg.geometry, r.line),
            None,
            "a plain reference is outside the config window"
        );
        BoardEvent::Access {
            line: r.line,
            write: r.write,
        }
    };
    TimedEvent {
        tick: r.tick,
        event,
    }
}

/// The decoded packets equal the ground truth, board by board: the same
/// lines, read/write, ticks and order; and nothing was lost.
pub fn assert_packets_match_truth(out: &SimOutput) {
    for b in 0..out.packets.len() {
        let decoded = decode_board(out, b);
        let expected: Vec<TimedEvent> = out
            .truth
            .iter()
            .filter(|r| r.board as usize == b)
            .map(|r| expected_event(out, r))
            .collect();
        assert!(!expected.is_empty(), "board {b} saw references");
        assert_eq!(
            out.board_counters[b].events_dropped, 0,
            "board {b} dropped events"
        );
        // The controller's streams are legal: never more than E RD/WR in
        // a fabric clock (board.md "Why E = 3 at L = 8").
        assert_eq!(
            out.board_counters[b].references_over_limit, 0,
            "board {b}: references over the limit"
        );
        if decoded != expected {
            let first = decoded
                .iter()
                .zip(&expected)
                .position(|(d, e)| d != e)
                .unwrap_or(decoded.len().min(expected.len()));
            panic!(
                "board {b}: decoded {} events, truth {}; first difference at {first}: decoded {:?}, truth {:?}",
                decoded.len(),
                expected.len(),
                decoded.get(first),
                expected.get(first)
            );
        }
    }
}

/// Every channel's command stream obeys the timing rules.
pub fn assert_commands_legal(cfg: &SimConfig, out: &SimOutput) {
    for (b, cmds) in out.commands.iter().enumerate() {
        let v = dram::check(cmds, &cfg.geometry, &cfg.controller.timing);
        assert!(
            v.is_empty(),
            "board {b}: {} violations, first: {}",
            v.len(),
            v[0]
        );
    }
}

/// Truth rows are in command order: per board strictly increasing ticks,
/// and every RD/WR command has exactly one row at its tick.
pub fn assert_truth_is_the_column_commands(out: &SimOutput) {
    for (b, cmds) in out.commands.iter().enumerate() {
        let col: Vec<(u64, bool)> = cmds
            .iter()
            .filter(|c| c.cmd.is_column())
            .map(|c| (c.cycle, c.cmd.is_write()))
            .collect();
        let rows: Vec<(u64, bool)> = out
            .truth
            .iter()
            .filter(|r| r.board as usize == b)
            .map(|r| (r.tick, r.write))
            .collect();
        assert_eq!(col, rows, "board {b}");
    }
}

/// Replays the kernel log at its tags, board by board, and checks every
/// row's owner against the replayed page tables and every DMA row against
/// the open DMA windows. Returns (rows with an owner, DMA rows).
pub fn assert_replay_matches_truth(out: &SimOutput) -> (usize, usize) {
    use hmtt_format::config::log_tag_event;
    use hmtt_format::klog::Event;
    use std::collections::HashMap;
    let (mut translated, mut dma_refs) = (0, 0);
    for b in 0..out.commands.len() as u8 {
        let mut next_seq = 0u64;
        let mut owner: HashMap<u64, (u32, u64)> = HashMap::new();
        let mut dma: Vec<(u64, u64)> = Vec::new();
        for r in out.truth.iter().filter(|r| r.board == b) {
            if r.kind == RefKind::Icode {
                let ev = r.event.unwrap();
                if ev < 0x10000 {
                    continue;
                }
                assert_eq!(ev, log_tag_event(next_seq), "tags come in log order");
                match out.klog[next_seq as usize].event {
                    Event::Map { vpn, pfn, .. } => {
                        assert!(owner
                            .insert(pfn, (out.klog[next_seq as usize].pid, vpn))
                            .is_none());
                    }
                    Event::Unmap { pfn, .. } => {
                        assert!(owner.remove(&pfn).is_some());
                    }
                    Event::DmaMap { addr, size, .. } => dma.push((addr, addr + size)),
                    Event::DmaUnmap { addr, size, .. } => {
                        let i = dma.iter().position(|&d| d == (addr, addr + size)).unwrap();
                        dma.swap_remove(i);
                    }
                    _ => {}
                }
                next_seq += 1;
                continue;
            }
            let expect = owner
                .get(&(r.pa >> 12))
                .map(|&(pid, vpn)| (pid, (vpn << 12) | (r.pa & 0xfff)));
            assert_eq!(r.owner, expect, "board {b} row {r:?}");
            if expect.is_some() {
                translated += 1;
            }
            let in_dma = dma.iter().any(|&(lo, hi)| (lo..hi).contains(&r.pa));
            assert_eq!(in_dma, r.kind == RefKind::Dma, "board {b} row {r:?}");
            dma_refs += usize::from(in_dma);
        }
        assert_eq!(
            next_seq as usize,
            out.klog.len(),
            "board {b} carries every tag"
        );
    }
    (translated, dma_refs)
}
