//! Copy the kernel log (`/dev/hmtt_log`) into a `.hmttlog` file: the
//! 32-byte header, then the 64-byte records byte for byte
//! (docs/format.md section 8). A plain file of records (for tests, or a
//! saved raw dump) can stand in for the device; it ends at end of file.

use hmtt_format::atomic_file::AtomicFile;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmtt_format::klog::{Event, FileHeaderRepr, Record, RecordRepr, RECORD_LEN};

/// Why draining stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error("cannot open {}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("reading {}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("writing {}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// When to stop.
#[derive(Debug, Clone, Default)]
pub struct StopWhen {
    /// Stop as soon as the log is empty (otherwise wait for more).
    pub empty: bool,
    /// Stop after this many records.
    pub records: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
}

/// What was copied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DrainStats {
    pub records: u64,
    /// Records the kernel reported lost (sum of OVERRUN counts).
    pub lost_in_kernel: u64,
    /// Records whose kind or fields did not parse (copied anyway).
    pub unparsable: u64,
    /// Places where seq did not follow the previous record's seq + 1.
    pub seq_breaks: u64,
    /// Bytes at the end of the source that did not make a whole record.
    pub trailing_bytes: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
}

impl DrainStats {
    fn account(&mut self, record: &[u8]) {
        let view = Record::new_unchecked(record);
        let seq = view.seq();
        if let Some(last) = self.last_seq {
            if seq != last.wrapping_add(1) {
                self.seq_breaks += 1;
            }
        }
        self.first_seq.get_or_insert(seq);
        self.last_seq = Some(seq);
        self.records += 1;
        match RecordRepr::parse(&view) {
            Ok(RecordRepr {
                event: Event::Overrun { lost },
                ..
            }) => self.lost_in_kernel += lost,
            Ok(_) => {}
            Err(_) => self.unparsable += 1,
        }
    }
}

static CANCELLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    CANCELLED.store(true, Ordering::Relaxed);
}

/// A flag that SIGINT and SIGTERM set, for [`drain_to_file`]'s `cancel`:
/// an interrupted `hmtt log` still flushes what it has read.
pub fn cancel_on_sigint() -> &'static AtomicBool {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let handler = on_signal as extern "C" fn(libc::c_int);
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(libc::SIGINT, handler as libc::sighandler_t);
            libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        }
    });
    &CANCELLED
}

const CHUNK_RECORDS: usize = 1024;
const POLL_MS: i32 = 100;

/// Drain `source` (the log device or a file of raw records) into a new
/// `.hmttlog` file at `out`, until `stop` says so, the source ends, or
/// `cancel` becomes true.
pub fn drain_to_file(
    source: &Path,
    out: &Path,
    stop: &StopWhen,
    cancel: &AtomicBool,
) -> Result<DrainStats, DrainError> {
    let mut input = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(source)
        .map_err(|e| DrainError::Open {
            path: source.to_path_buf(),
            source: e,
        })?;
    // Written under a temporary name and renamed into place at the end: a
    // killed drain leaves its records in the hidden `.NAME.partial-PID.hmttlog`
    // (flushed whenever the source runs dry), never a cut file under `out`.
    let open_err = |e| DrainError::Open {
        path: out.to_path_buf(),
        source: e,
    };
    let atomic = AtomicFile::create(out).map_err(open_err)?;
    let mut output = BufWriter::new(atomic.file().try_clone().map_err(open_err)?);
    let write_err = |e| DrainError::Write {
        path: out.to_path_buf(),
        source: e,
    };
    let start_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    output
        .write_all(&FileHeaderRepr { start_ns }.to_bytes())
        .map_err(write_err)?;

    let started = Instant::now();
    let mut stats = DrainStats::default();
    let mut buf = vec![0u8; CHUNK_RECORDS * RECORD_LEN];
    let mut filled = 0usize;
    loop {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        if stop.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if stop.records.is_some_and(|n| stats.records >= n) {
            break;
        }
        // Never read past the record limit: what is read is consumed.
        let room = match stop.records {
            Some(n) => ((n - stats.records) as usize).min(CHUNK_RECORDS) * RECORD_LEN,
            None => buf.len(),
        };
        let room = room.max(filled + 1).min(buf.len());
        match input.read(&mut buf[filled..room]) {
            Ok(0) => break, // a plain file ended
            Ok(got) => {
                filled += got;
                let whole = filled / RECORD_LEN * RECORD_LEN;
                for record in buf[..whole].chunks_exact(RECORD_LEN) {
                    stats.account(record);
                }
                output.write_all(&buf[..whole]).map_err(write_err)?;
                buf.copy_within(whole..filled, 0);
                filled -= whole;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                output.flush().map_err(write_err)?;
                if stop.empty {
                    break;
                }
                wait_readable(&input, POLL_MS);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(DrainError::Read {
                    path: source.to_path_buf(),
                    source: e,
                })
            }
        }
    }
    stats.trailing_bytes = filled as u64;
    output.flush().map_err(write_err)?;
    atomic.commit().map_err(write_err)?;
    Ok(stats)
}

