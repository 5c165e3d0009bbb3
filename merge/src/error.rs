//! Why a merge cannot go on. Damage inside the captures (lost, duplicated or
//! corrupt packets, cut files) is not an error: it is counted in the report.
//! A variant that wraps a cause keeps it as its `source`, out of its
//! message, so that a chain of errors (anyhow's) names each cause once.

use std::path::PathBuf;

use hmtt_format::capture::CaptureError;
use hmtt_format::mapping::MappingError;
use hmtt_format::trace::TraceError;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a usable capture file", path.display())]
    NotACapture { path: PathBuf, source: CaptureError },
    #[error("no capture files given (or none named *.hmttcap in the directories given)")]
    NoInput,
    #[error("{path}: packet seq {seq} of board {board} has geometry {found} but {expected} was expected (captures of different DIMMs cannot be merged)")]
    WrongGeometry {
        path: String,
        board: u8,
        seq: u64,
        found: String,
        expected: String,
    },
    #[error("mixed runs: {0}")]
    MixedRuns(String),
    #[error("the address mapping is not usable")]
    Mapping(#[from] MappingError),
    #[error("{}: not a usable trace file", path.display())]
    NotATrace { path: PathBuf, source: TraceError },
    #[error("{}", path.display())]
    Archive {
        path: PathBuf,
        source: hmtt_format::archive::ArchiveError,
    },
}

impl MergeError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> MergeError {
        MergeError::Io {
            path: path.into(),
            source,
        }
    }
}
