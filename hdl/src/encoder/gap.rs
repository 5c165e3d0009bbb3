//! The encoder's gap (board.md 2.2 step 2): the ticks from the last pushed
//! word to the clock's tick, held as a number relative to the tick (a
//! slot's gap is `gap + lane`, and after a push in the clock every later
//! gap is a lane difference, below 64), with the next clock's tests on it
//! (the keeper due, a slot needing a TIME word or two) worked out from
//! every gap the clock may leave and the next clock's lanes, into
//! registers: the decision starts from flops, not from the gap's adders.
//! The gaps the clock leaves without a push of its events (none, or the
//! filler alone) are the gap plus the step; their slot tests read one sum
//! `gap + (step + lane)`, the bracket registered a clock ahead, so one
//! carry chain runs from the gap register to the pick (the narrow core),
//! or compare the gap register with the least passing gap, registered a
//! clock ahead (the wide core: no bit tests after the chain). The first
//! valid slot's `too_long` tests are registered apart, so the decision
//! reads them from two flops. The other gaps (the
//! time since reset, and the step less a slot's lane after a push of the
//! clock) do not depend on the gap: they and their tests are registers,
//! worked out a clock ahead from the step and lanes then known.

use rust_hdl::prelude::*;

use super::slot::GapTests;
use super::{GAP_MAX, KEEPER_GAP};

/// Gaps a clock may leave: since reset, no push, a filler alone, and one
/// per slot (`E <= 4`).
const GAP_CANDS: usize = 7;
/// Candidate tests: four per candidate, one per slot.
const CAND_TESTS: usize = GAP_CANDS * 4;
/// The candidates tested by `GapTests` (since reset, and one per slot).
const TESTED_CANDS: usize = 5;
const TESTED_ENTRIES: usize = TESTED_CANDS * 4;

/// Combinational: a slot's step and lane, `step + lane` in 34 bits (the
/// step modulo `2^32`: exact unless it saturates, which is flagged apart).
#[derive(LogicBlock, Default)]
pub struct StepLane {
    pub step: Signal<In, Bits<32>>,
    pub lane: Signal<In, Bits<3>>,
    pub sum: Signal<Out, Bits<34>>,
}

impl Logic for StepLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.sum.next = bit_cast::<34, 32>(self.step.val()) + bit_cast::<34, 3>(self.lane.val());
    }
}

/// Combinational: the gap at the next clock's tick after a push in lane
/// `lane`, `step - lane` (the step saturated: the gap then still passes
/// every test).
#[derive(LogicBlock, Default)]
pub struct StepAfter {
    pub step: Signal<In, Bits<32>>,
    pub lane: Signal<In, Bits<3>>,
    pub gap: Signal<Out, Bits<32>>,
}

impl Logic for StepAfter {
    #[hdl_gen]
    fn update(&mut self) {
        self.gap.next = self.step.val() - bit_cast::<32, 3>(self.lane.val());
    }
}

/// Combinational: the next clock's tests of slot `s` on the gaps this
/// clock leaves without a push of its events, from `sum = gap + step +
/// lane` (below `2^34`) and the step's saturation (every test holds, as it
/// does on the saturated gap). With no push the gap is `gap + step`; after
/// the filler alone it is `KEEPER_GAP = 2^27 - 64` less, so its tests are
/// the same sum against thresholds `KEEPER_GAP` higher. `GapTests`' three
/// thresholds (`64`, `2^27`, `2^28 - 64`) on both gaps need four compares.
#[derive(LogicBlock, Default)]
pub struct SumTests {
    pub gap: Signal<In, Bits<32>>,
    pub step_lane: Signal<In, Bits<34>>,
    pub saturated: Signal<In, Bit>,
    /// `sum >= 64`, `>= 2^27`, `>= 2^28 - 64` and `>= 2^28 + 2^27 - 128`.
    pub at_least_64: Signal<Out, Bit>,
    pub at_least_2_27: Signal<Out, Bit>,
    pub at_least_2_28_less_64: Signal<Out, Bit>,
    pub at_least_3_2_27_less_128: Signal<Out, Bit>,
    /// Only bits 6 and up are tested; the low ones carry into them.
    gap_step_lane: Signal<Local, Bits<34>>,
}

