//! Trace files (`R|W <address> [size] [pid]` lines, or valgrind lackey
//! output), checked once whole and then read as the run goes.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::{Op, OpResult, Workload, WorkloadError, FIRST_PID};

/// Format of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// `R|W <address> [size] [pid]` lines.
    ReadWrite,
    /// Valgrind `--tool=lackey --trace-mem=yes` output.
    Lackey,
}

/// The format a trace file is read in, as `--trace-format` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceFormatChoice {
    /// Guessed from the first record line.
    #[default]
    Auto,
    /// `R|W <address> [size] [pid]` lines.
    Rw,
    /// Valgrind lackey output.
    Lackey,
}

impl TraceFormatChoice {
    /// The format chosen; `None`: guessed ([`guess_format`]).
    pub fn format(self) -> Option<TraceFormat> {
        match self {
            TraceFormatChoice::Auto => None,
            TraceFormatChoice::Rw => Some(TraceFormat::ReadWrite),
            TraceFormatChoice::Lackey => Some(TraceFormat::Lackey),
        }
    }
}

fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Parses a trace in `format` from text. `file` names the source in errors.
/// The result starts with an `Exec` and ends with an `Exit` for each pid
/// seen (in order of first appearance), so pages are unmapped at the end.
pub fn parse_trace(text: &str, format: TraceFormat, file: &str) -> Result<Vec<Op>, WorkloadError> {
    parse_trace_opts(text, format, file, false)
}

/// As [`parse_trace`]; `instructions` keeps lackey's instruction fetches
/// (`I` lines) as reads.
pub fn parse_trace_opts(
    text: &str,
    format: TraceFormat,
    file: &str,
    instructions: bool,
) -> Result<Vec<Op>, WorkloadError> {
    let mut parser = TraceParser::new(format, file, instructions);
    let mut ops = Vec::new();
    for raw in text.lines() {
        parser.line(raw, &mut ops)?;
    }
    parser.finish(&mut ops);
    Ok(ops)
}

/// Turns trace lines into operations, one line at a time: an `Exec` before
/// a pid's first reference, an `Exit` for every pid at the end.
struct TraceParser {
    format: TraceFormat,
    file: String,
    instructions: bool,
    line_no: usize,
    pids: Vec<u32>,
}

impl TraceParser {
    fn new(format: TraceFormat, file: &str, instructions: bool) -> TraceParser {
        TraceParser {
            format,
            file: file.to_string(),
            instructions,
            line_no: 0,
            pids: Vec::new(),
        }
    }

    fn err(&self, message: String) -> WorkloadError {
        WorkloadError::Parse {
            file: self.file.clone(),
            line: self.line_no,
            message,
        }
    }

    /// The operations of the next line, appended to `ops`.
    fn line(&mut self, raw: &str, ops: &mut impl Extend<Op>) -> Result<(), WorkloadError> {
        self.line_no += 1;
        let mut refs: [Option<(u64, bool, u32)>; 2] = [None, None];
        let mut pid = FIRST_PID;
        match self.format {
            TraceFormat::ReadWrite => {
                let body = raw.split('#').next().unwrap_or("");
                let mut it = body.split_ascii_whitespace();
                let Some(kind) = it.next() else {
                    return Ok(());
                };
                let write = match kind {
                    "R" | "r" => false,
                    "W" | "w" => true,
                    other => return Err(self.err(format!("expected R or W, found '{other}'"))),
                };
                let addr = it
                    .next()
                    .ok_or_else(|| self.err("missing address".into()))?;
                let addr = parse_number(addr)
                    .ok_or_else(|| self.err(format!("address '{addr}' is not a number")))?;
                let size = match it.next() {
                    None => 8,
                    Some(s) => parse_number(s)
                        .filter(|&v| (1..=1 << 20).contains(&v))
                        .ok_or_else(|| self.err(format!("size '{s}' is not in 1..=1048576")))?
                        as u32,
                };
                if let Some(p) = it.next() {
                    pid = parse_number(p)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| self.err(format!("pid '{p}' is not a 32-bit number")))?;
                }
                if let Some(extra) = it.next() {
                    return Err(self.err(format!("unexpected trailing text '{extra}'")));
                }
                refs[0] = Some((addr, write, size));
            }
            TraceFormat::Lackey => {
                let trimmed = raw.trim();
                if trimmed.is_empty() || trimmed.starts_with("==") || trimmed.starts_with("--") {
                    return Ok(());
                }
                let (kind, rest) = trimmed.split_at(1);
                let rest = rest.trim();
                let (addr, size) = rest.split_once(',').ok_or_else(|| {
                    self.err(format!(
                        "expected '<kind> <hex address>,<size>', found '{trimmed}'"
                    ))
                })?;
                let addr = u64::from_str_radix(addr.trim(), 16).map_err(|_| {
                    self.err(format!("address '{}' is not hexadecimal", addr.trim()))
                })?;
                let size: u32 = size
                    .trim()
                    .parse()
                    .ok()
                    .filter(|&s| s >= 1)
                    .ok_or_else(|| {
                        self.err(format!("size '{}' is not a positive number", size.trim()))
                    })?;
                match kind {
                    "I" => {
                        if self.instructions {
                            refs[0] = Some((addr, false, size));
                        }
                    }
                    "L" => refs[0] = Some((addr, false, size)),
                    "S" => refs[0] = Some((addr, true, size)),
                    "M" => {
                        refs[0] = Some((addr, false, size));
                        refs[1] = Some((addr, true, size));
                    }
                    other => {
                        return Err(self.err(format!(
                            "unknown lackey record '{other}' (expected I, L, S or M)"
                        )))
                    }
                }
            }
        }
        for (vaddr, write, size) in refs.into_iter().flatten() {
            if !self.pids.contains(&pid) {
                self.pids.push(pid);
                ops.extend([Op::Exec {
                    pid,
                    name: "trace".into(),
                }]);
            }
            ops.extend([Op::Access {
                pid,
                vaddr,
                write,
                size,
            }]);
        }
        Ok(())
    }

    /// The exits at the end of the trace.
    fn finish(&mut self, ops: &mut impl Extend<Op>) {
        ops.extend(self.pids.drain(..).map(|pid| Op::Exit { pid }));
    }
}

