//! `hmtt dump`: a trace file as text or CSV.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::trace::{RecordKind, TraceView};
use hmtt_merge::names::event_name;

/// Arguments of `hmtt dump`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt dump run.hmtttrace --limit 20\n  \
hmtt dump run.hmtttrace --csv --from-ns 1000000 --to-ns 2000000 > window.csv\n  \
hmtt dump run.hmttvtrace --csv --accesses-only > virtual.csv")]
pub struct Args {
    /// Trace file written by `hmtt merge`, or virtual trace written by
    /// `hmtt replay --out` (told apart by their magic).
    pub trace: PathBuf,
    /// Comma-separated values with a header line.
    #[arg(long)]
    pub csv: bool,
    /// Start at this time (ns since the boards' tick 0).
    #[arg(long)]
    pub from_ns: Option<f64>,
    /// Stop before this time (ns).
    #[arg(long)]
    pub to_ns: Option<f64>,
    /// Only this board.
    #[arg(long)]
    pub board: Option<u8>,
    /// Only memory references (no tags, commands, losses).
    #[arg(long)]
    pub accesses_only: bool,
    /// At most this many lines.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Events file for names not stored in the trace.
    #[arg(long)]
    pub events: Option<PathBuf>,
}

/// Maps a trace file read-only.
pub fn map_trace(path: &std::path::Path) -> anyhow::Result<memmap_or_vec::Bytes> {
    memmap_or_vec::Bytes::open(path)
}

/// A trace file's bytes: mapped, or read when empty.
pub mod memmap_or_vec {
    use anyhow::Context;

