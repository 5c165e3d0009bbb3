//! Host side of `hmtt qemu` on a recorded plugin stream: the memory path,
//! its outputs and the reference CSV, as `hmtt qemu --cache off
//! --truth-csv` runs them, without QEMU. Prints guest accesses per second.
//!
//! Record a stream by running QEMU with the plugin's `out=` naming a file
//! (the command line `hmtt qemu` starts), then:
//! `HMTT_QEMU_RECORDS=FILE [HMTT_QEMU_OUT=DIR] [HMTT_QEMU_CACHE=on]
//! [HMTT_QEMU_TRUTH_CSV=off] cargo bench -p hmtt-sim --bench qemu_host`
//! The files written into DIR are the same for the same records (the run's
//! start time is fixed), so two builds can be compared byte for byte.

use hmtt_sim::dram::Scheduler;
use hmtt_sim::machine::SimConfig;
use hmtt_sim::qemu::{GuestConfigSpace, GuestPidSpace};
use hmtt_sim::qemu_guest::trace_records;
use hmtt_sim::stream::StreamOutputs;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let Some(records) = std::env::var_os("HMTT_QEMU_RECORDS").map(PathBuf::from) else {
        eprintln!("qemu_host: set HMTT_QEMU_RECORDS to a recorded plugin stream; skipped");
        return;
    };
    let out = std::env::var_os("HMTT_QEMU_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hmtt-qemu-host"));
    let cache = std::env::var("HMTT_QEMU_CACHE").is_ok_and(|v| v == "on");
    let truth_csv = !std::env::var("HMTT_QEMU_TRUTH_CSV").is_ok_and(|v| v == "off");
    let mut cfg = SimConfig::default();
    if !cache {
        cfg = cfg.cache_off();
    }
    // `hmtt qemu`'s default scheduler.
    cfg.controller.scheduler = Scheduler::Fcfs;
    let f = std::fs::File::open(&records).expect("the records file");
    let t = Instant::now();
    let s = trace_records(
        f,
        &records,
        GuestConfigSpace::DEFAULT,
        GuestPidSpace::DEFAULT,
        cfg,
        StreamOutputs {
            dir: Some(&out),
            truth_csv,
            ..Default::default()
        },
    )
    .expect("the host side");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} accesses, {} memory requests in {secs:.2} s: {:.2} M accesses/s (cache {}, truth CSV {})",
        s.accesses,
        s.report.summary.stats.memory_requests,
        s.accesses as f64 / secs / 1e6,
        if cache { "on" } else { "off" },
        if truth_csv { "on" } else { "off" }
    );
}
