//! `hmtt analyze`: the read/write mix, bandwidth over time, banks, row
//! locality, hot pages, reuse distances and streams of a trace (physical,
//! archive or virtual), as text, JSON (`--json`) and pictures (`--plot`).
//! The analyses are `hmtt_merge::analyze`; this module parses and prints.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::events::EventWindow;
use hmtt_format::input::{AnyInput, InputFile};
use hmtt_format::Geometry;
use hmtt_merge::analyze::partial::{self, read_partial};
use hmtt_merge::analyze::pictures::Pictures;
use hmtt_merge::analyze::{
    analyze_parts, plot, replayed, write_partial_file, Analysis, AnalysisOutputs, AnalysisReport,
    AnalyzeOptions, TraceInput,
};

use hmtt_merge::side_files::with_names_of;

use crate::shared::{parse_positive, status, to_stdout, usize_in, JsonOut};

/// Arguments of `hmtt analyze`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  hmtt analyze run.hmtttrace\n  \
hmtt analyze run.hmtttrace --window quicksort_begin,quicksort_end --plot plots/ --json run.json\n  \
hmtt analyze run.hmttvtrace --interval-ms 0.1\n  \
hmtt analyze run.hmtttrace --log pagetable.hmttlog --plot plots/ --plot-format png,pdf\n  \
hmtt analyze run.hmttz --partial a.json --blocks 0..50 && hmtt analyze run.hmttz --partial b.json --blocks 50..100 && \
hmtt analyze --combine a.json b.json --json run.json")]
pub struct Args {
    /// Trace written by `hmtt merge`, its archive (.hmttz), or a virtual
    /// trace written by `hmtt replay --out` (told apart by their magic).
    #[arg(required_unless_present = "combine")]
    pub trace: Option<PathBuf>,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
    /// Only between two I-code events: BEGIN,END (names or indices), as
    /// `hmtt replay --window`.
    #[arg(long)]
    pub window: Option<String>,
    /// Bandwidth interval in ms of traced time, positive and finite
    /// (default: the shortest 2^k µs that covers the analysis in 512
    /// intervals; at most 1048576 intervals are kept, widened as needed).
    #[arg(long, value_parser = parse_positive)]
    pub interval_ms: Option<f64>,
    /// Window of bank-level parallelism (distinct banks per window), ns,
    /// positive and finite.
    #[arg(long, default_value_t = hmtt_merge::analyze::bank_parallelism::DEFAULT_WINDOW_NS,
          value_parser = parse_positive)]
    pub blp_ns: f64,
    /// DIMM geometry for decoding banks (a preset or rank,bank,row,col_line
    /// bits); default: the trace's, or ddr3-4g for a virtual trace.
    #[arg(long)]
    pub geometry: Option<Geometry>,
    /// Memory-controller address mapping file (TOML, format.md §3) the
    /// merge used; default linear.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Channel interleave of a trace of several boards: log2 of the block
    /// (6..=40).
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(6..=40))]
    pub interleave_shift: u32,
    /// Hottest pages listed (0..=100000).
    #[arg(long, default_value_t = 20, value_parser = usize_in(0, 100_000))]
    pub top: usize,
    /// Stream detection window (references, 1..=65536), as the paper's
    /// 32-entry table; the pass costs time in proportion to it.
    #[arg(long, default_value_t = hmtt_merge::analyze::streams::DEFAULT_WINDOW,
          value_parser = usize_in(1, 65_536))]
    pub stream_window: usize,
    /// Reuse distances: `exact` (every reference), `sampled[:RATE]`
    /// (SHARDS at a fixed rate, default 0.01) or `sampled-size[:LINES]`
    /// (SHARDS keeping at most LINES lines, default 8192), or `exact` and
    /// a sampled mode together (`exact,sampled:0.01`: both in the JSON and
    /// the reuse_cdf picture).
    #[arg(long, default_value = "exact")]
    pub reuse: hmtt_merge::analyze::reuse_sampled::ReuseModes,
    /// Threads (default: every core). The trace's blocks are split into as
    /// many runs, analysed apart and merged: the same figures as one
    /// thread's. Virtual traces, `--window` and `--reuse sampled-size` run
    /// on one. 1..=1024.
    #[arg(long, value_parser = usize_in(1, 1024))]
    pub threads: Option<usize>,
    /// Only analyse blocks `--blocks` of the trace (an archive's blocks, or
    /// runs of 65536 records of a trace file) and save the analyses' state
    /// to this file (docs/format.md §15), for `--combine`.
    #[arg(long, value_name = "FILE", requires = "trace")]
    pub partial: Option<PathBuf>,
    /// The blocks of `--partial`: A..B (B left out; default all).
    #[arg(long, value_name = "A..B", requires = "partial", value_parser = parse_blocks)]
    pub blocks: Option<std::ops::Range<usize>>,
    /// Merge these partial analyses (`--partial`) of one trace, covering
    /// all its blocks, into the report of the whole trace.
    #[arg(long, num_args = 1.., value_name = "PARTIAL", conflicts_with_all = ["trace", "plot", "window"])]
    pub combine: Vec<PathBuf>,
    /// Events file for names not stored in the trace.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Kernel log (.hmttlog) of a physical trace: the trace is replayed
    /// with it (as `hmtt replay --log`, into a temporary virtual trace) and
    /// analysed as that virtual trace, so `--plot` also draws the busiest
    /// processes in their virtual addresses. One thread.
    #[arg(
        long,
        value_name = "KERNEL_LOG",
        requires = "trace",
        conflicts_with = "partial"
    )]
    pub log: Option<PathBuf>,
    /// Draw the pictures (PNG and SVG) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// The pictures' formats: png, svg and pdf, separated by commas.
    #[arg(
        long,
        value_name = "FORMATS",
        default_value = "png,svg",
        requires = "plot"
    )]
    pub plot_format: plot::PlotFormats,
    /// Write every figure as JSON to this file ("-": standard output,
    /// instead of the text).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

