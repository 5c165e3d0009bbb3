//! DSMU, the DDR state machine unit: the simplified per-(rank, bank) state
//! (board.md step 1): ACT stores the open row, RD/RDA/WR/WRA with an open
//! row become a reference to line `{rank, row, bank, column >> 3}`; a read
//! or write with no row opened since reset counts as a protocol error.
//! PRE, PREA, REF, MRS, ZQ, NOP change nothing; unknown commands are counted.
//!
//! Up to 4 ranks x 16 banks. With `L` lanes the commands of one fabric clock
//! are applied in lane order: an ACT in lane i is seen by a read in lane j > i.
//! Two stages (`LATENCY`), see `Dsmu`.

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

/// Fabric clocks from the commands to the references.
pub const LATENCY: usize = 2;

/// Most lanes a DSMU takes (the lane pairs are held flattened, `8 i + j`).
const MAX_LANES: usize = 8;
/// Lane pairs `(i, j)` at `MAX_LANES * i + j`.
const PAIRS: usize = MAX_LANES * MAX_LANES;

/// The DSMU in two stages, so that no carry chain or priority chain runs
/// from a table read to a decision in one clock:
/// - stage 1 works on the clock's commands alone: each lane's table slot,
///   which earlier lane's ACT it sees (`forward`, one-hot: the latest ACT
///   to its slot before it), and whether its own ACT is the clock's last
///   to its slot (the one that stays in the table);
/// - stage 2 reads the table (an AND-OR over the slots), takes the
///   forwarded row instead where there is one, writes the clock's last
///   ACTs into the table and forms the references.
///
/// The table is read and written in stage 2 only, so a clock sees every
/// ACT of the clocks before it. Both are AND-ORs over one-hot slot flags
/// (`TableRead`, `TableWrite`: the clock's last ACT to a slot is the only
/// one written there); with 4 lanes or more the flags are decoded in stage
/// 1 into registers, so stage 2 starts from them rather than from 6-bit
/// compares of every lane's slot against all 64.
#[derive(LogicBlock)]
pub struct Dsmu<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub cmd_kind: [Signal<In, Bits<4>>; L],
    pub cmd_rank: [Signal<In, Bits<2>>; L],
    pub cmd_bank: [Signal<In, Bits<4>>; L],
    pub cmd_arg: [Signal<In, Bits<18>>; L],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// `LATENCY` fabric clocks after the commands.
    pub ref_valid: [Signal<Out, Bit>; L],
    pub ref_write: [Signal<Out, Bit>; L],
    pub ref_line: [Signal<Out, Bits<48>>; L],
    pub ref_rank: [Signal<Out, Bits<2>>; L],
    pub ref_row: [Signal<Out, Bits<18>>; L],
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub protocol_errors: Signal<Out, Bits<32>>,
    pub unknown_commands: Signal<Out, Bits<32>>,
    // Stage 1.
    in_slot: [LaneSlot; L],
    in_act: [Signal<Local, Bit>; L],
    /// Lane i's ACT opens lane j's slot (`MAX_LANES i + j`, i < j).
    opens: [Signal<Local, Bit>; PAIRS],
    /// A lane between i and j opens j's slot too (so i's is not the one).
    shadowed: [Signal<Local, Bit>; PAIRS],
    /// Lane j's ACT is overridden by a later lane's in the same clock.
    act_overridden: [Signal<Local, Bit>; L],
    s1_kind: [DFF<Bits<4>>; L],
    s1_rank: [DFF<Bits<2>>; L],
    s1_bank: [DFF<Bits<4>>; L],
    s1_arg: [DFF<Bits<18>>; L],
    s1_slot: [DFF<Bits<6>>; L],
    s1_forward: [DFF<Bit>; PAIRS],
    s1_forwarded: [DFF<Bit>; L],
    s1_last_act: [DFF<Bit>; L],
    /// The lane's slot, one-hot (`read_hot`), and the same if its ACT is
    /// the clock's last to the slot (`write_hot`): decoded in stage 1 when
    /// `decode_early` (4 lanes or more), else in stage 2 from `s1_slot`.
    read_hot_s1: [Signal<Local, Bits<64>>; L],
    write_hot_s1: [Signal<Local, Bits<64>>; L],
    s1_read_hot: [DFF<Bits<64>>; L],
    s1_write_hot: [DFF<Bits<64>>; L],
    read_hot: [Signal<Local, Bits<64>>; L],
    write_hot: [Signal<Local, Bits<64>>; L],
    decode_early: Constant<Bit>,
    one_hot_0: Constant<Bits<64>>,
    s1_tick: DFF<Bits<64>>,
    s1_tick_valid: DFF<Bit>,
    // Stage 2.
    open_row: [DFF<Bits<18>>; 64],
    row_opened: [DFF<Bit>; 64],
    row_read: TableRead<L>,
    row_write: TableWrite<L>,
    forward_row: [Signal<Local, Bits<18>>; PAIRS],
    /// OR of `forward_row` over the lanes up to i.
    forward_or: [Signal<Local, Bits<18>>; PAIRS],
    arg_row: [Signal<Local, Bits<18>>; L],
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
    /// Per-lane counts of the clock, summed in lane order (small adds).
    error_count: [Signal<Local, Bits<4>>; L],
    unknown_count: [Signal<Local, Bits<4>>; L],
    clock_errors: Signal<Local, Bits<4>>,
    clock_unknowns: Signal<Local, Bits<4>>,
    row_mask: Constant<Bits<18>>,
}

