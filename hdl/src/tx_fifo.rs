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
    // Two 16-bit halves rather than one 32-bit memory: on the ECP5 each
    // half becomes its own block RAM (1Kx18 mode), so the 32 banks' data
    // pins spread over 64 EBR tiles instead of crowding 32 (one 512x36
    // block RAM per bank left ~900 wires overused around them and the
    // board did not route). The iCE40's block RAMs are 16 bits wide, so
    // it maps the same either way.
    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "\
reg [15:0] mem_lo[0:{last}];
reg [15:0] mem_hi[0:{last}];
always @(posedge clock) begin
   read_data <= {{mem_hi[read_address], mem_lo[read_address]}};
   if (write_enable) begin
      mem_lo[write_address] <= write_data[15:0];
      mem_hi[write_address] <= write_data[31:16];
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
/// next row for the banks before `base mod B`. [`BankWriteRouter`] moves
/// them there with two shifters (compaction, then rotation by `base`).
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
    /// Per slot (lane-major, `5 L` used): valid, word (for the bypass).
    slot_valid: [Signal<Local, Bit>; 32],
    slot_word: [Signal<Local, Bits<32>>; 32],
    /// Bank of the clock's first word.
    base_bank: Signal<Local, Bits<32>>,
    /// Pop position relative to each lane's first word.
    pop_offset: [Signal<Local, Bits<32>>; L],
    /// The write crossbar: each bank's word and write enable.
    router: BankWriteRouter<L, B>,
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
            slot_word: std::array::from_fn(|_| Default::default()),
            base_bank: Default::default(),
            pop_offset: std::array::from_fn(|_| Default::default()),
            router: Default::default(),
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
            read_cast: Default::default(),
            row_cast: Default::default(),
            next_row_cast: Default::default(),
        }
    }
}

