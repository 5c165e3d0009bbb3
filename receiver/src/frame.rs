//! Link-layer framing around the board's packets: finding the HMTT payload in
//! a captured frame (Ethernet, 802.1Q, Linux cooked, raw IPv4; UDP/IPv4 or
//! EtherType 0x88B5), and building Ethernet/IPv4/UDP frames for pcapng output
//! and tests. The HMTT payload itself is never interpreted here.

use hmtt_format::packet::{ETHERTYPE, HEADER_LEN};

/// pcap link types this module reads.
pub const LINKTYPE_NULL: i32 = 0;
pub const LINKTYPE_ETHERNET: i32 = 1;
pub const LINKTYPE_RAW: i32 = 101;
pub const LINKTYPE_LINUX_SLL: i32 = 113;
pub const LINKTYPE_IPV4: i32 = 228;
pub const LINKTYPE_LINUX_SLL2: i32 = 276;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;
const IPPROTO_UDP: u8 = 17;
/// Shortest Ethernet payload: shorter frames are padded up to it.
const MIN_ETH_PAYLOAD: usize = 46;

/// What a captured frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A candidate HMTT payload (to be checked by `Packet::new_checked`).
    Payload(&'a [u8]),
    /// UDP/IPv4 or 0x88B5 but not usable whole (IP fragment, cut by the snap length).
    Broken(&'a [u8]),
    /// UDP/IPv4 whose IPv4 header checksum is wrong (a receive path that
    /// sees datagrams before the kernel's IP layer checks it: the ring).
    Corrupt(&'a [u8]),
    /// Something else (ARP, IPv6, other UDP ports): not the board's.
    Other,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Finds the HMTT payload in a frame of link type `linktype`. `udp_port`:
/// only UDP datagrams to this destination port count (all if `None`).
pub fn extract(linktype: i32, frame: &[u8], udp_port: Option<u16>) -> Frame<'_> {
    match linktype {
        LINKTYPE_ETHERNET => {
            let mut off = 12;
            let Some(mut et) = be16(frame, off) else {
                return Frame::Other;
            };
            while et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ {
                off += 4;
                let Some(e) = be16(frame, off) else {
                    return Frame::Other;
                };
                et = e;
            }
            ethertype_payload(et, &frame[off + 2..], udp_port)
        }
        LINKTYPE_LINUX_SLL => match be16(frame, 14) {
            Some(et) if frame.len() >= 16 => ethertype_payload(et, &frame[16..], udp_port),
            _ => Frame::Other,
        },
        LINKTYPE_LINUX_SLL2 => match be16(frame, 0) {
            Some(et) if frame.len() >= 20 => ethertype_payload(et, &frame[20..], udp_port),
            _ => Frame::Other,
        },
        LINKTYPE_RAW | LINKTYPE_IPV4 | 12 | 14 => ipv4_payload(frame, udp_port),
        LINKTYPE_NULL if frame.len() >= 4 => {
            let family = u32::from_ne_bytes([frame[0], frame[1], frame[2], frame[3]]);
            if family == 2 {
                ipv4_payload(&frame[4..], udp_port)
            } else {
                Frame::Other
            }
        }
        _ => Frame::Other,
    }
}

fn ethertype_payload(et: u16, rest: &[u8], udp_port: Option<u16>) -> Frame<'_> {
    match et {
        ETHERTYPE => {
            // Ethernet pads short frames; the packet header says how long it is.
            if rest.len() == MIN_ETH_PAYLOAD && rest.len() >= HEADER_LEN {
                let nwords = usize::from(u16::from_le_bytes([rest[24], rest[25]]));
                let n = HEADER_LEN + 4 * nwords;
                if n < rest.len() && rest[n..].iter().all(|&b| b == 0) {
                    return Frame::Payload(&rest[..n]);
                }
            }
            Frame::Payload(rest)
        }
        ETHERTYPE_IPV4 => ipv4_payload(rest, udp_port),
        _ => Frame::Other,
    }
}

fn ipv4_payload(ip: &[u8], udp_port: Option<u16>) -> Frame<'_> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != IPPROTO_UDP {
        return Frame::Other;
    }
    let ihl = usize::from(ip[0] & 0xF) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ihl < 20 || total < ihl {
        return Frame::Other;
    }
    let frag = u16::from_be_bytes([ip[6], ip[7]]);
    let fragmented = frag & 0x2000 != 0 || frag & 0x1FFF != 0;
    // Bytes beyond `total` are Ethernet padding.
    let ip = &ip[..total.min(ip.len())];
    let udp = &ip[ihl.min(ip.len())..];
    let Some(dst) = be16(udp, 2) else {
        return Frame::Other;
    };
    if fragmented {
        // Only the first fragment has the UDP header; keep what there is.
        return if udp_port.is_none_or(|p| p == dst) {
            Frame::Broken(udp)
        } else {
            Frame::Other
        };
    }
    if udp_port.is_some_and(|p| p != dst) {
        return Frame::Other;
    }
    let Some(ulen) = be16(udp, 4) else {
        return Frame::Other;
    };
    let ulen = usize::from(ulen);
    if ulen < 8 || total < ihl + ulen {
        return Frame::Broken(&udp[8.min(udp.len())..]);
    }
    if udp.len() < ulen {
        return Frame::Broken(&udp[8.min(udp.len())..]);
    }
    Frame::Payload(&udp[8..ulen])
}

