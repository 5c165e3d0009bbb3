//! The Statistic Unit's transport (board.md "Statistic Unit", Transport;
//! format.md §5.3): each record of [`super::StatisticCounters`] checked
//! against the statistics path's credit, then sent as version 1
//! statistics packets (the counters alone) or counted unsent.
//!
//! What it does, per `record_valid` of the counting half:
//! - the credit, exactly as the golden model's (`hmtt_board_model`'s
//!   `StatisticUnit::close`): in units of `1/(8000 * 2^s)` byte, full at
//!   reset, grown by `ports * tick_ps` per tick from the last record's end
//!   tick to this one's (the empty intervals between cost nothing, and a
//!   cap reached on the way stays reached, so growing once per record is
//!   the same sum), capped at `burst` records; a record costs `(bytes +
//!   66) * 8000 * 2^s` summed over its packets, a constant of the build;
//!   the product `elapsed * ports * tick_ps` is summed one bit of the
//!   constant a clock (shift and add), and an elapsed time that fills the
//!   credit by itself skips it;
//! - a record the credit covers is cut into parts of at most `max_words -
//!   4` counters, each a packet of the 48-byte header and its words (the
//!   counters do not saturate: an interval holds at most `2^31` ticks, so
//!   no counter passes `2^32 - 1`), with its own `seq` from 0 and port `seq
//!   % ports`; one it does not cover adds one to the unsent count the next
//!   record sent carries in `unsent_before` (saturating), and to
//!   `records_unsent`.
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
//!
//! The counters come through the counting half's readout (`read_index`,
//! `read_value`, [`super::READ_LATENCY`] clocks), while the packets go
//! out: a record is exact only if the counting half's snapshot holds
//! until its last word is read, i.e. if its next interval closes at least
//! [`StatisticPackets::busy_clocks`] clocks after it. A record that comes
//! while one is still being sent is not handled: `overrun` counts it (its
//! credit and unsent count are then not the model's); a close with
//! nothing counted has no `record_valid`, so one that comes too soon goes
//! unseen. Intervals that short (board.md's `k = 6`, or one cut short by
//! STATS_OFF or STATS_INTERVAL_k right after a record sent) need the
//! counting half to hold the record for this block.

use rust_hdl::prelude::*;

use crate::dsmu::LineGeometry;

use super::{BANK_COUNTERS, READ_LATENCY};

/// Words of a statistics packet's header (48 bytes, format.md §5.3).
pub const HEADER_WORDS: usize = 12;

/// Bytes a frame adds to its UDP payload on the wire (board.md "Drain
/// rate"), as the golden model counts them in the credit.
pub const WIRE_OVERHEAD_BYTES: u64 = 66;

/// The statistics path's build parameters: the golden model's
/// `StatsConfig` (share, burst) and `BoardConfig` (board id, ports, tick,
/// trace packet size) for a board whose Statistic Unit has no RDHPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsPacketConfig {
    pub geometry: LineGeometry,
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
    /// tick adds; the ticks that fill an empty credit.
    pub cost: u64,
    pub cap: u64,
    pub rate: u64,
    pub fill_ticks: u64,
    /// Bits of `rate`: the clocks of the credit's product.
    pub rate_bits: u64,
}

