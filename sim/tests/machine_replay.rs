//! The simulated machine's page-table log and tags are complete and placed
//! right: replaying the kernel log at its tags, board by board, translates
//! every reference to exactly the owner the ground truth records, and the
//! DMA_MAP/DMA_UNMAP windows hold exactly the DMA references. This is what
//! merge's virtual replay (issue 8) is checked against.

mod machine_common;

use hmtt_format::klog::{Event, Kind};
use hmtt_format::truth::RefKind;
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::Workload;
use machine_common::*;
use std::collections::{HashMap, HashSet};

fn replay_and_compare(cfg: &SimConfig) {
    let out = simulate(cfg).unwrap();
    assert_commands_legal(cfg, &out);
    assert_packets_match_truth(&out);
    let kinds: HashSet<Kind> = out.klog.iter().map(|r| r.event.kind()).collect();
    for k in [
        Kind::Exec,
        Kind::Map,
        Kind::Unmap,
        Kind::Exit,
        Kind::DmaMap,
        Kind::DmaUnmap,
    ] {
        assert!(kinds.contains(&k), "log has {k:?} records");
    }
    for (i, r) in out.klog.iter().enumerate() {
        assert_eq!(r.seq, i as u64);
    }
    // Frames move between processes.
    let mut users: HashMap<u64, HashSet<u32>> = HashMap::new();
    for r in &out.klog {
        if let Event::Map { pfn, .. } = r.event {
            users.entry(pfn).or_default().insert(r.pid);
        }
    }
    assert!(
        users.values().any(|p| p.len() > 1),
        "some frame served two processes"
    );

    let (translated, dma_refs) = assert_replay_matches_truth(&out);
    assert!(translated > 0 && dma_refs > 0);
}

#[test]
fn replaying_the_log_at_its_tags_gives_the_ground_truth_owners() {
    let small = Some(CacheConfig {
        size_bytes: 16 << 10,
        ways: 4,
    });
    for cache in [small, None] {
        for boards in [1, 2] {
            let cfg = SimConfig::default()
                .workload(Workload::mix(16 << 10))
                .cache(cache)
                .boards(boards);
            replay_and_compare(&cfg);
        }
    }
}

#[test]
fn write_backs_of_freed_frames_have_the_new_owner_or_none() {
    // A process dirties a buffer, frees it and exits while lines are still
    // in the cache; the write-backs carry whatever maps the frame then.
    let w = Workload::Processes {
        parts: vec![
            Workload::SeqWrite {
                bytes: 8 << 10,
                unit: 64,
                stride: 64,
            },
            Workload::SeqRead {
                bytes: 64 << 10,
                unit: 64,
                stride: 64,
            },
        ],
        quantum: 32,
    };
    let cfg = SimConfig::default().workload(w).cache(Some(CacheConfig {
        size_bytes: 32 << 10,
        ways: 8,
    }));
    let out = simulate(&cfg).unwrap();
    let wb = out
        .truth
        .iter()
        .filter(|r| r.kind == RefKind::Writeback)
        .count();
    assert!(wb > 0);
    replay_and_compare_kinds_only(&out);
}

fn replay_and_compare_kinds_only(out: &hmtt_sim::machine::SimOutput) {
    // Every CPU row has an owner, no I-code row has one.
    for r in &out.truth {
        match r.kind {
            RefKind::Cpu => assert!(r.owner.is_some()),
            RefKind::Icode => assert!(r.owner.is_none()),
            _ => {}
        }
    }
}
