//! The encoder's lost count (board.md 2.2 step 2): `PendingLost` holds it
//! with the flags the next clock's decision tests; `LostCandidate` is the
//! count after a clock of `n` LOST pushes and `d` drops, worked out for
//! every `(n, d)` beside the decision, which then only picks one: the
//! update's carry chain starts from registers and the flags come before
//! the pick, not after it.

use rust_hdl::prelude::*;

use super::decide::LOST_FLAGS;
use super::PAYLOAD_MAX;

/// Entry `4 m + d` of the lost-count flags is used: `1 <= m <= E`, `d < E`.
pub(super) const fn lost_flag_used<const E: usize>(i: usize) -> bool {
    let (m, d) = (i / 4, i % 4);
    m >= 1 && m <= E && d < E
}

const MASK34: u64 = (1 << 34) - 1;

/// Combinational: `u + over + d - n (2^21-1)`, saturated at `2^32 - 1`,
/// for the count `u` and `addend = over + d + n` (a register set a clock
/// ahead, below `2^5`): the sum is `u + (addend | -n 2^21)`, one adder, because
/// `addend < 2^21`. Then its flags: non-zero, and entry `4 m + d'` of
/// `over`: `count > m (2^21-1) - d'` (see `lost_flag_used`), tested on
/// bits: with `c = m + d'`, iff `hi >= m`, or `hi = m - 1` and
/// `lo >= 2^21 - c + 1`, where `hi = count >> 21`, `lo = count mod 2^21`.
#[derive(LogicBlock)]
pub struct LostCandidate<const E: usize> {
    pub count: Signal<In, Bits<32>>,
    /// `over + d + n`, below `2^5`.
    pub addend: Signal<In, Bits<32>>,
    pub value: Signal<Out, Bits<32>>,
    pub nonzero: Signal<Out, Bit>,
    /// Bit `i`: flag `i` (an array of sub-block outputs cannot be indexed
    /// from an array of sub-blocks in rust-hdl's Verilog).
    pub over: Signal<Out, Bits<LOST_FLAGS>>,
    over_bits: Signal<Local, Bits<LOST_FLAGS>>,
    flag_bit: [Constant<Bits<LOST_FLAGS>>; LOST_FLAGS],
    sum: Signal<Local, Bits<34>>,
    saturated: Signal<Local, Bit>,
    /// Bits 24.. any (or saturated), bits 3..21 all ones.
    hi_any: Signal<Local, Bit>,
    lo_ones: Signal<Local, Bit>,
    /// Bits 21..24 and 0..3, one-hot.
    hi_onehot: Signal<Local, Bits<8>>,
    lo_onehot: Signal<Local, Bits<8>>,
    bit_of: [Constant<Bits<8>>; 8],
    minus_n_high: Constant<Bits<34>>,
    all_ones: Constant<Bits<32>>,
    /// Per flag: the values of bits 21..24 that are `>= m`, the one that
    /// is `m - 1`, and the values of bits 0..3 that make `lo >= 2^21 - c
    /// + 1` (with bits 3..21 all ones); zero for unused flags.
    over_ge_m: [Constant<Bits<8>>; LOST_FLAGS],
    over_eq_m1: [Constant<Bits<8>>; LOST_FLAGS],
    over_lo: [Constant<Bits<8>>; LOST_FLAGS],
}

impl<const E: usize> LostCandidate<E> {
    /// The candidate for `n` LOST pushes in the clock.
    pub fn new(n: usize) -> Self {
        let minus_n_high = (0u64.wrapping_sub(n as u64 * (PAYLOAD_MAX + 1))) & MASK34;
        Self {
            count: Default::default(),
            addend: Default::default(),
            value: Default::default(),
            nonzero: Default::default(),
            over: Default::default(),
            over_bits: Default::default(),
            flag_bit: std::array::from_fn(|i| Constant::new((1u64 << i).to_bits())),
            sum: Default::default(),
            saturated: Default::default(),
            hi_any: Default::default(),
            lo_ones: Default::default(),
            hi_onehot: Default::default(),
            lo_onehot: Default::default(),
            bit_of: std::array::from_fn(|v| Constant::new((1u64 << v).to_bits())),
            minus_n_high: Constant::new(minus_n_high.to_bits()),
            all_ones: Constant::new(u64::from(u32::MAX).to_bits()),
            over_ge_m: std::array::from_fn(|i| {
                let mask = if lost_flag_used::<E>(i) {
                    0xFFu64 << (i / 4)
                } else {
                    0
                };
                Constant::new((mask & 0xFF).to_bits())
            }),
            over_eq_m1: std::array::from_fn(|i| {
                let mask = if lost_flag_used::<E>(i) {
                    1u64 << (i / 4 - 1)
                } else {
                    0
                };
                Constant::new(mask.to_bits())
            }),
            over_lo: std::array::from_fn(|i| {
                // lo >= 2^21 - (c - 1), c = m + d: bits 0..3 >= 8 - (c - 1)
                // for c >= 2; never for c = 1.
                let c1 = i / 4 + i % 4;
                let mask = if lost_flag_used::<E>(i) && c1 >= 2 {
                    0xFFu64 << (8 - (c1 - 1))
                } else {
                    0
                };
                Constant::new((mask & 0xFF).to_bits())
            }),
        }
    }
}

