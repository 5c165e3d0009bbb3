//! What `hmtt sim` prints of a run: its counts and the events its boards
//! lost, what `--send` sent, and the timing checks of its command streams.

use std::fmt;

use crate::dram::Violation;
use crate::outdir::StreamSummary;
use crate::send::SendStats;
use crate::stream::StreamReport;

/// A run's counts, and the events each board lost (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct RunCounts<'a> {
    pub summary: &'a StreamSummary,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
}

impl fmt::Display for RunCounts<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.summary;
        writeln!(
            out,
            "simulated {} references ({} memory requests, {} DDR commands, {} ticks) in {:.2} s",
            s.stats.references,
            s.stats.memory_requests,
            s.commands.iter().sum::<u64>(),
            s.stats.end_tick,
            self.seconds
        )?;
        writeln!(
            out,
            "kernel log: {} records; ground truth: {} rows; packets: {}",
            s.klog_records,
            s.truth_records,
            s.packets.iter().sum::<u64>()
        )?;
        for (b, c) in s.board_counters.iter().enumerate() {
            if c.events_dropped > 0 {
                writeln!(
                    out,
                    "board {b}: {} events lost to TX FIFO overflow (slow the CPU with --cpu-ticks or add ports)",
                    c.events_dropped
                )?;
            }
        }
        Ok(())
    }
}

/// Everything `hmtt sim` prints of a run (its [`fmt::Display`]): its
/// counts, the output directory, what was sent, the timing checks.
#[derive(Debug, Clone, Copy)]
pub struct SimReport<'a> {
    pub run: &'a StreamReport,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// The output directory, if the run wrote one.
    pub out: Option<&'a std::path::Path>,
    pub sent: Option<Sent>,
}

impl fmt::Display for SimReport<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts = RunCounts {
            summary: &self.run.summary,
            seconds: self.seconds,
        };
        write!(out, "{counts}")?;
        if let Some(dir) = self.out {
            writeln!(out, "wrote {}", dir.display())?;
        }
        if let Some(sent) = &self.sent {
            write!(out, "{sent}")?;
        }
        write!(out, "{}", Checks(self.run))
    }
}

impl SimReport<'_> {
    /// The report as pretty JSON, a line end after it: the counts of
    /// `summary.json` (docs/format.md §10), each board's commands, the
    /// output directory, what was sent and each board's timing check.
    pub fn write_json(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        let s = &self.run.summary;
        let checks: Vec<serde_json::Value> = self
            .run
            .checks
            .iter()
            .enumerate()
            .map(|(board, (kept, total))| {
                serde_json::json!({
                    "board": board,
                    "violations": total,
                    "first": kept.first().map(ToString::to_string),
                })
            })
            .collect();
        let report = serde_json::json!({
            "stats": s.stats,
            "commands": s.commands,
            "truth_records": s.truth_records,
            "klog_records": s.klog_records,
            "packets": s.packets,
            "boards": s.board_counters,
            "out": self.out,
            "seconds": self.seconds,
            "sent": self.sent.map(|sent| serde_json::json!({
                "packets": sent.stats.packets,
                "bytes": sent.stats.bytes,
                "calls": sent.stats.calls,
                "retries": sent.stats.retries,
                "seconds": sent.seconds,
            })),
            "timing_checks": checks,
        });
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)
    }
}

/// What a UDP sink sent as the run went (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub stats: SendStats,
    /// Seconds since the first packet went out.
    pub seconds: f64,
}

impl fmt::Display for Sent {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (stats, secs) = (&self.stats, self.seconds);
        writeln!(
            out,
            "sent {} packets ({} bytes) as the run went, over {:.3} s: {:.3} Gb/s, {} sendmmsg calls, {} retries",
            stats.packets,
            stats.bytes,
            secs,
            stats.bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
            stats.calls,
            stats.retries
        )
    }
}

/// The timing checks of a run's command streams (its [`fmt::Display`]):
/// each board's stream found legal, up to the first that is not
/// ([`StreamReport::check_timing`] fails on that one).
#[derive(Debug, Clone, Copy)]
pub struct Checks<'a>(pub &'a StreamReport);

impl fmt::Display for Checks<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (b, (kept, _)) in self.0.checks.iter().enumerate() {
            if !kept.is_empty() {
                break;
            }
            writeln!(out, "board {b}: command stream legal")?;
        }
        Ok(())
    }
}

/// A command stream that breaks a timing rule.
#[derive(Debug, Clone, thiserror::Error)]
#[error("board {board}: {total} timing violations, first: {first}")]
pub struct TimingViolations {
    pub board: usize,
    pub total: u64,
    pub first: Violation,
}

impl StreamReport {
    /// Fails on the first board whose command stream breaks a timing
    /// rule ([`crate::stream::StreamOutputs::check`]).
    pub fn check_timing(&self) -> Result<(), TimingViolations> {
        let broken = self
            .checks
            .iter()
            .enumerate()
            .find_map(|(board, (kept, total))| {
                kept.first().map(|first| TimingViolations {
                    board,
                    total: *total,
                    first: first.clone(),
                })
            });
        broken.map_or(Ok(()), Err)
    }
}
