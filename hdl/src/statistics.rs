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
//! non-empty interval ([`StatisticCounters::record_valid`], a clock long).
//! Not here: the statistics packets (format.md §5.3), their credit and
//! their share of the ports, the trace drain's smaller share; no board top
//! instantiates the block yet, and its generated Verilog is not valid yet
//! (rust-hdl 0.46 does not generate an array of sub-blocks with array
//! ports, `BankStats::counters[c].lanes[j]`): it runs in RustHDL's
//! simulator only.
//!
//! Stages. The taps come from stages of the chain a few clocks apart; the
//! unit delays them all to the encoder's stage, where the last of them
//! (the events the FIFO had no room for) is known, and counts there with
//! that stage's tick: the bus lanes ([`BUS_DELAY`] clocks), the toggles
//! of each DSMU clock per line bit ([`REF_DELAY`]), the limit's count
//! ([`OVER_DELAY`]) and the CU's inner commands ([`CMD_DELAY`]). The bank
//! states and the last line follow the bus whether the unit is on or off.
//!
//! No counter saturates: an interval has at most `2^31` ticks, and no
//! counter grows by more than one per tick (a tick holds one command, and
//! the limit and the FIFO drop at most one reference or event per command).

use rust_hdl::prelude::*;

use crate::dsmu::LineGeometry;

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
    /// The unit counts this clock's events.
    pub enable: Signal<In, Bit>,
    pub count: Signal<Out, Bits<32>>,
    pub snapshot: Signal<Out, Bits<32>>,
    pub closing: Signal<Out, Bit>,
    r_lanes: [DFF<Bit>; L],
    r_add: DFF<Bits<5>>,
    r_close: DFF<Bit>,
    r_enable: DFF<Bit>,
    sum: [Signal<Local, Bits<5>>; L],
    inc: Signal<Local, Bits<5>>,
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
            enable: Default::default(),
            count: Default::default(),
            snapshot: Default::default(),
            closing: Default::default(),
            r_lanes: std::array::from_fn(|_| Default::default()),
            r_add: Default::default(),
            r_close: Default::default(),
            r_enable: Default::default(),
            sum: std::array::from_fn(|_| Default::default()),
            inc: Default::default(),
            total: Default::default(),
            snap: Default::default(),
        }
    }
}

