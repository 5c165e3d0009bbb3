//! Helpers shared by the receiver's integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use hmtt_format::geometry::Geometry;
use hmtt_format::packet::{PacketHeader, FLAG_TRACING};
use hmtt_format::record::{Opcode, RecordWord};
use hmtt_receiver::read::{port_files, CaptureFile};

/// One board packet: the port it is dealt to and its bytes.
#[derive(Debug, Clone)]
pub struct SimPacket {
    pub port: u8,
    pub seq: u64,
    pub bytes: Vec<u8>,
}

/// A board's stream: `count` packets dealt round-robin to `ports` ports,
/// sizes varying up to `max_words`, every 7th packet with a LOST word.
/// Returns the packets and the number of LOST words in them.
pub fn board_stream(board: u8, ports: u8, count: u64, max_words: usize) -> (Vec<SimPacket>, u64) {
    let mut lost_words = 0;
    let mut out = Vec::new();
    let mut t0 = 1_000u64;
    for seq in 0..count {
        let port = (seq % u64::from(ports)) as u8;
        let n = 1 + (seq as usize * 37) % max_words;
        let mut words: Vec<RecordWord> = (0..n)
            .map(|i| {
                RecordWord::access_unchecked(
                    (i % 64) as u32,
                    i % 3 == 0,
                    (seq * 1000 + i as u64) & 0xFF_FFFF,
                )
            })
            .collect();
        if seq % 7 == 3 {
            words[0] = RecordWord::control_unchecked(0, Opcode::Lost, 5);
            lost_words += 1;
        }
        let h = PacketHeader {
            flags: FLAG_TRACING,
            board,
            port,
            seq,
            t0,
            nwords: n as u16,
            geometry: Geometry::ddr3_default(),
            tick_ps: 1250,
        };
        t0 += 500;
        out.push(SimPacket {
            port,
            seq,
            bytes: h.build(&words),
        });
    }
    (out, lost_words)
}

/// The packets in a port's stripe files, in order.
pub fn captured(dirs: &[PathBuf], name: &str, port: u8) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for f in port_files(dirs, name, port).unwrap() {
        let cf = CaptureFile::open(&f).unwrap();
        let (pkts, end) = cf.packets().unwrap();
        assert_eq!(
            end,
            hmtt_format::capture::CaptureEnd::Clean,
            "{}",
            f.display()
        );
        v.extend(pkts.into_iter().map(|p| p.to_vec()));
    }
    v
}

/// The packets of one port, in order.
pub fn for_port(stream: &[SimPacket], port: u8) -> Vec<Vec<u8>> {
    stream
        .iter()
        .filter(|p| p.port == port)
        .map(|p| p.bytes.clone())
        .collect()
}
