//! Any trace input: a trace file (format.md §10), its archive (§13) or a
//! virtual trace (§12), told apart by its magic. The one way a command
//! that reads traces opens one, with one error for an input it cannot use.

use std::path::{Path, PathBuf};

use crate::archive::{AnyTrace, AnyTraceError, ArchiveView};
use crate::events::EventNames;
use crate::indexed::CommonHeader;
use crate::mapped_file::MappedFile;
use crate::trace::TraceView;
use crate::vtrace::{VtraceError, VtraceView};
use crate::TickLength;

/// What a file's magic says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Trace,
    Archive,
    Virtual,
    /// None of the three: read as a trace file, which then says why not.
    Unknown,
}

impl InputKind {
    /// The kind `data` starts like.
    pub fn of(data: &[u8]) -> InputKind {
        if data.starts_with(&crate::trace::MAGIC) {
            InputKind::Trace
        } else if AnyTrace::is_archive(data) {
            InputKind::Archive
        } else if data.starts_with(&crate::vtrace::MAGIC) {
            InputKind::Virtual
        } else {
            InputKind::Unknown
        }
    }

    /// What the kind is called in messages.
    pub fn name(self) -> &'static str {
        match self {
            InputKind::Trace => "trace file",
            InputKind::Archive => "trace archive",
            InputKind::Virtual => "virtual trace file",
            InputKind::Unknown => "trace file, archive or virtual trace",
        }
    }
}

impl std::fmt::Display for InputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a view of the bytes was refused.
#[derive(Debug, thiserror::Error)]
pub enum InputCause {
    #[error(transparent)]
    Physical(#[from] AnyTraceError),
    #[error(transparent)]
    Virtual(#[from] VtraceError),
}

/// Why a trace input cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("opening {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is a directory, not a trace file", path.display())]
    Directory { path: PathBuf },
    /// A file whose writer did not finish, refused ([`InputChecks`]).
    #[error(
        "{}: the {what} is incomplete: its writer did not finish (a killed or failed merge or replay --out), so it has no index, names or checksums and holds {records} whole records; pass --allow-incomplete to read them",
        path.display()
    )]
    Incomplete {
        path: PathBuf,
        what: &'static str,
        records: u64,
    },
    #[error(
        "{}: the {what}'s tick length is unknown (0 in its header): its times cannot be computed",
        path.display()
    )]
    UnknownTick { path: PathBuf, what: &'static str },
    #[error("{}: not a usable {kind}", path.display())]
    Unusable {
        path: PathBuf,
        kind: InputKind,
        #[source]
        cause: InputCause,
    },
    #[error(
        "{} is a virtual trace (written by hmtt replay --out): {command} reads a physical trace or its archive",
        path.display()
    )]
    NotPhysical {
        path: PathBuf,
        command: &'static str,
    },
}

impl InputError {
    /// Whether `e`, or an error it wraps, refuses an unfinished file: a
    /// command's exit status says so (docs/guide.md §6).
    pub fn is_incomplete(e: &(dyn std::error::Error + 'static)) -> bool {
        let mut cause = Some(e);
        while let Some(c) = cause {
            if matches!(c.downcast_ref(), Some(InputError::Incomplete { .. })) {
                return true;
            }
            cause = c.source();
        }
        false
    }
}

/// What a command asks of its input beyond being one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputChecks {
    /// Read a file whose writer did not finish (a killed `merge` or
    /// `replay --out`): its whole records, with a warning. Otherwise such
    /// a file is refused ([`InputError::Incomplete`]).
    pub allow_incomplete: bool,
    /// The command computes times: a file whose tick length is unknown
    /// (0) is refused rather than read with a made-up one.
    pub needs_time: bool,
}

/// The file of a trace input, mapped read-only
/// ([`crate::mapped_file`]): the one way a command opens a trace, its
/// archive or a virtual trace.
///
/// Every writer of these files renames a finished file into place
/// ([`crate::atomic_file`]), so a file being rewritten is a new file and
/// the one mapped here never shrinks under the reader. A program outside
/// hmtt that truncates the file in place is caught by the map's guard: the
/// command fails naming the file (docs/guide.md, "Files being rewritten").
pub struct InputFile {
    map: MappedFile,
}

