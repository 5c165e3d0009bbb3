//! The stack-distance histogram, in block RAM.

use rust_hdl::prelude::*;

use super::{BINS, COUNT_BITS};

/// Bits of a bin's address (the RAMs hold 256 words, of which the first
/// `BINS` are bins).
const ADDRESS_BITS: usize = 8;

/// The references of the open interval per stack distance, and the last
/// closed interval's for the reader, in two RAMs that swap roles at each
/// close: one counts, the other holds the record. `valid`, `depth` and
/// `close` are the stack's bottom token; a token with `close` opens the
/// next interval (its own reference belongs to it).
///
/// Counting is a read-modify-write over three clocks, as the slot counts
/// do ([`super::SlotCounts`]): the token's clock reads its bin and its
/// fresh bit, the next registers the word (or 0), the third writes it
/// plus one; the write of the read's clock is forwarded in the second,
/// the write of the clock before in the third. A RAM cannot be
/// cleared in one clock, so a bit per bin says whether the bin was
/// written since its RAM started counting; a bin without it reads 0.
///
/// The reader: `rewind` in a clock makes `value` bin 0 two clocks later;
/// each clock with `shift` (and no rewind taking effect) moves `value` to
/// the next bin in the next clock (0 past the last). `value` comes from a
/// register, so that the RAM's slow output ends there: the RAM reads a
/// clock ahead the bin that follows the one to be shown, which the
/// register loads (or 0 for a bin not written) if the reader shifts. The
/// record stays readable through the clock after the next close.
#[derive(LogicBlock)]
pub struct Histogram {
    pub clock: Signal<In, Clock>,
    pub valid: Signal<In, Bit>,
    pub depth: Signal<In, Bits<ADDRESS_BITS>>,
    pub close: Signal<In, Bit>,
    pub rewind: Signal<In, Bit>,
    pub shift: Signal<In, Bit>,
    pub value: Signal<Out, Bits<COUNT_BITS>>,
    ram0: RAM<Bits<COUNT_BITS>, ADDRESS_BITS>,
    ram1: RAM<Bits<COUNT_BITS>, ADDRESS_BITS>,
    /// The RAM the open interval counts into.
    counting: DFF<Bit>,
    /// Per RAM, the bins written since it started counting.
    fresh0: DFF<Bits<BINS>>,
    fresh1: DFF<Bits<BINS>>,
    bin_count: Constant<Bits<ADDRESS_BITS>>,
    /// The token's RAM (the new one for a token with `close`), and
    /// whether its bin holds a count of this interval.
    token_ram: Signal<Local, Bit>,
    token_fresh: Signal<Local, Bit>,
    // The token in its second clock: the RAM's word arrives.
    load_valid: DFF<Bit>,
    load_ram: DFF<Bit>,
    load_depth: DFF<Bits<ADDRESS_BITS>>,
    load_fresh: DFF<Bit>,
    load_old: Signal<Local, Bits<COUNT_BITS>>,
    // The token in its third clock: the write.
    add_valid: DFF<Bit>,
    add_ram: DFF<Bit>,
    add_depth: DFF<Bits<ADDRESS_BITS>>,
    add_loaded: DFF<Bits<COUNT_BITS>>,
    add_old: Signal<Local, Bits<COUNT_BITS>>,
    add_new: Signal<Local, Bits<COUNT_BITS>>,
    // The write of the clock before, for the token right behind.
    wrote_valid: DFF<Bit>,
    wrote_ram: DFF<Bit>,
    wrote_depth: DFF<Bits<ADDRESS_BITS>>,
    wrote_value: DFF<Bits<COUNT_BITS>>,
    // The reader.
    /// `rewind` a clock later: `value` loads bin 0.
    restart: DFF<Bit>,
    /// The bin in `value` (`BINS`: past the last), and whether it is the
    /// last bin.
    shown: DFF<Bits<ADDRESS_BITS>>,
    shown_last: DFF<Bit>,
    /// The bin after `shown`, and the one after that (the last bin at
    /// most): what the RAM reads ahead.
    after_one: DFF<Bits<ADDRESS_BITS>>,
    after_two: DFF<Bits<ADDRESS_BITS>>,
    last_bin: Constant<Bits<ADDRESS_BITS>>,
    step: Signal<Local, Bit>,
    next_shown: Signal<Local, Bits<ADDRESS_BITS>>,
    read_ram: Signal<Local, Bit>,
    read_at: Signal<Local, Bits<ADDRESS_BITS>>,
    read_from: DFF<Bit>,
    read_fresh: DFF<Bit>,
    read_word: Signal<Local, Bits<COUNT_BITS>>,
    shown_value: DFF<Bits<COUNT_BITS>>,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            valid: Default::default(),
            depth: Default::default(),
            close: Default::default(),
            rewind: Default::default(),
            shift: Default::default(),
            value: Default::default(),
            ram0: Default::default(),
            ram1: Default::default(),
            counting: Default::default(),
            fresh0: Default::default(),
            fresh1: Default::default(),
            bin_count: Constant::new((BINS as u64).to_bits()),
            token_ram: Default::default(),
            token_fresh: Default::default(),
            load_valid: Default::default(),
            load_ram: Default::default(),
            load_depth: Default::default(),
            load_fresh: Default::default(),
            load_old: Default::default(),
            add_valid: Default::default(),
            add_ram: Default::default(),
            add_depth: Default::default(),
            add_loaded: Default::default(),
            add_old: Default::default(),
            add_new: Default::default(),
            wrote_valid: Default::default(),
            wrote_ram: Default::default(),
            wrote_depth: Default::default(),
            wrote_value: Default::default(),
            restart: Default::default(),
            shown: Default::default(),
            shown_last: Default::default(),
            after_one: Default::default(),
            after_two: Default::default(),
            last_bin: Constant::new(((BINS - 1) as u64).to_bits()),
            step: Default::default(),
            next_shown: Default::default(),
            read_ram: Default::default(),
            read_at: Default::default(),
            read_from: Default::default(),
            read_fresh: Default::default(),
            read_word: Default::default(),
            shown_value: Default::default(),
        }
    }
}

