//! TX FIFO word storage: a banked block RAM that takes one clock's words
//! (up to `2 + 3E`, board.md "Words per clock") and gives back one popped
//! word per clock.
//!
//! The logical FIFO (fill level, room, which clock pops) lives in the
//! encoder (`encoder`); this module stores the words at their stream
//! positions and reads popped words back. Word `p` of the stream lives in
//! bank `p mod B` at address `(p / B) mod 2^AB`, so the words of one clock
//! all go to different banks (`B >= 2 + 3E`). Depth = `B * 2^AB` words.
//!
//! The write crossbar runs from the encoder's output registers into the
//! block RAMs with one register inside (after the words are packed,
//! before they are rotated to their banks); the read side is registered
//! throughout: the read address, the RAM's read data (yosys maps it to the
//! RAM's output register) and the bank select. A word pushed in encoder
//! clock `k` is written at the end of clock `k + 2`; the earliest pop of
//! it (clock `k + 1`) reads at the end of clock `k + 3`, so no bypass is
//! needed. A slot freed by a pop in clock `k` takes a push from clock
//! `k + 1` on (board.md), written at the end of `k + 3` at the earliest,
//! after the pop's read at the end of `k + 2`. `read_word` comes
//! `READ_LATENCY` clocks after the encoder's pop.

use rust_hdl::prelude::*;

/// Clocks from a pop at the storage's input to `read_valid`/`read_word`.
pub const READ_LATENCY: usize = 3;
/// Word groups per clock (the encoder's: filler and TIME, then a slot each).
pub const GROUPS: usize = crate::encoder::GROUPS;

