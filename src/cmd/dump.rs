//! `hmtt dump`: a trace file as text or CSV.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::archive::AnyTrace;
use hmtt_format::trace::{NameTable, RecordKind, TraceRecord};
use hmtt_merge::names::event_name;

use crate::shared::{to_stdout, with_names_of, TraceBytes};

/// Arguments of `hmtt dump`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt dump run.hmtttrace --limit 20\n  \
hmtt dump run.hmtttrace --csv --from-ns 1000000 --to-ns 2000000 > window.csv\n  \
hmtt dump run.hmttvtrace --csv --accesses-only > virtual.csv")]
pub struct Args {
    /// Trace file written by `hmtt merge`, its archive (.hmttz), or virtual
    /// trace written by `hmtt replay --out` (told apart by their magic).
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

/// The selection of `--from-ns`, `--to-ns`, `--board`, `--accesses-only`
/// and `--limit`, in ticks of a trace whose tick is `tick_ps` long.
struct Selection<'a> {
    args: &'a Args,
    tick_ns: f64,
    end_tick: Option<u64>,
    printed: u64,
}

enum Pick {
    Print,
    Skip,
    Stop,
}

impl<'a> Selection<'a> {
    fn new(args: &'a Args, tick_ps: u16) -> Selection<'a> {
        let mut s = Selection {
            args,
            tick_ns: f64::from(tick_ps) / 1000.0,
            end_tick: None,
            printed: 0,
        };
        s.end_tick = args.to_ns.map(|ns| s.tick_of(ns));
        s
    }

    fn tick_of(&self, ns: f64) -> u64 {
        if self.tick_ns > 0.0 {
            (ns / self.tick_ns).max(0.0) as u64
        } else {
            0
        }
    }

    /// The first tick `--from-ns` asks for (0 without it).
    fn start_tick(&self) -> Option<u64> {
        self.args.from_ns.map(|ns| self.tick_of(ns))
    }

    fn pick(&mut self, r: &TraceRecord) -> Pick {
        let a = self.args;
        if self.end_tick.is_some_and(|e| r.tick >= e) || a.limit.is_some_and(|l| self.printed >= l)
        {
            return Pick::Stop;
        }
        if a.board.is_some_and(|b| b != r.board()) || (a.accesses_only && !r.is_access()) {
            return Pick::Skip;
        }
        self.printed += 1;
        Pick::Print
    }
}

/// The columns every dump has: pa, rw and event.
fn physical_columns(r: &TraceRecord, names: &NameTable) -> (String, &'static str, String) {
    match r.kind() {
        RecordKind::Read => (format!("{:#x}", r.pa()), "R", String::new()),
        RecordKind::Write => (format!("{:#x}", r.pa()), "W", String::new()),
        RecordKind::Tag { write } => (
            String::new(),
            if write { "W" } else { "R" },
            event_name(r.value() as u32, names),
        ),
        RecordKind::Cmd => (String::new(), "", event_name(r.value() as u32, names)),
        RecordKind::Lost => (String::new(), "", format!("{} references", r.value())),
        RecordKind::GapBegin | RecordKind::GapEnd => {
            (String::new(), "", format!("{} packets missing", r.value()))
        }
        RecordKind::Reserved(_) => (String::new(), "", String::new()),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let bytes = TraceBytes::open(&args.trace)?;
    if bytes.as_slice().starts_with(&hmtt_format::vtrace::MAGIC) {
        return run_virtual(&args, bytes.as_slice());
    }
    let view = AnyTrace::new_checked(bytes.as_slice()).with_context(|| {
        format!(
            "{}: not a usable trace file or archive",
            args.trace.display()
        )
    })?;
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let mut sel = Selection::new(&args, view.header().common.tick_ps);
    let records = view
        .records_from_tick(sel.start_tick().unwrap_or(0))
        .with_context(|| format!("{}: seeking", args.trace.display()))?;
    let mut damaged = None;
    let shown = to_stdout("writing the dump", |out| {
        if args.csv {
            writeln!(out, "time_ns,tick,board,pa,rw,kind,event")?;
        } else {
            writeln!(
                out,
                "{:>16} {:>14} {:>5} {:>14} {:>2} {:<9} event",
                "time_ns", "tick", "board", "pa", "rw", "kind"
            )?;
        }
        for r in records {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    damaged = Some(e);
                    break;
                }
            };
            match sel.pick(&r) {
                Pick::Stop => break,
                Pick::Skip => continue,
                Pick::Print => {}
            }
            let (pa, rw, event) = physical_columns(&r, &names);
            let kind = r.kind().name();
            let ns = r.tick as f64 * sel.tick_ns;
            let (tick, board) = (r.tick, r.board());
            if args.csv {
                writeln!(out, "{ns:.3},{tick},{board},{pa},{rw},{kind},{event}")?;
            } else {
                writeln!(
                    out,
                    "{ns:>16.3} {tick:>14} {board:>5} {pa:>14} {rw:>2} {kind:<9} {event}"
                )?;
            }
        }
        Ok(())
    });
    if let AnyTrace::Archive(a) = &view {
        tracing::info!(
            "decoded {} of {} archive blocks",
            a.blocks_decoded(),
            a.block_count()
        );
    }
    if let Some(e) = damaged {
        return Err(anyhow::Error::from(e).context(format!("reading {}", args.trace.display())));
    }
    shown
}

/// A virtual trace (format.md §12): the physical columns plus source
/// (cpu/dma), pid, virtual address and miss class.
fn run_virtual(args: &Args, bytes: &[u8]) -> anyhow::Result<()> {
    use hmtt_format::vtrace::VtraceView;
    let view = VtraceView::new_checked(bytes)
        .with_context(|| format!("{}: not a usable virtual trace file", args.trace.display()))?;
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let mut sel = Selection::new(args, view.header().common.tick_ps);
    let start = sel.start_tick().map_or(0, |t| view.seek_tick(t));
    to_stdout("writing the dump", |out| {
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
        for v in view.records_from(start) {
            let r = v.physical();
            match sel.pick(&r) {
                Pick::Stop => break,
                Pick::Skip => continue,
                Pick::Print => {}
            }
            let (pa, rw, event) = physical_columns(&r, &names);
            let source = match (r.is_access(), v.is_dma()) {
                (false, _) => "",
                (true, true) => "dma",
                (true, false) => "cpu",
            };
            let (pid, va) = v.owner().map_or((String::new(), String::new()), |(p, a)| {
                (p.to_string(), format!("{a:#x}"))
            });
            let miss = v.miss().map_or("", |m| m.name());
            let kind = r.kind().name();
            let ns = r.tick as f64 * sel.tick_ns;
            let (tick, board) = (r.tick, r.board());
            if args.csv {
                writeln!(
                    out,
                    "{ns:.3},{tick},{board},{pa},{rw},{kind},{source},{pid},{va},{miss},{event}"
                )?;
            } else {
                writeln!(
                    out,
                    "{ns:>16.3} {tick:>14} {board:>5} {pa:>14} {rw:>2} {kind:<9} {source:<6} {pid:>7} {va:>18} {miss:<8} {event}"
                )?;
            }
        }
        Ok(())
    })
}
