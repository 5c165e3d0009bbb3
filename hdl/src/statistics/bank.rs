//! Per rank and bank: the eight counters and what the bus shows of the
//! bank (open or idle, the open row, a column command since the ACT, the
//! row an explicit PRE/PREA closed).

use rust_hdl::prelude::*;

use super::counter::{IntervalCounter, HOLD_SLOT_BITS};

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

/// The lanes' A[17:0] side by side for [`BankStats`], sized for 8 lanes
/// (stable Rust cannot size it `18 L`); lanes from `L` on are zero.
pub const LANE_ADDR_BITS: usize = 18 * 8;

/// The lanes' A[17:0] compared pairwise for [`BankStats`]: bit `8 k + j`
/// for lanes `k` and `j`, sized for 8 lanes like [`LANE_ADDR_BITS`].
pub const LANE_PAIR_BITS: usize = 8 * 8;

/// One bank's counters and what the bus shows of it: open or idle, the
/// open row, a column command since the ACT, the row an explicit PRE/PREA
/// closed (forgotten at the next ACT or REF), and whether the first
/// column command after the ACT is a conflict. The lanes of a clock apply
/// in order, each to the state the one before left.
///
/// Three stages, so that no clock's path runs through the lanes in series
/// from the state registers, and none starts at a register that every
/// bank reads. The lanes come two clocks before the counting stage
/// (`close`, `enable`), straight from the unit's decode, and the bank
/// registers them (`r_`): its own copy of what it compares (the lanes'
/// rows and their pairwise compares, `write`), so that the next clock's
/// paths start next to the bank. That next clock summarises them with
/// no knowledge of the state: for each lane what the lanes before it set
/// of the state, and for the ACTs after the clock's first one whether
/// they meet a row closed in the same clock (the pairwise row compares
/// come in `addr_ne`). It also compares the clock's first ACT's row with
/// the open row and the closed row as the counting stage's clock leaves
/// them (the state it will meet), so that no 18-bit compare is left to
/// the counting stage. The counting stage then applies the summary to
/// the state registers, each lane's outcome a few gates from them. The
/// open row closed by a PRE is kept only while it is valid
/// (`closed_valid`), the one case where it is read.
///
/// Every per-lane input is a vector, bit (or field) `j` for lane `j`: an
/// array of these blocks with array ports would not generate valid
/// Verilog (rust-hdl 0.46 resolves one index per name).
#[derive(LogicBlock)]
pub struct BankStats<const L: usize> {
    pub clock: Signal<In, Clock>,
    /// The lanes' commands to this bank two clocks before the counting
    /// stage (the bank registers them): ACT; RD, WR, RDA or
    /// WRA (`column`); RDA or WRA (`auto`); PRE, or PREA to the bank's
    /// rank (`pre`); REF to its rank (`refresh`). `write` (WR or WRA, any
    /// bank) is read only with `column`.
    pub act: Signal<In, Bits<L>>,
    pub column: Signal<In, Bits<L>>,
    pub write: Signal<In, Bits<L>>,
    pub auto: Signal<In, Bits<L>>,
    pub pre: Signal<In, Bits<L>>,
    pub refresh: Signal<In, Bits<L>>,
    /// Lane `j`'s A[17:0] at bits `18 j ..`; lanes `L..8` are zero (the
    /// same clock).
    pub addr: Signal<In, Bits<LANE_ADDR_BITS>>,
    /// Bit `8 k + j`: lanes `k` and `j` have different A[17:0] (the same
    /// clock; [`LANE_PAIR_BITS`]).
    pub addr_ne: Signal<In, Bits<LANE_PAIR_BITS>>,
    /// The counting stage's close and enable.
    pub close: Signal<In, Bit>,
    pub enable: Signal<In, Bit>,
    /// The held record of counter `read_sel` (format.md §5.3 order), out
    /// combinationally as `read_value`; the counters' held records
    /// ([`IntervalCounter::held`]) by `hold_write`, `hold_slot` and
    /// `read_slot`.
    pub read_sel: Signal<In, Bits<3>>,
    pub read_value: Signal<Out, Bits<32>>,
    pub hold_write: Signal<In, Bit>,
    pub hold_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub read_slot: Signal<In, Bits<HOLD_SLOT_BITS>>,
    pub rd: IntervalCounter<L>,
    pub wr: IntervalCounter<L>,
    pub act_count: IntervalCounter<L>,
    pub pre_count: IntervalCounter<L>,
    pub hit: IntervalCounter<L>,
    pub miss: IntervalCounter<L>,
    pub conflict: IntervalCounter<L>,
    pub unused_act: IntervalCounter<L>,
    /// The inputs registered, two clocks before the counting stage: this
    /// bank's copy of each. The copies of what several banks are given
    /// keep only what this bank reads (`write` on its column lanes, a
    /// lane's row and its compares on its ACT lanes) or carry something
    /// of this bank's (`r_clear` is `refresh | act`, REF being
    /// `r_clear & !r_act` as a lane holds one command), so that synthesis,
    /// which merges registers of equal inputs, keeps one copy per bank
    /// rather than one register feeding all of them (a rank's REF lanes,
    /// merged into one register for all the rank's banks, made the
    /// unit's slowest path).
    r_act: DFF<Bits<L>>,
    r_column: DFF<Bits<L>>,
    r_write: DFF<Bits<L>>,
    r_auto: DFF<Bits<L>>,
    r_pre: DFF<Bits<L>>,
    r_clear: DFF<Bits<L>>,
    r_addr: DFF<Bits<LANE_ADDR_BITS>>,
    r_addr_ne: DFF<Bits<LANE_PAIR_BITS>>,
    /// The state before the counting stage's clock.
    open: DFF<Bit>,
    used: DFF<Bit>,
    conflict_next: DFF<Bit>,
    closed_valid: DFF<Bit>,
    row: DFF<Bits<18>>,
    closed_row: DFF<Bits<18>>,
    /// `addr` and `addr_ne` with the lanes other than this bank's ACTs
    /// zeroed, by `addr_keep` and `ne_keep` (each all ones but lane `j`'s
    /// row, or its compares with every lane).
    addr_kept: Signal<Local, Bits<LANE_ADDR_BITS>>,
    ne_kept: Signal<Local, Bits<LANE_PAIR_BITS>>,
    addr_keep: [Constant<Bits<LANE_ADDR_BITS>>; L],
    ne_keep: [Constant<Bits<LANE_PAIR_BITS>>; L],
    /// The rows after the counting stage's clock (its `row` and
    /// `closed_row` next), for the summary's first-ACT compares.
    row_next: Signal<Local, Bits<18>>,
    closed_row_next: Signal<Local, Bits<18>>,
    /// Per lane: the command concerns this bank (PREA and REF: its rank);
    /// `is_auto`: RDA or WRA.
    is_act: Signal<Local, Bits<L>>,
    is_column: Signal<Local, Bits<L>>,
    is_auto: Signal<Local, Bits<L>>,
    is_pre: Signal<Local, Bits<L>>,
    is_refresh: Signal<Local, Bits<L>>,
    /// The summary, lane after lane: whether the lanes so far set `open`
    /// (`set_open`, to `open_to`) and `used` (to `used_to`); whether an
    /// ACT came (`acted`) and a second (`acted_twice`), accumulated by
    /// ORs of the ACT lanes alone, so that no other lane's mux waits on
    /// them; and the conflict
    /// flag the last ACT set when it was not the first (`cf_to`). Since
    /// the last ACT (or the clock's start): whether the first PRE or
    /// auto-precharge was a PRE (`seg_pre`, cleared by a later
    /// auto-precharge or REF; it closes the row if the bank was open),
    /// whether one came (`seg_closing`), whether an auto-precharge or REF
    /// came (`seg_clear`). `last_ne`: the last ACT's lane against every
    /// lane.
    set_open: Signal<Local, Bit>,
    open_to: Signal<Local, Bit>,
    set_used: Signal<Local, Bit>,
    used_to: Signal<Local, Bit>,
    acted: Signal<Local, Bit>,
    acted_twice: Signal<Local, Bit>,
    cf_to: Signal<Local, Bit>,
    seg_pre: Signal<Local, Bit>,
    seg_closing: Signal<Local, Bit>,
    seg_clear: Signal<Local, Bit>,
    last_ne: Signal<Local, Bits<8>>,
    /// Each lane's view of the summary as it enters (bit `j`), and the
    /// clock's first ACT: its segment's `seg_pre` and `seg_clear`, its row
    /// and whether that differs from `row_next` and `closed_row_next`.
    lane_set_open: Signal<Local, Bits<L>>,
    lane_open_to: Signal<Local, Bits<L>>,
    lane_set_used: Signal<Local, Bits<L>>,
    lane_used_to: Signal<Local, Bits<L>>,
    lane_acted: Signal<Local, Bits<L>>,
    lane_acted_twice: Signal<Local, Bits<L>>,
    /// Bit `j`: an ACT at lane `j` or before (`lane_acted` with lane `j`).
    lane_acted_upto: Signal<Local, Bits<L>>,
    lane_cf_to: Signal<Local, Bits<L>>,
    first_pre: Signal<Local, Bit>,
    first_clear: Signal<Local, Bit>,
    first_row: Signal<Local, Bits<18>>,
    first_ne_row: Signal<Local, Bit>,
    first_ne_closed: Signal<Local, Bit>,
    last_row: Signal<Local, Bits<18>>,
    /// The summary registered for the counting stage (`s_`): per lane,
    /// at the clock's end, the first ACT's, and the lanes of the
    /// command counters.
    s_set_open: DFF<Bits<L>>,
    s_open_to: DFF<Bits<L>>,
    s_set_used: DFF<Bits<L>>,
    s_used_to: DFF<Bits<L>>,
    s_acted: DFF<Bits<L>>,
    s_acted_twice: DFF<Bits<L>>,
    s_cf_to: DFF<Bits<L>>,
    s_column: DFF<Bits<L>>,
    s_pre: DFF<Bits<L>>,
    s_end_set_open: DFF<Bit>,
    s_end_open_to: DFF<Bit>,
    s_end_set_used: DFF<Bit>,
    s_end_used_to: DFF<Bit>,
    s_end_acted: DFF<Bit>,
    s_end_acted_twice: DFF<Bit>,
    s_end_cf_to: DFF<Bit>,
    s_end_pre: DFF<Bit>,
    s_end_clear: DFF<Bit>,
    s_first_pre: DFF<Bit>,
    s_first_clear: DFF<Bit>,
    s_first_ne_row: DFF<Bit>,
    s_first_ne_closed: DFF<Bit>,
    s_last_row: DFF<Bits<18>>,
    s_rd: DFF<Bits<L>>,
    s_wr: DFF<Bits<L>>,
    s_act: DFF<Bits<L>>,
    s_pre_count: DFF<Bits<L>>,
    /// The counting stage: the conflict flag the clock's first ACT sets,
    /// each lane's state as it enters, the outcomes.
    first_cf: Signal<Local, Bit>,
    lane_open: Signal<Local, Bits<L>>,
    lane_used: Signal<Local, Bits<L>>,
    lane_cf: Signal<Local, Bits<L>>,
    hits: Signal<Local, Bits<L>>,
    misses: Signal<Local, Bits<L>>,
    conflicts: Signal<Local, Bits<L>>,
    unused: Signal<Local, Bits<L>>,
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
            refresh: Default::default(),
            addr: Default::default(),
            addr_ne: Default::default(),
            close: Default::default(),
            enable: Default::default(),
            read_sel: Default::default(),
            read_value: Default::default(),
            hold_write: Default::default(),
            hold_slot: Default::default(),
            read_slot: Default::default(),
            rd: Default::default(),
            wr: Default::default(),
            act_count: Default::default(),
            pre_count: Default::default(),
            hit: Default::default(),
            miss: Default::default(),
            conflict: Default::default(),
            unused_act: Default::default(),
            r_act: Default::default(),
            r_column: Default::default(),
            r_write: Default::default(),
            r_auto: Default::default(),
            r_pre: Default::default(),
            r_clear: Default::default(),
            r_addr: Default::default(),
            r_addr_ne: Default::default(),
            open: Default::default(),
            used: Default::default(),
            conflict_next: Default::default(),
            closed_valid: Default::default(),
            row: Default::default(),
            closed_row: Default::default(),
            addr_kept: Default::default(),
            ne_kept: Default::default(),
            addr_keep: std::array::from_fn(|j| {
                let row: Bits<18> = 0x3_FFFFu64.to_bits();
                let at: Bits<8> = ((18 * j) as u64).to_bits();
                Constant::new(!(bit_cast::<LANE_ADDR_BITS, 18>(row) << at))
            }),
            ne_keep: std::array::from_fn(|j| {
                let pairs: Bits<8> = 0xFFu64.to_bits();
                let at: Bits<8> = ((8 * j) as u64).to_bits();
                Constant::new(!(bit_cast::<LANE_PAIR_BITS, 8>(pairs) << at))
            }),
            row_next: Default::default(),
            closed_row_next: Default::default(),
            is_act: Default::default(),
            is_column: Default::default(),
            is_auto: Default::default(),
            is_pre: Default::default(),
            is_refresh: Default::default(),
            set_open: Default::default(),
            open_to: Default::default(),
            set_used: Default::default(),
            used_to: Default::default(),
            acted: Default::default(),
            acted_twice: Default::default(),
            cf_to: Default::default(),
            seg_pre: Default::default(),
            seg_closing: Default::default(),
            seg_clear: Default::default(),
            last_ne: Default::default(),
            lane_set_open: Default::default(),
            lane_open_to: Default::default(),
            lane_set_used: Default::default(),
            lane_used_to: Default::default(),
            lane_acted: Default::default(),
            lane_acted_twice: Default::default(),
            lane_acted_upto: Default::default(),
            lane_cf_to: Default::default(),
            first_pre: Default::default(),
            first_clear: Default::default(),
            first_row: Default::default(),
            first_ne_row: Default::default(),
            first_ne_closed: Default::default(),
            last_row: Default::default(),
            s_set_open: Default::default(),
            s_open_to: Default::default(),
            s_set_used: Default::default(),
            s_used_to: Default::default(),
            s_acted: Default::default(),
            s_acted_twice: Default::default(),
            s_cf_to: Default::default(),
            s_column: Default::default(),
            s_pre: Default::default(),
            s_end_set_open: Default::default(),
            s_end_open_to: Default::default(),
            s_end_set_used: Default::default(),
            s_end_used_to: Default::default(),
            s_end_acted: Default::default(),
            s_end_acted_twice: Default::default(),
            s_end_cf_to: Default::default(),
            s_end_pre: Default::default(),
            s_end_clear: Default::default(),
            s_first_pre: Default::default(),
            s_first_clear: Default::default(),
            s_first_ne_row: Default::default(),
            s_first_ne_closed: Default::default(),
            s_last_row: Default::default(),
            s_rd: Default::default(),
            s_wr: Default::default(),
            s_act: Default::default(),
            s_pre_count: Default::default(),
            first_cf: Default::default(),
            lane_open: Default::default(),
            lane_used: Default::default(),
            lane_cf: Default::default(),
            hits: Default::default(),
            misses: Default::default(),
            conflicts: Default::default(),
            unused: Default::default(),
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
            r_act,
            r_column,
            r_write,
            r_auto,
            r_pre,
            r_clear,
            r_addr,
            r_addr_ne,
            open,
            used,
            conflict_next,
            closed_valid,
            row,
            closed_row,
            s_set_open,
            s_open_to,
            s_set_used,
            s_used_to,
            s_acted,
            s_acted_twice,
            s_cf_to,
            s_column,
            s_pre,
            s_end_set_open,
            s_end_open_to,
            s_end_set_used,
            s_end_used_to,
            s_end_acted,
            s_end_acted_twice,
            s_end_cf_to,
            s_end_pre,
            s_end_clear,
            s_first_pre,
            s_first_clear,
            s_first_ne_row,
            s_first_ne_closed,
            s_last_row,
            s_rd,
            s_wr,
            s_act,
            s_pre_count
        );
        // Two clocks before the counting stage: the bank's copies.
        self.r_act.d.next = self.act.val();
        self.r_column.d.next = self.column.val();
        self.r_write.d.next = self.write.val() & self.column.val();
        self.r_auto.d.next = self.auto.val();
        self.r_pre.d.next = self.pre.val();
        self.r_clear.d.next = self.refresh.val() | self.act.val();
        self.addr_kept.next = self.addr.val();
        self.ne_kept.next = self.addr_ne.val();
        for j in 0..L {
            if !self.act.val().get_bit(j) {
                self.addr_kept.next = self.addr_kept.val() & self.addr_keep[j].val();
                self.ne_kept.next = self.ne_kept.val() & self.ne_keep[j].val();
            }
        }
        self.r_addr.d.next = self.addr_kept.val();
        self.r_addr_ne.d.next = self.ne_kept.val();
        // The rows the counting stage's clock leaves (before the summary,
        // which reads them: the Verilog's block runs in order).
        self.row_next.next = self.row.q.val();
        if self.s_end_acted.q.val() {
            self.row_next.next = self.s_last_row.q.val();
        }
        self.closed_row_next.next = self.closed_row.q.val();
        if self.s_end_pre.q.val() & self.open.q.val() {
            self.closed_row_next.next = self.row.q.val();
        }
        if self.s_end_acted.q.val() {
            self.closed_row_next.next = self.s_last_row.q.val();
        }
        // The summary, a clock before the counting stage.
        self.is_act.next = self.r_act.q.val();
        self.is_column.next = self.r_column.q.val();
        self.is_auto.next = self.r_auto.q.val();
        self.is_pre.next = self.r_pre.q.val();
        self.is_refresh.next = self.r_clear.q.val() & !self.r_act.q.val();
        self.set_open.next = false;
        self.open_to.next = false;
        self.set_used.next = false;
        self.used_to.next = false;
        self.acted.next = false;
        self.acted_twice.next = false;
        self.cf_to.next = false;
        self.seg_pre.next = false;
        self.seg_closing.next = false;
        self.seg_clear.next = false;
        self.last_ne.next = 0.into();
        self.first_pre.next = false;
        self.first_clear.next = false;
        self.first_row.next = 0.into();
        self.last_row.next = 0.into();
        self.lane_set_open.next = 0.into();
        self.lane_open_to.next = 0.into();
        self.lane_set_used.next = 0.into();
        self.lane_used_to.next = 0.into();
        self.lane_acted.next = 0.into();
        self.lane_acted_twice.next = 0.into();
        self.lane_acted_upto.next = 0.into();
        self.lane_cf_to.next = 0.into();
        // Which lanes come after an ACT, and after two: ORs of the ACT
        // lanes, apart from the loop below, whose muxes read them (the
        // first ACT's `seg_clear` taken through that loop, a chain of
        // every lane's mux, was the unit's slowest path).
        for j in 0..L {
            self.lane_acted.next = self.lane_acted.val().replace_bit(j, self.acted.val());
            self.lane_acted_twice.next = self
                .lane_acted_twice
                .val()
                .replace_bit(j, self.acted_twice.val());
            self.acted_twice.next =
                self.acted_twice.val() | (self.acted.val() & self.is_act.val().get_bit(j));
            self.acted.next = self.acted.val() | self.is_act.val().get_bit(j);
            self.lane_acted_upto.next = self.lane_acted_upto.val().replace_bit(j, self.acted.val());
        }
        for j in 0..L {
            self.lane_set_open.next = self.lane_set_open.val().replace_bit(j, self.set_open.val());
            self.lane_open_to.next = self.lane_open_to.val().replace_bit(j, self.open_to.val());
            self.lane_set_used.next = self.lane_set_used.val().replace_bit(j, self.set_used.val());
            self.lane_used_to.next = self.lane_used_to.val().replace_bit(j, self.used_to.val());
            self.lane_cf_to.next = self.lane_cf_to.val().replace_bit(j, self.cf_to.val());
            // A lane holds one command: ACT, a column command, PRE/PREA or
            // REF.
            if self.is_act.val().get_bit(j) {
                if self.lane_acted.val().get_bit(j) {
                    // The row a PRE of this segment closed is the last ACT's.
                    self.cf_to.next = self.seg_pre.val() & self.last_ne.val().get_bit(j);
                } else {
                    self.first_pre.next = self.seg_pre.val();
                    self.first_row.next = self.r_addr.q.val().get_bits::<18>(18 * j);
                }
                self.last_row.next = self.r_addr.q.val().get_bits::<18>(18 * j);
                self.last_ne.next = self.r_addr_ne.q.val().get_bits::<8>(8 * j);
                self.seg_pre.next = false;
                self.seg_closing.next = false;
                self.seg_clear.next = false;
                self.set_open.next = true;
                self.open_to.next = true;
                self.set_used.next = true;
                self.used_to.next = false;
            }
            if self.is_column.val().get_bit(j) {
                self.set_used.next = true;
                self.used_to.next = true;
                if self.is_auto.val().get_bit(j) {
                    self.set_open.next = true;
                    self.open_to.next = false;
                    self.seg_pre.next = false;
                    self.seg_closing.next = true;
                    self.seg_clear.next = true;
                }
            }
            if self.is_pre.val().get_bit(j) {
                self.set_open.next = true;
                self.open_to.next = false;
                if !self.seg_closing.val() {
                    self.seg_pre.next = true;
                    self.seg_closing.next = true;
                }
            }
            if self.is_refresh.val().get_bit(j) {
                self.seg_pre.next = false;
                self.seg_clear.next = true;
            }
        }
        // The first ACT's `seg_clear`: an auto-precharge or REF on a lane
        // before it (`r_clear` is `refresh | act`; the ACT lanes are
        // masked by `lane_acted_upto`).
        self.first_clear.next = self.acted.val()
            & ((self.r_clear.q.val() | (self.is_column.val() & self.is_auto.val()))
                & !self.lane_acted_upto.val())
            .any();
        self.first_ne_row.next = self.first_row.val() != self.row_next.val();
        self.first_ne_closed.next = self.first_row.val() != self.closed_row_next.val();
        self.s_set_open.d.next = self.lane_set_open.val();
        self.s_open_to.d.next = self.lane_open_to.val();
        self.s_set_used.d.next = self.lane_set_used.val();
        self.s_used_to.d.next = self.lane_used_to.val();
        self.s_acted.d.next = self.lane_acted.val();
        self.s_acted_twice.d.next = self.lane_acted_twice.val();
        self.s_cf_to.d.next = self.lane_cf_to.val();
        self.s_column.d.next = self.is_column.val();
        self.s_pre.d.next = self.is_pre.val();
        self.s_end_set_open.d.next = self.set_open.val();
        self.s_end_open_to.d.next = self.open_to.val();
        self.s_end_set_used.d.next = self.set_used.val();
        self.s_end_used_to.d.next = self.used_to.val();
        self.s_end_acted.d.next = self.acted.val();
        self.s_end_acted_twice.d.next = self.acted_twice.val();
        self.s_end_cf_to.d.next = self.cf_to.val();
        self.s_end_pre.d.next = self.seg_pre.val();
        self.s_end_clear.d.next = self.seg_clear.val();
        self.s_first_pre.d.next = self.first_pre.val();
        self.s_first_clear.d.next = self.first_clear.val();
        self.s_first_ne_row.d.next = self.first_ne_row.val();
        self.s_first_ne_closed.d.next = self.first_ne_closed.val();
        self.s_last_row.d.next = self.last_row.val();
        self.s_rd.d.next = self.is_column.val() & !self.r_write.q.val();
        self.s_wr.d.next = self.is_column.val() & self.r_write.q.val();
        self.s_act.d.next = self.is_act.val();
        self.s_pre_count.d.next = self.is_pre.val() | self.is_auto.val();
        // The counting stage. The clock's first ACT meets the row the
        // segment before it closed: the open row if its first PRE found
        // the bank open, else none after an auto-precharge or REF, else
        // the closed row as it was.
        self.first_cf.next = !self.s_first_clear.q.val()
            & self.closed_valid.q.val()
            & self.s_first_ne_closed.q.val();
        if self.s_first_pre.q.val() & self.open.q.val() {
            self.first_cf.next = self.s_first_ne_row.q.val();
        }
        self.lane_open.next = 0.into();
        self.lane_used.next = 0.into();
        self.lane_cf.next = 0.into();
        for j in 0..L {
            self.lane_open.next = self.lane_open.val().replace_bit(
                j,
                (self.s_set_open.q.val().get_bit(j) & self.s_open_to.q.val().get_bit(j))
                    | (!self.s_set_open.q.val().get_bit(j) & self.open.q.val()),
            );
            self.lane_used.next = self.lane_used.val().replace_bit(
                j,
                (self.s_set_used.q.val().get_bit(j) & self.s_used_to.q.val().get_bit(j))
                    | (!self.s_set_used.q.val().get_bit(j) & self.used.q.val()),
            );
            self.lane_cf.next = self
                .lane_cf
                .val()
                .replace_bit(j, self.conflict_next.q.val());
            if self.s_acted.q.val().get_bit(j) {
                self.lane_cf.next = self.lane_cf.val().replace_bit(j, self.first_cf.val());
            }
            if self.s_acted_twice.q.val().get_bit(j) {
                self.lane_cf.next = self
                    .lane_cf
                    .val()
                    .replace_bit(j, self.s_cf_to.q.val().get_bit(j));
            }
        }
        self.hits.next = self.s_column.q.val() & self.lane_open.val() & self.lane_used.val();
        self.conflicts.next = self.s_column.q.val()
            & self.lane_open.val()
            & !self.lane_used.val()
            & self.lane_cf.val();
        self.misses.next = self.s_column.q.val()
            & !(self.lane_open.val() & (self.lane_used.val() | self.lane_cf.val()));
        self.unused.next = self.s_pre.q.val() & self.lane_open.val() & !self.lane_used.val();
        // The state after the clock.
        self.open.d.next = self.open.q.val();
        if self.s_end_set_open.q.val() {
            self.open.d.next = self.s_end_open_to.q.val();
        }
        self.used.d.next = self.used.q.val();
        if self.s_end_set_used.q.val() {
            self.used.d.next = self.s_end_used_to.q.val();
        }
        self.conflict_next.d.next = self.conflict_next.q.val();
        if self.s_end_acted.q.val() {
            self.conflict_next.d.next = self.first_cf.val();
        }
        if self.s_end_acted_twice.q.val() {
            self.conflict_next.d.next = self.s_end_cf_to.q.val();
        }
        self.row.d.next = self.row_next.val();
        self.closed_row.d.next = self.closed_row_next.val();
        self.closed_valid.d.next = self.closed_valid.q.val() & !self.s_end_clear.q.val();
        if self.s_end_pre.q.val() & self.open.q.val() {
            self.closed_valid.d.next = true;
        }
        if self.s_end_acted.q.val() {
            self.closed_valid.d.next = self.s_end_pre.q.val();
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
        self.rd.lanes.next = self.s_rd.q.val();
        self.wr.lanes.next = self.s_wr.q.val();
        self.act_count.lanes.next = self.s_act.q.val();
        self.pre_count.lanes.next = self.s_pre_count.q.val();
        self.hit.lanes.next = self.hits.val();
        self.miss.lanes.next = self.misses.val();
        self.conflict.lanes.next = self.conflicts.val();
        self.unused_act.lanes.next = self.unused.val();
        self.rd.hold_write.next = self.hold_write.val();
        self.rd.hold_slot.next = self.hold_slot.val();
        self.rd.read_slot.next = self.read_slot.val();
        self.wr.hold_write.next = self.hold_write.val();
        self.wr.hold_slot.next = self.hold_slot.val();
        self.wr.read_slot.next = self.read_slot.val();
        self.act_count.hold_write.next = self.hold_write.val();
        self.act_count.hold_slot.next = self.hold_slot.val();
        self.act_count.read_slot.next = self.read_slot.val();
        self.pre_count.hold_write.next = self.hold_write.val();
        self.pre_count.hold_slot.next = self.hold_slot.val();
        self.pre_count.read_slot.next = self.read_slot.val();
        self.hit.hold_write.next = self.hold_write.val();
        self.hit.hold_slot.next = self.hold_slot.val();
        self.hit.read_slot.next = self.read_slot.val();
        self.miss.hold_write.next = self.hold_write.val();
        self.miss.hold_slot.next = self.hold_slot.val();
        self.miss.read_slot.next = self.read_slot.val();
        self.conflict.hold_write.next = self.hold_write.val();
        self.conflict.hold_slot.next = self.hold_slot.val();
        self.conflict.read_slot.next = self.read_slot.val();
        self.unused_act.hold_write.next = self.hold_write.val();
        self.unused_act.hold_slot.next = self.hold_slot.val();
        self.unused_act.read_slot.next = self.read_slot.val();
        // A tree of two-way choices by `read_sel`'s bits, three deep,
        // rather than a chain of eight compares.
        if self.read_sel.val().get_bit(2) {
            if self.read_sel.val().get_bit(1) {
                if self.read_sel.val().get_bit(0) {
                    self.read_value.next = self.unused_act.held.val();
                } else {
                    self.read_value.next = self.conflict.held.val();
                }
            } else if self.read_sel.val().get_bit(0) {
                self.read_value.next = self.miss.held.val();
            } else {
                self.read_value.next = self.hit.held.val();
            }
        } else if self.read_sel.val().get_bit(1) {
            if self.read_sel.val().get_bit(0) {
                self.read_value.next = self.pre_count.held.val();
            } else {
                self.read_value.next = self.act_count.held.val();
            }
        } else if self.read_sel.val().get_bit(0) {
            self.read_value.next = self.wr.held.val();
        } else {
            self.read_value.next = self.rd.held.val();
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
