//! Per rank and bank: the eight counters and what the bus shows of the
//! bank (open or idle, the open row, a column command since the ACT, the
//! row an explicit PRE/PREA closed).

use rust_hdl::prelude::*;

use super::counter::IntervalCounter;
use super::LANE_ADDR_BITS;

/// One bank's counters and what the bus shows of it: open or idle, the
/// open row, a column command since the ACT, the row an explicit PRE/PREA
/// closed (forgotten at the next ACT or REF), and whether the first
/// column command after the ACT is a conflict. The lanes of a clock apply
/// in order, each to the state the one before left.
///
/// Every per-lane input is a vector, bit (or field) `j` for lane `j`: an
/// array of these blocks with array ports would not generate valid
/// Verilog (rust-hdl 0.46 resolves one index per name).
#[derive(LogicBlock)]
pub struct BankStats<const L: usize> {
    pub clock: Signal<In, Clock>,
    /// The lanes' command kinds (shared by every bank): ACT; RD, WR, RDA or
    /// WRA (`column`); WR or WRA (`write`); RDA or WRA (`auto`); PRE;
    /// PREA; REF.
    pub act: Signal<In, Bits<L>>,
    pub column: Signal<In, Bits<L>>,
    pub write: Signal<In, Bits<L>>,
    pub auto: Signal<In, Bits<L>>,
    pub pre: Signal<In, Bits<L>>,
    pub prea: Signal<In, Bits<L>>,
    pub refresh: Signal<In, Bits<L>>,
    /// The lanes whose rank and bank are this bank's, and those whose
    /// rank is its rank.
    pub bank_sel: Signal<In, Bits<L>>,
    pub rank_sel: Signal<In, Bits<L>>,
    /// Lane `j`'s A[17:0] at bits `18 j ..`; lanes `L..8` are zero.
    pub addr: Signal<In, Bits<LANE_ADDR_BITS>>,
    pub close: Signal<In, Bit>,
    pub enable: Signal<In, Bit>,
    /// The snapshot of counter `read_sel` (format.md §5.3 order), out
    /// combinationally as `read_value`.
    pub read_sel: Signal<In, Bits<3>>,
    pub read_value: Signal<Out, Bits<32>>,
    pub rd: IntervalCounter<L>,
    pub wr: IntervalCounter<L>,
    pub act_count: IntervalCounter<L>,
    pub pre_count: IntervalCounter<L>,
    pub hit: IntervalCounter<L>,
    pub miss: IntervalCounter<L>,
    pub conflict: IntervalCounter<L>,
    pub unused_act: IntervalCounter<L>,
    open: DFF<Bit>,
    used: DFF<Bit>,
    conflict_next: DFF<Bit>,
    closed_valid: DFF<Bit>,
    row: DFF<Bits<18>>,
    closed_row: DFF<Bits<18>>,
    /// Per lane: the command concerns this bank (PREA and REF: its rank).
    is_act: Signal<Local, Bits<L>>,
    is_column: Signal<Local, Bits<L>>,
    is_pre: Signal<Local, Bits<L>>,
    is_refresh: Signal<Local, Bits<L>>,
    hits: Signal<Local, Bits<L>>,
    misses: Signal<Local, Bits<L>>,
    conflicts: Signal<Local, Bits<L>>,
    unused: Signal<Local, Bits<L>>,
    /// One lane each, in order: the state after lane `j` goes to lane
    /// `j + 1` (sub-blocks, so that no block reads a signal it writes
    /// later).
    lanes: [BankLane; L],
}

