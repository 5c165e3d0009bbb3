//! GMII transmit side: the framer ([`crate::framer::Framer`]) drives
//! `txd`/`tx_en`/`tx_er` from registers, one byte per 125 MHz clock, and
//! the board top forwards its Ethernet clock as `gtx_clk`. This module holds
//! the software end of that interface, used by simulations: a decoder that
//! turns the per-clock byte stream back into frames (checking preamble, SFD
//! and the inter-frame gap), and a pcap writer for the frames.

use std::io::{self, Write};

/// Preamble bytes before the SFD.
pub const PREAMBLE: [u8; 7] = [0x55; 7];
/// Start-of-frame delimiter.
pub const SFD: u8 = 0xd5;
/// Minimum idle byte times between frames.
pub const MIN_GAP: usize = 12;

/// What went wrong on the wire, by clock index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GmiiError {
    /// A frame did not start with seven 0x55 bytes and 0xD5.
    BadPreamble { clock: u64 },
    /// Fewer than [`MIN_GAP`] idle clocks before a frame.
    ShortGap { clock: u64, gap: usize },
    /// `tx_er` was asserted.
    TxError { clock: u64 },
}

/// One frame as seen on the wire: from the destination MAC through the FCS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireFrame {
    /// Clock index of the first preamble byte.
    pub start_clock: u64,
    pub bytes: Vec<u8>,
}

/// Reassembles frames from GMII samples, one call per transmit clock.
#[derive(Debug, Default)]
pub struct GmiiDecoder {
    clock: u64,
    idle: usize,
    seen_frame: bool,
    current: Option<(u64, Vec<u8>)>,
    frames: Vec<WireFrame>,
    errors: Vec<GmiiError>,
}

impl GmiiDecoder {
    pub fn new() -> GmiiDecoder {
        GmiiDecoder::default()
    }

    /// The sample `(tx_en, tx_er, txd)` of one clock.
    pub fn sample(&mut self, tx_en: bool, tx_er: bool, txd: u8) {
        if tx_er {
            self.errors.push(GmiiError::TxError { clock: self.clock });
        }
        if tx_en {
            match &mut self.current {
                Some((_, bytes)) => bytes.push(txd),
                None => {
                    if self.seen_frame && self.idle < MIN_GAP {
                        self.errors.push(GmiiError::ShortGap {
                            clock: self.clock,
                            gap: self.idle,
                        });
                    }
                    self.current = Some((self.clock, vec![txd]));
                }
            }
            self.idle = 0;
        } else {
            self.idle += 1;
            if let Some((start, bytes)) = self.current.take() {
                self.finish(start, bytes);
            }
        }
        self.clock += 1;
    }

    fn finish(&mut self, start_clock: u64, bytes: Vec<u8>) {
        self.seen_frame = true;
        if bytes.len() < 8 || bytes[..7] != PREAMBLE || bytes[7] != SFD {
            self.errors
                .push(GmiiError::BadPreamble { clock: start_clock });
            return;
        }
        self.frames.push(WireFrame {
            start_clock,
            bytes: bytes[8..].to_vec(),
        });
    }

    /// Frames completed so far, taken out of the decoder.
    pub fn take_frames(&mut self) -> Vec<WireFrame> {
        std::mem::take(&mut self.frames)
    }

    pub fn errors(&self) -> &[GmiiError] {
        &self.errors
    }

    /// Whether a frame is being received right now.
    pub fn in_frame(&self) -> bool {
        self.current.is_some()
    }
}

/// Writes `frames` (each with its FCS) as a pcap file, link type Ethernet,
/// one frame every `spacing_ns` nanoseconds from time 0.
pub fn write_pcap<W: Write>(mut out: W, frames: &[Vec<u8>], spacing_ns: u64) -> io::Result<()> {
    // Nanosecond-resolution pcap magic, version 2.4, snaplen 65535, Ethernet.
    out.write_all(&0xa1b2_3c4d_u32.to_le_bytes())?;
    out.write_all(&2u16.to_le_bytes())?;
    out.write_all(&4u16.to_le_bytes())?;
    out.write_all(&0i32.to_le_bytes())?;
    out.write_all(&0u32.to_le_bytes())?;
    out.write_all(&65535u32.to_le_bytes())?;
    out.write_all(&1u32.to_le_bytes())?;
    for (i, f) in frames.iter().enumerate() {
        let t = i as u64 * spacing_ns;
        let len = f.len() as u32;
        out.write_all(&((t / 1_000_000_000) as u32).to_le_bytes())?;
        out.write_all(&((t % 1_000_000_000) as u32).to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(d: &mut GmiiDecoder, bytes: &[u8], gap: usize) {
        for &b in bytes {
            d.sample(true, false, b);
        }
        for _ in 0..gap {
            d.sample(false, false, 0);
        }
    }

    #[test]
    fn decoder_strips_preamble_and_checks_the_gap() {
        let mut d = GmiiDecoder::new();
        let mut f = PREAMBLE.to_vec();
        f.push(SFD);
        f.extend_from_slice(&[1, 2, 3]);
        send(&mut d, &f, 12);
        send(&mut d, &f, 5);
        send(&mut d, &f, 1);
        let frames = d.take_frames();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0].bytes, vec![1, 2, 3]);
        assert_eq!(frames[1].start_clock, 23);
        assert_eq!(d.errors(), &[GmiiError::ShortGap { clock: 39, gap: 5 }]);
    }

    #[test]
    fn decoder_rejects_a_bad_preamble() {
        let mut d = GmiiDecoder::new();
        send(&mut d, &[0x55, 0x55, 0xd5, 1, 2], 12);
        assert!(d.take_frames().is_empty());
        assert_eq!(d.errors(), &[GmiiError::BadPreamble { clock: 0 }]);
    }
}
