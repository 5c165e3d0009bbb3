//! One Ethernet port: the clock-domain crossing from the fabric clock to
//! the port's 125 MHz transmit clock, and the framer.
//!
//! The packetizer writes the words of the packet being built straight into
//! the port's data FIFO and, when the packet closes, its descriptor into the
//! descriptor FIFO; both are [`AsyncFifo`]s read by the framer in the
//! Ethernet domain. The data FIFO holds `2^DN` words, by default
//! [`PORT_DATA_WORDS`]: two jumbo packets, so a port keeps sending one
//! packet while the next fills (1024 words are enough for 1500-byte MTU).
//! The drain rate never exceeds the ports' payload rate (board.md "Drain
//! rate"), so neither FIFO overflows when the framers keep up; if one does,
//! `overflow` (sticky, fabric domain) says so.
//!
//! A port of a board with a Statistic Unit (`S = 1`) has a second pair of
//! FIFOs for the statistics packets (board.md "Statistic Unit"), written
//! a whole packet at a time by the statistics path, and takes their
//! packets before the trace's at a packet boundary: whenever the framer is
//! in a frame (before its gap) the next frame is the statistics FIFO's if
//! it has a descriptor; an idle framer takes whichever has one, the
//! statistics first. The choice holds through the gap and while the
//! chosen FIFO has a descriptor (the framer registers the head descriptor
//! over the clocks before it starts). And no trace packet goes before a
//! statistics packet that left before it (board.md: the statistics
//! packets go before any trace packet that leaves after them): the unit
//! announces each record's packets per port in the clock it takes the
//! record, which is before the packetizer closes a packet at or after the
//! record's end tick; the port counts them (`announced`, fabric domain),
//! tags each trace descriptor with that count, and the framer takes a
//! trace descriptor only once it has started as many statistics packets
//! (`stats_started`, Ethernet domain). `S = 0` has none of it.

use crate::framer::{Framer, FramerConfig};
use crate::packetizer::DESC_BITS;
use rust_hdl::prelude::*;

/// Words of one port's data FIFO by default (`EthPort<12, 13>`).
pub const PORT_DATA_WORDS: usize = 4096;
/// Descriptors one port can hold (`2^4`).
pub const PORT_DESCRIPTORS: usize = 16;

