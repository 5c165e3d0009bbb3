//! The board's golden model: DDR commands in, the exact packets the FPGA
//! sends out (`docs/board.md`, `docs/format.md` §4–§6).
//!
//! The boxes are those of the hardware: the DSMU ([`dsmu`]) turns ACT and
//! RD/WR into line references, the config unit ([`cu`]) turns references
//! into ACCESS/TAG/CMD events according to the mode, the encoder
//! (`hmtt_format::record::EventEncoder`) turns events into words pushed
//! atomically into the TX FIFO ([`fifo`]), a rational rate limiter drains the
//! FIFO and the packetizer ([`packetizer`]) cuts the words into packets.
//!
//! Time is in ticks (DDR command clocks). Idle ticks are never stepped one by
//! one: each word's pop tick is a function of the push ticks (the FIFO is
//! first in, first out, and the limiter pops at `max(push, the tick its
//! credit reaches den)`), worked out in batches by [`TxFifo::settle`]; the
//! packetizer takes the popped words in batches, and the keeper's next
//! filler is due `KEEPER_GAP` ticks after the encoder's `last`; so the cost
//! is per command and per word, not per tick.
//!
//! [`Board::commands`] takes the common commands (RD/WR to an open row
//! outside the config window, ACT, PRE, REF/MRS/ZQ/NOP, no keeper due) on a
//! fast path with its state in locals; pushes there store a word and its
//! tick without looking at the FIFO as long as a bound on its fill level
//! (the words popped when it was last looked at) leaves room, and a full
//! FIFO drops events without looking until its next pop. Everything else
//! takes the general path, which looks at the FIFO on every event.
//!
//! ```
//! use hmtt_format::{Command, DdrCmd, Geometry};
//! use hmtt_sim::board::{Board, BoardConfig};
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

pub mod cu;
pub mod dsmu;
pub mod fifo;
pub mod output;
pub mod packetizer;

use std::collections::BTreeMap;

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::{ConfigWindow, WindowError};
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::MAX_WORDS_JUMBO;
use hmtt_format::record::{
    BoardEvent, EventEncoder, Opcode, RecordWord, KEEPER_GAP, LINE_LO_MASK, PAYLOAD_MAX, TIME_UNIT,
};

pub use cu::{ConfigUnit, CuOutcome, Mode};
pub use dsmu::{Dsmu, DsmuOutcome, Reference};
pub use fifo::{Pusher, TxFifo};
pub use packetizer::{BoardPacket, CloseReason, Packetizer, PacketizerCounters};

/// Smallest TX FIFO depth accepted (board.md "Defaults").
pub const MIN_FIFO_DEPTH: usize = 8;
/// Default TX FIFO depth in words.
pub const DEFAULT_FIFO_DEPTH: usize = 16384;
/// Default number of Ethernet ports.
pub const DEFAULT_PORTS: u8 = 3;
/// Default words per packet (1500-byte MTU).
pub const DEFAULT_MAX_WORDS: usize = 360;
/// Default idle flush in ticks.
pub const DEFAULT_IDLE_FLUSH_TICKS: u64 = 65536;
/// Default tick length: DDR3-1600.
pub const DEFAULT_TICK_PS: u16 = 1250;
/// Default config space: the top 8 MiB.
pub const DEFAULT_CONFIG_BYTES: u64 = 8 << 20;
/// Bytes on the wire per frame besides the words: 32 header, 8 UDP, 20 IPv4,
/// 14 Ethernet, 4 FCS, 8 preamble/SFD, 12 IFG.
pub const FRAME_OVERHEAD_BYTES: u64 = 98;

/// The drain's rate limiter: `num / den` words per tick, `0 < num < den`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DrainRate {
    pub num: u64,
    pub den: u64,
}

impl DrainRate {
    /// The ports' payload rate (board.md "Drain rate"): `ports` Gigabit
    /// Ethernet ports, `max_words` words per frame.
    pub fn line_rate(ports: u8, max_words: usize, tick_ps: u16) -> DrainRate {
        DrainRate {
            num: u64::from(ports) * max_words as u64 * u64::from(tick_ps),
            den: (4 * max_words as u64 + FRAME_OVERHEAD_BYTES) * 8000,
        }
    }

