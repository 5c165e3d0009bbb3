//! `hmtt analyze`: the read/write mix, bandwidth over time, banks, row
//! locality, hot pages, reuse distances and streams of a trace (physical,
//! archive or virtual), as text, JSON (`--json`) and pictures (`--plot`).
//! The analyses are `hmtt_merge::analyze`; this module parses and prints.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile};
use hmtt_format::events::EventWindow;
use hmtt_format::input::AnyInput;
use hmtt_format::Geometry;
use hmtt_merge::analyze::partial::{self, read_partial, write_partial};
use hmtt_merge::analyze::pictures::Pictures;
use hmtt_merge::analyze::{analyze_parts, plot, Analysis, AnalyzeOptions, TraceInput};

use crate::shared::{open_input, positive_finite, to_stdout, usize_in, with_names_of, TraceBytes};

/// Arguments of `hmtt analyze`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  hmtt analyze run.hmtttrace\n  \
hmtt analyze run.hmtttrace --window quicksort_begin,quicksort_end --plot plots/ --json run.json\n  \
hmtt analyze run.hmttvtrace --interval-ms 0.1\n  \
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
    #[arg(long, value_parser = positive_finite)]
    pub interval_ms: Option<f64>,
    /// Window of bank-level parallelism (distinct banks per window), ns,
    /// positive and finite.
    #[arg(long, default_value_t = hmtt_merge::analyze::bank_parallelism::DEFAULT_WINDOW_NS,
          value_parser = positive_finite)]
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
    /// (SHARDS keeping at most LINES lines, default 8192).
    #[arg(long, default_value = "exact")]
    pub reuse: hmtt_merge::analyze::reuse_sampled::ReuseMode,
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
    /// Draw the pictures (PNG and SVG) into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write every figure as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
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
    let bytes = TraceBytes::open(&trace)?;
    let data = bytes.as_slice();
    let opened = open_input(&trace, &bytes, args.incomplete, true)?;
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
            let text = hmtt_merge::side_files::read_mapping_text(p)?;
            let geometry = args.geometry.or(input.geometry()).unwrap_or_default();
            hmtt_format::AddressMapping::from_toml(&text, geometry)
                .with_context(|| format!("mapping file {}", p.display()))?;
            Some(text)
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
        reuse: args.reuse,
        ..AnalyzeOptions::default()
    };
    if let Some(path) = &args.partial {
        let creating = || format!("creating {}", path.display());
        let out = AtomicFile::create(path).with_context(creating)?;
        let f = out.file().try_clone().with_context(creating)?;
        let blocks = write_partial(data, &opts, args.blocks.clone().unwrap_or(0..usize::MAX), f)
            .with_context(|| format!("writing {}", path.display()))?;
        out.commit()
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
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
        let files = plot::draw_all(dir, &analysis, &pictures)?;
        eprintln!("wrote {} pictures into {}", files.len(), dir.display());
    }
    write_json(&args, &analysis)?;
    let name = trace.display().to_string();
    to_stdout("writing the analysis", |out| {
        print(out, &args, &name, &analysis)
    })
}

