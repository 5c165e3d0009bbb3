//! The one way every command prints: standard output through [`Stdout`]
//! (quiet when its reader closes the pipe), reports' JSON through
//! [`JsonOut`], status lines on standard error (`status!`), and
//! `-q/--quiet`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use hmtt_format::direct_write::StdoutFile;

/// Where `--json [FILE|-]` writes a command's report: a file, or standard
/// output (`-`, instead of the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonOut {
    Stdout,
    File(PathBuf),
}

impl JsonOut {
    /// clap's parser of `--json`'s value.
    pub fn parse(s: &str) -> Result<JsonOut, std::convert::Infallible> {
        Ok(match s {
            "-" => JsonOut::Stdout,
            file => JsonOut::File(file.into()),
        })
    }

    /// The file, unless the JSON goes to standard output.
    pub fn file(&self) -> Option<&Path> {
        match self {
            JsonOut::Stdout => None,
            JsonOut::File(p) => Some(p),
        }
    }

    /// Writes a report's JSON (`body`) to the file, renamed into place once
    /// whole, or to standard output; `what` names it in errors.
    pub fn write(
        &self,
        what: &'static str,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        match self {
            JsonOut::Stdout => to_stdout(what, body),
            JsonOut::File(path) => {
                let mut bytes = Vec::new();
                body(&mut bytes).context(what)?;
                hmtt_format::atomic_file::write_atomically(path, &bytes)
                    .with_context(|| format!("writing {}", path.display()))
            }
        }
    }
}

/// Whether a report's text is printed: not when `--json -` puts its JSON
/// on standard output instead.
pub fn prints_text(json: Option<&JsonOut>) -> bool {
    json != Some(&JsonOut::Stdout)
}

/// Set once a reader has closed standard output: later output is dropped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a reader has closed standard output (`hmtt dump | head`).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Buffered standard output, the one way every command prints. When the
/// reader closes the pipe, the write that finds it out fails with
/// `BrokenPipe` (so a loop writing rows stops) and every later write is
/// dropped: the command finishes its work and exits with its own status,
/// quietly. Any other failure (a full disk) is returned as it is. Standard
/// output redirected to a regular file (`hmtt dump --csv > rows.csv`) is
/// written as `hmtt export` writes its files, around the page cache
/// ([`StdoutFile`]), through a file description of its own.
pub struct Stdout(Sink);

enum Sink {
    Stream(BufWriter<std::io::Stdout>),
    File(StdoutFile),
}

impl Default for Stdout {
    fn default() -> Stdout {
        Stdout(match StdoutFile::open() {
            Some(file) => Sink::File(file),
            None => Sink::Stream(BufWriter::with_capacity(1 << 16, std::io::stdout())),
        })
    }
}

impl Stdout {
    fn watch<T>(r: std::io::Result<T>) -> std::io::Result<T> {
        if matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
        r
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if stdout_closed() {
            return Ok(buf.len());
        }
        match &mut self.0 {
            Sink::Stream(out) => Self::watch(out.write(buf)),
            Sink::File(file) => file.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if stdout_closed() {
            return Ok(());
        }
        match &mut self.0 {
            Sink::Stream(out) => Self::watch(out.flush()),
            Sink::File(file) => file.flush(),
        }
    }
}

/// Whether `e` is standard output closed by its reader.
pub fn is_closed_pipe(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe && stdout_closed()
}

/// Runs `body` on [`Stdout`] and flushes it. A reader that closes the pipe
/// early ends the output quietly; any other failure (a full disk) is an
/// error, with `what` as its context.
pub fn to_stdout(
    what: &'static str,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = Stdout::default();
    match body(&mut out).and_then(|_| out.flush()) {
        Err(e) if is_closed_pipe(&e) => Ok(()),
        r => r.context(what),
    }
}

/// A status line on standard error. A closed or full standard error is
/// not worth failing a run for (a capture goes on capturing), so the line
/// is then dropped.
macro_rules! status {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use status;

/// Set by `-q/--quiet` (every command's): no progress bars, no live
/// status lines.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Records `-q/--quiet` for the commands that show progress.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}
