//! Merge throughput on at least 1 GB of captures, beside `cat` of the same
//! files in the same run (DESIGN §4: >= 500 MB/s of capture input per core,
//! >= 50% of cat).
//!
//! `cargo bench -p hmtt-merge --bench merge_throughput`
//! Environment: HMTT_BENCH_DIR (default: the system temp dir), HMTT_BENCH_MB
//! (capture size, default 1100), HMTT_BENCH_BOARDS (default 2),
//! HMTT_BENCH_KEEP=1 keeps the files.
//!
//! The captures are synthetic (2 boards by default, 3 ports each, 360-word packets, a mixed
//! workload) made with the format crate's encoder; they are generated first,
//! then read once by `cat` (which also brings them into the page cache, so
//! both readers see the same warm files), then merged twice: decode only
//! (records counted), and to a trace file.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use hmtt_format::record::BoardEvent;
use hmtt_format::Geometry;
use hmtt_merge::merge::CountSink;
use hmtt_merge::synth::{self, Packetizer, Rng};
use hmtt_merge::{merge, CaptureSet, MergeOptions, TraceWriter};

const PORTS: u8 = 3;
const TICK_PS: u16 = 1250;

/// Deals packets to the port files as a board would.
struct Out<'a> {
    files: &'a mut [BufWriter<std::fs::File>],
    written: u64,
    err: Option<std::io::Error>,
}

impl Out<'_> {
    fn push(&mut self, p: synth::SynthPacket) {
        let port = (p.seq % u64::from(PORTS)) as usize;
        let mut bytes = p.bytes;
        hmtt_format::Packet::new_unchecked(&mut bytes[..]).set_port(port as u8);
        self.written += bytes.len() as u64 + 16;
        if let Err(e) = synth::append_record(&mut self.files[port], p.seq, &bytes) {
            self.err = Some(e);
        }
    }
}

fn generate(dir: &Path, total_bytes: u64, boards: u8) -> std::io::Result<Vec<PathBuf>> {
    let g = Geometry::ddr3_default();
    let mut paths = Vec::new();
    let per_board = total_bytes / u64::from(boards);
    for board in 0..boards {
        let mut files: Vec<BufWriter<std::fs::File>> = (0..PORTS)
            .map(|p| {
                let path = dir.join(format!("bench-b{board}-p{p}.hmttcap"));
                paths.push(path.clone());
                let mut f = BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
                f.write_all(&synth::capture_header(board, p, g, TICK_PS).emit())?;
                Ok(f)
            })
            .collect::<std::io::Result<_>>()?;
        let mut pk = Packetizer::new(board, g, TICK_PS, 360);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(board));
        let mut out = Out {
            files: &mut files,
            written: 0,
            err: None,
        };
        let mut t = 0u64;
        let mut line = 0u64;
        while out.written < per_board {
            for _ in 0..4096 {
                let r = rng.next_u64();
                t += if r & 0xff == 0 {
                    (r >> 8) & 0xfff
                } else {
                    (r >> 8) & 7
                };
                let ev = if (r >> 20) & 0x3ff == 0 {
                    BoardEvent::Tag {
                        event: 0x40 + ((r >> 32) & 7) as u32,
                        write: false,
                    }
                } else {
                    line = if (r >> 30) & 3 == 0 {
                        (r >> 34) & (g.lines() - 1)
                    } else {
                        (line + 1) & (g.lines() - 1)
                    };
                    BoardEvent::Access {
                        line,
                        write: (r >> 40).is_multiple_of(3),
                    }
                };
                pk.event(t, ev, &mut |p| out.push(p));
            }
        }
        pk.close(&mut |p| out.push(p));
        if let Some(e) = out.err {
            return Err(e);
        }
        for f in &mut files {
            f.flush()?;
        }
    }
    Ok(paths)
}

