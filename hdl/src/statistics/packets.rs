//! The Statistic Unit's transport (board.md "Statistic Unit", Transport;
//! format.md §5.3): each record of [`super::StatisticCounters`] checked
//! against the statistics path's credit, then sent as version 1
//! statistics packets (the counters alone) or counted unsent.
//!
//! What it does, per `record_valid` of the counting half, in that clock:
//! - the credit, exactly as the golden model's (`hmtt_board_model`'s
//!   `StatisticUnit::close`): in units of `1/(8000 * 2^s)` byte, full at
//!   reset, grown by `ports * tick_ps` per tick up to a cap of `burst`
//!   records. The model grows it at each close from the last close's end
//!   tick; this block grows it by `L * ports * tick_ps` every clock, two
//!   clocks behind the counting stage (where `record_valid` comes). The
//!   sums are the same: the counting stage's tick advances by `L` a clock,
//!   and growth capped step by step is growth capped once
//!   (`min(c, min(c, x + a) + b) = min(c, x + a + b)` for `a, b >= 0`). A
//!   record costs `(bytes + 66) * 8000 * 2^s` summed over its packets, a
//!   constant of the build, and is sent if the credit covers it;
//! - a record it sends is held: the counting half copies its snapshots
//!   into a slot of its held records (`hold_write`, `hold_slot`; the
//!   snapshot of a close holds at least the clock of its `record_valid`),
//!   and this block keeps its header fields (interval, `k`, flags, unsent
//!   count) in a slot of its own RAMs, so that the next close, however
//!   soon, does not change it. One it does not send adds one to the
//!   unsent count the next record sent carries in `unsent_before`
//!   (saturating), and to `records_unsent`;
//! - the held records are sent in order, each cut into parts of at most
//!   `max_words - 4` counters, each a packet of the 48-byte header and
//!   its words (the counters do not saturate: an interval holds at most
//!   `2^31` ticks, so no counter passes `2^32 - 1`), with its own `seq`
//!   from 0 and port `seq % ports`; a slot is free again in the clock of
//!   its last word.
//!
//! Why [`HOLD_SLOTS`] slots are enough: a record sent takes
//! [`StatisticPackets::record_clocks`] clocks `P` from its slot's read to
//! its last word, back to back while records wait, and the build requires
//! a record's cost to be at least `P` clocks of credit (`cost >= P * L *
//! ports * tick_ps`, checked by [`StatsPacketConfig::plan`]). From the
//! record that finds no record waiting, `W` clocks later at most `burst +
//! floor(W / P)` records were sent (the credit held at most `burst`
//! before it and grew by at most `W / P` costs) and at least
//! `floor(W / P)` had their last word: never more than `burst <= 16`
//! records wait. At the ECP5 defaults a record costs 51,473 ticks and
//! takes 174 clocks (1,392 ticks). A record sent while all slots are
//! taken, which the bound excludes, would be counted in `overrun` and
//! lost.
//!
//! Output, in the form of [`crate::packetizer::Packetizer`]'s toward the
//! port buffers: one word a clock (`word_write`, `word_data`, `word_port`,
//! and `word_first`, `word_last` for the packet's first and last words),
//! the packet's bytes in order four to a word, the first in bits 0..8;
//! the header is in the words, not in a descriptor. A clock after a
//! packet's last word, `desc_write` with its length in words (`desc_words`,
//! the header's 12 included) and port, as the packetizer's late descriptor.
//! The packets of a record follow each other with no gap; nothing holds
//! the output back (the ports' share of the statistics is a later block's).

use rust_hdl::prelude::*;

use crate::dsmu::LineGeometry;

use super::{BANK_COUNTERS, HOLD_SLOTS, HOLD_SLOT_BITS};

/// Words of a statistics packet's header (48 bytes, format.md §5.3).
pub const HEADER_WORDS: usize = 12;

/// `read_index` before a record's first header word: `-10` in 10 bits.
const INDEX_START: u64 = (1 << 10) - 10;

