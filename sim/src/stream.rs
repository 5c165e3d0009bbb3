//! `hmtt sim --out DIR` without holding the run in memory: the machine hands
//! over each channel's DDR commands and ground truth as they become final
//! to a second thread, where the boards run on them at once and every
//! output file (docs/format.md §10) is written as it grows. The files are byte for byte those of
//! [`SimOutput::write_dir`](crate::machine::SimOutput::write_dir), from the
//! same pieces ([`crate::outdir`]).

use crate::dram::{StreamChecker, Violation};
use crate::machine::{Machine, SimConfig, SimError, SimStats};
use crate::outdir::{
    commands_head, commands_tail, events_toml, files, summary_json, write_command_lines,
    StreamSummary, SOURCE_NAME,
};
use hmtt_board_model::output::CaptureWriters;
use hmtt_board_model::{Board, BoardPacket};
use hmtt_format::atomic_file::AtomicFile;
use hmtt_format::klog::{FileHeaderRepr, RecordRepr};
use hmtt_format::text::Row;
use hmtt_format::truth::{self, TruthHeader, TruthRecord};
use hmtt_format::Command;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Operations the machine runs between two hand-overs to the writer.
const OPS_PER_FLUSH: u64 = 1 << 14;

/// Where a streamed run's outputs go; any combination.
#[derive(Default)]
pub struct StreamOutputs<'a> {
    /// Writes the run's files into this directory (docs/format.md §10).
    pub dir: Option<&'a Path>,
    /// With `dir`: the ground truth as CSV too.
    pub truth_csv: bool,
    /// With `dir`: neither the DDR command streams nor the ground truth,
    /// only what a merge reads (docs/format.md §10): for runs whose truth
    /// (48 bytes a reference) would not fit where their captures (about 5)
    /// do.
    pub captures_only: bool,
    /// Checks each channel's DDR command stream as it grows
    /// ([`StreamChecker`]), keeping the first violations.
    pub check: bool,
    /// Gets every board packet once it has left.
    pub packets: Option<&'a mut (dyn PacketSink + Send)>,
}

/// Takes the boards' packets of a streamed run: per board in leave order,
/// boards interleaved by (leave tick, board) up to what every board has
/// reached.
pub trait PacketSink {
    fn packet(&mut self, board: usize, packet: &BoardPacket) -> Result<(), SimError>;
    /// The run ended: nothing more comes.
    fn finish(&mut self) -> Result<(), SimError>;
}

/// Violations kept per channel by a streamed check.
pub const CHECK_KEEP: usize = 16;

/// What a streamed run did.
#[derive(Debug, Clone)]
pub struct StreamReport {
    pub summary: StreamSummary,
    /// Per channel, with [`StreamOutputs::check`]: the first violations
    /// and how many there were in all.
    pub checks: Vec<(Vec<Violation>, u64)>,
}

/// Runs `cfg`'s workload and hands its outputs over as they are produced;
/// memory stays bounded by the controllers' queues, the boards' FIFOs and
/// a few thousand operations' worth of commands and packets.
pub fn run_streamed(cfg: SimConfig, outputs: StreamOutputs<'_>) -> Result<StreamReport, SimError> {
    let ops = cfg.workload.ops(cfg.seed);
    let machine = Machine::new(cfg)?;
    let out = Streamer::create(&machine.cfg, outputs)?;
    run_pipelined(machine, out, |machine, hand_over| {
        let mut since_flush = 0;
        for op in ops {
            machine.step(&op?)?;
            since_flush += 1;
            if since_flush == OPS_PER_FLUSH {
                if !hand_over(machine) {
                    break;
                }
                since_flush = 0;
            }
        }
        Ok(())
    })
}

/// [`run_streamed`] on references from outside: `feed` runs the next batch
/// of them on the machine and returns whether more may come; the outputs
/// are handed over after each batch.
pub fn run_streamed_with(
    cfg: SimConfig,
    outputs: StreamOutputs<'_>,
    mut feed: impl FnMut(&mut Machine) -> Result<bool, SimError>,
) -> Result<StreamReport, SimError> {
    let machine = Machine::new(cfg)?;
    let out = Streamer::create(&machine.cfg, outputs)?;
    run_pipelined(machine, out, |machine, hand_over| {
        while feed(machine)? {
            if !hand_over(machine) {
                break;
            }
        }
        Ok(())
    })
}

/// [`run_streamed`] writing the run's files into `dir` only.
pub fn run_to_dir(cfg: SimConfig, dir: &Path, truth_csv: bool) -> Result<StreamSummary, SimError> {
    let outputs = StreamOutputs {
        dir: Some(dir),
        truth_csv,
        ..Default::default()
    };
    Ok(run_streamed(cfg, outputs)?.summary)
}

