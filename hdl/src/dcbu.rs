//! DCBU, the DDR command buffer unit: registers the DIMM's command/address
//! pins every command clock and decodes them with the JEDEC DDR3 truth table.
//!
//! With `L` lanes the pins arrive deserialized (ISERDES-like): one fabric
//! clock carries `L` command clocks, lane 0 being the earliest. The block
//! never interprets rows or columns beyond the pin mapping; that is the
//! DSMU's job. It does check them against the geometry: an ACT whose rank,
//! bank or row, or a RD/WR whose rank, bank or column, does not fit is
//! decoded as [`kind::OUT_OF_RANGE`] (which the DSMU ignores) and counted,
//! as the golden model does (board.md step 1), instead of reaching the
//! DSMU's tables with its high bits cut off.

use crate::dsmu::LineGeometry;
use crate::pins::DimmPins;
use rust_hdl::prelude::*;

/// Decoded command kinds on `cmd_kind` (4 bits).
pub mod kind {
    /// Deselect (no chip select asserted): no command this tick.
    pub const NONE: u64 = 0;
    pub const ACT: u64 = 1;
    pub const RD: u64 = 2;
    pub const WR: u64 = 3;
    pub const RDA: u64 = 4;
    pub const WRA: u64 = 5;
    pub const PRE: u64 = 6;
    pub const PREA: u64 = 7;
    pub const REF: u64 = 8;
    pub const MRS: u64 = 9;
    pub const ZQ: u64 = 10;
    pub const NOP: u64 = 11;
    /// ACT/RD/RDA/WR/WRA beyond the geometry: changes nothing, counted in
    /// `out_of_range`.
    pub const OUT_OF_RANGE: u64 = 12;
    /// Chip selected while CKE is low (self-refresh or power-down entry):
    /// not a command the board understands; counted by the DSMU.
    pub const UNKNOWN: u64 = 15;
}

/// The pin levels of one command clock (active-low signals as on the DIMM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandPins {
    pub cs_n: u64,
    pub ras_n: bool,
    pub cas_n: bool,
    pub we_n: bool,
    pub cke: bool,
    pub ba: u64,
    pub addr: u64,
}

impl CommandPins {
    /// No chip selected (DES).
    pub const DESELECT: CommandPins = CommandPins {
        cs_n: 0xF,
        ras_n: true,
        cas_n: true,
        we_n: true,
        cke: true,
        ba: 0,
        addr: 0,
    };

    /// The pins a memory controller drives for `kind` (a [`kind`] code) to
    /// `rank`/`bank` with `arg` (row for ACT, column for RD/WR). Columns map
    /// to A[9:0] and A11 (A10 is auto-precharge, A12 burst chop).
    pub fn for_command(kind_code: u64, rank: u64, bank: u64, arg: u64) -> CommandPins {
        let (ras_n, cas_n, we_n) = match kind_code {
            kind::ACT => (false, true, true),
            kind::RD | kind::RDA => (true, false, true),
            kind::WR | kind::WRA => (true, false, false),
            kind::PRE | kind::PREA => (false, true, false),
            kind::REF => (false, false, true),
            kind::MRS => (false, false, false),
            kind::ZQ => (true, true, false),
            _ => (true, true, true),
        };
        if kind_code == kind::NONE {
            return CommandPins::DESELECT;
        }
        let column_pins = (arg & 0x3FF) | ((arg >> 10) & 1) << 11;
        let addr = match kind_code {
            kind::ACT => arg & 0x3FFFF,
            kind::RD | kind::WR => column_pins,
            kind::RDA | kind::WRA => column_pins | 1 << 10,
            kind::PREA => 1 << 10,
            _ => 0,
        };
        CommandPins {
            cs_n: 0xF & !(1 << (rank & 3)),
            ras_n,
            cas_n,
            we_n,
            cke: kind_code != kind::UNKNOWN,
            ba: bank & 0xF,
            addr,
        }
    }
}

