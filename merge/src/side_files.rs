//! The small files a command reads beside its trace: the events file, the
//! address mapping and the kernel log. Each is read whole, so each is
//! refused unless it is a regular file no larger than its bound: a device
//! that never ends (`/dev/zero`) or a wrong, huge file is an error naming
//! the file, not a read until memory runs out.

use std::io::Read;
use std::path::{Path, PathBuf};

use hmtt_format::events::{EventNames, EventsError};
use hmtt_format::klog::LogImage;
use hmtt_format::mapping::MappingError;
use hmtt_format::{AddressMapping, Geometry};

/// The largest events file read (a few names a line each: far more than
/// any run names).
pub const MAX_EVENTS_BYTES: u64 = 16 << 20;
/// The largest address-mapping file read (a few lines of bit lists).
pub const MAX_MAPPING_BYTES: u64 = 1 << 20;
/// The largest kernel log read whole: 2^26 records of 64 bytes.
pub const MAX_LOG_BYTES: u64 = 4 << 30;

#[derive(Debug, thiserror::Error)]
pub enum SideFileError {
    #[error("{what} {}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{what} {path}: not a regular file (a device, a directory or a pipe is never read whole)"
    )]
    NotAFile { what: &'static str, path: PathBuf },
    #[error("{what} {path}: {len} bytes, more than the {max} bytes such a file may have")]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        len: u64,
        max: u64,
    },
    #[error("{what} {path}: not UTF-8 text")]
    NotText { what: &'static str, path: PathBuf },
    #[error("events file {}", path.display())]
    Events { path: PathBuf, source: EventsError },
    #[error("mapping file {}", path.display())]
    Mapping { path: PathBuf, source: MappingError },
    #[error("{}: record {record}: {error}", path.display())]
    LogRecord {
        path: PathBuf,
        record: usize,
        error: hmtt_format::klog::Error,
    },
    #[error("{}: not a usable kernel log: {error}", path.display())]
    Log {
        path: PathBuf,
        error: hmtt_format::klog::Error,
    },
}

