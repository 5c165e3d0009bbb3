//! Record encoder and the logical TX FIFO (format.md 4.1, board.md steps 1
//! and 2): per tick, the pending LOST event and then the tick's event are
//! encoded into words (TIME, LINE_HI, the word) and pushed atomically if the
//! FIFO has room; then the drain's rate limiter decides whether the tick
//! pops a word. The fill level, the room and the pops are exact per tick;
//! the words themselves go to `tx_fifo::TxFifoStorage` one clock later.
//!
//! Pipeline (fabric clocks): the inputs are registered three times (S1:
//! the tick difference to the previous clock; S2: the event words and the
//! gap step; S3: the clock being decided), then the decision for the ticks
//! in S3, registered, is the output: the outputs come 4 clocks after the
//! inputs, the counters 5. What the decision of one tick leaves for the
//! next (time gap, LINE_HI, LOST count, fill level, drain credit) stays in
//! one clock, but without wide carry chains in series: the gap to the last
//! pushed word is held as a number (`gap`, and `gap - KEEPER_GAP` beside
//! it) instead of the tick of that word, and the gap at the next clock is
//! one of three sums prepared from registers (pushed: the tick step;
//! keeper: `gap - KEEPER_GAP + step`; else `gap + step`). For that the
//! step to the next clock's tick must be known while a clock is decided,
//! which is why S1 and S2 run ahead. `tick_valid_in`, once true, must stay
//! true (the DCBU's is); the ticks before the first valid one count as
//! time since reset (last = 0, board.md).
//!
//! Hardware bound (differs from the golden model for gaps over 2^27 ticks,
//! about 0.17 s at DDR3-1600): one push holds at most one TIME word. A
//! keeper pushes a filler TIME word (payload 2^21-1, dt 0) at the first tick
//! at which `tick - last >= 64 * (2^21-1)`, before that tick's events, so
//! events never need more. An event whose gap would still need two TIME
//! words (only after the keeper found the FIFO full for 64 ticks in a row)
//! is dropped and counted lost, and `time_overflows` counts it.
//! The gap is held in 32 bits and saturates at `2^32 - 1` ticks (32
//! keeper gaps); it only gets there if the keeper is held off by a full
//! FIFO that long, i.e. with a drain slower than one word per
//! `KEEPER_GAP` ticks. The fill level is held in `LEVEL_BITS` bits (FIFO
//! depth below `2^LEVEL_BITS`) and the drain needs `den + num < 2^32`.

use rust_hdl::prelude::*;

/// Largest TIME / LINE_HI / LOST payload, 2^21-1.
pub const PAYLOAD_MAX: u64 = (1 << 21) - 1;
/// Gap in ticks at which the keeper pushes a filler TIME word.
pub const KEEPER_GAP: u64 = PAYLOAD_MAX * 64;
/// Width of the fill level: the FIFO depth must be below `2^LEVEL_BITS`.
pub const LEVEL_BITS: usize = 20;
/// Fabric clocks from the encoder's inputs to its word, fill and pop outputs.
pub const LATENCY: usize = 4;
/// The gap register's saturation value.
const GAP_MAX: u64 = u32::MAX as u64;
const MASK34: u64 = (1 << 34) - 1;

/// `x - KEEPER_GAP` as a 34-bit two's complement number.
const fn minus_keeper_gap(x: u64) -> u64 {
    x.wrapping_sub(KEEPER_GAP) & MASK34
}

#[derive(LogicBlock)]
pub struct Encoder<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub ev_valid: [Signal<In, Bit>; L],
    pub ev_kind: [Signal<In, Bits<2>>; L],
    pub ev_write: [Signal<In, Bit>; L],
    pub ev_value: [Signal<In, Bits<48>>; L],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// FIFO depth in words (a build parameter, held constant).
    pub depth: Signal<In, Bits<32>>,
    /// Drain rate `num / den` words per tick, `num * L < den`.
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    /// `LATENCY` clocks after the events: the words pushed per lane, in order.
    pub lane_count: [Signal<Out, Bits<32>>; L],
    pub lane_pos: [Signal<Out, Bits<32>>; L],
    pub word0: [Signal<Out, Bits<32>>; L],
    pub word1: [Signal<Out, Bits<32>>; L],
    pub word2: [Signal<Out, Bits<32>>; L],
    pub word3: [Signal<Out, Bits<32>>; L],
    pub word4: [Signal<Out, Bits<32>>; L],
    /// Fill level after each lane's tick (after its pushes and its pop).
    pub fill: [Signal<Out, Bits<32>>; L],
    /// A word popped in this clock: its stream position and lane.
    pub pop: Signal<Out, Bit>,
    pub pop_ptr: Signal<Out, Bits<32>>,
    pub pop_lane: Signal<Out, Bits<2>>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    /// Counters, one clock behind the words.
    pub events_dropped: Signal<Out, Bits<32>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub high_water: Signal<Out, Bits<32>>,
    lane: [EncoderLane; L],
    // S1: the inputs, and the tick step from the previous clock's tick.
    s1_valid: DFF<Bit>,
    s1_tick: DFF<Bits<64>>,
    s1_tick_hi_inc: DFF<Bits<32>>,
    s1_ev_valid: [DFF<Bit>; L],
    s1_ev_kind: [DFF<Bits<2>>; L],
    s1_ev_write: [DFF<Bit>; L],
    s1_ev_value: [DFF<Bits<48>>; L],
    s1_step: DFF<Bits<32>>,
    step_lo: Signal<Local, Bits<33>>,
    // S2: event words without dt, LINE_HI, and the gap steps.
    s2_valid: DFF<Bit>,
    s2_tick: DFF<Bits<64>>,
    s2_ev_valid: [DFF<Bit>; L],
    s2_access: [DFF<Bit>; L],
    s2_body: [DFF<Bits<32>>; L],
    s2_line_hi: [DFF<Bits<21>>; L],
    /// Ticks from the last lane of S3 to the first of S2, and minus KEEPER_GAP.
    step: DFF<Bits<32>>,
    step_k: DFF<Bits<34>>,
    /// Ticks since reset at S2's tick, and minus KEEPER_GAP.
    start_gap: DFF<Bits<32>>,
    start_gap_k: DFF<Bits<34>>,
    s1_tick_sat: Signal<Local, Bits<32>>,
    prep: [EventBody; L],
    // S3: the clock being decided.
    s3_valid: DFF<Bit>,
    s3_tick: DFF<Bits<64>>,
    s3_ev_valid: [DFF<Bit>; L],
    s3_access: [DFF<Bit>; L],
    s3_body: [DFF<Bits<32>>; L],
    s3_line_hi: [DFF<Bits<21>>; L],
    // State carried from tick to tick.
    gap: DFF<Bits<32>>,
    gap_k: DFF<Bits<34>>,
    hi: DFF<Bits<21>>,
    lost: DFF<Bits<32>>,
    level: DFF<Bits<LEVEL_BITS>>,
    /// `depth - level`, beside the level (the room is tested on its bits).
    free: DFF<Bits<LEVEL_BITS>>,
    /// The drain's credit minus `den - num` (see `EncoderLane`).
    credit: DFF<Bits<33>>,
    /// The drain rate as the lanes use it: `num`, and `num - den`.
    num: DFF<Bits<33>>,
    num_minus_den: DFF<Bits<33>>,
    last_pos: Signal<Local, Bits<32>>,
    // Outputs.
    out_count: [DFF<Bits<32>>; L],
    out_pos: [DFF<Bits<32>>; L],
    pos: [Signal<Local, Bits<32>>; L],
    out_word0: [DFF<Bits<32>>; L],
    out_word1: [DFF<Bits<32>>; L],
    out_word2: [DFF<Bits<32>>; L],
    out_word3: [DFF<Bits<32>>; L],
    out_word4: [DFF<Bits<32>>; L],
    out_fill: [DFF<Bits<32>>; L],
    out_fill_pushed: [DFF<Bits<32>>; L],
    out_pop: DFF<Bit>,
    out_pop_ptr: DFF<Bits<32>>,
    out_pop_lane: DFF<Bits<2>>,
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    out_dropped: DFF<Bits<3>>,
    out_lost_pushed: DFF<Bits<3>>,
    out_fillers: DFF<Bits<3>>,
    out_overflows: DFF<Bits<3>>,
    dropped_sum: Signal<Local, Bits<3>>,
    lost_sum: Signal<Local, Bits<3>>,
    filler_sum: Signal<Local, Bits<3>>,
    overflow_sum: Signal<Local, Bits<3>>,
    dropped: DFF<Bits<32>>,
    lost_count: DFF<Bits<32>>,
    filler_count: DFF<Bits<32>>,
    overflow_count: DFF<Bits<32>>,
    high: DFF<Bits<32>>,
    high_max: [Signal<Local, Bits<32>>; L],
    lanes_minus_1: Constant<Bits<32>>,
    lanes_minus_1_k: Constant<Bits<34>>,
    keeper_gap_34: Constant<Bits<34>>,
    gap_max: Constant<Bits<32>>,
    /// True for the clock's last lane only.
    lane_is_last: [Constant<Bit>; L],
}

