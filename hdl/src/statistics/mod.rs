//! The Statistic Unit's counters (board.md "Statistic Unit", format.md
//! §5.3): per interval of `2^k` ticks, per rank and bank RD, WR, ACT, PRE,
//! row hits, misses and conflicts and unused activations; per rank REF and
//! busy ticks; per line-index bit the toggles; the references the limit
//! dropped and the events the FIFO had no room for. Fed by the capture
//! chain's taps ([`crate::capture::Capture`]), so it counts every command
//! whether or not its reference reached the trace.
//!
//! What this block is, and is not, of board.md's unit: the counters, the
//! intervals, the inner commands STATS_ON, STATS_OFF and STATS_INTERVAL_k
//! (their effect at the next clock's tick), and the record of each
//! non-empty interval ([`StatisticCounters::record_valid`], a clock long),
//! held in a slot of the counters' held records when the transport sends
//! it ([`packets`], which has the packets and their credit). A board top
//! holds both as a [`unit::StatisticUnit`]; the share of the ports and
//! the trace drain's smaller share are the top's
//! ([`crate::board_top`]).
//!
//! Generated Verilog. rust-hdl 0.46 resolves one array index per name
//! (`a[i].b[j]` comes out as `a$i$b[j]`, not a signal), so no block here
//! reaches through two: an array of sub-blocks has scalar or vector ports
//! (a lane's bit of [`IntervalCounter::lanes`], [`BankStats`]' lane
//! vectors), and a bank's eight counters are named fields.
//!
//! Stages. The taps come from stages of the chain a few clocks apart; the
//! unit delays them all to the encoder's stage, where the last of them
//! (the events the FIFO had no room for) is known, and counts there with
//! that stage's tick: the bus lanes ([`BUS_DELAY`] clocks), the toggles
//! of each DSMU clock per line bit ([`REF_DELAY`]), the limit's count
//! ([`OVER_DELAY`]) and the CU's inner commands ([`CMD_DELAY`]). The bank
//! states and the last line follow the bus whether the unit is on or off.
//! The bus lanes are decoded two clocks before the counting stage,
//! registered by each bank ([`BankStats`]) and summarised per bank one
//! clock before it, so that no path of a clock runs from the decode
//! through a bank's lanes in series.
//! The toggles likewise take two of their clocks: each lane's toggles
//! against the last valid lane before it (selected in parallel, not
//! through the lanes in series), registered, then counted per line bit.
//! The readout takes two ([`READ_LATENCY`]): the counters in groups of
//! eight by the index's high bits (a bank's, then the other counters'
//! eight at a time), a registered mux per group by its low bits and a
//! registered flag (the index is in the group), then the OR of the
//! flagged groups: no stage selects among more than one group's counters.
//!
//! No counter saturates: an interval has at most `2^31` ticks, and no
//! counter grows by more than one per tick (a tick holds one command, and
//! the limit and the FIFO drop at most one reference or event per command).

use rust_hdl::prelude::*;

use crate::dsmu::LineGeometry;

mod bank;
mod build;
mod counter;
mod line;
pub mod packets;
pub mod unit;

pub use bank::{
    BankStats, LaneAddr, ACT, BANK_COUNTERS, CONFLICT, HIT, LANE_ADDR_BITS, LANE_PAIR_BITS, MISS,
    PRE, RD, UNUSED_ACT, WR,
};
pub use counter::{DelayLine, IntervalCounter, HOLD_SLOTS, HOLD_SLOT_BITS};
pub use line::LineLane;

/// Clocks from each tap of the capture chain to the encoder's, where the
/// unit counts: from the DCBU (DSMU 2, limit 1, CU 1, encoder 4), the
/// DSMU, the limit and the CU.
pub const BUS_DELAY: usize = 8;
pub const REF_DELAY: usize = 6;
pub const OVER_DELAY: usize = 5;
pub const CMD_DELAY: usize = 4;

/// Clocks from `read_index` to its counter in `read_value`: a registered
/// mux per group of eight counters, then the mux of the groups.
pub const READ_LATENCY: usize = 2;

/// The readout's groups for the counters after the banks' (eight each):
/// room for `2 R + LB + 2 <= 64` of them. A group with no counter reads
/// 0, and synthesis drops it.
pub const OTHER_GROUPS: usize = 8;

/// The unit's counters for `R` ranks of `NB / R` banks and `LB` line bits
/// (the geometry's, checked by [`StatisticCounters::new`]), `L` lanes and
/// `E` references per clock.
#[derive(LogicBlock)]
pub struct StatisticCounters<
    const L: usize,
    const E: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
