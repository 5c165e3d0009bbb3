//! Test support shared by the packet-path and board tests: a small
//! deterministic random source, frames built independently of the framer,
//! and the `tshark` check of a pcap file.
#![allow(dead_code)]

use hmtt_format::record::Opcode;
use hmtt_format::RecordWord;
use hmtt_hdl::crc32::ethernet_fcs;
use hmtt_hdl::framer::FramerConfig;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A 64-bit linear congruential generator (Knuth's MMIX constants).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 16
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn line_hi_word(hi: u32) -> RecordWord {
    RecordWord::control(0, Opcode::LineHi, hi).unwrap()
}

/// Where tests leave files for other tools (pcap files for the receiver).
pub fn output_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hmtt-hdl");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ones_complement_sum(bytes: &[u8]) -> u16 {
    let mut s: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The whole frame (destination MAC through FCS) carrying `payload`, built
/// byte by byte from the addresses of `config`.
pub fn expected_frame(config: &FramerConfig, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![];
    f.extend_from_slice(&config.dst_mac);
    f.extend_from_slice(&config.src_mac);
    if config.raw_ethernet {
        f.extend_from_slice(&[0x88, 0xb5]);
        f.extend_from_slice(payload);
        while f.len() < 60 {
            f.push(0);
        }
    } else {
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + 8 + payload.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        ip.extend_from_slice(&config.src_ip);
        ip.extend_from_slice(&config.dst_ip);
        let csum = !ones_complement_sum(&ip);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&config.src_udp_port.to_be_bytes());
        f.extend_from_slice(&config.dst_udp_port.to_be_bytes());
        f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
    }
    let fcs = ethernet_fcs(&f);
    f.extend_from_slice(&fcs.to_le_bytes());
    f
}

/// One frame as tshark dissected it.
#[derive(Debug)]
pub struct TsharkRow {
    pub ip_src: String,
    pub ip_dst: String,
    pub udp_src: u16,
    pub udp_dst: u16,
    pub payload: Vec<u8>,
}

fn hex_bytes(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn tshark() -> Command {
    let mut c = Command::new("tshark");
    c.args([
        "-o",
        "eth.fcs:TRUE",
        "-o",
        "eth.check_fcs:TRUE",
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
    ]);
    c
}

/// Reads `path` with tshark, FCS and IPv4 checksum checking on. Fails the
/// test if tshark is missing, if any frame's FCS or IPv4 checksum is not
/// good, or if tshark reports any expert warning or error.
pub fn tshark_check(path: &Path) -> Vec<TsharkRow> {
    let out = tshark()
        .arg("-r")
        .arg(path)
        .args(["-T", "fields", "-E", "separator=|"])
        .args(["-e", "eth.fcs.status", "-e", "ip.checksum.status"])
        .args([
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "udp.srcport",
            "-e",
            "udp.dstport",
        ])
        .args(["-e", "udp.payload"])
        .output()
        .expect("tshark is needed for this test (apt-get install tshark)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<TsharkRow> = text
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            assert_eq!(f.len(), 7, "unexpected tshark line {line:?}");
            // Wireshark checksum status: 0 bad, 1 good, 2 unverified.
            assert_eq!(f[0], "1", "FCS not good: {line}");
            assert_eq!(f[1], "1", "IPv4 checksum not good: {line}");
            TsharkRow {
                ip_src: f[2].to_string(),
                ip_dst: f[3].to_string(),
                udp_src: f[4].parse().unwrap(),
                udp_dst: f[5].parse().unwrap(),
                payload: hex_bytes(f[6]),
            }
        })
        .collect();
    let expert = tshark()
        .arg("-r")
        .arg(path)
        .args(["-q", "-z", "expert,warn"])
        .output()
        .expect("tshark is needed for this test");
    let expert = String::from_utf8_lossy(&expert.stdout);
    assert!(
        !expert.contains("Warns") && !expert.contains("Errors"),
        "tshark expert info:\n{expert}"
    );
    rows
}
