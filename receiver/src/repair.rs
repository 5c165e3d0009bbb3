//! `hmtt capture --repair`: capture files left by a killed capture, made
//! as a finished one leaves them. A kill leaves each open file with its
//! preallocated space past the end (invisible, but taken on the disk) and
//! possibly a partial last record; repair gives the space back and cuts
//! the partial record. Files that are not captures are left alone.

use std::fs::OpenOptions;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use hmtt_format::capture::{CaptureEnd, CaptureReader, EXTENSION};

use crate::ReceiverError;

/// What repair did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedFile {
    pub path: PathBuf,
    /// Bytes of a partial last record cut off.
    pub cut_bytes: u64,
    /// Disk space given back (allocated beyond the end), bytes.
    pub freed_bytes: u64,
    /// The file is not a readable capture (left as it is).
    pub not_a_capture: bool,
}

/// Repairs every `*.hmttcap` file in `dir` (see the module doc).
pub fn repair_dir(dir: &Path) -> Result<Vec<RepairedFile>, ReceiverError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReceiverError::Io { path, source }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == EXTENSION))
        .collect();
    files.sort();
    files.iter().map(|p| repair_file(p)).collect()
}

/// Repairs one capture file.
pub fn repair_file(path: &Path) -> Result<RepairedFile, ReceiverError> {
    let io = |source| ReceiverError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let bytes = std::fs::read(path).map_err(io)?;
    let mut repaired = RepairedFile {
        path: path.to_path_buf(),
        cut_bytes: 0,
        freed_bytes: 0,
        not_a_capture: false,
    };
    let whole = match CaptureReader::new(&bytes) {
        Err(_) => {
            repaired.not_a_capture = true;
            return Ok(repaired);
        }
        Ok((_, mut records)) => {
            records.by_ref().for_each(drop);
            match records.end() {
                Some(CaptureEnd::Truncated { offset, .. }) => offset as u64,
                _ => bytes.len() as u64,
            }
        }
    };
    let allocated = |f: &std::fs::File| f.metadata().map(|m| m.blocks() * 512).map_err(io);
    let before = allocated(&file)?;
    // Setting the length, even to the same one, gives back the blocks
    // preallocated past it.
    file.set_len(whole).map_err(io)?;
    file.sync_all().map_err(io)?;
    repaired.cut_bytes = bytes.len() as u64 - whole;
    repaired.freed_bytes = before.saturating_sub(allocated(&file)?);
    Ok(repaired)
}
