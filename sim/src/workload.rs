//! Workloads of the simulated machine: the paper's verification
//! micro-benchmarks, quicksort run on a simulated array, several processes
//! interleaved, a DMA device, and traces read from files.
//!
//! Every workload is a stream of [`Op`]s: virtual references `(pid, vaddr,
//! read/write, size)`, I-code points, buffer frees, process start and exit,
//! and DMA transfers. Streams are lazy, so a workload of any size costs no
//! memory beyond its own state.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Base of the first buffer of every process (its heap).
pub const HEAP_BASE: u64 = 0x0000_5555_0000_0000;
/// Virtual page size.
pub const PAGE: u64 = 4096;
/// First pid handed out to simulated processes.
pub const FIRST_PID: u32 = 1000;

/// One step of a workload's stream, or why the stream broke (a trace file
/// that changed or could not be read while the run read it).
pub type OpResult = Result<Op, WorkloadError>;
/// A workload's operation stream.
pub type OpStream = Box<dyn Iterator<Item = OpResult> + Send>;

/// Direction of a DMA transfer (format.md §8 numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaDir {
    /// The device reads memory (transmit).
    ToDevice,
    /// The device writes memory (receive).
    FromDevice,
}

/// One step of a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A process starts (exec).
    Exec { pid: u32, name: String },
    /// A load or store of `size` bytes at `vaddr`.
    Access {
        pid: u32,
        vaddr: u64,
        write: bool,
        size: u32,
    },
    /// A user I-code: the program touches a named user event.
    Event { pid: u32, name: String },
    /// The process frees (munmaps) `[vaddr, vaddr+len)`.
    Free { pid: u32, vaddr: u64, len: u64 },
    /// The process exits; everything still mapped is unmapped.
    Exit { pid: u32 },
    /// A device transfers `bytes` to or from a fresh kernel buffer.
    Dma {
        device: String,
        bytes: u64,
        dir: DmaDir,
    },
}

/// What a workload file or option could not say.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{file}:{line}: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("unknown workload '{0}' (known: {known})", known = Workload::NAMES.join(", "))]
    UnknownName(String),
    #[error("bad workload parameter: {0}")]
    Bad(String),
}

/// Format of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// `R|W <address> [size] [pid]` lines.
    ReadWrite,
    /// Valgrind `--tool=lackey --trace-mem=yes` output.
    Lackey,
}

/// A workload description; `ops` turns it into a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// Read `bytes` sequentially, `unit` bytes per reference, every `stride`.
    SeqRead { bytes: u64, unit: u32, stride: u64 },
    /// Write sequentially.
    SeqWrite { bytes: u64, unit: u32, stride: u64 },
    /// Write each unit then read it back.
    ReadAfterWrite { bytes: u64, unit: u32, stride: u64 },
    /// `count` reads of `unit` bytes at random unit-aligned offsets.
    RandomRead { bytes: u64, unit: u32, count: u64 },
    /// Quicksort of `n` random 32-bit integers, run on a simulated array.
    Quicksort { n: u64 },
    /// References read from a trace file as the run goes (checked whole
    /// once by [`read_trace`]), so a trace of any length costs no memory.
    TraceFile {
        name: String,
        path: PathBuf,
        format: TraceFormat,
        instructions: bool,
    },
    /// A device doing `transfers` DMA transfers of `bytes` each, alternating
    /// direction (to device first).
    Dma { transfers: u64, bytes: u64 },
    /// Several workloads at once, one process (or device) each, interleaved
    /// `quantum` operations at a time in a seeded random order.
    Processes { parts: Vec<Workload>, quantum: u32 },
    /// Run `inner` `rounds` times in one process, each round on a fresh
    /// buffer at a new virtual address, freeing the previous one (frames go
    /// back to the allocator and are reused, by this or other processes).
    Rounds { inner: Box<Workload>, rounds: u32 },
}

impl Default for Workload {
    fn default() -> Self {
        Workload::SeqRead {
            bytes: 64 << 10,
            unit: 64,
            stride: 64,
        }
    }
}