impl Logic for SumTests {
    #[hdl_gen]
    fn update(&mut self) {
        self.gap_step_lane.next = bit_cast::<34, 32>(self.gap.val()) + self.step_lane.val();
        self.at_least_64.next =
            self.saturated.val() | self.gap_step_lane.val().get_bits::<28>(6).any();
        self.at_least_2_27.next =
            self.saturated.val() | self.gap_step_lane.val().get_bits::<7>(27).any();
        self.at_least_2_28_less_64.next = self.saturated.val()
            | self.gap_step_lane.val().get_bits::<6>(28).any()
            | self.gap_step_lane.val().get_bits::<22>(6).all();
        // 2^28 + 2^27 - 128: bit 28, and bit 27 or bits 26..7 all set.
        self.at_least_3_2_27_less_128.next = self.saturated.val()
            | self.gap_step_lane.val().get_bits::<5>(29).any()
            | (self.gap_step_lane.val().get_bit(28)
                & (self.gap_step_lane.val().get_bit(27)
                    | self.gap_step_lane.val().get_bits::<20>(7).all()));
    }
}

/// Combinational, a clock ahead: the least gap at which `gap + addend >=
/// level`, so the test in the next clock is one compare of the gap
/// register, its result at the carry chain's end (`every_gap` passes:
/// the addend saturated or at least `level`; `always` is Verilog's).
#[derive(LogicBlock)]
pub struct Threshold {
    pub addend: Signal<In, Bits<34>>,
    pub saturated: Signal<In, Bit>,
    pub every_gap: Signal<Out, Bit>,
    pub least_gap: Signal<Out, Bits<32>>,
    level: Constant<Bits<35>>,
    diff: Signal<Local, Bits<35>>,
}

impl Threshold {
    pub fn new(level: u64) -> Self {
        Self {
            addend: Default::default(),
            saturated: Default::default(),
            every_gap: Default::default(),
            least_gap: Default::default(),
            level: Constant::new(level.to_bits()),
            diff: Default::default(),
        }
    }
}

impl Logic for Threshold {
    #[hdl_gen]
    fn update(&mut self) {
        self.diff.next = self.level.val() - bit_cast::<35, 34>(self.addend.val());
        self.every_gap.next =
            self.saturated.val() | self.diff.val().get_bit(34) | !self.diff.val().any();
        self.least_gap.next = self.diff.val().get_bits::<32>(0);
    }
}

/// `SumTests`' four levels, in its order.
const SUM_LEVELS: [u64; 4] = [64, 1 << 27, (1 << 28) - 64, (1 << 28) + (1 << 27) - 128];
/// Threshold entries: four per slot (`4 s + x`, level `x`), then the
/// keeper's on the gap with no push and after the filler alone.
const THRESHOLDS: usize = 18;
const DUE_NONE: usize = 16;
const DUE_KEEP: usize = 17;

