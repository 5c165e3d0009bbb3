//! A minimal pcapng writer so Wireshark opens a port's capture: one section,
//! one Ethernet interface with nanosecond timestamps, an Enhanced Packet
//! Block per packet (the board's packet inside synthesized Ethernet/IPv4/UDP
//! headers with the board's default addresses).

use std::io::{self, Write};

use crate::frame::{build_udp_frame, UdpEndpoints, LINKTYPE_ETHERNET};

/// Writes pcapng blocks to `W`.
pub struct PcapngWriter<W: Write> {
    out: W,
    frame: Vec<u8>,
    endpoints: UdpEndpoints,
}

fn block(out: &mut impl Write, kind: u32, body: &[u8]) -> io::Result<()> {
    let padded = body.len().next_multiple_of(4);
    let total = (12 + padded) as u32;
    out.write_all(&kind.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..padded - body.len()])?;
    out.write_all(&total.to_le_bytes())
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and the interface description.
    pub fn new(
        mut out: W,
        interface_name: &str,
        board: u8,
        port: u8,
    ) -> io::Result<PcapngWriter<W>> {
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        block(&mut out, 0x0A0D_0D0A, &shb)?;
        let mut idb = Vec::new();
        idb.extend_from_slice(&(LINKTYPE_ETHERNET as u16).to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&0u32.to_le_bytes()); // no snap length limit
        let name = interface_name.as_bytes();
        idb.extend_from_slice(&2u16.to_le_bytes()); // if_name
        idb.extend_from_slice(&(name.len() as u16).to_le_bytes());
        idb.extend_from_slice(name);
        idb.resize(idb.len().next_multiple_of(4), 0);
        idb.extend_from_slice(&9u16.to_le_bytes()); // if_tsresol
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[9, 0, 0, 0]); // 10^-9 s
        idb.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        block(&mut out, 1, &idb)?;
        Ok(PcapngWriter {
            out,
            frame: Vec::with_capacity(9100),
            endpoints: UdpEndpoints::board_defaults(board, port),
        })
    }

    /// One packet received at `recv_ns`.
    pub fn write_packet(&mut self, recv_ns: u64, payload: &[u8]) -> io::Result<()> {
        self.frame.clear();
        build_udp_frame(&self.endpoints, payload, &mut self.frame);
        let len = self.frame.len() as u32;
        let padded = self.frame.len().next_multiple_of(4);
        let total = (32 + padded) as u32;
        let mut h = [0u8; 28];
        h[0..4].copy_from_slice(&6u32.to_le_bytes());
        h[4..8].copy_from_slice(&total.to_le_bytes());
        h[8..12].copy_from_slice(&0u32.to_le_bytes());
        h[12..16].copy_from_slice(&((recv_ns >> 32) as u32).to_le_bytes());
        h[16..20].copy_from_slice(&(recv_ns as u32).to_le_bytes());
        h[20..24].copy_from_slice(&len.to_le_bytes());
        h[24..28].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&self.frame)?;
        self.out.write_all(&[0u8; 3][..padded - self.frame.len()])?;
        self.out.write_all(&total.to_le_bytes())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer (its buffered blocks are in it already).
    pub fn into_inner(self) -> W {
        self.out
    }
}
