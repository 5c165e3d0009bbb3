//! What the whole-board tests share (RustHDL co-simulation, the Verilog
//! testbench, the receiver/merge round trip): one set of parameters built
//! for both the golden model and `BoardTop`, the golden model's packets, and
//! the comparison of GMII frames with them.
#![allow(dead_code)]

use crate::capture_support::{board_config, capture_config, kind_of, random_stream};
use crate::eth_support;
use hmtt_board_model::{
    run_commands_with_statistics, Board, BoardConfig, BoardCounters, BoardPacket, DrainRate,
    StatsConfig,
};
use hmtt_format::capture::{emit_record_header, CaptureHeader, SourceKind};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::StatsPart;
use hmtt_format::trace::TraceRecord;
use hmtt_format::Packet;
use hmtt_hdl::board_top::BoardStatistics;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
use hmtt_hdl::crc32::ethernet_fcs;
use hmtt_hdl::dcbu::CommandPins;
use hmtt_hdl::gmii::{GmiiDecoder, WireFrame};
use hmtt_merge::{merge, MergeOptions, VecSink};
use hmtt_receiver::{Capture, CaptureConfig, Input, Source};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

pub const BOARD_ID: u8 = 9;

/// Simulation time units per DDR tick; the fabric clock's period is `L`
/// ticks.
pub const TICK_TIME: u64 = 1000;

/// 2 ranks, 8 banks, 13 row bits, 7 column-line bits: 24-bit lines.
pub fn geometry_24() -> Geometry {
    Geometry::new(1, 3, 13, 7).unwrap()
}

/// 4 ranks, 16 banks, 15 row bits: 28-bit lines (LINE_HI words).
pub fn geometry_28() -> Geometry {
    Geometry::new(2, 4, 15, 7).unwrap()
}

pub const SLOW: DrainRate = DrainRate { num: 1, den: 9 };

/// Board parameters shared by both sides.
#[derive(Clone, Debug)]
pub struct BoardParams {
    /// Lanes `L` and references per clock `E` (board.md 2.2).
    pub lanes: u32,
    pub refs_per_clock: u32,
    pub geometry: Geometry,
    pub ports: u8,
    pub fifo_depth: usize,
    pub drain: DrainRate,
    pub max_words: usize,
    pub idle_flush_ticks: u64,
}

impl BoardParams {
    pub fn golden_config(&self) -> BoardConfig {
        let mut cfg =
            board_config(self.geometry, self.fifo_depth, self.drain).with_ports(self.ports);
        cfg.drain = self.drain;
        cfg.max_words = self.max_words;
        cfg.idle_flush_ticks = self.idle_flush_ticks;
        cfg.board_id = BOARD_ID;
        cfg.with_lanes(self.lanes, self.refs_per_clock)
    }

    pub fn top_config(&self) -> BoardTopConfig {
        let cfg = self.golden_config();
        let mut top = BoardTopConfig::new(self.geometry, self.ports, BOARD_ID, cfg.tick_ps);
        top.capture = capture_config(&cfg);
        top.packetizer.max_words = self.max_words as u16;
        top.packetizer.idle_flush_ticks = self.idle_flush_ticks;
        top.drain_num = self.drain.num;
        top.drain_den = self.drain.den;
        top
    }

    /// A random legal stream for these parameters.
    pub fn stream(&self, seed: u64, count: usize, max_gap: u64) -> Vec<Command> {
        random_stream(&self.golden_config(), seed, count, max_gap)
    }

    /// Ticks after the golden model's last packet left until the frames of
    /// every port are surely out (`eth_period` in [`TICK_TIME`] units).
    pub fn tail_ticks(&self, eth_period: u64) -> u64 {
        let frame_ticks = (4 * self.max_words as u64 + 98) * eth_period / TICK_TIME;
        4 * frame_ticks + 2000
    }
}

