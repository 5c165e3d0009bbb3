//! What a merge found: per board, the packets merged, the gaps (lost
//! packets, with the seq range and the time window left uncovered),
//! duplicates, late and rejected packets, cut files and record counts.

use hmtt_format::TickLength;
use std::fmt;
use std::path::Path;

use crate::board_statistics::StatsKept;

use hmtt_format::capture::CaptureEnd;

/// Packets missing from one board's capture.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Gap {
    pub board: u8,
    pub first_seq: u64,
    /// Inclusive.
    pub last_seq: u64,
    /// Time of the last record before the gap (ticks).
    pub from_tick: u64,
    /// Time origin of the first packet after the gap (ticks).
    pub to_tick: u64,
}

impl Gap {
    pub fn packets(&self) -> u64 {
        self.last_seq - self.first_seq + 1
    }
}

/// A capture file that did not end cleanly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileDamage {
    pub file: String,
    pub end: CaptureEnd,
}

/// A packet that was not merged.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PacketNote {
    Duplicate {
        seq: u64,
        file: String,
    },
    /// Arrived after its place had been reported as a gap (reordered further
    /// than the look-ahead); its records are not in the trace.
    Late {
        seq: u64,
        file: String,
    },
    Rejected {
        file: String,
        offset: u64,
        reason: String,
    },
}

/// Index into [`BoardReport::counts`].
pub const COUNT_NAMES: [&str; 6] = ["reads", "writes", "tags", "tag writes", "commands", "LOST"];
/// [`COUNT_NAMES`] as keys of the JSON summary.
const COUNT_KEYS: [&str; 6] = ["reads", "writes", "tags", "tag_writes", "commands", "lost"];

/// One board's part of the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BoardReport {
    pub board: u8,
    pub packets: u64,
    pub bytes: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub gaps: Vec<Gap>,
    pub packets_duplicate: u64,
    pub packets_late: u64,
    pub packets_rejected: u64,
    /// Statistics packets (format.md §5.3): not trace packets, kept apart.
    pub statistics_packets: u64,
    pub time_regressions: u64,
    pub corrupt_words: u64,
    /// reads, writes, tags, tag writes, inner commands, LOST words.
    #[serde(serialize_with = "counts_by_name")]
    pub counts: [u64; 6],
    /// Sum of the LOST words: references the board itself dropped.
    pub references_lost: u64,
    pub file_damage: Vec<FileDamage>,
    /// The first `MAX_NOTES` duplicates, late and rejected packets.
    pub notes: Vec<PacketNote>,
}

impl BoardReport {
    pub fn packets_missing(&self) -> u64 {
        self.gaps.iter().map(Gap::packets).sum()
    }
    pub fn references(&self) -> u64 {
        self.counts[0] + self.counts[1]
    }
}

/// The whole merge.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct MergeReport {
    pub boards: Vec<BoardReport>,
    pub files: usize,
    pub input_bytes: u64,
    pub records: u64,
    pub tick_ps: u16,
    /// Disk space given back from past the input files' ends (a killed
    /// capture's preallocation), bytes, and in how many files.
    #[serde(serialize_with = "bytes_and_files")]
    pub preallocation_freed: (u64, usize),
}

fn counts_by_name<S: serde::Serializer>(counts: &[u64; 6], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(counts.len()))?;
    for (key, n) in COUNT_KEYS.iter().zip(counts) {
        map.serialize_entry(key, n)?;
    }
    map.end()
}

fn bytes_and_files<S: serde::Serializer>(
    &(bytes, files): &(u64, usize),
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("Freed", 2)?;
    st.serialize_field("bytes", &bytes)?;
    st.serialize_field("files", &files)?;
    st.end()
}

/// A finished `hmtt merge` as it reports it: the merge's report, the trace
/// written, the time taken and the boards' statistics kept; as text (its
/// [`fmt::Display`]) or as JSON ([`Self::write_json`]).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct MergeSummary<'a> {
    #[serde(flatten)]
    pub report: &'a MergeReport,
    /// The trace or archive written.
    pub out: &'a Path,
    /// Wall-clock seconds the merge took.
    pub seconds: f64,
    pub statistics: &'a StatsKept,
}