impl<const L: usize> Default for Encoder<L> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            ev_kind: std::array::from_fn(|_| Default::default()),
            ev_write: std::array::from_fn(|_| Default::default()),
            ev_value: std::array::from_fn(|_| Default::default()),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            depth: Default::default(),
            drain_num: Default::default(),
            drain_den: Default::default(),
            lane_count: std::array::from_fn(|_| Default::default()),
            lane_pos: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            word3: std::array::from_fn(|_| Default::default()),
            word4: std::array::from_fn(|_| Default::default()),
            fill: std::array::from_fn(|_| Default::default()),
            pop: Default::default(),
            pop_ptr: Default::default(),
            pop_lane: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            events_dropped: Default::default(),
            lost_words: Default::default(),
            time_fillers: Default::default(),
            time_overflows: Default::default(),
            high_water: Default::default(),
            lane: std::array::from_fn(|_| Default::default()),
            s1_valid: Default::default(),
            s1_tick: Default::default(),
            s1_tick_hi_inc: Default::default(),
            s1_ev_valid: std::array::from_fn(|_| Default::default()),
            s1_ev_kind: std::array::from_fn(|_| Default::default()),
            s1_ev_write: std::array::from_fn(|_| Default::default()),
            s1_ev_value: std::array::from_fn(|_| Default::default()),
            s1_step: Default::default(),
            step_lo: Default::default(),
            s2_valid: Default::default(),
            s2_tick: Default::default(),
            s2_ev_valid: std::array::from_fn(|_| Default::default()),
            s2_access: std::array::from_fn(|_| Default::default()),
            s2_body: std::array::from_fn(|_| Default::default()),
            s2_line_hi: std::array::from_fn(|_| Default::default()),
            step: Default::default(),
            step_k: Default::default(),
            start_gap: Default::default(),
            start_gap_k: Default::default(),
            s1_tick_sat: Default::default(),
            prep: std::array::from_fn(|_| Default::default()),
            s3_valid: Default::default(),
            s3_tick: Default::default(),
            s3_ev_valid: std::array::from_fn(|_| Default::default()),
            s3_access: std::array::from_fn(|_| Default::default()),
            s3_body: std::array::from_fn(|_| Default::default()),
            s3_line_hi: std::array::from_fn(|_| Default::default()),
            gap: Default::default(),
            gap_k: Default::default(),
            hi: Default::default(),
            lost: Default::default(),
            level: Default::default(),
            free: Default::default(),
            credit: Default::default(),
            num: Default::default(),
            num_minus_den: Default::default(),
            last_pos: Default::default(),
            out_count: std::array::from_fn(|_| Default::default()),
            out_pos: std::array::from_fn(|_| Default::default()),
            pos: std::array::from_fn(|_| Default::default()),
            out_word0: std::array::from_fn(|_| Default::default()),
            out_word1: std::array::from_fn(|_| Default::default()),
            out_word2: std::array::from_fn(|_| Default::default()),
            out_word3: std::array::from_fn(|_| Default::default()),
            out_word4: std::array::from_fn(|_| Default::default()),
            out_fill: std::array::from_fn(|_| Default::default()),
            out_fill_pushed: std::array::from_fn(|_| Default::default()),
            out_pop: Default::default(),
            out_pop_ptr: Default::default(),
            out_pop_lane: Default::default(),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            out_dropped: Default::default(),
            out_lost_pushed: Default::default(),
            out_fillers: Default::default(),
            out_overflows: Default::default(),
            dropped_sum: Default::default(),
            lost_sum: Default::default(),
            filler_sum: Default::default(),
            overflow_sum: Default::default(),
            dropped: Default::default(),
            lost_count: Default::default(),
            filler_count: Default::default(),
            overflow_count: Default::default(),
            high: Default::default(),
            high_max: std::array::from_fn(|_| Default::default()),
            lanes_minus_1: Constant::new((L as u64 - 1).to_bits()),
            lanes_minus_1_k: Constant::new(((L as u64 - 1 + KEEPER_GAP) & MASK34).to_bits()),
            keeper_gap_34: Constant::new(KEEPER_GAP.to_bits()),
            gap_max: Constant::new(GAP_MAX.to_bits()),
            lane_is_last: std::array::from_fn(|j| Constant::new(j + 1 == L)),
        }
    }
}

