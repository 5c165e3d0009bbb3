//! Running a built simulator on a command stream: a thread turns the
//! commands into pin lines on the simulator's standard input as it asks for
//! them; this thread reads what the testbench prints (closes, frames,
//! counters, the cut) and writes each packet up to the cut into the capture
//! files as its frame comes out, with its leave tick from the close.
//!
//! With the Statistic Unit the frames also carry statistics packets, which
//! leave at their record's end tick (in their header). A port sends a
//! waiting statistics packet before a waiting trace packet, while the
//! golden model writes each port's packets in the order they left (a
//! statistics packet before the trace packets that leave at or after its
//! tick); so a statistics packet waits here until the trace packets of its
//! port that left before it are written. A trace packet that left after a
//! statistics packet but came out before it is an error.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command as Process, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hmtt_board_model::output::CaptureWriters;
use hmtt_board_model::{kind_index, BoardConfig, BoardPacket};
use hmtt_format::command::CommandReader;
use hmtt_format::packet::Packet;
use hmtt_format::stats::{is_stats_packet, StatsPart};
use hmtt_format::{InnerCommand, Opcode};
use hmtt_hdl::testbench::{
    command_pins, frame_payload, parse_line, pin_record, pin_word, HardwareCounter, PortFrames,
    TbLine,
};

use super::verilator::Simulator;
use super::EngineError;
use crate::tools::log_tail;

/// Ethernet clock: 8 ns (125 MHz), in the testbench's half-picosecond units.
const ETH_HALF_PERIOD: u64 = 8000;

/// What the command file held, counted while driving the pins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputCounts {
    pub commands: u64,
    /// Per mnemonic, in `DdrCmd::ALL` order.
    pub per_kind: [u64; 12],
    pub last_command_tick: u64,
}

/// Figures of the packets up to the cut, from their frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameCounts {
    pub packets: u64,
    /// Words in the packets, injected LINE_HI included.
    pub packet_words: u64,
    pub closed_full: u64,
    pub closed_sync: u64,
    pub closed_idle: u64,
    /// Sum of the LOST words' counts.
    pub lost_reported: u64,
    /// Header flags and leave tick of the last packet.
    pub last: Option<(u8, u64)>,
}

/// What the Statistic Unit sent, from its counters and its frames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsRun {
    /// The unit's records sent, unsent and lost for want of a held slot,
    /// once its last record was decided.
    pub records_sent: u64,
    pub records_unsent: u64,
    pub overrun: u64,
    /// Statistics packets written and their bytes (UDP payload).
    pub packets: u64,
    pub bytes: u64,
    /// Sum of the records' unsent counts (format.md §5.3), each record once.
    pub unsent_reported: u64,
    /// Packets a record takes.
    pub parts: u64,
    /// Statistics packets that came out before a trace packet of their
    /// port that left before them, and were written after it.
    pub held: u64,
}

impl StatsRun {
    /// Packets of the records sent that never came out.
    pub fn missing(&self) -> u64 {
        (self.records_sent * self.parts).saturating_sub(self.packets)
    }
}

/// What one simulation gave.
#[derive(Debug, Clone)]
pub struct HardwareRun {
    pub input: InputCounts,
    /// The board's counters ([`HardwareCounter::ALL`] order) after the clock of the
    /// run's end, extended past the hardware's 32 bits.
    pub counters: [u64; HardwareCounter::ALL.len()],
    pub frames: FrameCounts,
    /// Packets the run reports (the golden model's rule) and the words
    /// popped into them.
    pub packets_at_cut: u64,
    pub words_at_cut: u64,
    /// Packets up to the cut whose frames never came out.
    pub missing: Vec<u64>,
    /// Sticky: a port buffer overflowed, a framer ran dry.
    pub packet_error: bool,
    pub frame_underrun: bool,
    /// The Statistic Unit's figures, for a core with the unit.
    pub statistics: Option<StatsRun>,
    pub fabric_clocks: u64,
    /// Wall-clock and CPU seconds of the simulator (the Verilog's
    /// generation and the build not included).
    pub seconds: f64,
    pub cpu_seconds: f64,
}