/// Sequential: the gap and its tests at the clock being decided, updated
/// from that clock's decision.
#[derive(LogicBlock)]
pub struct GapState<const E: usize> {
    pub clock: Signal<In, Clock>,
    /// A clock ahead, before the first decided clock: the time since reset
    /// at the tick of the clock after the next (saturated).
    pub tick_since_reset_ahead: Signal<In, Bits<32>>,
    /// Ticks to the next clock's tick, and that less `KEEPER_GAP` (34-bit
    /// two's complement), saturated as the gap is.
    pub step: Signal<In, Bits<32>>,
    pub step_k: Signal<In, Bits<34>>,
    /// The next clock's lanes (a clock ahead, this clock's).
    pub next_lane: [Signal<In, Bits<3>>; E],
    /// A clock ahead, what `step` and `next_lane` come from at the next
    /// clock edge: the step modulo `2^32`, whether it saturates, and the
    /// lanes.
    pub step_ahead: Signal<In, Bits<32>>,
    pub step_sat_ahead: Signal<In, Bit>,
    pub lane_ahead: [Signal<In, Bits<3>>; E],
    /// The clock is decided; its valid slots; the decision.
    pub valid: Signal<In, Bit>,
    pub ev_valid: [Signal<In, Bit>; E],
    pub keep: Signal<In, Bit>,
    pub takes: Signal<In, Bit>,
    /// At the clock being decided: the gap's low 27 bits (a slot's fields
    /// never read higher ones), the keeper due (`gap >=
    /// KEEPER_GAP`), and the tests of slot `s`'s gap without (`_k`: with)
    /// the keeper's filler pushed before it (see `GapTests`). After the
    /// filler (`KEEPER_GAP = 2^27 - 64` less) the gap needs a TIME word
    /// exactly when it is too long without it, so `need_time_k` is
    /// `too_long`.
    pub gap: Signal<Out, Bits<27>>,
    pub due: Signal<Out, Bit>,
    pub need_time: [Signal<Out, Bit>; E],
    pub too_long: [Signal<Out, Bit>; E],
    pub need_time_k: [Signal<Out, Bit>; E],
    pub too_long_k: [Signal<Out, Bit>; E],
    /// The clock's first valid slot (a clock ahead, the next clock's), and
    /// at the clock being decided its `too_long` and `too_long_k`: the
    /// decision reads whether its events are taken from these two flops.
    pub next_first: [Signal<In, Bit>; E],
    pub long_first: Signal<Out, Bit>,
    pub long_first_k: Signal<Out, Bit>,
    gap_reg: DFF<Bits<32>>,
    due_reg: DFF<Bit>,
    need_time_reg: [DFF<Bit>; E],
    too_long_reg: [DFF<Bit>; E],
    too_long_k_reg: [DFF<Bit>; E],
    /// The gap plus the step, without and with the filler.
    sum_none: Signal<Local, Bits<34>>,
    sum_keep: Signal<Local, Bits<34>>,
    /// Every gap the clock may leave at the next clock's tick (entry 0:
    /// no clock decided, the time since reset; 1: no push; 2: a filler
    /// alone; `3 + s`: slot `s` the clock's last push), with the keeper's
    /// test and, entry `4 c + s`, the tests of the next clock's slot `s`
    /// on gap `c`: all worked out beside the decision, which picks one
    /// (`gap_pick`, one-hot) into the gap and test registers.
    gap_cand: [Signal<Local, Bits<32>>; GAP_CANDS],
    gap_cand_due: [Signal<Local, Bit>; GAP_CANDS],
    /// Entry `4 c + s`: the tests of the next clock's slot `s` on gap `c`.
    cand_need_time: [Signal<Local, Bit>; GAP_CANDS * 4],
    cand_too_long: [Signal<Local, Bit>; GAP_CANDS * 4],
    cand_too_long_k: [Signal<Local, Bit>; GAP_CANDS * 4],
    /// Candidates 0 and `3 + u` a clock ahead: the time since reset, and
    /// the step less slot `u`'s lane (`after_ahead`, from the step
    /// saturated), with `GapTests` on them (entries 0-3 and `4 + 4 u`) and
    /// the keeper's test, all registered.
    step_sat_value: Signal<Local, Bits<32>>,
    after_ahead: [StepAfter; E],
    gap_cand_tests: [GapTests; TESTED_ENTRIES],
    since_reset_reg: DFF<Bits<32>>,
    since_reset_due_reg: DFF<Bit>,
    after_reg: [DFF<Bits<32>>; E],
    after_due_reg: [DFF<Bit>; E],
    /// Entry `4 t + s` as `gap_cand_tests`.
    tested_need_time: [DFF<Bit>; TESTED_ENTRIES],
    tested_too_long: [DFF<Bit>; TESTED_ENTRIES],
    tested_too_long_k: [DFF<Bit>; TESTED_ENTRIES],
    /// Candidates 1 and 2: `step + lane` of the next clock's slots and the
    /// step's saturation, registered a clock ahead, and the tests.
    step_lane_next: [StepLane; E],
    step_lane: [DFF<Bits<34>>; E],
    step_sat: DFF<Bit>,
    sum_tests: [SumTests; E],
    /// Wide cores (`thresholds`): the same tests, and the keeper's on
    /// candidates 1 and 2, as compares of the gap register with least
    /// gaps registered a clock ahead (`Threshold`): no adder and no bit
    /// tests between the gap register and the pick. The narrow core keeps
    /// `SumTests`, which take fewer logic cells.
    thresholds: Constant<Bit>,
    threshold_ahead: [Threshold; THRESHOLDS],
    threshold_every: [DFF<Bit>; THRESHOLDS],
    threshold_gap: [DFF<Bits<32>>; THRESHOLDS],
    passes: [Signal<Local, Bit>; THRESHOLDS],
    step_ahead_34: Signal<Local, Bits<34>>,
    gap_pick: Signal<Local, Bits<GAP_CANDS>>,
    /// The candidate of a clock that does not take its events (0, 1 or 2).
    gap_other: Signal<Local, Bits<2>>,
    gap_pick_bit: [Constant<Bits<GAP_CANDS>>; GAP_CANDS],
    gap_next: Signal<Local, Bits<32>>,
    due_next: Signal<Local, Bit>,
    need_time_next: [Signal<Local, Bit>; E],
    too_long_next: [Signal<Local, Bit>; E],
    too_long_k_next: [Signal<Local, Bit>; E],
    cand_long_first: [Signal<Local, Bit>; GAP_CANDS],
    cand_long_first_k: [Signal<Local, Bit>; GAP_CANDS],
    long_first_next: Signal<Local, Bit>,
    long_first_k_next: Signal<Local, Bit>,
    long_first_reg: DFF<Bit>,
    long_first_k_reg: DFF<Bit>,
    gap_max: Constant<Bits<32>>,
}

