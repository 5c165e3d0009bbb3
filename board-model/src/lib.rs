//! The board's golden model: DDR commands in, the exact packets the FPGA
//! sends out (`docs/board.md` 2.2, `docs/format.md` §4–§6).
//! It must not know the traced machine (workloads, OS, DRAM controller:
//! `hmtt-sim`) nor decode its own packets for checks (`hmtt-merge`).
//!
//! The boxes are those of the hardware (`hdl/src/`): the DSMU ([`dsmu`])
//! turns ACT and RD/WR into line references, the reference limit
//! ([`limit`]) passes a fabric clock's first `E` of them, the config unit
//! ([`cu`]) turns them into ACCESS/TAG/CMD events according to the mode,
//! the encoder step ([`encoder`], with the keeper) pushes each event's
//! words atomically into the TX FIFO ([`fifo`]), the drain ([`drain`])
//! pops at most one word per clock at a rational rate, and the packetizer
//! ([`packetizer`]) cuts the words into packets. The counters are in
//! [`counters`], the co-simulation probe in [`probe`].
//!
//! Time is in ticks (DDR command clocks); the FIFO, the drain, the keeper
//! and the packetizer step once per fabric clock of `L` ticks. Idle clocks
//! are never stepped one by one: each word's pop clock is a function of
//! the push clocks (the FIFO is first in, first out, a word leaves in the
//! clock after its push at the earliest, and the limiter pops at
//! `max(push + 1, the clock its credit reaches den)`), worked out in
//! batches by [`TxFifo::settle`]; the packetizer takes the popped words in
//! batches, and the keeper's next clock follows from the encoder's `last`;
//! so the cost is per command and per word, not per clock.
//!
//! [`Board::commands`] takes the common commands on a fast path
//! ([`fast_path`]) with its state in locals; everything else takes the
//! general path, which looks at the FIFO on every event.
//!
//! ```
//! use hmtt_format::{Command, DdrCmd, Geometry};
//! use hmtt_board_model::{Board, BoardConfig};
//!
//! let mut board = Board::new(BoardConfig::new(Geometry::ddr3_default())).unwrap();
//! let c = |cycle, cmd, arg| Command { cycle, cmd, rank: 0, bank: 1, arg };
//! board.command(&c(0, DdrCmd::Act, 42)).unwrap();
//! board.command(&c(11, DdrCmd::Rd, 16)).unwrap();
//! board.finish();
//! let mut packets = Vec::new();
//! board.drain_packets(&mut packets);
//! assert_eq!(packets.len(), 1);
//! assert_eq!(board.counters().references, 1);
//! ```

pub mod config;
pub mod counters;
pub mod cu;
pub mod drain;
pub mod dsmu;
pub mod encoder;
pub mod fast_path;
pub mod fifo;
pub mod limit;
pub mod options;
pub mod output;
pub mod packetizer;
pub mod probe;
pub mod reuse_unit;
pub mod statistics;

use hmtt_format::command::Command;
use hmtt_format::record::EventEncoder;

pub use config::{
    default_window, BoardConfig, BoardError, DrainRate, DEFAULT_CONFIG_BYTES, DEFAULT_FIFO_DEPTH,
    DEFAULT_IDLE_FLUSH_TICKS, DEFAULT_LANES, DEFAULT_MAX_WORDS, DEFAULT_PORTS,
    DEFAULT_REFS_PER_CLOCK, DEFAULT_TICK_PS, FRAME_OVERHEAD_BYTES, MAX_COMMAND_GAP,
};
pub use counters::{kind_index, BoardCounters};
pub use cu::{ConfigUnit, CuOutcome, Mode};
pub use dsmu::{Dsmu, DsmuOutcome, Reference};
pub use fifo::{Pusher, TxFifo};
pub use limit::{Admission, RefLimit};
pub use options::{
    parse_config_bytes, parse_window, BaseConfig, BoardOptions, MappingText, OptionsError,
};
pub use packetizer::{BoardPacket, CloseReason, Packetizer, PacketizerCounters};
pub use probe::{ClockActivity, Probe};
pub use reuse_unit::ReuseConfig;
pub use statistics::{StatisticUnit, StatsConfig, StatsCounters};

