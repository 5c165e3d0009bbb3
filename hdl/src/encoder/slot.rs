//! Per-slot pieces of the encoder's clock, as blocks of their own (the HDL
//! kernels cannot change widths inside loops): the gap tests of a slot
//! (`GapTests`), its gap-derived fields (`SlotGap`), and its words
//! (`SlotWords`).

use rust_hdl::prelude::*;

use super::PAYLOAD_MAX;

const LINE_HI_OP: u64 = 0x0220_0000;
const LOST_OP: u64 = 0x0280_0000;

/// Combinational: the gap tests of a slot's gap `gap + lane` (the gap at
/// the clock's tick plus the lane), on bits: `gap >> 6` units and a 6-bit
/// add of the low bits and the lane. `KEEPER_GAP` is `2^21-1` units, so
/// the gap after a filler needs a TIME word at `gap + lane >= 2^27`
/// (`too_long`) and two at `>= 2^28 - 64` (`too_long_k`).
#[derive(LogicBlock, Default)]
pub struct GapTests {
    pub gap: Signal<In, Bits<32>>,
    pub lane: Signal<In, Bits<3>>,
    pub need_time: Signal<Out, Bit>,
    pub too_long: Signal<Out, Bit>,
    pub too_long_k: Signal<Out, Bit>,
    units: Signal<Local, Bits<26>>,
    low_room: Signal<Local, Bits<6>>,
    lane_wide: Signal<Local, Bits<6>>,
    carry: Signal<Local, Bit>,
}

impl Logic for GapTests {
    #[hdl_gen]
    fn update(&mut self) {
        self.units.next = self.gap.val().get_bits::<26>(6);
        // The low 6-bit add carries when lane > 63 - gap[5:0].
        self.low_room.next = !self.gap.val().get_bits::<6>(0);
        self.lane_wide.next = bit_cast::<6, 3>(self.lane.val());
        self.carry.next = self.low_room.val() < self.lane_wide.val();
        // gap + lane >= 64.
        self.need_time.next = self.units.val().any() | self.carry.val();
        // gap + lane >= 2^27: units >= 2^21, or 2^21-1 and a carry.
        self.too_long.next = self.units.val().get_bits::<5>(21).any()
            | (self.units.val().get_bits::<21>(0).all() & self.carry.val());
        // gap + lane >= 2^28 - 64: units >= 2^22-1, or 2^22-2 and a carry.
        self.too_long_k.next = self.units.val().get_bits::<4>(22).any()
            | self.units.val().get_bits::<22>(0).all()
            | (self.units.val().get_bits::<21>(1).all()
                & !self.units.val().get_bit(0)
                & self.carry.val());
    }
}

/// Combinational: the gap-derived fields of a slot's words, from its gap
/// `gap + lane` as for `GapTests`.
#[derive(LogicBlock, Default)]
pub struct SlotGap {
    /// The gap's low 6 bits: a slot's fields never read higher ones (the
    /// TIME payload's units come from the gap register, see `Words`).
    pub gap_low: Signal<In, Bits<6>>,
    pub lane: Signal<In, Bits<3>>,
    /// As the clock's first push: the first word's dt, and whether the
    /// gap in units of 64 ticks is one more than the clock's gap's (the
    /// low add carries), for the TIME word's payload.
    pub first_dt: Signal<Out, Bits<32>>,
    pub time_carry: Signal<Out, Bit>,
    low_sum: Signal<Local, Bits<7>>,
}

impl Logic for SlotGap {
    #[hdl_gen]
    fn update(&mut self) {
        self.low_sum.next =
            bit_cast::<7, 6>(self.gap_low.val()) + bit_cast::<7, 3>(self.lane.val());
        self.first_dt.next = bit_cast::<32, 6>(self.low_sum.val().get_bits::<6>(0));
        self.time_carry.next = self.low_sum.val().get_bit(6);
    }
}