fn write_json(args: &Args, analysis: &Analysis) -> anyhow::Result<()> {
    if let Some(path) = &args.json {
        let creating = || format!("creating {}", path.display());
        let out = AtomicFile::create(path).with_context(creating)?;
        let mut w = std::io::BufWriter::new(out.file().try_clone().with_context(creating)?);
        serde_json::to_writer_pretty(&mut w, analysis)
            .map_err(std::io::Error::from)
            .and_then(|()| w.flush())
            .and_then(|()| out.commit())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Refuses an output (`--json`, `--partial`, `--plot` or a picture in it)
/// that is one of the inputs (the trace, `--mapping`, `--events`,
/// `--combine`'s files), before anything is written.
fn refuse_outputs_over_inputs(args: &Args) -> anyhow::Result<()> {
    let inputs: Vec<&std::path::Path> = [&args.trace, &args.mapping, &args.events]
        .into_iter()
        .flatten()
        .chain(&args.combine)
        .map(PathBuf::as_path)
        .collect();
    let mut outputs: Vec<PathBuf> = [&args.json, &args.partial, &args.plot]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    if let Some(dir) = &args.plot {
        outputs.extend(plot::file_names().map(|f| dir.join(f)));
        // The process pictures' names depend on the trace: any input named
        // as one may be written over.
        outputs.extend(
            inputs
                .iter()
                .filter_map(|i| i.file_name()?.to_str())
                .filter(|name| plot::is_picture_file(name))
                .map(|name| dir.join(name)),
        );
    }
    for out in &outputs {
        refuse_output_over_input(out, inputs.iter().copied())?;
    }
    Ok(())
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
    to_stdout("writing the analysis", |out| {
        print(out, args, &name, &analysis)
    })
}

fn print(out: &mut dyn Write, args: &Args, name: &str, a: &Analysis) -> std::io::Result<()> {
    let m = &a.mix;
    let refs = m.references();
    let pct = |x: u64| hmtt_merge::analyze::percent(x, refs);
    writeln!(
        out,
        "{} {}: {refs} references over {:.3} ms{}",
        if a.virtual_trace {
            "virtual trace"
        } else {
            "trace"
        },
        name,
        a.duration_ns / 1e6,
        match (&args.window, a.window) {
            (Some(w), Some((b, e))) => format!(" in the window {w} (events {b},{e})"),
            _ => String::new(),
        }
    )?;
    if m.lost_references > 0 || m.gaps > 0 {
        writeln!(
            out,
            "not in any figure: {} references the board dropped (LOST records), {} capture gaps ({} packets missing)",
            m.lost_references, m.gaps, m.gap_packets
        )?;
    }
    writeln!(out, "\nread/write mix")?;
    writeln!(
        out,
        "  reads {} ({:.1}%), writes {} ({:.1}%)",
        m.reads,
        pct(m.reads),
        m.writes,
        pct(m.writes)
    )?;
    for (b, (r, w)) in &m.by_board {
        writeln!(out, "  board {b}: {r} reads, {w} writes")?;
    }
    if a.virtual_trace {
        let [cr, cw, dr, dw] = m.cpu_dma;
        writeln!(
            out,
            "  CPU read {cr}, CPU write {cw}, DMA read {dr}, DMA write {dw}; translated {} ({:.1}%)",
            m.translated,
            pct(m.translated)
        )?;
    }
    let t = &a.timeline;
    writeln!(
        out,
        "\nbandwidth over time: {} intervals of {:.3} ms (--json or --plot for all)",
        t.intervals.len(),
        t.interval_ns / 1e6
    )?;
    let peak = t.intervals.iter().map(|r| r.mb_per_s).fold(0.0, f64::max);
    let mean = if a.duration_ns > 0.0 {
        refs as f64 * 64.0 / a.duration_ns * 1e3
    } else {
        0.0
    };
    writeln!(out, "  mean {mean:.1} MB/s, peak interval {peak:.1} MB/s")?;
    writeln!(
        out,
        "  {:>12} {:>10} {:>10} {:>12} {:>10}",
        "start_ms", "reads", "writes", "MB/s", "banks"
    )?;
    let step = t.intervals.len().div_ceil(16).max(1);
    for r in t.intervals.iter().step_by(step) {
        writeln!(
            out,
            "  {:>12.4} {:>10} {:>10} {:>12.1} {:>10.2}",
            r.start_ns / 1e6,
            r.reads,
            r.writes,
            r.mb_per_s,
            r.mean_banks
        )?;
    }
    if step > 1 {
        writeln!(out, "  (every {step}th interval shown)")?;
    }
    writeln!(
        out,
        "  I-code events: {}",
        t.events.len() as u64 + t.events_dropped
    )?;
    let b = &a.banks;
    writeln!(
        out,
        "\nbanks (geometry {}, from the {}): {} banks referenced, {} references beyond the DIMM",
        b.geometry,
        b.geometry_source,
        b.banks.len(),
        b.outside
    )?;
    for (board, rank, n) in &b.ranks {
        writeln!(out, "  board {board} rank {rank}: {n} ({:.1}%)", pct(*n))?;
    }
    for r in &b.banks {
        writeln!(
            out,
            "    board {} rank {} bank {:>2}: {:>10} reads {:>10} writes ({:.1}%)",
            r.board,
            r.rank,
            r.bank,
            r.reads,
            r.writes,
            pct(r.reads + r.writes)
        )?;
    }
    let p = &a.bank_parallelism;
    writeln!(
        out,
        "  bank-level parallelism: distinct banks per {:.0} ns window with references: mean {:.2}, max {} ({} windows)",
        p.window_ns, p.mean, p.max, p.windows
    )?;
    let r = &a.row_locality;
    writeln!(
        out,
        "\nrow locality (an estimate: the trace has no ACTIVATE/PRECHARGE; a hit is a reference to the row last referenced in its bank)"
    )?;
    writeln!(
        out,
        "  same row {} ({:.1}%), other row {}, first in bank {}",
        r.same_row, r.hit_percent, r.other_row, r.first_in_bank
    )?;
    let pg = &a.pages;
    writeln!(
        out,
        "\npages: {} distinct 4 KiB pages; the {} hottest take {:.1}% of the references",
        pg.distinct_pages,
        pg.top.len(),
        pg.top_share_percent
    )?;
    for h in &pg.top {
        writeln!(
            out,
            "  {:#014x} {:>10} refs ({} reads, {} writes)",
            h.page,
            h.reads + h.writes,
            h.reads,
            h.writes
        )?;
    }
    let u = &a.reuse;
    let reuses: u64 = u.buckets.iter().map(|b| b.2).sum();
    match &u.sampling {
        None => writeln!(
            out,
            "\nreuse distance (exact LRU stack distance over {} distinct lines): {} first uses, {} reuses",
            u.distinct_lines, u.cold, reuses
        )?,
        Some(s) => writeln!(
            out,
            "\nreuse distance (estimated, SHARDS {} sampling at rate {:.5} from {} references): about {} distinct lines, {} first uses, {} reuses",
            s.mode, s.rate, s.sampled_references, u.distinct_lines, u.cold, reuses
        )?,
    }
    let mut acc = 0;
    for (lo, hi, n) in &u.buckets {
        acc += n;
        writeln!(
            out,
            "  {:>12} ..= {:<12} {:>10}  cdf {:.3}",
            lo,
            hi,
            n,
            acc as f64 / reuses.max(1) as f64
        )?;
    }
    for (label, s) in [
        ("physical", Some(&a.streams)),
        ("virtual", a.virtual_streams.as_ref()),
    ] {
        let Some(s) = s else { continue };
        writeln!(
            out,
            "\nsequential streams over {label} lines (window {}, at least {} lines): SCR {:.1}% ({} of {} references in {} streams), longest {}",
            s.window, s.min_len, s.scr_percent, s.stream_references, s.references, s.streams, s.longest
        )?;
        for (lo, hi, n) in &s.run_lengths {
            writeln!(out, "  run length {lo:>8} ..= {hi:<8} {n:>10}")?;
        }
    }
    if let Some(procs) = &a.processes {
        writeln!(out, "\nprocesses (translated references):")?;
        for p in procs {
            writeln!(
                out,
                "  pid {:>6}: {:>10} reads {:>10} writes, footprint {} pages ({:.1} KiB)",
                p.pid,
                p.reads,
                p.writes,
                p.pages,
                p.footprint_bytes as f64 / 1024.0
            )?;
        }
    }
    if let Some(dma) = &a.dma_requests {
        writeln!(
            out,
            "\nDMA requests (estimated from runs of DMA references; `hmtt replay` gives the logged sizes):"
        )?;
        if dma.is_empty() {
            writeln!(out, "  none")?;
        }
        for d in dma {
            writeln!(
                out,
                "  {:<24} {:>8} requests, {} bytes; <=4K {}, 4K-16K {}, 16K-64K {}, >64K {}",
                d.direction,
                d.requests,
                d.bytes,
                d.size_classes[0],
                d.size_classes[1],
                d.size_classes[2],
                d.size_classes[3]
            )?;
        }
    }
    Ok(())
}