/// A trace file's operations, read and parsed as they are taken.
pub(super) struct TraceFileOps {
    reader: Option<std::io::BufReader<std::fs::File>>,
    /// Why the file could not be opened: the first item.
    open_error: Option<WorkloadError>,
    parser: TraceParser,
    pending: VecDeque<Op>,
    line: String,
}

impl TraceFileOps {
    pub(super) fn open(path: &Path, format: TraceFormat, instructions: bool) -> TraceFileOps {
        let file = path.display().to_string();
        let (reader, open_error) = match std::fs::File::open(path) {
            Ok(f) => (Some(std::io::BufReader::with_capacity(1 << 20, f)), None),
            Err(error) => (
                None,
                Some(WorkloadError::Io {
                    file: file.clone(),
                    error,
                }),
            ),
        };
        TraceFileOps {
            reader,
            open_error,
            parser: TraceParser::new(format, &file, instructions),
            pending: VecDeque::new(),
            line: String::new(),
        }
    }

    /// Reads lines until some operations are pending or the file ends.
    fn fill(&mut self) -> Result<(), WorkloadError> {
        use std::io::BufRead;
        let Some(reader) = self.reader.as_mut() else {
            return Ok(());
        };
        while self.pending.is_empty() {
            self.line.clear();
            let n = reader
                .read_line(&mut self.line)
                .map_err(|error| WorkloadError::Io {
                    file: self.parser.file.clone(),
                    error,
                })?;
            if n == 0 {
                self.reader = None;
                self.parser.finish(&mut self.pending);
                break;
            }
            self.parser.line(&self.line, &mut self.pending)?;
        }
        Ok(())
    }
}

impl Iterator for TraceFileOps {
    type Item = OpResult;

    fn next(&mut self) -> Option<OpResult> {
        if let Some(e) = self.open_error.take() {
            return Some(Err(e));
        }
        loop {
            if let Some(op) = self.pending.pop_front() {
                return Some(Ok(op));
            }
            self.reader.as_ref()?;
            if let Err(e) = self.fill() {
                // Nothing more after an error.
                self.reader = None;
                self.pending.clear();
                return Some(Err(e));
            }
        }
    }
}

/// Reads and parses a trace file; the format is guessed from the first
/// meaningful line when `format` is `None`.
pub fn read_trace(path: &Path, format: Option<TraceFormat>) -> Result<Workload, WorkloadError> {
    read_trace_opts(path, format, false)
}

/// As [`read_trace`]; `instructions` keeps lackey's instruction fetches.
/// The file is read through once here, in bounded memory, so that a bad
/// line is reported (file and line) before any run; runs read it again as
/// they go ([`Workload::TraceFile`]).
pub fn read_trace_opts(
    path: &Path,
    format: Option<TraceFormat>,
    instructions: bool,
) -> Result<Workload, WorkloadError> {
    use std::io::Read;
    let file = path.display().to_string();
    let io = |error| WorkloadError::Io {
        file: file.clone(),
        error,
    };
    let format = match format {
        Some(f) => f,
        None => {
            let mut head = Vec::new();
            std::fs::File::open(path)
                .map_err(io)?
                .take(1 << 16)
                .read_to_end(&mut head)
                .map_err(io)?;
            guess_format(&String::from_utf8_lossy(&head))
        }
    };
    // Checked whole, keeping nothing.
    let mut count = 0u64;
    for op in TraceFileOps::open(path, format, instructions) {
        op?;
        count += 1;
    }
    tracing::debug!("{file}: {count} operations");
    Ok(Workload::TraceFile {
        name: PathBuf::from(path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(file),
        path: path.to_path_buf(),
        format,
        instructions,
    })
}

/// Lackey if the first record line looks like ` L addr,size`.
pub fn guess_format(text: &str) -> TraceFormat {
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with("==") {
            continue;
        }
        return if t.contains(',') {
            TraceFormat::Lackey
        } else {
            TraceFormat::ReadWrite
        };
    }
    TraceFormat::ReadWrite
}
