//! The board's packet: a 32-byte header and record words (format.md §5).
//!
//! `Packet<T>` is a zero-copy view over a byte buffer in the style of
//! smoltcp's `wire` module: `new_checked` validates once, after which no
//! accessor can panic. `PacketHeader` is the high-level representation with
//! symmetric `parse` and `emit`.

use crate::bytes::{put_u16, put_u64, u16_at, u64_at};
use crate::geometry::{Geometry, GeometryError};
use crate::record::{CorruptWord, RecordWord, TimedEvent, WordDecoder};

/// "HMTT".
pub const MAGIC: [u8; 4] = *b"HMTT";
/// Packet format version.
pub const VERSION: u8 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 32;
/// Largest `nwords`: a 9000-byte jumbo frame.
pub const MAX_WORDS_JUMBO: usize = 2235;
/// Largest `nwords` for a 1500-byte MTU.
pub const MAX_WORDS_MTU1500: usize = 360;
/// EtherType of raw-Ethernet board frames.
pub const ETHERTYPE: u16 = 0x88B5;
/// Default UDP destination port of board port 0 (port `p` uses `+ p`).
pub const UDP_BASE_PORT: u16 = 5000;

/// Header flag: tracing on.
pub const FLAG_TRACING: u8 = 1 << 0;
/// Header flag: tags-only mode.
pub const FLAG_TAGS_ONLY: u8 = 1 << 1;

/// Byte offsets of the header's fields (format.md §3), for the writers
/// that place them by hand (the HDL framer).
pub mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..4;
    pub const VERSION: usize = 4;
    pub const FLAGS: usize = 5;
    pub const BOARD: usize = 6;
    pub const PORT: usize = 7;
    pub const SEQ: Range<usize> = 8..16;
    pub const T0: Range<usize> = 16..24;
    pub const NWORDS: Range<usize> = 24..26;
    pub const ROW_BITS: usize = 26;
    pub const RANK_BANK: usize = 27;
    pub const COL_LINE_BITS: usize = 28;
    pub const RESERVED: usize = 29;
    pub const TICK_PS: Range<usize> = 30..32;
}

/// Why a packet was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("packet of {0} bytes is shorter than the {HEADER_LEN}-byte header")]
    Truncated(usize),
    #[error("bad magic {0:02x?}")]
    BadMagic([u8; 4]),
    #[error("unsupported packet version {0} (this build reads version {VERSION})")]
    BadVersion(u8),
    #[error("nwords {nwords} does not match a packet of {len} bytes")]
    BadLength { nwords: usize, len: usize },
    #[error("nwords {0} is outside 1..={MAX_WORDS_JUMBO}")]
    BadWordCount(usize),
    #[error("bad geometry in header: {0}")]
    BadGeometry(#[from] GeometryError),
}

