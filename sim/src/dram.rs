//! The DRAM controller model and a checker of its output.
//!
//! The controller keeps rows open (open-page policy), honours per-bank and
//! per-rank timing (tRCD, CL, CWL, tCCD, tRP, tRAS, tRC, tWR, tWTR, tRTP,
//! tRRD, tFAW), the data bus (burst length 8, read/write turnaround, rank
//! switching) and refresh (a PREA then a REF every tREFI per rank, nothing
//! to the rank for tRFC), and schedules in order (FCFS) or first-ready
//! first (FR-FCFS: row hits before older misses, with a starvation cap). It
//! emits the DDR command stream of format.md §1 with one command per cycle.
//!
//! I-code references are barriers: every older request is issued before
//! them and no younger one passes them, as an uncached access orders the
//! traffic around it. A request never passes an older one to the same line.
//!
//! [`check`] verifies a command stream against the same timing rules,
//! written independently from the scheduler so one can catch the other.

use hmtt_format::{Command, DdrCmd, DdrCoord, Geometry};
use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// DDR timing in command clocks (ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Timing {
    pub name: &'static str,
    /// Length of one tick in picoseconds.
    pub tick_ps: u16,
    pub cl: u64,
    pub cwl: u64,
    pub trcd: u64,
    pub trp: u64,
    pub tras: u64,
    pub trc: u64,
    pub tccd: u64,
    pub twr: u64,
    pub twtr: u64,
    pub trtp: u64,
    pub trrd: u64,
    /// Four-activate window (0: none).
    pub tfaw: u64,
    pub trefi: u64,
    pub trfc: u64,
    /// Extra data-bus cycles when the bus switches rank.
    pub trtrs: u64,
    /// Data-bus cycles of one BL8 burst.
    pub burst: u64,
    /// Mode-register-set to next command.
    pub tmod: u64,
    /// ZQ calibration at initialisation.
    pub tzqinit: u64,
}

impl Timing {
    /// DDR3-1600K (11-11-11), 1 KiB pages, 4 Gb devices.
    pub const DDR3_1600: Timing = Timing {
        name: "ddr3-1600",
        tick_ps: 1250,
        cl: 11,
        cwl: 8,
        trcd: 11,
        trp: 11,
        tras: 28,
        trc: 39,
        tccd: 4,
        twr: 12,
        twtr: 6,
        trtp: 6,
        trrd: 5,
        tfaw: 24,
        trefi: 6240,
        trfc: 208,
        trtrs: 2,
        burst: 4,
        tmod: 12,
        tzqinit: 512,
    };
    /// DDR2-400 (3-3-3), 1 Gb devices.
    pub const DDR2_400: Timing = Timing {
        name: "ddr2-400",
        tick_ps: 5000,
        cl: 3,
        cwl: 2,
        trcd: 3,
        trp: 3,
        tras: 8,
        trc: 11,
        tccd: 2,
        twr: 3,
        twtr: 2,
        trtp: 2,
        trrd: 2,
        tfaw: 8,
        trefi: 1560,
        trfc: 26,
        trtrs: 1,
        burst: 4,
        tmod: 2,
        tzqinit: 0,
    };
    /// DDR-200 (CL2), as on the paper's first board.
    pub const DDR_200: Timing = Timing {
        name: "ddr-200",
        tick_ps: 10000,
        cl: 2,
        cwl: 1,
        trcd: 2,
        trp: 2,
        tras: 5,
        trc: 7,
        tccd: 1,
        twr: 2,
        twtr: 1,
        trtp: 2,
        trrd: 2,
        tfaw: 0,
        trefi: 780,
        trfc: 8,
        trtrs: 1,
        burst: 4,
        tmod: 2,
        tzqinit: 0,
    };
    pub const ALL: [Timing; 3] = [Timing::DDR3_1600, Timing::DDR2_400, Timing::DDR_200];

    /// Write command to the end of its data burst.
    fn write_end(&self) -> u64 {
        self.cwl + self.burst
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::DDR3_1600
    }
}

impl FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Timing::ALL
            .into_iter()
            .find(|t| t.name.eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown speed grade '{s}' (known: {})",
                    Timing::ALL.map(|t| t.name).join(", ")
                )
            })
    }
}

/// Scheduling policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum Scheduler {
    /// Strictly in arrival order.
    Fcfs,
    /// Row hits first, then oldest first.
    #[default]
    FrFcfs,
}

impl FromStr for Scheduler {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fcfs" | "in-order" => Ok(Scheduler::Fcfs),
            "frfcfs" | "fr-fcfs" => Ok(Scheduler::FrFcfs),
            _ => Err(format!("unknown scheduler '{s}' (fcfs or frfcfs)")),
        }
    }
}