/// An asynchronous first-word-fall-through FIFO of `2^N` words of `D`
/// (`NP1 = N + 1`) in one block RAM, built so that nothing combinational
/// from the reader reaches the RAM:
///
/// - The write side writes the RAM at its write pointer and keeps the
///   pointer's Gray code in a register; the read side keeps the Gray code
///   of its fetch pointer (the words taken out of the RAM) the same way.
///   Each Gray register crosses to the other clock through two flip-flops,
///   so a pointer sampled mid-change is either its old or its new value
///   (one bit changes per step). Empty and full compare Gray codes.
/// - The RAM's read address is the fetch pointer register itself. A fetch
///   happens when the RAM held a word a clock ago (as far as the
///   synchronized write pointer says) and the output stage is free: nothing in flight and no
///   head word. The word read then lands in the head register a clock
///   later, and `data_out`/`empty` are that register and its valid flag.
///   `read` only clears the head, so it never reaches the RAM or the
///   pointers.
///
/// A word written at a write-clock edge is visible (`empty` low) five read
/// clocks later (six when the first synchronizer flip-flop misses the
/// change): two synchronizer flip-flops, the registered pointer compare, the
/// fetch and the head register. The head is refilled three read clocks after a `read`,
/// so the FIFO delivers at most one word per three read clocks (the framer
/// takes at most one per four: a word is four GMII bytes). `full` counts
/// the RAM only, as the read side last reported it: with the reader idle
/// the FIFO takes `2^N + 1` words (the RAM and the head) before `full`; a
/// write while `full` is dropped and sets the sticky `overflow`.
#[derive(LogicBlock)]
pub struct AsyncFifo<D: Synth, const N: usize, const NP1: usize> {
    // Write side.
    pub write_clock: Signal<In, Clock>,
    pub write: Signal<In, Bit>,
    pub data_in: Signal<In, D>,
    pub full: Signal<Out, Bit>,
    /// Sticky: a write found the FIFO full (the word was dropped).
    pub overflow: Signal<Out, Bit>,
    // Read side.
    pub read_clock: Signal<In, Clock>,
    /// Takes the head word (ignored while `empty`).
    pub read: Signal<In, Bit>,
    pub data_out: Signal<Out, D>,
    pub empty: Signal<Out, Bit>,
    ram: RAM<D, N>,
    write_ptr: DFF<Bits<NP1>>,
    write_gray: DFF<Bits<NP1>>,
    /// The read side's fetch pointer (Gray), two flip-flops into the write clock.
    fetch_gray_meta: DFF<Bits<NP1>>,
    fetch_gray_sync: DFF<Bits<NP1>>,
    overflow_flag: DFF<Bit>,
    write_next: Signal<Local, Bits<NP1>>,
    is_full: Signal<Local, Bit>,
    /// The two top bits of a Gray pointer that differ between a full and
    /// an empty FIFO at the same RAM address.
    full_flip: Constant<Bits<NP1>>,
    fetch_ptr: DFF<Bits<NP1>>,
    fetch_gray: DFF<Bits<NP1>>,
    /// The write side's pointer (Gray), two flip-flops into the read clock.
    write_gray_meta: DFF<Bits<NP1>>,
    write_gray_sync: DFF<Bits<NP1>>,
    /// The RAM held a word a clock ago (the pointer compare, registered).
    /// One clock stale: a word that just arrived waits a clock, and a fetch
    /// at the last edge (after which the RAM may be empty) blocks the next
    /// one through `ram_valid` anyway.
    has_word: DFF<Bit>,
    /// The RAM's output holds the word fetched at the last edge.
    ram_valid: DFF<Bit>,
    head_valid: DFF<Bit>,
    head: DFF<D>,
    /// `fetch_ptr + 1`, a clock behind `fetch_ptr` (fetches are three
    /// clocks apart at least).
    fetch_next: DFF<Bits<NP1>>,
    fetch: Signal<Local, Bit>,
}

impl<D: Synth, const N: usize, const NP1: usize> Default for AsyncFifo<D, N, NP1> {
    fn default() -> Self {
        assert_eq!(N + 1, NP1, "AsyncFifo<D, N, N + 1>");
        assert!(N >= 1 && NP1 < 64);
        Self {
            write_clock: Default::default(),
            write: Default::default(),
            data_in: Default::default(),
            full: Default::default(),
            overflow: Default::default(),
            read_clock: Default::default(),
            read: Default::default(),
            data_out: Default::default(),
            empty: Default::default(),
            ram: Default::default(),
            write_ptr: Default::default(),
            write_gray: Default::default(),
            fetch_gray_meta: Default::default(),
            fetch_gray_sync: Default::default(),
            overflow_flag: Default::default(),
            write_next: Default::default(),
            is_full: Default::default(),
            full_flip: Constant::new((3u64 << (N - 1)).to_bits()),
            fetch_ptr: Default::default(),
            fetch_gray: Default::default(),
            write_gray_meta: Default::default(),
            write_gray_sync: Default::default(),
            has_word: Default::default(),
            ram_valid: Default::default(),
            head_valid: Default::default(),
            head: Default::default(),
            fetch_next: Default::default(),
            fetch: Default::default(),
        }
    }
}

