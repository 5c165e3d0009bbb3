//! P0, the encoder's input registers, with the tick step's carry chain
//! worked out from the input and the previous clock's tick, so that P1
//! picks the saturated step from registers (a wide subtraction and compare
//! fed by the input's wires were the fabric's critical path).

use rust_hdl::prelude::*;

/// Registers the encoder's inputs; beside them, the step from the previous
/// clock's tick to this clock's (`tick - tick_prev`, modulo `2^64`): its
/// low 32 bits, and whether it fits them (the high 32 bits are 0).
#[derive(LogicBlock)]
pub struct InputStage<const E: usize> {
    pub clock: Signal<In, Clock>,
    pub ev_valid_in: [Signal<In, Bit>; E],
    pub ev_kind_in: [Signal<In, Bits<2>>; E],
    pub ev_write_in: [Signal<In, Bit>; E],
    pub ev_value_in: [Signal<In, Bits<48>>; E],
    pub ev_lane_in: [Signal<In, Bits<3>>; E],
    pub over_in: Signal<In, Bits<4>>,
    pub tracing_in: Signal<In, Bit>,
    pub tags_only_in: Signal<In, Bit>,
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// The inputs a clock later (`ev_valid` gated by the clock's valid).
    pub ev_valid: [Signal<Out, Bit>; E],
    pub ev_kind: [Signal<Out, Bits<2>>; E],
    pub ev_write: [Signal<Out, Bit>; E],
    pub ev_value: [Signal<Out, Bits<48>>; E],
    pub ev_lane: [Signal<Out, Bits<3>>; E],
    pub over: Signal<Out, Bits<4>>,
    pub tracing: Signal<Out, Bit>,
    pub tags_only: Signal<Out, Bit>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub step_lo: Signal<Out, Bits<32>>,
    pub step_fits: Signal<Out, Bit>,
    r_ev_valid: [DFF<Bit>; E],
    r_ev_kind: [DFF<Bits<2>>; E],
    r_ev_write: [DFF<Bit>; E],
    r_ev_value: [DFF<Bits<48>>; E],
    r_ev_lane: [DFF<Bits<3>>; E],
    r_over: DFF<Bits<4>>,
    r_tracing: DFF<Bit>,
    r_tags_only: DFF<Bit>,
    r_tick: DFF<Bits<64>>,
    r_tick_valid: DFF<Bit>,
    step_now: Signal<Local, Bits<64>>,
    r_step_lo: DFF<Bits<32>>,
    r_step_fits: DFF<Bit>,
}

impl<const E: usize> Default for InputStage<E> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            ev_valid_in: std::array::from_fn(|_| Default::default()),
            ev_kind_in: std::array::from_fn(|_| Default::default()),
            ev_write_in: std::array::from_fn(|_| Default::default()),
            ev_value_in: std::array::from_fn(|_| Default::default()),
            ev_lane_in: std::array::from_fn(|_| Default::default()),
            over_in: Default::default(),
            tracing_in: Default::default(),
            tags_only_in: Default::default(),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            ev_kind: std::array::from_fn(|_| Default::default()),
            ev_write: std::array::from_fn(|_| Default::default()),
            ev_value: std::array::from_fn(|_| Default::default()),
            ev_lane: std::array::from_fn(|_| Default::default()),
            over: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            step_lo: Default::default(),
            step_fits: Default::default(),
            r_ev_valid: std::array::from_fn(|_| Default::default()),
            r_ev_kind: std::array::from_fn(|_| Default::default()),
            r_ev_write: std::array::from_fn(|_| Default::default()),
            r_ev_value: std::array::from_fn(|_| Default::default()),
            r_ev_lane: std::array::from_fn(|_| Default::default()),
            r_over: Default::default(),
            r_tracing: Default::default(),
            r_tags_only: Default::default(),
            r_tick: Default::default(),
            r_tick_valid: Default::default(),
            step_now: Default::default(),
            r_step_lo: Default::default(),
            r_step_fits: Default::default(),
        }
    }
}

impl<const E: usize> Logic for InputStage<E> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            r_over,
            r_tracing,
            r_tags_only,
            r_tick,
            r_tick_valid,
            r_step_lo,
            r_step_fits
        );
        for s in 0..E {
            self.r_ev_valid[s].clock.next = self.clock.val();
            self.r_ev_kind[s].clock.next = self.clock.val();
            self.r_ev_write[s].clock.next = self.clock.val();
            self.r_ev_value[s].clock.next = self.clock.val();
            self.r_ev_lane[s].clock.next = self.clock.val();
            self.r_ev_valid[s].d.next = self.ev_valid_in[s].val() & self.tick_valid_in.val();
            self.r_ev_kind[s].d.next = self.ev_kind_in[s].val();
            self.r_ev_write[s].d.next = self.ev_write_in[s].val();
            self.r_ev_value[s].d.next = self.ev_value_in[s].val();
            self.r_ev_lane[s].d.next = self.ev_lane_in[s].val();
            self.ev_valid[s].next = self.r_ev_valid[s].q.val();
            self.ev_kind[s].next = self.r_ev_kind[s].q.val();
            self.ev_write[s].next = self.r_ev_write[s].q.val();
            self.ev_value[s].next = self.r_ev_value[s].q.val();
            self.ev_lane[s].next = self.r_ev_lane[s].q.val();
        }
        self.r_over.d.next = self.over_in.val();
        self.r_tracing.d.next = self.tracing_in.val();
        self.r_tags_only.d.next = self.tags_only_in.val();
        self.r_tick.d.next = self.tick_in.val();
        self.r_tick_valid.d.next = self.tick_valid_in.val();
        self.step_now.next = self.tick_in.val() - self.r_tick.q.val();
        self.r_step_lo.d.next = self.step_now.val().get_bits::<32>(0);
        self.r_step_fits.d.next = !self.step_now.val().get_bits::<32>(32).any();
        self.over.next = self.r_over.q.val();
        self.tracing.next = self.r_tracing.q.val();
        self.tags_only.next = self.r_tags_only.q.val();
        self.tick.next = self.r_tick.q.val();
        self.tick_valid.next = self.r_tick_valid.q.val();
        self.step_lo.next = self.r_step_lo.q.val();
        self.step_fits.next = self.r_step_fits.q.val();
    }
}
