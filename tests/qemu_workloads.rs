//! Virtual traces of real workloads under `hmtt qemu`, reference by
//! reference against QEMU's own record (issue 35).
//!
//! One boot per vCPU count (1 and 2) runs `hmtt_workloads`, a shell script
//! of the kit, with the cache model off. `hmtt.ko` traces it by its command
//! name and every process it forks through their FORK records. It runs,
//! one after the other:
//! - `hmtt_wl_shared`: a parent and two children exchanging data through a
//!   MAP_SHARED anonymous region, in rounds;
//! - `hmtt_wl_threads`: four pthreads writing and reading their own data
//!   and a shared table;
//! - `hmtt_wl_cow`: a parent fills private pages and forks two children;
//!   all three write some of the pages (copy-on-write breaks) and read the
//!   others;
//! - `hmtt_wl_file`: tmpfs files mapped shared and private, read and
//!   written;
//! - `hmtt_wl_gen N | hmtt_wl_sum`: a pipeline of two programs, both
//!   exec'd by the script shell's children.
//!
//! Every process prints `HMTT-WL-PID PROGRAM ROLE PID`. The captures are
//! merged and replayed with the guest's page-table log (`hmtt replay
//! --csv`), and for every pid QEMU's record (`qemu-refs.csv`, written from
//! QEMU's addresses and the guest's context switches, never from the log)
//! shows between the script's first and last user-space reference, each
//! user-space reference QEMU saw that pid make is compared with the
//! replay's row at the same position: exact is the same pid, virtual
//! address and direction (the physical address and direction of every row
//! must agree, or the two are not in one order and the test fails). The
//! rest is counted as no pid, wrong pid or wrong virtual address, and
//! classified by cause where the page-table log and QEMU's record tell it
//! (see [`Cause`]).
//!
//! The must-show of the issue, per pid and at both vCPU counts: at least
//! [`MIN_EXACT`] of QEMU's user-space references exact and at most
//! [`MAX_WRONG_VA`] with a wrong virtual address. Each program is its own
//! test, the boot shared by the tests of one vCPU count; each prints its
//! rows of the table (the whole table with `--nocapture`).
//!
//! The script's own pid is compared from its EXEC record's tag on: before
//! it, the pid runs `/init`'s forked shell, which is not traced.
//!
//! Needs what tests/qemu_trace.rs needs (scripts/setup.sh installs it).

use hmtt_format::klog::{read_image, Event, RecordRepr};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

mod support;
use support::cli::{hmtt, s, scratch};

/// The share of a pid's user-space references (QEMU's) the replay must
/// give exactly: pid, virtual address, direction, position.
const MIN_EXACT: f64 = 0.999;
/// User-space references of a pid the replay may give the pid with
/// another virtual address.
const MAX_WRONG_VA: u64 = 0;
/// Fewer user-space references than this in a workload's process would
/// make its share meaningless: the program did not run as written.
const MIN_REFERENCES: u64 = 20_000;
/// The argument of `hmtt_wl_gen`: primes below it.
const PIPELINE_N: &str = "20000";
/// Examples kept per pid and kind of miss, printed with the table.
const EXAMPLES: usize = 4;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workload programs, as the kit names them.
const PROGRAMS: [&str; 6] = [
    "hmtt_wl_shared",
    "hmtt_wl_threads",
    "hmtt_wl_cow",
    "hmtt_wl_file",
    "hmtt_wl_gen",
    "hmtt_wl_sum",
];

/// The kit, built once for every boot of this file.
fn kit() -> &'static Path {
    static KIT: OnceLock<PathBuf> = OnceLock::new();
    KIT.get_or_init(|| {
        let kit = repo().join("target/qemu-kit-test");
        let out = Command::new(repo().join("kmod-hmtt/scripts/qemu-kit.sh"))
            .arg(&kit)
            .output()
            .expect("qemu-kit.sh runs");
        assert!(
            out.status.success(),
            "qemu-kit.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        kit
    })
}

