//! Workloads of the simulated machine: the paper's verification
//! micro-benchmarks, quicksort run on a simulated array, several processes
//! interleaved, a DMA device, and traces read from files.
//!
//! Every workload is a stream of [`Op`]s: virtual references `(pid, vaddr,
//! read/write, size)`, I-code points, buffer frees, process start and exit,
//! and DMA transfers. Streams are lazy, so a workload of any size costs no
//! memory beyond its own state.
//!
//! One file per family: `micro` (the micro-benchmarks' access patterns and
//! the process every simple workload runs in), `quicksort`, `processes`
//! (several streams interleaved), `trace` (trace files); the DMA device is
//! a few lines of [`Workload::ops`].

use std::path::PathBuf;

mod micro;
mod processes;
mod quicksort;
#[cfg(test)]
mod tests;
mod trace;

use micro::Process;
use processes::Interleave;
pub use quicksort::Quicksort;
use trace::TraceFileOps;
pub use trace::{
    guess_format, parse_trace, parse_trace_opts, read_trace, read_trace_opts, TraceFormat,
    TraceFormatChoice,
};

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
    #[error("unknown workload '{0}' (known: {known})", known = WorkloadKind::known())]
    UnknownName(String),
    #[error("bad workload parameter: {0}")]
    Bad(String),
    #[error("--n {0} is more than {MAX_WORKLOAD_SIZE} (1T)")]
    TooLarge(u64),
    #[error("--unit is too large")]
    UnitTooLarge(u64),
    #[error("--workload trace needs --trace FILE")]
    NoTraceFile,
}

/// The largest workload size (`--n`): a workload's buffers are laid out in
/// a 64-bit virtual address space, round after round, so a size near 2^64
/// does not fit.
pub const MAX_WORKLOAD_SIZE: u64 = 1 << 40;

/// A workload as the command line gives it (`--workload`, `--n`, `--unit`,
/// `--stride`, `--trace`).
#[derive(Debug, Clone, Copy)]
pub struct WorkloadSpec<'a> {
    pub kind: WorkloadKind,
    /// The size ([`Workload::of_kind`]); `None`: `default_size`.
    pub n: Option<u64>,
    pub default_size: u64,
    pub unit: u64,
    pub stride: u64,
    /// The trace file of [`WorkloadKind::Trace`], its format (`None`:
    /// guessed), and whether lackey's instruction fetches are kept.
    pub trace: Option<&'a std::path::Path>,
    pub trace_format: Option<TraceFormat>,
    pub instructions: bool,
}

impl WorkloadSpec<'_> {
    /// A workload of a `kind` other than [`WorkloadKind::Trace`].
    pub fn sized(
        kind: WorkloadKind,
        n: Option<u64>,
        default_size: u64,
        unit: u64,
        stride: u64,
    ) -> WorkloadSpec<'static> {
        WorkloadSpec {
            kind,
            n,
            default_size,
            unit,
            stride,
            trace: None,
            trace_format: None,
            instructions: false,
        }
    }

    /// The workload, one round of one process.
    pub fn build(&self) -> Result<Workload, WorkloadError> {
        let unit = u32::try_from(self.unit).map_err(|_| WorkloadError::UnitTooLarge(self.unit))?;
        if let Some(n) = self.n.filter(|&n| n > MAX_WORKLOAD_SIZE) {
            return Err(WorkloadError::TooLarge(n));
        }
        if self.kind != WorkloadKind::Trace {
            let n = self.n.unwrap_or(self.default_size);
            return Workload::of_kind(self.kind, n, unit, self.stride);
        }
        let path = self.trace.ok_or(WorkloadError::NoTraceFile)?;
        read_trace_opts(path, self.trace_format, self.instructions)
    }
}

/// The workloads the command line names (`--workload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WorkloadKind {
    /// Sequential reads.
    SeqRead,
    /// Sequential writes.
    SeqWrite,
    /// Each unit written, then read back.
    #[cfg_attr(feature = "clap", value(alias = "raw"))]
    ReadAfterWrite,
    /// Reads at random offsets.
    #[cfg_attr(feature = "clap", value(alias = "random"))]
    RandomRead,
    /// Reads `--stride` apart.
    Strided,
    /// Quicksort of random integers.
    Quicksort,
    /// A DMA device alone.
    Dma,
    /// Several processes with remaps and DMA.
    Mix,
    /// A trace file's references.
    Trace,
}

