//! Record encoder and the logical TX FIFO, once per fabric clock (board.md
//! 2.2 steps 1 to 3, format.md 4.1): the keeper's filler, then per slot the
//! pending LOST event and the slot's event, pushed if the clock is open
//! (the room at the clock's start plus the previous clock's words is at
//! least `2(2 + 3E)`);
//! beside them the drain's pop, decided from registers only (a pop frees
//! its slot for the next clock). The words go to `tx_fifo::TxFifoStorage`.
//!
//! Pipeline (fabric clocks): the inputs are registered with the carry
//! chains of the tick step from the previous clock (P0, `input`), the step
//! saturated (P1), the events prepared (P2: the event word without dt,
//! LINE_HI, which slots share one), then decided; the outputs are
//! registered: `LATENCY` clocks after the inputs, the fill level and the
//! counters one more.
//!
//! What a clock leaves for the next runs through one clock, so the state
//! is held in forms that the decision tests on bits, and every carry chain
//! of the update runs beside or after the decision, into a register:
//! - the gap to the last pushed word as a number relative to the clock's
//!   tick, with the next clock's tests on it in registers (`gap`);
//! - the free count and the write position less the previous clock's
//!   words (`free_lag`, `write_pos_lag`), so adding the words is a carry
//!   chain in the next clock, from registers; the room flags (the filler,
//!   the clock open) test the free count plus the previous clock's words
//!   (board.md 2.2), so they are worked out a clock ahead from `free_lag`
//!   saturated at 63 (`free_small`, no test reads more) and its pop, with
//!   no decision and no wide adder before them; the fill level's `!= 0` as
//!   a flag;
//! - the drain credit as `credit - (den - L num)`, so the pop test is its
//!   sign bit, and the pop depends on registers only;
//! - the lost count with its comparisons with multiples of the LOST
//!   payload limit, every candidate worked out beside the decision
//!   (`lost`).
//!
//! The decision (`decide`) and the words (`words`, `slot`) sit between
//! them; the words are those of a clock that takes its events, so the
//! decision gates only counts.
//!
//! `tick_valid_in`, once true, must stay true (the DCBU's is); the ticks
//! before the first valid one count as time since reset (last = 0). The
//! tick may jump between clocks (tests skip idle stretches); the keeper
//! then runs only at the clocks given. The gap is held in 32 bits and
//! saturates at `2^32 - 1` ticks, reached only with a drain slower than one
//! word per `KEEPER_GAP` ticks. The fill level is held in `LEVEL_BITS` bits
//! (FIFO depth below `2^LEVEL_BITS`) and the drain needs `den < 2^32`.

mod build;
mod decide;
mod gap;
mod input;
mod lost;
mod prepare;
mod slot;
mod step;
mod words;

pub use decide::Decide;
pub use gap::GapState;
pub use input::InputStage;
pub use lost::{LostCandidate, PendingLost};
pub use prepare::EventBody;
pub use slot::{GapTests, SlotGap, SlotWords};
pub use step::SmallStep;
pub use words::{Words, FILLER_WORD};

use rust_hdl::prelude::*;

/// Largest TIME / LINE_HI / LOST payload, 2^21-1.
pub const PAYLOAD_MAX: u64 = (1 << 21) - 1;
/// Gap in ticks at which the keeper pushes a filler TIME word.
pub const KEEPER_GAP: u64 = PAYLOAD_MAX * 64;
/// Width of the fill level: the FIFO depth must be below `2^LEVEL_BITS`.
pub const LEVEL_BITS: usize = 20;
/// Fabric clocks from the encoder's inputs to its word and pop outputs (the
/// fill level one more).
pub const LATENCY: usize = 4;
/// Word groups per clock: the filler and TIME word, then one per slot.
pub const GROUPS: usize = 5;

/// The gap register's saturation value.
const GAP_MAX: u64 = u32::MAX as u64;
const MASK34: u64 = (1 << 34) - 1;

