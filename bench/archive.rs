//! Trace archive benchmark (issue 18; run by `bench/archive.sh`, which
//! makes the traces and measures the general-purpose compressors): for
//! each trace file given in `HMTT_ARCHIVE_TRACES` (colon-separated), packs
//! it in memory and decodes every block again, and prints one line
//!
//! `archive NAME records R bytes B bits_per_record X compress_mrps C decompress_mrps D`
//!
//! Speeds are records per second of this thread's CPU time (one core),
//! the best of `HMTT_ARCHIVE_ROUNDS` rounds (default 3) of at least 0.2 s
//! each: the machine may be shared. Packing includes reading the trace's
//! records; unpacking is decoding every block into records. Archive
//! options: `HMTT_ARCHIVE_LEVEL` (every column's zstd level) and
//! `HMTT_ARCHIVE_BLOCK_RECORDS` (defaults: the format's).

use std::io::Cursor;

use hmtt_format::archive::{self, ArchiveOptions, ArchiveView};

/// CPU time this thread has used, in seconds.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The least CPU time `f` takes over `rounds` rounds, each repeating `f`
/// until it has run for at least 0.2 s (small traces), per call.
fn best_time(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..rounds.max(1) {
        let t = thread_cpu_secs();
        let mut calls = 0u32;
        while calls == 0 || thread_cpu_secs() - t < 0.2 {
            f();
            calls += 1;
        }
        best = best.min((thread_cpu_secs() - t) / f64::from(calls));
    }
    best
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let Ok(list) = std::env::var("HMTT_ARCHIVE_TRACES") else {
        eprintln!("archive bench: set HMTT_ARCHIVE_TRACES=a.hmtttrace:b.hmtttrace (bench/archive.sh does)");
        return;
    };
    let rounds: usize = env_num("HMTT_ARCHIVE_ROUNDS", 3);
    let defaults = ArchiveOptions::default();
    let block_records = env_num("HMTT_ARCHIVE_BLOCK_RECORDS", defaults.block_records);
    let opts = match std::env::var("HMTT_ARCHIVE_LEVEL")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(level) => ArchiveOptions::with_level(block_records, level),
        None => ArchiveOptions {
            block_records,
            ..defaults
        },
    };
    for path in list.split(':').filter(|p| !p.is_empty()) {
        let trace = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        // The output buffer is reused, as a file's page cache would be.
        let mut packed = Vec::with_capacity(trace.len() / 4);
        let pack_secs = best_time(rounds, || {
            packed.clear();
            let out = Cursor::new(std::mem::take(&mut packed));
            let (out, _) =
                archive::pack(&trace, out, opts).unwrap_or_else(|e| panic!("packing {path}: {e}"));
            packed = out.into_inner();
        });
        let view = ArchiveView::new_checked(&packed).expect("the archive just written");
        let mut buf = Vec::new();
        let mut sum = 0u64;
        let unpack_secs = best_time(rounds, || {
            for b in 0..view.block_count() {
                view.decode_block(b, &mut buf)
                    .expect("a block just written");
                sum = sum.wrapping_add(buf.last().map_or(0, |r| r.packed ^ r.tick));
            }
        });
        let records = view.len() as f64;
        let name = std::path::Path::new(path)
            .file_stem()
            .map_or(path.into(), |s| s.to_string_lossy());
        println!(
            "archive {name} records {} bytes {} bits_per_record {:.3} compress_mrps {:.1} decompress_mrps {:.1} (check {:x})",
            view.len(),
            packed.len(),
            packed.len() as f64 * 8.0 / records.max(1.0),
            records / pack_secs / 1e6,
            records / unpack_secs / 1e6,
            sum & 0xfff
        );
    }
}
