//! `hmtt qemu`: Linux under QEMU TCG with the real `hmtt.ko`, the
//! `qemu-plugin-hmtt` TCG plugin standing in for the board's DIMM, and the
//! simulated memory path ([`crate::qemu`]) behind it.
//!
//! The guest boots Debian's kernel from a busybox initramfs made here; its
//! `/init` loads `hmtt.ko`, begins the trace (event 0), loads the run's
//! extra kernel modules (so their init work is traced), runs the command,
//! ends the trace (event 1), copies what is left in `/dev/hmtt_log` to its
//! second serial port (a file on the host) and powers off. The plugin
//! streams the accesses it saw between the two events through a FIFO that
//! the host reads as the guest runs.

use crate::machine::{SimConfig, SimError};
use crate::outdir::files;
use crate::qemu::{
    reference_row_into, Frames, GuestConfigSpace, GuestPidSpace, GuestTasks, QemuReader,
    REFERENCE_CSV_HEADER,
};
use crate::stream::{run_streamed_with, StreamOutputs, StreamReport};
use hmtt_format::config::InnerCommand;
use hmtt_format::events::{EventNames, EventsError};
use hmtt_format::klog::{FileHeaderRepr, RECORD_LEN};
use hmtt_format::text::Row;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

mod boot;
pub use boot::{
    init_script, qemu_command, run_plain, write_initramfs, GuestOutcome, GuestRun, Kit, MAX_VCPUS,
};
use boot::{prepare, start};

/// Accesses the machine runs between two hand-overs to the writers.
const ACCESSES_PER_BATCH: u64 = 1 << 16;

/// The plugin's record stream, the guest's drained kernel log and the
/// per-line reference list, inside the output directory.
pub mod names {
    pub const FIFO: &str = "qemu-accesses.fifo";
    pub const GUEST_LOG_RAW: &str = "guest-log.raw";
    pub const CONSOLE: &str = "console.log";
    pub const REFERENCES_CSV: &str = "qemu-refs.csv";
    pub const INITRAMFS: &str = "initramfs.cpio";
}

/// Why a QEMU run failed.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("{path}: {error}")]
    Events { path: String, error: EventsError },
    #[error("{0}")]
    Guest(String),
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> QemuError + '_ {
    move |error| QemuError::Io {
        path: path.display().to_string(),
        error,
    }
}

/// A traced run: what the guest did, what the memory path made of it, and
/// how many accesses the plugin streamed. Its `Display` is `hmtt qemu`'s
/// summary.
#[derive(Debug)]
pub struct TracedRun {
    pub guest: GuestOutcome,
    /// The guest's vCPUs.
    pub vcpus: u32,
    pub streamed: Streamed,
}

impl std::fmt::Display for TracedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (t, g) = (&self.streamed, &self.guest);
        let s = &t.report.summary;
        let rate = t.accesses as f64 / t.stream_secs.max(1e-9);
        writeln!(
            f,
            "traced {} guest accesses ({} line references, {} memory requests, {} packets) in {:.2} s of streaming: {:.2} M accesses/s",
            t.accesses,
            t.line_references,
            s.stats.memory_requests,
            s.packets.iter().sum::<u64>(),
            t.stream_secs,
            rate / 1e6
        )?;
        writeln!(
            f,
            "guest: {} vCPU(s); command took {:.3} s, exit status {}; {} kernel log records; {} context switches; QEMU ran {:.1} s",
            self.vcpus, g.command_secs, g.status, g.log_records, t.task_switches, g.wall_secs
        )?;
        writeln!(
            f,
            "page-crossing accesses: {} on two frames (the second page's from QEMU's TLB), {} onto MMIO or ROM (those bytes dropped)",
            t.pages.two_frames, t.pages.next_not_ram
        )?;
        for (b, c) in s.board_counters.iter().enumerate() {
            if c.events_dropped > 0 {
                writeln!(
                    f,
                    "board {b}: {} events lost to TX FIFO overflow",
                    c.events_dropped
                )?;
            }
        }
        Ok(())
    }
}

