//! Issue 41, defects 3 and 12: an unfinished trace or virtual trace (a
//! killed `merge` or `replay --out`) is refused by every reader with exit
//! status 4 unless `--allow-incomplete`, which reads it with a warning; and
//! a damaged trace or virtual trace is refused (docs/format.md §11.1,
//! §11.2), never read into a different output with exit status 0.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod support;
use support::cli::{hmtt, ok, s, scratch, simulate_and_merge};

/// A small run merged and replayed, made once for both tests: (sim dir,
/// trace, virtual trace), the trace spanning two checksum blocks of 4096
/// records.
fn small_run() -> &'static (PathBuf, PathBuf, PathBuf) {
    static RUN: OnceLock<(PathBuf, PathBuf, PathBuf)> = OnceLock::new();
    RUN.get_or_init(|| {
        // One fixed place, cleared each run, so runs leave no heaps behind.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-checksums");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (run, trace) =
            simulate_and_merge(&dir, &["--workload", "quicksort", "--n", "80000"], &[]);
        let log = run.join("pagetable.hmttlog");
        let vtrace = dir.join("run.hmttvtrace");
        ok(&["replay", s(&trace), "--log", s(&log), "--out", s(&vtrace)]);
        let records = std::fs::metadata(&trace).unwrap().len() / 16;
        assert!(
            records > 4096,
            "the trace spans two blocks ({records} records)"
        );
        (run, trace, vtrace)
    })
}

/// `file` as a killed writer leaves it: the placeholder header (no
/// complete flag, no counts; the tick length kept unless `tick_ps` says
/// otherwise) and the records cut inside record `records`.
fn as_killed(file: &[u8], record_len: usize, records: usize, tick_ps: Option<u16>) -> Vec<u8> {
    let mut f = file[..160 + records * record_len + record_len / 2].to_vec();
    f[14] &= !1;
    f[16..48].fill(0);
    f[56..64].fill(0);
    f[80..96].fill(0);
    f[128..160].fill(0);
    if let Some(t) = tick_ps {
        f[72..74].copy_from_slice(&t.to_le_bytes());
    }
    f
}

/// Every reader's command line for `file` (`log` for replay).
fn readers<'a>(file: &'a str, log: &'a str, out: &'a str, virt: bool) -> Vec<Vec<&'a str>> {
    let mut cmds = vec![
        vec!["dump", file, "--limit", "5"],
        vec!["analyze", file],
        vec!["export", file, "--format", "csv", "-o", out],
    ];
    if !virt {
        cmds.push(vec!["stats", file]);
        cmds.push(vec!["replay", file, "--log", log]);
        cmds.push(vec!["pack", file, "-o", out]);
    }
    cmds
}

