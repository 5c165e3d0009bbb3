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
/// (`DNP1 = DN + 1`).
#[derive(LogicBlock)]
pub struct EthPort<const DN: usize, const DNP1: usize> {
    pub fabric_clock: Signal<In, Clock>,
    pub eth_clock: Signal<In, Clock>,
    // Fabric side, from the packetizer.
    pub word_write: Signal<In, Bit>,
    pub word_data: Signal<In, Bits<32>>,
    pub desc_write: Signal<In, Bit>,
    pub desc_data: Signal<In, Bits<DESC_BITS>>,
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
    framer: Framer,
}

impl<const DN: usize, const DNP1: usize> EthPort<DN, DNP1> {
    pub fn new(config: &FramerConfig) -> Self {
        assert_eq!(DN + 1, DNP1);
        Self {
            fabric_clock: Default::default(),
            eth_clock: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            desc_write: Default::default(),
            desc_data: Default::default(),
            overflow: Default::default(),
            txd: Default::default(),
            tx_en: Default::default(),
            tx_er: Default::default(),
            underrun: Default::default(),
            data_fifo: Default::default(),
            desc_fifo: Default::default(),
            framer: Framer::new(config),
        }
    }
}

impl<const DN: usize, const DNP1: usize> Logic for EthPort<DN, DNP1> {
    #[hdl_gen]
    fn update(&mut self) {
        self.data_fifo.write_clock.next = self.fabric_clock.val();
        self.desc_fifo.write_clock.next = self.fabric_clock.val();
        self.data_fifo.read_clock.next = self.eth_clock.val();
        self.desc_fifo.read_clock.next = self.eth_clock.val();
        self.framer.clock.next = self.eth_clock.val();
        self.data_fifo.write.next = self.word_write.val();
        self.data_fifo.data_in.next = self.word_data.val();
        self.desc_fifo.write.next = self.desc_write.val();
        self.desc_fifo.data_in.next = self.desc_data.val();
        self.overflow.next = self.data_fifo.overflow.val() | self.desc_fifo.overflow.val();
        self.framer.desc_empty.next = self.desc_fifo.empty.val();
        self.framer.desc_data.next = self.desc_fifo.data_out.val();
        self.desc_fifo.read.next = self.framer.desc_read.val();
        self.framer.data_empty.next = self.data_fifo.empty.val();
        self.framer.data.next = self.data_fifo.data_out.val();
        self.data_fifo.read.next = self.framer.data_read.val();
        self.txd.next = self.framer.txd.val();
        self.tx_en.next = self.framer.tx_en.val();
        self.tx_er.next = self.framer.tx_er.val();
        self.underrun.next = self.framer.underrun.val();
    }
}