/// Why a reference is not exact, as far as the log and QEMU's record tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    /// The log has no record of the pid at all: it was never traced.
    Untraced,
    /// Before the tag of the pid's first record (its FORK or EXEC).
    BeforeFirstRecord,
    /// In a run of misses of the pid that its EXEC tag ends: execve's own
    /// work on the new image before the record.
    Execve,
    /// After the tag of the pid's EXIT record.
    AfterExit,
    /// The line at the start of a page right after the pid's reference
    /// to the last line of the page before: the second line of an access
    /// crossing a page, whose frame QEMU's record may have wrong (issue
    /// 35, cause 1).
    PageCrossing,
    /// In a frame QEMU saw another pid use in user space before: a frame
    /// with several owners (shared memory, copy-on-write, page cache), or
    /// one freed by a process and reused by another.
    SharedFrame,
    /// None of the above.
    Other,
}

impl Cause {
    fn name(self) -> &'static str {
        match self {
            Cause::Untraced => "untraced pid",
            Cause::BeforeFirstRecord => "before its first record",
            Cause::Execve => "execve before EXEC",
            Cause::AfterExit => "after EXIT",
            Cause::PageCrossing => "page-crossing access",
            Cause::SharedFrame => "frame another pid used",
            Cause::Other => "other",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Miss {
    NoPid,
    WrongPid,
    WrongVa,
}

impl Miss {
    fn name(self) -> &'static str {
        match self {
            Miss::NoPid => "no pid",
            Miss::WrongPid => "wrong pid",
            Miss::WrongVa => "wrong VA",
        }
    }
}

/// One pid's comparison.
#[derive(Debug, Default, Clone)]
struct PidRow {
    program: String,
    role: String,
    pid: u32,
    /// QEMU's user-space references of the pid compared.
    qemu: u64,
    exact: u64,
    misses: BTreeMap<Miss, u64>,
    causes: BTreeMap<(Miss, Cause), u64>,
    /// Before the comparison window (the script before its exec).
    not_compared: u64,
    examples: Vec<String>,
}

impl PidRow {
    fn miss(&self, m: Miss) -> u64 {
        self.misses.get(&m).copied().unwrap_or(0)
    }

    fn exact_share(&self) -> f64 {
        if self.qemu == 0 {
            0.0
        } else {
            self.exact as f64 / self.qemu as f64
        }
    }

    fn line(&self) -> String {
        let causes: Vec<String> = self
            .causes
            .iter()
            .map(|((m, c), n)| format!("{} {}: {n}", m.name(), c.name()))
            .collect();
        format!(
            "{:<16} {:<8} {:>6} {:>10} {:>10} {:>8.3}% {:>8} {:>9} {:>8}  {}",
            self.program,
            self.role,
            self.pid,
            self.qemu,
            self.exact,
            100.0 * self.exact_share(),
            self.miss(Miss::NoPid),
            self.miss(Miss::WrongPid),
            self.miss(Miss::WrongVa),
            causes.join("; ")
        )
    }
}

const TABLE_HEADER: &str = "program          role        pid     QEMU's      exact    exact%   no pid wrong pid wrong VA  causes";

/// One boot's outcome.
struct Outcome {
    vcpus: u32,
    rows: Vec<PidRow>,
    /// The console, the replay's report and the timings.
    report: String,
}

impl Outcome {
    fn table(&self) -> String {
        let mut t = format!("{} vCPU(s)\n{TABLE_HEADER}\n", self.vcpus);
        for r in &self.rows {
            t.push_str(&r.line());
            t.push('\n');
        }
        t
    }
}

/// A CSV file read line by line into one reused buffer: the files hold
/// tens of millions of rows.
struct CsvLines {
    reader: BufReader<std::fs::File>,
    line: Vec<u8>,
}

impl CsvLines {
    fn open(path: &Path) -> CsvLines {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        CsvLines {
            reader: BufReader::with_capacity(1 << 20, file),
            line: Vec::new(),
        }
    }