/// Batches of output on their way from the machine to the writer thread.
const HANDOVERS_IN_FLIGHT: usize = 8;

/// A channel's commands and ground truth of one hand-over.
type ChannelBatch = (Vec<Command>, Vec<TruthRecord>);

/// What the machine hands the writer thread, in the order it would have
/// called the [`Streamer`].
enum Handover {
    Channel { board: usize, batch: ChannelBatch },
    Klog(Vec<RecordRepr>),
    SendReady,
}

/// Runs the machine (`drive`, on this thread) and the outputs (boards,
/// files, checks, sink: a [`Streamer`] on a second thread) as a pipeline:
/// the two stages share nothing but the hand-overs, so on a machine with
/// two cores they run side by side. `drive` calls its second argument to
/// hand the outputs so far over; it returns false once the writer has
/// stopped on an error, which the run then returns.
fn run_pipelined(
    mut machine: Machine,
    out: Streamer<'_>,
    drive: impl FnOnce(&mut Machine, &mut dyn FnMut(&mut Machine) -> bool) -> Result<(), SimError>,
) -> Result<StreamReport, SimError> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<Handover>(HANDOVERS_IN_FLIGHT);
        // The writer gives the batches' vectors back, emptied, for the
        // machine to fill again.
        let (give_back, given_back) = mpsc::sync_channel::<ChannelBatch>(HANDOVERS_IN_FLIGHT);
        let writer = scope.spawn(move || -> Result<Streamer<'_>, SimError> {
            let mut out = out;
            for h in rx {
                if let Some(batch) = out.take(h)? {
                    // Full only when the machine has stopped taking them.
                    let _ = give_back.try_send(batch);
                }
            }
            Ok(out)
        });
        let mut hand_over = |m: &mut Machine| m.hand_over(&tx, &given_back);
        let driven = drive(&mut machine, &mut hand_over).map(|()| {
            machine.end_of_run();
            machine.hand_over(&tx, &given_back);
        });
        drop(tx);
        let out = match writer.join() {
            Ok(out) => out?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        driven?;
        machine.final_stats();
        let events = std::mem::take(&mut machine.event_order);
        out.finish(&events, std::mem::take(&mut machine.stats))
    })
}