impl<const L: usize> Logic for Encoder<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            s1_valid,
            s1_tick,
            s1_tick_hi_inc,
            s1_step,
            s2_valid,
            s2_tick,
            step,
            step_k,
            start_gap,
            start_gap_k,
            s3_valid,
            s3_tick,
            gap,
            gap_k,
            hi,
            lost,
            level,
            free,
            credit,
            num,
            num_minus_den,
            out_pop,
            out_pop_ptr,
            out_pop_lane,
            out_tick,
            out_tick_valid,
            out_dropped,
            out_lost_pushed,
            out_fillers,
            out_overflows,
            dropped,
            lost_count,
            filler_count,
            overflow_count,
            high
        );
        // The drain rate, registered (a build parameter).
        self.num.d.next = bit_cast::<33, 32>(self.drain_num.val());
        self.num_minus_den.d.next =
            bit_cast::<33, 32>(self.drain_num.val()) - bit_cast::<33, 32>(self.drain_den.val());
        // S1. The tick step from the previous clock, saturated to 32 bits:
        // a 32-bit difference and a comparison of the high halves.
        self.s1_valid.d.next = self.tick_valid_in.val();
        self.s1_tick.d.next = self.tick_in.val();
        self.s1_tick_hi_inc.d.next = self.tick_in.val().get_bits::<32>(32) + 1;
        self.step_lo.next = bit_cast::<33, 32>(self.tick_in.val().get_bits::<32>(0))
            - bit_cast::<33, 32>(self.s1_tick.q.val().get_bits::<32>(0));
        self.s1_step.d.next = self.gap_max.val();
        if self.step_lo.val().get_bit(32) {
            if self.tick_in.val().get_bits::<32>(32) == self.s1_tick_hi_inc.q.val() {
                self.s1_step.d.next = self.step_lo.val().get_bits::<32>(0);
            }
        } else if self.tick_in.val().get_bits::<32>(32) == self.s1_tick.q.val().get_bits::<32>(32) {
            self.s1_step.d.next = self.step_lo.val().get_bits::<32>(0);
        }
        // S2. The step from the last lane's tick, and the gap since reset
        // (used until the first valid clock is decided).
        self.s2_valid.d.next = self.s1_valid.q.val();
        self.s2_tick.d.next = self.s1_tick.q.val();
        self.step.d.next = self.s1_step.q.val() - self.lanes_minus_1.val();
        self.step_k.d.next = bit_cast::<34, 32>(self.s1_step.q.val()) - self.lanes_minus_1_k.val();
        self.s1_tick_sat.next = self.s1_tick.q.val().get_bits::<32>(0);
        if self.s1_tick.q.val().get_bits::<32>(32).any() {
            self.s1_tick_sat.next = self.gap_max.val();
        }
        self.start_gap.d.next = self.s1_tick_sat.val();
        self.start_gap_k.d.next =
            bit_cast::<34, 32>(self.s1_tick_sat.val()) - self.keeper_gap_34.val();
        // S3.
        self.s3_valid.d.next = self.s2_valid.q.val();
        self.s3_tick.d.next = self.s2_tick.q.val();
        for j in 0..L {
            self.s1_ev_valid[j].clock.next = self.clock.val();
            self.s1_ev_kind[j].clock.next = self.clock.val();
            self.s1_ev_write[j].clock.next = self.clock.val();
            self.s1_ev_value[j].clock.next = self.clock.val();
            self.s2_ev_valid[j].clock.next = self.clock.val();
            self.s2_access[j].clock.next = self.clock.val();
            self.s2_body[j].clock.next = self.clock.val();
            self.s2_line_hi[j].clock.next = self.clock.val();
            self.s3_ev_valid[j].clock.next = self.clock.val();
            self.s3_access[j].clock.next = self.clock.val();
            self.s3_body[j].clock.next = self.clock.val();
            self.s3_line_hi[j].clock.next = self.clock.val();
            self.s1_ev_valid[j].d.next = self.ev_valid[j].val() & self.tick_valid_in.val();
            self.s1_ev_kind[j].d.next = self.ev_kind[j].val();
            self.s1_ev_write[j].d.next = self.ev_write[j].val();
            self.s1_ev_value[j].d.next = self.ev_value[j].val();
            self.prep[j].kind.next = self.s1_ev_kind[j].q.val();
            self.prep[j].write.next = self.s1_ev_write[j].q.val();
            self.prep[j].value.next = self.s1_ev_value[j].q.val();
            self.s2_ev_valid[j].d.next = self.s1_ev_valid[j].q.val();
            self.s2_access[j].d.next = self.prep[j].access.val();
            self.s2_body[j].d.next = self.prep[j].body.val();
            self.s2_line_hi[j].d.next = self.prep[j].line_hi.val();
            self.s3_ev_valid[j].d.next = self.s2_ev_valid[j].q.val();
            self.s3_access[j].d.next = self.s2_access[j].q.val();
            self.s3_body[j].d.next = self.s2_body[j].q.val();
            self.s3_line_hi[j].d.next = self.s2_line_hi[j].q.val();
        }
        // The decision. Lane chain: state flows lane 0 -> L-1 (ticks in
        // order); each lane pushes, then its drain step may pop.
        // Each lane's step to the next tick: 1, and for the last lane the
        // step to the next clock's first tick.
        // Each lane input is assigned once per evaluation: a value written
        // and then overwritten in the same block is a glitch that wakes
        // the lane in an event-driven simulator (Icarus), whose own
        // intermediate outputs wake this block again, without end.
        for j in 0..L {
            self.lane[j].last.next = self.lane_is_last[j].val();
            self.lane[j].step.next = self.step.q.val();
            self.lane[j].step_k.next = self.step_k.q.val();
        }
        self.lane[0].gap.next = self.gap.q.val();
        self.lane[0].gap_k.next = self.gap_k.q.val();
        self.lane[0].hi_in.next = self.hi.q.val();
        self.lane[0].lost_in.next = self.lost.q.val();
        self.lane[0].level_in.next = self.level.q.val();
        self.lane[0].free_in.next = self.free.q.val();
        self.lane[0].credit_in.next = self.credit.q.val();
        for j in 1..L {
            self.lane[j].gap.next = self.lane[j - 1].next_gap.val();
            self.lane[j].gap_k.next = self.lane[j - 1].next_gap_k.val();
            self.lane[j].hi_in.next = self.lane[j - 1].hi_out.val();
            self.lane[j].lost_in.next = self.lane[j - 1].lost_out.val();
            self.lane[j].level_in.next = self.lane[j - 1].level_out.val();
            self.lane[j].free_in.next = self.lane[j - 1].free_out.val();
            self.lane[j].credit_in.next = self.lane[j - 1].credit_out.val();
        }
        self.out_pop.d.next = false;
        self.out_pop_lane.d.next = 0.into();
        self.out_tick.d.next = self.s3_tick.q.val();
        self.out_tick_valid.d.next = self.s3_valid.q.val();
        // Stream positions: the previous clock's last position plus its
        // count (both registered), then this clock's counts lane by lane.
        self.out_pop_ptr.d.next =
            self.out_pop_ptr.q.val() + bit_cast::<32, 1>(self.out_pop.q.val().into());
        // (The last lane of an array is picked by a loop: the Verilog
        // generator takes no `[L - 1]` outside one.)
        for j in 0..L {
            self.last_pos.next = self.out_pos[j].q.val() + self.out_count[j].q.val();
        }
        self.pos[0].next = self.last_pos.val();
        for j in 1..L {
            self.pos[j].next = self.pos[j - 1].val() + self.lane[j - 1].count32.val();
        }
        self.dropped_sum.next = 0.into();
        self.lost_sum.next = 0.into();
        self.filler_sum.next = 0.into();
        self.overflow_sum.next = 0.into();
        for j in 0..L {
            self.lane[j].valid.next = self.s3_valid.q.val();
            self.lane[j].ev_valid.next = self.s3_ev_valid[j].q.val() & self.s3_valid.q.val();
            self.lane[j].access.next = self.s3_access[j].q.val();
            self.lane[j].body.next = self.s3_body[j].q.val();
            self.lane[j].line_hi.next = self.s3_line_hi[j].q.val();
            self.lane[j].num.next = self.num.q.val();
            self.lane[j].num_minus_den.next = self.num_minus_den.q.val();
            self.out_count[j].clock.next = self.clock.val();
            self.out_pos[j].clock.next = self.clock.val();
            self.out_word0[j].clock.next = self.clock.val();
            self.out_word1[j].clock.next = self.clock.val();
            self.out_word2[j].clock.next = self.clock.val();
            self.out_word3[j].clock.next = self.clock.val();
            self.out_word4[j].clock.next = self.clock.val();
            self.out_fill[j].clock.next = self.clock.val();
            self.out_fill_pushed[j].clock.next = self.clock.val();
            self.out_count[j].d.next = 0.into();
            self.out_pos[j].d.next = self.pos[j].val();
            self.out_word0[j].d.next = self.lane[j].word0.val();
            self.out_word1[j].d.next = self.lane[j].word1.val();
            self.out_word2[j].d.next = self.lane[j].word2.val();
            self.out_word3[j].d.next = self.lane[j].word3.val();
            self.out_word4[j].d.next = self.lane[j].word4.val();
            self.out_fill[j].d.next = self.out_fill[j].q.val();
            self.out_fill_pushed[j].d.next = 0.into();
            if self.s3_valid.q.val() {
                self.out_count[j].d.next = self.lane[j].count32.val();
                self.out_fill[j].d.next = self.lane[j].level_out32.val();
                self.out_fill_pushed[j].d.next = self.lane[j].level_pushed32.val();
                // At most one pop per clock (num * L < den).
                if self.lane[j].pop.val() {
                    self.out_pop.d.next = true;
                    self.out_pop_lane.d.next = j.to_bits();
                }
                if self.lane[j].dropped.val() {
                    self.dropped_sum.next = self.dropped_sum.val() + 1;
                }
                if self.lane[j].lost_pushed.val() {
                    self.lost_sum.next = self.lost_sum.val() + 1;
                }
                if self.lane[j].filler_pushed.val() {
                    self.filler_sum.next = self.filler_sum.val() + 1;
                }
                if self.lane[j].overflow.val() {
                    self.overflow_sum.next = self.overflow_sum.val() + 1;
                }
            }
        }
        // The state after the last lane; the next clock's gap from sums of
        // registers (see the module documentation).
        if self.s3_valid.q.val() {
            for j in 0..L {
                self.gap.d.next = self.lane[j].next_gap.val();
                self.gap_k.d.next = self.lane[j].next_gap_k.val();
            }
            for j in 0..L {
                self.hi.d.next = self.lane[j].hi_out.val();
                self.lost.d.next = self.lane[j].lost_out.val();
                self.level.d.next = self.lane[j].level_out.val();
                self.free.d.next = self.lane[j].free_out.val();
                self.credit.d.next = self.lane[j].credit_out.val();
            }
        } else {
            // Not started: last = 0 (tick_valid_in stays true once true),
            // the FIFO empty, the credit 0.
            self.gap.d.next = self.start_gap.q.val();
            self.gap_k.d.next = self.start_gap_k.q.val();
            self.free.d.next = bit_cast::<LEVEL_BITS, 32>(self.depth.val());
            self.credit.d.next = self.num_minus_den.q.val();
        }
        // Counters and the high-water mark, a clock later.
        self.out_dropped.d.next = self.dropped_sum.val();
        self.out_lost_pushed.d.next = self.lost_sum.val();
        self.out_fillers.d.next = self.filler_sum.val();
        self.out_overflows.d.next = self.overflow_sum.val();
        self.dropped.d.next = self.dropped.q.val() + bit_cast::<32, 3>(self.out_dropped.q.val());
        self.lost_count.d.next =
            self.lost_count.q.val() + bit_cast::<32, 3>(self.out_lost_pushed.q.val());
        self.filler_count.d.next =
            self.filler_count.q.val() + bit_cast::<32, 3>(self.out_fillers.q.val());
        self.overflow_count.d.next =
            self.overflow_count.q.val() + bit_cast::<32, 3>(self.out_overflows.q.val());
        self.high_max[0].next = self.high.q.val();
        if self.out_fill_pushed[0].q.val() > self.high.q.val() {
            self.high_max[0].next = self.out_fill_pushed[0].q.val();
        }
        for j in 1..L {
            self.high_max[j].next = self.high_max[j - 1].val();
            if self.out_fill_pushed[j].q.val() > self.high_max[j - 1].val() {
                self.high_max[j].next = self.out_fill_pushed[j].q.val();
            }
        }
        for j in 0..L {
            self.high.d.next = self.high_max[j].val();
        }
        for j in 0..L {
            self.lane_count[j].next = self.out_count[j].q.val();
            self.lane_pos[j].next = self.out_pos[j].q.val();
            self.word0[j].next = self.out_word0[j].q.val();
            self.word1[j].next = self.out_word1[j].q.val();
            self.word2[j].next = self.out_word2[j].q.val();
            self.word3[j].next = self.out_word3[j].q.val();
            self.word4[j].next = self.out_word4[j].q.val();
            self.fill[j].next = self.out_fill[j].q.val();
        }
        self.pop.next = self.out_pop.q.val();
        self.pop_ptr.next = self.out_pop_ptr.q.val();
        self.pop_lane.next = self.out_pop_lane.q.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.events_dropped.next = self.dropped.q.val();
        self.lost_words.next = self.lost_count.q.val();
        self.time_fillers.next = self.filler_count.q.val();
        self.time_overflows.next = self.overflow_count.q.val();
        self.high_water.next = self.high.q.val();
    }
}