impl<const L: usize> Dsmu<L> {
    pub fn new(geometry: LineGeometry) -> Self {
        assert!((1..=MAX_LANES).contains(&L), "the DSMU takes 1 to 8 lanes");
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
            in_slot: std::array::from_fn(|_| LaneSlot::new(g)),
            read_hot_s1: std::array::from_fn(|_| Default::default()),
            write_hot_s1: std::array::from_fn(|_| Default::default()),
            s1_read_hot: std::array::from_fn(|_| Default::default()),
            s1_write_hot: std::array::from_fn(|_| Default::default()),
            read_hot: std::array::from_fn(|_| Default::default()),
            write_hot: std::array::from_fn(|_| Default::default()),
            decode_early: Constant::new(L >= 4),
            one_hot_0: Constant::new(1u64.to_bits()),
            row_write: Default::default(),
            in_act: std::array::from_fn(|_| Default::default()),
            opens: std::array::from_fn(|_| Default::default()),
            shadowed: std::array::from_fn(|_| Default::default()),
            act_overridden: std::array::from_fn(|_| Default::default()),
            s1_kind: std::array::from_fn(|_| Default::default()),
            s1_rank: std::array::from_fn(|_| Default::default()),
            s1_bank: std::array::from_fn(|_| Default::default()),
            s1_arg: std::array::from_fn(|_| Default::default()),
            s1_slot: std::array::from_fn(|_| Default::default()),
            s1_forward: std::array::from_fn(|_| Default::default()),
            s1_forwarded: std::array::from_fn(|_| Default::default()),
            s1_last_act: std::array::from_fn(|_| Default::default()),
            s1_tick: Default::default(),
            s1_tick_valid: Default::default(),
            open_row: std::array::from_fn(|_| Default::default()),
            row_opened: std::array::from_fn(|_| Default::default()),
            row_read: Default::default(),
            forward_row: std::array::from_fn(|_| Default::default()),
            forward_or: std::array::from_fn(|_| Default::default()),
            arg_row: std::array::from_fn(|_| Default::default()),
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
            error_count: std::array::from_fn(|_| Default::default()),
            unknown_count: std::array::from_fn(|_| Default::default()),
            clock_errors: Default::default(),
            clock_unknowns: Default::default(),
            row_mask: Constant::new(mask(g.row_bits).to_bits()),
        }
    }
}

