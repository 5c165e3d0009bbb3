//! The Ethernet framer of one port (format.md 5 and 5.1): from a packet
//! descriptor and the packet's record words, one byte per 125 MHz clock on
//! a GMII transmit interface: preamble, SFD, Ethernet header, IPv4 header
//! (with its checksum), UDP header (checksum 0, allowed for IPv4), the HMTT
//! header, the record words (little-endian), padding to the 60-byte minimum
//! (only raw Ethernet can be that short), the FCS, and a 12-byte
//! inter-frame gap. A frame takes exactly `4 * nwords + 98` byte times in
//! UDP mode, the figure the drain rate of board.md is computed from.
//!
//! Raw-Ethernet mode ([`FramerConfig::raw_ethernet`]) drops the IPv4 and UDP
//! headers and uses EtherType 0x88B5 with the same payload.
//!
//! The framer runs in the Ethernet clock domain and reads both of its
//! inputs from first-word-fall-through FIFOs ([`crate::port_buffer`]): the
//! descriptor FIFO (one entry per closed packet, see
//! [`crate::packetizer::Descriptor`]) and the data FIFO (the packet's words
//! except the injected LINE_HI word, which the framer sends first itself).
//! The port's `seq` is counted here: the port's k-th packet has
//! `seq = k * ports + port`.

use crate::crc32::Crc32Byte;
use crate::packetizer::DESC_BITS;
use hmtt_format::packet::HEADER_LEN;
use hmtt_format::record::Opcode;
use hmtt_format::{Geometry, PacketHeader, RecordWord};
use rust_hdl::prelude::*;

/// Bytes of Ethernet + IPv4 + UDP + HMTT headers.
pub const UDP_HEADER_BYTES: usize = 14 + 20 + 8 + 32;
/// Bytes of Ethernet + HMTT headers in raw-Ethernet mode.
pub const RAW_HEADER_BYTES: usize = 14 + 32;
/// Wire bytes of a UDP frame besides the record words (board.md "Drain rate").
pub const UDP_FRAME_OVERHEAD: usize = 98;
/// The EtherType of raw-Ethernet frames (IEEE local experimental).
pub const ETHERTYPE_HMTT: u16 = 0x88B5;
const HEADER_BITS: usize = 8 * UDP_HEADER_BYTES;
/// Frames shorter than this before the FCS are padded (Ethernet minimum).
pub const MIN_FRAME_BEFORE_FCS: usize = 60;
/// Idle byte times between frames.
pub const GAP_BYTES: usize = 12;

/// Build-time parameters of one port's framer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramerConfig {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_udp_port: u16,
    pub dst_udp_port: u16,
    pub raw_ethernet: bool,
    pub board_id: u8,
    pub port_id: u8,
    /// Number of ports of the board (the `seq` stride of one port).
    pub ports: u8,
    pub geometry: Geometry,
    pub tick_ps: u16,
}

impl FramerConfig {
    /// The defaults of format.md 5.1 for `port` of board `board_id`; the
    /// destination MAC is broadcast.
    pub fn board_default(
        board_id: u8,
        port_id: u8,
        ports: u8,
        geometry: Geometry,
        tick_ps: u16,
    ) -> FramerConfig {
        FramerConfig {
            dst_mac: [0xff; 6],
            src_mac: [0x02, 0x48, 0x4d, 0x54, board_id, port_id],
            src_ip: [10, 0, 0, 10 + port_id],
            dst_ip: [10, 0, 0, 1],
            src_udp_port: 0x4854 + port_id as u16,
            dst_udp_port: 5000 + port_id as u16,
            raw_ethernet: false,
            board_id,
            port_id,
            ports,
            geometry,
            tick_ps,
        }
    }

    /// Byte offset of the HMTT header in the frame (from the destination MAC).
    pub fn hmtt_offset(&self) -> usize {
        if self.raw_ethernet {
            14
        } else {
            14 + 20 + 8
        }
    }