#[derive(LogicBlock)]
pub struct Dcbu<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub pins: [DimmPins; L],
    /// Decoded command per lane (a [`kind`] code), two fabric clocks after
    /// the pins.
    pub cmd_kind: [Signal<Out, Bits<4>>; L],
    pub cmd_rank: [Signal<Out, Bits<2>>; L],
    pub cmd_bank: [Signal<Out, Bits<4>>; L],
    /// Row for ACT, column for RD/WR/RDA/WRA, 0 otherwise.
    pub cmd_arg: [Signal<Out, Bits<18>>; L],
    /// For the Statistic Unit, which counts what the bus shows whether or
    /// not it fits the geometry: the kind before the out-of-range check
    /// (ACT, RD, ... for a command `cmd_kind` calls out of range), and the
    /// address pins A[17:0] (the row of an ACT, whatever the geometry).
    pub bus_kind: [Signal<Out, Bits<4>>; L],
    pub bus_addr: [Signal<Out, Bits<18>>; L],
    /// Tick of lane 0 of the decoded commands.
    pub tick: Signal<Out, Bits<64>>,
    /// Low until the first sampled fabric clock has reached the outputs.
    pub tick_valid: Signal<Out, Bit>,
    /// ACT/RD/WR commands that did not fit the geometry, so far.
    pub out_of_range: Signal<Out, Bits<32>>,
    /// From power-on, no chip selected: the registers' first contents are
    /// not a command.
    pin_cs_n: [DFFWithInit<Bits<4>>; L],
    pin_ras_n: [DFF<Bit>; L],
    pin_cas_n: [DFF<Bit>; L],
    pin_we_n: [DFF<Bit>; L],
    pin_cke: [DFF<Bit>; L],
    pin_ba: [DFF<Bits<4>>; L],
    pin_addr: [DFF<Bits<18>>; L],
    pin_tick: DFF<Bits<64>>,
    pin_valid: DFF<Bit>,
    /// The free-running tick counter in two halves (no 64-bit carry chain
    /// between registers): the high half takes `next_hi_inc` (kept at
    /// `next_hi + 1`) when the low half carries.
    next_lo: DFF<Bits<32>>,
    next_hi: DFF<Bits<32>>,
    next_hi_inc: DFFWithInit<Bits<32>>,
    next_lo_sum: Signal<Local, Bits<33>>,
    dec_kind: [DFF<Bits<4>>; L],
    dec_rank: [DFF<Bits<2>>; L],
    dec_bank: [DFF<Bits<4>>; L],
    dec_arg: [DFF<Bits<18>>; L],
    dec_bus_kind: [DFF<Bits<4>>; L],
    dec_addr: [DFF<Bits<18>>; L],
    bus_kind_now: [Signal<Local, Bits<4>>; L],
    dec_tick: DFF<Bits<64>>,
    dec_valid: DFF<Bit>,
    oor_count: DFF<Bits<32>>,
    /// Combinational decode of the registered pins, flat: every term
    /// from the pins, none from another term's priority chain.
    kind_now: [Signal<Local, Bits<4>>; L],
    kind_base: [Signal<Local, Bits<4>>; L],
    rank_now: [Signal<Local, Bits<2>>; L],
    column_now: [Signal<Local, Bits<18>>; L],
    /// A chip selected with CKE high: the truth table applies.
    issued: [Signal<Local, Bit>; L],
    /// ACT, and RD/WR/RDA/WRA, by their pins alone.
    is_act: [Signal<Local, Bit>; L],
    is_column: [Signal<Local, Bit>; L],
    fits_now: [Signal<Local, Bit>; L],
    oor_now: [Signal<Local, Bit>; L],
    /// The clock's out-of-range commands (at most 8), counted beside the
    /// decode and added to the total once.
    oor_lanes: [Signal<Local, Bits<4>>; L],
    oor_clock: Signal<Local, Bits<4>>,
    lanes: Constant<Bits<33>>,
    // The pin bits above the geometry's rank, bank, row and column (in
    // columns) widths: any of them set means out of range. (Masks rather
    // than `<=` so a geometry as wide as the pins is no constant compare.)
    rank_high: Constant<Bits<2>>,
    bank_high: Constant<Bits<4>>,
    row_high: Constant<Bits<18>>,
    column_high: Constant<Bits<18>>,
}