impl<const L: usize> Logic for IntervalCounter<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r_add, r_close, r_enable, total, snap);
        for j in 0..L {
            self.r_lanes[j].clock.next = self.clock.val();
            self.r_lanes[j].d.next = self.lanes[j].val();
        }
        self.r_add.d.next = self.add.val();
        self.r_close.d.next = self.close.val();
        self.r_enable.d.next = self.enable.val();
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
        self.inc.next = 0.into();
        if self.r_enable.q.val() {
            // The last lane's sum (rust-hdl's Verilog takes no `L - 1`
            // index: the loop's last write wins).
            for j in 0..L {
                self.inc.next = self.sum[j].val();
            }
        }
        if self.r_close.q.val() {
            self.total.d.next = bit_cast::<32, 5>(self.inc.val());
            self.snap.d.next = self.total.q.val();
        } else {
            self.total.d.next = self.total.q.val() + bit_cast::<32, 5>(self.inc.val());
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
    pub enable: Signal<In, Bit>,
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
    /// One lane each, in order: the state after lane `j` goes to lane
    /// `j + 1` (submodules, so that no block reads a signal it writes
    /// later).
    lanes: [BankLane; L],
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
            enable: Default::default(),
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
            lanes: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for BankStats<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            open,
            used,
            conflict,
            closed_valid,
            row,
            closed_row
        );
        for c in 0..BANK_COUNTERS {
            self.counters[c].clock.next = self.clock.val();
            self.counters[c].close.next = self.close.val();
            self.counters[c].enable.next = self.enable.val();
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
        self.lanes[0].open_in.next = self.open.q.val();
        self.lanes[0].used_in.next = self.used.q.val();
        self.lanes[0].conflict_in.next = self.conflict.q.val();
        self.lanes[0].closed_valid_in.next = self.closed_valid.q.val();
        self.lanes[0].row_in.next = self.row.q.val();
        self.lanes[0].closed_row_in.next = self.closed_row.q.val();
        for j in 1..L {
            self.lanes[j].open_in.next = self.lanes[j - 1].open_out.val();
            self.lanes[j].used_in.next = self.lanes[j - 1].used_out.val();
            self.lanes[j].conflict_in.next = self.lanes[j - 1].conflict_out.val();
            self.lanes[j].closed_valid_in.next = self.lanes[j - 1].closed_valid_out.val();
            self.lanes[j].row_in.next = self.lanes[j - 1].row_out.val();
            self.lanes[j].closed_row_in.next = self.lanes[j - 1].closed_row_out.val();
        }
        // Counters by number (rust-hdl's Verilog takes no named constant
        // in an index): RD 0, WR 1, ACT 2, PRE 3, HIT 4, MISS 5, CONFLICT 6,
        // UNUSED_ACT 7.
        for j in 0..L {
            self.lanes[j].act.next = self.act[j].val();
            self.lanes[j].column.next = self.column[j].val();
            self.lanes[j].auto.next = self.auto[j].val();
            self.lanes[j].pre.next = self.pre[j].val();
            self.lanes[j].refresh.next = self.refresh[j].val();
            self.lanes[j].addr.next = self.addr[j].val();
            self.counters[0].lanes[j].next = self.column[j].val() & !self.write[j].val();
            self.counters[1].lanes[j].next = self.column[j].val() & self.write[j].val();
            self.counters[2].lanes[j].next = self.act[j].val();
            self.counters[3].lanes[j].next =
                self.pre[j].val() | (self.column[j].val() & self.auto[j].val());
            self.counters[4].lanes[j].next = self.lanes[j].hit.val();
            self.counters[5].lanes[j].next = self.lanes[j].miss.val();
            self.counters[6].lanes[j].next = self.lanes[j].conflict.val();
            self.counters[7].lanes[j].next = self.lanes[j].unused.val();
        }
        // The last lane's state (the loop's last write wins).
        for j in 0..L {
            self.open.d.next = self.lanes[j].open_out.val();
            self.used.d.next = self.lanes[j].used_out.val();
            self.conflict.d.next = self.lanes[j].conflict_out.val();
            self.closed_valid.d.next = self.lanes[j].closed_valid_out.val();
            self.row.d.next = self.lanes[j].row_out.val();
            self.closed_row.d.next = self.lanes[j].closed_row_out.val();
        }
    }
}

/// Combinational: one lane's command applied to one bank's state, and the
/// row-buffer outcome of a column command.
#[derive(LogicBlock, Default)]
pub struct BankLane {
    pub act: Signal<In, Bit>,
    pub column: Signal<In, Bit>,
    pub auto: Signal<In, Bit>,
    pub pre: Signal<In, Bit>,
    pub refresh: Signal<In, Bit>,
    pub addr: Signal<In, Bits<18>>,
    pub open_in: Signal<In, Bit>,
    pub used_in: Signal<In, Bit>,
    pub conflict_in: Signal<In, Bit>,
    pub closed_valid_in: Signal<In, Bit>,
    pub row_in: Signal<In, Bits<18>>,
    pub closed_row_in: Signal<In, Bits<18>>,
    pub open_out: Signal<Out, Bit>,
    pub used_out: Signal<Out, Bit>,
    pub conflict_out: Signal<Out, Bit>,
    pub closed_valid_out: Signal<Out, Bit>,
    pub row_out: Signal<Out, Bits<18>>,
    pub closed_row_out: Signal<Out, Bits<18>>,
    pub hit: Signal<Out, Bit>,
    pub miss: Signal<Out, Bit>,
    pub conflict: Signal<Out, Bit>,
    pub unused: Signal<Out, Bit>,
}

