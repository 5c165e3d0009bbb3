//! The encoder's word contents for one clock (format.md 4.1), beside the
//! decision (`decide`): data path only. The words come out in `E + 1`
//! groups, each packed from its word 0: group 0 holds the keeper's filler
//! and the clock's TIME word, group `s + 1` slot `s`'s LOST, LINE_HI and
//! event word. Also the lane of the clock's last push and the LINE_HI
//! after the clock.

use rust_hdl::prelude::*;

use super::slot::SlotWords;
use super::PAYLOAD_MAX;

/// TIME (op 0) with dt 0; OR the payload in.
const TIME_WORD: u64 = 0x0200_0000;
/// The keeper's filler: TIME, dt 0, payload 2^21-1.
pub const FILLER_WORD: u64 = TIME_WORD | PAYLOAD_MAX;

#[derive(LogicBlock)]
pub struct Words<const E: usize> {
    pub keep: Signal<In, Bit>,
    pub takes: Signal<In, Bit>,
    /// If the clock takes its events: its first push needs a TIME word;
    /// each slot's words (0 for no event), a pending LOST and a LINE_HI
    /// before its event, the LOSTs before it.
    pub time_taken: Signal<In, Bit>,
    pub count_taken: [Signal<In, Bits<2>>; E],
    pub lost: [Signal<In, Bit>; E],
    pub hi: [Signal<In, Bit>; E],
    pub losts_before: [Signal<In, Bits<3>>; E],
    pub lost_leaves_rest: [Signal<In, Bit>; E],
    /// The slot holds an event; the clock's first; one comes before it.
    pub ev_valid: [Signal<In, Bit>; E],
    pub first: [Signal<In, Bit>; E],
    pub pushed_before: [Signal<In, Bit>; E],
    pub access: [Signal<In, Bit>; E],
    /// The event's word with dt 0, its LINE_HI and its lane.
    pub body: [Signal<In, Bits<32>>; E],
    pub line_hi: [Signal<In, Bits<21>>; E],
    pub lane: [Signal<In, Bits<3>>; E],
    /// As the clock's first push: the first word's dt (the gap's low 6
    /// bits) and whether its gap in units of 64 ticks is one more than
    /// `gap_units` (the clock's gap in units, modulo 2^21, a register).
    pub first_dt: [Signal<In, Bits<32>>; E],
    pub time_carry: [Signal<In, Bit>; E],
    pub gap_units: Signal<In, Bits<21>>,
    /// The lost count at the clock start, low 21 bits.
    pub lost_low: Signal<In, Bits<21>>,
    pub hi_in: Signal<In, Bits<21>>,

    /// Per group: words used (0..=3) and the words.
    pub count: [Signal<Out, Bits<2>>; 5],
    pub word0: [Signal<Out, Bits<32>>; 5],
    pub word1: [Signal<Out, Bits<32>>; 5],
    pub word2: [Signal<Out, Bits<32>>; 5],
    pub hi_out: Signal<Out, Bits<21>>,
    lane_before: [Signal<Local, Bits<3>>; E],
    hi_taken: Signal<Local, Bits<21>>,
    slot: [SlotWords; E],
    time_payload: Signal<Local, Bits<21>>,
    /// The TIME payload is `gap_units` plus the first push's carry plus
    /// one after a filler: the sums are worked out from the register
    /// beside the slots' adds and picked, so no carry chain follows them.
    units_1: Signal<Local, Bits<21>>,
    units_2: Signal<Local, Bits<21>>,
    any_first: Signal<Local, Bit>,
    first_carry: Signal<Local, Bit>,
    time_word: Signal<Local, Bits<32>>,
    filler: Constant<Bits<32>>,
    time_op: Constant<Bits<32>>,
}

impl<const E: usize> Default for Words<E> {
    fn default() -> Self {
        assert!((1..=4).contains(&E), "1 <= E <= 4");
        Self {
            keep: Default::default(),
            takes: Default::default(),
            time_taken: Default::default(),
            count_taken: std::array::from_fn(|_| Default::default()),
            lost: std::array::from_fn(|_| Default::default()),
            hi: std::array::from_fn(|_| Default::default()),
            losts_before: std::array::from_fn(|_| Default::default()),
            lost_leaves_rest: std::array::from_fn(|_| Default::default()),
            ev_valid: std::array::from_fn(|_| Default::default()),
            first: std::array::from_fn(|_| Default::default()),
            pushed_before: std::array::from_fn(|_| Default::default()),
            access: std::array::from_fn(|_| Default::default()),
            body: std::array::from_fn(|_| Default::default()),
            line_hi: std::array::from_fn(|_| Default::default()),
            lane: std::array::from_fn(|_| Default::default()),
            first_dt: std::array::from_fn(|_| Default::default()),
            time_carry: std::array::from_fn(|_| Default::default()),
            gap_units: Default::default(),
            lost_low: Default::default(),
            hi_in: Default::default(),
            count: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            hi_out: Default::default(),
            lane_before: std::array::from_fn(|_| Default::default()),
            hi_taken: Default::default(),
            slot: std::array::from_fn(|_| Default::default()),
            time_payload: Default::default(),
            units_1: Default::default(),
            units_2: Default::default(),
            any_first: Default::default(),
            first_carry: Default::default(),
            time_word: Default::default(),
            filler: Constant::new(FILLER_WORD.to_bits()),
            time_op: Constant::new(TIME_WORD.to_bits()),
        }
    }
}