impl Machine {
    /// Sends every channel's final commands and truth, and the kernel log
    /// so far, to the writer thread; false if it has stopped.
    fn hand_over(
        &mut self,
        tx: &mpsc::SyncSender<Handover>,
        given_back: &mpsc::Receiver<ChannelBatch>,
    ) -> bool {
        for board in 0..self.channels.len() {
            let mut batch = given_back.try_recv().unwrap_or_default();
            self.take_channel_into(board, &mut batch);
            if tx.send(Handover::Channel { board, batch }).is_err() {
                return false;
            }
        }
        tx.send(Handover::Klog(self.os.take_log())).is_ok() && tx.send(Handover::SendReady).is_ok()
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |error| SimError::Io {
        path: path.display().to_string(),
        error,
    }
}

/// A buffered output file and its path (for error messages), written
/// under a temporary name and renamed into place by [`OutFile::close`]
/// ([`AtomicFile`]): a failed or killed run leaves no cut file under the
/// final name.
struct OutFile {
    f: BufWriter<File>,
    atomic: AtomicFile,
    path: PathBuf,
}

impl OutFile {
    fn create(dir: &Path, name: &str) -> Result<OutFile, SimError> {
        let path = dir.join(name);
        let atomic = AtomicFile::create(&path).map_err(io_err(&path))?;
        let f = atomic.file().try_clone().map_err(io_err(&path))?;
        Ok(OutFile {
            f: BufWriter::with_capacity(1 << 20, f),
            atomic,
            path,
        })
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), SimError> {
        self.f.write_all(bytes).map_err(io_err(&self.path))
    }
    fn with(
        &mut self,
        body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> Result<(), SimError> {
        body(&mut self.f).map_err(io_err(&self.path))
    }
    fn close(mut self) -> Result<(), SimError> {
        self.f.flush().map_err(io_err(&self.path))?;
        self.atomic.commit().map_err(io_err(&self.path))
    }
}

/// Where the ground truth goes: straight into the file with one board;
/// with several, one file per board (each in tick order) merged by
/// (tick, board) at the end.
enum TruthOut {
    Direct {
        bin: OutFile,
        csv: Option<OutFile>,
    },
    PerBoard {
        parts: Vec<OutFile>,
        csv: bool,
        last_tick: Vec<u64>,
    },
    /// Not written ([`StreamOutputs::captures_only`]).
    Omitted,
}

fn truth_part_name(b: usize) -> String {
    format!("truth-b{b}.part")
}

/// The files of a run in its directory while it runs.
struct DirFiles {
    dir: PathBuf,
    /// One per channel; none with [`StreamOutputs::captures_only`].
    commands: Vec<OutFile>,
    truth: TruthOut,
    klog: OutFile,
    /// One set per board, when the boards run.
    captures: Vec<CaptureWriters>,
    /// Truth records and CSV rows on their way to a file.
    text: Vec<u8>,
    /// Room where command lines are made
    /// ([`hmtt_format::command::CommandLines::lines`]): its
    /// own, so that it is zeroed once, not at every hand-over.
    command_room: Vec<u8>,
}

impl DirFiles {
    /// Creates `dir` (if missing) and the files of a run of `cfg`.
    fn create(
        dir: &Path,
        cfg: &SimConfig,
        truth_csv: bool,
        captures_only: bool,
    ) -> Result<DirFiles, SimError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let n = if captures_only {
            0
        } else {
            usize::from(cfg.boards)
        };
        let header = TruthHeader {
            boards: u16::from(cfg.boards),
            tick_ps: cfg.controller.timing.tick_ps,
        };
        let mut commands = Vec::with_capacity(n);
        for b in 0..n {
            let mut f = OutFile::create(dir, &files::commands(b))?;
            f.write(commands_head(b).as_bytes())?;
            commands.push(f);
        }
        let truth = if captures_only {
            TruthOut::Omitted
        } else if n == 1 {
            let mut bin = OutFile::create(dir, files::TRUTH)?;
            bin.write(&header.to_bytes())?;
            let csv = if truth_csv {
                let mut f = OutFile::create(dir, files::TRUTH_CSV)?;
                f.write(format!("{}\n", truth::CSV_HEADER).as_bytes())?;
                Some(f)
            } else {
                None
            };
            TruthOut::Direct { bin, csv }
        } else {
            TruthOut::PerBoard {
                parts: (0..n)
                    .map(|b| OutFile::create(dir, &truth_part_name(b)))
                    .collect::<Result<_, _>>()?,
                csv: truth_csv,
                last_tick: vec![0; n],
            }
        };
        let mut klog = OutFile::create(dir, files::KLOG)?;
        klog.write(
            &FileHeaderRepr {
                start_ns: cfg.wall_start_ns,
            }
            .to_bytes(),
        )?;
        let mut captures = Vec::new();
        if cfg.run_boards {
            for b in 0..cfg.boards {
                captures.push(CaptureWriters::create(
                    dir,
                    &cfg.board_config(b),
                    cfg.wall_start_ns,
                    SOURCE_NAME,
                )?);
            }
        }
        Ok(DirFiles {
            dir: dir.to_path_buf(),
            commands,
            truth,
            klog,
            captures,
            text: Vec::new(),
            command_room: Vec::new(),
        })
    }

    fn channel(
        &mut self,
        b: usize,
        cmds: &[Command],
        records: &[TruthRecord],
    ) -> Result<(), SimError> {
        if let Some(f) = self.commands.get_mut(b) {
            f.with(|f| write_command_lines(f, cmds, &mut self.command_room))?;
        }
        match &mut self.truth {
            TruthOut::Direct { bin, csv } => {
                // One write for the batch: a buffered write per 48-byte
                // record cost more than the copy.
                self.text.clear();
                for r in records {
                    self.text.extend_from_slice(&r.to_bytes());
                }
                bin.write(&self.text)?;
                if let Some(csv) = csv {
                    self.text.clear();
                    let mut row = Row::new();
                    for r in records {
                        row.clear();
                        truth::csv_row_into(&mut row, r);
                        self.text.extend_from_slice(row.as_bytes());
                    }
                    csv.write(&self.text)?;
                }
            }
            TruthOut::PerBoard {
                parts, last_tick, ..
            } => {
                for r in records {
                    // The merge at the end relies on it.
                    if r.tick < last_tick[b] {
                        return Err(SimError::Config(format!(
                            "internal: board {b}'s ground truth went back from tick {} to {}",
                            last_tick[b], r.tick
                        )));
                    }
                    last_tick[b] = r.tick;
                    parts[b].write(&r.to_bytes())?;
                }
            }
            TruthOut::Omitted => {}
        }
        Ok(())
    }