/// Controller parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ControllerConfig {
    pub timing: Timing,
    pub scheduler: Scheduler,
    /// Requests the controller holds; the CPU stalls when it is full.
    pub queue_depth: usize,
    /// FR-FCFS: after this many ticks of waiting the oldest request goes first.
    pub starvation_ticks: u64,
    /// Emit MRS/ZQ initialisation commands first.
    pub init_sequence: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            timing: Timing::default(),
            scheduler: Scheduler::default(),
            queue_depth: 16,
            starvation_ticks: 2000,
            init_sequence: true,
        }
    }
}

/// A memory request of one line.
#[derive(Debug, Clone)]
pub struct Request<M> {
    /// Tick at which the controller sees it.
    pub arrival: u64,
    pub coord: DdrCoord,
    pub write: bool,
    /// An I-code: nothing passes it either way.
    pub barrier: bool,
    pub meta: M,
}

/// A request served: the tick of its RD/WR command.
#[derive(Debug, Clone)]
pub struct Issued<M> {
    pub tick: u64,
    pub coord: DdrCoord,
    pub write: bool,
    pub meta: M,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bank {
    open: Option<u32>,
    /// Earliest ACT (tRP after PRE, tRC after ACT).
    next_act: u64,
    /// Earliest RD/WR (tRCD after ACT).
    next_col: u64,
    /// Earliest PRE (tRAS, tRTP, write recovery).
    next_pre: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Rank {
    next_act: u64,
    faw: [u64; 4],
    faw_next: usize,
    acts: u64,
    ref_due: u64,
    /// Earliest ACT after the last REF.
    ref_ready: u64,
    /// End of the last write burst to this rank (for tWTR).
    wr_end: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Act,
    Pre,
    Col,
    Prea,
    Ref,
}

#[derive(Debug, Clone, Copy)]
struct Choice {
    time: u64,
    action: Action,
    /// Queue index (requests) or rank (refresh).
    index: usize,
}

/// Counters of the controller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ControllerStats {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub activates: u64,
    pub precharges: u64,
    pub refreshes: u64,
    pub row_hits: u64,
    pub commands: u64,
}

/// One channel's controller.
#[derive(Debug)]
pub struct Controller<M> {
    cfg: ControllerConfig,
    geometry: Geometry,
    queue: VecDeque<Request<M>>,
    /// Whether each queued request needed no ACT (row hit on arrival at the head).
    banks: Vec<Bank>,
    ranks: Vec<Rank>,
    next_cmd: u64,
    last_col: Option<u64>,
    data_end: u64,
    data_rank: u32,
    data_write: bool,
    data_used: bool,
    commands: Vec<Command>,
    issued: Vec<Issued<M>>,
    /// Scratch: per-bank stamp of an older queued row hit.
    hit_seen: Vec<u64>,
    stamp: u64,
    pub stats: ControllerStats,
}

impl<M> Controller<M> {
    pub fn new(cfg: ControllerConfig, geometry: Geometry) -> Controller<M> {
        let t = cfg.timing;
        let nranks = geometry.ranks() as usize;
        let nbanks = geometry.banks() as usize;
        let mut c = Controller {
            cfg,
            geometry,
            queue: VecDeque::with_capacity(cfg.queue_depth.max(1)),
            banks: vec![Bank::default(); nranks * nbanks],
            ranks: (0..nranks)
                .map(|r| Rank {
                    // Ranks refresh staggered across the interval.
                    ref_due: t.trefi * (r as u64 + 1) / nranks as u64,
                    ..Rank::default()
                })
                .collect(),
            next_cmd: 0,
            last_col: None,
            data_end: 0,
            data_rank: 0,
            data_write: false,
            data_used: false,
            commands: Vec::new(),
            issued: Vec::new(),
            hit_seen: vec![0; nranks * nbanks],
            stamp: 0,
            stats: ControllerStats::default(),
        };
        if cfg.init_sequence {
            c.init();
        }
        c
    }

