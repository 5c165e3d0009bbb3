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
//! inputs from first-word-fall-through FIFOs ([`crate::port_buffer`]) whose
//! head stays put until it is read: the descriptor FIFO (one entry per closed packet, see
//! [`crate::packetizer::Descriptor`]) and the data FIFO (the packet's words
//! except the injected LINE_HI word, which the framer sends first itself).
//! The port's `seq` is counted here: the port's k-th packet has
//! `seq = k * ports + port`.
//!
//! A statistics packet (format.md §5.3, board.md "Statistic Unit") has its
//! own header in its words: with `raw` high while its descriptor is at the
//! head, the framer sends the Ethernet (and IPv4 and UDP) header alone,
//! then `nwords + 8` words, the HMTT header's 32 bytes being the first
//! eight; the lengths and checksum come out right from `nwords` as they
//! are, and the trace's `seq` does not advance. A board without a
//! Statistic Unit ties `raw` low.

use crate::crc32::Crc32Byte;
use crate::packetizer::DESC_BITS;
use hmtt_format::packet::{field, HEADER_LEN};
use hmtt_format::record::Opcode;
use hmtt_format::{Geometry, PacketHeader, RecordWord};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

mod header;
pub use header::{ipv4_checksum, ones_complement_fold, FramerConfig};

/// Bytes of the Ethernet header (no VLAN tag).
pub const ETHERNET_HEADER_BYTES: usize = 14;
/// Bytes of the IPv4 header (no options).
pub const IPV4_HEADER_BYTES: usize = 20;
/// Bytes of the UDP header.
pub const UDP_ONLY_HEADER_BYTES: usize = 8;
/// Bytes of Ethernet + IPv4 + UDP + HMTT headers.
pub const UDP_HEADER_BYTES: usize =
    ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_ONLY_HEADER_BYTES + HEADER_LEN;
/// Bytes of Ethernet + HMTT headers in raw-Ethernet mode.
pub const RAW_HEADER_BYTES: usize = ETHERNET_HEADER_BYTES + HEADER_LEN;
/// Byte offsets in a UDP frame (from the destination MAC) of the fields
/// the framer fills per packet besides the HMTT header's: IPv4 total
/// length and header checksum, UDP length.
mod udp_field {
    use super::{ETHERNET_HEADER_BYTES as ETH, IPV4_HEADER_BYTES as IP};
    use core::ops::Range;
    pub const IPV4: Range<usize> = ETH..ETH + IP;
    pub const IPV4_TOTAL_LENGTH: Range<usize> = ETH + 2..ETH + 4;
    pub const IPV4_CHECKSUM: Range<usize> = ETH + 10..ETH + 12;
    pub const UDP_LENGTH: Range<usize> = ETH + IP + 4..ETH + IP + 6;
}
/// Wire bytes of a UDP frame besides the record words (board.md "Drain rate").
pub const UDP_FRAME_OVERHEAD: usize = 98;
/// The EtherType of raw-Ethernet frames (IEEE local experimental).
pub const ETHERTYPE_HMTT: u16 = 0x88B5;
/// The per-packet header bytes in UDP mode, in the order they are sent:
/// IPv4 total length and checksum, UDP length (2 each), HMTT flags, seq (8),
/// t0 (8), nwords (2).
const FIELD_BYTES: usize = 25;
// The shifter sends seq, t0 and nwords back to back after the flags.
const _: () = assert!(
    field::SEQ.end == field::T0.start
        && field::T0.end == field::NWORDS.start
        && 2 * 3 + 1 + field::NWORDS.end - field::SEQ.start == FIELD_BYTES
);
/// Frames shorter than this before the FCS are padded (Ethernet minimum).
pub const MIN_FRAME_BEFORE_FCS: usize = 60;
/// Idle byte times between frames.
pub const GAP_BYTES: usize = 12;

