//! The files `hmtt analyze` writes besides its text: every figure as JSON,
//! a partial analysis's state, the pictures; and the check, before
//! anything is written, that none of them is one of the inputs.

use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile, OutputIsInput};

use super::partial::{write_partial, PartialError};
use super::{plot, Analysis, AnalyzeOptions};

/// Why an output file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    #[error("creating {}", .0.display())]
    Create(PathBuf, #[source] std::io::Error),
    #[error("writing {}", .0.display())]
    Write(PathBuf, #[source] std::io::Error),
    #[error("writing {}", .0.display())]
    Partial(PathBuf, #[source] PartialError),
}

/// The files an analysis is to write.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnalysisOutputs<'a> {
    pub json: Option<&'a Path>,
    pub partial: Option<&'a Path>,
    /// The pictures' directory.
    pub plot: Option<&'a Path>,
}

impl AnalysisOutputs<'_> {
    /// Refuses an output (or a picture in the pictures' directory) that is
    /// one of `inputs`.
    pub fn refuse_over_inputs(&self, inputs: &[&Path]) -> Result<(), OutputIsInput> {
        let mut outputs: Vec<PathBuf> = [self.json, self.partial, self.plot]
            .into_iter()
            .flatten()
            .map(Path::to_path_buf)
            .collect();
        if let Some(dir) = self.plot {
            outputs.extend(plot::file_names().map(|f| dir.join(f)));
            // The process pictures' names depend on the trace: any input
            // named as one may be written over.
            outputs.extend(
                inputs
                    .iter()
                    .filter_map(|i| i.file_name()?.to_str())
                    .filter(|name| plot::is_picture_file(name))
                    .map(|name| dir.join(name)),
            );
        }
        for out in &outputs {
            refuse_output_over_input(out, inputs.iter().copied())?;
        }
        Ok(())
    }
}

impl Analysis {
    /// Writes every figure as pretty JSON to `w`, with a final newline
    /// (`hmtt analyze --json -`).
    pub fn write_json(&self, mut w: impl Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut w, self)?;
        writeln!(w)
    }

    /// Writes every figure as pretty JSON to `path`, renamed into place
    /// once whole.
    pub fn write_json_file(&self, path: &Path) -> Result<(), OutputFileError> {
        let creating = |e| OutputFileError::Create(path.to_path_buf(), e);
        let out = AtomicFile::create(path).map_err(creating)?;
        let mut w = BufWriter::new(out.file().try_clone().map_err(creating)?);
        serde_json::to_writer_pretty(&mut w, self)
            .map_err(std::io::Error::from)
            .and_then(|()| w.flush())
            .and_then(|()| out.commit())
            .map_err(|e| OutputFileError::Write(path.to_path_buf(), e))
    }
}

/// [`write_partial`] into the file at `path`, renamed into place once
/// whole: the analysis of `blocks` of the trace `data`. Returns the
/// blocks analysed.
pub fn write_partial_file(
    data: &[u8],
    opts: &AnalyzeOptions,
    blocks: Range<usize>,
    path: &Path,
) -> Result<Range<usize>, OutputFileError> {
    let creating = |e| OutputFileError::Create(path.to_path_buf(), e);
    let out = AtomicFile::create(path).map_err(creating)?;
    let f = out.file().try_clone().map_err(creating)?;
    let blocks = write_partial(data, opts, blocks, f)
        .map_err(|e| OutputFileError::Partial(path.to_path_buf(), e))?;
    out.commit()
        .map_err(|e| OutputFileError::Write(path.to_path_buf(), e))?;
    Ok(blocks)
}