/// Bytes a frame adds to its UDP payload on the wire (board.md "Drain
/// rate"), as the golden model counts them in the credit.
pub const WIRE_OVERHEAD_BYTES: u64 = 66;

/// The statistics path's build parameters: the golden model's
/// `StatsConfig` (share, burst) and `BoardConfig` (board id, ports, tick,
/// trace packet size) for a board whose Statistic Unit has no RDHPU, and
/// the board's lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsPacketConfig {
    pub geometry: LineGeometry,
    /// `L`: ticks a clock, 1..=8.
    pub lanes: u8,
    pub board_id: u8,
    /// Ethernet ports, 1..=4.
    pub ports: u8,
    /// A tick in picoseconds, at least 1.
    pub tick_ps: u16,
    /// A trace packet's words at most: a statistics packet has at most
    /// `max_words - 4` counters, so it is no larger. At least 5.
    pub max_words: u16,
    /// `s`: the path's share of the ports' line, `1/2^s`, 1..=8.
    pub share_log2: u8,
    /// Records the credit holds, 1..=16.
    pub burst_records: u32,
}

/// The constants of a build, from its [`StatsPacketConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsPacketPlan {
    /// Counters of a record (format.md §5.3).
    pub words: u64,
    /// Counters of a packet at most.
    pub max_counters: u64,
    pub parts: u64,
    /// A record's wire bytes: headers, counters, frame overheads.
    pub record_wire_bytes: u64,
    /// A record's cost and the cap, in `1/(8000 * 2^s)` byte; the credit a
    /// tick adds, and a clock.
    pub cost: u64,
    pub cap: u64,
    pub rate: u64,
    pub step: u64,
    /// Clocks from a held record's slot read to its last word.
    pub record_clocks: u64,
}

