//! The encoder's per-clock decision (board.md 2.1 step 2, format.md 4.1):
//! which of the clock's candidate words are pushed. Combinational, and only
//! one-bit flags and a few small counts flow through it: whether the clock
//! is open (room for `2 + 3E` words at its start) and whether the keeper's
//! filler has a slot are bits of a registered thermometer code of the free
//! count, so no push waits for the words pushed before it in the clock;
//! the gap tests, the LINE_HI comparisons and the lost-count tests come in
//! as flags prepared from registers. Word contents are worked out beside it
//! (`words`).
//!
//! Order within the clock: the keeper's filler, then per slot (stream
//! order) the pending LOST event and the slot's event, each atomic. Only
//! the clock's first non-filler push can need a TIME word: after it every
//! gap is a lane difference, below `L <= 8`.

use rust_hdl::prelude::*;

/// Entries of the lost-count flags, `4 m + d` for `m <= E <= 4`.
pub const LOST_FLAGS: usize = 20;

#[derive(LogicBlock)]
pub struct Decide<const E: usize> {
    /// The clock is running (the keeper acts only then).
    pub valid: Signal<In, Bit>,
    /// The gap at the clock's tick is at least `KEEPER_GAP`.
    pub due: Signal<In, Bit>,
    /// At least a word of room at the start of the clock (the filler's).
    pub filler_room: Signal<In, Bit>,
    /// The clock takes its events: at least `2 + 3E` words of room.
    pub open: Signal<In, Bit>,
    pub ev_valid: [Signal<In, Bit>; E],
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
    /// The lost count `u` at the clock start is not 0.
    pub lost_nonzero: Signal<In, Bit>,
    /// Entry `4 m + d` (`1 <= m <= E`, `d < E`): `u + d > m * (2^21-1)`,
    /// i.e. the `m`-th LOST of the clock, pushed after `d` drops, leaves a
    /// remainder pending.
    pub lost_over: [Signal<In, Bit>; LOST_FLAGS],

