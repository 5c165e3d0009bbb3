//! Virtual replay against the simulated machine's ground truth: several
//! processes that remap frames, DMA transfers with their logs and tags,
//! cache on and off, 1 and 2 boards; and with packets dropped.

use std::collections::HashSet;

use hmtt_format::trace::TraceRecord;
use hmtt_format::truth::RefKind;
use hmtt_merge::replay::{ReplayFilter, Replayer, VirtualRef};
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::workload::Workload;

mod support;
use support::replay::merged;

fn replay(
    out: &SimOutput,
    trace: &[TraceRecord],
) -> (Vec<VirtualRef>, hmtt_merge::replay::ReplayReport) {
    let mut r = Replayer::new(&out.klog, ReplayFilter::default());
    let mut refs = Vec::new();
    r.run(trace, &mut |v| refs.push(*v));
    (refs, r.report)
}

fn config(cache: Option<CacheConfig>, boards: u8) -> SimConfig {
    SimConfig::default()
        .workload(Workload::mix(16 << 10))
        .cache(cache)
        .boards(boards)
        .ports(3)
}

#[test]
fn virtual_replay_equals_the_ground_truth() {
    let small = Some(CacheConfig {
        size_bytes: 16 << 10,
        ways: 4,
    });
    for cache in [small, None] {
        for boards in [1u8, 2] {
            let cfg = config(cache, boards);
            let out = simulate(&cfg).unwrap();
            let trace = merged(&out, &cfg, &HashSet::new());
            let (refs, report) = replay(&out, &trace);
            let truth: Vec<_> = out
                .truth
                .iter()
                .filter(|r| r.kind != RefKind::Icode)
                .collect();
            assert_eq!(refs.len(), truth.len());
            let mut dma = 0;
            for (v, t) in refs.iter().zip(&truth) {
                assert_eq!((v.tick, v.pa, v.write), (t.tick, t.pa, t.write));
                assert_eq!(v.owner, t.owner, "{v:?} vs {t:?}");
                assert_eq!(v.dma, t.kind == RefKind::Dma, "{v:?} vs {t:?}");
                dma += usize::from(v.dma);
            }
            assert!(dma > 0, "the workload has DMA");
            assert!(report.translated > 0 && report.translated < report.references);
            assert_eq!(report.table3.iter().sum::<u64>(), report.references);
            assert_eq!(report.unplaced_count, 0, "{:?}", report.unplaced);
            assert!(report.dma_requests.values().map(Vec::len).sum::<usize>() > 0);
            // Views: one process only.
            let pid = refs.iter().find_map(|v| v.owner).unwrap().0;
            let mut r = Replayer::new(
                &out.klog,
                ReplayFilter {
                    pid: Some(pid),
                    ..Default::default()
                },
            );
            let mut n = 0;
            r.run(&trace[..], &mut |v| {
                assert_eq!(v.owner.unwrap().0, pid);
                n += 1;
            });
            assert_eq!(n, truth.iter().filter(|t| t.pid() == Some(pid)).count());
        }
    }
}

#[test]
fn with_packets_dropped_everything_outside_the_lost_windows_is_exact() {
    let cfg = config(None, 2);
    let out = simulate(&cfg).unwrap();
    // Drop packets that carry log tags, on both boards.
    let mut drop = HashSet::new();
    for (bi, packets) in out.packets.iter().enumerate() {
        let board = out.board_configs[bi].board_id;
        let tagged: Vec<u64> = packets
            .iter()
            .filter(|p| {
                hmtt_format::Packet::new_checked(&p.bytes[..]).unwrap().events().flatten().any(|e| {
                    matches!(e.event, hmtt_format::BoardEvent::Tag { event, .. } if event >= 0x10000)
                })
            })
            .map(|p| p.seq)
            .collect();
        assert!(tagged.len() > 4);
        for s in tagged.iter().skip(1).step_by(3) {
            drop.insert((board, *s));
        }
    }
    let trace = merged(&out, &cfg, &drop);
    let (refs, report) = replay(&out, &trace);
    assert!(report.unplaced_count > 0, "some tags were lost");
    let truth: std::collections::HashMap<(u8, u64), _> = out
        .truth
        .iter()
        .filter(|r| r.kind != RefKind::Icode)
        .map(|r| ((out.board_configs[r.board as usize].board_id, r.tick), r))
        .collect();
    let mut checked = 0;
    for v in &refs {
        let t = truth[&(v.board, v.tick)];
        assert_eq!(v.owner, t.owner, "{v:?} vs {t:?}");
        assert_eq!(v.dma, t.kind == RefKind::Dma, "{v:?} vs {t:?}");
        checked += 1;
    }
    assert!(checked > 1000);
    assert!(checked < truth.len());
}