    /// Words per tick.
    pub fn words_per_tick(&self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

/// Everything the board is built with (board.md "Defaults").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardConfig {
    pub geometry: Geometry,
    pub board_id: u8,
    /// Ethernet ports the packets are dealt to, 1..=255.
    pub ports: u8,
    /// TX FIFO depth in words, at least [`MIN_FIFO_DEPTH`] (8).
    pub fifo_depth: usize,
    /// Words per packet, 2..=2235, the injected LINE_HI included.
    pub max_words: usize,
    /// Ticks without a pop after which an open packet closes, >= 1.
    pub idle_flush_ticks: u64,
    /// Drain rate. [`BoardConfig::new`] and [`BoardConfig::with_ports`] set
    /// it to the line rate of the ports; set it by hand for anything else.
    pub drain: DrainRate,
    /// Length of a tick in picoseconds (packet header), > 0.
    pub tick_ps: u16,
    pub window: ConfigWindow,
    /// Mode at reset: tracing on.
    pub start_tracing: bool,
    /// Mode at reset: tags-only.
    pub start_tags_only: bool,
}

impl BoardConfig {
    /// The defaults of board.md for `geometry`. The config window is the top
    /// 8 MiB under the linear mapping; a geometry whose last rank is smaller
    /// than 8 MiB gets the top sixteenth of that rank's rows instead.
    pub fn new(geometry: Geometry) -> BoardConfig {
        BoardConfig {
            geometry,
            board_id: 0,
            ports: DEFAULT_PORTS,
            fifo_depth: DEFAULT_FIFO_DEPTH,
            max_words: DEFAULT_MAX_WORDS,
            idle_flush_ticks: DEFAULT_IDLE_FLUSH_TICKS,
            drain: DrainRate::line_rate(DEFAULT_PORTS, DEFAULT_MAX_WORDS, DEFAULT_TICK_PS),
            tick_ps: DEFAULT_TICK_PS,
            window: default_window(&geometry),
            start_tracing: true,
            start_tags_only: false,
        }
    }

    /// Sets the number of ports and the drain to their line rate.
    pub fn with_ports(mut self, ports: u8) -> BoardConfig {
        self.ports = ports;
        self.set_line_rate();
        self
    }

    /// Sets the drain to the line rate of `ports`, `max_words`, `tick_ps`.
    pub fn set_line_rate(&mut self) {
        self.drain = DrainRate::line_rate(self.ports, self.max_words, self.tick_ps);
    }

    /// Checks every parameter; the board refuses an invalid configuration.
    pub fn validate(&self) -> Result<(), BoardError> {
        let bad = |what: String| Err(BoardError::InvalidConfig(what));
        if self.ports == 0 {
            return bad("ports must be at least 1".into());
        }
        if self.fifo_depth < MIN_FIFO_DEPTH {
            return bad(format!(
                "fifo_depth {} is below {MIN_FIFO_DEPTH}",
                self.fifo_depth
            ));
        }
        if self.fifo_depth > 1 << 30 {
            return bad(format!("fifo_depth {} is absurdly large", self.fifo_depth));
        }
        if !(2..=MAX_WORDS_JUMBO).contains(&self.max_words) {
            return bad(format!(
                "max_words {} is outside 2..={MAX_WORDS_JUMBO}",
                self.max_words
            ));
        }
        if self.idle_flush_ticks == 0 {
            return bad("idle_flush_ticks must be at least 1".into());
        }
        if self.tick_ps == 0 {
            return bad("tick_ps must be at least 1".into());
        }
        let DrainRate { num, den } = self.drain;
        if num == 0 || num >= den || den >= 1 << 62 {
            return bad(format!(
                "drain rate {num}/{den} must satisfy 0 < num < den < 2^62 (at most one word per tick)"
            ));
        }
        ConfigWindow::new(
            &self.geometry,
            self.window.rank,
            self.window.row_first,
            self.window.row_count,
        )?;
        Ok(())
    }
}

/// The default config window of a geometry (see [`BoardConfig::new`]).
pub fn default_window(g: &Geometry) -> ConfigWindow {
    ConfigWindow::top_of_memory(g, DEFAULT_CONFIG_BYTES).unwrap_or_else(|_| {
        let rows = (g.rows() / 16).max(1);
        ConfigWindow::new(g, g.ranks() - 1, g.rows() - rows, rows)
            .or_else(|_| ConfigWindow::new(g, g.ranks() - 1, g.rows() - 1, 1))
            .expect("one row of the last rank is always a valid window")
    })
}

/// Why the board refused something.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("invalid board configuration: {0}")]
    InvalidConfig(String),
    #[error("invalid config window: {0}")]
    Window(#[from] WindowError),
    #[error("command at cycle {cycle} is before the board's current tick {current}")]
    CycleDecreased { cycle: u64, current: u64 },
    #[error("command after the end of the stream (finish was called)")]
    Finished,
}

/// Counters (board.md "Counters"); reported, never fatal.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BoardCounters {
    /// Commands seen, every kind.
    pub commands: u64,
    /// Per mnemonic, in `DdrCmd::ALL` order.
    #[serde(serialize_with = "per_kind_map")]
    pub per_kind: [u64; 12],
    /// RD/WR with no row opened since reset.
    pub protocol_errors: u64,
    /// RD/WR to a bank precharged since its last ACT (reference still
    /// emitted with the last row; a legal stream never does this).
    pub references_after_precharge: u64,
    /// ACT/RD/WR whose rank, bank, row or column does not fit the geometry.
    pub out_of_range: u64,
    /// Unknown mnemonics.
    pub unknown_commands: u64,
    /// RD/WR that yielded a line reference.
    pub references: u64,
    /// References inside the config window.
    pub config_events: u64,
    /// Inner commands executed, by index (0..=63).
    pub inner_commands: u64,
    /// Events offered to the encoder: ACCESS, TAG, CMD.
    pub events: u64,
    pub access_events: u64,
    pub tag_events: u64,
    pub cmd_events: u64,
    /// References not recorded because of the mode.
    pub suppressed: u64,
    /// Events dropped because the FIFO had no room (each counted in LOST).
    pub events_dropped: u64,
    /// LOST words pushed.
    pub lost_words: u64,
    /// Sum of the LOST words' counts.
    pub lost_reported: u64,
    /// Dropped events not yet reported by a LOST word.
    pub lost_pending: u64,
    /// Keeper filler TIME words pushed (one per `KEEPER_GAP` ticks without
    /// a push, format.md §4.1).
    pub time_fillers: u64,
    /// Events whose gap needed two TIME words (the keeper found the FIFO
    /// full): dropped, and counted in `events_dropped` too.
    pub time_overflows: u64,
    /// Words pushed into / popped from the TX FIFO.
    pub words_pushed: u64,
    pub words_popped: u64,
    /// Highest FIFO fill level.
    pub fifo_high_water: u64,
    /// Packets closed and the words in them (injected LINE_HI included).
    pub packets: u64,
    pub packet_words: u64,
    pub injected_line_hi: u64,
    pub packets_closed_full: u64,
    pub packets_closed_sync: u64,
    pub packets_closed_idle: u64,
    /// Tick of the last command seen.
    pub last_command_tick: u64,
}

