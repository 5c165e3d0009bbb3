//! One Ethernet port: the clock-domain crossing from the fabric clock to
//! the port's 125 MHz transmit clock, and the framer.
//!
//! The packetizer writes the words of the packet being built straight into
//! the port's data FIFO and, when the packet closes, its descriptor into the
//! descriptor FIFO; both are rust-hdl asynchronous FIFOs (Gray-free pointer
//! handshakes through `VectorSynchronizer`s) read by the framer in the
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
/// Descriptors one port can hold.
pub const PORT_DESCRIPTORS: usize = 16;

declare_async_fifo!(PortDescFifo, Bits<DESC_BITS>, PORT_DESCRIPTORS, 1);

/// CDC buffers and framer of one port; the data FIFO holds `2^DN` words
/// (`DNP1 = DN + 1`, as rust-hdl's FIFO needs).
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
    data_fifo: AsynchronousFIFO<Bits<32>, DN, DNP1, 1>,
    desc_fifo: PortDescFifo,
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