/// One port's framer; see the module documentation.
///
/// Timing (the Ethernet clock is 125 MHz, 8 ns, also on the iCE40): the
/// state is one-hot flags, each state's last clock is a flop worked out a
/// clock ahead (`ending`, from compares made a clock before that), the
/// output byte is an OR of the states' bytes, each chosen by a flop; the
/// header is a constant template in a ROM read a byte ahead, with the 25
/// per-packet field bytes shifted out of a register in their place (a
/// 592-bit header register was the framer's largest part); the head descriptor's lengths
/// and checksum are summed into registers while it waits; `seq` is four
/// 16-bit pieces whose carries ripple a piece per clock (frames are far
/// apart); the FCS bytes go in at a second output register straight from
/// the CRC register, so no CRC step sits before an output register.
#[derive(LogicBlock)]
pub struct Framer {
    pub clock: Signal<In, Clock>,
    pub desc_empty: Signal<In, Bit>,
    pub desc_data: Signal<In, Bits<DESC_BITS>>,
    pub desc_read: Signal<Out, Bit>,
    /// The head descriptor is a statistics packet's (module
    /// documentation); held from before the descriptor shows until its
    /// `desc_read`.
    pub raw: Signal<In, Bit>,
    /// Idle, and in the inter-frame gap: when the head descriptor may
    /// change without reaching a frame's start half-registered.
    pub state_idle: Signal<Out, Bit>,
    pub state_gap: Signal<Out, Bit>,
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
    /// The header's third-to-last byte (`count_at_penultimate` is set
    /// after it).
    before_penultimate_header_byte: Constant<Bits<7>>,
    /// The same for a statistics packet: the header less the HMTT
    /// header's 32 bytes.
    before_penultimate_raw_byte: Constant<Bits<7>>,
    /// The frame is a statistics packet's; its words, the head
    /// descriptor's `nwords + 8`.
    frame_raw: DFF<Bit>,
    raw_words: DFF<Bits<16>>,
    udp_mode: Constant<Bit>,
    /// The one's-complement sum of the IPv4 header without its length,
    /// plus the 60 bytes of the length that do not depend on `nwords`,
    /// folded to 16 bits (never 0).
    ip_base_sum: Constant<Bits<17>>,
    ports: Constant<Bits<17>>,
    line_hi_word: Constant<Bits<32>>,
    // The state, one hot.
    in_idle: DFFWithInit<Bit>,
    in_preamble: DFF<Bit>,
    in_header: DFF<Bit>,
    in_payload: DFF<Bit>,
    in_pad: DFF<Bit>,
    in_fcs: DFF<Bit>,
    in_gap: DFF<Bit>,
    /// This clock is the last of the state (not used in Idle), worked out a
    /// clock ahead so that no counter compare sits before the state and
    /// counter enables.
    ending: DFF<Bit>,
    /// Clocks since the state began (wrapping; read in the preamble,
    /// header, FCS and gap, all shorter than 128 clocks).
    count: DFF<Bits<7>>,
    /// `count` is 6, the header's second-to-last byte, 2, 9 (the last but
    /// one clock of the preamble, header, FCS and gap), and `frame_len` is
    /// 58: compares made a clock ahead, on the value before the increment.
    count_at_6: DFF<Bit>,
    count_at_penultimate: DFF<Bit>,
    count_at_2: DFF<Bit>,
    count_at_9: DFF<Bit>,
    len_at_58: DFF<Bit>,
    /// This clock sends the first byte of a word from the data FIFO (and
    /// takes it), of the injected LINE_HI word, or a later byte of `word`.
    read_now: DFF<Bit>,
    inject_now: DFF<Bit>,
    word_shift: DFF<Bit>,
    /// The header byte to send next clock (`header_pos` counts them): the
    /// template's byte (bits 0..8, the per-packet fields 0) and whether it
    /// is a field byte instead (bit 8), from a ROM with a registered output
    /// (a block RAM on the iCE40), so the header is not a 592-bit register.
    /// The ROM is addressed with the next clock's position and its output
    /// is registered in the fabric (`header_word`): a block RAM's read data
    /// arrives late and far from the header logic. The address is a
    /// register, worked out a clock ahead from the state's next values, so
    /// neither the state's end nor a carry chain sits before the template.
    header_addr: DFF<Bits<7>>,
    /// `header_addr + 1`, registered beside it, and its own next value
    /// likewise picked from registers.
    header_addr_inc: DFF<Bits<7>>,
    header_addr_next: Signal<Local, Bits<7>>,
    header_advance_next: Signal<Local, Bit>,
    in_preamble_next: Signal<Local, Bit>,
    in_header_next: Signal<Local, Bit>,
    ending_next: Signal<Local, Bit>,
    header_rom: SyncROM<Bits<9>, 7>,
    header_word: DFF<Bits<9>>,
    /// The packet's header fields, loaded when the frame starts and shifted
    /// out a byte per field byte.
    fields: DFF<Bits<{ 8 * FIELD_BYTES }>>,
    words_left: DFF<Bits<16>>,
    /// `words_left == 1`, registered (off the state's enable path).
    last_word: DFF<Bit>,
    /// The descriptor FIFO was not empty a clock ago / two clocks ago: the
    /// head descriptor's fields below are registered from it in two steps,
    /// and Idle starts a frame on `desc_ready2`. Only the framer reads that
    /// FIFO and it leaves Idle on each read (for 80 clocks at least), so
    /// the flags are never stale where they are used; a descriptor reaching
    /// an idle port starts two clocks later, as if the clock-domain
    /// crossing took two more clocks. Back to back, the next descriptor
    /// has long been waiting, so frames keep their pace.
    desc_ready: DFF<Bit>,
    desc_ready2: DFF<Bit>,
    /// `in_idle & desc_ready2`, registered from their next values: the
    /// frame's start drives the descriptor FIFO's read and the state
    /// counters' reset from a flop.
    start_reg: DFF<Bit>,
    start_next: Signal<Local, Bit>,
    udp_len_reg: DFF<Bits<16>>,
    ip_len_reg: DFF<Bits<16>>,
    /// `4 nwords + ip_base_sum` and that plus one (the end-around carry).
    words_sum: DFF<Bits<17>>,
    words_sum_inc: DFF<Bits<17>>,
    checksum_reg: DFF<Bits<16>>,
    single_word: DFF<Bit>,
    has_line_hi: DFF<Bit>,
    inject: DFF<Bit>,
    inject_word: DFF<Bits<32>>,
    word: DFF<Bits<32>>,
    byte_index: DFF<Bits<2>>,
    /// In the payload at its byte 2 (`byte_index == 2`), registered a
    /// clock ahead, so the payload's end test reads two flip-flops and not
    /// the byte count (on the iCE40 the count lands far from the state
    /// logic).
    payload_at_2: DFF<Bit>,
    /// Bytes of the frame sent so far (counted from the header's first
    /// byte, every clock, saturating at 64): it is only compared with the
    /// 60-byte minimum.
    frame_len: DFF<Bits<7>>,
    frame_len_inc: Signal<Local, Bits<7>>,
    /// `frame_len >= 59`, registered from `frame_len >= 58` a clock ahead.
    len_ge59: DFF<Bit>,
    crc: DFF<Bits<32>>,
    /// The next packet's `seq` (`k * ports + port`) in 16-bit pieces: the
    /// lowest adds `ports` at each packet, a carry reaches the next piece a
    /// clock later.
    seq0: DFFWithInit<Bits<16>>,
    seq1: DFFWithInit<Bits<16>>,
    seq2: DFFWithInit<Bits<16>>,
    seq3: DFFWithInit<Bits<16>>,
    carry0: DFF<Bit>,
    carry1: DFF<Bit>,
    carry2: DFF<Bit>,
    /// `seq0 + ports`, a clock behind `seq0` (which changes only when a
    /// frame starts).
    seq_sum: DFF<Bits<17>>,
    seq: Signal<Local, Bits<64>>,
    /// First output register: the frame's bytes, FCS bytes still zero.
    txd_reg: DFF<Bits<8>>,
    tx_en_reg: DFF<Bit>,
    /// Second output register: the FCS bytes put in.
    txd_out: DFF<Bits<8>>,
    tx_en_out: DFF<Bit>,
    /// `txd_reg` holds an FCS position (the FCS state a clock ago).
    fcs_out: DFF<Bit>,
    /// A word was due while the data FIFO was empty (this clock), and the
    /// sticky flag a clock later (the output may sit far away).
    underrun_now: DFF<Bit>,
    underrun_reg: DFF<Bit>,
    /// The byte in `txd_reg` is not yet in `crc` (the CRC folds each byte
    /// one clock after sending it, off the FIFO-read-to-byte path).
    crc_pending: DFF<Bit>,
    crc_step: Crc32Byte,
    // Combinational.
    start: Signal<Local, Bit>,
    count_reset: Signal<Local, Bit>,
    frame_reset: Signal<Local, Bit>,
    ending_preamble: Signal<Local, Bit>,
    ending_header: Signal<Local, Bit>,
    ending_payload: Signal<Local, Bit>,
    ending_pad: Signal<Local, Bit>,
    ending_fcs: Signal<Local, Bit>,
    ending_gap: Signal<Local, Bit>,
    preamble_byte: Signal<Local, Bits<8>>,
    header_byte: Signal<Local, Bits<8>>,
    payload_byte: Signal<Local, Bits<8>>,
    d_nwords: Signal<Local, Bits<16>>,
    d_hi: Signal<Local, Bits<21>>,
}

