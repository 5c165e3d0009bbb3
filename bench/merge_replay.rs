//! Replay throughput (issue 8 target: >= 50 M references/s on one core).
//!
//! `cargo bench -p hmtt-merge --bench merge_replay`
//! HMTT_BENCH_REFS sets the number of references (default 100 M).
//!
//! A synthetic physical trace: 4 processes map 64 K frames each (MAP log
//! records announced by tags), then references walk their pages with some
//! random jumps, a DMA buffer is live part of the time, and frames are
//! unmapped and remapped to other processes between phases.

use std::time::Instant;

use hmtt_format::config::log_tag_event;
use hmtt_format::klog::{DmaDirection, Event, Name, RecordRepr};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_merge::replay::{ReplayFilter, Replayer};
use hmtt_merge::synth::Rng;

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / 100.0
}

fn main() {
    let n: usize = std::env::var("HMTT_BENCH_REFS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000_000);
    const FRAMES: u64 = 1 << 16;
    let mut log = Vec::new();
    let mut trace = Vec::with_capacity(n + 4 * FRAMES as usize * 3);
    let mut tick = 0u64;
    let push_log =
        |log: &mut Vec<RecordRepr>, trace: &mut Vec<TraceRecord>, tick: u64, pid, event| {
            let seq = log.len() as u64;
            log.push(RecordRepr {
                seq,
                cpu: 0,
                pid,
                time_ns: 0,
                event,
            });
            trace.push(TraceRecord::new(
                tick,
                0,
                RecordKind::Tag { write: false },
                u64::from(log_tag_event(seq)),
            ));
        };
    let mut rng = Rng(7);
    let phases = 4u64;
    let per_phase = n / phases as usize;
    for phase in 0..phases {
        for f in 0..FRAMES {
            let pid = ((f + phase) % 4) as u32 + 1;
            tick += 1;
            push_log(
                &mut log,
                &mut trace,
                tick,
                pid,
                Event::Map {
                    vpn: 0x10000 + f,
                    pfn: 0x1000 + f,
                    pte_phys: 0x100_0000 + f * 8,
                },
            );
        }
        tick += 1;
        push_log(
            &mut log,
            &mut trace,
            tick,
            0,
            Event::DmaMap {
                addr: 0x1000 << 12,
                size: 64 << 10,
                dir: DmaDirection::FromDevice,
                device: Name::new("nic"),
            },
        );
        let mut line = 0u64;
        for i in 0..per_phase {
            let r = rng.next_u64();
            line = if r & 63 == 0 {
                (r >> 8) % (FRAMES * 64)
            } else {
                (line + 1) % (FRAMES * 64)
            };
            tick += 1 + (r >> 60);
            trace.push(TraceRecord::access(
                tick,
                0,
                r >> 59 & 1 == 1,
                (0x1000 << 12) + line * 64,
            ));
            if i == per_phase / 2 {
                tick += 1;
                push_log(
                    &mut log,
                    &mut trace,
                    tick,
                    0,
                    Event::DmaUnmap {
                        addr: 0x1000 << 12,
                        size: 64 << 10,
                        dir: DmaDirection::FromDevice,
                        device: Name::new("nic"),
                    },
                );
            }
        }
        for f in 0..FRAMES {
            tick += 1;
            let pid = ((f + phase) % 4) as u32 + 1;
            push_log(
                &mut log,
                &mut trace,
                tick,
                pid,
                Event::Unmap {
                    vpn: 0x10000 + f,
                    pfn: 0x1000 + f,
                    pte_phys: 0x100_0000 + f * 8,
                },
            );
        }
    }
    println!(
        "trace: {} records ({} references), log: {} records",
        trace.len(),
        n,
        log.len()
    );
    let t = Instant::now();
    let c0 = cpu_seconds();
    let mut r = Replayer::new(&log, ReplayFilter::default());
    let mut checksum = 0u64;
    r.run(&trace[..], &mut |v| {
        checksum = checksum.wrapping_add(v.owner.map_or(1, |o| o.1 ^ u64::from(o.0)));
    });
    let s = t.elapsed().as_secs_f64();
    let cpu = (cpu_seconds() - c0).max(0.01);
    let rep = &r.report;
    println!(
        "replay: {:.2} s wall, {:.2} s cpu: {:.1} M references/s wall, {:.1} M references per cpu-second (translated {}, miss rate {:.2}%, DMA {}, checksum {checksum:x})",
        s,
        cpu,
        rep.references as f64 / 1e6 / s,
        rep.references as f64 / 1e6 / cpu,
        rep.translated,
        100.0 * rep.miss_rate(),
        rep.table3[2] + rep.table3[3]
    );
    let met = |x: f64| if x >= 50.0 { "MET" } else { "NOT MET" };
    println!(
        "target >= 50 M references/s: per cpu-second {}, per wall second {}",
        met(rep.references as f64 / 1e6 / cpu),
        met(rep.references as f64 / 1e6 / s)
    );
    assert_eq!(rep.unplaced_count, 0);
}