impl MergeSummary<'_> {
    /// Whether input was read but not merged (`hmtt merge` then exits 3):
    /// trace input ([`MergeReport::rejected_input`]) or statistics.
    pub fn rejected_input(&self) -> bool {
        self.report.rejected_input().is_some() || self.statistics.rejected()
    }

    /// The summary as pretty JSON, a line end after it.
    pub fn write_json(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut out, self)?;
        writeln!(out)
    }
}

impl fmt::Display for MergeSummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (report, kept) = (self.report, self.statistics);
        write!(f, "{report}")?;
        writeln!(
            f,
            "wrote {} ({} records) in {:.2} s ({:.0} MB/s of capture input)",
            self.out.display(),
            report.records,
            self.seconds,
            report.input_bytes as f64 / 1e6 / self.seconds.max(1e-9)
        )?;
        if let Some(path) = &kept.path {
            writeln!(
                f,
                "kept {} statistics records of the boards in {}",
                kept.records,
                path.display()
            )?;
        }
        if kept.rejected() {
            writeln!(
                f,
                "rejected input: {} statistics packets refused, {} parts of records never completed",
                kept.refused, kept.incomplete_parts
            )?;
        }
        if let Some(rejected) = report.rejected_input() {
            writeln!(f, "{rejected}")?;
        }
        Ok(())
    }
}

impl MergeReport {
    pub fn packets(&self) -> u64 {
        self.boards.iter().map(|b| b.packets).sum()
    }
    pub fn packets_missing(&self) -> u64 {
        self.boards.iter().map(BoardReport::packets_missing).sum()
    }
    pub fn packets_duplicate(&self) -> u64 {
        self.boards.iter().map(|b| b.packets_duplicate).sum()
    }
    pub fn packets_rejected(&self) -> u64 {
        self.boards
            .iter()
            .map(|b| b.packets_rejected + b.packets_late)
            .sum()
    }
    /// Whether anything at all was lost or damaged.
    pub fn is_clean(&self) -> bool {
        self.boards.iter().all(|b| {
            b.gaps.is_empty()
                && b.packets_duplicate == 0
                && b.packets_late == 0
                && b.packets_rejected == 0
                && b.corrupt_words == 0
                && b.time_regressions == 0
                && b.references_lost == 0
                && b.file_damage.is_empty()
        })
    }
    /// What of the input was read but not merged, as the last line of the
    /// summary: packets rejected or placed too late, corrupt record words,
    /// files unreadable part-way. `None` when nothing was (losses in
    /// transit are gaps, not rejected input).
    pub fn rejected_input(&self) -> Option<String> {
        let packets = self.packets_rejected();
        let words: u64 = self.boards.iter().map(|b| b.corrupt_words).sum();
        let files = self
            .boards
            .iter()
            .flat_map(|b| &b.file_damage)
            .filter(|d| matches!(d.end, CaptureEnd::Corrupt { .. }))
            .count();
        if packets + words == 0 && files == 0 {
            return None;
        }
        Some(format!(
            "INPUT REJECTED: {packets} packets, {words} record words and the rest of {files} \
             corrupt files were not merged (reasons above)"
        ))
    }
    /// `ticks` in nanoseconds; 0 when the captures gave no tick length.
    fn ns(&self, ticks: u64) -> f64 {
        TickLength::of_ps(self.tick_ps).map_or(0.0, |t| t.ns(ticks))
    }
}