impl Framer {
    pub fn new(config: &FramerConfig) -> Self {
        Framer::with_first_seq(config, config.port_id as u64)
    }

    /// A framer whose first packet gets `seq = first_seq` (then `+ ports`
    /// per packet); [`Framer::new`] starts at the port's number, as
    /// format.md says. For tests of the carries between `seq`'s pieces.
    pub fn with_first_seq(config: &FramerConfig, first_seq: u64) -> Self {
        let piece = |k: u32| DFFWithInit::new(((first_seq >> (16 * k)) & 0xffff).to_bits());
        let h = config.hmtt_offset();
        let mut field_bytes: Vec<usize> = vec![h + field::FLAGS];
        field_bytes.extend(h + field::SEQ.start..h + field::NWORDS.end);
        if !config.raw_ethernet {
            field_bytes.extend(udp_field::IPV4_TOTAL_LENGTH);
            field_bytes.extend(udp_field::IPV4_CHECKSUM);
            field_bytes.extend(udp_field::UDP_LENGTH);
        }
        let header_rom: BTreeMap<Bits<7>, Bits<9>> = config
            .header_template()
            .iter()
            .enumerate()
            .map(|(k, &b)| {
                let field = if field_bytes.contains(&k) { 0x100 } else { 0 };
                (k.to_bits(), (field | b as u64).to_bits())
            })
            .collect();
        Self {
            clock: Default::default(),
            desc_empty: Default::default(),
            desc_data: Default::default(),
            desc_read: Default::default(),
            raw: Default::default(),
            state_idle: Default::default(),
            state_gap: Default::default(),
            data_empty: Default::default(),
            data: Default::default(),
            data_read: Default::default(),
            txd: Default::default(),
            tx_en: Default::default(),
            tx_er: Default::default(),
            underrun: Default::default(),
            before_penultimate_header_byte: Constant::new(
                ((config.header_len() - 3) as u64).to_bits(),
            ),
            before_penultimate_raw_byte: Constant::new(
                ((config.header_len() - HEADER_LEN - 3) as u64).to_bits(),
            ),
            frame_raw: Default::default(),
            raw_words: Default::default(),
            udp_mode: Constant::new(!config.raw_ethernet),
            ip_base_sum: Constant::new(
                (ones_complement_fold(config.ipv4_partial_sum() + 60) as u64).to_bits(),
            ),
            ports: Constant::new((config.ports as u64).to_bits()),
            line_hi_word: Constant::new(
                (RecordWord::control_unchecked(0, Opcode::LineHi, 0).0 as u64).to_bits(),
            ),
            in_idle: DFFWithInit::new(true),
            in_preamble: Default::default(),
            in_header: Default::default(),
            in_payload: Default::default(),
            in_pad: Default::default(),
            in_fcs: Default::default(),
            in_gap: Default::default(),
            ending: Default::default(),
            count: Default::default(),
            count_at_6: Default::default(),
            count_at_penultimate: Default::default(),
            count_at_2: Default::default(),
            count_at_9: Default::default(),
            len_at_58: Default::default(),
            read_now: Default::default(),
            inject_now: Default::default(),
            word_shift: Default::default(),
            header_addr: Default::default(),
            header_addr_inc: Default::default(),
            header_addr_next: Default::default(),
            header_advance_next: Default::default(),
            in_preamble_next: Default::default(),
            in_header_next: Default::default(),
            ending_next: Default::default(),
            header_word: Default::default(),
            header_rom: SyncROM::new(header_rom),
            fields: Default::default(),
            words_left: Default::default(),
            last_word: Default::default(),
            desc_ready: Default::default(),
            desc_ready2: Default::default(),
            start_reg: Default::default(),
            start_next: Default::default(),
            udp_len_reg: Default::default(),
            ip_len_reg: Default::default(),
            words_sum: Default::default(),
            words_sum_inc: Default::default(),
            checksum_reg: Default::default(),
            single_word: Default::default(),
            has_line_hi: Default::default(),
            inject: Default::default(),
            inject_word: Default::default(),
            word: Default::default(),
            byte_index: Default::default(),
            payload_at_2: Default::default(),
            frame_len: Default::default(),
            frame_len_inc: Default::default(),
            len_ge59: Default::default(),
            crc: Default::default(),
            seq0: piece(0),
            seq1: piece(1),
            seq2: piece(2),
            seq3: piece(3),
            carry0: Default::default(),
            carry1: Default::default(),
            carry2: Default::default(),
            seq_sum: Default::default(),
            seq: Default::default(),
            txd_reg: Default::default(),
            tx_en_reg: Default::default(),
            txd_out: Default::default(),
            tx_en_out: Default::default(),
            fcs_out: Default::default(),
            underrun_now: Default::default(),
            underrun_reg: Default::default(),
            crc_pending: Default::default(),
            crc_step: Default::default(),
            start: Default::default(),
            count_reset: Default::default(),
            frame_reset: Default::default(),
            ending_preamble: Default::default(),
            ending_header: Default::default(),
            ending_payload: Default::default(),
            ending_pad: Default::default(),
            ending_fcs: Default::default(),
            ending_gap: Default::default(),
            preamble_byte: Default::default(),
            header_byte: Default::default(),
            payload_byte: Default::default(),
            d_nwords: Default::default(),
            d_hi: Default::default(),
        }
    }
}