/// A view of a packet over a byte buffer.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checks; accessors may panic on short buffers.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer after `check`.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, PacketError> {
        let p = Packet::new_unchecked(buffer);
        p.check()?;
        Ok(p)
    }

    /// Validates magic, version, length and geometry.
    pub fn check(&self) -> Result<(), PacketError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(PacketError::Truncated(b.len()));
        }
        let magic: [u8; 4] = b[field::MAGIC].try_into().expect("4 bytes");
        if magic != MAGIC {
            return Err(PacketError::BadMagic(magic));
        }
        if b[field::VERSION] != VERSION {
            return Err(PacketError::BadVersion(b[field::VERSION]));
        }
        let nwords = usize::from(u16_at(b, field::NWORDS));
        if nwords == 0 || nwords > MAX_WORDS_JUMBO {
            return Err(PacketError::BadWordCount(nwords));
        }
        if b.len() != HEADER_LEN + 4 * nwords {
            return Err(PacketError::BadLength {
                nwords,
                len: b.len(),
            });
        }
        self.geometry()?;
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    pub fn board(&self) -> u8 {
        self.buffer.as_ref()[field::BOARD]
    }
    pub fn port(&self) -> u8 {
        self.buffer.as_ref()[field::PORT]
    }
    pub fn seq(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::SEQ)
    }
    pub fn t0(&self) -> u64 {
        u64_at(self.buffer.as_ref(), field::T0)
    }
    pub fn nwords(&self) -> usize {
        usize::from(u16_at(self.buffer.as_ref(), field::NWORDS))
    }
    pub fn tick_ps(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::TICK_PS)
    }
    pub fn geometry(&self) -> Result<Geometry, GeometryError> {
        let b = self.buffer.as_ref();
        Geometry::from_header_bytes(
            b[field::ROW_BITS],
            b[field::RANK_BANK],
            b[field::COL_LINE_BITS],
        )
    }
    /// The `i`-th record word.
    #[inline]
    pub fn word(&self, i: usize) -> RecordWord {
        let off = HEADER_LEN + 4 * i;
        let b = self.buffer.as_ref();
        RecordWord::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
    }
    /// The record words in order.
    pub fn words(&self) -> impl Iterator<Item = RecordWord> + '_ {
        self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + 4 * self.nwords()]
            .chunks_exact(4)
            .map(|c| RecordWord::from_le_bytes([c[0], c[1], c[2], c[3]]))
    }
    /// Decodes the words into timed events; corrupt words are yielded as
    /// errors and decoding goes on.
    pub fn events(&self) -> impl Iterator<Item = Result<TimedEvent, CorruptWord>> + '_ {
        let mut dec = WordDecoder::new(self.t0());
        self.words().filter_map(move |w| dec.feed(w).transpose())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_seq(&mut self, seq: u64) {
        put_u64(self.buffer.as_mut(), field::SEQ, seq)
    }
    pub fn set_port(&mut self, port: u8) {
        self.buffer.as_mut()[field::PORT] = port;
    }
    pub fn set_t0(&mut self, t0: u64) {
        put_u64(self.buffer.as_mut(), field::T0, t0)
    }
    pub fn set_word(&mut self, i: usize, w: RecordWord) {
        let off = HEADER_LEN + 4 * i;
        self.buffer.as_mut()[off..off + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// The header as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketHeader {
    pub flags: u8,
    pub board: u8,
    pub port: u8,
    pub seq: u64,
    pub t0: u64,
    pub nwords: u16,
    pub geometry: Geometry,
    pub tick_ps: u16,
}

impl PacketHeader {
    /// Reads the header of a checked packet.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<PacketHeader, PacketError> {
        p.check()?;
        Ok(PacketHeader {
            flags: p.flags(),
            board: p.board(),
            port: p.port(),
            seq: p.seq(),
            t0: p.t0(),
            nwords: p.nwords() as u16,
            geometry: p.geometry()?,
            tick_ps: p.tick_ps(),
        })
    }

    /// Total packet length for this header.
    pub fn packet_len(&self) -> usize {
        HEADER_LEN + 4 * usize::from(self.nwords)
    }

    /// Writes the header into the first 32 bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[field::MAGIC].copy_from_slice(&MAGIC);
        b[field::VERSION] = VERSION;
        b[field::FLAGS] = self.flags;
        b[field::BOARD] = self.board;
        b[field::PORT] = self.port;
        put_u64(b, field::SEQ, self.seq);
        put_u64(b, field::T0, self.t0);
        put_u16(b, field::NWORDS, self.nwords);
        let (row, rank_bank, col) = self.geometry.header_bytes();
        b[field::ROW_BITS] = row;
        b[field::RANK_BANK] = rank_bank;
        b[field::COL_LINE_BITS] = col;
        b[field::RESERVED] = 0;
        put_u16(b, field::TICK_PS, self.tick_ps);
    }

    /// A whole packet: this header (with `nwords` set from `words`) and the words.
    pub fn build(&self, words: &[RecordWord]) -> Vec<u8> {
        let mut h = *self;
        h.nwords = words.len() as u16;
        let mut buf = vec![0u8; h.packet_len()];
        h.emit(&mut buf);
        for (chunk, w) in buf[HEADER_LEN..].chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BoardEvent, Opcode};
    use proptest::prelude::*;

    fn sample_header() -> PacketHeader {
        PacketHeader {
            flags: FLAG_TRACING,
            board: 2,
            port: 1,
            seq: 0x0102_0304_0506_0708,
            t0: 1_000_000,
            nwords: 2,
            geometry: Geometry::ddr3_default(),
            tick_ps: 1250,
        }
    }

    static SAMPLE: [u8; 40] = [
        b'H', b'M', b'T', b'T', 1, 1, 2, 1, // magic, version, flags, board, port
        8, 7, 6, 5, 4, 3, 2, 1, // seq
        0x40, 0x42, 0x0f, 0, 0, 0, 0, 0, // t0 = 1_000_000
        2, 0, 15, 0x13, 7, 0, 0xe2, 0x04, // nwords, row, rank|bank, col, rsvd, tick_ps
        0x05, 0, 0, 0x04, // ACCESS dt=1 line 5
        0x01, 0, 0x40, 0x0e, // CONTROL dt=3 TAG event 1
    ];

    #[test]
    fn parse_known_bytes() {
        let p = Packet::new_checked(&SAMPLE[..]).unwrap();
        let h = PacketHeader::parse(&p).unwrap();
        assert_eq!(h, sample_header());
        let ev: Vec<_> = p.events().map(Result::unwrap).collect();
        assert_eq!(
            ev,
            vec![
                TimedEvent {
                    tick: 1_000_001,
                    event: BoardEvent::Access {
                        line: 5,
                        write: false
                    }
                },
                TimedEvent {
                    tick: 1_000_004,
                    event: BoardEvent::Tag {
                        event: 1,
                        write: false
                    }
                },
            ]
        );
    }

    #[test]
    fn emit_known_bytes() {
        let words = [
            RecordWord::access(1, false, 5).unwrap(),
            RecordWord::control(3, Opcode::Tag, 1).unwrap(),
        ];
        assert_eq!(sample_header().build(&words), SAMPLE.to_vec());
    }

    #[test]
    fn impossible_packets_are_rejected() {
        assert_eq!(
            Packet::new_checked(&SAMPLE[..31]).unwrap_err(),
            PacketError::Truncated(31)
        );
        let mut bad = SAMPLE;
        bad[0] = b'X';
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(PacketError::BadMagic(_))
        ));
        let mut bad = SAMPLE;
        bad[4] = 2;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            PacketError::BadVersion(2)
        );
        assert!(matches!(
            Packet::new_checked(&SAMPLE[..39]),
            Err(PacketError::BadLength { nwords: 2, len: 39 })
        ));
        let mut bad = SAMPLE;
        bad[24] = 0;
        assert_eq!(
            Packet::new_checked(&bad[..]).unwrap_err(),
            PacketError::BadWordCount(0)
        );
        let mut bad = SAMPLE;
        bad[27] = 0x90; // rank_bits 9
        assert!(matches!(
            Packet::new_checked(&bad[..]),
            Err(PacketError::BadGeometry(_))
        ));
    }

    #[test]
    fn setters_edit_in_place() {
        let mut buf = SAMPLE.to_vec();
        let mut p = Packet::new_checked(&mut buf[..]).unwrap();
        p.set_seq(9);
        p.set_port(2);
        p.set_t0(77);
        p.set_word(1, RecordWord::control(0, Opcode::Cmd, 5).unwrap());
        assert_eq!(p.seq(), 9);
        assert_eq!(p.port(), 2);
        assert_eq!(p.t0(), 77);
        assert_eq!(p.word(1).opcode(), Opcode::Cmd);
    }

    proptest! {
        #[test]
        fn header_round_trip(
            flags in 0u8..4, board: u8, port: u8, seq: u64, t0: u64,
            nwords in 1u16..=(MAX_WORDS_JUMBO as u16), tick_ps: u16,
            g in (0u32..=3, 1u32..=4, 10u32..=18, 3u32..=8)
        ) {
            let geometry = Geometry::new(g.0, g.1, g.2, g.3).unwrap();
            let h = PacketHeader { flags, board, port, seq, t0, nwords, geometry, tick_ps };
            let words = vec![RecordWord(0x1234_5678); usize::from(nwords)];
            let bytes = h.build(&words);
            let p = Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(PacketHeader::parse(&p).unwrap(), h);
            prop_assert!(p.words().all(|w| w == RecordWord(0x1234_5678)));
        }
    }
}
