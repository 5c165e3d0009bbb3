//! TX FIFO: the drain's rate limiter step (board.md step 2) and the word
//! storage, a banked block RAM that takes up to `5 L` words per fabric clock.
//!
//! The logical FIFO (fill level, room, which tick pops) lives in the encoder
//! (`encoder.rs`) because it interleaves with the pushes tick by tick; this
//! module stores the words at their logical positions and reads popped words
//! back. Word `p` of the stream lives in bank `p mod B` at address
//! `(p / B) mod 2^AB`, so the up-to-`B` consecutive words of one fabric clock
//! all go to different banks. Depth = `B * 2^AB` words.

use rust_hdl::prelude::*;

/// Combinational: one tick of the rational rate limiter,
/// `credit += num; pop if not empty and credit >= den; credit -= den on a
/// pop; an empty FIFO caps the credit at den`.
#[derive(LogicBlock, Default)]
pub struct DrainStep {
    /// Fill level after this tick's pushes.
    pub fill_in: Signal<In, Bits<32>>,
    pub credit_in: Signal<In, Bits<32>>,
    pub num: Signal<In, Bits<32>>,
    pub den: Signal<In, Bits<32>>,
    pub pop: Signal<Out, Bit>,
    pub fill_out: Signal<Out, Bits<32>>,
    pub credit_out: Signal<Out, Bits<32>>,
    credit_added: Signal<Local, Bits<32>>,
    credit_left: Signal<Local, Bits<32>>,
}

impl Logic for DrainStep {
    #[hdl_gen]
    fn update(&mut self) {
        self.credit_added.next = self.credit_in.val() + self.num.val();
        self.pop.next = (self.fill_in.val() != 0) & (self.credit_added.val() >= self.den.val());
        self.credit_left.next = self.credit_added.val();
        self.fill_out.next = self.fill_in.val();
        if (self.fill_in.val() != 0) & (self.credit_added.val() >= self.den.val()) {
            self.credit_left.next = self.credit_added.val() - self.den.val();
            self.fill_out.next = self.fill_in.val() - 1;
        }
        self.credit_out.next = self.credit_left.val();
        if (self.fill_out.val() == 0) & (self.credit_left.val() > self.den.val()) {
            self.credit_out.next = self.den.val();
        }
    }
}

/// One bank: `2^AB` words, one write and one registered read per clock
/// (a simple dual-port block RAM). Addresses are full word counters; the
/// bank uses their low `AB` bits after the shift done by the caller.
#[derive(LogicBlock)]
pub struct FifoBank<const AB: usize> {
    pub clock: Signal<In, Clock>,
    pub write_enable: Signal<In, Bit>,
    pub write_address: Signal<In, Bits<AB>>,
    pub write_data: Signal<In, Bits<32>>,
    pub read_address: Signal<In, Bits<AB>>,
    pub read_data: Signal<Out, Bits<32>>,
    _mem: Vec<u32>,
}

impl<const AB: usize> Default for FifoBank<AB> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            write_enable: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            read_address: Default::default(),
            read_data: Default::default(),
            _mem: vec![0; 1 << AB],
        }
    }
}

impl<const AB: usize> Logic for FifoBank<AB> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            // Read before write: a word written at this edge is read later.
            self.read_data.next = (self._mem[self.read_address.val().index()] as u64).to_bits();
            if self.write_enable.val() {
                self._mem[self.write_address.val().index()] = self.write_data.val().to_u32();
            }
        }
    }
    fn connect(&mut self) {
        self.read_data.connect();
    }
    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
reg [31:0] mem[0:{last}];
always @(posedge clock) begin
   read_data <= mem[read_address];
   if (write_enable) begin
      mem[write_address] <= write_data;
   end
end
",
            last = (1usize << AB) - 1
        ))
    }
    fn timing(&self) -> Vec<TimingInfo> {
        vec![TimingInfo {
            name: "fifo_bank".into(),
            clock: "clock".into(),
            inputs: vec![
                "write_enable".into(),
                "write_address".into(),
                "write_data".into(),
                "read_address".into(),
            ],
            outputs: vec!["read_data".into()],
        }]
    }
}

