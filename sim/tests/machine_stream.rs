//! `stream::run_to_dir` writes, file for file and byte for byte, what
//! `SimOutput::write_dir` writes after a run held in memory, across boards,
//! ports, cache on and off, DMA and remapping workloads, runs long enough
//! to be handed over many times, and runs without boards. Streamed with
//! checks and a packet sink instead of files, the run hands over the held
//! run's packets in (leave tick, board) order and `dram::check`'s verdicts.
//! With `captures_only`, it writes the same files but the command streams
//! and the ground truth.

use hmtt_board_model::BoardPacket;
use hmtt_sim::dram::check;
use hmtt_sim::machine::{simulate, SimConfig, SimError, SimOutput};
use hmtt_sim::outdir::StreamSummary;
use hmtt_sim::stream::{run_streamed, run_to_dir, PacketSink, StreamOutputs, CHECK_KEEP};
use hmtt_sim::workload::Workload;
use std::collections::BTreeMap;
use std::path::Path;

fn read_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn same_files(cfg: &SimConfig) -> StreamSummary {
    let held = tempfile::tempdir().unwrap();
    let streamed = tempfile::tempdir().unwrap();
    let out = simulate(cfg).unwrap();
    out.write_dir(held.path(), true).unwrap();
    let summary = run_to_dir(cfg.clone(), streamed.path(), true).unwrap();
    let (a, b) = (read_dir(held.path()), read_dir(streamed.path()));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs");
    }
    assert_eq!(summary.truth_records, out.truth.len() as u64);
    assert_eq!(summary.klog_records, out.klog.len() as u64);
    assert_eq!(
        summary.commands,
        out.commands
            .iter()
            .map(|c| c.len() as u64)
            .collect::<Vec<_>>()
    );
    assert_eq!(summary.board_counters, out.board_counters);
    same_packets_and_checks(cfg, &out);
    same_captures_alone(cfg, &a);
    summary
}

/// With `captures_only`, the run writes every file of `full` but the
/// command streams and the ground truth, the same bytes.
fn same_captures_alone(cfg: &SimConfig, full: &BTreeMap<String, Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let outputs = StreamOutputs {
        dir: Some(dir.path()),
        captures_only: true,
        ..Default::default()
    };
    let summary = run_streamed(cfg.clone(), outputs).unwrap().summary;
    let left_out = |name: &str| name.starts_with("commands-b") || name.starts_with("truth.");
    let kept: BTreeMap<&String, &Vec<u8>> = full.iter().filter(|(n, _)| !left_out(n)).collect();
    assert!(kept.len() < full.len(), "a full run has truth and commands");
    let alone = read_dir(dir.path());
    assert_eq!(
        kept.keys().copied().collect::<Vec<_>>(),
        alone.keys().collect::<Vec<_>>(),
        "the files but truth and commands"
    );
    for (name, bytes) in kept {
        assert!(bytes == &alone[name], "{name} differs with captures alone");
    }
    assert!(summary.truth_records > 0, "the truth is still counted");
}

/// Collects what a streamed run hands over.
#[derive(Default)]
struct Collect {
    packets: Vec<(usize, BoardPacket)>,
    finished: bool,
}

impl PacketSink for Collect {
    fn packet(&mut self, board: usize, p: &BoardPacket) -> Result<(), SimError> {
        assert!(!self.finished);
        self.packets.push((board, p.clone()));
        Ok(())
    }
    fn finish(&mut self) -> Result<(), SimError> {
        self.finished = true;
        Ok(())
    }
}

fn same_packets_and_checks(cfg: &SimConfig, out: &SimOutput) {
    let mut sink = Collect::default();
    let run = run_streamed(
        cfg.clone(),
        StreamOutputs {
            check: true,
            packets: Some(&mut sink),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(sink.finished);
    let mut held: Vec<(usize, &BoardPacket)> = out
        .packets
        .iter()
        .enumerate()
        .flat_map(|(b, ps)| ps.iter().map(move |p| (b, p)))
        .collect();
    held.sort_by_key(|&(b, p)| (p.leave_tick, b));
    assert_eq!(sink.packets.len(), held.len());
    for (i, ((b, p), (hb, hp))) in sink.packets.iter().zip(&held).enumerate() {
        assert!(
            b == hb && p == *hp,
            "packet {i}: board {b} seq {} vs board {hb} seq {}",
            p.seq,
            hp.seq
        );
    }
    assert_eq!(run.checks.len(), out.commands.len());
    for (b, (kept, total)) in run.checks.iter().enumerate() {
        let all = check(&out.commands[b], &cfg.geometry, &cfg.controller.timing);
        assert_eq!(*total, all.len() as u64, "board {b}");
        assert_eq!(kept[..], all[..all.len().min(CHECK_KEEP)], "board {b}");
    }
}

#[test]
fn one_board_cache_on_and_off() {
    let s = same_files(&SimConfig::default().workload(Workload::Quicksort { n: 3000 }));
    same_files(
        &SimConfig::default()
            .workload(Workload::by_name("seq-write", 4 << 20, 64, 4096).unwrap())
            .cache_off(),
    );
    assert!(s.stats.ops > 4 * 16384);
}

#[test]
fn several_boards_and_ports_with_dma_and_remaps() {
    let s = same_files(
        &SimConfig::default()
            .workload(Workload::mix(64 << 10))
            .boards(3)
            .ports(2),
    );
    let s2 = same_files(
        &SimConfig::default()
            .workload(Workload::by_name("random-read", 8 << 20, 64, 4096).unwrap())
            .cache_off()
            .boards(2)
            .ports(3),
    );
    // Handed over many times (every 16384 operations).
    assert!(s.stats.ops > 4 * 16384 && s2.stats.ops > 4 * 16384);
    assert!(s.packets.iter().chain(&s2.packets).all(|&p| p > 0));
}

#[test]
fn without_boards_and_with_overflow() {
    let mut cfg = SimConfig::default()
        .workload(Workload::by_name("seq-read", 2 << 20, 64, 4096).unwrap())
        .cache_off();
    cfg.run_boards = false;
    same_files(&cfg);
    let mut cfg = SimConfig::default()
        .workload(Workload::by_name("seq-read", 2 << 20, 64, 4096).unwrap())
        .cache_off()
        .ports(1);
    cfg.board.fifo_depth = 64;
    cfg.cpu_ticks_per_ref = 1;
    let out = simulate(&cfg).unwrap();
    assert!(
        out.board_counters[0].events_dropped > 0,
        "the FIFO overflows"
    );
    same_files(&cfg);
}
