//! The reference limit (board.md 2.2 step 2, "The limit"): of the `L`
//! lanes' references of one fabric clock, the first `E` in lane order go on
//! to the CU in slots `0..E`, each with its lane (tick offset in the
//! clock); every later one is dropped and counted. The count of the
//! clock's dropped references goes with the slots to the encoder, which
//! adds it to the lost count after the clock's events (a dropped reference
//! always comes after every slot's in stream order).
//!
//! One fabric clock: slot `s` takes lane `j` when `j` is valid and exactly
//! `s` valid lanes come before it, a prefix count of at most 3 bits. At
//! most one lane goes to a slot, so the slot's fields are an OR of the
//! lanes' fields each masked by its take flag (no priority chain through
//! the lanes).

use rust_hdl::prelude::*;

#[derive(LogicBlock)]
pub struct RefLimit<const L: usize, const E: usize> {
    pub clock: Signal<In, Clock>,
    pub ref_valid: [Signal<In, Bit>; L],
    pub ref_write: [Signal<In, Bit>; L],
    pub ref_line: [Signal<In, Bits<48>>; L],
    pub ref_rank: [Signal<In, Bits<2>>; L],
    pub ref_row: [Signal<In, Bits<18>>; L],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// One fabric clock after the references: the clock's first `E`.
    pub slot_valid: [Signal<Out, Bit>; E],
    pub slot_write: [Signal<Out, Bit>; E],
    pub slot_line: [Signal<Out, Bits<48>>; E],
    pub slot_rank: [Signal<Out, Bits<2>>; E],
    pub slot_row: [Signal<Out, Bits<18>>; E],
    /// The slot's lane: its tick is the clock's tick plus this.
    pub slot_lane: [Signal<Out, Bits<3>>; E],
    /// References of this clock beyond the first `E`.
    pub over: Signal<Out, Bits<4>>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub references_over_limit: Signal<Out, Bits<32>>,
    pub clocks_over_limit: Signal<Out, Bits<32>>,
    /// Valid lanes before lane `j`.
    before: [Signal<Local, Bits<4>>; L],
    total: Signal<Local, Bits<4>>,
    /// Per slot, the fields of the lane it takes (an OR over the lanes,
    /// at most one of which is taken).
    pick_valid: [Signal<Local, Bit>; E],
    pick_write: [Signal<Local, Bit>; E],
    pick_line: [Signal<Local, Bits<48>>; E],
    pick_rank: [Signal<Local, Bits<2>>; E],
    pick_row: [Signal<Local, Bits<18>>; E],
    pick_lane: [Signal<Local, Bits<3>>; E],
    over_now: Signal<Local, Bits<4>>,
    out_valid: [DFF<Bit>; E],
    out_write: [DFF<Bit>; E],
    out_line: [DFF<Bits<48>>; E],
    out_rank: [DFF<Bits<2>>; E],
    out_row: [DFF<Bits<18>>; E],
    out_lane: [DFF<Bits<3>>; E],
    out_over: DFF<Bits<4>>,
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    over_count: DFF<Bits<32>>,
    clock_count: DFF<Bits<32>>,
    slots: Constant<Bits<4>>,
}

impl<const L: usize, const E: usize> Default for RefLimit<L, E> {
    fn default() -> Self {
        assert!(
            (1..=8).contains(&L) && (1..=L).contains(&E),
            "1 <= E <= L <= 8"
        );
        Self {
            clock: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_write: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_rank: std::array::from_fn(|_| Default::default()),
            ref_row: std::array::from_fn(|_| Default::default()),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            slot_valid: std::array::from_fn(|_| Default::default()),
            slot_write: std::array::from_fn(|_| Default::default()),
            slot_line: std::array::from_fn(|_| Default::default()),
            slot_rank: std::array::from_fn(|_| Default::default()),
            slot_row: std::array::from_fn(|_| Default::default()),
            slot_lane: std::array::from_fn(|_| Default::default()),
            over: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            references_over_limit: Default::default(),
            clocks_over_limit: Default::default(),
            before: std::array::from_fn(|_| Default::default()),
            total: Default::default(),
            pick_valid: std::array::from_fn(|_| Default::default()),
            pick_write: std::array::from_fn(|_| Default::default()),
            pick_line: std::array::from_fn(|_| Default::default()),
            pick_rank: std::array::from_fn(|_| Default::default()),
            pick_row: std::array::from_fn(|_| Default::default()),
            pick_lane: std::array::from_fn(|_| Default::default()),
            over_now: Default::default(),
            out_valid: std::array::from_fn(|_| Default::default()),
            out_write: std::array::from_fn(|_| Default::default()),
            out_line: std::array::from_fn(|_| Default::default()),
            out_rank: std::array::from_fn(|_| Default::default()),
            out_row: std::array::from_fn(|_| Default::default()),
            out_lane: std::array::from_fn(|_| Default::default()),
            out_over: Default::default(),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            over_count: Default::default(),
            clock_count: Default::default(),
            slots: Constant::new((E as u64).to_bits()),
        }
    }
}