/// Boots the guest with the plugin and runs its accesses through the
/// memory path as they come, writing `outputs` (with `outputs.dir`, also
/// the guest's kernel log as `pagetable.hmttlog`, the names of `events`,
/// the events files of the program and the modules, merged into one events
/// file, and with `truth_csv` every line reference as `qemu-refs.csv`).
pub fn run_traced(
    run: &GuestRun,
    dir: &Path,
    cfg: SimConfig,
    outputs: StreamOutputs<'_>,
    events: &[PathBuf],
) -> Result<TracedRun, QemuError> {
    // Before the boot: a conflict between the files is found at once.
    let event_names = merge_events(events)?;
    let (initrd, guest_log) = prepare(run, dir, true)?;
    let fifo = dir.join(names::FIFO);
    let _ = std::fs::remove_file(&fifo);
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes())
        .map_err(|_| QemuError::Guest("the FIFO path holds a NUL".into()))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(io_err(&fifo)(std::io::Error::last_os_error()));
    }
    let start_ns = cfg.wall_start_ns;
    let out_dir = outputs.dir.map(Path::to_path_buf);
    let mut cmd = qemu_command(run, &initrd, &guest_log, Some(&fifo));
    let guest = start(run, &mut cmd, &dir.join(names::CONSOLE), Some(fifo.clone()))?;
    let reader = File::open(&fifo).map_err(io_err(&fifo));
    if let Ok(r) = &reader {
        widen_pipe(r);
    }
    let streamed =
        reader.and_then(|reader| trace_records(reader, &fifo, run.space, run.pids, cfg, outputs));
    let _ = std::fs::remove_file(&fifo);
    let mut streamed = streamed?;
    let guest = guest.finish(run, &guest_log)?;
    // The memory path wrote an empty page-table log: the guest's is the
    // run's.
    streamed.report.summary.klog_records = guest.log_records;
    if let Some(d) = &out_dir {
        write_guest_log(&guest_log, &d.join(files::KLOG), start_ns)?;
        if !events.is_empty() {
            let to = d.join(files::EVENTS);
            std::fs::write(&to, event_names.to_toml()).map_err(io_err(&to))?;
        }
        write_guest_summary(&d.join(files::SUMMARY), run, &guest, &streamed)?;
    }
    Ok(TracedRun {
        guest,
        vcpus: run.vcpus,
        streamed,
    })
}

/// Room the plugin's FIFO is given, when the system allows it.
const FIFO_BYTES: i32 = 16 << 20;

/// Gives the FIFO from the plugin [`FIFO_BYTES`] of room, or as much as the
/// system allows (`/proc/sys/fs/pipe-max-size` without CAP_SYS_RESOURCE).
/// With the default 64 KiB, about 2,700 accesses, QEMU and the memory path
/// took turns: on a machine with fewer cores than the three threads, each
/// blocked on the other many times a second instead of running side by
/// side.
fn widen_pipe(fifo: &File) {
    use std::os::fd::AsRawFd;
    let fd = fifo.as_raw_fd();
    let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(1 << 20);
    for bytes in [FIFO_BYTES, max.min(FIFO_BYTES)] {
        // SAFETY: fcntl on a file descriptor this function borrows.
        if unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes) } >= 0 {
            return;
        }
    }
    tracing::debug!("the FIFO keeps the system's default size");
}

