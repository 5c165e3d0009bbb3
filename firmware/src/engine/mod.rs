//! The engines of `hmtt board`: the golden model (`hmtt_board_model`) or the
//! generated Verilog of a firmware core (`hmtt_hdl::board_top::BoardTop` as
//! `tops` instantiates it) built with Verilator, on the same command stream,
//! writing the same capture files (one per port) and summary.
//!
//! The Verilator engine generates the core with the run's constants, builds
//! the simulator once per distinct Verilog ([`verilator::build`], cached in
//! a work directory), drives the DIMM pins from the command file as the
//! simulator asks for them, decodes every port's GMII frames and writes each
//! packet with the tick its close was observed at, up to where the golden
//! model ends the stream (board.md "End of a stream"); with the Statistic
//! Unit also its statistics packets, up to the record of the interval open
//! at the end (closed at its natural end, as the model's `finish` does).

pub mod core;
pub mod outcome;
pub mod simulate;
pub mod summary;
pub mod verilator;

use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use hmtt_board_model::output::{CaptureWriters, OutputError, RunSummary};
use hmtt_board_model::{
    BaseConfig, Board as Model, BoardConfig, BoardError, BoardOptions, OptionsError,
};
use hmtt_format::command::{CommandReader, ReadError};
use hmtt_hdl::testbench::FrameError;

use crate::board::Board;
use crate::error::FirmwareError;

pub use self::core::CoreSpec;
pub use outcome::{write_summary, BoardRun, RunLine, UnusableCommands};
pub use simulate::HardwareRun;
pub use summary::MeasuredCounters;
pub use verilator::Simulator;

