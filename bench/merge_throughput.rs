//! Merge throughput on at least 1 GB of captures, beside `cat` of the same
//! files in the same run, against the merge's targets (README, Status):
//! >= 500 MB/s of capture input per core, >= 50% of cat.
//!
//! `cargo bench -p hmtt-merge --bench merge_throughput`
//! Environment: HMTT_BENCH_DIR (default: the system temp dir), HMTT_BENCH_MB
//! (capture size, default 1100), HMTT_BENCH_BOARDS (default 2),
//! HMTT_BENCH_KEEP=1 keeps the files (and prints where), HMTT_BENCH_INPUTS=DIR
//! reuses the captures a kept run left in DIR (nothing is generated or
//! removed there), HMTT_BENCH_COLD=0 skips the cold-cache
//! runs (they need root to drop the page cache, and slow the whole machine
//! down for a moment).
//!
//! The captures are synthetic (2 boards by default, 3 ports each, 360-word
//! packets, a mixed workload with random jumps, so LINE_HI words are
//! common) made with the format crate's encoder. Warm runs, all on files in
//! the page cache: `cat` of the captures (the reference), the merge decoding
//! only (records counted), the merge to a trace file in one thread and with
//! a decode thread per board (the default), and two references for
//! what writing costs here: `cp` of the captures into the output directory,
//! and writing as many bytes as the trace holds, alone. Cold runs (page
//! cache dropped before each): `cat`, and the merge to a trace file.
//! Every figure is given per wall second and per CPU second of the process
//! (all its threads, user + system), since the machine may be shared.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use hmtt_format::record::BoardEvent;
use hmtt_format::trace::TraceRecord;
use hmtt_format::Geometry;
use hmtt_merge::merge::{CountSink, RecordSink};
use hmtt_merge::synth::{self, Packetizer, Rng};
use hmtt_merge::{merge, merge_to_trace, CaptureSet, MergeOptions, TraceWriter};

const PORTS: u8 = 3;
/// A bank-hashing mapping for the captures' DDR3 geometry (format.md §3).
const XOR_MAPPING: &str = hmtt_format::mapping::DDR3_BANK_XOR_TOML;
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

#[path = "cpu_time.rs"]
mod cpu_time;

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One timed run: wall seconds and CPU seconds.
#[derive(Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: f64,
    sys: f64,
}

/// Times `f`; `children` counts the CPU of the child processes it waits
/// for instead of this process's own.
fn timed<T>(
    children: bool,
    f: impl FnOnce() -> Result<T, Box<dyn std::error::Error>>,
) -> Result<(T, Timing), Box<dyn std::error::Error>> {
    let pick = || {
        if children {
            cpu_time::waited_children()
        } else {
            cpu_time::this_process()
        }
    };
    let c0 = pick();
    let t = Instant::now();
    let out = f()?;
    let wall = t.elapsed().as_secs_f64();
    let c1 = pick();
    let cpu = (c1.total() - c0.total()).max(1e-6);
    let sys = c1.system - c0.system;
    Ok((out, Timing { wall, cpu, sys }))
}

fn run(cmd: &str, args: &[&Path]) -> Result<(), Box<dyn std::error::Error>> {
    let status = std::process::Command::new(cmd)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("{cmd} failed: {status}").into());
    }
    Ok(())
}

/// Flushes dirty pages so that one run's write-back does not slow the next.
fn sync() {
    let _ = std::process::Command::new("sync").status();
}

/// Drops the page cache (root only); `Err` says why it could not.
fn drop_caches() -> Result<(), String> {
    sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("cannot drop the page cache: {e}"))
}

/// Writes `bytes` bytes of zero records to `path` through the trace
/// writer, built in its blocks as the merge builds them: the cost of
/// writing alone.
fn write_bytes(path: &Path, bytes: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut w = TraceWriter::create(path)?;
    let mut left = bytes.saturating_sub(128) / 16;
    while left > 0 {
        let room = w.spare().ok_or("the trace writer has no room")?;
        let n = (left as usize).min(room.len()).min(1 << 13);
        room[..n].fill(TraceRecord::default());
        w.commit(n)?;
        left -= n as u64;
    }
    w.finish(&Default::default(), None, 0, &Default::default())?;
    Ok(())
}

struct Line<'a> {
    label: &'a str,
    mb: f64,
    t: Timing,
}