/// Combinational: one tick of the encoder (format.md 4.1 plus the keeper):
/// filler, pending LOST, then the tick's event, each pushed only if all its
/// words fit, then the drain step. Words come out packed in slots
/// 0..count-1. The gap comes in as a number (`gap`, and `gap_k = gap -
/// KEEPER_GAP` as 34-bit two's complement); the tests on it are on its
/// bits, without carry chains.
///
/// What one tick leaves for the next runs through this block in one
/// clock, so its decision is written without carry chains (on the iCE40 a
/// few-bit add is a carry chain of its own, and several in series were
/// the clock's longest path): the room is tested as `free >= k` for k =
/// 1..5 on the bits of the free count (`depth - level`, carried beside the
/// level, not subtracted), the words' slots and the count are prefix sums
/// of one-bit flags in gates, and the level and free count each take one
/// add of `count - pop`. The drain's credit is held as `credit - (den -
/// num)`, so `credit >= den - num` is its sign bit.
#[derive(LogicBlock)]
pub struct EncoderLane {
    /// The tick is valid (the keeper runs only then).
    pub valid: Signal<In, Bit>,
    pub ev_valid: Signal<In, Bit>,
    pub access: Signal<In, Bit>,
    /// The event's word with dt 0, and its LINE_HI (ACCESS).
    pub body: Signal<In, Bits<32>>,
    pub line_hi: Signal<In, Bits<21>>,
    /// Ticks since the last pushed word (other than a keeper's filler,
    /// which moves `last` on by `KEEPER_GAP`), saturated.
    pub gap: Signal<In, Bits<32>>,
    pub gap_k: Signal<In, Bits<34>>,
    /// The clock's last lane: the next tick is `step` ticks on (else 1).
    pub last: Signal<In, Bit>,
    pub step: Signal<In, Bits<32>>,
    pub step_k: Signal<In, Bits<34>>,
    pub hi_in: Signal<In, Bits<21>>,
    pub lost_in: Signal<In, Bits<32>>,
    /// Fill level before this tick, and `depth - level`.
    pub level_in: Signal<In, Bits<LEVEL_BITS>>,
    pub free_in: Signal<In, Bits<LEVEL_BITS>>,
    /// The drain's credit as `credit - (den - num)` (33-bit two's complement).
    pub credit_in: Signal<In, Bits<33>>,
    /// `num`, and `num - den` (33-bit two's complement).
    pub num: Signal<In, Bits<33>>,
    pub num_minus_den: Signal<In, Bits<33>>,