/// Completes the memory path's `summary.json` with what only the guest
/// knows: its kernel log's records, and a `qemu` section (vCPUs, accesses,
/// line references, context switches, page crossings).
fn write_guest_summary(
    path: &Path,
    run: &GuestRun,
    guest: &GuestOutcome,
    streamed: &Streamed,
) -> Result<(), QemuError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let mut summary: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| io_err(path)(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let serde_json::Value::Object(fields) = &mut summary else {
        return Err(QemuError::Guest(format!(
            "{}: not a JSON object",
            path.display()
        )));
    };
    fields.insert("klog_records".into(), guest.log_records.into());
    fields.insert(
        "qemu".into(),
        serde_json::json!({
            "vcpus": run.vcpus,
            "accesses": streamed.accesses,
            "line_references": streamed.line_references,
            "task_switches": streamed.task_switches,
            "page_crossings": streamed.pages,
            "command_exit_status": guest.status,
        }),
    );
    let out = serde_json::to_string_pretty(&summary)
        .map_err(|e| io_err(path)(std::io::Error::other(e)))?;
    std::fs::write(path, out).map_err(io_err(path))
}

/// What [`trace_records`] did.
#[derive(Debug, Clone)]
pub struct Streamed {
    pub report: StreamReport,
    /// Guest memory accesses run through the memory path (context-switch
    /// records and untranslated accesses not counted).
    pub accesses: u64,
    /// Line references they made (I-codes included): the rows of
    /// `qemu-refs.csv`.
    pub line_references: u64,
    /// Context switches the guest announced ([`GuestPidSpace`]).
    pub task_switches: u64,
    pub pages: PageCrossings,
    /// Host seconds from the first access received (the BEGIN_TRACING
    /// store, which the plugin writes out at once) to the memory path's
    /// last output written.
    pub stream_secs: f64,
}

/// What became of accesses that QEMU's TLB did not fully translate, and
/// of page-crossing ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PageCrossings {
    /// Accesses whose bytes ran onto a second page with a RAM frame:
    /// their lines there are on that frame.
    pub two_frames: u64,
    /// Accesses that ran onto MMIO or ROM: those bytes are dropped.
    pub next_not_ram: u64,
    /// Accesses whose second page QEMU's TLB did not translate: only their
    /// first page's lines are traced (should be 0).
    pub next_untranslated: u64,
    /// Accesses whose own page QEMU's TLB did not translate: none of their
    /// lines is traced (should be 0).
    pub untranslated: u64,
}

impl PageCrossings {
    /// Accesses of which some line is not traced for want of a frame.
    pub fn lost(&self) -> u64 {
        self.next_untranslated + self.untranslated
    }
}