impl Line<'_> {
    fn print(&self, records: Option<u64>, reference: Option<&Line>, extra: &str) {
        let recs = records.map_or(String::new(), |r| {
            format!(
                "  {:6.1} M rec/s  {:6.1} M rec/cpu-s",
                r as f64 / 1e6 / self.t.wall,
                r as f64 / 1e6 / self.t.cpu
            )
        });
        let vs = reference.map_or(String::new(), |c| {
            format!(
                "  = {:4.1}% of cat (wall), {:4.1}% (cpu)",
                100.0 * c.t.wall / self.t.wall,
                100.0 * c.t.cpu / self.t.cpu
            )
        });
        println!(
            "{:<26} {:7.2} s {:8.1} MB/s | cpu {:6.2} s (sys {:5.2}) {:8.1} MB/cpu-s{recs}{vs}{extra}",
            self.label,
            self.t.wall,
            self.mb / self.t.wall,
            self.t.cpu,
            self.t.sys,
            self.mb / self.t.cpu,
        );
    }
    fn mbs_cpu(&self) -> f64 {
        self.mb / self.t.cpu
    }
    fn mbs(&self) -> f64 {
        self.mb / self.t.wall
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes --bench; any other argument is ignored.
    let env = |k: &str| std::env::var(k).ok();
    let base = std::env::var_os("HMTT_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let mb: u64 = env("HMTT_BENCH_MB")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1100);
    let boards: u8 = env("HMTT_BENCH_BOARDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let cold = env("HMTT_BENCH_COLD").is_none_or(|v| v != "0");
    let reuse = std::env::var_os("HMTT_BENCH_INPUTS").map(PathBuf::from);
    let dir = reuse
        .clone()
        .unwrap_or_else(|| base.join(format!("hmtt-merge-bench-{}", std::process::id())));
    std::fs::create_dir_all(&dir)?;
    println!("load average at start: {}", load());
    let t = Instant::now();
    let paths = match &reuse {
        Some(_) => hmtt_merge::input::expand_paths(std::slice::from_ref(&dir))?,
        None => generate(&dir, mb << 20, boards.max(1))?,
    };
    let bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let mb = bytes as f64 / 1e6;
    println!(
        "{} {} capture files of {} board(s), {:.1} MB, in {:.1} s ({})",
        if reuse.is_some() {
            "found"
        } else {
            "generated"
        },
        paths.len(),
        boards.max(1),
        mb,
        t.elapsed().as_secs_f64(),
        dir.display()
    );
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let threads = MergeOptions::default();
    let one_thread = MergeOptions {
        decode_threads: false,
        ..Default::default()
    };
    let trace = dir.join("bench.hmtttrace");
    let open = || {
        CaptureSet::open(
            std::slice::from_ref(&dir),
            hmtt_merge::input::DEFAULT_MAX_START_SKEW_NS,
        )
    };
    let to_trace = |set: &CaptureSet,
                    opts: &MergeOptions|
     -> Result<(u64, u64), Box<dyn std::error::Error>> {
        let (report, out) = merge_to_trace(set, opts, &trace, &Default::default(), &mut |_| {})?;
        assert!(report.is_clean(), "{report}");
        Ok((report.records, out))
    };

    println!("--- warm: every input file in the page cache");
    sync();
    run("cat", &inputs)?;
    let ((), t) = timed(true, || run("cat", &inputs))?;
    let cat = Line {
        label: "cat (reference)",
        mb,
        t,
    };
    cat.print(None, None, "");

    let set = open()?;
    let ((records, checksum), t) = timed(false, || {
        let mut count = CountSink::default();
        let report = merge(&set, &one_thread, &mut count, &mut |_| {})?;
        assert!(report.is_clean(), "{report}");
        Ok((count.records, count.checksum))
    })?;
    let decode = Line {
        label: "merge, decode only, 1 thr",
        mb,
        t,
    };
    decode.print(
        Some(records),
        Some(&cat),
        &format!("  (checksum {checksum:x})"),
    );
    let xor = MergeOptions {
        mapping_toml: Some(XOR_MAPPING.into()),
        ..one_thread.clone()
    };
    let ((records, checksum), t) = timed(false, || {
        let mut count = CountSink::default();
        let report = merge(&set, &xor, &mut count, &mut |_| {})?;
        assert!(report.is_clean(), "{report}");
        Ok((count.records, count.checksum))
    })?;
    let decode_xor = Line {
        label: "decode only, XOR mapping",
        mb,
        t,
    };
    decode_xor.print(
        Some(records),
        Some(&cat),
        &format!("  (checksum {checksum:x}; bank bits XOR row bits)"),
    );

    sync();
    let ((records, out_bytes), t) = timed(false, || to_trace(&set, &one_thread))?;
    let file_one = Line {
        label: "merge to a trace, 1 thread",
        mb,
        t,
    };
    file_one.print(
        Some(records),
        Some(&cat),
        &format!("  ({:.1} MB written)", out_bytes as f64 / 1e6),
    );
    std::fs::remove_file(&trace)?;
    sync();
    let ((records, _), t) = timed(false, || to_trace(&set, &threads))?;
    let file = Line {
        label: "merge to a trace, threads",
        mb,
        t,
    };
    file.print(
        Some(records),
        Some(&cat),
        "  (a decode thread per board; hmtt merge's default)",
    );
    drop(set);
    std::fs::remove_file(&trace)?;

    // What writing alone costs on this machine: the trace holds about four
    // times the capture's bytes.
    sync();
    let cp_dir = dir.join("cp");
    std::fs::create_dir_all(&cp_dir)?;
    let mut cp_args = inputs.clone();
    cp_args.push(&cp_dir);
    let ((), t) = timed(true, || run("cp", &cp_args))?;
    let cp = Line {
        label: "cp of the captures",
        mb,
        t,
    };
    cp.print(None, Some(&cat), "  (reads and writes the capture's bytes)");
    std::fs::remove_dir_all(&cp_dir)?;
    sync();
    let ((), t) = timed(false, || write_bytes(&trace, out_bytes))?;
    let write_only = Line {
        label: "trace writer alone",
        mb,
        t,
    };
    write_only.print(
        None,
        Some(&cat),
        &format!(
            "  ({:.1} MB of zero records, no decoding; MB/s are of capture input)",
            out_bytes as f64 / 1e6
        ),
    );
    std::fs::remove_file(&trace)?;
    sync();

    let mut cold_lines = Vec::new();
    if cold {
        println!("--- cold: page cache dropped before each run");
        match drop_caches() {
            Err(why) => println!("cold runs skipped: {why}"),
            Ok(()) => {
                let ((), t) = timed(true, || run("cat", &inputs))?;
                let cold_cat = Line {
                    label: "cold cat (reference)",
                    mb,
                    t,
                };
                cold_cat.print(None, None, "");
                drop_caches()?;
                let ((records, _), t) = timed(false, || to_trace(&open()?, &threads))?;
                let cold_file = Line {
                    label: "cold merge to a trace",
                    mb,
                    t,
                };
                cold_file.print(Some(records), Some(&cold_cat), "");
                std::fs::remove_file(&trace)?;
                cold_lines.push((cold_cat, cold_file));
            }
        }
    }

    println!("--- targets (>= 500 MB/s of capture input per core, >= 50% of cat)");
    let met = |x: bool| if x { "MET" } else { "NOT MET" };
    println!(
        "warm, per cpu-second : decode only {:.0} MB/s {} (XOR mapping {:.0}); to a trace {:.0} MB/s {} (1 thread), \
         {:.0} MB/s {} (threads)",
        decode.mbs_cpu(),
        met(decode.mbs_cpu() >= 500.0),
        decode_xor.mbs_cpu(),
        file_one.mbs_cpu(),
        met(file_one.mbs_cpu() >= 500.0),
        file.mbs_cpu(),
        met(file.mbs_cpu() >= 500.0)
    );
    println!(
        "warm, vs cat (wall)  : decode only {:.1}% {}; to a trace {:.1}% {} (1 thread), {:.1}% {} (threads)",
        100.0 * decode.mbs() / cat.mbs(),
        met(decode.mbs() >= 0.5 * cat.mbs()),
        100.0 * file_one.mbs() / cat.mbs(),
        met(file_one.mbs() >= 0.5 * cat.mbs()),
        100.0 * file.mbs() / cat.mbs(),
        met(file.mbs() >= 0.5 * cat.mbs())
    );
    println!(
        "write floor          : the trace writer alone reaches {:.1}% of cat (wall), \
         {:.0} MB/cpu-s of capture input; cp of the captures {:.1}% of cat",
        100.0 * write_only.mbs() / cat.mbs(),
        write_only.mbs_cpu(),
        100.0 * cp.mbs() / cat.mbs()
    );
    for (c, f) in &cold_lines {
        println!(
            "cold, vs cat (wall)  : to a trace {:.1}% {}; per cpu-second {:.0} MB/s {}",
            100.0 * f.mbs() / c.mbs(),
            met(f.mbs() >= 0.5 * c.mbs()),
            f.mbs_cpu(),
            met(f.mbs_cpu() >= 500.0)
        );
    }
    println!("load average at end: {}", load());
    if reuse.is_some() || std::env::var_os("HMTT_BENCH_KEEP").is_some() {
        println!("captures kept in {}", dir.display());
    } else {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