pub struct BoardRun {
    /// Frames per port, in order.
    pub frames: Vec<Vec<WireFrame>>,
    /// The tick at which each packet left the packetizer (its clock's tick
    /// `k L` when it wrote the descriptor), in close (`seq`) order.
    pub leave_ticks: Vec<u64>,
    /// The core's counter outputs at the end of the run.
    pub counters: HdlCounters,
    pub ticks: u64,
    pub seconds: f64,
    pub packet_error: bool,
    pub frame_underrun: bool,
    /// The Statistic Unit's records sent, unsent and overrun (0 without
    /// it).
    pub stats_records: [u64; 3],
}

/// `BoardTop`'s counter outputs (board.md "Counters").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HdlCounters {
    pub protocol_errors: u64,
    pub unknown_commands: u64,
    pub out_of_range: u64,
    pub references_over_limit: u64,
    pub clocks_over_limit: u64,
    pub config_events: u64,
    pub events_dropped: u64,
    pub lost_words: u64,
    pub time_fillers: u64,
    pub time_overflows: u64,
    pub fifo_high_water: u64,
}

impl HdlCounters {
    /// The golden model's values of the same counters.
    pub fn of_golden(c: &BoardCounters) -> HdlCounters {
        HdlCounters {
            protocol_errors: c.protocol_errors,
            unknown_commands: c.unknown_commands,
            out_of_range: c.out_of_range,
            references_over_limit: c.references_over_limit,
            clocks_over_limit: c.clocks_over_limit,
            config_events: c.config_events,
            events_dropped: c.events_dropped,
            lost_words: c.lost_words,
            time_fillers: c.time_fillers,
            time_overflows: c.time_overflows,
            fifo_high_water: c.fifo_high_water,
        }
    }
}

/// Runs `cmds` through a `BoardTop` (RustHDL's simulator) until `packets`
/// frames have come out or `max_ticks` ticks have passed. `eth_period` is
/// the Ethernet clock's period in simulation time units (a tick is
/// [`TICK_TIME`]).
pub fn run_board<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const DN: usize,
    const DNP1: usize,
>(
    config: &BoardTopConfig,
    cmds: &[Command],
    packets: usize,
    max_ticks: u64,
    eth_period: u64,
) -> BoardRun {
    run_board_with::<L, E, B, AB, P, DN, DNP1, 0, 1, 1, 1>(
        config, cmds, packets, max_ticks, eth_period,
    )
}

/// [`run_board`] for a `BoardTop` with or without the Statistic Unit
/// (`S`, `R`, `NB`, `LB` as `BoardTop`'s); `packets` counts its packets
/// too.
#[allow(clippy::too_many_arguments)]
pub fn run_board_with<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const DN: usize,
    const DNP1: usize,
    const S: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    config: &BoardTopConfig,
    cmds: &[Command],
    packets: usize,
    max_ticks: u64,
    eth_period: u64,
) -> BoardRun {
    // The core (the ECP5's shape, or any with the unit) is too large for a
    // test thread's stack.
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(1 << 28)
            .spawn_scoped(scope, || {
                run_board_on_this_thread::<L, E, B, AB, P, DN, DNP1, S, R, NB, LB>(
                    config, cmds, packets, max_ticks, eth_period,
                )
            })
            .expect("simulation thread")
            .join()
            .expect("simulation")
    })
}