impl<const L: usize, const B: usize, const AB: usize> TxFifoStorage<L, B, AB> {
    pub const DEPTH: usize = B << AB;
    const USED_SLOTS: usize = 5 * L;
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
            self.slot_word[j * 5].next = self.word0[j].val();
            self.slot_word[j * 5 + 1].next = self.word1[j].val();
            self.slot_word[j * 5 + 2].next = self.word2[j].val();
            self.slot_word[j * 5 + 3].next = self.word3[j].val();
            self.slot_word[j * 5 + 4].next = self.word4[j].val();
        }
        for k in Self::USED_SLOTS..32 {
            self.slot_valid[k].next = false;
            self.slot_word[k].next = 0.into();
        }
        self.router.base.next = self.lane_pos[0].val();
        for j in 0..L {
            self.router.lane_count[j].next = self.lane_count[j].val();
            self.router.word0[j].next = self.word0[j].val();
            self.router.word1[j].next = self.word1[j].val();
            self.router.word2[j].next = self.word2[j].val();
            self.router.word3[j].next = self.word3[j].val();
            self.router.word4[j].next = self.word4[j].val();
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
            self.bank[b].write_enable.next = self.router.write_enable[b].val();
            self.bank[b].write_data.next = self.router.write_data[b].val();
            // Banks before the first word's bank are on the next row.
            self.bank[b].write_address.next = self.row_cast.narrow.val();
            if self.base_bank.val().index() > b {
                self.bank[b].write_address.next = self.next_row_cast.narrow.val();
            }
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

/// Combinational: one clock's words (`lane_count[j]` <= 5 valid words per
/// lane, lanes contiguous in the stream from position `base`) to their
/// banks: stream position `p` goes to bank `p mod B`.
///
/// The Verilog is a network of 2:1 multiplexers, generated per `(L, B)`:
/// each lane's words are shifted up by the count of the lanes before it
/// (a log shifter, `rel_j <= 5 j`), a position takes the highest lane that
/// starts at or below it (lanes are contiguous), and the dense words are
/// rotated by `base mod B` (a log rotator). Every signal drives two
/// multiplexers of the next stage, where an AND-OR pick of all `5 L` slots
/// per bank sends every slot word to all `B` banks (on the ECP5 with
/// `L = 4, B = 32`: 17k of the design's 26.5k LUT4, and routing that did
/// not converge). Entries no valid word can reach are left out. The Rust
/// model below computes each word's bank directly, so the Icarus checks of
/// the generated Verilog test the network against it.
#[derive(LogicBlock)]
pub struct BankWriteRouter<const L: usize, const B: usize> {
    /// Stream position of the clock's first word (lane 0's).
    pub base: Signal<In, Bits<32>>,
    pub lane_count: [Signal<In, Bits<32>>; L],
    pub word0: [Signal<In, Bits<32>>; L],
    pub word1: [Signal<In, Bits<32>>; L],
    pub word2: [Signal<In, Bits<32>>; L],
    pub word3: [Signal<In, Bits<32>>; L],
    pub word4: [Signal<In, Bits<32>>; L],
    pub write_enable: [Signal<Out, Bit>; B],
    /// The bank's word; meaningful only where `write_enable` is set.
    pub write_data: [Signal<Out, Bits<32>>; B],
}

impl<const L: usize, const B: usize> Default for BankWriteRouter<L, B> {
    fn default() -> Self {
        assert!(
            B.is_power_of_two() && B >= 5 * L && B <= 32 && L >= 1,
            "B must be a power of two >= 5 L"
        );
        Self {
            base: Default::default(),
            lane_count: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            word3: std::array::from_fn(|_| Default::default()),
            word4: std::array::from_fn(|_| Default::default()),
            write_enable: std::array::from_fn(|_| Default::default()),
            write_data: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize, const B: usize> Logic for BankWriteRouter<L, B> {
    fn update(&mut self) {
        let mut enable = [false; B];
        let mut data = [0u32; B];
        let mut position = self.base.val().index();
        for j in 0..L {
            let words = [
                self.word0[j].val(),
                self.word1[j].val(),
                self.word2[j].val(),
                self.word3[j].val(),
                self.word4[j].val(),
            ];
            // Three count bits, as the hardware's prefix sums use.
            let count = self.lane_count[j].val().index() & 7;
            for i in 0..count {
                let bank = position % B;
                enable[bank] = true;
                data[bank] = words.get(i).map_or(0, |w| w.to_u32());
                position += 1;
            }
        }
        for b in 0..B {
            self.write_enable[b].next = enable[b];
            self.write_data[b].next = (data[b] as u64).to_bits();
        }
    }

    fn connect(&mut self) {
        for b in 0..B {
            self.write_enable[b].connect();
            self.write_data[b].connect();
        }
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(bank_router_verilog(L, B))
    }
}

/// Bits needed for values `0..=max`.
fn bits_for(max: usize) -> usize {
    (usize::BITS - max.leading_zeros()) as usize
}

/// The Verilog body of `BankWriteRouter<lanes, banks>` (see there).
fn bank_router_verilog(lanes: usize, banks: usize) -> String {
    use std::fmt::Write;
    let mut v = String::new();
    let bank_bits = banks.trailing_zeros() as usize;
    let word = |j: usize, i: usize| format!("word{i}${j}");
    // Inputs' upper bits are unused (counts <= 5, bank = base mod B).
    let mut unused: Vec<String> = (0..lanes)
        .map(|j| format!("lane_count${j}[31:3]"))
        .collect();
    unused.push(format!("base[31:{bank_bits}]"));
    writeln!(
        v,
        "wire unused_router_bits = &{{1'b0, {}}};",
        unused.join(", ")
    )
    .unwrap();
    // Lane j starts rel_j words after lane 0 (prefix sums of the counts).
    for j in 0..lanes {
        writeln!(v, "wire [4:0] count_{j} = {{2'b0, lane_count${j}[2:0]}};").unwrap();
    }
    writeln!(v, "wire [4:0] rel_0 = 5'd0;").unwrap();
    for j in 1..lanes {
        writeln!(v, "wire [4:0] rel_{j} = rel_{} + count_{};", j - 1, j - 1).unwrap();
    }
    writeln!(v, "wire [4:0] total = rel_{0} + count_{0};", lanes - 1).unwrap();

    // Compaction: lane j's words shifted up by rel_j (<= 5 j). `lane[j][x]`
    // names the expression holding lane j's word x - rel_j at position x.
    let mut lane_words: Vec<Vec<String>> = vec![(0..5).map(|i| word(0, i)).collect()];
    for j in 1..lanes {
        let max_rel = 5 * j;
        let mut cur: Vec<String> = (0..5).map(|i| word(j, i)).collect();
        for s in 0..bits_for(max_rel) {
            let step = 1usize << s;
            // Positions reachable after shifting by rel_j mod 2^(s+1).
            let width = (5 + (2 * step - 1)).min(5 + max_rel);
            let mut next = Vec::with_capacity(width);
            for x in 0..width {
                let keep = cur.get(x);
                let shifted = x.checked_sub(step).and_then(|y| cur.get(y));
                next.push(match (keep, shifted) {
                    (Some(k), Some(sh)) => {
                        let name = format!("lane{j}_s{}_{x}", s + 1);
                        writeln!(v, "wire [31:0] {name} = rel_{j}[{s}] ? {sh} : {k};").unwrap();
                        name
                    }
                    (Some(k), None) => k.clone(),
                    (None, Some(sh)) => sh.clone(),
                    (None, None) => unreachable!("widths grow by at most the step"),
                });
            }
            cur = next;
        }
        lane_words.push(cur);
    }
    // Merge: position q holds the word of the highest lane starting at or
    // below it (a lane that ended before q is followed by one starting
    // at or below q). The lowest lane that can reach q needs no test.
    for q in 0..5 * lanes {
        let reach: Vec<usize> = (0..lanes).filter(|&j| q < lane_words[j].len()).collect();
        let mut expr = lane_words[reach[0]][q].clone();
        for &j in &reach[1..] {
            expr = format!("(rel_{j} <= 5'd{q}) ? {} : ({expr})", lane_words[j][q]);
        }
        writeln!(v, "wire [31:0] dense_{q} = {expr};").unwrap();
    }
    // Rotation by base mod B: bank b takes dense word (b - base) mod B.
    // `None` marks entries that no dense word can reach yet.
    let mut cur: Vec<Option<String>> = (0..banks)
        .map(|x| (x < 5 * lanes).then(|| format!("dense_{x}")))
        .collect();
    for s in 0..bank_bits {
        let step = 1usize << s;
        let mut next = Vec::with_capacity(banks);
        for x in 0..banks {
            let from = (x + banks - step) % banks;
            next.push(match (&cur[x], &cur[from]) {
                (Some(k), Some(sh)) => {
                    let name = format!("rot_s{}_{x}", s + 1);
                    writeln!(v, "wire [31:0] {name} = base[{s}] ? {sh} : {k};").unwrap();
                    Some(name)
                }
                (Some(k), None) => Some(k.clone()),
                (None, Some(sh)) => Some(sh.clone()),
                (None, None) => None,
            });
        }
        cur = next;
    }
    writeln!(v, "always @(*) begin").unwrap();
    for (b, data) in cur.iter().enumerate() {
        let data = data.as_deref().unwrap_or("32'h0");
        writeln!(
            v,
            "    write_enable${b} = {{1'b0, {bank_bits}'d{b} - base[{}:0]}} < {{1'b0, total}};",
            bank_bits - 1
        )
        .unwrap();
        writeln!(v, "    write_data${b} = {data};").unwrap();
    }
    writeln!(v, "end").unwrap();
    v
}
