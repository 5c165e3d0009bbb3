//! The Statistic Unit's counters (board.md "Statistic Unit", format.md
//! §5.3): per interval of `2^k` ticks, per rank and bank RD, WR, ACT, PRE,
//! row hits, misses and conflicts and unused activations; per rank REF and
//! busy ticks; per line-index bit the toggles; the references the limit
//! dropped and the events the FIFO had no room for. Fed by the capture
//! chain's taps ([`crate::capture::Capture`]), so it counts every command
//! whether or not its reference reached the trace.
//!
//! What this block is, and is not, of board.md's unit: the counters of a
//! unit that is on from reset with a fixed `k` (a build parameter), their
//! intervals, and the record of each non-empty interval
//! ([`StatisticCounters::record_valid`]). Not here: the inner commands
//! STATS_ON, STATS_OFF and STATS_INTERVAL_k, the statistics packets, their
//! credit and their share of the ports; no board top instantiates it.
//!
//! Stages. The counters of each group count at the stage of the chain
//! where its events are known, each with that stage's tick: bank and rank
//! counters at the DCBU, toggles at the DSMU, OVER_LIMIT at the limit,
//! LOST_FIFO at the encoder. Intervals of `2^k >= 64` ticks start on a
//! clock's tick, so a group closes an interval in the clock whose tick is
//! a multiple of `2^k` (that clock belongs to the next interval), keeping
//! the closed counts in its snapshot. The record is whole when the last
//! group (LOST_FIFO) closes, [`STAGE_GAP`] clocks after the first: an
//! interval must last at least that many clocks, so that no snapshot is
//! overwritten before the record is read.
//!
//! No counter saturates: an interval has at most `2^31` ticks, and no
//! counter grows by more than one per tick (a tick holds one command, and
//! the limit and the FIFO drop at most one reference or event per command).

use rust_hdl::prelude::*;

use crate::dsmu::LineGeometry;

/// Clocks from the DCBU's taps to the encoder's (DSMU 2, limit 1, CU 1,
/// encoder 4).
pub const STAGE_GAP: u64 = 8;

/// Per rank and bank, in format.md §5.3 order.
pub const BANK_COUNTERS: usize = 8;
pub const RD: usize = 0;
pub const WR: usize = 1;
pub const ACT: usize = 2;
pub const PRE: usize = 3;
pub const HIT: usize = 4;
pub const MISS: usize = 5;
pub const CONFLICT: usize = 6;
pub const UNUSED_ACT: usize = 7;

/// One counter of the open interval and its snapshot of the last closed
/// one. Its inputs are registered first, so the adder sees no logic of
/// the stage that feeds it; `closing` says the snapshot is new in this
/// clock, `count` is then still the count before the close's clock.
#[derive(LogicBlock)]
pub struct IntervalCounter<const L: usize> {
    pub clock: Signal<In, Clock>,
    /// Per lane, an event this clock.
    pub lanes: [Signal<In, Bit>; L],
    /// Events this clock besides the lanes'.
    pub add: Signal<In, Bits<5>>,
    /// This clock opens the next interval (its events belong to it).
    pub close: Signal<In, Bit>,
    pub count: Signal<Out, Bits<32>>,
    pub snapshot: Signal<Out, Bits<32>>,
    pub closing: Signal<Out, Bit>,
    r_lanes: [DFF<Bit>; L],
    r_add: DFF<Bits<5>>,
    r_close: DFF<Bit>,
    sum: [Signal<Local, Bits<5>>; L],
    total: DFF<Bits<32>>,
    snap: DFF<Bits<32>>,
}

impl<const L: usize> Default for IntervalCounter<L> {
    fn default() -> Self {
        assert!((1..=8).contains(&L), "1 <= L <= 8");
        Self {
            clock: Default::default(),
            lanes: std::array::from_fn(|_| Default::default()),
            add: Default::default(),
            close: Default::default(),
            count: Default::default(),
            snapshot: Default::default(),
            closing: Default::default(),
            r_lanes: std::array::from_fn(|_| Default::default()),
            r_add: Default::default(),
            r_close: Default::default(),
            sum: std::array::from_fn(|_| Default::default()),
            total: Default::default(),
            snap: Default::default(),
        }
    }
}

