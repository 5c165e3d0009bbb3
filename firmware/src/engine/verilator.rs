//! Building the core's simulator with Verilator (`--binary --timing`: the
//! testbench `hmtt_hdl::testbench::TESTBENCH` drives the clocks with
//! delays), cached in the work directory by a hash of everything that goes
//! into it, so a second run of the same core and constants does not
//! compile again.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use hmtt_hdl::testbench::{board_wrapper, HardwareCounter, TESTBENCH, TESTBENCH_MODULE};

use crate::error::FirmwareError;
use crate::tools::Tool;

pub const VERILATOR: Tool = Tool {
    program: "verilator",
    install_hint: "apt-get install verilator (version 5 or later, for --timing)",
};

/// Name of the simulator binary in the build's `obj_dir`.
const BINARY: &str = "board_sim";
/// Written last: a build directory without it is incomplete.
const COMPLETE: &str = "complete";

/// A compiled simulator.
#[derive(Debug, Clone)]
pub struct Simulator {
    pub binary: PathBuf,
    /// The build directory (sources, log, `obj_dir`).
    pub dir: PathBuf,
    /// Seconds the build took; `None` when it came from the cache.
    pub build_seconds: Option<f64>,
}

/// FNV-1a, 64 bits: a stable hash for the cache key (std's hasher is not
/// stable across Rust releases).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&(part.len() as u64).to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn verilator_version(program: &Path) -> Result<String, FirmwareError> {
    let out = Command::new(program)
        .arg("--version")
        .output()
        .map_err(|e| FirmwareError::io("running", program, e))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The flags of the build; `jobs` C++ compilations in parallel.
fn flags(lanes: usize, ports: usize, jobs: usize) -> Vec<String> {
    let mut f: Vec<String> = [
        "--binary",
        "--timing",
        "-O3",
        // The generated core is lint-checked elsewhere (hdl tests); here
        // only errors matter.
        "-Wno-fatal",
        "-Wno-lint",
        "-Wno-style",
        "-Wno-UNOPTFLAT",
        // Verilator's makefile compiles with -Os; -O2 simulates a quarter
        // faster (ECP5 core, 2.7 M fabric clocks: 2.6 against 3.4 CPU s)
        // for a few seconds more of build.
        "-MAKEFLAGS",
        "OPT_FAST=-O2 OPT_GLOBAL=-O2",
        "--top-module",
        TESTBENCH_MODULE,
        "-o",
        BINARY,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    f.push(format!("-DLANES={lanes}"));
    f.push(format!("-DPORTS={ports}"));
    f.push(format!("-DCOUNTERS={}", HardwareCounter::ALL.len()));
    f.push("-j".into());
    f.push(jobs.to_string());
    f.extend(["tb.v", "wrapper.v", "top.v"].map(String::from));
    f
}

/// Builds (or finds in `work`) the simulator of the core Verilog `verilog`
/// with `lanes` lanes and `ports` ports.
pub fn build(
    work: &Path,
    verilog: &str,
    lanes: usize,
    ports: usize,
) -> Result<Simulator, FirmwareError> {
    let program = VERILATOR.locate()?;
    let version = verilator_version(&program)?;
    let wrapper = board_wrapper(lanes, ports);
    // The job count does not change the binary: it stays out of the key.
    let key_flags = flags(lanes, ports, 1).join(" ");
    let key = fnv1a(&[
        version.as_bytes(),
        key_flags.as_bytes(),
        TESTBENCH.as_bytes(),
        wrapper.as_bytes(),
        verilog.as_bytes(),
    ]);
    let dir = work.join(format!("verilator-{key:016x}"));
    let binary = dir.join("obj_dir").join(BINARY);
    std::fs::create_dir_all(work).map_err(|e| FirmwareError::io("creating", work, e))?;
    // One build per key at a time, across processes.
    let lock_path = work.join(format!("verilator-{key:016x}.lock"));
    let lock =
        File::create(&lock_path).map_err(|e| FirmwareError::io("creating", &lock_path, e))?;
    lock.lock()
        .map_err(|e| FirmwareError::io("locking", &lock_path, e))?;
    if dir.join(COMPLETE).exists() && binary.exists() {
        tracing::info!(dir = %dir.display(), "Verilator simulator from the cache");
        return Ok(Simulator {
            binary,
            dir,
            build_seconds: None,
        });
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| FirmwareError::io("removing", &dir, e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| FirmwareError::io("creating", &dir, e))?;
    for (name, text) in [
        ("tb.v", TESTBENCH),
        ("wrapper.v", &wrapper),
        ("top.v", verilog),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| FirmwareError::io("writing", &path, e))?;
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Instant::now();
    VERILATOR.run(&flags(lanes, ports, jobs), &dir, &dir.join("verilator.log"))?;
    let seconds = started.elapsed().as_secs_f64();
    if !binary.exists() {
        return Err(FirmwareError::ToolFailed {
            tool: VERILATOR.program.into(),
            status: format!("exit 0 but no {}", binary.display()),
            log: dir.join("verilator.log"),
            tail: crate::tools::log_tail(&dir.join("verilator.log"), 25),
        });
    }
    let mut done =
        File::create(dir.join(COMPLETE)).map_err(|e| FirmwareError::io("writing", &dir, e))?;
    writeln!(done, "{version}\nbuilt in {seconds:.1} s")
        .map_err(|e| FirmwareError::io("writing", &dir, e))?;
    tracing::info!(seconds, dir = %dir.display(), "Verilator simulator built");
    Ok(Simulator {
        binary,
        dir,
        build_seconds: Some(seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_sees_every_part_and_its_boundaries() {
        let a = fnv1a(&[b"ab", b"c"]);
        assert_ne!(a, fnv1a(&[b"a", b"bc"]));
        assert_ne!(a, fnv1a(&[b"ab", b"d"]));
        assert_eq!(a, fnv1a(&[b"ab", b"c"]));
    }
}