    /// Mode registers MR2, MR3, MR1, MR0 and ZQ calibration on every rank.
    fn init(&mut self) {
        let t = self.cfg.timing;
        let mut cycle = 0;
        for rank in 0..self.geometry.ranks() {
            for mr in [2u32, 3, 1, 0] {
                self.emit(cycle, DdrCmd::Mrs, rank, mr % self.geometry.banks(), 0);
                cycle += t.tmod;
            }
            self.emit(cycle, DdrCmd::Zq, rank, 0, 0);
            cycle += 1;
        }
        let ready = cycle + t.tzqinit;
        for b in &mut self.banks {
            b.next_act = ready;
        }
        for r in &mut self.ranks {
            r.ref_due += ready;
        }
        self.next_cmd = self.next_cmd.max(ready);
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    pub fn is_full(&self) -> bool {
        self.queue.len() >= self.cfg.queue_depth.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Adds a request; the caller has run the controller up to its arrival
    /// ([`run_until`](Self::run_until)) and made room if full.
    pub fn enqueue(&mut self, req: Request<M>) {
        debug_assert!(!self.is_full());
        self.stats.requests += 1;
        self.queue.push_back(req);
    }

    /// Issues every command that can go before tick `limit`. Requests that
    /// arrive at `limit` or later are not known yet, so nothing at or after
    /// `limit` is decided.
    pub fn run_until(&mut self, limit: u64) {
        if limit <= self.next_cmd {
            // The command bus is taken until then: nothing to decide yet.
            return;
        }
        while let Some(c) = self.pick(false) {
            if c.time >= limit {
                break;
            }
            self.apply(c);
        }
    }

    /// Runs until a request completes (the CPU is stalled on a full queue);
    /// returns the tick of its RD/WR command.
    pub fn make_room(&mut self) -> u64 {
        loop {
            let c = self
                .pick(true)
                .expect("a full queue always has a next command");
            let time = c.time;
            self.apply(c);
            if c.action == Action::Col {
                return time;
            }
        }
    }

    /// Serves every queued request.
    pub fn drain(&mut self) {
        while !self.queue.is_empty() {
            let c = self
                .pick(true)
                .expect("a queued request always has a next command");
            self.apply(c);
        }
    }

    /// Commands emitted so far (taken).
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.commands)
    }

    /// Requests served so far, in command order (taken).
    pub fn take_issued(&mut self) -> Vec<Issued<M>> {
        std::mem::take(&mut self.issued)
    }

    /// Requests served since the last call, appended to `out`.
    pub fn drain_issued(&mut self, out: &mut Vec<Issued<M>>) {
        out.append(&mut self.issued);
    }

    pub fn drain_commands(&mut self, out: &mut Vec<Command>) {
        out.append(&mut self.commands);
    }

    #[inline]
    fn bank_index(&self, rank: u32, bank: u32) -> usize {
        rank as usize * self.geometry.banks() as usize + bank as usize
    }

    fn emit(&mut self, cycle: u64, cmd: DdrCmd, rank: u32, bank: u32, arg: u32) {
        self.commands.push(Command {
            cycle,
            cmd,
            rank,
            bank,
            arg,
        });
        self.next_cmd = cycle + 1;
        self.stats.commands += 1;
    }

    fn act_time(&self, rank: u32, bank: usize) -> u64 {
        let r = &self.ranks[rank as usize];
        let mut t = self.banks[bank].next_act.max(r.next_act).max(r.ref_ready);
        if self.cfg.timing.tfaw > 0 && r.acts >= 4 {
            t = t.max(r.faw[r.faw_next] + self.cfg.timing.tfaw);
        }
        t
    }

    fn col_time(&self, rank: u32, bank: usize, write: bool) -> u64 {
        let tm = &self.cfg.timing;
        let mut t = self.banks[bank].next_col;
        if let Some(last) = self.last_col {
            t = t.max(last + tm.tccd);
        }
        let latency = if write { tm.cwl } else { tm.cl };
        if self.data_used {
            let gap = if !write && self.data_write {
                if rank == self.data_rank {
                    0
                } else {
                    tm.trtrs
                }
            } else if write && !self.data_write {
                2 + if rank == self.data_rank { 0 } else { tm.trtrs }
            } else if rank == self.data_rank {
                0
            } else {
                tm.trtrs
            };
            t = t.max((self.data_end + gap).saturating_sub(latency));
        }
        if !write {
            t = t.max(self.ranks[rank as usize].wr_end + tm.twtr);
        }
        t
    }

