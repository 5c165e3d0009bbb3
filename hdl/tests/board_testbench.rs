//! The whole board core's generated Verilog (`BoardTop`: capture chain,
//! packetizer, port buffers with their clock-domain crossing, framers)
//! simulated by Icarus Verilog with the testbench `verilog/board_tb.v`: it
//! reads a DDR command stream file (format.md section 1), drives the DIMM
//! pins and writes every GMII byte of every port. The frames (preamble,
//! SFD, inter-frame gap, FCS, IPv4/UDP headers) must carry exactly the
//! golden model's packets, word for word and each on its port, and the
//! board's counters must equal the golden model's (board.md 2.2). (L, E) =
//! (2, 2) and (8, 3), the two boards', with TX FIFO overflow (LOST words);
//! the (8, 3) stream also exceeds the references per clock and has
//! commands beyond the geometry. The (2, 2) run's frames also go through a
//! pcap file, tshark, the receiver and the merge tool (same trace as the
//! golden model's packets). Each run prints its speed in command clocks
//! per second.

mod board_support;
mod capture_support;
mod eth_support;
mod verilog_support;

use capture_support::with_out_of_range;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use board_support::*;
use hmtt_board_model::{BoardCounters, BoardPacket};
use hmtt_format::command::Command;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
use hmtt_hdl::gmii::{GmiiDecoder, WireFrame, MIN_GAP};
use rust_hdl::prelude::*;
use verilog_support::*;

/// Port data FIFOs of `2^6` words: two packets of up to 32 words.
const DN: usize = 6;
const DNP1: usize = 7;

/// `board_lanes`: packs the per-lane pins `pins$j$x` and per-port ports
/// `x$p` of the generated `top` into vectors for the testbench. The core's
/// `references_over_limit` and `clocks_over_limit` stay unconnected: the
/// testbench's output format predates them.
fn board_wrapper(lanes: usize, ports: usize) -> String {
    let (l, p) = (lanes, ports);
    let counters = [
        "fifo_fill",
        "events_dropped",
        "protocol_errors",
        "unknown_commands",
        "out_of_range",
        "config_events",
        "lost_words",
        "fifo_high_water",
        "time_fillers",
        "time_overflows",
    ];
    let mut v = String::new();
    writeln!(
        v,
        "module board_lanes(fabric_clock, eth_clock, cs_n, ras_n, cas_n, we_n, cke, ba, addr, txd, tx_en, tx_er, {}, packet_error, frame_underrun);",
        counters.join(", ")
    )
    .unwrap();
    writeln!(v, "input fabric_clock, eth_clock; input [{}:0] cs_n; input [{}:0] ras_n, cas_n, we_n, cke; input [{}:0] ba; input [{}:0] addr;", 4 * l - 1, l - 1, 4 * l - 1, 18 * l - 1).unwrap();
    writeln!(
        v,
        "output [{}:0] txd; output [{}:0] tx_en, tx_er; output [31:0] {}; output packet_error, frame_underrun;",
        8 * p - 1,
        p - 1,
        counters.join(", ")
    )
    .unwrap();
    write!(v, "top core(.fabric_clock(fabric_clock), .eth_clock(eth_clock), .packet_error(packet_error), .frame_underrun(frame_underrun)").unwrap();
    for c in counters {
        write!(v, ", .{c}({c})").unwrap();
    }
    for j in 0..l {
        write!(v, ", .pins${j}$cs_n(cs_n[{}:{}])", 4 * j + 3, 4 * j).unwrap();
        for pin in ["ras_n", "cas_n", "we_n", "cke"] {
            write!(v, ", .pins${j}${pin}({pin}[{j}])").unwrap();
        }
        write!(
            v,
            ", .pins${j}$ba(ba[{}:{}]), .pins${j}$addr(addr[{}:{}])",
            4 * j + 3,
            4 * j,
            18 * j + 17,
            18 * j
        )
        .unwrap();
    }
    for q in 0..p {
        write!(
            v,
            ", .txd${q}(txd[{}:{}]), .tx_en${q}(tx_en[{q}]), .tx_er${q}(tx_er[{q}])",
            8 * q + 7,
            8 * q
        )
        .unwrap();
    }
    writeln!(v, ");\nendmodule").unwrap();
    v
}

/// What the testbench saw.
struct TbRun {
    frames: Vec<Vec<WireFrame>>,
    counters: std::collections::BTreeMap<String, u64>,
    ticks: u64,
    seconds: f64,
    /// CPU seconds of the simulator process.
    cpu: f64,
}