impl<const E: usize> GapState<E> {
    /// With `thresholds`, the tests as compares (see the field).
    pub fn new(thresholds: bool) -> Self {
        assert!((1..=4).contains(&E), "1 <= E <= 4");
        Self {
            clock: Default::default(),
            tick_since_reset_ahead: Default::default(),
            step: Default::default(),
            step_k: Default::default(),
            next_lane: std::array::from_fn(|_| Default::default()),
            step_ahead: Default::default(),
            step_sat_ahead: Default::default(),
            lane_ahead: std::array::from_fn(|_| Default::default()),
            valid: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            keep: Default::default(),
            takes: Default::default(),
            gap: Default::default(),
            due: Default::default(),
            need_time: std::array::from_fn(|_| Default::default()),
            too_long: std::array::from_fn(|_| Default::default()),
            need_time_k: std::array::from_fn(|_| Default::default()),
            too_long_k: std::array::from_fn(|_| Default::default()),
            gap_reg: Default::default(),
            due_reg: Default::default(),
            need_time_reg: std::array::from_fn(|_| Default::default()),
            too_long_reg: std::array::from_fn(|_| Default::default()),
            too_long_k_reg: std::array::from_fn(|_| Default::default()),
            sum_none: Default::default(),
            sum_keep: Default::default(),
            gap_cand: std::array::from_fn(|_| Default::default()),
            gap_cand_due: std::array::from_fn(|_| Default::default()),
            cand_need_time: std::array::from_fn(|_| Default::default()),
            cand_too_long: std::array::from_fn(|_| Default::default()),
            cand_too_long_k: std::array::from_fn(|_| Default::default()),
            step_sat_value: Default::default(),
            after_ahead: std::array::from_fn(|_| Default::default()),
            gap_cand_tests: std::array::from_fn(|_| Default::default()),
            since_reset_reg: Default::default(),
            since_reset_due_reg: Default::default(),
            after_reg: std::array::from_fn(|_| Default::default()),
            after_due_reg: std::array::from_fn(|_| Default::default()),
            tested_need_time: std::array::from_fn(|_| Default::default()),
            tested_too_long: std::array::from_fn(|_| Default::default()),
            tested_too_long_k: std::array::from_fn(|_| Default::default()),
            step_lane_next: std::array::from_fn(|_| Default::default()),
            step_lane: std::array::from_fn(|_| Default::default()),
            step_sat: Default::default(),
            sum_tests: std::array::from_fn(|_| Default::default()),
            thresholds: Constant::new(thresholds),
            threshold_ahead: std::array::from_fn(|i| match i {
                DUE_NONE => Threshold::new(KEEPER_GAP),
                DUE_KEEP => Threshold::new(2 * KEEPER_GAP),
                _ => Threshold::new(SUM_LEVELS[i % 4]),
            }),
            threshold_every: std::array::from_fn(|_| Default::default()),
            threshold_gap: std::array::from_fn(|_| Default::default()),
            passes: std::array::from_fn(|_| Default::default()),
            step_ahead_34: Default::default(),
            gap_pick: Default::default(),
            gap_other: Default::default(),
            gap_pick_bit: std::array::from_fn(|c| Constant::new((1u64 << c).to_bits())),
            gap_next: Default::default(),
            due_next: Default::default(),
            need_time_next: std::array::from_fn(|_| Default::default()),
            too_long_next: std::array::from_fn(|_| Default::default()),
            too_long_k_next: std::array::from_fn(|_| Default::default()),
            next_first: std::array::from_fn(|_| Default::default()),
            long_first: Default::default(),
            long_first_k: Default::default(),
            cand_long_first: std::array::from_fn(|_| Default::default()),
            cand_long_first_k: std::array::from_fn(|_| Default::default()),
            long_first_next: Default::default(),
            long_first_k_next: Default::default(),
            long_first_reg: Default::default(),
            long_first_k_reg: Default::default(),
            gap_max: Constant::new(GAP_MAX.to_bits()),
        }
    }
}