#[derive(LogicBlock)]
pub struct Encoder<const E: usize> {
    pub clock: Signal<In, Clock>,
    /// The clock's events in stream order, each with its lane.
    pub ev_valid: [Signal<In, Bit>; E],
    pub ev_kind: [Signal<In, Bits<2>>; E],
    pub ev_write: [Signal<In, Bit>; E],
    pub ev_value: [Signal<In, Bits<48>>; E],
    pub ev_lane: [Signal<In, Bits<3>>; E],
    /// References the limit dropped in this clock (after its events).
    pub over: Signal<In, Bits<4>>,
    /// Board mode after the clock's events (passed along for the packets).
    pub tracing_in: Signal<In, Bit>,
    pub tags_only_in: Signal<In, Bit>,
    /// The clock's tick (`k L`).
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// FIFO depth in words (a build parameter, held constant).
    pub depth: Signal<In, Bits<LEVEL_BITS>>,
    /// Drain rate per clock, `L num / den` words, `L num < den`.
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    /// `LATENCY` clocks after the events: the words pushed, in groups
    /// (see `words`), from stream position `base`; `pushed` in all.
    pub group_count: [Signal<Out, Bits<2>>; GROUPS],
    pub group_word0: [Signal<Out, Bits<32>>; GROUPS],
    pub group_word1: [Signal<Out, Bits<32>>; GROUPS],
    pub group_word2: [Signal<Out, Bits<32>>; GROUPS],
    pub base: Signal<Out, Bits<32>>,
    pub pushed: Signal<Out, Bits<8>>,
    /// Fill level after the clock (`level_{k+1}`), a clock after its
    /// words, with the clock's tick.
    pub fill: Signal<Out, Bits<32>>,
    pub fill_tick: Signal<Out, Bits<64>>,
    pub fill_tick_valid: Signal<Out, Bit>,
    /// The clock pops the word at stream position `pop_ptr`.
    pub pop: Signal<Out, Bit>,
    pub pop_ptr: Signal<Out, Bits<32>>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub tracing: Signal<Out, Bit>,
    pub tags_only: Signal<Out, Bit>,
    /// Counters, one clock behind the words (the high-water mark two).
    pub events_dropped: Signal<Out, Bits<32>>,
    /// The events dropped in the clock of `tick` (for the Statistic Unit).
    pub dropped_clock: Signal<Out, Bits<3>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub high_water: Signal<Out, Bits<32>>,
    /// P0: the inputs, and the tick step's carry chains.
    p0: InputStage<E>,
    // P1: the inputs, and the tick step from the previous clock.
    p1_valid: DFF<Bit>,
    p1_tick: DFF<Bits<64>>,
    p1_ev_valid: [DFF<Bit>; E],
    p1_ev_kind: [DFF<Bits<2>>; E],
    p1_ev_write: [DFF<Bit>; E],
    p1_ev_value: [DFF<Bits<48>>; E],
    p1_lane: [DFF<Bits<3>>; E],
    p1_over: DFF<Bits<4>>,
    p1_tracing: DFF<Bit>,
    p1_tags_only: DFF<Bit>,
    /// Ticks from P2's clock to P1's, saturated, and minus `KEEPER_GAP`.
    p1_step: DFF<Bits<32>>,
    p1_step_k: DFF<Bits<34>>,
    step_now: Signal<Local, Bits<32>>,
    /// `step - KEEPER_GAP` beside `step` rather than after it: P0's
    /// difference less `KEEPER_GAP`, chosen as `step_now` is.
    step_k_fit: Signal<Local, Bits<34>>,
    step_k_now: Signal<Local, Bits<34>>,
    gap_max_k: Constant<Bits<34>>,
    keeper_gap_34: Constant<Bits<34>>,
    p0_tick_sat: Signal<Local, Bits<32>>,
    prep: [EventBody; E],
    // P2: the clock being decided.
    p2_valid: DFF<Bit>,
    p2_tick: DFF<Bits<64>>,
    p2_ev_valid: [DFF<Bit>; E],
    /// Valid slots before each slot, in all, and the first valid slot.
    p2_idx: [DFF<Bits<3>>; E],
    p2_nvalid: DFF<Bits<3>>,
    p2_first: [DFF<Bit>; E],
    /// P1's valid slots before slot `s` (entry `E`: all of them).
    p1_before: [Signal<Local, Bits<3>>; 5],
    p2_access: [DFF<Bit>; E],
    p2_body: [DFF<Bits<32>>; E],
    p2_line_hi: [DFF<Bits<21>>; E],
    p2_lane: [DFF<Bits<3>>; E],
    /// Entry `4 s + t`: slots `s` and `t < s` share a LINE_HI.
    p2_hi_eq: [DFF<Bit>; 16],
    /// Slot `s`'s LINE_HI equals the LINE_HI register, for the clock in
    /// P2: worked out a clock ahead against every value the register may
    /// take (entry `4 c + s`: candidate 0 the register kept, `1 + t` slot
    /// `t`'s as the clock's last access), picked by the decision.
    hi_eq_reg: [DFF<Bit>; E],
    hi_cand_eq: [Signal<Local, Bit>; 20],
    hi_pick: [Signal<Local, Bit>; 5],
    hi_eq_next: [Signal<Local, Bit>; E],
    p2_tracing: DFF<Bit>,
    p2_tags_only: DFF<Bit>,
    // State carried from clock to clock.
    hi: DFF<Bits<21>>,
    /// The free count (`depth - level`) plus the previous clock's pushes
    /// (`last_total`), and the next write position less them: the pushes'
    /// carry chain runs in the next clock, from registers, rather than
    /// after the decision (`free_now`, `write_pos_now`).
    free_lag: DFF<Bits<LEVEL_BITS>>,
    write_pos_lag: DFF<Bits<32>>,
    /// The previous clock's words, `last_takes ? last_taken : last_keep`,
    /// registered as the decision leaves them (no pick after the adder).
    last_taken: DFF<Bits<6>>,
    last_takes: DFF<Bit>,
    last_keep: DFF<Bit>,
    last_total: Signal<Local, Bits<6>>,
    free_lag_after: Signal<Local, Bits<LEVEL_BITS>>,
    /// The clock's room tests (board.md 2.2): `free_lag` at least `3 + 3E`
    /// (the filler) and `2(2 + 3E)` (the clock is open).
    room_filler: DFF<Bit>,
    room_open: DFF<Bit>,
    level_nonzero: DFF<Bit>,
    /// The drain's credit minus `den - L num`.
    credit: DFF<Bits<33>>,
    /// Stream position of the next word popped.
    read_pos: DFF<Bits<32>>,
    /// The drain rate as used: `L num`, and `L num - den`.
    num: DFF<Bits<33>>,
    num_minus_den: DFF<Bits<33>>,
    // The decision.
    decide: Decide<E>,
    words: Words<E>,
    slot_gap: [SlotGap; E],
    /// The gap to the last pushed word and the next clock's tests on it.
    gap_state: GapState<E>,
    pop_now: Signal<Local, Bit>,
    total: Signal<Local, Bits<8>>,
    /// The words of the clock if it takes its events.
    total_taken: Signal<Local, Bits<8>>,
    /// `free_lag` saturated at 63: `free_lag` moves by at most 1 up and
    /// `2 + 3E` down a clock, so `free_small + pop - last_total` passes
    /// each room test (both below `63 - (2 + 3E)`) exactly when the
    /// clock's `free_lag_after` does, in 8 bits.
    free_small: DFF<Bits<6>>,
    room_sum: Signal<Local, Bits<8>>,
    /// Below 128, `free_lag_after` in 8 bits from `free_lag`'s low 7 (at
    /// 128 or more, `free_lag_after` is at least 63); `depth` saturated.
    free_lag_high: Signal<Local, Bit>,
    free_low_after: Signal<Local, Bits<8>>,
    free_small_next: Signal<Local, Bits<6>>,
    depth_small: Signal<Local, Bits<6>>,
    /// The room tests' thresholds.
    filler_room_min: Constant<Bits<8>>,
    open_room_min: Constant<Bits<8>>,
    /// The free count and the next write position at the clock's start,
    /// and the lagged free count after the clock (its pop, early, and the
    /// previous clock's pushes, late).
    free_now: SmallStep<LEVEL_BITS, { LEVEL_BITS - 4 }>,
    write_pos_now: SmallStep<32, 28>,
    free_lag_next: SmallStep<LEVEL_BITS, { LEVEL_BITS - 4 }>,
    /// `depth - 1`: the level at the clock's start is 0 or 1 when the free
    /// count equals `depth` or this.
    depth_level_1: Signal<Local, Bits<LEVEL_BITS>>,
    /// The fill level at the clock's start.
    level_now: Signal<Local, Bits<32>>,
    total_step: Signal<Local, Bits<6>>,
    pop_up: Signal<Local, Bits<6>>,
    /// The lost count `u` and its flags, updated after the decision.
    pending_lost: PendingLost<E>,
    gap_max: Constant<Bits<32>>,
    // Outputs.
    out_count: [DFF<Bits<2>>; GROUPS],
    out_word0: [DFF<Bits<32>>; GROUPS],
    out_word1: [DFF<Bits<32>>; GROUPS],
    out_word2: [DFF<Bits<32>>; GROUPS],
    out_base: DFF<Bits<32>>,
    out_pushed: DFF<Bits<8>>,
    /// The fill level after a clock, worked out in the next from
    /// `free_now`, so a clock after the words, with the clock's tick.
    out_fill: DFF<Bits<32>>,
    out_fill_pushed: DFF<Bits<32>>,
    out_fill_tick: DFF<Bits<64>>,
    out_fill_tick_valid: DFF<Bit>,
    out_pop: DFF<Bit>,
    out_pop_ptr: DFF<Bits<32>>,
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    out_tracing: DFF<Bit>,
    out_tags_only: DFF<Bit>,
    out_dropped: DFF<Bits<3>>,
    out_lost_pushed: DFF<Bits<3>>,
    out_filler: DFF<Bit>,
    out_overflows: DFF<Bits<3>>,
    dropped_sum: Signal<Local, Bits<3>>,
    overflow_sum: Signal<Local, Bits<3>>,
    dropped: DFF<Bits<32>>,
    lost_count: DFF<Bits<32>>,
    filler_count: DFF<Bits<32>>,
    overflow_count: DFF<Bits<32>>,
    high: DFF<Bits<32>>,
}