/// Words pushed on the fast path between two looks at the FIFO (settle,
/// advance, the packetizer's turn): small enough that the words are
/// still in the caches when they are settled and packed.
const TAKE_BATCH: u64 = 4096;

/// The board. Feed it commands in stream order with [`Board::command`] or,
/// faster, [`Board::commands`], end the stream with [`Board::finish`],
/// collect packets with [`Board::drain_packets`] at any time.
#[derive(Debug, Clone)]
pub struct Board {
    cfg: BoardConfig,
    dsmu: Dsmu,
    cu: ConfigUnit,
    limit: RefLimit,
    encoder: EventEncoder,
    fifo: TxFifo,
    packetizer: Packetizer,
    /// `log2(L)`: the clock of tick `t` is `t >> shift`.
    shift: u32,
    /// The tick whose commands are being taken; steps 3 and 4 of every
    /// earlier clock are due (the pops follow from the pushes, the
    /// packetizer takes them lazily), those of the clock of `cur` are not.
    cur: u64,
    /// Header flags of the current mode.
    flags: u8,
    fifo_depth: usize,
    /// The room (at a clock's start, plus the previous clock's words) a
    /// clock needs to take its events, twice the most words one clock
    /// pushes, `2(2 + 3E)`, and to push the keeper's filler, `3 + 3E`
    /// (board.md 2.2).
    open_room: usize,
    filler_room: usize,
    /// An event of the current clock whose words all end before this FIFO
    /// position fits, in the FIFO (the words popped by the last look at it
    /// are a lower bound of those popped now) and in the ring. 0 while a
    /// lost count is pending: its LOST goes first, on the slow path.
    push_limit: u64,
    /// Every event at a tick before this one is dropped: its clock is not
    /// open (board.md 2.2), and no clock is before the one after the
    /// FIFO's next pop. 0 when not known.
    drop_before: u64,
    /// A command at a tick after this one needs `run_until` first: the
    /// last tick before the keeper's next clock.
    next_event: u64,
    /// The keeper, blocked by a full FIFO or already run in a clock, tries
    /// again in this clock at the earliest.
    keeper_retry: u64,
    lost: u64,
    finished: bool,
    counters: BoardCounters,
    probe: Option<Box<Probe>>,
    /// The Statistic Unit, if the board has one.
    su: Option<Box<StatisticUnit>>,
    /// The config unit just executed one of the Statistic Unit's inner
    /// commands: the commands after it wait until the unit has counted
    /// those before.
    su_stop: bool,
}

impl Board {
    /// A board at reset.
    pub fn new(cfg: BoardConfig) -> Result<Board, BoardError> {
        cfg.validate()?;
        let g = cfg.geometry;
        let mode = Mode {
            tracing: cfg.start_tracing,
            tags_only: cfg.start_tags_only,
        };
        let DrainRate { num, den } = cfg.drain;
        let mut board = Board {
            dsmu: Dsmu::new(&g),
            cu: ConfigUnit::new(&g, cfg.window, mode).with_statistics(cfg.statistics.is_some()),
            limit: RefLimit::new(cfg.lanes, cfg.refs_per_clock),
            encoder: EventEncoder::default(),
            // A clock adds L times the per-tick credit.
            fifo: TxFifo::new(cfg.fifo_depth, num * u64::from(cfg.lanes), den),
            packetizer: Packetizer::new(
                g,
                cfg.board_id,
                cfg.tick_ps,
                cfg.ports,
                cfg.max_words,
                cfg.idle_flush_ticks,
                cfg.lanes,
            ),
            shift: cfg.lanes.trailing_zeros(),
            cur: 0,
            flags: mode.header_flags(),
            fifo_depth: cfg.fifo_depth,
            open_room: 2 * cfg.most_words_per_clock(),
            filler_room: cfg.most_words_per_clock() + 1,
            push_limit: 0,
            drop_before: 0,
            next_event: 0,
            keeper_retry: 0,
            lost: 0,
            finished: false,
            counters: BoardCounters::default(),
            probe: None,
            su: cfg
                .statistics
                .as_ref()
                .map(|sc| Box::new(StatisticUnit::new(&cfg, sc))),
            su_stop: false,
            cfg,
        };
        board.set_next_event();
        board.refresh_push_limit();
        Ok(board)
    }