impl<const L: usize> Default for Dcbu<L> {
    /// The widest geometry the pins carry (4 ranks, 16 banks, 18 row bits,
    /// 8 column-line bits): nothing is out of range.
    fn default() -> Self {
        Dcbu::new(LineGeometry {
            rank_bits: 2,
            bank_bits: 4,
            row_bits: 18,
            col_line_bits: 8,
        })
    }
}

impl<const L: usize> Dcbu<L> {
    pub fn new(geometry: LineGeometry) -> Self {
        assert!(matches!(L, 1 | 2 | 4 | 8), "L must be 1, 2, 4 or 8");
        let g = geometry.checked();
        // Pin bits above `bits` within a `width`-bit field.
        let high = |bits: u32, width: u32| ((1u64 << width) - 1) & !((1u64 << bits) - 1);
        Self {
            clock: Default::default(),
            pins: crate::pins::lanes(),
            cmd_kind: std::array::from_fn(|_| Default::default()),
            cmd_rank: std::array::from_fn(|_| Default::default()),
            cmd_bank: std::array::from_fn(|_| Default::default()),
            cmd_arg: std::array::from_fn(|_| Default::default()),
            bus_kind: std::array::from_fn(|_| Default::default()),
            bus_addr: std::array::from_fn(|_| Default::default()),
            tick: Default::default(),
            tick_valid: Default::default(),
            out_of_range: Default::default(),
            pin_cs_n: std::array::from_fn(|_| DFFWithInit::new(0xFu64.to_bits())),
            pin_ras_n: std::array::from_fn(|_| Default::default()),
            pin_cas_n: std::array::from_fn(|_| Default::default()),
            pin_we_n: std::array::from_fn(|_| Default::default()),
            pin_cke: std::array::from_fn(|_| Default::default()),
            pin_ba: std::array::from_fn(|_| Default::default()),
            pin_addr: std::array::from_fn(|_| Default::default()),
            pin_tick: Default::default(),
            pin_valid: Default::default(),
            next_lo: Default::default(),
            next_hi: Default::default(),
            next_hi_inc: DFFWithInit::new(1u64.to_bits()),
            next_lo_sum: Default::default(),
            dec_kind: std::array::from_fn(|_| Default::default()),
            dec_rank: std::array::from_fn(|_| Default::default()),
            dec_bank: std::array::from_fn(|_| Default::default()),
            dec_arg: std::array::from_fn(|_| Default::default()),
            dec_bus_kind: std::array::from_fn(|_| Default::default()),
            dec_addr: std::array::from_fn(|_| Default::default()),
            bus_kind_now: std::array::from_fn(|_| Default::default()),
            dec_tick: Default::default(),
            dec_valid: Default::default(),
            oor_count: Default::default(),
            kind_now: std::array::from_fn(|_| Default::default()),
            kind_base: std::array::from_fn(|_| Default::default()),
            rank_now: std::array::from_fn(|_| Default::default()),
            column_now: std::array::from_fn(|_| Default::default()),
            issued: std::array::from_fn(|_| Default::default()),
            is_act: std::array::from_fn(|_| Default::default()),
            is_column: std::array::from_fn(|_| Default::default()),
            fits_now: std::array::from_fn(|_| Default::default()),
            oor_now: std::array::from_fn(|_| Default::default()),
            oor_lanes: std::array::from_fn(|_| Default::default()),
            oor_clock: Default::default(),
            lanes: Constant::new((L as u64).to_bits()),
            rank_high: Constant::new(high(g.rank_bits, 2).to_bits()),
            bank_high: Constant::new(high(g.bank_bits, 4).to_bits()),
            row_high: Constant::new(high(g.row_bits, 18).to_bits()),
            column_high: Constant::new(high(g.col_line_bits + 3, 18).to_bits()),
        }
    }
}

