//! Throughput of the simulated machine: references per second and DDR
//! commands per second, next to the cost of generating the same workload's
//! operations alone (measured in the same run), with and without the
//! board's golden model.
//!
//! `cargo bench -p hmtt-sim --bench sim_throughput`

use hmtt_sim::cache::CacheConfig;
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::Workload;
use std::hint::black_box;
use std::time::Instant;

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(v);
    }
    (best, last.expect("runs >= 1"))
}

fn main() {
    let cases = [
        (
            "seq-read 16 MiB, cache off",
            SimConfig::default()
                .workload(Workload::SeqRead {
                    bytes: 16 << 20,
                    unit: 64,
                    stride: 64,
                })
                .cache_off(),
        ),
        (
            "random-read 64 MiB x 256K, cache 2 MiB",
            SimConfig::default().workload(Workload::RandomRead {
                bytes: 64 << 20,
                unit: 64,
                count: 256 << 10,
            }),
        ),
        (
            "quicksort 200K ints, cache 256 KiB",
            SimConfig::default()
                .workload(Workload::Quicksort { n: 200_000 })
                .cache(Some(CacheConfig {
                    size_bytes: 256 << 10,
                    ways: 8,
                })),
        ),
        (
            "mix 256 KiB buffers, cache off",
            SimConfig::default()
                .workload(Workload::mix(256 << 10))
                .cache_off(),
        ),
    ];
    println!(
        "{:<40} {:>12} {:>12} {:>13} {:>13} {:>13} {:>9}",
        "case", "refs", "commands", "gen refs/s", "sim refs/s", "sim cmds/s", "sim/gen"
    );
    // SIM_BENCH_CASE=<substring> runs only the matching cases (for profiling).
    let only = std::env::var("SIM_BENCH_CASE").ok();
    for (name, cfg) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        // Reference: the workload's operation stream alone.
        let (gen_secs, gen_ops) = best_of(3, || cfg.workload.ops(cfg.seed).map(black_box).count());
        for boards in [false, true] {
            let mut c = cfg.clone();
            c.run_boards = boards;
            let (secs, out) = best_of(2, || simulate(&c).expect("runs"));
            let refs = out.stats.references as f64;
            let cmds: usize = out.commands.iter().map(Vec::len).sum();
            let gen_rate = gen_ops as f64 / gen_secs;
            let sim_rate = out.stats.ops as f64 / secs;
            println!(
                "{:<40} {:>12} {:>12} {:>11.2}M {:>11.2}M {:>11.2}M {:>8.3}x",
                format!("{name}{}", if boards { " +board" } else { "" }),
                out.stats.references,
                cmds,
                gen_rate / 1e6,
                refs / secs / 1e6,
                cmds as f64 / secs / 1e6,
                sim_rate / gen_rate,
            );
        }
    }
    println!("(gen: operations generated per second by the workload alone; sim/gen: simulated operations per second over generated ones)");
}
