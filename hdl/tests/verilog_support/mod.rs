//! What the Verilog tests share: where the testbenches and lint waivers
//! live, a scratch directory per test, and the Verilator lint itself.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `hdl/verilog`: testbenches and lint waivers.
pub fn verilog_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("verilog")
}

/// A fresh scratch directory for one test of this process.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hmtt_hdl_{name}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Fails the test with a clear message when an external tool is missing.
pub fn require_tool(name: &str) {
    let found = Command::new(name).arg("--version").output().is_ok()
        || Command::new(name).arg("-V").output().is_ok();
    assert!(found, "`{name}` not found: install it (scripts/setup.sh)");
}

/// `verilator --lint-only -Wall` of `verilog` with the given waiver files
/// (names in `hdl/verilog`): it must pass with no warning left.
pub fn verilator_lint(name: &str, verilog: &str, waivers: &[&str]) {
    require_tool("verilator");
    let dir = work_dir(name);
    let top = dir.join("top.v");
    std::fs::write(&top, verilog).unwrap();
    let out = Command::new("verilator")
        .arg("--lint-only")
        .arg("-Wall")
        .args(waivers.iter().map(|w| verilog_dir().join(w)))
        .arg(&top)
        .current_dir(&dir)
        .output()
        .expect("run verilator");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && !text.contains("%Warning"),
        "verilator lint of {name}:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