    /// The gap at the next tick (the next lane's).
    pub next_gap: Signal<Out, Bits<32>>,
    pub next_gap_k: Signal<Out, Bits<34>>,
    pub hi_out: Signal<Out, Bits<21>>,
    pub lost_out: Signal<Out, Bits<32>>,
    /// Fill level after this tick's pushes and its pop, and `depth` minus it.
    pub level_out: Signal<Out, Bits<LEVEL_BITS>>,
    pub free_out: Signal<Out, Bits<LEVEL_BITS>>,
    pub pop: Signal<Out, Bit>,
    pub credit_out: Signal<Out, Bits<33>>,
    pub count32: Signal<Out, Bits<32>>,
    pub level_pushed32: Signal<Out, Bits<32>>,
    pub level_out32: Signal<Out, Bits<32>>,
    pub word0: Signal<Out, Bits<32>>,
    pub word1: Signal<Out, Bits<32>>,
    pub word2: Signal<Out, Bits<32>>,
    pub word3: Signal<Out, Bits<32>>,
    pub word4: Signal<Out, Bits<32>>,
    pub dropped: Signal<Out, Bit>,
    pub lost_pushed: Signal<Out, Bit>,
    pub filler_pushed: Signal<Out, Bit>,
    pub overflow: Signal<Out, Bit>,
    units: Signal<Local, Bits<26>>,
    due: Signal<Local, Bit>,
    need_time: Signal<Local, Bit>,
    too_long: Signal<Local, Bit>,
    payload: Signal<Local, Bits<21>>,
    dt: Signal<Local, Bits<32>>,
    /// `free >= 8`, and `free >= k` for k = 1..5.
    free_big: Signal<Local, Bit>,
    room_ge1: Signal<Local, Bit>,
    room_ge2: Signal<Local, Bit>,
    room_ge3: Signal<Local, Bit>,
    room_ge4: Signal<Local, Bit>,
    room_ge5: Signal<Local, Bit>,
    lost_ok: Signal<Local, Bit>,
    lost_big: Signal<Local, Bit>,
    lost_payload: Signal<Local, Bits<32>>,
    hi_change: Signal<Local, Bit>,
    /// At least k of the event's optional words (k = 1..4).
    extra_ge1: Signal<Local, Bit>,
    extra_ge2: Signal<Local, Bit>,
    extra_ge3: Signal<Local, Bit>,
    extra_ge4: Signal<Local, Bit>,
    event_ok: Signal<Local, Bit>,
    time_used: Signal<Local, Bit>,
    hi_used: Signal<Local, Bit>,
    dt_after_hi: Signal<Local, Bits<32>>,
    time_word: Signal<Local, Bits<32>>,
    lost_word: Signal<Local, Bits<32>>,
    hi_word: Signal<Local, Bits<32>>,
    event_word: Signal<Local, Bits<32>>,
    at_time: Signal<Local, Bits<3>>,
    at_lost: Signal<Local, Bits<3>>,
    at_hi: Signal<Local, Bits<3>>,
    at_event: Signal<Local, Bits<3>>,
    /// Carries of the prefix sums.
    carry_hi: Signal<Local, Bit>,
    carry_ev: Signal<Local, Bit>,
    carry_ev2: Signal<Local, Bit>,
    any_pushed: Signal<Local, Bit>,
    nonempty: Signal<Local, Bit>,
    credit_ok: Signal<Local, Bit>,
    empty_after: Signal<Local, Bit>,
    /// `count - pop` in LEVEL_BITS-bit two's complement (-1..=5).
    borrow0: Signal<Local, Bit>,
    borrow1: Signal<Local, Bit>,
    delta_low: Signal<Local, Bits<3>>,
    delta: Signal<Local, Bits<LEVEL_BITS>>,
    level_all_ones: Constant<Bits<LEVEL_BITS>>,
    /// Something other than the filler was pushed (`last` = this tick).
    pushed: Signal<Local, Bit>,
    keep: Signal<Local, Bit>,
    to_next: Signal<Local, Bits<32>>,
    to_next_k: Signal<Local, Bits<34>>,
    one_k: Constant<Bits<34>>,
    sum_none: Signal<Local, Bits<34>>,
    sum_none_k: Signal<Local, Bits<34>>,
    sum_keep: Signal<Local, Bits<34>>,
    sum_keep_k: Signal<Local, Bits<34>>,
    gap_max: Constant<Bits<32>>,
    gap_max_k: Constant<Bits<34>>,
    level_pushed: Signal<Local, Bits<LEVEL_BITS>>,
    count: Signal<Local, Bits<3>>,
}

