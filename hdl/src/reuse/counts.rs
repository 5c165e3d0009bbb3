//! Counts per interval in block RAM: the stack entries' (by slot) and
//! the histogram's bins.

use rust_hdl::prelude::*;

use super::{COUNT_BITS, DEPTH, SLOT_BITS};

/// The references to each stack entry's page in the open interval, by
/// the entry's slot, and the last closed interval's for the hot-page
/// scan.
pub type SlotCounts = IntervalCounts<SLOT_BITS, DEPTH>;

/// `WORDS` counts (addresses of `ADDRESS_BITS` bits, below `WORDS`) of
/// the open interval, and the last closed interval's for the reader, in
/// two RAMs that swap roles at each close. `valid`, `address`, `first`
/// and `close` are a token, registered (every input comes straight from
/// a flip-flop): it counts one at its address, which starts from 0 if
/// `first` (a stack entry's page has just entered the stack in that
/// slot); a token with `close` opens the next interval (its own count
/// belongs to it).
///
/// Counting is a read-modify-write over three clocks, so that neither
/// the RAM's output nor the choice of its word's fresh bit shares a
/// clock with the adder: the token's clock reads the word and its fresh
/// bit, the next registers the word (or 0), the third writes it plus
/// one and says so (`added_valid`, `added`). The two writes the read
/// missed are forwarded: the one of the read's own clock (the token two
/// ahead) in the second clock, the one of the clock before the write
/// (the token right ahead) in the third. A RAM cannot be cleared in one
/// clock, so a bit per word says whether the word was written since its
/// RAM started counting; a word without it reads 0.
///
/// The reader: `read_address` in a clock gives in the next, in
/// `read_count`, that address's count in the RAM that does not count
/// from this clock on (from a close's clock on, that close's interval).
#[derive(LogicBlock, Default)]
pub struct IntervalCounts<const ADDRESS_BITS: usize, const WORDS: usize> {
    pub clock: Signal<In, Clock>,
    pub valid: Signal<In, Bit>,
    pub address: Signal<In, Bits<ADDRESS_BITS>>,
    pub first: Signal<In, Bit>,
    pub close: Signal<In, Bit>,
    pub added_valid: Signal<Out, Bit>,
    pub added: Signal<Out, Bits<COUNT_BITS>>,
    pub read_address: Signal<In, Bits<ADDRESS_BITS>>,
    pub read_count: Signal<Out, Bits<COUNT_BITS>>,
    pub read_fresh_known: Signal<In, Bit>,
    pub read_fresh_given: Signal<In, Bit>,
    pub reader_fresh: Signal<Out, Bits<WORDS>>,
    ram0: RAM<Bits<COUNT_BITS>, ADDRESS_BITS>,
    ram1: RAM<Bits<COUNT_BITS>, ADDRESS_BITS>,
    /// The RAM the open interval counts into.
    counting: DFF<Bit>,
    /// Per RAM, the words written since it started counting.
    fresh0: DFF<Bits<WORDS>>,
    fresh1: DFF<Bits<WORDS>>,
    /// The token's RAM (the new one for a token with `close`), and
    /// whether its word holds a count of this interval.
    token_ram: Signal<Local, Bit>,
    token_fresh: Signal<Local, Bit>,
    // The token in its second clock: the RAM's word arrives.
    load_valid: DFF<Bit>,
    load_ram: DFF<Bit>,
    load_address: DFF<Bits<ADDRESS_BITS>>,
    load_fresh: DFF<Bit>,
    load_first: DFF<Bit>,
    load_old: Signal<Local, Bits<COUNT_BITS>>,
    // The token in its third clock: the write.
    add_valid: DFF<Bit>,
    add_ram: DFF<Bit>,
    add_address: DFF<Bits<ADDRESS_BITS>>,
    add_first: DFF<Bit>,
    add_loaded: DFF<Bits<COUNT_BITS>>,
    add_old: Signal<Local, Bits<COUNT_BITS>>,
    add_new: Signal<Local, Bits<COUNT_BITS>>,
    // The write of the clock before.
    wrote_valid: DFF<Bit>,
    wrote_ram: DFF<Bit>,
    wrote_address: DFF<Bits<ADDRESS_BITS>>,
    wrote_value: DFF<Bits<COUNT_BITS>>,
    // The reader.
    read_ram: Signal<Local, Bit>,
    /// The reader's RAM's written-since bits, set once a clock as
    /// `reader_fresh` (an output set twice would change twice, and under
    /// a Verilog simulator wake its reader each time, and so on).
    read_ram_fresh: Signal<Local, Bits<WORDS>>,
    read_from: DFF<Bit>,
    read_fresh: DFF<Bit>,
}