impl fmt::Display for MergeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "merged {} files ({} bytes): {} packets, {} records, {} boards",
            self.files,
            self.input_bytes,
            self.packets(),
            self.records,
            self.boards.len()
        )?;
        let (freed, files) = self.preallocation_freed;
        if files > 0 {
            writeln!(
                f,
                "gave back {freed} bytes of disk space preallocated past the ends of {files} capture files (left by a killed capture)"
            )?;
        }
        for b in &self.boards {
            write!(f, "board {}: {} packets", b.board, b.packets)?;
            if let (Some(a), Some(z)) = (b.first_seq, b.last_seq) {
                write!(f, " (seq {a}..={z})")?;
            }
            writeln!(f)?;
            let counts: Vec<String> = COUNT_NAMES
                .iter()
                .zip(b.counts)
                .map(|(n, c)| format!("{c} {n}"))
                .collect();
            writeln!(f, "  records: {}", counts.join(", "))?;
            if b.gaps.is_empty() {
                writeln!(f, "  no packets missing")?;
            } else {
                writeln!(
                    f,
                    "  {} packets missing in {} gaps:",
                    b.packets_missing(),
                    b.gaps.len()
                )?;
                for g in b.gaps.iter().take(20) {
                    writeln!(
                        f,
                        "    seq {}..={} ({} packets): ticks {}..{} ({:.0} ns..{:.0} ns) not covered",
                        g.first_seq,
                        g.last_seq,
                        g.packets(),
                        g.from_tick,
                        g.to_tick,
                        self.ns(g.from_tick),
                        self.ns(g.to_tick)
                    )?;
                }
                if b.gaps.len() > 20 {
                    writeln!(f, "    ... and {} more gaps", b.gaps.len() - 20)?;
                }
            }
            for (n, what) in [
                (b.packets_duplicate, "duplicate packets dropped"),
                (
                    b.packets_late,
                    "packets arrived too late to place (dropped)",
                ),
                (b.packets_rejected, "packets rejected"),
                (b.corrupt_words, "corrupt record words skipped"),
                (b.time_regressions, "packets whose time went backwards"),
                (b.references_lost, "references dropped by the board (LOST)"),
            ] {
                if n > 0 {
                    writeln!(f, "  {n} {what}")?;
                }
            }
            for note in b.notes.iter().take(10) {
                match note {
                    PacketNote::Duplicate { seq, file } => {
                        writeln!(f, "    duplicate seq {seq} in {file}")?
                    }
                    PacketNote::Late { seq, file } => writeln!(f, "    late seq {seq} in {file}")?,
                    PacketNote::Rejected {
                        file,
                        offset,
                        reason,
                    } => writeln!(f, "    rejected packet at {file}+{offset}: {reason}")?,
                }
            }
            for d in &b.file_damage {
                match d.end {
                    CaptureEnd::Truncated { offset, leftover } => writeln!(
                        f,
                        "  {} is cut short: {leftover} bytes of a partial record at offset {offset} ignored",
                        d.file
                    )?,
                    CaptureEnd::Corrupt {
                        offset,
                        claimed_len,
                    } => writeln!(
                        f,
                        "  {} is corrupt at offset {offset} (record claims {claimed_len} bytes); the rest is unreadable",
                        d.file
                    )?,
                    CaptureEnd::ZeroTail { offset, len } => writeln!(
                        f,
                        "  {} ends in {len} bytes of zeros at offset {offset}: space no record was written into (a crash), not records; `hmtt capture --repair` cuts it",
                        d.file
                    )?,
                    CaptureEnd::Clean => {}
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_summary_names_counts_damage_and_notes() {
        let report = MergeReport {
            boards: vec![BoardReport {
                counts: [1, 2, 3, 4, 5, 6],
                file_damage: vec![FileDamage {
                    file: "b0.hmttcap".into(),
                    end: CaptureEnd::Truncated {
                        offset: 10,
                        leftover: 3,
                    },
                }],
                notes: vec![PacketNote::Late {
                    seq: 7,
                    file: "b0.hmttcap".into(),
                }],
                ..BoardReport::default()
            }],
            preallocation_freed: (4096, 1),
            ..MergeReport::default()
        };
        let kept = StatsKept {
            refused: 1,
            ..StatsKept::default()
        };
        let summary = MergeSummary {
            report: &report,
            out: Path::new("run.hmtttrace"),
            seconds: 1.0,
            statistics: &kept,
        };
        assert!(summary.rejected_input());
        assert!(summary.to_string().contains("1 statistics packets refused"));
        let mut bytes = Vec::new();
        summary.write_json(&mut bytes).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let board = &json["boards"][0];
        assert_eq!(board["counts"]["tag_writes"], 4);
        assert_eq!(board["counts"]["lost"], 6);
        assert_eq!(
            board["file_damage"][0]["end"],
            serde_json::json!({"kind": "truncated", "offset": 10, "leftover": 3})
        );
        assert_eq!(board["notes"][0]["kind"], "late");
        assert_eq!(json["preallocation_freed"]["bytes"], 4096);
        assert_eq!(json["out"], "run.hmtttrace");
        assert_eq!(json["statistics"]["refused"], 1);
    }
}
