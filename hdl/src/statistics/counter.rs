//! The unit's building blocks with no knowledge of the bus: an interval
//! counter with its snapshot and its held records, and a delay line.

use rust_hdl::prelude::*;

/// Address bits of each counter's held records: [`HOLD_SLOTS`] records,
/// as many as the credit's largest burst (board.md, 1..=16), which bounds
/// the records sent and not yet read ([`super::packets`]).
pub const HOLD_SLOT_BITS: usize = 4;
pub const HOLD_SLOTS: usize = 1 << HOLD_SLOT_BITS;

/// One counter of the open interval and its snapshot of the last closed
/// one; the snapshot of an interval closed by `close` in clock `c` shows
/// from clock `c + 2`. Its inputs are registered first, so that its sum
/// sees no logic of the stage that feeds it, and the clock's sum is
/// registered too, so that the 32-bit add sees only registers: the
/// total lags a clock behind the sum, and the close takes the snapshot
/// from the total plus the pending sum. The clock's lanes are counted by
/// a tree of full and half adders before the one add of `add`, not by a
/// chain of increments. The lanes come as one bit each of
/// a vector (not an array of bits), so that an array of counters
/// generates valid Verilog.
///
/// The held records: [`HOLD_SLOTS`] copies of the snapshot in a small
/// RAM, written from the snapshot in a clock of `hold_write` (slot
/// `hold_slot`), read (slot `read_slot`) into `held` a clock later, for
/// the statistics path, which sends them after the snapshot has moved on
/// ([`super::packets`]).
#[derive(LogicBlock)]
pub struct IntervalCounter<const L: usize> {
    pub clock: Signal<In, Clock>,
    /// Bit `j`: an event in lane `j` this clock.
    pub lanes: Signal<In, Bits<L>>,
    /// Events this clock besides the lanes'.
    pub add: Signal<In, Bits<5>>,
    /// This clock opens the next interval (its events belong to it).
    pub close: Signal<In, Bit>,
    /// The unit counts this clock's events.
    pub enable: Signal<In, Bit>,
    pub snapshot: Signal<Out, Bits<32>>,
    /// The open interval has counted an event (its total or the clock
    /// before's pending sum is not 0): what the snapshot of a close in
    /// the clock before this one's register will hold is not 0, known a
    /// clock before the snapshot shows it.
    pub open_counted: Signal<Out, Bit>,
    pub hold_write: Signal<In, Bit>,
    pub hold_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub read_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub held: Signal<Out, Bits<32>>,
    hold: RAM<Bits<32>, HOLD_SLOT_BITS>,
    r_lanes: DFF<Bits<L>>,
    r_add: DFF<Bits<5>>,
    r_close: DFF<Bit>,
    r_enable: DFF<Bit>,
    /// The lanes' bits (zero from `L` on), the tree's sums (`s`) and
    /// carries (`c`, `d`, `t`) and the lanes' count.
    lane: [Signal<Local, Bit>; 8],
    s1: Signal<Local, Bit>,
    c1: Signal<Local, Bit>,
    s2: Signal<Local, Bit>,
    c2: Signal<Local, Bit>,
    s3: Signal<Local, Bit>,
    c3: Signal<Local, Bit>,
    c4: Signal<Local, Bit>,
    t: Signal<Local, Bit>,
    d1: Signal<Local, Bit>,
    d2: Signal<Local, Bit>,
    count: Signal<Local, Bits<5>>,
    inc: Signal<Local, Bits<5>>,
    /// The clock before's `inc`, not yet in `total`.
    pending: DFF<Bits<5>>,
    next_total: Signal<Local, Bits<32>>,
    total: DFF<Bits<32>>,
    snap: DFF<Bits<32>>,
}

impl<const L: usize> Default for IntervalCounter<L> {
    fn default() -> Self {
        assert!((1..=8).contains(&L), "1 <= L <= 8");
        Self {
            clock: Default::default(),
            lanes: Default::default(),
            add: Default::default(),
            close: Default::default(),
            enable: Default::default(),
            snapshot: Default::default(),
            open_counted: Default::default(),
            hold_write: Default::default(),
            hold_slot: Default::default(),
            read_slot: Default::default(),
            held: Default::default(),
            hold: Default::default(),
            r_lanes: Default::default(),
            r_add: Default::default(),
            r_close: Default::default(),
            r_enable: Default::default(),
            lane: std::array::from_fn(|_| Default::default()),
            s1: Default::default(),
            c1: Default::default(),
            s2: Default::default(),
            c2: Default::default(),
            s3: Default::default(),
            c3: Default::default(),
            c4: Default::default(),
            t: Default::default(),
            d1: Default::default(),
            d2: Default::default(),
            count: Default::default(),
            inc: Default::default(),
            pending: Default::default(),
            next_total: Default::default(),
            total: Default::default(),
            snap: Default::default(),
        }
    }
}