impl Logic for Histogram {
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
            load_depth,
            load_fresh,
            add_valid,
            add_ram,
            add_depth,
            add_loaded,
            wrote_valid,
            wrote_ram,
            wrote_depth,
            wrote_value,
            restart,
            shown,
            shown_last,
            after_one,
            after_two,
            read_from,
            read_fresh,
            shown_value
        );
        self.ram0.read_clock.next = self.clock.val();
        self.ram0.write_clock.next = self.clock.val();
        self.ram1.read_clock.next = self.clock.val();
        self.ram1.write_clock.next = self.clock.val();
        // The token's first clock: read its bin. A close swaps the RAMs,
        // and the one that starts counting has no bin of this interval.
        self.token_ram.next = self.counting.q.val() ^ self.close.val();
        self.counting.d.next = self.token_ram.val();
        self.token_fresh.next = self.fresh0.q.val().get_bit(self.depth.val().index());
        if self.token_ram.val() {
            self.token_fresh.next = self.fresh1.q.val().get_bit(self.depth.val().index());
        }
        if self.close.val() {
            self.token_fresh.next = false;
        }
        self.load_valid.d.next = self.valid.val();
        self.load_ram.d.next = self.token_ram.val();
        self.load_depth.d.next = self.depth.val();
        self.load_fresh.d.next = self.token_fresh.val();
        // The reader: the bin shown from the next clock on, and the RAM's
        // read of the one after it, from the RAM that holds the record.
        self.restart.d.next = self.rewind.val();
        self.step.next = self.shift.val() & (self.shown.q.val() != self.bin_count.val());
        self.next_shown.next = self.shown.q.val();
        self.read_at.next = self.after_one.q.val();
        if self.step.val() {
            self.next_shown.next = self.after_one.q.val();
            if self.shown_last.q.val() {
                self.next_shown.next = self.bin_count.val();
            }
            self.read_at.next = self.after_two.q.val();
        }
        if self.restart.q.val() {
            self.next_shown.next = 0.into();
            self.read_at.next = 1.into();
        }
        if self.rewind.val() {
            self.read_at.next = 0.into();
        }
        self.shown.d.next = self.next_shown.val();
        self.shown_last.d.next = self.next_shown.val() == self.last_bin.val();
        self.after_one.d.next = self.next_shown.val() + 1;
        if self.next_shown.val() >= self.last_bin.val() {
            self.after_one.d.next = self.last_bin.val();
        }
        self.after_two.d.next = self.next_shown.val() + 2;
        if self.next_shown.val() >= self.last_bin.val() - 1 {
            self.after_two.d.next = self.last_bin.val();
        }
        self.read_ram.next = !self.counting.q.val();
        self.read_from.d.next = self.read_ram.val();
        self.read_fresh.d.next = self.fresh0.q.val().get_bit(self.read_at.val().index());
        if self.read_ram.val() {
            self.read_fresh.d.next = self.fresh1.q.val().get_bit(self.read_at.val().index());
        }
        // A RAM's read port is the token's when it counts, else the
        // reader's. A close's token reads nothing (its bin is 0 in its
        // new RAM), so the reader keeps the port through the clock after
        // the close.
        self.ram0.read_address.next = self.read_at.val();
        if self.valid.val() & !self.close.val() & !self.token_ram.val() {
            self.ram0.read_address.next = self.depth.val();
        }
        self.ram1.read_address.next = self.read_at.val();
        if self.valid.val() & !self.close.val() & self.token_ram.val() {
            self.ram1.read_address.next = self.depth.val();
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
            & (self.wrote_ram.q.val() == self.load_ram.q.val())
            & (self.wrote_depth.q.val() == self.load_depth.q.val())
        {
            self.load_old.next = self.wrote_value.q.val();
        }
        self.add_valid.d.next = self.load_valid.q.val();
        self.add_ram.d.next = self.load_ram.q.val();
        self.add_depth.d.next = self.load_depth.q.val();
        self.add_loaded.d.next = self.load_old.val();
        // The token's third clock: write its word plus one, or the write
        // of the clock before plus one.
        self.add_old.next = self.add_loaded.q.val();
        if self.wrote_valid.q.val()
            & (self.wrote_ram.q.val() == self.add_ram.q.val())
            & (self.wrote_depth.q.val() == self.add_depth.q.val())
        {
            self.add_old.next = self.wrote_value.q.val();
        }
        self.add_new.next = self.add_old.val() + 1;
        self.ram0.write_address.next = self.add_depth.q.val();
        self.ram0.write_data.next = self.add_new.val();
        self.ram0.write_enable.next = self.add_valid.q.val() & !self.add_ram.q.val();
        self.ram1.write_address.next = self.add_depth.q.val();
        self.ram1.write_data.next = self.add_new.val();
        self.ram1.write_enable.next = self.add_valid.q.val() & self.add_ram.q.val();
        self.wrote_valid.d.next = self.add_valid.q.val();
        self.wrote_ram.d.next = self.add_ram.q.val();
        self.wrote_depth.d.next = self.add_depth.q.val();
        self.wrote_value.d.next = self.add_new.val();
        if self.add_valid.q.val() & !self.add_ram.q.val() {
            self.fresh0.d.next = self
                .fresh0
                .q
                .val()
                .replace_bit(self.add_depth.q.val().index(), true);
        }
        if self.add_valid.q.val() & self.add_ram.q.val() {
            self.fresh1.d.next = self
                .fresh1
                .q
                .val()
                .replace_bit(self.add_depth.q.val().index(), true);
        }
        if self.close.val() & !self.token_ram.val() {
            self.fresh0.d.next = 0.into();
        }
        if self.close.val() & self.token_ram.val() {
            self.fresh1.d.next = 0.into();
        }
        // The bin the RAM read the clock before, loaded if it is shown
        // from the next clock on.
        self.read_word.next = 0.into();
        if self.read_fresh.q.val() {
            self.read_word.next = self.ram0.read_data.val();
            if self.read_from.q.val() {
                self.read_word.next = self.ram1.read_data.val();
            }
        }
        if self.step.val() | self.restart.q.val() {
            self.shown_value.d.next = self.read_word.val();
        }
        if self.step.val() & self.shown_last.q.val() & !self.restart.q.val() {
            self.shown_value.d.next = 0.into();
        }
        self.value.next = self.shown_value.q.val();
    }
}