/// The storage: `L` lanes of up to 5 words each are written at their
/// stream positions; a pop at stream position `pop_ptr`, given with the
/// words of the same encoder clock, comes out on `read_word` two clocks
/// later (`read_valid`).
///
/// The encoder hands over one clock's words contiguously (lane `j + 1`
/// starts where lane `j` ends, `5 L <= B` words in all), so the words of a
/// clock fill banks `base .. base + n` (mod `B`) at row `base / B`, or the
/// next row for the banks before `base mod B`. Each bank's write data is
/// an AND-OR pick over the `5 L` slots: one LUT level per
/// four inputs, where a priority chain of `if`s would cost one per slot.
#[derive(LogicBlock)]
pub struct TxFifoStorage<const L: usize, const B: usize, const AB: usize> {
    pub clock: Signal<In, Clock>,
    /// Words of each lane, in order; `lane_count[j]` of them are valid.
    pub lane_count: [Signal<In, Bits<32>>; L],
    /// Stream position of each lane's first word.
    pub lane_pos: [Signal<In, Bits<32>>; L],
    pub word0: [Signal<In, Bits<32>>; L],
    pub word1: [Signal<In, Bits<32>>; L],
    pub word2: [Signal<In, Bits<32>>; L],
    pub word3: [Signal<In, Bits<32>>; L],
    pub word4: [Signal<In, Bits<32>>; L],
    pub pop: Signal<In, Bit>,
    pub pop_ptr: Signal<In, Bits<32>>,
    pub read_valid: Signal<Out, Bit>,
    pub read_word: Signal<Out, Bits<32>>,
    bank: [FifoBank<AB>; B],
    /// Per slot (lane-major, `5 L` used): valid, bank, word.
    slot_valid: [Signal<Local, Bit>; 32],
    slot_bank: [Signal<Local, Bits<32>>; 32],
    slot_word: [Signal<Local, Bits<32>>; 32],
    /// Bank of the clock's first word.
    base_bank: Signal<Local, Bits<32>>,
    /// Pop position relative to each lane's first word.
    pop_offset: [Signal<Local, Bits<32>>; L],
    /// All ones where bank `b` takes slot `k`, at `b * 32 + k` (one index:
    /// rust-hdl's Verilog cannot index a sub-block's array in a nested loop).
    pick_mask: [Signal<Local, Bits<32>>; 1024],
    bypass_pick: OrPick,
    read_pick: OrPick,
    reading_valid: DFF<Bit>,
    reading_bank: DFF<Bits<32>>,
    bypass_valid: DFF<Bit>,
    bypass_word: DFF<Bits<32>>,
    out_valid: DFF<Bit>,
    out_word: DFF<Bits<32>>,
    bank_mask: Constant<Bits<32>>,
    bank_shift: Constant<Bits<32>>,
    address_mask: Constant<Bits<32>>,
    all_ones: Constant<Bits<32>>,
    read_cast: AddressCast<AB>,
    row_cast: AddressCast<AB>,
    next_row_cast: AddressCast<AB>,
}

impl<const L: usize, const B: usize, const AB: usize> Default for TxFifoStorage<L, B, AB> {
    fn default() -> Self {
        assert!(
            B.is_power_of_two() && B >= 5 * L && B <= 32,
            "B must be a power of two >= 5 L"
        );
        assert!(AB >= 1 && AB <= 24);
        Self {
            clock: Default::default(),
            lane_count: std::array::from_fn(|_| Default::default()),
            lane_pos: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            word3: std::array::from_fn(|_| Default::default()),
            word4: std::array::from_fn(|_| Default::default()),
            pop: Default::default(),
            pop_ptr: Default::default(),
            read_valid: Default::default(),
            read_word: Default::default(),
            bank: std::array::from_fn(|_| Default::default()),
            slot_valid: std::array::from_fn(|_| Default::default()),
            slot_bank: std::array::from_fn(|_| Default::default()),
            slot_word: std::array::from_fn(|_| Default::default()),
            base_bank: Default::default(),
            pop_offset: std::array::from_fn(|_| Default::default()),
            pick_mask: std::array::from_fn(|_| Default::default()),
            bypass_pick: Default::default(),
            read_pick: Default::default(),
            reading_valid: Default::default(),
            reading_bank: Default::default(),
            bypass_valid: Default::default(),
            bypass_word: Default::default(),
            out_valid: Default::default(),
            out_word: Default::default(),
            bank_mask: Constant::new(((B - 1) as u64).to_bits()),
            bank_shift: Constant::new((B.trailing_zeros() as u64).to_bits()),
            address_mask: Constant::new(((1u64 << AB) - 1).to_bits()),
            all_ones: Constant::new(0xFFFF_FFFFu64.to_bits()),
            read_cast: Default::default(),
            row_cast: Default::default(),
            next_row_cast: Default::default(),
        }
    }
}