impl<const ADDRESS_BITS: usize, const WORDS: usize> Logic for IntervalCounts<ADDRESS_BITS, WORDS> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            counting,
            fresh0,
            fresh1,
            load_valid,
            load_ram,
            load_address,
            load_fresh,
            load_first,
            add_valid,
            add_ram,
            add_address,
            add_first,
            add_loaded,
            wrote_valid,
            wrote_ram,
            wrote_address,
            wrote_value,
            read_from,
            read_fresh
        );
        self.ram0.read_clock.next = self.clock.val();
        self.ram0.write_clock.next = self.clock.val();
        self.ram1.read_clock.next = self.clock.val();
        self.ram1.write_clock.next = self.clock.val();
        // The token's first clock: read its word. A close swaps the RAMs,
        // and the one that starts counting has no count of this interval.
        self.token_ram.next = self.counting.q.val() ^ self.close.val();
        self.counting.d.next = self.token_ram.val();
        self.token_fresh.next = self.fresh0.q.val().get_bit(self.address.val().index());
        if self.token_ram.val() {
            self.token_fresh.next = self.fresh1.q.val().get_bit(self.address.val().index());
        }
        if self.close.val() | self.first.val() {
            self.token_fresh.next = false;
        }
        self.load_valid.d.next = self.valid.val();
        self.load_ram.d.next = self.token_ram.val();
        self.load_address.d.next = self.address.val();
        self.load_fresh.d.next = self.token_fresh.val();
        self.load_first.d.next = self.first.val();
        // The counting RAM's read port is the token's, the other's the
        // reader's.
        self.read_ram.next = !self.token_ram.val();
        self.ram0.read_address.next = self.address.val();
        self.ram1.read_address.next = self.read_address.val();
        if self.token_ram.val() {
            self.ram0.read_address.next = self.read_address.val();
            self.ram1.read_address.next = self.address.val();
        }
        self.read_from.d.next = self.read_ram.val();
        self.read_ram_fresh.next = self.fresh0.q.val();
        if self.read_ram.val() {
            self.read_ram_fresh.next = self.fresh1.q.val();
        }
        self.reader_fresh.next = self.read_ram_fresh.val();
        self.read_fresh.d.next = self
            .read_ram_fresh
            .val()
            .get_bit(self.read_address.val().index());
        if self.read_fresh_known.val() {
            self.read_fresh.d.next = self.read_fresh_given.val();
        }
        // The token's second clock: its word, or the write of the clock
        // it was read in.
        self.load_old.next = 0.into();
        if self.load_fresh.q.val() {
            self.load_old.next = self.ram0.read_data.val();
            if self.load_ram.q.val() {
                self.load_old.next = self.ram1.read_data.val();
            }
        }
        if self.wrote_valid.q.val()
            & !self.load_first.q.val()
            & (self.wrote_ram.q.val() == self.load_ram.q.val())
            & (self.wrote_address.q.val() == self.load_address.q.val())
        {
            self.load_old.next = self.wrote_value.q.val();
        }
        self.add_valid.d.next = self.load_valid.q.val();
        self.add_ram.d.next = self.load_ram.q.val();
        self.add_address.d.next = self.load_address.q.val();
        self.add_first.d.next = self.load_first.q.val();
        self.add_loaded.d.next = self.load_old.val();
        // The token's third clock: write its word plus one, or the write
        // of the clock before plus one.
        self.add_old.next = self.add_loaded.q.val();
        if self.wrote_valid.q.val()
            & !self.add_first.q.val()
            & (self.wrote_ram.q.val() == self.add_ram.q.val())
            & (self.wrote_address.q.val() == self.add_address.q.val())
        {
            self.add_old.next = self.wrote_value.q.val();
        }
        self.add_new.next = self.add_old.val() + 1;
        self.ram0.write_address.next = self.add_address.q.val();
        self.ram0.write_data.next = self.add_new.val();
        self.ram0.write_enable.next = self.add_valid.q.val() & !self.add_ram.q.val();
        self.ram1.write_address.next = self.add_address.q.val();
        self.ram1.write_data.next = self.add_new.val();
        self.ram1.write_enable.next = self.add_valid.q.val() & self.add_ram.q.val();
        self.added_valid.next = self.add_valid.q.val();
        self.added.next = self.add_new.val();
        self.wrote_valid.d.next = self.add_valid.q.val();
        self.wrote_ram.d.next = self.add_ram.q.val();
        self.wrote_address.d.next = self.add_address.q.val();
        self.wrote_value.d.next = self.add_new.val();
        if self.add_valid.q.val() & !self.add_ram.q.val() {
            self.fresh0.d.next = self
                .fresh0
                .q
                .val()
                .replace_bit(self.add_address.q.val().index(), true);
        }
        if self.add_valid.q.val() & self.add_ram.q.val() {
            self.fresh1.d.next = self
                .fresh1
                .q
                .val()
                .replace_bit(self.add_address.q.val().index(), true);
        }
        if self.close.val() & !self.token_ram.val() {
            self.fresh0.d.next = 0.into();
        }
        if self.close.val() & self.token_ram.val() {
            self.fresh1.d.next = 0.into();
        }
        self.read_count.next = 0.into();
        if self.read_fresh.q.val() {
            self.read_count.next = self.ram0.read_data.val();
            if self.read_from.q.val() {
                self.read_count.next = self.ram1.read_data.val();
            }
        }
    }
}
