//! A wide count plus a small step that is known late (the decision's word
//! count), without a carry chain after it: the high part's increment and
//! decrement are worked out from the count alone, and the late step only
//! meets a 6-bit add of the low four bits, whose top bits pick one.

use rust_hdl::prelude::*;

/// Combinational: `value + early + late` (or `value + early - late` with
/// `subtract`), modulo `2^N`, where `U = N - 4`, `early` is -1, 0 or 1 (6-bit
/// two's complement, known early) and `late` is at most 15. The low four
/// bits plus the steps then lie in -16..32, so bits 4 and 5 of their 6-bit
/// sum say whether the high part stays, goes up or goes down by one.
#[derive(LogicBlock)]
pub struct SmallStep<const N: usize, const U: usize> {
    pub value: Signal<In, Bits<N>>,
    pub early: Signal<In, Bits<6>>,
    pub late: Signal<In, Bits<6>>,
    pub sum: Signal<Out, Bits<N>>,
    subtract: Constant<Bit>,
    upper: Signal<Local, Bits<U>>,
    upper_up: Signal<Local, Bits<U>>,
    upper_down: Signal<Local, Bits<U>>,
    upper_pick: Signal<Local, Bits<U>>,
    low_early: Signal<Local, Bits<6>>,
    low: Signal<Local, Bits<6>>,
}

impl<const N: usize, const U: usize> SmallStep<N, U> {
    pub fn new(subtract: bool) -> Self {
        assert_eq!(U + 4, N, "SmallStep<N, U> needs U = N - 4");
        Self {
            value: Default::default(),
            early: Default::default(),
            late: Default::default(),
            sum: Default::default(),
            subtract: Constant::new(subtract),
            upper: Default::default(),
            upper_up: Default::default(),
            upper_down: Default::default(),
            upper_pick: Default::default(),
            low_early: Default::default(),
            low: Default::default(),
        }
    }
}

impl<const N: usize, const U: usize> Logic for SmallStep<N, U> {
    #[hdl_gen]
    fn update(&mut self) {
        self.upper.next = self.value.val().get_bits::<U>(4);
        self.upper_up.next = self.upper.val() + 1;
        self.upper_down.next = self.upper.val() - 1;
        self.low_early.next =
            bit_cast::<6, 4>(self.value.val().get_bits::<4>(0)) + self.early.val();
        self.low.next = self.low_early.val() + self.late.val();
        if self.subtract.val() {
            self.low.next = self.low_early.val() - self.late.val();
        }
        self.upper_pick.next = self.upper.val();
        if self.low.val().get_bits::<2>(4) == 1 {
            self.upper_pick.next = self.upper_up.val();
        }
        if self.low.val().get_bits::<2>(4) == 3 {
            self.upper_pick.next = self.upper_down.val();
        }
        self.sum.next = (bit_cast::<N, U>(self.upper_pick.val()) << 4)
            | bit_cast::<N, 4>(self.low.val().get_bits::<4>(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: u64, early: i64, late: u64, subtract: bool) -> u64 {
        let mut uut = SmallStep::<20, 16>::new(subtract);
        uut.connect_all();
        uut.value.next = value.into();
        uut.early.next = ((early as u64) & 63).into();
        uut.late.next = late.into();
        assert!(simulate(&mut uut, 10));
        uut.sum.val().into()
    }

    #[test]
    fn matches_the_wide_sum_across_the_low_digit_boundaries() {
        let values = [
            0u64, 1, 14, 15, 16, 17, 0xFFFF0, 0xFFFFF, 0x7FFF, 0x8000, 0x12345,
        ];
        for &v in &values {
            for early in -1i64..=1 {
                for late in 0u64..=15 {
                    for subtract in [false, true] {
                        let signed = if subtract {
                            -(late as i64)
                        } else {
                            late as i64
                        };
                        let want = ((v as i64 + early + signed).rem_euclid(1 << 20)) as u64;
                        assert_eq!(
                            step(v, early, late, subtract),
                            want,
                            "{v:#x} {early:+} {}{late}",
                            if subtract { '-' } else { '+' }
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn small_step_is_synthesizable() {
        let mut uut = SmallStep::<20, 16>::new(true);
        uut.connect_all();
        yosys_validate("hmtt_small_step", &generate_verilog(&uut)).unwrap();
    }
}