/// The bytes of the regular file at `path`, at most `max` of them.
/// `what` names the file's role in errors ("mapping file").
pub fn read_bounded(path: &Path, what: &'static str, max: u64) -> Result<Vec<u8>, SideFileError> {
    let io = |source| SideFileError::Read {
        what,
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(SideFileError::NotAFile {
            what,
            path: path.to_path_buf(),
        });
    }
    let too_large = |len| SideFileError::TooLarge {
        what,
        path: path.to_path_buf(),
        len,
        max,
    };
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // A file that grows while it is read stops at the bound all the same.
    file.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The text of the regular file at `path`, at most `max` bytes of UTF-8.
pub fn read_text(path: &Path, what: &'static str, max: u64) -> Result<String, SideFileError> {
    String::from_utf8(read_bounded(path, what, max)?).map_err(|_| SideFileError::NotText {
        what,
        path: path.to_path_buf(),
    })
}

/// The events file at `path`; a file that does not exist is an error (the
/// user named it).
pub fn read_events(path: &Path) -> Result<EventNames, SideFileError> {
    let text = read_text(path, "events file", MAX_EVENTS_BYTES)?;
    EventNames::parse(&text).map_err(|source| SideFileError::Events {
        path: path.to_path_buf(),
        source,
    })
}

/// The address-mapping file's text at `path`.
pub fn read_mapping_text(path: &Path) -> Result<String, SideFileError> {
    read_text(path, "mapping file", MAX_MAPPING_BYTES)
}

/// The address-mapping file at `path` (TOML, docs/format.md §3), for
/// `geometry`.
pub fn read_mapping(path: &Path, geometry: Geometry) -> Result<AddressMapping, SideFileError> {
    read_mapping_checked(path, geometry).map(|(mapping, _)| mapping)
}

/// The address-mapping file at `path`, parsed for `geometry` (so that a
/// bad file is named now), and its text, for a library that parses it
/// again once it knows the geometry.
pub fn read_mapping_checked(
    path: &Path,
    geometry: Geometry,
) -> Result<(AddressMapping, String), SideFileError> {
    let text = read_mapping_text(path)?;
    let mapping =
        AddressMapping::from_toml(&text, geometry).map_err(|source| SideFileError::Mapping {
            path: path.to_path_buf(),
            source,
        })?;
    Ok((mapping, text))
}

/// Event names from `events` (which must exist), or else from an
/// `events.toml` in one of the `dirs` that are directories; none if there
/// is no such file.
pub fn read_names(events: Option<&Path>, dirs: &[PathBuf]) -> Result<EventNames, SideFileError> {
    let path = match events {
        Some(p) => Some(p.to_path_buf()),
        None => dirs
            .iter()
            .filter(|p| p.is_dir())
            .map(|d| d.join(hmtt_format::events::FILE_NAME))
            .find(|p| p.exists()),
    };
    let Some(path) = path else {
        return Ok(EventNames::default());
    };
    read_events(&path)
}

/// `names` (those a trace stores) with those of the events file `events`
/// added, when one is given.
pub fn with_names_of(
    mut names: EventNames,
    events: Option<&Path>,
) -> Result<EventNames, SideFileError> {
    if let Some(events) = events {
        names.extend(read_events(events)?);
    }
    Ok(names)
}

/// The kernel log file's bytes at `path`.
pub fn read_log(path: &Path) -> Result<Vec<u8>, SideFileError> {
    read_bounded(path, "kernel log", MAX_LOG_BYTES)
}

/// The kernel log at `path` read whole for replay (its records in `seq`
/// order, [`hmtt_format::klog::read_image`]); a log cut short is read up
/// to its last whole record, with a warning.
pub fn read_log_image(path: &Path) -> Result<LogImage, SideFileError> {
    let bytes = read_log(path)?;
    let image = hmtt_format::klog::read_image(&bytes).map_err(|(record, error)| {
        let path = path.to_path_buf();
        match record {
            Some(record) => SideFileError::LogRecord {
                path,
                record,
                error,
            },
            None => SideFileError::Log { path, error },
        }
    })?;
    if image.cut_short_bytes > 0 {
        tracing::warn!(
            "{} is cut short: {} bytes of a partial record ignored",
            path.display(),
            image.cut_short_bytes
        );
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_a_directory_a_missing_file_and_a_large_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let e = read_text(zero, "events file", MAX_EVENTS_BYTES).unwrap_err();
            assert!(matches!(e, SideFileError::NotAFile { .. }), "{e}");
        }
        let e = read_events(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let missing = dir.path().join("no_such.toml");
        let e = read_events(&missing).unwrap_err();
        assert!(
            e.to_string().starts_with("events file ") && e.to_string().contains("no_such.toml"),
            "{e}"
        );
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; 100]).unwrap();
        let e = read_text(&big, "mapping file", 99).unwrap_err();
        assert!(
            matches!(
                e,
                SideFileError::TooLarge {
                    len: 100,
                    max: 99,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(read_text(&big, "mapping file", 100).unwrap().len(), 100);
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text(&bad, "mapping file", 100),
            Err(SideFileError::NotText { .. })
        ));
    }

    #[test]
    fn an_events_file_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("events.toml");
        std::fs::write(&p, "[events]\nsort_begin = 64\nsort_end = 65\n").unwrap();
        let names = read_events(&p).unwrap();
        assert_eq!(names.iter().count(), 2);
    }

    #[test]
    fn names_come_from_the_named_file_or_a_directory_and_add_to_a_trace_s() {
        let dir = tempfile::tempdir().unwrap();
        let inputs = [
            dir.path().join("not-a-dir.hmttcap"),
            dir.path().to_path_buf(),
        ];
        assert!(read_names(None, &inputs).unwrap().is_empty());
        let p = dir.path().join(hmtt_format::events::FILE_NAME);
        std::fs::write(&p, "[events]\nsort_begin = 64\n").unwrap();
        let found = read_names(None, &inputs).unwrap();
        assert_eq!(found.iter().collect::<Vec<_>>(), [("sort_begin", 64)]);
        let stored = EventNames::from_iter(vec![(70, "stored".into())]);
        assert_eq!(with_names_of(stored.clone(), None).unwrap(), stored);
        let both = with_names_of(stored, Some(&p)).unwrap();
        assert_eq!(
            both.iter().collect::<Vec<_>>(),
            [("sort_begin", 64), ("stored", 70)]
        );
        assert!(read_names(Some(&dir.path().join("absent.toml")), &inputs).is_err());
    }

    #[test]
    fn a_kernel_log_s_bad_header_or_record_names_the_file_and_the_record() {
        use hmtt_format::klog::{Event, FileHeaderRepr, RecordRepr};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.hmttlog");
        let exit = RecordRepr {
            seq: 0,
            cpu: 2,
            pid: 7,
            time_ns: 0,
            event: Event::Overrun { lost: 3 },
        };
        let record = |seq| RecordRepr { seq, ..exit }.to_bytes();
        let mut file = FileHeaderRepr { start_ns: 5 }.to_bytes().to_vec();
        file.extend_from_slice(&record(1));
        file.extend_from_slice(&record(0));
        std::fs::write(&p, &file).unwrap();
        let image = read_log_image(&p).unwrap();
        assert_eq!(
            image.records.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [0, 1]
        );
        let mut unknown_kind = record(2);
        unknown_kind[8..10].copy_from_slice(&0xfffe_u16.to_le_bytes());
        file.extend_from_slice(&unknown_kind);
        std::fs::write(&p, &file).unwrap();
        let e = read_log_image(&p).unwrap_err();
        assert!(
            matches!(e, SideFileError::LogRecord { record: 2, .. }),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with(&format!("{}: record 2: ", p.display())),
            "{e}"
        );
        std::fs::write(&p, b"not a log").unwrap();
        let e = read_log_image(&p).unwrap_err();
        assert!(matches!(e, SideFileError::Log { .. }), "{e}");
        assert!(e.to_string().contains(": not a usable kernel log: "), "{e}");
    }

    #[test]
    fn a_bad_mapping_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("map.toml");
        std::fs::write(&p, hmtt_format::mapping::DDR3_BANK_XOR_TOML).unwrap();
        let g = Geometry::ddr3_default();
        let (mapping, text) = read_mapping_checked(&p, g).unwrap();
        assert_eq!(mapping, read_mapping(&p, g).unwrap());
        assert_eq!(text, hmtt_format::mapping::DDR3_BANK_XOR_TOML);
        std::fs::write(&p, "not = [toml").unwrap();
        let e = read_mapping(&p, g).unwrap_err();
        assert!(matches!(e, SideFileError::Mapping { .. }), "{e}");
        assert_eq!(e.to_string(), format!("mapping file {}", p.display()));
    }
}