impl<const L: usize> Logic for Dsmu<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            s1_tick,
            s1_tick_valid,
            out_tick,
            out_tick_valid,
            errors,
            unknowns
        );
        self.s1_tick.d.next = self.tick_in.val();
        self.s1_tick_valid.d.next = self.tick_valid_in.val();
        self.out_tick.d.next = self.s1_tick.q.val();
        self.out_tick_valid.d.next = self.s1_tick_valid.q.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.protocol_errors.next = self.errors.q.val();
        self.unknown_commands.next = self.unknowns.q.val();
        for e in 0..64 {
            self.row_read.rows[e].next = self.open_row[e].q.val();
            self.row_read.opened[e].next = self.row_opened[e].q.val();
            self.open_row[e].clock.next = self.clock.val();
            self.row_opened[e].clock.next = self.clock.val();
            self.open_row[e].d.next = self.open_row[e].q.val();
            self.row_opened[e].d.next = self.row_opened[e].q.val();
        }
        for p in 0..PAIRS {
            self.s1_forward[p].clock.next = self.clock.val();
            self.s1_forward[p].d.next = false;
            self.opens[p].next = false;
            self.shadowed[p].next = false;
            self.forward_row[p].next = 0.into();
            self.forward_or[p].next = 0.into();
        }
        // Stage 1: the clock's commands alone.
        for j in 0..L {
            self.s1_kind[j].clock.next = self.clock.val();
            self.s1_rank[j].clock.next = self.clock.val();
            self.s1_bank[j].clock.next = self.clock.val();
            self.s1_arg[j].clock.next = self.clock.val();
            self.s1_slot[j].clock.next = self.clock.val();
            self.s1_forwarded[j].clock.next = self.clock.val();
            self.s1_last_act[j].clock.next = self.clock.val();
            self.in_slot[j].rank.next = self.cmd_rank[j].val();
            self.in_slot[j].bank.next = self.cmd_bank[j].val();
            self.in_act[j].next = self.cmd_kind[j].val() == 1;
            self.s1_kind[j].d.next = self.cmd_kind[j].val();
            self.s1_rank[j].d.next = self.cmd_rank[j].val();
            self.s1_bank[j].d.next = self.cmd_bank[j].val();
            self.s1_arg[j].d.next = self.cmd_arg[j].val();
            self.s1_slot[j].d.next = self.in_slot[j].slot.val();
        }
        for j in 0..L {
            for i in 0..L {
                if i < j {
                    self.opens[8 * i + j].next = self.in_act[i].val()
                        & (self.in_slot[i].slot.val() == self.in_slot[j].slot.val());
                }
            }
        }
        // Lane j sees the latest ACT to its slot among the lanes before it.
        for j in 0..L {
            self.s1_forwarded[j].d.next = false;
            for k in 0..L {
                // i = j - 1 - k, from the nearest lane down. (The Verilog
                // generator evaluates indices as text, with the loop
                // variables only: `8` is MAX_LANES; and it builds untaken
                // branches too, hence the `% 8`.)
                if k < j {
                    if k > 0 {
                        self.shadowed[8 * ((j + 8 - 1 - k) % 8) + j].next =
                            self.shadowed[8 * ((j + 8 - k) % 8) + j].val()
                                | self.opens[8 * ((j + 8 - k) % 8) + j].val();
                    }
                    self.s1_forward[8 * ((j + 8 - 1 - k) % 8) + j].d.next =
                        self.opens[8 * ((j + 8 - 1 - k) % 8) + j].val()
                            & !self.shadowed[8 * ((j + 8 - 1 - k) % 8) + j].val();
                    if self.opens[8 * ((j + 8 - 1 - k) % 8) + j].val() {
                        self.s1_forwarded[j].d.next = true;
                    }
                }
            }
        }
        // Lane i's ACT stays in the table unless a later lane opens its
        // slot again in the same clock.
        for i in 0..L {
            self.act_overridden[i].next = false;
            for j in 0..L {
                if (i < j)
                    & self.in_act[j].val()
                    & (self.in_slot[i].slot.val() == self.in_slot[j].slot.val())
                {
                    self.act_overridden[i].next = true;
                }
            }
            self.s1_last_act[i].d.next = self.in_act[i].val() & !self.act_overridden[i].val();
            self.read_hot_s1[i].next = self.one_hot_0.val() << self.in_slot[i].slot.val();
            self.write_hot_s1[i].next = 0.into();
            if self.in_act[i].val() & !self.act_overridden[i].val() {
                self.write_hot_s1[i].next = self.read_hot_s1[i].val();
            }
            self.s1_read_hot[i].clock.next = self.clock.val();
            self.s1_write_hot[i].clock.next = self.clock.val();
            self.s1_read_hot[i].d.next = self.read_hot_s1[i].val();
            self.s1_write_hot[i].d.next = self.write_hot_s1[i].val();
        }
        // Stage 2: the table, the forwarded rows, the references.
        for j in 0..L {
            self.out_valid[j].clock.next = self.clock.val();
            self.out_write[j].clock.next = self.clock.val();
            self.out_line[j].clock.next = self.clock.val();
            self.out_rank[j].clock.next = self.clock.val();
            self.out_row[j].clock.next = self.clock.val();
            self.arg_row[j].next = self.s1_arg[j].q.val() & self.row_mask.val();
            self.read_hot[j].next = self.s1_read_hot[j].q.val();
            self.write_hot[j].next = self.s1_write_hot[j].q.val();
            if !self.decode_early.val() {
                self.read_hot[j].next = self.one_hot_0.val() << self.s1_slot[j].q.val();
                self.write_hot[j].next = 0.into();
                if self.s1_last_act[j].q.val() {
                    self.write_hot[j].next = self.read_hot[j].val();
                }
            }
            self.row_read.hot[j].next = self.read_hot[j].val();
            self.row_write.hot[j].next = self.write_hot[j].val();
            self.row_write.arg[j].next = self.arg_row[j].val();
        }
        // The clock's last ACT to a slot stays (one lane per slot).
        for e in 0..64 {
            if self.row_write.write[e].val() {
                self.open_row[e].d.next = self.row_write.row[e].val();
                self.row_opened[e].d.next = true;
            }
        }
        for j in 0..L {
            // An AND-OR of the one-hot forward flags, lane order.
            for i in 0..L {
                if i < j {
                    if self.s1_forward[8 * i + j].q.val() {
                        self.forward_row[8 * i + j].next = self.arg_row[i].val();
                    }
                    self.forward_or[8 * i + j].next = self.forward_row[8 * i + j].val();
                    if i > 0 {
                        self.forward_or[8 * i + j].next =
                            self.forward_or[8 * ((i + 8 - 1) % 8) + j].val()
                                | self.forward_row[8 * i + j].val();
                    }
                }
            }
            self.row_now[j].next = self.row_read.row[j].val();
            self.opened_now[j].next = self.row_read.opened_out[j].val();
            // (Lane 0 forwards nothing: its flag is never set.)
            if (j > 0) & self.s1_forwarded[j].q.val() {
                self.row_now[j].next = self.forward_or[8 * ((j + 8 - 1) % 8) + j].val();
                self.opened_now[j].next = true;
            }
        }
        for j in 0..L {
            self.address[j].rank.next = self.s1_rank[j].q.val();
            self.address[j].bank.next = self.s1_bank[j].q.val();
            self.address[j].column.next = self.s1_arg[j].q.val();
            // Kinds 2..=5 are RD, WR, RDA, WRA.
            self.is_access[j].next =
                (self.s1_kind[j].q.val() >= 2) & (self.s1_kind[j].q.val() <= 5);
            self.address[j].row.next = self.row_now[j].val();
            self.out_valid[j].d.next = self.is_access[j].val() & self.opened_now[j].val();
            // Kinds 3 and 5 are WR and WRA.
            self.out_write[j].d.next =
                (self.s1_kind[j].q.val() == 3) | (self.s1_kind[j].q.val() == 5);
            self.out_line[j].d.next = self.address[j].line.val();
            self.out_rank[j].d.next = self.address[j].rank_masked.val();
            self.out_row[j].d.next = self.row_now[j].val();
            self.ref_valid[j].next = self.out_valid[j].q.val();
            self.ref_write[j].next = self.out_write[j].q.val();
            self.ref_line[j].next = self.out_line[j].q.val();
            self.ref_rank[j].next = self.out_rank[j].q.val();
            self.ref_row[j].next = self.out_row[j].q.val();
        }
        // The clock's counts in 4 bits, then one add to each counter
        // (kind 15 is unknown).
        self.error_count[0].next = 0.into();
        if self.is_access[0].val() & !self.opened_now[0].val() {
            self.error_count[0].next = 1.into();
        }
        self.unknown_count[0].next = 0.into();
        if self.s1_kind[0].q.val() == 15 {
            self.unknown_count[0].next = 1.into();
        }
        for j in 1..L {
            self.error_count[j].next = self.error_count[j - 1].val();
            if self.is_access[j].val() & !self.opened_now[j].val() {
                self.error_count[j].next = self.error_count[j - 1].val() + 1;
            }
            self.unknown_count[j].next = self.unknown_count[j - 1].val();
            if self.s1_kind[j].q.val() == 15 {
                self.unknown_count[j].next = self.unknown_count[j - 1].val() + 1;
            }
        }
        // The last lane's count.
        for j in 0..L {
            self.clock_errors.next = self.error_count[j].val();
            self.clock_unknowns.next = self.unknown_count[j].val();
        }
        self.errors.d.next = self.errors.q.val() + bit_cast::<32, 4>(self.clock_errors.val());
        self.unknowns.d.next = self.unknowns.q.val() + bit_cast::<32, 4>(self.clock_unknowns.val());
    }
}

