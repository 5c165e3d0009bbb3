//! The encoder's per-clock decision (board.md 2.2 step 2, format.md 4.1):
//! which of the clock's candidate words are pushed. Combinational, and only
//! one-bit flags and a few small counts flow through it: whether the clock
//! is open (its room test, board.md 2.2) and whether the keeper's
//! filler has a slot are registered flags, so no push waits for the words
//! pushed before it in the clock;
//! the gap tests, the LINE_HI comparisons and the lost-count tests come in
//! as flags prepared from registers. Word contents are worked out beside it
//! (`words`).
//!
//! Order within the clock: the keeper's filler, then per slot (stream
//! order) the pending LOST event and the slot's event, each atomic. Only
//! the clock's first non-filler push can need a TIME word: after it every
//! gap is a lane difference, below `L <= 8`. The rules of board.md 2.2
//! make a clock push all its events or none (see `takes`), so no flag
//! runs from slot to slot: each output is a flag prepared from registers
//! and gated by one decision per clock.

use rust_hdl::prelude::*;

/// Entries of the lost-count flags, `4 m + d` for `m <= E <= 4`.
pub const LOST_FLAGS: usize = 20;

#[derive(LogicBlock)]
pub struct Decide<const E: usize> {
    /// The clock is running (the keeper acts only then).
    pub valid: Signal<In, Bit>,
    /// The gap at the clock's tick is at least `KEEPER_GAP`.
    pub due: Signal<In, Bit>,
    /// The room at the clock's start plus the previous clock's words is at
    /// least `3 + 3E`: the keeper's filler fits.
    pub filler_room: Signal<In, Bit>,
    /// The same at least `2(2 + 3E)`: the clock takes its events.
    pub open: Signal<In, Bit>,
    pub ev_valid: [Signal<In, Bit>; E],
    /// Valid slots before slot `s`, in all, and the clock's first valid
    /// slot: registered by the encoder a stage earlier (they are counts
    /// over `ev_valid`, and every word count of the clock starts there).
    pub idx: [Signal<In, Bits<3>>; E],
    pub nvalid: Signal<In, Bits<3>>,
    pub first: [Signal<In, Bit>; E],
    pub access: [Signal<In, Bit>; E],
    /// The slot's LINE_HI equals the stream's LINE_HI at the clock start.
    pub hi_eq_reg: [Signal<In, Bit>; E],
    /// Entry `4 s + t`: slot `s`'s LINE_HI equals slot `t`'s (`t < s`).
    pub hi_eq_slot: [Signal<In, Bit>; 16],
    /// The slot's gap needs a TIME word (`need_time`) or two
    /// (`too_long`), as the first push of the clock, without (`_k`: with)
    /// the keeper's filler pushed before it.
    pub need_time: [Signal<In, Bit>; E],
    pub too_long: [Signal<In, Bit>; E],
    pub need_time_k: [Signal<In, Bit>; E],
    pub too_long_k: [Signal<In, Bit>; E],
    /// `too_long` and `too_long_k` of the clock's first valid slot (false
    /// with no valid slot).
    pub long_first: Signal<In, Bit>,
    pub long_first_k: Signal<In, Bit>,
    /// The lost count `u` at the clock start is not 0.
    pub lost_nonzero: Signal<In, Bit>,
    /// Entry `4 m + d` (`1 <= m <= E`, `d < E`): `u + d > m * (2^21-1)`,
    /// i.e. the `m`-th LOST of the clock, pushed after `d` drops, leaves a
    /// remainder pending.
    pub lost_over: [Signal<In, Bit>; LOST_FLAGS],