impl Logic for BankLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.hit.next = self.column.val() & self.open_in.val() & self.used_in.val();
        self.conflict.next =
            self.column.val() & self.open_in.val() & !self.used_in.val() & self.conflict_in.val();
        self.miss.next = self.column.val()
            & !(self.open_in.val() & (self.used_in.val() | self.conflict_in.val()));
        self.unused.next = self.pre.val() & self.open_in.val() & !self.used_in.val();
        self.open_out.next = self.open_in.val();
        self.used_out.next = self.used_in.val();
        self.conflict_out.next = self.conflict_in.val();
        self.closed_valid_out.next = self.closed_valid_in.val();
        self.row_out.next = self.row_in.val();
        self.closed_row_out.next = self.closed_row_in.val();
        if self.act.val() {
            self.conflict_out.next =
                self.closed_valid_in.val() & (self.closed_row_in.val() != self.addr.val());
            self.closed_valid_out.next = false;
            self.open_out.next = true;
            self.row_out.next = self.addr.val();
            self.used_out.next = false;
        }
        if self.column.val() {
            self.used_out.next = true;
            if self.auto.val() {
                self.open_out.next = false;
                self.closed_valid_out.next = false;
            }
        }
        if self.pre.val() & self.open_in.val() {
            self.open_out.next = false;
            self.closed_valid_out.next = true;
            self.closed_row_out.next = self.row_in.val();
        }
        if self.refresh.val() {
            self.closed_valid_out.next = false;
        }
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
    pub enable: Signal<In, Bit>,
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
            enable: Default::default(),
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
        self.refresh.enable.next = self.enable.val();
        self.busy.enable.next = self.enable.val();
        self.refresh.add.next = 0.into();
        self.busy.add.next = 0.into();
        for j in 0..L {
            self.refresh.lanes[j].next =
                (self.rank[j].val() == self.my_rank.val()) & (self.kind[j].val() == 8);
            self.busy.lanes[j].next =
                (self.rank[j].val() == self.my_rank.val()) & self.counted[j].val();
        }
    }
}

/// Clocks from each tap of the capture chain to the encoder's, where the
/// unit counts: from the DCBU (DSMU 2, limit 1, CU 1, encoder 4), the
/// DSMU, the limit and the CU.
pub const BUS_DELAY: usize = 8;
pub const REF_DELAY: usize = 6;
pub const OVER_DELAY: usize = 5;
pub const CMD_DELAY: usize = 4;
// rust-hdl's Verilog generator takes no named constant in an index or a
// condition: `update` writes the last stages (7, 5, 4, 3) and where the
// shorter lines join the tick line (2, 3, 4) as numbers.
const _: () = assert!(BUS_DELAY == 8 && REF_DELAY == 6 && OVER_DELAY == 5 && CMD_DELAY == 4);

/// `N` registers of `W` bits: one clock of a delay line.
#[derive(LogicBlock)]
pub struct Stage<const N: usize, const W: usize> {
    pub clock: Signal<In, Clock>,
    pub d: [Signal<In, Bits<W>>; N],
    pub q: [Signal<Out, Bits<W>>; N],
    regs: [DFF<Bits<W>>; N],
}

impl<const N: usize, const W: usize> Default for Stage<N, W> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            d: std::array::from_fn(|_| Default::default()),
            q: std::array::from_fn(|_| Default::default()),
            regs: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const N: usize, const W: usize> Logic for Stage<N, W> {
    #[hdl_gen]
    fn update(&mut self) {
        for i in 0..N {
            self.regs[i].clock.next = self.clock.val();
            self.regs[i].d.next = self.d[i].val();
            self.q[i].next = self.regs[i].q.val();
        }
    }
}

/// Combinational: one lane's reference against the line before it.
#[derive(LogicBlock, Default)]
pub struct LineLane {
    pub prior: Signal<In, Bits<48>>,
    pub valid: Signal<In, Bit>,
    pub line: Signal<In, Bits<48>>,
    pub after: Signal<Out, Bits<48>>,
    pub toggled: Signal<Out, Bits<48>>,
}