impl<const E: usize> Logic for Encoder<E> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            p1_valid,
            p1_tick,
            p1_over,
            p1_tracing,
            p1_tags_only,
            p1_step,
            p1_step_k,
            p2_valid,
            p2_nvalid,
            p2_tick,
            p2_tracing,
            p2_tags_only,
            hi,
            free_lag,
            write_pos_lag,
            last_taken,
            last_takes,
            last_keep,
            room_filler,
            room_open,
            free_small,
            level_nonzero,
            credit,
            read_pos,
            num,
            num_minus_den,
            out_base,
            out_pushed,
            out_fill,
            out_fill_pushed,
            out_fill_tick,
            out_fill_tick_valid,
            out_pop,
            out_pop_ptr,
            out_tick,
            out_tick_valid,
            out_tracing,
            out_tags_only,
            out_dropped,
            out_lost_pushed,
            out_filler,
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
        // P0: the inputs registered, with the step's carry chains.
        self.p0.clock.next = self.clock.val();
        self.p0.over_in.next = self.over.val();
        self.p0.tracing_in.next = self.tracing_in.val();
        self.p0.tags_only_in.next = self.tags_only_in.val();
        self.p0.tick_in.next = self.tick_in.val();
        self.p0.tick_valid_in.next = self.tick_valid_in.val();
        for s in 0..E {
            self.p0.ev_valid_in[s].next = self.ev_valid[s].val();
            self.p0.ev_kind_in[s].next = self.ev_kind[s].val();
            self.p0.ev_write_in[s].next = self.ev_write[s].val();
            self.p0.ev_value_in[s].next = self.ev_value[s].val();
            self.p0.ev_lane_in[s].next = self.ev_lane[s].val();
        }
        // P1. The tick step from the previous clock, saturated to 32 bits,
        // and less `KEEPER_GAP` (34-bit two's complement): P0's difference
        // if it fits.
        self.p1_valid.d.next = self.p0.tick_valid.val();
        self.p1_tick.d.next = self.p0.tick.val();
        self.step_k_fit.next = bit_cast::<34, 32>(self.p0.step_lo.val()) - self.keeper_gap_34.val();
        self.step_now.next = self.gap_max.val();
        self.step_k_now.next = self.gap_max_k.val();
        if self.p0.step_fits.val() {
            self.step_now.next = self.p0.step_lo.val();
            self.step_k_now.next = self.step_k_fit.val();
        }
        self.p1_step.d.next = self.step_now.val();
        self.p1_step_k.d.next = self.step_k_now.val();
        self.p1_over.d.next = self.p0.over.val();
        self.p1_tracing.d.next = self.p0.tracing.val();
        self.p1_tags_only.d.next = self.p0.tags_only.val();
        // The gap at P0's tick since reset (until the first clock is
        // decided; the gap state registers it and its tests).
        self.p0_tick_sat.next = self.p0.tick.val().get_bits::<32>(0);
        if self.p0.tick.val().get_bits::<32>(32).any() {
            self.p0_tick_sat.next = self.gap_max.val();
        }
        // P2.
        self.p2_valid.d.next = self.p1_valid.q.val();
        self.p2_tick.d.next = self.p1_tick.q.val();
        self.p2_tracing.d.next = self.p1_tracing.q.val();
        self.p2_tags_only.d.next = self.p1_tags_only.q.val();
        for s in 0..E {
            self.p1_ev_valid[s].clock.next = self.clock.val();
            self.p1_ev_kind[s].clock.next = self.clock.val();
            self.p1_ev_write[s].clock.next = self.clock.val();
            self.p1_ev_value[s].clock.next = self.clock.val();
            self.p1_lane[s].clock.next = self.clock.val();
            self.p2_ev_valid[s].clock.next = self.clock.val();
            self.p2_access[s].clock.next = self.clock.val();
            self.p2_body[s].clock.next = self.clock.val();
            self.p2_line_hi[s].clock.next = self.clock.val();
            self.p2_lane[s].clock.next = self.clock.val();
            self.p1_ev_valid[s].d.next = self.p0.ev_valid[s].val();
            self.p1_ev_kind[s].d.next = self.p0.ev_kind[s].val();
            self.p1_ev_write[s].d.next = self.p0.ev_write[s].val();
            self.p1_ev_value[s].d.next = self.p0.ev_value[s].val();
            self.p1_lane[s].d.next = self.p0.ev_lane[s].val();
            self.prep[s].kind.next = self.p1_ev_kind[s].q.val();
            self.prep[s].write.next = self.p1_ev_write[s].q.val();
            self.prep[s].value.next = self.p1_ev_value[s].q.val();
            self.p2_ev_valid[s].d.next = self.p1_ev_valid[s].q.val();
            self.p2_access[s].d.next = self.prep[s].access.val();
            self.p2_body[s].d.next = self.prep[s].body.val();
            self.p2_line_hi[s].d.next = self.prep[s].line_hi.val();
            self.p2_lane[s].d.next = self.p1_lane[s].q.val();
        }
        // Where each slot stands among the clock's valid events (P1's
        // valid events imply P1's valid clock), registered for the
        // decision, whose word counts all start there.
        for s in 0..5 {
            self.p1_before[s].next = 0.into();
        }
        for s in 0..E {
            self.p2_idx[s].clock.next = self.clock.val();
            self.p2_first[s].clock.next = self.clock.val();
            self.p2_idx[s].d.next = self.p1_before[s].val();
            self.p2_first[s].d.next = self.p1_ev_valid[s].q.val() & !self.p1_before[s].val().any();
            self.p1_before[s + 1].next = self.p1_before[s].val();
            if self.p1_ev_valid[s].q.val() {
                self.p1_before[s + 1].next = self.p1_before[s].val() + 1;
            }
        }
        for s in 0..E {
            self.p2_nvalid.d.next = self.p1_before[s + 1].val();
        }
        for i in 0..16 {
            self.p2_hi_eq[i].clock.next = self.clock.val();
            self.p2_hi_eq[i].d.next = false;
        }
        for s in 0..E {
            for t in 0..E {
                if t < s {
                    self.p2_hi_eq[s * 4 + t].d.next =
                        self.prep[s].line_hi.val() == self.prep[t].line_hi.val();
                }
            }
        }

        // The decision's flags, from registers.
        self.decide.valid.next = self.p2_valid.q.val();
        self.decide.nvalid.next = self.p2_nvalid.q.val();
        self.decide.due.next = self.gap_state.due.val();
        self.decide.filler_room.next = self.room_filler.q.val();
        self.decide.open.next = self.room_open.q.val();
        self.decide.long_first.next = self.gap_state.long_first.val();
        self.decide.long_first_k.next = self.gap_state.long_first_k.val();
        self.decide.lost_nonzero.next = self.pending_lost.nonzero.val();
        for i in 0..decide::LOST_FLAGS {
            self.decide.lost_over[i].next = self.pending_lost.over_flags[i].val();
        }
        for i in 0..16 {
            self.decide.hi_eq_slot[i].next = self.p2_hi_eq[i].q.val();
        }
        for s in 0..E {
            self.slot_gap[s].gap_low.next = self.gap_state.gap.val().get_bits::<6>(0);
            self.slot_gap[s].lane.next = self.p2_lane[s].q.val();
            // (A valid event implies a valid clock: `p1_ev_valid`.)
            self.decide.ev_valid[s].next = self.p2_ev_valid[s].q.val();
            self.decide.idx[s].next = self.p2_idx[s].q.val();
            self.decide.first[s].next = self.p2_first[s].q.val();
            self.decide.access[s].next = self.p2_access[s].q.val();
            self.decide.hi_eq_reg[s].next = self.hi_eq_reg[s].q.val();
            self.decide.need_time[s].next = self.gap_state.need_time[s].val();
            self.decide.too_long[s].next = self.gap_state.too_long[s].val();
            self.decide.need_time_k[s].next = self.gap_state.need_time_k[s].val();
            self.decide.too_long_k[s].next = self.gap_state.too_long_k[s].val();
            self.gap_state.next_first[s].next = self.p2_first[s].d.val();
            // Word contents.
            self.words.lost[s].next = self.decide.lost_taken[s].val();
            self.words.hi[s].next = self.decide.hi_taken[s].val();
            self.words.losts_before[s].next = self.decide.losts_before_taken[s].val();
            self.words.ev_valid[s].next = self.p2_ev_valid[s].q.val();
            self.words.first[s].next = self.p2_first[s].q.val();
            self.words.pushed_before[s].next = self.p2_idx[s].q.val().any();
            self.words.access[s].next = self.p2_access[s].q.val();
            self.words.lost_leaves_rest[s].next = self.decide.lost_leaves_rest[s].val();
            self.words.body[s].next = self.p2_body[s].q.val();
            self.words.line_hi[s].next = self.p2_line_hi[s].q.val();
            self.words.lane[s].next = self.p2_lane[s].q.val();
            self.words.first_dt[s].next = self.slot_gap[s].first_dt.val();
            self.words.time_carry[s].next = self.slot_gap[s].time_carry.val();
        }
        self.words.keep.next = self.decide.keep.val();
        self.words.takes.next = self.decide.takes.val();
        self.words.time_taken.next = self.decide.time_taken.val();
        self.words.gap_units.next = self.gap_state.gap.val().get_bits::<21>(6);
        for s in 0..E {
            self.words.count_taken[s].next = self.decide.count_taken[s].val();
        }
        self.words.lost_low.next = self.pending_lost.count_low.val();
        self.words.hi_in.next = self.hi.q.val();
        // The next clock's LINE_HI matches (P1's slots, prepared, against
        // each value the register may take), and the pick of the value it
        // takes: the last access the clock pushes, else the register.
        for i in 0..20 {
            self.hi_cand_eq[i].next = false;
        }
        for s in 0..E {
            self.hi_cand_eq[s].next = self.prep[s].line_hi.val() == self.hi.q.val();
            for t in 0..E {
                self.hi_cand_eq[(1 + t) * 4 + s].next =
                    self.prep[s].line_hi.val() == self.p2_line_hi[t].q.val();
            }
        }
        for c in 0..5 {
            self.hi_pick[c].next = false;
        }
        self.hi_pick[0].next = true;
        // (The pick if the clock takes its events, from registers: its last
        // valid ACCESS; `takes` then chooses it or the register kept.)
        for t in 0..E {
            if self.p2_ev_valid[t].q.val() & self.p2_access[t].q.val() {
                for c in 0..5 {
                    self.hi_pick[c].next = false;
                }
                self.hi_pick[1 + t].next = true;
            }
        }
        for s in 0..E {
            self.hi_eq_next[s].next = false;
            for c in 0..5 {
                self.hi_eq_next[s].next = self.hi_eq_next[s].val()
                    | (self.hi_pick[c].val() & self.hi_cand_eq[c * 4 + s].val());
            }
            if !(self.p2_valid.q.val() & self.decide.takes.val()) {
                self.hi_eq_next[s].next = self.hi_cand_eq[s].val();
            }
            self.hi_eq_reg[s].clock.next = self.clock.val();
            self.hi_eq_reg[s].d.next = self.hi_eq_next[s].val();
        }

        // The drain (step 3), from registers: credit += L num; pop if the
        // level at the clock start is not 0 and credit >= den.
        self.pop_now.next =
            self.p2_valid.q.val() & self.level_nonzero.q.val() & !self.credit.q.val().get_bit(32);

        // The state after the clock.
        // The words pushed: the filler, and if the clock takes its events
        // their TIME word and each slot's words (the groups' counts).
        self.total_taken.next = bit_cast::<8, 1>(self.decide.keep.val().into())
            + bit_cast::<8, 1>(self.decide.time_taken.val().into())
            + bit_cast::<8, 2>(self.decide.count_taken[0].val())
            + bit_cast::<8, 2>(self.decide.count_taken[1].val())
            + bit_cast::<8, 2>(self.decide.count_taken[2].val())
            + bit_cast::<8, 2>(self.decide.count_taken[3].val());
        self.total.next = bit_cast::<8, 1>(self.decide.keep.val().into());
        if self.decide.takes.val() {
            self.total.next = self.total_taken.val();
        }
        // At most 2 + 3E <= 14 words a clock.
        self.total_step.next = self.total_taken.val().get_bits::<6>(0);
        self.pop_up.next = bit_cast::<6, 1>(self.pop_now.val().into());
        // The counts at the clock's start, from registers: the lagged ones
        // plus or minus the previous clock's words.
        self.last_total.next = bit_cast::<6, 1>(self.last_keep.q.val().into());
        if self.last_takes.q.val() {
            self.last_total.next = self.last_taken.q.val();
        }
        self.free_now.value.next = self.free_lag.q.val();
        self.free_now.early.next = 0.into();
        self.free_now.late.next = self.last_total.val();
        self.write_pos_now.value.next = self.write_pos_lag.q.val();
        self.write_pos_now.early.next = 0.into();
        self.write_pos_now.late.next = self.last_total.val();
        self.free_lag_next.value.next = self.free_lag.q.val();
        self.free_lag_next.early.next = self.pop_up.val();
        self.free_lag_next.late.next = self.last_total.val();
        self.depth_level_1.next = self.depth.val() - 1;
        // The lagged free count after the clock, and saturated at 63 for
        // the next clock's room tests (board.md 2.2), which read the
        // saturated count of this clock plus its pop less the previous
        // clock's words: 8-bit adds from registers.
        self.free_lag_after.next = self.depth.val();
        if self.p2_valid.q.val() {
            self.free_lag_after.next = self.free_lag_next.sum.val();
        }
        self.depth_small.next = 63.into();
        if !(self.depth.val() >> 6).any() {
            self.depth_small.next = self.depth.val().get_bits::<6>(0);
        }
        self.free_lag_high.next = (self.free_lag.q.val() >> 7).any();
        self.free_low_after.next = bit_cast::<8, 7>(self.free_lag.q.val().get_bits::<7>(0))
            + bit_cast::<8, 6>(self.pop_up.val())
            - bit_cast::<8, 6>(self.last_total.val());
        self.free_small_next.next = self.free_low_after.val().get_bits::<6>(0);
        if self.free_lag_high.val()
            | self.free_low_after.val().get_bits::<2>(6).any()
            | self.free_low_after.val().get_bits::<6>(0).all()
        {
            self.free_small_next.next = 63.into();
        }
        self.room_sum.next = bit_cast::<8, 6>(self.free_small.q.val())
            + bit_cast::<8, 6>(self.pop_up.val())
            - bit_cast::<8, 6>(self.last_total.val());
        self.free_small.d.next = self.depth_small.val();
        self.room_filler.d.next =
            self.depth_small.val() >= self.filler_room_min.val().get_bits::<6>(0);
        self.room_open.d.next = self.depth_small.val() >= self.open_room_min.val().get_bits::<6>(0);
        if self.p2_valid.q.val() {
            self.free_small.d.next = self.free_small_next.val();
            self.room_filler.d.next = self.room_sum.val() >= self.filler_room_min.val();
            self.room_open.d.next = self.room_sum.val() >= self.open_room_min.val();
        }
        // The lost count after the clock (see `PendingLost`).
        self.pending_lost.clock.next = self.clock.val();
        self.pending_lost.over.next = self.p1_over.q.val();
        self.pending_lost.valid.next = self.p2_valid.q.val();
        self.pending_lost.nvalid.next = self.p2_nvalid.q.val();
        self.pending_lost.takes.next = self.decide.takes.val();
        // The gap at the next clock's tick and its tests (see `GapState`).
        self.gap_state.clock.next = self.clock.val();
        self.gap_state.tick_since_reset_ahead.next = self.p0_tick_sat.val();
        self.gap_state.step.next = self.p1_step.q.val();
        self.gap_state.step_k.next = self.p1_step_k.q.val();
        self.gap_state.step_ahead.next = self.p0.step_lo.val();
        self.gap_state.step_sat_ahead.next = !self.p0.step_fits.val();
        self.gap_state.valid.next = self.p2_valid.q.val();
        self.gap_state.keep.next = self.decide.keep.val();
        self.gap_state.takes.next = self.decide.takes.val();
        for s in 0..E {
            self.gap_state.ev_valid[s].next = self.p2_ev_valid[s].q.val();
            self.gap_state.next_lane[s].next = self.p1_lane[s].q.val();
            self.gap_state.lane_ahead[s].next = self.p0.ev_lane[s].val();
        }
        if self.p2_valid.q.val() {
            self.hi.d.next = self.words.hi_out.val();
            self.free_lag.d.next = self.free_lag_after.val();
            self.write_pos_lag.d.next = self.write_pos_now.sum.val();
            self.last_taken.d.next = self.total_step.val();
            self.last_takes.d.next = self.decide.takes.val();
            self.last_keep.d.next = self.decide.keep.val();
            // level + total - pop != 0: the clock pushes (the filler, or
            // events taken), or the level at its start is above 1, or 1 and
            // not popped.
            self.level_nonzero.d.next = self.decide.keep.val()
                | self.decide.pushed_any.val()
                | ((self.free_now.sum.val() != self.depth.val())
                    & !(self.pop_now.val()
                        & (self.free_now.sum.val() == self.depth_level_1.val())));
            self.read_pos.d.next =
                self.read_pos.q.val() + bit_cast::<32, 1>(self.pop_now.val().into());
            // credit + L num - den on a pop; an empty FIFO (no word at the
            // clock start, so none popped) caps the credit at den.
            self.credit.d.next = self.credit.q.val() + self.num.q.val();
            if self.pop_now.val() {
                self.credit.d.next = self.credit.q.val() + self.num_minus_den.q.val();
            } else if !self.level_nonzero.q.val() & !self.credit.q.val().get_bit(32) {
                self.credit.d.next = self.num.q.val();
            }
        } else {
            // Not started: last = 0, the FIFO empty, the credit 0.
            self.free_lag.d.next = self.free_lag_after.val();
            self.last_taken.d.next = 0.into();
            self.last_takes.d.next = false;
            self.last_keep.d.next = false;
            self.credit.d.next = self.num_minus_den.q.val();
        }

        // Outputs.
        for g in 0..GROUPS {
            self.out_count[g].clock.next = self.clock.val();
            self.out_word0[g].clock.next = self.clock.val();
            self.out_word1[g].clock.next = self.clock.val();
            self.out_word2[g].clock.next = self.clock.val();
            self.out_count[g].d.next = 0.into();
            if self.p2_valid.q.val() {
                self.out_count[g].d.next = self.words.count[g].val();
            }
            self.out_word0[g].d.next = self.words.word0[g].val();
            self.out_word1[g].d.next = self.words.word1[g].val();
            self.out_word2[g].d.next = self.words.word2[g].val();
            self.group_count[g].next = self.out_count[g].q.val();
            self.group_word0[g].next = self.out_word0[g].q.val();
            self.group_word1[g].next = self.out_word1[g].q.val();
            self.group_word2[g].next = self.out_word2[g].q.val();
        }
        self.out_base.d.next = self.write_pos_now.sum.val();
        self.out_pushed.d.next = 0.into();
        if self.p2_valid.q.val() {
            self.out_pushed.d.next = self.total.val();
        }
        // The previous clock's level after its pop is this clock's start
        // level; before that pop, one more if it popped.
        self.out_fill.d.next = self.out_fill.q.val();
        self.out_fill_pushed.d.next = 0.into();
        self.level_now.next =
            bit_cast::<32, LEVEL_BITS>(self.depth.val() - self.free_now.sum.val());
        if self.out_tick_valid.q.val() {
            self.out_fill.d.next = self.level_now.val();
            self.out_fill_pushed.d.next =
                self.level_now.val() + bit_cast::<32, 1>(self.out_pop.q.val().into());
        }
        self.out_fill_tick.d.next = self.out_tick.q.val();
        self.out_fill_tick_valid.d.next = self.out_tick_valid.q.val();
        self.out_pop.d.next = self.pop_now.val();
        self.out_pop_ptr.d.next = self.read_pos.q.val();
        self.out_tick.d.next = self.p2_tick.q.val();
        self.out_tick_valid.d.next = self.p2_valid.q.val();
        self.out_tracing.d.next = self.p2_tracing.q.val();
        self.out_tags_only.d.next = self.p2_tags_only.q.val();
        // Counters and the high-water mark, a clock later.
        self.dropped_sum.next = 0.into();
        self.overflow_sum.next = 0.into();
        for s in 0..E {
            if self.decide.dropped[s].val() {
                self.dropped_sum.next = self.dropped_sum.val() + 1;
            }
            if self.decide.overflow[s].val() {
                self.overflow_sum.next = self.overflow_sum.val() + 1;
            }
        }
        self.out_dropped.d.next = self.dropped_sum.val();
        self.out_lost_pushed.d.next = self.decide.losts.val();
        self.out_filler.d.next = self.decide.keep.val();
        self.out_overflows.d.next = self.overflow_sum.val();
        self.dropped.d.next = self.dropped.q.val() + bit_cast::<32, 3>(self.out_dropped.q.val());
        self.lost_count.d.next =
            self.lost_count.q.val() + bit_cast::<32, 3>(self.out_lost_pushed.q.val());
        self.filler_count.d.next =
            self.filler_count.q.val() + bit_cast::<32, 1>(self.out_filler.q.val().into());
        self.overflow_count.d.next =
            self.overflow_count.q.val() + bit_cast::<32, 3>(self.out_overflows.q.val());
        if self.out_fill_pushed.q.val() > self.high.q.val() {
            self.high.d.next = self.out_fill_pushed.q.val();
        }
        self.base.next = self.out_base.q.val();
        self.pushed.next = self.out_pushed.q.val();
        self.fill.next = self.out_fill.q.val();
        self.fill_tick.next = self.out_fill_tick.q.val();
        self.fill_tick_valid.next = self.out_fill_tick_valid.q.val();
        self.pop.next = self.out_pop.q.val();
        self.pop_ptr.next = self.out_pop_ptr.q.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.tracing.next = self.out_tracing.q.val();
        self.tags_only.next = self.out_tags_only.q.val();
        self.events_dropped.next = self.dropped.q.val();
        self.dropped_clock.next = self.out_dropped.q.val();
        self.lost_words.next = self.lost_count.q.val();
        self.time_fillers.next = self.filler_count.q.val();
        self.time_overflows.next = self.overflow_count.q.val();
        self.high_water.next = self.high.q.val();
    }
}