    pub keep: Signal<Out, Bit>,
    pub lost_ok: [Signal<Out, Bit>; E],
    pub hi_used: [Signal<Out, Bit>; E],
    pub event_ok: [Signal<Out, Bit>; E],
    /// The slot pushed the clock's TIME word (before its first word).
    pub time_used: [Signal<Out, Bit>; E],
    /// An event dropped (no room, or a gap needing two TIME words).
    pub dropped: [Signal<Out, Bit>; E],
    pub overflow: [Signal<Out, Bit>; E],
    /// State before each slot: a non-filler word pushed earlier in the
    /// clock; the LOST remainder flag (see `lost_over`); drops since the
    /// clock's last LOST push; LOST pushes and drops earlier in the clock.
    pub pushed_before: [Signal<Out, Bit>; E],
    pub remainder_before: [Signal<Out, Bit>; E],
    pub drops_since_before: [Signal<Out, Bits<3>>; E],
    pub losts_before: [Signal<Out, Bits<3>>; E],
    pub drops_before: [Signal<Out, Bits<3>>; E],
    /// The slot's LOST, if pushed, leaves a remainder (its payload is
    /// `2^21-1`).
    pub lost_leaves_rest: [Signal<Out, Bit>; E],
    /// After the clock's last slot.
    pub pushed_any: Signal<Out, Bit>,
    pub remainder_after: Signal<Out, Bit>,
    pub drops_since_after: Signal<Out, Bits<3>>,
    pub losts: Signal<Out, Bits<3>>,
    pub drops: Signal<Out, Bits<3>>,
    // Chains through the slots (index s: before slot s).
    any_c: [Signal<Local, Bit>; E],
    rem_c: [Signal<Local, Bit>; E],
    since_c: [Signal<Local, Bits<3>>; E],
    nl_c: [Signal<Local, Bits<3>>; E],
    dr_c: [Signal<Local, Bits<3>>; E],
    any_n: [Signal<Local, Bit>; E],
    rem_n: [Signal<Local, Bit>; E],
    since_n: [Signal<Local, Bits<3>>; E],
    nl_n: [Signal<Local, Bits<3>>; E],
    dr_n: [Signal<Local, Bits<3>>; E],
    /// The last ACCESS pushed earlier in the clock is slot `t`: bit `t`.
    hi_last: [Signal<Local, Bits<4>>; E],
    hi_last_n: [Signal<Local, Bits<4>>; E],
    need: [Signal<Local, Bit>; E],
    long: [Signal<Local, Bit>; E],
    pending: [Signal<Local, Bit>; E],
    hi_match: [Signal<Local, Bit>; E],
    hi_change: [Signal<Local, Bit>; E],
    rest: [Signal<Local, Bit>; E],
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
            lost_ok: std::array::from_fn(|_| Default::default()),
            hi_used: std::array::from_fn(|_| Default::default()),
            event_ok: std::array::from_fn(|_| Default::default()),
            time_used: std::array::from_fn(|_| Default::default()),
            dropped: std::array::from_fn(|_| Default::default()),
            overflow: std::array::from_fn(|_| Default::default()),
            pushed_before: std::array::from_fn(|_| Default::default()),
            remainder_before: std::array::from_fn(|_| Default::default()),
            drops_since_before: std::array::from_fn(|_| Default::default()),
            losts_before: std::array::from_fn(|_| Default::default()),
            drops_before: std::array::from_fn(|_| Default::default()),
            lost_leaves_rest: std::array::from_fn(|_| Default::default()),
            pushed_any: Default::default(),
            remainder_after: Default::default(),
            drops_since_after: Default::default(),
            losts: Default::default(),
            drops: Default::default(),
            any_c: std::array::from_fn(|_| Default::default()),
            rem_c: std::array::from_fn(|_| Default::default()),
            since_c: std::array::from_fn(|_| Default::default()),
            nl_c: std::array::from_fn(|_| Default::default()),
            dr_c: std::array::from_fn(|_| Default::default()),
            any_n: std::array::from_fn(|_| Default::default()),
            rem_n: std::array::from_fn(|_| Default::default()),
            since_n: std::array::from_fn(|_| Default::default()),
            nl_n: std::array::from_fn(|_| Default::default()),
            dr_n: std::array::from_fn(|_| Default::default()),
            hi_last: std::array::from_fn(|_| Default::default()),
            hi_last_n: std::array::from_fn(|_| Default::default()),
            need: std::array::from_fn(|_| Default::default()),
            long: std::array::from_fn(|_| Default::default()),
            pending: std::array::from_fn(|_| Default::default()),
            hi_match: std::array::from_fn(|_| Default::default()),
            hi_change: std::array::from_fn(|_| Default::default()),
            rest: std::array::from_fn(|_| Default::default()),
            slot_bit: std::array::from_fn(|s| Constant::new((1u64 << s).to_bits())),
        }
    }
}