    /// The next command by policy; `None` when nothing is to be done
    /// (`drain`: also no refresh while the queue is empty).
    fn pick(&mut self, drain: bool) -> Option<Choice> {
        let floor = self.next_cmd;
        let mut best: Option<(Choice, (u8, usize))> = None;
        let consider =
            |c: Choice, prio: u8, age: usize, best: &mut Option<(Choice, (u8, usize))>| {
                let key = (prio, age);
                match best {
                    Some((b, bk)) if (b.time, *bk) <= (c.time, key) => {}
                    _ => *best = Some((c, key)),
                }
            };
        self.stamp += 1;
        let stamp = self.stamp;
        let in_order = self.cfg.scheduler == Scheduler::Fcfs
            || self
                .queue
                .front()
                .is_some_and(|q| floor.saturating_sub(q.arrival) > self.cfg.starvation_ticks);
        for i in 0..self.queue.len() {
            let q = &self.queue[i];
            let (coord, write, barrier, arrival) = (q.coord, q.write, q.barrier, q.arrival);
            if barrier && i > 0 {
                break;
            }
            let only_this = (in_order && i == 0) || barrier;
            if i > 0 && self.queue.iter().take(i).any(|o| o.coord == coord) {
                continue;
            }
            let (rank, row) = (coord.rank, coord.row);
            let bi = self.bank_index(rank, coord.bank);
            let bank = self.banks[bi];
            let (action, t, prio) = match bank.open {
                Some(open) if open == row => (Action::Col, self.col_time(rank, bi, write), 1),
                Some(_) => {
                    if self.hit_seen[bi] == stamp {
                        // An older request still wants this row open.
                        if only_this {
                            break;
                        }
                        continue;
                    }
                    (Action::Pre, bank.next_pre, 2)
                }
                None => (Action::Act, self.act_time(rank, bi), 2),
            };
            if bank.open == Some(row) {
                self.hit_seen[bi] = stamp;
            }
            let time = t.max(arrival).max(floor);
            // A due refresh goes first on its rank.
            if time < self.ranks[rank as usize].ref_due {
                let prio = if self.cfg.scheduler == Scheduler::Fcfs {
                    2
                } else {
                    prio
                };
                consider(
                    Choice {
                        time,
                        action,
                        index: i,
                    },
                    prio,
                    i,
                    &mut best,
                );
            }
            if only_this {
                break;
            }
        }
        // Refresh (after the requests): due ranks close their banks and refresh.
        if !(drain && self.queue.is_empty()) {
            for (r, rank) in self.ranks.iter().enumerate() {
                // A refresh happens at ref_due or later: it cannot beat an
                // earlier request command, so skip the bank scan then.
                if best.as_ref().is_some_and(|(b, _)| b.time < rank.ref_due) {
                    continue;
                }
                let nb = self.geometry.banks() as usize;
                let banks = &self.banks[r * nb..(r + 1) * nb];
                let any_open = banks.iter().any(|b| b.open.is_some());
                let (action, t) = if any_open {
                    let t = banks
                        .iter()
                        .filter(|b| b.open.is_some())
                        .map(|b| b.next_pre)
                        .max()
                        .unwrap_or(0);
                    (Action::Prea, t)
                } else {
                    let t = banks.iter().map(|b| b.next_act).max().unwrap_or(0);
                    (Action::Ref, t.max(rank.ref_ready))
                };
                let time = t.max(rank.ref_due).max(floor);
                consider(
                    Choice {
                        time,
                        action,
                        index: r,
                    },
                    0,
                    0,
                    &mut best,
                );
            }
        }
        best.map(|(c, _)| c)
    }

    fn apply(&mut self, c: Choice) {
        let tm = self.cfg.timing;
        let t = c.time;
        match c.action {
            Action::Prea | Action::Ref => {
                let r = c.index;
                let nb = self.geometry.banks() as usize;
                if c.action == Action::Prea {
                    for b in &mut self.banks[r * nb..(r + 1) * nb] {
                        if b.open.take().is_some() {
                            b.next_act = b.next_act.max(t + tm.trp);
                        }
                    }
                    self.stats.precharges += 1;
                    self.emit(t, DdrCmd::Prea, r as u32, 0, 0);
                } else {
                    let rank = &mut self.ranks[r];
                    rank.ref_ready = t + tm.trfc;
                    rank.ref_due += tm.trefi;
                    self.stats.refreshes += 1;
                    self.emit(t, DdrCmd::Ref, r as u32, 0, 0);
                }
            }
            Action::Act | Action::Pre | Action::Col => {
                let q = &self.queue[c.index];
                let (coord, write) = (q.coord, q.write);
                let bi = self.bank_index(coord.rank, coord.bank);
                match c.action {
                    Action::Act => {
                        let b = &mut self.banks[bi];
                        b.open = Some(coord.row);
                        b.next_col = t + tm.trcd;
                        b.next_pre = t + tm.tras;
                        b.next_act = t + tm.trc;
                        let r = &mut self.ranks[coord.rank as usize];
                        r.next_act = t + tm.trrd;
                        r.faw[r.faw_next] = t;
                        r.faw_next = (r.faw_next + 1) % 4;
                        r.acts += 1;
                        self.stats.activates += 1;
                        self.emit(t, DdrCmd::Act, coord.rank, coord.bank, coord.row);
                    }
                    Action::Pre => {
                        let b = &mut self.banks[bi];
                        b.open = None;
                        b.next_act = b.next_act.max(t + tm.trp);
                        self.stats.precharges += 1;
                        self.emit(t, DdrCmd::Pre, coord.rank, coord.bank, 0);
                    }
                    _ => {
                        let b = &mut self.banks[bi];
                        if write {
                            b.next_pre = b.next_pre.max(t + tm.write_end() + tm.twr);
                            self.ranks[coord.rank as usize].wr_end = t + tm.write_end();
                            self.data_end = t + tm.write_end();
                            self.stats.writes += 1;
                        } else {
                            b.next_pre = b.next_pre.max(t + tm.trtp);
                            self.data_end = t + tm.cl + tm.burst;
                            self.stats.reads += 1;
                        }
                        self.data_rank = coord.rank;
                        self.data_write = write;
                        self.data_used = true;
                        self.last_col = Some(t);
                        let cmd = if write { DdrCmd::Wr } else { DdrCmd::Rd };
                        self.emit(t, cmd, coord.rank, coord.bank, coord.col_line << 3);
                        let q = self.queue.remove(c.index).expect("index valid");
                        self.issued.push(Issued {
                            tick: t,
                            coord,
                            write,
                            meta: q.meta,
                        });
                    }
                }
            }
        }
    }
}

/// A timing or protocol rule a command stream broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// 0-based index of the offending command.
    pub index: usize,
    pub command: Command,
    pub rule: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "command {} ({}): {}",
            self.index, self.command, self.rule
        )
    }
}

