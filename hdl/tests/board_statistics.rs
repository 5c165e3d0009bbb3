//! Co-simulation of the board core with its Statistic Unit (`BoardTop`
//! with `S = 1`: the unit on the capture chain's taps, the trace's drain at
//! the line rate less the unit's share, each port taking the statistics
//! packets before the trace's at a packet boundary) against the golden
//! model with the same unit (`run_commands_with_statistics`): every port's
//! Ethernet frames, decoded, are the model's trace packets and statistics
//! packets byte for byte, each on the port it was dealt to; the trace
//! packets leave the packetizer at the model's leave ticks; on each port
//! no statistics packet goes after a trace packet that left after it;
//! the core's
//! counters and the unit's records sent and unsent equal the model's. On
//! random streams whose inner commands switch the unit (STATS_ON,
//! STATS_OFF) and set its interval (STATS_INTERVAL_k) with the TX FIFO
//! overflowing, and on the simulator's quicksort stream, at `k` = 9, 11
//! and 12.

mod board_support;
mod capture_support;
mod eth_support;
mod statistics_support;

use board_support::*;
use hmtt_format::command::Command;
use hmtt_format::geometry::Geometry;
use hmtt_format::stats::StatsPart;
use hmtt_hdl::board_top::BoardStatistics;
use statistics_support::{geometry_20, with_interval_commands};

/// Builds both sides, runs them and compares; returns the model's output.
fn cosim<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    params: &BoardParams,
    su: BoardStatistics,
    cmds: &[Command],
    eth_period: u64,
) -> Golden {
    assert_eq!(params.fifo_depth, B << AB);
    assert_eq!((params.lanes, params.refs_per_clock), (L as u32, E as u32));
    let golden = golden_with_statistics(params, su, cmds);
    let top = params.top_config().with_statistics(su);
    let packets = golden.trace.len() + golden.statistics.len();
    let last_leave = golden
        .trace
        .iter()
        .chain(&golden.statistics)
        .map(|p| p.leave_tick)
        .max()
        .unwrap_or(0);
    let max_ticks = last_leave + 4 * params.tail_ticks(eth_period);
    let cmds = cmds.to_vec();
    // The unit makes a block too large for a test thread's stack.
    let run = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            run_board_with::<L, E, B, AB, P, 12, 13, 1, R, NB, LB>(
                &top, &cmds, packets, max_ticks, eth_period,
            )
        })
        .expect("simulation thread")
        .join()
        .expect("simulation");
    let su_counters = golden.counters.statistics.clone().expect("the unit");
    eprintln!(
        "L={L} E={E} P={P} k={}: {} ticks in {:.1} s; {} trace packets, {} statistics packets, \
         records sent {} unsent {}, {} events dropped",
        su.interval_log2,
        run.ticks,
        run.seconds,
        golden.trace.len(),
        golden.statistics.len(),
        su_counters.records_sent,
        su_counters.records_unsent,
        golden.counters.events_dropped,
    );
    assert!(!run.packet_error, "port buffer overflow");
    assert!(!run.frame_underrun, "framer underrun");
    let overtaken = check_frames_with_statistics(&run.frames, &golden);
    assert_eq!(
        overtaken, 0,
        "statistics packets sent after a trace packet that left after them"
    );
    check_leave_ticks_and_counters(&run, &golden.trace, &golden.counters);
    assert_eq!(
        run.stats_records,
        [su_counters.records_sent, su_counters.records_unsent, 0],
        "records sent, unsent, overrun"
    );
    golden
}

fn random_params(
    (lanes, refs_per_clock): (u32, u32),
    geometry: Geometry,
    ports: u8,
    max_words: usize,
) -> BoardParams {
    BoardParams {
        lanes,
        refs_per_clock,
        geometry,
        ports,
        fifo_depth: 64,
        // Replaced by the line rate less the unit's share.
        drain: SLOW,
        max_words,
        idle_flush_ticks: 300,
    }
}