fn per_kind_map<S: serde::Serializer>(v: &[u64; 12], s: S) -> Result<S::Ok, S::Error> {
    let m: BTreeMap<&str, u64> = DdrCmd::ALL
        .iter()
        .zip(v)
        .map(|(c, n)| (c.mnemonic(), *n))
        .collect();
    serde::Serialize::serialize(&m, s)
}

/// Index of a mnemonic in `DdrCmd::ALL` / `BoardCounters::per_kind`.
#[inline]
pub fn kind_index(c: DdrCmd) -> usize {
    match c {
        DdrCmd::Act => 0,
        DdrCmd::Rd => 1,
        DdrCmd::Wr => 2,
        DdrCmd::Rda => 3,
        DdrCmd::Wra => 4,
        DdrCmd::Pre => 5,
        DdrCmd::Prea => 6,
        DdrCmd::Ref => 7,
        DdrCmd::Mrs => 8,
        DdrCmd::Zq => 9,
        DdrCmd::Nop => 10,
        DdrCmd::Unknown => 11,
    }
}

impl BoardCounters {
    /// Count of one mnemonic.
    pub fn kind(&self, c: DdrCmd) -> u64 {
        self.per_kind[kind_index(c)]
    }
}

/// What the co-simulation probe saw (see [`Board::enable_probe`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Every word pushed into the FIFO, with the tick of its push (step 1).
    pub pushed: Vec<(u64, RecordWord)>,
    /// Every word popped, with the tick of its pop (step 2).
    pub popped: Vec<(u64, RecordWord)>,
}

/// One tick in which something happened to the FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TickActivity {
    pub tick: u64,
    /// Words pushed at this tick.
    pub pushed: u32,
    /// Whether a word was popped at this tick.
    pub popped: bool,
    /// Fill level after the tick (after its pushes and its pop).
    pub level: u32,
}

impl Probe {
    /// The ticks with pushes or a pop, in order, with the fill level after
    /// each. Ticks not listed leave the level unchanged.
    pub fn activity(&self) -> Vec<TickActivity> {
        let mut out: Vec<TickActivity> = Vec::new();
        let (mut i, mut j) = (0, 0);
        let mut level = 0u32;
        while i < self.pushed.len() || j < self.popped.len() {
            let tp = self.pushed.get(i).map_or(u64::MAX, |p| p.0);
            let tq = self.popped.get(j).map_or(u64::MAX, |p| p.0);
            let tick = tp.min(tq);
            let mut a = TickActivity {
                tick,
                pushed: 0,
                popped: false,
                level,
            };
            while i < self.pushed.len() && self.pushed[i].0 == tick {
                a.pushed += 1;
                i += 1;
            }
            if j < self.popped.len() && self.popped[j].0 == tick {
                a.popped = true;
                j += 1;
            }
            level = level + a.pushed - u32::from(a.popped);
            a.level = level;
            out.push(a);
        }
        out
    }

    /// The fill level after every tick of `first..=last`.
    pub fn levels(&self, first: u64, last: u64) -> Vec<u32> {
        let act = self.activity();
        let mut out = Vec::with_capacity((last.saturating_sub(first) + 1) as usize);
        let mut k = 0;
        let mut level = 0;
        for t in first..=last {
            while k < act.len() && act[k].tick <= t {
                level = act[k].level;
                k += 1;
            }
            out.push(level);
        }
        out
    }
}

