//! `hmtt export`: a trace or virtual trace in another tool's format
//! (DRAMsim3, Ramulator 2, gem5, CSV, Parquet, Perfetto); the writers are
//! `hmtt_merge::export`.

use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::archive::AnyTrace;
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile};
use hmtt_format::vtrace::VtraceView;
use hmtt_merge::export::{self, ExportFormat, ExportOptions};

use crate::shared::{usize_in, with_names_of, TraceBytes};

/// The formats of `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// DRAMsim3 trace: `0xADDR READ|WRITE CYCLE` (cycles of the DDR clock).
    Dramsim3,
    /// Ramulator 2 LoadStoreTrace: `LD 0xADDR` / `ST 0xADDR`.
    Ramulator2,
    /// gem5 packet trace (protobuf, magic "gem5").
    Gem5,
    /// CSV with a header line (the columns of `hmtt dump --csv`).
    Csv,
    /// Apache Parquet, one row per record, typed columns.
    Parquet,
    /// Perfetto trace: bandwidth counters, I-code instants, BEGIN/END slices.
    Perfetto,
}

impl From<Format> for ExportFormat {
    fn from(f: Format) -> ExportFormat {
        match f {
            Format::Dramsim3 => ExportFormat::Dramsim3,
            Format::Ramulator2 => ExportFormat::Ramulator2,
            Format::Gem5 => ExportFormat::Gem5,
            Format::Csv => ExportFormat::Csv,
            Format::Parquet => ExportFormat::Parquet,
            Format::Perfetto => ExportFormat::Perfetto,
        }
    }
}

/// Arguments of `hmtt export`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  hmtt export run.hmtttrace --format dramsim3 -o run.trace\n  \
hmtt export run.hmttz --format parquet -o run.parquet\n  \
hmtt export run.hmttvtrace --format perfetto -o run.perfetto-trace --interval-ns 1000"
)]
pub struct Args {
    /// Trace (.hmtttrace), its archive (.hmttz) or a virtual trace
    /// (.hmttvtrace), told apart by their magic.
    pub trace: PathBuf,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
    /// Output format.
    #[arg(long, short, value_enum)]
    pub format: Format,
    /// Output file.
    #[arg(long, short)]
    pub out: PathBuf,
    /// dramsim3: the simulated memory's clock period in ps, 1..=1000000
    /// (default: the trace's tick, the traced DIMM's own clock).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tck_ps: Option<u32>,
    /// perfetto: width of one bandwidth interval in ns, 1..=10^12.
    #[arg(long, default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
    pub interval_ns: u64,
    /// parquet: rows per row group (the writer buffers one group),
    /// 1..=16777216.
    #[arg(long, default_value_t = export::parquet::DEFAULT_ROW_GROUP_ROWS,
          value_parser = usize_in(1, 1 << 24))]
    pub row_group: usize,
    /// Events file for names not stored in the trace.
    #[arg(long)]
    pub events: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    refuse_output_over_input(&args.out, [args.trace.as_path()])?;
    let bytes = TraceBytes::open(&args.trace)?;
    let opts = ExportOptions {
        tck_ps: args.tck_ps,
        interval_ns: args.interval_ns,
        row_group_rows: args.row_group,
    };
    let format = ExportFormat::from(args.format);
    // The writers own their output and flush it in `finish`; the file is
    // renamed into place only after that, so a failed export leaves none.
    let atomic = AtomicFile::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let file = atomic
        .file()
        .try_clone()
        .with_context(|| format!("creating {}", args.out.display()))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let make = |meta: &export::TraceMeta| export::writer(format, meta, &opts, out);
    let start = std::time::Instant::now();
    let summary = if bytes.as_slice().starts_with(&hmtt_format::vtrace::MAGIC) {
        let view = VtraceView::new_checked(bytes.as_slice())
            .with_context(|| format!("{}: not a usable virtual trace", args.trace.display()))?;
        crate::shared::check_vtrace_input(&args.trace, &view, args.incomplete)?;
        let names = with_names_of(view.names().clone(), args.events.as_deref())?;
        export::export_vtrace(&view, names, make)
    } else {
        let view = AnyTrace::new_checked(bytes.as_slice()).with_context(|| {
            format!(
                "{}: not a usable trace file or archive",
                args.trace.display()
            )
        })?;
        crate::shared::check_trace_input(&args.trace, &view, args.incomplete, true)?;
        let names = with_names_of(view.names().clone(), args.events.as_deref())?;
        export::export_trace(&view, names, make)
    }
    .with_context(|| {
        format!(
            "exporting {} to {}",
            args.trace.display(),
            args.out.display()
        )
    })?;
    atomic
        .commit()
        .with_context(|| format!("writing {}", args.out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({:?}): {} records, {} references, {:.1} s, {:.1} M records/s",
        args.out.display(),
        args.format,
        summary.records,
        summary.accesses,
        secs,
        summary.records as f64 / secs.max(1e-9) / 1e6
    );
    Ok(())
}