impl StatsPacketConfig {
    /// Panics on parameters outside board.md's ranges (a build error, as
    /// the other blocks' constructors), and on a path fast enough to send
    /// a record in less time than its credit takes to grow (then
    /// [`HOLD_SLOTS`] held records would not be enough; the module's
    /// documentation). [`StatsPacketConfig::check`] says why instead.
    pub fn plan(&self) -> StatsPacketPlan {
        self.check().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The plan, or why a build cannot have these parameters (the
    /// geometry is checked by [`LineGeometry::checked`] as before).
    pub fn check(&self) -> Result<StatsPacketPlan, String> {
        let g = self.geometry.checked();
        let range = |ok: bool, what: &str| if ok { Ok(()) } else { Err(what.to_string()) };
        range((1..=8).contains(&self.lanes), "1..=8 lanes")?;
        range((1..=4).contains(&self.ports), "1..=4 ports")?;
        range(self.tick_ps >= 1, "a tick of at least 1 ps")?;
        range(self.max_words >= 5, "max_words >= 5")?;
        range((1..=8).contains(&self.share_log2), "s in 1..=8")?;
        range((1..=16).contains(&self.burst_records), "burst 1..=16")?;
        range(
            self.burst_records as usize <= HOLD_SLOTS,
            "a slot per record of the burst",
        )?;
        let ranks = 1u64 << g.rank_bits;
        let banks = ranks << g.bank_bits;
        let words = banks * BANK_COUNTERS as u64 + 2 * ranks + u64::from(g.line_bits()) + 2;
        let max_counters = u64::from(self.max_words) - 4;
        let parts = words.div_ceil(max_counters);
        range(parts <= 255, "a record of at most 255 parts")?;
        let record_wire_bytes = (HEADER_WORDS as u64 * 4 + WIRE_OVERHEAD_BYTES) * parts + 4 * words;
        let cost = record_wire_bytes * (8000 << self.share_log2);
        let cap = u64::from(self.burst_records) * cost;
        let rate = u64::from(self.ports) * u64::from(self.tick_ps);
        let step = rate * u64::from(self.lanes);
        // The idle clock and the slot's read, then every packet's words.
        let record_clocks = 2 + HEADER_WORDS as u64 * parts + words;
        range(
            cost >= record_clocks * step,
            &format!(
                "a record's credit must take at least the {record_clocks} clocks of its packets"
            ),
        )?;
        Ok(StatsPacketPlan {
            words,
            max_counters,
            parts,
            record_wire_bytes,
            cost,
            cap,
            rate,
            step,
            record_clocks,
        })
    }
}

/// The statistics path; see the module documentation.
#[derive(LogicBlock)]
pub struct StatisticPackets {
    pub clock: Signal<In, Clock>,
    /// The counting half's record ([`super::StatisticCounters`]'
    /// outputs of the same names).
    pub record_valid: Signal<In, Bit>,
    pub record_start: Signal<In, Bits<64>>,
    pub record_end: Signal<In, Bits<64>>,
    pub record_k: Signal<In, Bits<5>>,
    /// The board mode for the header's flags (format.md §5: bit0 tracing,
    /// bit1 tags-only), taken in the clock of `record_valid`: the mode
    /// after the events of the interval's last clock.
    pub tracing: Signal<In, Bit>,
    pub tags_only: Signal<In, Bit>,
    /// To the counting half: hold the record of this `record_valid` in
    /// slot `hold_slot`; read held slot `read_slot` at `read_index`.
    pub hold_write: Signal<Out, Bit>,
    pub hold_slot: Signal<Out, Bits<HOLD_SLOT_BITS>>,
    pub read_slot: Signal<Out, Bits<HOLD_SLOT_BITS>>,
    pub read_index: Signal<Out, Bits<10>>,
    pub read_value: Signal<In, Bits<32>>,
    /// The packets' words, toward the ports.
    pub word_write: Signal<Out, Bit>,
    pub word_data: Signal<Out, Bits<32>>,
    pub word_port: Signal<Out, Bits<2>>,
    pub word_first: Signal<Out, Bit>,
    pub word_last: Signal<Out, Bit>,
    pub desc_write: Signal<Out, Bit>,
    pub desc_words: Signal<Out, Bits<16>>,
    pub desc_port: Signal<Out, Bits<2>>,
    /// Records sent and refused by the credit (saturating), records sent
    /// with every slot taken (lost; the module's documentation), and
    /// whether a record is held or being sent.
    pub records_sent: Signal<Out, Bits<32>>,
    pub records_unsent: Signal<Out, Bits<32>>,
    pub overrun: Signal<Out, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    // The build's constants (`StatsPacketPlan`) and the fixed parts of
    // the header's words: 0 the magic, 1 version and board, 8 the
    // geometry's bytes, 9 tick_ps, 11 the parts.
    max_counters: Constant<Bits<16>>,
    /// The last part's counters (`words` less the other parts'), and the
    /// word (`pos`) before each kind of part's last: constants, so that a
    /// packet's count and end take no subtract of `first`. The part
    /// before the last (`255` for a record of one part), where the next
    /// packet is the record's last.
    last_count: Constant<Bits<16>>,
    full_before_last_pos: Constant<Bits<16>>,
    last_part_before_last_pos: Constant<Bits<16>>,
    last_part: Constant<Bits<8>>,
    part_before_last: Constant<Bits<8>>,
    last_port: Constant<Bits<2>>,
    step: Constant<Bits<64>>,
    cap: Constant<Bits<64>>,
    slots: Constant<Bits<5>>,
    /// `2^32 - 1`, where the counts stop.
    saturated: Constant<Bits<32>>,
    header_magic: Constant<Bits<32>>,
    header_board: Constant<Bits<32>>,
    header_geometry: Constant<Bits<32>>,
    header_tick: Constant<Bits<32>>,
    header_parts: Constant<Bits<32>>,
    /// The credit after a record is taken and the clock's growth added:
    /// `step - cost` (wrapping), and the credit from which the next
    /// clock's covers a cost, without or with a record taken in this
    /// one: `cost - step`, `2 cost - step`.
    step_after_cost: Constant<Bits<64>>,
    covers_kept: Constant<Bits<64>>,
    covers_taken: Constant<Bits<64>>,
    /// The record's words, headers included, less one.
    record_last_word: Constant<Bits<16>>,
    /// `read_index` when a record's read starts (`-10`).
    index_start: Constant<Bits<10>>,
    /// 0 idle, 1 the slot's read, 3 sending.
    state: DFF<Bits<2>>,
    /// The credit, as the model's at the counting stage's tick two
    /// clocks before, with this clock's growth (capped), and whether it
    /// covers a record's cost: both registers, worked out a clock ahead,
    /// so that the decision (`take`, then `store`, the write enable of
    /// every counter's held records) is a few gates from registers. The
    /// cap is at least a cost, so the capped credit covers a cost if and
    /// only if the uncapped one does: a compare of this clock's credit
    /// with a constant.
    credit: DFFWithInit<Bits<64>>,
    covers: DFFWithInit<Bit>,
    kept_grown: Signal<Local, Bits<64>>,
    taken_grown: Signal<Local, Bits<64>>,
    take: Signal<Local, Bit>,
    store: Signal<Local, Bit>,
    /// The held records' header fields, by slot: the interval's start
    /// and end ticks, and {unsent_before, flags, k} (bits 0, 32, 40).
    held_start: RAM<Bits<64>, HOLD_SLOT_BITS>,
    held_end: RAM<Bits<64>, HOLD_SLOT_BITS>,
    held_meta: RAM<Bits<45>, HOLD_SLOT_BITS>,
    /// The slots: the next to write, the one being read, how many hold a
    /// record; whether this clock frees the one being read (the record's
    /// last word), registered from a count of the record's words left,
    /// for the same reason as `covers`.
    write_slot: DFF<Bits<HOLD_SLOT_BITS>>,
    reading_slot: DFF<Bits<HOLD_SLOT_BITS>>,
    held_count: DFF<Bits<5>>,
    words_left: DFF<Bits<16>>,
    free: DFF<Bit>,
    /// `read_index` (`first + pos - 10`), kept as a register that follows
    /// `first` and `pos`, so that the readout's muxes see no adder.
    index: DFFWithInit<Bits<10>>,
    /// Records refused since the last one sent.
    pending: DFF<Bits<32>>,
    sent: DFF<Bits<32>>,
    unsent: DFF<Bits<32>>,
    overruns: DFF<Bits<32>>,
    /// The packet being sent: its `seq`, port, part, first counter, and
    /// the word (`pos`, the header's included); its counters (`count`).
    /// Whether it is the record's last part and whether `pos` is its last
    /// word are registers, set a clock ahead (from `pos == last - 1`,
    /// `part == last - 1`): `last_word` resets `pos` and steps `index`,
    /// `part`, `first`, `seq` and `port`, so it comes from a register and
    /// not through `part`'s compare, the count's choice and `pos`'s
    /// compare in series.
    seq: DFF<Bits<64>>,
    port: DFF<Bits<2>>,
    part: DFF<Bits<8>>,
    first: DFF<Bits<16>>,
    pos: DFF<Bits<16>>,
    last_part_now: DFF<Bit>,
    last_word: DFF<Bit>,
    count: Signal<Local, Bits<16>>,
    before_last_pos: Signal<Local, Bits<16>>,
    header_word: Signal<Local, Bits<32>>,
    flags_now: Signal<Local, Bits<8>>,
    /// The output registers; the descriptor's fields are held from the
    /// packet's last word until its write a clock after the word's.
    out_write: DFF<Bit>,
    out_data: DFF<Bits<32>>,
    out_port: DFF<Bits<2>>,
    out_first: DFF<Bit>,
    out_last: DFF<Bit>,
    desc_due: DFF<Bit>,
    desc_words_held: DFF<Bits<16>>,
    desc_port_held: DFF<Bits<2>>,
}

impl StatisticPackets {
    pub fn new(config: &StatsPacketConfig) -> Self {
        let plan = config.plan();
        let last_count = plan.words - (plan.parts - 1) * plan.max_counters;
        let g = config.geometry;
        let magic = u32::from_le_bytes(*b"HMTS");
        let geometry_bytes = u64::from(g.row_bits)
            | u64::from(g.rank_bits << 4 | g.bank_bits) << 8
            | u64::from(g.col_line_bits) << 16;
        Self {
            clock: Default::default(),
            record_valid: Default::default(),
            record_start: Default::default(),
            record_end: Default::default(),
            record_k: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
            hold_write: Default::default(),
            hold_slot: Default::default(),
            read_slot: Default::default(),
            read_index: Default::default(),
            read_value: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            word_port: Default::default(),
            word_first: Default::default(),
            word_last: Default::default(),
            desc_write: Default::default(),
            desc_words: Default::default(),
            desc_port: Default::default(),
            records_sent: Default::default(),
            records_unsent: Default::default(),
            overrun: Default::default(),
            busy: Default::default(),
            max_counters: Constant::new(plan.max_counters.to_bits()),
            last_count: Constant::new(last_count.to_bits()),
            full_before_last_pos: Constant::new((plan.max_counters + 10).to_bits()),
            last_part_before_last_pos: Constant::new((last_count + 10).to_bits()),
            last_part: Constant::new((plan.parts - 1).to_bits()),
            part_before_last: Constant::new(((plan.parts + 254) % 256).to_bits()),
            last_port: Constant::new(u64::from(config.ports - 1).to_bits()),
            step: Constant::new(plan.step.to_bits()),
            cap: Constant::new(plan.cap.to_bits()),
            slots: Constant::new((HOLD_SLOTS as u64).to_bits()),
            saturated: Constant::new(u64::from(u32::MAX).to_bits()),
            header_magic: Constant::new(u64::from(magic).to_bits()),
            header_board: Constant::new((1 | u64::from(config.board_id) << 16).to_bits()),
            header_geometry: Constant::new((geometry_bytes << 8).to_bits()),
            header_tick: Constant::new(u64::from(config.tick_ps).to_bits()),
            header_parts: Constant::new((plan.parts << 24).to_bits()),
            state: Default::default(),
            step_after_cost: Constant::new(plan.step.wrapping_sub(plan.cost).to_bits()),
            covers_kept: Constant::new((plan.cost - plan.step).to_bits()),
            covers_taken: Constant::new((2 * plan.cost - plan.step).to_bits()),
            record_last_word: Constant::new(
                (HEADER_WORDS as u64 * plan.parts + plan.words - 1).to_bits(),
            ),
            index_start: Constant::new(INDEX_START.to_bits()),
            credit: DFFWithInit::new(plan.cap.to_bits()),
            covers: DFFWithInit::new(true),
            kept_grown: Default::default(),
            taken_grown: Default::default(),
            take: Default::default(),
            store: Default::default(),
            held_start: Default::default(),
            held_end: Default::default(),
            held_meta: Default::default(),
            write_slot: Default::default(),
            reading_slot: Default::default(),
            held_count: Default::default(),
            words_left: Default::default(),
            free: Default::default(),
            index: DFFWithInit::new(INDEX_START.to_bits()),
            pending: Default::default(),
            sent: Default::default(),
            unsent: Default::default(),
            overruns: Default::default(),
            seq: Default::default(),
            port: Default::default(),
            part: Default::default(),
            first: Default::default(),
            pos: Default::default(),
            last_part_now: Default::default(),
            last_word: Default::default(),
            count: Default::default(),
            before_last_pos: Default::default(),
            header_word: Default::default(),
            flags_now: Default::default(),
            out_write: Default::default(),
            out_data: Default::default(),
            out_port: Default::default(),
            out_first: Default::default(),
            out_last: Default::default(),
            desc_due: Default::default(),
            desc_words_held: Default::default(),
            desc_port_held: Default::default(),
        }
    }

    /// Clocks a record sent takes, from its slot's read (after an idle
    /// clock) to its last word: every packet's header and counters.
    pub fn record_clocks(config: &StatsPacketConfig) -> u64 {
        config.plan().record_clocks
    }
}

impl Logic for StatisticPackets {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            credit,
            covers,
            write_slot,
            reading_slot,
            held_count,
            words_left,
            free,
            index,
            pending,
            sent,
            unsent,
            overruns,
            seq,
            port,
            part,
            first,
            pos,
            last_part_now,
            last_word,
            out_write,
            out_data,
            out_port,
            out_first,
            out_last,
            desc_due,
            desc_words_held,
            desc_port_held
        );
        self.held_start.write_clock.next = self.clock.val();
        self.held_start.read_clock.next = self.clock.val();
        self.held_end.write_clock.next = self.clock.val();
        self.held_end.read_clock.next = self.clock.val();
        self.held_meta.write_clock.next = self.clock.val();
        self.held_meta.read_clock.next = self.clock.val();
        // The credit: the record's cost if taken, then the next clock's
        // growth, capped.
        self.take.next = self.record_valid.val() & self.covers.q.val();
        self.kept_grown.next = self.credit.q.val() + self.step.val();
        self.taken_grown.next = self.credit.q.val() + self.step_after_cost.val();
        self.credit.d.next = self.kept_grown.val();
        if self.kept_grown.val() > self.cap.val() {
            self.credit.d.next = self.cap.val();
        }
        self.covers.d.next = self.credit.q.val() >= self.covers_kept.val();
        if self.take.val() {
            self.credit.d.next = self.taken_grown.val();
            if self.taken_grown.val() > self.cap.val() {
                self.credit.d.next = self.cap.val();
            }
            self.covers.d.next = self.credit.q.val() >= self.covers_taken.val();
        }
        // The packet's counters: the rest of the record, at most
        // `max_counters` (`first` is `part * max_counters`, so every part
        // but the last has `max_counters`).
        self.count.next = self.max_counters.val();
        self.before_last_pos.next = self.full_before_last_pos.val();
        if self.last_part_now.q.val() {
            self.count.next = self.last_count.val();
            self.before_last_pos.next = self.last_part_before_last_pos.val();
        }
        // The slot being read is free in the clock of the record's last
        // word (its counters were read READ_LATENCY clocks before): the
        // clock after the one with a word left.
        if self.state.q.val() == 1 {
            self.words_left.d.next = self.record_last_word.val();
        }
        if self.state.q.val() == 3 {
            self.words_left.d.next = self.words_left.q.val() - 1;
        }
        self.free.d.next = (self.state.q.val() == 3) & (self.words_left.q.val() == 1);
        self.store.next =
            self.take.val() & ((self.held_count.q.val() != self.slots.val()) | self.free.q.val());
        if self.take.val() & !self.store.val() & (self.overruns.q.val() != self.saturated.val()) {
            self.overruns.d.next = self.overruns.q.val() + 1;
        }
        self.flags_now.next = 0.into();
        if self.tracing.val() {
            self.flags_now.next = 1.into();
        }
        if self.tags_only.val() {
            self.flags_now.next = self.flags_now.val() | 2;
        }
        // A record sent: held, its header fields kept, the unsent count
        // it carries reset.
        self.hold_write.next = self.store.val();
        self.hold_slot.next = self.write_slot.q.val();
        self.held_start.write_enable.next = self.store.val();
        self.held_end.write_enable.next = self.store.val();
        self.held_meta.write_enable.next = self.store.val();
        self.held_start.write_address.next = self.write_slot.q.val();
        self.held_end.write_address.next = self.write_slot.q.val();
        self.held_meta.write_address.next = self.write_slot.q.val();
        self.held_start.write_data.next = self.record_start.val();
        self.held_end.write_data.next = self.record_end.val();
        self.held_meta.write_data.next = bit_cast::<45, 32>(self.pending.q.val())
            | (bit_cast::<45, 8>(self.flags_now.val()) << 32)
            | (bit_cast::<45, 5>(self.record_k.val()) << 40);
        if self.store.val() {
            self.write_slot.d.next = self.write_slot.q.val() + 1;
        }
        if self.take.val() {
            self.pending.d.next = 0.into();
            if self.sent.q.val() != self.saturated.val() {
                self.sent.d.next = self.sent.q.val() + 1;
            }
        }
        if self.record_valid.val() & !self.take.val() {
            if self.pending.q.val() != self.saturated.val() {
                self.pending.d.next = self.pending.q.val() + 1;
            }
            if self.unsent.q.val() != self.saturated.val() {
                self.unsent.d.next = self.unsent.q.val() + 1;
            }
        }
        self.held_count.d.next = self.held_count.q.val();
        if self.store.val() & !self.free.q.val() {
            self.held_count.d.next = self.held_count.q.val() + 1;
        }
        if self.free.q.val() & !self.store.val() {
            self.held_count.d.next = self.held_count.q.val() - 1;
        }
        if self.free.q.val() {
            self.reading_slot.d.next = self.reading_slot.q.val() + 1;
        }
        self.read_slot.next = self.reading_slot.q.val();
        self.held_start.read_address.next = self.reading_slot.q.val();
        self.held_end.read_address.next = self.reading_slot.q.val();
        self.held_meta.read_address.next = self.reading_slot.q.val();
        // The counter of the word two clocks on (the readout's latency):
        // word `pos` of the packet is counter `first + pos - 12`. The
        // index follows `first` and `pos` (below): `-10` at the read's
        // start, one more a word, and at a packet's last word (`pos =
        // count + 11`, then 0 with `first + count`) 11 less.
        self.read_index.next = self.index.q.val();
        if self.state.q.val() == 1 {
            self.index.d.next = self.index_start.val();
        }
        if self.state.q.val() == 3 {
            self.index.d.next = self.index.q.val() + 1;
            if self.last_word.q.val() {
                self.index.d.next = self.index.q.val() - 11;
            }
        }
        // The header's word `pos` (format.md §5.3, four bytes a word).
        self.header_word.next = self.header_magic.val();
        if self.pos.q.val() == 1 {
            self.header_word.next = self.header_board.val()
                | (bit_cast::<32, 8>(self.held_meta.read_data.val().get_bits::<8>(32)) << 8)
                | (bit_cast::<32, 2>(self.port.q.val()) << 24);
        }
        if self.pos.q.val() == 2 {
            self.header_word.next = self.seq.q.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 3 {
            self.header_word.next = self.seq.q.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 4 {
            self.header_word.next = self.held_start.read_data.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 5 {
            self.header_word.next = self.held_start.read_data.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 6 {
            self.header_word.next = self.held_end.read_data.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 7 {
            self.header_word.next = self.held_end.read_data.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 8 {
            self.header_word.next = self.header_geometry.val()
                | bit_cast::<32, 5>(self.held_meta.read_data.val().get_bits::<5>(40));
        }
        if self.pos.q.val() == 9 {
            self.header_word.next =
                self.header_tick.val() | (bit_cast::<32, 16>(self.count.val()) << 16);
        }
        if self.pos.q.val() == 10 {
            self.header_word.next = self.held_meta.read_data.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 11 {
            self.header_word.next = self.header_parts.val()
                | bit_cast::<32, 16>(self.first.q.val())
                | (bit_cast::<32, 8>(self.part.q.val()) << 16);
        }
        self.out_write.d.next = false;
        self.out_first.d.next = false;
        self.out_last.d.next = false;
        self.desc_due.d.next = self.out_last.q.val();
        // States by number (rust-hdl's Verilog takes no named constant
        // here): 0 idle, 1 the slot's read (its header fields and
        // counters show a clock after `reading_slot`), 3 sending.
        if (self.state.q.val() == 0) & (self.held_count.q.val() != 0) {
            self.state.d.next = 1.into();
        }
        if self.state.q.val() == 1 {
            self.part.d.next = 0.into();
            self.first.d.next = 0.into();
            self.pos.d.next = 0.into();
            self.last_part_now.d.next = self.last_part.val() == 0;
            self.last_word.d.next = false;
            self.state.d.next = 3.into();
        }
        if self.state.q.val() == 3 {
            self.out_write.d.next = true;
            self.out_port.d.next = self.port.q.val();
            self.out_first.d.next = self.pos.q.val() == 0;
            self.out_last.d.next = self.last_word.q.val();
            self.out_data.d.next = self.read_value.val();
            if self.pos.q.val() < 12 {
                self.out_data.d.next = self.header_word.val();
            }
            self.pos.d.next = self.pos.q.val() + 1;
            self.last_word.d.next = self.pos.q.val() == self.before_last_pos.val();
            if self.last_word.q.val() {
                self.desc_words_held.d.next = self.count.val() + 12;
                self.desc_port_held.d.next = self.port.q.val();
                self.seq.d.next = self.seq.q.val() + 1;
                self.port.d.next = self.port.q.val() + 1;
                if self.port.q.val() == self.last_port.val() {
                    self.port.d.next = 0.into();
                }
                self.part.d.next = self.part.q.val() + 1;
                self.first.d.next = self.first.q.val() + self.count.val();
                self.pos.d.next = 0.into();
                self.last_word.d.next = false;
                self.last_part_now.d.next = self.part.q.val() == self.part_before_last.val();
                if self.last_part_now.q.val() {
                    self.state.d.next = 0.into();
                }
            }
        }
        self.word_write.next = self.out_write.q.val();
        self.word_data.next = self.out_data.q.val();
        self.word_port.next = self.out_port.q.val();
        self.word_first.next = self.out_first.q.val();
        self.word_last.next = self.out_last.q.val();
        self.desc_write.next = self.desc_due.q.val();
        self.desc_words.next = self.desc_words_held.q.val();
        self.desc_port.next = self.desc_port_held.q.val();
        self.records_sent.next = self.sent.q.val();
        self.records_unsent.next = self.unsent.q.val();
        self.overrun.next = self.overruns.q.val();
        self.busy.next = (self.state.q.val() != 0) | (self.held_count.q.val() != 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ddr3_4g(ports: u8, max_words: u16) -> StatsPacketConfig {
        StatsPacketConfig {
            geometry: LineGeometry {
                rank_bits: 1,
                bank_bits: 3,
                row_bits: 15,
                col_line_bits: 7,
            },
            lanes: 8,
            board_id: 0,
            ports,
            tick_ps: 1250,
            max_words,
            share_log2: 5,
            burst_records: 4,
        }
    }

    /// board.md's figures for `ddr3-4g` at DDR3-1600: 160 counters, 754
    /// bytes on the wire, one record per 51.5 K ticks at `s = 5` and 3
    /// ports, sent in 174 clocks (1,392 ticks).
    #[test]
    fn plan_of_ddr3_4g_is_board_md_s() {
        let plan = ddr3_4g(3, 360).plan();
        assert_eq!((plan.words, plan.parts), (160, 1));
        assert_eq!(plan.record_wire_bytes, 754);
        assert_eq!(plan.cost / plan.rate, 51_473);
        assert_eq!(plan.cap, 4 * plan.cost);
        assert_eq!(plan.step, 8 * 3750);
        assert_eq!(StatisticPackets::record_clocks(&ddr3_4g(3, 360)), 174);
    }

    /// 60 counters a packet: three parts, each with its own header and
    /// frame overhead in the cost.
    #[test]
    fn plan_of_three_parts() {
        let plan = ddr3_4g(1, 64).plan();
        assert_eq!((plan.max_counters, plan.parts), (60, 3));
        assert_eq!(plan.record_wire_bytes, 3 * (48 + 66) + 4 * 160);
        assert_eq!(
            StatisticPackets::record_clocks(&ddr3_4g(1, 64)),
            2 + 3 * 12 + 160
        );
    }

    /// A path that would send a record faster than its credit grows is a
    /// build error: the held records' bound needs it.
    #[test]
    #[should_panic(expected = "a record's credit must take at least")]
    fn plan_refuses_a_path_faster_than_its_packets() {
        let fast = StatsPacketConfig {
            share_log2: 1,
            ports: 4,
            tick_ps: 5000,
            ..ddr3_4g(4, 360)
        };
        fast.plan();
    }
}