impl Workload {
    /// Names accepted by [`Workload::by_name`].
    pub const NAMES: &'static [&'static str] = &[
        "seq-read",
        "seq-write",
        "read-after-write",
        "random-read",
        "strided",
        "quicksort",
        "dma",
        "mix",
    ];

    /// A workload by its command-line name. `n` is the size in bytes (the
    /// element count for quicksort, the transfer count for dma), `unit` the
    /// reference size, `stride` the distance between references.
    pub fn by_name(name: &str, n: u64, unit: u32, stride: u64) -> Result<Workload, WorkloadError> {
        if unit == 0 || n == 0 {
            return Err(WorkloadError::Bad("size and unit must be above 0".into()));
        }
        let stride = stride.max(1);
        Ok(match name {
            "seq-read" => Workload::SeqRead {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            "seq-write" => Workload::SeqWrite {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            "read-after-write" | "raw" => Workload::ReadAfterWrite {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            "random-read" | "random" => Workload::RandomRead {
                bytes: n,
                unit,
                count: (n / u64::from(unit)).max(1),
            },
            "strided" => Workload::SeqRead {
                bytes: n,
                unit,
                stride,
            },
            "quicksort" => Workload::Quicksort { n },
            "dma" => Workload::Dma {
                transfers: n,
                bytes: 4 * PAGE,
            },
            "mix" => Workload::mix(n),
            other => return Err(WorkloadError::UnknownName(other.to_string())),
        })
    }

    /// Several processes that free and remap buffers, plus a DMA device:
    /// the workload of the replay tests. `bytes` sizes each buffer.
    pub fn mix(bytes: u64) -> Workload {
        let bytes = bytes.max(PAGE);
        Workload::Processes {
            parts: vec![
                Workload::Rounds {
                    inner: Box::new(Workload::SeqWrite {
                        bytes,
                        unit: 64,
                        stride: 64,
                    }),
                    rounds: 3,
                },
                Workload::Rounds {
                    inner: Box::new(Workload::ReadAfterWrite {
                        bytes,
                        unit: 8,
                        stride: 256,
                    }),
                    rounds: 2,
                },
                Workload::Quicksort { n: bytes / 16 },
                Workload::RandomRead {
                    bytes,
                    unit: 64,
                    count: bytes / 64,
                },
                Workload::Dma {
                    transfers: 4,
                    bytes: 2 * PAGE,
                },
            ],
            quantum: 64,
        }
    }

    /// `count` copies of this workload as interleaved processes.
    pub fn processes(self, count: u32, quantum: u32) -> Workload {
        if count <= 1 {
            return self;
        }
        Workload::Processes {
            parts: (0..count).map(|_| self.clone()).collect(),
            quantum,
        }
    }

    fn short_name(&self) -> &'static str {
        match self {
            Workload::SeqRead { .. } => "seq_read",
            Workload::SeqWrite { .. } => "seq_write",
            Workload::ReadAfterWrite { .. } => "read_after_write",
            Workload::RandomRead { .. } => "random_read",
            Workload::Quicksort { .. } => "quicksort",
            Workload::TraceFile { .. } => "trace",
            Workload::Dma { .. } => "dma",
            Workload::Processes { .. } => "processes",
            Workload::Rounds { inner, .. } => inner.short_name(),
        }
    }

    /// The operation stream; every process gets its own pid from
    /// [`FIRST_PID`] upward (trace files keep theirs). Only a trace file
    /// read during the run can yield an error.
    pub fn ops(&self, seed: u64) -> OpStream {
        let mut next_pid = FIRST_PID;
        self.ops_with(seed, &mut next_pid)
    }

    fn ops_with(&self, seed: u64, next_pid: &mut u32) -> OpStream {
        match self {
            Workload::TraceFile {
                path,
                format,
                instructions,
                ..
            } => Box::new(TraceFileOps::open(path, *format, *instructions)),
            Workload::Dma { transfers, bytes } => {
                let bytes = (*bytes).max(1);
                Box::new((0..*transfers).map(move |i| {
                    Ok(Op::Dma {
                        device: "simdev0".to_string(),
                        bytes,
                        dir: if i % 2 == 0 {
                            DmaDir::ToDevice
                        } else {
                            DmaDir::FromDevice
                        },
                    })
                }))
            }
            Workload::Processes { parts, quantum } => {
                let streams = parts
                    .iter()
                    .enumerate()
                    .map(|(i, w)| w.ops_with(seed.wrapping_add(1 + i as u64), next_pid))
                    .collect();
                Box::new(Interleave::new(streams, (*quantum).max(1), seed))
            }
            _ => {
                let pid = *next_pid;
                *next_pid += 1;
                Box::new(Process::new(self.clone(), pid, seed).map(Ok))
            }
        }
    }
}

/// One process running a (non-composite) workload: exec, the body, free,
/// exit.
struct Process {
    pid: u32,
    workload: Workload,
    rounds: u32,
    round: u32,
    seed: u64,
    body: Option<Body>,
    queue: VecDeque<Op>,
    started: bool,
    finished: bool,
}

impl Process {
    fn new(workload: Workload, pid: u32, seed: u64) -> Process {
        let (workload, rounds) = match workload {
            Workload::Rounds { inner, rounds } => (*inner, rounds.max(1)),
            w => (w, 1),
        };
        Process {
            pid,
            workload,
            rounds,
            round: 0,
            seed,
            body: None,
            queue: VecDeque::new(),
            started: false,
            finished: false,
        }
    }

    fn buffer_base(&self, round: u32, len: u64) -> u64 {
        // Rounds use disjoint buffers one guard page apart.
        let span = len.div_ceil(PAGE) * PAGE + PAGE;
        HEAP_BASE + u64::from(round) * span
    }
}

impl Iterator for Process {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.queue.pop_front() {
                return Some(op);
            }
            if self.finished {
                return None;
            }
            if !self.started {
                self.started = true;
                let name = self.workload.short_name();
                self.queue.push_back(Op::Exec {
                    pid: self.pid,
                    name: name.to_string(),
                });
                continue;
            }
            match &mut self.body {
                None => {
                    let len = body_len(&self.workload);
                    let base = self.buffer_base(self.round, len);
                    let seed = self.seed ^ (u64::from(self.round) << 32);
                    self.body = Some(Body::new(&self.workload, self.pid, base, seed));
                    self.queue.push_back(Op::Event {
                        pid: self.pid,
                        name: format!("{}_begin", self.workload.short_name()),
                    });
                }
                Some(body) => {
                    if body.step(&mut self.queue) {
                        continue;
                    }
                    let (base, len) = (body.base, body.len);
                    self.body = None;
                    self.queue.push_back(Op::Event {
                        pid: self.pid,
                        name: format!("{}_end", self.workload.short_name()),
                    });
                    self.queue.push_back(Op::Free {
                        pid: self.pid,
                        vaddr: base,
                        len,
                    });
                    self.round += 1;
                    if self.round == self.rounds {
                        self.queue.push_back(Op::Exit { pid: self.pid });
                        self.finished = true;
                    }
                }
            }
        }
    }
}

