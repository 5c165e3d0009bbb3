//! `hmtt analyze TRACE --log KERNEL_LOG`: a physical trace analysed as its
//! virtual trace, so that the pictures draw each process in its own
//! virtual addresses. The trace is replayed with the log by the replay
//! library ([`hmtt_merge::replay::Replayer`]) into a virtual trace file, the
//! same bytes `hmtt replay TRACE --log KERNEL_LOG --out FILE` writes; the
//! analysis then reads that file as any virtual trace.

use std::path::{Path, PathBuf};

use hmtt_format::input::{InputChecks, InputFile};

use hmtt_format::archive::AnyTrace;
use hmtt_format::events::EventNames;
use hmtt_format::klog::RecordRepr;

use hmtt_merge::error::MergeError;
use hmtt_merge::replay::archive::ArchiveSource;
use hmtt_merge::replay::writer::VtraceInfo;
use hmtt_merge::replay::{
    RecordSource, ReplayFilter, ReplayOutput, ReplayReport, Replayer, VtraceWriter,
};

/// Why a trace could not be replayed for its analysis.
#[derive(Debug, thiserror::Error)]
pub enum ReplayedError {
    #[error("writing the replayed trace: {0}")]
    Write(#[from] MergeError),
    #[error("reading the trace: {0}")]
    Archive(#[from] hmtt_format::archive::ArchiveError),
    #[error(transparent)]
    Input(#[from] hmtt_format::input::InputError),
    #[error(transparent)]
    SideFile(#[from] hmtt_merge::side_files::SideFileError),
    #[error("creating the replayed trace's temporary file: {0}")]
    Temporary(std::io::Error),
    #[error("replaying {} with {}: {source}", trace.display(), log.display())]
    Replaying {
        trace: PathBuf,
        log: PathBuf,
        source: Box<ReplayedError>,
    },
}

/// `hmtt analyze TRACE --log LOG`: the physical trace at `trace` (checked
/// with `checks`) replayed with the kernel log at `log` into a temporary
/// virtual trace file (removed when dropped), the events file `events`
/// naming what the trace does not; with the replay's report.
pub fn replay_to_temporary(
    trace: &Path,
    log: &Path,
    checks: InputChecks,
    events: Option<&Path>,
) -> Result<(tempfile::NamedTempFile, ReplayReport), ReplayedError> {
    let file = InputFile::open(trace)?;
    let view = file.physical("analyze --log", checks)?;
    let image = hmtt_merge::side_files::read_log_image(log)?;
    let names = hmtt_merge::side_files::with_names_of(view.names().clone(), events)?;
    let out = tempfile::Builder::new()
        .prefix("hmtt-analyze-")
        .suffix(".hmttvtrace")
        .tempfile()
        .map_err(ReplayedError::Temporary)?;
    let report = replay_into(&view, &image.records, &names, out.path()).map_err(|e| {
        ReplayedError::Replaying {
            trace: trace.to_path_buf(),
            log: log.to_path_buf(),
            source: Box::new(e),
        }
    })?;
    Ok((out, report))
}

/// Replays every record of `trace` with the kernel `log` (its records in
/// `seq` order, as [`hmtt_format::klog::read_image`] gives them) into the
/// virtual trace file `out`, its event names `names`, as `hmtt replay
/// --out` does without a view; returns the replay's report.
pub fn replay_into(
    trace: &AnyTrace,
    log: &[RecordRepr],
    names: &EventNames,
    out: &Path,
) -> Result<ReplayReport, ReplayedError> {
    let header = trace.header().clone();
    let mut writer = VtraceWriter::create(out)?;
    writer.announce(header.common.tick_ps, header.common.start_ns);
    let archive = match trace {
        AnyTrace::Archive(a) => Some(ArchiveSource::new(a)),
        AnyTrace::Trace(_) => None,
    };
    let source: &dyn RecordSource = match (trace, &archive) {
        (_, Some(a)) => a,
        (AnyTrace::Trace(t), None) => t,
        (AnyTrace::Archive(_), None) => unreachable!("an archive has its source"),
    };
    let mut replayer = Replayer::new(log, ReplayFilter::default());
    let mut failed = None;
    replayer.run_blocks(source, ReplayOutput { markers: true }, &mut |block| {
        if failed.is_none() {
            failed = writer.write(block).err();
        }
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    if let Some(e) = archive.as_ref().and_then(ArchiveSource::take_error) {
        return Err(e.into());
    }
    let info = VtraceInfo {
        start_ns: header.common.start_ns,
        tick_ps: header.common.tick_ps,
        boards: header.boards,
        selection: false,
        names: names.clone(),
    };
    writer.finish(&info, &replayer.report)?;
    Ok(replayer.report)
}
