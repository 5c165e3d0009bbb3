//! Shared helpers of the board tests: a seeded generator of command streams,
//! an independent tick-by-tick model of board.md written as literally as
//! possible (no analytic shortcuts), and packet decoding.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::ConfigWindow;
use hmtt_format::geometry::{DdrCoord, Geometry};
use hmtt_format::packet::{Packet, PacketHeader};
use hmtt_format::record::{BoardEvent, EventEncoder, Opcode, RecordWord, TimedEvent};
use hmtt_sim::board::{Board, BoardConfig, BoardCounters, BoardPacket, Probe};

/// xorshift64*: deterministic, no dependency.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A reference the board should record, computed by hand from the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub tick: u64,
    pub event: BoardEvent,
}

/// What a generated stream should contain.
#[derive(Debug, Clone, Copy)]
pub struct StreamShape {
    pub commands: usize,
    /// Gap between commands: 0..max_gap, sometimes a long one.
    pub max_gap: u64,
    /// Percent of long gaps (up to `long_gap`).
    pub long_gap_percent: u64,
    pub long_gap: u64,
    /// Percent of references into the config window (tags).
    pub tag_percent: u64,
    /// Percent of inner commands (mode changes, SYNC, INSERT_TAG).
    pub inner_percent: u64,
    /// Percent of other commands (PRE, PREA, REF, MRS, ZQ, NOP).
    pub noise_percent: u64,
    /// Percent of illegal commands (unknown, RD to a never-opened bank).
    pub illegal_percent: u64,
}

impl Default for StreamShape {
    fn default() -> Self {
        StreamShape {
            commands: 2000,
            max_gap: 12,
            long_gap_percent: 1,
            long_gap: 200_000,
            tag_percent: 3,
            inner_percent: 0,
            noise_percent: 20,
            illegal_percent: 0,
        }
    }
}

/// Generates a legal stream (ACT before RD/WR in every bank) with the
/// given shape.
pub fn gen_stream(
    g: &Geometry,
    w: &ConfigWindow,
    shape: &StreamShape,
    rng: &mut Rng,
) -> Vec<Command> {
    let mut out = Vec::with_capacity(shape.commands);
    let mut cycle = 0u64;
    let mut open: HashMap<(u32, u32), u32> = HashMap::new();
    let first = w.first_line(g);
    // Ranks/banks never activated, for protocol errors.
    let virgin_rank = g.ranks() - 1;
    let virgin_bank = g.banks() - 1;
    let push = |out: &mut Vec<Command>, cycle: u64, cmd, rank, bank, arg| {
        out.push(Command {
            cycle,
            cmd,
            rank,
            bank,
            arg,
        })
    };
    while out.len() < shape.commands {
        if rng.chance(shape.long_gap_percent) {
            cycle += rng.below(shape.long_gap.max(1));
        } else {
            cycle += rng.below(shape.max_gap.max(1));
        }
        let roll = rng.below(100);
        if roll < shape.illegal_percent {
            if rng.chance(50) {
                push(&mut out, cycle, DdrCmd::Unknown, 0, 0, 0);
            } else if !open.contains_key(&(virgin_rank, virgin_bank)) {
                push(&mut out, cycle, DdrCmd::Rd, virgin_rank, virgin_bank, 0);
            }
            continue;
        }
        let roll = roll - shape.illegal_percent;
        if roll < shape.noise_percent {
            let cmd = [
                DdrCmd::Pre,
                DdrCmd::Prea,
                DdrCmd::Ref,
                DdrCmd::Mrs,
                DdrCmd::Zq,
                DdrCmd::Nop,
            ][rng.below(6) as usize];
            let rank = rng.below(u64::from(g.ranks())) as u32;
            let bank = rng.below(u64::from(g.banks())) as u32;
            push(&mut out, cycle, cmd, rank, bank, 0);
            // A legal stream re-activates after a precharge.
            if matches!(cmd, DdrCmd::Pre) {
                open.remove(&(rank, bank));
            }
            if matches!(cmd, DdrCmd::Prea) {
                open.retain(|k, _| k.0 != rank);
            }
            continue;
        }
        let roll = roll - shape.noise_percent;
        let coord = if roll < shape.tag_percent {
            let index = 0x40 + rng.below(w.lines(g) - 0x40);
            g.coord(first + index)
        } else if roll < shape.tag_percent + shape.inner_percent {
            // Weighted towards mode changes and SYNC.
            let index = [0u64, 1, 2, 3, 4, 5, 5, 0, 3, 7][rng.below(10) as usize];
            g.coord(first + index)
        } else {
            loop {
                let line = rng.below(g.lines());
                let c = g.coord(line);
                let virgin = c.rank == virgin_rank && c.bank == virgin_bank;
                if !w.contains(c.rank, c.row) && !virgin {
                    break c;
                }
            }
        };
        if open.get(&(coord.rank, coord.bank)) != Some(&coord.row) {
            push(
                &mut out,
                cycle,
                DdrCmd::Act,
                coord.rank,
                coord.bank,
                coord.row,
            );
            open.insert((coord.rank, coord.bank), coord.row);
            cycle += rng.below(3);
        }
        let cmd = [DdrCmd::Rd, DdrCmd::Wr, DdrCmd::Rda, DdrCmd::Wra][rng.below(4) as usize];
        let column = (coord.col_line << 3) | rng.below(8) as u32;
        push(&mut out, cycle, cmd, coord.rank, coord.bank, column);
        if matches!(cmd, DdrCmd::Rda | DdrCmd::Wra) {
            open.remove(&(coord.rank, coord.bank));
        }
    }
    out
}

