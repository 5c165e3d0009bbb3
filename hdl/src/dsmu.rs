//! DSMU, the DDR state machine unit: the simplified per-(rank, bank) state
//! (board.md step 1): ACT stores the open row, RD/RDA/WR/WRA with an open
//! row become a reference to line `{rank, row, bank, column >> 3}`; a read
//! or write with no row opened since reset counts as a protocol error.
//! PRE, PREA, REF, MRS, ZQ, NOP change nothing; unknown commands are counted.
//!
//! Up to 4 ranks x 16 banks. With `L` lanes the commands of one fabric clock
//! are applied in lane order: an ACT in lane i is seen by a read in lane j > i.

use rust_hdl::prelude::*;

/// Line index widths (format.md section 2), build parameters of the DSMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineGeometry {
    pub rank_bits: u32,
    pub bank_bits: u32,
    pub row_bits: u32,
    pub col_line_bits: u32,
}

impl LineGeometry {
    /// Panics on widths the hardware cannot hold (see format.md section 2).
    pub fn checked(self) -> Self {
        assert!(self.rank_bits <= 2, "at most 4 ranks in hardware");
        assert!((1..=4).contains(&self.bank_bits));
        assert!((10..=18).contains(&self.row_bits));
        assert!((3..=8).contains(&self.col_line_bits));
        self
    }
    pub fn line_bits(&self) -> u32 {
        self.rank_bits + self.bank_bits + self.row_bits + self.col_line_bits
    }
    /// The line index of `(rank, row, bank, column)`.
    pub fn line(&self, rank: u64, row: u64, bank: u64, column: u64) -> u64 {
        let col_line = column >> 3;
        (((rank << self.row_bits | row) << self.bank_bits | bank) << self.col_line_bits) | col_line
    }
}

/// `ddr3-4g`: 2 ranks, 8 banks, 15 row bits, 7 column-line bits (24-bit lines).
pub const DDR3_4G: LineGeometry = LineGeometry {
    rank_bits: 1,
    bank_bits: 3,
    row_bits: 15,
    col_line_bits: 7,
};

fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

#[derive(LogicBlock)]
pub struct Dsmu<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub cmd_kind: [Signal<In, Bits<4>>; L],
    pub cmd_rank: [Signal<In, Bits<2>>; L],
    pub cmd_bank: [Signal<In, Bits<4>>; L],
    pub cmd_arg: [Signal<In, Bits<18>>; L],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// One fabric clock after the commands.
    pub ref_valid: [Signal<Out, Bit>; L],
    pub ref_write: [Signal<Out, Bit>; L],
    pub ref_line: [Signal<Out, Bits<48>>; L],
    pub ref_rank: [Signal<Out, Bits<2>>; L],
    pub ref_row: [Signal<Out, Bits<18>>; L],
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub protocol_errors: Signal<Out, Bits<32>>,
    pub unknown_commands: Signal<Out, Bits<32>>,
    open_row: [DFF<Bits<18>>; 64],
    row_opened: [DFF<Bit>; 64],
    out_valid: [DFF<Bit>; L],
    out_write: [DFF<Bit>; L],
    out_line: [DFF<Bits<48>>; L],
    out_rank: [DFF<Bits<2>>; L],
    out_row: [DFF<Bits<18>>; L],
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    errors: DFF<Bits<32>>,
    unknowns: DFF<Bits<32>>,
    address: [LaneAddress; L],
    row_now: [Signal<Local, Bits<18>>; L],
    opened_now: [Signal<Local, Bit>; L],
    is_access: [Signal<Local, Bit>; L],
    error_sum: [Signal<Local, Bits<32>>; L],
    unknown_sum: [Signal<Local, Bits<32>>; L],
    row_mask: Constant<Bits<18>>,
}