> {
    pub clock: Signal<In, Clock>,
    // The capture chain's taps (`Capture`'s outputs of the same names).
    pub bus_kind: [Signal<In, Bits<4>>; L],
    pub bus_rank: [Signal<In, Bits<2>>; L],
    pub bus_bank: [Signal<In, Bits<4>>; L],
    pub bus_addr: [Signal<In, Bits<18>>; L],
    pub bus_tick: Signal<In, Bits<64>>,
    pub ref_valid: [Signal<In, Bit>; L],
    pub ref_line: [Signal<In, Bits<48>>; L],
    pub ref_tick: Signal<In, Bits<64>>,
    pub over: Signal<In, Bits<4>>,
    pub over_tick: Signal<In, Bits<64>>,
    pub cmd_valid: [Signal<In, Bit>; E],
    pub cmd_index: [Signal<In, Bits<6>>; E],
    pub cmd_tick: Signal<In, Bits<64>>,
    pub dropped: Signal<In, Bits<3>>,
    pub dropped_tick: Signal<In, Bits<64>>,
    pub dropped_tick_valid: Signal<In, Bit>,
    /// High for one clock per closed interval with anything counted: its
    /// record is then the counters' `snapshot`s
    /// ([`StatisticCounters::record_counters`]), for the interval
    /// `[record_start, record_end)` opened with intervals of
    /// `2^record_k` ticks.
    pub record_valid: Signal<Out, Bit>,
    pub record_start: Signal<Out, Bits<64>>,
    pub record_end: Signal<Out, Bits<64>>,
    pub record_k: Signal<Out, Bits<5>>,
    /// The held records: the snapshots copied to slot `hold_slot` in a
    /// clock of `hold_write` (they hold until the next close), and the
    /// readout: counter `read_index` (format.md §5.3 order, as
    /// [`StatisticCounters::record_counters`]) of held slot `read_slot`
    /// (a clock after it is set) in `read_value` [`READ_LATENCY`] clocks
    /// later, as it was in the clock of the index; 0 past the last.
    pub hold_write: Signal<In, Bit>,
    pub hold_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub read_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub read_index: Signal<In, Bits<10>>,
    pub read_value: Signal<Out, Bits<32>>,
    /// Whether the unit counts (after the changes due at the counting
    /// stage's tick).
    pub enabled: Signal<Out, Bit>,
    /// For simulation: the open interval's end tick (its natural close)
    /// while the unit is on, before the clock's changes; 0 while off. A
    /// run that stops feeding commands waits for it to see the last
    /// record, as the golden model's end of a stream closes it there.
    pub open_end: Signal<Out, Bits<64>>,
    /// For co-simulation: every tap's delayed tick equals the counting
    /// stage's.
    pub aligned: Signal<Out, Bit>,
    /// Rank major: bank `b` of rank `r` is `banks[r * NB / R + b]`.
    pub banks: [BankStats<L>; NB],
    /// Per rank: REF, and the ticks with a command of the rank other than
    /// NOP.
    pub refresh: [IntervalCounter<L>; R],
    pub busy: [IntervalCounter<L>; R],
    pub toggles: [IntervalCounter<L>; LB],
    pub over_limit: IntervalCounter<L>,
    pub lost_fifo: IntervalCounter<L>,
    // Delay lines to the counting stage (the encoder's, where the FIFO's
    // drops are known): the bus lanes' fields, the DSMU clock's toggles per
    // line bit, the limit's count, the CU's inner commands as {valid,
    // index}, and each tap's tick.
    //
    // The bus lanes' fields stop two clocks short: the lanes are decoded
    // there, registered per bank, summarised a clock before the counting
    // stage ([`BankStats`]), and registered again.
    kind_delay: [DelayLine<Bits<4>, { BUS_DELAY - 2 }>; L],
    rank_delay: [DelayLine<Bits<2>, { BUS_DELAY - 2 }>; L],
    bank_delay: [DelayLine<Bits<4>, { BUS_DELAY - 2 }>; L],
    addr_delay: [DelayLine<Bits<18>, { BUS_DELAY - 2 }>; L],
    /// The toggles' count is registered a clock after the DSMU's (after
    /// `toggled`), so its delay line is a clock shorter.
    toggle_delay: [DelayLine<Bits<5>, { REF_DELAY - 1 }>; LB],
    over_delay: DelayLine<Bits<4>, OVER_DELAY>,
    cmd_valid_delay: [DelayLine<Bit, CMD_DELAY>; E],
    cmd_index_delay: [DelayLine<Bits<6>, CMD_DELAY>; E],
    bus_tick_delay: DelayLine<Bits<64>, BUS_DELAY>,
    ref_tick_delay: DelayLine<Bits<64>, REF_DELAY>,
    over_tick_delay: DelayLine<Bits<64>, OVER_DELAY>,
    cmd_tick_delay: DelayLine<Bits<64>, CMD_DELAY>,
    bank_high: Constant<Bits<4>>,
    /// Bit `i` of the interval's mask `2^k - 1` is set if `i < k`
    /// (`k` < 32).
    mask_bit_at: [Constant<Bits<5>>; 31],
    /// Each bank's rank and bank number, each rank's number.
    bank_rank: [Constant<Bits<2>>; NB],
    bank_index: [Constant<Bits<4>>; NB],
    rank_index: [Constant<Bits<2>>; R],
    lane_addr: [LaneAddr; L],
    /// Where the readout finds each bank and each group of the other
    /// counters (`read_index >> 3`), and each other counter (its group by
    /// the high bits, its place in the group by the low three).
    bank_at: [Constant<Bits<7>>; NB],
    other_at: [Constant<Bits<7>>; OTHER_GROUPS],
    refresh_at: [Constant<Bits<10>>; R],
    busy_at: [Constant<Bits<10>>; R],
    toggle_at: [Constant<Bits<10>>; LB],
    over_limit_at: Constant<Bits<10>>,
    lost_fifo_at: Constant<Bits<10>>,
    /// The readout's first stage: each group's counter `read_index & 7`
    /// (a bank's, or eight of the other counters'), and whether the
    /// index is in the group (at most one flag set).
    bank_read: [DFF<Bits<32>>; NB],
    other_read: [DFF<Bits<32>>; OTHER_GROUPS],
    bank_hit: [DFF<Bit>; NB],
    other_hit: [DFF<Bit>; OTHER_GROUPS],
    read: DFF<Bits<32>>,
    read_next: Signal<Local, Bits<32>>,
    /// The toggles of the DSMU's clock, per line bit: each reference
    /// against the one before, in lane order, on or off. Each lane's
    /// prior line is the last valid lane's before it (or `last_line`),
    /// selected in parallel rather than through the lanes in series
    /// (`lanes_before`, `lanes_after`: per lane, the lanes before and
    /// after it), and the lanes' toggles are registered (`toggled`)
    /// before they are counted per line bit.
    last_line: DFF<Bits<48>>,
    line_lanes: [LineLane; L],
    ref_valid_bits: Signal<Local, Bits<L>>,
    lanes_before: [Constant<Bits<L>>; L],
    lanes_after: [Constant<Bits<L>>; L],
    prior: [Signal<Local, Bits<48>>; L],
    toggled: [DFF<Bits<48>>; L],
    /// The count of `toggled`'s set bits per line bit as bit vectors (a
    /// carry-save tree of full and half adders over all the line bits at
    /// once: `ones_bit0` is each count's bit 0, ...), so that no count
    /// goes through eight adds in series.
    ones: [Signal<Local, Bits<48>>; 8],
    ones_s1: Signal<Local, Bits<48>>,
    ones_c1: Signal<Local, Bits<48>>,
    ones_s2: Signal<Local, Bits<48>>,
    ones_c2: Signal<Local, Bits<48>>,
    ones_s3: Signal<Local, Bits<48>>,
    ones_c3: Signal<Local, Bits<48>>,
    ones_c4: Signal<Local, Bits<48>>,
    ones_t: Signal<Local, Bits<48>>,
    ones_d1: Signal<Local, Bits<48>>,
    ones_d2: Signal<Local, Bits<48>>,
    ones_bit0: Signal<Local, Bits<48>>,
    ones_bit1: Signal<Local, Bits<48>>,
    ones_bit2: Signal<Local, Bits<48>>,
    ones_bit3: Signal<Local, Bits<48>>,
    toggle_count: [Signal<Local, Bits<5>>; LB],
    /// The lanes two clocks before the counting stage, bit `j` for lane
    /// `j`: the kind (ACT; RD, WR, RDA, WRA; WR, WRA; RDA, WRA; PRE; PREA;
    /// REF), a command the unit counts (not NOP, and for a command of one
    /// bank a bank of the geometry), the lanes of each bank and rank; the
    /// lanes' addresses side by side and compared pairwise.
    k_act: Signal<Local, Bits<L>>,
    k_column: Signal<Local, Bits<L>>,
    k_write: Signal<Local, Bits<L>>,
    k_auto: Signal<Local, Bits<L>>,
    k_pre: Signal<Local, Bits<L>>,
    k_prea: Signal<Local, Bits<L>>,
    k_ref: Signal<Local, Bits<L>>,
    counted: Signal<Local, Bits<L>>,
    bank_sel: [Signal<Local, Bits<L>>; NB],
    rank_sel: [Signal<Local, Bits<L>>; R],
    /// Per bank, the lanes of its rank.
    bank_rank_sel: [Signal<Local, Bits<L>>; NB],
    lane_addrs: Signal<Local, Bits<LANE_ADDR_BITS>>,
    addr_ne: Signal<Local, Bits<LANE_PAIR_BITS>>,
    /// The rank counters' lanes a clock before the counting stage (`p_`)
    /// and at it. The banks take the decode as it is and register their
    /// own copies of it ([`BankStats`]), so that no register feeds every
    /// bank's summary.
    p_ref: DFF<Bits<L>>,
    p_counted: DFF<Bits<L>>,
    p_rank_sel: [DFF<Bits<L>>; R],
    refresh_lanes: [DFF<Bits<L>>; R],
    busy_lanes: [DFF<Bits<L>>; R],
    /// The unit's state at the counting stage, before the clock's changes.
    on: DFFWithInit<Bit>,
    k: DFFWithInit<Bits<5>>,
    start: DFF<Bits<64>>,
    start_k: DFFWithInit<Bits<5>>,
    /// The net effect of the inner commands of the clock before, due at
    /// this clock's tick: one closes an open interval (STATS_OFF,
    /// STATS_INTERVAL_k), the state after them, whether any came.
    due_close: DFF<Bit>,
    due_any: DFF<Bit>,
    due_on: DFF<Bit>,
    due_k: DFF<Bits<5>>,
    cmd_is_on: [Signal<Local, Bit>; E],
    cmd_is_off: [Signal<Local, Bit>; E],
    cmd_is_interval: [Signal<Local, Bit>; E],
    cmd_valid_now: [Signal<Local, Bit>; E],
    cmd_index_now: [Signal<Local, Bits<6>>; E],
    /// The tick mask `2^k - 1` of `k`, registered with it, so that the
    /// test for the interval's natural end starts at a register.
    mask: DFFWithInit<Bits<64>>,
    mask_now: Signal<Local, Bits<64>>,
    natural: Signal<Local, Bit>,
    close: Signal<Local, Bit>,
    on_now: Signal<Local, Bit>,
    k_now: Signal<Local, Bits<5>>,
    /// The record's header, two clocks after the close (with the
    /// counters' snapshots); `closing` is the close a clock later, and
    /// `record_due` whether the record is non-empty, registered a clock
    /// before the snapshots show (from the busy ticks' `open_counted`),
    /// so that the transport's decision starts at a register.
    closed_start: DFF<Bits<64>>,
    closed_end: DFF<Bits<64>>,
    closed_k: DFF<Bits<5>>,
    header_start: DFF<Bits<64>>,
    header_end: DFF<Bits<64>>,
    header_k: DFF<Bits<5>>,
    closing: DFF<Bit>,
    record_due: DFF<Bit>,
    any_busy: Signal<Local, Bit>,
}

