//! `hmtt capture --repair`: capture files left by a killed capture, made
//! as a finished one leaves them. A kill leaves each open file with its
//! preallocated space past the end (invisible, but taken on the disk) and
//! possibly a partial last record; repair gives the space back and cuts
//! the partial record. Files that are not captures are left alone.

use std::path::{Path, PathBuf};

use hmtt_format::capture::{
    open_unless_being_written, set_len_giving_back_space, CaptureEnd, CaptureReader, EXTENSION,
};

use crate::ReceiverError;

/// What repair did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedFile {
    pub path: PathBuf,
    /// Bytes of a partial last record cut off.
    pub cut_bytes: u64,
    /// Bytes of an all-zero tail (space no record was written into) cut off.
    pub zero_bytes: u64,
    /// Disk space given back (allocated beyond the end), bytes.
    pub freed_bytes: u64,
    /// The file is not a readable capture (left as it is).
    pub not_a_capture: bool,
    /// A running capture is writing the file (left as it is).
    pub being_written: bool,
}

impl RepairedFile {
    fn untouched(path: &Path) -> RepairedFile {
        RepairedFile {
            path: path.to_path_buf(),
            cut_bytes: 0,
            zero_bytes: 0,
            freed_bytes: 0,
            not_a_capture: false,
            being_written: false,
        }
    }
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
    let Some(file) = open_unless_being_written(path).map_err(io)? else {
        return Ok(RepairedFile {
            being_written: true,
            ..RepairedFile::untouched(path)
        });
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let mut repaired = RepairedFile::untouched(path);
    let end = match CaptureReader::new(&bytes) {
        Err(_) => {
            repaired.not_a_capture = true;
            return Ok(repaired);
        }
        Ok((_, mut records)) => {
            records.by_ref().for_each(drop);
            records.end()
        }
    };
    let whole = match end {
        Some(CaptureEnd::Truncated { offset, .. }) => {
            repaired.cut_bytes = (bytes.len() - offset) as u64;
            offset
        }
        Some(CaptureEnd::ZeroTail { offset, len }) => {
            repaired.zero_bytes = len as u64;
            offset
        }
        _ => bytes.len(),
    };
    repaired.freed_bytes = set_len_giving_back_space(&file, whole as u64).map_err(io)?;
    Ok(repaired)
}