    /// Closes every file but the summary, the command files ending with
    /// their `counts`; returns the directory.
    fn finish(
        self,
        counts: &[u64],
        events: &[(String, u32)],
        tick_ps: u16,
    ) -> Result<PathBuf, SimError> {
        for (mut f, &count) in self.commands.into_iter().zip(counts) {
            f.write(commands_tail(count).as_bytes())?;
            f.close()?;
        }
        match self.truth {
            TruthOut::Direct { bin, csv } => {
                bin.close()?;
                if let Some(csv) = csv {
                    csv.close()?;
                }
            }
            TruthOut::PerBoard { parts, csv, .. } => {
                let header = TruthHeader {
                    boards: parts.len() as u16,
                    tick_ps,
                };
                for p in parts {
                    p.close()?;
                }
                merge_truth_parts(&self.dir, header, csv)?;
            }
            TruthOut::Omitted => {}
        }
        self.klog.close()?;
        for c in self.captures {
            c.finish()?;
        }
        let mut f = OutFile::create(&self.dir, files::EVENTS)?;
        f.write(events_toml(events).as_bytes())?;
        f.close()?;
        Ok(self.dir)
    }
}

/// A streamed run's outputs while it runs: the boards, and whichever of
/// files, checks and packet sink were asked for.
struct Streamer<'a> {
    tick_ps: u16,
    files: Option<DirFiles>,
    /// One per channel, when the boards run.
    boards: Vec<Board>,
    commands: Vec<u64>,
    truth_records: u64,
    klog_records: u64,
    packets: Vec<u64>,
    scratch: Vec<BoardPacket>,
    checkers: Vec<StreamChecker>,
    sink: Option<&'a mut (dyn PacketSink + Send)>,
    /// Per board, packets left but not handed to the sink yet.
    unsent: Vec<VecDeque<BoardPacket>>,
}

impl<'a> Streamer<'a> {
    fn create(cfg: &SimConfig, outputs: StreamOutputs<'a>) -> Result<Streamer<'a>, SimError> {
        let n = usize::from(cfg.boards);
        let files = match outputs.dir {
            Some(dir) => Some(DirFiles::create(
                dir,
                cfg,
                outputs.truth_csv,
                outputs.captures_only,
            )?),
            None => None,
        };
        let mut boards = Vec::new();
        if cfg.run_boards {
            for b in 0..cfg.boards {
                boards.push(
                    Board::new(cfg.board_config(b))
                        .map_err(|error| SimError::Board { board: b, error })?,
                );
            }
        }
        let checkers = if outputs.check {
            let timing = &cfg.controller.timing;
            (0..n)
                .map(|_| StreamChecker::new(&cfg.geometry, timing, CHECK_KEEP))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Streamer {
            tick_ps: cfg.controller.timing.tick_ps,
            files,
            packets: vec![0; boards.len()],
            unsent: vec![VecDeque::new(); boards.len()],
            boards,
            commands: vec![0; n],
            truth_records: 0,
            klog_records: 0,
            scratch: Vec::new(),
            checkers,
            sink: outputs.packets,
        })
    }

    /// Channel `b`'s next commands and the truth of the requests they
    /// served, in command order.
    fn channel(
        &mut self,
        b: usize,
        cmds: &[Command],
        records: &[TruthRecord],
    ) -> Result<(), SimError> {
        if let Some(files) = &mut self.files {
            files.channel(b, cmds, records)?;
        }
        self.commands[b] += cmds.len() as u64;
        self.truth_records += records.len() as u64;
        if let Some(checker) = self.checkers.get_mut(b) {
            checker.feed(cmds);
        }
        if let Some(board) = self.boards.get_mut(b) {
            board.commands(cmds).map_err(|error| SimError::Board {
                board: b as u8,
                error,
            })?;
            self.scratch.clear();
            board.drain_packets(&mut self.scratch);
            self.take_packets(b)?;
        }
        Ok(())
    }

    /// Takes one hand-over; gives a channel's batch back for reuse.
    fn take(&mut self, h: Handover) -> Result<Option<ChannelBatch>, SimError> {
        match h {
            Handover::Channel { board, batch } => {
                self.channel(board, &batch.0, &batch.1)?;
                Ok(Some(batch))
            }
            Handover::Klog(records) => self.klog(&records).map(|()| None),
            Handover::SendReady => self.send_ready(false).map(|()| None),
        }
    }

    fn take_packets(&mut self, b: usize) -> Result<(), SimError> {
        if let Some(files) = &mut self.files {
            files.captures[b].write(&self.scratch)?;
        }
        self.packets[b] += self.scratch.len() as u64;
        if self.sink.is_some() {
            self.unsent[b].extend(self.scratch.drain(..));
        }
        Ok(())
    }

    fn klog(&mut self, records: &[RecordRepr]) -> Result<(), SimError> {
        if let Some(files) = &mut self.files {
            for r in records {
                files.klog.write(&r.to_bytes())?;
            }
        }
        self.klog_records += records.len() as u64;
        Ok(())
    }

    /// Hands the sink the packets that left before every board's current
    /// tick (all of them at the end), by (leave tick, board).
    fn send_ready(&mut self, all: bool) -> Result<(), SimError> {
        let Some(sink) = self.sink.as_deref_mut() else {
            return Ok(());
        };
        let reached = if all {
            u64::MAX
        } else {
            self.boards
                .iter()
                .map(Board::current_tick)
                .min()
                .unwrap_or(0)
        };
        // A few boards: a linear scan for the earliest head is cheapest.
        while let Some(b) = (0..self.unsent.len())
            .filter(|&b| {
                self.unsent[b]
                    .front()
                    .is_some_and(|p| all || p.leave_tick < reached)
            })
            .min_by_key(|&b| (self.unsent[b].front().map(|p| p.leave_tick), b))
        {
            let p = self.unsent[b].pop_front().expect("filtered on a head");
            sink.packet(b, &p)?;
        }
        Ok(())
    }

    /// Runs the boards to their end and closes every output.
    fn finish(
        mut self,
        events: &[(String, u32)],
        stats: SimStats,
    ) -> Result<StreamReport, SimError> {
        let mut board_counters = Vec::new();
        for b in 0..self.boards.len() {
            self.boards[b].finish();
            self.scratch.clear();
            self.boards[b].drain_packets(&mut self.scratch);
            self.take_packets(b)?;
            board_counters.push(self.boards[b].counters().clone());
        }
        self.send_ready(true)?;
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.finish()?;
        }
        let checks = self
            .checkers
            .into_iter()
            .map(StreamChecker::finish)
            .collect();
        let summary = StreamSummary {
            stats,
            commands: self.commands,
            truth_records: self.truth_records,
            klog_records: self.klog_records,
            packets: self.packets,
            board_counters,
        };
        if let Some(files) = self.files {
            let dir = files.finish(&summary.commands, events, self.tick_ps)?;
            let mut f = OutFile::create(&dir, files::SUMMARY)?;
            f.with(|f| {
                serde_json::to_writer_pretty(f, &summary_json(&summary, self.tick_ps))
                    .map_err(std::io::Error::other)
            })?;
            f.close()?;
        }
        Ok(StreamReport { summary, checks })
    }
}