    pub fn header_len(&self) -> usize {
        self.hmtt_offset() + HEADER_LEN
    }

    /// The frame's header bytes with every per-packet field 0: IPv4 total
    /// length and checksum, UDP length, HMTT flags, seq, t0 and nwords.
    pub fn header_template(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(UDP_HEADER_BYTES);
        h.extend_from_slice(&self.dst_mac);
        h.extend_from_slice(&self.src_mac);
        if self.raw_ethernet {
            h.extend_from_slice(&ETHERTYPE_HMTT.to_be_bytes());
        } else {
            h.extend_from_slice(&0x0800u16.to_be_bytes());
            // version 4, IHL 5, DSCP 0, total length, id 0, DF, TTL 64, UDP.
            h.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0]);
            h.extend_from_slice(&self.src_ip);
            h.extend_from_slice(&self.dst_ip);
            h.extend_from_slice(&self.src_udp_port.to_be_bytes());
            h.extend_from_slice(&self.dst_udp_port.to_be_bytes());
            h.extend_from_slice(&[0, 0, 0, 0]);
        }
        let hmtt = PacketHeader {
            flags: 0,
            board: self.board_id,
            port: self.port_id,
            seq: 0,
            t0: 0,
            nwords: 0,
            geometry: self.geometry,
            tick_ps: self.tick_ps,
        };
        let mut hmtt_bytes = [0u8; HEADER_LEN];
        hmtt.emit(&mut hmtt_bytes);
        h.extend_from_slice(&hmtt_bytes);
        debug_assert_eq!(h.len(), self.header_len());
        h
    }

    /// The one's-complement sum (unfolded) of the IPv4 header's 16-bit words
    /// with total length and checksum 0; the hardware adds the length.
    pub fn ipv4_partial_sum(&self) -> u32 {
        let h = self.header_template();
        h[14..34]
            .chunks(2)
            .map(|w| u16::from_be_bytes([w[0], w[1]]) as u32)
            .sum()
    }
}

/// `x` folded to 16 bits with end-around carries (0 only for 0).
pub fn ones_complement_fold(x: u32) -> u16 {
    let s = (x & 0xffff) + (x >> 16);
    let s = (s & 0xffff) + (s >> 16);
    s as u16
}