/// Parses the testbench's output: GMII samples per port into frames (the
/// decoder checks preamble, SFD and the gap), counters.
fn parse_tb_output(text: &str, ports: usize) -> (Vec<Vec<WireFrame>>, Vec<(String, u64)>) {
    let mut decoders: Vec<GmiiDecoder> = (0..ports).map(|_| GmiiDecoder::new()).collect();
    // The next eth clock each port's decoder expects.
    let mut next_clock = vec![0u64; ports];
    let mut counters = vec![];
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["G", port, clock, byte, er] => {
                let p: usize = port.parse().unwrap();
                let clock: u64 = clock.parse().unwrap();
                assert!(clock >= next_clock[p], "eth clocks in order");
                // Idle clocks in between: only how many up to a frame
                // gap matters to the decoder.
                let idle = (clock - next_clock[p]).min(MIN_GAP as u64 + 1);
                for _ in 0..idle {
                    decoders[p].sample(false, false, 0);
                }
                let byte = u8::from_str_radix(byte, 16).unwrap();
                decoders[p].sample(true, *er == "1", byte);
                next_clock[p] = clock + 1;
            }
            ["C", name, value] => {
                let v = value
                    .parse()
                    .unwrap_or_else(|_| panic!("counter {name} is {value:?} at the end"));
                counters.push((name.to_string(), v));
            }
            _ => panic!("bad testbench output line {line:?}"),
        }
    }
    let frames = decoders
        .iter_mut()
        .enumerate()
        .map(|(p, d)| {
            d.sample(false, false, 0);
            assert!(
                d.errors().is_empty(),
                "GMII errors on port {p}: {:?}",
                d.errors()
            );
            d.take_frames()
        })
        .collect();
    (frames, counters)
}

/// A scratch directory with the generated `BoardTop<L, E, B, AB, P, DN, DNP1>`
/// for `top` (`top.v`), the wrapper (`lanes.v`) and `cmds` as a command
/// stream file (`commands.txt`).
fn prepare<const L: usize, const E: usize, const B: usize, const AB: usize, const P: usize>(
    name: &str,
    top: &BoardTopConfig,
    cmds: &[Command],
) -> PathBuf {
    let mut uut = BoardTop::<L, E, B, AB, P, DN, DNP1>::new(top);
    uut.connect_all();
    prepare_verilog(name, generate_verilog(&uut), L, P, cmds)
}

/// [`prepare`] for a `BoardTop` with the Statistic Unit (`S = 1`; port
/// FIFOs of `2^12` words, for the unit's burst of records).
fn prepare_with_statistics<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
>(
    name: &str,
    top: &BoardTopConfig,
    cmds: &[Command],
) -> PathBuf {
    let top = top.clone();
    // The unit makes a block too large for a test thread's stack.
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || {
            let mut uut = BoardTop::<L, E, B, AB, P, 12, 13, 1, R, NB, LB>::new(&top);
            uut.connect_all();
            let verilog = generate_verilog(&uut);
            assert_eq!(reads_before_writes(&verilog), Vec::<String>::new());
            verilog
        })
        .unwrap()
        .join()
        .unwrap();
    prepare_verilog(name, verilog, L, P, cmds)
}

fn prepare_verilog(
    name: &str,
    verilog: String,
    lanes: usize,
    ports: usize,
    cmds: &[Command],
) -> PathBuf {
    let dir = work_dir(name);
    std::fs::write(dir.join("top.v"), verilog).unwrap();
    std::fs::write(dir.join("lanes.v"), board_wrapper(lanes, ports)).unwrap();
    let mut text = String::new();
    for c in cmds {
        writeln!(text, "{c}").unwrap();
    }
    std::fs::write(dir.join("commands.txt"), text).unwrap();
    dir
}