impl<const L: usize, const E: usize> Logic for RefLimit<L, E> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            out_over,
            out_tick,
            out_tick_valid,
            over_count,
            clock_count
        );
        self.out_tick.d.next = self.tick_in.val();
        self.out_tick_valid.d.next = self.tick_valid_in.val();
        self.before[0].next = 0.into();
        for j in 1..L {
            self.before[j].next = self.before[j - 1].val() + self.ref_valid[j - 1].val();
        }
        for j in 0..L {
            self.total.next = self.before[j].val() + self.ref_valid[j].val();
        }
        self.over_now.next = 0.into();
        if self.total.val() > self.slots.val() {
            self.over_now.next = self.total.val() - self.slots.val();
        }
        for s in 0..E {
            self.out_valid[s].clock.next = self.clock.val();
            self.out_write[s].clock.next = self.clock.val();
            self.out_line[s].clock.next = self.clock.val();
            self.out_rank[s].clock.next = self.clock.val();
            self.out_row[s].clock.next = self.clock.val();
            self.out_lane[s].clock.next = self.clock.val();
            // OR of the taken lane's fields: `x | f` under flags of which
            // at most one holds.
            self.pick_valid[s].next = false;
            self.pick_write[s].next = false;
            self.pick_line[s].next = 0.into();
            self.pick_rank[s].next = 0.into();
            self.pick_row[s].next = 0.into();
            self.pick_lane[s].next = 0.into();
            for j in 0..L {
                if self.ref_valid[j].val() & (self.before[j].val().index() == s) {
                    self.pick_valid[s].next = true;
                    self.pick_write[s].next = self.pick_write[s].val() | self.ref_write[j].val();
                    self.pick_line[s].next = self.pick_line[s].val() | self.ref_line[j].val();
                    self.pick_rank[s].next = self.pick_rank[s].val() | self.ref_rank[j].val();
                    self.pick_row[s].next = self.pick_row[s].val() | self.ref_row[j].val();
                    self.pick_lane[s].next = self.pick_lane[s].val() | j.to_bits();
                }
            }
            self.out_valid[s].d.next = self.pick_valid[s].val();
            self.out_write[s].d.next = self.pick_write[s].val();
            self.out_line[s].d.next = self.pick_line[s].val();
            self.out_rank[s].d.next = self.pick_rank[s].val();
            self.out_row[s].d.next = self.pick_row[s].val();
            self.out_lane[s].d.next = self.pick_lane[s].val();
            self.slot_valid[s].next = self.out_valid[s].q.val();
            self.slot_write[s].next = self.out_write[s].q.val();
            self.slot_line[s].next = self.out_line[s].q.val();
            self.slot_rank[s].next = self.out_rank[s].q.val();
            self.slot_row[s].next = self.out_row[s].q.val();
            self.slot_lane[s].next = self.out_lane[s].q.val();
        }
        self.out_over.d.next = self.over_now.val();
        self.over_count.d.next = self.over_count.q.val() + bit_cast::<32, 4>(self.out_over.q.val());
        if self.out_over.q.val().any() {
            self.clock_count.d.next = self.clock_count.q.val() + 1;
        }
        self.over.next = self.out_over.q.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.references_over_limit.next = self.over_count.q.val();
        self.clocks_over_limit.next = self.clock_count.q.val();
    }
}
