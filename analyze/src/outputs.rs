//! The files `hmtt analyze` writes besides its text: every figure as JSON,
//! a partial analysis's state, the pictures; and the check, before
//! anything is written, that none of them is one of the inputs.

use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile, OutputIsInput};

use super::partial::{self, read_partial, write_partial, PartialError};
use super::pictures::Pictures;
use super::pictures_partial::{
    combine_pictures, partial_kind, write_pictures_partial, PartialKind, PicturesPartial, PlotAxes,
};
use super::{plot, Analysis, AnalyzeOptions, Analyzer};

/// Why an output file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    #[error("creating {}", .0.display())]
    Create(PathBuf, #[source] std::io::Error),
    #[error("writing {}", .0.display())]
    Write(PathBuf, #[source] std::io::Error),
    #[error("writing {}", .0.display())]
    Partial(PathBuf, #[source] PartialError),
    #[error("reading {}", .0.display())]
    Read(PathBuf, #[source] std::io::Error),
    #[error("reading {}", .0.display())]
    ReadPartial(PathBuf, #[source] PartialError),
    #[error("combining the partial analyses")]
    Combine(#[source] PartialError),
}

/// The files an analysis is to write.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnalysisOutputs<'a> {
    pub json: Option<&'a Path>,
    pub partial: Option<&'a Path>,
    /// `--write-plot-axes`.
    pub plot_axes: Option<&'a Path>,
    /// The pictures' directory.
    pub plot: Option<&'a Path>,
}

impl AnalysisOutputs<'_> {
    /// Refuses an output (or a picture in the pictures' directory) that is
    /// one of `inputs`.
    pub fn refuse_over_inputs(&self, inputs: &[&Path]) -> Result<(), OutputIsInput> {
        let mut outputs: Vec<PathBuf> = [self.json, self.partial, self.plot_axes, self.plot]
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
    write_atomically(path, |f| write_partial(data, opts, blocks, f))
}

/// Writes into `path`, renamed into place once whole, what `write` makes.
fn write_atomically<T>(
    path: &Path,
    write: impl FnOnce(std::fs::File) -> Result<T, PartialError>,
) -> Result<T, OutputFileError> {
    let creating = |e| OutputFileError::Create(path.to_path_buf(), e);
    let out = AtomicFile::create(path).map_err(creating)?;
    let f = out.file().try_clone().map_err(creating)?;
    let made = write(f).map_err(|e| OutputFileError::Partial(path.to_path_buf(), e))?;
    out.commit()
        .map_err(|e| OutputFileError::Write(path.to_path_buf(), e))?;
    Ok(made)
}

/// [`write_pictures_partial`] into the file at `path`, renamed into place
/// once whole. Returns the blocks drawn.
pub fn write_pictures_partial_file(
    data: &[u8],
    axes: &PlotAxes,
    blocks: Range<usize>,
    path: &Path,
) -> Result<Range<usize>, OutputFileError> {
    write_atomically(path, |f| write_pictures_partial(data, axes, blocks, f))
}

/// Writes `axes` into the file at `path`, renamed into place once whole.
pub fn write_plot_axes_file(axes: &PlotAxes, path: &Path) -> Result<(), OutputFileError> {
    write_atomically(path, |f| axes.write(f))
}

/// Reads the plot axes file at `path`.
pub fn read_plot_axes_file(path: &Path) -> Result<PlotAxes, OutputFileError> {
    let f = std::fs::File::open(path).map_err(|e| OutputFileError::Read(path.to_path_buf(), e))?;
    PlotAxes::read(f).map_err(|e| OutputFileError::ReadPartial(path.to_path_buf(), e))
}

/// What `hmtt analyze --combine` makes of its files.
pub struct Combined {
    pub analysis: Analysis,
    pub analyzer: Analyzer,
    /// The axes of the whole trace's pictures (`--write-plot-axes`).
    pub axes: PlotAxes,
    /// The pictures, when pictures partials were given.
    pub pictures: Option<Pictures>,
}

/// Combines the partial analyses among `paths` into the analysis of the
/// whole trace and, when `paths` also hold pictures partials, their
/// grids into its pictures.
pub fn combine_files(paths: &[PathBuf]) -> Result<Combined, OutputFileError> {
    let mut analyses = Vec::new();
    let mut pictures = Vec::new();
    for path in paths {
        let bytes = std::fs::read(path).map_err(|e| OutputFileError::Read(path.clone(), e))?;
        let reading = |e| OutputFileError::ReadPartial(path.clone(), e);
        match partial_kind(&bytes) {
            Some(PartialKind::Pictures) => {
                pictures.push(PicturesPartial::read(&bytes[..]).map_err(reading)?)
            }
            // Read as a partial analysis, whose reader says what is wrong
            // with anything else.
            _ => analyses.push(read_partial(&bytes[..]).map_err(reading)?),
        }
    }
    let (records, blocks) = analyses
        .first()
        .map_or((0, 0), |p| (p.trace_records, p.trace_blocks));
    let (analysis, analyzer, meta, _) =
        partial::combine(analyses).map_err(OutputFileError::Combine)?;
    let axes = PlotAxes::of(&meta, records, blocks, &analysis, &analyzer);
    let pictures = match pictures.is_empty() {
        true => None,
        false => Some(combine_pictures(&axes, pictures).map_err(OutputFileError::Combine)?),
    };
    Ok(Combined {
        analysis,
        analyzer,
        axes,
        pictures,
    })
}