impl Logic for LineLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.after.next = self.prior.val();
        self.toggled.next = 0.into();
        if self.valid.val() {
            self.after.next = self.line.val();
            self.toggled.next = self.line.val() ^ self.prior.val();
        }
    }
}

/// One clock of the bus lanes' delay line.
#[derive(LogicBlock)]
pub struct BusStage<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub d_kind: [Signal<In, Bits<4>>; L],
    pub d_rank: [Signal<In, Bits<2>>; L],
    pub d_bank: [Signal<In, Bits<4>>; L],
    pub d_addr: [Signal<In, Bits<18>>; L],
    pub kind: [Signal<Out, Bits<4>>; L],
    pub rank: [Signal<Out, Bits<2>>; L],
    pub bank: [Signal<Out, Bits<4>>; L],
    pub addr: [Signal<Out, Bits<18>>; L],
    r_kind: [DFF<Bits<4>>; L],
    r_rank: [DFF<Bits<2>>; L],
    r_bank: [DFF<Bits<4>>; L],
    r_addr: [DFF<Bits<18>>; L],
}

impl<const L: usize> Default for BusStage<L> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            d_kind: std::array::from_fn(|_| Default::default()),
            d_rank: std::array::from_fn(|_| Default::default()),
            d_bank: std::array::from_fn(|_| Default::default()),
            d_addr: std::array::from_fn(|_| Default::default()),
            kind: std::array::from_fn(|_| Default::default()),
            rank: std::array::from_fn(|_| Default::default()),
            bank: std::array::from_fn(|_| Default::default()),
            addr: std::array::from_fn(|_| Default::default()),
            r_kind: std::array::from_fn(|_| Default::default()),
            r_rank: std::array::from_fn(|_| Default::default()),
            r_bank: std::array::from_fn(|_| Default::default()),
            r_addr: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for BusStage<L> {
    #[hdl_gen]
    fn update(&mut self) {
        for j in 0..L {
            self.r_kind[j].clock.next = self.clock.val();
            self.r_rank[j].clock.next = self.clock.val();
            self.r_bank[j].clock.next = self.clock.val();
            self.r_addr[j].clock.next = self.clock.val();
            self.r_kind[j].d.next = self.d_kind[j].val();
            self.r_rank[j].d.next = self.d_rank[j].val();
            self.r_bank[j].d.next = self.d_bank[j].val();
            self.r_addr[j].d.next = self.d_addr[j].val();
            self.kind[j].next = self.r_kind[j].q.val();
            self.rank[j].next = self.r_rank[j].q.val();
            self.bank[j].next = self.r_bank[j].q.val();
            self.addr[j].next = self.r_addr[j].q.val();
        }
    }
}

/// One clock of the inner commands' delay line.
#[derive(LogicBlock)]
pub struct CmdStage<const E: usize> {
    pub clock: Signal<In, Clock>,
    pub d_valid: [Signal<In, Bit>; E],
    pub d_index: [Signal<In, Bits<6>>; E],
    pub valid: [Signal<Out, Bit>; E],
    pub index: [Signal<Out, Bits<6>>; E],
    r_valid: [DFF<Bit>; E],
    r_index: [DFF<Bits<6>>; E],
}

