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

/// rust-hdl's generated `verilog` checked: no `always @(*)` block reads a
/// signal before writing it ([`assert_no_read_before_write`]), and
/// `verilator --lint-only -Wall` with the given waiver files (names in
/// `hdl/verilog`) must pass with no warning left.
pub fn verilator_lint(name: &str, verilog: &str, waivers: &[&str]) {
    assert_no_read_before_write(name, verilog);
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

/// Every `always @(*)` block of rust-hdl's generated Verilog writes a
/// signal before it reads it. rust-hdl's simulator iterates a block to a
/// fixed point, but the Verilog runs it once per trigger, top to bottom,
/// and its own writes do not re-trigger it: a read ahead of the write sees
/// the previous evaluation's value (x at the first), so the generated
/// Verilog would differ from the RustHDL model. Returns the offenders as
/// `module: signal`.
pub fn reads_before_writes(verilog: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut module = "";
    let mut lines = verilog.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("module ") {
            module = rest.split('(').next().unwrap_or(rest);
        }
        if line.trim() != "always @(*) begin" {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let end = format!("{indent}end");
        let body: Vec<(Option<String>, Vec<String>)> = lines
            .by_ref()
            .take_while(|l| *l != end)
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(assignment)
            .collect();
        let written: std::collections::HashSet<&String> =
            body.iter().filter_map(|(lhs, _)| lhs.as_ref()).collect();
        let mut seen = std::collections::HashSet::new();
        for (lhs, reads) in &body {
            for r in reads {
                if written.contains(r) && !seen.contains(r) {
                    found.push(format!("{module}: {r}"));
                    seen.insert(r.clone());
                }
            }
            if let Some(lhs) = lhs {
                seen.insert(lhs.clone());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// One line of a generated block: the signal it assigns (`x = ...;` or
/// `x[...] = ...;`), if any, and the identifiers it reads, sized literals
/// (`32'h1f`) left out.
fn assignment(line: &str) -> (Option<String>, Vec<String>) {
    let text = line.trim();
    let mut idents = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut lhs_end = None;
    while let Some((i, c)) = chars.next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut j = i + c.len_utf8();
            while let Some(&(k, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' || d == '$' {
                    j = k + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            idents.push((i, text[i..j].to_string()));
        } else if c.is_ascii_digit() {
            // A number, and a sized literal's base and digits with it.
            while let Some(&(_, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '\'' || d == '_' {
                    chars.next();
                } else {
                    break;
                }
            }
        } else if c == '=' && lhs_end.is_none() {
            let before = text[..i].chars().last();
            let after = text[i + 1..].chars().next();
            if !matches!(before, Some('=' | '!' | '<' | '>')) && after != Some('=') {
                lhs_end = Some(i);
            }
        }
    }
    const KEYWORDS: [&str; 6] = ["begin", "end", "if", "else", "case", "endcase"];
    let is_signal = |s: &str| !KEYWORDS.contains(&s);
    let lhs = lhs_end.and_then(|e| {
        let first = idents.iter().find(|(i, s)| *i < e && is_signal(s))?;
        // `if (...) x = ...` does not occur: rust-hdl puts `begin` after `if`.
        text.starts_with(first.1.as_str()).then(|| first.1.clone())
    });
    let reads = idents
        .into_iter()
        .filter(|(i, s)| is_signal(s) && !(lhs.as_deref() == Some(s.as_str()) && *i == 0))
        .map(|(_, s)| s)
        .collect();
    (lhs, reads)
}

/// [`reads_before_writes`] finds nothing in `verilog`; it does find the
/// read in a block that reads a signal before writing it.
pub fn assert_no_read_before_write(name: &str, verilog: &str) {
    let stale = "module m(a, y);\n    always @(*) begin\n        y = b & a;\n        b = ~a;\n    end\nendmodule\n";
    assert_eq!(reads_before_writes(stale), ["m: b"], "the scan itself");
    let found = reads_before_writes(verilog);
    assert!(
        found.is_empty(),
        "{name}: signals read before their write in an always @(*) (the Verilog would see the previous evaluation's value): {found:?}"
    );
}
