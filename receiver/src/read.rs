//! Reading capture files back through memmap2: one file, or all stripes of
//! a port in stripe order over several directories.

use std::fs::File;
use std::path::{Path, PathBuf};

use hmtt_format::capture::{CaptureEnd, CaptureHeader, CaptureReader};
use hmtt_format::mapped_file::MappedFile;

use crate::ReceiverError;

/// A capture file mapped into memory.
pub struct CaptureFile {
    pub path: PathBuf,
    map: MappedFile,
}

impl CaptureFile {
    pub fn open(path: &Path) -> Result<CaptureFile, ReceiverError> {
        let io = |e| ReceiverError::Io {
            path: path.to_path_buf(),
            source: e,
        };
        let f = File::open(path).map_err(io)?;
        // A file cut short under the map reads as zeros past the cut, and
        // the command is failed for it (mapped_file).
        let map = MappedFile::from_file(&f, path).map_err(io)?;
        Ok(CaptureFile {
            path: path.to_path_buf(),
            map,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    /// The header and a record iterator.
    pub fn reader(&self) -> Result<(CaptureHeader, CaptureReader<'_>), ReceiverError> {
        CaptureReader::new(self.bytes())
            .map_err(|e| ReceiverError::Config(format!("{}: {e}", self.path.display())))
    }

    /// Every packet, and how the file ended.
    pub fn packets(&self) -> Result<(Vec<&[u8]>, CaptureEnd), ReceiverError> {
        let (_, mut r) = self.reader()?;
        let v: Vec<&[u8]> = r.by_ref().map(|rec| rec.packet).collect();
        Ok((v, r.end().unwrap_or(CaptureEnd::Clean)))
    }
}

/// The stripe files of `port` of run `name` in `dirs`, in stripe order
/// (read from the headers, not trusted from the names).
pub fn port_files(dirs: &[PathBuf], name: &str, port: u8) -> Result<Vec<PathBuf>, ReceiverError> {
    let prefix = format!("{name}-p{port:02}-s");
    let mut found = Vec::new();
    for d in dirs {
        let rd = std::fs::read_dir(d).map_err(|e| ReceiverError::Io {
            path: d.clone(),
            source: e,
        })?;
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&prefix) && n.ends_with(".hmttcap") && !n.ends_with(".reject.hmttcap")
            {
                let f = CaptureFile::open(&e.path())?;
                let (h, _) = f.reader()?;
                found.push((h.stripe, e.path()));
            }
        }
    }
    found.sort();
    Ok(found.into_iter().map(|(_, p)| p).collect())
}