    pub struct Bytes(Inner);
    enum Inner {
        Map(memmap2::Mmap),
        Vec(Vec<u8>),
    }
    impl Bytes {
        pub fn open(path: &std::path::Path) -> anyhow::Result<Bytes> {
            let f =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            let len = f.metadata()?.len();
            if len == 0 {
                return Ok(Bytes(Inner::Vec(Vec::new())));
            }
            // SAFETY: read-only map of a finished trace; every access is
            // bounds-checked by TraceView.
            let m = unsafe { memmap2::Mmap::map(&f) }
                .with_context(|| format!("mapping {}", path.display()))?;
            Ok(Bytes(Inner::Map(m)))
        }
        pub fn as_slice(&self) -> &[u8] {
            match &self.0 {
                Inner::Map(m) => m,
                Inner::Vec(v) => v,
            }
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes = map_trace(&args.trace)?;
    if bytes.as_slice().starts_with(&hmtt_format::vtrace::MAGIC) {
        return run_virtual(&args, bytes.as_slice());
    }
    let view = TraceView::new_checked(bytes.as_slice())
        .with_context(|| format!("{}: not a usable trace file", args.trace.display()))?;
    let mut names = view.names().clone();
    if args.events.is_some() {
        names
            .names
            .extend(crate::cmd::merge::load_names(args.events.as_deref(), &[])?.names);
    }
    let h = view.header().clone();
    let tick_ns = f64::from(h.tick_ps) / 1000.0;
    let to_tick = |ns: f64| {
        if tick_ns > 0.0 {
            (ns / tick_ns).max(0.0) as u64
        } else {
            0
        }
    };
    let start = args.from_ns.map_or(0, |ns| view.seek_tick(to_tick(ns)));
    let end_tick = args.to_ns.map(to_tick);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = (|| -> std::io::Result<()> {
        if args.csv {
            writeln!(out, "time_ns,tick,board,pa,rw,kind,event")?;
        } else {
            writeln!(
                out,
                "{:>16} {:>14} {:>5} {:>14} {:>2} {:<9} event",
                "time_ns", "tick", "board", "pa", "rw", "kind"
            )?;
        }
        let mut n = 0u64;
        for r in view.records_from(start) {
            if end_tick.is_some_and(|e| r.tick >= e) || args.limit.is_some_and(|l| n >= l) {
                break;
            }
            if args.board.is_some_and(|b| b != r.board()) || (args.accesses_only && !r.is_access())
            {
                continue;
            }
            n += 1;
            let kind = r.kind();
            let (pa, rw, event) = match kind {
                RecordKind::Read => (format!("{:#x}", r.pa()), "R", String::new()),
                RecordKind::Write => (format!("{:#x}", r.pa()), "W", String::new()),
                RecordKind::Tag { write } => (
                    String::new(),
                    if write { "W" } else { "R" },
                    event_name(r.value() as u32, &names),
                ),
                RecordKind::Cmd => (String::new(), "", event_name(r.value() as u32, &names)),
                RecordKind::Lost => (String::new(), "", format!("{} references", r.value())),
                RecordKind::GapBegin | RecordKind::GapEnd => {
                    (String::new(), "", format!("{} packets missing", r.value()))
                }
                RecordKind::Reserved(_) => (String::new(), "", String::new()),
            };
            let ns = r.tick as f64 * tick_ns;
            if args.csv {
                writeln!(
                    out,
                    "{ns:.3},{},{},{pa},{rw},{},{event}",
                    r.tick,
                    r.board(),
                    kind.name()
                )?;
            } else {
                writeln!(
                    out,
                    "{ns:>16.3} {:>14} {:>5} {pa:>14} {rw:>2} {:<9} {event}",
                    r.tick,
                    r.board(),
                    kind.name()
                )?;
            }
        }
        out.flush()
    })();
    match result {
        // `hmtt dump | head` closes the pipe early: not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the dump"),
    }
}

/// A virtual trace (format.md §12): the physical columns plus source
/// (cpu/dma), pid, virtual address and miss class.
fn run_virtual(args: &Args, bytes: &[u8]) -> anyhow::Result<()> {
    use hmtt_format::vtrace::VtraceView;
    let view = VtraceView::new_checked(bytes)
        .with_context(|| format!("{}: not a usable virtual trace file", args.trace.display()))?;
    let mut names = view.names().clone();
    if args.events.is_some() {
        names
            .names
            .extend(crate::cmd::merge::load_names(args.events.as_deref(), &[])?.names);
    }
    let h = view.header().clone();
    let tick_ns = f64::from(h.tick_ps) / 1000.0;
    let to_tick = |ns: f64| {
        if tick_ns > 0.0 {
            (ns / tick_ns).max(0.0) as u64
        } else {
            0
        }
    };
    let start = args.from_ns.map_or(0, |ns| view.seek_tick(to_tick(ns)));
    let end_tick = args.to_ns.map(to_tick);
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let result = (|| -> std::io::Result<()> {
        if args.csv {
            writeln!(
                out,
                "time_ns,tick,board,pa,rw,kind,source,pid,va,miss,event"
            )?;
        } else {
            writeln!(
                out,
                "{:>16} {:>14} {:>5} {:>14} {:>2} {:<9} {:<6} {:>7} {:>18} {:<8} event",
                "time_ns", "tick", "board", "pa", "rw", "kind", "source", "pid", "va", "miss"
            )?;
        }
        let mut n = 0u64;
        for v in view.records_from(start) {
            if end_tick.is_some_and(|e| v.tick >= e) || args.limit.is_some_and(|l| n >= l) {
                break;
            }
            if args.board.is_some_and(|b| b != v.board()) || (args.accesses_only && !v.is_access())
            {
                continue;
            }
            n += 1;
            let r = v.physical();
            let kind = r.kind();
            let (pa, rw, source, event) = match kind {
                RecordKind::Read | RecordKind::Write => (
                    format!("{:#x}", r.pa()),
                    if kind == RecordKind::Write { "W" } else { "R" },
                    if v.is_dma() { "dma" } else { "cpu" },
                    String::new(),
                ),
                RecordKind::Tag { write } => (
                    String::new(),
                    if write { "W" } else { "R" },
                    "",
                    event_name(r.value() as u32, &names),
                ),
                RecordKind::Cmd => (String::new(), "", "", event_name(r.value() as u32, &names)),
                RecordKind::Lost => (String::new(), "", "", format!("{} references", r.value())),
                RecordKind::GapBegin | RecordKind::GapEnd => (
                    String::new(),
                    "",
                    "",
                    format!("{} packets missing", r.value()),
                ),
                RecordKind::Reserved(_) => (String::new(), "", "", String::new()),
            };
            let (pid, va) = v.owner().map_or((String::new(), String::new()), |(p, a)| {
                (p.to_string(), format!("{a:#x}"))
            });
            let miss = v.miss().map_or("", |m| m.name());
            let ns = r.tick as f64 * tick_ns;
            if args.csv {
                writeln!(
                    out,
                    "{ns:.3},{},{},{pa},{rw},{},{source},{pid},{va},{miss},{event}",
                    r.tick,
                    r.board(),
                    kind.name()
                )?;
            } else {
                writeln!(
                    out,
                    "{ns:>16.3} {:>14} {:>5} {pa:>14} {rw:>2} {:<9} {source:<6} {pid:>7} {va:>18} {miss:<8} {event}",
                    r.tick,
                    r.board(),
                    kind.name()
                )?;
            }
        }
        out.flush()
    })();
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the dump"),
    }
}