#[allow(clippy::too_many_arguments)]
fn run_board_on_this_thread<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const DN: usize,
    const DNP1: usize,
    const S: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
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
    let mut uut = BoardTop::<L, E, B, AB, P, DN, DNP1, S, R, NB, LB>::new(config);
    uut.connect_all();
    let mut gmii: Vec<GmiiDecoder> = (0..P).map(|_| GmiiDecoder::new()).collect();
    let mut frames: Vec<Vec<WireFrame>> = vec![vec![]; P];
    let fabric_half = TICK_TIME * L as u64 / 2;
    let eth_half = eth_period / 2;
    let (mut next_fabric, mut next_eth) = (fabric_half, eth_half);
    let (mut fabric_high, mut eth_high) = (false, false);
    let mut cycle = 0u64;
    let start = Instant::now();
    let mut leave_ticks = vec![];
    let set_pins = |uut: &mut BoardTop<L, E, B, AB, P, DN, DNP1, S, R, NB, LB>, cycle: u64| {
        for j in 0..L {
            let tick = cycle * L as u64 + j as u64;
            let p = match by_tick.get(&tick) {
                Some(c) => CommandPins::for_command(
                    kind_of(c.cmd),
                    c.rank.into(),
                    c.bank.into(),
                    c.arg.into(),
                ),
                None => CommandPins::DESELECT,
            };
            let pins = &mut uut.pins[j];
            pins.cs_n.next = p.cs_n.to_bits();
            pins.ras_n.next = p.ras_n;
            pins.cas_n.next = p.cas_n;
            pins.we_n.next = p.we_n;
            pins.cke.next = p.cke;
            pins.ba.next = p.ba.to_bits();
            pins.addr.next = p.addr.to_bits();
        }
    };
    set_pins(&mut uut, 0);
    assert!(simulate(&mut uut, 1000));
    loop {
        let now = next_fabric.min(next_eth);
        let fabric_edge = next_fabric == now;
        let eth_edge = next_eth == now;
        if fabric_edge {
            // Before the rising edge: a descriptor written in this clock
            // leaves at the packetizer's clock tick.
            if !fabric_high && uut.packetizer.desc_write.val() {
                assert!(uut.packetizer.tick_valid.val());
                leave_ticks.push(uut.packetizer.tick.val().into());
            }
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
    let count = |s: &Signal<Out, Bits<32>>| -> u64 { s.val().into() };
    let counters = HdlCounters {
        protocol_errors: count(&uut.protocol_errors),
        unknown_commands: count(&uut.unknown_commands),
        out_of_range: count(&uut.out_of_range),
        references_over_limit: count(&uut.references_over_limit),
        clocks_over_limit: count(&uut.clocks_over_limit),
        config_events: count(&uut.config_events),
        events_dropped: count(&uut.events_dropped),
        lost_words: count(&uut.lost_words),
        time_fillers: count(&uut.time_fillers),
        time_overflows: count(&uut.time_overflows),
        fifo_high_water: count(&uut.fifo_high_water),
    };
    BoardRun {
        frames,
        leave_ticks,
        counters,
        ticks: cycle * L as u64,
        seconds: start.elapsed().as_secs_f64(),
        packet_error: uut.packet_error.val(),
        frame_underrun: uut.frame_underrun.val(),
        stats_records: [
            count(&uut.stats_records_sent),
            count(&uut.stats_records_unsent),
            count(&uut.stats_overrun),
        ],
    }
}

/// The golden model's packets and counters.
pub fn golden(cfg: &BoardConfig, cmds: &[Command]) -> (Vec<BoardPacket>, BoardCounters) {
    let mut board = Board::new(cfg.clone()).expect("valid board config");
    board.commands(cmds).expect("legal stream");
    board.finish();
    let mut out = vec![];
    board.drain_packets(&mut out);
    (out, board.counters().clone())
}

/// The packets left the HDL's packetizer in the golden model's leave
/// ticks, and the core's counters equal the model's.
pub fn check_leave_ticks_and_counters(
    run: &BoardRun,
    expected: &[BoardPacket],
    counters: &BoardCounters,
) {
    let want: Vec<u64> = expected.iter().map(|p| p.leave_tick).collect();
    assert_eq!(run.leave_ticks.len(), want.len(), "packets closed");
    for (seq, (got, want)) in run.leave_ticks.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "leave tick of packet seq {seq}");
    }
    assert_eq!(run.counters, HdlCounters::of_golden(counters), "counters");
}

/// The UDP payload of a frame, after checking its FCS and that it is the
/// IPv4/UDP frame of `port`.
pub fn udp_payload(frame: &[u8], port: usize) -> &[u8] {
    let (body, fcs) = frame.split_at(frame.len() - 4);
    assert_eq!(ethernet_fcs(body).to_le_bytes(), fcs, "FCS");
    assert_eq!(&body[12..14], &[0x08, 0x00], "IPv4 EtherType");
    assert_eq!(body[23], 17, "UDP");
    let dst_port = u16::from_be_bytes([body[36], body[37]]);
    assert_eq!(dst_port as usize, 5000 + port, "UDP destination port");
    &body[42..]
}