fn body_len(w: &Workload) -> u64 {
    match *w {
        Workload::SeqRead { bytes, .. }
        | Workload::SeqWrite { bytes, .. }
        | Workload::ReadAfterWrite { bytes, .. }
        | Workload::RandomRead { bytes, .. } => bytes.max(1),
        Workload::Quicksort { n } => n.max(1) * 4,
        _ => PAGE,
    }
}

/// The state of one round of a process's work.
struct Body {
    pid: u32,
    base: u64,
    len: u64,
    kind: BodyKind,
}

enum BodyKind {
    Linear {
        unit: u32,
        stride: u64,
        next: u64,
        write: bool,
        read_back: bool,
    },
    Random {
        unit: u32,
        left: u64,
        rng: Box<ChaCha8Rng>,
    },
    Sort(Box<Quicksort>),
}

impl Body {
    fn new(w: &Workload, pid: u32, base: u64, seed: u64) -> Body {
        let len = body_len(w);
        let kind = match *w {
            Workload::SeqRead { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: false,
                read_back: false,
            },
            Workload::SeqWrite { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: true,
                read_back: false,
            },
            Workload::ReadAfterWrite { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: true,
                read_back: true,
            },
            Workload::RandomRead { unit, count, .. } => BodyKind::Random {
                unit,
                left: count,
                rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
            },
            Workload::Quicksort { n } => BodyKind::Sort(Box::new(Quicksort::new(n.max(1), seed))),
            _ => BodyKind::Linear {
                unit: 1,
                stride: 1,
                next: len,
                write: false,
                read_back: false,
            },
        };
        Body {
            pid,
            base,
            len,
            kind,
        }
    }

