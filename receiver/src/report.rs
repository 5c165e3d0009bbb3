//! What `hmtt capture` prints of a finished run: each port's and each
//! board's counts, why it stopped, and the errors.

use std::fmt;
use std::path::Path;

use crate::stats::Summary;

/// A run's [`Summary`] as text (its [`fmt::Display`]); `summary_path` is
/// where its JSON went.
#[derive(Debug, Clone, Copy)]
pub struct SummaryReport<'a> {
    pub summary: &'a Summary,
    pub summary_path: &'a Path,
}

impl fmt::Display for SummaryReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summary = self.summary;
        for p in &summary.ports {
            writeln!(
                f,
                "port {} ({}): {} packets, {} records, {} bytes, {} rejected, {} LOST words, {} kernel drops, buffer {} bytes",
                p.port,
                p.source,
                p.packets,
                p.records,
                p.bytes,
                p.rejects,
                p.lost_words,
                p.kernel_drops,
                p.buffer_bytes.map_or("-".into(), |b| b.to_string()),
            )?;
        }
        for b in &summary.boards {
            writeln!(
                f,
                "board {}: seq {}..{}, {} received, {} lost (sequence gaps), {} duplicates, \
                 {} with a corrupt seq (far outside the stream's; not counted as lost)",
                b.board,
                b.seq.first_seq,
                b.seq.last_seq,
                b.seq.received,
                b.seq.lost,
                b.seq.duplicates,
                b.seq.corrupt_seq
            )?;
        }
        writeln!(
            f,
            "stopped: {}; summary in {}",
            summary.stop_reason,
            self.summary_path.display()
        )?;
        for e in &summary.errors {
            writeln!(f, "error: {e}")?;
        }
        Ok(())
    }
}
