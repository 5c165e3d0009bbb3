//! The Statistic Unit (board.md "Statistic Unit", format.md §5.3): counters
//! of every decoded command per interval of `2^k` ticks, sent as
//! statistics packets on their own path, beside the trace.
//!
//! The unit watches the command stream itself (its own DSMU for the
//! line-bit toggles, its own view of each bank for the row-buffer
//! outcomes), so it counts every command whether or not its reference
//! reached the trace; the board tells it the references the limit and the
//! FIFO dropped ([`StatisticUnit::add_drops`]) and its inner commands
//! ([`StatisticUnit::inner`]). It holds the Reuse Distance & Hot Pages
//! Unit ([`super::reuse_unit`]) when the board has one: the two share the
//! intervals and the path, each switched on and off on its own.

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::config::InnerCommand;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::{
    BankCounter, CounterLayout, RankCounter, StatsRecord, MAX_INTERVAL_LOG2, MIN_INTERVAL_LOG2,
    STATS_HEADER_LEN, STATS_HEADER_LEN_SECTIONS,
};

use super::dsmu::{Dsmu, DsmuOutcome};
use super::packetizer::BoardPacket;
use super::reuse_unit::{ReuseConfig, ReuseUnit};
use super::BoardConfig;

/// Bytes a frame adds to its UDP payload on the wire (board.md "Drain
/// rate": 98 less the trace packet's 32-byte header).
const WIRE_OVERHEAD_BYTES: u64 = 66;

/// The unit's build and reset parameters (board.md "Statistic Unit").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct StatsConfig {
    /// `k`: intervals of `2^k` ticks, 6..=31, until an inner command sets
    /// another.
    pub interval_log2: u8,
    /// Whether the unit counts from reset (else from STATS_ON).
    pub start_enabled: bool,
    /// `s`: the statistics path takes `1/2^s` of the ports' line rate and
    /// the trace's drain the rest, 1..=8.
    pub share_log2: u8,
    /// Records the statistics path can send back to back, 1..=16.
    pub burst_records: u32,
    /// The Reuse Distance & Hot Pages Unit, if the board has one.
    pub reuse: Option<ReuseConfig>,
}

impl Default for StatsConfig {
    fn default() -> StatsConfig {
        StatsConfig {
            interval_log2: 20,
            start_enabled: true,
            share_log2: 5,
            burst_records: 4,
            reuse: None,
        }
    }
}

impl StatsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_INTERVAL_LOG2..=MAX_INTERVAL_LOG2).contains(&self.interval_log2) {
            return Err(format!(
                "statistics interval 2^{} ticks: k must be in {MIN_INTERVAL_LOG2}..={MAX_INTERVAL_LOG2}",
                self.interval_log2
            ));
        }
        if !(1..=8).contains(&self.share_log2) {
            return Err(format!(
                "statistics share 1/2^{}: s must be in 1..=8",
                self.share_log2
            ));
        }
        if !(1..=16).contains(&self.burst_records) {
            return Err(format!(
                "statistics burst {} records: must be in 1..=16",
                self.burst_records
            ));
        }
        if let Some(r) = &self.reuse {
            r.validate()?;
        }
        Ok(())
    }
}

/// What the unit did (board.md "Counters").
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatsCounters {
    /// Intervals closed while the unit was on (whole or cut by an inner
    /// command); the empty intervals of a silence between two commands
    /// are skipped at once and not counted.
    pub intervals: u64,
    /// Of those, intervals in which nothing was counted: not sent.
    pub empty_intervals: u64,
    /// Records sent, and the packets and bytes (UDP payload) they took.
    pub records_sent: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Records the statistics path had no room for: not sent, counted in
    /// the next record sent.
    pub records_unsent: u64,
    /// Of those, the ones no record sent since reports.
    pub unsent_pending: u64,
}

/// What the bus shows of one bank.
#[derive(Debug, Clone, Copy, Default)]
struct BankState {
    open: bool,
    row: u32,
    /// A column command since the bank's last ACT.
    used: bool,
    /// The row an explicit PRE/PREA closed, with no ACT or REF since.
    closed_row: Option<u32>,
    /// The first column command after the ACT is a conflict, else a miss.
    conflict: bool,
}

/// A change an inner command makes at the next clock's tick.
#[derive(Debug, Clone, Copy)]
struct Pending {
    at: u64,
    command: InnerCommand,
}