impl<const E: usize> Logic for GapState<E> {
    #[hdl_gen]
    fn update(&mut self) {
        self.gap_reg.clock.next = self.clock.val();
        self.due_reg.clock.next = self.clock.val();
        self.gap.next = self.gap_reg.q.val().get_bits::<27>(0);
        self.due.next = self.due_reg.q.val();
        for s in 0..E {
            self.need_time[s].next = self.need_time_reg[s].q.val();
            self.too_long[s].next = self.too_long_reg[s].q.val();
            self.need_time_k[s].next = self.too_long_reg[s].q.val();
            self.too_long_k[s].next = self.too_long_k_reg[s].q.val();
        }
        // The gap at the next clock's tick: from the last push, or the gap
        // (less KEEPER_GAP after a filler) plus the step, saturated.
        self.sum_none.next =
            bit_cast::<34, 32>(self.gap_reg.q.val()) + bit_cast::<34, 32>(self.step.val());
        self.sum_keep.next = bit_cast::<34, 32>(self.gap_reg.q.val()) + self.step_k.val();
        // The gaps the clock may leave, and the next clock's tests on each
        // (P1 holds the next clock's lanes): the keeper is due at `gap >=
        // KEEPER_GAP`, i.e. 2^21-1 units of 64 ticks; a slot's gap `gap +
        // lane` is tested by `GapTests`.
        self.gap_cand[0].next = self.since_reset_reg.q.val();
        self.gap_cand[1].next = bit_cast::<32, 34>(self.sum_none.val());
        if self.sum_none.val().get_bit(32) {
            self.gap_cand[1].next = self.gap_max.val();
        }
        self.gap_cand[2].next = bit_cast::<32, 34>(self.sum_keep.val());
        if self.sum_keep.val().get_bit(32) {
            self.gap_cand[2].next = self.gap_max.val();
        }
        for c in 3..GAP_CANDS {
            self.gap_cand[c].next = 0.into();
        }
        for s in 0..E {
            self.gap_cand[3 + s].next = self.after_reg[s].q.val();
        }
        // The keeper's test on each candidate; on candidates 1 and 2 on the
        // sum before its saturation (it holds on both).
        self.gap_cand_due[0].next = self.since_reset_due_reg.q.val();
        self.gap_cand_due[1].next = self.sum_none.val().get_bits::<7>(27).any()
            | self.sum_none.val().get_bits::<21>(6).all();
        self.gap_cand_due[2].next = self.sum_keep.val().get_bits::<7>(27).any()
            | self.sum_keep.val().get_bits::<21>(6).all();
        for u in 0..4 {
            self.gap_cand_due[3 + u].next = false;
        }
        for u in 0..E {
            self.gap_cand_due[3 + u].next = self.after_due_reg[u].q.val();
        }
        // Candidates 0 and 3 + u a clock ahead, from the step and lanes
        // then known: the step as `p1_step` will hold it, less the lane of
        // the slot that will be decided (`next_lane` now), and the tests
        // with the lanes of the clock after (`lane_ahead`).
        self.since_reset_reg.clock.next = self.clock.val();
        self.since_reset_due_reg.clock.next = self.clock.val();
        self.since_reset_reg.d.next = self.tick_since_reset_ahead.val();
        self.since_reset_due_reg.d.next = self.tick_since_reset_ahead.val().get_bits::<5>(27).any()
            | self.tick_since_reset_ahead.val().get_bits::<21>(6).all();
        self.step_sat_value.next = self.step_ahead.val();
        if self.step_sat_ahead.val() {
            self.step_sat_value.next = self.gap_max.val();
        }
        for u in 0..E {
            self.after_ahead[u].step.next = self.step_sat_value.val();
            self.after_ahead[u].lane.next = self.next_lane[u].val();
            self.after_reg[u].clock.next = self.clock.val();
            self.after_due_reg[u].clock.next = self.clock.val();
            self.after_reg[u].d.next = self.after_ahead[u].gap.val();
            self.after_due_reg[u].d.next = self.after_ahead[u].gap.val().get_bits::<5>(27).any()
                | self.after_ahead[u].gap.val().get_bits::<21>(6).all();
        }
        for e in 0..CAND_TESTS {
            self.cand_need_time[e].next = false;
            self.cand_too_long[e].next = false;
            self.cand_too_long_k[e].next = false;
        }
        for s in 0..4 {
            self.gap_cand_tests[s].gap.next = self.tick_since_reset_ahead.val();
            self.gap_cand_tests[s].lane.next = 0.into();
            for u in 0..4 {
                self.gap_cand_tests[(1 + u) * 4 + s].gap.next = 0.into();
                self.gap_cand_tests[(1 + u) * 4 + s].lane.next = 0.into();
            }
        }
        for e in 0..TESTED_ENTRIES {
            self.tested_need_time[e].clock.next = self.clock.val();
            self.tested_too_long[e].clock.next = self.clock.val();
            self.tested_too_long_k[e].clock.next = self.clock.val();
            self.tested_need_time[e].d.next = self.gap_cand_tests[e].need_time.val();
            self.tested_too_long[e].d.next = self.gap_cand_tests[e].too_long.val();
            self.tested_too_long_k[e].d.next = self.gap_cand_tests[e].too_long_k.val();
        }
        for s in 0..E {
            self.gap_cand_tests[s].lane.next = self.lane_ahead[s].val();
            self.cand_need_time[s].next = self.tested_need_time[s].q.val();
            self.cand_too_long[s].next = self.tested_too_long[s].q.val();
            self.cand_too_long_k[s].next = self.tested_too_long_k[s].q.val();
            for u in 0..E {
                self.gap_cand_tests[(1 + u) * 4 + s].gap.next = self.after_ahead[u].gap.val();
                self.gap_cand_tests[(1 + u) * 4 + s].lane.next = self.lane_ahead[s].val();
                self.cand_need_time[(3 + u) * 4 + s].next =
                    self.tested_need_time[(1 + u) * 4 + s].q.val();
                self.cand_too_long[(3 + u) * 4 + s].next =
                    self.tested_too_long[(1 + u) * 4 + s].q.val();
                self.cand_too_long_k[(3 + u) * 4 + s].next =
                    self.tested_too_long_k[(1 + u) * 4 + s].q.val();
            }
        }
        // Candidates 1 (no push) and 2 (the filler alone, `KEEPER_GAP`
        // less): one sum per slot, `gap + (step + lane)`, and its compares
        // (a gap after the filler needs a TIME word at the no-push gap's
        // `2^27`, and so on; see `SumTests`).
        self.step_sat.clock.next = self.clock.val();
        self.step_sat.d.next = self.step_sat_ahead.val();
        for s in 0..E {
            self.step_lane_next[s].step.next = self.step_ahead.val();
            self.step_lane_next[s].lane.next = self.lane_ahead[s].val();
            self.step_lane[s].clock.next = self.clock.val();
            self.step_lane[s].d.next = self.step_lane_next[s].sum.val();
            self.sum_tests[s].gap.next = self.gap_reg.q.val();
            self.sum_tests[s].step_lane.next = self.step_lane[s].q.val();
            self.sum_tests[s].saturated.next = self.step_sat.q.val();
            self.cand_need_time[4 + s].next = self.sum_tests[s].at_least_64.val();
            self.cand_too_long[4 + s].next = self.sum_tests[s].at_least_2_27.val();
            self.cand_too_long_k[4 + s].next = self.sum_tests[s].at_least_2_28_less_64.val();
            self.cand_need_time[8 + s].next = self.sum_tests[s].at_least_2_27.val();
            self.cand_too_long[8 + s].next = self.sum_tests[s].at_least_2_28_less_64.val();
            self.cand_too_long_k[8 + s].next = self.sum_tests[s].at_least_3_2_27_less_128.val();
        }
        // The same tests and the keeper's on candidates 1 and 2 as
        // compares, their least gaps a clock ahead (the step as `step`
        // will hold it: the keeper's on the saturated value, which passes).
        self.step_ahead_34.next = bit_cast::<34, 32>(self.step_sat_value.val());
        for i in 0..THRESHOLDS {
            self.threshold_ahead[i].addend.next = self.step_ahead_34.val();
            self.threshold_ahead[i].saturated.next = self.step_sat_ahead.val();
        }
        for s in 0..E {
            for x in 0..4 {
                self.threshold_ahead[4 * s + x].addend.next = self.step_lane_next[s].sum.val();
            }
        }
        for i in 0..THRESHOLDS {
            self.threshold_every[i].clock.next = self.clock.val();
            self.threshold_gap[i].clock.next = self.clock.val();
            self.threshold_every[i].d.next = self.threshold_ahead[i].every_gap.val();
            self.threshold_gap[i].d.next = self.threshold_ahead[i].least_gap.val();
            self.passes[i].next = self.threshold_every[i].q.val()
                | (self.gap_reg.q.val() >= self.threshold_gap[i].q.val());
        }
        if self.thresholds.val() {
            for s in 0..E {
                self.cand_need_time[4 + s].next = self.passes[4 * s].val();
                self.cand_too_long[4 + s].next = self.passes[4 * s + 1].val();
                self.cand_too_long_k[4 + s].next = self.passes[4 * s + 2].val();
                self.cand_need_time[8 + s].next = self.passes[4 * s + 1].val();
                self.cand_too_long[8 + s].next = self.passes[4 * s + 2].val();
                self.cand_too_long_k[8 + s].next = self.passes[4 * s + 3].val();
            }
            // (Entries `DUE_NONE` and `DUE_KEEP`.)
            self.gap_cand_due[1].next = self.passes[16].val();
            self.gap_cand_due[2].next = self.passes[17].val();
        }
        // Each candidate's tests of the next clock's first valid slot.
        for c in 0..GAP_CANDS {
            self.cand_long_first[c].next = false;
            self.cand_long_first_k[c].next = false;
            for s in 0..E {
                self.cand_long_first[c].next = self.cand_long_first[c].val()
                    | (self.next_first[s].val() & self.cand_too_long[c * 4 + s].val());
                self.cand_long_first_k[c].next = self.cand_long_first_k[c].val()
                    | (self.next_first[s].val() & self.cand_too_long_k[c * 4 + s].val());
            }
        }
        // The pick if the clock takes its events, from registers (its last
        // valid slot, else the filler alone, else no push); a clock that
        // drops them leaves the filler's gap or none, so `takes` comes in
        // only at the end, as a choice between the two.
        self.gap_pick.next = self.gap_pick_bit[1].val();
        if self.keep.val() {
            self.gap_pick.next = self.gap_pick_bit[2].val();
        }
        for s in 0..E {
            if self.ev_valid[s].val() {
                self.gap_pick.next = self.gap_pick_bit[3 + s].val();
            }
        }
        self.gap_next.next = 0.into();
        self.due_next.next = false;
        self.long_first_next.next = false;
        self.long_first_k_next.next = false;
        for s in 0..E {
            self.need_time_next[s].next = false;
            self.too_long_next[s].next = false;
            self.too_long_k_next[s].next = false;
        }
        for c in 0..GAP_CANDS {
            if self.gap_pick.val().get_bit(c) {
                self.gap_next.next = self.gap_next.val() | self.gap_cand[c].val();
                self.due_next.next = self.due_next.val() | self.gap_cand_due[c].val();
                self.long_first_next.next =
                    self.long_first_next.val() | self.cand_long_first[c].val();
                self.long_first_k_next.next =
                    self.long_first_k_next.val() | self.cand_long_first_k[c].val();
                for s in 0..E {
                    self.need_time_next[s].next =
                        self.need_time_next[s].val() | self.cand_need_time[c * 4 + s].val();
                    self.too_long_next[s].next =
                        self.too_long_next[s].val() | self.cand_too_long[c * 4 + s].val();
                    self.too_long_k_next[s].next =
                        self.too_long_k_next[s].val() | self.cand_too_long_k[c * 4 + s].val();
                }
            }
        }
        // Otherwise the gap with no push or after the filler alone, or
        // before the first decided clock the time since reset.
        self.gap_other.next = 1.into();
        if self.keep.val() {
            self.gap_other.next = 2.into();
        }
        if !self.valid.val() {
            self.gap_other.next = 0.into();
        }
        if !(self.valid.val() & self.takes.val()) {
            for c in 0..3 {
                if self.gap_other.val().index() == c {
                    self.gap_next.next = self.gap_cand[c].val();
                    self.due_next.next = self.gap_cand_due[c].val();
                    self.long_first_next.next = self.cand_long_first[c].val();
                    self.long_first_k_next.next = self.cand_long_first_k[c].val();
                    for s in 0..E {
                        self.need_time_next[s].next = self.cand_need_time[c * 4 + s].val();
                        self.too_long_next[s].next = self.cand_too_long[c * 4 + s].val();
                        self.too_long_k_next[s].next = self.cand_too_long_k[c * 4 + s].val();
                    }
                }
            }
        }
        self.gap_reg.d.next = self.gap_next.val();
        self.due_reg.d.next = self.due_next.val();
        self.long_first_reg.clock.next = self.clock.val();
        self.long_first_k_reg.clock.next = self.clock.val();
        self.long_first_reg.d.next = self.long_first_next.val();
        self.long_first_k_reg.d.next = self.long_first_k_next.val();
        self.long_first.next = self.long_first_reg.q.val();
        self.long_first_k.next = self.long_first_k_reg.q.val();
        for s in 0..E {
            self.need_time_reg[s].clock.next = self.clock.val();
            self.too_long_reg[s].clock.next = self.clock.val();
            self.too_long_k_reg[s].clock.next = self.clock.val();
            self.need_time_reg[s].d.next = self.need_time_next[s].val();
            self.too_long_reg[s].d.next = self.too_long_next[s].val();
            self.too_long_k_reg[s].d.next = self.too_long_k_next[s].val();
        }
    }
}