/// CPU seconds used so far by this process and by its waited-for children
/// (from /proc/self/stat; 100 ticks per second on Linux). The machine may
/// be shared, so speeds are given per CPU second as well as per wall second.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // Fields 14..17 of stat(5) are at 11..14 once "pid (comm)" is cut off.
    let get = |i: usize| f.get(i).copied().unwrap_or(0.0) / 100.0;
    (get(11) + get(12), get(13) + get(14))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes --bench; any other argument is ignored.
    let base = std::env::var_os("HMTT_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let mb: u64 = std::env::var("HMTT_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1100);
    let dir = base.join(format!("hmtt-merge-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let t = Instant::now();
    let boards: u8 = std::env::var("HMTT_BENCH_BOARDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let paths = generate(&dir, mb << 20, boards.max(1))?;
    let bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    println!(
        "generated {} capture files, {:.1} MB, in {:.1} s ({})",
        paths.len(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        dir.display()
    );

    let t = Instant::now();
    let status = std::process::Command::new("cat")
        .args(&paths)
        .stdout(std::process::Stdio::null())
        .status()?;
    let cat_s = t.elapsed().as_secs_f64();
    if !status.success() {
        return Err("cat failed".into());
    }
    // Second cat: both readers now see the files in the page cache.
    let t = Instant::now();
    let c0 = cpu_seconds().1;
    std::process::Command::new("cat")
        .args(&paths)
        .stdout(std::process::Stdio::null())
        .status()?;
    let cat_warm_s = t.elapsed().as_secs_f64();
    let cat_cpu = (cpu_seconds().1 - c0).max(0.01);
    let cat_mbs = bytes as f64 / 1e6 / cat_warm_s;
    let cat_cpu_mbs = bytes as f64 / 1e6 / cat_cpu;
    let mb = bytes as f64 / 1e6;
    println!(
        "cat (cold-ish)   : {:8.2} s  {:8.1} MB/s",
        cat_s,
        mb / cat_s
    );
    println!(
        "cat (warm)       : {:8.2} s  {:8.1} MB/s   cpu {:6.2} s  {:8.1} MB/s per cpu-second",
        cat_warm_s, cat_mbs, cat_cpu, cat_cpu_mbs
    );

    let set = CaptureSet::open(
        std::slice::from_ref(&dir),
        hmtt_merge::input::DEFAULT_MAX_START_SKEW_NS,
    )?;
    let opts = MergeOptions::default();
    let t = Instant::now();
    let c0 = cpu_seconds().0;
    let mut count = CountSink::default();
    let report = merge(&set, &opts, &mut count, &mut |_| {})?;
    let s = t.elapsed().as_secs_f64();
    let decode_cpu = (cpu_seconds().0 - c0).max(0.01);
    let decode_mbs = bytes as f64 / 1e6 / s;
    let decode_cpu_mbs = mb / decode_cpu;
    println!(
        "merge, decode    : {:8.2} s  {:8.1} MB/s  {:6.1} M records/s  ({} records, {} packets, checksum {:x}) = {:.0}% of cat",
        s,
        decode_mbs,
        count.records as f64 / 1e6 / s,
        count.records,
        report.packets(),
        count.checksum,
        100.0 * decode_mbs / cat_mbs
    );
    println!(
        "                   cpu {:6.2} s  {:8.1} MB/s per cpu-second  {:6.1} M records per cpu-second = {:.0}% of cat per cpu-second",
        decode_cpu,
        decode_cpu_mbs,
        count.records as f64 / 1e6 / decode_cpu,
        100.0 * decode_cpu_mbs / cat_cpu_mbs
    );
    assert!(report.is_clean(), "{report}");

    let trace = dir.join("bench.hmtttrace");
    let t = Instant::now();
    let c0 = cpu_seconds().0;
    let mut w = TraceWriter::create(&trace)?;
    let report = merge(&set, &opts, &mut w, &mut |_| {})?;
    let out_bytes = w.finish(&report, set.geometry, set.start_ns, &Default::default())?;
    let s = t.elapsed().as_secs_f64();
    let file_cpu = (cpu_seconds().0 - c0).max(0.01);
    let file_mbs = bytes as f64 / 1e6 / s;
    let file_cpu_mbs = mb / file_cpu;
    println!(
        "merge, to a trace: {:8.2} s  {:8.1} MB/s  {:6.1} M records/s  ({:.1} MB written) = {:.0}% of cat",
        s,
        file_mbs,
        report.records as f64 / 1e6 / s,
        out_bytes as f64 / 1e6,
        100.0 * file_mbs / cat_mbs
    );
    println!(
        "                   cpu {:6.2} s  {:8.1} MB/s per cpu-second  {:6.1} M records per cpu-second = {:.0}% of cat per cpu-second",
        file_cpu,
        file_cpu_mbs,
        report.records as f64 / 1e6 / file_cpu,
        100.0 * file_cpu_mbs / cat_cpu_mbs
    );
    let met = |x: bool| if x { "MET" } else { "NOT MET" };
    println!(
        "targets per cpu-second: >= 500 MB/s: decode {}, to file {}; >= 50% of cat: decode {}, to file {}",
        met(decode_cpu_mbs >= 500.0),
        met(file_cpu_mbs >= 500.0),
        met(decode_cpu_mbs >= 0.5 * cat_cpu_mbs),
        met(file_cpu_mbs >= 0.5 * cat_cpu_mbs),
    );
    println!(
        "targets per wall second: >= 500 MB/s: decode {}, to file {}; >= 50% of cat: decode {}, to file {}",
        met(decode_mbs >= 500.0),
        met(file_mbs >= 500.0),
        met(decode_mbs >= 0.5 * cat_mbs),
        met(file_mbs >= 0.5 * cat_mbs),
    );
    if std::env::var_os("HMTT_BENCH_KEEP").is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