/// The Statistic Unit of one board.
#[derive(Debug, Clone)]
pub struct StatisticUnit {
    geometry: Geometry,
    layout: CounterLayout,
    board: u8,
    tick_ps: u16,
    ports: u8,
    max_counters: usize,
    /// The Statistic Unit counts.
    enabled: bool,
    reuse: Option<ReuseUnit>,
    /// The RDHPU takes references.
    reuse_on: bool,
    /// The config window's lines `[first, first + lines)`, whose
    /// references the RDHPU does not take.
    window_first: u64,
    window_lines: u64,
    k: u8,
    /// The open interval `[start, end)` while a unit is on.
    start: u64,
    end: u64,
    pending: Vec<Pending>,
    counts: Vec<u64>,
    banks: Vec<BankState>,
    /// Per rank, the last tick counted as busy, plus one (0: none).
    busy_after: Vec<u64>,
    dsmu: Dsmu,
    last_line: u64,
    /// The statistics path's credit, in `1/(8000 * 2^s)` wire bytes: a
    /// tick adds `ports * tick_ps`, up to `cap`.
    credit: u64,
    cap: u64,
    credit_tick: u64,
    share_log2: u8,
    seq: u64,
    packets: Vec<BoardPacket>,
    counters: StatsCounters,
}

impl StatisticUnit {
    pub fn new(cfg: &BoardConfig, sc: &StatsConfig) -> StatisticUnit {
        let g = cfg.geometry;
        let layout = CounterLayout::new(&g);
        // A packet is no larger than a trace packet (32 + 4 * max_words
        // bytes): the 48-byte header of version 1, or 56 of version 2 in a
        // build with an RDHPU.
        let header_words = if sc.reuse.is_some() { 6 } else { 4 };
        let max_counters = cfg.max_words.saturating_sub(header_words).max(1);
        let reuse = sc.reuse.map(|rc| ReuseUnit::new(rc, cfg.lanes));
        // The credit holds `burst` of the largest records the build sends.
        let (words, header) = match &reuse {
            Some(r) => (layout.len() + r.record_words(), STATS_HEADER_LEN_SECTIONS),
            None => (layout.len(), STATS_HEADER_LEN),
        };
        let parts = words.div_ceil(max_counters) as u64;
        let record_bytes = header as u64 * parts + 4 * words as u64 + WIRE_OVERHEAD_BYTES * parts;
        let cap = u64::from(sc.burst_records) * record_bytes * (8000 << sc.share_log2);
        let k = sc.interval_log2;
        StatisticUnit {
            geometry: g,
            layout,
            board: cfg.board_id,
            tick_ps: cfg.tick_ps,
            ports: cfg.ports,
            max_counters,
            enabled: sc.start_enabled,
            reuse_on: reuse.is_some() && sc.reuse.is_some_and(|r| r.start_enabled),
            reuse,
            window_first: cfg.window.first_line(&g),
            window_lines: cfg.window.lines(&g),
            k,
            start: 0,
            end: 1 << k,
            pending: Vec::new(),
            counts: vec![0; layout.len()],
            banks: vec![BankState::default(); layout.ranks * layout.banks],
            busy_after: vec![0; layout.ranks],
            dsmu: Dsmu::new(&g),
            last_line: 0,
            credit: cap,
            cap,
            credit_tick: 0,
            share_log2: sc.share_log2,
            seq: 0,
            packets: Vec::new(),
            counters: StatsCounters::default(),
        }
    }

    pub fn counters(&self) -> &StatsCounters {
        &self.counters
    }

    /// Whether the unit counts now.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether the RDHPU takes references now.
    pub fn reuse_enabled(&self) -> bool {
        self.reuse_on
    }

    /// Whether intervals run: one of the units is on.
    fn running(&self) -> bool {
        self.enabled || self.reuse_on
    }

    /// The first tick at which an interval closes or an inner command's
    /// change applies; commands before it belong to the open interval.
    pub(super) fn boundary(&self) -> u64 {
        let natural = if self.running() { self.end } else { u64::MAX };
        self.pending.first().map_or(natural, |p| p.at.min(natural))
    }

    /// An inner command the config unit executed, in the clock whose next
    /// clock starts at tick `next_clock`. Returns whether it is one of the
    /// unit's: its change applies at `next_clock`.
    pub(super) fn inner(&mut self, command: InnerCommand, next_clock: u64) -> bool {
        match command {
            InnerCommand::StatsOn
            | InnerCommand::StatsOff
            | InnerCommand::StatsInterval(_)
            | InnerCommand::ReuseOn
            | InnerCommand::ReuseOff
            | InnerCommand::StatsOnly => {
                self.pending.push(Pending {
                    at: next_clock,
                    command,
                });
                true
            }
            _ => false,
        }
    }

    /// Closes the intervals that end by tick `t` and applies the changes
    /// due by then; `flags` is the board's mode, for the records' headers.
    pub(super) fn advance(&mut self, t: u64, flags: u8) {
        loop {
            let natural = if self.running() { self.end } else { u64::MAX };
            let change = self.pending.first().map_or(u64::MAX, |p| p.at);
            if natural.min(change) > t {
                return;
            }
            if natural <= change {
                self.close(natural, flags);
                // Intervals with nothing in them are skipped at once.
                let upto = t.min(change);
                self.start = natural.max((upto >> self.k) << self.k);
                self.end = ((self.start >> self.k) + 1) << self.k;
            } else {
                let p = self.pending.remove(0);
                self.apply(p, flags);
            }
        }
    }