/// Compiles the testbench with Icarus; returns the simulation command.
fn build_icarus(dir: &Path, lanes: usize, ports: usize) -> Vec<String> {
    require_tool("iverilog");
    require_tool("vvp");
    let out = Process::new("iverilog")
        .args([
            "-g2005",
            &format!("-DLANES={lanes}"),
            &format!("-DPORTS={ports}"),
        ])
        .args(["-o", "board.vvp"])
        .arg(format!("-I{}", verilog_dir().display()))
        .arg(verilog_dir().join("board_tb.v"))
        .args(["lanes.v", "top.v"])
        .current_dir(dir)
        .output()
        .expect("run iverilog");
    // iverilog can exit 0 after elaboration errors; the output file tells.
    assert!(
        out.status.success() && dir.join("board.vvp").exists(),
        "iverilog failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    vec!["vvp".into(), "-n".into(), "board.vvp".into()]
}

/// Compiles the testbench with Verilator (`--binary --timing`); returns the
/// simulation command. Lint warnings are the lint test's business here.
fn build_verilator(dir: &Path, lanes: usize, ports: usize) -> Vec<String> {
    require_tool("verilator");
    let out = Process::new("verilator")
        .args([
            "--binary",
            "--timing",
            "-O3",
            "-Wno-fatal",
            "-Wno-lint",
            "-Wno-UNOPTFLAT",
        ])
        .arg(format!("-DLANES={lanes}"))
        .arg(format!("-DPORTS={ports}"))
        .args(["--top-module", "board_tb", "-o", "board_sim"])
        .arg(format!("-I{}", verilog_dir().display()))
        .arg(verilog_dir().join("board_tb.v"))
        .args(["lanes.v", "top.v"])
        .current_dir(dir)
        .output()
        .expect("run verilator");
    assert!(
        out.status.success(),
        "verilator failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    vec!["obj_dir/board_sim".into()]
}

/// CPU seconds of this process (`RUSAGE_SELF`) or of its finished children
/// (`RUSAGE_CHILDREN`).
fn cpu_seconds(who: i32) -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Runs a built testbench for `ticks` command clocks.
fn run_tb(
    dir: &Path,
    program: &[String],
    lanes: usize,
    ports: usize,
    ticks: u64,
    eth_period: u64,
) -> TbRun {
    let clocks = ticks.div_ceil(lanes as u64);
    let cpu = cpu_seconds(libc::RUSAGE_CHILDREN);
    let start = std::time::Instant::now();
    let out = Process::new(&program[0])
        .args(&program[1..])
        .args(["+commands=commands.txt", "+out=gmii.txt"])
        .arg(format!("+clocks={clocks}"))
        .arg(format!("+fabric_half={}", TICK_TIME * lanes as u64 / 2))
        .arg(format!("+eth_half={}", eth_period / 2))
        .current_dir(dir)
        .output()
        .expect("run the testbench");
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds(libc::RUSAGE_CHILDREN) - cpu;
    assert!(
        out.status.success(),
        "testbench failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.join("gmii.txt")).expect("testbench output");
    let (frames, counters) = parse_tb_output(&text, ports);
    TbRun {
        frames,
        counters: counters.into_iter().collect(),
        ticks: clocks * lanes as u64,
        seconds,
        cpu,
    }
}

fn remove_scratch(dir: &Path) {
    if std::env::var_os("HMTT_HDL_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Generates `BoardTop<L, E, B, AB, P, DN, DNP1>` for `top`, runs the
/// Icarus testbench on `cmds` for `ticks` command clocks.
fn icarus_board<const L: usize, const E: usize, const B: usize, const AB: usize, const P: usize>(
    top: &BoardTopConfig,
    cmds: &[Command],
    ticks: u64,
    eth_period: u64,
) -> TbRun {
    let dir = prepare::<L, E, B, AB, P>(&format!("board_icarus_l{L}_e{E}"), top, cmds);
    let program = build_icarus(&dir, L, P);
    let run = run_tb(&dir, &program, L, P, ticks, eth_period);
    remove_scratch(&dir);
    run
}

/// Runs the testbench and compares frames and counters with the golden
/// model; returns the run and the golden model's packets and counters.
fn icarus_matches_golden<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
>(
    params: &BoardParams,
    cmds: &[Command],
    eth_period: u64,
) -> (TbRun, Vec<BoardPacket>, BoardCounters) {
    assert_eq!(params.fifo_depth, B << AB, "FIFO depths differ");
    assert_eq!((params.lanes, params.refs_per_clock), (L as u32, E as u32));
    assert!(2 * params.max_words <= 1 << DN);
    let (expected, counters) = golden(&params.golden_config(), cmds);
    let last_leave = expected.iter().map(|p| p.leave_tick).max().unwrap_or(0);
    let ticks = last_leave + params.tail_ticks(eth_period);
    let run = icarus_board::<L, E, B, AB, P>(&params.top_config(), cmds, ticks, eth_period);
    eprintln!(
        "icarus board L={L} E={E} P={P}: {} command clocks in {:.2} s ({:.2} CPU s) = {:.0} command clocks/s; {} packets, {} events dropped",
        run.ticks,
        run.seconds,
        run.cpu,
        run.ticks as f64 / run.seconds,
        expected.len(),
        counters.events_dropped
    );
    check_frames(&run.frames, &expected);
    let c = |name: &str| run.counters[name];
    assert_eq!(
        c("packet_error"),
        0,
        "port buffer overflow or descriptor collision"
    );
    assert_eq!(c("frame_underrun"), 0, "framer underrun");
    assert_eq!(c("fifo_fill"), 0, "FIFO drained");
    assert_eq!(
        c("events_dropped"),
        counters.events_dropped,
        "events dropped"
    );
    assert_eq!(c("lost_words"), counters.lost_words, "LOST words");
    assert_eq!(c("protocol_errors"), counters.protocol_errors);
    assert_eq!(c("unknown_commands"), counters.unknown_commands);
    assert_eq!(c("out_of_range"), counters.out_of_range);
    assert_eq!(c("config_events"), counters.config_events);
    assert_eq!(c("fifo_high_water"), counters.fifo_high_water);
    assert_eq!(c("time_fillers"), counters.time_fillers);
    assert_eq!(c("time_overflows"), counters.time_overflows);
    (run, expected, counters)
}

/// The iCE40 board's (L, E) = (2, 2): 28-bit lines, three ports, a 64-word
/// TX FIFO that overflows.
fn l2_params() -> BoardParams {
    BoardParams {
        lanes: 2,
        refs_per_clock: 2,
        geometry: geometry_28(),
        ports: 3,
        fifo_depth: 64,
        drain: SLOW,
        max_words: 24,
        idle_flush_ticks: 300,
    }
}

#[test]
fn icarus_board_l2_e2_matches_golden_then_receiver_and_merge() {
    let params = l2_params();
    let cmds = params.stream(31, 1500, 3);
    let (run, expected, counters) = icarus_matches_golden::<2, 2, 8, 3, 3>(&params, &cmds, 1000);
    assert!(
        counters.events_dropped > 0,
        "the stream must overflow the TX FIFO"
    );
    assert!(counters.lost_words > 0);
    assert!(expected.len() > 10);
    let path = eth_support::output_dir().join("board_icarus_l2_e2.pcap");
    let frames = frames_in_order(&run.frames);
    hmtt_hdl::gmii::write_pcap(std::fs::File::create(&path).unwrap(), &frames, 1000).unwrap();
    assert_eq!(eth_support::tshark_check(&path).len(), expected.len());
    let trace = receiver_merge_roundtrip(&path, &expected, &counters, 3, geometry_28());
    assert!(trace.len() > 150, "a real trace: {} records", trace.len());
}

/// The ECP5 board's (L, E) = (8, 3), two ports, a dense stream with
/// commands beyond the geometry mixed in.
#[test]
fn icarus_board_l8_e3_matches_golden() {
    let params = BoardParams {
        lanes: 8,
        refs_per_clock: 3,
        geometry: geometry_24(),
        ports: 2,
        fifo_depth: 64,
        drain: SLOW,
        max_words: 24,
        idle_flush_ticks: 300,
    };
    let legal = params.stream(32, 2000, 2);
    let cmds = with_out_of_range(&params.golden_config(), &legal, 33, 8);
    let (_, expected, counters) = icarus_matches_golden::<8, 3, 16, 2, 2>(&params, &cmds, 2000);
    assert!(
        counters.events_dropped > 0,
        "the stream must overflow the TX FIFO"
    );
    assert!(
        counters.references_over_limit > 0,
        "the stream must exceed the references per clock"
    );
    assert!(
        counters.out_of_range > 100,
        "out of range: {}",
        counters.out_of_range
    );
    assert!(expected.len() > 8);
}

/// Simulation speed of the whole board core in command clocks per second:
/// RustHDL, Icarus and Verilator on the same stream and design ((L, E) =
/// (2, 2), three ports, the (2, 2) test's parameters), each checked against the
/// golden model. A benchmark: `cargo test -p hmtt-hdl --test
/// board_testbench -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn board_simulation_speed() {
    let params = l2_params();
    let cmds = params.stream(31, 1500, 3);
    let (expected, _) = golden(&params.golden_config(), &cmds);
    let last_leave = expected.iter().map(|p| p.leave_tick).max().unwrap_or(0);
    let ticks = last_leave + params.tail_ticks(1000);
    let top = params.top_config();
    let cpu = cpu_seconds(libc::RUSAGE_SELF);
    let rust = run_board::<2, 2, 8, 3, 3, DN, DNP1>(&top, &cmds, expected.len(), ticks, 1000);
    let rust_cpu = cpu_seconds(libc::RUSAGE_SELF) - cpu;
    check_frames(&rust.frames, &expected);
    let dir = prepare::<2, 2, 8, 3, 3>("board_speed", &top, &cmds);
    let icarus = build_icarus(&dir, 2, 3);
    let icarus = run_tb(&dir, &icarus, 2, 3, ticks, 1000);
    check_frames(&icarus.frames, &expected);
    let start = std::time::Instant::now();
    let verilator = build_verilator(&dir, 2, 3);
    let build = start.elapsed().as_secs_f64();
    let verilator = run_tb(&dir, &verilator, 2, 3, ticks, 1000);
    check_frames(&verilator.frames, &expected);
    remove_scratch(&dir);
    println!(
        "board core L=2 E=2 P=3, {} packets; command clocks per second (wall) and CPU seconds",
        expected.len()
    );
    let row = |name: &str, ticks: u64, wall: f64, cpu: f64| {
        println!("{name:<10} {ticks:>8} ticks {wall:>8.2} s {cpu:>8.2} CPU s {:>10.0} /s {:>10.0} /CPU s", ticks as f64 / wall, ticks as f64 / cpu);
    };
    row("RustHDL", rust.ticks, rust.seconds, rust_cpu);
    row("Icarus", icarus.ticks, icarus.seconds, icarus.cpu);
    row(
        "Verilator",
        verilator.ticks,
        verilator.seconds,
        verilator.cpu,
    );
    println!("(Verilator build {build:.1} s, not included)");
}

/// The core with the Statistic Unit under Icarus (`L = 2`, `E = 2`, two
/// ports, one rank of 4 banks, `k = 11`, STATS_ON and STATS_OFF in the
/// stream, the TX FIFO overflowing): every port's frames are the golden
/// model's trace and statistics packets, no statistics packet behind a
/// trace packet that left after it, and the counters the model's.
#[test]
fn icarus_board_statistics_l2_e2_matches_golden() {
    let geometry = hmtt_format::geometry::Geometry::new(0, 2, 12, 6).unwrap();
    let params = BoardParams {
        lanes: 2,
        refs_per_clock: 2,
        geometry,
        ports: 2,
        fifo_depth: 64,
        drain: SLOW,
        max_words: 48,
        idle_flush_ticks: 300,
    };
    let su = hmtt_hdl::board_top::BoardStatistics {
        interval_log2: 11,
        share_log2: 1,
        burst_records: 2,
    };
    let cmds = params.stream(32, 6000, 4);
    let golden = golden_with_statistics(&params, su, &cmds);
    let last_leave = golden
        .trace
        .iter()
        .chain(&golden.statistics)
        .map(|p| p.leave_tick)
        .max()
        .unwrap_or(0);
    let ticks = last_leave + 4 * params.tail_ticks(1000);
    let top = params.top_config().with_statistics(su);
    let dir = prepare_with_statistics::<2, 2, 8, 3, 2, 1, 4, 20>("board_icarus_stats", &top, &cmds);
    let program = build_icarus(&dir, 2, 2);
    let run = run_tb(&dir, &program, 2, 2, ticks, 1000);
    remove_scratch(&dir);
    let stats = golden.counters.statistics.as_ref().unwrap();
    eprintln!(
        "icarus board with the Statistic Unit L=2 E=2 P=2: {} command clocks in {:.1} s; {} trace packets, {} statistics packets, records sent {} unsent {}",
        run.ticks,
        run.seconds,
        golden.trace.len(),
        golden.statistics.len(),
        stats.records_sent,
        stats.records_unsent,
    );
    assert!(golden.statistics.len() > 4 && stats.records_unsent > 0);
    assert_eq!(check_frames_with_statistics(&run.frames, &golden), 0);
    let c = |name: &str| run.counters[name];
    assert_eq!(c("packet_error"), 0, "port buffer overflow");
    assert_eq!(c("frame_underrun"), 0, "framer underrun");
    assert!(golden.counters.events_dropped > 0);
    assert_eq!(c("events_dropped"), golden.counters.events_dropped);
    assert_eq!(c("lost_words"), golden.counters.lost_words);
    assert_eq!(c("config_events"), golden.counters.config_events);
}