/// Combinational: a slot's words, `[LOST] [LINE_HI] word`, packed from word
/// 0, with their dt: the first word's is `first_dt` for the clock's first
/// push, else the lane difference to the last push; a word after another
/// of the same slot has dt 0. The words are those of a clock that takes its
/// events: a clock that drops them pushes none of its slots' words, so the
/// decision's counts gate them, and no word waits for the decision.
#[derive(LogicBlock)]
pub struct SlotWords {
    /// If the clock takes the slot's event: a pending LOST and a LINE_HI
    /// change go before it (the decision counts the words).
    pub lost: Signal<In, Bit>,
    pub hi: Signal<In, Bit>,
    /// A valid slot comes before it in the clock.
    pub pushed_before: Signal<In, Bit>,
    pub lane: Signal<In, Bits<3>>,
    pub lane_before: Signal<In, Bits<3>>,
    pub first_dt: Signal<In, Bits<32>>,
    pub body: Signal<In, Bits<32>>,
    pub line_hi: Signal<In, Bits<21>>,
    /// The LOST payload: `2^21-1` if the LOST leaves a remainder; else the
    /// rest of the count, `lost_low + losts_before` (modulo 2^21: the
    /// count less `losts_before` times `2^21-1`). A clock that takes its
    /// events drops none, so no drops count in it.
    pub lost_leaves_rest: Signal<In, Bit>,
    pub lost_low: Signal<In, Bits<21>>,
    pub losts_before: Signal<In, Bits<3>>,
    pub word0: Signal<Out, Bits<32>>,
    pub word1: Signal<Out, Bits<32>>,
    pub word2: Signal<Out, Bits<32>>,
    dt: Signal<Local, Bits<32>>,
    lost_payload: Signal<Local, Bits<21>>,
    lost_word: Signal<Local, Bits<32>>,
    hi_word: Signal<Local, Bits<32>>,
    event_word: Signal<Local, Bits<32>>,
    hi_op: Constant<Bits<32>>,
    lost_op: Constant<Bits<32>>,
    payload_max: Constant<Bits<21>>,
}

impl Default for SlotWords {
    fn default() -> Self {
        Self {
            lost: Default::default(),
            hi: Default::default(),
            pushed_before: Default::default(),
            lane: Default::default(),
            lane_before: Default::default(),
            first_dt: Default::default(),
            body: Default::default(),
            line_hi: Default::default(),
            lost_leaves_rest: Default::default(),
            lost_low: Default::default(),
            losts_before: Default::default(),
            word0: Default::default(),
            word1: Default::default(),
            word2: Default::default(),
            dt: Default::default(),
            lost_payload: Default::default(),
            lost_word: Default::default(),
            hi_word: Default::default(),
            event_word: Default::default(),
            hi_op: Constant::new(LINE_HI_OP.to_bits()),
            lost_op: Constant::new(LOST_OP.to_bits()),
            payload_max: Constant::new(PAYLOAD_MAX.to_bits()),
        }
    }
}

impl Logic for SlotWords {
    #[hdl_gen]
    fn update(&mut self) {
        self.dt.next = self.first_dt.val();
        if self.pushed_before.val() {
            self.dt.next = bit_cast::<32, 3>(self.lane.val() - self.lane_before.val());
        }
        self.lost_payload.next = self.lost_low.val() + bit_cast::<21, 3>(self.losts_before.val());
        if self.lost_leaves_rest.val() {
            self.lost_payload.next = self.payload_max.val();
        }
        self.lost_word.next = (self.dt.val() << 26)
            | self.lost_op.val()
            | bit_cast::<32, 21>(self.lost_payload.val());
        self.hi_word.next =
            (self.dt.val() << 26) | self.hi_op.val() | bit_cast::<32, 21>(self.line_hi.val());
        if self.lost.val() {
            self.hi_word.next = self.hi_op.val() | bit_cast::<32, 21>(self.line_hi.val());
        }
        self.event_word.next = (self.dt.val() << 26) | self.body.val();
        if self.lost.val() | self.hi.val() {
            self.event_word.next = self.body.val();
        }
        self.word2.next = self.event_word.val();
        self.word1.next = self.event_word.val();
        self.word0.next = self.event_word.val();
        if self.lost.val() {
            self.word0.next = self.lost_word.val();
            if self.hi.val() {
                self.word1.next = self.hi_word.val();
            }
        } else if self.hi.val() {
            self.word0.next = self.hi_word.val();
        }
    }
}