impl<const L: usize, const B: usize, const AB: usize> TxFifoStorage<L, B, AB> {
    pub const DEPTH: usize = B << AB;
    const USED_SLOTS: usize = 5 * L;
    const USED_PICKS: usize = 32 * B;
}

impl<const L: usize, const B: usize, const AB: usize> Logic for TxFifoStorage<L, B, AB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            reading_valid,
            reading_bank,
            bypass_valid,
            bypass_word,
            out_valid,
            out_word
        );
        for j in 0..L {
            self.slot_valid[j * 5].next = self.lane_count[j].val() > 0;
            self.slot_valid[j * 5 + 1].next = self.lane_count[j].val() > 1;
            self.slot_valid[j * 5 + 2].next = self.lane_count[j].val() > 2;
            self.slot_valid[j * 5 + 3].next = self.lane_count[j].val() > 3;
            self.slot_valid[j * 5 + 4].next = self.lane_count[j].val() > 4;
            self.slot_bank[j * 5].next = self.lane_pos[j].val() & self.bank_mask.val();
            self.slot_bank[j * 5 + 1].next = (self.lane_pos[j].val() + 1) & self.bank_mask.val();
            self.slot_bank[j * 5 + 2].next = (self.lane_pos[j].val() + 2) & self.bank_mask.val();
            self.slot_bank[j * 5 + 3].next = (self.lane_pos[j].val() + 3) & self.bank_mask.val();
            self.slot_bank[j * 5 + 4].next = (self.lane_pos[j].val() + 4) & self.bank_mask.val();
            self.slot_word[j * 5].next = self.word0[j].val();
            self.slot_word[j * 5 + 1].next = self.word1[j].val();
            self.slot_word[j * 5 + 2].next = self.word2[j].val();
            self.slot_word[j * 5 + 3].next = self.word3[j].val();
            self.slot_word[j * 5 + 4].next = self.word4[j].val();
        }
        for k in Self::USED_SLOTS..32 {
            self.slot_valid[k].next = false;
            self.slot_bank[k].next = 0.into();
            self.slot_word[k].next = 0.into();
        }
        self.base_bank.next = self.lane_pos[0].val() & self.bank_mask.val();
        self.row_cast.wide.next =
            (self.lane_pos[0].val() >> self.bank_shift.val()) & self.address_mask.val();
        self.next_row_cast.wide.next =
            ((self.lane_pos[0].val() >> self.bank_shift.val()) + 1) & self.address_mask.val();

        // A pop comes with the words of the same encoder clock. The banks
        // read at the edge that writes those words (read before write): a
        // slot freed and refilled within one encoder clock (L > 1) still
        // gives the old word, and a word pushed and popped in the same clock
        // comes from the bypass. Data one clock later, registered once more.
        self.reading_valid.d.next = self.pop.val();
        self.reading_bank.d.next = self.pop_ptr.val() & self.bank_mask.val();
        self.read_cast.wide.next =
            (self.pop_ptr.val() >> self.bank_shift.val()) & self.address_mask.val();
        // Stream positions of one clock are distinct: at most one slot matches.
        for k in 0..32 {
            self.bypass_pick.words[k].next = self.slot_word[k].val();
            self.bypass_pick.select[k].next = false;
        }
        for j in 0..L {
            self.pop_offset[j].next = self.pop_ptr.val() - self.lane_pos[j].val();
            self.bypass_pick.select[j * 5].next =
                self.slot_valid[j * 5].val() & (self.pop_offset[j].val() == 0);
            self.bypass_pick.select[j * 5 + 1].next =
                self.slot_valid[j * 5 + 1].val() & (self.pop_offset[j].val() == 1);
            self.bypass_pick.select[j * 5 + 2].next =
                self.slot_valid[j * 5 + 2].val() & (self.pop_offset[j].val() == 2);
            self.bypass_pick.select[j * 5 + 3].next =
                self.slot_valid[j * 5 + 3].val() & (self.pop_offset[j].val() == 3);
            self.bypass_pick.select[j * 5 + 4].next =
                self.slot_valid[j * 5 + 4].val() & (self.pop_offset[j].val() == 4);
        }
        self.bypass_valid.d.next = self.bypass_pick.any.val();
        self.bypass_word.d.next = self.bypass_pick.picked.val();

        for b in 0..32 {
            self.read_pick.words[b].next = 0.into();
            self.read_pick.select[b].next = false;
        }
        for b in 0..B {
            self.bank[b].clock.next = self.clock.val();
            self.bank[b].read_address.next = self.read_cast.narrow.val();
            self.read_pick.words[b].next = self.bank[b].read_data.val();
            self.read_pick.select[b].next = self.reading_bank.q.val().index() == b;
            // AND-OR pick of the slot this bank takes (at most one): one
            // LUT level per two slots where a chain of `if`s costs one per slot.
            for k in 0..32 {
                self.pick_mask[b * 32 + k].next = 0.into();
                if self.slot_valid[k].val() & (self.slot_bank[k].val().index() == b) {
                    self.pick_mask[b * 32 + k].next = self.all_ones.val();
                }
            }
            self.bank[b].write_enable.next = self.pick_mask[b * 32].val().get_bit(0)
                | self.pick_mask[b * 32 + 1].val().get_bit(0)
                | self.pick_mask[b * 32 + 2].val().get_bit(0)
                | self.pick_mask[b * 32 + 3].val().get_bit(0)
                | self.pick_mask[b * 32 + 4].val().get_bit(0)
                | self.pick_mask[b * 32 + 5].val().get_bit(0)
                | self.pick_mask[b * 32 + 6].val().get_bit(0)
                | self.pick_mask[b * 32 + 7].val().get_bit(0)
                | self.pick_mask[b * 32 + 8].val().get_bit(0)
                | self.pick_mask[b * 32 + 9].val().get_bit(0)
                | self.pick_mask[b * 32 + 10].val().get_bit(0)
                | self.pick_mask[b * 32 + 11].val().get_bit(0)
                | self.pick_mask[b * 32 + 12].val().get_bit(0)
                | self.pick_mask[b * 32 + 13].val().get_bit(0)
                | self.pick_mask[b * 32 + 14].val().get_bit(0)
                | self.pick_mask[b * 32 + 15].val().get_bit(0)
                | self.pick_mask[b * 32 + 16].val().get_bit(0)
                | self.pick_mask[b * 32 + 17].val().get_bit(0)
                | self.pick_mask[b * 32 + 18].val().get_bit(0)
                | self.pick_mask[b * 32 + 19].val().get_bit(0)
                | self.pick_mask[b * 32 + 20].val().get_bit(0)
                | self.pick_mask[b * 32 + 21].val().get_bit(0)
                | self.pick_mask[b * 32 + 22].val().get_bit(0)
                | self.pick_mask[b * 32 + 23].val().get_bit(0)
                | self.pick_mask[b * 32 + 24].val().get_bit(0)
                | self.pick_mask[b * 32 + 25].val().get_bit(0)
                | self.pick_mask[b * 32 + 26].val().get_bit(0)
                | self.pick_mask[b * 32 + 27].val().get_bit(0)
                | self.pick_mask[b * 32 + 28].val().get_bit(0)
                | self.pick_mask[b * 32 + 29].val().get_bit(0)
                | self.pick_mask[b * 32 + 30].val().get_bit(0)
                | self.pick_mask[b * 32 + 31].val().get_bit(0);
            self.bank[b].write_data.next = (self.slot_word[0].val() & self.pick_mask[b * 32].val())
                | (self.slot_word[1].val() & self.pick_mask[b * 32 + 1].val())
                | (self.slot_word[2].val() & self.pick_mask[b * 32 + 2].val())
                | (self.slot_word[3].val() & self.pick_mask[b * 32 + 3].val())
                | (self.slot_word[4].val() & self.pick_mask[b * 32 + 4].val())
                | (self.slot_word[5].val() & self.pick_mask[b * 32 + 5].val())
                | (self.slot_word[6].val() & self.pick_mask[b * 32 + 6].val())
                | (self.slot_word[7].val() & self.pick_mask[b * 32 + 7].val())
                | (self.slot_word[8].val() & self.pick_mask[b * 32 + 8].val())
                | (self.slot_word[9].val() & self.pick_mask[b * 32 + 9].val())
                | (self.slot_word[10].val() & self.pick_mask[b * 32 + 10].val())
                | (self.slot_word[11].val() & self.pick_mask[b * 32 + 11].val())
                | (self.slot_word[12].val() & self.pick_mask[b * 32 + 12].val())
                | (self.slot_word[13].val() & self.pick_mask[b * 32 + 13].val())
                | (self.slot_word[14].val() & self.pick_mask[b * 32 + 14].val())
                | (self.slot_word[15].val() & self.pick_mask[b * 32 + 15].val())
                | (self.slot_word[16].val() & self.pick_mask[b * 32 + 16].val())
                | (self.slot_word[17].val() & self.pick_mask[b * 32 + 17].val())
                | (self.slot_word[18].val() & self.pick_mask[b * 32 + 18].val())
                | (self.slot_word[19].val() & self.pick_mask[b * 32 + 19].val())
                | (self.slot_word[20].val() & self.pick_mask[b * 32 + 20].val())
                | (self.slot_word[21].val() & self.pick_mask[b * 32 + 21].val())
                | (self.slot_word[22].val() & self.pick_mask[b * 32 + 22].val())
                | (self.slot_word[23].val() & self.pick_mask[b * 32 + 23].val())
                | (self.slot_word[24].val() & self.pick_mask[b * 32 + 24].val())
                | (self.slot_word[25].val() & self.pick_mask[b * 32 + 25].val())
                | (self.slot_word[26].val() & self.pick_mask[b * 32 + 26].val())
                | (self.slot_word[27].val() & self.pick_mask[b * 32 + 27].val())
                | (self.slot_word[28].val() & self.pick_mask[b * 32 + 28].val())
                | (self.slot_word[29].val() & self.pick_mask[b * 32 + 29].val())
                | (self.slot_word[30].val() & self.pick_mask[b * 32 + 30].val())
                | (self.slot_word[31].val() & self.pick_mask[b * 32 + 31].val());
            // Banks before the first word's bank are on the next row.
            self.bank[b].write_address.next = self.row_cast.narrow.val();
            if self.base_bank.val().index() > b {
                self.bank[b].write_address.next = self.next_row_cast.narrow.val();
            }
        }
        for i in Self::USED_PICKS..1024 {
            self.pick_mask[i].next = 0.into();
        }
        self.out_valid.d.next = self.reading_valid.q.val();
        self.out_word.d.next = self.read_pick.picked.val();
        if self.bypass_valid.q.val() {
            self.out_word.d.next = self.bypass_word.q.val();
        }
        self.read_valid.next = self.out_valid.q.val();
        self.read_word.next = self.out_word.q.val();
    }
}