    pub keep: Signal<Out, Bit>,
    /// The clock pushes its events (all of them; else none).
    pub takes: Signal<Out, Bit>,
    /// If the clock takes its events: the words of each slot, and whether
    /// its first push carries a TIME word; from registers, so the room
    /// after the clock can be worked out before `takes` is known.
    /// (Entries past `E` are 0.)
    pub count_taken: [Signal<Out, Bits<2>>; 4],
    pub time_taken: Signal<Out, Bit>,
    /// If the clock takes its events: slot `s` pushes a LOST before its
    /// event, and a LINE_HI; the LOSTs pushed before the slot.
    pub lost_taken: [Signal<Out, Bit>; E],
    pub hi_taken: [Signal<Out, Bit>; E],
    pub losts_before_taken: [Signal<Out, Bits<3>>; E],
    /// An event dropped (no room, or a gap needing two TIME words).
    pub dropped: [Signal<Out, Bit>; E],
    pub overflow: [Signal<Out, Bit>; E],
    /// The slot's LOST, if pushed, leaves a remainder (its payload is
    /// `2^21-1`).
    pub lost_leaves_rest: [Signal<Out, Bit>; E],
    /// After the clock's last slot: a non-filler word pushed, the LOST
    /// pushes. (A clock that drops its events pushes no LOST.)
    pub pushed_any: Signal<Out, Bit>,
    pub losts: Signal<Out, Bits<3>>,
    /// The slot's gap tests, with the keeper's filler or without.
    need: [Signal<Local, Bit>; E],
    long: [Signal<Local, Bit>; E],
    /// Entry `j`: a LOST is pending after `j` LOST pushes in a clock that
    /// takes its events (`u > j (2^21-1)`; entry 0: `u != 0`).
    pending_after: [Signal<Local, Bit>; 5],
    losts_all: Signal<Local, Bits<3>>,
    /// The last valid ACCESS before slot `s` is slot `t`: bit `t`.
    hi_last: [Signal<Local, Bits<4>>; E],
    hi_match: [Signal<Local, Bit>; E],
    /// Bit `s` alone.
    slot_bit: [Constant<Bits<4>>; E],
}

impl<const E: usize> Default for Decide<E> {
    fn default() -> Self {
        assert!((1..=4).contains(&E), "1 <= E <= 4");
        Self {
            valid: Default::default(),
            due: Default::default(),
            filler_room: Default::default(),
            open: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            access: std::array::from_fn(|_| Default::default()),
            hi_eq_reg: std::array::from_fn(|_| Default::default()),
            hi_eq_slot: std::array::from_fn(|_| Default::default()),
            need_time: std::array::from_fn(|_| Default::default()),
            too_long: std::array::from_fn(|_| Default::default()),
            need_time_k: std::array::from_fn(|_| Default::default()),
            too_long_k: std::array::from_fn(|_| Default::default()),
            lost_nonzero: Default::default(),
            lost_over: std::array::from_fn(|_| Default::default()),
            keep: Default::default(),
            takes: Default::default(),
            count_taken: std::array::from_fn(|_| Default::default()),
            time_taken: Default::default(),
            lost_taken: std::array::from_fn(|_| Default::default()),
            hi_taken: std::array::from_fn(|_| Default::default()),
            losts_before_taken: std::array::from_fn(|_| Default::default()),
            dropped: std::array::from_fn(|_| Default::default()),
            overflow: std::array::from_fn(|_| Default::default()),
            lost_leaves_rest: std::array::from_fn(|_| Default::default()),
            pushed_any: Default::default(),
            losts: Default::default(),
            idx: std::array::from_fn(|_| Default::default()),
            nvalid: Default::default(),
            first: std::array::from_fn(|_| Default::default()),
            need: std::array::from_fn(|_| Default::default()),
            long: std::array::from_fn(|_| Default::default()),
            long_first: Default::default(),
            long_first_k: Default::default(),
            pending_after: std::array::from_fn(|_| Default::default()),
            losts_all: Default::default(),
            hi_last: std::array::from_fn(|_| Default::default()),
            hi_match: std::array::from_fn(|_| Default::default()),
            slot_bit: std::array::from_fn(|s| Constant::new((1u64 << s).to_bits())),
        }
    }
}

