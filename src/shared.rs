//! What several subcommands share: clap's parsers of numbers (sizes,
//! lists and ranges are `hmtt_format::text::given`'s), the progress bar
//! over a long input, and opening a trace file and its event names.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context};
use hmtt_format::archive::AnyTrace;
use hmtt_format::indexed::CommonHeader;
use hmtt_format::input::AnyInput;
use hmtt_format::mapped_file::MappedFile;
use hmtt_format::trace::NameTable;
use hmtt_format::{AddressMapping, Geometry};

/// An option that is `on` or `off`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn name(self) -> &'static str {
        match self {
            OnOff::On => "on",
            OnOff::Off => "off",
        }
    }
}

/// A number: decimal or `0x` hexadecimal, `_` between digits allowed
/// (`4096`, `0x1000_0000`, `1_000_000`): [`hmtt_format::text::parse_number`].
pub fn parse_number(s: &str) -> anyhow::Result<u64> {
    Ok(hmtt_format::text::parse_number(s)?)
}

/// A number greater than 0 and finite (`--interval-ms 0.5`): clap's
/// parser of such options.
pub fn positive_finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!("'{s}' is not a positive, finite number")),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// clap's parser of a count from `lo` to `hi` (the range said in the
/// option's help).
pub fn usize_in(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(lo..=hi)
}

/// A number of at least 0, finite (`--from-ns 0`).
pub fn non_negative_finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!("'{s}' is not a finite number of at least 0")),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// A percentage, 0 to 100.
pub fn percentage(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
        Ok(_) => Err(format!("'{s}' is not a percentage (0 to 100)")),
        Err(_) => Err(format!("'{s}' is not a number")),
    }
}

/// A bar over `total` bytes of input, labelled `label`; hidden when
/// `quiet`, for inputs under 64 MiB, and when stderr is no terminal.
pub fn bytes_bar(label: &str, total: u64, quiet: bool) -> indicatif::ProgressBar {
    bytes_bar_above(label, total, quiet, 64 << 20)
}

/// [`bytes_bar`] for inputs of at least `min` bytes (a slow consumer wants
/// a bar over smaller inputs).
pub fn bytes_bar_above(label: &str, total: u64, quiet: bool, min: u64) -> indicatif::ProgressBar {
    if quiet || total < min {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{label} {{bar:40}} {{bytes}}/{{total_bytes}} {{binary_bytes_per_sec}} eta {{eta}}"
        ))
        .expect("valid template"),
    );
    bar
}

/// The address mapping file at `path` (TOML, docs/format.md §3) for
/// `geometry`.
pub fn load_mapping(path: &Path, geometry: Geometry) -> anyhow::Result<AddressMapping> {
    let text = hmtt_merge::side_files::read_mapping_text(path)?;
    AddressMapping::from_toml(&text, geometry)
        .with_context(|| format!("mapping file {}", path.display()))
}

/// A trace file's bytes, mapped (`hmtt_format::mapped_file`).
pub struct TraceBytes(MappedFile);

impl TraceBytes {
    /// Maps a trace file read-only.
    ///
    /// Every writer of these files renames a finished file into place
    /// (`hmtt_format::atomic_file`), so a file being rewritten is a new
    /// file and the one mapped here never shrinks under the reader. A
    /// program outside hmtt that truncates the file in place is caught by
    /// the map's guard: the command fails naming the file (docs/guide.md,
    /// "Files being rewritten").
    pub fn open(path: &Path) -> anyhow::Result<TraceBytes> {
        if path.is_dir() {
            bail!("{} is a directory, not a trace file", path.display());
        }
        let m = MappedFile::open(path).with_context(|| format!("opening {}", path.display()))?;
        Ok(TraceBytes(m))
    }

    pub fn as_slice(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// Exit status of a command refused an unfinished trace or virtual trace
/// (docs/guide.md §6).
pub const EXIT_INCOMPLETE_INPUT: i32 = 4;

/// `--allow-incomplete`, of every command that reads a trace or virtual
/// trace.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct IncompleteArg {
    /// Read a trace or virtual trace whose writer did not finish (a killed
    /// `merge` or `replay --out`): its whole records, with a warning.
    /// Without it such a file is refused with exit status 4.
    #[arg(long)]
    pub allow_incomplete: bool,
}

/// A trace or virtual trace whose writer did not finish, refused.
#[derive(Debug)]
pub struct IncompleteInput {
    path: PathBuf,
    what: &'static str,
    records: u64,
}

impl std::fmt::Display for IncompleteInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the {} is incomplete: its writer did not finish (a killed or failed merge or replay --out), so it has no index, names or checksums and holds {} whole records; pass --allow-incomplete to read them",
            self.path.display(),
            self.what,
            self.records
        )
    }
}

impl std::error::Error for IncompleteInput {}