/// Verifies a single-channel command stream: one command per cycle, ACT
/// only to a precharged bank, RD/WR only to an open one, and every timing
/// constraint of `timing` (including refresh at least every 9 × tREFI per
/// rank, as JEDEC allows eight postponed refreshes). Returns every
/// violation found (empty: legal).
pub fn check(commands: &[Command], geometry: &Geometry, timing: &Timing) -> Vec<Violation> {
    let mut checker = StreamChecker::new(geometry, timing, usize::MAX);
    checker.feed(commands);
    checker.finish().0
}

#[derive(Debug, Clone, Copy, Default)]
struct CheckedBank {
    open: Option<u32>,
    act: Option<u64>,
    pre: Option<u64>,
    rd: Option<u64>,
    wr: Option<u64>,
}

#[derive(Debug, Clone, Default)]
struct CheckedRank {
    /// The last four ACTs (tRRD, tFAW).
    acts: Vec<u64>,
    refresh: Option<u64>,
    last_wr: Option<u64>,
}

/// [`check`] on a stream that arrives in pieces: the same rules, state
/// kept between [`StreamChecker::feed`] calls, so a long run is checked in
/// bounded memory (the first `keep` violations are kept, all are counted).
#[derive(Debug, Clone)]
pub struct StreamChecker {
    geometry: Geometry,
    timing: Timing,
    banks: Vec<CheckedBank>,
    ranks: Vec<CheckedRank>,
    /// Data-bus bursts: (start, end, rank, write) of the last burst.
    last_burst: Option<(u64, u64, u32, bool)>,
    /// The last column command per rank: tCCD binds the commands of one
    /// rank; across ranks only the data bus does (JEDEC, and DRAMsim3's
    /// rank-to-rank rules).
    last_col: Vec<Option<u64>>,
    last: Option<Command>,
    /// Commands checked so far.
    index: usize,
    keep: usize,
    kept: Vec<Violation>,
    total: u64,
}

impl StreamChecker {
    pub fn new(geometry: &Geometry, timing: &Timing, keep: usize) -> StreamChecker {
        StreamChecker {
            geometry: *geometry,
            timing: *timing,
            banks: vec![CheckedBank::default(); (geometry.banks() * geometry.ranks()) as usize],
            ranks: vec![CheckedRank::default(); geometry.ranks() as usize],
            last_burst: None,
            last_col: vec![None; geometry.ranks() as usize],
            last: None,
            index: 0,
            keep,
            kept: Vec::new(),
            total: 0,
        }
    }

    /// Violations so far.
    pub fn violations(&self) -> u64 {
        self.total
    }

    fn report(&mut self, index: usize, command: Command, rule: String) {
        self.total += 1;
        if self.kept.len() < self.keep {
            self.kept.push(Violation {
                index,
                command,
                rule,
            });
        }
    }

    /// Checks the next commands of the stream.
    pub fn feed(&mut self, commands: &[Command]) {
        for c in commands {
            self.command(c);
            self.index += 1;
        }
    }

