//! A legal DDR command stream at the densest spacing the timing allows: the
//! board's worst case (board.md 2.2, "Why `E = 3` at `L = 8`"). Column
//! commands follow a fixed pattern of reads and writes over the ranks (same
//! rank streaks, write-to-read rank switches, alternating ranks), each at the
//! first tick at which the independent checker ([`crate::dram::StreamChecker`])
//! accepts it; ACT, PRE and refresh (PREA, REF every tREFI per rank) fill
//! the ticks the column commands leave. So every command is legal by the
//! checker's rules, and the column commands are as close as those rules let
//! them be, including a RD on one rank a few ticks after a WR on the other.
//! It generates commands only; it does not model a controller's queue.

use hmtt_format::{Command, DdrCmd, Geometry};

use crate::dram::{StreamChecker, Timing};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct FullRate {
    pub geometry: Geometry,
    pub timing: Timing,
    /// RD/WR commands in the stream.
    pub column_commands: u64,
    /// Rows used are `0..rows` (keep them below the config window).
    pub rows: u32,
    pub seed: u64,
}

impl FullRate {
    /// DDR3-1600 timing on `geometry`, rows in the lower half of each bank
    /// (far from the board's config window at the top of the last rank).
    pub fn ddr3_1600(geometry: Geometry, column_commands: u64, seed: u64) -> FullRate {
        FullRate {
            geometry,
            timing: Timing::DDR3_1600,
            column_commands,
            rows: geometry.rows() / 2,
            seed,
        }
    }
}

/// The column commands' order: `(write, rank)`, the rank taken modulo the
/// geometry's ranks. Write-to-read rank switches (the closest pairs: the
/// read's data starts `CL - CWL` ticks earlier relative to its command),
/// same-rank read and write streaks (one every tCCD), alternating ranks.
const PATTERN: [(bool, u32); 20] = [
    (true, 0),
    (false, 1),
    (false, 1),
    (false, 1),
    (false, 1),
    (true, 1),
    (false, 0),
    (false, 0),
    (true, 0),
    (true, 0),
    (true, 0),
    (true, 0),
    (false, 1),
    (false, 0),
    (false, 1),
    (false, 0),
    (true, 1),
    (true, 0),
    (true, 1),
    (false, 0),
];

#[derive(Debug, Clone, Copy, Default)]
struct Bank {
    open: bool,
    /// Column commands left before the bank is closed (a row miss follows).
    uses_left: u32,
}

/// A small xorshift generator: the stream depends on the seed only.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The stream (format.md §1), one command per tick at most.
pub fn full_rate_stream(cfg: &FullRate) -> Vec<Command> {
    let g = cfg.geometry;
    let tm = cfg.timing;
    let ranks = g.ranks();
    let nb = g.banks();
    let mut rng = Rng(cfg.seed | 1);
    let mut checker = StreamChecker::new(&g, &tm, 0);
    let mut banks = vec![Bank::default(); (ranks * nb) as usize];
    let mut next_bank = vec![0u32; ranks as usize];
    // Refreshes staggered over the ranks.
    let mut refresh_due: Vec<u64> = (0..u64::from(ranks))
        .map(|r| tm.trefi * (r + 1) / u64::from(ranks))
        .collect();
    let mut refreshing = vec![false; ranks as usize];
    let mut out = Vec::new();
    let mut columns = 0u64;
    let mut step = 0usize;
    let mut t = 0u64;
    let legal = |checker: &StreamChecker, c: &Command| {
        let mut trial = checker.clone();
        trial.feed(std::slice::from_ref(c));
        trial.violations() == checker.violations()
    };
    while columns < cfg.column_commands {
        for r in 0..ranks as usize {
            refreshing[r] |= t >= refresh_due[r];
        }
        let mut candidates: Vec<Command> = Vec::with_capacity(4);
        let at = |cmd, rank, bank, arg| Command {
            cycle: t,
            cmd,
            rank,
            bank,
            arg,
        };
        // 1. Refresh: close the rank, then REF.
        for r in 0..ranks {
            if refreshing[r as usize] {
                let open = (0..nb).any(|b| banks[(r * nb + b) as usize].open);
                candidates.push(if open {
                    at(DdrCmd::Prea, r, 0, 0)
                } else {
                    at(DdrCmd::Ref, r, 0, 0)
                });
            }
        }
        // 2. The pattern's next column command, to the rank's next open
        // bank; items of a rank being refreshed are passed over.
        for _ in 0..PATTERN.len() {
            if !refreshing[(PATTERN[step % PATTERN.len()].1 % ranks) as usize] {
                break;
            }
            step += 1;
        }
        let (write, rank) = PATTERN[step % PATTERN.len()];
        let rank = rank % ranks;
        if !refreshing[rank as usize] {
            let first = next_bank[rank as usize];
            if let Some(b) = (0..nb)
                .map(|i| (first + i) % nb)
                .find(|&b| banks[(rank * nb + b) as usize].open)
            {
                let column = rng.below(u64::from(g.lines_per_row())) as u32 * 8;
                let cmd = if write { DdrCmd::Wr } else { DdrCmd::Rd };
                candidates.push(at(cmd, rank, b, column));
            }
        }
        // 3. Close a bank that has had its hits; 4. open a closed one.
        for r in 0..ranks {
            for b in 0..nb {
                let bank = banks[(r * nb + b) as usize];
                if bank.open && bank.uses_left == 0 {
                    candidates.push(at(DdrCmd::Pre, r, b, 0));
                }
            }
        }
        for r in (0..ranks).filter(|&r| !refreshing[r as usize]) {
            if let Some(b) = (0..nb).find(|&b| !banks[(r * nb + b) as usize].open) {
                let row = rng.below(u64::from(cfg.rows.max(1))) as u32;
                candidates.push(at(DdrCmd::Act, r, b, row));
            }
        }
        if let Some(c) = candidates.into_iter().find(|c| legal(&checker, c)) {
            checker.feed(std::slice::from_ref(&c));
            let r = c.rank as usize;
            let bi = (c.rank * nb + c.bank) as usize;
            match c.cmd {
                DdrCmd::Rd | DdrCmd::Wr => {
                    banks[bi].uses_left = banks[bi].uses_left.saturating_sub(1);
                    next_bank[r] = (c.bank + 1) % nb;
                    columns += 1;
                    step += 1;
                }
                DdrCmd::Act => {
                    banks[bi] = Bank {
                        open: true,
                        uses_left: 4 + rng.below(29) as u32,
                    }
                }
                DdrCmd::Pre => banks[bi].open = false,
                DdrCmd::Prea => {
                    for b in 0..nb {
                        banks[(c.rank * nb + b) as usize].open = false;
                    }
                }
                DdrCmd::Ref => {
                    refreshing[r] = false;
                    refresh_due[r] += tm.trefi;
                }
                _ => {}
            }
            out.push(c);
        }
        t += 1;
    }
    out
}