/// Every port's frames (preamble and SFD already checked by the GMII
/// decoder) carry exactly the golden model's packets, byte for byte, each
/// on the port it was dealt to.
pub fn check_frames(frames: &[Vec<WireFrame>], expected: &[BoardPacket]) {
    let mut got: BTreeMap<u64, (usize, Vec<u8>)> = BTreeMap::new();
    for (port, frames) in frames.iter().enumerate() {
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
    for e in expected {
        let (port, bytes) = got
            .get(&e.seq)
            .unwrap_or_else(|| panic!("packet seq {} missing", e.seq));
        assert_eq!(*port, e.port as usize, "port of seq {}", e.seq);
        assert_eq!(bytes, &e.bytes, "packet seq {} differs", e.seq);
    }
}

/// All ports' frames in the order they started on the wire.
pub fn frames_in_order(frames: &[Vec<WireFrame>]) -> Vec<Vec<u8>> {
    let mut all: Vec<&WireFrame> = frames.iter().flatten().collect();
    all.sort_by_key(|f| f.start_clock);
    all.iter().map(|f| f.bytes.clone()).collect()
}

/// The golden model's packets of one port as a capture file (format.md 7,
/// source kind simulation), receive time = leave tick in ns at 1250 ps per
/// tick.
pub fn golden_capture(packets: &[BoardPacket], port: u8, geometry: Geometry) -> Vec<u8> {
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
    file
}

/// Writes `packets` as `<name>.golden.port<p>.hmttcap` into the tests'
/// output directory, for the receiver's tests.
pub fn write_golden_captures(name: &str, packets: &[BoardPacket], ports: u8, geometry: Geometry) {
    for port in 0..ports {
        let path = eth_support::output_dir().join(format!("{name}.golden.port{port}.hmttcap"));
        std::fs::write(path, golden_capture(packets, port, geometry)).unwrap();
    }
}

/// The merged trace and the merge report of a set of capture files.
fn merged(set: &hmtt_merge::CaptureSet) -> (Vec<TraceRecord>, hmtt_merge::MergeReport) {
    let mut sink = VecSink::default();
    let report = merge(set, &MergeOptions::default(), &mut sink, &mut |_| {}).expect("merge");
    (sink.0, report)
}

/// The host side on the framer's output: the receiver reads `pcap` (one
/// input per port, UDP destination port `5000 + p`, as `hmtt capture
/// file:PATH`) into capture files under the tests' output directory, the
/// merge tool turns them into a trace, and that trace and its report must
/// equal those merged from the golden model's packets. Returns the trace.
pub fn receiver_merge_roundtrip(
    pcap: &Path,
    expected: &[BoardPacket],
    counters: &BoardCounters,
    ports: u8,
    geometry: Geometry,
) -> Vec<TraceRecord> {
    let name = pcap.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = eth_support::output_dir().join(format!("{name}.receiver"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let inputs = (0..ports)
        .map(|p| Input {
            source: Source::PcapFile(pcap.to_path_buf()),
            port: p,
            udp_port: Some(5000 + u16::from(p)),
        })
        .collect();
    let mut c = CaptureConfig::new(inputs, vec![dir.clone()]);
    c.name = name;
    c.progress = false;
    c.preallocate = false;
    c.overwrite = true;
    let summary = Capture::start(c, Arc::new(AtomicBool::new(false)))
        .expect("receiver starts on the pcap file")
        .wait()
        .expect("receiver finishes");
    assert!(summary.ok, "receiver: {:?}", summary.errors);
    assert_eq!(summary.stop_reason, "every input ended");
    for (p, s) in summary.ports.iter().enumerate() {
        let want = expected.iter().filter(|e| e.port as usize == p).count() as u64;
        assert_eq!(s.packets, want, "receiver: packets of port {p}");
        assert_eq!(s.rejects, 0, "receiver: rejects on port {p}");
    }
    let received = hmtt_merge::CaptureSet::open(&[dir], u64::MAX).expect("capture files");
    let (trace, report) = merged(&received);
    let golden_files = (0..ports)
        .map(|p| {
            (
                format!("golden.port{p}"),
                golden_capture(expected, p, geometry),
            )
        })
        .collect();
    let golden_set = hmtt_merge::CaptureSet::from_memory(golden_files, u64::MAX).unwrap();
    let (golden_trace, golden_report) = merged(&golden_set);
    assert_eq!(report.packets(), expected.len() as u64);
    assert_eq!(report.packets_missing(), 0);
    assert_eq!(report.packets_rejected(), 0);
    assert_eq!(report.boards.len(), 1);
    let (b, g) = (&report.boards[0], &golden_report.boards[0]);
    assert_eq!(b.counts, g.counts, "record counts by kind");
    assert_eq!(b.corrupt_words, 0);
    assert_eq!(b.time_regressions, 0);
    assert_eq!(b.references_lost, counters.lost_reported, "LOST sum");
    assert_eq!(b.counts[5], counters.lost_words, "LOST words");
    assert_eq!(trace.len(), golden_trace.len(), "number of trace records");
    for (i, (r, g)) in trace.iter().zip(&golden_trace).enumerate() {
        assert_eq!(r, g, "trace record {i}");
    }
    trace
}

/// What the golden model sent for a stream.
pub struct Golden {
    pub trace: Vec<BoardPacket>,
    pub statistics: Vec<BoardPacket>,
    pub counters: BoardCounters,
}

pub fn golden_with_statistics(
    params: &BoardParams,
    su: BoardStatistics,
    cmds: &[Command],
) -> Golden {
    let cfg = params.golden_config().with_statistics(StatsConfig {
        interval_log2: su.interval_log2,
        start_enabled: true,
        share_log2: su.share_log2,
        burst_records: su.burst_records,
        reuse: None,
    });
    let (trace, statistics, counters) =
        run_commands_with_statistics(cfg, cmds).expect("the model runs");
    Golden {
        trace,
        statistics,
        counters,
    }
}

/// Splits every port's frames into trace packets and statistics packets
/// (format.md §5.3's magic) and checks each kind against the model's:
/// the same packets, byte for byte, each on its port (`seq % ports` of
/// its own `seq`). Returns the statistics packets that went out on a
/// port after a trace packet that left (in the model) after them, which
/// board.md excludes.
pub fn check_frames_with_statistics(frames: &[Vec<WireFrame>], golden: &Golden) -> usize {
    let mut trace: Vec<Vec<WireFrame>> = vec![vec![]; frames.len()];
    let mut stats: BTreeMap<u64, (usize, Vec<u8>)> = BTreeMap::new();
    let leave_of = |packets: &[BoardPacket], seq: u64| {
        packets
            .iter()
            .find(|p| p.seq == seq)
            .map_or(u64::MAX, |p| p.leave_tick)
    };
    let mut overtaken = 0;
    for (port, frames) in frames.iter().enumerate() {
        let mut latest_trace_leave = 0;
        for f in frames {
            let payload = udp_payload(&f.bytes, port);
            if hmtt_format::stats::is_stats_packet(payload) {
                let part = StatsPart::parse(payload).expect("a valid statistics packet");
                if latest_trace_leave > leave_of(&golden.statistics, part.seq) {
                    overtaken += 1;
                }
                assert_eq!(part.port as usize, port, "statistics seq {}", part.seq);
                assert!(
                    stats.insert(part.seq, (port, payload.to_vec())).is_none(),
                    "statistics seq {} twice",
                    part.seq
                );
            } else {
                let seq = Packet::new_checked(payload)
                    .expect("a valid trace packet")
                    .seq();
                latest_trace_leave = latest_trace_leave.max(leave_of(&golden.trace, seq));
                trace[port].push(f.clone());
            }
        }
    }
    check_frames(&trace, &golden.trace);
    assert_eq!(stats.len(), golden.statistics.len(), "statistics packets");
    for g in &golden.statistics {
        let (port, bytes) = stats
            .get(&g.seq)
            .unwrap_or_else(|| panic!("statistics seq {} missing", g.seq));
        assert_eq!(*port, g.port as usize, "port of statistics seq {}", g.seq);
        assert_eq!(bytes, &g.bytes, "statistics seq {} differs", g.seq);
    }
    overtaken
}