/// Whether `e` is (or wraps) an [`IncompleteInput`].
pub fn is_incomplete_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<IncompleteInput>())
}

/// Checks a trace or virtual trace (`what`) at `path`, its header's common
/// fields `common` as read: an unfinished file is refused unless `allow`
/// (then read with a warning); one whose tick length is unknown (0) is
/// refused when the command needs times (`needs_time`), rather than read
/// with a made-up tick length. A finished file of format version 1 is
/// read with a warning ([`note_unchecked`]).
pub fn check_input(
    path: &Path,
    what: &'static str,
    common: &CommonHeader,
    allow: IncompleteArg,
    needs_time: bool,
) -> anyhow::Result<()> {
    if common.is_complete() {
        note_unchecked(path, common);
    } else if !allow.allow_incomplete {
        return Err(IncompleteInput {
            path: path.to_path_buf(),
            what,
            records: common.record_count,
        }
        .into());
    } else {
        tracing::warn!(
            "{}: the {what} is incomplete (its writer did not finish): reading its {} whole records, unverified, without index or names",
            path.display(),
            common.record_count
        );
    }
    if needs_time {
        tick_length(path, what, common)?;
    }
    Ok(())
}

/// The tick length of the trace or virtual trace (`what`) at `path`, or an
/// error when its header holds 0 (unknown): times cannot be computed.
pub fn tick_length(
    path: &Path,
    what: &'static str,
    common: &CommonHeader,
) -> anyhow::Result<hmtt_format::TickLength> {
    common.tick_length().with_context(|| {
        format!(
            "{}: the {what}'s tick length is unknown (0 in its header): its times cannot be computed",
            path.display()
        )
    })
}

/// [`check_input`] for a trace file or its archive.
pub fn check_trace_input(
    path: &Path,
    view: &AnyTrace,
    allow: IncompleteArg,
    needs_time: bool,
) -> anyhow::Result<()> {
    let common = &view.header().common;
    match view {
        AnyTrace::Trace(_) => check_input(path, "trace", common, allow, needs_time),
        // The archive checks its own blocks; the trace it holds may be
        // unfinished.
        AnyTrace::Archive(_) if common.is_complete() => Ok(()),
        AnyTrace::Archive(_) => check_input(path, "archived trace", common, allow, needs_time),
    }
}

/// The trace input (trace file, archive or virtual trace) at `path`, of
/// bytes `bytes`, opened by [`AnyInput::new_checked`] and checked
/// ([`check_trace_input`], [`check_vtrace_input`]).
pub fn open_input<'a>(
    path: &Path,
    bytes: &'a TraceBytes,
    allow: IncompleteArg,
    needs_time: bool,
) -> anyhow::Result<AnyInput<'a>> {
    let input = AnyInput::new_checked(bytes.as_slice(), path)?;
    match &input {
        AnyInput::Physical(view) => check_trace_input(path, view, allow, needs_time)?,
        AnyInput::Virtual(view) => check_vtrace_input(path, view, allow)?,
    }
    Ok(input)
}

/// [`open_input`] for `command`, which reads a trace file or its archive:
/// a virtual trace is refused ([`AnyInput::physical_checked`]).
pub fn open_physical<'a>(
    path: &Path,
    bytes: &'a TraceBytes,
    command: &'static str,
    allow: IncompleteArg,
    needs_time: bool,
) -> anyhow::Result<AnyTrace<'a>> {
    let view = AnyInput::physical_checked(bytes.as_slice(), path, command)?;
    check_trace_input(path, &view, allow, needs_time)?;
    Ok(view)
}

/// [`check_input`] for a virtual trace: its times are always needed.
pub fn check_vtrace_input(
    path: &Path,
    view: &hmtt_format::vtrace::VtraceView,
    allow: IncompleteArg,
) -> anyhow::Result<()> {
    check_input(path, "virtual trace", &view.header().common, allow, true)
}

/// Warns when the trace file at `path` (its header's common fields
/// `common`) is of format version 1: it carries no checksums, so damage to
/// it cannot be seen. An archive (format.md §13) checks its own blocks.
pub fn note_unchecked(path: &Path, common: &CommonHeader) {
    if common.is_complete() && !common.has_checksums() {
        tracing::warn!(
            "{}: a format version {} file carries no checksums: damage to it cannot be detected (hmtt pack, or a new merge or replay, gives a checked file)",
            path.display(),
            common.version
        );
    }
}

/// Event names from `events` (which must exist), or from an `events.toml`
/// in one of the `inputs` directories; none if there is no such file.
pub fn load_names(events: Option<&Path>, inputs: &[PathBuf]) -> anyhow::Result<NameTable> {
    let path = match events {
        Some(p) => Some(p.to_path_buf()),
        None => inputs
            .iter()
            .filter(|p| p.is_dir())
            .map(|d| d.join(hmtt_format::events::FILE_NAME))
            .find(|p| p.exists()),
    };
    let Some(path) = path else {
        return Ok(NameTable::default());
    };
    let names = hmtt_merge::side_files::read_events(&path)?;
    Ok(NameTable {
        names: names.iter().map(|(n, i)| (i, n.to_string())).collect(),
    })
}

