//! The room flags the next clock's decision reads (board.md 2.1 step 2):
//! room for a word (the keeper's filler) and for `2 + 3E` words (the clock
//! opens), after this clock's words and pop. Each is the test `total <=
//! margin`, `margin = free + pop - n`, with no adder after the decision:
//! the margin is a thermometer built from registers (bit `t`: `margin >=
//! t`), the slots' words a one-hot word, the test their AND-OR, once for
//! each count of words before the slots (0 to 2: the filler, the TIME
//! word), and the decision's flags pick one at the end.

use rust_hdl::prelude::*;

/// Combinational: one room test. The margin comes in as if the clock pops,
/// so the pop, which waits for the drain's credit, comes in last: without
/// it every thermometer bit moves down one (`margin - 1 >= t` is
/// `margin >= t + 1`). Bit 15 is then wrong, but no test reads past bit
/// `3E + 2`, at most 14.
#[derive(LogicBlock)]
pub struct RoomTest {
    /// The margin if the clock pops, 8-bit two's complement.
    pub margin_popped: Signal<In, Bits<8>>,
    pub pop: Signal<In, Bit>,
    /// The slots' words if the clock takes its events, one-hot.
    pub slot_words: Signal<In, Bits<16>>,
    pub keep: Signal<In, Bit>,
    pub takes: Signal<In, Bit>,
    pub time_taken: Signal<In, Bit>,
    pub fits: Signal<Out, Bit>,
    /// Bit `t`: `margin >= t` (none if negative, all past 15: bits
    /// `0..=v` of all ones shifted right by `15 - v`, `!v`).
    popped: Signal<Local, Bits<16>>,
    thermometer: Signal<Local, Bits<16>>,
    /// The slots' words fit after 0, 1 or 2 words before them.
    after: [Signal<Local, Bit>; 3],
    ones: Constant<Bits<16>>,
}

impl Default for RoomTest {
    fn default() -> Self {
        Self {
            margin_popped: Default::default(),
            pop: Default::default(),
            slot_words: Default::default(),
            keep: Default::default(),
            takes: Default::default(),
            time_taken: Default::default(),
            fits: Default::default(),
            popped: Default::default(),
            thermometer: Default::default(),
            after: std::array::from_fn(|_| Default::default()),
            ones: Constant::new(0xFFFFu64.to_bits()),
        }
    }
}

impl Logic for RoomTest {
    #[hdl_gen]
    fn update(&mut self) {
        self.popped.next = self.ones.val();
        if self.margin_popped.val().get_bit(7) {
            self.popped.next = 0.into();
        } else if !self.margin_popped.val().get_bits::<3>(4).any() {
            self.popped.next = self.ones.val() >> !self.margin_popped.val().get_bits::<4>(0);
        }
        self.thermometer.next = self.popped.val();
        if !self.pop.val() {
            self.thermometer.next = self.popped.val() >> 1;
        }
        self.after[0].next = (self.slot_words.val() & self.thermometer.val()).any();
        self.after[1].next = (self.slot_words.val() & (self.thermometer.val() >> 1)).any();
        self.after[2].next = (self.slot_words.val() & (self.thermometer.val() >> 2)).any();
        // A clock that drops its events pushes only the filler.
        self.fits.next = self.thermometer.val().get_bit(0);
        if self.keep.val() {
            self.fits.next = self.thermometer.val().get_bit(1);
        }
        if self.takes.val() {
            self.fits.next = self.after[0].val();
            if self.keep.val() ^ self.time_taken.val() {
                self.fits.next = self.after[1].val();
            }
            if self.keep.val() & self.time_taken.val() {
                self.fits.next = self.after[2].val();
            }
        }
    }
}

/// Combinational: both room flags after the clock.
#[derive(LogicBlock)]
pub struct Room<const E: usize> {
    /// The free count at the last clock's end, saturated at 63, and that
    /// clock's words: registers.
    pub free_small: Signal<In, Bits<6>>,
    pub last_total: Signal<In, Bits<6>>,
    pub pop: Signal<In, Bit>,
    /// The decision: slot words (entries past `E` are 0), filler, events
    /// taken, TIME word if taken.
    pub count_taken: [Signal<In, Bits<2>>; 4],
    pub keep: Signal<In, Bit>,
    pub takes: Signal<In, Bit>,
    pub time_taken: Signal<In, Bit>,
    pub filler: Signal<Out, Bit>,
    pub open: Signal<Out, Bit>,
    filler_test: RoomTest,
    open_test: RoomTest,
    /// The slots' words one-hot, shifted up by each count in turn.
    slot_words: [Signal<Local, Bits<16>>; 5],
    /// `free - last_total`, the margin with a pop for `n = 1`.
    margin_filler: Signal<Local, Bits<8>>,
    open_words_less_one: Constant<Bits<8>>,
}

impl<const E: usize> Default for Room<E> {
    fn default() -> Self {
        Self {
            free_small: Default::default(),
            last_total: Default::default(),
            pop: Default::default(),
            count_taken: std::array::from_fn(|_| Default::default()),
            keep: Default::default(),
            takes: Default::default(),
            time_taken: Default::default(),
            filler: Default::default(),
            open: Default::default(),
            filler_test: Default::default(),
            open_test: Default::default(),
            slot_words: std::array::from_fn(|_| Default::default()),
            margin_filler: Default::default(),
            open_words_less_one: Constant::new(((1 + 3 * E) as u64).to_bits()),
        }
    }
}

impl<const E: usize> Logic for Room<E> {
    #[hdl_gen]
    fn update(&mut self) {
        self.margin_filler.next =
            bit_cast::<8, 6>(self.free_small.val()) - bit_cast::<8, 6>(self.last_total.val());
        self.filler_test.margin_popped.next = self.margin_filler.val();
        self.open_test.margin_popped.next =
            self.margin_filler.val() - self.open_words_less_one.val();
        self.slot_words[0].next = 1.into();
        for s in 0..4 {
            self.slot_words[s + 1].next = self.slot_words[s].val() << self.count_taken[s].val();
        }
        self.filler_test.slot_words.next = self.slot_words[4].val();
        self.open_test.slot_words.next = self.slot_words[4].val();
        self.filler_test.pop.next = self.pop.val();
        self.open_test.pop.next = self.pop.val();
        self.filler_test.keep.next = self.keep.val();
        self.open_test.keep.next = self.keep.val();
        self.filler_test.takes.next = self.takes.val();
        self.open_test.takes.next = self.takes.val();
        self.filler_test.time_taken.next = self.time_taken.val();
        self.open_test.time_taken.next = self.time_taken.val();
        self.filler.next = self.filler_test.fits.val();
        self.open.next = self.open_test.fits.val();
    }
}
