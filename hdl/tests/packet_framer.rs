//! The framer alone: GMII bytes against frames built independently here,
//! the frame pacing the drain rate assumes, and a pcap file that `tshark`
//! must read as valid Ethernet/IPv4/UDP with correct IPv4 checksums and
//! FCS, whose UDP payloads are the HMTT packets `hmtt-format` builds.

mod eth_support;

use eth_support::*;
use hmtt_format::{Geometry, PacketHeader, RecordWord};
use hmtt_hdl::framer::{Framer, FramerConfig, UDP_FRAME_OVERHEAD};
use hmtt_hdl::gmii::GmiiDecoder;
use hmtt_hdl::packetizer::Descriptor;
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// The framer with software FIFOs in front of it and a GMII decoder behind.
struct Bench {
    uut: Framer,
    descs: VecDeque<Descriptor>,
    data: VecDeque<u32>,
    gmii: GmiiDecoder,
}

impl Bench {
    fn new(config: &FramerConfig) -> Bench {
        Bench::with_framer(Framer::new(config))
    }

    fn with_framer(mut uut: Framer) -> Bench {
        uut.connect_all();
        Bench {
            uut,
            descs: VecDeque::new(),
            data: VecDeque::new(),
            gmii: GmiiDecoder::new(),
        }
    }

    fn cycle(&mut self) {
        let u = &mut self.uut;
        u.desc_empty.next = self.descs.is_empty();
        u.desc_data.next = self.descs.front().map(|d| d.pack()).unwrap_or_default();
        u.data_empty.next = self.data.is_empty();
        u.data.next = (self.data.front().copied().unwrap_or(0) as u64).into();
        assert!(simulate(u, 100));
        let desc_read = u.desc_read.val();
        let data_read = u.data_read.val();
        u.clock.next = Clock { clk: true };
        assert!(simulate(u, 100));
        if desc_read {
            self.descs.pop_front();
        }
        if data_read {
            self.data.pop_front();
        }
        let txd: u64 = u.txd.val().into();
        self.gmii.sample(u.tx_en.val(), u.tx_er.val(), txd as u8);
        u.clock.next = Clock { clk: false };
        assert!(simulate(u, 100));
    }

    fn run_until_idle(&mut self, max_cycles: usize) {
        let mut idle = 0;
        for _ in 0..max_cycles {
            self.cycle();
            idle = if self.gmii.in_frame() || !self.descs.is_empty() {
                0
            } else {
                idle + 1
            };
            if idle > 20 {
                return;
            }
        }
        panic!("framer did not finish within {max_cycles} cycles");
    }
}

struct TestPacket {
    desc: Descriptor,
    /// The words in the data FIFO (without the injected LINE_HI).
    words: Vec<u32>,
}

fn packets(rng: &mut Lcg) -> Vec<TestPacket> {
    let mut out = vec![];
    for (nwords, hi) in [(1u16, 0u32), (2, 0x1234), (3, 0), (360, 0x1f_ffff), (17, 0)] {
        let data_words = nwords - u16::from(hi != 0);
        out.push(TestPacket {
            desc: Descriptor {
                t0: rng.next() ^ rng.next() << 32,
                nwords,
                flags: (rng.next() & 3) as u8,
                line_hi: hi,
            },
            words: (0..data_words).map(|_| rng.next() as u32).collect(),
        });
    }
    out
}

fn expected_payload(config: &FramerConfig, seq: u64, p: &TestPacket) -> Vec<u8> {
    let mut words = vec![];
    if p.desc.line_hi != 0 {
        words.push(line_hi_word(p.desc.line_hi));
    }
    words.extend(p.words.iter().map(|&w| RecordWord(w)));
    PacketHeader {
        flags: p.desc.flags,
        board: config.board_id,
        port: config.port_id,
        seq,
        t0: p.desc.t0,
        nwords: words.len() as u16,
        geometry: config.geometry,
        tick_ps: config.tick_ps,
    }
    .build(&words)
}

