//! Co-simulation of the Statistic Unit's transport
//! (`hmtt_hdl::statistics::packets`): the capture chain, the unit's
//! counters on its taps and the statistics path on their record and
//! readout give every statistics packet of the golden model byte for byte
//! (header, counters, `seq`, port), in order, and its records sent and
//! unsent, on the random streams of `statistics_cosim` with the credit
//! refusing records, a silence that fills the credit, and records of one
//! and of several parts, at `k` = 6, 9 and 11 at both shapes, with the
//! unit's inner commands cutting intervals short, so that records come
//! while others are held or sent. And the block's Verilog is `verilator
//! --lint-only -Wall` clean.

mod capture_support;
mod statistics_packets_support;
mod statistics_support;
mod verilog_support;

use capture_support::*;
use hmtt_board_model::{BoardConfig, BoardPacket, DrainRate};
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::StatsPart;
use hmtt_hdl::capture::CaptureConfig;
use hmtt_hdl::dcbu::CommandPins;
use hmtt_hdl::statistics::packets::{StatisticPackets, StatsPacketConfig};
use rust_hdl::prelude::*;
use statistics_packets_support::*;
use statistics_support::*;
use std::collections::BTreeMap;
use verilog_support::*;

/// What the HDL sent: each packet's port and bytes, and its records sent,
/// unsent and overrun; the records held while the path held or sent
/// another (`queued`).
struct HdlRun {
    packets: Vec<(u8, Vec<u8>)>,
    sent: u64,
    unsent: u64,
    overrun: u64,
    queued: u64,
}

fn run_hdl<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    capture: CaptureConfig,
    drain: DrainRate,
    path: StatsPacketConfig,
    cmds: &[Command],
    k: u32,
    stop: u64,
) -> HdlRun {
    // The unit's counters make a block too large for a test thread's
    // stack.
    let cmds = cmds.to_vec();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            run_hdl_on_this_thread::<L, E, B, AB, R, NB, LB>(capture, drain, path, &cmds, k, stop)
        })
        .expect("simulation thread")
        .join()
        .expect("simulation")
}

