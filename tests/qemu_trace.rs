//! `hmtt qemu` end to end: Debian's kernel under QEMU TCG with the real
//! `hmtt.ko`, the `qemu-plugin-hmtt` plugin as the DIMM, the I-code example
//! `hmtt_sort` in the guest, the cache model off. The captures are merged
//! and replayed with the guest's own page-table log, and checked against
//! the plugin's record of every line reference (`qemu-refs.csv`, written
//! from QEMU's addresses, never from the log):
//! - the replay restricted to the program's pid (which it reports itself:
//!   QEMU 7.2's plugin API cannot tell pids) between its first and last
//!   I-code equals the plugin's user-space references there, line for line;
//! - over the whole run every replayed reference has QEMU's physical
//!   address, and every user-space one the replay gives the program's pid
//!   has QEMU's virtual address (the kernel's references to the program's
//!   pages through its direct map get the program's pid too: the replay
//!   attributes physical frames);
//! - the I-codes appear as named tags in `hmtt dump`, at the positions of
//!   their stores in the plugin's record;
//! - `replay --window sort_begin,sort_end` selects exactly the references
//!   between those two stores.
//!
//! A second run with the cache model on checks that the merged trace
//! equals the memory path's ground truth, reference by reference.
//!
//! Needs qemu-system-x86, busybox-static, gcc, linux-headers-amd64 and the
//! kernel image (scripts/setup.sh installs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod support;
use support::cli::{ok, ok_with_stderr, s, scratch};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) -> (String, String) {
    let out: Output = cmd.output().expect("the command runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}

/// A line reference of the plugin's record.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ref {
    vaddr: u64,
    pa: u64,
    write: bool,
    event: Option<u32>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("hex {s:?}"))
}

fn read_refs(path: &Path) -> Vec<Ref> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("n,vcpu,vaddr,pa,rw,kind,event"));
    lines
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(
                f[0].parse::<usize>().unwrap(),
                i,
                "rows are numbered in order"
            );
            Ref {
                vaddr: hex(f[2]),
                pa: hex(f[3]),
                write: f[4] == "W",
                event: (!f[6].is_empty()).then(|| hex(f[6]) as u32),
            }
        })
        .collect()
}

/// (pa, write, pid, va) of each row of a replay CSV.
type Replayed = (u64, bool, Option<u32>, Option<u64>);

fn read_replay(path: &Path) -> Vec<Replayed> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    // The virtual trace's CSV (docs/format.md §14), read by column name.
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (pa, rw, pid, va) = (col("pa"), col("rw"), col("pid"), col("va"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                hex(f[pa]),
                f[rw] == "W",
                f[pid].parse().ok(),
                (!f[va].is_empty()).then(|| hex(f[va])),
            )
        })
        .collect()
}

fn position_of(refs: &[Ref], event: u32) -> usize {
    let at: Vec<usize> = (0..refs.len())
        .filter(|&i| refs[i].event == Some(event))
        .collect();
    assert_eq!(at.len(), 1, "event {event:#x} stored once");
    at[0]
}

fn is_user(vaddr: u64) -> bool {
    vaddr >> 63 == 0
}

