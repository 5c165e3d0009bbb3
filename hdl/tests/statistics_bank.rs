//! One bank's counters (`hmtt_hdl::statistics::BankStats`) against the
//! bank's lanes applied one after another, as board.md's unit applies a
//! clock's commands: random lanes crowded onto the bank (several ACT,
//! PRE, PREA, REF and column commands in one clock, rows that repeat), so
//! that every way the block's summary of a clock can meet the state
//! occurs, and each interval's eight counters must equal the recount.

use hmtt_hdl::statistics::{BankStats, BANK_COUNTERS, LANE_ADDR_BITS, LANE_PAIR_BITS};
use rust_hdl::prelude::*;

const L: usize = 8;

/// Lane kinds by the unit's numbers: ACT 1, RD 2, WR 3, RDA 4, WRA 5,
/// PRE 6, PREA 7, REF 8; 0 none.
#[derive(Clone, Copy, Default)]
struct Lane {
    kind: u8,
    bank: bool,
    rank: bool,
    row: u64,
}

/// The bank as board.md states it, one command at a time.
#[derive(Default)]
struct Bank {
    open: bool,
    used: bool,
    conflict_next: bool,
    closed_valid: bool,
    row: u64,
    closed_row: u64,
}

impl Bank {
    /// Applies `lane`, counting into `c` (format.md §5.3 order).
    fn apply(&mut self, lane: Lane, c: &mut [u64; BANK_COUNTERS]) {
        let act = lane.kind == 1 && lane.bank;
        let column = (2..=5).contains(&lane.kind) && lane.bank;
        let write = matches!(lane.kind, 3 | 5);
        let auto = matches!(lane.kind, 4 | 5);
        let pre = (lane.kind == 6 && lane.bank) || (lane.kind == 7 && lane.rank);
        let refresh = lane.kind == 8 && lane.rank;
        if column {
            c[if write { 1 } else { 0 }] += 1;
            if self.open && self.used {
                c[4] += 1;
            } else if self.open && self.conflict_next {
                c[6] += 1;
            } else {
                c[5] += 1;
            }
            self.used = true;
            if auto {
                c[3] += 1;
                self.open = false;
                self.closed_valid = false;
            }
        }
        if act {
            c[2] += 1;
            self.conflict_next = self.closed_valid && self.closed_row != lane.row;
            self.closed_valid = false;
            self.open = true;
            self.used = false;
            self.row = lane.row;
        }
        if pre {
            c[3] += 1;
            if self.open {
                if !self.used {
                    c[7] += 1;
                }
                self.open = false;
                self.closed_valid = true;
                self.closed_row = self.row;
            }
        }
        if refresh {
            self.closed_valid = false;
        }
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn random_lanes(rng: &mut Rng) -> [Lane; L] {
    // Three rows, two of them a bit apart, so that rows meet their equal
    // and their neighbours.
    const ROWS: [u64; 3] = [0x2_0F0F, 0x2_0F0E, 0x1_5555];
    std::array::from_fn(|_| {
        let kind = if rng.below(5) == 0 {
            0
        } else {
            1 + rng.below(8) as u8
        };
        let bank = rng.below(10) < 7;
        Lane {
            kind,
            bank,
            rank: bank || rng.below(2) == 0,
            row: ROWS[rng.below(3) as usize],
        }
    })
}

fn vector(bits: impl Fn(usize) -> bool) -> Bits<L> {
    let mut v = 0u64;
    for j in 0..L {
        if bits(j) {
            v |= 1 << j;
        }
    }
    v.to_bits()
}

fn drive(x: &mut BankStats<L>, lanes: &[Lane; L]) {
    let is = |kinds: &'static [u8]| vector(move |j| kinds.contains(&lanes[j].kind));
    let to_bank =
        |kinds: &'static [u8]| vector(move |j| kinds.contains(&lanes[j].kind) && lanes[j].bank);
    let to_rank =
        |kinds: &'static [u8]| vector(move |j| kinds.contains(&lanes[j].kind) && lanes[j].rank);
    x.act.next = to_bank(&[1]);
    x.column.next = to_bank(&[2, 3, 4, 5]);
    x.write.next = is(&[3, 5]);
    x.auto.next = to_bank(&[4, 5]);
    x.pre.next = to_bank(&[6]) | to_rank(&[7]);
    x.refresh.next = to_rank(&[8]);
    let mut addr: Bits<LANE_ADDR_BITS> = 0.into();
    for (j, lane) in lanes.iter().enumerate() {
        let row: Bits<18> = lane.row.to_bits();
        let shift: Bits<8> = ((18 * j) as u64).to_bits();
        addr = addr | (bit_cast::<LANE_ADDR_BITS, 18>(row) << shift);
    }
    x.addr.next = addr;
    let mut ne = 0u64;
    for k in 0..L {
        for j in 0..L {
            if lanes[k].row != lanes[j].row {
                ne |= 1 << (8 * k + j);
            }
        }
    }
    let ne: Bits<LANE_PAIR_BITS> = ne.to_bits();
    x.addr_ne.next = ne;
}

/// Intervals of 3 to 12 clocks over `clocks` clocks of random lanes; the
/// lanes of clock `n` count at clock `n + 2`, where `close` opens the
/// next interval, and its snapshot shows two clocks after the close.
fn bank_matches_recount(seed: u64, clocks: u64) {
    let mut uut = BankStats::<L>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<BankStats<L>>| x.clock.next = !x.clock.val());
    sim.add_testbench(move |mut sim: Sim<BankStats<L>>| {
        let mut x = sim.init()?;
        let mut rng = Rng(seed);
        let mut bank = Bank::default();
        let mut open_counts = [0u64; BANK_COUNTERS];
        let mut closed: Option<(u64, [u64; BANK_COUNTERS])> = None;
        let mut next_close = 4;
        let mut intervals = 0;
        let mut seen = [0u64; BANK_COUNTERS];
        // The lanes of the clock before and of the one before that.
        let mut waiting = [Lane::default(); L];
        let mut counting = [Lane::default(); L];
        x.enable.next = true;
        for clock in 0..clocks {
            let lanes = if clock + 3 < clocks {
                random_lanes(&mut rng)
            } else {
                [Lane::default(); L]
            };
            drive(&mut x, &lanes);
            // This clock counts the lanes of two clocks before.
            x.close.next = clock == next_close;
            if clock == next_close {
                closed = Some((clock + 2, open_counts));
                open_counts = [0; BANK_COUNTERS];
                next_close = clock + 3 + rng.below(10);
            }
            for lane in counting {
                bank.apply(lane, &mut open_counts);
            }
            counting = waiting;
            waiting = lanes;
            wait_clock_cycle!(sim, clock, x);
            if let Some((at, expect)) = closed {
                if clock + 1 == at {
                    let got: Vec<u64> = x
                        .counters()
                        .iter()
                        .map(|c| c.snapshot.val().to_u64())
                        .collect();
                    sim_assert_eq!(sim, got, expect.to_vec(), x);
                    for (s, e) in seen.iter_mut().zip(expect) {
                        *s += e;
                    }
                    intervals += 1;
                }
            }
        }
        sim_assert!(sim, intervals > 100, x);
        // Every counter counted, the rare outcomes included.
        sim_assert!(sim, seen.iter().all(|&n| n > 0), x);
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000_000).unwrap();
}

#[test]
fn bank_counts_equal_the_lanes_applied_in_order() {
    for seed in [1, 2, 3] {
        bank_matches_recount(seed, 2000);
    }
}
