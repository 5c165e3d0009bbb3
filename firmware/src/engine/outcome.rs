//! What a finished run of the board tells: the summary file beside the
//! capture files, the commands the board could not use, the line of
//! figures `hmtt board` prints, and whether every packet left the ports.

use std::fmt;
use std::path::{Path, PathBuf};

use hmtt_board_model::counters::HardwareCounter;
use hmtt_board_model::output::RunSummary;
use hmtt_board_model::BoardCounters;

use super::{EngineError, VerilatorRun};

/// Sequence numbers of packets never sent that an error lists.
const MISSING_LISTED: usize = 10;

/// Writes `summary` (pretty JSON) into the output directory `out`, as
/// `board<ID>-summary.json` beside the run's capture files.
pub fn write_summary<C: serde::Serialize>(
    summary: &RunSummary<C>,
    out: &Path,
) -> Result<PathBuf, EngineError> {
    let path = out.join(format!("board{}-summary.json", summary.board_id));
    std::fs::write(&path, summary.to_json() + "\n").map_err(|source| {
        EngineError::WriteSummary {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

/// Commands a run could not use: counted and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnusableCommands {
    pub protocol_errors: u64,
    pub unknown: u64,
    pub out_of_range: u64,
}

impl UnusableCommands {
    pub fn any(&self) -> bool {
        self.protocol_errors + self.unknown + self.out_of_range > 0
    }

    /// The golden model's counts.
    pub fn of_model(c: &BoardCounters) -> UnusableCommands {
        UnusableCommands {
            protocol_errors: c.protocol_errors,
            unknown: c.unknown_commands,
            out_of_range: c.out_of_range,
        }
    }
}

impl VerilatorRun {
    /// The hardware's counts of commands it could not use.
    pub fn unusable(&self) -> UnusableCommands {
        let h = &self.hardware;
        UnusableCommands {
            protocol_errors: h.counter(HardwareCounter::ProtocolErrors),
            unknown: h.counter(HardwareCounter::UnknownCommands),
            out_of_range: h.counter(HardwareCounter::OutOfRange),
        }
    }

    /// Fails when packets up to the end of the stream never left the
    /// ports: the capture files lack them.
    pub fn check_sent(&self) -> Result<(), EngineError> {
        let h = &self.hardware;
        let stats_missing = h.statistics.as_ref().map_or(0, |s| s.missing());
        if h.missing.is_empty() && stats_missing > 0 {
            return Err(EngineError::StatsNeverSent {
                packets: stats_missing,
            });
        }
        if h.missing.is_empty() {
            return Ok(());
        }
        Err(EngineError::NeverSent {
            packets: h.missing.len(),
            first: h.missing[..h.missing.len().min(MISSING_LISTED)].to_vec(),
            packet_error: h.packet_error,
            frame_underrun: h.frame_underrun,
        })
    }
}

/// A finished run of either engine.
#[derive(Debug)]
pub enum BoardRun {
    Model(RunSummary),
    Verilator(VerilatorRun),
}

impl BoardRun {
    /// The commands the board could not use.
    pub fn unusable(&self) -> UnusableCommands {
        match self {
            BoardRun::Model(s) => UnusableCommands::of_model(&s.counters),
            BoardRun::Verilator(run) => run.unusable(),
        }
    }

    /// Writes the summary into the output directory `out`
    /// ([`write_summary`]) and warns of the commands of `source_name` the
    /// board could not use.
    pub fn finish(&self, source_name: &str, out: &Path) -> Result<PathBuf, EngineError> {
        if let BoardRun::Model(s) = self {
            let c = &s.counters;
            tracing::info!(
                commands = c.commands,
                references = c.references,
                dropped = c.events_dropped,
                packets = c.packets,
                "board run done"
            );
        }
        let u = self.unusable();
        if u.any() {
            tracing::warn!(
                protocol_errors = u.protocol_errors,
                unknown = u.unknown,
                out_of_range = u.out_of_range,
                "{source_name}: commands the board could not use (counted, skipped)"
            );
        }
        match self {
            BoardRun::Model(s) => write_summary(s, out),
            BoardRun::Verilator(run) => write_summary(&run.summary, out),
        }
    }

    /// The run's line of figures; `out` is the output directory as given.
    pub fn line<'a>(&'a self, out: &'a Path) -> RunLine<'a> {
        match self {
            BoardRun::Model(summary) => RunLine::Model { summary, out },
            BoardRun::Verilator(run) => RunLine::Verilator { run, out },
        }
    }

    /// Fails when packets never left the ports (the Verilator engine's
    /// [`VerilatorRun::check_sent`]; the model sends every one).
    pub fn check_sent(&self) -> Result<(), EngineError> {
        match self {
            BoardRun::Model(_) => Ok(()),
            BoardRun::Verilator(run) => run.check_sent(),
        }
    }
}

/// A run's figures in one line, as `hmtt board` prints them (its
/// [`fmt::Display`]); `out` is the output directory as given.
#[derive(Debug, Clone, Copy)]
pub enum RunLine<'a> {
    Model {
        summary: &'a RunSummary,
        out: &'a Path,
    },
    Verilator {
        run: &'a VerilatorRun,
        out: &'a Path,
    },
}

impl fmt::Display for RunLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RunLine::Model { summary, out } => {
                let c = &summary.counters;
                writeln!(
                    f,
                    "{} commands, {} references, {} events dropped, {} packets on {} ports -> {}",
                    c.commands,
                    c.references,
                    c.events_dropped,
                    c.packets,
                    summary.ports,
                    out.display()
                )
            }
            RunLine::Verilator { run, out } => {
                let h = &run.hardware;
                let build = match run.simulator.build_seconds {
                    Some(s) => format!("simulator built in {s:.0} s"),
                    None => "simulator from the cache".to_string(),
                };
                writeln!(f,
                    "{} commands, {} events dropped, {} packets on {} ports -> {} (verilator, {} core: {} fabric clocks in {:.2} s, {:.2} CPU s, {:.0}/CPU s; {build})",
                    h.input.commands,
                    h.counter(HardwareCounter::EventsDropped),
                    h.frames.packets,
                    run.summary.ports,
                    out.display(),
                    run.summary.core.as_deref().unwrap_or_default(),
                    h.fabric_clocks,
                    h.seconds,
                    h.cpu_seconds,
                    h.fabric_clocks as f64 / h.cpu_seconds.max(1e-9),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_board_model::BoardOptions;

    #[test]
    fn a_model_run_writes_its_summary_warns_and_prints_its_line() {
        let out = std::env::temp_dir().join(format!("hmtt-board-run-{}", std::process::id()));
        std::fs::create_dir_all(&out).unwrap();
        let cfg = super::super::board_config(None, &BoardOptions::default()).unwrap();
        let mut text = String::from("0 ACT 0 1 0x55\n");
        for i in 0..20u64 {
            text.push_str(&format!("{} RD 0 1 {}\n", 5 + i * 7, i * 8));
        }
        text.push_str("200 BOGUS 0 0 0\n");
        let input = Box::new(std::io::Cursor::new(text.into_bytes()));
        let summary = super::super::run_model(&cfg, None, input, "cmds", &out, 0).unwrap();
        let run = BoardRun::Model(summary);
        assert_eq!(run.unusable().unknown, 1);
        let path = run.finish("cmds", &out).unwrap();
        assert_eq!(path, out.join("board0-summary.json"));
        let json = std::fs::read_to_string(&path).unwrap();
        assert!(json.contains("\"references\": 20"), "{json}");
        let line = run.line(Path::new("o")).to_string();
        assert!(
            line.starts_with("22 commands, 20 references, 0 events dropped"),
            "{line}"
        );
        assert!(line.ends_with("ports -> o\n"), "{line}");
        run.check_sent().unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }
}