impl HardwareRun {
    pub fn counter(&self, c: HardwareCounter) -> u64 {
        self.counters[c as usize]
    }
}

/// Feeds the simulator's standard input with pin records; refuses what
/// the pins cannot do.
fn feed(
    input: Box<dyn BufRead + Send>,
    source_name: String,
    stdin: ChildStdin,
) -> Result<InputCounts, EngineError> {
    let mut reader = CommandReader::new(input, source_name.clone());
    let mut out = BufWriter::with_capacity(1 << 16, stdin);
    let mut counts = InputCounts::default();
    let broken = |e| EngineError::Simulator(format!("stopped reading its commands ({e})"));
    while let Some(c) = reader.next() {
        let c = c?;
        let refuse = |reason: String| EngineError::Stream {
            source_name: source_name.clone(),
            line: reader.line_no(),
            reason,
        };
        if counts.commands > 0 && c.cycle == counts.last_command_tick {
            return Err(refuse(format!(
                "a second command at tick {}: the DIMM's pins carry one command per tick",
                c.cycle
            )));
        }
        let pins = command_pins(&c).map_err(|e| refuse(e.to_string()))?;
        counts.commands += 1;
        counts.per_kind[kind_index(c.cmd)] += 1;
        counts.last_command_tick = c.cycle;
        out.write_all(&pin_record(c.cycle, pin_word(&pins)))
            .map_err(broken)?;
    }
    out.flush().map_err(broken)?;
    Ok(counts)
}

/// The packets between the frames and the capture files.
struct Collector<'a> {
    writers: &'a mut CaptureWriters,
    ports: Vec<PortFrames>,
    /// Leave ticks of closed packets from `first_seq` on.
    leave: VecDeque<u64>,
    first_seq: u64,
    closes: u64,
    /// The next `seq` each port's frames should carry.
    next_seq: Vec<u64>,
    cut: Option<(u64, u64)>,
    missing: Vec<u64>,
    frames: FrameCounts,
    max_words: usize,
    /// Per port: statistics packets waiting for earlier trace packets, the
    /// next statistics `seq` and the leave tick of the last trace packet
    /// written.
    stats_waiting: Vec<VecDeque<BoardPacket>>,
    next_stats_seq: Vec<u64>,
    last_trace_leave: Vec<Option<u64>>,
    stats: StatsRun,
    stats_line: bool,
}