impl<const L: usize> Logic for IntervalCounter<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r_add, r_close, total, snap);
        for j in 0..L {
            self.r_lanes[j].clock.next = self.clock.val();
            self.r_lanes[j].d.next = self.lanes[j].val();
        }
        self.r_add.d.next = self.add.val();
        self.r_close.d.next = self.close.val();
        self.sum[0].next = self.r_add.q.val();
        if self.r_lanes[0].q.val() {
            self.sum[0].next = self.r_add.q.val() + 1;
        }
        for j in 1..L {
            self.sum[j].next = self.sum[j - 1].val();
            if self.r_lanes[j].q.val() {
                self.sum[j].next = self.sum[j - 1].val() + 1;
            }
        }
        if self.r_close.q.val() {
            self.total.d.next = bit_cast::<32, 5>(self.sum[L - 1].val());
            self.snap.d.next = self.total.q.val();
        } else {
            self.total.d.next = self.total.q.val() + bit_cast::<32, 5>(self.sum[L - 1].val());
        }
        self.count.next = self.total.q.val();
        self.snapshot.next = self.snap.q.val();
        self.closing.next = self.r_close.q.val();
    }
}

/// One bank's counters and what the bus shows of it: open or idle, the
/// open row, a column command since the ACT, the row an explicit PRE/PREA
/// closed (forgotten at the next ACT or REF), and whether the first
/// column command after the ACT is a conflict. The lanes of a clock apply
/// in order, each to the state the one before left.
#[derive(LogicBlock)]
pub struct BankStats<const L: usize> {
    pub clock: Signal<In, Clock>,
    /// Per lane: the command's kind (a `dcbu::kind` code, before the
    /// geometry check: ACT 1, RD 2, WR 3, RDA 4, WRA 5, PRE 6, PREA 7,
    /// REF 8, NOP 11), rank, bank and A[17:0].
    pub kind: [Signal<In, Bits<4>>; L],
    pub rank: [Signal<In, Bits<2>>; L],
    pub bank: [Signal<In, Bits<4>>; L],
    pub addr: [Signal<In, Bits<18>>; L],
    pub close: Signal<In, Bit>,
    /// In format.md §5.3 order: RD, WR, ACT, PRE, HIT, MISS, CONFLICT,
    /// UNUSED_ACT.
    pub counters: [IntervalCounter<L>; BANK_COUNTERS],
    my_rank: Constant<Bits<2>>,
    my_bank: Constant<Bits<4>>,
    open: DFF<Bit>,
    used: DFF<Bit>,
    conflict: DFF<Bit>,
    closed_valid: DFF<Bit>,
    row: DFF<Bits<18>>,
    closed_row: DFF<Bits<18>>,
    /// Per lane: the command concerns this bank (PREA and REF: its rank).
    act: [Signal<Local, Bit>; L],
    column: [Signal<Local, Bit>; L],
    write: [Signal<Local, Bit>; L],
    auto: [Signal<Local, Bit>; L],
    pre: [Signal<Local, Bit>; L],
    refresh: [Signal<Local, Bit>; L],
    /// The state before and after each lane.
    open_in: [Signal<Local, Bit>; L],
    used_in: [Signal<Local, Bit>; L],
    conflict_in: [Signal<Local, Bit>; L],
    closed_valid_in: [Signal<Local, Bit>; L],
    row_in: [Signal<Local, Bits<18>>; L],
    closed_row_in: [Signal<Local, Bits<18>>; L],
    open_out: [Signal<Local, Bit>; L],
    used_out: [Signal<Local, Bit>; L],
    conflict_out: [Signal<Local, Bit>; L],
    closed_valid_out: [Signal<Local, Bit>; L],
    row_out: [Signal<Local, Bits<18>>; L],
    closed_row_out: [Signal<Local, Bits<18>>; L],
}