    /// Pushes the next few ops; false when the round is over.
    fn step(&mut self, out: &mut VecDeque<Op>) -> bool {
        let (pid, base, len) = (self.pid, self.base, self.len);
        let access = |off: u64, write: bool, size: u32| Op::Access {
            pid,
            vaddr: base + off,
            write,
            size,
        };
        match &mut self.kind {
            BodyKind::Linear {
                unit,
                stride,
                next,
                write,
                read_back,
            } => {
                if *next >= len {
                    return false;
                }
                let size = (*unit as u64).min(len - *next) as u32;
                out.push_back(access(*next, *write, size));
                if *read_back {
                    out.push_back(access(*next, false, size));
                }
                *next += *stride;
                true
            }
            BodyKind::Random { unit, left, rng } => {
                if *left == 0 {
                    return false;
                }
                *left -= 1;
                let units = (len / u64::from(*unit)).max(1);
                let off = rng.gen_range(0..units) * u64::from(*unit);
                let size = (u64::from(*unit)).min(len - off) as u32;
                out.push_back(access(off, false, size));
                true
            }
            BodyKind::Sort(q) => q.step(&mut |off, write| out.push_back(access(off, write, 4))),
        }
    }
}

/// Quicksort (Lomuto partition, explicit stack) over a real array of
/// 32-bit integers; every element load and store is reported as a
/// reference at byte offset `4 * index`. First the array is filled (one
/// store per element), then sorted.
pub struct Quicksort {
    data: Vec<u32>,
    fill_next: usize,
    stack: Vec<(usize, usize)>,
    part: Option<Partition>,
}

struct Partition {
    lo: usize,
    hi: usize,
    pivot: u32,
    i: usize,
    j: usize,
}

impl Quicksort {
    pub fn new(n: u64, seed: u64) -> Quicksort {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let data: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let stack = if n > 1 {
            vec![(0, n as usize - 1)]
        } else {
            Vec::new()
        };
        Quicksort {
            data,
            fill_next: 0,
            stack,
            part: None,
        }
    }

    /// The array as it stands (sorted once the stream has ended).
    pub fn data(&self) -> &[u32] {
        &self.data
    }

    /// Runs one small step, reporting `(byte offset, write)` references;
    /// false when sorted.
    pub fn step(&mut self, emit: &mut dyn FnMut(u64, bool)) -> bool {
        let off = |i: usize| 4 * i as u64;
        if self.fill_next < self.data.len() {
            emit(off(self.fill_next), true);
            self.fill_next += 1;
            return true;
        }
        if let Some(p) = &mut self.part {
            if p.j < p.hi {
                emit(off(p.j), false);
                if self.data[p.j] < p.pivot {
                    if p.i != p.j {
                        emit(off(p.i), false);
                        self.data.swap(p.i, p.j);
                        emit(off(p.i), true);
                        emit(off(p.j), true);
                    }
                    p.i += 1;
                }
                p.j += 1;
                return true;
            }
            // Put the pivot in place and push the two halves.
            let (lo, hi, i) = (p.lo, p.hi, p.i);
            if i != hi {
                emit(off(i), false);
                self.data.swap(i, hi);
                emit(off(i), true);
                emit(off(hi), true);
            }
            self.part = None;
            if i > lo + 1 {
                self.stack.push((lo, i - 1));
            }
            if i + 1 < hi {
                self.stack.push((i + 1, hi));
            }
            return true;
        }
        match self.stack.pop() {
            None => false,
            Some((lo, hi)) => {
                emit(off(hi), false);
                self.part = Some(Partition {
                    lo,
                    hi,
                    pivot: self.data[hi],
                    i: lo,
                    j: lo,
                });
                true
            }
        }
    }
}

