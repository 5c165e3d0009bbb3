//! P0, the encoder's input registers, with the tick step's carry chains
//! worked out from the input and the previous clock's tick, so that P1
//! picks the saturated step from registers (a wide subtraction and compare
//! fed by the input's wires were the fabric's critical path).

use super::KEEPER_GAP;
use rust_hdl::prelude::*;

/// Registers the encoder's inputs; beside them, the pieces of the step from
/// the previous clock's tick to this clock's (`tick - tick_prev`):
/// - `step_lo`: the low halves' difference with its borrow in bit 32;
/// - `step_k_nb`: the same less `KEEPER_GAP` in 34 bits (add `2^32` for a
///   borrow from the high halves);
/// - `hi_same`, `hi_next`: the high half equals the previous one, or it
///   plus one. The step fits 32 bits exactly when
///   `borrow ? hi_next : hi_same`.
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
    pub step_lo: Signal<Out, Bits<33>>,
    pub step_k_nb: Signal<Out, Bits<34>>,
    pub hi_same: Signal<Out, Bit>,
    pub hi_next: Signal<Out, Bit>,
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
    /// The registered tick's high half plus one, and its low half plus
    /// `KEEPER_GAP` (34 bits; from reset, tick 0's): one carry chain per
    /// step piece.
    r_tick_hi_inc: DFF<Bits<32>>,
    r_tick_lo_k: DFFWithInit<Bits<34>>,
    r_step_lo: DFF<Bits<33>>,
    r_step_k_nb: DFF<Bits<34>>,
    r_hi_same: DFF<Bit>,
    r_hi_next: DFF<Bit>,
    keeper_gap: Constant<Bits<34>>,
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
            step_k_nb: Default::default(),
            hi_same: Default::default(),
            hi_next: Default::default(),
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
            r_tick_hi_inc: Default::default(),
            r_tick_lo_k: DFFWithInit::new(KEEPER_GAP.to_bits()),
            r_step_lo: Default::default(),
            r_step_k_nb: Default::default(),
            r_hi_same: Default::default(),
            r_hi_next: Default::default(),
            keeper_gap: Constant::new(KEEPER_GAP.to_bits()),
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
            r_tick_hi_inc,
            r_tick_lo_k,
            r_step_lo,
            r_step_k_nb,
            r_hi_same,
            r_hi_next
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
        self.r_tick_hi_inc.d.next = self.tick_in.val().get_bits::<32>(32) + 1;
        self.r_tick_lo_k.d.next =
            bit_cast::<34, 32>(self.tick_in.val().get_bits::<32>(0)) + self.keeper_gap.val();
        self.r_step_lo.d.next = bit_cast::<33, 32>(self.tick_in.val().get_bits::<32>(0))
            - bit_cast::<33, 32>(self.r_tick.q.val().get_bits::<32>(0));
        self.r_step_k_nb.d.next =
            bit_cast::<34, 32>(self.tick_in.val().get_bits::<32>(0)) - self.r_tick_lo_k.q.val();
        self.r_hi_same.d.next =
            self.tick_in.val().get_bits::<32>(32) == self.r_tick.q.val().get_bits::<32>(32);
        self.r_hi_next.d.next = self.tick_in.val().get_bits::<32>(32) == self.r_tick_hi_inc.q.val();
        self.over.next = self.r_over.q.val();
        self.tracing.next = self.r_tracing.q.val();
        self.tags_only.next = self.r_tags_only.q.val();
        self.tick.next = self.r_tick.q.val();
        self.tick_valid.next = self.r_tick_valid.q.val();
        self.step_lo.next = self.r_step_lo.q.val();
        self.step_k_nb.next = self.r_step_k_nb.q.val();
        self.hi_same.next = self.r_hi_same.q.val();
        self.hi_next.next = self.r_hi_next.q.val();
    }
}