impl<const L: usize> BankStats<L> {
    pub fn new(rank: u64, bank: u64) -> Self {
        Self {
            clock: Default::default(),
            kind: std::array::from_fn(|_| Default::default()),
            rank: std::array::from_fn(|_| Default::default()),
            bank: std::array::from_fn(|_| Default::default()),
            addr: std::array::from_fn(|_| Default::default()),
            close: Default::default(),
            counters: std::array::from_fn(|_| Default::default()),
            my_rank: Constant::new(rank.to_bits()),
            my_bank: Constant::new(bank.to_bits()),
            open: Default::default(),
            used: Default::default(),
            conflict: Default::default(),
            closed_valid: Default::default(),
            row: Default::default(),
            closed_row: Default::default(),
            act: std::array::from_fn(|_| Default::default()),
            column: std::array::from_fn(|_| Default::default()),
            write: std::array::from_fn(|_| Default::default()),
            auto: std::array::from_fn(|_| Default::default()),
            pre: std::array::from_fn(|_| Default::default()),
            refresh: std::array::from_fn(|_| Default::default()),
            open_in: std::array::from_fn(|_| Default::default()),
            used_in: std::array::from_fn(|_| Default::default()),
            conflict_in: std::array::from_fn(|_| Default::default()),
            closed_valid_in: std::array::from_fn(|_| Default::default()),
            row_in: std::array::from_fn(|_| Default::default()),
            closed_row_in: std::array::from_fn(|_| Default::default()),
            open_out: std::array::from_fn(|_| Default::default()),
            used_out: std::array::from_fn(|_| Default::default()),
            conflict_out: std::array::from_fn(|_| Default::default()),
            closed_valid_out: std::array::from_fn(|_| Default::default()),
            row_out: std::array::from_fn(|_| Default::default()),
            closed_row_out: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for BankStats<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, open, used, conflict, closed_valid, row, closed_row);
        for c in 0..BANK_COUNTERS {
            self.counters[c].clock.next = self.clock.val();
            self.counters[c].close.next = self.close.val();
            self.counters[c].add.next = 0.into();
        }
        for j in 0..L {
            self.act[j].next = false;
            self.column[j].next = false;
            self.write[j].next = false;
            self.auto[j].next = false;
            self.pre[j].next = false;
            self.refresh[j].next = false;
            if self.rank[j].val() == self.my_rank.val() {
                if self.bank[j].val() == self.my_bank.val() {
                    if self.kind[j].val() == 1 {
                        self.act[j].next = true;
                    }
                    if (self.kind[j].val() == 2) | (self.kind[j].val() == 3) {
                        self.column[j].next = true;
                    }
                    if (self.kind[j].val() == 4) | (self.kind[j].val() == 5) {
                        self.column[j].next = true;
                        self.auto[j].next = true;
                    }
                    if (self.kind[j].val() == 3) | (self.kind[j].val() == 5) {
                        self.write[j].next = true;
                    }
                    if self.kind[j].val() == 6 {
                        self.pre[j].next = true;
                    }
                }
                if self.kind[j].val() == 7 {
                    self.pre[j].next = true;
                }
                if self.kind[j].val() == 8 {
                    self.refresh[j].next = true;
                }
            }
        }
        self.open_in[0].next = self.open.q.val();
        self.used_in[0].next = self.used.q.val();
        self.conflict_in[0].next = self.conflict.q.val();
        self.closed_valid_in[0].next = self.closed_valid.q.val();
        self.row_in[0].next = self.row.q.val();
        self.closed_row_in[0].next = self.closed_row.q.val();
        for j in 1..L {
            self.open_in[j].next = self.open_out[j - 1].val();
            self.used_in[j].next = self.used_out[j - 1].val();
            self.conflict_in[j].next = self.conflict_out[j - 1].val();
            self.closed_valid_in[j].next = self.closed_valid_out[j - 1].val();
            self.row_in[j].next = self.row_out[j - 1].val();
            self.closed_row_in[j].next = self.closed_row_out[j - 1].val();
        }
        for j in 0..L {
            self.open_out[j].next = self.open_in[j].val();
            self.used_out[j].next = self.used_in[j].val();
            self.conflict_out[j].next = self.conflict_in[j].val();
            self.closed_valid_out[j].next = self.closed_valid_in[j].val();
            self.row_out[j].next = self.row_in[j].val();
            self.closed_row_out[j].next = self.closed_row_in[j].val();
            self.counters[RD].lanes[j].next = self.column[j].val() & !self.write[j].val();
            self.counters[WR].lanes[j].next = self.column[j].val() & self.write[j].val();
            self.counters[ACT].lanes[j].next = self.act[j].val();
            self.counters[PRE].lanes[j].next =
                self.pre[j].val() | (self.column[j].val() & self.auto[j].val());
            self.counters[HIT].lanes[j].next =
                self.column[j].val() & self.open_in[j].val() & self.used_in[j].val();
            self.counters[CONFLICT].lanes[j].next = self.column[j].val()
                & self.open_in[j].val()
                & !self.used_in[j].val()
                & self.conflict_in[j].val();
            self.counters[MISS].lanes[j].next = self.column[j].val()
                & !(self.open_in[j].val() & (self.used_in[j].val() | self.conflict_in[j].val()));
            self.counters[UNUSED_ACT].lanes[j].next =
                self.pre[j].val() & self.open_in[j].val() & !self.used_in[j].val();
            if self.act[j].val() {
                self.conflict_out[j].next = self.closed_valid_in[j].val()
                    & (self.closed_row_in[j].val() != self.addr[j].val());
                self.closed_valid_out[j].next = false;
                self.open_out[j].next = true;
                self.row_out[j].next = self.addr[j].val();
                self.used_out[j].next = false;
            }
            if self.column[j].val() {
                self.used_out[j].next = true;
                if self.auto[j].val() {
                    self.open_out[j].next = false;
                    self.closed_valid_out[j].next = false;
                }
            }
            if self.pre[j].val() & self.open_in[j].val() {
                self.open_out[j].next = false;
                self.closed_valid_out[j].next = true;
                self.closed_row_out[j].next = self.row_in[j].val();
            }
            if self.refresh[j].val() {
                self.closed_valid_out[j].next = false;
            }
        }
        self.open.d.next = self.open_out[L - 1].val();
        self.used.d.next = self.used_out[L - 1].val();
        self.conflict.d.next = self.conflict_out[L - 1].val();
        self.closed_valid.d.next = self.closed_valid_out[L - 1].val();
        self.row.d.next = self.row_out[L - 1].val();
        self.closed_row.d.next = self.closed_row_out[L - 1].val();
    }
}

