//! Shared helpers of the board tests: a seeded generator of command streams,
//! an independent clock-by-clock model of board.md 2.2 written as literally
//! as possible (no analytic shortcuts), and packet decoding.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};

use hmtt_board_model::{Board, BoardConfig, BoardCounters, BoardPacket, DrainRate, Probe};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::ConfigWindow;
use hmtt_format::geometry::{DdrCoord, Geometry};
use hmtt_format::packet::{Packet, PacketHeader};
use hmtt_format::record::{BoardEvent, EventEncoder, Opcode, RecordWord, TimedEvent};

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
    /// `(L, E)`: at most `E` RD/WR per clock of `L` ticks, as in a legal
    /// stream (a RD/WR that would be the `E+1`-th waits for the next
    /// clock). `None`: no such bound.
    pub clock_limit: Option<(u64, u32)>,
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
            clock_limit: None,
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
    // Clock and RD/WR count of the last RD/WR, for `clock_limit`.
    let mut column_clock = (u64::MAX, 0u32);
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
        if let Some((lanes, per_clock)) = shape.clock_limit {
            if column_clock.0 == cycle / lanes && column_clock.1 >= per_clock {
                cycle = (cycle / lanes + 1) * lanes;
            }
            if column_clock.0 != cycle / lanes {
                column_clock = (cycle / lanes, 0);
            }
            column_clock.1 += 1;
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

/// The events a board with an infinite FIFO and no reference limit records
/// for `cmds`, by hand: open rows in a map, the line index from the
/// geometry, the config window and the mode as format.md §6 says.
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

/// A drain of `num / den` words per clock of `lanes` ticks (`num < den`).
pub fn per_clock_drain(lanes: u32, num: u64, den: u64) -> DrainRate {
    DrainRate {
        num,
        den: den * u64::from(lanes),
    }
}

/// Random lanes `L` and references per clock `E` (1..=L).
pub fn random_lanes(rng: &mut Rng) -> (u32, u32) {
    let lanes = [1u32, 2, 4, 8][rng.below(4) as usize];
    (lanes, 1 + rng.below(u64::from(lanes)) as u32)
}

const KEEPER_GAP: u64 = 64 * ((1 << 21) - 1);
const GAP_TOO_LONG: u64 = 64 << 21;

/// An independent, literal, clock-by-clock model of board.md 2.2: one loop
/// iteration per fabric clock, in the order of the spec's steps. Clocks in
/// which nothing but the drain's `credit += L * num` happens (no command,
/// keeper, pop or idle flush due) are added up at once (the credit capped
/// at `den` while the FIFO is empty), so that gaps of many KEEPER_GAPs stay
/// affordable.
pub struct LiteralBoard {
    cfg: BoardConfig,
    lanes: u64,
    open: HashMap<(u32, u32), u32>,
    tracing: bool,
    tags_only: bool,
    enc: EventEncoder,
    fifo: VecDeque<RecordWord>,
    lost: u64,
    credit: u64,
    run_time: u64,
    run_hi: u32,
    /// The open packet: its t0 and words.
    open_packet: Option<(u64, Vec<RecordWord>)>,
    /// Tick of the last pop's clock.
    last_pop: u64,
    seq: u64,
    pub packets: Vec<BoardPacket>,
    /// `(clock, level)` for every clock whose fill level after it differs
    /// from the level before it.
    pub level_changes: Vec<(u64, u32)>,
    /// Every word pushed / popped with its clock.
    pub pushed_words: Vec<(u64, RecordWord)>,
    pub popped_words: Vec<(u64, RecordWord)>,
    pub references: u64,
    pub over_limit: u64,
    pub clocks_over_limit: u64,
    pub dropped: u64,
    pub fillers: u64,
    pub time_overflows: u64,
    /// Highest `level_k` plus the words pushed in clock `k`; LOST words
    /// pushed and the sum of their counts.
    pub high_water: u64,
    pub lost_words: u64,
    pub lost_reported: u64,
    /// Words pushed / popped so far, and popped when the open packet opened.
    pushed: u64,
    popped: u64,
    popped_before_open: u64,
    /// The current clock takes its events (board.md 2.2).
    clock_open: bool,
    /// The last clock run and the words it pushed.
    last_clock: Option<u64>,
    last_clock_pushed: u64,
}

impl LiteralBoard {
    pub fn new(cfg: BoardConfig) -> LiteralBoard {
        LiteralBoard {
            lanes: u64::from(cfg.lanes),
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
            pushed_words: Vec::new(),
            popped_words: Vec::new(),
            references: 0,
            over_limit: 0,
            clocks_over_limit: 0,
            dropped: 0,
            fillers: 0,
            time_overflows: 0,
            high_water: 0,
            lost_words: 0,
            lost_reported: 0,
            pushed: 0,
            popped: 0,
            popped_before_open: 0,
            clock_open: true,
            last_clock: None,
            last_clock_pushed: 0,
        }
    }

    fn flags(&self) -> u8 {
        u8::from(self.tracing) | (u8::from(self.tags_only) << 1)
    }

    fn push_word(&mut self, clock: u64, w: RecordWord) {
        self.fifo.push_back(w);
        self.pushed_words.push((clock, w));
        self.pushed += 1;
    }

    /// Pushes the event's words if its clock is open and its gap needs one
    /// TIME word at most; an open clock always has the room.
    fn try_push(&mut self, t: u64, ev: BoardEvent) -> bool {
        let Some(e) = self.enc.encode(t, ev) else {
            return false;
        };
        if !self.clock_open {
            return false;
        }
        assert!(
            e.len() <= self.cfg.fifo_depth - self.fifo.len(),
            "an open clock ran out of room"
        );
        for &w in e.words() {
            self.push_word(t / self.lanes, w);
        }
        self.enc = e.next;
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
            if t - self.enc.last >= GAP_TOO_LONG {
                self.time_overflows += 1;
            }
        }
    }

    /// One command of the clock; `refs` counts the clock's references.
    fn command(&mut self, c: &Command, refs: &mut u32) {
        let g = self.cfg.geometry;
        let t = c.cycle;
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
                self.references += 1;
                // The limit: the clock's first E references go on.
                *refs += 1;
                if *refs > self.cfg.refs_per_clock {
                    self.over_limit += 1;
                    if *refs == self.cfg.refs_per_clock + 1 {
                        self.clocks_over_limit += 1;
                    }
                    self.lost += 1;
                    return;
                }
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

    fn close(&mut self, tick: u64) {
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
            leave_tick: tick,
            bytes: h.build(&words),
        });
        self.seq += 1;
    }

    /// The packetizer takes the word popped in the clock of tick `tick`.
    fn packetize(&mut self, tick: u64, w: RecordWord) {
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
        self.last_pop = tick;
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
            self.close(tick);
        }
    }

    /// Fabric clock `k` with its commands (ticks `k*L .. k*L+L-1`).
    pub fn clock(&mut self, k: u64, cmds: &[Command]) {
        let tick = k * self.lanes;
        let level_k = self.fifo.len();
        let pushed_at_start = self.pushed;
        // Board.md 2.2: the room at the clock's start plus the previous
        // clock's words; the clock takes its events if that is twice the
        // most words a clock pushes (the filler included), and the keeper
        // pushes its filler if it is one more than that most.
        let pushed_before = match self.last_clock {
            Some(last) if last + 1 == k => self.last_clock_pushed as usize,
            _ => 0,
        };
        let room = self.cfg.fifo_depth - level_k + pushed_before;
        let most = 2 + 3 * self.cfg.refs_per_clock as usize;
        self.clock_open = room >= 2 * most;
        // 1. Keeper.
        if tick.saturating_sub(self.enc.last) >= KEEPER_GAP && room > most {
            self.push_word(
                k,
                RecordWord::control_unchecked(0, Opcode::Time, (1 << 21) - 1),
            );
            self.enc.last += KEEPER_GAP;
            self.fillers += 1;
        }
        // 2. Commands and events.
        let mut refs = 0;
        for c in cmds {
            debug_assert_eq!(c.cycle / self.lanes, k);
            self.command(c, &mut refs);
        }
        self.high_water = self.high_water.max(self.fifo.len() as u64);
        // 3. Drain: only words of earlier clocks (level_k) can leave.
        let (num, den) = (self.cfg.drain.num * self.lanes, self.cfg.drain.den);
        self.credit += num;
        let mut popped = 0;
        if level_k > 0 && self.credit >= den {
            let w = self.fifo.pop_front().unwrap();
            self.credit -= den;
            popped = 1;
            self.popped_words.push((k, w));
            self.packetize(tick, w);
        }
        if level_k - popped == 0 {
            self.credit = self.credit.min(den);
        }
        // 4. Idle flush.
        if self.open_packet.is_some() && tick - self.last_pop >= self.cfg.idle_flush_ticks {
            self.close(tick);
        }
        if self.fifo.len() != level_k {
            self.level_changes.push((k, self.fifo.len() as u32));
        }
        self.last_clock = Some(k);
        self.last_clock_pushed = self.pushed - pushed_at_start;
    }

    /// Runs a whole stream and the end of stream: clocks with no commands
    /// until every word pushed by the last command's clock has been popped
    /// and the packet holding the last of them has closed.
    pub fn run(&mut self, cmds: &[Command]) {
        let lanes = self.lanes;
        let mut i = 0;
        let mut k = 0u64;
        let mut target = None;
        loop {
            let start = i;
            while i < cmds.len() && cmds[i].cycle / lanes == k {
                i += 1;
            }
            self.clock(k, &cmds[start..i]);
            if i == cmds.len() && target.is_none() {
                // Later clocks push only keeper fillers.
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
            // Skip the clocks in which nothing but `credit += L * num`
            // happens: no command, no keeper (it needs room and its clock's
            // tick KEEPER_GAP after `last`), no pop (the credit stays below
            // `den`), no idle flush.
            let (num, den) = (self.cfg.drain.num * lanes, self.cfg.drain.den);
            // The keeper's room test reads `depth - level` plus the words of
            // clock k at k + 1, and no more later (the clocks skipped push
            // nothing).
            let mut next = cmds.get(i).map_or(u64::MAX, |c| c.cycle / lanes);
            let most = 2 + 3 * self.cfg.refs_per_clock as usize;
            let room_next = self.cfg.fifo_depth - self.fifo.len() + self.last_clock_pushed as usize;
            if room_next > most {
                next = next.min((self.enc.last + KEEPER_GAP).div_ceil(lanes));
            }
            if !self.fifo.is_empty() {
                next = next.min(k + den.saturating_sub(self.credit).div_ceil(num).max(1));
            }
            if self.open_packet.is_some() {
                next = next.min((self.last_pop + self.cfg.idle_flush_ticks).div_ceil(lanes));
            }
            if next > k + 1 && next != u64::MAX {
                let n = next - 1 - k;
                self.credit = self.credit.saturating_add(n.saturating_mul(num));
                if self.fifo.is_empty() {
                    self.credit = self.credit.min(den);
                }
                k = next - 1;
            }
            k += 1;
        }
    }
}