/// The board. Feed it commands in stream order with [`Board::command`] or,
/// faster, [`Board::commands`], end the stream with [`Board::finish`],
/// collect packets with [`Board::drain_packets`] at any time.
#[derive(Debug, Clone)]
pub struct Board {
    cfg: BoardConfig,
    dsmu: Dsmu,
    cu: ConfigUnit,
    encoder: EventEncoder,
    fifo: TxFifo,
    packetizer: Packetizer,
    /// The tick whose commands are being taken; steps 2 and 3 of every
    /// earlier tick are due (the pops follow from the pushes, the
    /// packetizer takes them lazily), those of `cur` are not.
    cur: u64,
    /// Header flags of the current mode.
    flags: u8,
    fifo_depth: usize,
    /// An event of the current tick whose words all end before this FIFO
    /// position fits, in the FIFO (the words popped by the last look at it
    /// are a lower bound of those popped now) and in the ring. 0 while a
    /// lost count is pending: its LOST goes first, on the slow path.
    push_limit: u64,
    /// Every event at a tick before this one is dropped for lack of room:
    /// the FIFO is full, or has one word of room while every event needs
    /// two, until its next pop. 0 when not known.
    drop_before: u64,
    /// A command at a tick after this one needs `run_until` first: the tick
    /// before the keeper is due.
    next_event: u64,
    /// The keeper, blocked by a full FIFO or already run at a tick, tries
    /// again at this tick at the earliest.
    keeper_retry: u64,
    lost: u64,
    finished: bool,
    counters: BoardCounters,
    probe: Option<Box<Probe>>,
}

/// Words pushed on the fast path between two looks at the FIFO (settle,
/// advance, the packetizer's turn): small enough that the words are
/// still in the caches when they are settled and packed.
const TAKE_BATCH: u64 = 4096;

/// `DdrCmd` discriminants (the `DdrCmd::ALL` order) for the fast path.
const KIND_ACT: usize = 0;
const KIND_PRE: usize = 5;
const KIND_REF: usize = 7;
const KIND_NOP: usize = 10;
/// The W bit of an ACCESS word, by kind: WR and WRA.
const WRITE_BIT: [u32; 12] = [0, 0, 1 << 24, 0, 1 << 24, 0, 0, 0, 0, 0, 0, 0];