impl InputFile {
    pub fn open(path: &Path) -> Result<InputFile, InputError> {
        if path.is_dir() {
            return Err(InputError::Directory {
                path: path.to_path_buf(),
            });
        }
        let map = MappedFile::open(path).map_err(|source| InputError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(InputFile { map })
    }

    pub fn path(&self) -> &Path {
        self.map.path()
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    /// The input, of the kind its magic says, checked (`checks`; a
    /// virtual trace's times are always needed).
    pub fn any(&self, checks: InputChecks) -> Result<AnyInput<'_>, InputError> {
        let input = AnyInput::new_checked(self.bytes(), self.path())?;
        match &input {
            AnyInput::Physical(view) => self.check_physical(view, checks)?,
            AnyInput::Virtual(view) => self.check(
                "virtual trace",
                &view.header().common,
                InputChecks {
                    needs_time: true,
                    ..checks
                },
            )?,
        }
        Ok(input)
    }

    /// [`any`](Self::any) for `command`, which reads a trace file or its
    /// archive: a virtual trace is refused, saying so.
    pub fn physical(
        &self,
        command: &'static str,
        checks: InputChecks,
    ) -> Result<AnyTrace<'_>, InputError> {
        let view = AnyInput::physical_checked(self.bytes(), self.path(), command)?;
        self.check_physical(&view, checks)?;
        Ok(view)
    }

    /// The input as a trace file (not its archive), checked.
    pub fn trace(&self, checks: InputChecks) -> Result<TraceView<'_>, InputError> {
        let view = TraceView::new_checked(self.bytes())
            .map_err(|e| self.unusable(InputKind::Trace, AnyTraceError::from(e).into()))?;
        self.check("trace", &view.header().common, checks)?;
        Ok(view)
    }

    /// The input as a trace archive.
    pub fn archive(&self) -> Result<ArchiveView<'_>, InputError> {
        ArchiveView::new_checked(self.bytes())
            .map_err(|e| self.unusable(InputKind::Archive, AnyTraceError::from(e).into()))
    }

    /// The tick length of the input (a `what`, named in the error), whose
    /// header's common fields are `common`.
    pub fn tick_length(
        &self,
        what: &'static str,
        common: &CommonHeader,
    ) -> Result<TickLength, InputError> {
        common.tick_length().ok_or_else(|| InputError::UnknownTick {
            path: self.path().to_path_buf(),
            what,
        })
    }

    fn unusable(&self, kind: InputKind, cause: InputCause) -> InputError {
        InputError::Unusable {
            path: self.path().to_path_buf(),
            kind,
            cause,
        }
    }

    fn check_physical(&self, view: &AnyTrace, checks: InputChecks) -> Result<(), InputError> {
        let common = &view.header().common;
        match view {
            AnyTrace::Trace(_) => self.check("trace", common, checks),
            // The archive checks its own blocks; the trace it holds may be
            // unfinished.
            AnyTrace::Archive(_) if common.is_complete() => Ok(()),
            AnyTrace::Archive(_) => self.check("archived trace", common, checks),
        }
    }

    /// Checks a `what` whose header's common fields are `common`: an
    /// unfinished file is refused unless allowed (then read with a
    /// warning), as is one of unknown tick length when times are needed. A
    /// finished file of format version 1 is read with a warning: it
    /// carries no checksums, so damage to it cannot be seen.
    fn check(
        &self,
        what: &'static str,
        common: &CommonHeader,
        checks: InputChecks,
    ) -> Result<(), InputError> {
        let path = self.path().display();
        if !common.is_complete() && !checks.allow_incomplete {
            return Err(InputError::Incomplete {
                path: self.path().to_path_buf(),
                what,
                records: common.record_count,
            });
        }
        if !common.is_complete() {
            tracing::warn!(
                "{path}: the {what} is incomplete (its writer did not finish): reading its {} whole records, unverified, without index or names",
                common.record_count
            );
        } else if !common.has_checksums() {
            tracing::warn!(
                "{path}: a format version {} file carries no checksums: damage to it cannot be detected (hmtt pack, or a new merge or replay, gives a checked file)",
                common.version
            );
        }
        if checks.needs_time {
            self.tick_length(what, common)?;
        }
        Ok(())
    }
}