/// Words group `g` holds at most, for `E` slots: 2 (filler, TIME), then 3
/// per slot (LOST, LINE_HI, word).
pub fn group_max(slots: usize, g: usize) -> usize {
    match g {
        0 => 2,
        g if g <= slots => 3,
        _ => 0,
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

/// The storage; see the module documentation.
#[derive(LogicBlock)]
pub struct TxFifoStorage<const E: usize, const B: usize, const AB: usize> {
    pub clock: Signal<In, Clock>,
    /// The encoder's groups: `count[g]` words each, from position `base`.
    pub count: [Signal<In, Bits<2>>; GROUPS],
    pub word0: [Signal<In, Bits<32>>; GROUPS],
    pub word1: [Signal<In, Bits<32>>; GROUPS],
    pub word2: [Signal<In, Bits<32>>; GROUPS],
    pub base: Signal<In, Bits<32>>,
    pub pop: Signal<In, Bit>,
    pub pop_ptr: Signal<In, Bits<32>>,
    pub read_valid: Signal<Out, Bit>,
    pub read_word: Signal<Out, Bits<32>>,
    bank: [FifoBank<AB>; B],
    /// The write crossbar: each bank's word and write enable.
    router: BankWriteRouter<E, B>,
    /// The rows of the write a clock later (the router's register).
    write_base_bank: DFF<Bits<32>>,
    write_row: DFF<Bits<32>>,
    write_next_row: DFF<Bits<32>>,
    read_pick: OrPick,
    reading_valid: DFF<Bit>,
    reading_bank: DFF<Bits<32>>,
    reading_row: DFF<Bits<32>>,
    picked_valid: DFF<Bit>,
    /// The bank the RAMs' read data comes from, one-hot (a flag per bank,
    /// each driving its bank's 32 AND gates, rather than one bank number
    /// decoded 32 times after its register).
    picked_select: [DFF<Bit>; 32],
    out_valid: DFF<Bit>,
    out_word: DFF<Bits<32>>,
    bank_mask: Constant<Bits<32>>,
    bank_shift: Constant<Bits<32>>,
    address_mask: Constant<Bits<32>>,
    read_cast: AddressCast<AB>,
    row_cast: AddressCast<AB>,
    next_row_cast: AddressCast<AB>,
}

impl<const E: usize, const B: usize, const AB: usize> Default for TxFifoStorage<E, B, AB> {
    fn default() -> Self {
        assert!(
            B.is_power_of_two() && B >= 2 + 3 * E && B <= 32,
            "B must be a power of two >= 2 + 3 E"
        );
        assert!((1..=24).contains(&AB));
        Self {
            clock: Default::default(),
            count: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            base: Default::default(),
            pop: Default::default(),
            pop_ptr: Default::default(),
            read_valid: Default::default(),
            read_word: Default::default(),
            bank: std::array::from_fn(|_| Default::default()),
            router: Default::default(),
            write_base_bank: Default::default(),
            write_row: Default::default(),
            write_next_row: Default::default(),
            read_pick: Default::default(),
            reading_valid: Default::default(),
            reading_bank: Default::default(),
            reading_row: Default::default(),
            picked_valid: Default::default(),
            picked_select: std::array::from_fn(|_| Default::default()),
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

impl<const E: usize, const B: usize, const AB: usize> TxFifoStorage<E, B, AB> {
    pub const DEPTH: usize = B << AB;
}

impl<const E: usize, const B: usize, const AB: usize> Logic for TxFifoStorage<E, B, AB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            write_base_bank,
            write_row,
            write_next_row,
            reading_valid,
            reading_bank,
            reading_row,
            picked_valid,
            out_valid,
            out_word
        );
        // Write side: the crossbar into the banks, one clock later.
        self.router.clock.next = self.clock.val();
        self.router.base.next = self.base.val();
        for g in 0..GROUPS {
            self.router.count[g].next = self.count[g].val();
            self.router.word0[g].next = self.word0[g].val();
            self.router.word1[g].next = self.word1[g].val();
            self.router.word2[g].next = self.word2[g].val();
        }
        self.write_base_bank.d.next = self.base.val() & self.bank_mask.val();
        self.write_row.d.next =
            (self.base.val() >> self.bank_shift.val()) & self.address_mask.val();
        self.write_next_row.d.next =
            ((self.base.val() >> self.bank_shift.val()) + 1) & self.address_mask.val();
        self.row_cast.wide.next = self.write_row.q.val();
        self.next_row_cast.wide.next = self.write_next_row.q.val();
        // Read side: the address registered, the RAM's registered read,
        // the bank select registered.
        self.reading_valid.d.next = self.pop.val();
        self.reading_bank.d.next = self.pop_ptr.val() & self.bank_mask.val();
        self.reading_row.d.next =
            (self.pop_ptr.val() >> self.bank_shift.val()) & self.address_mask.val();
        self.read_cast.wide.next = self.reading_row.q.val();
        self.picked_valid.d.next = self.reading_valid.q.val();
        for b in 0..32 {
            self.picked_select[b].clock.next = self.clock.val();
            self.picked_select[b].d.next = false;
        }
        for b in 0..32 {
            self.read_pick.words[b].next = 0.into();
            self.read_pick.select[b].next = self.picked_select[b].q.val();
        }
        for b in 0..B {
            self.bank[b].clock.next = self.clock.val();
            self.bank[b].read_address.next = self.read_cast.narrow.val();
            self.read_pick.words[b].next = self.bank[b].read_data.val();
            self.picked_select[b].d.next = self.reading_bank.q.val().index() == b;
            self.bank[b].write_enable.next = self.router.write_enable[b].val();
            self.bank[b].write_data.next = self.router.write_data[b].val();
            // Banks before the first word's bank are on the next row.
            self.bank[b].write_address.next = self.row_cast.narrow.val();
            if self.write_base_bank.q.val().index() > b {
                self.bank[b].write_address.next = self.next_row_cast.narrow.val();
            }
        }
        self.out_valid.d.next = self.picked_valid.q.val();
        self.out_word.d.next = self.read_pick.picked.val();
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

/// One clock's words (`count[g]` words per group, groups contiguous in the
/// stream from position `base`) to their banks, a clock later: stream
/// position `p` goes to bank `p mod B`.
///
/// The Verilog is a network of 2:1 multiplexers, generated per `(E, B)`:
/// each group's words are shifted up by the count of the groups before it
/// (a log shifter), a position takes the highest group that starts at or
/// below it (groups are contiguous); the dense words, their total and
/// `base mod B` are registered (the network's carry chains and compares
/// end there), then rotated by `base mod B` (a log rotator). Entries no
/// valid word can reach are left out. The Rust model below computes each
/// word's bank directly, so the Icarus checks of the generated Verilog
/// test the network against it.
#[derive(LogicBlock)]
pub struct BankWriteRouter<const E: usize, const B: usize> {
    pub clock: Signal<In, Clock>,
    /// Stream position of the clock's first word (group 0's).
    pub base: Signal<In, Bits<32>>,
    pub count: [Signal<In, Bits<2>>; GROUPS],
    pub word0: [Signal<In, Bits<32>>; GROUPS],
    pub word1: [Signal<In, Bits<32>>; GROUPS],
    pub word2: [Signal<In, Bits<32>>; GROUPS],
    pub write_enable: [Signal<Out, Bit>; B],
    /// The bank's word; meaningful only where `write_enable` is set.
    pub write_data: [Signal<Out, Bits<32>>; B],
    /// The model's register: each bank's write of the last clock.
    _enable: [bool; B],
    _data: [u32; B],
}

impl<const E: usize, const B: usize> Default for BankWriteRouter<E, B> {
    fn default() -> Self {
        assert!(
            B.is_power_of_two() && B >= 2 + 3 * E && B <= 32 && (1..GROUPS).contains(&E),
            "B must be a power of two >= 2 + 3 E"
        );
        Self {
            clock: Default::default(),
            base: Default::default(),
            count: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            write_enable: std::array::from_fn(|_| Default::default()),
            write_data: std::array::from_fn(|_| Default::default()),
            _enable: [false; B],
            _data: [0; B],
        }
    }
}

impl<const E: usize, const B: usize> Logic for BankWriteRouter<E, B> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            self.latch();
        }
        for b in 0..B {
            self.write_enable[b].next = self._enable[b];
            self.write_data[b].next = (self._data[b] as u64).to_bits();
        }
    }

    fn connect(&mut self) {
        for b in 0..B {
            self.write_enable[b].connect();
            self.write_data[b].connect();
        }
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(bank_router_verilog(E, B))
    }
}

impl<const E: usize, const B: usize> BankWriteRouter<E, B> {
    /// The register's next value: each bank's word from the inputs.
    fn latch(&mut self) {
        let mut enable = [false; B];
        let mut data = [0u32; B];
        let mut position = self.base.val().index();
        for g in 0..=E {
            let words = [
                self.word0[g].val(),
                self.word1[g].val(),
                self.word2[g].val(),
            ];
            let count = self.count[g].val().index().min(group_max(E, g));
            for word in &words[..count] {
                let bank = position % B;
                enable[bank] = true;
                data[bank] = word.to_u32();
                position += 1;
            }
        }
        self._enable = enable;
        self._data = data;
    }
}

/// Bits needed for values `0..=max`.
fn bits_for(max: usize) -> usize {
    (usize::BITS - max.leading_zeros()) as usize
}

/// The Verilog body of `BankWriteRouter<slots, banks>` (see there).
fn bank_router_verilog(slots: usize, banks: usize) -> String {
    use std::fmt::Write;
    let mut v = String::new();
    let bank_bits = banks.trailing_zeros() as usize;
    let groups = slots + 1;
    let max: Vec<usize> = (0..groups).map(|g| group_max(slots, g)).collect();
    let used: usize = max.iter().sum();
    let word = |g: usize, i: usize| format!("word{i}${g}");
    // Inputs no word of the build can use.
    let mut unused: Vec<String> = vec![format!("base[31:{bank_bits}]")];
    for (g, &m) in max.iter().enumerate() {
        for i in m..3 {
            unused.push(word(g, i));
        }
    }
    for g in groups..GROUPS {
        unused.push(format!("count${g}"));
        for i in 0..3 {
            unused.push(word(g, i));
        }
    }
    writeln!(
        v,
        "wire unused_router_bits = &{{1'b0, {}}};",
        unused.join(", ")
    )
    .unwrap();
    // Group g starts rel_g words after group 0 (prefix sums of the counts).
    for g in 0..groups {
        writeln!(v, "wire [4:0] count_{g} = {{3'b0, count${g}}};").unwrap();
    }
    writeln!(v, "wire [4:0] rel_0 = 5'd0;").unwrap();
    for g in 1..groups {
        writeln!(v, "wire [4:0] rel_{g} = rel_{} + count_{};", g - 1, g - 1).unwrap();
    }
    writeln!(v, "wire [4:0] total = rel_{0} + count_{0};", groups - 1).unwrap();

    // Compaction: group g's words shifted up by rel_g (<= the maxima of
    // the groups before it). `group_words[g][x]` names the expression
    // holding group g's word x - rel_g at position x.
    let mut group_words: Vec<Vec<String>> = vec![(0..max[0]).map(|i| word(0, i)).collect()];
    for g in 1..groups {
        let max_rel: usize = max[..g].iter().sum();
        let mut cur: Vec<String> = (0..max[g]).map(|i| word(g, i)).collect();
        for s in 0..bits_for(max_rel) {
            let step = 1usize << s;
            // Positions reachable after shifting by rel_g mod 2^(s+1).
            let width = (max[g] + (2 * step - 1)).min(max[g] + max_rel);
            let mut next = Vec::with_capacity(width);
            for x in 0..width {
                let keep = cur.get(x);
                let shifted = x.checked_sub(step).and_then(|y| cur.get(y));
                next.push(match (keep, shifted) {
                    (Some(k), Some(sh)) => {
                        let name = format!("group{g}_s{}_{x}", s + 1);
                        writeln!(v, "wire [31:0] {name} = rel_{g}[{s}] ? {sh} : {k};").unwrap();
                        name
                    }
                    (Some(k), None) => k.clone(),
                    (None, Some(sh)) => sh.clone(),
                    (None, None) => unreachable!("widths grow by at most the step"),
                });
            }
            cur = next;
        }
        group_words.push(cur);
    }
    // Merge: position q holds the word of the highest group starting at or
    // below it (a group that ended before q is followed by one starting at
    // or below q). The lowest group that can reach q needs no test.
    for q in 0..used {
        let reach: Vec<usize> = (0..groups).filter(|&g| q < group_words[g].len()).collect();
        let mut expr = group_words[reach[0]][q].clone();
        for &g in &reach[1..] {
            expr = format!("(rel_{g} <= 5'd{q}) ? {} : ({expr})", group_words[g][q]);
        }
        writeln!(v, "wire [31:0] dense_{q} = {expr};").unwrap();
    }
    // The register: the dense words, their total and the rotation amount.
    for q in 0..used {
        writeln!(v, "reg [31:0] dense_r_{q};").unwrap();
    }
    writeln!(v, "reg [4:0] total_r;").unwrap();
    writeln!(v, "reg [{}:0] base_r;", bank_bits - 1).unwrap();
    writeln!(v, "always @(posedge clock) begin").unwrap();
    for q in 0..used {
        writeln!(v, "    dense_r_{q} <= dense_{q};").unwrap();
    }
    writeln!(v, "    total_r <= total;").unwrap();
    writeln!(v, "    base_r <= base[{}:0];", bank_bits - 1).unwrap();
    writeln!(v, "end").unwrap();
    // Rotation by base mod B: bank b takes dense word (b - base) mod B.
    // `None` marks entries that no dense word can reach yet.
    let mut cur: Vec<Option<String>> = (0..banks)
        .map(|x| (x < used).then(|| format!("dense_r_{x}")))
        .collect();
    for s in 0..bank_bits {
        let step = 1usize << s;
        let mut next = Vec::with_capacity(banks);
        for x in 0..banks {
            let from = (x + banks - step) % banks;
            next.push(match (&cur[x], &cur[from]) {
                (Some(k), Some(sh)) => {
                    let name = format!("rot_s{}_{x}", s + 1);
                    writeln!(v, "wire [31:0] {name} = base_r[{s}] ? {sh} : {k};").unwrap();
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
            "    write_enable${b} = {{1'b0, {bank_bits}'d{b} - base_r}} < {{1'b0, total_r}};"
        )
        .unwrap();
        writeln!(v, "    write_data${b} = {data};").unwrap();
    }
    writeln!(v, "end").unwrap();
    v
}