#[test]
fn sort_under_qemu_replays_to_qemus_addresses() {
    let dir = scratch("sort");
    let kit = repo().join("target/qemu-kit-test");
    run(Command::new(repo().join("kmod-hmtt/scripts/qemu-kit.sh")).arg(&kit));

    let out = dir.join("run");
    let stdout = ok(&[
        "qemu",
        "--kit",
        s(&kit),
        "--out",
        s(&out),
        "--cache",
        "off",
        "--truth-csv",
        "--timeout",
        "170",
        "--add",
        s(&kit.join("hmtt_sort")),
        "--events",
        s(&kit.join("hmtt_sort.events.toml")),
        "--",
        "hmtt_sort",
        "4096",
    ]);
    println!("{stdout}");
    let pid: u32 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("HMTT-PID "))
        .expect("the program reported its pid")
        .trim()
        .parse()
        .unwrap();
    assert!(
        stdout.contains("HMTT-SORT n=4096 unsorted=0"),
        "the guest sorted"
    );

    let trace = dir.join("run.hmtttrace");
    let events = out.join("events.toml");
    let log = out.join("pagetable.hmttlog");
    let merged = ok(&["merge", s(&out), "-o", s(&trace), "--events", s(&events)]);
    assert!(merged.contains(" 0 LOST"), "{merged}");
    let refs = read_refs(&out.join("qemu-refs.csv"));
    let accesses: Vec<&Ref> = refs.iter().filter(|r| r.event.is_none()).collect();

    // The whole run, reference by reference.
    let all_csv = dir.join("all.csv");
    let (replay_out, replay_err) =
        ok_with_stderr(&["replay", s(&trace), "--log", s(&log), "--csv", s(&all_csv)]);
    let replayed_all = format!("{replay_out}{replay_err}");
    assert!(
        replayed_all.contains("not placed: 0"),
        "every log record at its tag: {replayed_all}"
    );
    let all = read_replay(&all_csv);
    assert_eq!(all.len(), accesses.len(), "one replayed row per reference");
    // The replay attributes physical frames: the kernel's own references
    // to the program's pages (through its direct map) get the program's
    // pid and the user address of the frame; every user-space reference
    // that gets the program's pid has QEMU's virtual address.
    let (mut of_program, mut kernel_to_program) = (0, 0);
    for (i, (r, q)) in all.iter().zip(&accesses).enumerate() {
        assert_eq!((r.0, r.1), (q.pa, q.write), "reference {i}: {r:?} vs {q:?}");
        if r.2 == Some(pid) {
            if is_user(q.vaddr) {
                of_program += 1;
                assert_eq!(r.3, Some(q.vaddr), "reference {i}: virtual address");
            } else {
                kernel_to_program += 1;
                assert_eq!(
                    r.3.map(|v| v % 4096),
                    Some(q.vaddr % 4096),
                    "reference {i}: the same place in the page"
                );
            }
        }
    }

    // The program's pid, between its first and last I-code.
    let p_csv = dir.join("program.csv");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&log),
        "--events",
        s(&events),
        "--pid",
        &pid.to_string(),
        "--window",
        "prog_start,prog_end",
        "--csv",
        s(&p_csv),
    ]);
    let program = read_replay(&p_csv);
    let (start, end) = (position_of(&refs, 0x42), position_of(&refs, 0x43));
    let expected: Vec<Replayed> = refs[start..end]
        .iter()
        .filter(|r| r.event.is_none() && is_user(r.vaddr))
        .map(|r| (r.pa, r.write, Some(pid), Some(r.vaddr)))
        .collect();
    assert!(expected.len() > 50_000, "{} references", expected.len());
    assert_eq!(program.len(), expected.len());
    for (i, (r, q)) in program.iter().zip(&expected).enumerate() {
        assert_eq!(r, q, "program reference {i}");
    }
    println!(
        "program {pid}: {} references in its window, equal to QEMU's; {of_program} user-space ones in the run, and {kernel_to_program} kernel references to its pages; {} references in all",
        program.len(),
        accesses.len()
    );

    // The I-codes as named tags, where the plugin saw their stores: the
    // dump's records and the plugin's line references are in one order.
    let dump = ok(&["dump", s(&trace), "--csv", "--events", s(&events)]);
    for (name, event) in [
        ("sort_begin", 0x40),
        ("sort_end", 0x41),
        ("prog_start", 0x42),
        ("prog_end", 0x43),
    ] {
        let rows: Vec<usize> = dump
            .lines()
            .skip(1)
            .enumerate()
            .filter(|(_, l)| l.ends_with(&format!(",TAG_W,{name}")))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(rows, vec![position_of(&refs, event)], "tag {name}");
    }

    // The sort's window: exactly the references between its two stores.
    let w_csv = dir.join("sort.csv");
    ok(&[
        "replay",
        s(&trace),
        "--log",
        s(&log),
        "--events",
        s(&events),
        "--window",
        "sort_begin,sort_end",
        "--csv",
        s(&w_csv),
    ]);
    let sort = read_replay(&w_csv);
    let (b, e) = (position_of(&refs, 0x40), position_of(&refs, 0x41));
    let between: Vec<(u64, bool)> = refs[b..e]
        .iter()
        .filter(|r| r.event.is_none())
        .map(|r| (r.pa, r.write))
        .collect();
    assert!(!between.is_empty());
    assert_eq!(
        sort.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        between,
        "the sort window"
    );

    // The cache on: the trace is the cache model's ground truth.
    let cached = dir.join("cached");
    ok(&[
        "qemu",
        "--kit",
        s(&kit),
        "--out",
        s(&cached),
        "--cache",
        "on",
        // Small enough for the run to evict dirty lines.
        "--cache-size",
        "32K",
        "--ways",
        "8",
        "--truth-csv",
        "--timeout",
        "170",
        "--add",
        s(&kit.join("hmtt_sort")),
        "--",
        "hmtt_sort",
        "4096",
    ]);
    let cached_trace = dir.join("cached.hmtttrace");
    ok(&["merge", s(&cached), "-o", s(&cached_trace)]);
    let dump = ok(&["dump", s(&cached_trace), "--csv", "--accesses-only"]);
    let traced: Vec<(u64, bool)> = dump
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (hex(f[3]), f[4] == "W")
        })
        .collect();
    let truth_text = std::fs::read_to_string(cached.join("truth.csv")).unwrap();
    let truth: Vec<(u64, bool)> = truth_text
        .lines()
        .skip(1)
        .filter(|l| !l.contains(",icode,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (hex(f[2]), f[4] == "W")
        })
        .collect();
    let writebacks = truth_text.matches(",writeback,").count();
    assert!(writebacks > 0, "the cache model wrote lines back");
    assert_eq!(traced.len(), truth.len());
    assert!(
        traced == truth,
        "the cached trace differs from the ground truth"
    );
    println!(
        "cache on: {} references in the trace, equal to the ground truth ({writebacks} write-backs)",
        traced.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