    fn command(&mut self, c: &Command) {
        let geometry = self.geometry;
        let tm = self.timing;
        let index = self.index;
        let nb = geometry.banks() as usize;
        let since = |a: Option<u64>, t: u64, need: u64| a.is_none_or(|a| t >= a + need);
        let t = c.cycle;
        let mut found: Vec<String> = Vec::new();
        let mut bad = |rule: String| found.push(rule);
        let prev_cycle = self.last.map(|l| l.cycle);
        self.last = Some(*c);
        if let Some(p) = prev_cycle {
            if t <= p {
                bad(format!(
                    "two commands in cycle {t} or time going back (previous {p})"
                ));
            }
        }
        let addressed =
            c.cmd.needs_all_fields() || matches!(c.cmd, DdrCmd::Pre | DdrCmd::Prea | DdrCmd::Ref);
        if addressed && (c.rank >= geometry.ranks() || c.bank >= geometry.banks()) {
            bad(format!(
                "rank {} bank {} outside the geometry",
                c.rank, c.bank
            ));
        } else {
            let banks = &mut self.banks;
            let ranks = &mut self.ranks;
            let bi = c.rank as usize * nb + c.bank as usize;
            let ri = c.rank as usize;
            match c.cmd {
                DdrCmd::Act => {
                    let b = banks[bi];
                    if b.open.is_some() {
                        bad("ACT to a bank with an open row".into());
                    }
                    if u64::from(c.arg) >= u64::from(geometry.rows()) {
                        bad(format!("row {} outside the geometry", c.arg));
                    }
                    if !since(b.pre, t, tm.trp) {
                        bad("tRP: ACT too soon after PRE".into());
                    }
                    if !since(b.act, t, tm.trc) {
                        bad("tRC: ACT too soon after ACT to the same bank".into());
                    }
                    let r = &ranks[ri];
                    if !since(r.acts.last().copied(), t, tm.trrd) {
                        bad("tRRD: ACT too soon after ACT on the same rank".into());
                    }
                    if tm.tfaw > 0 && r.acts.len() >= 4 && t < r.acts[r.acts.len() - 4] + tm.tfaw {
                        bad("tFAW: fifth ACT inside the four-activate window".into());
                    }
                    if !since(r.refresh, t, tm.trfc) {
                        bad("tRFC: ACT too soon after REF".into());
                    }
                    let r = &mut ranks[ri];
                    r.acts.push(t);
                    if r.acts.len() > 4 {
                        r.acts.remove(0);
                    }
                    banks[bi].open = Some(c.arg);
                    banks[bi].act = Some(t);
                }
                DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra => {
                    let write = c.cmd.is_write();
                    let b = banks[bi];
                    if b.open.is_none() {
                        bad("column command to a precharged bank".into());
                    }
                    if !c.arg.is_multiple_of(8)
                        || u64::from(c.arg >> 3) >= u64::from(geometry.lines_per_row())
                    {
                        bad(format!("column {} not a BL8 start inside the row", c.arg));
                    }
                    if !since(b.act, t, tm.trcd) {
                        bad("tRCD: column command too soon after ACT".into());
                    }
                    if !since(self.last_col[ri], t, tm.tccd.max(tm.burst)) {
                        bad("tCCD: column commands to one rank closer than a burst".into());
                    }
                    let start = t + if write { tm.cwl } else { tm.cl };
                    if let Some((_, end, rank, was_write)) = self.last_burst {
                        let need = match (was_write, write) {
                            (false, true) => 2,
                            _ => 0,
                        } + if rank == c.rank { 0 } else { tm.trtrs };
                        if start < end + need {
                            bad(format!(
                                "data bus: burst at {start} overlaps or turns around too soon after one ending at {end}"
                            ));
                        }
                    }
                    if !write && !since(ranks[ri].last_wr, t, tm.cwl + tm.burst + tm.twtr) {
                        bad("tWTR: read too soon after a write on the same rank".into());
                    }
                    self.last_burst = Some((start, start + tm.burst, c.rank, write));
                    self.last_col[ri] = Some(t);
                    if write {
                        banks[bi].wr = Some(t);
                        ranks[ri].last_wr = Some(t);
                    } else {
                        banks[bi].rd = Some(t);
                    }
                }
                DdrCmd::Pre | DdrCmd::Prea => {
                    let range = if c.cmd == DdrCmd::Pre {
                        bi..bi + 1
                    } else {
                        ri * nb..(ri + 1) * nb
                    };
                    for i in range {
                        let b = banks[i];
                        if b.open.is_some() {
                            if !since(b.act, t, tm.tras) {
                                bad(format!(
                                    "tRAS: bank {} precharged too soon after ACT",
                                    i % nb
                                ));
                            }
                            if !since(b.rd, t, tm.trtp) {
                                bad(format!(
                                    "tRTP: bank {} precharged too soon after RD",
                                    i % nb
                                ));
                            }
                            if !since(b.wr, t, tm.cwl + tm.burst + tm.twr) {
                                bad(format!("tWR: bank {} precharged too soon after WR", i % nb));
                            }
                            banks[i].open = None;
                            banks[i].pre = Some(t);
                        }
                    }
                }
                DdrCmd::Ref => {
                    for (i, b) in banks[ri * nb..(ri + 1) * nb].iter().enumerate() {
                        if b.open.is_some() {
                            bad(format!("REF with bank {i} open"));
                        }
                        if !since(b.pre, t, tm.trp) {
                            bad(format!("tRP: REF too soon after precharging bank {i}"));
                        }
                    }
                    let r = &mut ranks[ri];
                    if !since(r.refresh, t, tm.trfc) {
                        bad("tRFC: REF too soon after REF".into());
                    }
                    let prev = r.refresh.unwrap_or(0);
                    if t - prev.min(t) > 9 * tm.trefi {
                        bad(format!("refresh interval {} exceeds 9 x tREFI", t - prev));
                    }
                    r.refresh = Some(t);
                }
                DdrCmd::Mrs | DdrCmd::Zq | DdrCmd::Nop | DdrCmd::Unknown => {}
            }
        }
        for rule in found {
            self.report(index, *c, rule);
        }
    }

