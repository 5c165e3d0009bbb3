//! What several subcommands share: clap's parsers of numbers (the
//! numbers, sizes, lists and ranges are `hmtt_format::text`'s), the
//! progress bar over a long input and the options of every command that
//! reads a trace. How commands print is `output`'s.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::Context;
use hmtt_format::input::InputChecks;
pub use hmtt_format::text::{
    parse_non_negative, parse_number, parse_percentage, parse_positive, parse_size,
};
use hmtt_sim::cache::CacheConfig;
use hmtt_sim::workload::{WorkloadKind, WorkloadSpec};

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

/// The last-level cache model's options, as `sim` and `qemu` take them.
#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Last-level cache model on or off (off: the paper's cache-disabled
    /// mode).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub cache: OnOff,
    /// The cache's size.
    #[arg(long, default_value = "2M", value_parser = parse_size)]
    pub cache_size: u64,
    /// The cache's ways.
    #[arg(long, default_value_t = 16)]
    pub ways: u32,
}

impl CacheArgs {
    /// The cache these options describe (none when it is off).
    pub fn config(&self) -> Option<CacheConfig> {
        match self.cache {
            OnOff::On => Some(CacheConfig {
                size_bytes: self.cache_size,
                ways: self.ways,
            }),
            OnOff::Off => None,
        }
    }
}

/// clap's parser of a count from `lo` to `hi` (the range said in the
/// option's help).
pub fn usize_in(lo: u64, hi: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(lo..=hi)
}

/// clap's parser of a size ([`parse_size`]: `64M`, `16MiB`) from `lo` to
/// `hi` bytes; `range` says the range in the error (`1M to 2047M`).
pub fn size_in(
    lo: u64,
    hi: u64,
    range: &'static str,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s| match parse_size(s) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        Ok(_) => Err(format!("size '{s}' is not from {range}")),
        Err(e) => Err(e.to_string()),
    }
}

/// A bar over `total` bytes of input, labelled `label`; hidden when
/// `quiet`, for inputs under `min` bytes, and when stderr is no terminal.
pub fn bytes_bar(label: &str, total: u64, quiet: bool, min: u64) -> indicatif::ProgressBar {
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

/// The text input at `path` (`-`: standard input), read through a bar
/// ([`bytes_bar`], from `min` bytes on; none over standard input).
pub fn text_input(
    path: &Path,
    label: &str,
    min: u64,
) -> anyhow::Result<(Box<dyn BufRead + Send>, indicatif::ProgressBar)> {
    if path.as_os_str() == "-" {
        let stdin = BufReader::with_capacity(1 << 20, std::io::stdin());
        return Ok((Box::new(stdin), indicatif::ProgressBar::hidden()));
    }
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let bar = bytes_bar(
        label,
        f.metadata().map_or(0, |m| m.len()),
        crate::output::quiet(),
        min,
    );
    let read = BufReader::with_capacity(1 << 20, bar.wrap_read(f));
    Ok((Box::new(read), bar))
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

impl IncompleteArg {
    /// What the command asks of its input: `needs_time` when it computes
    /// times.
    pub fn checks(self, needs_time: bool) -> InputChecks {
        InputChecks {
            allow_incomplete: self.allow_incomplete,
            needs_time,
        }
    }
}

/// The size options of a workload (`hmtt sim`, `hmtt demo`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct WorkloadSize {
    /// Workload size: bytes for the micro-benchmarks (K/M/G suffixes),
    /// elements for quicksort, transfers for dma, buffer bytes for mix; at
    /// most 1T.
    #[arg(long, value_parser = parse_size)]
    pub n: Option<u64>,
    /// Bytes per reference of the micro-benchmarks.
    #[arg(long, default_value = "64", value_parser = parse_size)]
    pub unit: u64,
    /// Distance between references of `strided`.
    #[arg(long, default_value = "4096", value_parser = parse_size)]
    pub stride: u64,
}

impl WorkloadSize {
    /// The workload of `kind` these give, `default_size` unless `--n`.
    pub fn spec(self, kind: WorkloadKind, default_size: u64) -> WorkloadSpec<'static> {
        WorkloadSpec::sized(kind, self.n, default_size, self.unit, self.stride)
    }
}
