//! Several simulated boards for the many-port capture (issue 42): their
//! packets, the boards' own capture files, the order the boards send them
//! in, and the comparison of the merge of a capture with the merge of the
//! boards' own files. Shared by `tests/many_boards.rs` and
//! `benches/receiver.rs`.

#![allow(dead_code)] // each includer uses its part

use std::io::Read;
use std::path::{Path, PathBuf};

use hmtt_board_model::output::CaptureWriters;
use hmtt_board_model::packetizer::BoardPacket;
use hmtt_format::events::EventNames;
use hmtt_format::packet::Packet;
use hmtt_merge::{merge_to_trace, CaptureSet, MergeOptions, MergeReport};
use hmtt_sim::machine::{simulate, SimConfig, SimOutput};
use hmtt_sim::workload::{Workload, WorkloadKind};

/// The simulated boards' streams.
pub struct Boards {
    pub out: SimOutput,
    /// Per board, its packets in seq order.
    pub packets: Vec<Vec<BoardPacket>>,
    pub ports: u8,
    pub interleave_shift: u32,
}

/// `boards` boards of `ports` ports each, tracing a sequential read of
/// `bytes` bytes with the cache off (full 1500-byte packets), each board's
/// stream then repeated, later in time and on in seq, until the boards
/// hold `packets` packets in all (at least the simulated ones).
pub fn simulated(boards: u8, ports: u8, bytes: u64, packets: u64) -> Boards {
    let workload = Workload::of_kind(WorkloadKind::SeqRead, bytes, 64, 4096).unwrap();
    let cfg = SimConfig::default()
        .workload(workload)
        .boards(boards)
        .ports(ports)
        .cache_off()
        .starting_now();
    let out = simulate(&cfg).unwrap();
    let simulated: u64 = out.packets.iter().map(|p| p.len() as u64).sum();
    let rounds = packets.div_ceil(simulated.max(1)).max(1);
    let packets = out
        .packets
        .iter()
        .map(|base| repeated(base, ports, rounds))
        .collect();
    Boards {
        packets,
        ports,
        interleave_shift: cfg.interleave_shift,
        out,
    }
}

/// `base` then `rounds - 1` copies of it, each shifted on in seq and
/// time. A copy keeps whole rounds of the ports (a packet's port is its
/// seq modulo the ports), so the base's tail past the last whole round
/// is left out when there are copies.
fn repeated(base: &[BoardPacket], ports: u8, rounds: u64) -> Vec<BoardPacket> {
    if rounds == 1 {
        return base.to_vec();
    }
    let n = base.len() - base.len() % usize::from(ports);
    let base = &base[..n];
    let span = base.iter().map(|p| p.leave_tick).max().unwrap_or(0) + 1;
    let mut all = Vec::with_capacity(n * rounds as usize);
    for r in 0..rounds {
        for p in base {
            let mut bytes = p.bytes.clone();
            let mut packet = Packet::new_unchecked(&mut bytes[..]);
            let t0 = packet.t0();
            packet.set_seq(p.seq + r * n as u64);
            packet.set_t0(t0 + r * span);
            all.push(BoardPacket {
                port: p.port,
                seq: p.seq + r * n as u64,
                leave_tick: p.leave_tick + r * span,
                bytes,
            });
        }
    }
    all
}

impl Boards {
    pub fn packet_count(&self) -> u64 {
        self.packets.iter().map(|p| p.len() as u64).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.packets
            .iter()
            .flatten()
            .map(|p| p.bytes.len() as u64)
            .sum()
    }

    pub fn ports_in_all(&self) -> usize {
        self.packets.len() * usize::from(self.ports)
    }

    /// Writes the boards' own capture files into `dir` (as `hmtt sim
    /// --out` does).
    pub fn write_own_files(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for (config, packets) in self.out.board_configs.iter().zip(&self.packets) {
            let mut w =
                CaptureWriters::create(dir, config, self.out.wall_start_ns, "hmtt sim").unwrap();
            w.write(packets).unwrap();
            w.finish().unwrap();
        }
    }

    /// Every packet as (receiver input, bytes) in the order the boards
    /// send them: by the tick each leaves its board, boards side by side.
    pub fn send_order(&self) -> Vec<(usize, &[u8])> {
        let ports = usize::from(self.ports);
        let mut all: Vec<(u64, usize, usize, &[u8])> =
            Vec::with_capacity(self.packet_count() as usize);
        for (b, packets) in self.packets.iter().enumerate() {
            for p in packets {
                all.push((
                    p.leave_tick,
                    b,
                    b * ports + usize::from(p.port),
                    &p.bytes[..],
                ));
            }
        }
        all.sort_by_key(|&(t, b, _, _)| (t, b));
        all.into_iter().map(|(_, _, dest, b)| (dest, b)).collect()
    }

    /// Merges the capture files under `dirs` into `trace`, interleaving the
    /// boards' channels as the simulated machine does.
    pub fn merge(&self, dirs: &[PathBuf], trace: &Path) -> MergeReport {
        let set = CaptureSet::open(dirs, 600_000_000_000).unwrap();
        let opts = MergeOptions {
            interleave_shift: (self.packets.len() > 1).then_some(self.interleave_shift),
            ..Default::default()
        };
        merge_to_trace(&set, &opts, trace, &EventNames::default(), &mut |_| {})
            .unwrap()
            .0
    }
}

/// Header bytes of a trace (docs/format.md §11) that differ between two
/// merges of the same packets: the start wall-clock time (the earliest
/// capture's start) and the header checksum over it.
const WALL_CLOCK: std::ops::Range<usize> = 64..72;
const HEADER_CHECKSUM: std::ops::Range<usize> = 140..144;

/// Whether two trace files are equal but for their start wall-clock time
/// (and so their header checksum).
pub fn same_trace(a: &Path, b: &Path) -> bool {
    let (mut fa, mut fb) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    if fa.metadata().unwrap().len() != fb.metadata().unwrap().len() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    let mut first = true;
    loop {
        let n = read_full(&mut fa, &mut ba);
        if read_full(&mut fb, &mut bb) != n {
            return false;
        }
        if n == 0 {
            return true;
        }
        if first {
            for r in [WALL_CLOCK, HEADER_CHECKSUM] {
                ba[r.clone()].fill(0);
                bb[r].fill(0);
            }
            first = false;
        }
        if ba[..n] != bb[..n] {
            return false;
        }
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]).unwrap() {
            0 => break,
            k => n += k,
        }
    }
    n
}