impl<const E: usize> Logic for Decide<E> {
    #[hdl_gen]
    fn update(&mut self) {
        // The keeper's filler: one word, before everything else.
        self.keep.next = self.valid.val() & self.due.val() & self.filler_room.val();
        // What the gap tests say, from registers.
        for s in 0..E {
            self.need[s].next = self.need_time[s].val();
            self.long[s].next = self.too_long[s].val();
            if self.keep.val() {
                self.need[s].next = self.need_time_k[s].val();
                self.long[s].next = self.too_long_k[s].val();
            }
        }
        // A slot's gap is `gap + lane`, and the lanes rise through the
        // slots, so an event whose gap needs two TIME words is followed
        // only by such events: if the first event cannot be pushed, none
        // can (nothing is pushed before them to shorten their gap). An
        // open clock thus pushes all its events or drops them all, and
        // no drop falls between two pushes.
        self.takes.next = self.open.val() & !self.long_first.val();
        if self.keep.val() {
            self.takes.next = self.open.val() & !self.long_first_k.val();
        }
        // LOSTs in a clock that takes its events: the first valid slot
        // pushes one if the count `u` is not 0, and each later slot if the
        // LOSTs before it left a remainder.
        self.pending_after[0].next = self.lost_nonzero.val();
        // (The encoder holds the flags of entries past `E` false.)
        for j in 1..5 {
            self.pending_after[j].next = self.lost_over[j * 4].val();
        }
        self.losts_all.next = 0.into();
        self.hi_last[0].next = 0.into();
        for s in 0..E {
            self.lost_taken[s].next = false;
            self.lost_leaves_rest[s].next = false;
            for j in 0..E {
                if self.idx[s].val().index() == j {
                    self.lost_taken[s].next = self.pending_after[j].val();
                    self.lost_leaves_rest[s].next = self.pending_after[j + 1].val();
                }
            }
            self.losts_before_taken[s].next = self.losts_all.val();
            if self.ev_valid[s].val() & self.lost_taken[s].val() {
                self.losts_all.next = self.losts_all.val() + 1;
            }
            // LINE_HI: against the last ACCESS pushed before it in the
            // clock, or the stream's at the clock start.
            self.hi_match[s].next = self.hi_eq_reg[s].val();
            for t in 0..E {
                if (t < s) & self.hi_last[s].val().get_bit(t) {
                    self.hi_match[s].next = self.hi_eq_slot[s * 4 + t].val();
                }
            }
            self.hi_taken[s].next = self.access[s].val() & !self.hi_match[s].val();
            for t in 0..E {
                if t == s + 1 {
                    self.hi_last[t].next = self.hi_last[s].val();
                    if self.ev_valid[s].val() & self.access[s].val() {
                        self.hi_last[t].next = self.slot_bit[s].val();
                    }
                }
            }
        }
        self.time_taken.next = false;
        for s in 0..4 {
            self.count_taken[s].next = 0.into();
        }
        for s in 0..E {
            // [LOST] [LINE_HI] event.
            if self.ev_valid[s].val() {
                self.count_taken[s].next = 1.into();
                if self.lost_taken[s].val() | self.hi_taken[s].val() {
                    self.count_taken[s].next = 2.into();
                }
                if self.lost_taken[s].val() & self.hi_taken[s].val() {
                    self.count_taken[s].next = 3.into();
                }
            }
            if self.first[s].val() & self.need[s].val() {
                self.time_taken.next = true;
            }
        }
        // The drops wait for `takes`; the words and their flags above are
        // those of a clock that takes its events.
        for s in 0..E {
            self.dropped[s].next = self.ev_valid[s].val() & !self.takes.val();
            self.overflow[s].next = self.dropped[s].val() & self.long[s].val();
        }
        self.pushed_any.next = self.takes.val() & self.nvalid.val().any();
        self.losts.next = 0.into();
        if self.takes.val() {
            self.losts.next = self.losts_all.val();
        }
    }
}