/// Per rank: REF, and the ticks with a command of the rank other than NOP.
#[derive(LogicBlock)]
pub struct RankStats<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub rank: [Signal<In, Bits<2>>; L],
    pub kind: [Signal<In, Bits<4>>; L],
    /// Per lane: a command the unit counts (a command, not NOP, and for
    /// a command of one bank, a bank of the geometry).
    pub counted: [Signal<In, Bit>; L],
    pub close: Signal<In, Bit>,
    pub refresh: IntervalCounter<L>,
    pub busy: IntervalCounter<L>,
    my_rank: Constant<Bits<2>>,
}

impl<const L: usize> RankStats<L> {
    pub fn new(rank: u64) -> Self {
        Self {
            clock: Default::default(),
            rank: std::array::from_fn(|_| Default::default()),
            kind: std::array::from_fn(|_| Default::default()),
            counted: std::array::from_fn(|_| Default::default()),
            close: Default::default(),
            refresh: Default::default(),
            busy: Default::default(),
            my_rank: Constant::new(rank.to_bits()),
        }
    }
}

impl<const L: usize> Logic for RankStats<L> {
    #[hdl_gen]
    fn update(&mut self) {
        self.refresh.clock.next = self.clock.val();
        self.busy.clock.next = self.clock.val();
        self.refresh.close.next = self.close.val();
        self.busy.close.next = self.close.val();
        self.refresh.add.next = 0.into();
        self.busy.add.next = 0.into();
        for j in 0..L {
            self.refresh.lanes[j].next = (self.rank[j].val() == self.my_rank.val())
                & (self.kind[j].val() == 8);
            self.busy.lanes[j].next =
                (self.rank[j].val() == self.my_rank.val()) & self.counted[j].val();
        }
    }
}

