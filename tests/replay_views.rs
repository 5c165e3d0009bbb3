//! The replay's views on the simulated machine, against its ground truth:
//! the window between two named events (the workloads' I-code events of
//! the events file) gives exactly the references the ground truth has
//! between those tags, alone and with a pid; the miss classes agree with
//! the kinds of the ground truth.

use std::collections::HashSet;

use hmtt_format::trace::TraceRecord;
use hmtt_format::truth::{RefKind, TruthRecord};
use hmtt_merge::replay::{Miss, ReplayFilter, Replayer, Unplaced, VirtualRef};
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::workload::Workload;

mod support;
use support::replay::merged;

/// The run's packets as capture files, merged.
fn merged_all(out: &SimOutput, cfg: &SimConfig) -> Vec<TraceRecord> {
    merged(out, cfg, &HashSet::new())
}

fn event(out: &SimOutput, name: &str) -> u32 {
    out.events
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no event {name} in {:?}", out.events))
        .1
}

/// Ground-truth references between each `begin` tag and the next `end`
/// tag of the same board, in the truth's order (tick, then board).
fn truth_between(out: &SimOutput, begin: u32, end: u32) -> Vec<&TruthRecord> {
    let mut open = vec![false; out.board_configs.len()];
    let mut refs = Vec::new();
    for r in &out.truth {
        let b = usize::from(r.board);
        if r.kind == RefKind::Icode {
            if r.event == Some(begin) {
                open[b] = true;
            } else if r.event == Some(end) {
                open[b] = false;
            }
        } else if open[b] {
            refs.push(r);
        }
    }
    refs
}

fn replay(out: &SimOutput, trace: &[TraceRecord], filter: ReplayFilter) -> Vec<VirtualRef> {
    let mut r = Replayer::new(&out.klog, filter);
    let mut refs = Vec::new();
    r.run(trace, &mut |v| refs.push(*v));
    refs
}

fn same(got: &[VirtualRef], want: &[&TruthRecord], out: &SimOutput) {
    assert_eq!(got.len(), want.len());
    for (v, t) in got.iter().zip(want) {
        let board = out.board_configs[usize::from(t.board)].board_id;
        assert_eq!(
            (v.tick, v.board, v.pa, v.write),
            (t.tick, board, t.pa, t.write),
            "{v:?} vs {t:?}"
        );
        assert_eq!(v.owner, t.owner, "{v:?} vs {t:?}");
        assert_eq!(v.dma, t.kind == RefKind::Dma, "{v:?} vs {t:?}");
    }
}

#[test]
fn the_window_between_two_named_events_is_exactly_the_truth_between_their_tags() {
    let small = Some(CacheConfig {
        size_bytes: 16 << 10,
        ways: 4,
    });
    for (cache, boards) in [(small, 1u8), (None, 2)] {
        let cfg = SimConfig::default()
            .workload(Workload::mix(16 << 10))
            .cache(cache)
            .boards(boards)
            .ports(2);
        let out = simulate(&cfg).unwrap();
        let trace = merged_all(&out, &cfg);
        let total = out
            .truth
            .iter()
            .filter(|r| r.kind != RefKind::Icode)
            .count();
        let mut windows = 0;
        for phase in ["quicksort", "random_read", "seq_write"] {
            let Some(begin) = out
                .events
                .iter()
                .find(|(n, _)| *n == format!("{phase}_begin"))
            else {
                continue;
            };
            let (begin, end) = (begin.1, event(&out, &format!("{phase}_end")));
            let want = truth_between(&out, begin, end);
            assert!(
                !want.is_empty() && want.len() < total,
                "{phase}: {} of {total} references in the window",
                want.len()
            );
            let got = replay(
                &out,
                &trace,
                ReplayFilter {
                    window: Some((begin, end)),
                    ..Default::default()
                },
            );
            same(&got, &want, &out);
            // The window and a process: other processes run inside it too.
            let pid = want.iter().find_map(|t| t.pid()).unwrap();
            let want_pid: Vec<_> = want
                .iter()
                .filter(|t| t.pid() == Some(pid))
                .copied()
                .collect();
            assert!(want_pid.len() < want.len(), "{phase}: one process only");
            let got = replay(
                &out,
                &trace,
                ReplayFilter {
                    window: Some((begin, end)),
                    pid: Some(pid),
                    ..Default::default()
                },
            );
            same(&got, &want_pid, &out);
            windows += 1;
        }
        assert!(windows >= 2, "events: {:?}", out.events);
    }
}

