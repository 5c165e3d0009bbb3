//! Why a merge cannot go on. Damage inside the captures (lost, duplicated or
//! corrupt packets, cut files) is not an error: it is counted in the report.

use std::path::PathBuf;

use hmtt_format::capture::CaptureError;
use hmtt_format::mapping::MappingError;
use hmtt_format::trace::TraceError;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a usable capture file: {source}")]
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
    #[error("address mapping: {0}")]
    Mapping(#[from] MappingError),
    #[error("{path}: not a usable trace file: {source}")]
    NotATrace { path: PathBuf, source: TraceError },
    #[error("{path}: {source}")]
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
