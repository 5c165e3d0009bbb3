//! The stack-distance histogram, in block RAM, and its reader.

use rust_hdl::prelude::*;

use super::{IntervalCounts, BINS, COUNT_BITS};

/// Bits of a bin's address (the RAMs hold 256 words, of which the first
/// `BINS` are bins).
const ADDRESS_BITS: usize = 8;

/// The references of the open interval per stack distance, and the last
/// closed interval's for the reader, counted as the slot counts are
/// ([`IntervalCounts`]). `valid`, `depth` and `close` are the stack's
/// bottom token, registered; a token with `close` opens the next
/// interval (its own reference belongs to it).
///
/// The reader: `rewind` in a clock makes `value` bin 0 two clocks later;
/// each clock with `shift` (and no rewind taking effect) moves `value` to
/// the next bin in the next clock (0 past the last). `value` comes from a
/// register, so that the RAM's slow output ends there: the RAM reads a
/// clock ahead the bin that follows the one to be shown, which the
/// register loads (or 0 for a bin not written) if the reader shifts. The
/// record stays readable through the clock after the next close.
///
/// Whether the bin read ahead was written comes from registers: from
/// bin 1 on, the written-since bits of the bins after the shown one,
/// copied from the RAM's when the reader restarts at bin 0 (final by
/// then: the record comes long after the close's last token counted)
/// and shifted with it, so that only a four-way choice follows
/// `shift` and the rewind, not a 129-way one by the bin's number.
#[derive(LogicBlock)]
pub struct Histogram {
    pub clock: Signal<In, Clock>,
    pub valid: Signal<In, Bit>,
    pub depth: Signal<In, Bits<ADDRESS_BITS>>,
    pub close: Signal<In, Bit>,
    pub rewind: Signal<In, Bit>,
    pub shift: Signal<In, Bit>,
    pub value: Signal<Out, Bits<COUNT_BITS>>,
    bin_counts: IntervalCounts<ADDRESS_BITS, BINS>,
    bin_count: Constant<Bits<ADDRESS_BITS>>,
    last_bin: Constant<Bits<ADDRESS_BITS>>,
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
    step: Signal<Local, Bit>,
    next_shown: Signal<Local, Bits<ADDRESS_BITS>>,
    read_at: Signal<Local, Bits<ADDRESS_BITS>>,
    /// Whether the bin at `read_at` was written (set once a clock into the
    /// RAMs' block, which reads `read_at`'s choice of bits from it).
    read_at_fresh: Signal<Local, Bit>,
    /// Bit `k`: whether the bin `min(shown + 1 + k, last)` was written
    /// (valid from the clock after a restart on).
    ahead_fresh: DFF<Bits<BINS>>,
    /// The bits of `ahead_fresh` that stay when it shifts: the last bin's.
    last_bin_only: Constant<Bits<BINS>>,
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
            bin_counts: Default::default(),
            bin_count: Constant::new((BINS as u64).to_bits()),
            last_bin: Constant::new(((BINS - 1) as u64).to_bits()),
            restart: Default::default(),
            shown: Default::default(),
            shown_last: Default::default(),
            after_one: Default::default(),
            after_two: Default::default(),
            step: Default::default(),
            next_shown: Default::default(),
            read_at: Default::default(),
            read_at_fresh: Default::default(),
            ahead_fresh: Default::default(),
            last_bin_only: Constant::new(Bits::<BINS>::default().replace_bit(BINS - 1, true)),
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
            restart,
            shown,
            shown_last,
            after_one,
            after_two,
            ahead_fresh,
            shown_value
        );
        self.bin_counts.clock.next = self.clock.val();
        self.bin_counts.valid.next = self.valid.val();
        self.bin_counts.address.next = self.depth.val();
        self.bin_counts.first.next = false;
        self.bin_counts.close.next = self.close.val();
        // The bin shown from the next clock on, and the RAM's read of the
        // one after it.
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
        self.bin_counts.read_address.next = self.read_at.val();
        // The same choice for the bin's written-since bit, from registers.
        self.bin_counts.read_fresh_known.next = true;
        self.read_at_fresh.next = self.ahead_fresh.q.val().get_bit(0);
        if self.step.val() {
            self.read_at_fresh.next = self.ahead_fresh.q.val().get_bit(1);
            self.ahead_fresh.d.next = (self.ahead_fresh.q.val() >> 1)
                | (self.ahead_fresh.q.val() & self.last_bin_only.val());
        }
        if self.restart.q.val() {
            self.read_at_fresh.next = self.bin_counts.reader_fresh.val().get_bit(1);
            self.ahead_fresh.d.next = (self.bin_counts.reader_fresh.val() >> 1)
                | (self.bin_counts.reader_fresh.val() & self.last_bin_only.val());
        }
        if self.rewind.val() {
            self.read_at_fresh.next = self.bin_counts.reader_fresh.val().get_bit(0);
        }
        self.bin_counts.read_fresh_given.next = self.read_at_fresh.val();
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
        // The bin read the clock before, loaded if it is shown from the
        // next clock on.
        if self.step.val() | self.restart.q.val() {
            self.shown_value.d.next = self.bin_counts.read_count.val();
        }
        if self.step.val() & self.shown_last.q.val() & !self.restart.q.val() {
            self.shown_value.d.next = 0.into();
        }
        self.value.next = self.shown_value.q.val();
    }
}
