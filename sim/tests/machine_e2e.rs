//! The end-to-end exactness test of the simulated machine: each
//! micro-benchmark and quicksort through OS model → cache (on and off) →
//! DRAM controller → board golden model; the decoded packets are exactly
//! the ground truth (lines, read/write, ticks, order), and the command
//! streams are legal.

mod machine_common;

use hmtt_format::truth::RefKind;
use hmtt_format::{AddressMapping, Geometry};
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::dram::{Scheduler, Timing};
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::workload::{Workload, HEAP_BASE};
use machine_common::*;

const SMALL_CACHE: CacheConfig = CacheConfig {
    size_bytes: 32 << 10,
    ways: 4,
};

fn run(cfg: &SimConfig) -> SimOutput {
    let out = simulate(cfg).expect("simulation runs");
    assert_commands_legal(cfg, &out);
    assert_truth_is_the_column_commands(&out);
    assert_packets_match_truth(&out);
    out
}

fn micro_benchmarks() -> Vec<(&'static str, Workload)> {
    let kib = 1 << 10;
    vec![
        (
            "seq-read line",
            Workload::SeqRead {
                bytes: 64 * kib,
                unit: 64,
                stride: 64,
            },
        ),
        (
            "seq-read page",
            Workload::SeqRead {
                bytes: 64 * kib,
                unit: 4096,
                stride: 4096,
            },
        ),
        (
            "seq-write 8B",
            Workload::SeqWrite {
                bytes: 16 * kib,
                unit: 8,
                stride: 8,
            },
        ),
        (
            "read-after-write",
            Workload::ReadAfterWrite {
                bytes: 32 * kib,
                unit: 64,
                stride: 64,
            },
        ),
        (
            "random-read",
            Workload::RandomRead {
                bytes: 256 * kib,
                unit: 64,
                count: 2000,
            },
        ),
        (
            "strided",
            Workload::SeqRead {
                bytes: 256 * kib,
                unit: 8,
                stride: 576,
            },
        ),
        ("quicksort", Workload::Quicksort { n: 3000 }),
    ]
}

#[test]
fn every_micro_benchmark_decodes_to_the_ground_truth_cache_on_and_off() {
    for (name, w) in micro_benchmarks() {
        for cache in [Some(SMALL_CACHE), None] {
            for scheduler in [Scheduler::FrFcfs, Scheduler::Fcfs] {
                let mut cfg = SimConfig::default().workload(w.clone()).cache(cache);
                cfg.controller.scheduler = scheduler;
                let out = run(&cfg);
                let cpu = out.truth.iter().filter(|r| r.kind == RefKind::Cpu).count();
                assert!(cpu > 0, "{name}: CPU references reach memory");
                if cache.is_none() {
                    // Cache off: every line of every reference reaches memory.
                    let lines: u64 = out.stats.per_kind["cpu"];
                    assert_eq!(cpu as u64, lines, "{name}");
                    assert!(lines >= out.stats.references, "{name}");
                    assert!(!out.truth.iter().any(|r| r.kind == RefKind::Writeback));
                }
            }
        }
    }
}

#[test]
fn in_order_cache_off_seq_read_is_the_program_order() {
    let mut cfg = SimConfig::default()
        .workload(Workload::SeqRead {
            bytes: 32 << 10,
            unit: 64,
            stride: 64,
        })
        .cache_off();
    cfg.controller.scheduler = Scheduler::Fcfs;
    let out = run(&cfg);
    let cpu: Vec<(u32, u64, bool)> = out
        .truth
        .iter()
        .filter(|r| r.kind == RefKind::Cpu)
        .map(|r| {
            let (pid, va) = r.owner.expect("CPU references have an owner");
            (pid, va, r.write)
        })
        .collect();
    let want: Vec<(u32, u64, bool)> = (0..512)
        .map(|i| (1000, HEAP_BASE + 64 * i, false))
        .collect();
    assert_eq!(cpu, want);
    // Pages are scattered: the 8 pages do not sit in 8 consecutive frames.
    let frames: Vec<u64> = out
        .truth
        .iter()
        .filter(|r| r.kind == RefKind::Cpu)
        .map(|r| r.pa >> 12)
        .collect();
    let mut distinct = frames.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 8);
    assert!(distinct.windows(2).any(|w| w[1] != w[0] + 1));
}

#[test]
fn with_the_cache_on_write_backs_and_fills_reach_memory() {
    let cfg = SimConfig::default()
        .workload(Workload::SeqWrite {
            bytes: 128 << 10,
            unit: 64,
            stride: 64,
        })
        .cache(Some(SMALL_CACHE));
    let out = run(&cfg);
    let count = |k| out.truth.iter().filter(|r| r.kind == k).count() as u64;
    let cache = out.stats.cache.expect("cache on");
    // Write-allocate: every written line is filled by a read.
    assert!(out
        .truth
        .iter()
        .filter(|r| r.kind == RefKind::Cpu)
        .all(|r| !r.write));
    assert_eq!(count(RefKind::Cpu) + count(RefKind::Kernel), cache.misses);
    assert_eq!(count(RefKind::Writeback), cache.writebacks);
    assert!(count(RefKind::Writeback) >= (128 << 10) / 64 - (32 << 10) / 64);
}

