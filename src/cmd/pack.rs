//! `hmtt pack` and `hmtt unpack`: a trace file to a compressed, seekable
//! archive (.hmttz, format.md §13) and back, byte for byte.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::Context;
use hmtt_format::archive::{self, ArchiveOptions};
use hmtt_format::atomic_file::{refuse_output_over_input, AtomicFile};

use hmtt_format::input::InputFile;

use crate::output::to_stdout;

/// Arguments of `hmtt pack`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt pack run.hmtttrace -o run.hmttz")]
pub struct PackArgs {
    /// Trace file written by `hmtt merge`.
    pub trace: PathBuf,
    /// The archive to write.
    #[arg(short, long, alias = "output")]
    pub out: PathBuf,
    #[command(flatten)]
    pub archive: ArchiveArgs,
    #[command(flatten)]
    pub incomplete: crate::shared::IncompleteArg,
}

/// How archives are written (`hmtt pack`, `hmtt merge --compress`).
#[derive(clap::Args, Clone, Copy)]
pub struct ArchiveArgs {
    /// Records per archive block (1..=16777216): a seek decodes the
    /// block that holds its time and the one before it.
    #[arg(long, default_value_t = archive::DEFAULT_BLOCK_RECORDS,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(archive::MAX_BLOCK_RECORDS)))]
    pub block_records: u32,
    /// zstd level of every column of the archive (1..=22; by default 3,
    /// and 1 for the AUX column and the DT column of blocks under 65536
    /// records).
    #[arg(long, value_parser = clap::value_parser!(i32).range(1..=22))]
    pub level: Option<i32>,
}

impl ArchiveArgs {
    pub fn options(self) -> ArchiveOptions {
        match self.level {
            Some(level) => ArchiveOptions::with_level(self.block_records, level),
            None => ArchiveOptions {
                block_records: self.block_records,
                ..ArchiveOptions::default()
            },
        }
    }
}

/// Arguments of `hmtt unpack`.
#[derive(clap::Args)]
#[command(after_help = "Example:\n  hmtt unpack run.hmttz -o run.hmtttrace")]
pub struct UnpackArgs {
    /// Archive written by `hmtt pack` or `hmtt merge --compress`.
    pub archive: PathBuf,
    /// The trace file to write.
    #[arg(short, long, alias = "output")]
    pub out: PathBuf,
}

/// Starts writing `path` under a temporary name; the caller commits it.
fn create(path: &Path) -> anyhow::Result<(AtomicFile, BufWriter<std::fs::File>)> {
    let out = AtomicFile::create(path).with_context(|| format!("creating {}", path.display()))?;
    let f = out
        .file()
        .try_clone()
        .with_context(|| format!("creating {}", path.display()))?;
    Ok((out, BufWriter::with_capacity(1 << 20, f)))
}

/// Flushes `w` and renames `out` into place.
fn commit(out: AtomicFile, w: BufWriter<std::fs::File>, what: &str) -> anyhow::Result<()> {
    let path = out.dest().to_path_buf();
    w.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|_| out.commit())
        .with_context(|| format!("writing {what} {}", path.display()))
}

pub fn run_pack(args: PackArgs) -> anyhow::Result<()> {
    refuse_output_over_input(&args.out, [args.trace.as_path()])?;
    let file = InputFile::open(&args.trace)?;
    let start = std::time::Instant::now();
    file.trace(args.incomplete.checks(false))?;
    let (out, w) = create(&args.out)?;
    let (w, s) = archive::pack(file.bytes(), w, args.archive.options()).with_context(|| {
        format!(
            "packing {} into {}",
            args.trace.display(),
            args.out.display()
        )
    })?;
    commit(out, w, "the archive")?;
    let secs = start.elapsed().as_secs_f64();
    to_stdout("writing the summary", |out| {
        writeln!(out,
        "wrote {} ({} records in {} blocks, {} bytes: {:.3} bits per record, {:.1}x smaller) in {:.2} s ({:.1} M records/s)",
        args.out.display(),
        s.records,
        s.blocks,
        s.bytes,
        s.bytes as f64 * 8.0 / s.records.max(1) as f64,
        file.bytes().len() as f64 / s.bytes.max(1) as f64,
        secs,
        s.records as f64 / 1e6 / secs.max(1e-9)
    )
    })?;
    Ok(())
}

pub fn run_unpack(args: UnpackArgs) -> anyhow::Result<()> {
    refuse_output_over_input(&args.out, [args.archive.as_path()])?;
    let file = InputFile::open(&args.archive)?;
    let view = file.archive()?;
    let start = std::time::Instant::now();
    let (out, mut w) = create(&args.out)?;
    let n = match archive::unpack(&view, &mut w) {
        Ok(n) => n,
        // The archive is read from memory: an I/O error is the output's.
        Err(archive::ArchiveError::Io(e)) => {
            return Err(e).with_context(|| format!("writing the trace {}", args.out.display()))
        }
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "unpacking {} into {}",
                    args.archive.display(),
                    args.out.display()
                )
            })
        }
    };
    commit(out, w, "the trace")?;
    let secs = start.elapsed().as_secs_f64();
    to_stdout("writing the summary", |out| {
        writeln!(
            out,
            "wrote {} ({} records, {n} bytes) in {:.2} s ({:.1} M records/s)",
            args.out.display(),
            view.len(),
            secs,
            view.len() as f64 / 1e6 / secs.max(1e-9)
        )
    })?;
    Ok(())
}