fn wait_readable(file: &File, timeout_ms: i32) {
    let mut fds = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut fds, 1, timeout_ms) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::klog::{self, DmaDirection, Name};

    fn record(seq: u64, event: Event) -> [u8; RECORD_LEN] {
        RecordRepr {
            seq,
            cpu: 1,
            pid: 42,
            time_ns: 1000 + seq,
            event,
        }
        .to_bytes()
    }

    fn raw_log(records: &[[u8; RECORD_LEN]]) -> Vec<u8> {
        records.iter().flatten().copied().collect()
    }

    #[test]
    fn copies_records_byte_for_byte_behind_a_header() {
        let records: Vec<_> = (0..3000u64)
            .map(|seq| {
                record(
                    seq,
                    Event::Map {
                        vpn: seq,
                        pfn: seq * 3,
                        pte_phys: 0x1000 + seq * 8,
                    },
                )
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("raw");
        let out = dir.path().join("out.hmttlog");
        std::fs::write(&src, raw_log(&records)).unwrap();
        let stats =
            drain_to_file(&src, &out, &StopWhen::default(), &AtomicBool::new(false)).unwrap();
        assert_eq!(stats.records, 3000);
        assert_eq!((stats.first_seq, stats.last_seq), (Some(0), Some(2999)));
        assert_eq!(stats.seq_breaks, 0);
        let bytes = std::fs::read(&out).unwrap();
        assert_eq!(&bytes[klog::HEADER_LEN..], &raw_log(&records)[..]);
        let (_, parsed) = klog::parse_file(&bytes).unwrap();
        assert_eq!(parsed.count(), 3000);
    }

    #[test]
    fn counts_overruns_breaks_bad_records_and_a_cut_tail() {
        let mut bad = record(3, Event::Overrun { lost: 0 });
        bad[8] = 99; // unknown kind
        let records = [
            record(
                0,
                Event::Exec {
                    comm: Name::new("a"),
                },
            ),
            record(1, Event::Overrun { lost: 7 }),
            record(
                2,
                Event::DmaMap {
                    addr: 1,
                    size: 2,
                    dir: DmaDirection::FromDevice,
                    device: Name::new("nic"),
                },
            ),
            bad,
            record(9, Event::Overrun { lost: 5 }),
        ];
        let mut raw = raw_log(&records);
        raw.extend_from_slice(&[1, 2, 3]);
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("raw");
        let out = dir.path().join("out.hmttlog");
        std::fs::write(&src, raw).unwrap();
        let stats =
            drain_to_file(&src, &out, &StopWhen::default(), &AtomicBool::new(false)).unwrap();
        assert_eq!(
            stats,
            DrainStats {
                records: 5,
                lost_in_kernel: 12,
                unparsable: 1,
                seq_breaks: 1,
                trailing_bytes: 3,
                first_seq: Some(0),
                last_seq: Some(9),
            }
        );
    }

    #[test]
    fn stops_at_the_record_limit_without_consuming_more() {
        let records: Vec<_> = (0..10u64)
            .map(|seq| record(seq, Event::Overrun { lost: 0 }))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("raw");
        let out = dir.path().join("out.hmttlog");
        std::fs::write(&src, raw_log(&records)).unwrap();
        let stop = StopWhen {
            records: Some(4),
            ..Default::default()
        };
        let stats = drain_to_file(&src, &out, &stop, &AtomicBool::new(false)).unwrap();
        assert_eq!(stats.records, 4);
        assert_eq!(
            std::fs::metadata(&out).unwrap().len(),
            (klog::HEADER_LEN + 4 * RECORD_LEN) as u64
        );
    }

    #[test]
    fn missing_source_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = drain_to_file(
            &dir.path().join("nope"),
            &dir.path().join("out"),
            &StopWhen::default(),
            &AtomicBool::new(false),
        )
        .unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }
}
