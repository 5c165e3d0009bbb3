//! `hmtt export`: a trace or virtual trace in another tool's format
//! (DRAMsim3, Ramulator 2, gem5, CSV, Parquet, Perfetto); the writers are
//! `hmtt_analyze::export`.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_analyze::export::parquet::PartitionedParquetWriter;
use hmtt_analyze::export::{self, ExportError, ExportFormat, ExportOptions};
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicDir, AtomicFile};
use hmtt_format::direct_write::DirectWriter;
use hmtt_format::input::{AnyInput, InputFile};

use hmtt_merge::side_files::with_names_of;

use crate::output::status;
use crate::shared::{parse_positive, usize_in};

/// Makes the writer once the trace's description is known.
type MakeWriter =
    dyn FnOnce(&export::TraceMeta) -> Result<Box<dyn export::RecordWriter>, ExportError>;

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
hmtt export run.hmttz --format parquet --partition-ms 100 -o run-dataset/\n  \
hmtt export run.hmttvtrace --format perfetto -o run.perfetto-trace --interval-ms 0.001"
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
    /// Output file (with `--partition-ms`: the dataset's directory, absent
    /// or empty).
    #[arg(long, short)]
    pub out: PathBuf,
    /// dramsim3: the simulated memory's clock period in ps, 1..=1000000
    /// (default: the trace's tick, the traced DIMM's own clock).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub tck_ps: Option<u32>,
    /// perfetto: width of one bandwidth interval in ms of traced time, as
    /// `analyze --interval-ms`: 0.000001 (1 ns) to 1000000, rounded to
    /// whole ns [default: 0.01].
    #[arg(long, value_name = "MS", value_parser = parse_positive)]
    pub interval_ms: Option<f64>,
    /// The interval in ns: --interval-ms's old spelling, kept for one
    /// release (renamed::RENAMED_OPTIONS).
    #[arg(long, hide = true, conflicts_with = "interval_ms",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000_000))]
    pub interval_ns: Option<u64>,
    /// parquet: rows per row group (the writer buffers one group),
    /// 1..=16777216.
    #[arg(long, default_value_t = export::parquet::DEFAULT_ROW_GROUP_ROWS,
          value_parser = usize_in(1, 1 << 24))]
    pub row_group: usize,
    /// parquet: write a Hive-style dataset instead of one file: the
    /// directory `-o` holds `time_window=K/part-00000.parquet` per window of
    /// this many ms of traced time with records (K: `time_ns` divided by the
    /// window, rounded down), the same schema as the single file's
    /// (docs/format.md §14). Positive and finite, at least 1 ps.
    #[arg(long, value_name = "MS", value_parser = parse_positive)]
    pub partition_ms: Option<f64>,
    /// Events file for names not stored in the trace.
    #[arg(long)]
    pub events: Option<PathBuf>,
}

/// Where the export goes: one file, or the directory of a dataset.
enum Output {
    File(AtomicFile),
    Dataset(AtomicDir),
}

/// Perfetto's bandwidth interval when none is given, in ns.
const DEFAULT_INTERVAL_NS: u64 = 10_000;

/// The bandwidth interval in ns of `--interval-ms` (or of the old
/// `--interval-ns`).
fn perfetto_interval_ns(args: &Args) -> anyhow::Result<u64> {
    match (args.interval_ms, args.interval_ns) {
        (Some(ms), _) => {
            let ns = (ms * 1e6).round();
            anyhow::ensure!(
                (1.0..=1e12).contains(&ns),
                "--interval-ms {ms:e}: an interval is 0.000001 ms (1 ns) to 1000000 ms long"
            );
            Ok(ns as u64)
        }
        (None, Some(ns)) => Ok(ns),
        (None, None) => Ok(DEFAULT_INTERVAL_NS),
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    refuse_output_over_input(&args.out, [args.trace.as_path()])?;
    let window_ps = match args.partition_ms {
        Some(_) if args.format != Format::Parquet => {
            anyhow::bail!("--partition-ms writes a Parquet dataset: it needs --format parquet")
        }
        Some(ms) if ms * 1e9 < 0.5 || ms * 1e9 >= u64::MAX as f64 => {
            anyhow::bail!("--partition-ms {ms:e}: a window is 1 ps to 2^64 ps long")
        }
        Some(ms) => Some((ms * 1e9).round() as u64),
        None => None,
    };
    let file = InputFile::open(&args.trace)?;
    let opts = ExportOptions {
        tck_ps: args.tck_ps,
        interval_ns: perfetto_interval_ns(&args)?,
        row_group_rows: args.row_group,
    };
    let format = ExportFormat::from(args.format);
    // The writers own their output and flush it in `finish`; the file (or
    // the dataset's directory) is renamed into place only after that, so a
    // failed export leaves none.
    let creating = || format!("creating {}", args.out.display());
    let (output, make): (Output, Box<MakeWriter>) = match window_ps {
        Some(window_ps) => {
            let dir = AtomicDir::create(&args.out).with_context(creating)?;
            let path = dir.path().to_path_buf();
            let rows = opts.row_group_rows;
            (
                Output::Dataset(dir),
                Box::new(move |meta: &export::TraceMeta| {
                    let w = PartitionedParquetWriter::new(&path, meta.clone(), rows, window_ps)?;
                    Ok(Box::new(w) as Box<dyn export::RecordWriter>)
                }),
            )
        }
        None => {
            let atomic = AtomicFile::create(&args.out).with_context(creating)?;
            let file = atomic.file().try_clone().with_context(creating)?;
            let out = DirectWriter::new(file);
            (
                Output::File(atomic),
                Box::new(move |meta: &export::TraceMeta| export::writer(format, meta, &opts, out)),
            )
        }
    };
    let start = std::time::Instant::now();
    let input = file.any(args.incomplete.checks(true))?;
    let names = with_names_of(input.names().clone(), args.events.as_deref())?;
    let summary = match &input {
        AnyInput::Virtual(view) => export::export_vtrace(view, names, make),
        AnyInput::Physical(view) => export::export_trace(view, names, make),
    }
    .with_context(|| {
        format!(
            "exporting {} to {}",
            args.trace.display(),
            args.out.display()
        )
    })?;
    match output {
        Output::File(f) => f.commit(),
        Output::Dataset(d) => d.commit(),
    }
    .with_context(|| format!("writing {}", args.out.display()))?;
    let secs = start.elapsed().as_secs_f64();
    status!(
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
