//! The outputs directory of a simulated run (docs/format.md §10): the
//! files' names, the text around the command streams, the events file,
//! `summary.json`, and [`SimOutput::write_dir`] for a run held in memory.
//! A streamed run ([`crate::stream`]) writes the same files, byte for byte,
//! from the same pieces as it goes.

use std::io::Write;
use std::path::Path;

use hmtt_format::command::CommandLines;
use hmtt_format::klog::FileHeaderRepr;
use hmtt_format::truth::TruthHeader;
use hmtt_format::Command;

use crate::machine::{SimError, SimOutput, SimStats};
use hmtt_board_model::output::CaptureWriters;
use hmtt_board_model::BoardCounters;

/// File names in an outputs directory (docs/format.md §10).
pub mod files {
    /// DDR command stream of board `b`.
    pub fn commands(b: usize) -> String {
        format!("commands-b{b}.txt")
    }
    /// Capture file of board `b`, port `p`.
    pub fn capture(b: u8, p: u8) -> String {
        hmtt_board_model::output::capture_file_name(b, p)
    }
    pub const TRUTH: &str = "truth.hmtttruth";
    pub const TRUTH_CSV: &str = "truth.csv";
    pub const KLOG: &str = "pagetable.hmttlog";
    pub const EVENTS: &str = hmtt_format::events::FILE_NAME;
    pub const SUMMARY: &str = "summary.json";
}

/// The capture files' source name.
pub(crate) const SOURCE_NAME: &str = "hmtt sim";

/// The counts of a run, streamed ([`crate::stream::run_to_dir`]) or held
/// ([`SimOutput::summary`]): the command line's report and
/// `summary.json`.
#[derive(Debug, Clone)]
pub struct StreamSummary {
    pub stats: SimStats,
    pub commands: Vec<u64>,
    pub truth_records: u64,
    pub klog_records: u64,
    /// Packets per board (empty when the boards did not run).
    pub packets: Vec<u64>,
    pub board_counters: Vec<BoardCounters>,
}

/// The first line of a command stream file.
pub(crate) fn commands_head(board: usize) -> String {
    format!("# hmtt sim: board {board}\n")
}

/// The last line of a command stream file.
pub(crate) fn commands_tail(count: u64) -> String {
    format!("# {count} commands\n")
}

/// Writes `cmds` as text lines, a chunk at a time, made in `room`
/// ([`CommandLines::lines`]).
pub(crate) fn write_command_lines<W: Write>(
    f: &mut W,
    cmds: &[Command],
    room: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut lines = CommandLines::new();
    for chunk in cmds.chunks(1 << 14) {
        f.write_all(lines.lines(chunk, room))?;
    }
    Ok(())
}

/// The events file, entries in index order.
pub fn events_toml(events: &[(String, u32)]) -> String {
    hmtt_format::events::emit(events.iter().map(|(name, i)| (name.as_str(), *i)))
}

/// `summary.json` (informative).
pub(crate) fn summary_json(s: &StreamSummary, tick_ps: u16) -> serde_json::Value {
    serde_json::json!({
        "stats": s.stats,
        "boards": s.board_counters,
        "tick_ps": tick_ps,
        "truth_records": s.truth_records,
        "klog_records": s.klog_records,
        "packets": s.packets,
    })
}

impl SimOutput {
    /// The run's counts, as a streamed run reports them.
    pub fn summary(&self) -> StreamSummary {
        StreamSummary {
            stats: self.stats.clone(),
            commands: self.commands.iter().map(|c| c.len() as u64).collect(),
            truth_records: self.truth.len() as u64,
            klog_records: self.klog.len() as u64,
            packets: self.packets.iter().map(|p| p.len() as u64).collect(),
            board_counters: self.board_counters.clone(),
        }
    }

    /// Writes every output into `dir` (created if missing). A run too
    /// large to hold in memory writes the same files with
    /// [`crate::stream::run_to_dir`].
    pub fn write_dir(&self, dir: &Path, truth_csv: bool) -> Result<(), SimError> {
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |error| SimError::Io {
                path: path.clone(),
                error,
            }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let create = |name: &str| {
            let p = dir.join(name);
            std::fs::File::create(&p)
                .map(std::io::BufWriter::new)
                .map_err(io(&p))
                .map(|f| (f, p))
        };
        for (b, cmds) in self.commands.iter().enumerate() {
            let (mut f, p) = create(&files::commands(b))?;
            (|| {
                f.write_all(commands_head(b).as_bytes())?;
                write_command_lines(&mut f, cmds, &mut Vec::new())?;
                f.write_all(commands_tail(cmds.len() as u64).as_bytes())?;
                f.flush()
            })()
            .map_err(io(&p))?;
        }
        let (mut f, p) = create(files::TRUTH)?;
        hmtt_format::truth::write_binary(
            &mut f,
            &TruthHeader {
                boards: self.commands.len() as u16,
                tick_ps: self.tick_ps,
            },
            &self.truth,
        )
        .and_then(|_| f.flush())
        .map_err(io(&p))?;
        if truth_csv {
            let (mut f, p) = create(files::TRUTH_CSV)?;
            hmtt_format::truth::write_csv(&mut f, &self.truth)
                .and_then(|_| f.flush())
                .map_err(io(&p))?;
        }
        let (mut f, p) = create(files::KLOG)?;
        (|| {
            f.write_all(
                &FileHeaderRepr {
                    start_ns: self.wall_start_ns,
                }
                .to_bytes(),
            )?;
            for r in &self.klog {
                f.write_all(&r.to_bytes())?;
            }
            f.flush()
        })()
        .map_err(io(&p))?;
        let (mut f, p) = create(files::EVENTS)?;
        f.write_all(events_toml(&self.events).as_bytes())
            .and_then(|_| f.flush())
            .map_err(io(&p))?;
        for (cfg, packets) in self.board_configs.iter().zip(&self.packets) {
            let mut w = CaptureWriters::create(dir, cfg, self.wall_start_ns, SOURCE_NAME)?;
            w.write(packets)?;
            w.finish()?;
        }
        let (mut f, p) = create(files::SUMMARY)?;
        let summary = summary_json(&self.summary(), self.tick_ps);
        serde_json::to_writer_pretty(&mut f, &summary)
            .map_err(std::io::Error::other)
            .and_then(|_| f.flush())
            .map_err(io(&p))?;
        Ok(())
    }
}
