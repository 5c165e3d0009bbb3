//! Random machines (workload, cache shape, scheduler, queue depth, channels
//! and their interleave, speed grade): the command streams stay legal and
//! the decoded packets stay exactly the ground truth.

mod machine_common;

use hmtt_sim::cache::CacheConfig;
use hmtt_sim::dram::{Scheduler, Timing};
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::Workload;
use machine_common::*;
use proptest::prelude::*;

fn workload() -> impl Strategy<Value = Workload> {
    prop_oneof![
        (1u64..64, 0usize..4).prop_map(|(kib, u)| Workload::SeqRead {
            bytes: kib << 10,
            unit: [1, 8, 64, 4096][u],
            stride: [1, 8, 64, 4096][u],
        }),
        (1u64..32, 1u64..5000).prop_map(|(kib, s)| Workload::SeqWrite {
            bytes: kib << 10,
            unit: 8,
            stride: s,
        }),
        (1u64..32).prop_map(|kib| Workload::ReadAfterWrite {
            bytes: kib << 10,
            unit: 64,
            stride: 64,
        }),
        (1u64..256, 1u64..1000).prop_map(|(kib, count)| Workload::RandomRead {
            bytes: kib << 10,
            unit: 64,
            count,
        }),
        (2u64..1500).prop_map(|n| Workload::Quicksort { n }),
        (4u64..16).prop_map(|kib| Workload::mix(kib << 10)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_machines_decode_to_their_ground_truth(
        w in workload(),
        processes in 1u32..4,
        cache in prop::option::of((0u32..4, 0u32..3)),
        fcfs: bool,
        queue_depth in 1usize..32,
        boards in 1u8..4,
        shift in 6u32..16,
        speed in 0usize..3,
        seed: u64,
    ) {
        let mut cfg = SimConfig::default()
            .workload(w.processes(processes, 16))
            .seed(seed)
            .boards(boards)
            .cache(cache.map(|(s, w)| CacheConfig {
                size_bytes: (4 << 10) << (2 * s),
                ways: [1, 4, 16][w as usize],
            }));
        cfg.controller.scheduler = if fcfs { Scheduler::Fcfs } else { Scheduler::FrFcfs };
        cfg.controller.queue_depth = queue_depth;
        cfg.controller.timing = Timing::ALL[speed];
        cfg.interleave_shift = shift;
        let out = simulate(&cfg).unwrap();
        assert_commands_legal(&cfg, &out);
        assert_truth_is_the_column_commands(&out);
        assert_packets_match_truth(&out);
        assert_replay_matches_truth(&out);
    }
}