/// The unit's counters for `R` ranks of `NB / R` banks and `LB` line bits
/// (the geometry's, checked by [`StatisticCounters::new`]); `L` lanes.
#[derive(LogicBlock)]
pub struct StatisticCounters<const L: usize, const R: usize, const NB: usize, const LB: usize> {
    pub clock: Signal<In, Clock>,
    // The capture chain's taps (`Capture`'s outputs of the same names).
    pub bus_kind: [Signal<In, Bits<4>>; L],
    pub bus_rank: [Signal<In, Bits<2>>; L],
    pub bus_bank: [Signal<In, Bits<4>>; L],
    pub bus_addr: [Signal<In, Bits<18>>; L],
    pub bus_tick: Signal<In, Bits<64>>,
    pub bus_tick_valid: Signal<In, Bit>,
    pub ref_valid: [Signal<In, Bit>; L],
    pub ref_line: [Signal<In, Bits<48>>; L],
    pub ref_tick: Signal<In, Bits<64>>,
    pub ref_tick_valid: Signal<In, Bit>,
    pub over: Signal<In, Bits<4>>,
    pub over_tick: Signal<In, Bits<64>>,
    pub over_tick_valid: Signal<In, Bit>,
    pub dropped: Signal<In, Bits<3>>,
    pub dropped_tick: Signal<In, Bits<64>>,
    pub dropped_tick_valid: Signal<In, Bit>,
    /// High for one clock per closed interval with anything counted: its
    /// record is then the banks' and ranks' `snapshot`s, the toggles' and
    /// `over_limit`'s `snapshot`s and `lost_fifo`'s `count`, for the
    /// interval `[record_end - 2^k, record_end)`.
    pub record_valid: Signal<Out, Bit>,
    pub record_end: Signal<Out, Bits<64>>,
    /// Rank major: bank `b` of rank `r` is `banks[r * NB / R + b]`.
    pub banks: [BankStats<L>; NB],
    pub ranks: [RankStats<L>; R],
    pub toggles: [IntervalCounter<L>; LB],
    pub over_limit: IntervalCounter<L>,
    pub lost_fifo: IntervalCounter<L>,
    /// `2^k - 1`: a stage's tick with none of these bits set opens an
    /// interval.
    interval_mask: Constant<Bits<64>>,
    bank_high: Constant<Bits<4>>,
    bus_close: Signal<Local, Bit>,
    ref_close: Signal<Local, Bit>,
    over_close: Signal<Local, Bit>,
    drop_close: Signal<Local, Bit>,
    /// The lost counter's tick, a clock later, with its `closing`.
    drop_tick_held: DFF<Bits<64>>,
    counted: [Signal<Local, Bit>; L],
    /// The line of the last reference, before and after each lane.
    last_line: DFF<Bits<48>>,
    line_in: [Signal<Local, Bits<48>>; L],
    line_out: [Signal<Local, Bits<48>>; L],
    toggled: [Signal<Local, Bits<48>>; L],
    any_busy: Signal<Local, Bit>,
}

impl<const L: usize, const R: usize, const NB: usize, const LB: usize>
    StatisticCounters<L, R, NB, LB>
{
    /// Counters for `geometry` at intervals of `2^interval_log2` ticks.
    pub fn new(geometry: LineGeometry, interval_log2: u32) -> Self {
        let g = geometry.checked();
        assert_eq!(R, 1 << g.rank_bits, "R: the geometry's ranks");
        assert_eq!(NB, R << g.bank_bits, "NB: the geometry's banks in all ranks");
        let line_bits = g.rank_bits + g.row_bits + g.bank_bits + g.col_line_bits;
        assert_eq!(LB, line_bits as usize, "LB: the geometry's line bits");
        assert!(
            (6..=31).contains(&interval_log2),
            "interval 2^k ticks, k in 6..=31"
        );
        assert!(
            (1u64 << interval_log2) / L as u64 >= STAGE_GAP,
            "an interval must last at least STAGE_GAP clocks"
        );
        let banks_per_rank = NB / R;
        Self {
            clock: Default::default(),
            bus_kind: std::array::from_fn(|_| Default::default()),
            bus_rank: std::array::from_fn(|_| Default::default()),
            bus_bank: std::array::from_fn(|_| Default::default()),
            bus_addr: std::array::from_fn(|_| Default::default()),
            bus_tick: Default::default(),
            bus_tick_valid: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_tick: Default::default(),
            ref_tick_valid: Default::default(),
            over: Default::default(),
            over_tick: Default::default(),
            over_tick_valid: Default::default(),
            dropped: Default::default(),
            dropped_tick: Default::default(),
            dropped_tick_valid: Default::default(),
            record_valid: Default::default(),
            record_end: Default::default(),
            banks: std::array::from_fn(|i| {
                BankStats::new((i / banks_per_rank) as u64, (i % banks_per_rank) as u64)
            }),
            ranks: std::array::from_fn(|r| RankStats::new(r as u64)),
            toggles: std::array::from_fn(|_| Default::default()),
            over_limit: Default::default(),
            lost_fifo: Default::default(),
            interval_mask: Constant::new(((1u64 << interval_log2) - 1).to_bits()),
            bank_high: Constant::new((0xFu64 & !((1u64 << g.bank_bits) - 1)).to_bits()),
            bus_close: Default::default(),
            ref_close: Default::default(),
            over_close: Default::default(),
            drop_close: Default::default(),
            drop_tick_held: Default::default(),
            counted: std::array::from_fn(|_| Default::default()),
            last_line: Default::default(),
            line_in: std::array::from_fn(|_| Default::default()),
            line_out: std::array::from_fn(|_| Default::default()),
            toggled: std::array::from_fn(|_| Default::default()),
            any_busy: Default::default(),
        }
    }
}