    /// Ends the stream: a long one must keep refreshing up to its end.
    /// Returns the kept violations and how many there were in all.
    pub fn finish(mut self) -> (Vec<Violation>, u64) {
        if let Some(last) = self.last {
            let tm = self.timing;
            for r in 0..self.ranks.len() {
                let prev = self.ranks[r].refresh.unwrap_or(0);
                if last.cycle > prev + 9 * tm.trefi + tm.trfc {
                    self.report(
                        self.index - 1,
                        last,
                        format!("rank {r} not refreshed since cycle {prev}"),
                    );
                }
            }
        }
        (self.kept, self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coord(rank: u32, bank: u32, row: u32, col_line: u32) -> DdrCoord {
        DdrCoord {
            rank,
            bank,
            row,
            col_line,
        }
    }

    fn run(
        scheduler: Scheduler,
        reqs: &[(u64, DdrCoord, bool)],
    ) -> (Vec<Command>, Vec<Issued<usize>>) {
        let g = Geometry::ddr3_default();
        let mut c = Controller::new(
            ControllerConfig {
                scheduler,
                ..Default::default()
            },
            g,
        );
        for (i, &(arrival, coord, write)) in reqs.iter().enumerate() {
            c.run_until(arrival);
            if c.is_full() {
                c.make_room();
            }
            c.enqueue(Request {
                arrival,
                coord,
                write,
                barrier: false,
                meta: i,
            });
        }
        c.drain();
        (c.take_commands(), c.take_issued())
    }

    #[test]
    fn checking_in_pieces_finds_what_checking_whole_finds() {
        let g = Geometry::ddr3_default();
        let tm = Timing::DDR3_1600;
        // Broken on purpose: ACT then RD too soon, a second ACT to the open
        // bank, a RD to a precharged bank, a time going back, no refresh.
        let mut cmds = Vec::new();
        for i in 0..40u64 {
            let t = i * 3 + if i == 30 { 0 } else { 7 };
            let cmd = match i % 4 {
                0 => DdrCmd::Act,
                1 => DdrCmd::Rd,
                2 => DdrCmd::Pre,
                _ => DdrCmd::Wr,
            };
            cmds.push(Command {
                cycle: t + i * 4000,
                cmd,
                rank: (i % 2) as u32,
                bank: (i % 3) as u32,
                arg: 8 * (i as u32 % 5),
            });
        }
        let whole = check(&cmds, &g, &tm);
        assert!(whole.len() > 10, "{}", whole.len());
        for piece in [1, 3, 7, 40] {
            let mut c = StreamChecker::new(&g, &tm, 5);
            for p in cmds.chunks(piece) {
                c.feed(p);
            }
            // The stream's end adds the ranks never refreshed.
            assert_eq!(c.violations() + 2, whole.len() as u64);
            let (kept, total) = c.finish();
            assert_eq!(total, whole.len() as u64);
            assert_eq!(kept[..], whole[..5]);
        }
    }

    #[test]
    fn open_page_hits_need_one_act() {
        let reqs: Vec<_> = (0..8).map(|i| (0, coord(0, 1, 5, i), i % 2 == 1)).collect();
        let (cmds, issued) = run(Scheduler::Fcfs, &reqs);
        let g = Geometry::ddr3_default();
        assert!(check(&cmds, &g, &Timing::DDR3_1600).is_empty());
        assert_eq!(cmds.iter().filter(|c| c.cmd == DdrCmd::Act).count(), 1);
        let order: Vec<usize> = issued.iter().map(|i| i.meta).collect();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn frfcfs_serves_row_hits_first_and_stays_legal() {
        // Alternate two rows of one bank: FR-FCFS groups them.
        let reqs: Vec<_> = (0..12)
            .map(|i| (0, coord(0, 0, (i % 2) as u32, i as u32 / 2), false))
            .collect();
        let (cmds_in, _) = run(Scheduler::Fcfs, &reqs);
        let (cmds_fr, issued) = run(Scheduler::FrFcfs, &reqs);
        let g = Geometry::ddr3_default();
        assert_eq!(check(&cmds_in, &g, &Timing::DDR3_1600), vec![]);
        assert_eq!(check(&cmds_fr, &g, &Timing::DDR3_1600), vec![]);
        let acts = |c: &[Command]| c.iter().filter(|c| c.cmd == DdrCmd::Act).count();
        assert_eq!(acts(&cmds_in), 12);
        assert!(acts(&cmds_fr) < 12);
        assert_eq!(issued.len(), 12);
    }

    #[test]
    fn tccd_binds_one_rank_and_the_data_bus_binds_two() {
        let g = Geometry::ddr3_default();
        let t = Timing::DDR3_1600;
        let cmd = |cycle, cmd, rank, bank, arg| Command {
            cycle,
            cmd,
            rank,
            bank,
            arg,
        };
        let opened = |rest: &[Command]| {
            let mut s = vec![
                cmd(100, DdrCmd::Act, 0, 0, 1),
                cmd(106, DdrCmd::Act, 1, 0, 1),
            ];
            s.extend_from_slice(rest);
            check(&s, &g, &t)
        };
        // WR on rank 0, RD on rank 1: write data [128, 132), read data from
        // 120 + 3 + 11 = 134, after the rank switch (tRTRS 2).
        let wr_rd = [cmd(120, DdrCmd::Wr, 0, 0, 0), cmd(123, DdrCmd::Rd, 1, 0, 0)];
        assert_eq!(opened(&wr_rd), vec![]);
        // One tick closer, the read's data leaves no rank-switch gap.
        let too_close = [cmd(120, DdrCmd::Wr, 0, 0, 0), cmd(122, DdrCmd::Rd, 1, 0, 0)];
        assert!(opened(&too_close)[0].rule.starts_with("data bus"));
        // Same rank, 3 ticks apart: tCCD.
        let same_rank = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(123, DdrCmd::Rd, 0, 0, 8)];
        assert!(opened(&same_rank)[0].rule.starts_with("tCCD"));
        // Reads on two ranks need a burst and the switch between them.
        let rd_rd = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(125, DdrCmd::Rd, 1, 0, 0)];
        assert!(!opened(&rd_rd).is_empty());
        let rd_rd = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(126, DdrCmd::Rd, 1, 0, 0)];
        assert_eq!(opened(&rd_rd), vec![]);
    }