impl<const L: usize> Logic for Dcbu<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            pin_tick,
            pin_valid,
            next_lo,
            next_hi,
            next_hi_inc,
            dec_tick,
            dec_valid,
            oor_count
        );
        self.next_lo_sum.next = bit_cast::<33, 32>(self.next_lo.q.val()) + self.lanes.val();
        self.next_lo.d.next = self.next_lo_sum.val().get_bits::<32>(0);
        if self.next_lo_sum.val().get_bit(32) {
            self.next_hi.d.next = self.next_hi_inc.q.val();
            self.next_hi_inc.d.next = self.next_hi_inc.q.val() + 1;
        }
        self.pin_tick.d.next = (bit_cast::<64, 32>(self.next_hi.q.val()) << 32)
            | bit_cast::<64, 32>(self.next_lo.q.val());
        self.pin_valid.d.next = true;
        self.dec_tick.d.next = self.pin_tick.q.val();
        self.dec_valid.d.next = self.pin_valid.q.val();
        self.tick.next = self.dec_tick.q.val();
        self.tick_valid.next = self.dec_valid.q.val();
        self.out_of_range.next = self.oor_count.q.val();
        for i in 0..L {
            self.pin_cs_n[i].clock.next = self.clock.val();
            self.pin_ras_n[i].clock.next = self.clock.val();
            self.pin_cas_n[i].clock.next = self.clock.val();
            self.pin_we_n[i].clock.next = self.clock.val();
            self.pin_cke[i].clock.next = self.clock.val();
            self.pin_ba[i].clock.next = self.clock.val();
            self.pin_addr[i].clock.next = self.clock.val();
            self.dec_kind[i].clock.next = self.clock.val();
            self.dec_rank[i].clock.next = self.clock.val();
            self.dec_bank[i].clock.next = self.clock.val();
            self.dec_arg[i].clock.next = self.clock.val();
            self.dec_bus_kind[i].clock.next = self.clock.val();
            self.dec_addr[i].clock.next = self.clock.val();
            self.pin_cs_n[i].d.next = self.pins[i].cs_n.val();
            self.pin_ras_n[i].d.next = self.pins[i].ras_n.val();
            self.pin_cas_n[i].d.next = self.pins[i].cas_n.val();
            self.pin_we_n[i].d.next = self.pins[i].we_n.val();
            self.pin_cke[i].d.next = self.pins[i].cke.val();
            self.pin_ba[i].d.next = self.pins[i].ba.val();
            self.pin_addr[i].d.next = self.pins[i].addr.val();
            // The lowest selected rank wins (a broadcast MRS selects several).
            self.rank_now[i].next = 0.into();
            if !self.pin_cs_n[i].q.val().get_bit(3) {
                self.rank_now[i].next = 3.into();
            }
            if !self.pin_cs_n[i].q.val().get_bit(2) {
                self.rank_now[i].next = 2.into();
            }
            if !self.pin_cs_n[i].q.val().get_bit(1) {
                self.rank_now[i].next = 1.into();
            }
            if !self.pin_cs_n[i].q.val().get_bit(0) {
                self.rank_now[i].next = 0.into();
            }
            // JEDEC DDR3 truth table on {RAS_n, CAS_n, WE_n} (and A10).
            self.kind_base[i].next = 11.into();
            if !self.pin_ras_n[i].q.val() & self.pin_cas_n[i].q.val() & self.pin_we_n[i].q.val() {
                self.kind_base[i].next = 1.into();
            }
            if self.pin_ras_n[i].q.val() & !self.pin_cas_n[i].q.val() & self.pin_we_n[i].q.val() {
                if self.pin_addr[i].q.val().get_bit(10) {
                    self.kind_base[i].next = 4.into();
                } else {
                    self.kind_base[i].next = 2.into();
                }
            }
            if self.pin_ras_n[i].q.val() & !self.pin_cas_n[i].q.val() & !self.pin_we_n[i].q.val() {
                if self.pin_addr[i].q.val().get_bit(10) {
                    self.kind_base[i].next = 5.into();
                } else {
                    self.kind_base[i].next = 3.into();
                }
            }
            if !self.pin_ras_n[i].q.val() & self.pin_cas_n[i].q.val() & !self.pin_we_n[i].q.val() {
                if self.pin_addr[i].q.val().get_bit(10) {
                    self.kind_base[i].next = 7.into();
                } else {
                    self.kind_base[i].next = 6.into();
                }
            }
            if !self.pin_ras_n[i].q.val() & !self.pin_cas_n[i].q.val() & self.pin_we_n[i].q.val() {
                self.kind_base[i].next = 8.into();
            }
            if !self.pin_ras_n[i].q.val() & !self.pin_cas_n[i].q.val() & !self.pin_we_n[i].q.val() {
                self.kind_base[i].next = 9.into();
            }
            if self.pin_ras_n[i].q.val() & self.pin_cas_n[i].q.val() & !self.pin_we_n[i].q.val() {
                self.kind_base[i].next = 10.into();
            }
            self.issued[i].next = !self.pin_cs_n[i].q.val().all() & self.pin_cke[i].q.val();
            self.is_act[i].next =
                !self.pin_ras_n[i].q.val() & self.pin_cas_n[i].q.val() & self.pin_we_n[i].q.val();
            self.is_column[i].next = self.pin_ras_n[i].q.val() & !self.pin_cas_n[i].q.val();
            // Column {A11, A9..A0} (A10 = auto-precharge).
            self.column_now[i].next =
                (self.pin_addr[i].q.val() & 0x3FF) | ((self.pin_addr[i].q.val() >> 1) & 0x400);
            // Geometry check of ACT and RD/WR/RDA/WRA.
            self.fits_now[i].next = ((self.rank_now[i].val() & self.rank_high.val()) == 0)
                & ((self.pin_ba[i].q.val() & self.bank_high.val()) == 0)
                & !(self.is_act[i].val() & ((self.pin_addr[i].q.val() & self.row_high.val()) != 0))
                & !(self.is_column[i].val()
                    & ((self.column_now[i].val() & self.column_high.val()) != 0));
            self.oor_now[i].next = self.issued[i].val()
                & (self.is_act[i].val() | self.is_column[i].val())
                & !self.fits_now[i].val();
            // Deselect, then power-down or self-refresh entry (CKE low),
            // then out of range, then the truth table.
            self.kind_now[i].next = self.kind_base[i].val();
            if self.oor_now[i].val() {
                self.kind_now[i].next = 12.into();
            }
            if !self.pin_cke[i].q.val() {
                self.kind_now[i].next = 15.into();
            }
            if self.pin_cs_n[i].q.val().all() {
                self.kind_now[i].next = 0.into();
            }
            self.dec_kind[i].d.next = self.kind_now[i].val();
            self.bus_kind_now[i].next = self.kind_base[i].val();
            if !self.pin_cke[i].q.val() {
                self.bus_kind_now[i].next = 15.into();
            }
            if self.pin_cs_n[i].q.val().all() {
                self.bus_kind_now[i].next = 0.into();
            }
            self.dec_bus_kind[i].d.next = self.bus_kind_now[i].val();
            self.dec_addr[i].d.next = self.pin_addr[i].q.val();
            self.bus_kind[i].next = self.dec_bus_kind[i].q.val();
            self.bus_addr[i].next = self.dec_addr[i].q.val();
            self.dec_rank[i].d.next = self.rank_now[i].val();
            self.dec_bank[i].d.next = self.pin_ba[i].q.val();
            // Row for ACT; column for RD/WR; 0 otherwise and out of range.
            self.dec_arg[i].d.next = 0.into();
            if self.issued[i].val() & self.fits_now[i].val() & self.is_act[i].val() {
                self.dec_arg[i].d.next = self.pin_addr[i].q.val();
            }
            if self.issued[i].val() & self.fits_now[i].val() & self.is_column[i].val() {
                self.dec_arg[i].d.next = self.column_now[i].val();
            }
            self.cmd_kind[i].next = self.dec_kind[i].q.val();
            self.cmd_rank[i].next = self.dec_rank[i].q.val();
            self.cmd_bank[i].next = self.dec_bank[i].q.val();
            self.cmd_arg[i].next = self.dec_arg[i].q.val();
        }
        // Out-of-range commands: the clock's count, then one add.
        self.oor_lanes[0].next = 0.into();
        if self.oor_now[0].val() {
            self.oor_lanes[0].next = 1.into();
        }
        for i in 1..L {
            self.oor_lanes[i].next = self.oor_lanes[i - 1].val() + self.oor_now[i].val();
        }
        for i in 0..L {
            self.oor_clock.next = self.oor_lanes[i].val();
        }
        self.oor_count.d.next = self.oor_count.q.val() + bit_cast::<32, 4>(self.oor_clock.val());
    }
}