    pub fn config(&self) -> &BoardConfig {
        &self.cfg
    }

    /// Records every FIFO push and pop with its clock from now on, for
    /// co-simulation. Costs nothing while off.
    pub fn enable_probe(&mut self) {
        if self.probe.is_none() {
            self.catch_up();
            self.probe = Some(Box::default());
        }
    }

    /// What the probe recorded so far (and keeps recording). Pops are
    /// recorded when the packetizer takes them: up to date after
    /// [`Board::drain_packets`], [`Board::advance_to`] or [`Board::finish`].
    pub fn probe(&self) -> Option<&Probe> {
        self.probe.as_deref()
    }

    /// Takes what the probe recorded so far (pops up to the current clock).
    pub fn take_probe(&mut self) -> Option<Probe> {
        self.catch_up();
        self.probe.as_mut().map(|p| std::mem::take(&mut **p))
    }

    /// The tick whose commands are being taken (its clock's drain is still
    /// to come).
    pub fn current_tick(&self) -> u64 {
        self.cur
    }

    /// The fabric clock of the current tick.
    #[inline]
    pub fn current_clock(&self) -> u64 {
        self.cur_clock()
    }

    #[inline(always)]
    fn cur_clock(&self) -> u64 {
        self.cur >> self.shift
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.cu.mode()
    }

    /// Words in the TX FIFO now: `level_k` of the current clock plus the
    /// words pushed in it so far (its pop still to come).
    pub fn fifo_level(&self) -> usize {
        self.fifo.len_at(self.cur_clock())
    }

    /// Counters so far. Those of the FIFO's drain and the packetizer
    /// (`words_popped`, `fifo_high_water`, packets) are up to date after
    /// [`Board::drain_packets`], [`Board::advance_to`] or [`Board::finish`]:
    /// the pops are worked out and taken in batches.
    pub fn counters(&self) -> &BoardCounters {
        &self.counters
    }

    /// Takes one command. Commands at the same cycle are applied in call
    /// order; a cycle before the current tick is refused (nothing changes).
    #[inline]
    pub fn command(&mut self, c: &Command) -> Result<(), BoardError> {
        if self.su.is_some() {
            return self.commands(std::slice::from_ref(c));
        }
        let one = std::slice::from_ref(c);
        let (taken, room) = if self.probe.is_some() {
            self.fast_run::<true>(one, 0)
        } else {
            self.fast_run::<false>(one, 0)
        };
        if taken == 1 {
            return Ok(());
        }
        match room {
            Some(line) => {
                self.access_without_room(c, line);
                Ok(())
            }
            None => self.command_slow(c),
        }
    }

    /// Takes a slice of commands in order; stops at the first refused one
    /// (the commands before it are taken).
    pub fn commands(&mut self, cs: &[Command]) -> Result<(), BoardError> {
        if self.su.is_none() {
            return self.trace_commands(cs).map(|_| ()).map_err(|(_, e)| e);
        }
        // The Statistic Unit counts the commands between two of its
        // boundaries (an interval's end, an inner command's change) after
        // the trace path took them, with what the trace path dropped.
        let mut i = 0;
        while let Some(c) = cs.get(i) {
            let boundary = self.su.as_ref().map_or(u64::MAX, |su| su.boundary());
            if c.cycle >= boundary {
                self.check_tick(c.cycle)?;
                let flags = self.flags;
                if let Some(su) = self.su.as_deref_mut() {
                    su.advance(c.cycle, flags);
                }
                continue;
            }
            let end = i + cs[i..].iter().take_while(|c| c.cycle < boundary).count();
            let over = self.counters.references_over_limit;
            let dropped = self.counters.events_dropped;
            let result = self.trace_commands(&cs[i..end]);
            let taken = match result {
                Ok(n) | Err((n, _)) => n,
            };
            let over = self.counters.references_over_limit - over;
            let dropped = self.counters.events_dropped - dropped;
            if let Some(su) = self.su.as_deref_mut() {
                su.count(&cs[i..i + taken]);
                su.add_drops(over, dropped);
            }
            result.map_err(|(_, e)| e)?;
            i += taken;
        }
        Ok(())
    }