impl<D: Synth, const N: usize, const NP1: usize> Logic for AsyncFifo<D, N, NP1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            write_clock,
            write_ptr,
            write_gray,
            fetch_gray_meta,
            fetch_gray_sync,
            overflow_flag
        );
        dff_setup!(
            self,
            read_clock,
            fetch_ptr,
            fetch_gray,
            write_gray_meta,
            write_gray_sync,
            has_word,
            fetch_next,
            ram_valid,
            head_valid,
            head
        );
        // Write side.
        self.ram.write_clock.next = self.write_clock.val();
        self.fetch_gray_meta.d.next = self.fetch_gray.q.val();
        self.fetch_gray_sync.d.next = self.fetch_gray_meta.q.val();
        self.is_full.next =
            self.write_gray.q.val() == (self.fetch_gray_sync.q.val() ^ self.full_flip.val());
        self.write_next.next = self.write_ptr.q.val() + 1;
        self.ram.write_address.next = bit_cast::<N, NP1>(self.write_ptr.q.val());
        self.ram.write_data.next = self.data_in.val();
        self.ram.write_enable.next = self.write.val() & !self.is_full.val();
        if self.write.val() & !self.is_full.val() {
            self.write_ptr.d.next = self.write_next.val();
            self.write_gray.d.next = self.write_next.val() ^ (self.write_next.val() >> 1);
        }
        if self.write.val() & self.is_full.val() {
            self.overflow_flag.d.next = true;
        }
        self.full.next = self.is_full.val();
        self.overflow.next = self.overflow_flag.q.val();
        // Read side.
        self.ram.read_clock.next = self.read_clock.val();
        self.ram.read_address.next = bit_cast::<N, NP1>(self.fetch_ptr.q.val());
        self.write_gray_meta.d.next = self.write_gray.q.val();
        self.write_gray_sync.d.next = self.write_gray_meta.q.val();
        self.has_word.d.next = self.fetch_gray.q.val() != self.write_gray_sync.q.val();
        self.fetch.next =
            self.has_word.q.val() & !self.ram_valid.q.val() & !self.head_valid.q.val();
        self.fetch_next.d.next = self.fetch_ptr.q.val() + 1;
        if self.fetch.val() {
            self.fetch_ptr.d.next = self.fetch_next.q.val();
            self.fetch_gray.d.next = self.fetch_next.q.val() ^ (self.fetch_next.q.val() >> 1);
        }
        self.ram_valid.d.next = self.fetch.val();
        if self.ram_valid.q.val() {
            // The head is free here: a fetch needs it empty and nothing
            // else fills it.
            self.head.d.next = self.ram.read_data.val();
            self.head_valid.d.next = true;
        } else if self.read.val() {
            self.head_valid.d.next = false;
        }
        self.data_out.next = self.head.q.val();
        self.empty.next = !self.head_valid.q.val();
    }
}

/// CDC buffers and framer of one port; the data FIFO holds `2^DN` words
/// (`DNP1 = DN + 1`), and so does the statistics data FIFO of `S = 1`
/// (module documentation).
#[derive(LogicBlock)]
pub struct EthPort<const DN: usize, const DNP1: usize, const S: usize = 0> {
    pub fabric_clock: Signal<In, Clock>,
    pub eth_clock: Signal<In, Clock>,
    // Fabric side, from the packetizer.
    pub word_write: Signal<In, Bit>,
    pub word_data: Signal<In, Bits<32>>,
    pub desc_write: Signal<In, Bit>,
    pub desc_data: Signal<In, Bits<DESC_BITS>>,
    /// Fabric side, from the statistics path (`S = 1`; unread otherwise):
    /// a packet's words, header included, and then its length in words.
    pub stats_word_write: Signal<In, Bit>,
    pub stats_word_data: Signal<In, Bits<32>>,
    pub stats_desc_write: Signal<In, Bit>,
    pub stats_desc_words: Signal<In, Bits<16>>,
    /// The unit took a record with `stats_announce_count` packets for
    /// this port.
    pub stats_announce: Signal<In, Bit>,
    pub stats_announce_count: Signal<In, Bits<8>>,
    /// Sticky (fabric domain): a write found a FIFO full.
    pub overflow: Signal<Out, Bit>,
    // Ethernet side.
    pub txd: Signal<Out, Bits<8>>,
    pub tx_en: Signal<Out, Bit>,
    pub tx_er: Signal<Out, Bit>,
    /// Sticky (Ethernet domain): the framer needed a word that was not there.
    pub underrun: Signal<Out, Bit>,
    data_fifo: AsyncFifo<Bits<32>, DN, DNP1>,
    desc_fifo: AsyncFifo<Bits<DESC_BITS>, 4, 5>,
    /// The statistics FIFOs (their descriptors hold `nwords` as the
    /// framer takes it, the words less 8).
    stats_data: [AsyncFifo<Bits<32>, DN, DNP1>; S],
    stats_desc: [AsyncFifo<Bits<16>, 4, 5>; S],
    /// Statistics packets announced for this port (fabric domain), each
    /// trace descriptor's count of them when written, and the statistics
    /// packets the framer has started (Ethernet domain); the head trace
    /// descriptor's lead (`stats_started - tag`, negative while it waits).
    stats_announced: [DFF<Bits<16>>; S],
    stats_tag: [AsyncFifo<Bits<16>, 4, 5>; S],
    stats_started: [DFF<Bits<16>>; S],
    stats_lead: Signal<Local, Bits<16>>,
    trace_desc_empty: Signal<Local, Bit>,
    /// The next frame is a statistics packet's; the frame being sent is.
    pick_stats: DFF<Bit>,
    frame_stats: DFF<Bit>,
    stats_desc_empty: Signal<Local, Bit>,
    stats_desc_head: Signal<Local, Bits<16>>,
    stats_overflow: Signal<Local, Bit>,
    picked_empty: Signal<Local, Bit>,
    framer: Framer,
}

