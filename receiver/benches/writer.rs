//! Writer benchmark: the write side alone, without the network. One thread
//! fills batches of board packets (1500 bytes of IPv4, as the capture
//! bench's) for three ports, round-robin, at a paced rate, and hands them
//! to a `Writer` as the receive threads do; the writer's own thread CPU
//! (user + system, `RUSAGE_THREAD`) is printed per packet. Each repetition
//! runs every variant in turn (stripe files preallocated or not; 64
//! packets a batch, the capture's default, or 256: fewer, larger gather
//! writes), so the
//! variants are measured alternately in the same run; files are deleted
//! after each step, as in the capture bench.
//!
//! Environment: HMTT_WRITER_BENCH_DIR (default a temp dir on /tmp),
//! HMTT_WRITER_BENCH_PACKETS (per step, default 333333: 4 s at 1 Gb/s),
//! HMTT_WRITER_BENCH_GBPS (pacing, default 1; 0 for as fast as the writer
//! takes them), HMTT_WRITER_BENCH_REPS (default 3).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmtt_format::capture::SourceKind;
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::{PacketHeader, FLAG_TRACING};
use hmtt_format::record::RecordWord;
use hmtt_receiver::batch::{Pool, SlotKind};
use hmtt_receiver::stats::Shared;
use hmtt_receiver::writer::{InputMeta, Writer, WriterSettings};

const PORTS: usize = 3;
const IP_BYTES: usize = 1500;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(r.ru_utime) + t(r.ru_stime)
}

fn packet() -> Vec<u8> {
    let nwords = (IP_BYTES - 28 - 32) / 4;
    let words: Vec<RecordWord> = (0..nwords)
        .map(|i| RecordWord::access_unchecked((i % 60) as u32, i % 4 == 0, i as u64 * 64))
        .collect();
    PacketHeader {
        flags: FLAG_TRACING,
        board: 0,
        port: 0,
        seq: 0,
        t0: 0,
        nwords: nwords as u16,
        geometry: Geometry::ddr3_default(),
        tick_ps: 1250,
    }
    .build(&words)
}

/// Writes `packets` packets through one writer; returns its CPU seconds.
fn step(
    dir: &Path,
    packet: &[u8],
    packets: u64,
    gbps: f64,
    preallocate: bool,
    slots: usize,
) -> f64 {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let pools: Vec<Pool> = (0..PORTS)
        .map(|i| Pool::new(64 * 64 / slots, slots, 9000, i, i as u8))
        .collect();
    let metas: Vec<InputMeta> = (0..PORTS)
        .map(|i| InputMeta {
            port: i as u8,
            kind: SourceKind::Udp,
            name: format!("bench{i}"),
        })
        .collect();
    let shared = Arc::new(Shared::new(
        PORTS,
        1,
        Arc::new(AtomicBool::new(false)),
        None,
    ));
    let settings = WriterSettings {
        name: "bench".into(),
        stripe_bytes: 256 << 20,
        preallocate,
        overwrite: true,
        start_ns: 0,
    };
    let writer = Writer::new(0, dir.to_path_buf(), settings, metas, pools.clone(), shared);
    let (tx, rx) = crossbeam_channel::unbounded();
    let handle = std::thread::spawn(move || {
        let report = writer.run(rx);
        assert!(!report.dir.failed, "{:?}", report.dir.error);
        thread_cpu_seconds()
    });
    let batch_interval = if gbps > 0.0 {
        Duration::from_secs_f64(slots as f64 * IP_BYTES as f64 * 8.0 / (gbps * 1e9))
    } else {
        Duration::ZERO
    };
    let start = Instant::now();
    let mut sent = 0u64;
    let mut n = 0u32;
    while sent < packets {
        let input = n as usize % PORTS;
        let mut batch = pools[input].take();
        let count = (packets - sent).min(slots as u64) as usize;
        for i in 0..count {
            batch.payload_area(i)[..packet.len()].copy_from_slice(packet);
            batch.commit(packet.len(), sent + i as u64, 0, SlotKind::Valid);
        }
        tx.send(batch).unwrap();
        sent += count as u64;
        n += 1;
        if let Some(wait) = (batch_interval * n).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    drop(tx);
    let cpu = handle.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
    cpu
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let base: PathBuf = std::env::var("HMTT_WRITER_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            std::env::temp_dir().join(format!("hmtt-writer-bench-{}", std::process::id()))
        });
    let packets: u64 = env_or("HMTT_WRITER_BENCH_PACKETS", 333_333);
    let gbps: f64 = env_or("HMTT_WRITER_BENCH_GBPS", 1.0);
    let reps: usize = env_or("HMTT_WRITER_BENCH_REPS", 3);
    let packet = packet();
    println!(
        "writer benchmark: {packets} packets of {IP_BYTES} B over {PORTS} ports a step, {gbps} Gb/s (0: unpaced), output in {}",
        base.display()
    );
    println!("writer thread CPU, us per packet:");
    for rep in 1..=reps {
        for (preallocate, slots) in [(true, 64), (false, 64), (true, 256)] {
            let cpu = step(&base, &packet, packets, gbps, preallocate, slots);
            println!(
                "rep {rep}  preallocate {:5}  {slots:3} packets a batch  {:.3}",
                preallocate,
                cpu / packets as f64 * 1e6
            );
        }
    }
}