/// Records of several parts on every port, some refused by the credit,
/// with the unit switched and its interval set by inner commands, the
/// TX FIFO overflowing.
fn assert_exercised(golden: &Golden, ports: u8) {
    let su = golden.counters.statistics.as_ref().unwrap();
    assert!(golden.counters.events_dropped > 0, "the TX FIFO overflows");
    assert!(su.records_sent >= 4, "records sent: {}", su.records_sent);
    let parts: Vec<StatsPart> = golden
        .statistics
        .iter()
        .map(|p| StatsPart::parse(&p.bytes).unwrap())
        .collect();
    assert!(parts.iter().any(|p| p.parts > 1), "records of parts");
    for port in 0..ports {
        assert!(parts.iter().any(|p| p.port == port), "port {port}");
    }
    let mut ks: Vec<u8> = parts.iter().map(|p| p.interval_log2).collect();
    ks.dedup();
    assert!(ks.len() > 1, "the interval changed: {ks:?}");
}

/// The ECP5's shape (L = 8, E = 3, 3 ports), 2 ranks of 8 banks, at
/// `k = 9` with STATS_INTERVAL_k setting 6..=9, a share of 1/2.
#[test]
fn board_statistics_l8_e3_random_k9_matches_golden() {
    let params = random_params((8, 3), geometry_24(), 3, 64);
    let cfg = params.golden_config();
    let cmds = with_interval_commands(&cfg, &params.stream(31, 3000, 3), 6..=9, 2, 7);
    let su = BoardStatistics {
        interval_log2: 9,
        share_log2: 1,
        burst_records: 4,
    };
    let golden = cosim::<8, 3, 16, 2, 3, 2, 16, 24>(&params, su, &cmds, 2000);
    assert_exercised(&golden, 3);
}

/// The iCE40's shape (L = 2, E = 2), here with 2 ports, one rank of 4
/// banks (20-bit lines), at `k = 11` with STATS_INTERVAL_k setting
/// 7..=9, a share of 1/2, a burst of 2.
#[test]
fn board_statistics_l2_e2_random_k11_matches_golden() {
    let params = random_params((2, 2), geometry_20(), 2, 48);
    let cfg = params.golden_config();
    let cmds = with_interval_commands(&cfg, &params.stream(32, 6000, 4), 7..=9, 2, 8);
    let su = BoardStatistics {
        interval_log2: 11,
        share_log2: 1,
        burst_records: 2,
    };
    let golden = cosim::<2, 2, 8, 3, 2, 1, 4, 20>(&params, su, &cmds, 1000);
    assert_exercised(&golden, 2);
}

/// The simulator's quicksort (cache off, its first 20,000 ticks) on the
/// ECP5's shape with `ddr3-4g` (2 ranks of 8 banks, 26-bit lines), the
/// TX FIFO of 16,384 words, at `k = 12` and a share of 1/8.
#[test]
fn board_statistics_l8_e3_quicksort_k12_matches_golden() {
    use hmtt_sim::machine::{simulate, SimConfig};
    use hmtt_sim::workload::Workload;
    let mut sim = SimConfig::default()
        .workload(Workload::by_name("quicksort", 3000, 4, 0).unwrap())
        .cache_off();
    sim.run_boards = false;
    let out = simulate(&sim).expect("simulation runs");
    let geometry = out.board_configs[0].geometry;
    assert_eq!(geometry, Geometry::ddr3_default());
    let cmds: Vec<Command> = out.commands[0]
        .iter()
        .filter(|c| c.cycle < 20_000)
        .copied()
        .collect();
    assert!(cmds.len() > 1000, "a real stream: {} commands", cmds.len());
    let params = BoardParams {
        lanes: 8,
        refs_per_clock: 3,
        geometry,
        ports: 3,
        fifo_depth: 16384,
        drain: SLOW,
        max_words: 128,
        idle_flush_ticks: 2000,
    };
    let su = BoardStatistics {
        interval_log2: 12,
        share_log2: 3,
        burst_records: 4,
    };
    let golden = cosim::<8, 3, 16, 10, 3, 2, 16, 26>(&params, su, &cmds, 2000);
    let stats = golden.counters.statistics.as_ref().unwrap();
    assert!(
        stats.records_sent >= 4,
        "records sent: {}",
        stats.records_sent
    );
    assert!(
        golden.trace.len() > 3,
        "trace packets: {}",
        golden.trace.len()
    );
}