impl<const E: usize> Logic for LostCandidate<E> {
    #[hdl_gen]
    fn update(&mut self) {
        self.sum.next = bit_cast::<34, 32>(self.count.val())
            + (bit_cast::<34, 32>(self.addend.val()) | self.minus_n_high.val());
        self.saturated.next = self.sum.val().get_bits::<2>(32).any();
        self.value.next = self.sum.val().get_bits::<32>(0);
        if self.saturated.val() {
            self.value.next = self.all_ones.val();
        }
        self.nonzero.next = self.sum.val().get_bits::<32>(0).any() | self.saturated.val();
        self.hi_any.next = self.sum.val().get_bits::<8>(24).any() | self.saturated.val();
        self.lo_ones.next = self.sum.val().get_bits::<18>(3).all();
        self.hi_onehot.next = 0.into();
        self.lo_onehot.next = 0.into();
        for v in 0..8 {
            if self.sum.val().get_bits::<3>(21).index() == v {
                self.hi_onehot.next = self.bit_of[v].val();
            }
            if self.sum.val().get_bits::<3>(0).index() == v {
                self.lo_onehot.next = self.bit_of[v].val();
            }
        }
        self.over_bits.next = 0.into();
        for i in 0..LOST_FLAGS {
            if (self.hi_onehot.val() & self.over_ge_m[i].val()).any()
                | (self.hi_any.val() & self.over_ge_m[i].val().any())
                | ((self.hi_onehot.val() & self.over_eq_m1[i].val()).any()
                    & !self.hi_any.val()
                    & self.lo_ones.val()
                    & (self.lo_onehot.val() & self.over_lo[i].val()).any())
            {
                self.over_bits.next = self.over_bits.val() | self.flag_bit[i].val();
            }
        }
        self.over.next = self.over_bits.val();
    }
}