/// The words of an ACCESS event at gap `gap` (< [`KEEPER_GAP`]) from the
/// encoder's `last`, with stream LINE_HI `hi`, for [`TxFifo::push_event`]:
/// the TIME word (if `gap >= 64`), the LINE_HI word (if the line's high
/// bits differ from `hi`), the ACCESS word; the two skips say which are
/// there. Exactly `EventEncoder::encode`, without branches.
#[inline(always)]
fn access_words(gap: u64, line: u64, write_bit: u32, hi: u32) -> ([u32; 3], u64, u64, u32) {
    const K_BIT: u32 = 1 << 25;
    const LINE_HI_OP: u32 = 1 << 21;
    debug_assert!(gap < KEEPER_GAP);
    let time = u64::from(gap >= TIME_UNIT);
    let line_hi = (line >> 24) as u32;
    let new_hi = u64::from(line_hi != hi);
    let dt = (gap % TIME_UNIT) as u32;
    let time_word = K_BIT | (gap / TIME_UNIT) as u32;
    let hi_word = (dt << 26) | K_BIT | LINE_HI_OP | (line_hi & PAYLOAD_MAX);
    // The dt goes to the first word after TIME: LINE_HI if there is one.
    let access_dt = dt & (new_hi as u32).wrapping_sub(1);
    let access_word = (access_dt << 26) | write_bit | (line & LINE_LO_MASK) as u32;
    ([time_word, hi_word, access_word], time, new_hi, line_hi)
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
            cu: ConfigUnit::new(&g, cfg.window, mode),
            encoder: EventEncoder::default(),
            fifo: TxFifo::new(cfg.fifo_depth, num, den),
            packetizer: Packetizer::new(
                g,
                cfg.board_id,
                cfg.tick_ps,
                cfg.ports,
                cfg.max_words,
                cfg.idle_flush_ticks,
            ),
            cur: 0,
            flags: mode.header_flags(),
            fifo_depth: cfg.fifo_depth,
            push_limit: 0,
            drop_before: 0,
            next_event: KEEPER_GAP - 1,
            keeper_retry: 0,
            lost: 0,
            finished: false,
            counters: BoardCounters::default(),
            probe: None,
            cfg,
        };
        board.refresh_push_limit();
        Ok(board)
    }

    pub fn config(&self) -> &BoardConfig {
        &self.cfg
    }

    /// Records every FIFO push and pop with its tick from now on, for
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

    /// Takes what the probe recorded so far (pops up to the current tick).
    pub fn take_probe(&mut self) -> Option<Probe> {
        self.catch_up();
        self.probe.as_mut().map(|p| std::mem::take(&mut **p))
    }

    /// The tick whose commands are being taken (its drain is still to come).
    pub fn current_tick(&self) -> u64 {
        self.cur
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.cu.mode()
    }

    /// Words in the TX FIFO now: after the pushes of the current tick, before
    /// its pop.
    pub fn fifo_level(&self) -> usize {
        self.fifo.len_at(self.cur)
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
                    None => self.command_slow(c)?,
                }
                i += 1;
            }
        }
        Ok(())
    }

    /// The common commands, from `cs[from]` on, until one needs the slow
    /// path (returns its index, nothing done for it): a tick that needs
    /// the keeper or goes back, an RD/WR out of range, to a bank without an
    /// open row or inside the config window, an event that may not fit,
    /// ACT out of range, PREA and unknown commands. Everything it does is
    /// what the slow path would do; the state lives in locals meanwhile.
    /// `PROBE`: the probe is on. With the index, the line of an RD/WR
    /// that stopped it only because its event may not fit.
    #[inline(never)]
    fn fast_run<const PROBE: bool>(&mut self, cs: &[Command], from: usize) -> (usize, Option<u64>) {
        if self.finished {
            return (from, None);
        }
        let mut cur = self.cur;
        let mut enc = self.encoder;
        let push_limit = self.push_limit;
        let drop_before = self.drop_before;
        let (first_line, window_lines) = self.cu.window_range();
        let record_access = self.cu.mode().records_accesses();
        let mut dsmu = self.dsmu.view();
        let mut fifo = self.fifo.pusher();
        let per_kind = &mut self.counters.per_kind;
        // RD/WR taken: each is an ACCESS event (pushed or dropped) or
        // suppressed by the mode, which does not change on this path.
        let mut columns = 0u64;
        let mut dropped = 0u64;
        let mut no_room = None;
        let mut rest = cs[from..].iter();
        while let Some(c) = rest.as_slice().first() {
            let t = c.cycle;
            // No keeper is due up to `t`: the keeper needs a gap of
            // KEEPER_GAP from the last push (and then t - last < GAP_TOO_LONG
            // for the encoder).
            if (t < cur) | (t - enc.last >= KEEPER_GAP) {
                break;
            }
            let k = c.cmd as usize;
            if k.wrapping_sub(1) < 4 {
                // RD, WR, RDA, WRA.
                let Some(line) = dsmu.column_line(c.rank, c.bank, c.arg) else {
                    break;
                };
                if line.wrapping_sub(first_line) < window_lines {
                    break;
                }
                if record_access {
                    if fifo.pushed() + 3 <= push_limit {
                        let (words, time, new_hi, hi) =
                            access_words(t - enc.last, line, WRITE_BIT[k], enc.hi);
                        let start = fifo.pushed();
                        fifo.push_event(words, time, new_hi, t);
                        enc = EventEncoder { last: t, hi };
                        if PROBE {
                            if let Some(p) = self.probe.as_deref_mut() {
                                p.pushed.extend(
                                    (start..fifo.pushed()).map(|i| (t, RecordWord(fifo.word(i)))),
                                );
                            }
                        }
                    } else if t < drop_before {
                        dropped += 1;
                    } else {
                        no_room = Some(line);
                        break;
                    }
                }
                columns += 1;
            } else if k == KIND_ACT {
                if !dsmu.activate(c.rank, c.bank, c.arg) {
                    break;
                }
            } else if k == KIND_PRE {
                dsmu.precharge(c.rank, c.bank);
            } else if !(KIND_REF..=KIND_NOP).contains(&k) {
                // PREA and unknown commands.
                break;
            }
            per_kind[k] += 1;
            cur = t;
            rest.next();
        }
        let i = cs.len() - rest.as_slice().len();
        drop(fifo);
        if i > from {
            self.cur = cur;
            self.encoder = enc;
            let n = &mut self.counters;
            n.commands += (i - from) as u64;
            n.last_command_tick = cur;
            if columns > 0 {
                n.references += columns;
                if record_access {
                    n.access_events += columns;
                    n.events += columns;
                } else {
                    n.suppressed += columns;
                }
            }
            if dropped > 0 {
                n.events_dropped += dropped;
                self.lost += dropped;
                n.lost_pending = self.lost;
            }
            n.words_pushed = self.fifo.pushed();
        }
        (i, no_room)
    }

    /// An RD/WR that `fast_run` left because its ACCESS event may not fit:
    /// the tick needs no keeper, the line is outside the window, the mode
    /// records accesses.
    #[inline(never)]
    fn access_without_room(&mut self, c: &Command, line: u64) {
        debug_assert!(c.cycle >= self.cur && c.cycle - self.encoder.last < KEEPER_GAP);
        self.cur = c.cycle;
        let n = &mut self.counters;
        n.commands += 1;
        n.per_kind[kind_index(c.cmd)] += 1;
        n.last_command_tick = c.cycle;
        n.references += 1;
        n.access_events += 1;
        n.events += 1;
        self.record(BoardEvent::Access {
            line,
            write: c.cmd.is_write(),
        });
        self.counters.words_pushed = self.fifo.pushed();
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
        if self.finished {
            return Err(BoardError::Finished);
        }
        if cycle < self.cur {
            return Err(BoardError::CycleDecreased {
                cycle,
                current: self.cur,
            });
        }
        if cycle > self.next_event {
            self.run_until(cycle);
        } else {
            self.cur = cycle;
        }
        Ok(())
    }

    /// Runs steps 2 and 3 of every tick before `tick` (no commands in
    /// between), so that commands at `tick` can be taken. Also useful to let
    /// time pass without commands.
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
        self.run_until(tick);
        self.catch_up();
        Ok(())
    }

    /// End of the stream (board.md "End of a stream"): the board goes on
    /// ticking with no commands (drain, idle flush and keeper as always)
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
            let keeper = self.keeper_tick();
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
        self.sync_packet_counters();
        // Leave the clock at the last thing that happened.
        let last_pop = self.packetizer.last_pop_tick();
        self.cur = start.max(last_pop.saturating_add(self.cfg.idle_flush_ticks));
        self.fifo.settle();
        self.fifo.advance(self.cur);
        self.sync_packet_counters();
        self.finished = true;
    }

    /// Moves the packets closed so far (before the current tick) to `out`,
    /// in `seq` order.
    pub fn drain_packets(&mut self, out: &mut Vec<BoardPacket>) {
        self.catch_up();
        self.packetizer.drain_packets(out);
    }

    /// A reference from the DSMU at the current tick.
    fn reference(&mut self, r: &Reference) {
        self.counters.references += 1;
        let ev = match self.cu.reference(r) {
            CuOutcome::Access(ev) => {
                self.counters.access_events += 1;
                ev
            }
            CuOutcome::AccessSuppressed => {
                self.counters.suppressed += 1;
                return;
            }
            other => match self.config_event(other) {
                Some(ev) => ev,
                None => return,
            },
        };
        self.counters.events += 1;
        self.record(ev);
    }

    /// Counters of a reference inside the config window; its event, if any.
    fn config_event(&mut self, outcome: CuOutcome) -> Option<BoardEvent> {
        self.counters.config_events += 1;
        match outcome {
            CuOutcome::Tag(ev) => {
                self.counters.tag_events += 1;
                Some(ev)
            }
            CuOutcome::Inner(_, ev) => {
                self.counters.inner_commands += 1;
                self.counters.cmd_events += 1;
                let flags = self.cu.mode().header_flags();
                if flags != self.flags {
                    // Packets closing before this tick carry the old mode.
                    self.take_until(self.cur, None);
                    self.flags = flags;
                }
                Some(ev)
            }
            CuOutcome::TagSuppressed => {
                self.counters.suppressed += 1;
                None
            }
            CuOutcome::Access(_) | CuOutcome::AccessSuppressed => None,
        }
    }

    /// Encoder step for one event (format.md §4.1): the pending LOST first,
    /// then the event, each pushed atomically. The keeper of this tick has
    /// already run (`run_until`).
    fn record(&mut self, ev: BoardEvent) {
        let t = self.cur;
        if self.prepare_push(t) == self.fifo_depth {
            // No room for LOST nor the event: both need a word at least.
            self.drop_event(t);
        } else {
            if self.lost > 0 {
                let count = self.lost.min(u64::from(PAYLOAD_MAX)) as u32;
                if self.try_push_lost(t, count) {
                    self.lost -= u64::from(count);
                    self.counters.lost_words += 1;
                    self.counters.lost_reported += u64::from(count);
                }
            }
            if !self.try_push(t, ev) {
                self.drop_event(t);
            }
            self.counters.lost_pending = self.lost;
        }
        self.refresh_push_limit();
        // While the FIFO stays this full, the events of the fast path are
        // dropped without looking: none fits before the next pop.
        self.drop_before = 0;
        if self.lost > 0 {
            let room = self.fifo_depth - self.fifo.len();
            if room == 0 || (room == 1 && t - self.encoder.last >= TIME_UNIT) {
                if self.fifo.front() >= self.fifo.settled() {
                    self.fifo.settle();
                }
                self.drop_before = self.fifo.front_pop_tick().saturating_add(1);
            }
        }
    }

    /// An event found no room (or its gap needs two TIME words).
    fn drop_event(&mut self, t: u64) {
        self.lost += 1;
        self.counters.events_dropped += 1;
        if self.encoder.gap_too_long(t) {
            self.counters.time_overflows += 1;
        }
        self.counters.lost_pending = self.lost;
    }

    /// Pushes the words of `ev` at tick `t` if they all fit
    /// (`prepare_push(t)` done).
    fn try_push(&mut self, t: u64, ev: BoardEvent) -> bool {
        if let BoardEvent::Access { line, write } = ev {
            if t - self.encoder.last < KEEPER_GAP {
                let (words, time, new_hi, hi) = access_words(
                    t - self.encoder.last,
                    line,
                    if write { 1 << 24 } else { 0 },
                    self.encoder.hi,
                );
                return self.try_push_words(t, words, time, new_hi, hi);
            }
        }
        // None: the gap needs two TIME words (the keeper was blocked).
        let Some(e) = self.encoder.encode(t, ev) else {
            return false;
        };
        if self.fifo.len() + e.len() > self.fifo_depth {
            return false;
        }
        for w in e.words() {
            self.fifo.push(w.0, t);
        }
        if let Some(p) = self.probe.as_deref_mut() {
            p.pushed.extend(e.words().iter().map(|&w| (t, w)));
        }
        self.encoder = e.next;
        true
    }

    /// `try_push` of a LOST event.
    fn try_push_lost(&mut self, t: u64, count: u32) -> bool {
        let gap = t - self.encoder.last;
        if gap >= KEEPER_GAP {
            return self.try_push(t, BoardEvent::Lost { count });
        }
        // As `EventEncoder::encode`: a TIME word if the gap is 64 or more,
        // the LOST word with the rest of the gap.
        let time_word = RecordWord::control_unchecked(0, Opcode::Time, (gap / TIME_UNIT) as u32);
        let lost = RecordWord::control_unchecked(
            (gap % TIME_UNIT) as u32,
            Opcode::Lost,
            count.min(PAYLOAD_MAX),
        );
        let hi = self.encoder.hi;
        self.try_push_words(
            t,
            [time_word.0, lost.0, lost.0],
            u64::from(gap >= TIME_UNIT),
            0,
            hi,
        )
    }

    /// Pushes the words of one event (as [`Pusher::push_event`] takes
    /// them) at tick `t` if they fit; the encoder's LINE_HI becomes `hi`.
    fn try_push_words(&mut self, t: u64, words: [u32; 3], skip1: u64, skip2: u64, hi: u32) -> bool {
        let len = 1 + skip1 + skip2;
        if self.fifo.len() as u64 + len > self.fifo_depth as u64 {
            return false;
        }
        let start = self.fifo.pushed();
        self.fifo.pusher().push_event(words, skip1, skip2, t);
        if let Some(p) = self.probe.as_deref_mut() {
            let f = &self.fifo;
            p.pushed
                .extend((start..f.pushed()).map(|i| (t, RecordWord(f.word(i)))));
        }
        self.encoder = EventEncoder { last: t, hi };
        true
    }

    /// Before pushes at tick `t`: the pops before `t` leave the FIFO, the
    /// packetizer catches up if the ring is short of room. Returns the
    /// fill level.
    fn prepare_push(&mut self, t: u64) -> usize {
        self.fifo.settle();
        self.fifo.advance(t);
        // Room in the ring for what may follow: a LOST and an event, their
        // last three slots written in any case.
        if self.fifo.pushed() + 8 > self.fifo.consumed() + self.fifo.capacity()
            || self.fifo.front() - self.fifo.consumed() >= TAKE_BATCH / 2
        {
            self.take_until(t, None);
        }
        self.fifo.len()
    }

    /// The fast path's bound (see `push_limit`).
    fn refresh_push_limit(&mut self) {
        self.push_limit = if self.lost > 0 {
            0
        } else {
            let room = self.fifo.front() + self.fifo_depth as u64;
            room.min(self.fifo.consumed() + self.fifo.capacity())
                .min(self.fifo.pushed() + TAKE_BATCH)
        };
    }

    /// The tick at which the keeper runs next (always after `cur` once the
    /// keeper of `cur` has run).
    #[inline]
    fn keeper_tick(&self) -> u64 {
        self.encoder.keeper_tick().max(self.keeper_retry)
    }

    /// The keeper at the start of tick `k` (step 1, before the tick's
    /// events): a filler TIME word if the FIFO has room.
    fn keeper_step(&mut self, k: u64) {
        self.keeper_retry = k.saturating_add(1);
        if self.prepare_push(k) >= self.fifo_depth {
            // Full at the start of tick k: the next pop (at k or later) is
            // the first chance of room.
            self.keeper_retry = self.fifo.front_pop_tick().saturating_add(1);
            return;
        }
        let Some((w, next)) = self.encoder.time_filler(k) else {
            return;
        };
        self.fifo.push(w.0, k);
        if let Some(p) = self.probe.as_deref_mut() {
            p.pushed.push((k, w));
        }
        self.encoder = next;
        self.counters.time_fillers += 1;
        self.counters.words_pushed = self.fifo.pushed();
        self.drop_before = 0;
    }

    /// The keeper (step 1) of ticks `cur+1..=end`; then `cur = end`. The
    /// pops and idle flushes of the ticks before `end` are fixed already;
    /// the packetizer takes them later.
    fn run_until(&mut self, end: u64) {
        loop {
            let keeper = self.keeper_tick();
            if keeper > end || keeper == u64::MAX {
                break;
            }
            self.keeper_step(keeper);
        }
        self.cur = end;
        self.next_event = self.keeper_tick() - 1;
    }

    /// The packetizer takes every pop and idle flush before the current tick.
    fn catch_up(&mut self) {
        if !self.finished {
            self.take_until(self.cur, None);
        }
    }

    /// Steps 2 and 3 for the packetizer: it takes the words popped before
    /// `limit` and closes the open packet by idle flush if that falls
    /// before `limit`, in tick order. With `target` (end of stream), stops
    /// as soon as the first `target` words pushed are in closed packets and
    /// returns whether that happened.
    #[inline(never)]
    fn take_until(&mut self, limit: u64, target: Option<u64>) -> bool {
        self.fifo.settle();
        let reached = match target {
            None => {
                self.take_batch(limit);
                false
            }
            Some(n) => self.take_to_target(limit, n),
        };
        self.sync_packet_counters();
        self.refresh_push_limit();
        reached
    }

    /// `take_until` one word at a time, stopping at the close that puts
    /// the first `target` words pushed into closed packets.
    fn take_to_target(&mut self, limit: u64, target: u64) -> bool {
        let reached = |b: &Board| {
            let taken = b.fifo.consumed();
            taken >= target && taken - b.packetizer.fifo_words_in_open() as u64 >= target
        };
        while !reached(self) {
            let next = self.fifo.next_unconsumed().filter(|&(_, p)| p < limit);
            let upto = next.map_or(limit, |(_, p)| p);
            if let Some(f) = self.packetizer.flush_deadline() {
                if f < upto {
                    self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
                    continue;
                }
            }
            let Some((w, p)) = next else {
                return false;
            };
            self.fifo.consume();
            let w = RecordWord(w);
            self.packetizer.pop(p, w, self.flags);
            if let Some(pr) = self.probe.as_deref_mut() {
                pr.popped.push((p, w));
            }
        }
        true
    }

    /// `take_until` without a target: the words popped before `limit` in
    /// runs, the idle flushes between them and before `limit`.
    fn take_batch(&mut self, limit: u64) {
        loop {
            let (words, ticks) = self.fifo.popped_span(limit);
            let Some(&first) = ticks.first() else {
                break;
            };
            if let Some(f) = self.packetizer.flush_deadline() {
                if f < first {
                    self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
                }
            }
            let n = self.packetizer.pop_run(words, ticks, self.flags);
            if let Some(pr) = self.probe.as_deref_mut() {
                pr.popped.extend(
                    ticks[..n]
                        .iter()
                        .zip(&words[..n])
                        .map(|(&p, &w)| (p, RecordWord(w))),
                );
            }
            self.fifo.consume_n(n);
        }
        if let Some(f) = self.packetizer.flush_deadline() {
            if f < limit {
                self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
            }
        }
    }

    fn sync_packet_counters(&mut self) {
        let p = self.packetizer.counters();
        let c = &mut self.counters;
        c.words_pushed = self.fifo.pushed();
        c.words_popped = self.fifo.consumed();
        c.fifo_high_water = self.fifo.high_water();
        c.packets = p.packets;
        c.packet_words = p.packet_words;
        c.injected_line_hi = p.injected_line_hi;
        c.packets_closed_full = p.closed_full;
        c.packets_closed_sync = p.closed_sync;
        c.packets_closed_idle = p.closed_idle;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_kind_constants_follow_ddr_cmd() {
        for (k, c) in DdrCmd::ALL.iter().enumerate() {
            assert_eq!(kind_index(*c), k);
            assert_eq!(*c as usize, k, "{c:?}");
            assert_eq!(WRITE_BIT[k] != 0, c.is_write(), "{c:?}");
        }
        assert_eq!(DdrCmd::Act as usize, KIND_ACT);
        assert_eq!(DdrCmd::Pre as usize, KIND_PRE);
        assert_eq!(DdrCmd::Ref as usize, KIND_REF);
        assert_eq!(DdrCmd::Nop as usize, KIND_NOP);
        assert_eq!(
            [DdrCmd::Rd, DdrCmd::Wr, DdrCmd::Rda, DdrCmd::Wra].map(|c| c as usize),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn branchless_access_words_are_the_encoders() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..20_000u64 {
            let gap = match i % 4 {
                0 => rnd() % 64,
                1 => 64 + rnd() % 200,
                2 => rnd() % KEEPER_GAP,
                _ => KEEPER_GAP - 1 - rnd() % 3,
            };
            let line = rnd() >> (rnd() % 40);
            let write = rnd() % 2 == 0;
            let hi = if rnd() % 2 == 0 {
                (line >> 24) as u32 & PAYLOAD_MAX
            } else {
                (rnd() % 16) as u32
            };
            let last = rnd() % (1 << 40);
            let enc = EventEncoder { last, hi };
            let e = enc
                .encode(last + gap, BoardEvent::Access { line, write })
                .expect("a gap below KEEPER_GAP fits one TIME word");
            let (words, skip1, skip2, new_hi) =
                access_words(gap, line, if write { 1 << 24 } else { 0 }, hi);
            // What push_event leaves in the ring.
            let mut ring = [0u32; 3];
            ring[0] = words[0];
            ring[skip1 as usize] = words[1];
            ring[(skip1 + skip2) as usize] = words[2];
            let len = (1 + skip1 + skip2) as usize;
            let got: Vec<u32> = ring[..len].to_vec();
            let want: Vec<u32> = e.words().iter().map(|w| w.0).collect();
            assert_eq!(got, want, "gap {gap} line {line:#x} hi {hi}");
            assert_eq!(new_hi, e.next.hi);
        }
    }
}
