//! The arguments of `hmtt analyze`.

use std::path::PathBuf;

use hmtt_analyze::plot;
use hmtt_format::Geometry;

use crate::output::JsonOut;
use crate::shared::{parse_positive, usize_in};

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
    #[arg(long, default_value_t = hmtt_analyze::bank_parallelism::DEFAULT_WINDOW_NS,
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
    #[arg(long, default_value_t = hmtt_analyze::streams::DEFAULT_WINDOW,
          value_parser = usize_in(1, 65_536))]
    pub stream_window: usize,
    /// Reuse distances: `exact` (every reference), `sampled[:RATE]`
    /// (SHARDS at a fixed rate, default 0.01) or `sampled-size[:LINES]`
    /// (SHARDS keeping at most LINES lines, default 8192), or `exact` and
    /// a sampled mode together (`exact,sampled:0.01`: both in the JSON and
    /// the reuse_cdf picture).
    #[arg(long, default_value = "exact")]
    pub reuse: hmtt_analyze::reuse_sampled::ReuseModes,
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
    /// With `--partial`: save the grids of the pictures of `--blocks`
    /// instead, over these axes (`--write-plot-axes`), for `--combine
    /// --plot`.
    #[arg(long, value_name = "AXES", requires = "partial")]
    pub plot_axes: Option<PathBuf>,
    /// Merge these partial analyses (`--partial`) of one trace, covering
    /// all its blocks, into the report of the whole trace; with `--plot`,
    /// also its pictures partials (`--plot-axes`), covering all its blocks.
    #[arg(long, num_args = 1.., value_name = "PARTIAL", conflicts_with_all = ["trace", "window"])]
    pub combine: Vec<PathBuf>,
    /// With `--combine`: write the axes of the whole trace's pictures
    /// (its time span, the pages touched, the hottest pages) to this file,
    /// for the pictures partials (`--plot-axes`).
    #[arg(long, value_name = "FILE", requires = "combine")]
    pub write_plot_axes: Option<PathBuf>,
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
    /// Compute the trace-side twin of the board's page reuse unit (a
    /// 128-page LRU stack of 4 KiB pages over the READ and WRITE records)
    /// even when the trace has no board statistics beside it (with them,
    /// `TRACE.stats.jsonl`, the twin is always computed and compared).
    #[arg(long, conflicts_with = "combine")]
    pub board_twin: bool,
    /// Write every figure as JSON to this file ("-": standard output,
    /// instead of the text).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

/// `--blocks A..B`, a non-empty range of block numbers.
fn parse_blocks(s: &str) -> Result<std::ops::Range<usize>, hmtt_format::text::given::GivenError> {
    let (a, b) = hmtt_format::text::parse_range(s)?;
    Ok(usize::try_from(a).unwrap_or(usize::MAX)..usize::try_from(b).unwrap_or(usize::MAX))
}