/// Sequential: the lost count `u` (references dropped and not yet told in
/// a LOST word) and the flags the next clock's decision tests, updated
/// after each decided clock: `u + drops - losts (2^21-1)` while every LOST
/// left a remainder, else the drops since the last one; plus the
/// references the limit dropped (`over`); saturated. Every candidate and
/// its flags are ready before the decision picks.
#[derive(LogicBlock)]
pub struct PendingLost<const E: usize> {
    pub clock: Signal<In, Clock>,
    /// P1's references the limit dropped (they count in the clock after).
    pub over: Signal<In, Bits<4>>,
    /// The clock is decided; its valid slots; the decision: it takes its
    /// events.
    pub valid: Signal<In, Bit>,
    pub nvalid: Signal<In, Bits<3>>,
    pub takes: Signal<In, Bit>,
    /// At the clock's start: `u` modulo 2^21 (a LOST payload's part),
    /// `u != 0`, and the flags (see `Decide::lost_over`).
    pub count_low: Signal<Out, Bits<21>>,
    pub nonzero: Signal<Out, Bit>,
    pub over_flags: [Signal<Out, Bit>; LOST_FLAGS],
    count_reg: DFF<Bits<32>>,
    /// Entry `5 n + d`: `over + d + n`, registered as the clock enters
    /// the decision stage, and the lost count after a clock of `n` LOST pushes and `d` drops with
    /// its flags, worked out beside the decision, which only picks one.
    lost_small: [DFF<Bits<32>>; 25],
    lost_small_k: [Constant<Bits<32>>; 25],
    /// `over`, widened (the HDL kernels take no casts inside loops).
    over_wide: Signal<Local, Bits<32>>,
    lost_cand: [LostCandidate<E>; 25],
    /// Entry `5 n + d` with `n, d <= E` (yosys prunes the others).
    candidate_used: [Constant<Bit>; 25],
    /// Which candidate the clock leaves if it takes its events (entry `n`:
    /// candidate `5 n`, `n` LOSTs that all left a remainder) and if it
    /// drops them (entry `5 + d`: candidate `d`, `d` drops after a pending
    /// count; `fresh` entry `d`: the count `over + d`, whose flags are all
    /// false as it is below `2^21 - 4`, with none pending); a clock pushes
    /// LOSTs or drops, never both, so only these candidates are used. The
    /// two outcomes' counts and flags are picked from registers, and
    /// `takes` picks one of them.
    lost_pick: [Signal<Local, Bit>; 10],
    /// Entry `j`: a LOST is pending after `j` LOST pushes (`u > j
    /// (2^21-1)`; entry 0: `u != 0`), from the registered flags. They fall
    /// with `j`, so a clock that takes `nvalid` events pushes `nvalid`
    /// LOSTs and leaves a remainder exactly when entry `nvalid` holds: the
    /// pick needs no count of the clock's LOSTs.
    pending_after: [Signal<Local, Bit>; 5],
    remainder_taken: Signal<Local, Bit>,
    fresh_pick: [Signal<Local, Bit>; 5],
    taken_lost: Signal<Local, Bits<32>>,
    taken_nonzero: Signal<Local, Bit>,
    taken_over: [Signal<Local, Bit>; LOST_FLAGS],
    dropped_lost: Signal<Local, Bits<32>>,
    dropped_nonzero: Signal<Local, Bit>,
    dropped_over: [Signal<Local, Bit>; LOST_FLAGS],
    /// The lost count after the clock, and its flags for the next clock's
    /// decision, registered.
    count_after: Signal<Local, Bits<32>>,
    nonzero_next: Signal<Local, Bit>,
    over_next: [Signal<Local, Bit>; LOST_FLAGS],
    nonzero_reg: DFF<Bit>,
    over_reg: [DFF<Bit>; LOST_FLAGS],
}

