//! Co-simulation of the whole board core (`BoardTop`: capture chain,
//! packetizer, per-port clock-domain crossing, framers) against the golden
//! model (`hmtt_sim::board::Board`): random legal command streams go in on
//! the DDR pins, Ethernet frames come out of the GMII ports, and their UDP
//! payloads must equal the golden model's packets byte for byte (so word
//! for word), each on the port it was dealt to. L = 1 and L = 4, 8 and 16
//! banks, 24- and 28-bit line indices, with and without TX FIFO overflow.
//! One run writes its frames to a pcap file that tshark must accept; it is
//! left at `$CARGO_TARGET_TMPDIR/hmtt-hdl/board_cosim_l1.pcap` for the
//! receiver's tests, next to the golden model's packets of the same run as
//! capture files (`board_cosim_l1.golden.port<p>.hmttcap`). Each run prints its simulation speed in command clocks
//! (ticks) per second.

mod capture_support;
mod eth_support;

use capture_support::{board_config, capture_config, random_stream};
use hmtt_format::capture::{emit_record_header, CaptureHeader, SourceKind};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_format::Packet;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
use hmtt_hdl::crc32::ethernet_fcs;
use hmtt_hdl::dcbu::CommandPins;
use hmtt_hdl::gmii::{GmiiDecoder, WireFrame};
use hmtt_sim::board::{Board, BoardConfig, BoardPacket, DrainRate};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use std::time::Instant;

const BOARD_ID: u8 = 9;

/// Simulation time units per DDR tick; the fabric clock's period is `L`
/// ticks.
const TICK_TIME: u64 = 1000;

struct BoardRun {
    /// Frames per port, in order.
    frames: Vec<Vec<WireFrame>>,
    ticks: u64,
    seconds: f64,
    packet_error: bool,
    frame_underrun: bool,
    events_dropped: u64,
}

/// Runs `cmds` through a `BoardTop` until `packets` frames have come out or
/// `max_ticks` ticks have passed. `eth_period` is the Ethernet clock's
/// period in simulation time units (a tick is [`TICK_TIME`]).
fn run_board<const L: usize, const B: usize, const AB: usize, const P: usize>(
    config: &BoardTopConfig,
    cmds: &[Command],
    packets: usize,
    max_ticks: u64,
    eth_period: u64,
) -> BoardRun {
    let by_tick: BTreeMap<u64, &Command> = cmds.iter().map(|c| (c.cycle, c)).collect();
    assert_eq!(
        by_tick.len(),
        cmds.len(),
        "one command per tick on the pins"
    );
    let mut uut = BoardTop::<L, B, AB, P>::new(config);
    uut.connect_all();
    let mut gmii: Vec<GmiiDecoder> = (0..P).map(|_| GmiiDecoder::new()).collect();
    let mut frames: Vec<Vec<WireFrame>> = vec![vec![]; P];
    let fabric_half = TICK_TIME * L as u64 / 2;
    let eth_half = eth_period / 2;
    let (mut next_fabric, mut next_eth) = (fabric_half, eth_half);
    let (mut fabric_high, mut eth_high) = (false, false);
    let mut cycle = 0u64;
    let start = Instant::now();
    let set_pins = |uut: &mut BoardTop<L, B, AB, P>, cycle: u64| {
        for j in 0..L {
            let tick = cycle * L as u64 + j as u64;
            let p = match by_tick.get(&tick) {
                Some(c) => CommandPins::for_command(
                    capture_support::kind_of(c.cmd),
                    c.rank.into(),
                    c.bank.into(),
                    c.arg.into(),
                ),
                None => CommandPins::DESELECT,
            };
            uut.cs_n[j].next = p.cs_n.to_bits();
            uut.ras_n[j].next = p.ras_n;
            uut.cas_n[j].next = p.cas_n;
            uut.we_n[j].next = p.we_n;
            uut.cke[j].next = p.cke;
            uut.ba[j].next = p.ba.to_bits();
            uut.addr[j].next = p.addr.to_bits();
        }
    };
    set_pins(&mut uut, 0);
    assert!(simulate(&mut uut, 1000));
    loop {
        let now = next_fabric.min(next_eth);
        let fabric_edge = next_fabric == now;
        let eth_edge = next_eth == now;
        if fabric_edge {
            fabric_high = !fabric_high;
            uut.fabric_clock.next = Clock { clk: fabric_high };
            next_fabric += fabric_half;
        }
        if eth_edge {
            eth_high = !eth_high;
            uut.eth_clock.next = Clock { clk: eth_high };
            next_eth += eth_half;
        }
        assert!(simulate(&mut uut, 1000), "the design did not settle");
        if fabric_edge && !fabric_high {
            // Falling edge: the pins of the next cycle.
            cycle += 1;
            set_pins(&mut uut, cycle);
            assert!(simulate(&mut uut, 1000));
        }
        if eth_edge && eth_high {
            for p in 0..P {
                let txd: u64 = uut.txd[p].val().into();
                gmii[p].sample(uut.tx_en[p].val(), uut.tx_er[p].val(), txd as u8);
                frames[p].extend(gmii[p].take_frames());
            }
        }
        let done = frames.iter().map(Vec::len).sum::<usize>() >= packets
            && gmii.iter().all(|g| !g.in_frame());
        if done || cycle * L as u64 >= max_ticks {
            break;
        }
    }
    for g in &gmii {
        assert!(g.errors().is_empty(), "GMII errors: {:?}", g.errors());
    }
    let dropped: u64 = uut.events_dropped.val().into();
    BoardRun {
        frames,
        ticks: cycle * L as u64,
        seconds: start.elapsed().as_secs_f64(),
        packet_error: uut.packet_error.val(),
        frame_underrun: uut.frame_underrun.val(),
        events_dropped: dropped,
    }
}