impl<const L: usize, const E: usize, const R: usize, const NB: usize, const LB: usize> Logic
    for StatisticCounters<L, E, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            last_line,
            on,
            k,
            mask,
            start,
            start_k,
            due_close,
            due_any,
            due_on,
            due_k,
            closed_start,
            closed_end,
            closed_k,
            header_start,
            header_end,
            header_k,
            closing,
            record_due,
            read,
            p_ref,
            p_counted
        );
        // Delay lines to the counting stage.
        for j in 0..L {
            self.kind_delay[j].clock.next = self.clock.val();
            self.rank_delay[j].clock.next = self.clock.val();
            self.bank_delay[j].clock.next = self.clock.val();
            self.addr_delay[j].clock.next = self.clock.val();
            self.kind_delay[j].d.next = self.bus_kind[j].val();
            self.rank_delay[j].d.next = self.bus_rank[j].val();
            self.bank_delay[j].d.next = self.bus_bank[j].val();
            self.addr_delay[j].d.next = self.bus_addr[j].val();
        }
        self.bus_tick_delay.clock.next = self.clock.val();
        self.ref_tick_delay.clock.next = self.clock.val();
        self.over_tick_delay.clock.next = self.clock.val();
        self.cmd_tick_delay.clock.next = self.clock.val();
        self.bus_tick_delay.d.next = self.bus_tick.val();
        self.ref_tick_delay.d.next = self.ref_tick.val();
        self.over_tick_delay.d.next = self.over_tick.val();
        self.cmd_tick_delay.d.next = self.cmd_tick.val();
        self.aligned.next = (self.bus_tick_delay.q.val() == self.dropped_tick.val())
            & (self.ref_tick_delay.q.val() == self.dropped_tick.val())
            & (self.over_tick_delay.q.val() == self.dropped_tick.val())
            & (self.cmd_tick_delay.q.val() == self.dropped_tick.val());
        // Toggles at the DSMU: each lane's prior line is the last valid
        // lane's before it (one at most matches), else the clock before's.
        self.ref_valid_bits.next = 0.into();
        for j in 0..L {
            self.ref_valid_bits.next = self
                .ref_valid_bits
                .val()
                .replace_bit(j, self.ref_valid[j].val());
        }
        for j in 0..L {
            self.prior[j].next = 0.into();
            if (self.ref_valid_bits.val() & self.lanes_before[j].val()) == 0 {
                self.prior[j].next = self.last_line.q.val();
            }
            for i in 0..L {
                if self.lanes_before[j].val().get_bit(i)
                    & self.ref_valid[i].val()
                    & ((self.ref_valid_bits.val()
                        & self.lanes_after[i].val()
                        & self.lanes_before[j].val())
                        == 0)
                {
                    self.prior[j].next = self.prior[j].val() | self.ref_line[i].val();
                }
            }
            self.line_lanes[j].prior.next = self.prior[j].val();
            self.line_lanes[j].valid.next = self.ref_valid[j].val();
            self.line_lanes[j].line.next = self.ref_line[j].val();
            self.toggled[j].clock.next = self.clock.val();
            self.toggled[j].d.next = self.line_lanes[j].toggled.val();
        }
        // The last lane's line after it (the loop's last write wins).
        for j in 0..L {
            self.last_line.d.next = self.line_lanes[j].after.val();
        }
        // A clock later, the toggles per line bit: the lanes' bits summed
        // by full adders (s, c) and half adders, every line bit at once.
        for j in 0..8 {
            self.ones[j].next = 0.into();
        }
        for j in 0..L {
            self.ones[j].next = self.toggled[j].q.val();
        }
        self.ones_s1.next = self.ones[0].val() ^ self.ones[1].val() ^ self.ones[2].val();
        self.ones_c1.next = (self.ones[0].val() & self.ones[1].val())
            | (self.ones[2].val() & (self.ones[0].val() ^ self.ones[1].val()));
        self.ones_s2.next = self.ones[3].val() ^ self.ones[4].val() ^ self.ones[5].val();
        self.ones_c2.next = (self.ones[3].val() & self.ones[4].val())
            | (self.ones[5].val() & (self.ones[3].val() ^ self.ones[4].val()));
        self.ones_s3.next = self.ones[6].val() ^ self.ones[7].val() ^ self.ones_s1.val();
        self.ones_c3.next = (self.ones[6].val() & self.ones[7].val())
            | (self.ones_s1.val() & (self.ones[6].val() ^ self.ones[7].val()));
        self.ones_bit0.next = self.ones_s2.val() ^ self.ones_s3.val();
        self.ones_c4.next = self.ones_s2.val() & self.ones_s3.val();
        // Weight 2: c1, c2, c3 and c4.
        self.ones_t.next = self.ones_c1.val() ^ self.ones_c2.val() ^ self.ones_c3.val();
        self.ones_d1.next = (self.ones_c1.val() & self.ones_c2.val())
            | (self.ones_c3.val() & (self.ones_c1.val() ^ self.ones_c2.val()));
        self.ones_bit1.next = self.ones_t.val() ^ self.ones_c4.val();
        self.ones_d2.next = self.ones_t.val() & self.ones_c4.val();
        // Weight 4: d1 and d2.
        self.ones_bit2.next = self.ones_d1.val() ^ self.ones_d2.val();
        self.ones_bit3.next = self.ones_d1.val() & self.ones_d2.val();
        for i in 0..LB {
            self.toggle_count[i].next = 0.into();
            self.toggle_count[i].next = self.toggle_count[i]
                .val()
                .replace_bit(0, self.ones_bit0.val().get_bit(i));
            self.toggle_count[i].next = self.toggle_count[i]
                .val()
                .replace_bit(1, self.ones_bit1.val().get_bit(i));
            self.toggle_count[i].next = self.toggle_count[i]
                .val()
                .replace_bit(2, self.ones_bit2.val().get_bit(i));
            self.toggle_count[i].next = self.toggle_count[i]
                .val()
                .replace_bit(3, self.ones_bit3.val().get_bit(i));
            self.toggle_delay[i].clock.next = self.clock.val();
            self.toggle_delay[i].d.next = self.toggle_count[i].val();
        }
        self.over_delay.clock.next = self.clock.val();
        self.over_delay.d.next = self.over.val();
        for e in 0..E {
            self.cmd_valid_delay[e].clock.next = self.clock.val();
            self.cmd_index_delay[e].clock.next = self.clock.val();
            self.cmd_valid_delay[e].d.next = self.cmd_valid[e].val();
            self.cmd_index_delay[e].d.next = self.cmd_index[e].val();
        }
        // The unit's state. At this clock's tick the open interval closes
        // at its natural end (a multiple of 2^k), then the inner commands
        // of the clock before apply; a second close at the same tick (an
        // interval opened and closed there) is empty.
        self.natural.next = self.on.q.val() & ((self.dropped_tick.val() & self.mask.q.val()) == 0);
        self.close.next = self.dropped_tick_valid.val()
            & self.on.q.val()
            & (self.natural.val() | self.due_close.q.val());
        self.on_now.next = self.on.q.val();
        self.k_now.next = self.k.q.val();
        if self.dropped_tick_valid.val() & self.due_any.q.val() {
            self.on_now.next = self.due_on.q.val();
            self.k_now.next = self.due_k.q.val();
        }
        // The mask of the state after the clock's changes, bit by bit.
        self.mask_now.next = 0.into();
        for i in 0..31 {
            self.mask_now.next = self
                .mask_now
                .val()
                .replace_bit(i, self.k_now.val() > self.mask_bit_at[i].val());
        }
        if self.dropped_tick_valid.val() {
            self.on.d.next = self.on_now.val();
            self.k.d.next = self.k_now.val();
            self.mask.d.next = self.mask_now.val();
            // An interval starts here if one closes (STATS_INTERVAL_k while
            // on closes one) or if the unit is off (STATS_ON or
            // STATS_INTERVAL_k then opens it here).
            if self.close.val() | !self.on.q.val() {
                self.start.d.next = self.dropped_tick.val();
                self.start_k.d.next = self.k_now.val();
            }
        }
        if self.close.val() {
            self.closed_start.d.next = self.start.q.val();
            self.closed_end.d.next = self.dropped_tick.val();
            self.closed_k.d.next = self.start_k.q.val();
        }
        // The inner commands of this clock, in slot order, due at the
        // next clock's tick.
        for e in 0..E {
            self.cmd_valid_now[e].next = self.cmd_valid_delay[e].q.val();
            self.cmd_index_now[e].next = self.cmd_index_delay[e].q.val();
            self.cmd_is_on[e].next =
                self.cmd_valid_now[e].val() & (self.cmd_index_now[e].val() == 6);
            self.cmd_is_off[e].next =
                self.cmd_valid_now[e].val() & (self.cmd_index_now[e].val() == 7);
            self.cmd_is_interval[e].next =
                self.cmd_valid_now[e].val() & (self.cmd_index_now[e].val() >= 38);
        }
        // In slot order, from the state after this clock's changes.
        self.due_on.d.next = self.on_now.val();
        self.due_k.d.next = self.k_now.val();
        self.due_close.d.next = false;
        self.due_any.d.next = false;
        for e in 0..E {
            if self.cmd_is_on[e].val() {
                self.due_on.d.next = true;
                self.due_any.d.next = true;
            }
            if self.cmd_is_off[e].val() {
                self.due_on.d.next = false;
                self.due_any.d.next = true;
                self.due_close.d.next = true;
            }
            if self.cmd_is_interval[e].val() {
                self.due_k.d.next = self.cmd_index_now[e].val().get_bits::<5>(0);
                self.due_any.d.next = true;
                self.due_close.d.next = true;
            }
        }
        if !self.dropped_tick_valid.val() {
            self.due_any.d.next = false;
            self.due_close.d.next = false;
        }
        self.enabled.next = self.on_now.val();
        self.open_end.next = 0.into();
        if self.on.q.val() {
            self.open_end.next = (self.start.q.val() | self.mask.q.val()) + 1;
        }
        // The lanes two clocks before the counting stage.
        self.k_act.next = 0.into();
        self.k_column.next = 0.into();
        self.k_write.next = 0.into();
        self.k_auto.next = 0.into();
        self.k_pre.next = 0.into();
        self.k_prea.next = 0.into();
        self.k_ref.next = 0.into();
        self.counted.next = 0.into();
        self.lane_addrs.next = 0.into();
        for j in 0..L {
            // Kinds by number (rust-hdl's Verilog takes no named constant
            // here): ACT 1, RD 2, WR 3, RDA 4, WRA 5, PRE 6, PREA 7, REF 8,
            // NOP 11.
            self.k_act.next = self
                .k_act
                .val()
                .replace_bit(j, self.kind_delay[j].q.val() == 1);
            self.k_column.next = self.k_column.val().replace_bit(
                j,
                (self.kind_delay[j].q.val() >= 2) & (self.kind_delay[j].q.val() <= 5),
            );
            self.k_write.next = self.k_write.val().replace_bit(
                j,
                (self.kind_delay[j].q.val() == 3) | (self.kind_delay[j].q.val() == 5),
            );
            self.k_auto.next = self.k_auto.val().replace_bit(
                j,
                (self.kind_delay[j].q.val() == 4) | (self.kind_delay[j].q.val() == 5),
            );
            self.k_pre.next = self
                .k_pre
                .val()
                .replace_bit(j, self.kind_delay[j].q.val() == 6);
            self.k_prea.next = self
                .k_prea
                .val()
                .replace_bit(j, self.kind_delay[j].q.val() == 7);
            self.k_ref.next = self
                .k_ref
                .val()
                .replace_bit(j, self.kind_delay[j].q.val() == 8);
            // Not NOP (nor nothing), and ACT, RD, WR, RDA, WRA, PRE (1..=6)
            // only to a bank of the geometry.
            self.counted.next = self.counted.val().replace_bit(
                j,
                (self.kind_delay[j].q.val() != 0)
                    & (self.kind_delay[j].q.val() != 11)
                    & ((self.kind_delay[j].q.val() > 6)
                        | ((self.bank_delay[j].q.val() & self.bank_high.val()) == 0)),
            );
            self.lane_addr[j].addr.next = self.addr_delay[j].q.val();
            self.lane_addrs.next = self.lane_addrs.val() | self.lane_addr[j].placed.val();
        }
        for r in 0..R {
            self.rank_sel[r].next = 0.into();
            for j in 0..L {
                self.rank_sel[r].next = self.rank_sel[r]
                    .val()
                    .replace_bit(j, self.rank_delay[j].q.val() == self.rank_index[r].val());
            }
        }
        for b in 0..NB {
            self.bank_sel[b].next = 0.into();
            for j in 0..L {
                self.bank_sel[b].next = self.bank_sel[b].val().replace_bit(
                    j,
                    (self.rank_delay[j].q.val() == self.bank_rank[b].val())
                        & (self.bank_delay[j].q.val() == self.bank_index[b].val()),
                );
            }
        }
        self.addr_ne.next = 0.into();
        for k in 0..L {
            for j in 0..L {
                self.addr_ne.next = self.addr_ne.val().replace_bit(
                    8 * k + j,
                    self.addr_delay[k].q.val() != self.addr_delay[j].q.val(),
                );
            }
        }
        // Two clocks before the counting stage: the banks and the rank
        // lanes each register twice.
        self.p_ref.d.next = self.k_ref.val();
        self.p_counted.d.next = self.counted.val();
        for b in 0..NB {
            // A bank's rank is `b / (NB / R)`: the rank's lanes, by the
            // bank's rank number.
            self.bank_rank_sel[b].next = 0.into();
            for r in 0..R {
                if self.bank_rank[b].val() == self.rank_index[r].val() {
                    self.bank_rank_sel[b].next = self.rank_sel[r].val();
                }
            }
            self.banks[b].act.next = self.k_act.val() & self.bank_sel[b].val();
            self.banks[b].column.next = self.k_column.val() & self.bank_sel[b].val();
            self.banks[b].write.next = self.k_write.val();
            self.banks[b].auto.next =
                self.k_column.val() & self.k_auto.val() & self.bank_sel[b].val();
            self.banks[b].pre.next = (self.k_pre.val() & self.bank_sel[b].val())
                | (self.k_prea.val() & self.bank_rank_sel[b].val());
            self.banks[b].refresh.next = self.k_ref.val() & self.bank_rank_sel[b].val();
            self.banks[b].addr.next = self.lane_addrs.val();
            self.banks[b].addr_ne.next = self.addr_ne.val();
        }
        for r in 0..R {
            self.p_rank_sel[r].clock.next = self.clock.val();
            self.p_rank_sel[r].d.next = self.rank_sel[r].val();
            self.refresh_lanes[r].clock.next = self.clock.val();
            self.refresh_lanes[r].d.next = self.p_ref.q.val() & self.p_rank_sel[r].q.val();
            self.busy_lanes[r].clock.next = self.clock.val();
            self.busy_lanes[r].d.next = self.p_counted.q.val() & self.p_rank_sel[r].q.val();
        }
        // Bank and rank counters.
        for b in 0..NB {
            self.banks[b].clock.next = self.clock.val();
            self.banks[b].close.next = self.close.val();
            self.banks[b].enable.next = self.on_now.val();
            self.banks[b].hold_write.next = self.hold_write.val();
            self.banks[b].hold_slot.next = self.hold_slot.val();
            self.banks[b].read_slot.next = self.read_slot.val();
        }
        for r in 0..R {
            self.refresh[r].clock.next = self.clock.val();
            self.refresh[r].close.next = self.close.val();
            self.refresh[r].enable.next = self.on_now.val();
            self.refresh[r].add.next = 0.into();
            self.refresh[r].lanes.next = self.refresh_lanes[r].q.val();
            self.busy[r].clock.next = self.clock.val();
            self.busy[r].close.next = self.close.val();
            self.busy[r].enable.next = self.on_now.val();
            self.busy[r].add.next = 0.into();
            self.busy[r].lanes.next = self.busy_lanes[r].q.val();
            self.refresh[r].hold_write.next = self.hold_write.val();
            self.refresh[r].hold_slot.next = self.hold_slot.val();
            self.refresh[r].read_slot.next = self.read_slot.val();
            self.busy[r].hold_write.next = self.hold_write.val();
            self.busy[r].hold_slot.next = self.hold_slot.val();
            self.busy[r].read_slot.next = self.read_slot.val();
        }
        for i in 0..LB {
            self.toggles[i].clock.next = self.clock.val();
            self.toggles[i].close.next = self.close.val();
            self.toggles[i].enable.next = self.on_now.val();
            self.toggles[i].add.next = self.toggle_delay[i].q.val();
            self.toggles[i].lanes.next = 0.into();
            self.toggles[i].hold_write.next = self.hold_write.val();
            self.toggles[i].hold_slot.next = self.hold_slot.val();
            self.toggles[i].read_slot.next = self.read_slot.val();
        }
        self.over_limit.clock.next = self.clock.val();
        self.over_limit.close.next = self.close.val();
        self.over_limit.enable.next = self.on_now.val();
        self.over_limit.add.next = bit_cast::<5, 4>(self.over_delay.q.val());
        self.over_limit.lanes.next = 0.into();
        self.over_limit.hold_write.next = self.hold_write.val();
        self.over_limit.hold_slot.next = self.hold_slot.val();
        self.over_limit.read_slot.next = self.read_slot.val();
        self.lost_fifo.clock.next = self.clock.val();
        self.lost_fifo.close.next = self.close.val();
        self.lost_fifo.enable.next = self.on_now.val();
        self.lost_fifo.add.next = bit_cast::<5, 3>(self.dropped.val());
        self.lost_fifo.lanes.next = 0.into();
        self.lost_fifo.hold_write.next = self.hold_write.val();
        self.lost_fifo.hold_slot.next = self.hold_slot.val();
        self.lost_fifo.read_slot.next = self.read_slot.val();
        // The record, two clocks after the close. Everything the unit counts
        // comes from a command it counts as busy (a reference is a RD/WR
        // of a rank and bank of the geometry, and so is every drop), so an
        // interval with no busy tick is empty.
        self.any_busy.next = false;
        for r in 0..R {
            if self.busy[r].open_counted.val() {
                self.any_busy.next = true;
            }
        }
        self.header_start.d.next = self.closed_start.q.val();
        self.header_end.d.next = self.closed_end.q.val();
        self.header_k.d.next = self.closed_k.q.val();
        self.closing.d.next = self.close.val();
        // The busy counters take the close a clock after `close` too:
        // their snapshots are then their open totals of that clock.
        self.record_due.d.next = self.closing.q.val() & self.any_busy.val();
        self.record_valid.next = self.record_due.q.val();
        self.record_start.next = self.header_start.q.val();
        self.record_end.next = self.header_end.q.val();
        self.record_k.next = self.header_k.q.val();
        // The readout, first stage: each bank's counter by the index's
        // low bits, and each group of the other counters' likewise: a
        // counter is in group `g` if its place's high bits are the
        // group's (constants, so synthesis keeps a group's eight tests
        // only); one test matches, so their order is free.
        for b in 0..NB {
            self.banks[b].read_sel.next = self.read_index.val().get_bits::<3>(0);
            self.bank_read[b].clock.next = self.clock.val();
            self.bank_read[b].d.next = self.banks[b].read_value.val();
            self.bank_hit[b].clock.next = self.clock.val();
            self.bank_hit[b].d.next =
                self.read_index.val().get_bits::<7>(3) == self.bank_at[b].val();
        }
        for g in 0..OTHER_GROUPS {
            self.other_read[g].clock.next = self.clock.val();
            self.other_read[g].d.next = 0.into();
            self.other_hit[g].clock.next = self.clock.val();
            self.other_hit[g].d.next =
                self.read_index.val().get_bits::<7>(3) == self.other_at[g].val();
            for r in 0..R {
                if (self.refresh_at[r].val().get_bits::<7>(3) == self.other_at[g].val())
                    & (self.read_index.val().get_bits::<3>(0)
                        == self.refresh_at[r].val().get_bits::<3>(0))
                {
                    self.other_read[g].d.next = self.refresh[r].held.val();
                }
                if (self.busy_at[r].val().get_bits::<7>(3) == self.other_at[g].val())
                    & (self.read_index.val().get_bits::<3>(0)
                        == self.busy_at[r].val().get_bits::<3>(0))
                {
                    self.other_read[g].d.next = self.busy[r].held.val();
                }
            }
            for i in 0..LB {
                if (self.toggle_at[i].val().get_bits::<7>(3) == self.other_at[g].val())
                    & (self.read_index.val().get_bits::<3>(0)
                        == self.toggle_at[i].val().get_bits::<3>(0))
                {
                    self.other_read[g].d.next = self.toggles[i].held.val();
                }
            }
            if (self.over_limit_at.val().get_bits::<7>(3) == self.other_at[g].val())
                & (self.read_index.val().get_bits::<3>(0)
                    == self.over_limit_at.val().get_bits::<3>(0))
            {
                self.other_read[g].d.next = self.over_limit.held.val();
            }
            if (self.lost_fifo_at.val().get_bits::<7>(3) == self.other_at[g].val())
                & (self.read_index.val().get_bits::<3>(0)
                    == self.lost_fifo_at.val().get_bits::<3>(0))
            {
                self.other_read[g].d.next = self.lost_fifo.held.val();
            }
        }
        // Second stage: the group of the index (0 past the last), an OR
        // of the flagged groups rather than a chain of choices.
        self.read_next.next = 0.into();
        for b in 0..NB {
            if self.bank_hit[b].q.val() {
                self.read_next.next = self.read_next.val() | self.bank_read[b].q.val();
            }
        }
        for g in 0..OTHER_GROUPS {
            if self.other_hit[g].q.val() {
                self.read_next.next = self.read_next.val() | self.other_read[g].q.val();
            }
        }
        self.read.d.next = self.read_next.val();
        self.read_value.next = self.read.q.val();
    }
}
