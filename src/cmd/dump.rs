//! `hmtt dump`: a trace file as text or CSV.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use hmtt_analyze::export::csv::CsvWriter;
use hmtt_analyze::export::table::TableWriter;
use hmtt_analyze::export::{TraceKind, TraceMeta};
use hmtt_format::archive::AnyTrace;
use hmtt_format::input::{AnyInput, InputFile};
use hmtt_format::trace::TraceRecord;
use hmtt_format::vtrace::{VirtualRecord, VtraceView};
use hmtt_merge::record_blocks::RecordBlocks;

use hmtt_merge::side_files::with_names_of;

use crate::output::to_stdout;
use crate::shared::parse_non_negative;
use hmtt_format::TickLength;

/// Arguments of `hmtt dump`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt dump run.hmtttrace --limit 20\n  \
hmtt dump run.hmtttrace --csv --from-ns 1000000 --to-ns 2000000 > window.csv\n  \
hmtt dump run.hmttvtrace --csv --accesses-only > virtual.csv")]
pub struct Args {
    /// Trace file written by `hmtt merge`, its archive (.hmttz), or virtual
    /// trace written by `hmtt replay --out` (told apart by their magic).
    pub trace: PathBuf,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
    /// Comma-separated values with a header line.
    #[arg(long)]
    pub csv: bool,
    /// Start at this time (ns since the boards' tick 0; finite, at least 0).
    #[arg(long, value_parser = parse_non_negative)]
    pub from_ns: Option<f64>,
    /// Stop before this time (ns; finite, at least 0).
    #[arg(long, value_parser = parse_non_negative)]
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
    /// `None` when the trace's tick length is unknown (0): every time is 0.
    tick: Option<TickLength>,
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
            tick: TickLength::of_ps(tick_ps),
            end_tick: None,
            printed: 0,
        };
        s.end_tick = args.to_ns.map(|ns| s.tick_of(ns));
        s
    }

    fn tick_of(&self, ns: f64) -> u64 {
        self.tick.map_or(0, |t| t.tick_at_ns(ns))
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

/// The CSV or table writer of `--csv`, over the output.
enum Rows<'w> {
    Csv(CsvWriter<&'w mut dyn Write>),
    Table(TableWriter<&'w mut dyn Write>),
}

impl<'w> Rows<'w> {
    fn new(csv: bool, out: &'w mut dyn Write, meta: TraceMeta) -> std::io::Result<Rows<'w>> {
        Ok(if csv {
            Rows::Csv(CsvWriter::new(out, meta)?)
        } else {
            Rows::Table(TableWriter::new(out, meta)?)
        })
    }
    fn write(&mut self, v: &VirtualRecord) -> std::io::Result<()> {
        match self {
            Rows::Csv(w) => w.write_record(v),
            Rows::Table(w) => w.write_record(v),
        }
    }
    fn write_physical(&mut self, records: &[TraceRecord]) -> std::io::Result<()> {
        match self {
            Rows::Csv(w) => w.write_physical(records),
            Rows::Table(w) => records
                .iter()
                .try_for_each(|r| w.write_record(&VirtualRecord::marker(*r))),
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let file = InputFile::open(&args.trace)?;
    let view = match file.any(args.incomplete.checks(true))? {
        AnyInput::Virtual(view) => return run_virtual(&args, &view),
        AnyInput::Physical(view) => view,
    };
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let mut sel = Selection::new(&args, view.header().common.tick_ps);
    let mut blocks = RecordBlocks::from_tick(&view, sel.start_tick().unwrap_or(0))
        .with_context(|| format!("{}: seeking", args.trace.display()))?;
    let mut damaged = None;
    let meta = TraceMeta {
        kind: TraceKind::Physical,
        tick_ps: view.header().common.tick_ps,
        first_tick: view.header().common.first_tick,
        names,
    };
    let shown = to_stdout("writing the dump", |out| {
        let mut rows = Rows::new(args.csv, out, meta)?;
        while let Some(block) = blocks.next() {
            let block = match block {
                Ok(b) => b,
                Err(e) => {
                    damaged = Some(e);
                    break;
                }
            };
            // The selected records come in runs, each written at once.
            let mut run = 0;
            for (i, r) in block.iter().enumerate() {
                match sel.pick(r) {
                    Pick::Print => {}
                    Pick::Skip => {
                        rows.write_physical(&block[run..i])?;
                        run = i + 1;
                    }
                    Pick::Stop => return rows.write_physical(&block[run..i]),
                }
            }
            rows.write_physical(&block[run..])?;
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
fn run_virtual(args: &Args, view: &VtraceView) -> anyhow::Result<()> {
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let mut sel = Selection::new(args, view.header().common.tick_ps);
    let start = sel.start_tick().map_or(0, |t| view.seek_tick(t));
    let meta = TraceMeta {
        kind: TraceKind::Virtual,
        tick_ps: view.header().common.tick_ps,
        first_tick: view.header().common.first_tick,
        names,
    };
    to_stdout("writing the dump", |out| {
        let mut rows = Rows::new(args.csv, out, meta)?;
        for v in view.records_from(start) {
            match sel.pick(&v.physical()) {
                Pick::Stop => break,
                Pick::Skip => continue,
                Pick::Print => {}
            }
            rows.write(&v)?;
        }
        Ok(())
    })
}