/// Combinational: each lane's table read, an AND-OR over the 64 slots
/// with the lane's one-hot slot flags, so its depth does not grow with
/// the slot's position.
#[derive(LogicBlock)]
pub struct TableRead<const L: usize> {
    pub rows: [Signal<In, Bits<18>>; 64],
    pub opened: [Signal<In, Bit>; 64],
    pub hot: [Signal<In, Bits<64>>; L],
    pub row: [Signal<Out, Bits<18>>; L],
    pub opened_out: [Signal<Out, Bit>; L],
}

impl<const L: usize> Default for TableRead<L> {
    fn default() -> Self {
        Self {
            rows: std::array::from_fn(|_| Default::default()),
            opened: std::array::from_fn(|_| Default::default()),
            hot: std::array::from_fn(|_| Default::default()),
            row: std::array::from_fn(|_| Default::default()),
            opened_out: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for TableRead<L> {
    fn update(&mut self) {
        for j in 0..L {
            let hot = self.hot[j].val();
            let mut row = Bits::<18>::default();
            let mut opened = false;
            for e in 0..64 {
                if hot.get_bit(e) {
                    row = row | self.rows[e].val();
                    opened |= self.opened[e].val();
                }
            }
            self.row[j].next = row;
            self.opened_out[j].next = opened;
        }
    }

    fn connect(&mut self) {
        for j in 0..L {
            self.row[j].connect();
            self.opened_out[j].connect();
        }
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(table_read_verilog(L))
    }
}

/// The Verilog body of `TableRead<lanes>`.
fn table_read_verilog(lanes: usize) -> String {
    use std::fmt::Write;
    let mut v = String::new();
    writeln!(v, "always @(*) begin").unwrap();
    for j in 0..lanes {
        let rows: Vec<String> = (0..64)
            .map(|e| format!("(rows${e} & {{18{{hot${j}[{e}]}}}})"))
            .collect();
        let opened: Vec<String> = (0..64)
            .map(|e| format!("(opened${e} & hot${j}[{e}])"))
            .collect();
        writeln!(v, "    row${j} = {};", rows.join("\n        | ")).unwrap();
        writeln!(v, "    opened_out${j} = {};", opened.join("\n        | ")).unwrap();
    }
    writeln!(v, "end").unwrap();
    v
}

/// Combinational: the table's writes, an AND-OR per slot over the lanes'
/// one-hot write flags (at most one lane writes a slot in a clock: its
/// last ACT there), with no priority between the lanes.
#[derive(LogicBlock)]
pub struct TableWrite<const L: usize> {
    pub hot: [Signal<In, Bits<64>>; L],
    pub arg: [Signal<In, Bits<18>>; L],
    pub write: [Signal<Out, Bit>; 64],
    pub row: [Signal<Out, Bits<18>>; 64],
}

impl<const L: usize> Default for TableWrite<L> {
    fn default() -> Self {
        Self {
            hot: std::array::from_fn(|_| Default::default()),
            arg: std::array::from_fn(|_| Default::default()),
            write: std::array::from_fn(|_| Default::default()),
            row: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for TableWrite<L> {
    fn update(&mut self) {
        for e in 0..64 {
            let mut row = Bits::<18>::default();
            let mut write = false;
            for j in 0..L {
                if self.hot[j].val().get_bit(e) {
                    row = row | self.arg[j].val();
                    write = true;
                }
            }
            self.row[e].next = row;
            self.write[e].next = write;
        }
    }

    fn connect(&mut self) {
        for e in 0..64 {
            self.row[e].connect();
            self.write[e].connect();
        }
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(table_write_verilog(L))
    }
}

/// The Verilog body of `TableWrite<lanes>`.
fn table_write_verilog(lanes: usize) -> String {
    use std::fmt::Write;
    let mut v = String::new();
    writeln!(v, "always @(*) begin").unwrap();
    for e in 0..64 {
        let rows: Vec<String> = (0..lanes)
            .map(|j| format!("(arg${j} & {{18{{hot${j}[{e}]}}}})"))
            .collect();
        let writes: Vec<String> = (0..lanes).map(|j| format!("hot${j}[{e}]")).collect();
        writeln!(v, "    row${e} = {};", rows.join(" | ")).unwrap();
        writeln!(v, "    write${e} = {};", writes.join(" | ")).unwrap();
    }
    writeln!(v, "end").unwrap();
    v
}

/// Combinational: a lane's table slot `{rank, bank}` (see `LaneAddress`).
#[derive(LogicBlock)]
pub struct LaneSlot {
    pub rank: Signal<In, Bits<2>>,
    pub bank: Signal<In, Bits<4>>,
    pub slot: Signal<Out, Bits<6>>,
    rank_mask: Constant<Bits<2>>,
    bank_mask: Constant<Bits<4>>,
    bank_bits: Constant<Bits<8>>,
}

impl LaneSlot {
    pub fn new(g: LineGeometry) -> Self {
        Self {
            rank: Default::default(),
            bank: Default::default(),
            slot: Default::default(),
            rank_mask: Constant::new(mask(g.rank_bits).to_bits()),
            bank_mask: Constant::new(mask(g.bank_bits).to_bits()),
            bank_bits: Constant::new((g.bank_bits as u64).to_bits()),
        }
    }
}

impl Logic for LaneSlot {
    #[hdl_gen]
    fn update(&mut self) {
        self.slot.next = (bit_cast::<6, 2>(self.rank.val() & self.rank_mask.val())
            << self.bank_bits.val())
            | bit_cast::<6, 4>(self.bank.val() & self.bank_mask.val());
    }
}

/// Combinational: the line index `{rank, row, bank, column >> 3}` of one
/// lane, widths from the geometry.
#[derive(LogicBlock)]
pub struct LaneAddress {
    pub rank: Signal<In, Bits<2>>,
    pub bank: Signal<In, Bits<4>>,
    pub row: Signal<In, Bits<18>>,
    pub column: Signal<In, Bits<18>>,
    pub line: Signal<Out, Bits<48>>,
    pub rank_masked: Signal<Out, Bits<2>>,
    rank_mask: Constant<Bits<2>>,
    bank_mask: Constant<Bits<4>>,
    col_line_mask: Constant<Bits<18>>,
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
            line: Default::default(),
            rank_masked: Default::default(),
            rank_mask: Constant::new(mask(g.rank_bits).to_bits()),
            bank_mask: Constant::new(mask(g.bank_bits).to_bits()),
            col_line_mask: Constant::new(mask(g.col_line_bits).to_bits()),
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
        self.line.next = (bit_cast::<48, 2>(self.rank.val() & self.rank_mask.val())
            << self.rank_shift.val())
            | (bit_cast::<48, 18>(self.row.val()) << self.bank_shift.val())
            | (bit_cast::<48, 4>(self.bank.val() & self.bank_mask.val()) << self.col_shift.val())
            | bit_cast::<48, 18>((self.column.val() >> 3) & self.col_line_mask.val());
    }
}
