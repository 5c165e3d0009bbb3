//! `hmtt stats`: counts, read/write mix, bandwidth over time (the paper's
//! Table 5), tags seen and losses of a trace file.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_merge::board_statistics::{read_statistics, side_file_path};
use hmtt_merge::stats::{StatsReport, TraceStats};

use hmtt_format::atomic_file::refuse_output_over_input;
use hmtt_format::input::InputFile;

use crate::output::{prints_text, to_stdout, JsonOut};
use crate::shared::{parse_positive, usize_in};

/// Arguments of `hmtt stats`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  hmtt stats run.hmtttrace --interval-ms 10\n  hmtt stats run.hmtttrace --json stats.json"
)]
pub struct Args {
    /// Trace file written by `hmtt merge`, or its archive (.hmttz).
    pub trace: PathBuf,
    /// Length of one bandwidth interval in milliseconds of traced time,
    /// positive and finite.
    #[arg(long, default_value_t = 1.0, value_parser = parse_positive)]
    pub interval_ms: f64,
    /// Most intervals to print (the rest are summed up), 1..=1048576.
    #[arg(long, default_value_t = 20, value_parser = usize_in(1, 1 << 20))]
    pub max_rows: usize,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
    /// Write the statistics as JSON to this file ("-": standard output,
    /// instead of the text).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let side = side_file_path(&args.trace);
    if let Some(json) = args.json.as_ref().and_then(JsonOut::file) {
        refuse_output_over_input(json, [args.trace.as_path(), side.as_path()])?;
    }
    let file = InputFile::open(&args.trace)?;
    let view = file.physical("stats", args.incomplete.checks(true))?;
    let tick = file.tick_length("trace", &view.header().common)?;
    let mut stats = TraceStats::new(tick.ticks_in_ns(args.interval_ms * 1e6), args.max_rows);
    for r in view.records() {
        stats.add(&r.with_context(|| format!("reading {}", args.trace.display()))?);
    }
    let board_stats = if side.is_file() {
        Some(read_statistics(&side, args.max_rows)?)
    } else {
        None
    };
    let (trace, side) = (args.trace.display().to_string(), side.display().to_string());
    let report = StatsReport {
        trace: &trace,
        header: view.header(),
        names: view.names(),
        stats: &stats,
        tick,
        interval_ms: args.interval_ms,
        board_statistics: board_stats.as_deref().map(|b| (side.as_str(), b)),
    };
    if let Some(json) = &args.json {
        json.write("writing the statistics", |out| report.write_json(out))?;
    }
    if prints_text(args.json.as_ref()) {
        to_stdout("writing the statistics", |out| write!(out, "{report}"))?;
    }
    Ok(())
}