impl<const E: usize> Default for CmdStage<E> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            d_valid: std::array::from_fn(|_| Default::default()),
            d_index: std::array::from_fn(|_| Default::default()),
            valid: std::array::from_fn(|_| Default::default()),
            index: std::array::from_fn(|_| Default::default()),
            r_valid: std::array::from_fn(|_| Default::default()),
            r_index: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const E: usize> Logic for CmdStage<E> {
    #[hdl_gen]
    fn update(&mut self) {
        for e in 0..E {
            self.r_valid[e].clock.next = self.clock.val();
            self.r_index[e].clock.next = self.clock.val();
            self.r_valid[e].d.next = self.d_valid[e].val();
            self.r_index[e].d.next = self.d_index[e].val();
            self.valid[e].next = self.r_valid[e].q.val();
            self.index[e].next = self.r_index[e].q.val();
        }
    }
}

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
    /// record is then the banks' and ranks', the toggles' and the two drop
    /// counters' `snapshot`s, for the interval `[record_start,
    /// record_end)` opened with intervals of `2^record_k` ticks.
    pub record_valid: Signal<Out, Bit>,
    pub record_start: Signal<Out, Bits<64>>,
    pub record_end: Signal<Out, Bits<64>>,
    pub record_k: Signal<Out, Bits<5>>,
    /// Whether the unit counts (after the changes due at the counting
    /// stage's tick).
    pub enabled: Signal<Out, Bit>,
    /// For co-simulation: every tap's delayed tick equals the counting
    /// stage's.
    pub aligned: Signal<Out, Bit>,
    /// Rank major: bank `b` of rank `r` is `banks[r * NB / R + b]`.
    pub banks: [BankStats<L>; NB],
    pub ranks: [RankStats<L>; R],
    pub toggles: [IntervalCounter<L>; LB],
    pub over_limit: IntervalCounter<L>,
    pub lost_fifo: IntervalCounter<L>,
    bus_delay: [BusStage<L>; BUS_DELAY],
    ref_delay: [Stage<LB, 5>; REF_DELAY],
    over_delay: [Stage<1, 4>; OVER_DELAY],
    cmd_delay: [CmdStage<E>; CMD_DELAY],
    tick_delay: [Stage<4, 64>; BUS_DELAY],
    bank_high: Constant<Bits<4>>,
    one: Constant<Bits<64>>,
    /// The toggles of the DSMU's clock, per line bit: each reference
    /// against the one before, in lane order, on or off.
    last_line: DFF<Bits<48>>,
    line_lanes: [LineLane; L],
    toggle_count: [Signal<Local, Bits<5>>; LB],
    counted: [Signal<Local, Bit>; L],
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
    mask: Signal<Local, Bits<64>>,
    natural: Signal<Local, Bit>,
    close: Signal<Local, Bit>,
    on_now: Signal<Local, Bit>,
    k_now: Signal<Local, Bits<5>>,
    /// The record's header, two clocks after the close (with the
    /// counters' snapshots, which follow their `closing` clock).
    closed_start: DFF<Bits<64>>,
    closed_end: DFF<Bits<64>>,
    closed_k: DFF<Bits<5>>,
    header_start: DFF<Bits<64>>,
    header_end: DFF<Bits<64>>,
    header_k: DFF<Bits<5>>,
    snapshot_new: DFF<Bit>,
    any_busy: Signal<Local, Bit>,
}