    /// The trace path of [`Board::commands`]: how many commands it took,
    /// stopping after one of the Statistic Unit's inner commands; with an
    /// error, how many it took before.
    fn trace_commands(&mut self, cs: &[Command]) -> Result<usize, (usize, BoardError)> {
        let mut i = 0;
        while i < cs.len() {
            let (next, room) = if self.probe.is_some() {
                self.fast_run::<true>(cs, i)
            } else {
                self.fast_run::<false>(cs, i)
            };
            i = next;
            if let Some(c) = cs.get(i) {
                match room {
                    Some(line) => self.access_without_room(c, line),
                    None => self.command_slow(c).map_err(|e| (i, e))?,
                }
                i += 1;
                if std::mem::take(&mut self.su_stop) {
                    return Ok(i);
                }
            }
        }
        Ok(i)
    }

    /// The errors [`Board::command`] gives for a command at `cycle`.
    fn check_tick(&self, cycle: u64) -> Result<(), BoardError> {
        if self.finished {
            return Err(BoardError::Finished);
        }
        if cycle < self.cur {
            return Err(BoardError::CycleDecreased {
                cycle,
                current: self.cur,
            });
        }
        if cycle - self.cur > MAX_COMMAND_GAP {
            return Err(BoardError::GapTooLong {
                cycle,
                current: self.cur,
            });
        }
        Ok(())
    }

    /// Any command, the general way.
    #[inline(never)]
    fn command_slow(&mut self, c: &Command) -> Result<(), BoardError> {
        if c.cycle != self.cur || self.finished {
            self.enter_tick(c.cycle)?;
        }
        self.counters.commands += 1;
        self.counters.per_kind[kind_index(c.cmd)] += 1;
        self.counters.last_command_tick = c.cycle;
        match self.dsmu.command(c) {
            DsmuOutcome::Accepted => {}
            DsmuOutcome::Reference(r) => self.reference(&r),
            DsmuOutcome::ReferenceAfterPrecharge(r) => {
                self.counters.references_after_precharge += 1;
                self.reference(&r);
            }
            DsmuOutcome::ProtocolError => self.counters.protocol_errors += 1,
            DsmuOutcome::OutOfRange => self.counters.out_of_range += 1,
            DsmuOutcome::Unknown => self.counters.unknown_commands += 1,
        }
        self.counters.words_pushed = self.fifo.pushed();
        Ok(())
    }

    fn enter_tick(&mut self, cycle: u64) -> Result<(), BoardError> {
        self.check_tick(cycle)?;
        if cycle > self.next_event {
            self.run_until(cycle);
        } else {
            self.cur = cycle;
        }
        Ok(())
    }

    /// Runs every clock before the clock of `tick` and the keeper of that
    /// clock (no commands in between), so that commands at `tick` can be
    /// taken. Also useful to let time pass without commands.
    pub fn advance_to(&mut self, tick: u64) -> Result<(), BoardError> {
        if self.finished {
            return Err(BoardError::Finished);
        }
        if tick < self.cur {
            return Err(BoardError::CycleDecreased {
                cycle: tick,
                current: self.cur,
            });
        }
        if tick - self.cur > MAX_COMMAND_GAP {
            return Err(BoardError::GapTooLong {
                cycle: tick,
                current: self.cur,
            });
        }
        self.run_until(tick);
        self.catch_up();
        let flags = self.flags;
        if let Some(su) = self.su.as_deref_mut() {
            su.advance(tick, flags);
        }
        Ok(())
    }