impl<const L: usize> Dsmu<L> {
    pub fn new(geometry: LineGeometry) -> Self {
        let g = geometry.checked();
        Self {
            clock: Default::default(),
            cmd_kind: std::array::from_fn(|_| Default::default()),
            cmd_rank: std::array::from_fn(|_| Default::default()),
            cmd_bank: std::array::from_fn(|_| Default::default()),
            cmd_arg: std::array::from_fn(|_| Default::default()),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_write: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_rank: std::array::from_fn(|_| Default::default()),
            ref_row: std::array::from_fn(|_| Default::default()),
            tick: Default::default(),
            tick_valid: Default::default(),
            protocol_errors: Default::default(),
            unknown_commands: Default::default(),
            open_row: std::array::from_fn(|_| Default::default()),
            row_opened: std::array::from_fn(|_| Default::default()),
            out_valid: std::array::from_fn(|_| Default::default()),
            out_write: std::array::from_fn(|_| Default::default()),
            out_line: std::array::from_fn(|_| Default::default()),
            out_rank: std::array::from_fn(|_| Default::default()),
            out_row: std::array::from_fn(|_| Default::default()),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            errors: Default::default(),
            unknowns: Default::default(),
            address: std::array::from_fn(|_| LaneAddress::new(g)),
            row_now: std::array::from_fn(|_| Default::default()),
            opened_now: std::array::from_fn(|_| Default::default()),
            is_access: std::array::from_fn(|_| Default::default()),
            error_sum: std::array::from_fn(|_| Default::default()),
            unknown_sum: std::array::from_fn(|_| Default::default()),
            row_mask: Constant::new(mask(g.row_bits).to_bits()),
        }
    }
}

impl<const L: usize> Logic for Dsmu<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, out_tick, out_tick_valid, errors, unknowns);
        self.out_tick.d.next = self.tick_in.val();
        self.out_tick_valid.d.next = self.tick_valid_in.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.protocol_errors.next = self.errors.q.val();
        self.unknown_commands.next = self.unknowns.q.val();
        for e in 0..64 {
            self.open_row[e].clock.next = self.clock.val();
            self.row_opened[e].clock.next = self.clock.val();
            self.open_row[e].d.next = self.open_row[e].q.val();
            self.row_opened[e].d.next = self.row_opened[e].q.val();
        }
        for j in 0..L {
            self.out_valid[j].clock.next = self.clock.val();
            self.out_write[j].clock.next = self.clock.val();
            self.out_line[j].clock.next = self.clock.val();
            self.out_rank[j].clock.next = self.clock.val();
            self.out_row[j].clock.next = self.clock.val();
            self.address[j].rank.next = self.cmd_rank[j].val();
            self.address[j].bank.next = self.cmd_bank[j].val();
            self.address[j].column.next = self.cmd_arg[j].val();
            // Kinds 2..=5 are RD, WR, RDA, WRA.
            self.is_access[j].next = (self.cmd_kind[j].val() >= 2) & (self.cmd_kind[j].val() <= 5);
            // Open row as of this lane: the register, or an ACT earlier in
            // this fabric clock (later lanes override earlier ones).
            self.row_now[j].next = 0.into();
            self.opened_now[j].next = false;
            for e in 0..64 {
                if self.address[j].slot.val().index() == e {
                    self.row_now[j].next = self.open_row[e].q.val();
                    self.opened_now[j].next = self.row_opened[e].q.val();
                }
            }
            for i in 0..L {
                if (i < j)
                    & (self.cmd_kind[i].val() == 1)
                    & (self.address[i].slot.val() == self.address[j].slot.val())
                {
                    self.row_now[j].next = self.cmd_arg[i].val() & self.row_mask.val();
                    self.opened_now[j].next = true;
                }
            }
            // After `row_now`'s last write: the generated Verilog runs this
            // block once, top to bottom, and a read ahead of the write
            // would pass the previous evaluation's row.
            self.address[j].row.next = self.row_now[j].val();
            for e in 0..64 {
                if (self.cmd_kind[j].val() == 1) & (self.address[j].slot.val().index() == e) {
                    self.open_row[e].d.next = self.cmd_arg[j].val() & self.row_mask.val();
                    self.row_opened[e].d.next = true;
                }
            }
            self.out_valid[j].d.next = self.is_access[j].val() & self.opened_now[j].val();
            // Kinds 3 and 5 are WR and WRA.
            self.out_write[j].d.next =
                (self.cmd_kind[j].val() == 3) | (self.cmd_kind[j].val() == 5);
            self.out_line[j].d.next = self.address[j].line.val();
            self.out_rank[j].d.next = self.address[j].rank_masked.val();
            self.out_row[j].d.next = self.row_now[j].val();
            self.ref_valid[j].next = self.out_valid[j].q.val();
            self.ref_write[j].next = self.out_write[j].q.val();
            self.ref_line[j].next = self.out_line[j].q.val();
            self.ref_rank[j].next = self.out_rank[j].q.val();
            self.ref_row[j].next = self.out_row[j].q.val();
        }
        // Per-lane counts summed in lane order (kind 15 is unknown).
        self.error_sum[0].next =
            self.errors.q.val() + (self.is_access[0].val() & !self.opened_now[0].val());
        self.unknown_sum[0].next = self.unknowns.q.val() + (self.cmd_kind[0].val() == 15);
        for j in 1..L {
            self.error_sum[j].next =
                self.error_sum[j - 1].val() + (self.is_access[j].val() & !self.opened_now[j].val());
            self.unknown_sum[j].next =
                self.unknown_sum[j - 1].val() + (self.cmd_kind[j].val() == 15);
        }
        // The last lane's sum wins.
        for j in 0..L {
            self.errors.d.next = self.error_sum[j].val();
            self.unknowns.d.next = self.unknown_sum[j].val();
        }
    }
}