impl<const DN: usize, const DNP1: usize, const S: usize> EthPort<DN, DNP1, S> {
    pub fn new(config: &FramerConfig) -> Self {
        assert_eq!(DN + 1, DNP1);
        assert!(S <= 1, "a port has at most one statistics path");
        Self {
            fabric_clock: Default::default(),
            eth_clock: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            desc_write: Default::default(),
            desc_data: Default::default(),
            stats_word_write: Default::default(),
            stats_word_data: Default::default(),
            stats_desc_write: Default::default(),
            stats_desc_words: Default::default(),
            stats_announce: Default::default(),
            stats_announce_count: Default::default(),
            overflow: Default::default(),
            txd: Default::default(),
            tx_en: Default::default(),
            tx_er: Default::default(),
            underrun: Default::default(),
            data_fifo: Default::default(),
            desc_fifo: Default::default(),
            stats_data: std::array::from_fn(|_| Default::default()),
            stats_desc: std::array::from_fn(|_| Default::default()),
            stats_announced: std::array::from_fn(|_| Default::default()),
            stats_tag: std::array::from_fn(|_| Default::default()),
            stats_started: std::array::from_fn(|_| Default::default()),
            stats_lead: Default::default(),
            trace_desc_empty: Default::default(),
            pick_stats: Default::default(),
            frame_stats: Default::default(),
            stats_desc_empty: Default::default(),
            stats_desc_head: Default::default(),
            stats_overflow: Default::default(),
            picked_empty: Default::default(),
            framer: Framer::new(config),
        }
    }
}