impl WorkloadKind {
    pub const ALL: [WorkloadKind; 9] = [
        WorkloadKind::SeqRead,
        WorkloadKind::SeqWrite,
        WorkloadKind::ReadAfterWrite,
        WorkloadKind::RandomRead,
        WorkloadKind::Strided,
        WorkloadKind::Quicksort,
        WorkloadKind::Dma,
        WorkloadKind::Mix,
        WorkloadKind::Trace,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::SeqRead => "seq-read",
            WorkloadKind::SeqWrite => "seq-write",
            WorkloadKind::ReadAfterWrite => "read-after-write",
            WorkloadKind::RandomRead => "random-read",
            WorkloadKind::Strided => "strided",
            WorkloadKind::Quicksort => "quicksort",
            WorkloadKind::Dma => "dma",
            WorkloadKind::Mix => "mix",
            WorkloadKind::Trace => "trace",
        }
    }

    /// The kind a name (or its short alias, `raw`, `random`) stands for.
    pub fn from_name(name: &str) -> Option<WorkloadKind> {
        match name {
            "raw" => Some(WorkloadKind::ReadAfterWrite),
            "random" => Some(WorkloadKind::RandomRead),
            _ => WorkloadKind::ALL.into_iter().find(|k| k.name() == name),
        }
    }

    /// The names [`Workload::by_name`] takes.
    fn known() -> String {
        let names: Vec<&str> = WorkloadKind::ALL
            .iter()
            .filter(|&&k| k != WorkloadKind::Trace)
            .map(|k| k.name())
            .collect();
        names.join(", ")
    }

    /// The size (`n` of [`Workload::of_kind`]) `hmtt sim` runs when none
    /// is given: a megabyte of references, a hundred thousand elements.
    pub fn default_size(self) -> u64 {
        match self {
            WorkloadKind::Quicksort => 100_000,
            WorkloadKind::Dma => 16,
            WorkloadKind::Mix => 64 << 10,
            _ => 1 << 20,
        }
    }

    /// The smaller size `hmtt demo` runs when none is given, so that the
    /// whole path (simulation, UDP, capture, merge, check) takes about a
    /// second.
    pub fn demo_size(self) -> u64 {
        match self {
            WorkloadKind::Quicksort => 50_000,
            WorkloadKind::Dma => 16,
            WorkloadKind::Mix => 64 << 10,
            _ => 256 << 10,
        }
    }
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
    /// A workload by its command-line name (see [`WorkloadKind`]); the
    /// trace workload, which reads a file, is [`read_trace`]'s.
    pub fn by_name(name: &str, n: u64, unit: u32, stride: u64) -> Result<Workload, WorkloadError> {
        match WorkloadKind::from_name(name) {
            Some(kind) if kind != WorkloadKind::Trace => Workload::of_kind(kind, n, unit, stride),
            _ => Err(WorkloadError::UnknownName(name.to_string())),
        }
    }

    /// A workload of `kind`. `n` is the size in bytes (the element count
    /// for quicksort, the transfer count for dma), `unit` the reference
    /// size, `stride` the distance between references.
    pub fn of_kind(
        kind: WorkloadKind,
        n: u64,
        unit: u32,
        stride: u64,
    ) -> Result<Workload, WorkloadError> {
        if unit == 0 || n == 0 {
            return Err(WorkloadError::Bad("size and unit must be above 0".into()));
        }
        let stride = stride.max(1);
        Ok(match kind {
            WorkloadKind::SeqRead => Workload::SeqRead {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            WorkloadKind::SeqWrite => Workload::SeqWrite {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            WorkloadKind::ReadAfterWrite => Workload::ReadAfterWrite {
                bytes: n,
                unit,
                stride: u64::from(unit),
            },
            WorkloadKind::RandomRead => Workload::RandomRead {
                bytes: n,
                unit,
                count: (n / u64::from(unit)).max(1),
            },
            WorkloadKind::Strided => Workload::SeqRead {
                bytes: n,
                unit,
                stride,
            },
            WorkloadKind::Quicksort => Workload::Quicksort { n },
            WorkloadKind::Dma => Workload::Dma {
                transfers: n,
                bytes: 4 * PAGE,
            },
            WorkloadKind::Mix => Workload::mix(n),
            WorkloadKind::Trace => {
                return Err(WorkloadError::Bad(
                    "the trace workload reads a file (read_trace)".into(),
                ))
            }
        })
    }

    /// `rounds` rounds of this workload in one process, each on a fresh
    /// buffer (one round: the workload itself).
    pub fn rounds(self, rounds: u32) -> Workload {
        if rounds <= 1 {
            return self;
        }
        Workload::Rounds {
            inner: Box::new(self),
            rounds,
        }
    }

    /// This workload beside a DMA device doing `transfers` transfers of
    /// four pages, interleaved `quantum` operations at a time (none: the
    /// workload itself).
    pub fn with_dma(self, transfers: u64, quantum: u32) -> Workload {
        if transfers == 0 {
            return self;
        }
        Workload::Processes {
            parts: vec![
                self,
                Workload::Dma {
                    transfers,
                    bytes: 4 * PAGE,
                },
            ],
            quantum,
        }
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
