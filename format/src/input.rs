//! Any trace input: a trace file (format.md §10), its archive (§13) or a
//! virtual trace (§12), told apart by its magic. The one way a command
//! that reads traces opens one, with one error for an input it cannot use.

use std::path::{Path, PathBuf};

use crate::archive::{AnyTrace, AnyTraceError};
use crate::indexed::{CommonHeader, NameTable};
use crate::vtrace::{VtraceError, VtraceView};

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
    pub fn names(&self) -> &NameTable {
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
}
