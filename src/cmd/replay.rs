//! `hmtt replay`: a physical trace and the kernel log → virtual-address
//! references (pid, virtual address), CPU vs DMA, the miss rate and the
//! paper's Tables 3 and 4; views by pid, event window and ranges; output as
//! a virtual trace file (format.md §12) and/or CSV.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hmtt_analyze::export::csv::CsvWriter;
use hmtt_analyze::export::{TraceKind, TraceMeta};
use hmtt_format::archive::AnyTrace;
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile};
use hmtt_format::direct_write::DirectWriter;
use hmtt_format::events::EventWindow;
use hmtt_format::text::parse_range;
use hmtt_merge::replay::archive::ArchiveSource;
use hmtt_merge::replay::writer::VtraceInfo;
use hmtt_merge::replay::{
    RecordSource, ReplayFilter, ReplayOutput, ReplaySummary, Replayer, VtraceWriter,
};

use hmtt_format::input::InputFile;
use hmtt_merge::side_files::with_names_of;

use crate::output::{is_closed_pipe, prints_text, status, to_stdout, JsonOut, Stdout};
use crate::shared::parse_percentage;

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
    #[arg(long, value_name = "PERCENT", value_parser = parse_percentage)]
    pub max_unattributed: Option<f64>,
    /// Write the summary as JSON to this file ("-": standard output,
    /// instead of the text on standard error).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.json == Some(JsonOut::Stdout) && args.csv.as_deref() == Some(Path::new("-")) {
        anyhow::bail!("--csv - and --json - would both write standard output: give one a file");
    }
    let inputs = [Some(&args.trace), Some(&args.log), args.events.as_ref()];
    let json_file = args.json.as_ref().and_then(JsonOut::file);
    let outputs = [args.out.as_deref(), args.csv.as_deref(), json_file];
    for out in outputs.into_iter().flatten() {
        refuse_output_over_input(out, inputs.iter().flatten().map(|p| p.as_path()))?;
    }
    let file = InputFile::open(&args.trace)?;
    let view = file.physical("replay", args.incomplete.checks(true))?;
    let image = hmtt_merge::side_files::read_log_image(&args.log)?;
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
            Some(Box::new(DirectWriter::new(file)))
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
    let summary = ReplaySummary {
        report: r,
        log: &image,
        seconds: secs,
        boards: header.boards,
        tick: header.common.tick_length(),
    };
    if let Some(json) = &args.json {
        json.write("writing the summary", |out| summary.write_json(out))?;
    }
    if prints_text(args.json.as_ref()) {
        // With `--csv -` standard output carries the CSV: the text goes beside it.
        match args.csv.as_deref() == Some(Path::new("-")) {
            true => write!(std::io::stderr(), "{summary}")?,
            false => to_stdout("writing the summary", |out| write!(out, "{summary}"))?,
        }
    }
    r.check_unattributed(args.max_unattributed)?;
    Ok(())
}