    #[test]
    fn checker_catches_violations() {
        let g = Geometry::ddr3_default();
        let t = Timing::DDR3_1600;
        let cmd = |cycle, cmd, bank, arg| Command {
            cycle,
            cmd,
            rank: 0,
            bank,
            arg,
        };
        let bad = [
            vec![cmd(100, DdrCmd::Rd, 0, 0)],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(105, DdrCmd::Rd, 0, 0)],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(120, DdrCmd::Pre, 0, 0)],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(101, DdrCmd::Act, 1, 1)],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(200, DdrCmd::Act, 0, 2)],
            vec![
                cmd(100, DdrCmd::Act, 0, 1),
                cmd(120, DdrCmd::Rd, 0, 0),
                cmd(122, DdrCmd::Rd, 0, 8),
            ],
            vec![
                cmd(100, DdrCmd::Act, 0, 1),
                cmd(120, DdrCmd::Wr, 0, 0),
                cmd(125, DdrCmd::Rd, 0, 8),
            ],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(200, DdrCmd::Ref, 0, 0)],
            vec![cmd(100, DdrCmd::Act, 0, 1), cmd(100, DdrCmd::Act, 1, 1)],
        ];
        for (i, stream) in bad.iter().enumerate() {
            assert!(!check(stream, &g, &t).is_empty(), "case {i} passed");
        }
        let good = vec![
            cmd(100, DdrCmd::Act, 0, 1),
            cmd(111, DdrCmd::Rd, 0, 0),
            cmd(115, DdrCmd::Rd, 0, 8),
            cmd(128, DdrCmd::Pre, 0, 0),
            cmd(139, DdrCmd::Ref, 0, 0),
        ];
        assert_eq!(check(&good, &g, &t), vec![]);
    }
}
