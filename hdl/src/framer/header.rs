//! What a port's framer sends before the records, fixed at build time:
//! its addresses and ports ([`FramerConfig`]), the Ethernet, IPv4, UDP
//! and HMTT header template, and the IPv4 header checksum over it.

use super::*;

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
            ETHERNET_HEADER_BYTES
        } else {
            ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_ONLY_HEADER_BYTES
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
        h[udp_field::IPV4]
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