impl Collector<'_> {
    fn close(&mut self, tick: u64) {
        if self.cut.is_none_or(|(packets, _)| self.closes < packets) {
            self.leave.push_back(tick);
        }
        self.closes += 1;
    }

    fn frame(&mut self, port: usize, clock: u64, bytes: &[u8]) -> Result<(), EngineError> {
        let nports = self.ports.len() as u64;
        let frames = self
            .ports
            .get_mut(port)
            .ok_or_else(|| EngineError::Simulator(format!("a frame on port {port}")))?;
        let frame = frames.frame(clock, bytes)?;
        let payload = frame_payload(&frame.bytes, port)?;
        if is_stats_packet(payload) {
            return self.stats_frame(port, payload);
        }
        let packet = Packet::new_checked(payload).map_err(|e| EngineError::Frame {
            port,
            reason: format!("not an HMTT packet: {e}"),
        })?;
        let seq = packet.seq();
        if seq % nports != port as u64 || usize::from(packet.port()) != port {
            return Err(EngineError::Frame {
                port,
                reason: format!("packet seq {seq} of port {} on port {port}", packet.port()),
            });
        }
        if self.cut.is_some_and(|(packets, _)| seq >= packets) {
            return Ok(());
        }
        let expected = self.next_seq[port];
        if seq < expected {
            return Err(EngineError::Frame {
                port,
                reason: format!("packet seq {seq} after seq {}", expected - nports),
            });
        }
        self.missing
            .extend((expected..seq).step_by(nports as usize));
        self.next_seq[port] = seq + nports;
        let leave_tick = seq
            .checked_sub(self.first_seq)
            .and_then(|i| self.leave.get(i as usize).copied())
            .ok_or_else(|| EngineError::Frame {
                port,
                reason: format!("packet seq {seq} came out before its close"),
            })?;
        self.count(&packet, leave_tick);
        self.writers.write(&[BoardPacket {
            port: port as u8,
            seq,
            leave_tick,
            bytes: payload.to_vec(),
        }])?;
        self.last_trace_leave[port] = Some(leave_tick);
        self.release_stats(port)?;
        // Ticks of packets every port is past are no longer needed.
        let done = self.next_seq.iter().copied().min().unwrap_or(0);
        while self.first_seq < done && !self.leave.is_empty() {
            self.leave.pop_front();
            self.first_seq += 1;
        }
        Ok(())
    }

    fn stats_frame(&mut self, port: usize, payload: &[u8]) -> Result<(), EngineError> {
        let nports = self.ports.len() as u64;
        let bad = |reason: String| EngineError::Frame { port, reason };
        let part =
            StatsPart::parse(payload).map_err(|e| bad(format!("not a statistics packet: {e}")))?;
        if usize::from(part.port) != port || part.seq % nports != port as u64 {
            return Err(bad(format!(
                "statistics seq {} of port {} on port {port}",
                part.seq, part.port
            )));
        }
        if part.seq != self.next_stats_seq[port] {
            return Err(bad(format!(
                "statistics seq {} where seq {} was due",
                part.seq, self.next_stats_seq[port]
            )));
        }
        self.next_stats_seq[port] += nports;
        if let Some(t) = self.last_trace_leave[port].filter(|&t| t >= part.end_tick) {
            return Err(bad(format!(
                "statistics seq {} (end tick {}) came out after a trace packet that left at \
                 tick {t}",
                part.seq, part.end_tick
            )));
        }
        let s = &mut self.stats;
        s.packets += 1;
        s.bytes += payload.len() as u64;
        if part.part == 0 {
            s.unsent_reported += u64::from(part.unsent_before);
        }
        if self.precedes(port, part.end_tick) {
            self.stats.held += 1;
        }
        self.stats_waiting[port].push_back(BoardPacket {
            port: port as u8,
            seq: part.seq,
            leave_tick: part.end_tick,
            bytes: payload.to_vec(),
        });
        self.release_stats(port)
    }

    /// Writes port `port`'s waiting statistics packets that no trace packet
    /// up to the cut which left before them still precedes.
    fn release_stats(&mut self, port: usize) -> Result<(), EngineError> {
        while let Some(front) = self.stats_waiting[port].front() {
            if self.precedes(port, front.leave_tick) {
                break;
            }
            let p = self.stats_waiting[port].pop_front().expect("a front");
            self.writers.write(&[p])?;
        }
        Ok(())
    }

    /// Whether the next trace packet of port `port` up to the cut left
    /// before tick `tick`. Closes print before the frames of a later tick,
    /// so one that did has its close here.
    fn precedes(&self, port: usize, tick: u64) -> bool {
        let seq = self.next_seq[port];
        self.cut.is_none_or(|(packets, _)| seq < packets)
            && seq
                .checked_sub(self.first_seq)
                .and_then(|i| self.leave.get(i as usize))
                .is_some_and(|&t| t < tick)
    }

    /// At the end: the statistics packets still waiting (for trace packets
    /// that never came out, which the run reports) are written.
    fn flush_stats(&mut self) -> Result<(), EngineError> {
        for q in &mut self.stats_waiting {
            let waiting: Vec<BoardPacket> = q.drain(..).collect();
            self.writers.write(&waiting)?;
        }
        Ok(())
    }

    fn count(&mut self, p: &Packet<&[u8]>, leave_tick: u64) {
        let f = &mut self.frames;
        f.packets += 1;
        f.packet_words += p.nwords() as u64;
        let sync = InnerCommand::Sync.index();
        let last = p.word(p.nwords() - 1);
        // The golden model's order: a full packet is full even if it ends
        // with SYNC.
        if p.nwords() >= self.max_words {
            f.closed_full += 1;
        } else if last.is_control() && last.opcode() == Opcode::Cmd && last.payload() == sync {
            f.closed_sync += 1;
        } else {
            f.closed_idle += 1;
        }
        f.lost_reported += p
            .words()
            .filter(|w| w.is_control() && w.opcode() == Opcode::Lost)
            .map(|w| u64::from(w.payload()))
            .sum::<u64>();
        f.last = Some((p.flags(), leave_tick));
    }
}