/// Interleaves streams `quantum` ops at a time, choosing the next stream at
/// random (seeded) among those not finished.
struct Interleave {
    streams: Vec<OpStream>,
    current: usize,
    left: u32,
    quantum: u32,
    rng: ChaCha8Rng,
}

impl Interleave {
    fn new(streams: Vec<OpStream>, quantum: u32, seed: u64) -> Self {
        Interleave {
            streams,
            current: 0,
            left: quantum,
            quantum,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1ea7),
        }
    }
}

impl Iterator for Interleave {
    type Item = OpResult;

    fn next(&mut self) -> Option<OpResult> {
        while !self.streams.is_empty() {
            if self.left == 0 {
                self.left = self.quantum;
                self.current = self.rng.gen_range(0..self.streams.len());
            }
            match self.streams[self.current].next() {
                Some(op) => {
                    self.left -= 1;
                    return Some(op);
                }
                None => {
                    drop(self.streams.swap_remove(self.current));
                    self.left = 0;
                }
            }
        }
        None
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
struct TraceFileOps {
    reader: Option<std::io::BufReader<std::fs::File>>,
    /// Why the file could not be opened: the first item.
    open_error: Option<WorkloadError>,
    parser: TraceParser,
    pending: VecDeque<Op>,
    line: String,
}

impl TraceFileOps {
    fn open(path: &Path, format: TraceFormat, instructions: bool) -> TraceFileOps {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quicksort_really_sorts_and_reports_its_references() {
        let mut q = Quicksort::new(500, 7);
        let mut refs = 0u64;
        while q.step(&mut |off, _| {
            assert!(off < 2000 && off % 4 == 0);
            refs += 1;
        }) {}
        assert!(q.data().windows(2).all(|w| w[0] <= w[1]));
        // Fill (500 stores) plus at least n log n comparisons' loads.
        assert!(refs > 500 + 500 * 8, "{refs}");
    }

    #[test]
    fn seq_read_stream_shape() {
        let w = Workload::SeqRead {
            bytes: 4096,
            unit: 64,
            stride: 64,
        };
        let ops: Vec<Op> = w.ops(1).collect::<Result<_, _>>().unwrap();
        assert!(matches!(&ops[0], Op::Exec { pid: FIRST_PID, .. }));
        assert!(matches!(ops.last(), Some(Op::Exit { pid: FIRST_PID })));
        let reads: Vec<u64> = ops
            .iter()
            .filter_map(|o| match o {
                Op::Access {
                    vaddr,
                    write: false,
                    size: 64,
                    ..
                } => Some(*vaddr),
                _ => None,
            })
            .collect();
        assert_eq!(
            reads,
            (0..64).map(|i| HEAP_BASE + 64 * i).collect::<Vec<_>>()
        );
    }

    #[test]
    fn processes_get_distinct_pids_and_interleave() {
        let w = Workload::default().processes(3, 4);
        let ops: Vec<Op> = w.ops(9).collect::<Result<_, _>>().unwrap();
        let mut pids: Vec<u32> = ops
            .iter()
            .filter_map(|o| match o {
                Op::Exec { pid, .. } => Some(*pid),
                _ => None,
            })
            .collect();
        pids.sort();
        assert_eq!(pids, [FIRST_PID, FIRST_PID + 1, FIRST_PID + 2]);
        let switches = ops
            .windows(2)
            .filter(|w| pid_of(&w[0]) != pid_of(&w[1]))
            .count();
        assert!(switches > 10);
    }

    fn pid_of(op: &Op) -> Option<u32> {
        match op {
            Op::Access { pid, .. } | Op::Exec { pid, .. } | Op::Exit { pid } => Some(*pid),
            _ => None,
        }
    }
}