/// The golden model's packets and its count of dropped events.
fn golden(cfg: &BoardConfig, cmds: &[Command]) -> (Vec<BoardPacket>, u64) {
    let mut board = Board::new(cfg.clone()).expect("valid board config");
    board.commands(cmds).expect("legal stream");
    board.finish();
    let mut out = vec![];
    board.drain_packets(&mut out);
    (out, board.counters().events_dropped)
}

/// The UDP payload of a frame, after checking its FCS and that it is the
/// IPv4/UDP frame of `port`.
fn udp_payload(frame: &[u8], port: usize) -> &[u8] {
    let (body, fcs) = frame.split_at(frame.len() - 4);
    assert_eq!(ethernet_fcs(body).to_le_bytes(), fcs, "FCS");
    assert_eq!(&body[12..14], &[0x08, 0x00], "IPv4 EtherType");
    assert_eq!(body[23], 17, "UDP");
    let dst_port = u16::from_be_bytes([body[36], body[37]]);
    assert_eq!(dst_port as usize, 5000 + port, "UDP destination port");
    &body[42..]
}

/// Builds both sides with the same parameters, runs them and compares.
#[allow(clippy::too_many_arguments)]
fn cosim<const L: usize, const B: usize, const AB: usize, const P: usize>(
    geometry: Geometry,
    drain: DrainRate,
    max_words: usize,
    idle_flush_ticks: u64,
    cmds_seed: u64,
    count: usize,
    max_gap: u64,
    eth_period: u64,
) -> (BoardRun, Vec<BoardPacket>) {
    let mut cfg = board_config(geometry, B << AB, drain).with_ports(P as u8);
    cfg.drain = drain;
    cfg.max_words = max_words;
    cfg.idle_flush_ticks = idle_flush_ticks;
    cfg.board_id = BOARD_ID;
    let cmds = random_stream(&cfg, cmds_seed, count, max_gap);
    let (expected, golden_dropped) = golden(&cfg, &cmds);
    let mut top = BoardTopConfig::new(geometry, P as u8, BOARD_ID, cfg.tick_ps);
    top.capture = capture_config(&cfg);
    top.packetizer.max_words = max_words as u16;
    top.packetizer.idle_flush_ticks = idle_flush_ticks;
    top.drain_num = drain.num;
    top.drain_den = drain.den;
    let last_leave = expected.iter().map(|p| p.leave_tick).max().unwrap_or(0);
    let frame_ticks = (4 * max_words as u64 + 98) * eth_period / TICK_TIME;
    let run = run_board::<L, B, AB, P>(
        &top,
        &cmds,
        expected.len(),
        last_leave + 4 * frame_ticks + 2000,
        eth_period,
    );
    eprintln!(
        "L={L} P={P}: {} ticks in {:.2} s = {:.0} command clocks per second; {} packets, {} events dropped",
        run.ticks,
        run.seconds,
        run.ticks as f64 / run.seconds,
        expected.len(),
        run.events_dropped
    );
    assert_eq!(run.events_dropped, golden_dropped, "events dropped");
    assert!(
        !run.packet_error,
        "port buffer overflow or descriptor collision"
    );
    assert!(!run.frame_underrun, "framer underrun");
    let mut got: BTreeMap<u64, (usize, Vec<u8>)> = BTreeMap::new();
    for (port, frames) in run.frames.iter().enumerate() {
        for f in frames {
            let payload = udp_payload(&f.bytes, port).to_vec();
            let seq = Packet::new_checked(&payload[..])
                .expect("valid HMTT packet")
                .seq();
            assert!(
                got.insert(seq, (port, payload)).is_none(),
                "seq {seq} twice"
            );
        }
    }
    assert_eq!(got.len(), expected.len(), "number of packets");
    for e in &expected {
        let (port, bytes) = got
            .get(&e.seq)
            .unwrap_or_else(|| panic!("packet seq {} missing", e.seq));
        assert_eq!(*port, e.port as usize, "port of seq {}", e.seq);
        assert_eq!(bytes, &e.bytes, "packet seq {} differs", e.seq);
    }
    (run, expected)
}

