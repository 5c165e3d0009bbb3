//! Faults a test of the capture path puts between the simulated boards and
//! the merge: packets not sent, sent twice or swapped with the next on
//! their port, and a capture file cut in the middle of a record. The
//! merge must report exactly what they take away (`hmtt demo`).

use std::collections::BTreeSet;
use std::path::Path;

use hmtt_format::capture::{CaptureReader, RECORD_HEADER_LEN};
use hmtt_format::Packet;

use crate::machine::{SimError, SimOutput};
use hmtt_board_model::BoardPacket;

/// Which packets go wrong, by (board id, seq).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults {
    /// Not sent.
    pub drop: BTreeSet<(u8, u64)>,
    /// Sent twice.
    pub duplicate: BTreeSet<(u8, u64)>,
    /// On every port, each `reorder`-th packet swaps places with the next
    /// one (0: none).
    pub reorder: usize,
}

/// `BOARD:NUMBER` as a fault is given (`--drop 0:5`, `--truncate 1:2`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardNumberError {
    #[error("'{0}' is not BOARD:NUMBER")]
    Shape(String),
    #[error("board in '{0}'")]
    Board(String),
    #[error(transparent)]
    Number(#[from] hmtt_format::text::NotANumber),
}

/// `BOARD:NUMBER`: a board id and a packet's seq or a port.
pub fn parse_board_number(s: &str) -> Result<(u8, u64), BoardNumberError> {
    let (b, n) = s
        .split_once(':')
        .ok_or_else(|| BoardNumberError::Shape(s.to_string()))?;
    let board = hmtt_format::text::parse_number(b)?;
    let board = u8::try_from(board).map_err(|_| BoardNumberError::Board(s.to_string()))?;
    Ok((board, hmtt_format::text::parse_number(n)?))
}

/// The packets of `out` whose (board id, seq) is in `lost`, with their
/// board ids.
pub fn lost_packets<'a>(
    out: &'a SimOutput,
    lost: &'a BTreeSet<(u8, u64)>,
) -> impl Iterator<Item = (u8, &'a [u8])> + 'a {
    out.packets
        .iter()
        .zip(&out.board_configs)
        .flat_map(move |(packets, config)| {
            let board = config.board_id;
            packets
                .iter()
                .filter(move |p| lost.contains(&(board, p.seq)))
                .map(move |p| (board, p.bytes.as_slice()))
        })
}

/// The receiver input (board index × ports + port, as [`Send::dest`]) of
/// port `port` of the board whose id is `board`; `None` if no such board.
pub fn input_of(out: &SimOutput, ports: u8, board: u8, port: u64) -> Option<u64> {
    let index = out.board_configs.iter().position(|c| c.board_id == board)?;
    Some(index as u64 * u64::from(ports) + port)
}

/// One packet to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Send<'a> {
    /// The tick it leaves its board.
    pub when: u64,
    /// The destination: board index × ports + port.
    pub dest: usize,
    pub bytes: &'a [u8],
    pub board: u8,
    pub seq: u64,
}

/// The boards' packets in the order the boards send them (by leave tick;
/// each port keeps its own order), with `faults` applied. A reordered
/// packet takes the send time of the place it moves to.
pub fn schedule<'a>(out: &'a SimOutput, faults: &Faults) -> Vec<Send<'a>> {
    let mut sends = Vec::new();
    for (bi, packets) in out.packets.iter().enumerate() {
        let config = &out.board_configs[bi];
        let (board, ports) = (config.board_id, usize::from(config.ports));
        let mut per_port: Vec<Vec<&BoardPacket>> = vec![Vec::new(); ports];
        for p in packets {
            per_port[usize::from(p.port)].push(p);
        }
        for (port, list) in per_port.iter_mut().enumerate() {
            let times: Vec<u64> = list.iter().map(|p| p.leave_tick).collect();
            if faults.reorder > 0 {
                let mut i = faults.reorder - 1;
                while i + 1 < list.len() {
                    list.swap(i, i + 1);
                    i += faults.reorder;
                }
            }
            let dest = bi * ports + port;
            for (p, &when) in list.iter().zip(&times) {
                if faults.drop.contains(&(board, p.seq)) {
                    continue;
                }
                let send = Send {
                    when,
                    dest,
                    bytes: &p.bytes,
                    board,
                    seq: p.seq,
                };
                sends.push(send);
                if faults.duplicate.contains(&(board, p.seq)) {
                    sends.push(send);
                }
            }
        }
    }
    // Stable: each port keeps its own order.
    sends.sort_by_key(|s| s.when);
    sends
}