/// The events a board with an infinite FIFO records for `cmds`, by hand:
/// open rows in a map, the line index from the geometry, the config window
/// and the mode as format.md §6 says.
pub fn expected_events(cfg: &BoardConfig, cmds: &[Command]) -> Vec<Expected> {
    let g = &cfg.geometry;
    let mut open: HashMap<(u32, u32), u32> = HashMap::new();
    let (mut tracing, mut tags_only) = (cfg.start_tracing, cfg.start_tags_only);
    let first = cfg.window.first_line(g);
    let mut out = Vec::new();
    for c in cmds {
        match c.cmd {
            DdrCmd::Act => {
                open.insert((c.rank, c.bank), c.arg);
            }
            DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra => {
                let Some(&row) = open.get(&(c.rank, c.bank)) else {
                    continue;
                };
                let line = g
                    .line_index(DdrCoord {
                        rank: c.rank,
                        bank: c.bank,
                        row,
                        col_line: c.arg >> 3,
                    })
                    .expect("generated coordinates fit");
                let write = matches!(c.cmd, DdrCmd::Wr | DdrCmd::Wra);
                let inside = cfg.window.contains(c.rank, row);
                let event = if inside {
                    let index = (line - first) as u32;
                    if index < 64 {
                        match index {
                            0 => tracing = true,
                            1 => tracing = false,
                            2 => tags_only = true,
                            3 => tags_only = false,
                            _ => {}
                        }
                        Some(BoardEvent::Cmd { code: index })
                    } else if tracing {
                        Some(BoardEvent::Tag {
                            event: index,
                            write,
                        })
                    } else {
                        None
                    }
                } else if tracing && !tags_only {
                    Some(BoardEvent::Access { line, write })
                } else {
                    None
                };
                if let Some(event) = event {
                    out.push(Expected {
                        tick: c.cycle,
                        event,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// Checks the packets' headers and sequence, then decodes them in `seq`
/// order into one event stream.
pub fn decode(cfg: &BoardConfig, packets: &[BoardPacket]) -> Vec<TimedEvent> {
    let mut out = Vec::new();
    let mut last_leave = 0;
    for (i, bp) in packets.iter().enumerate() {
        let p = Packet::new_checked(&bp.bytes[..]).expect("valid packet");
        let h = PacketHeader::parse(&p).expect("valid header");
        assert_eq!(h.seq, i as u64, "seq is consecutive from 0");
        assert_eq!(bp.seq, h.seq);
        assert_eq!(h.port, (h.seq % u64::from(cfg.ports)) as u8, "round robin");
        assert_eq!(bp.port, h.port);
        assert_eq!(h.board, cfg.board_id);
        assert_eq!(h.geometry, cfg.geometry);
        assert_eq!(h.tick_ps, cfg.tick_ps);
        assert!(usize::from(h.nwords) <= cfg.max_words);
        assert!(bp.leave_tick >= last_leave, "packets leave in seq order");
        last_leave = bp.leave_tick;
        for e in p.events() {
            out.push(e.expect("no corrupt words"));
        }
    }
    out
}

/// An independent, literal, tick-by-tick model of board.md. Slow: one loop
/// iteration per tick, except across stretches in which nothing but the
/// drain's `credit += num` happens (no command, keeper, pop or idle flush
/// due), whose credit is added up at once (capped at `den` while the FIFO is
/// empty) so that gaps of many KEEPER_GAPs stay affordable.
pub struct NaiveBoard {
    cfg: BoardConfig,
    open: HashMap<(u32, u32), u32>,
    tracing: bool,
    tags_only: bool,
    enc: EventEncoder,
    fifo: VecDeque<RecordWord>,
    lost: u64,
    credit: u64,
    run_time: u64,
    run_hi: u32,
    open_packet: Option<(u64, Vec<RecordWord>)>,
    last_pop: u64,
    seq: u64,
    pub packets: Vec<BoardPacket>,
    /// `(tick, level)` for every tick whose fill level (after its pushes
    /// and pop) differs from the tick before's.
    pub level_changes: Vec<(u64, u32)>,
    pub dropped: u64,
    pub fillers: u64,
    pub time_overflows: u64,
    /// Highest fill level right after a push; LOST words pushed and the
    /// sum of their counts.
    pub high_water: u64,
    pub lost_words: u64,
    pub lost_reported: u64,
    /// Words pushed / popped so far, and popped when the open packet opened.
    pushed: u64,
    popped: u64,
    popped_before_open: u64,
}

impl NaiveBoard {
    pub fn new(cfg: BoardConfig) -> NaiveBoard {
        NaiveBoard {
            tracing: cfg.start_tracing,
            tags_only: cfg.start_tags_only,
            cfg,
            open: HashMap::new(),
            enc: EventEncoder::default(),
            fifo: VecDeque::new(),
            lost: 0,
            credit: 0,
            run_time: 0,
            run_hi: 0,
            open_packet: None,
            last_pop: 0,
            seq: 0,
            packets: Vec::new(),
            level_changes: Vec::new(),
            dropped: 0,
            fillers: 0,
            time_overflows: 0,
            high_water: 0,
            lost_words: 0,
            lost_reported: 0,
            pushed: 0,
            popped: 0,
            popped_before_open: 0,
        }
    }

    fn flags(&self) -> u8 {
        u8::from(self.tracing) | (u8::from(self.tags_only) << 1)
    }

    fn try_push(&mut self, t: u64, ev: BoardEvent) -> bool {
        // None: the gap needs two TIME words.
        let Some(e) = self.enc.encode(t, ev) else {
            return false;
        };
        if e.len() > self.cfg.fifo_depth - self.fifo.len() {
            return false;
        }
        self.fifo.extend(e.words().iter().copied());
        self.pushed += e.len() as u64;
        self.enc = e.next;
        self.high_water = self.high_water.max(self.fifo.len() as u64);
        true
    }

    fn event(&mut self, t: u64, ev: BoardEvent) {
        if self.lost > 0 {
            let count = self.lost.min((1 << 21) - 1);
            if self.try_push(
                t,
                BoardEvent::Lost {
                    count: count as u32,
                },
            ) {
                self.lost -= count;
                self.lost_words += 1;
                self.lost_reported += count;
            }
        }
        if !self.try_push(t, ev) {
            self.lost += 1;
            self.dropped += 1;
            if t - self.enc.last >= (1 << 27) {
                self.time_overflows += 1;
            }
        }
    }

    fn command(&mut self, t: u64, c: &Command) {
        let g = self.cfg.geometry;
        match c.cmd {
            DdrCmd::Act if c.rank < g.ranks() && c.bank < g.banks() && c.arg < g.rows() => {
                self.open.insert((c.rank, c.bank), c.arg);
            }
            DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra => {
                if c.rank >= g.ranks() || c.bank >= g.banks() || c.arg >= g.lines_per_row() * 8 {
                    return;
                }
                let Some(&row) = self.open.get(&(c.rank, c.bank)) else {
                    return;
                };
                let line = g.line_index_unchecked(DdrCoord {
                    rank: c.rank,
                    bank: c.bank,
                    row,
                    col_line: c.arg >> 3,
                });
                let write = matches!(c.cmd, DdrCmd::Wr | DdrCmd::Wra);
                match self.cfg.window.event_index(&g, line) {
                    Some(i) if i < 64 => {
                        match i {
                            0 => self.tracing = true,
                            1 => self.tracing = false,
                            2 => self.tags_only = true,
                            3 => self.tags_only = false,
                            _ => {}
                        }
                        self.event(t, BoardEvent::Cmd { code: i });
                    }
                    Some(i) => {
                        if self.tracing {
                            self.event(t, BoardEvent::Tag { event: i, write });
                        }
                    }
                    None => {
                        if self.tracing && !self.tags_only {
                            self.event(t, BoardEvent::Access { line, write });
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn close(&mut self, t: u64) {
        let (t0, words) = self.open_packet.take().expect("open packet");
        let h = PacketHeader {
            flags: self.flags(),
            board: self.cfg.board_id,
            port: (self.seq % u64::from(self.cfg.ports)) as u8,
            seq: self.seq,
            t0,
            nwords: 0,
            geometry: self.cfg.geometry,
            tick_ps: self.cfg.tick_ps,
        };
        self.packets.push(BoardPacket {
            port: h.port,
            seq: h.seq,
            leave_tick: t,
            bytes: h.build(&words),
        });
        self.seq += 1;
    }

    /// One tick: keeper, commands, drain, idle flush.
    pub fn tick(&mut self, t: u64, cmds: &[Command]) {
        let level_before = self.fifo.len();
        // The keeper: one filler TIME word, before the tick's events.
        if t - self.enc.last >= 64 * ((1 << 21) - 1) && self.fifo.len() < self.cfg.fifo_depth {
            self.fifo.push_back(RecordWord::control_unchecked(
                0,
                Opcode::Time,
                (1 << 21) - 1,
            ));
            self.enc.last += 64 * ((1 << 21) - 1);
            self.pushed += 1;
            self.fillers += 1;
            self.high_water = self.high_water.max(self.fifo.len() as u64);
        }
        for c in cmds {
            self.command(t, c);
        }
        let (num, den) = (self.cfg.drain.num, self.cfg.drain.den);
        self.credit += num;
        if !self.fifo.is_empty() && self.credit >= den {
            let w = self.fifo.pop_front().unwrap();
            self.credit -= den;
            if self.open_packet.is_none() {
                self.popped_before_open = self.popped;
                let mut words = Vec::new();
                if self.run_hi != 0 {
                    words.push(RecordWord::control_unchecked(
                        0,
                        Opcode::LineHi,
                        self.run_hi,
                    ));
                }
                self.open_packet = Some((self.run_time, words));
            }
            self.open_packet.as_mut().unwrap().1.push(w);
            self.popped += 1;
            self.last_pop = t;
            self.run_time += u64::from(w.dt());
            let mut sync = false;
            if w.is_control() {
                match w.opcode() {
                    Opcode::Time => self.run_time += u64::from(w.payload()) * 64,
                    Opcode::LineHi => self.run_hi = w.payload(),
                    Opcode::Cmd => sync = w.payload() == 5,
                    _ => {}
                }
            }
            let full = self.open_packet.as_ref().unwrap().1.len() == self.cfg.max_words;
            if full || sync {
                self.close(t);
            }
        }
        if self.fifo.is_empty() {
            self.credit = self.credit.min(den);
        }
        if self.open_packet.is_some() && t - self.last_pop >= self.cfg.idle_flush_ticks {
            self.close(t);
        }
        if self.fifo.len() != level_before {
            self.level_changes.push((t, self.fifo.len() as u32));
        }
    }

    /// Runs a whole stream and the end of stream: ticks with no commands
    /// until every word pushed by the last command's tick has been popped
    /// and the packet holding the last of them has closed.
    pub fn run(&mut self, cmds: &[Command]) {
        let mut i = 0;
        let mut t = 0u64;
        let mut target = None;
        loop {
            let start = i;
            while i < cmds.len() && cmds[i].cycle == t {
                i += 1;
            }
            self.tick(t, &cmds[start..i]);
            if i == cmds.len() && target.is_none() {
                // Later ticks push only keeper fillers.
                target = Some(self.pushed);
            }
            if let Some(target) = target {
                let closed = if self.open_packet.is_some() {
                    self.popped_before_open
                } else {
                    self.popped
                };
                if closed >= target {
                    break;
                }
            }
            // Skip the ticks in which nothing but `credit += num` happens:
            // no command, no keeper (it needs room and a gap of KEEPER_GAP),
            // no pop (the credit stays below `den`), no idle flush.
            let (num, den) = (self.cfg.drain.num, self.cfg.drain.den);
            let mut next = cmds.get(i).map_or(u64::MAX, |c| c.cycle);
            if self.fifo.len() < self.cfg.fifo_depth {
                next = next.min(self.enc.last + 64 * ((1 << 21) - 1));
            }
            if !self.fifo.is_empty() {
                next = next.min(t + (den - self.credit).div_ceil(num));
            }
            if self.open_packet.is_some() {
                next = next.min(self.last_pop + self.cfg.idle_flush_ticks);
            }
            if next > t + 1 && next != u64::MAX {
                let n = next - 1 - t;
                self.credit = self.credit.saturating_add(n.saturating_mul(num));
                if self.fifo.is_empty() {
                    self.credit = self.credit.min(den);
                }
                t = next - 1;
            }
            t += 1;
        }
    }
}

/// `(tick, level)` for every tick whose fill level differs from the tick
/// before's, from the golden model's probe (compare with
/// `NaiveBoard::level_changes`).
pub fn level_changes(probe: &Probe) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut level = 0;
    for a in probe.activity() {
        if a.level != level {
            out.push((a.tick, a.level));
            level = a.level;
        }
    }
    out
}

/// The counters both models keep, beyond drops, fillers and overflows.
pub fn check_counters_against_literal(n: &BoardCounters, naive: &NaiveBoard) {
    assert_eq!(n.fifo_high_water, naive.high_water, "high-water mark");
    assert_eq!(n.lost_words, naive.lost_words, "LOST words");
    assert_eq!(n.lost_reported, naive.lost_reported, "LOST counts");
    assert_eq!(n.lost_pending, naive.lost, "LOST pending");
}

/// Runs the golden model with the probe on and the literal model; checks
/// that both give the same packets, fill levels, drops and fillers.
pub fn run_against_literal(cfg: &BoardConfig, cmds: &[Command]) -> (Board, Vec<BoardPacket>) {
    let mut naive = NaiveBoard::new(cfg.clone());
    naive.run(cmds);
    let mut board = Board::new(cfg.clone()).unwrap();
    board.enable_probe();
    for c in cmds {
        board.command(c).unwrap();
    }
    board.finish();
    let mut packets = Vec::new();
    board.drain_packets(&mut packets);
    assert_eq!(packets.len(), naive.packets.len(), "{cfg:?}");
    for (a, b) in packets.iter().zip(&naive.packets) {
        assert_eq!(a, b, "packet {} differs; {cfg:?}", a.seq);
    }
    assert_eq!(
        level_changes(board.probe().unwrap()),
        naive.level_changes,
        "{cfg:?}"
    );
    let n = board.counters();
    assert_eq!(n.events_dropped, naive.dropped);
    assert_eq!(n.time_fillers, naive.fillers);
    assert_eq!(n.time_overflows, naive.time_overflows);
    check_counters_against_literal(n, &naive);
    (board, packets)
}
