//! Co-simulation of the whole board core (`BoardTop`: capture chain,
//! packetizer, per-port clock-domain crossing, framers) against the golden
//! model (`hmtt_board_model::Board`, board.md 2.2): random legal command
//! streams go in on the DDR pins, Ethernet frames come out of the GMII
//! ports, and their UDP payloads must equal the golden model's packets byte
//! for byte (so word for word), each on the port it was dealt to; each
//! packet must leave the packetizer at the model's leave tick, and the
//! core's counters must equal the model's. (L, E) = (2, 2) (the iCE40
//! board), (8, 3) (the ECP5 board), (1, 1) and (4, 2); 8 and 16 banks, 24-
//! and 28-bit line indices, with and without TX FIFO overflow. The (2, 2)
//! run writes its frames to a pcap file that tshark must accept; it is left
//! at `$CARGO_TARGET_TMPDIR/hmtt-hdl/board_cosim_l2_e2.pcap` for the
//! receiver's tests, next to the golden model's packets of the same run as
//! capture files (`board_cosim_l2_e2.golden.port<p>.hmttcap`); the receiver
//! reads that pcap into capture files and the merge tool turns them into
//! the same trace as the golden model's packets. Each run prints its
//! simulation speed in command clocks (ticks) per second.

mod board_support;
mod capture_support;
mod eth_support;

use board_support::*;
use hmtt_board_model::{BoardPacket, DrainRate};
use hmtt_format::geometry::Geometry;

/// Builds both sides with the same parameters, runs them and compares.
fn cosim<const L: usize, const E: usize, const B: usize, const AB: usize, const P: usize>(
    params: &BoardParams,
    cmds_seed: u64,
    count: usize,
    max_gap: u64,
    eth_period: u64,
) -> (BoardRun, Vec<BoardPacket>) {
    assert_eq!(params.fifo_depth, B << AB, "FIFO depths differ");
    assert_eq!(params.ports as usize, P);
    assert_eq!((params.lanes, params.refs_per_clock), (L as u32, E as u32));
    let cmds = params.stream(cmds_seed, count, max_gap);
    let (expected, counters) = golden(&params.golden_config(), &cmds);
    let last_leave = expected.iter().map(|p| p.leave_tick).max().unwrap_or(0);
    let run = run_board::<L, E, B, AB, P, 12, 13>(
        &params.top_config(),
        &cmds,
        expected.len(),
        last_leave + params.tail_ticks(eth_period),
        eth_period,
    );
    eprintln!(
        "L={L} E={E} P={P}: {} ticks in {:.2} s = {:.0} command clocks per second; {} packets, {} events dropped, {} references over the limit",
        run.ticks,
        run.seconds,
        run.ticks as f64 / run.seconds,
        expected.len(),
        counters.events_dropped,
        counters.references_over_limit,
    );
    assert!(
        !run.packet_error,
        "port buffer overflow or descriptor collision"
    );
    assert!(!run.frame_underrun, "framer underrun");
    check_frames(&run.frames, &expected);
    check_leave_ticks_and_counters(&run, &expected, &counters);
    (run, expected)
}

fn params(
    (lanes, refs_per_clock): (u32, u32),
    geometry: Geometry,
    ports: u8,
    fifo_depth: usize,
    drain: DrainRate,
    max_words: usize,
    idle_flush_ticks: u64,
) -> BoardParams {
    BoardParams {
        lanes,
        refs_per_clock,
        geometry,
        ports,
        fifo_depth,
        drain,
        max_words,
        idle_flush_ticks,
    }
}

/// The iCE40 board's (L, E): the TX FIFO overflows; the frames go through
/// tshark, the receiver and the merge tool.
#[test]
fn board_l2_e2_24bit_overflow_matches_golden_and_tshark_reads_it() {
    let params = params((2, 2), geometry_24(), 3, 64, SLOW, 24, 300);
    let (run, expected) = cosim::<2, 2, 8, 3, 3>(&params, 21, 1200, 3, 1000);
    assert!(
        run.counters.events_dropped > 0,
        "the test must overflow the TX FIFO"
    );
    assert!(expected.len() > 8);
    // All ports' frames, in the order they started, as one capture file.
    let frames = frames_in_order(&run.frames);
    let path = eth_support::output_dir().join("board_cosim_l2_e2.pcap");
    hmtt_hdl::gmii::write_pcap(std::fs::File::create(&path).unwrap(), &frames, 1000).unwrap();
    let rows = eth_support::tshark_check(&path);
    assert_eq!(rows.len(), expected.len());
    // The golden model's packets of the same run, one capture file per
    // port, for the receiver/merge tests to compare the pcap against.
    write_golden_captures("board_cosim_l2_e2", &expected, 3, geometry_24());
    let (_, counters) = golden(&params.golden_config(), &params.stream(21, 1200, 3));
    let trace = receiver_merge_roundtrip(&path, &expected, &counters, 3, geometry_24());
    assert!(trace.len() > 150, "a real trace: {} records", trace.len());
}

/// The ECP5 board's (L, E) with 28-bit lines: the TX FIFO overflows, the
/// dense stream puts more than E references into some clocks, packets open
/// with an injected LINE_HI.
#[test]
fn board_l8_e3_28bit_overflow_and_limit_match_golden() {
    let params = params((8, 3), geometry_28(), 3, 64, SLOW, 24, 300);
    let (run, expected) = cosim::<8, 3, 16, 2, 3>(&params, 22, 2400, 2, 2000);
    assert!(
        run.counters.events_dropped > 0,
        "the test must overflow the TX FIFO"
    );
    assert!(
        run.counters.references_over_limit > 0,
        "the test must exceed the references per clock"
    );
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
fn board_l1_e1_28bit_no_overflow_matches_golden() {
    let params = params(
        (1, 1),
        geometry_28(),
        2,
        64,
        DrainRate { num: 1, den: 4 },
        40,
        500,
    );
    let (run, _) = cosim::<1, 1, 8, 3, 2>(&params, 23, 1200, 12, 1000);
    assert_eq!(run.counters.events_dropped, 0);
}

#[test]
fn board_l4_e2_24bit_line_rate_matches_golden() {
    let params = params(
        (4, 2),
        geometry_24(),
        3,
        64,
        DrainRate::line_rate(3, 64, 1250),
        64,
        400,
    );
    cosim::<4, 2, 8, 3, 3>(&params, 24, 2400, 6, 2000);
}