/// Runs `sim` on the commands of `input`; writes the packets up to the
/// golden model's end of the stream into `writers`.
pub fn simulate(
    sim: &Simulator,
    run_dir: &Path,
    input: Box<dyn BufRead + Send>,
    source_name: &str,
    cfg: &BoardConfig,
    stats_parts: u64,
    writers: &mut CaptureWriters,
) -> Result<HardwareRun, EngineError> {
    std::fs::create_dir_all(run_dir)
        .map_err(|e| crate::FirmwareError::io("creating", run_dir, e))?;
    let stderr_path = run_dir.join("simulator.stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| crate::FirmwareError::io("creating", &stderr_path, e))?;
    // Long enough for every port to send two packets of max_words words.
    let frame_clocks = 4 * cfg.max_words as u64 + 98;
    let tail = 4 * frame_clocks + 100_000;
    let started = Instant::now();
    let mut child = Process::new(&sim.binary)
        .arg("+commands=/dev/stdin")
        .arg(format!(
            "+fabric_half={}",
            u64::from(cfg.lanes) * u64::from(cfg.tick_ps)
        ))
        .arg(format!("+eth_half={ETH_HALF_PERIOD}"))
        .arg(format!("+tail={tail}"))
        .arg(format!("+stats_parts={stats_parts}"))
        .current_dir(run_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| crate::FirmwareError::io("running", &sim.binary, e))?;
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let feed_failed = Arc::new(AtomicBool::new(false));
    let feeder = {
        let flag = feed_failed.clone();
        let name = source_name.to_string();
        std::thread::Builder::new()
            .name("commands".into())
            .spawn(move || {
                let r = feed(input, name, stdin);
                flag.store(r.is_err(), Ordering::Relaxed);
                r
            })
            .map_err(|e| EngineError::Simulator(format!("cannot start the feeder: {e}")))?
    };
    let mut c = Collector {
        writers,
        ports: (0..usize::from(cfg.ports)).map(PortFrames::new).collect(),
        leave: VecDeque::new(),
        first_seq: 0,
        closes: 0,
        next_seq: (0..u64::from(cfg.ports)).collect(),
        cut: None,
        missing: Vec::new(),
        frames: FrameCounts::default(),
        max_words: cfg.max_words,
        stats_waiting: vec![VecDeque::new(); usize::from(cfg.ports)],
        next_stats_seq: (0..u64::from(cfg.ports)).collect(),
        last_trace_leave: vec![None; usize::from(cfg.ports)],
        stats: StatsRun {
            parts: stats_parts,
            ..StatsRun::default()
        },
        stats_line: false,
    };
    let read = read_output(&mut child, stdout, &feed_failed, &mut c);
    let status = wait_with_cpu(&mut child);
    let fed = feeder
        .join()
        .unwrap_or_else(|_| Err(EngineError::Simulator("the feeder panicked".into())));
    let (status, cpu_seconds) =
        status.map_err(|e| crate::FirmwareError::io("waiting for", &sim.binary, e))?;
    // The input's own errors first (they stop the simulator), then what
    // the output showed; a feeder cut off by a dead simulator comes last.
    let input = match fed {
        Err(EngineError::Simulator(e)) => Err(EngineError::Simulator(e)),
        Err(e) => return Err(e),
        Ok(i) => Ok(i),
    };
    let end = read?;
    c.flush_stats()?;
    if !status.success() {
        return Err(EngineError::Simulator(format!(
            "exited with {status}:\n{}",
            log_tail(&stderr_path, 20)
        )));
    }
    let input = input?;
    let (packets_at_cut, words_at_cut) = c.cut.ok_or_else(|| {
        EngineError::Simulator(format!(
            "ended before the end of the stream:\n{}",
            log_tail(&stderr_path, 20)
        ))
    })?;
    let nports = u64::from(cfg.ports);
    for (port, &next) in c.next_seq.iter().enumerate() {
        debug_assert_eq!(next % nports, port as u64);
        c.missing
            .extend((next..packets_at_cut).step_by(nports as usize));
    }
    c.missing.sort_unstable();
    let statistics = match (stats_parts, c.stats_line) {
        (0, _) => None,
        (_, true) => Some(c.stats.clone()),
        (_, false) => {
            return Err(EngineError::Simulator(format!(
                "ended before the Statistic Unit's last record:\n{}",
                log_tail(&stderr_path, 20)
            )))
        }
    };
    let mut counters = [0u64; HardwareCounter::ALL.len()];
    for (i, v) in end.counters.iter().enumerate() {
        counters[i] = v.ok_or_else(|| {
            EngineError::Simulator(format!(
                "printed no counter {}",
                HardwareCounter::ALL[i].name()
            ))
        })?;
    }
    Ok(HardwareRun {
        input,
        counters,
        frames: c.frames,
        packets_at_cut,
        words_at_cut,
        missing: c.missing,
        packet_error: end.packet_error,
        frame_underrun: end.frame_underrun,
        statistics,
        fabric_clocks: end.clocks,
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds,
    })
}

/// Waits for `child`, returning its exit status and the CPU seconds it used.
fn wait_with_cpu(child: &mut Child) -> std::io::Result<(ExitStatus, f64)> {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waits for our own child, writing into the locals above.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    Ok((
        ExitStatus::from_raw(status),
        t(usage.ru_utime) + t(usage.ru_stime),
    ))
}

/// What the testbench printed at its end.
#[derive(Default)]
struct End {
    counters: [Option<u64>; HardwareCounter::ALL.len()],
    packet_error: bool,
    frame_underrun: bool,
    clocks: u64,
}

fn read_output(
    child: &mut Child,
    stdout: std::process::ChildStdout,
    feed_failed: &AtomicBool,
    c: &mut Collector,
) -> Result<End, EngineError> {
    let mut out = BufReader::with_capacity(1 << 20, stdout);
    let mut line = String::new();
    let mut end = End::default();
    loop {
        line.clear();
        let n = out
            .read_line(&mut line)
            .map_err(|e| EngineError::Simulator(format!("output unreadable: {e}")))?;
        if n == 0 {
            return Ok(end);
        }
        if feed_failed.load(Ordering::Relaxed) {
            // The feeder's error is the one to report.
            let _ = child.kill();
            return Ok(end);
        }
        let parsed = parse_line(line.trim_end()).map_err(|e| {
            let _ = child.kill();
            EngineError::Simulator(e.to_string())
        });
        let result = match parsed? {
            None | Some(TbLine::Progress { .. }) | Some(TbLine::Done) => Ok(()),
            Some(TbLine::Close { tick }) => {
                c.close(tick);
                Ok(())
            }
            Some(TbLine::Frame { port, clock, bytes }) => c.frame(port, clock, &bytes),
            Some(TbLine::TxError { port, clock }) => Err(EngineError::Frame {
                port,
                reason: format!("tx_er at Ethernet clock {clock} (or a frame too long)"),
            }),
            Some(TbLine::Counter { index, value }) => match end.counters.get_mut(index) {
                Some(slot) => {
                    *slot = Some(value);
                    Ok(())
                }
                None => Err(EngineError::Simulator(format!("counter index {index}"))),
            },
            Some(TbLine::Cut { packets, words }) => {
                c.cut = Some((packets, words));
                (0..c.ports.len()).try_for_each(|p| c.release_stats(p))
            }
            Some(TbLine::Statistics {
                records_sent,
                records_unsent,
                overrun,
            }) => {
                c.stats.records_sent = records_sent;
                c.stats.records_unsent = records_unsent;
                c.stats.overrun = overrun;
                c.stats_line = true;
                Ok(())
            }
            Some(TbLine::Status {
                packet_error,
                frame_underrun,
                clocks,
            }) => {
                end.packet_error = packet_error;
                end.frame_underrun = frame_underrun;
                end.clocks = clocks;
                Ok(())
            }
            Some(TbLine::Timeout) => {
                tracing::warn!("not every frame up to the end of the stream came out in time");
                Ok(())
            }
        };
        if let Err(e) = result {
            let _ = child.kill();
            return Err(e);
        }
    }
}
