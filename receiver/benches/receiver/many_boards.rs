//! HMTT_BENCH_BOARDS: many boards into one capture (the bench's header
//! comment has the scenario and its variables).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmtt_receiver::{Capture, CaptureConfig, Input, RxPath};

use super::sender::{self, SenderConfig};
use super::{boards, cpu_seconds, env_list, name_width, per_gbps, PORTS};

/// The many-board scenario: see the module's notes.
pub fn run(
    base: &Path,
    board_count: u8,
    seconds: f64,
    rx_paths: &[(String, RxPath, SenderConfig)],
) {
    let rates = env_list("HMTT_BENCH_BOARDS_RATES", "3");
    let rcvbuf_mib: usize = std::env::var("HMTT_BENCH_BOARDS_RCVBUF_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let senders: usize = std::env::var("HMTT_BENCH_BOARDS_SENDERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
        .clamp(1, usize::from(board_count));
    let top = rates.iter().cloned().fold(0.0, f64::max);
    let wanted = (top * 1e9 / 8.0 / 1500.0 * seconds) as u64;
    let t = Instant::now();
    let boards = boards::simulated(board_count, PORTS as u8, 64 << 20, wanted);
    let own = base.join("boards-own");
    let _ = std::fs::remove_dir_all(&own);
    boards.write_own_files(&own);
    let own_trace = base.join("boards-own.hmtttrace");
    let own_report = boards.merge(std::slice::from_ref(&own), &own_trace);
    let _ = std::fs::remove_dir_all(&own);
    let list = boards.send_order();
    let ip_bytes = boards.bytes() + 28 * boards.packet_count();
    let w = name_width(rx_paths.iter().map(|(name, _, _)| name));
    println!();
    println!(
        "== {board_count} simulated boards x {PORTS} ports = {} ports, {} packets ({:.0} MB \
         IPv4, mean {:.0} B), {rcvbuf_mib} MiB buffer per port, {senders} sending threads ==",
        boards.ports_in_all(),
        boards.packet_count(),
        ip_bytes as f64 / 1e6,
        ip_bytes as f64 / boards.packet_count() as f64
    );
    println!(
        "boards' own files merged: {} records ({:.1} s to simulate, write and merge)",
        own_report.records,
        t.elapsed().as_secs_f64()
    );
    println!(
        "{:<w$} {:>6} {:>6} {:>9} {:>8} {:>6} {:>6} {:>6} {:>7}  merge of the capture",
        "capture", "target", "sent", "sent", "lost", "cpu", "sender", "cpu", "cpu+snd"
    );
    println!(
        "{:<w$} {:>6} {:>6} {:>9} {:>8} {:>6} {:>6} {:>6} {:>7}  = boards' own merge",
        "", "Gb/s", "Gb/s", "packets", "packets", "cores", "cores", "/Gb/s", "/Gb/s"
    );
    for &gbps in &rates {
        for (name, rx, snd) in rx_paths {
            let dir = base.join("boards-capture");
            let _ = std::fs::remove_dir_all(&dir);
            let mut c = CaptureConfig::new(
                Input::loopback(board_count * PORTS as u8),
                vec![dir.clone()],
            );
            c.rx = *rx;
            c.progress = false;
            c.name = "bench".into();
            c.rcvbuf_bytes = rcvbuf_mib << 20;
            c.packets = Some(list.len() as u64);
            c.overwrite = true;
            c.duration = Some(Duration::from_secs_f64(
                ip_bytes as f64 * 8.0 / (gbps * 1e9) + 5.0,
            ));
            let handle = Capture::start(c, Arc::new(AtomicBool::new(false))).unwrap();
            let cpu0 = cpu_seconds(libc::RUSAGE_SELF);
            let dests: Vec<SocketAddr> = handle.local_addrs().iter().map(|a| a.unwrap()).collect();
            let s = sender::send_boards(*snd, &dests, &list, gbps, senders);
            let summary = handle.wait().unwrap();
            let cpu = (cpu_seconds(libc::RUSAGE_SELF) - cpu0 - s.cpu) / s.seconds;
            let sender = s.cpu / s.seconds;
            let got: u64 = summary.ports.iter().map(|p| p.written_packets).sum();
            let rate = ip_bytes as f64 * 8.0 / s.seconds / 1e9;
            let trace = base.join("boards-capture.hmtttrace");
            boards.merge(std::slice::from_ref(&dir), &trace);
            let same = boards::same_trace(&trace, &own_trace);
            let _ = std::fs::remove_file(&trace);
            let _ = std::fs::remove_dir_all(&dir);
            println!(
                "{:<w$} {:>6.1} {:>6.2} {:>9} {:>8} {:>6.2} {:>6.2} {:>6.3} {:>7.3}  {}",
                name,
                gbps,
                rate,
                s.packets,
                s.packets.saturating_sub(got),
                cpu,
                sender,
                per_gbps(cpu, rate),
                per_gbps(cpu + sender, rate),
                if same { "yes" } else { "NO" }
            );
        }
    }
    let _ = std::fs::remove_file(&own_trace);
}
