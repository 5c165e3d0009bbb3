//! `hmtt merge`: capture files → one native trace file (format.md §11).

use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::refuse_output_over_input;
use hmtt_merge::board_statistics::{keep_statistics, StatsKept};
use hmtt_merge::input::DEFAULT_MAX_START_SKEW_NS;
use hmtt_merge::merge::decode_threads_pay_off;
use hmtt_merge::reassemble::DEFAULT_REORDER_DEPTH;
use hmtt_merge::report::MergeSummary;
use hmtt_merge::side_files::read_names;
use hmtt_merge::{
    merge_to_archive, merge_to_trace, CaptureSet, MergeError, MergeOptions, MergeReport,
};

use crate::cmd::pack::ArchiveArgs;

use crate::output::{prints_text, quiet, to_stdout, JsonOut};
use crate::shared::{bytes_bar, parse_non_negative, usize_in};

/// Exit status of a merge that wrote its trace but rejected some input
/// (2 is clap's for a wrong command line).
pub const EXIT_REJECTED_INPUT: i32 = 3;

/// Arguments of `hmtt merge`.
#[derive(clap::Args)]
#[command(
    after_help = "Example:\n  hmtt merge capture/ -o run.hmtttrace --events capture/events.toml\n  \
hmtt merge board0-port*.hmttcap board1-port*.hmttcap --interleave-shift 12 -o run.hmtttrace\n  \
hmtt merge capture/ -o run.hmttz\n\n\
Exit status:\n  0  merged; every packet read was merged (packets lost in transit are gaps, reported)\n  \
1  error: no usable trace written\n  \
2  the command line is wrong\n  \
3  merged with rejected input: packets, record words or the rest of a corrupt file were\n     \
not merged (counted, with the reasons, in the summary; its last line says so)"
)]
pub struct Args {
    /// Capture files (.hmttcap) or directories holding them.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The trace file to write (an archive, format.md §13, with
    /// --compress or when the name ends in .hmttz).
    #[arg(short, long, alias = "output")]
    pub out: PathBuf,
    /// Write a compressed, seekable archive (.hmttz) instead of a trace
    /// file: `hmtt unpack` gives back the trace the merge would have written.
    #[arg(long)]
    pub compress: bool,
    #[command(flatten)]
    pub archive: ArchiveArgs,
    /// Events file (names of user events); default: events.toml in an input directory.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Memory-controller address mapping file (TOML, format.md §3); default linear.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// Several boards on interleaved channels: log2 of the interleave block
    /// in bytes (6..=40).
    #[arg(long, value_parser = clap::value_parser!(u32).range(6..=40))]
    pub interleave_shift: Option<u32>,
    /// Positions a packet may arrive late in its port's stream (behind
    /// packets that follow it) and still be put back in place; 0 undoes no
    /// reordering. Each port keeps this many packets ahead in memory
    /// (0..=65536).
    #[arg(long, default_value_t = DEFAULT_REORDER_DEPTH, value_parser = usize_in(0, 65_536))]
    pub reorder_depth: usize,
    /// Largest spread of the capture files' start times (seconds) in one
    /// run, finite and at least 0.
    #[arg(long, default_value_t = DEFAULT_MAX_START_SKEW_NS as f64 / 1e9,
          value_parser = parse_non_negative)]
    pub max_start_skew: f64,
    /// Decode each board in a thread of its own: `auto` does when the
    /// machine has a core for each board and one for the merge (otherwise
    /// the threads only take turns, at a cost); the trace is the same.
    #[arg(long, value_enum, default_value_t = DecodeThreads::Auto)]
    pub decode_threads: DecodeThreads,
    /// Write the summary as JSON to this file ("-": standard output,
    /// instead of the text).
    #[arg(long, value_name = "FILE|-", value_parser = JsonOut::parse)]
    pub json: Option<JsonOut>,
}