fn parse_blocks(s: &str) -> Result<std::ops::Range<usize>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("'{s}' is not A..B"))?;
    let n = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{x}' is not a block number"))
    };
    let (a, b) = (n(a)?, n(b)?);
    if a >= b {
        return Err(format!("{a}..{b} holds no block"));
    }
    Ok(a..b)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.combine.is_empty() {
        refuse_outputs_over_inputs(&args)?;
        return combine(&args);
    }
    let trace = args.trace.clone().expect("clap requires a trace");
    refuse_outputs_over_inputs(&args)?;
    // With a kernel log, the trace analysed is the replayed one.
    let replayed = match &args.log {
        Some(log) => Some(replay(&args, &trace, log)?),
        None => None,
    };
    let analysed = replayed.as_ref().map_or(trace.as_path(), |f| f.path());
    let file = InputFile::open(analysed)?;
    let data = file.bytes();
    let opened = file.any(args.incomplete.checks(true))?;
    let input = match &opened {
        AnyInput::Physical(view) => TraceInput::Physical(view),
        AnyInput::Virtual(view) => TraceInput::Virtual(view),
    };
    let names = with_names_of(input.names().clone(), args.events.as_deref())?;
    let window = args
        .window
        .as_deref()
        .map(|w| EventWindow::parse(w, &names))
        .transpose()?;
    // Parsed here, so that a bad mapping names the mapping file, not the trace.
    let mapping_toml = match &args.mapping {
        Some(p) => {
            let geometry = args.geometry.or(input.geometry()).unwrap_or_default();
            Some(hmtt_merge::side_files::read_mapping_checked(p, geometry)?.1)
        }
        None => None,
    };
    let opts = AnalyzeOptions {
        window,
        interval_ns: args.interval_ms.map(|ms| ms * 1e6),
        blp_window_ns: args.blp_ns,
        geometry: args.geometry,
        mapping_toml,
        interleave_shift: args.interleave_shift,
        top_pages: args.top,
        stream_window: args.stream_window,
        reuse: args.reuse.first,
        reuse_beside: args.reuse.beside,
        ..AnalyzeOptions::default()
    };
    if let Some(path) = &args.partial {
        let blocks = args.blocks.clone().unwrap_or(0..usize::MAX);
        let blocks = write_partial_file(data, &opts, blocks, path)?;
        status!(
            "wrote the analysis of blocks {}..{} of {} to {}",
            blocks.start,
            blocks.end,
            trace.display(),
            path.display()
        );
        return Ok(());
    }
    let start = std::time::Instant::now();
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let (analysis, analyzer) = analyze_parts(data, &input, &opts, threads)
        .with_context(|| format!("reading {}", trace.display()))?;
    let secs = start.elapsed().as_secs_f64();
    tracing::info!(
        "analysed {} references in {secs:.2} s",
        analysis.mix.references()
    );
    if let Some(dir) = &args.plot {
        let pictures = Pictures::collect(&input, &opts, &analysis, &analyzer)
            .with_context(|| format!("reading {}", trace.display()))?;
        let files = plot::draw_all(dir, &analysis, &pictures, args.plot_format)?;
        status!("wrote {} pictures into {}", files.len(), dir.display());
    }
    write_json(&args, &analysis)?;
    let name = trace.display().to_string();
    print(&args, &name, &analysis)
}