    fn apply(&mut self, p: Pending, flags: u8) {
        let at = p.at;
        let has_reuse = self.reuse.is_some();
        match p.command {
            InnerCommand::StatsOn => self.switch(at, flags, true, self.reuse_on),
            InnerCommand::StatsOff => self.switch(at, flags, false, self.reuse_on),
            InnerCommand::ReuseOn => self.switch(at, flags, self.enabled, has_reuse),
            InnerCommand::ReuseOff => self.switch(at, flags, self.enabled, false),
            InnerCommand::StatsOnly => self.switch(at, flags, true, has_reuse),
            InnerCommand::StatsInterval(k) => {
                if self.running() {
                    self.close(at, flags);
                }
                self.k = k;
                self.start = at;
                self.end = ((at >> k) + 1) << k;
            }
            _ => {}
        }
    }

    /// Switches the units at tick `at`: a change closes the open interval
    /// there and opens the next there, if a unit is still on; the RDHPU
    /// switched on starts from an empty stack.
    fn switch(&mut self, at: u64, flags: u8, counters: bool, reuse: bool) {
        if (counters, reuse) == (self.enabled, self.reuse_on) {
            return;
        }
        if self.running() {
            self.close(at, flags);
        }
        if reuse && !self.reuse_on {
            if let Some(r) = &mut self.reuse {
                r.clear();
            }
        }
        self.enabled = counters;
        self.reuse_on = reuse;
        self.start = at;
        self.end = ((at >> self.k) + 1) << self.k;
    }

    /// End of the stream: the changes still due apply, and the open
    /// interval closes at its end.
    pub(super) fn finish(&mut self, flags: u8) {
        if let Some(last) = self.pending.iter().map(|p| p.at).max() {
            self.advance(last, flags);
        }
        if self.running() {
            self.close(self.end, flags);
            self.enabled = false;
            self.reuse_on = false;
        }
    }

    /// References the limit dropped and events the FIFO had no room for,
    /// in the open interval.
    pub(super) fn add_drops(&mut self, over_limit: u64, lost_fifo: u64) {
        if self.enabled && over_limit + lost_fifo > 0 {
            self.counts[self.layout.over_limit()] += over_limit;
            self.counts[self.layout.lost_fifo()] += lost_fifo;
        }
    }

    /// Counts commands, all before [`StatisticUnit::boundary`].
    pub(super) fn count(&mut self, cs: &[Command]) {
        for c in cs {
            self.command(c);
        }
    }

    fn command(&mut self, c: &Command) {
        let on = self.enabled;
        match self.dsmu.command(c) {
            DsmuOutcome::Reference(r) | DsmuOutcome::ReferenceAfterPrecharge(r) => {
                if self.reuse_on && r.line.wrapping_sub(self.window_first) >= self.window_lines {
                    if let Some(u) = &mut self.reuse {
                        u.reference(r.line, c.cycle);
                    }
                }
                let toggled = r.line ^ self.last_line;
                self.last_line = r.line;
                if on && toggled != 0 {
                    for bit in 0..self.layout.line_bits {
                        if toggled >> bit & 1 == 1 {
                            self.counts[self.layout.toggles(bit)] += 1;
                        }
                    }
                }
            }
            _ => {}
        }
        let rank = c.rank as usize;
        if rank >= self.layout.ranks || c.cmd == DdrCmd::Nop {
            return;
        }
        let bank = c.bank as usize;
        let banked = matches!(
            c.cmd,
            DdrCmd::Act | DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra | DdrCmd::Pre
        );
        if banked && bank >= self.layout.banks {
            return;
        }
        let mut n = Counts {
            on,
            counts: &mut self.counts,
            layout: self.layout,
            rank,
        };
        if self.busy_after[rank] != c.cycle + 1 {
            self.busy_after[rank] = c.cycle + 1;
            n.rank(RankCounter::BusyTicks);
        }
        let banks = self.layout.banks;
        match c.cmd {
            DdrCmd::Act => {
                n.bank(bank, BankCounter::Act);
                let s = &mut self.banks[rank * banks + bank];
                s.conflict = s.closed_row.is_some_and(|row| row != c.arg);
                s.closed_row = None;
                s.open = true;
                s.row = c.arg;
                s.used = false;
            }
            DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra => {
                let write = matches!(c.cmd, DdrCmd::Wr | DdrCmd::Wra);
                n.bank(
                    bank,
                    if write {
                        BankCounter::Wr
                    } else {
                        BankCounter::Rd
                    },
                );
                let s = &mut self.banks[rank * banks + bank];
                let outcome = if !s.open {
                    BankCounter::Miss
                } else if s.used {
                    BankCounter::Hit
                } else if s.conflict {
                    BankCounter::Conflict
                } else {
                    BankCounter::Miss
                };
                n.bank(bank, outcome);
                s.used = true;
                if matches!(c.cmd, DdrCmd::Rda | DdrCmd::Wra) {
                    n.bank(bank, BankCounter::Pre);
                    s.open = false;
                    s.closed_row = None;
                }
            }
            DdrCmd::Pre => {
                precharge(&mut n, &mut self.banks[rank * banks + bank], bank);
            }
            DdrCmd::Prea => {
                for b in 0..banks {
                    precharge(&mut n, &mut self.banks[rank * banks + b], b);
                }
            }
            DdrCmd::Ref => {
                n.rank(RankCounter::Ref);
                for s in &mut self.banks[rank * banks..(rank + 1) * banks] {
                    s.closed_row = None;
                }
            }
            _ => {}
        }
    }

