//! The timing checker: a command stream against the timing rules, written
//! independently of the controller so that one can catch the other.

use hmtt_format::{Command, DdrCmd, Geometry};
use std::fmt;

use super::Timing;

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