/// `--log`: the physical trace replayed with the kernel log into a
/// temporary virtual trace file (removed when dropped).
fn replay(
    args: &Args,
    trace: &std::path::Path,
    log: &std::path::Path,
) -> anyhow::Result<tempfile::NamedTempFile> {
    let file = InputFile::open(trace)?;
    let view = file.physical("analyze --log", args.incomplete.checks(true))?;
    let log_bytes = hmtt_merge::side_files::read_log(log)?;
    let image = hmtt_format::klog::read_image(&log_bytes).map_err(|(i, e)| match i {
        Some(i) => anyhow::anyhow!("{}: record {i}: {e}", log.display()),
        None => anyhow::anyhow!("{}: not a usable kernel log: {e}", log.display()),
    })?;
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let file = tempfile::Builder::new()
        .prefix("hmtt-analyze-")
        .suffix(".hmttvtrace")
        .tempfile()
        .context("creating the replayed trace's temporary file")?;
    let report = replayed::replay_into(&view, &image.records, &names, file.path())
        .with_context(|| format!("replaying {} with {}", trace.display(), log.display()))?;
    status!(
        "replayed {} with {}: {} of {} references translated",
        trace.display(),
        log.display(),
        report.translated,
        report.references
    );
    Ok(file)
}

fn write_json(args: &Args, analysis: &Analysis) -> anyhow::Result<()> {
    if let Some(path) = args.json.as_ref().and_then(JsonOut::file) {
        analysis.write_json_file(path)?;
    }
    Ok(())
}

/// Refuses an output (`--json`, `--partial`, `--plot` or a picture in it)
/// that is one of the inputs (the trace, `--mapping`, `--events`,
/// `--combine`'s files), before anything is written.
fn refuse_outputs_over_inputs(args: &Args) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = [&args.trace, &args.mapping, &args.events, &args.log]
        .into_iter()
        .flatten()
        .chain(&args.combine)
        .map(PathBuf::as_path)
        .collect();
    let outputs = AnalysisOutputs {
        json: args.json.as_ref().and_then(JsonOut::file),
        partial: args.partial.as_deref(),
        plot: args.plot.as_deref(),
    };
    Ok(outputs.refuse_over_inputs(&inputs)?)
}

/// `--combine`: the partial analyses merged.
fn combine(args: &Args) -> anyhow::Result<()> {
    let mut parts = Vec::with_capacity(args.combine.len());
    for path in &args.combine {
        let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        parts.push(read_partial(f).with_context(|| format!("reading {}", path.display()))?);
    }
    let (analysis, _, _, _) = partial::combine(parts).context("combining the partial analyses")?;
    write_json(args, &analysis)?;
    let name = format!("combined from {} partial analyses", args.combine.len());
    print(args, &name, &analysis)
}

/// Prints the analysis of `name` on standard output (as JSON with
/// `--json -`).
fn print(args: &Args, name: &str, analysis: &Analysis) -> anyhow::Result<()> {
    if args.json == Some(JsonOut::Stdout) {
        return to_stdout("writing the analysis", |out| analysis.write_json(out));
    }
    let report = AnalysisReport {
        name,
        window: args.window.as_deref(),
        analysis,
    };
    to_stdout("writing the analysis", |out| write!(out, "{report}"))
}