/// 2 ranks, 8 banks, 13 row bits, 7 column-line bits: 24-bit lines.
fn geometry_24() -> Geometry {
    Geometry::new(1, 3, 13, 7).unwrap()
}

/// 4 ranks, 16 banks, 15 row bits: 28-bit lines (LINE_HI words).
fn geometry_28() -> Geometry {
    Geometry::new(2, 4, 15, 7).unwrap()
}

const SLOW: DrainRate = DrainRate { num: 1, den: 9 };

#[test]
fn board_l1_24bit_overflow_matches_golden_and_tshark_reads_it() {
    let (run, expected) = cosim::<1, 8, 3, 3>(geometry_24(), SLOW, 24, 300, 21, 1200, 3, 700);
    assert!(run.events_dropped > 0, "the test must overflow the TX FIFO");
    assert!(expected.len() > 8);
    // All ports' frames, in the order they started, as one capture file.
    let mut all: Vec<&WireFrame> = run.frames.iter().flatten().collect();
    all.sort_by_key(|f| f.start_clock);
    let frames: Vec<Vec<u8>> = all.iter().map(|f| f.bytes.clone()).collect();
    let path = eth_support::output_dir().join("board_cosim_l1.pcap");
    hmtt_hdl::gmii::write_pcap(std::fs::File::create(&path).unwrap(), &frames, 1000).unwrap();
    let rows = eth_support::tshark_check(&path);
    assert_eq!(rows.len(), expected.len());
    // The golden model's packets of the same run, one capture file per
    // port, for the receiver/merge tests to compare the pcap against.
    write_golden_captures("board_cosim_l1", &expected, 3, geometry_24());
}

/// Writes `packets` as `<name>.golden.port<p>.hmttcap` (format.md 7, source
/// kind simulation), receive time = leave tick in ns at 1250 ps per tick.
fn write_golden_captures(name: &str, packets: &[BoardPacket], ports: u8, geometry: Geometry) {
    for port in 0..ports {
        let header = CaptureHeader {
            board: BOARD_ID,
            port,
            stripe: 0,
            start_ns: 0,
            geometry: Some(geometry),
            source_kind: SourceKind::Simulation,
            tick_ps: 1250,
            source_name: "hmtt-sim golden model".into(),
        };
        let mut file = header.emit().to_vec();
        for p in packets.iter().filter(|p| p.port == port) {
            let ns = p.leave_tick * 1250 / 1000;
            file.extend_from_slice(&emit_record_header(ns, p.bytes.len() as u32, 0));
            file.extend_from_slice(&p.bytes);
        }
        let path = eth_support::output_dir().join(format!("{name}.golden.port{port}.hmttcap"));
        std::fs::write(path, file).unwrap();
    }
}

#[test]
fn board_l4_28bit_overflow_matches_golden() {
    let (run, expected) = cosim::<4, 32, 1, 3>(geometry_28(), SLOW, 24, 300, 22, 2400, 2, 2000);
    assert!(run.events_dropped > 0, "the test must overflow the TX FIFO");
    assert!(
        opened_with_line_hi(&expected) > 0,
        "LINE_HI injection expected"
    );
}

/// Packets whose first word is a LINE_HI with dt 0: the packetizer's
/// injected word (or, rarely, a stream word that happens to look the same).
fn opened_with_line_hi(packets: &[BoardPacket]) -> usize {
    packets
        .iter()
        .filter(|p| {
            let w = u32::from_le_bytes([p.bytes[32], p.bytes[33], p.bytes[34], p.bytes[35]]);
            w >> 21 == 0x11
        })
        .count()
}

#[test]
fn board_l1_28bit_no_overflow_matches_golden() {
    let (run, _) = cosim::<1, 8, 3, 2>(
        geometry_28(),
        DrainRate { num: 1, den: 4 },
        40,
        500,
        23,
        1200,
        12,
        1000,
    );
    assert_eq!(run.events_dropped, 0);
}

#[test]
fn board_l4_24bit_line_rate_matches_golden() {
    cosim::<4, 32, 1, 3>(
        geometry_24(),
        DrainRate::line_rate(3, 64, 1250),
        64,
        400,
        24,
        2400,
        6,
        2000,
    );
}