/// Combinational: the table slot `{rank, bank}` and the line index
/// `{rank, row, bank, column >> 3}` of one lane, widths from the geometry.
#[derive(LogicBlock)]
pub struct LaneAddress {
    pub rank: Signal<In, Bits<2>>,
    pub bank: Signal<In, Bits<4>>,
    pub row: Signal<In, Bits<18>>,
    pub column: Signal<In, Bits<18>>,
    pub slot: Signal<Out, Bits<6>>,
    pub line: Signal<Out, Bits<48>>,
    pub rank_masked: Signal<Out, Bits<2>>,
    rank_mask: Constant<Bits<2>>,
    bank_mask: Constant<Bits<4>>,
    col_line_mask: Constant<Bits<18>>,
    bank_bits: Constant<Bits<8>>,
    col_shift: Constant<Bits<8>>,
    bank_shift: Constant<Bits<8>>,
    rank_shift: Constant<Bits<8>>,
}

impl LaneAddress {
    pub fn new(g: LineGeometry) -> Self {
        Self {
            rank: Default::default(),
            bank: Default::default(),
            row: Default::default(),
            column: Default::default(),
            slot: Default::default(),
            line: Default::default(),
            rank_masked: Default::default(),
            rank_mask: Constant::new(mask(g.rank_bits).to_bits()),
            bank_mask: Constant::new(mask(g.bank_bits).to_bits()),
            col_line_mask: Constant::new(mask(g.col_line_bits).to_bits()),
            bank_bits: Constant::new((g.bank_bits as u64).to_bits()),
            col_shift: Constant::new((g.col_line_bits as u64).to_bits()),
            bank_shift: Constant::new(((g.col_line_bits + g.bank_bits) as u64).to_bits()),
            rank_shift: Constant::new(
                ((g.col_line_bits + g.bank_bits + g.row_bits) as u64).to_bits(),
            ),
        }
    }
}

impl Logic for LaneAddress {
    #[hdl_gen]
    fn update(&mut self) {
        self.rank_masked.next = self.rank.val() & self.rank_mask.val();
        self.slot.next = (bit_cast::<6, 2>(self.rank.val() & self.rank_mask.val())
            << self.bank_bits.val())
            | bit_cast::<6, 4>(self.bank.val() & self.bank_mask.val());
        self.line.next = (bit_cast::<48, 2>(self.rank.val() & self.rank_mask.val())
            << self.rank_shift.val())
            | (bit_cast::<48, 18>(self.row.val()) << self.bank_shift.val())
            | (bit_cast::<48, 4>(self.bank.val() & self.bank_mask.val()) << self.col_shift.val())
            | bit_cast::<48, 18>((self.column.val() >> 3) & self.col_line_mask.val());
    }
}