impl Default for EncoderLane {
    fn default() -> Self {
        Self {
            valid: Default::default(),
            ev_valid: Default::default(),
            access: Default::default(),
            body: Default::default(),
            line_hi: Default::default(),
            gap: Default::default(),
            gap_k: Default::default(),
            last: Default::default(),
            step: Default::default(),
            step_k: Default::default(),
            hi_in: Default::default(),
            lost_in: Default::default(),
            level_in: Default::default(),
            free_in: Default::default(),
            credit_in: Default::default(),
            num: Default::default(),
            num_minus_den: Default::default(),
            next_gap: Default::default(),
            next_gap_k: Default::default(),
            hi_out: Default::default(),
            lost_out: Default::default(),
            level_out: Default::default(),
            free_out: Default::default(),
            pop: Default::default(),
            credit_out: Default::default(),
            count32: Default::default(),
            level_pushed32: Default::default(),
            level_out32: Default::default(),
            word0: Default::default(),
            word1: Default::default(),
            word2: Default::default(),
            word3: Default::default(),
            word4: Default::default(),
            dropped: Default::default(),
            lost_pushed: Default::default(),
            filler_pushed: Default::default(),
            overflow: Default::default(),
            units: Default::default(),
            due: Default::default(),
            need_time: Default::default(),
            too_long: Default::default(),
            payload: Default::default(),
            dt: Default::default(),
            free_big: Default::default(),
            room_ge1: Default::default(),
            room_ge2: Default::default(),
            room_ge3: Default::default(),
            room_ge4: Default::default(),
            room_ge5: Default::default(),
            lost_ok: Default::default(),
            lost_big: Default::default(),
            lost_payload: Default::default(),
            hi_change: Default::default(),
            extra_ge1: Default::default(),
            extra_ge2: Default::default(),
            extra_ge3: Default::default(),
            extra_ge4: Default::default(),
            event_ok: Default::default(),
            time_used: Default::default(),
            hi_used: Default::default(),
            dt_after_hi: Default::default(),
            time_word: Default::default(),
            lost_word: Default::default(),
            hi_word: Default::default(),
            event_word: Default::default(),
            at_time: Default::default(),
            at_lost: Default::default(),
            at_hi: Default::default(),
            at_event: Default::default(),
            carry_hi: Default::default(),
            carry_ev: Default::default(),
            carry_ev2: Default::default(),
            any_pushed: Default::default(),
            nonempty: Default::default(),
            credit_ok: Default::default(),
            empty_after: Default::default(),
            borrow0: Default::default(),
            borrow1: Default::default(),
            delta_low: Default::default(),
            delta: Default::default(),
            level_all_ones: Constant::new(((1u64 << LEVEL_BITS) - 1).to_bits()),
            pushed: Default::default(),
            keep: Default::default(),
            to_next: Default::default(),
            to_next_k: Default::default(),
            one_k: Constant::new(minus_keeper_gap(1).to_bits()),
            sum_none: Default::default(),
            sum_none_k: Default::default(),
            sum_keep: Default::default(),
            sum_keep_k: Default::default(),
            gap_max: Constant::new(GAP_MAX.to_bits()),
            gap_max_k: Constant::new(minus_keeper_gap(GAP_MAX).to_bits()),
            level_pushed: Default::default(),
            count: Default::default(),
        }
    }
}

