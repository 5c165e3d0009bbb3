//! `hmtt analyze`: the read/write mix, bandwidth over time, banks, row
//! locality, hot pages, reuse distances and streams of a trace (physical,
//! archive or virtual), as text, JSON (`--json`) and pictures (`--plot`).
//! The analyses are `hmtt_analyze`; this module parses and prints.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_analyze::board_twin;
use hmtt_analyze::{
    analyze_parts, combine_files, pictures_partial, plot, read_plot_axes_file, replayed,
    write_partial_file, write_pictures_partial_file, write_plot_axes_file, Analysis,
    AnalysisOutputs, AnalysisReport, AnalyzeOptions, TraceInput,
};
use hmtt_format::events::EventWindow;
use hmtt_format::input::{AnyInput, InputFile};
use hmtt_merge::board_statistics::side_file_path;

use hmtt_merge::side_files::with_names_of;

use crate::output::{status, to_stdout, JsonOut};

mod args;
pub use args::Args;

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.combine.is_empty() {
        refuse_outputs_over_inputs(&args)?;
        return combine(&args);
    }
    let trace = args.trace.clone().expect("clap requires a trace");
    refuse_outputs_over_inputs(&args)?;
    // With a kernel log, the trace analysed is the replayed one.
    let replayed = match &args.log {
        Some(log) => {
            let checks = args.incomplete.checks(true);
            let events = args.events.as_deref();
            let (file, report) = replayed::replay_to_temporary(&trace, log, checks, events)?;
            status!(
                "replayed {} with {}: {} of {} references translated",
                trace.display(),
                log.display(),
                report.translated,
                report.references
            );
            Some(file)
        }
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
        let (what, blocks) = match &args.plot_axes {
            Some(axes) => {
                let axes = read_plot_axes_file(axes)?;
                let blocks = write_pictures_partial_file(data, &axes, blocks, path)?;
                ("pictures", blocks)
            }
            None => ("analysis", write_partial_file(data, &opts, blocks, path)?),
        };
        status!(
            "wrote the {what} of blocks {}..{} of {} to {}",
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
    let mut analysis = analysis;
    analysis.board_statistics =
        board_twin::board_statistics(&input, &side_file_path(&trace), &opts, args.board_twin)
            .with_context(|| format!("the board statistics of {}", trace.display()))?;
    if let Some(dir) = &args.plot {
        let pictures =
            pictures_partial::collect(data, &input, &opts, &analysis, &analyzer, threads)
                .with_context(|| format!("reading {}", trace.display()))?;
        let files = plot::draw_all(dir, &analysis, &pictures, args.plot_format)?;
        status!("wrote {} pictures into {}", files.len(), dir.display());
    }
    write_json(&args, &analysis)?;
    let name = trace.display().to_string();
    print(&args, &name, &analysis)
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
        .chain(&args.plot_axes)
        .map(PathBuf::as_path)
        .collect();
    let outputs = AnalysisOutputs {
        json: args.json.as_ref().and_then(JsonOut::file),
        partial: args.partial.as_deref(),
        plot_axes: args.write_plot_axes.as_deref(),
        plot: args.plot.as_deref(),
    };
    Ok(outputs.refuse_over_inputs(&inputs)?)
}

/// `--combine`: the partial analyses merged, and their pictures partials
/// into the pictures.
fn combine(args: &Args) -> anyhow::Result<()> {
    let combined = combine_files(&args.combine)?;
    if let Some(path) = &args.write_plot_axes {
        write_plot_axes_file(&combined.axes, path)?;
    }
    if let Some(dir) = &args.plot {
        let pictures = combined.pictures.as_ref().context(
            "--plot with --combine needs the pictures partials of the trace's blocks \
             (hmtt analyze TRACE --blocks A..B --plot-axes AXES --partial FILE)",
        )?;
        let files = plot::draw_all(dir, &combined.analysis, pictures, args.plot_format)?;
        status!("wrote {} pictures into {}", files.len(), dir.display());
    }
    write_json(args, &combined.analysis)?;
    let name = format!("combined from {} partial files", args.combine.len());
    print(args, &name, &combined.analysis)
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