fn run_hdl_on_this_thread<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    capture: CaptureConfig,
    drain: DrainRate,
    path: StatsPacketConfig,
    cmds: &[Command],
    k: u32,
    stop: u64,
) -> HdlRun {
    let pins = pin_commands(cmds);
    let by_tick: BTreeMap<u64, PinCommand> = pins.iter().map(|c| (c.tick, *c)).collect();
    assert_eq!(by_tick.len(), pins.len(), "one command per tick");
    let mut uut = CapturePackets::<L, E, B, AB, R, NB, LB>::new(capture, k, &path);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<CapturePackets<L, E, B, AB, R, NB, LB>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(
        move |mut sim: Sim<CapturePackets<L, E, B, AB, R, NB, LB>>| {
            let mut x = sim.init()?;
            x.drain_num.next = (drain.num * L as u64).to_bits();
            x.drain_den.next = drain.den.to_bits();
            let mut packets = Vec::new();
            let mut open: Option<(u8, Vec<u8>)> = None;
            let mut desc_due: Option<(u64, u64)> = None;
            let mut clock = 0u64;
            let mut queued = 0u64;
            loop {
                for j in 0..L {
                    let t = clock * L as u64 + j as u64;
                    let p = match by_tick.get(&t) {
                        Some(c) => CommandPins::for_command(c.kind, c.rank, c.bank, c.arg),
                        None => CommandPins::DESELECT,
                    };
                    set_pins(&mut x.pins[j], p);
                }
                wait_clock_cycle!(sim, clock, x);
                clock += 1;
                if x.hold_write.val() && x.busy.val() {
                    queued += 1;
                }
                // A packet's descriptor comes a clock after its last word.
                if let Some((words, port)) = desc_due.take() {
                    assert!(x.desc_write.val(), "a descriptor after the last word");
                    assert_eq!(x.desc_words.val().to_u64(), words, "descriptor's words");
                    assert_eq!(x.desc_port.val().to_u64(), port, "descriptor's port");
                } else {
                    assert!(!x.desc_write.val(), "a descriptor with no packet");
                }
                if x.word_write.val() {
                    let port = x.word_port.val().to_u64() as u8;
                    if x.word_first.val() {
                        assert!(open.is_none(), "a packet opened inside another");
                        open = Some((port, Vec::new()));
                    }
                    let (open_port, bytes) = open.as_mut().expect("a word outside a packet");
                    assert_eq!(*open_port, port, "the words of a packet go to one port");
                    bytes.extend_from_slice(&x.word_data.val().to_u32().to_le_bytes());
                    if x.word_last.val() {
                        let (port, bytes) = open.take().unwrap();
                        desc_due = Some(((bytes.len() / 4) as u64, u64::from(port)));
                        packets.push((port, bytes));
                    }
                } else {
                    assert!(!x.word_first.val() && !x.word_last.val());
                }
                if x.dropped_tick_valid.val()
                    && x.dropped_tick.val().to_u64() >= stop
                    && !x.busy.val()
                    && open.is_none()
                    && desc_due.is_none()
                {
                    break;
                }
            }
            tx.send(HdlRun {
                packets,
                sent: x.records_sent.val().to_u64(),
                unsent: x.records_unsent.val().to_u64(),
                overrun: x.overrun.val().to_u64(),
                queued,
            })
            .unwrap();
            sim.done(x)
        },
    );
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

/// What a run showed, for the tests' own checks on the stream.
struct Shown {
    packets: Vec<BoardPacket>,
    unsent: u64,
    parts: u8,
    queued: u64,
}

/// Runs the RustHDL path and checks it against the golden model with the
/// path `p`: every statistics packet's port and bytes in order, the
/// records sent and unsent, no record overrun.
fn cosim<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    cfg: &BoardConfig,
    cmds: &[Command],
    p: PathParams,
) -> Shown {
    assert_eq!(cfg.fifo_depth, B << AB);
    let (gold, su) = model_packets(cfg, L as u32, E as u32, cmds, &p);
    let path = packet_config(cfg, &p, L as u8);
    // Past the model's last packet and the stream by more than an
    // interval.
    let last_end = gold
        .iter()
        .map(|b| StatsPart::parse(&b.bytes).expect("valid part").end_tick)
        .max()
        .unwrap_or(0);
    let stop = last_end.max(cmds.last().map_or(0, |c| c.cycle)) + (2 << p.k);
    let hw = run_hdl::<L, E, B, AB, R, NB, LB>(
        capture_config(cfg),
        cfg.drain,
        path,
        cmds,
        p.k.into(),
        stop,
    );
    assert_eq!(hw.overrun, 0, "a record sent found every slot taken");
    for (i, ((port, bytes), g)) in hw.packets.iter().zip(&gold).enumerate() {
        let part = StatsPart::parse(&g.bytes).expect("valid part");
        assert_eq!(*port, g.port, "packet {i} (seq {}): port", part.seq);
        if bytes != &g.bytes {
            let at = bytes.iter().zip(&g.bytes).position(|(a, b)| a != b);
            panic!(
                "packet {i} (seq {}, [{}, {}), part {}): bytes differ from byte {at:?}\n hdl {:?}\nmodel {:?}",
                part.seq,
                part.start_tick,
                part.end_tick,
                part.part,
                StatsPart::parse(bytes),
                part
            );
        }
    }
    assert_eq!(hw.packets.len(), gold.len(), "packets");
    assert_eq!(hw.sent, su.records_sent, "records sent");
    assert_eq!(hw.unsent, su.records_unsent, "records unsent");
    let parts = gold
        .iter()
        .map(|b| StatsPart::parse(&b.bytes).unwrap().parts)
        .max()
        .unwrap_or(0);
    Shown {
        packets: gold,
        unsent: su.records_unsent,
        parts,
        queued: hw.queued,
    }
}

/// The credit refused records, and a record sent after them carried
/// their count.
fn assert_refusals(shown: &Shown) {
    assert!(shown.unsent > 0, "the credit must refuse records");
    assert!(
        shown
            .packets
            .iter()
            .any(|b| StatsPart::parse(&b.bytes).unwrap().unsent_before > 0),
        "a sent record must carry the unsent count"
    );
}

/// L = 2, E = 2 (the iCE40's shape), one rank of 4 banks (56 counters),
/// on one stream with a silence that fills the credit. At `k = 9`, with
/// STATS_ON and STATS_OFF moved away so that the intervals are regular,
/// in records of three parts (566 bytes on the wire), a burst of one and
/// one port: with a tick of 7,075 ps the credit pays a record in exactly
/// 5 intervals (`566 * 8000 * 4 = 7075 * 2560`), so the record 5
/// intervals after the first is sent only if the sum is exact and the
/// test `>=`; with 7,074 ps it takes a few ticks more, so that record is
/// refused unless the cost is exact (a cost 3 % low, 60 bytes of frame
/// overhead for 66, sends it). At `k = 11`, on the stream with STATS_ON
/// and STATS_OFF, in records of one part on two ports, every record is
/// sent.
#[test]
fn statistics_packets_l2_e2_k9_and_k11() {
    let cfg = board_config(geometry_20(), 64, SLOW);
    let stream = random_stream(&cfg, 5, 2400, 3);
    let cmds = with_silence(&stream, 1600, 9000);
    let regular = without_unit_commands(&cfg, &cmds);
    let exact = PathParams {
        k: 9,
        board_id: 7,
        ports: 1,
        tick_ps: 7075,
        max_words: 24,
        share_log2: 2,
        burst_records: 1,
    };
    for p in [
        exact,
        PathParams {
            tick_ps: 7074,
            ..exact
        },
    ] {
        let shown = cosim::<2, 2, 8, 3, 1, 4, 20>(&cfg, &regular, p);
        assert_refusals(&shown);
        assert_eq!(shown.parts, 3, "records of three parts");
    }
    let p = PathParams {
        k: 11,
        ports: 2,
        tick_ps: 3537,
        max_words: 64,
        share_log2: 1,
        burst_records: 2,
        ..exact
    };
    let shown = cosim::<2, 2, 8, 3, 1, 4, 20>(&cfg, &cmds, p);
    assert_eq!(shown.unsent, 0, "every record sent");
    assert_eq!(shown.parts, 1, "records of one part");
    assert!(
        shown.packets.iter().any(|b| b.port == 1),
        "packets on both ports"
    );
}

