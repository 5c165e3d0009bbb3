//! `hmtt replay`: a physical trace and the kernel log → virtual-address
//! references (pid, virtual address), CPU vs DMA, the miss rate and the
//! paper's Tables 3 and 4; views by pid, event window and ranges; output as
//! a virtual trace file (format.md §12) and/or CSV.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::archive::AnyTrace;
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile};
use hmtt_format::events::EventWindow;
use hmtt_format::text::parse_range;
use hmtt_merge::export::csv::CsvWriter;
use hmtt_merge::export::{TraceKind, TraceMeta};
use hmtt_merge::replay::archive::ArchiveSource;
use hmtt_merge::replay::writer::VtraceInfo;
use hmtt_merge::replay::{
    Ambiguity, Miss, RecordSource, ReplayFilter, ReplayOutput, Replayer, VtraceWriter,
};

use crate::shared::{
    is_closed_pipe, open_physical, percentage, status, with_names_of, Stdout,
    TraceBytes,
};

/// Arguments of `hmtt replay`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  hmtt replay run.hmtttrace --log pagetable.hmttlog --out run.hmttvtrace\n  \
hmtt replay run.hmtttrace --log pagetable.hmttlog --pid 2 --csv refs.csv\n  \
hmtt replay run.hmtttrace --log pagetable.hmttlog --window phase_begin,phase_end --va 0x10000000..0x10100000"
)]
pub struct Args {
    /// Trace file written by `hmtt merge`, or its archive (.hmttz).
    pub trace: PathBuf,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
    /// Kernel log (.hmttlog) written by `hmtt log` or `hmtt sim`.
    #[arg(long)]
    pub log: PathBuf,
    /// Only references of this process.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Only between two events: BEGIN,END (names from the trace's events or
    /// --events, or indices).
    #[arg(long)]
    pub window: Option<String>,
    /// Only this physical range, LO..HI (hex with 0x or decimal).
    #[arg(long)]
    pub pa: Option<String>,
    /// Only this virtual range, LO..HI.
    #[arg(long)]
    pub va: Option<String>,
    /// Events file for names not stored in the trace.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Write the selected references as a virtual trace (.hmttvtrace, read
    /// by `hmtt dump`); tags, gaps and losses are kept whatever the view.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Write the selected references as CSV to this file ("-": standard output).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Fail (after the report and the outputs) when more than this share
    /// of the references that may be a traced process's is not attributed
    /// for certain (given by rule to one of a frame's several owners).
    /// Counted: references to frames a traced process maps, made while a
    /// traced process ran when the log has SWITCH records (default 50),
    /// whenever otherwise (no default: without SWITCH records no frame
    /// several processes map is certain). The kernel's references to its
    /// own memory, and any to frames no traced process maps, are not
    /// counted (the report gives them as unmapped).
    #[arg(long, value_name = "PERCENT", value_parser = percentage)]
    pub max_unattributed: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let inputs = [Some(&args.trace), Some(&args.log), args.events.as_ref()];
    for out in [&args.out, &args.csv].into_iter().flatten() {
        refuse_output_over_input(out, inputs.iter().flatten().map(|p| p.as_path()))?;
    }
    let bytes = TraceBytes::open(&args.trace)?;
    let view = open_physical(&args.trace, &bytes, "replay", args.incomplete, true)?;
    let log_bytes = hmtt_merge::side_files::read_log(&args.log)?;
    let image = hmtt_format::klog::read_image(&log_bytes).map_err(|(i, e)| match i {
        Some(i) => anyhow::anyhow!("{}: record {i}: {e}", args.log.display()),
        None => anyhow::anyhow!("{}: not a usable kernel log: {e}", args.log.display()),
    })?;
    if image.cut_short_bytes > 0 {
        tracing::warn!(
            "{} is cut short: {} bytes of a partial record ignored",
            args.log.display(),
            image.cut_short_bytes
        );
    }
    let log = &image.records;
    let names = with_names_of(view.names().clone(), args.events.as_deref())?;
    let window = args
        .window
        .as_deref()
        .map(|w| EventWindow::parse(w, &names).map(|w| w.events()))
        .transpose()?;
    let filter = ReplayFilter {
        pid: args.pid,
        pa: args.pa.as_deref().map(parse_range).transpose()?,
        va: args.va.as_deref().map(parse_range).transpose()?,
        window,
    };
    let selection = !filter.is_empty();
    let header = view.header().clone();
    let tick = header.common.tick_length();
    // A CSV file is renamed into place once whole (`csv_file`).
    let mut csv_file = None;
    let csv_out: Option<Box<dyn Write>> = match &args.csv {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(Box::new(Stdout::default())),
        Some(p) => {
            let creating = || format!("creating {}", p.display());
            let atomic = AtomicFile::create(p).with_context(creating)?;
            let file = atomic.file().try_clone().with_context(creating)?;
            csv_file = Some(atomic);
            Some(Box::new(BufWriter::with_capacity(1 << 20, file)))
        }
    };
    // The virtual trace's CSV, the same writer as `hmtt dump --csv`.
    let mut csv = match csv_out {
        None => None,
        Some(w) => Some(
            CsvWriter::new(
                w,
                TraceMeta {
                    kind: TraceKind::Virtual,
                    tick_ps: header.common.tick_ps,
                    first_tick: header.common.first_tick,
                    names: names.clone(),
                },
            )
            .context("writing the CSV")?,
        ),
    };
    let mut vout = args.out.as_deref().map(VtraceWriter::create).transpose()?;
    if let Some(w) = vout.as_mut() {
        w.announce(header.common.tick_ps, header.common.start_ns);
    }
    let mut err: Option<anyhow::Error> = None;
    let start = std::time::Instant::now();
    let mut replayer = Replayer::new(log, filter);
    let what = ReplayOutput {
        markers: vout.is_some(),
    };
    let archive = match &view {
        AnyTrace::Archive(a) => Some(ArchiveSource::new(a)),
        AnyTrace::Trace(_) => None,
    };
    let source: &dyn RecordSource = match (&view, &archive) {
        (_, Some(a)) => a,
        (AnyTrace::Trace(t), None) => t,
        (AnyTrace::Archive(_), None) => unreachable!("an archive has its source"),
    };
    replayer.run_blocks(source, what, &mut |block| {
        if err.is_some() {
            return;
        }
        if let Some(w) = vout.as_mut() {
            if let Err(e) = w.write(block) {
                err = Some(e.into());
                return;
            }
        }
        if let Some(w) = csv.as_mut() {
            for v in block.iter().filter(|v| v.is_access()) {
                match w.write_record(v) {
                    Ok(()) => {}
                    // The reader has what it wanted; the replay goes on.
                    Err(e) if is_closed_pipe(&e) => {
                        csv = None;
                        return;
                    }
                    Err(e) => {
                        err = Some(anyhow::Error::from(e).context("writing the CSV"));
                        return;
                    }
                }
            }
        }
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(e) = err {
        return Err(e);
    }
    if let Some(e) = archive.as_ref().and_then(ArchiveSource::take_error) {
        return Err(anyhow::Error::from(e).context(format!("reading {}", args.trace.display())));
    }
    if let Some(w) = csv {
        w.into_inner().flush().context("writing the CSV")?;
    }
    if let (Some(atomic), Some(p)) = (csv_file, &args.csv) {
        atomic
            .commit()
            .with_context(|| format!("writing {}", p.display()))?;
    }
    let r = &replayer.report;
    if let (Some(w), Some(path)) = (vout, &args.out) {
        let records = w.records();
        let info = VtraceInfo {
            start_ns: header.common.start_ns,
            tick_ps: header.common.tick_ps,
            boards: header.boards,
            selection,
            names: names.clone(),
        };
        let size = w.finish(&info, r)?;
        status!(
            "wrote {} ({records} records, {:.1} MB)",
            path.display(),
            size as f64 / 1e6
        );
    }
    let pct = |x: u64| {
        if r.references == 0 {
            0.0
        } else {
            100.0 * x as f64 / r.references as f64
        }
    };
    let out = &mut std::io::stderr();
    writeln!(
        out,
        "replayed {} references with {} log records in {:.2} s ({:.1} M references/s); {} selected",
        r.references,
        log.len(),
        secs,
        r.references as f64 / 1e6 / secs.max(1e-9),
        r.selected
    )?;
    writeln!(
        out,
        "translated to (pid, virtual address): {} ({:.2}%); miss rate {:.2}%",
        r.translated,
        pct(r.translated),
        100.0 * r.miss_rate()
    )?;
    for (m, name) in [
        (Miss::Unmapped, "unmapped"),
        (Miss::Kernel, "kernel (page tables)"),
        (Miss::Dma, "DMA buffers"),
    ] {
        let n = r.miss_count(m);
        writeln!(out, "  misses, {name:<22} {n:>12} ({:.2}%)", pct(n))?;
    }
    writeln!(out, "Table 3 (shares of all references):")?;
    for (i, name) in ["CPU read", "CPU write", "DMA read", "DMA write"]
        .iter()
        .enumerate()
    {
        writeln!(
            out,
            "  {name:<10} {:>12} {:>7.2}%",
            r.table3[i],
            pct(r.table3[i])
        )?;
    }
    writeln!(out, "Table 4 (DMA requests by type):")?;
    if r.dma_requests.is_empty() {
        writeln!(out, "  none")?;
    }
    for (dir, sizes) in &r.dma_requests {
        let avg = sizes.iter().sum::<u64>() as f64 / sizes.len().max(1) as f64;
        let bucket = |lo: u64, hi: u64| sizes.iter().filter(|&&s| s > lo && s <= hi).count();
        writeln!(out, "  {dir:<24} {:>8} requests, average {:.0} bytes; <=4K {}, 4K-16K {}, 16K-64K {}, >64K {}",
            sizes.len(), avg, bucket(0, 4096), bucket(4096, 16384), bucket(16384, 65536), bucket(65536, u64::MAX))?;
    }
    writeln!(
        out,
        "not attributed for certain: {} ({:.2}%)",
        r.unattributed(),
        pct(r.unattributed())
    )?;
    writeln!(
        out,
        "  {:<44} {:>12}",
        "no process maps the frame (unmapped)",
        r.miss_count(Miss::Unmapped)
    )?;
    for a in Ambiguity::ALL {
        writeln!(
            out,
            "  {:<44} {:>12} ({})",
            a.describe(),
            r.ambiguous_count(a),
            a.rule()
        )?;
    }
    if r.switches {
        writeln!(
            out,
            "while a traced process ran: {} references, {} not attributed for certain",
            r.while_traced, r.unattributed_while_traced,
        )?;
    }
    writeln!(
        out,
        "to frames a traced process maps{}: {} references, {} not attributed for certain ({:.2}%, the measure of --max-unattributed)",
        if r.switches { ", while one ran" } else { "" },
        r.attributable,
        r.unattributed_attributable,
        r.unattributed_percent()
    )?;
    let boards = if header.boards > 1 {
        ", counted per board"
    } else {
        ""
    };
    writeln!(
        out,
        "log records placed at their tags: {}; not placed: {} ({} with lost tags applied where found, {} never applied{boards}); tags beyond the log: {}; tags placed out of order: {}; late tags ignored: {}",
        r.records_placed(),
        r.unplaced_count,
        r.lost_tags,
        r.no_tags,
        r.tags_without_record,
        r.tags_reordered,
        r.tags_late
    )?;
    for u in r.unplaced.iter().take(10) {
        writeln!(out, "  {u:?}")?;
    }
    if image.cut_short_bytes > 0 {
        writeln!(
            out,
            "kernel log cut short: {} bytes of a partial record at its end ignored",
            image.cut_short_bytes
        )?;
    }
    if image.seq_holes > 0 {
        writeln!(
            out,
            "kernel log seq holes: {} records missing in {} holes (their mappings are unknown)",
            image.seq_missing, image.seq_holes
        )?;
    }
    if image.duplicates > 0 {
        writeln!(
            out,
            "kernel log duplicate seqs: {} records dropped",
            image.duplicates
        )?;
    }
    if r.lost_window_count > 0 {
        writeln!(
            out,
            "lost windows (references unknown; log records whose tags were lost applied at the end): {}",
            r.lost_window_count
        )?;
        for w in r.lost_windows.iter().take(10) {
            writeln!(
                out,
                "  board {} ticks {}..{} ({:.3}..{:.3} ns), {} packets",
                w.board,
                w.from_tick,
                w.to_tick,
                tick.map_or(0.0, |t| t.ns(w.from_tick)),
                tick.map_or(0.0, |t| t.ns(w.to_tick)),
                w.packets
            )?;
        }
    }
    if let Some(limit) = r.unattributed_limit(args.max_unattributed) {
        let share = r.unattributed_percent();
        let of = if r.switches {
            "of the references to frames a traced process maps, made while one ran,"
        } else {
            "of the references to frames a traced process maps"
        };
        anyhow::ensure!(
            share <= limit,
            "{share:.2}% {of} not attributed for certain, above --max-unattributed {limit} (causes above)"
        );
    }
    Ok(())
}
