//! One channel's DRAM controller: open-page, per-bank and per-rank timing,
//! the data bus, refresh, and FCFS or FR-FCFS scheduling; it emits the DDR
//! command stream of format.md §1, one command per cycle.

use hmtt_format::{Command, DdrCmd, DdrCoord, Geometry};
use std::collections::VecDeque;
use std::str::FromStr;

use super::Timing;

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

/// Word-sized, so a [`Choice`] is stored and loaded in whole words: with a
/// byte-sized tag, reading back a choice just written stalled the store
/// buffer on every pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
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
    /// The last pick and whether it left refresh out: still the next
    /// command until a command is applied or a request that can change the
    /// choice arrives. `run_until` ends on a pick that is too late, and the
    /// next call would otherwise make the same one again.
    picked: Option<(bool, Option<Choice>)>,
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
            picked: None,
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
        // FCFS looks at the head only: a request behind it changes nothing.
        if self.cfg.scheduler != Scheduler::Fcfs || self.queue.is_empty() {
            self.picked = None;
        }
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
        loop {
            if self.queue.is_empty() && self.ranks.iter().all(|r| r.ref_due >= limit) {
                // With no request queued only a refresh can come, and none
                // before its rank's `ref_due`: the pick, which scans the
                // banks for it, would come back too late. A CPU without a
                // cache often finds the queue emptied by the command before.
                return;
            }
            match self.pick(false) {
                Some(c) if c.time < limit => self.apply(c),
                _ => return,
            }
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

    /// Requests served since the last call, in command order.
    pub fn issued_drain(&mut self) -> std::vec::Drain<'_, Issued<M>> {
        self.issued.drain(..)
    }

    /// Puts the commands emitted so far into `out` (taken empty: its room
    /// is kept for the commands to come).
    pub fn swap_commands(&mut self, out: &mut Vec<Command>) {
        out.clear();
        std::mem::swap(&mut self.commands, out);
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
        let no_refresh = drain && self.queue.is_empty();
        if let Some((n, c)) = self.picked {
            if n == no_refresh {
                return c;
            }
        }
        let c = self.choose(no_refresh);
        self.picked = Some((no_refresh, c));
        c
    }

    /// [`pick`](Self::pick) without its memory: a function of the state
    /// that only `apply` and `enqueue` change.
    #[inline(always)]
    fn choose(&mut self, no_refresh: bool) -> Option<Choice> {
        let floor = self.next_cmd;
        let mut best = if self.cfg.scheduler == Scheduler::Fcfs {
            self.head_choice(floor)
        } else {
            self.request_choice(floor)
        };
        if !no_refresh {
            self.refresh_choice(floor, &mut best);
        }
        best.map(|(c, _)| c)
    }

    /// Keeps `c` in `best` if it goes first: the earlier, then by
    /// (priority, age).
    #[inline(always)]
    fn consider(c: Choice, prio: u8, age: usize, best: &mut Option<(Choice, (u8, usize))>) {
        let key = (prio, age);
        match best {
            Some((b, bk)) if (b.time, *bk) <= (c.time, key) => {}
            _ => *best = Some((c, key)),
        }
    }

    /// FCFS: the next command of the oldest request, as
    /// [`request_choice`](Self::request_choice) finds it in order (the
    /// head, alone, at priority 2), without the scan.
    #[inline(always)]
    fn head_choice(&self, floor: u64) -> Option<(Choice, (u8, usize))> {
        let q = self.queue.front()?;
        let coord = q.coord;
        let bi = self.bank_index(coord.rank, coord.bank);
        let bank = self.banks[bi];
        let (action, t) = match bank.open {
            Some(open) if open == coord.row => {
                (Action::Col, self.col_time(coord.rank, bi, q.write))
            }
            Some(_) => (Action::Pre, bank.next_pre),
            None => (Action::Act, self.act_time(coord.rank, bi)),
        };
        let time = t.max(q.arrival).max(floor);
        (time < self.ranks[coord.rank as usize].ref_due).then_some((
            Choice {
                time,
                action,
                index: 0,
            },
            (2, 0),
        ))
    }

    /// FR-FCFS: the first command among the queued requests, row hits
    /// first, the oldest alone once it has starved.
    #[inline(always)]
    fn request_choice(&mut self, floor: u64) -> Option<(Choice, (u8, usize))> {
        let consider = Self::consider;
        let mut best: Option<(Choice, (u8, usize))> = None;
        self.stamp += 1;
        let stamp = self.stamp;
        let in_order = self
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
        best
    }

    /// A due refresh, if it goes before `best`.
    #[inline(always)]
    fn refresh_choice(&self, floor: u64, best: &mut Option<(Choice, (u8, usize))>) {
        let consider = Self::consider;
        // Due ranks close their banks and refresh.
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
                best,
            );
        }
    }

    fn apply(&mut self, c: Choice) {
        self.picked = None;
        // Borrowed, not copied: the timing table is large and apply runs
        // once a command.
        let tm = &self.cfg.timing;
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
                        // FCFS always serves the head, which pop_front takes
                        // without remove's shifting.
                        let q = if c.index == 0 {
                            self.queue.pop_front()
                        } else {
                            self.queue.remove(c.index)
                        }
                        .expect("index valid");
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