/// The records held while another was: the path must have queued them.
fn assert_queued(shown: &Shown) {
    assert!(
        shown.queued > 0,
        "records must have been held while another was being sent"
    );
}

/// L = 2, E = 2 (the iCE40's shape) at `k = 6` and `k = 9`, with STATS_ON,
/// STATS_OFF and STATS_INTERVAL_k (k of 6..=9) cutting intervals short
/// and a silence that fills the credit: records of three parts (94
/// clocks each) come every 32 clocks at `k = 6`, or sooner, so that up to
/// `burst` (4) records are held at once, and the credit refuses most.
#[test]
fn statistics_packets_l2_e2_k6_and_k9_cut_short() {
    let cfg = board_config(geometry_20(), 64, SLOW);
    let stream = with_interval_commands(&cfg, &random_stream(&cfg, 11, 2000, 3), 6..=9, 2, 5);
    let cmds = with_silence(&stream, 900, 40_000);
    for k in [6, 9] {
        let p = PathParams {
            k,
            board_id: 5,
            ports: 1,
            tick_ps: 7075,
            max_words: 24,
            share_log2: 2,
            burst_records: 4,
        };
        let shown = cosim::<2, 2, 8, 3, 1, 4, 20>(&cfg, &cmds, p);
        assert_refusals(&shown);
        assert_queued(&shown);
        assert_eq!(shown.parts, 3, "records of three parts");
    }
}

/// L = 8, E = 3 (the ECP5 board's shape), 2 ranks of 8 banks (158
/// counters) at `k = 6`, `9` and `11`: three ports, records of three
/// parts (196 clocks each), the limit and the FIFO dropping, STATS_ON,
/// STATS_OFF and STATS_INTERVAL_k (k of 6..=11) cutting intervals short,
/// the credit refusing records and a silence filling it, so that up to
/// `burst` (4) records are held at once.
#[test]
fn statistics_packets_l8_e3_k6_k9_and_k11() {
    let cfg = board_config(geometry_24(), 64, SLOW);
    let stream = with_interval_commands(
        &cfg,
        &with_unused_activations(&random_stream(&cfg, 3, 3000, 12), 4, 7),
        6..=11,
        2,
        9,
    );
    let cmds = with_silence(&stream, 1500, 40_000);
    for k in [6, 9, 11] {
        let p = PathParams {
            k,
            board_id: 3,
            ports: 3,
            tick_ps: 2029,
            max_words: 64,
            share_log2: 2,
            burst_records: 4,
        };
        let shown = cosim::<8, 3, 16, 2, 2, 16, 24>(&cfg, &cmds, p);
        assert_refusals(&shown);
        assert_queued(&shown);
        assert_eq!(shown.parts, 3, "records of three parts");
        assert!(
            shown.packets.iter().any(|b| b.port == 2),
            "packets on every port"
        );
    }
}

/// The block at the boards' shapes (`ddr3-4g` with 3 ports and 360-word
/// packets; `ddr-512m` with one port) is lint clean with the capture
/// chain's waivers.
#[test]
fn statistics_packets_verilog_is_lint_clean() {
    for (name, preset, ports, lanes) in [
        ("stpk_ecp5", "ddr3-4g", 3, 8),
        ("stpk_ice40", "ddr-512m", 1, 2),
    ] {
        let mut uut = StatisticPackets::new(&StatsPacketConfig {
            geometry: line_geometry(&Geometry::preset(preset).unwrap()),
            lanes,
            board_id: 0,
            ports,
            tick_ps: 1250,
            max_words: 360,
            share_log2: 5,
            burst_records: 4,
        });
        uut.connect_all();
        verilator_lint(name, &generate_verilog(&uut), &["capture_lint.vlt"]);
    }
}