    /// The next line's fields (up to `N`, the rest ignored), or None at
    /// the end.
    fn next<const N: usize>(&mut self) -> Option<[&[u8]; N]> {
        self.line.clear();
        let n = self
            .reader
            .read_until(b'\n', &mut self.line)
            .expect("the CSV reads");
        if n == 0 {
            return None;
        }
        let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let mut fields = [&b""[..]; N];
        for (slot, f) in fields.iter_mut().zip(text.split(|&b| b == b',')) {
            *slot = f;
        }
        Some(fields)
    }
}

fn hex(field: &[u8]) -> u64 {
    let digits = field.strip_prefix(b"0x").unwrap_or(field);
    assert!(
        !digits.is_empty() && digits.len() <= 16,
        "hex {:?}",
        String::from_utf8_lossy(field)
    );
    digits.iter().fold(0, |v, &d| {
        let x = (d as char)
            .to_digit(16)
            .unwrap_or_else(|| panic!("hex {:?}", String::from_utf8_lossy(field)));
        v << 4 | u64::from(x)
    })
}

fn decimal(field: &[u8]) -> Option<u32> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

fn is_user(vaddr: u64) -> bool {
    vaddr >> 63 == 0
}

const QEMU_HEADER: &str = "n,vcpu,pid,vaddr,pa,rw,kind,event";

/// A log record's part in a pid's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Exec,
    Exit,
    Other,
}

/// One process QEMU saw make user-space references, as the comparison
/// goes.
#[derive(Default)]
struct PidState {
    row: PidRow,
    /// Positions (among the accesses) of its first and last user-space
    /// reference.
    first: u64,
    last: u64,
    /// The log has a record of the pid.
    traced: bool,
    /// The tag of its first record, of its EXIT record went by.
    first_record_seen: bool,
    exit_seen: bool,
    /// The script: compared from its EXEC tag on.
    from_exec: bool,
    exec_seen: bool,
    /// Misses waiting to know whether an EXEC tag ends their run, with
    /// the cause they have otherwise.
    pending: Vec<(Miss, Cause)>,
    /// The line of its last user-space reference.
    last_line: u64,
}

impl PidState {
    /// Settles the pending misses: execve's if an EXEC tag ends their run.
    fn settle(&mut self, execve: bool) {
        for (miss, otherwise) in std::mem::take(&mut self.pending) {
            let cause = if execve { Cause::Execve } else { otherwise };
            *self.row.causes.entry((miss, cause)).or_default() += 1;
        }
    }
}