/// A trace input, viewed in place.
#[derive(Debug)]
pub enum AnyInput<'a> {
    /// A trace file or its archive.
    Physical(AnyTrace<'a>),
    Virtual(VtraceView<'a>),
}

impl<'a> AnyInput<'a> {
    /// Checks `data`, the bytes of the file at `path` (named in errors), as
    /// the kind its magic says.
    pub fn new_checked(data: &'a [u8], path: &Path) -> Result<AnyInput<'a>, InputError> {
        let kind = InputKind::of(data);
        let unusable = |cause: InputCause| InputError::Unusable {
            path: path.to_path_buf(),
            kind,
            cause,
        };
        Ok(match kind {
            InputKind::Virtual => {
                AnyInput::Virtual(VtraceView::new_checked(data).map_err(|e| unusable(e.into()))?)
            }
            _ => AnyInput::Physical(AnyTrace::new_checked(data).map_err(|e| unusable(e.into()))?),
        })
    }

    /// [`new_checked`](Self::new_checked) for a `command` that reads a
    /// physical trace or its archive only: a virtual trace is refused.
    pub fn physical_checked(
        data: &'a [u8],
        path: &Path,
        command: &'static str,
    ) -> Result<AnyTrace<'a>, InputError> {
        match AnyInput::new_checked(data, path)? {
            AnyInput::Physical(t) => Ok(t),
            AnyInput::Virtual(_) => Err(InputError::NotPhysical {
                path: path.to_path_buf(),
                command,
            }),
        }
    }

    /// The header fields every indexed file has.
    pub fn common(&self) -> &CommonHeader {
        match self {
            AnyInput::Physical(t) => &t.header().common,
            AnyInput::Virtual(v) => &v.header().common,
        }
    }

    /// The event names stored in the file.
    pub fn names(&self) -> &EventNames {
        match self {
            AnyInput::Physical(t) => t.names(),
            AnyInput::Virtual(v) => v.names(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_magic_and_named_in_errors() {
        assert_eq!(InputKind::of(&crate::trace::MAGIC), InputKind::Trace);
        assert_eq!(InputKind::of(&crate::archive::MAGIC), InputKind::Archive);
        assert_eq!(InputKind::of(&crate::vtrace::MAGIC), InputKind::Virtual);
        assert_eq!(InputKind::of(b"HMTT"), InputKind::Unknown);
        let path = Path::new("x.bin");
        for (data, kind) in [
            (&crate::trace::MAGIC[..], "trace file"),
            (&crate::archive::MAGIC[..], "trace archive"),
            (&crate::vtrace::MAGIC[..], "virtual trace file"),
            (
                &b"garbage, not a trace"[..],
                "trace file, archive or virtual trace",
            ),
        ] {
            let e = AnyInput::new_checked(data, path).unwrap_err();
            assert_eq!(e.to_string(), format!("x.bin: not a usable {kind}"));
            // The cause is given once, by `source`, not in the message.
            let cause = std::error::Error::source(&e).unwrap().to_string();
            assert!(!e.to_string().contains(&cause), "{e} / {cause}");
        }
    }

    /// A file of its own in the temporary directory, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str, bytes: &[u8]) -> Scratch {
            let path =
                std::env::temp_dir().join(format!("hmtt-input-{}-{name}", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            Scratch(path)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// An unfinished trace (no FLAG_COMPLETE) of three records, its tick
    /// length `tick_ps`.
    fn unfinished_trace(tick_ps: u16) -> Vec<u8> {
        let header = crate::trace::TraceHeader {
            common: CommonHeader {
                version: crate::trace::VERSION,
                tick_ps,
                ..CommonHeader::default()
            },
            ..Default::default()
        };
        let mut bytes = header.emit().to_vec();
        for i in 0..3u64 {
            bytes.extend_from_slice(
                &crate::trace::TraceRecord::access(i, 0, false, i * 64).to_bytes(),
            );
        }
        bytes
    }

    #[test]
    fn an_unfinished_trace_is_refused_unless_allowed_and_times_need_a_tick() {
        let file = Scratch::new("unfinished", &unfinished_trace(0));
        let input = InputFile::open(&file.0).unwrap();
        let e = input.any(InputChecks::default()).unwrap_err();
        assert!(
            matches!(
                e,
                InputError::Incomplete {
                    records: 3,
                    what: "trace",
                    ..
                }
            ),
            "{e}"
        );
        assert!(InputError::is_incomplete(&e));
        assert!(e.to_string().contains("pass --allow-incomplete"), "{e}");
        let allow = InputChecks {
            allow_incomplete: true,
            needs_time: false,
        };
        let view = input.physical("stats", allow).unwrap();
        assert_eq!(view.len(), 3);
        let e = input
            .any(InputChecks {
                needs_time: true,
                ..allow
            })
            .unwrap_err();
        assert!(
            matches!(e, InputError::UnknownTick { what: "trace", .. }),
            "{e}"
        );
        assert!(!InputError::is_incomplete(&e));
        assert_eq!(input.trace(allow).unwrap().len(), 3);
        let e = input.archive().unwrap_err();
        assert!(e.to_string().ends_with("not a usable trace archive"), "{e}");

        let timed = Scratch::new("timed", &unfinished_trace(1250));
        let input = InputFile::open(&timed.0).unwrap();
        let checks = InputChecks {
            allow_incomplete: true,
            needs_time: true,
        };
        assert_eq!(input.any(checks).unwrap().common().tick_ps, 1250);
    }

    #[test]
    fn a_directory_and_a_missing_file_are_named() {
        let dir = std::env::temp_dir();
        let e = InputFile::open(&dir).err().unwrap();
        assert_eq!(
            e.to_string(),
            format!("{} is a directory, not a trace file", dir.display())
        );
        let missing = dir.join(format!("hmtt-input-{}-missing", std::process::id()));
        let e = InputFile::open(&missing).err().unwrap();
        assert!(matches!(e, InputError::Open { .. }), "{e}");
        assert!(e.to_string().starts_with("opening "), "{e}");
    }
}