/// `(clock, level)` for every clock whose fill level after it differs from
/// the level before it, from the golden model's probe (compare with
/// `LiteralBoard::level_changes`).
pub fn level_changes(probe: &Probe) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    let mut level = 0;
    for a in probe.activity() {
        if a.level != level {
            out.push((a.clock, a.level));
            level = a.level;
        }
    }
    out
}

/// The counters both models keep.
pub fn check_counters_against_literal(n: &BoardCounters, lit: &LiteralBoard, what: &str) {
    assert_eq!(n.references, lit.references, "references; {what}");
    assert_eq!(
        n.references_over_limit, lit.over_limit,
        "references over the limit; {what}"
    );
    assert_eq!(
        n.clocks_over_limit, lit.clocks_over_limit,
        "clocks over the limit; {what}"
    );
    assert_eq!(n.events_dropped, lit.dropped, "events dropped; {what}");
    assert_eq!(n.time_fillers, lit.fillers, "keeper fillers; {what}");
    assert_eq!(
        n.time_overflows, lit.time_overflows,
        "time overflows; {what}"
    );
    assert_eq!(n.fifo_high_water, lit.high_water, "high-water mark; {what}");
    assert_eq!(n.lost_words, lit.lost_words, "LOST words; {what}");
    assert_eq!(n.lost_reported, lit.lost_reported, "LOST counts; {what}");
    assert_eq!(n.lost_pending, lit.lost, "LOST pending; {what}");
    assert_eq!(
        n.lost_reported + n.lost_pending,
        n.events_dropped + n.references_over_limit,
        "the lost count; {what}"
    );
}