impl<const L: usize> Default for BankStats<L> {
    fn default() -> Self {
        assert!((1..=8).contains(&L), "1 <= L <= 8");
        Self {
            clock: Default::default(),
            act: Default::default(),
            column: Default::default(),
            write: Default::default(),
            auto: Default::default(),
            pre: Default::default(),
            prea: Default::default(),
            refresh: Default::default(),
            bank_sel: Default::default(),
            rank_sel: Default::default(),
            addr: Default::default(),
            close: Default::default(),
            enable: Default::default(),
            read_sel: Default::default(),
            read_value: Default::default(),
            rd: Default::default(),
            wr: Default::default(),
            act_count: Default::default(),
            pre_count: Default::default(),
            hit: Default::default(),
            miss: Default::default(),
            conflict: Default::default(),
            unused_act: Default::default(),
            open: Default::default(),
            used: Default::default(),
            conflict_next: Default::default(),
            closed_valid: Default::default(),
            row: Default::default(),
            closed_row: Default::default(),
            is_act: Default::default(),
            is_column: Default::default(),
            is_pre: Default::default(),
            is_refresh: Default::default(),
            hits: Default::default(),
            misses: Default::default(),
            conflicts: Default::default(),
            unused: Default::default(),
            lanes: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> BankStats<L> {
    /// The counters in format.md §5.3 order: RD, WR, ACT, PRE, HIT, MISS,
    /// CONFLICT, UNUSED_ACT.
    pub fn counters(&self) -> [&IntervalCounter<L>; super::BANK_COUNTERS] {
        [
            &self.rd,
            &self.wr,
            &self.act_count,
            &self.pre_count,
            &self.hit,
            &self.miss,
            &self.conflict,
            &self.unused_act,
        ]
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
            conflict_next,
            closed_valid,
            row,
            closed_row
        );
        self.is_act.next = self.act.val() & self.bank_sel.val();
        self.is_column.next = self.column.val() & self.bank_sel.val();
        self.is_pre.next =
            (self.pre.val() & self.bank_sel.val()) | (self.prea.val() & self.rank_sel.val());
        self.is_refresh.next = self.refresh.val() & self.rank_sel.val();
        self.lanes[0].open_in.next = self.open.q.val();
        self.lanes[0].used_in.next = self.used.q.val();
        self.lanes[0].conflict_in.next = self.conflict_next.q.val();
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
        self.hits.next = 0.into();
        self.misses.next = 0.into();
        self.conflicts.next = 0.into();
        self.unused.next = 0.into();
        for j in 0..L {
            self.lanes[j].act.next = self.is_act.val().get_bit(j);
            self.lanes[j].column.next = self.is_column.val().get_bit(j);
            self.lanes[j].auto.next = self.auto.val().get_bit(j);
            self.lanes[j].pre.next = self.is_pre.val().get_bit(j);
            self.lanes[j].refresh.next = self.is_refresh.val().get_bit(j);
            self.lanes[j].addr.next = self.addr.val().get_bits::<18>(18 * j);
            self.hits.next = self.hits.val().replace_bit(j, self.lanes[j].hit.val());
            self.misses.next = self.misses.val().replace_bit(j, self.lanes[j].miss.val());
            self.conflicts.next = self
                .conflicts
                .val()
                .replace_bit(j, self.lanes[j].conflict.val());
            self.unused.next = self.unused.val().replace_bit(j, self.lanes[j].unused.val());
        }
        // The last lane's state (the loop's last write wins).
        for j in 0..L {
            self.open.d.next = self.lanes[j].open_out.val();
            self.used.d.next = self.lanes[j].used_out.val();
            self.conflict_next.d.next = self.lanes[j].conflict_out.val();
            self.closed_valid.d.next = self.lanes[j].closed_valid_out.val();
            self.row.d.next = self.lanes[j].row_out.val();
            self.closed_row.d.next = self.lanes[j].closed_row_out.val();
        }
        self.rd.clock.next = self.clock.val();
        self.wr.clock.next = self.clock.val();
        self.act_count.clock.next = self.clock.val();
        self.pre_count.clock.next = self.clock.val();
        self.hit.clock.next = self.clock.val();
        self.miss.clock.next = self.clock.val();
        self.conflict.clock.next = self.clock.val();
        self.unused_act.clock.next = self.clock.val();
        self.rd.close.next = self.close.val();
        self.wr.close.next = self.close.val();
        self.act_count.close.next = self.close.val();
        self.pre_count.close.next = self.close.val();
        self.hit.close.next = self.close.val();
        self.miss.close.next = self.close.val();
        self.conflict.close.next = self.close.val();
        self.unused_act.close.next = self.close.val();
        self.rd.enable.next = self.enable.val();
        self.wr.enable.next = self.enable.val();
        self.act_count.enable.next = self.enable.val();
        self.pre_count.enable.next = self.enable.val();
        self.hit.enable.next = self.enable.val();
        self.miss.enable.next = self.enable.val();
        self.conflict.enable.next = self.enable.val();
        self.unused_act.enable.next = self.enable.val();
        self.rd.add.next = 0.into();
        self.wr.add.next = 0.into();
        self.act_count.add.next = 0.into();
        self.pre_count.add.next = 0.into();
        self.hit.add.next = 0.into();
        self.miss.add.next = 0.into();
        self.conflict.add.next = 0.into();
        self.unused_act.add.next = 0.into();
        self.rd.lanes.next = self.is_column.val() & !self.write.val();
        self.wr.lanes.next = self.is_column.val() & self.write.val();
        self.act_count.lanes.next = self.is_act.val();
        self.pre_count.lanes.next = self.is_pre.val() | (self.is_column.val() & self.auto.val());
        self.hit.lanes.next = self.hits.val();
        self.miss.lanes.next = self.misses.val();
        self.conflict.lanes.next = self.conflicts.val();
        self.unused_act.lanes.next = self.unused.val();
        self.read_value.next = self.rd.snapshot.val();
        if self.read_sel.val() == 1 {
            self.read_value.next = self.wr.snapshot.val();
        }
        if self.read_sel.val() == 2 {
            self.read_value.next = self.act_count.snapshot.val();
        }
        if self.read_sel.val() == 3 {
            self.read_value.next = self.pre_count.snapshot.val();
        }
        if self.read_sel.val() == 4 {
            self.read_value.next = self.hit.snapshot.val();
        }
        if self.read_sel.val() == 5 {
            self.read_value.next = self.miss.snapshot.val();
        }
        if self.read_sel.val() == 6 {
            self.read_value.next = self.conflict.snapshot.val();
        }
        if self.read_sel.val() == 7 {
            self.read_value.next = self.unused_act.snapshot.val();
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

/// Combinational: lane `j`'s A[17:0] at its place in [`LANE_ADDR_BITS`]
/// (a block of its own: rust-hdl's Verilog takes no loop index inside a
/// cast).
#[derive(LogicBlock)]
pub struct LaneAddr {
    pub addr: Signal<In, Bits<18>>,
    pub placed: Signal<Out, Bits<LANE_ADDR_BITS>>,
    shift: Constant<Bits<8>>,
}

impl LaneAddr {
    pub fn new(lane: usize) -> Self {
        assert!(lane < 8, "8 lanes at most");
        Self {
            addr: Default::default(),
            placed: Default::default(),
            shift: Constant::new(((18 * lane) as u64).to_bits()),
        }
    }
}

impl Logic for LaneAddr {
    #[hdl_gen]
    fn update(&mut self) {
        self.placed.next = bit_cast::<LANE_ADDR_BITS, 18>(self.addr.val()) << self.shift.val();
    }
}