impl<const L: usize, const E: usize, const R: usize, const NB: usize, const LB: usize>
    StatisticCounters<L, E, R, NB, LB>
{
    /// Counters for `geometry`, on from reset at intervals of
    /// `2^interval_log2` ticks until an inner command says otherwise.
    pub fn new(geometry: LineGeometry, interval_log2: u32) -> Self {
        let g = geometry.checked();
        assert_eq!(R, 1 << g.rank_bits, "R: the geometry's ranks");
        assert_eq!(
            NB,
            R << g.bank_bits,
            "NB: the geometry's banks in all ranks"
        );
        let line_bits = g.rank_bits + g.row_bits + g.bank_bits + g.col_line_bits;
        assert_eq!(LB, line_bits as usize, "LB: the geometry's line bits");
        assert!(
            (6..=31).contains(&interval_log2),
            "interval 2^k ticks, k in 6..=31"
        );
        assert!((1..=L).contains(&E) && L <= 8, "1 <= E <= L <= 8");
        let banks_per_rank = NB / R;
        Self {
            clock: Default::default(),
            bus_kind: std::array::from_fn(|_| Default::default()),
            bus_rank: std::array::from_fn(|_| Default::default()),
            bus_bank: std::array::from_fn(|_| Default::default()),
            bus_addr: std::array::from_fn(|_| Default::default()),
            bus_tick: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_tick: Default::default(),
            over: Default::default(),
            over_tick: Default::default(),
            cmd_valid: std::array::from_fn(|_| Default::default()),
            cmd_index: std::array::from_fn(|_| Default::default()),
            cmd_tick: Default::default(),
            dropped: Default::default(),
            dropped_tick: Default::default(),
            dropped_tick_valid: Default::default(),
            record_valid: Default::default(),
            record_start: Default::default(),
            record_end: Default::default(),
            record_k: Default::default(),
            enabled: Default::default(),
            aligned: Default::default(),
            banks: std::array::from_fn(|i| {
                BankStats::new((i / banks_per_rank) as u64, (i % banks_per_rank) as u64)
            }),
            ranks: std::array::from_fn(|r| RankStats::new(r as u64)),
            toggles: std::array::from_fn(|_| Default::default()),
            over_limit: Default::default(),
            lost_fifo: Default::default(),
            bus_delay: std::array::from_fn(|_| Default::default()),
            ref_delay: std::array::from_fn(|_| Default::default()),
            over_delay: std::array::from_fn(|_| Default::default()),
            cmd_delay: std::array::from_fn(|_| Default::default()),
            tick_delay: std::array::from_fn(|_| Default::default()),
            bank_high: Constant::new((0xFu64 & !((1u64 << g.bank_bits) - 1)).to_bits()),
            one: Constant::new(1u64.to_bits()),
            last_line: Default::default(),
            line_lanes: std::array::from_fn(|_| Default::default()),
            toggle_count: std::array::from_fn(|_| Default::default()),
            counted: std::array::from_fn(|_| Default::default()),
            on: DFFWithInit::new(true),
            k: DFFWithInit::new(u64::from(interval_log2).to_bits()),
            start: Default::default(),
            start_k: DFFWithInit::new(u64::from(interval_log2).to_bits()),
            due_close: Default::default(),
            due_any: Default::default(),
            due_on: Default::default(),
            due_k: Default::default(),
            cmd_is_on: std::array::from_fn(|_| Default::default()),
            cmd_is_off: std::array::from_fn(|_| Default::default()),
            cmd_is_interval: std::array::from_fn(|_| Default::default()),
            cmd_valid_now: std::array::from_fn(|_| Default::default()),
            cmd_index_now: std::array::from_fn(|_| Default::default()),
            mask: Default::default(),
            natural: Default::default(),
            close: Default::default(),
            on_now: Default::default(),
            k_now: Default::default(),
            closed_start: Default::default(),
            closed_end: Default::default(),
            closed_k: Default::default(),
            header_start: Default::default(),
            header_end: Default::default(),
            header_k: Default::default(),
            snapshot_new: Default::default(),
            any_busy: Default::default(),
        }
    }
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
            snapshot_new
        );
        // Delay lines to the counting stage (the encoder's, where the
        // FIFO's drops are known): the bus lanes packed as {kind, rank,
        // bank, A[17:0]}, the DSMU clock's toggles per line bit, the
        // limit's count, the CU's inner commands as {valid, index}.
        for s in 0..BUS_DELAY {
            self.bus_delay[s].clock.next = self.clock.val();
            self.tick_delay[s].clock.next = self.clock.val();
        }
        for s in 0..REF_DELAY {
            self.ref_delay[s].clock.next = self.clock.val();
        }
        for s in 0..OVER_DELAY {
            self.over_delay[s].clock.next = self.clock.val();
        }
        for s in 0..CMD_DELAY {
            self.cmd_delay[s].clock.next = self.clock.val();
        }
        for j in 0..L {
            self.bus_delay[0].d_kind[j].next = self.bus_kind[j].val();
            self.bus_delay[0].d_rank[j].next = self.bus_rank[j].val();
            self.bus_delay[0].d_bank[j].next = self.bus_bank[j].val();
            self.bus_delay[0].d_addr[j].next = self.bus_addr[j].val();
            for s in 1..BUS_DELAY {
                self.bus_delay[s].d_kind[j].next = self.bus_delay[s - 1].kind[j].val();
                self.bus_delay[s].d_rank[j].next = self.bus_delay[s - 1].rank[j].val();
                self.bus_delay[s].d_bank[j].next = self.bus_delay[s - 1].bank[j].val();
                self.bus_delay[s].d_addr[j].next = self.bus_delay[s - 1].addr[j].val();
            }
        }
        self.tick_delay[0].d[0].next = self.bus_tick.val();
        self.tick_delay[0].d[1].next = 0.into();
        self.tick_delay[0].d[2].next = 0.into();
        self.tick_delay[0].d[3].next = 0.into();
        self.tick_delay[2].d[1].next = self.ref_tick.val();
        self.tick_delay[3].d[2].next = self.over_tick.val();
        self.tick_delay[4].d[3].next = self.cmd_tick.val();
        for s in 1..BUS_DELAY {
            self.tick_delay[s].d[0].next = self.tick_delay[s - 1].q[0].val();
            if s != 2 {
                self.tick_delay[s].d[1].next = self.tick_delay[s - 1].q[1].val();
            }
            if s != 3 {
                self.tick_delay[s].d[2].next = self.tick_delay[s - 1].q[2].val();
            }
            if s != 4 {
                self.tick_delay[s].d[3].next = self.tick_delay[s - 1].q[3].val();
            }
        }
        self.aligned.next = (self.tick_delay[7].q[0].val() == self.dropped_tick.val())
            & (self.tick_delay[7].q[1].val() == self.dropped_tick.val())
            & (self.tick_delay[7].q[2].val() == self.dropped_tick.val())
            & (self.tick_delay[7].q[3].val() == self.dropped_tick.val());
        // Toggles at the DSMU.
        self.line_lanes[0].prior.next = self.last_line.q.val();
        for j in 1..L {
            self.line_lanes[j].prior.next = self.line_lanes[j - 1].after.val();
        }
        for j in 0..L {
            self.line_lanes[j].valid.next = self.ref_valid[j].val();
            self.line_lanes[j].line.next = self.ref_line[j].val();
        }
        for j in 0..L {
            self.last_line.d.next = self.line_lanes[j].after.val();
        }
        for i in 0..LB {
            self.toggle_count[i].next = 0.into();
            for j in 0..L {
                if self.line_lanes[j].toggled.val().get_bit(i) {
                    self.toggle_count[i].next = self.toggle_count[i].val() + 1;
                }
            }
            self.ref_delay[0].d[i].next = self.toggle_count[i].val();
            for s in 1..REF_DELAY {
                self.ref_delay[s].d[i].next = self.ref_delay[s - 1].q[i].val();
            }
        }
        self.over_delay[0].d[0].next = self.over.val();
        for s in 1..OVER_DELAY {
            self.over_delay[s].d[0].next = self.over_delay[s - 1].q[0].val();
        }
        for e in 0..E {
            self.cmd_delay[0].d_valid[e].next = self.cmd_valid[e].val();
            self.cmd_delay[0].d_index[e].next = self.cmd_index[e].val();
            for s in 1..CMD_DELAY {
                self.cmd_delay[s].d_valid[e].next = self.cmd_delay[s - 1].valid[e].val();
                self.cmd_delay[s].d_index[e].next = self.cmd_delay[s - 1].index[e].val();
            }
        }
        // The unit's state. At this clock's tick the open interval closes
        // at its natural end (a multiple of 2^k), then the inner commands
        // of the clock before apply; a second close at the same tick (an
        // interval opened and closed there) is empty.
        self.mask.next = (self.one.val() << bit_cast::<64, 5>(self.k.q.val())) - 1;
        self.natural.next = self.on.q.val() & ((self.dropped_tick.val() & self.mask.val()) == 0);
        self.close.next = self.dropped_tick_valid.val()
            & self.on.q.val()
            & (self.natural.val() | self.due_close.q.val());
        self.on_now.next = self.on.q.val();
        self.k_now.next = self.k.q.val();
        if self.dropped_tick_valid.val() & self.due_any.q.val() {
            self.on_now.next = self.due_on.q.val();
            self.k_now.next = self.due_k.q.val();
        }
        if self.dropped_tick_valid.val() {
            self.on.d.next = self.on_now.val();
            self.k.d.next = self.k_now.val();
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
            self.cmd_valid_now[e].next = self.cmd_delay[3].valid[e].val();
            self.cmd_index_now[e].next = self.cmd_delay[3].index[e].val();
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
        // Bank and rank counters.
        for j in 0..L {
            self.counted[j].next = false;
            if (self.bus_delay[7].kind[j].val() != 0) & (self.bus_delay[7].kind[j].val() != 11) {
                self.counted[j].next = true;
            }
            if (self.bus_delay[7].kind[j].val() <= 6)
                & ((self.bus_delay[7].bank[j].val() & self.bank_high.val()) != 0)
            {
                // ACT, RD, WR, RDA, WRA, PRE (1..=6) of a bank beyond the
                // geometry.
                self.counted[j].next = false;
            }
        }
        for b in 0..NB {
            self.banks[b].clock.next = self.clock.val();
            self.banks[b].close.next = self.close.val();
            self.banks[b].enable.next = self.on_now.val();
            for j in 0..L {
                self.banks[b].kind[j].next = self.bus_delay[7].kind[j].val();
                self.banks[b].rank[j].next = self.bus_delay[7].rank[j].val();
                self.banks[b].bank[j].next = self.bus_delay[7].bank[j].val();
                self.banks[b].addr[j].next = self.bus_delay[7].addr[j].val();
            }
        }
        for r in 0..R {
            self.ranks[r].clock.next = self.clock.val();
            self.ranks[r].close.next = self.close.val();
            self.ranks[r].enable.next = self.on_now.val();
            for j in 0..L {
                self.ranks[r].kind[j].next = self.bus_delay[7].kind[j].val();
                self.ranks[r].rank[j].next = self.bus_delay[7].rank[j].val();
                self.ranks[r].counted[j].next = self.counted[j].val();
            }
        }
        for i in 0..LB {
            self.toggles[i].clock.next = self.clock.val();
            self.toggles[i].close.next = self.close.val();
            self.toggles[i].enable.next = self.on_now.val();
            self.toggles[i].add.next = self.ref_delay[5].q[i].val();
            for j in 0..L {
                self.toggles[i].lanes[j].next = false;
            }
        }
        self.over_limit.clock.next = self.clock.val();
        self.over_limit.close.next = self.close.val();
        self.over_limit.enable.next = self.on_now.val();
        self.over_limit.add.next = bit_cast::<5, 4>(self.over_delay[4].q[0].val());
        self.lost_fifo.clock.next = self.clock.val();
        self.lost_fifo.close.next = self.close.val();
        self.lost_fifo.enable.next = self.on_now.val();
        self.lost_fifo.add.next = bit_cast::<5, 3>(self.dropped.val());
        for j in 0..L {
            self.over_limit.lanes[j].next = false;
            self.lost_fifo.lanes[j].next = false;
        }
        // The record, two clocks after the close. Everything the unit counts
        // comes from a command it counts as busy (a reference is a RD/WR
        // of a rank and bank of the geometry, and so is every drop), so an
        // interval with no busy tick is empty.
        self.any_busy.next = false;
        for r in 0..R {
            if self.ranks[r].busy.snapshot.val() != 0 {
                self.any_busy.next = true;
            }
        }
        self.header_start.d.next = self.closed_start.q.val();
        self.header_end.d.next = self.closed_end.q.val();
        self.header_k.d.next = self.closed_k.q.val();
        self.snapshot_new.d.next = self.lost_fifo.closing.val();
        self.record_valid.next = self.snapshot_new.q.val() & self.any_busy.val();
        self.record_start.next = self.header_start.q.val();
        self.record_end.next = self.header_end.q.val();
        self.record_k.next = self.header_k.q.val();
    }
}