#[test]
fn two_boards_of_three_ports_and_other_speed_grades() {
    let w = Workload::mix(16 << 10);
    let cfg = SimConfig::default().workload(w.clone()).boards(2).ports(3);
    let out = run(&cfg);
    assert_eq!(out.packets.len(), 2);
    for b in 0..2 {
        assert_eq!(out.board_configs[b].board_id, b as u8);
        let ports: std::collections::BTreeSet<u8> = out.packets[b].iter().map(|p| p.port).collect();
        assert!(ports.len() > 1, "packets spread over the ports");
    }
    for timing in [Timing::DDR2_400, Timing::DDR_200] {
        let mut cfg = SimConfig::default().workload(w.clone()).cache_off();
        cfg.controller.timing = timing;
        cfg.geometry = Geometry::preset("ddr2-2g").unwrap();
        let out = run(&cfg);
        assert_eq!(out.tick_ps, timing.tick_ps);
    }
}

#[test]
fn hashed_address_mapping_and_ddr4_geometry() {
    let g = Geometry::ddr3_default();
    let xor = hmtt_format::mapping::DDR3_BANK_XOR_TOML;
    let mut cfg = SimConfig::default()
        .workload(Workload::Quicksort { n: 2000 })
        .cache_off();
    cfg.mapping = Some(AddressMapping::from_toml(xor, g).unwrap());
    let out = run(&cfg);
    for r in &out.truth {
        assert_eq!(cfg.mapping.as_ref().unwrap().line_of(r.pa).unwrap(), r.line);
    }
    let mut cfg = SimConfig::default().workload(Workload::mix(8 << 10));
    cfg.geometry = Geometry::preset("ddr4-64g").unwrap();
    cfg.usable_memory_bytes = 1 << 30;
    run(&cfg);
}

#[test]
fn same_seed_same_run_other_seed_other_frames() {
    let cfg = SimConfig::default().workload(Workload::mix(8 << 10));
    let a = simulate(&cfg).unwrap();
    let b = simulate(&cfg).unwrap();
    assert_eq!(a.truth, b.truth);
    assert_eq!(a.commands, b.commands);
    assert_eq!(a.packets, b.packets);
    let c = simulate(&cfg.clone().seed(2)).unwrap();
    assert_ne!(a.truth, c.truth);
}

#[test]
fn tiny_fifo_and_slow_drain_lost_counts_add_up_to_the_missing_references() {
    use hmtt_board_model::DrainRate;
    use hmtt_format::record::BoardEvent;
    let mut cfg = SimConfig::default()
        .workload(Workload::mix(16 << 10))
        .cache_off();
    cfg.cpu_ticks_per_ref = 1;
    cfg.board.fifo_depth = 64;
    cfg.board.drain = Some(DrainRate { num: 1, den: 40 });
    let out = simulate(&cfg).unwrap();
    assert_commands_legal(&cfg, &out);
    let decoded = decode_board(&out, 0);
    let expected: Vec<_> = out.truth.iter().map(|r| expected_event(&out, r)).collect();
    let mut next = 0;
    let mut lost_total = 0u64;
    for e in &decoded {
        match e.event {
            BoardEvent::Lost { count } => {
                // The dropped references are exactly the ones skipped here.
                next += count as usize;
                lost_total += u64::from(count);
            }
            _ => {
                assert_eq!(Some(e), expected.get(next), "decoded event {e:?}");
                next += 1;
            }
        }
    }
    let counters = &out.board_counters[0];
    assert!(lost_total > 100, "the run lost references ({lost_total})");
    assert_eq!(
        (expected.len() - next) as u64,
        counters.lost_pending,
        "references dropped at the very end are still pending"
    );
    assert_eq!(
        lost_total + counters.lost_pending,
        counters.events_dropped,
        "every dropped event is counted"
    );
}

#[test]
fn impossible_configurations_are_errors_not_panics() {
    let cfg = SimConfig {
        geometry: Geometry::new(0, 1, 10, 3).unwrap(),
        ..SimConfig::default()
    };
    assert!(simulate(&cfg)
        .unwrap_err()
        .to_string()
        .contains("too small"));
    let cfg = SimConfig::default().boards(0);
    assert!(simulate(&cfg).is_err());
    let cfg = SimConfig {
        usable_memory_bytes: 17 << 20,
        workload: Workload::SeqRead {
            bytes: 8 << 20,
            unit: 64,
            stride: 4096,
        },
        ..SimConfig::default()
    };
    assert!(simulate(&cfg)
        .unwrap_err()
        .to_string()
        .contains("out of physical memory"));
    let cfg = SimConfig::default().cache(Some(CacheConfig {
        size_bytes: 100,
        ways: 3,
    }));
    assert!(simulate(&cfg).is_err());
}
