//! The lost count after a clock of `n` LOST pushes and `d` drops, with the
//! flags the next clock's decision tests, worked out for every `(n, d)`
//! beside the decision, which then only picks one (board.md 2.1 step 2):
//! the update's carry chain starts from registers and the flags come
//! before the pick, not after it.

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