/// The host side of a traced run: reads the plugin's records from `reader`
/// (named `path` in errors) until its end and runs them through the memory
/// path, writing `outputs` (with `outputs.dir` and `truth_csv`, also every
/// line reference as `qemu-refs.csv`). A recorded stream gives the same
/// files as the live one.
///
/// The stream is the trace's window: it ends with the END_TRACING store
/// (the plugin closes it there). An access after that store would be in
/// the ground truth and not in the board's trace, so the run fails instead.
pub fn trace_records(
    reader: impl Read,
    path: &Path,
    space: GuestConfigSpace,
    pids: GuestPidSpace,
    cfg: SimConfig,
    outputs: StreamOutputs<'_>,
) -> Result<Streamed, QemuError> {
    let mut refs = match (outputs.dir, outputs.truth_csv) {
        (Some(d), true) => {
            let p = d.join(names::REFERENCES_CSV);
            std::fs::create_dir_all(d).map_err(io_err(d))?;
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&p).map_err(io_err(&p))?);
            writeln!(w, "{REFERENCE_CSV_HEADER}").map_err(io_err(&p))?;
            Some((w, p))
        }
        _ => None,
    };
    let mut reader = QemuReader::new(reader);
    let mut accesses = 0u64;
    let mut lines = 0u64;
    let mut pages = PageCrossings::default();
    let end_tracing = InnerCommand::EndTracing.index();
    let mut ended = false;
    let mut after_end = 0u64;
    let mut first: Option<Instant> = None;
    let mut csv_error = None;
    let mut ref_text = Vec::new();
    let mut ref_row = Row::new();
    let mut tasks = GuestTasks::default();
    let report = run_streamed_with(cfg, outputs, |m| {
        let mut more = true;
        for _ in 0..ACCESSES_PER_BATCH {
            let a = match reader.next_access() {
                Ok(Some(a)) => a,
                Ok(None) => {
                    more = false;
                    break;
                }
                Err(error) => {
                    return Err(SimError::Io {
                        path: path.display().to_string(),
                        error,
                    })
                }
            };
            if tasks.take(&a, &pids) {
                continue;
            }
            if ended {
                after_end += 1;
                continue;
            }
            match a.frames {
                Frames::OnePage => {}
                Frames::TwoPages(_) => pages.two_frames += 1,
                Frames::NextNotRam => pages.next_not_ram += 1,
                Frames::NextUntranslated => pages.next_untranslated += 1,
                Frames::Untranslated => {
                    pages.untranslated += 1;
                    continue;
                }
            }
            first.get_or_insert_with(Instant::now);
            accesses += 1;
            m.guest_access(&a, &space, tasks.current(a.vcpu), |r| {
                if refs.is_some() {
                    ref_row.clear();
                    reference_row_into(&mut ref_row, lines, r);
                    ref_text.extend_from_slice(ref_row.as_bytes());
                }
                lines += 1;
            })?;
            // The board stops tracing at any access to the line.
            ended = space.event_of(a.paddr) == Some(end_tracing);
        }
        if let Some((w, _)) = &mut refs {
            if let Err(e) = w.write_all(&ref_text) {
                csv_error.get_or_insert(e);
            }
            ref_text.clear();
        }
        Ok(more)
    });
    let stream_secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let report = report?;
    if let Some((mut w, p)) = refs {
        if let Some(e) = csv_error {
            return Err(io_err(&p)(e));
        }
        w.flush().map_err(io_err(&p))?;
    }
    if after_end > 0 {
        return Err(QemuError::Guest(format!(
            "{}: {after_end} accesses after the END_TRACING store (the plugin closes its stream there; a plugin of another version?): they are not in the trace",
            path.display()
        )));
    }
    Ok(Streamed {
        report,
        accesses,
        line_references: lines,
        task_switches: tasks.switches(),
        pages,
        stream_secs,
    })
}

/// The names of every events file, each index and each name used once.
pub fn merge_events(paths: &[PathBuf]) -> Result<EventNames, QemuError> {
    let mut names = EventNames::default();
    for p in paths {
        let text = std::fs::read_to_string(p).map_err(io_err(p))?;
        let events_err = |error| QemuError::Events {
            path: p.display().to_string(),
            error,
        };
        for (name, index) in EventNames::parse(&text).map_err(events_err)?.iter() {
            names.insert(name, index).map_err(events_err)?;
        }
    }
    Ok(names)
}

/// The drained records behind a `.hmttlog` file header.
fn write_guest_log(raw: &Path, to: &Path, start_ns: u64) -> Result<(), QemuError> {
    let records = std::fs::read(raw).map_err(io_err(raw))?;
    if !records.len().is_multiple_of(RECORD_LEN) {
        return Err(QemuError::Guest(format!(
            "{}: {} bytes is not a whole number of {RECORD_LEN}-byte log records",
            raw.display(),
            records.len()
        )));
    }
    let mut out = FileHeaderRepr { start_ns }.to_bytes().to_vec();
    out.extend_from_slice(&records);
    std::fs::write(to, out).map_err(io_err(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_files_merge_and_conflicts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let prog = write("prog.toml", "[events]\nsort_begin = 64\nsort_end = 65\n");
        let module = write("mod.toml", "[events]\ndmatest_begin = 118\n");
        let names = merge_events(&[prog.clone(), module]).unwrap();
        let merged: Vec<(&str, u32)> = names.iter().collect();
        assert_eq!(
            merged,
            [("dmatest_begin", 118), ("sort_begin", 64), ("sort_end", 65)]
        );
        let clash = write("clash.toml", "[events]\nother = 65\n");
        assert!(matches!(
            merge_events(&[prog, clash]),
            Err(QemuError::Events { path, .. }) if path.ends_with("clash.toml")
        ));
    }
}