/// [`extract`] of an IPv4 datagram (link type [`LINKTYPE_IPV4`]) that
/// no IP layer has checked: the board's datagram with a wrong IPv4 header
/// checksum is [`Frame::Corrupt`], as the kernel's IP layer would drop it.
pub fn extract_unchecked_ipv4(ip: &[u8], udp_port: Option<u16>) -> Frame<'_> {
    match ipv4_payload(ip, udp_port) {
        Frame::Payload(p) | Frame::Broken(p) if !ipv4_header_checksum_ok(ip) => Frame::Corrupt(p),
        frame => frame,
    }
}

/// Whether the IPv4 header at the start of `ip` sums right: the one's
/// complement sum of its 16-bit words, checksum included, is 0xFFFF.
fn ipv4_header_checksum_ok(ip: &[u8]) -> bool {
    let ihl = ip.first().map_or(0, |b| usize::from(b & 0xF) * 4);
    ip.get(..ihl)
        .filter(|h| h.len() >= 20)
        .is_some_and(|header| ipv4_header_checksum(header) == 0)
}

/// The one's complement of the one's complement sum of `header`'s 16-bit
/// words (RFC 791): the checksum to write into a header whose checksum
/// field is 0, and 0 for a header that sums right.
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks_exact(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Addresses of a synthesized UDP/IPv4 frame.
#[derive(Debug, Clone, Copy)]
pub struct UdpEndpoints {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpEndpoints {
    /// The board's defaults for `port` (format.md §5.1).
    pub fn board_defaults(board: u8, port: u8) -> UdpEndpoints {
        UdpEndpoints {
            src_mac: [0x02, 0x48, 0x4d, 0x54, board, port],
            dst_mac: [0x02, 0x48, 0x4d, 0x54, 0xff, 0xff],
            src_ip: [10, 0, 0, 10u8.wrapping_add(port)],
            dst_ip: [10, 0, 0, 1],
            src_port: 0x4854 + u16::from(port),
            dst_port: hmtt_format::packet::UDP_BASE_PORT + u16::from(port),
        }
    }
}

/// Length of the Ethernet + IPv4 + UDP headers.
pub const UDP_FRAME_OVERHEAD: usize = 14 + 20 + 8;

/// Appends an Ethernet/IPv4/UDP frame carrying `payload` to `out` (UDP checksum 0).
pub fn build_udp_frame(ep: &UdpEndpoints, payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&ep.dst_mac);
    out.extend_from_slice(&ep.src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    ip[12..16].copy_from_slice(&ep.src_ip);
    ip[16..20].copy_from_slice(&ep.dst_ip);
    let checksum = ipv4_header_checksum(&ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    out.extend_from_slice(&ip);
    out.extend_from_slice(&ep.src_port.to_be_bytes());
    out.extend_from_slice(&ep.dst_port.to_be_bytes());
    out.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
}

/// A raw Ethernet frame with EtherType 0x88B5 carrying `payload`, padded to
/// the minimum frame size.
pub fn build_raw_frame(src_mac: [u8; 6], dst_mac: [u8; 6], payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len().max(MIN_ETH_PAYLOAD));
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&ETHERTYPE.to_be_bytes());
    f.extend_from_slice(payload);
    f.resize(14 + payload.len().max(MIN_ETH_PAYLOAD), 0);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_frame_round_trip_and_port_filter() {
        let ep = UdpEndpoints::board_defaults(1, 2);
        let mut f = Vec::new();
        build_udp_frame(&ep, b"HMTT-payload", &mut f);
        assert_eq!(
            extract(LINKTYPE_ETHERNET, &f, None),
            Frame::Payload(b"HMTT-payload")
        );
        assert_eq!(
            extract(LINKTYPE_ETHERNET, &f, Some(5002)),
            Frame::Payload(b"HMTT-payload")
        );
        assert_eq!(extract(LINKTYPE_ETHERNET, &f, Some(5003)), Frame::Other);
        // raw IP link type and Ethernet padding after the IP packet
        assert_eq!(
            extract(LINKTYPE_RAW, &f[14..], None),
            Frame::Payload(b"HMTT-payload")
        );
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 10]);
        assert_eq!(
            extract(LINKTYPE_ETHERNET, &padded, None),
            Frame::Payload(b"HMTT-payload")
        );
        // a VLAN tag
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&f[12..]);
        assert_eq!(
            extract(LINKTYPE_ETHERNET, &tagged, None),
            Frame::Payload(b"HMTT-payload")
        );
        // cut by the snap length
        assert!(matches!(
            extract(LINKTYPE_ETHERNET, &f[..f.len() - 3], None),
            Frame::Broken(_)
        ));
        // a fragment
        let mut frag = f.clone();
        frag[14 + 6] = 0x20;
        assert!(matches!(
            extract(LINKTYPE_ETHERNET, &frag, None),
            Frame::Broken(_)
        ));
        // IP header checksum is right: the one's complement sum over the header is 0xFFFF
        let s: u32 = f[14..34]
            .chunks_exact(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        assert_eq!((s & 0xFFFF) + (s >> 16), 0xFFFF);
    }

    #[test]
    fn a_wrong_ipv4_header_checksum_is_corrupt_where_unchecked() {
        let ep = UdpEndpoints::board_defaults(1, 2);
        let mut f = Vec::new();
        build_udp_frame(&ep, b"HMTT-payload", &mut f);
        let ip = &f[14..];
        assert_eq!(
            extract_unchecked_ipv4(ip, Some(5002)),
            Frame::Payload(b"HMTT-payload")
        );
        // The checksum itself, the TTL, an address: the same datagram, but
        // its header does not sum right.
        for byte in [10, 11, 8, 12, 19] {
            let mut bad = ip.to_vec();
            bad[byte] ^= 0x10;
            assert_eq!(
                extract_unchecked_ipv4(&bad, None),
                Frame::Corrupt(b"HMTT-payload"),
                "byte {byte}"
            );
            // The pcap path keeps reading frames as they are.
            assert_eq!(
                extract(LINKTYPE_IPV4, &bad, None),
                Frame::Payload(b"HMTT-payload")
            );
        }
        // Another port's datagram stays another's, checksum or not.
        let mut bad = ip.to_vec();
        bad[10] ^= 1;
        assert_eq!(extract_unchecked_ipv4(&bad, Some(5003)), Frame::Other);
    }

    #[test]
    fn raw_frames_and_padding() {
        let header = hmtt_format::packet::PacketHeader {
            flags: 0,
            board: 0,
            port: 0,
            seq: 0,
            t0: 0,
            nwords: 1,
            geometry: hmtt_format::geometry::Geometry::ddr3_default(),
            tick_ps: 1250,
        };
        let p = header.build(&[hmtt_format::record::RecordWord(7)]);
        let f = build_raw_frame([2; 6], [3; 6], &p);
        assert_eq!(f.len(), 60);
        assert_eq!(extract(LINKTYPE_ETHERNET, &f, None), Frame::Payload(&p[..]));
        let other = [0u8; 60];
        assert_eq!(extract(LINKTYPE_ETHERNET, &other, None), Frame::Other);
    }
}