fn run(config: &FramerConfig, seed: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<u64>) {
    let mut rng = Lcg(seed);
    let pkts = packets(&mut rng);
    let mut bench = Bench::new(config);
    for p in &pkts {
        bench.descs.push_back(p.desc);
        bench.data.extend(p.words.iter().copied());
    }
    bench.run_until_idle(10_000);
    assert!(bench.gmii.errors().is_empty(), "{:?}", bench.gmii.errors());
    assert!(!bench.uut.underrun.val());
    let frames = bench.gmii.take_frames();
    let starts = frames.iter().map(|f| f.start_clock).collect();
    let got = frames.into_iter().map(|f| f.bytes).collect();
    let expected = pkts
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let seq = k as u64 * config.ports as u64 + config.port_id as u64;
            expected_frame(config, &expected_payload(config, seq, p))
        })
        .collect();
    (got, expected, starts)
}

fn ddr3() -> Geometry {
    Geometry::preset("ddr3-4g").unwrap()
}

#[test]
fn udp_frames_match_independently_built_frames() {
    let config = FramerConfig::board_default(7, 1, 3, ddr3(), 1250);
    let (got, expected, starts) = run(&config, 1);
    assert_eq!(got.len(), expected.len());
    for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "frame {k}");
    }
    // Back to back, a frame takes exactly 4 * nwords + 98 byte times.
    for (k, w) in starts.windows(2).enumerate() {
        let payload_words = (got[k].len() - 4 - 14 - 20 - 8 - 32) / 4;
        assert_eq!(w[1] - w[0], (4 * payload_words + UDP_FRAME_OVERHEAD) as u64);
    }
}

#[test]
fn raw_ethernet_frames_are_padded_to_the_minimum() {
    let mut config = FramerConfig::board_default(0, 0, 1, ddr3(), 1250);
    config.raw_ethernet = true;
    let (got, expected, _) = run(&config, 2);
    assert_eq!(got, expected);
    // One word: 14 + 32 + 4 = 50 bytes, padded to 60, plus the FCS.
    assert_eq!(got[0].len(), 64);
}

#[test]
fn tshark_reads_valid_ethernet_ipv4_udp_with_hmtt_payloads() {
    let config = FramerConfig::board_default(3, 2, 3, ddr3(), 1250);
    let (got, _, _) = run(&config, 3);
    let path = output_dir().join("packet_framer_udp.pcap");
    hmtt_hdl::gmii::write_pcap(std::fs::File::create(&path).unwrap(), &got, 10_000).unwrap();
    let rows = tshark_check(&path);
    assert_eq!(rows.len(), got.len());
    let mut rng = Lcg(3);
    let pkts = packets(&mut rng);
    for (k, row) in rows.iter().enumerate() {
        let seq = k as u64 * 3 + 2;
        assert_eq!(row.udp_src, 0x4854 + 2);
        assert_eq!(row.udp_dst, 5002);
        assert_eq!(row.ip_src, "10.0.0.12");
        assert_eq!(row.ip_dst, "10.0.0.1");
        assert_eq!(
            row.payload,
            expected_payload(&config, seq, &pkts[k]),
            "frame {k}"
        );
    }
}

/// `seq` is kept in 16-bit pieces whose carries ripple a piece per clock;
/// packets crossing 2^16, 2^32 and 2^48 still carry `first + k * ports`.
#[test]
fn seq_carries_through_its_pieces() {
    let config = FramerConfig::board_default(0, 1, 3, ddr3(), 1250);
    let first = 0x0000_ffff_ffff_fffa_u64;
    let mut bench = Bench::with_framer(Framer::with_first_seq(&config, first));
    let mut rng = Lcg(4);
    let pkts = packets(&mut rng);
    for p in &pkts {
        bench.descs.push_back(p.desc);
        bench.data.extend(p.words.iter().copied());
    }
    bench.run_until_idle(10_000);
    let frames = bench.gmii.take_frames();
    assert_eq!(frames.len(), pkts.len());
    for (k, (f, p)) in frames.iter().zip(&pkts).enumerate() {
        let seq = first + 3 * k as u64;
        assert_eq!(
            f.bytes,
            expected_frame(&config, &expected_payload(&config, seq, p)),
            "frame {k}, seq {seq:#x}"
        );
    }
    // The second frame's seq crossed all three piece boundaries.
    assert_eq!(first + 3 * 2, 0x0001_0000_0000_0000);
}

#[test]
fn framer_is_synthesizable() {
    let mut uut = Framer::new(&FramerConfig::board_default(0, 0, 3, ddr3(), 1250));
    uut.connect_all();
    yosys_validate("hmtt_framer", &generate_verilog(&uut)).unwrap();
}
