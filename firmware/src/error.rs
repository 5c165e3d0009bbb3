//! The flows' error type: every failure names the tool, file or board involved.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FirmwareError {
    #[error("unknown board `{0}` (known boards: ecp5-85f, ice40-hx8k)")]
    UnknownBoard(String),
    #[error("unknown units `{0}` (known units: none, statistics)")]
    UnknownUnits(String),
    #[error("`{tool}` was not found on PATH; install it with: {install_hint}")]
    ToolMissing {
        tool: String,
        install_hint: &'static str,
    },
    #[error("`{tool}` failed ({status}); log: {log}\n{tail}")]
    ToolFailed {
        tool: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("{action} `{}`", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the generated HDL does not pass rust-hdl's checks: {0}")]
    HdlCheck(String),
    #[error("the design does not fit the {board} device: {over} (log: {log})")]
    DoesNotFit {
        board: crate::board::Board,
        over: String,
        log: PathBuf,
    },
    #[error("the {board} build cannot have the units `{units}`: {reason} (use --units none)")]
    UnitsUnavailable {
        board: crate::board::Board,
        units: &'static str,
        reason: &'static str,
    },
    #[error("cannot read the place-and-route log `{log}`: {reason}")]
    Report { log: PathBuf, reason: String },
    #[error("bitstream `{0}` does not exist; run `hmtt firmware build` first or pass --bitstream")]
    BitstreamMissing(PathBuf),
    #[error("report `{path}` is not a valid build report: {reason}")]
    BadReport { path: PathBuf, reason: String },
    #[error(
        "`{tool}` could not program the board ({status}); is the board attached and powered, \
         and is the cable right?\n{output}"
    )]
    FlashFailed {
        tool: String,
        status: String,
        output: String,
    },
}

impl FirmwareError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        FirmwareError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