/// The name capture files give as their source (both engines, so their
/// files are byte-identical).
pub const SOURCE_NAME: &str = "hmtt board";

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the {core} core cannot run this: {reason}")]
    Unsupported { core: Board, reason: String },
    #[error(transparent)]
    Firmware(#[from] FirmwareError),
    #[error(transparent)]
    Config(#[from] BoardError),
    #[error(transparent)]
    Options(#[from] OptionsError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("{source_name}:{line}: {error}")]
    Command {
        source_name: String,
        line: usize,
        error: BoardError,
    },
    #[error("{source_name}:{line}: {reason}")]
    Stream {
        source_name: String,
        line: usize,
        reason: String,
    },
    #[error("the Verilator simulator {0}")]
    Simulator(String),
    #[error("port {port}: {reason}")]
    Frame { port: usize, reason: String },
    #[error(transparent)]
    Wire(#[from] FrameError),
    #[error("writing {}", path.display())]
    WriteSummary {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{packets} statistics packet(s) of the records sent never left the ports: the capture files lack them")]
    StatsNeverSent { packets: u64 },
    #[error("{packets} packet(s) up to the end of the stream never left the ports (seq {first:?}; packet_error {packet_error}, frame_underrun {frame_underrun}): the capture files lack them")]
    NeverSent {
        packets: usize,
        /// The first sequence numbers missing.
        first: Vec<u64>,
        packet_error: bool,
        frame_underrun: bool,
    },
}

/// The core a run takes its build parameters from: the one `chosen`, else
/// the ECP5 core when the Verilator engine runs (it runs a core); none for
/// the golden model, which then takes board.md's defaults.
pub fn core_of_run(chosen: Option<Board>, verilator: bool) -> Option<CoreSpec> {
    match (chosen, verilator) {
        (Some(c), _) => Some(CoreSpec::of(c)),
        (None, true) => Some(CoreSpec::of(Board::Ecp5_85f)),
        (None, false) => None,
    }
}

/// The board's configuration of a run: `core`'s (or board.md's defaults)
/// with `options` applied ([`BoardOptions::apply`]), checked against the
/// core's build parameters first (an option the core cannot take, such as
/// three ports on the one-port iCE40, says so rather than what follows
/// from it), then on its own.
pub fn board_config(
    core: Option<&CoreSpec>,
    options: &BoardOptions,
) -> Result<BoardConfig, EngineError> {
    let base = match core {
        Some(c) => BaseConfig::Core(c.board_config()),
        None => BaseConfig::Defaults,
    };
    let cfg = options.apply(base)?;
    if let Some(c) = core {
        c.top_config(&cfg)?;
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Commands taken between two looks for packets (bounded memory).
const MODEL_BATCH: u64 = 1 << 16;

/// Runs the golden model with `cfg` on `input`; writes the capture files
/// into `out`. `core`: the firmware core `cfg` was made from, if any.
pub fn run_model(
    cfg: &BoardConfig,
    core: Option<Board>,
    input: Box<dyn BufRead + Send>,
    source_name: &str,
    out: &Path,
    start_ns: u64,
) -> Result<RunSummary, EngineError> {
    let mut writers = CaptureWriters::create(out, cfg, start_ns, SOURCE_NAME)?;
    let mut board = Model::new(cfg.clone())?;
    let mut packets = Vec::new();
    let mut reader = CommandReader::new(input, source_name);
    let mut n = 0u64;
    while let Some(c) = reader.next() {
        let c = c?;
        board.command(&c).map_err(|error| EngineError::Command {
            source_name: source_name.into(),
            line: reader.line_no(),
            error,
        })?;
        n += 1;
        if n.is_multiple_of(MODEL_BATCH) {
            drain_to_ports(&mut board, &mut packets, &mut writers)?;
        }
    }
    board.finish();
    drain_to_ports(&mut board, &mut packets, &mut writers)?;
    let files = writers.finish()?;
    let mut s = RunSummary::new(
        source_name,
        cfg,
        board.mode(),
        board.counters().clone(),
        files,
    );
    s.core = core.map(|b| b.name().to_string());
    Ok(s)
}

/// Writes the trace and statistics packets closed so far to their ports'
/// files, in the order they left the board (a statistics packet goes
/// before the trace packets that left after it).
fn drain_to_ports(
    board: &mut Model,
    packets: &mut Vec<hmtt_board_model::BoardPacket>,
    writers: &mut CaptureWriters,
) -> Result<(), EngineError> {
    board.drain_statistics(packets);
    let statistics = !packets.is_empty();
    board.drain_packets(packets);
    if statistics {
        // Stable: each kind stays in its `seq` order.
        packets.sort_by_key(|p| p.leave_tick);
    }
    writers.write(packets)?;
    packets.clear();
    Ok(())
}

/// A Verilator run: its summary, what the simulation gave, the simulator.
#[derive(Debug)]
pub struct VerilatorRun {
    pub summary: RunSummary<MeasuredCounters>,
    pub hardware: HardwareRun,
    pub simulator: Simulator,
}

/// Generates `core`'s Verilog with `cfg`'s constants and builds its
/// simulator in `work` (or finds it there).
pub fn build_simulator(
    core: &CoreSpec,
    cfg: &BoardConfig,
    work: &Path,
) -> Result<Simulator, EngineError> {
    cfg.validate()?;
    let top = core.top_config(cfg)?;
    verilator::VERILATOR.locate()?;
    let verilog = core.verilog(&top)?;
    Ok(verilator::build(
        work,
        &verilog,
        core.lanes as usize,
        usize::from(core.ports),
    )?)
}

/// Runs `simulator` (from [`build_simulator`] with the same `core` and
/// `cfg`) on `input`; writes the capture files into `out`. The run's
/// scratch files go under `work`.
#[allow(clippy::too_many_arguments)]
pub fn run_verilator(
    core: &CoreSpec,
    cfg: &BoardConfig,
    simulator: Simulator,
    input: Box<dyn BufRead + Send>,
    source_name: &str,
    out: &Path,
    start_ns: u64,
    work: &Path,
) -> Result<VerilatorRun, EngineError> {
    let mut writers = CaptureWriters::create(out, cfg, start_ns, SOURCE_NAME)?;
    // Scratch of this run (the simulator's standard error, whose tail an
    // error quotes).
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run_dir = work.join(format!(
        "run-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    let stats_parts = core.stats_parts(&core.top_config(cfg)?);
    let hardware = simulate::simulate(
        &simulator,
        &run_dir,
        input,
        source_name,
        cfg,
        stats_parts,
        &mut writers,
    );
    let _ = std::fs::remove_dir_all(&run_dir);
    let hardware = hardware?;
    let files = writers.finish()?;
    let summary =
        summary::hardware_summary(source_name, cfg, core.board, files, &hardware, &simulator);
    Ok(VerilatorRun {
        summary,
        hardware,
        simulator,
    })
}