impl Logic for Framer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            in_idle,
            in_preamble,
            in_header,
            in_payload,
            in_pad,
            in_fcs,
            in_gap,
            ending,
            count,
            count_at_6,
            count_at_penultimate,
            count_at_2,
            count_at_9,
            len_at_58,
            read_now,
            inject_now,
            word_shift,
            header_addr,
            header_addr_inc,
            fields,
            words_left,
            last_word,
            desc_ready,
            desc_ready2,
            udp_len_reg,
            ip_len_reg,
            words_sum,
            words_sum_inc,
            checksum_reg,
            single_word,
            has_line_hi,
            inject,
            inject_word,
            word,
            byte_index,
            payload_at_2,
            frame_len,
            len_ge59,
            crc,
            seq0,
            seq1,
            seq2,
            seq3,
            carry0,
            carry1,
            carry2,
            seq_sum,
            txd_reg,
            tx_en_reg,
            txd_out,
            tx_en_out,
            fcs_out,
            underrun_now,
            underrun_reg,
            crc_pending,
            frame_raw,
            raw_words
        );
        // The head descriptor's header fields, registered in two steps.
        self.desc_ready.d.next = !self.desc_empty.val();
        self.desc_ready2.d.next = self.desc_ready.q.val();
        self.d_nwords.next = self.desc_data.val().get_bits::<16>(64);
        self.d_hi.next = self.desc_data.val().get_bits::<21>(88);
        self.udp_len_reg.d.next = (self.d_nwords.val() << 2) + 40;
        self.ip_len_reg.d.next = (self.d_nwords.val() << 2) + 60;
        self.raw_words.d.next = self.d_nwords.val() + 8;
        // One's-complement sum of the base and `4 * nwords`: the
        // end-around carry picks the sum plus one (computed beside it).
        self.words_sum.d.next =
            bit_cast::<17, 16>(self.d_nwords.val() << 2) + self.ip_base_sum.val();
        self.words_sum_inc.d.next =
            bit_cast::<17, 16>(self.d_nwords.val() << 2) + self.ip_base_sum.val() + 1;
        self.checksum_reg.d.next = !bit_cast::<16, 17>(self.words_sum.q.val());
        if self.words_sum.q.val().get_bit(16) {
            self.checksum_reg.d.next = !bit_cast::<16, 17>(self.words_sum_inc.q.val());
        }
        self.single_word.d.next = self.d_nwords.val() == 1;
        self.has_line_hi.d.next = self.d_hi.val().any();
        // seq, in pieces.
        self.seq.next = (bit_cast::<64, 16>(self.seq3.q.val()) << 48)
            | (bit_cast::<64, 16>(self.seq2.q.val()) << 32)
            | (bit_cast::<64, 16>(self.seq1.q.val()) << 16)
            | bit_cast::<64, 16>(self.seq0.q.val());
        self.seq_sum.d.next = bit_cast::<17, 16>(self.seq0.q.val()) + self.ports.val();
        self.carry0.d.next = false;
        self.carry1.d.next = false;
        self.carry2.d.next = false;
        if self.carry0.q.val() {
            self.seq1.d.next = self.seq1.q.val() + 1;
            self.carry1.d.next = self.seq1.q.val() == 0xffff;
        }
        if self.carry1.q.val() {
            self.seq2.d.next = self.seq2.q.val() + 1;
            self.carry2.d.next = self.seq2.q.val() == 0xffff;
        }
        if self.carry2.q.val() {
            self.seq3.d.next = self.seq3.q.val() + 1;
        }
        self.frame_len_inc.next = self.frame_len.q.val() + 1;
        if self.frame_len.q.val().get_bit(6) {
            self.frame_len_inc.next = self.frame_len.q.val();
        }
        self.start.next = self.start_reg.q.val();
        self.start_reg.clock.next = self.clock.val();
        self.start_next.next = ((self.in_idle.q.val() & !self.start.val())
            | (self.in_gap.q.val() & self.ending.q.val()))
            & self.desc_ready.q.val();
        self.start_reg.d.next = self.start_next.val();
        self.desc_read.next = self.start.val();
        self.data_read.next = self.read_now.q.val();
        self.underrun_now.d.next = self.read_now.q.val() & self.data_empty.val();
        self.underrun_reg.d.next = self.underrun_reg.q.val() | self.underrun_now.q.val();
        // Idle: a frame starts.
        if self.start.val() {
            // In the order they are sent: the IPv4 and UDP ones high byte
            // first, the HMTT ones little-endian like the bit order here.
            self.fields.d.next =
                bit_cast::<{ 8 * FIELD_BYTES }, 8>(self.desc_data.val().get_bits::<8>(80))
                    | (bit_cast::<{ 8 * FIELD_BYTES }, 64>(self.seq.val()) << 8)
                    | (bit_cast::<{ 8 * FIELD_BYTES }, 64>(self.desc_data.val().get_bits::<64>(0))
                        << 72)
                    | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.d_nwords.val()) << 136);
            if self.udp_mode.val() {
                self.fields.d.next =
                    bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.ip_len_reg.q.val() >> 8)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.ip_len_reg.q.val() & 0xff)
                            << 8)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.checksum_reg.q.val() >> 8)
                            << 16)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.checksum_reg.q.val() & 0xff)
                            << 24)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.udp_len_reg.q.val() >> 8)
                            << 32)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.udp_len_reg.q.val() & 0xff)
                            << 40)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 8>(
                            self.desc_data.val().get_bits::<8>(80),
                        ) << 48)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 64>(self.seq.val()) << 56)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 64>(
                            self.desc_data.val().get_bits::<64>(0),
                        ) << 120)
                        | (bit_cast::<{ 8 * FIELD_BYTES }, 16>(self.d_nwords.val()) << 184);
            }
            self.words_left.d.next = self.d_nwords.val();
            self.last_word.d.next = self.single_word.q.val();
            self.inject.d.next = self.has_line_hi.q.val();
            self.inject_word.d.next = bit_cast::<32, 21>(self.d_hi.val()) | self.line_hi_word.val();
            self.frame_raw.d.next = self.raw.val();
            if self.raw.val() {
                // At least the 12 words of its header: never a single word.
                self.words_left.d.next = self.raw_words.q.val();
                self.last_word.d.next = false;
                self.inject.d.next = false;
            } else {
                self.seq0.d.next = bit_cast::<16, 17>(self.seq_sum.q.val());
                self.carry0.d.next = self.seq_sum.q.val().get_bit(16);
            }
        }
        // The state: each flag's next value is one expression (with `if`s
        // for different states yosys would chain their priorities).
        self.in_idle.d.next = (self.in_idle.q.val() & !self.start.val())
            | (self.in_gap.q.val() & self.ending.q.val());
        self.in_preamble_next.next =
            self.start.val() | (self.in_preamble.q.val() & !self.ending.q.val());
        self.in_preamble.d.next = self.in_preamble_next.val();
        self.in_header_next.next = (self.in_preamble.q.val() & self.ending.q.val())
            | (self.in_header.q.val() & !self.ending.q.val());
        self.in_header.d.next = self.in_header_next.val();
        self.in_payload.d.next = (self.in_header.q.val() & self.ending.q.val())
            | (self.in_payload.q.val() & !self.ending.q.val());
        // (frame_len + 1 < 60 after the last payload byte: padding.)
        self.in_pad.d.next =
            (self.in_payload.q.val() & self.ending.q.val() & !self.len_ge59.q.val())
                | (self.in_pad.q.val() & !self.ending.q.val());
        self.in_fcs.d.next =
            (self.in_payload.q.val() & self.ending.q.val() & self.len_ge59.q.val())
                | (self.in_pad.q.val() & self.ending.q.val())
                | (self.in_fcs.q.val() & !self.ending.q.val());
        self.in_gap.d.next = (self.in_fcs.q.val() & self.ending.q.val())
            | (self.in_gap.q.val() & !self.ending.q.val());
        // Whether the next clock is its state's last. Payload ends at
        // byte 3 of the last word; padding when 59 bytes are out after
        // this one (possibly right after the payload); the gap after 11
        // clocks, the 12th being the Idle clock that starts the next frame.
        self.ending_preamble.next =
            self.in_preamble.q.val() & !self.ending.q.val() & self.count_at_6.q.val();
        self.ending_header.next =
            self.in_header.q.val() & !self.ending.q.val() & self.count_at_penultimate.q.val();
        self.ending_payload.next = self.payload_at_2.q.val() & self.last_word.q.val();
        self.ending_pad.next = ((self.in_pad.q.val() & !self.ending.q.val())
            | (self.in_payload.q.val() & self.ending.q.val() & !self.len_ge59.q.val()))
            & self.len_at_58.q.val();
        self.ending_fcs.next = self.in_fcs.q.val() & !self.ending.q.val() & self.count_at_2.q.val();
        self.ending_gap.next = self.in_gap.q.val() & !self.ending.q.val() & self.count_at_9.q.val();
        self.ending_next.next = self.ending_preamble.val()
            | self.ending_header.val()
            | self.ending_payload.val()
            | self.ending_pad.val()
            | self.ending_fcs.val()
            | self.ending_gap.val();
        self.ending.d.next = self.ending_next.val();
        // The clocks since the state began (0 in its first), counted every
        // clock (no enable); read in the preamble, header, FCS and gap only.
        self.count_reset.next = self.start.val() | self.ending.q.val();
        self.count.d.next = self.count.q.val() + 1;
        if self.count_reset.val() {
            self.count.d.next = 0.into();
        }
        self.count_at_6.d.next = !self.count_reset.val() & (self.count.q.val() == 5);
        self.count_at_penultimate.d.next = !self.count_reset.val()
            & (((self.count.q.val() == self.before_penultimate_header_byte.val())
                & !self.frame_raw.q.val())
                | ((self.count.q.val() == self.before_penultimate_raw_byte.val())
                    & self.frame_raw.q.val()));
        self.count_at_2.d.next = !self.count_reset.val() & (self.count.q.val() == 1);
        self.count_at_9.d.next = !self.count_reset.val() & (self.count.q.val() == 8);
        // The frame's length from the header on, also counted every clock.
        self.frame_reset.next = self.in_preamble.q.val() & self.ending.q.val();
        self.frame_len.d.next = self.frame_len_inc.val();
        if self.frame_reset.val() {
            self.frame_len.d.next = 0.into();
        }
        self.len_at_58.d.next = !self.frame_reset.val() & (self.frame_len.q.val() == 57);
        // 58 = 0b0111010; below 64, 58..=63 are the values with bits 5..3
        // set and bit 2 or 1.
        self.len_ge59.d.next = !self.frame_reset.val()
            & (self.frame_len.q.val().get_bit(6)
                | (self.frame_len.q.val().get_bit(5)
                    & self.frame_len.q.val().get_bit(4)
                    & self.frame_len.q.val().get_bit(3)
                    & (self.frame_len.q.val().get_bit(2) | self.frame_len.q.val().get_bit(1))));
        // The payload's byte sources for the next clock: the first byte of
        // each word from the FIFO's head (the frame's first word may be the
        // injected LINE_HI instead), then three of `word`.
        self.read_now.d.next =
            (self.in_header.q.val() & self.ending.q.val() & !self.inject.q.val())
                | (self.in_payload.q.val() & (self.byte_index.q.val() == 3) & !self.ending.q.val());
        self.inject_now.d.next = self.in_header.q.val() & self.ending.q.val() & self.inject.q.val();
        self.word_shift.d.next = self.in_payload.q.val() & (self.byte_index.q.val() != 3);
        // Payload bytes count from 0 in each word (0 outside the payload).
        self.byte_index.d.next = 0.into();
        if self.in_payload.q.val() {
            self.byte_index.d.next = self.byte_index.q.val() + 1;
        }
        // The payload goes on (it is not ending) and its byte 1 is now.
        self.payload_at_2.d.next =
            self.in_payload.q.val() & !self.ending.q.val() & (self.byte_index.q.val() == 1);
        // Each state's byte, zero outside the state.
        self.preamble_byte.next = 0.into();
        self.header_byte.next = 0.into();
        self.payload_byte.next = 0.into();
        if self.in_preamble.q.val() {
            self.preamble_byte.next = 0x55.into();
            if self.ending.q.val() {
                self.preamble_byte.next = 0xd5.into();
            }
        }
        // The next clock's header byte: the template's, or the next field
        // byte (positions counted from the preamble's last clock on: a
        // clock advances the position if it is the preamble's last or in
        // the header, and a frame's start sets it to 0). The address is the
        // position the next clock reads, from the next clock's state.
        self.header_rom.clock.next = self.clock.val();
        // (The preamble's last clock comes next exactly when
        // `ending_preamble`: a start comes only in Idle, where nothing
        // ends, so the other states' endings need not be ORed in.)
        self.header_advance_next.next = self.ending_preamble.val() | self.in_header_next.val();
        self.header_addr_next.next = self.header_addr.q.val();
        if self.header_advance_next.val() {
            self.header_addr_next.next = self.header_addr_inc.q.val();
        }
        if self.start_next.val() {
            self.header_addr_next.next = 0.into();
        }
        self.header_addr.d.next = self.header_addr_next.val();
        // (`header_addr_next + 1` from the registers: the carry chain comes
        // before the pick, not after it.)
        self.header_addr_inc.d.next = self.header_addr_inc.q.val();
        if self.header_advance_next.val() {
            self.header_addr_inc.d.next = self.header_addr_inc.q.val() + 1;
        }
        if self.start_next.val() {
            self.header_addr_inc.d.next = 1.into();
        }
        self.header_rom.address.next = self.header_addr.q.val();
        self.header_word.clock.next = self.clock.val();
        self.header_word.d.next = self.header_rom.data.val();
        if self.in_header.q.val() {
            self.header_byte.next = self.header_word.q.val().get_bits::<8>(0);
            if self.header_word.q.val().get_bit(8) {
                self.header_byte.next = self.fields.q.val().get_bits::<8>(0);
                self.fields.d.next = self.fields.q.val() >> 8;
            }
        }
        // (The three sources never meet.)
        if self.word_shift.q.val() {
            self.payload_byte.next = self.word.q.val().get_bits::<8>(0);
            self.word.d.next = self.word.q.val() >> 8;
        }
        if self.inject_now.q.val() {
            self.payload_byte.next = self.inject_word.q.val().get_bits::<8>(0);
            self.word.d.next = self.inject_word.q.val() >> 8;
        }
        if self.read_now.q.val() {
            self.payload_byte.next = self.data.val().get_bits::<8>(0);
            self.word.d.next = self.data.val() >> 8;
        }
        if self.in_payload.q.val() & (self.byte_index.q.val() == 3) {
            self.words_left.d.next = self.words_left.q.val() - 1;
            self.last_word.d.next = self.words_left.q.val() == 2;
        }
        // The byte: an OR of the states' bytes (FCS and padding are zero
        // here).
        self.txd_reg.d.next =
            self.preamble_byte.val() | self.header_byte.val() | self.payload_byte.val();
        self.tx_en_reg.d.next = !self.in_idle.q.val() & !self.in_gap.q.val();
        // The CRC folds the byte in `txd_reg` a clock after it was chosen;
        // while the FCS goes out it shifts a byte per clock.
        self.crc_pending.d.next =
            self.in_header.q.val() | self.in_payload.q.val() | self.in_pad.q.val();
        self.crc_step.crc_in.next = self.crc.q.val();
        self.crc_step.data.next = self.txd_reg.q.val();
        self.fcs_out.d.next = self.in_fcs.q.val();
        // (The three cases never meet; the fold is tested last so that it
        // is the last multiplexer after the CRC step.)
        if self.start.val() {
            self.crc.d.next = 0xffff_ffff_u64.into();
        }
        if self.fcs_out.q.val() {
            self.crc.d.next = self.crc.q.val() >> 8;
        }
        if self.crc_pending.q.val() {
            self.crc.d.next = self.crc_step.crc_out.val();
        }
        self.txd_out.d.next = self.txd_reg.q.val();
        if self.fcs_out.q.val() {
            self.txd_out.d.next = !self.crc.q.val().get_bits::<8>(0);
        }
        self.tx_en_out.d.next = self.tx_en_reg.q.val();
        self.txd.next = self.txd_out.q.val();
        self.tx_en.next = self.tx_en_out.q.val();
        self.tx_er.next = false;
        self.underrun.next = self.underrun_reg.q.val();
        self.state_idle.next = self.in_idle.q.val();
        self.state_gap.next = self.in_gap.q.val();
    }
}