impl<const E: usize> Logic for Words<E> {
    #[hdl_gen]
    fn update(&mut self) {
        // Group 0: [filler] [TIME]; the TIME word goes with the clock's
        // first push, whose slot says its payload (plus one unit after a
        // filler: the gap is then KEEPER_GAP = 2^21-1 units shorter).
        self.units_1.next = self.gap_units.val() + 1;
        self.units_2.next = self.gap_units.val() + 2;
        self.any_first.next = false;
        self.first_carry.next = false;
        for s in 0..E {
            if self.first[s].val() {
                self.any_first.next = true;
                self.first_carry.next = self.time_carry[s].val();
            }
        }
        self.time_payload.next = self.gap_units.val();
        if self.first_carry.val() ^ self.keep.val() {
            self.time_payload.next = self.units_1.val();
        }
        if self.first_carry.val() & self.keep.val() {
            self.time_payload.next = self.units_2.val();
        }
        // A clock without a first push pushes no TIME word; the unpushed
        // word's payload is the filler's one unit, or 0.
        if !self.any_first.val() {
            self.time_payload.next = bit_cast::<21, 1>(self.keep.val().into());
        }
        self.time_word.next = self.time_op.val() | bit_cast::<32, 21>(self.time_payload.val());
        // Groups past `E + 1` stay empty.
        for g in 0..5 {
            self.count[g].next = 0.into();
            self.word0[g].next = 0.into();
            self.word1[g].next = 0.into();
            self.word2[g].next = 0.into();
        }
        self.count[0].next = bit_cast::<2, 1>(self.keep.val().into())
            + bit_cast::<2, 1>((self.takes.val() & self.time_taken.val()).into());
        self.word0[0].next = self.time_word.val();
        self.word1[0].next = self.time_word.val();
        if self.keep.val() {
            self.word0[0].next = self.filler.val();
        }
        // Slots: each slot's words in its block, after the lane of the
        // last event before it (a clock that takes its events pushes all).
        self.lane_before[0].next = 0.into();
        for s in 1..E {
            self.lane_before[s].next = self.lane_before[s - 1].val();
            if self.ev_valid[s - 1].val() {
                self.lane_before[s].next = self.lane[s - 1].val();
            }
        }
        // The LINE_HI after the clock: its last ACCESS, if it takes them.
        self.hi_taken.next = self.hi_in.val();
        for s in 0..E {
            if self.ev_valid[s].val() & self.access[s].val() {
                self.hi_taken.next = self.line_hi[s].val();
            }
        }
        self.hi_out.next = self.hi_in.val();
        if self.takes.val() {
            self.hi_out.next = self.hi_taken.val();
        }
        for s in 0..E {
            self.slot[s].lost.next = self.lost[s].val();
            self.slot[s].hi.next = self.hi[s].val();
            self.slot[s].pushed_before.next = self.pushed_before[s].val();
            self.slot[s].lane.next = self.lane[s].val();
            self.slot[s].lane_before.next = self.lane_before[s].val();
            self.slot[s].first_dt.next = self.first_dt[s].val();
            self.slot[s].body.next = self.body[s].val();
            self.slot[s].line_hi.next = self.line_hi[s].val();
            self.slot[s].lost_leaves_rest.next = self.lost_leaves_rest[s].val();
            self.slot[s].lost_low.next = self.lost_low.val();
            self.slot[s].losts_before.next = self.losts_before[s].val();
            self.count[s + 1].next = 0.into();
            if self.takes.val() {
                self.count[s + 1].next = self.count_taken[s].val();
            }
            self.word0[s + 1].next = self.slot[s].word0.val();
            self.word1[s + 1].next = self.slot[s].word1.val();
            self.word2[s + 1].next = self.slot[s].word2.val();
        }
    }
}