#[test]
fn an_unfinished_trace_is_refused_unless_allowed_then_read_with_a_warning() {
    let dir = scratch("killed");
    let (run, trace, vtrace) = small_run().clone();
    let log = run.join("pagetable.hmttlog");
    let cut = dir.join("cut.hmtttrace");
    std::fs::write(
        &cut,
        as_killed(&std::fs::read(&trace).unwrap(), 16, 3000, None),
    )
    .unwrap();
    let vcut = dir.join("cut.hmttvtrace");
    std::fs::write(
        &vcut,
        as_killed(&std::fs::read(&vtrace).unwrap(), 32, 1000, None),
    )
    .unwrap();
    let out = dir.join("out");
    for (file, virt, records) in [(&cut, false, 3000), (&vcut, true, 1000)] {
        for cmd in readers(s(file), s(&log), s(&out), virt) {
            let refused = hmtt(&cmd);
            let stderr = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(refused.status.code(), Some(4), "{cmd:?}: {stderr}");
            assert!(
                stderr.contains(s(file))
                    && stderr.contains("is incomplete")
                    && stderr.contains(&format!("holds {records} whole records"))
                    && stderr.contains("--allow-incomplete"),
                "{cmd:?}: {stderr}"
            );
            // (An output created before the input is checked is the
            // atomic-output change's to remove.)
            let _ = std::fs::remove_file(&out);

            let allowed = [cmd.as_slice(), &["--allow-incomplete"]].concat();
            let read = hmtt(&allowed);
            let stderr = String::from_utf8_lossy(&read.stderr);
            assert!(read.status.success(), "{allowed:?}: {stderr}");
            assert!(
                stderr.contains("WARN") && stderr.contains("is incomplete"),
                "{allowed:?}: {stderr}"
            );
            let _ = std::fs::remove_file(&out);
        }
    }
    // What is whole is read, with the times of the kept tick length.
    let stats = ok(&["stats", s(&cut), "--allow-incomplete"]);
    assert!(
        stats.contains("3000 records") && stats.contains("INCOMPLETE"),
        "{stats}"
    );
    let whole = ok(&["dump", s(&trace), "--csv", "--limit", "3000"]);
    let part = ok(&["dump", s(&cut), "--csv", "--allow-incomplete"]);
    let strip_events = |t: &str| -> Vec<String> {
        // An unfinished file has no name table: events show as numbers.
        t.lines()
            .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string())
            .collect()
    };
    assert_eq!(strip_events(&part), strip_events(&whole));

    // A tick length of 0 (an older writer's placeholder) is never taken as
    // 1 ps: what needs times is refused, pack still packs.
    let zero = dir.join("zero.hmtttrace");
    std::fs::write(
        &zero,
        as_killed(&std::fs::read(&trace).unwrap(), 16, 3000, Some(0)),
    )
    .unwrap();
    for cmd in [
        vec!["analyze", s(&zero), "--allow-incomplete"],
        vec!["stats", s(&zero), "--allow-incomplete"],
        vec!["dump", s(&zero), "--allow-incomplete"],
    ] {
        let r = hmtt(&cmd);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{cmd:?}: {stderr}");
        assert!(
            stderr.contains("tick length is unknown"),
            "{cmd:?}: {stderr}"
        );
    }
    ok(&["pack", s(&zero), "-o", s(&out), "--allow-incomplete"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// xorshift64*, so the positions are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Mutates `count` random bytes of `original` one at a time (each into a
/// different value) at `path`, and runs each command of `cmds` in turn on
/// it: every run fails or prints exactly what it printed for the original.
fn mutations_are_refused_or_harmless(
    original: &[u8],
    path: &Path,
    cmds: &[Vec<&str>],
    count: usize,
    seed: u64,
) -> (usize, usize) {
    std::fs::write(path, original).unwrap();
    let baseline: Vec<String> = cmds.iter().map(|c| ok(c)).collect();
    let mut rng = Rng(seed);
    let (mut refused, mut same) = (0, 0);
    for i in 0..count {
        let at = (rng.next() % original.len() as u64) as usize;
        let flip = (rng.next() % 255 + 1) as u8;
        let mut damaged = original.to_vec();
        damaged[at] ^= flip;
        std::fs::write(path, &damaged).unwrap();
        let which = i % cmds.len();
        let out = hmtt(&cmds[which]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "byte {at} ^ {flip:#x}: {:?} panicked: {stderr}",
            cmds[which]
        );
        if out.status.success() {
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                baseline[which],
                "byte {at} ^ {flip:#x}: {:?} exits 0 with a different output",
                cmds[which]
            );
            same += 1;
        } else {
            refused += 1;
        }
    }
    (refused, same)
}

#[test]
fn random_byte_mutations_of_a_trace_and_a_virtual_trace_are_detected() {
    let dir = scratch("mutations");
    let (run, trace, vtrace) = small_run().clone();
    let log = run.join("pagetable.hmttlog");
    let m = dir.join("m.hmtttrace");
    let (refused, same) = mutations_are_refused_or_harmless(
        &std::fs::read(&trace).unwrap(),
        &m,
        &[
            vec!["dump", s(&m), "--csv"],
            vec!["stats", s(&m)],
            vec!["analyze", s(&m)],
            vec!["replay", s(&m), "--log", s(&log)],
        ],
        200,
        0x41_0003,
    );
    eprintln!("trace: {refused} of 200 mutations refused, {same} harmless");
    assert!(refused > 190, "{refused} refused, {same} harmless");

    let vm = dir.join("m.hmttvtrace");
    let (refused, same) = mutations_are_refused_or_harmless(
        &std::fs::read(&vtrace).unwrap(),
        &vm,
        &[vec!["dump", s(&vm), "--csv"], vec!["analyze", s(&vm)]],
        200,
        0x41_0012,
    );
    eprintln!("virtual trace: {refused} of 200 mutations refused, {same} harmless");
    assert!(refused > 190, "{refused} refused, {same} harmless");

    // The error names the file, the block and its bytes.
    let mut damaged = std::fs::read(&trace).unwrap();
    damaged[160 + 5000 * 16 + 9] ^= 0x40;
    std::fs::write(&m, &damaged).unwrap();
    let r = hmtt(&["dump", s(&m)]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(s(&m))
            && stderr.contains("trace block 1 (records 4096..")
            && stderr.contains("bytes 65696..")
            && stderr.contains("fails its checksum"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