impl<const E: usize> Default for PendingLost<E> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            over: Default::default(),
            valid: Default::default(),
            nvalid: Default::default(),
            takes: Default::default(),
            count_low: Default::default(),
            nonzero: Default::default(),
            over_flags: std::array::from_fn(|_| Default::default()),
            count_reg: Default::default(),
            lost_small: std::array::from_fn(|_| Default::default()),
            over_wide: Default::default(),
            lost_small_k: std::array::from_fn(|i| {
                Constant::new(((i / 5 + i % 5) as u64).to_bits())
            }),
            lost_cand: std::array::from_fn(|i| LostCandidate::new(i / 5)),
            candidate_used: std::array::from_fn(|i| Constant::new(i / 5 <= E && i % 5 <= E)),
            lost_pick: std::array::from_fn(|_| Default::default()),
            pending_after: std::array::from_fn(|_| Default::default()),
            remainder_taken: Default::default(),
            fresh_pick: std::array::from_fn(|_| Default::default()),
            taken_lost: Default::default(),
            taken_nonzero: Default::default(),
            taken_over: std::array::from_fn(|_| Default::default()),
            dropped_lost: Default::default(),
            dropped_nonzero: Default::default(),
            dropped_over: std::array::from_fn(|_| Default::default()),
            count_after: Default::default(),
            nonzero_next: Default::default(),
            over_next: std::array::from_fn(|_| Default::default()),
            nonzero_reg: Default::default(),
            over_reg: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const E: usize> Logic for PendingLost<E> {
    #[hdl_gen]
    fn update(&mut self) {
        self.over_wide.next = bit_cast::<32, 4>(self.over.val());
        for i in 0..25 {
            self.lost_small[i].clock.next = self.clock.val();
            self.lost_small[i].d.next = 0.into();
            if self.candidate_used[i].val() {
                self.lost_small[i].d.next = self.over_wide.val() + self.lost_small_k[i].val();
            }
        }
        for i in 0..25 {
            self.lost_cand[i].count.next = self.count_reg.q.val();
            self.lost_cand[i].addend.next = self.lost_small[i].q.val();
        }
        // Two outcomes, each picked from registers: the clock takes its
        // events (`n` LOSTs, no drop: candidate `5 n`, or `over` alone when
        // the last LOST left no remainder), or drops them (no LOST, `d =
        // nvalid` drops: candidate `d` while a count was pending, else
        // `over + d`); `takes` then picks one, and a clock not decided
        // keeps the count.
        self.pending_after[0].next = self.nonzero_reg.q.val();
        for j in 1..5 {
            self.pending_after[j].next = self.over_reg[j * 4].q.val();
        }
        self.remainder_taken.next = false;
        for n in 0..5 {
            self.lost_pick[n].next = self.candidate_used[n * 5].val()
                & self.pending_after[n].val()
                & (self.nvalid.val().index() == n);
            if self.lost_pick[n].val() {
                self.remainder_taken.next = true;
            }
        }
        for d in 0..5 {
            self.lost_pick[5 + d].next = self.candidate_used[d].val()
                & self.nonzero_reg.q.val()
                & (self.nvalid.val().index() == d);
            self.fresh_pick[d].next = !self.nonzero_reg.q.val() & (self.nvalid.val().index() == d);
        }
        self.taken_lost.next = 0.into();
        self.taken_nonzero.next = false;
        for i in 0..LOST_FLAGS {
            self.taken_over[i].next = false;
        }
        for n in 0..5 {
            if self.lost_pick[n].val() {
                self.taken_lost.next = self.taken_lost.val() | self.lost_cand[n * 5].value.val();
            }
            self.taken_nonzero.next = self.taken_nonzero.val()
                | (self.lost_pick[n].val() & self.lost_cand[n * 5].nonzero.val());
            for i in 0..LOST_FLAGS {
                self.taken_over[i].next = self.taken_over[i].val()
                    | (self.lost_pick[n].val() & self.lost_cand[n * 5].over.val().get_bit(i));
            }
        }
        // (`over` alone: its flags are all false, it is below 2^21 - 4.)
        if !self.remainder_taken.val() {
            self.taken_lost.next = self.lost_small[0].q.val();
            self.taken_nonzero.next = self.lost_small[0].q.val().any();
        }
        self.dropped_lost.next = 0.into();
        self.dropped_nonzero.next = false;
        for i in 0..LOST_FLAGS {
            self.dropped_over[i].next = false;
        }
        for d in 0..5 {
            if self.lost_pick[5 + d].val() {
                self.dropped_lost.next = self.dropped_lost.val() | self.lost_cand[d].value.val();
            }
            if self.fresh_pick[d].val() {
                self.dropped_lost.next = self.dropped_lost.val() | self.lost_small[d].q.val();
            }
            self.dropped_nonzero.next = self.dropped_nonzero.val()
                | (self.lost_pick[5 + d].val() & self.lost_cand[d].nonzero.val())
                | (self.fresh_pick[d].val() & self.lost_small[d].q.val().any());
            for i in 0..LOST_FLAGS {
                self.dropped_over[i].next = self.dropped_over[i].val()
                    | (self.lost_pick[5 + d].val() & self.lost_cand[d].over.val().get_bit(i));
            }
        }
        self.count_after.next = self.count_reg.q.val();
        self.nonzero_next.next = self.nonzero_reg.q.val();
        for i in 0..LOST_FLAGS {
            self.over_next[i].next = self.over_reg[i].q.val();
        }
        if self.valid.val() {
            self.count_after.next = self.dropped_lost.val();
            self.nonzero_next.next = self.dropped_nonzero.val();
            for i in 0..LOST_FLAGS {
                self.over_next[i].next = self.dropped_over[i].val();
            }
            if self.takes.val() {
                self.count_after.next = self.taken_lost.val();
                self.nonzero_next.next = self.taken_nonzero.val();
                for i in 0..LOST_FLAGS {
                    self.over_next[i].next = self.taken_over[i].val();
                }
            }
        }
        self.count_reg.d.next = self.count_after.val();
        self.nonzero_reg.d.next = self.nonzero_next.val();
        for i in 0..LOST_FLAGS {
            self.over_reg[i].clock.next = self.clock.val();
            self.over_reg[i].d.next = self.over_next[i].val();
        }
        self.count_reg.clock.next = self.clock.val();
        self.nonzero_reg.clock.next = self.clock.val();
        self.count_low.next = self.count_reg.q.val().get_bits::<21>(0);
        self.nonzero.next = self.nonzero_reg.q.val();
        for i in 0..LOST_FLAGS {
            self.over_flags[i].next = self.over_reg[i].q.val();
        }
    }
}