impl<const E: usize> Logic for Decide<E> {
    #[hdl_gen]
    fn update(&mut self) {
        // The keeper's filler: one word, before everything else.
        self.keep.next = self.valid.val() & self.due.val() & self.filler_room.val();
        self.any_c[0].next = false;
        self.rem_c[0].next = self.lost_nonzero.val();
        self.since_c[0].next = 0.into();
        self.nl_c[0].next = 0.into();
        self.dr_c[0].next = 0.into();
        self.hi_last[0].next = 0.into();
        for s in 0..E {
            // The gap tests apply to the clock's first push only.
            self.need[s].next = !self.any_c[s].val() & self.need_time[s].val();
            self.long[s].next = !self.any_c[s].val() & self.too_long[s].val();
            if self.keep.val() {
                self.need[s].next = !self.any_c[s].val() & self.need_time_k[s].val();
                self.long[s].next = !self.any_c[s].val() & self.too_long_k[s].val();
            }
            // Pending LOST: [TIME] LOST, atomic, before the event.
            self.pending[s].next = self.rem_c[s].val() | self.since_c[s].val().any();
            self.lost_ok[s].next = self.ev_valid[s].val()
                & self.pending[s].val()
                & !self.long[s].val()
                & self.open.val();
            // LINE_HI: against the last ACCESS pushed in this clock, or the
            // stream's at the clock start.
            self.hi_match[s].next = self.hi_eq_reg[s].val();
            for t in 0..E {
                if (t < s) & self.hi_last[s].val().get_bit(t) {
                    self.hi_match[s].next = self.hi_eq_slot[s * 4 + t].val();
                }
            }
            self.hi_change[s].next = self.access[s].val() & !self.hi_match[s].val();
            // The event: [TIME] [LINE_HI] word, 1 to 3 words.
            self.event_ok[s].next = self.ev_valid[s].val() & !self.long[s].val() & self.open.val();
            self.hi_used[s].next = self.event_ok[s].val() & self.hi_change[s].val();
            self.time_used[s].next =
                self.need[s].val() & (self.lost_ok[s].val() | self.event_ok[s].val());
            self.dropped[s].next = self.ev_valid[s].val() & !self.event_ok[s].val();
            self.overflow[s].next = self.ev_valid[s].val() & self.long[s].val();
            // The state for the next slot.
            self.any_n[s].next =
                self.any_c[s].val() | self.lost_ok[s].val() | self.event_ok[s].val();
            self.hi_last_n[s].next = self.hi_last[s].val();
            if self.event_ok[s].val() & self.access[s].val() {
                self.hi_last_n[s].next = self.slot_bit[s].val();
            }
            // The m-th LOST (m = nl + 1) after d = dr drops leaves a
            // remainder iff every LOST before it did and u + d > m (2^21-1).
            self.rest[s].next = false;
            for m in 0..E {
                for d in 0..E {
                    if (self.nl_c[s].val().index() == m) & (self.dr_c[s].val().index() == d) {
                        self.rest[s].next = self.lost_over[(m + 1) * 4 + d].val();
                    }
                }
            }
            self.lost_leaves_rest[s].next = self.rem_c[s].val() & self.rest[s].val();
            self.rem_n[s].next = self.rem_c[s].val();
            self.since_n[s].next = self.since_c[s].val();
            if self.dropped[s].val() {
                self.since_n[s].next = self.since_c[s].val() + 1;
            }
            if self.lost_ok[s].val() {
                self.rem_n[s].next = self.lost_leaves_rest[s].val();
                self.since_n[s].next = 0.into();
                if self.dropped[s].val() {
                    self.since_n[s].next = 1.into();
                }
            }
            self.nl_n[s].next = self.nl_c[s].val();
            if self.lost_ok[s].val() {
                self.nl_n[s].next = self.nl_c[s].val() + 1;
            }
            self.dr_n[s].next = self.dr_c[s].val();
            if self.dropped[s].val() {
                self.dr_n[s].next = self.dr_c[s].val() + 1;
            }
            self.pushed_before[s].next = self.any_c[s].val();
            self.remainder_before[s].next = self.rem_c[s].val();
            self.drops_since_before[s].next = self.since_c[s].val();
            self.losts_before[s].next = self.nl_c[s].val();
            self.drops_before[s].next = self.dr_c[s].val();
            // The state before the next slot, written here, after this
            // slot's state: the generated Verilog runs this block once, top
            // to bottom, so every read must follow its write (a read ahead
            // of it would see the previous evaluation's value).
            for t in 0..E {
                if t == s + 1 {
                    self.any_c[t].next = self.any_n[s].val();
                    self.rem_c[t].next = self.rem_n[s].val();
                    self.since_c[t].next = self.since_n[s].val();
                    self.nl_c[t].next = self.nl_n[s].val();
                    self.dr_c[t].next = self.dr_n[s].val();
                    self.hi_last[t].next = self.hi_last_n[s].val();
                }
            }
        }
        for s in 0..E {
            self.pushed_any.next = self.any_n[s].val();
            self.remainder_after.next = self.rem_n[s].val();
            self.drops_since_after.next = self.since_n[s].val();
            self.losts.next = self.nl_n[s].val();
            self.drops.next = self.dr_n[s].val();
        }
    }
}