#[test]
fn miss_classes_agree_with_the_ground_truth_kinds() {
    let cfg = SimConfig::default()
        .workload(Workload::mix(16 << 10))
        .cache(Some(CacheConfig {
            size_bytes: 16 << 10,
            ways: 4,
        }))
        .boards(2)
        .ports(2);
    let out = simulate(&cfg).unwrap();
    let trace = merged_all(&out, &cfg);
    let got = replay(&out, &trace, ReplayFilter::default());
    let truth: Vec<_> = out
        .truth
        .iter()
        .filter(|r| r.kind != RefKind::Icode)
        .collect();
    assert_eq!(got.len(), truth.len());
    let mut seen = HashSet::new();
    for (v, t) in got.iter().zip(&truth) {
        assert_eq!(v.miss.is_none(), v.owner.is_some());
        if let Some(m) = v.miss {
            seen.insert(m);
            match m {
                // A device's transfer into a buffer nobody maps.
                Miss::Dma => assert_eq!(t.kind, RefKind::Dma, "{v:?} vs {t:?}"),
                // Page-table stores (or write-backs of those lines).
                Miss::Kernel => assert!(
                    matches!(t.kind, RefKind::Kernel | RefKind::Writeback),
                    "{v:?} vs {t:?}"
                ),
                Miss::Unmapped => assert!(
                    matches!(t.kind, RefKind::Kernel | RefKind::Writeback | RefKind::Dma),
                    "{v:?} vs {t:?}"
                ),
            }
        }
        if t.kind == RefKind::Dma && t.owner.is_none() {
            assert_eq!(v.miss, Some(Miss::Dma), "{v:?} vs {t:?}");
        }
        if t.kind == RefKind::Cpu {
            assert_eq!(v.miss, None, "{v:?} vs {t:?}");
        }
    }
    assert!(
        seen.contains(&Miss::Kernel),
        "page-table stores seen: {seen:?}"
    );
    assert!(seen.contains(&Miss::Dma), "DMA misses seen: {seen:?}");
}

#[test]
fn with_packets_dropped_the_report_names_the_lost_windows() {
    let cfg = SimConfig::default()
        .workload(Workload::mix(16 << 10))
        .cache(None)
        .boards(2)
        .ports(2);
    let out = simulate(&cfg).unwrap();
    // Every fifth packet of each board.
    let drop: HashSet<(u8, u64)> = out
        .packets
        .iter()
        .enumerate()
        .flat_map(|(bi, packets)| {
            let board = out.board_configs[bi].board_id;
            packets
                .iter()
                .filter(|p| p.seq % 5 == 2)
                .map(move |p| (board, p.seq))
        })
        .collect();
    let trace = merged(&out, &cfg, &drop);
    let mut r = Replayer::new(&out.klog, ReplayFilter::default());
    let mut refs = Vec::new();
    r.run(&trace[..], &mut |v| refs.push(*v));
    let rep = r.report;
    // One window per run of consecutive lost packets, on each board (a
    // run at the very end of a stream is followed by no packet to show it).
    let (mut runs, mut inner_runs) = (0, 0);
    for (bi, packets) in out.packets.iter().enumerate() {
        let board = out.board_configs[bi].board_id;
        let last = packets.iter().map(|p| p.seq).max().unwrap();
        let lost: Vec<u64> = packets
            .iter()
            .map(|p| p.seq)
            .filter(|s| drop.contains(&(board, *s)))
            .collect();
        for s in lost.iter().filter(|s| !lost.contains(&(**s + 1))) {
            runs += 1;
            inner_runs += usize::from(*s < last);
        }
    }
    assert!(inner_runs > 2);
    assert!(
        (inner_runs..=runs).contains(&(rep.lost_window_count as usize)),
        "{inner_runs}..={runs}: {:?}",
        rep.lost_windows
    );
    for w in &rep.lost_windows {
        assert!(w.from_tick <= w.to_tick && w.packets >= 1, "{w:?}");
        // No reference of the trace lies inside a window.
        assert!(!refs
            .iter()
            .any(|v| v.board == w.board && v.tick > w.from_tick && v.tick < w.to_tick));
    }
    // Records whose tags were lost are applied at a window's end.
    let ends: HashSet<(u8, u64)> = rep
        .lost_windows
        .iter()
        .map(|w| (w.board, w.to_tick))
        .collect();
    let mut lost_tags = 0;
    for u in &rep.unplaced {
        if let Unplaced::LostTag { board, tick, .. } = u {
            assert!(
                ends.contains(&(*board, *tick)),
                "{u:?} not at a window's end"
            );
            lost_tags += 1;
        }
    }
    assert!(lost_tags > 0);
    // Outside the windows, every reference is exact.
    let truth: std::collections::HashMap<(u8, u64), &TruthRecord> = out
        .truth
        .iter()
        .filter(|r| r.kind != RefKind::Icode)
        .map(|r| {
            (
                (out.board_configs[usize::from(r.board)].board_id, r.tick),
                r,
            )
        })
        .collect();
    for v in &refs {
        let t = truth[&(v.board, v.tick)];
        assert_eq!(
            (v.owner, v.dma),
            (t.owner, t.kind == RefKind::Dma),
            "{v:?} vs {t:?}"
        );
    }
    assert!(refs.len() > 1000 && refs.len() < truth.len());
}