/// Compares QEMU's record with the replay's CSV, reference by reference,
/// in one pass; per pid that made user-space references. `script`: the
/// pid compared from its EXEC tag on.
fn compare(
    refs_csv: &Path,
    replay_csv: &Path,
    log: &[RecordRepr],
    script: u32,
) -> (BTreeMap<u32, PidState>, u64) {
    // The log's records by seq: the pid and its part in the pid's life.
    let marks: HashMap<u64, (u32, Mark)> = log
        .iter()
        .filter(|r| r.pid != 0)
        .map(|r| {
            let mark = match r.event {
                Event::Exec { .. } => Mark::Exec,
                Event::Exit { .. } => Mark::Exit,
                _ => Mark::Other,
            };
            (r.seq, (r.pid, mark))
        })
        .collect();
    let traced: HashSet<u32> = marks.values().map(|&(pid, _)| pid).collect();

    let mut qemu = CsvLines::open(refs_csv);
    let header = qemu.next::<8>().expect("QEMU's record has a header");
    assert_eq!(header.join(&b","[..]), QEMU_HEADER.as_bytes());
    let mut replay = CsvLines::open(replay_csv);
    let names: Vec<String> = replay
        .next::<16>()
        .expect("the replay's header")
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let col = |name: &str| {
        names
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in the replay's CSV"))
    };
    let (c_pa, c_rw, c_pid, c_va) = (col("pa"), col("rw"), col("pid"), col("va"));

    let mut states: BTreeMap<u32, PidState> = BTreeMap::new();
    // The last pid QEMU saw use each frame in user space, and the frames
    // several used.
    let mut frame_user: HashMap<u64, u32> = HashMap::new();
    let mut shared_frames: HashSet<u64> = HashSet::new();
    let (mut at, mut tags) = (0u64, 0u64);
    while let Some(q) = qemu.next::<8>() {
        if !q[7].is_empty() {
            let event = hex(q[7]);
            if (0x10000..0x20000).contains(&event) {
                // A log tag carries its seq's low 16 bits; the seq is the
                // one nearest the count of log tags so far (tags of several
                // CPUs may come a little out of order).
                let low = event - 0x10000;
                let base = tags & !0xFFFF;
                let seq = [base.wrapping_sub(0x10000), base, base + 0x10000]
                    .into_iter()
                    .map(|b| b.wrapping_add(low))
                    .min_by_key(|&c| c.abs_diff(tags))
                    .unwrap();
                tags += 1;
                if let Some(&(pid, mark)) = marks.get(&seq) {
                    let st = states.entry(pid).or_default();
                    st.first_record_seen = true;
                    match mark {
                        Mark::Exec => {
                            st.exec_seen = true;
                            st.settle(true);
                        }
                        Mark::Exit => st.exit_seen = true,
                        Mark::Other => {}
                    }
                }
            }
            continue;
        }
        let r = replay
            .next::<16>()
            .unwrap_or_else(|| panic!("the replay ends at reference {at}, QEMU's record goes on"));
        let (pa, write, vaddr) = (hex(q[4]), q[5] == b"W", hex(q[3]));
        assert_eq!(
            (hex(r[c_pa]), r[c_rw] == b"W"),
            (pa, write),
            "reference {at}: the replay's physical address and direction are QEMU's"
        );
        let pid = match decimal(q[2]) {
            Some(pid) if is_user(vaddr) => pid,
            _ => {
                at += 1;
                continue;
            }
        };
        let frame = pa >> 12;
        if frame_user.insert(frame, pid).is_some_and(|p| p != pid) {
            shared_frames.insert(frame);
        }
        let st = states.entry(pid).or_insert_with(|| PidState {
            first: at,
            ..PidState::default()
        });
        st.last = at;
        let line = vaddr & !63;
        let crossing = line & 0xFFF == 0 && st.last_line + 64 == line;
        st.last_line = line;
        st.traced = traced.contains(&pid);
        st.from_exec = pid == script;
        if st.from_exec && !st.exec_seen {
            st.row.not_compared += 1;
            at += 1;
            continue;
        }
        st.row.qemu += 1;
        let (rpid, rva) = (
            decimal(r[c_pid]),
            (!r[c_va].is_empty()).then(|| hex(r[c_va])),
        );
        let miss = match (rpid, rva) {
            (Some(p), Some(va)) if p == pid && va == vaddr => None,
            (None, _) => Some(Miss::NoPid),
            (Some(p), _) if p != pid => Some(Miss::WrongPid),
            _ => Some(Miss::WrongVa),
        };
        let Some(miss) = miss else {
            st.row.exact += 1;
            st.settle(false);
            at += 1;
            continue;
        };
        *st.row.misses.entry(miss).or_default() += 1;
        let kept = st
            .row
            .examples
            .iter()
            .filter(|e| e.starts_with(miss.name()))
            .count();
        if kept < EXAMPLES {
            st.row.examples.push(format!(
                "{}: reference {at} pa {pa:#x} {} QEMU va {vaddr:#x}, replay pid {rpid:?} va {:?}",
                miss.name(),
                if write { "W" } else { "R" },
                rva.map(|v| format!("{v:#x}"))
            ));
        }
        let cause = if !st.traced {
            Some(Cause::Untraced)
        } else if !st.first_record_seen {
            Some(Cause::BeforeFirstRecord)
        } else if st.exit_seen {
            Some(Cause::AfterExit)
        } else {
            None
        };
        match cause {
            Some(c) => *st.row.causes.entry((miss, c)).or_default() += 1,
            None => st.pending.push((
                miss,
                if crossing {
                    Cause::PageCrossing
                } else if shared_frames.contains(&frame) {
                    Cause::SharedFrame
                } else {
                    Cause::Other
                },
            )),
        }
        at += 1;
    }
    assert!(
        replay.next::<1>().is_none(),
        "the replay has more rows than QEMU's record has references ({at})"
    );
    for st in states.values_mut() {
        st.settle(false);
    }
    (states, at)
}