impl<const DN: usize, const DNP1: usize, const S: usize> Logic for EthPort<DN, DNP1, S> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, eth_clock, pick_stats, frame_stats);
        self.data_fifo.write_clock.next = self.fabric_clock.val();
        self.desc_fifo.write_clock.next = self.fabric_clock.val();
        self.data_fifo.read_clock.next = self.eth_clock.val();
        self.desc_fifo.read_clock.next = self.eth_clock.val();
        self.framer.clock.next = self.eth_clock.val();
        self.data_fifo.write.next = self.word_write.val();
        self.data_fifo.data_in.next = self.word_data.val();
        self.desc_fifo.write.next = self.desc_write.val();
        self.desc_fifo.data_in.next = self.desc_data.val();
        self.trace_desc_empty.next = self.desc_fifo.empty.val();
        self.stats_lead.next = 0.into();
        for s in 0..S {
            self.stats_announced[s].clock.next = self.fabric_clock.val();
            self.stats_announced[s].d.next = self.stats_announced[s].q.val();
            if self.stats_announce.val() {
                self.stats_announced[s].d.next = self.stats_announced[s].q.val()
                    + bit_cast::<16, 8>(self.stats_announce_count.val());
            }
            self.stats_tag[s].write_clock.next = self.fabric_clock.val();
            self.stats_tag[s].read_clock.next = self.eth_clock.val();
            self.stats_tag[s].write.next = self.desc_write.val();
            self.stats_tag[s].data_in.next = self.stats_announced[s].q.val();
            self.stats_tag[s].read.next = self.framer.desc_read.val() & !self.pick_stats.q.val();
            self.stats_started[s].clock.next = self.eth_clock.val();
            self.stats_started[s].d.next = self.stats_started[s].q.val();
            if self.framer.desc_read.val() & self.pick_stats.q.val() {
                self.stats_started[s].d.next = self.stats_started[s].q.val() + 1;
            }
            self.stats_lead.next = self.stats_started[s].q.val() - self.stats_tag[s].data_out.val();
            if self.stats_lead.val().get_bit(15) {
                self.trace_desc_empty.next = true;
            }
        }
        self.framer.desc_empty.next = self.trace_desc_empty.val();
        self.framer.desc_data.next = self.desc_fifo.data_out.val();
        self.framer.raw.next = false;
        self.desc_fifo.read.next = self.framer.desc_read.val();
        self.framer.data_empty.next = self.data_fifo.empty.val();
        self.framer.data.next = self.data_fifo.data_out.val();
        self.data_fifo.read.next = self.framer.data_read.val();
        self.stats_desc_empty.next = true;
        self.stats_desc_head.next = 0.into();
        self.stats_overflow.next = false;
        for s in 0..S {
            self.stats_data[s].write_clock.next = self.fabric_clock.val();
            self.stats_desc[s].write_clock.next = self.fabric_clock.val();
            self.stats_data[s].read_clock.next = self.eth_clock.val();
            self.stats_desc[s].read_clock.next = self.eth_clock.val();
            self.stats_data[s].write.next = self.stats_word_write.val();
            self.stats_data[s].data_in.next = self.stats_word_data.val();
            self.stats_desc[s].write.next = self.stats_desc_write.val();
            self.stats_desc[s].data_in.next = self.stats_desc_words.val() - 8;
            self.stats_overflow.next = self.stats_data[s].overflow.val()
                | self.stats_desc[s].overflow.val()
                | self.stats_tag[s].overflow.val();
            self.stats_desc_empty.next = self.stats_desc[s].empty.val();
            self.stats_desc[s].read.next = self.framer.desc_read.val() & self.pick_stats.q.val();
            self.stats_data[s].read.next = self.framer.data_read.val() & self.frame_stats.q.val();
            self.stats_desc_head.next = self.stats_desc[s].data_out.val();
            if self.pick_stats.q.val() {
                self.framer.desc_empty.next = self.stats_desc[s].empty.val();
                self.framer.desc_data.next =
                    bit_cast::<DESC_BITS, 16>(self.stats_desc_head.val()) << 64;
                self.framer.raw.next = true;
                self.desc_fifo.read.next = false;
            }
            if self.frame_stats.q.val() {
                self.framer.data_empty.next = self.stats_data[s].empty.val();
                self.framer.data.next = self.stats_data[s].data_out.val();
                self.data_fifo.read.next = false;
            }
        }
        self.overflow.next = self.data_fifo.overflow.val()
            | self.desc_fifo.overflow.val()
            | self.stats_overflow.val();
        // The next frame's source: the statistics first, chosen in a frame
        // or by an idle framer whose choice has no descriptor; held through
        // the gap and while the choice has one.
        self.picked_empty.next = self.trace_desc_empty.val();
        if self.pick_stats.q.val() {
            self.picked_empty.next = self.stats_desc_empty.val();
        }
        if (!self.framer.state_idle.val() & !self.framer.state_gap.val())
            | (self.framer.state_idle.val() & self.picked_empty.val())
        {
            self.pick_stats.d.next = !self.stats_desc_empty.val();
        }
        if self.framer.desc_read.val() {
            self.frame_stats.d.next = self.pick_stats.q.val();
        }
        self.txd.next = self.framer.txd.val();
        self.tx_en.next = self.framer.tx_en.val();
        self.tx_er.next = self.framer.tx_er.val();
        self.underrun.next = self.framer.underrun.val();
    }
}