impl Logic for EncoderLane {
    #[hdl_gen]
    fn update(&mut self) {
        // The gap in units of 64 ticks; KEEPER_GAP is (2^21-1) units.
        self.units.next = self.gap.val().get_bits::<26>(6);
        self.due.next =
            self.units.val().get_bits::<5>(21).any() | self.units.val().get_bits::<21>(0).all();
        // The room, min(free, 7), as `free >= k`.
        self.free_big.next = (self.free_in.val() >> 3).any();
        self.room_ge1.next = self.free_big.val()
            | self.free_in.val().get_bit(2)
            | self.free_in.val().get_bit(1)
            | self.free_in.val().get_bit(0);
        self.room_ge2.next =
            self.free_big.val() | self.free_in.val().get_bit(2) | self.free_in.val().get_bit(1);
        self.room_ge3.next = self.free_big.val()
            | self.free_in.val().get_bit(2)
            | (self.free_in.val().get_bit(1) & self.free_in.val().get_bit(0));
        self.room_ge4.next = self.free_big.val() | self.free_in.val().get_bit(2);
        self.room_ge5.next = self.free_big.val()
            | (self.free_in.val().get_bit(2)
                & (self.free_in.val().get_bit(1) | self.free_in.val().get_bit(0)));
        // Keeper: a filler TIME word once the gap reaches 64 * (2^21-1).
        self.keep.next = self.valid.val() & self.due.val() & self.room_ge1.val();
        // After the keeper the gap is `units - (2^21-1)` units: needs a
        // TIME word from 1 unit on, two from 2^21 units on; its payload is
        // `units + 1` modulo 2^21.
        self.need_time.next = self.units.val().any();
        self.too_long.next = self.units.val().get_bits::<5>(21).any();
        self.payload.next = self.units.val().get_bits::<21>(0);
        if self.keep.val() {
            self.need_time.next = self.units.val().get_bits::<5>(21).any();
            self.too_long.next =
                self.units.val().get_bits::<4>(22).any() | self.units.val().get_bits::<22>(0).all();
            self.payload.next = self.units.val().get_bits::<21>(0) + 1;
        }
        self.dt.next = bit_cast::<32, 6>(self.gap.val().get_bits::<6>(0));
        // Pending LOST: [TIME] LOST, atomically, only before an event
        // (format.md 4.1); it needs 1 + need_time + keep words.
        self.lost_ok.next = self.ev_valid.val()
            & self.lost_in.val().any()
            & !self.too_long.val()
            & self.room_ge1.val()
            & (!(self.need_time.val() | self.keep.val()) | self.room_ge2.val())
            & (!(self.need_time.val() & self.keep.val()) | self.room_ge3.val());
        self.lost_big.next = self.lost_in.val().get_bits::<11>(21).any();
        self.lost_payload.next = self.lost_in.val();
        if self.lost_big.val() {
            self.lost_payload.next = 0x1FFFFF.into();
        }
        // The event: [TIME] [LINE_HI] word; after a LOST the gap is 0. It
        // needs 1 word plus one for each of hi_change, need_time, keep and
        // lost_ok.
        self.hi_change.next = self.access.val() & (self.line_hi.val() != self.hi_in.val());
        self.extra_ge1.next =
            self.hi_change.val() | self.need_time.val() | self.keep.val() | self.lost_ok.val();
        self.extra_ge2.next = (self.hi_change.val() & self.need_time.val())
            | (self.hi_change.val() & self.keep.val())
            | (self.hi_change.val() & self.lost_ok.val())
            | (self.need_time.val() & self.keep.val())
            | (self.need_time.val() & self.lost_ok.val())
            | (self.keep.val() & self.lost_ok.val());
        self.extra_ge3.next = (self.hi_change.val() & self.need_time.val() & self.keep.val())
            | (self.hi_change.val() & self.need_time.val() & self.lost_ok.val())
            | (self.hi_change.val() & self.keep.val() & self.lost_ok.val())
            | (self.need_time.val() & self.keep.val() & self.lost_ok.val());
        self.extra_ge4.next =
            self.hi_change.val() & self.need_time.val() & self.keep.val() & self.lost_ok.val();
        self.event_ok.next = self.ev_valid.val()
            & !self.too_long.val()
            & self.room_ge1.val()
            & (!self.extra_ge1.val() | self.room_ge2.val())
            & (!self.extra_ge2.val() | self.room_ge3.val())
            & (!self.extra_ge3.val() | self.room_ge4.val())
            & (!self.extra_ge4.val() | self.room_ge5.val());
        self.time_used.next = self.need_time.val() & (self.lost_ok.val() | self.event_ok.val());
        self.hi_used.next = self.event_ok.val() & self.hi_change.val();
        self.pushed.next = self.lost_ok.val() | self.event_ok.val();
        self.dt_after_hi.next = self.dt.val();
        if self.lost_ok.val() | self.hi_used.val() {
            self.dt_after_hi.next = 0.into();
        }
        // Slots: [filler] [TIME] [LOST] [LINE_HI] [word]; the positions are
        // prefix sums of the flags, in gates (half adders).
        self.at_time.next = bit_cast::<3, 1>(self.keep.val().into());
        self.at_lost.next = bit_cast::<3, 1>((self.keep.val() ^ self.time_used.val()).into())
            | (bit_cast::<3, 1>((self.keep.val() & self.time_used.val()).into()) << 1);
        self.carry_hi.next = self.at_lost.val().get_bit(0) & self.lost_ok.val();
        self.at_hi.next =
            bit_cast::<3, 1>((self.at_lost.val().get_bit(0) ^ self.lost_ok.val()).into())
                | (bit_cast::<3, 1>((self.at_lost.val().get_bit(1) ^ self.carry_hi.val()).into())
                    << 1)
                | (bit_cast::<3, 1>((self.at_lost.val().get_bit(1) & self.carry_hi.val()).into())
                    << 2);
        self.carry_ev.next = self.at_hi.val().get_bit(0) & self.hi_used.val();
        self.carry_ev2.next = self.at_hi.val().get_bit(1) & self.carry_ev.val();
        self.at_event.next =
            bit_cast::<3, 1>((self.at_hi.val().get_bit(0) ^ self.hi_used.val()).into())
                | (bit_cast::<3, 1>((self.at_hi.val().get_bit(1) ^ self.carry_ev.val()).into())
                    << 1)
                | (bit_cast::<3, 1>((self.at_hi.val().get_bit(2) | self.carry_ev2.val()).into())
                    << 2);
        // count = at_event + event_ok; at_event is at most 4 and is 4 only
        // with every flag before the event set.
        self.count.next = self.at_event.val();
        if self.event_ok.val() {
            self.count.next = 1.into();
            if self.at_event.val().get_bit(0) {
                self.count.next = 2.into();
                if self.at_event.val().get_bit(1) {
                    self.count.next = 4.into();
                }
            } else if self.at_event.val().get_bit(1) {
                self.count.next = 3.into();
            } else if self.at_event.val().get_bit(2) {
                self.count.next = 5.into();
            }
        }
        self.any_pushed.next = self.keep.val() | self.lost_ok.val() | self.event_ok.val();
        // TIME (op 0), dt 0.
        self.time_word.next = 0x0200_0000 | bit_cast::<32, 21>(self.payload.val());
        // LOST (op 4).
        self.lost_word.next = (self.dt.val() << 26) | 0x0280_0000 | self.lost_payload.val();
        // LINE_HI (op 1).
        self.hi_word.next =
            (self.dt.val() << 26) | 0x0220_0000 | bit_cast::<32, 21>(self.line_hi.val());
        if self.lost_ok.val() {
            self.hi_word.next = 0x0220_0000 | bit_cast::<32, 21>(self.line_hi.val());
        }
        self.event_word.next = (self.dt_after_hi.val() << 26) | self.body.val();
        self.word0.next = 0.into();
        self.word1.next = 0.into();
        self.word2.next = 0.into();
        self.word3.next = 0.into();
        self.word4.next = 0.into();
        if self.keep.val() {
            // TIME, dt 0, payload 2^21-1.
            self.word0.next = 0x021F_FFFF.into();
        }
        if self.time_used.val() {
            if self.at_time.val() == 0 {
                self.word0.next = self.time_word.val();
            } else {
                self.word1.next = self.time_word.val();
            }
        }
        if self.lost_ok.val() {
            if self.at_lost.val() == 0 {
                self.word0.next = self.lost_word.val();
            }
            if self.at_lost.val() == 1 {
                self.word1.next = self.lost_word.val();
            }
            if self.at_lost.val() == 2 {
                self.word2.next = self.lost_word.val();
            }
        }
        if self.hi_used.val() {
            if self.at_hi.val() == 0 {
                self.word0.next = self.hi_word.val();
            }
            if self.at_hi.val() == 1 {
                self.word1.next = self.hi_word.val();
            }
            if self.at_hi.val() == 2 {
                self.word2.next = self.hi_word.val();
            }
            if self.at_hi.val() == 3 {
                self.word3.next = self.hi_word.val();
            }
        }
        if self.event_ok.val() {
            if self.at_event.val() == 0 {
                self.word0.next = self.event_word.val();
            }
            if self.at_event.val() == 1 {
                self.word1.next = self.event_word.val();
            }
            if self.at_event.val() == 2 {
                self.word2.next = self.event_word.val();
            }
            if self.at_event.val() == 3 {
                self.word3.next = self.event_word.val();
            }
            if self.at_event.val() == 4 {
                self.word4.next = self.event_word.val();
            }
        }
        self.hi_out.next = self.hi_in.val();
        if self.hi_used.val() {
            self.hi_out.next = self.line_hi.val();
        }
        // LOST count: minus the payload pushed, plus one for a dropped
        // event (saturating).
        self.dropped.next = self.ev_valid.val() & !self.event_ok.val();
        self.lost_out.next = self.lost_in.val();
        if self.lost_ok.val() {
            if self.lost_big.val() {
                self.lost_out.next = self.lost_in.val() - 0x1FFFFF;
                if self.dropped.val() {
                    self.lost_out.next = self.lost_in.val() - 0x1FFFFE;
                }
            } else {
                self.lost_out.next = bit_cast::<32, 1>(self.dropped.val().into());
            }
        } else if self.dropped.val() & !self.lost_in.val().all() {
            self.lost_out.next = self.lost_in.val() + 1;
        }
        self.lost_pushed.next = self.lost_ok.val();
        self.filler_pushed.next = self.keep.val();
        self.overflow.next = self.ev_valid.val() & self.too_long.val();
        // Drain step (board.md step 2): credit += num; pop if not empty and
        // credit >= den; if empty after, credit = min(credit, den). The
        // credit stays within 0..=den; held as `credit - (den - num)`, so
        // `credit + num >= den` is `credit_in >= 0`.
        self.nonempty.next = self.level_in.val().any() | self.any_pushed.val();
        self.credit_ok.next = !self.credit_in.val().get_bit(32);
        self.pop.next = self.valid.val() & self.nonempty.val() & self.credit_ok.val();
        // delta = count - pop: -1 only for a pop with nothing pushed.
        self.borrow0.next = self.pop.val() & !self.count.val().get_bit(0);
        self.borrow1.next = self.borrow0.val() & !self.count.val().get_bit(1);
        self.delta_low.next =
            bit_cast::<3, 1>((self.count.val().get_bit(0) ^ self.pop.val()).into())
                | (bit_cast::<3, 1>((self.count.val().get_bit(1) ^ self.borrow0.val()).into())
                    << 1)
                | (bit_cast::<3, 1>((self.count.val().get_bit(2) ^ self.borrow1.val()).into())
                    << 2);
        self.delta.next = bit_cast::<LEVEL_BITS, 3>(self.delta_low.val());
        if self.pop.val() & !self.any_pushed.val() {
            self.delta.next = self.level_all_ones.val();
        }
        self.level_pushed.next = self.level_in.val() + bit_cast::<LEVEL_BITS, 3>(self.count.val());
        self.level_out.next = self.level_in.val() + self.delta.val();
        self.free_out.next = self.free_in.val() - self.delta.val();
        self.empty_after.next = !self.nonempty.val();
        if self.pop.val() {
            self.empty_after.next = ((self.level_in.val() == 0) & (self.count.val() == 1))
                | ((self.level_in.val() == 1) & !self.any_pushed.val());
        }
        self.credit_out.next = self.credit_in.val() + self.num.val();
        if self.pop.val() {
            self.credit_out.next = self.credit_in.val() + self.num_minus_den.val();
        } else if self.empty_after.val() & self.credit_ok.val() {
            self.credit_out.next = self.num.val();
        }
        self.count32.next = bit_cast::<32, 3>(self.count.val());
        self.level_pushed32.next = bit_cast::<32, LEVEL_BITS>(self.level_pushed.val());
        self.level_out32.next = bit_cast::<32, LEVEL_BITS>(self.level_out.val());
        // The next tick's gap (for the next lane).
        // Sums of the gap (or the gap minus KEEPER_GAP) and the step, side
        // by side with the decision that picks one; saturated at GAP_MAX.
        self.to_next.next = 1.into();
        self.to_next_k.next = self.one_k.val();
        if self.last.val() {
            self.to_next.next = self.step.val();
            self.to_next_k.next = self.step_k.val();
        }
        self.sum_none.next =
            bit_cast::<34, 32>(self.gap.val()) + bit_cast::<34, 32>(self.to_next.val());
        self.sum_none_k.next = bit_cast::<34, 32>(self.gap.val()) + self.to_next_k.val();
        self.sum_keep.next = self.gap_k.val() + bit_cast::<34, 32>(self.to_next.val());
        self.sum_keep_k.next = self.gap_k.val() + self.to_next_k.val();
        if self.pushed.val() {
            self.next_gap.next = self.to_next.val();
            self.next_gap_k.next = self.to_next_k.val();
        } else if self.keep.val() {
            self.next_gap.next = bit_cast::<32, 34>(self.sum_keep.val());
            self.next_gap_k.next = self.sum_keep_k.val();
            if self.sum_keep.val().get_bit(32) {
                self.next_gap.next = self.gap_max.val();
                self.next_gap_k.next = self.gap_max_k.val();
            }
        } else {
            self.next_gap.next = bit_cast::<32, 34>(self.sum_none.val());
            self.next_gap_k.next = self.sum_none_k.val();
            if self.sum_none.val().get_bit(32) {
                self.next_gap.next = self.gap_max.val();
                self.next_gap_k.next = self.gap_max_k.val();
            }
        }
    }
}

