//! `hmtt log`: drain the kernel module's log (`/dev/hmtt_log`) into a
//! `.hmttlog` file, optionally tracing processes' page tables first.

use std::path::PathBuf;
use std::time::Duration;

use hmtt_icode::drain::{self, StopWhen};
use hmtt_icode::ConfigSpace;

use crate::output::status;
use crate::shared::parse_non_negative;

/// Arguments of `hmtt log`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    hmtt log --out run.hmttlog                      (until Ctrl-C)\n  \
    hmtt log --out run.hmttlog --trace-pid 1234 --snapshot 1234 --seconds 10\n  \
    hmtt log --out rest.hmttlog --until-empty")]
pub struct Args {
    /// The .hmttlog file to write (header + 64-byte records, docs/format.md section 8).
    #[arg(long, short)]
    pub out: PathBuf,
    /// The log device (or a file of raw records, read to its end).
    #[arg(long, default_value = "/dev/hmtt_log")]
    pub device: PathBuf,
    /// The configuration-space device, for --trace-pid and --snapshot.
    #[arg(long, default_value = "/dev/hmtt")]
    pub config_device: PathBuf,
    /// Start logging the page-table changes of this process (repeatable).
    #[arg(long)]
    pub trace_pid: Vec<i32>,
    /// Log every present mapping of this process now, as SNAPSHOT_MAP (repeatable).
    #[arg(long)]
    pub snapshot: Vec<i32>,
    /// Stop once the log is empty.
    #[arg(long)]
    pub until_empty: bool,
    /// Stop after this many records.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this many seconds (finite, at least 0).
    #[arg(long, value_parser = parse_non_negative)]
    pub seconds: Option<f64>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.trace_pid.is_empty() || !args.snapshot.is_empty() {
        let space = ConfigSpace::open_device(&args.config_device)?;
        for &pid in &args.trace_pid {
            space.trace_pid(pid, true)?;
            tracing::info!(pid, "tracing page tables");
        }
        for &pid in &args.snapshot {
            let (logged, dropped) = space.snapshot(pid)?;
            tracing::info!(pid, logged, dropped, "page-table snapshot");
            if dropped > 0 {
                tracing::warn!(
                    pid,
                    dropped,
                    "snapshot records lost: the kernel ring was full"
                );
            }
        }
    }
    // `Duration::from_secs_f64` panics on 2^64 seconds and more.
    let duration = match args.seconds.map(Duration::try_from_secs_f64) {
        Some(Ok(d)) => Some(d),
        Some(Err(_)) => anyhow::bail!(
            "--seconds {} is not a duration (0 to 2^64-1 seconds)",
            args.seconds.unwrap_or_default()
        ),
        None => None,
    };
    let stop = StopWhen {
        empty: args.until_empty,
        records: args.count,
        duration,
    };
    let cancel = drain::cancel_on_sigint();
    let stats = drain::drain_to_file(&args.device, &args.out, &stop, cancel)?;
    status!(
        "{}: {} records (seq {}..{}), {} lost in the kernel ring, {} unparsable, {} seq breaks",
        args.out.display(),
        stats.records,
        stats.first_seq.map_or("-".into(), |s| s.to_string()),
        stats.last_seq.map_or("-".into(), |s| s.to_string()),
        stats.lost_in_kernel,
        stats.unparsable,
        stats.seq_breaks,
    );
    if stats.trailing_bytes > 0 {
        tracing::warn!(
            bytes = stats.trailing_bytes,
            "the source ended inside a record; those bytes were not written"
        );
    }
    Ok(())
}