/// `names` with those of `events` added (names not stored in a trace).
pub fn with_names_of(mut names: NameTable, events: Option<&Path>) -> anyhow::Result<NameTable> {
    if events.is_some() {
        names.names.extend(load_names(events, &[])?.names);
    }
    Ok(names)
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
/// quietly. Any other failure (a full disk) is returned as it is.
pub struct Stdout(BufWriter<std::io::Stdout>);

impl Default for Stdout {
    fn default() -> Stdout {
        Stdout(BufWriter::with_capacity(1 << 16, std::io::stdout()))
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
        Self::watch(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if stdout_closed() {
            return Ok(());
        }
        Self::watch(self.0.flush())
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

/// Options renamed for consistency across commands (issue 37): (command,
/// old spelling, new spelling). Each old spelling is a hidden clap alias
/// of the new option, kept for one release; [`warn_renamed_options`] tells
/// whoever still uses it.
pub const RENAMED_OPTIONS: &[(&str, &str, &str)] = &[
    ("merge", "--output", "-o/--out"),
    ("pack", "--output", "-o/--out"),
    ("unpack", "--output", "-o/--out"),
    ("board", "--window", "--config-window"),
    ("export", "--interval-ns", "--interval-ms (in ms, not ns)"),
];

/// The renamed options ([`RENAMED_OPTIONS`]) of `command` spelled the old
/// way in its command line `args` (parsed by clap already), once each.
/// Everything after `--` is another program's command line (`hmtt qemu`).
/// clap refuses an option name where a value is due, so a token spelled
/// like an option before `--` is one.
pub fn renamed_options_used<S: AsRef<std::ffi::OsStr>>(
    command: &str,
    args: impl IntoIterator<Item = S>,
) -> Vec<(&'static str, &'static str)> {
    let mut used = Vec::new();
    for arg in args.into_iter() {
        let Some(arg) = arg.as_ref().to_str() else {
            continue;
        };
        if arg == "--" {
            break;
        }
        let name = arg.split_once('=').map_or(arg, |(name, _)| name);
        for &(cmd, old, new) in RENAMED_OPTIONS {
            if cmd == command && name == old && !used.contains(&(old, new)) {
                used.push((old, new));
            }
        }
    }
    used
}

/// Warns on standard error, through [`status!`] (under `-q` too, as every
/// warning), of each renamed option spelled
/// the old way in `command`'s `args`.
pub fn warn_renamed_options<S: AsRef<std::ffi::OsStr>>(
    command: &str,
    args: impl IntoIterator<Item = S>,
) {
    for (old, new) in renamed_options_used(command, args) {
        status!(
            "warning: `hmtt {command} {old}` is deprecated and will be removed \
             in the next release: use {new}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_clap_parsers() {
        for (text, n) in [
            ("123", 123),
            (" 0x10 ", 16),
            ("0X1f", 31),
            ("1_000", 1000),
            ("0x1000_0000", 0x1000_0000),
        ] {
            assert_eq!(parse_number(text).unwrap(), n, "{text}");
        }
        for bad in ["", "x", "0x", "-1", "1.5"] {
            assert!(parse_number(bad).is_err(), "{bad}");
        }
        assert_eq!(positive_finite("0.5").unwrap(), 0.5);
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(positive_finite(bad).is_err(), "{bad}");
        }
        assert_eq!(non_negative_finite("0").unwrap(), 0.0);
        assert!(non_negative_finite("-0.1").is_err());
        assert!(non_negative_finite("inf").is_err());
        assert_eq!(percentage("100").unwrap(), 100.0);
        assert!(percentage("100.5").is_err());
        assert!(percentage("nan").is_err());
    }

    #[test]
    fn renamed_options_are_found_by_command_before_the_double_dash() {
        let used = |cmd: &str, args: &[&str]| renamed_options_used(cmd, args);
        assert_eq!(
            used(
                "merge",
                &["hmtt", "merge", "c/", "--output", "t", "--output=u"]
            ),
            [("--output", "-o/--out")]
        );
        assert_eq!(
            used("board", &["hmtt", "board", "--window=0,1,2"]),
            [("--window", "--config-window")]
        );
        assert!(used("merge", &["hmtt", "merge", "c/", "-o", "t", "--outputs"]).is_empty());
        assert!(used("analyze", &["hmtt", "analyze", "t", "--window", "a,b"]).is_empty());
        assert!(used("board", &["hmtt", "board", "--", "--window"]).is_empty());
    }
}