impl<const L: usize, const R: usize, const NB: usize, const LB: usize> Logic
    for StatisticCounters<L, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, drop_tick_held, last_line);
        self.bus_close.next =
            self.bus_tick_valid.val() & ((self.bus_tick.val() & self.interval_mask.val()) == 0);
        self.ref_close.next =
            self.ref_tick_valid.val() & ((self.ref_tick.val() & self.interval_mask.val()) == 0);
        self.over_close.next =
            self.over_tick_valid.val() & ((self.over_tick.val() & self.interval_mask.val()) == 0);
        self.drop_close.next = self.dropped_tick_valid.val()
            & ((self.dropped_tick.val() & self.interval_mask.val()) == 0);
        // Bank and rank counters, at the DCBU.
        for j in 0..L {
            self.counted[j].next = (self.bus_kind[j].val() != 0)
                & (self.bus_kind[j].val() != 11)
                & !(((self.bus_kind[j].val() == 1)
                    | (self.bus_kind[j].val() == 2)
                    | (self.bus_kind[j].val() == 3)
                    | (self.bus_kind[j].val() == 4)
                    | (self.bus_kind[j].val() == 5)
                    | (self.bus_kind[j].val() == 6))
                    & ((self.bus_bank[j].val() & self.bank_high.val()) != 0));
        }
        for b in 0..NB {
            self.banks[b].clock.next = self.clock.val();
            self.banks[b].close.next = self.bus_close.val();
            for j in 0..L {
                self.banks[b].kind[j].next = self.bus_kind[j].val();
                self.banks[b].rank[j].next = self.bus_rank[j].val();
                self.banks[b].bank[j].next = self.bus_bank[j].val();
                self.banks[b].addr[j].next = self.bus_addr[j].val();
            }
        }
        for r in 0..R {
            self.ranks[r].clock.next = self.clock.val();
            self.ranks[r].close.next = self.bus_close.val();
            for j in 0..L {
                self.ranks[r].kind[j].next = self.bus_kind[j].val();
                self.ranks[r].rank[j].next = self.bus_rank[j].val();
                self.ranks[r].counted[j].next = self.counted[j].val();
            }
        }
        // Toggles, at the DSMU: each reference against the one before,
        // in lane order.
        self.line_in[0].next = self.last_line.q.val();
        for j in 1..L {
            self.line_in[j].next = self.line_out[j - 1].val();
        }
        for j in 0..L {
            self.line_out[j].next = self.line_in[j].val();
            self.toggled[j].next = 0.into();
            if self.ref_valid[j].val() {
                self.line_out[j].next = self.ref_line[j].val();
                self.toggled[j].next = self.ref_line[j].val() ^ self.line_in[j].val();
            }
        }
        self.last_line.d.next = self.line_out[L - 1].val();
        for i in 0..LB {
            self.toggles[i].clock.next = self.clock.val();
            self.toggles[i].close.next = self.ref_close.val();
            self.toggles[i].add.next = 0.into();
            for j in 0..L {
                self.toggles[i].lanes[j].next = self.toggled[j].val().get_bit(i);
            }
        }
        // The limit's and the FIFO's drops, at their stages.
        self.over_limit.clock.next = self.clock.val();
        self.over_limit.close.next = self.over_close.val();
        self.over_limit.add.next = bit_cast::<5, 4>(self.over.val());
        self.lost_fifo.clock.next = self.clock.val();
        self.lost_fifo.close.next = self.drop_close.val();
        self.lost_fifo.add.next = bit_cast::<5, 3>(self.dropped.val());
        for j in 0..L {
            self.over_limit.lanes[j].next = false;
            self.lost_fifo.lanes[j].next = false;
        }
        // The record, when the last group closes. Everything the unit
        // counts comes from a command it counts as busy (a reference is a
        // RD/WR of a rank and bank of the geometry, and so is every drop),
        // so an interval with no busy tick is empty.
        self.drop_tick_held.d.next = self.dropped_tick.val();
        self.any_busy.next = false;
        for r in 0..R {
            if self.ranks[r].busy.snapshot.val() != 0 {
                self.any_busy.next = true;
            }
        }
        self.record_valid.next = self.lost_fifo.closing.val() & self.any_busy.val();
        self.record_end.next = self.drop_tick_held.q.val();
    }
}