/// A capture file cut short by [`cut_capture`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The file's new length.
    pub at: u64,
    /// The seqs of the packets cut off, the one cut through included.
    pub lost: Vec<u64>,
}

/// Cuts the capture file at `path` through the middle of its middle
/// record, as a capture that died there would leave it.
pub fn cut_capture(path: &Path) -> Result<Cut, SimError> {
    let io = |error| SimError::Io {
        path: path.display().to_string(),
        error,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let (_, reader) = CaptureReader::new(&bytes)
        .map_err(|e| SimError::Config(format!("{}: {e}", path.display())))?;
    let records: Vec<_> = reader.collect();
    if records.len() < 2 {
        return Err(SimError::Config(format!(
            "{} holds too few packets to cut",
            path.display()
        )));
    }
    let middle = &records[records.len() / 2];
    let at = (middle.offset + RECORD_HEADER_LEN + middle.packet.len() / 2) as u64;
    let lost = records[records.len() / 2..]
        .iter()
        .filter_map(|r| Packet::new_checked(r.packet).ok().map(|p| p.seq()))
        .collect();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(at))
        .map_err(io)?;
    Ok(Cut { at, lost })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{simulate, SimConfig};
    use crate::workload::Workload;

    fn run() -> SimOutput {
        let w = Workload::by_name("seq-read", 1 << 20, 64, 64).unwrap();
        simulate(&SimConfig::default().workload(w).boards(2).ports(3)).unwrap()
    }

    #[test]
    fn the_schedule_drops_duplicates_and_reorders() {
        let out = run();
        let all: usize = out.packets.iter().map(Vec::len).sum();
        assert!(all > 20, "{all} packets");
        let clean = schedule(&out, &Faults::default());
        assert_eq!(clean.len(), all);
        assert!(clean.windows(2).all(|w| w[0].when <= w[1].when));
        let faults = Faults {
            drop: BTreeSet::from([(0, 2), (1, 5)]),
            duplicate: BTreeSet::from([(0, 4)]),
            reorder: 2,
        };
        let sends = schedule(&out, &faults);
        assert_eq!(sends.len(), all - 2 + 1);
        let seqs = |board, dest| -> Vec<u64> {
            sends
                .iter()
                .filter(|s| s.board == board && s.dest == dest)
                .map(|s| s.seq)
                .collect()
        };
        // Board 0, port 1 carries seqs 1, 4, 7, 10, 13...; the second of
        // each pair swaps with the next, and 4 goes twice.
        assert_eq!(seqs(0, 1)[..5], [1, 7, 4, 4, 13]);
        assert!(!sends.iter().any(|s| (s.board, s.seq) == (1, 5)));
    }

    #[test]
    fn faults_name_boards_packets_and_ports() {
        assert_eq!(parse_board_number("1:0x10"), Ok((1, 16)));
        assert_eq!(
            parse_board_number("5").unwrap_err().to_string(),
            "'5' is not BOARD:NUMBER"
        );
        assert!(matches!(
            parse_board_number("256:1"),
            Err(BoardNumberError::Board(_))
        ));
        assert!(parse_board_number("0:x").is_err());
        let out = run();
        let lost = BTreeSet::from([(0, 2), (1, 5), (7, 1)]);
        let found: Vec<(u8, u64)> = lost_packets(&out, &lost)
            .map(|(b, bytes)| (b, Packet::new_checked(bytes).unwrap().seq()))
            .collect();
        assert_eq!(found, [(0, 2), (1, 5)]);
        assert_eq!(input_of(&out, 3, 1, 2), Some(5));
        assert_eq!(input_of(&out, 3, 7, 0), None);
    }

    #[test]
    fn a_cut_capture_loses_its_second_half() {
        let dir = tempfile::tempdir().unwrap();
        let out = run();
        out.write_dir(dir.path(), false).unwrap();
        let path = dir.path().join(crate::outdir::files::capture(0, 0));
        let before = std::fs::metadata(&path).unwrap().len();
        let cut = cut_capture(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), cut.at);
        assert!(cut.at < before);
        let port0: Vec<u64> = out.packets[0]
            .iter()
            .filter(|p| p.port == 0)
            .map(|p| p.seq)
            .collect();
        assert_eq!(cut.lost, port0[port0.len() / 2..]);
        assert!(cut_capture(&dir.path().join("missing.hmttcap")).is_err());
    }
}
