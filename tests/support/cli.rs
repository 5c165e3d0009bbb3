//! Running the built `hmtt` binary, and the simulated runs that many tests
//! start from.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `hmtt args`, whatever its outcome.
pub fn hmtt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hmtt"))
        .args(args)
        .output()
        .expect("the hmtt binary runs")
}

fn assert_succeeded(args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "hmtt {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn utf8(bytes: Vec<u8>, stream: &str) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("hmtt's {stream} is not UTF-8: {e}"))
}

/// `hmtt args`, which must succeed; its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = hmtt(args);
    assert_succeeded(args, &out);
    utf8(out.stdout, "stdout")
}

/// `hmtt args`, which must succeed; (stdout, stderr).
pub fn ok_with_stderr(args: &[&str]) -> (String, String) {
    let out = hmtt(args);
    assert_succeeded(args, &out);
    (utf8(out.stdout, "stdout"), utf8(out.stderr, "stderr"))
}

/// `hmtt args`, which must fail without a panic; its stderr.
pub fn fails(args: &[&str]) -> String {
    let out = hmtt(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "hmtt {args:?} succeeded");
    assert!(
        !stderr.contains("panicked"),
        "hmtt {args:?} panicked:\n{stderr}"
    );
    stderr
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// A fresh, empty temporary directory named after the test file, the
/// process and `name`, removed when dropped unless the test is failing
/// (its files are kept to look at).
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "hmtt-{}-{}-{name}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A test's temporary directory ([`scratch`]): a suite run would
/// otherwise leave gigabytes of simulated runs in the temporary directory.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `hmtt sim` options of a run with several processes, remaps and DMA on
/// 2 boards of 2 ports, the cache model off.
pub const MIX_ON_2_BOARDS: [&str; 10] = [
    "--workload",
    "mix",
    "--n",
    "16K",
    "--cache",
    "off",
    "--boards",
    "2",
    "--ports",
    "2",
];

/// `hmtt sim sim_args` into `dir/run`; returns that directory.
pub fn simulate(dir: &Path, sim_args: &[&str]) -> PathBuf {
    let sim = dir.join("run");
    ok(&[&["sim"], sim_args, &["--out", s(&sim)]].concat());
    sim
}

/// `hmtt merge` of the run in `sim` with `merge_args` into
/// `dir/run.hmtttrace`; returns that trace.
pub fn merge_run(dir: &Path, sim: &Path, merge_args: &[&str]) -> PathBuf {
    let trace = dir.join("run.hmtttrace");
    ok(&[&["merge", s(sim), "-o", s(&trace), "--quiet"], merge_args].concat());
    trace
}

/// [`simulate`] then [`merge_run`]: (sim dir, trace).
pub fn simulate_and_merge(
    dir: &Path,
    sim_args: &[&str],
    merge_args: &[&str],
) -> (PathBuf, PathBuf) {
    let sim = simulate(dir, sim_args);
    let trace = merge_run(dir, &sim, merge_args);
    (sim, trace)
}

/// The run of [`MIX_ON_2_BOARDS`] merged: (sim dir, trace).
pub fn mix_merged_on_2_boards(dir: &Path) -> (PathBuf, PathBuf) {
    simulate_and_merge(dir, &MIX_ON_2_BOARDS, &[])
}

/// The run of [`MIX_ON_2_BOARDS`] merged with its events file and the
/// boards' interleaving (4 KiB): (sim dir, trace).
pub fn mix_merged_with_events(dir: &Path) -> (PathBuf, PathBuf) {
    let sim = simulate(dir, &MIX_ON_2_BOARDS);
    let events = sim.join("events.toml");
    let trace = merge_run(
        dir,
        &sim,
        &["--events", s(&events), "--interleave-shift", "12"],
    );
    (sim, trace)
}

/// `hmtt pack` of `trace` into `archive` in blocks of 1000 records, so that
/// a short trace spans many; its stdout.
pub fn pack_in_small_blocks(trace: &Path, archive: &Path) -> String {
    ok(&[
        "pack",
        s(trace),
        "-o",
        s(archive),
        "--block-records",
        "1000",
    ])
}