impl<const L: usize> Logic for IntervalCounter<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r_lanes, r_add, r_close, r_enable, pending, total, snap);
        self.r_lanes.d.next = self.lanes.val();
        self.r_add.d.next = self.add.val();
        self.r_close.d.next = self.close.val();
        self.r_enable.d.next = self.enable.val();
        for j in 0..8 {
            self.lane[j].next = false;
        }
        for j in 0..L {
            self.lane[j].next = self.r_lanes.q.val().get_bit(j);
        }
        // Weight 1: three full adders and a half adder.
        self.s1.next = self.lane[0].val() ^ self.lane[1].val() ^ self.lane[2].val();
        self.c1.next = (self.lane[0].val() & self.lane[1].val())
            | (self.lane[2].val() & (self.lane[0].val() ^ self.lane[1].val()));
        self.s2.next = self.lane[3].val() ^ self.lane[4].val() ^ self.lane[5].val();
        self.c2.next = (self.lane[3].val() & self.lane[4].val())
            | (self.lane[5].val() & (self.lane[3].val() ^ self.lane[4].val()));
        self.s3.next = self.lane[6].val() ^ self.lane[7].val() ^ self.s1.val();
        self.c3.next = (self.lane[6].val() & self.lane[7].val())
            | (self.s1.val() & (self.lane[6].val() ^ self.lane[7].val()));
        self.c4.next = self.s2.val() & self.s3.val();
        // Weight 2: c1, c2, c3 and c4; weight 4: d1 and d2.
        self.t.next = self.c1.val() ^ self.c2.val() ^ self.c3.val();
        self.d1.next =
            (self.c1.val() & self.c2.val()) | (self.c3.val() & (self.c1.val() ^ self.c2.val()));
        self.d2.next = self.t.val() & self.c4.val();
        self.count.next = 0.into();
        self.count.next = self
            .count
            .val()
            .replace_bit(0, self.s2.val() ^ self.s3.val());
        self.count.next = self
            .count
            .val()
            .replace_bit(1, self.t.val() ^ self.c4.val());
        self.count.next = self
            .count
            .val()
            .replace_bit(2, self.d1.val() ^ self.d2.val());
        self.count.next = self
            .count
            .val()
            .replace_bit(3, self.d1.val() & self.d2.val());
        self.inc.next = 0.into();
        if self.r_enable.q.val() {
            self.inc.next = self.count.val() + self.r_add.q.val();
        }
        self.pending.d.next = self.inc.val();
        // The interval's total through the clock before the close's; the
        // close's own events are in `inc`, and go to the next interval.
        self.next_total.next = self.total.q.val() + bit_cast::<32, 5>(self.pending.q.val());
        self.total.d.next = self.next_total.val();
        if self.r_close.q.val() {
            self.total.d.next = 0.into();
            self.snap.d.next = self.next_total.val();
        }
        self.snapshot.next = self.snap.q.val();
        // No total passes 2^32 - 1, so the sum is 0 only if both are.
        self.open_counted.next = (self.total.q.val() != 0) | (self.pending.q.val() != 0);
        self.hold.write_clock.next = self.clock.val();
        self.hold.read_clock.next = self.clock.val();
        self.hold.write_enable.next = self.hold_write.val();
        self.hold.write_address.next = self.hold_slot.val();
        self.hold.write_data.next = self.snap.q.val();
        self.hold.read_address.next = self.read_slot.val();
        self.held.next = self.hold.read_data.val();
    }
}

/// `N` clocks of delay.
#[derive(LogicBlock)]
pub struct DelayLine<T: Synth, const N: usize> {
    pub clock: Signal<In, Clock>,
    pub d: Signal<In, T>,
    pub q: Signal<Out, T>,
    regs: [DFF<T>; N],
}

impl<T: Synth, const N: usize> Default for DelayLine<T, N> {
    fn default() -> Self {
        assert!(N >= 1, "a delay line of at least one clock");
        Self {
            clock: Default::default(),
            d: Default::default(),
            q: Default::default(),
            regs: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<T: Synth, const N: usize> Logic for DelayLine<T, N> {
    #[hdl_gen]
    fn update(&mut self) {
        for s in 0..N {
            self.regs[s].clock.next = self.clock.val();
        }
        self.regs[0].d.next = self.d.val();
        for s in 1..N {
            self.regs[s].d.next = self.regs[s - 1].q.val();
        }
        // The last stage (the loop's last write wins).
        for s in 0..N {
            self.q.next = self.regs[s].q.val();
        }
    }
}