    /// Closes the open interval at tick `end`: its record is sent if the
    /// path has room for it, counted unsent otherwise, skipped if empty.
    fn close(&mut self, end: u64, flags: u8) {
        let elapsed = end.saturating_sub(self.credit_tick);
        self.credit_tick = self.credit_tick.max(end);
        self.credit = self
            .credit
            .saturating_add(elapsed.saturating_mul(u64::from(self.ports) * u64::from(self.tick_ps)))
            .min(self.cap);
        self.counters.intervals += 1;
        let counters_empty = !self.enabled || self.counts.iter().all(|&c| c == 0);
        let reuse = match &mut self.reuse {
            Some(u) if self.reuse_on => Some(u),
            _ => None,
        };
        if counters_empty && reuse.as_ref().is_none_or(|u| u.is_empty()) {
            self.counters.empty_intervals += 1;
            self.counts.fill(0);
            if let Some(u) = reuse {
                u.take_record();
            }
            return;
        }
        let reuse = reuse.map(|u| u.take_record());
        let record = StatsRecord {
            board: self.board,
            flags,
            start_tick: self.start,
            end_tick: end,
            interval_log2: self.k,
            geometry: self.geometry,
            tick_ps: self.tick_ps,
            unsent_before: self.counters.unsent_pending.min(u64::from(u32::MAX)) as u32,
            counters: if self.enabled {
                self.counts
                    .iter()
                    .map(|&c| c.min(u64::from(u32::MAX)) as u32)
                    .collect()
            } else {
                Vec::new()
            },
            reuse,
        };
        self.counts.fill(0);
        let packets = record.emit_packets(self.seq, self.ports, self.max_counters);
        let wire: u64 = packets
            .iter()
            .map(|(_, _, b)| b.len() as u64 + WIRE_OVERHEAD_BYTES)
            .sum();
        let cost = wire * (8000 << self.share_log2);
        if cost > self.credit {
            self.counters.records_unsent += 1;
            self.counters.unsent_pending += 1;
            return;
        }
        self.credit -= cost;
        self.counters.unsent_pending = 0;
        self.counters.records_sent += 1;
        self.seq += packets.len() as u64;
        for (seq, port, bytes) in packets {
            self.counters.packets += 1;
            self.counters.bytes += bytes.len() as u64;
            self.packets.push(BoardPacket {
                port,
                seq,
                leave_tick: end,
                bytes,
            });
        }
    }

    /// Moves the statistics packets sent so far to `out`, in `seq` order.
    pub fn drain_packets(&mut self, out: &mut Vec<BoardPacket>) {
        out.append(&mut self.packets);
    }
}

/// The open interval's counters of one rank, counted only while on.
struct Counts<'a> {
    on: bool,
    counts: &'a mut [u64],
    layout: CounterLayout,
    rank: usize,
}

impl Counts<'_> {
    fn bank(&mut self, bank: usize, c: BankCounter) {
        if self.on {
            self.counts[self.layout.bank(self.rank, bank, c)] += 1;
        }
    }

    fn rank(&mut self, c: RankCounter) {
        if self.on {
            self.counts[self.layout.rank(self.rank, c)] += 1;
        }
    }
}

/// PRE of one bank (or one bank of a PREA): an open row closed with no
/// column command is an unused activation.
fn precharge(n: &mut Counts<'_>, s: &mut BankState, bank: usize) {
    n.bank(bank, BankCounter::Pre);
    if s.open {
        if !s.used {
            n.bank(bank, BankCounter::UnusedAct);
        }
        s.open = false;
        s.closed_row = Some(s.row);
    }
}