impl Args {
    /// Whether the output is an archive rather than a trace file.
    pub fn writes_archive(&self) -> bool {
        self.compress
            || self
                .out
                .extension()
                .is_some_and(|e| e == hmtt_format::archive::EXTENSION)
    }
}

/// When `hmtt merge` decodes boards in threads of their own.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeThreads {
    Auto,
    On,
    Off,
}

impl DecodeThreads {
    /// Whether to use them for `boards` boards on this machine.
    pub fn wanted(self, boards: usize) -> bool {
        match self {
            DecodeThreads::On => true,
            DecodeThreads::Off => false,
            DecodeThreads::Auto => decode_threads_pay_off(boards),
        }
    }
}

/// The merge parses `--mapping` only once the captures have given the
/// geometry, so its error names the mapping, not its file: this does.
fn name_the_mapping_file(e: MergeError, mapping: Option<&Path>) -> anyhow::Error {
    match (e, mapping) {
        (MergeError::Mapping(m), Some(path)) => {
            anyhow::Error::new(m).context(format!("mapping file {}", path.display()))
        }
        (e, _) => e.into(),
    }
}

/// Merges `inputs` into `out`; shows a progress bar unless `-q`.
fn merge_files(args: &Args) -> anyhow::Result<(MergeReport, StatsKept)> {
    let inputs = merge_inputs(args);
    let json_file = args.json.as_ref().and_then(JsonOut::file);
    for out in std::iter::once(args.out.as_path()).chain(json_file) {
        refuse_output_over_input(out, inputs.iter().map(PathBuf::as_path))?;
    }
    let set = CaptureSet::open(&args.inputs, (args.max_start_skew * 1e9) as u64)?;
    let names = read_names(args.events.as_deref(), &args.inputs)?;
    let mapping_toml = match &args.mapping {
        Some(p) => Some(hmtt_merge::side_files::read_mapping_text(p)?),
        None => None,
    };
    let opts = MergeOptions {
        mapping_toml,
        reorder_depth: args.reorder_depth,
        interleave_shift: args.interleave_shift,
        decode_threads: args.decode_threads.wanted(set.boards.len()),
    };
    let bar = bytes_bar("merging", set.total_bytes(), quiet(), 64 << 20);
    let progress = &mut |done| bar.set_position(done);
    let merged = if args.writes_archive() {
        merge_to_archive(
            &set,
            &opts,
            args.archive.options(),
            &args.out,
            &names,
            progress,
        )
    } else {
        merge_to_trace(&set, &opts, &args.out, &names, progress)
    };
    let (report, _) = merged.map_err(|e| name_the_mapping_file(e, args.mapping.as_deref()))?;
    let kept = keep_statistics(&set, &args.out)?;
    bar.finish_and_clear();
    Ok((report, kept))
}

/// Every file a merge reads: the inputs named, each directory's capture
/// files (rejects too) and events file, `--events` and `--mapping`.
fn merge_inputs(args: &Args) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = args.inputs.clone();
    for dir in args.inputs.iter().filter(|p| p.is_dir()) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            files.extend(
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| {
                        f.extension()
                            .is_some_and(|x| x == hmtt_format::capture::EXTENSION)
                    }),
            );
        }
        files.push(dir.join(hmtt_format::events::FILE_NAME));
    }
    files.extend(args.events.iter().chain(&args.mapping).cloned());
    files
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let start = std::time::Instant::now();
    let (report, kept) = merge_files(&args)?;
    let summary = MergeSummary {
        report: &report,
        out: &args.out,
        seconds: start.elapsed().as_secs_f64(),
        statistics: &kept,
    };
    if let Some(json) = &args.json {
        json.write("writing the merge summary", |out| summary.write_json(out))?;
    }
    if prints_text(args.json.as_ref()) {
        to_stdout("writing the merge summary", |out| write!(out, "{summary}"))?;
    }
    if summary.rejected_input() {
        std::process::exit(EXIT_REJECTED_INPUT);
    }
    Ok(())
}