fn run_workloads(vcpus: u32) -> Outcome {
    let kit = kit();
    let started = Instant::now();
    let dir = scratch(&format!("workloads-{vcpus}"));
    let out = dir.join("run");
    let mut args: Vec<String> = [
        "qemu",
        "--kit",
        s(kit),
        "--out",
        s(&out),
        "--cache",
        "off",
        "--truth-csv",
        "--timeout",
        "240",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if vcpus != 1 {
        args.extend(["--smp".to_string(), vcpus.to_string()]);
    }
    for p in PROGRAMS.iter().chain(&["hmtt_workloads"]) {
        args.extend(["--add".to_string(), s(&kit.join(p)).to_string()]);
    }
    args.extend(["--", "hmtt_workloads", PIPELINE_N].map(String::from));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let booted = hmtt(&argv);
    let console = String::from_utf8_lossy(&booted.stdout).into_owned();
    assert!(
        booted.status.success(),
        "hmtt qemu failed\nstdout:\n{console}\nstderr:\n{}",
        String::from_utf8_lossy(&booted.stderr)
    );
    let qemu_time = started.elapsed();
    assert!(
        console.contains("HMTT-WL-DONE"),
        "the workloads ran to the end:\n{console}"
    );
    // Each program's own check of what it read.
    for program in ["shared", "threads", "cow", "file", "pipe"] {
        let results: Vec<&str> = console
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with(&format!("HMTT-WL {program} ")) && l.contains(" bad="))
            .collect();
        assert!(
            results.len() == 1 && results[0].contains(" bad=0"),
            "{program}'s result {results:?} in the console:\n{console}"
        );
    }
    let mut labels: BTreeMap<u32, (String, String)> = BTreeMap::new();
    for l in console.lines() {
        if let Some(rest) = l.trim().strip_prefix("HMTT-WL-PID ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            assert_eq!(f.len(), 3, "{l:?}");
            let pid: u32 = f[2].parse().unwrap();
            assert!(
                labels
                    .insert(pid, (f[0].to_string(), f[1].to_string()))
                    .is_none(),
                "pid {pid} printed twice"
            );
        }
    }
    assert_eq!(labels.len(), 11, "the processes' pids: {labels:?}");
    let script = *labels
        .iter()
        .find(|(_, (p, _))| p == "script")
        .expect("the script's pid")
        .0;

    let trace = dir.join("run.hmtttrace");
    let merged = hmtt(&["merge", s(&out), "-o", s(&trace)]);
    assert!(
        merged.status.success(),
        "merge: {}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let log_path = out.join("pagetable.hmttlog");
    let replay_csv = dir.join("replay.csv");
    // The comparison with QEMU's record judges the attribution here, not
    // the replay's own threshold (its measure, the share of references to
    // traced processes' frames given by rule, is printed with the report).
    let replayed = hmtt(&[
        "replay",
        s(&trace),
        "--log",
        s(&log_path),
        "--csv",
        s(&replay_csv),
        "--max-unattributed",
        "100",
    ]);
    let replay_report = format!(
        "{}{}",
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert!(replayed.status.success(), "replay:\n{replay_report}");
    let replay_time = started.elapsed();

    let log = read_image(&std::fs::read(&log_path).unwrap())
        .unwrap_or_else(|(at, e)| panic!("the log, record {at:?}: {e}"))
        .records;
    let (mut states, references) = compare(&out.join("qemu-refs.csv"), &replay_csv, &log, script);

    // The processes compared: every pid QEMU saw make a user-space
    // reference while the script ran, besides /init (pid 1), which waits
    // for it; labelled by what they printed.
    let (script_first, script_last) = states
        .get(&script)
        .map(|st| (st.first, st.last))
        .expect("QEMU saw the script's pid run");
    for pid in labels.keys() {
        assert!(
            states.contains_key(pid),
            "pid {pid} ({:?}) made no user-space reference QEMU saw",
            labels[pid]
        );
    }
    states.retain(|&pid, st| {
        labels.contains_key(&pid)
            || (pid != 1 && st.first <= script_last && st.last >= script_first)
    });
    let rows: Vec<PidRow> = states
        .into_iter()
        .map(|(pid, st)| {
            let (program, role) = labels
                .get(&pid)
                .cloned()
                .unwrap_or(("?".into(), "?".into()));
            PidRow {
                program,
                role,
                pid,
                ..st.row
            }
        })
        .collect();
    let done = started.elapsed();
    let mut report = String::new();
    let _ = writeln!(
        report,
        "{vcpus} vCPU(s): {references} references; hmtt qemu {:.0} s, merge and replay {:.0} s, comparison {:.0} s",
        qemu_time.as_secs_f64(),
        (replay_time - qemu_time).as_secs_f64(),
        (done - replay_time).as_secs_f64()
    );
    let _ = writeln!(report, "replay:\n{replay_report}");
    for row in &rows {
        for e in &row.examples {
            let _ = writeln!(report, "pid {}: {e}", row.pid);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Outcome {
        vcpus,
        rows,
        report,
    }
}

/// The outcome of the boot with `vcpus` vCPUs, run once for every test
/// that asks for it; a failed boot is every asking test's failure.
fn outcome(vcpus: u32) -> &'static Outcome {
    static BOOTS: [OnceLock<Result<Outcome, String>>; 2] = [OnceLock::new(), OnceLock::new()];
    // The two boots may run at once, on the test harness's threads: each
    // QEMU runs all its vCPUs in one host thread.
    let slot = &BOOTS[vcpus as usize - 1];
    let got = slot.get_or_init(|| {
        std::panic::catch_unwind(|| run_workloads(vcpus)).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        })
    });
    match got {
        Ok(o) => o,
        Err(e) => panic!("the boot with {vcpus} vCPU(s) failed: {e}"),
    }
}

/// The must-show for `program`'s processes at `vcpus` vCPUs.
fn check(program: &str, vcpus: u32, processes: usize) {
    let o = outcome(vcpus);
    println!("{}\n{}", o.table(), o.report);
    let rows: Vec<&PidRow> = o.rows.iter().filter(|r| r.program == program).collect();
    assert_eq!(
        rows.len(),
        processes,
        "{program}'s processes:\n{}",
        o.table()
    );
    let mut failed = Vec::new();
    for r in &rows {
        assert!(
            r.qemu >= MIN_REFERENCES,
            "pid {} ({program} {}) made only {} user-space references",
            r.pid,
            r.role,
            r.qemu
        );
        if r.exact_share() < MIN_EXACT || r.miss(Miss::WrongVa) > MAX_WRONG_VA {
            failed.push(r.line());
        }
    }
    assert!(
        failed.is_empty(),
        "{vcpus} vCPU(s): under {}% exact or a wrong virtual address:\n{TABLE_HEADER}\n{}\n\n{}{}",
        100.0 * MIN_EXACT,
        failed.join("\n"),
        o.table(),
        o.report
    );
}

/// Every process the script forked is one of its programs'.
fn check_no_stranger(vcpus: u32) {
    let o = outcome(vcpus);
    let strangers: Vec<String> = o
        .rows
        .iter()
        .filter(|r| r.program == "?")
        .map(|r| r.line())
        .collect();
    assert!(
        strangers.is_empty(),
        "processes QEMU saw run during the script that printed no pid:\n{}",
        strangers.join("\n")
    );
}

#[test]
fn fork_with_a_shared_region() {
    check("shared", 1, 3);
}

#[test]
fn pthreads() {
    check("threads", 1, 1);
}

#[test]
fn copy_on_write_after_fork() {
    check("cow", 1, 3);
}

#[test]
fn file_backed_mmap() {
    check("file", 1, 1);
}

#[test]
fn shell_pipeline() {
    check("script", 1, 1);
    check("pipe", 1, 2);
    check_no_stranger(1);
}

#[test]
fn two_vcpus_fork_with_a_shared_region() {
    check("shared", 2, 3);
}

#[test]
fn two_vcpus_pthreads() {
    check("threads", 2, 1);
}

#[test]
fn two_vcpus_copy_on_write_after_fork() {
    check("cow", 2, 3);
}

#[test]
fn two_vcpus_file_backed_mmap() {
    check("file", 2, 1);
}

#[test]
fn two_vcpus_shell_pipeline() {
    check("script", 2, 1);
    check("pipe", 2, 2);
    check_no_stranger(2);
}