/// Combinational: the OR of the selected words (at most one selected in
/// use), and whether any was selected. Unused inputs are tied low.
#[derive(LogicBlock, Default)]
pub struct OrPick {
    pub words: [Signal<In, Bits<32>>; 32],
    pub select: [Signal<In, Bit>; 32],
    pub picked: Signal<Out, Bits<32>>,
    pub any: Signal<Out, Bit>,
    masked: [Signal<Local, Bits<32>>; 32],
    word_or: [Signal<Local, Bits<32>>; 32],
    select_or: [Signal<Local, Bit>; 32],
}

impl Logic for OrPick {
    #[hdl_gen]
    fn update(&mut self) {
        for i in 0..32 {
            self.masked[i].next = 0.into();
            if self.select[i].val() {
                self.masked[i].next = self.words[i].val();
            }
        }
        self.word_or[0].next = self.masked[0].val();
        self.select_or[0].next = self.select[0].val();
        for i in 1..32 {
            self.word_or[i].next = self.word_or[i - 1].val() | self.masked[i].val();
            self.select_or[i].next = self.select_or[i - 1].val() | self.select[i].val();
        }
        self.picked.next = self.word_or[31].val();
        self.any.next = self.select_or[31].val();
    }
}

/// Combinational width change (HDL kernels cannot cast inside loops).
#[derive(LogicBlock, Default)]
pub struct AddressCast<const AB: usize> {
    pub wide: Signal<In, Bits<32>>,
    pub narrow: Signal<Out, Bits<AB>>,
}

impl<const AB: usize> Logic for AddressCast<AB> {
    #[hdl_gen]
    fn update(&mut self) {
        self.narrow.next = bit_cast::<AB, 32>(self.wide.val());
    }
}