/// Combinational: an event's word with dt 0 and its LINE_HI.
#[derive(LogicBlock, Default)]
pub struct EventBody {
    pub kind: Signal<In, Bits<2>>,
    pub write: Signal<In, Bit>,
    pub value: Signal<In, Bits<48>>,
    pub access: Signal<Out, Bit>,
    pub body: Signal<Out, Bits<32>>,
    pub line_hi: Signal<Out, Bits<21>>,
}

impl Logic for EventBody {
    #[hdl_gen]
    fn update(&mut self) {
        // ACCESS: W at bit 24, line_lo; TAG (op 2): W at bit 20, index;
        // CMD (op 3): index.
        self.access.next = self.kind.val() == 0;
        self.body.next = (bit_cast::<32, 1>(self.write.val().into()) << 24)
            | bit_cast::<32, 48>(self.value.val() & 0xFF_FFFF);
        if self.kind.val() == 1 {
            self.body.next = 0x0240_0000
                | (bit_cast::<32, 1>(self.write.val().into()) << 20)
                | bit_cast::<32, 48>(self.value.val() & 0xF_FFFF);
        }
        if self.kind.val() == 2 {
            self.body.next = 0x0260_0000 | bit_cast::<32, 48>(self.value.val() & 0x1F_FFFF);
        }
        self.line_hi.next = bit_cast::<21, 48>(self.value.val() >> 24);
    }
}