    /// End of the stream (board.md "End of a stream"): the board goes on
    /// clocking with no commands (drain, idle flush and keeper as always)
    /// until every word pushed so far has been popped and the packet holding
    /// the last of them has closed. Keeper fillers pushed after that are
    /// not modelled. A lost count still pending stays pending
    /// (`counters().lost_pending`): no event comes to carry it. Idempotent.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        let start = self.cur;
        let target = self.fifo.pushed();
        loop {
            let keeper = self.keeper_clock();
            if self.take_until(keeper, Some(target)) {
                break;
            }
            if keeper == u64::MAX {
                // Only reachable at the very end of u64 time.
                if self.packetizer.is_open() {
                    self.packetizer
                        .close(u64::MAX, self.flags, CloseReason::IdleFlush);
                }
                break;
            }
            self.keeper_step(keeper);
        }
        // Leave the clock at the last pop's idle flush.
        let flush = self
            .packetizer
            .last_pop_clock()
            .saturating_add(self.packetizer.idle_flush_clocks());
        self.cur = start.max(flush.saturating_mul(1 << self.shift));
        self.fifo.settle();
        self.fifo.advance(self.cur_clock());
        self.sync_packet_counters();
        let flags = self.flags;
        if let Some(su) = self.su.as_deref_mut() {
            su.finish(flags);
        }
        self.sync_statistics_counters();
        self.finished = true;
    }

    /// Moves the packets closed so far (before the current clock) to
    /// `out`, in `seq` order.
    pub fn drain_packets(&mut self, out: &mut Vec<BoardPacket>) {
        self.catch_up();
        self.packetizer.drain_packets(out);
    }

    /// Moves the statistics packets (format.md §5.3) sent so far to `out`,
    /// in their own `seq` order; none without a Statistic Unit.
    pub fn drain_statistics(&mut self, out: &mut Vec<BoardPacket>) {
        self.sync_statistics_counters();
        if let Some(su) = self.su.as_deref_mut() {
            su.drain_packets(out);
        }
    }

    fn sync_statistics_counters(&mut self) {
        if let Some(su) = self.su.as_deref() {
            self.counters.statistics = Some(su.counters().clone());
        }
    }
}

/// Runs a whole stream: every command, then [`Board::finish`]. Returns the
/// packets in `seq` order and the counters.
pub fn run_commands(
    cfg: BoardConfig,
    commands: impl IntoIterator<Item = Command>,
) -> Result<(Vec<BoardPacket>, BoardCounters), BoardError> {
    let mut board = Board::new(cfg)?;
    let mut packets = Vec::new();
    for c in commands {
        board.command(&c)?;
    }
    board.finish();
    board.drain_packets(&mut packets);
    Ok((packets, board.counters().clone()))
}

/// [`run_commands`] with the statistics packets too (none without a
/// Statistic Unit): trace packets, statistics packets, counters.
pub fn run_commands_with_statistics(
    cfg: BoardConfig,
    commands: &[Command],
) -> Result<(Vec<BoardPacket>, Vec<BoardPacket>, BoardCounters), BoardError> {
    let mut board = Board::new(cfg)?;
    let mut packets = Vec::new();
    let mut statistics = Vec::new();
    board.commands(commands)?;
    board.finish();
    board.drain_packets(&mut packets);
    board.drain_statistics(&mut statistics);
    Ok((packets, statistics, board.counters().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;
    use hmtt_format::record::KEEPER_GAP;

    #[test]
    fn the_first_keeper_clock_is_the_first_at_least_keeper_gap_after_reset() {
        for lanes in [1u32, 2, 4, 8] {
            let b = Board::new(BoardConfig::new(Geometry::ddr3_default()).with_lanes(lanes, 1))
                .unwrap();
            let clock = b.keeper_clock();
            assert!(clock * u64::from(lanes) >= KEEPER_GAP);
            assert!((clock - 1) * u64::from(lanes) < KEEPER_GAP);
            assert_eq!(b.next_event, clock * u64::from(lanes) - 1);
        }
    }
}