/// Merges the per-board truth files by (tick, board) into the truth file
/// (and CSV), then removes them.
fn merge_truth_parts(dir: &Path, header: TruthHeader, csv: bool) -> Result<(), SimError> {
    let n = usize::from(header.boards);
    let mut readers = Vec::with_capacity(n);
    for b in 0..n {
        let path = dir.join(truth_part_name(b));
        let f = File::open(&path).map_err(io_err(&path))?;
        readers.push((BufReader::with_capacity(1 << 20, f), path));
    }
    let next =
        |(r, path): &mut (BufReader<File>, PathBuf)| -> Result<Option<TruthRecord>, SimError> {
            let mut buf = [0u8; truth::RECORD_LEN];
            match r.read_exact(&mut buf) {
                Ok(()) => TruthRecord::parse(&buf)
                    .map(Some)
                    .map_err(|e| SimError::Config(format!("{}: {e}", path.display()))),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                Err(e) => Err(io_err(path)(e)),
            }
        };
    let mut heads = Vec::with_capacity(n);
    for r in &mut readers {
        heads.push(next(r)?);
    }
    let mut bin = OutFile::create(dir, files::TRUTH)?;
    bin.write(&header.to_bytes())?;
    let mut csv = if csv {
        let mut f = OutFile::create(dir, files::TRUTH_CSV)?;
        f.write(format!("{}\n", truth::CSV_HEADER).as_bytes())?;
        Some(f)
    } else {
        None
    };
    // A few boards: a linear scan for the least head is cheapest.
    while let Some(b) = (0..n)
        .filter(|&b| heads[b].is_some())
        .min_by_key(|&b| heads[b].map(|r| (r.tick, b)))
    {
        let r = heads[b].take().expect("filtered on some");
        bin.write(&r.to_bytes())?;
        if let Some(csv) = &mut csv {
            csv.with(|f| truth::write_csv_row(f, &r))?;
        }
        heads[b] = next(&mut readers[b])?;
    }
    bin.close()?;
    if let Some(csv) = csv {
        csv.close()?;
    }
    for (_, path) in readers {
        std::fs::remove_file(&path).map_err(io_err(&path))?;
    }
    Ok(())
}