impl StatsPacketConfig {
    /// Panics on parameters outside board.md's ranges (a build error, as
    /// the other blocks' constructors).
    pub fn plan(&self) -> StatsPacketPlan {
        let g = self.geometry.checked();
        assert!((1..=4).contains(&self.ports), "1..=4 ports");
        assert!(self.tick_ps >= 1, "a tick of at least 1 ps");
        assert!(self.max_words >= 5, "max_words >= 5");
        assert!((1..=8).contains(&self.share_log2), "s in 1..=8");
        assert!((1..=16).contains(&self.burst_records), "burst 1..=16");
        let ranks = 1u64 << g.rank_bits;
        let banks = ranks << g.bank_bits;
        let words = banks * BANK_COUNTERS as u64 + 2 * ranks + u64::from(g.line_bits()) + 2;
        let max_counters = u64::from(self.max_words) - 4;
        let parts = words.div_ceil(max_counters);
        assert!(parts <= 255, "a record of at most 255 parts");
        let record_wire_bytes = (HEADER_WORDS as u64 * 4 + WIRE_OVERHEAD_BYTES) * parts + 4 * words;
        let cost = record_wire_bytes * (8000 << self.share_log2);
        let cap = u64::from(self.burst_records) * cost;
        let rate = u64::from(self.ports) * u64::from(self.tick_ps);
        StatsPacketPlan {
            words,
            max_counters,
            parts,
            record_wire_bytes,
            cost,
            cap,
            rate,
            fill_ticks: cap.div_ceil(rate),
            rate_bits: u64::from(64 - rate.leading_zeros()),
        }
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
    /// The counting half's readout.
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
    /// Records sent and refused by the credit (saturating), records that
    /// came while one was being sent (not handled), and whether one is.
    pub records_sent: Signal<Out, Bits<32>>,
    pub records_unsent: Signal<Out, Bits<32>>,
    pub overrun: Signal<Out, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    // The build's constants (`StatsPacketPlan`) and the fixed parts of
    // the header's words: 0 the magic, 1 version and board, 8 the
    // geometry's bytes, 9 tick_ps, 11 the parts.
    words: Constant<Bits<16>>,
    max_counters: Constant<Bits<16>>,
    last_part: Constant<Bits<8>>,
    last_port: Constant<Bits<2>>,
    rate: Constant<Bits<32>>,
    cap: Constant<Bits<64>>,
    cost: Constant<Bits<64>>,
    fill_ticks: Constant<Bits<64>>,
    /// `2^32 - 1`, where the counts stop.
    saturated: Constant<Bits<32>>,
    header_magic: Constant<Bits<32>>,
    header_board: Constant<Bits<32>>,
    header_geometry: Constant<Bits<32>>,
    header_tick: Constant<Bits<32>>,
    header_parts: Constant<Bits<32>>,
    state: DFF<Bits<2>>,
    /// The record being handled: its interval, `k`, flags.
    start_tick: DFF<Bits<64>>,
    end_tick: DFF<Bits<64>>,
    k: DFF<Bits<5>>,
    flags: DFF<Bits<8>>,
    /// The credit and the end tick it was grown to; the growth since then
    /// (`gain`, summed from `elapsed` shifted by each set bit of the rate
    /// left in `rate_left`), or `full` if it fills the credit by itself.
    credit: DFFWithInit<Bits<64>>,
    credit_tick: DFF<Bits<64>>,
    elapsed_now: Signal<Local, Bits<64>>,
    elapsed: DFF<Bits<64>>,
    rate_left: DFF<Bits<32>>,
    gain: DFF<Bits<64>>,
    full: DFF<Bit>,
    grown: Signal<Local, Bits<64>>,
    credit_now: Signal<Local, Bits<64>>,
    /// Records refused since the last one sent, and that count as the
    /// record being sent carries it.
    pending: DFF<Bits<32>>,
    unsent_before: DFF<Bits<32>>,
    sent: DFF<Bits<32>>,
    unsent: DFF<Bits<32>>,
    overruns: DFF<Bits<32>>,
    /// The packet being sent: its `seq`, port, part, first counter, and
    /// the word (`pos`, the header's included); its counters (`count`)
    /// and whether `pos` is its last word.
    seq: DFF<Bits<64>>,
    port: DFF<Bits<2>>,
    part: DFF<Bits<8>>,
    first: DFF<Bits<16>>,
    pos: DFF<Bits<16>>,
    remaining: Signal<Local, Bits<16>>,
    count: Signal<Local, Bits<16>>,
    last_word: Signal<Local, Bit>,
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
        let g = config.geometry;
        let magic = u32::from_le_bytes(*b"HMTS");
        let geometry_bytes = u64::from(g.row_bits)
            | u64::from(g.rank_bits << 4 | g.bank_bits) << 8
            | u64::from(g.col_line_bits) << 16;
        assert!(plan.rate < 1 << 32, "ports * tick_ps below 2^32");
        Self {
            clock: Default::default(),
            record_valid: Default::default(),
            record_start: Default::default(),
            record_end: Default::default(),
            record_k: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
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
            words: Constant::new(plan.words.to_bits()),
            max_counters: Constant::new(plan.max_counters.to_bits()),
            last_part: Constant::new((plan.parts - 1).to_bits()),
            last_port: Constant::new(u64::from(config.ports - 1).to_bits()),
            rate: Constant::new(plan.rate.to_bits()),
            cap: Constant::new(plan.cap.to_bits()),
            cost: Constant::new(plan.cost.to_bits()),
            fill_ticks: Constant::new(plan.fill_ticks.to_bits()),
            saturated: Constant::new(u64::from(u32::MAX).to_bits()),
            header_magic: Constant::new(u64::from(magic).to_bits()),
            header_board: Constant::new((1 | u64::from(config.board_id) << 16).to_bits()),
            header_geometry: Constant::new((geometry_bytes << 8).to_bits()),
            header_tick: Constant::new(u64::from(config.tick_ps).to_bits()),
            header_parts: Constant::new((plan.parts << 24).to_bits()),
            state: Default::default(),
            start_tick: Default::default(),
            end_tick: Default::default(),
            k: Default::default(),
            flags: Default::default(),
            credit: DFFWithInit::new(plan.cap.to_bits()),
            credit_tick: Default::default(),
            elapsed_now: Default::default(),
            elapsed: Default::default(),
            rate_left: Default::default(),
            gain: Default::default(),
            full: Default::default(),
            grown: Default::default(),
            credit_now: Default::default(),
            pending: Default::default(),
            unsent_before: Default::default(),
            sent: Default::default(),
            unsent: Default::default(),
            overruns: Default::default(),
            seq: Default::default(),
            port: Default::default(),
            part: Default::default(),
            first: Default::default(),
            pos: Default::default(),
            remaining: Default::default(),
            count: Default::default(),
            last_word: Default::default(),
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

    /// Clocks from a record's `record_valid` to the read of its last
    /// counter: the credit's product and decision, then every packet's
    /// header and counters (the last read [`READ_LATENCY`] clocks before
    /// its word). The counting half's next close must come no sooner.
    pub fn busy_clocks(config: &StatsPacketConfig) -> u64 {
        // From the record's close: `record_valid` two clocks later, the
        // product, the decision, the words; the last counter's index goes
        // out READ_LATENCY clocks before its word, and the snapshot it
        // reads changes two clocks after the next close.
        let plan = config.plan();
        let last_index_clock =
            2 + plan.rate_bits + 1 + HEADER_WORDS as u64 * plan.parts + plan.words
                - READ_LATENCY as u64;
        last_index_clock - 1
    }
}

impl Logic for StatisticPackets {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            start_tick,
            end_tick,
            k,
            flags,
            credit,
            credit_tick,
            elapsed,
            rate_left,
            gain,
            full,
            pending,
            unsent_before,
            sent,
            unsent,
            overruns,
            seq,
            port,
            part,
            first,
            pos,
            out_write,
            out_data,
            out_port,
            out_first,
            out_last,
            desc_due,
            desc_words_held,
            desc_port_held
        );
        self.elapsed_now.next = self.record_end.val() - self.credit_tick.q.val();
        self.grown.next = self.credit.q.val() + self.gain.q.val();
        self.credit_now.next = self.grown.val();
        if self.full.q.val() | (self.grown.val() > self.cap.val()) {
            self.credit_now.next = self.cap.val();
        }
        // The packet's counters: the rest of the record, at most
        // `max_counters`.
        self.remaining.next = self.words.val() - self.first.q.val();
        self.count.next = self.remaining.val();
        if self.remaining.val() > self.max_counters.val() {
            self.count.next = self.max_counters.val();
        }
        self.last_word.next = self.pos.q.val() == (self.count.val() + 11);
        // The counter of the word two clocks on (the readout's latency):
        // word `pos` of the packet is counter `first + pos - 12`.
        self.read_index.next = bit_cast::<10, 16>(self.first.q.val() + self.pos.q.val() - 10);
        // The header's word `pos` (format.md §5.3, four bytes a word).
        self.header_word.next = self.header_magic.val();
        if self.pos.q.val() == 1 {
            self.header_word.next = self.header_board.val()
                | (bit_cast::<32, 8>(self.flags.q.val()) << 8)
                | (bit_cast::<32, 2>(self.port.q.val()) << 24);
        }
        if self.pos.q.val() == 2 {
            self.header_word.next = self.seq.q.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 3 {
            self.header_word.next = self.seq.q.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 4 {
            self.header_word.next = self.start_tick.q.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 5 {
            self.header_word.next = self.start_tick.q.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 6 {
            self.header_word.next = self.end_tick.q.val().get_bits::<32>(0);
        }
        if self.pos.q.val() == 7 {
            self.header_word.next = self.end_tick.q.val().get_bits::<32>(32);
        }
        if self.pos.q.val() == 8 {
            self.header_word.next = self.header_geometry.val() | bit_cast::<32, 5>(self.k.q.val());
        }
        if self.pos.q.val() == 9 {
            self.header_word.next =
                self.header_tick.val() | (bit_cast::<32, 16>(self.count.val()) << 16);
        }
        if self.pos.q.val() == 10 {
            self.header_word.next = self.unsent_before.q.val();
        }
        if self.pos.q.val() == 11 {
            self.header_word.next = self.header_parts.val()
                | bit_cast::<32, 16>(self.first.q.val())
                | (bit_cast::<32, 8>(self.part.q.val()) << 16);
        }
        self.flags_now.next = 0.into();
        if self.tracing.val() {
            self.flags_now.next = 1.into();
        }
        if self.tags_only.val() {
            self.flags_now.next = self.flags_now.val() | 2;
        }
        self.out_write.d.next = false;
        self.out_first.d.next = false;
        self.out_last.d.next = false;
        self.desc_due.d.next = self.out_last.q.val();
        if self.record_valid.val()
            & (self.state.q.val() != 0)
            & (self.overruns.q.val() != self.saturated.val())
        {
            self.overruns.d.next = self.overruns.q.val() + 1;
        }
        // States by number (rust-hdl's Verilog takes no named constant
        // here): 0 idle, 1 the credit's product, 2 the decision, 3 sending.
        if (self.state.q.val() == 0) & self.record_valid.val() {
            self.start_tick.d.next = self.record_start.val();
            self.end_tick.d.next = self.record_end.val();
            self.k.d.next = self.record_k.val();
            self.flags.d.next = self.flags_now.val();
            self.credit_tick.d.next = self.record_end.val();
            self.elapsed.d.next = self.elapsed_now.val();
            self.full.d.next = self.elapsed_now.val() >= self.fill_ticks.val();
            self.rate_left.d.next = self.rate.val();
            self.gain.d.next = 0.into();
            self.state.d.next = 1.into();
        }
        if self.state.q.val() == 1 {
            if self.rate_left.q.val().get_bit(0) {
                self.gain.d.next = self.gain.q.val() + self.elapsed.q.val();
            }
            self.elapsed.d.next = self.elapsed.q.val() << 1;
            self.rate_left.d.next = self.rate_left.q.val() >> 1;
            if (self.rate_left.q.val() >> 1) == 0 {
                self.state.d.next = 2.into();
            }
        }
        if self.state.q.val() == 2 {
            if self.credit_now.val() >= self.cost.val() {
                self.credit.d.next = self.credit_now.val() - self.cost.val();
                self.unsent_before.d.next = self.pending.q.val();
                self.pending.d.next = 0.into();
                if self.sent.q.val() != self.saturated.val() {
                    self.sent.d.next = self.sent.q.val() + 1;
                }
                self.part.d.next = 0.into();
                self.first.d.next = 0.into();
                self.pos.d.next = 0.into();
                self.state.d.next = 3.into();
            } else {
                self.credit.d.next = self.credit_now.val();
                if self.pending.q.val() != self.saturated.val() {
                    self.pending.d.next = self.pending.q.val() + 1;
                }
                if self.unsent.q.val() != self.saturated.val() {
                    self.unsent.d.next = self.unsent.q.val() + 1;
                }
                self.state.d.next = 0.into();
            }
        }
        if self.state.q.val() == 3 {
            self.out_write.d.next = true;
            self.out_port.d.next = self.port.q.val();
            self.out_first.d.next = self.pos.q.val() == 0;
            self.out_last.d.next = self.last_word.val();
            self.out_data.d.next = self.read_value.val();
            if self.pos.q.val() < 12 {
                self.out_data.d.next = self.header_word.val();
            }
            self.pos.d.next = self.pos.q.val() + 1;
            if self.last_word.val() {
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
                if self.part.q.val() == self.last_part.val() {
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
        self.busy.next = self.state.q.val() != 0;
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
    /// ports.
    #[test]
    fn plan_of_ddr3_4g_is_board_md_s() {
        let plan = ddr3_4g(3, 360).plan();
        assert_eq!((plan.words, plan.parts), (160, 1));
        assert_eq!(plan.record_wire_bytes, 754);
        assert_eq!(plan.cost / plan.rate, 51_473);
        assert_eq!(plan.cap, 4 * plan.cost);
        assert_eq!(plan.rate_bits, 12, "3 * 1250 = 3750 < 2^12");
        assert_eq!(StatisticPackets::busy_clocks(&ddr3_4g(3, 360)), 184);
    }

    /// 60 counters a packet: three parts, each with its own header and
    /// frame overhead in the cost.
    #[test]
    fn plan_of_three_parts() {
        let plan = ddr3_4g(1, 64).plan();
        assert_eq!((plan.max_counters, plan.parts), (60, 3));
        assert_eq!(plan.record_wire_bytes, 3 * (48 + 66) + 4 * 160);
        assert_eq!(plan.fill_ticks, plan.cap.div_ceil(1250));
        assert_eq!(
            StatisticPackets::busy_clocks(&ddr3_4g(1, 64)),
            11 + 3 * 12 + 160
        );
    }
}