/// The first difference of two sequences, as a panic message.
pub fn assert_same<T: PartialEq + std::fmt::Debug>(what: &str, model: &[T], literal: &[T]) {
    if let Some(k) = (0..model.len().max(literal.len())).find(|&k| model.get(k) != literal.get(k)) {
        panic!(
            "{what}: item {k} differs: model {:?}, literal {:?} ({} and {} items)",
            model.get(k),
            literal.get(k),
            model.len(),
            literal.len()
        );
    }
}

/// Runs the golden model with the probe on, one command per call, and the
/// literal model; checks that both give the same packets, pushes and pops
/// (words and clocks), fill levels and counters.
pub fn run_against_literal(cfg: &BoardConfig, cmds: &[Command]) -> (Board, Vec<BoardPacket>) {
    let mut lit = LiteralBoard::new(cfg.clone());
    lit.run(cmds);
    let mut board = Board::new(cfg.clone()).unwrap();
    board.enable_probe();
    for c in cmds {
        board.command(c).unwrap();
    }
    board.finish();
    let mut packets = Vec::new();
    board.drain_packets(&mut packets);
    let what = format!("{cfg:?}");
    let probe = board.probe().unwrap();
    assert_same(
        &format!("pushed words; {what}"),
        &probe.pushed,
        &lit.pushed_words,
    );
    // The model stops at the close of the packet holding the last word of
    // the stream; the literal model, in that clock.
    assert_same(
        &format!("popped words; {what}"),
        &probe.popped,
        &lit.popped_words,
    );
    assert_same(
        &format!("fill levels; {what}"),
        &level_changes(probe),
        &lit.level_changes,
    );
    assert_same(&format!("packets; {what}"), &packets, &lit.packets);
    check_counters_against_literal(board.counters(), &lit, &what);
    (board, packets)
}