/// The IPv4 header checksum of a header whose partial sum is `partial` and
/// total length is `total_len` (the same arithmetic as the hardware).
pub fn ipv4_checksum(partial: u32, total_len: u16) -> u16 {
    let s = partial + total_len as u32;
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum FramerState {
    Idle,
    Preamble,
    Header,
    Payload,
    Pad,
    Fcs,
    Gap,
}

/// One port's framer; see the module documentation.
#[derive(LogicBlock)]
pub struct Framer {
    pub clock: Signal<In, Clock>,
    pub desc_empty: Signal<In, Bit>,
    pub desc_data: Signal<In, Bits<DESC_BITS>>,
    pub desc_read: Signal<Out, Bit>,
    pub data_empty: Signal<In, Bit>,
    pub data: Signal<In, Bits<32>>,
    pub data_read: Signal<Out, Bit>,
    // GMII transmit.
    pub txd: Signal<Out, Bits<8>>,
    pub tx_en: Signal<Out, Bit>,
    pub tx_er: Signal<Out, Bit>,
    /// Sticky: a record word was due while the data FIFO was empty.
    pub underrun: Signal<Out, Bit>,
    // Parameters.
    template: Constant<Bits<HEADER_BITS>>,
    last_header_byte: Constant<Bits<7>>,
    udp_mode: Constant<Bit>,
    /// The one's-complement sum of the IPv4 header without its length,
    /// plus the 60 bytes of the length that do not depend on `nwords`,
    /// folded to 16 bits (never 0).
    ip_base_sum: Constant<Bits<17>>,
    ports: Constant<Bits<33>>,
    flags_shift: Constant<Bits<16>>,
    seq_shift: Constant<Bits<16>>,
    t0_shift: Constant<Bits<16>>,
    nwords_shift: Constant<Bits<16>>,
    line_hi_word: Constant<Bits<32>>,
    // State.
    state: DFF<FramerState>,
    /// Byte counter within the preamble, header, FCS and gap (< 128).
    count: DFF<Bits<7>>,
    header: DFF<Bits<HEADER_BITS>>,
    words_left: DFF<Bits<16>>,
    /// `words_left == 1`, registered (off the state's enable path).
    last_word: DFF<Bit>,
    /// The descriptor FIFO was not empty a clock ago. Idle starts a frame on
    /// this flop, not on the FIFO's pointer compare (which fanned out to the
    /// whole header load). Only the framer reads that FIFO and it leaves
    /// Idle on each read, so the flag is never stale where it is used; a
    /// descriptor reaching an idle port starts one clock later, as if the
    /// clock-domain crossing took one more clock.
    desc_ready: DFF<Bit>,
    /// The FIFO's head descriptor a clock ago (valid with `desc_ready`: the
    /// head stays put until the framer reads it), so the header sums start
    /// from flops, not from the block RAM's output.
    desc_head: DFF<Bits<DESC_BITS>>,
    inject: DFF<Bit>,
    inject_word: DFF<Bits<32>>,
    word: DFF<Bits<32>>,
    byte_index: DFF<Bits<2>>,
    /// Bytes of the frame sent so far, saturating at 64: it is only
    /// compared with the 60-byte minimum.
    frame_len: DFF<Bits<7>>,
    frame_len_inc: Signal<Local, Bits<7>>,
    /// `frame_len >= 59`, in gates (no carry chain before the state).
    frame_len_ge59: Signal<Local, Bit>,
    crc: DFF<Bits<32>>,
    /// The next packet's `seq` (`k * ports + port`), low and high halves:
    /// the low half adds `ports` at each packet and the carry reaches the
    /// high half a clock later (packets are far apart), so no 64-bit carry
    /// chain sits between two registers.
    seq_lo: DFFWithInit<Bits<32>>,
    seq_hi: DFF<Bits<32>>,
    seq_carry: DFF<Bit>,
    seq_sum: Signal<Local, Bits<33>>,
    seq: Signal<Local, Bits<64>>,
    txd_reg: DFF<Bits<8>>,
    tx_en_reg: DFF<Bit>,
    underrun_reg: DFF<Bit>,
    /// The byte in `txd_reg` is not yet in `crc` (the CRC folds each byte
    /// one clock after sending it, off the FIFO-read-to-byte path).
    crc_pending: DFF<Bit>,
    /// The CRC of every byte sent so far.
    crc_now: Signal<Local, Bits<32>>,
    crc_step: Crc32Byte,
    // Combinational.
    out_byte: Signal<Local, Bits<8>>,
    send: Signal<Local, Bit>,
    crc_enable: Signal<Local, Bit>,
    d_nwords: Signal<Local, Bits<16>>,
    d_hi: Signal<Local, Bits<21>>,
    ip_len: Signal<Local, Bits<16>>,
    udp_len: Signal<Local, Bits<16>>,
    words_sum: Signal<Local, Bits<17>>,
    words_sum_inc: Signal<Local, Bits<17>>,
    checksum: Signal<Local, Bits<16>>,
}

impl Framer {
    pub fn new(config: &FramerConfig) -> Self {
        let mut template: Bits<HEADER_BITS> = Bits::default();
        for (i, b) in config.header_template().iter().enumerate() {
            template.set_bits::<8>(8 * i, (*b as u64).to_bits());
        }
        let h = config.hmtt_offset() as u64;
        Self {
            clock: Default::default(),
            desc_empty: Default::default(),
            desc_data: Default::default(),
            desc_read: Default::default(),
            data_empty: Default::default(),
            data: Default::default(),
            data_read: Default::default(),
            txd: Default::default(),
            tx_en: Default::default(),
            tx_er: Default::default(),
            underrun: Default::default(),
            template: Constant::new(template),
            last_header_byte: Constant::new(((config.header_len() - 1) as u64).to_bits()),
            udp_mode: Constant::new(!config.raw_ethernet),
            ip_base_sum: Constant::new(
                (ones_complement_fold(config.ipv4_partial_sum() + 60) as u64).to_bits(),
            ),
            ports: Constant::new((config.ports as u64).to_bits()),
            flags_shift: Constant::new((8 * (h + 5)).to_bits()),
            seq_shift: Constant::new((8 * (h + 8)).to_bits()),
            t0_shift: Constant::new((8 * (h + 16)).to_bits()),
            nwords_shift: Constant::new((8 * (h + 24)).to_bits()),
            line_hi_word: Constant::new(
                (RecordWord::control_unchecked(0, Opcode::LineHi, 0).0 as u64).to_bits(),
            ),
            state: Default::default(),
            count: Default::default(),
            header: Default::default(),
            words_left: Default::default(),
            last_word: Default::default(),
            desc_ready: Default::default(),
            desc_head: Default::default(),
            inject: Default::default(),
            inject_word: Default::default(),
            word: Default::default(),
            byte_index: Default::default(),
            frame_len: Default::default(),
            frame_len_inc: Default::default(),
            frame_len_ge59: Default::default(),
            crc: Default::default(),
            seq_lo: DFFWithInit::new((config.port_id as u64).to_bits()),
            seq_hi: Default::default(),
            seq_carry: Default::default(),
            seq_sum: Default::default(),
            seq: Default::default(),
            txd_reg: Default::default(),
            tx_en_reg: Default::default(),
            underrun_reg: Default::default(),
            crc_pending: Default::default(),
            crc_now: Default::default(),
            crc_step: Default::default(),
            out_byte: Default::default(),
            send: Default::default(),
            crc_enable: Default::default(),
            d_nwords: Default::default(),
            d_hi: Default::default(),
            ip_len: Default::default(),
            udp_len: Default::default(),
            words_sum: Default::default(),
            words_sum_inc: Default::default(),
            checksum: Default::default(),
        }
    }
}

impl Logic for Framer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            count,
            header,
            words_left,
            last_word,
            desc_ready,
            desc_head,
            inject,
            inject_word,
            word,
            byte_index,
            frame_len,
            crc,
            seq_lo,
            seq_hi,
            seq_carry,
            txd_reg,
            tx_en_reg,
            underrun_reg,
            crc_pending
        );
        self.desc_ready.d.next = !self.desc_empty.val();
        self.desc_head.d.next = self.desc_data.val();
        self.crc_step.crc_in.next = self.crc.q.val();
        self.crc_step.data.next = self.txd_reg.q.val();
        self.crc_now.next = self.crc.q.val();
        if self.crc_pending.q.val() {
            self.crc_now.next = self.crc_step.crc_out.val();
        }
        self.crc.d.next = self.crc_now.val();
        self.seq.next = (bit_cast::<64, 32>(self.seq_hi.q.val()) << 32)
            | bit_cast::<64, 32>(self.seq_lo.q.val());
        self.seq_sum.next = bit_cast::<33, 32>(self.seq_lo.q.val()) + self.ports.val();
        self.seq_carry.d.next = false;
        if self.seq_carry.q.val() {
            self.seq_hi.d.next = self.seq_hi.q.val() + 1;
        }
        // The per-packet header fields, from the descriptor at the head of
        // the descriptor FIFO.
        self.d_nwords.next = self.desc_head.q.val().get_bits::<16>(64);
        self.d_hi.next = self.desc_head.q.val().get_bits::<21>(88);
        self.udp_len.next = (self.d_nwords.val() << 2) + 40;
        self.ip_len.next = self.udp_len.val() + 20;
        // One's-complement sum of the base and `4 * nwords`: one 16-bit
        // add, and the end-around carry picks the sum plus one (computed
        // beside it, not after it).
        self.words_sum.next = bit_cast::<17, 16>(self.d_nwords.val() << 2) + self.ip_base_sum.val();
        self.words_sum_inc.next =
            bit_cast::<17, 16>(self.d_nwords.val() << 2) + self.ip_base_sum.val() + 1;
        self.checksum.next = !bit_cast::<16, 17>(self.words_sum.val());
        if self.words_sum.val().get_bit(16) {
            self.checksum.next = !bit_cast::<16, 17>(self.words_sum_inc.val());
        }
        self.frame_len_inc.next = self.frame_len.q.val() + 1;
        if self.frame_len.q.val().get_bit(6) {
            self.frame_len_inc.next = self.frame_len.q.val();
        }
        // 59 = 0b0111011; below 64 that is 59..=63.
        self.frame_len_ge59.next = self.frame_len.q.val().get_bit(6)
            | (self.frame_len.q.val().get_bit(5)
                & self.frame_len.q.val().get_bit(4)
                & self.frame_len.q.val().get_bit(3)
                & (self.frame_len.q.val().get_bit(2)
                    | (self.frame_len.q.val().get_bit(1) & self.frame_len.q.val().get_bit(0))));
        self.out_byte.next = 0.into();
        self.send.next = false;
        self.crc_enable.next = false;
        self.desc_read.next = false;
        self.data_read.next = false;
        match self.state.q.val() {
            FramerState::Idle => {
                if self.desc_ready.q.val() {
                    self.desc_read.next = true;
                    // The HMTT header's fields are little-endian, like the
                    // bit order here; the IPv4 and UDP ones go high byte
                    // first. (Computed only here: 592-bit arithmetic is what
                    // the simulation spends its time on.)
                    if self.udp_mode.val() {
                        self.header.d.next = self.template.val()
                            | (bit_cast::<HEADER_BITS, 8>(
                                self.desc_head.q.val().get_bits::<8>(80),
                            ) << self.flags_shift.val())
                            | (bit_cast::<HEADER_BITS, 64>(self.seq.val()) << self.seq_shift.val())
                            | (bit_cast::<HEADER_BITS, 64>(
                                self.desc_head.q.val().get_bits::<64>(0),
                            ) << self.t0_shift.val())
                            | (bit_cast::<HEADER_BITS, 16>(self.d_nwords.val())
                                << self.nwords_shift.val())
                            | (bit_cast::<HEADER_BITS, 16>(self.ip_len.val() >> 8) << 128)
                            | (bit_cast::<HEADER_BITS, 16>(self.ip_len.val() & 0xff) << 136)
                            | (bit_cast::<HEADER_BITS, 16>(self.checksum.val() >> 8) << 192)
                            | (bit_cast::<HEADER_BITS, 16>(self.checksum.val() & 0xff) << 200)
                            | (bit_cast::<HEADER_BITS, 16>(self.udp_len.val() >> 8) << 304)
                            | (bit_cast::<HEADER_BITS, 16>(self.udp_len.val() & 0xff) << 312);
                    } else {
                        self.header.d.next = self.template.val()
                            | (bit_cast::<HEADER_BITS, 8>(
                                self.desc_head.q.val().get_bits::<8>(80),
                            ) << self.flags_shift.val())
                            | (bit_cast::<HEADER_BITS, 64>(self.seq.val()) << self.seq_shift.val())
                            | (bit_cast::<HEADER_BITS, 64>(
                                self.desc_head.q.val().get_bits::<64>(0),
                            ) << self.t0_shift.val())
                            | (bit_cast::<HEADER_BITS, 16>(self.d_nwords.val())
                                << self.nwords_shift.val());
                    }
                    self.words_left.d.next = self.d_nwords.val();
                    self.last_word.d.next = self.d_nwords.val() == 1;
                    self.inject.d.next = self.d_hi.val().any();
                    self.inject_word.d.next =
                        bit_cast::<32, 21>(self.d_hi.val()) | self.line_hi_word.val();
                    self.seq_lo.d.next = bit_cast::<32, 33>(self.seq_sum.val());
                    self.seq_carry.d.next = self.seq_sum.val().get_bit(32);
                    self.count.d.next = 0.into();
                    self.frame_len.d.next = 0.into();
                    self.crc.d.next = 0xffff_ffff_u64.into();
                    self.state.d.next = FramerState::Preamble;
                }
            }
            FramerState::Preamble => {
                self.send.next = true;
                self.out_byte.next = 0x55.into();
                self.count.d.next = self.count.q.val() + 1;
                if self.count.q.val() == 7 {
                    self.out_byte.next = 0xd5.into();
                    self.count.d.next = 0.into();
                    self.state.d.next = FramerState::Header;
                }
            }
            FramerState::Header => {
                self.send.next = true;
                self.crc_enable.next = true;
                self.out_byte.next = self.header.q.val().get_bits::<8>(0);
                self.header.d.next = self.header.q.val() >> 8;
                self.frame_len.d.next = self.frame_len_inc.val();
                self.count.d.next = self.count.q.val() + 1;
                if self.count.q.val() == self.last_header_byte.val() {
                    self.byte_index.d.next = 0.into();
                    self.state.d.next = FramerState::Payload;
                }
            }
            FramerState::Payload => {
                self.send.next = true;
                self.crc_enable.next = true;
                self.frame_len.d.next = self.frame_len_inc.val();
                self.out_byte.next = self.word.q.val().get_bits::<8>(0);
                self.word.d.next = self.word.q.val() >> 8;
                if self.byte_index.q.val() == 0 {
                    if self.inject.q.val() {
                        self.out_byte.next = self.inject_word.q.val().get_bits::<8>(0);
                        self.word.d.next = self.inject_word.q.val() >> 8;
                        self.inject.d.next = false;
                    } else {
                        self.data_read.next = true;
                        self.out_byte.next = self.data.val().get_bits::<8>(0);
                        self.word.d.next = self.data.val() >> 8;
                        if self.data_empty.val() {
                            self.underrun_reg.d.next = true;
                        }
                    }
                }
                self.byte_index.d.next = self.byte_index.q.val() + 1;
                if self.byte_index.q.val() == 3 {
                    self.words_left.d.next = self.words_left.q.val() - 1;
                    self.last_word.d.next = self.words_left.q.val() == 2;
                    if self.last_word.q.val() {
                        self.count.d.next = 0.into();
                        // (frame_len + 1 < 60, without an adder in front.)
                        if !self.frame_len_ge59.val() {
                            self.state.d.next = FramerState::Pad;
                        } else {
                            self.state.d.next = FramerState::Fcs;
                        }
                    }
                }
            }
            FramerState::Pad => {
                self.send.next = true;
                self.crc_enable.next = true;
                self.frame_len.d.next = self.frame_len_inc.val();
                if self.frame_len.q.val() == 59 {
                    self.state.d.next = FramerState::Fcs;
                }
            }
            FramerState::Fcs => {
                self.send.next = true;
                self.out_byte.next = !self.crc_now.val().get_bits::<8>(0);
                self.crc.d.next = self.crc_now.val() >> 8;
                self.count.d.next = self.count.q.val() + 1;
                if self.count.q.val() == 3 {
                    self.count.d.next = 0.into();
                    self.state.d.next = FramerState::Gap;
                }
            }
            FramerState::Gap => {
                // Gap cycles 1..=11 here, the 12th is the Idle cycle that
                // reads the next descriptor.
                self.count.d.next = self.count.q.val() + 1;
                if self.count.q.val() == 10 {
                    self.state.d.next = FramerState::Idle;
                }
            }
        }
        self.crc_pending.d.next = self.crc_enable.val();
        self.txd_reg.d.next = self.out_byte.val();
        self.tx_en_reg.d.next = self.send.val();
        self.txd.next = self.txd_reg.q.val();
        self.tx_en.next = self.tx_en_reg.q.val();
        self.tx_er.next = false;
        self.underrun.next = self.underrun_reg.q.val();
    }
}
