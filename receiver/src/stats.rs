//! Counters shared by the receive threads, the writers and the status line,
//! and the JSON summary written at the end of a run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use hmtt_format::packet::Packet;
use hmtt_format::packet::HEADER_LEN;
use hmtt_format::record::{field, Opcode};
use serde::Serialize;

use crate::seq::{SeqCounts, SeqTracker};

/// Live counters of one input (port). Updated once per receive call.
#[derive(Debug, Default)]
pub struct PortCounters {
    pub packets: AtomicU64,
    pub records: AtomicU64,
    pub bytes: AtomicU64,
    pub rejects: AtomicU64,
    pub reject_bytes: AtomicU64,
    pub lost_words: AtomicU64,
    pub lost_refs: AtomicU64,
    pub kernel_drops: AtomicU64,
    pub ignored_frames: AtomicU64,
    pub written_packets: AtomicU64,
    pub unwritten_packets: AtomicU64,
    pub written_rejects: AtomicU64,
    /// Statistics packets (format.md §5.3): written with the valid
    /// packets, no part of the trace's sequence.
    pub statistics_packets: AtomicU64,
}

/// What one valid packet contributes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketInfo {
    pub board: u8,
    pub seq: u64,
    pub words: u64,
    pub lost_words: u64,
    pub lost_refs: u64,
}

/// What a datagram is.
#[derive(Debug, Clone, Copy)]
pub enum Datagram {
    Trace(PacketInfo),
    /// A statistics packet of a board's Statistic Unit (format.md §5.3).
    Statistics,
    Reject,
}

/// Checks a datagram: a trace packet, a statistics packet, or neither.
#[inline]
pub fn classify_datagram(bytes: &[u8]) -> Datagram {
    match inspect(bytes) {
        Some(info) => Datagram::Trace(info),
        None if hmtt_format::stats::StatsPart::parse(bytes).is_ok() => Datagram::Statistics,
        None => Datagram::Reject,
    }
}

/// Checks a datagram; `None` if it does not parse.
#[inline]
pub fn inspect(bytes: &[u8]) -> Option<PacketInfo> {
    let p = Packet::new_checked(bytes).ok()?;
    let (lost_words, lost_refs) = lost_counts(&bytes[HEADER_LEN..HEADER_LEN + 4 * p.nwords()]);
    Some(PacketInfo {
        board: p.board(),
        seq: p.seq(),
        words: p.nwords() as u64,
        lost_words,
        lost_refs,
    })
}

/// The LOST words among record `words` (little-endian) and the references
/// they say were lost. It runs on every word the capture receives, so the
/// inner loop keeps to 32-bit lanes without branches and loads each word
/// whole, which the compiler vectorises into plain vector loads (a u64 sum
/// of selected payloads kept it scalar, a fifth of the ring path's CPU at
/// 1500 bytes; a word built from its four bytes was gathered into the
/// lanes byte by byte). A 32-bit sum holds `BLOCK_WORDS` payloads, hence
/// the blocks.
#[inline]
fn lost_counts(words: &[u8]) -> (u64, u64) {
    const KIND: u32 = field::K_BIT | field::OP_MASK << field::OP_SHIFT;
    const LOST: u32 = field::K_BIT | (Opcode::Lost.bits() as u32) << field::OP_SHIFT;
    const BLOCK_WORDS: usize = (u32::MAX / field::PAYLOAD_MASK) as usize;
    let (mut lost_words, mut lost_refs) = (0u64, 0u64);
    for block in words.chunks(4 * BLOCK_WORDS) {
        let (mut hits, mut refs) = (0u32, 0u32);
        for w in block.chunks_exact(4) {
            let w = u32::from_le_bytes(w.try_into().expect("4 bytes"));
            let hit = u32::from(w & KIND == LOST);
            hits += hit;
            refs += w & field::PAYLOAD_MASK & hit.wrapping_neg();
        }
        lost_words += u64::from(hits);
        lost_refs += u64::from(refs);
    }
    (lost_words, lost_refs)
}

/// Per-call accumulator of one receive thread.
#[derive(Debug, Default)]
pub struct Tally {
    pub packets: u64,
    pub records: u64,
    pub bytes: u64,
    pub rejects: u64,
    pub reject_bytes: u64,
    pub lost_words: u64,
    pub lost_refs: u64,
    pub statistics: u64,
    pub seqs: Vec<(u8, u64)>,
    /// Copies of the statistics packets, kept for the live view
    /// (`hmtt capture --live`) when it runs.
    pub statistics_kept: Option<Vec<Vec<u8>>>,
}

impl Tally {
    /// The tally of a receive thread of the capture `shared`.
    pub fn of(shared: &Shared) -> Tally {
        Tally {
            statistics_kept: shared.live.as_ref().map(|_| Vec::new()),
            ..Tally::default()
        }
    }

    /// Counts a statistics packet, and keeps a copy for the live view.
    #[inline]
    pub fn statistics_packet(&mut self, bytes: &[u8]) {
        self.statistics += 1;
        if let Some(kept) = &mut self.statistics_kept {
            kept.push(bytes.to_vec());
        }
    }

    pub fn valid(&mut self, info: &PacketInfo, len: usize) {
        self.packets += 1;
        self.records += info.words;
        self.bytes += len as u64;
        self.lost_words += info.lost_words;
        self.lost_refs += info.lost_refs;
        self.seqs.push((info.board, info.seq));
    }
    pub fn reject(&mut self, len: usize) {
        self.rejects += 1;
        self.reject_bytes += len as u64;
    }
}

/// State shared by every thread of a capture.
pub struct Shared {
    pub ports: Vec<PortCounters>,
    boards: Mutex<Vec<Option<SeqTracker>>>,
    pub stop: std::sync::Arc<AtomicBool>,
    pub total_packets: AtomicU64,
    pub packet_limit: Option<u64>,
    pub dir_failed: Vec<AtomicBool>,
    pub errors: Mutex<Vec<String>>,
    pub stop_reason: Mutex<Option<String>>,
    /// The live view's queue, when `--live` runs.
    pub live: Option<std::sync::Arc<crate::live::LiveTap>>,
}

impl Shared {
    pub fn new(
        inputs: usize,
        dirs: usize,
        stop: std::sync::Arc<AtomicBool>,
        packet_limit: Option<u64>,
    ) -> Shared {
        Shared {
            ports: (0..inputs).map(|_| PortCounters::default()).collect(),
            boards: Mutex::new(vec![None; 256]),
            stop,
            total_packets: AtomicU64::new(0),
            packet_limit,
            dir_failed: (0..dirs).map(|_| AtomicBool::new(false)).collect(),
            errors: Mutex::new(Vec::new()),
            stop_reason: Mutex::new(None),
            live: None,
        }
    }

    /// Asks every thread to stop; the first reason given is kept.
    pub fn request_stop(&self, reason: &str) {
        let mut r = self.stop_reason.lock().unwrap_or_else(|e| e.into_inner());
        if r.is_none() {
            *r = Some(reason.to_string());
        }
        self.stop.store(true, Relaxed);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Relaxed)
    }

    pub fn error(&self, msg: String) {
        tracing::error!("{msg}");
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(msg);
    }

    /// Adds a receive call's counts of input `input`.
    pub fn add(&self, input: usize, t: &mut Tally) {
        let c = &self.ports[input];
        if t.packets > 0 {
            c.packets.fetch_add(t.packets, Relaxed);
            c.records.fetch_add(t.records, Relaxed);
            c.bytes.fetch_add(t.bytes, Relaxed);
            c.lost_words.fetch_add(t.lost_words, Relaxed);
            c.lost_refs.fetch_add(t.lost_refs, Relaxed);
            let mut boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
            for &(board, seq) in &t.seqs {
                boards[usize::from(board)]
                    .get_or_insert_with(|| SeqTracker::new(seq))
                    .record(seq);
            }
            drop(boards);
            let total = self.total_packets.fetch_add(t.packets, Relaxed) + t.packets;
            if self.packet_limit.is_some_and(|n| total >= n) {
                self.request_stop("packet count reached");
            }
        }
        if t.statistics > 0 {
            c.statistics_packets.fetch_add(t.statistics, Relaxed);
        }
        if let (Some(kept), Some(tap)) = (&mut t.statistics_kept, &self.live) {
            for packet in kept.drain(..) {
                tap.offer(packet);
            }
        }
        if t.rejects > 0 {
            c.rejects.fetch_add(t.rejects, Relaxed);
            c.reject_bytes.fetch_add(t.reject_bytes, Relaxed);
        }
        *t = Tally {
            seqs: std::mem::take(&mut t.seqs),
            statistics_kept: t.statistics_kept.take(),
            ..Tally::default()
        };
        t.seqs.clear();
    }

    /// Sequence counts of every board seen.
    pub fn boards(&self) -> Vec<BoardSummary> {
        let boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        boards
            .iter()
            .enumerate()
            .filter_map(|(b, t)| {
                t.as_ref().map(|t| BoardSummary {
                    board: b as u8,
                    seq: t.counts(),
                })
            })
            .collect()
    }
}

/// The JSON summary of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub name: String,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_ns: u64,
    pub duration_s: f64,
    pub stop_reason: String,
    /// False when anything was lost on the host side (write errors).
    pub ok: bool,
    pub ports: Vec<PortSummary>,
    pub boards: Vec<BoardSummary>,
    pub dirs: Vec<DirSummary>,
    pub errors: Vec<String>,
    /// With `--rx xdp`: how the XDP program was attached on each interface
    /// (`eth1: native`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub xdp_modes: Vec<String>,
    /// What the live view made of the run (`hmtt capture --live`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::live::LiveSummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PortSummary {
    pub port: u8,
    pub source: String,
    pub kind: String,
    /// Socket receive buffer obtained (bytes, as the kernel reports it) or pcap buffer asked for.
    pub buffer_bytes: Option<u64>,
    pub packets: u64,
    /// Record words in valid packets.
    pub records: u64,
    pub bytes: u64,
    pub rejects: u64,
    pub reject_bytes: u64,
    /// LOST control words: board FIFO overflows.
    pub lost_words: u64,
    /// References the board dropped, as the LOST words count them.
    pub lost_refs: u64,
    /// Datagrams the kernel dropped (SO_RXQ_OVFL, or pcap's drop count).
    pub kernel_drops: u64,
    /// pcap inputs: frames that were not the board's (ARP, other ports...).
    pub ignored_frames: u64,
    pub written_packets: u64,
    /// Valid packets received but not on disk (write errors).
    pub unwritten_packets: u64,
    #[serde(serialize_with = "paths_json")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BoardSummary {
    pub board: u8,
    #[serde(flatten)]
    pub seq: SeqCounts,
}

#[derive(Debug, Clone, Serialize)]
pub struct DirSummary {
    #[serde(serialize_with = "path_json")]
    pub path: PathBuf,
    pub bytes_written: u64,
    pub files: u64,
    pub failed: bool,
    pub error: Option<String>,
}

/// A path in the summary: a JSON string when it is UTF-8; otherwise an
/// object with the path shown lossily (`display`) and its bytes in hex
/// (`bytes_hex`), so that any directory a capture can write into can be
/// named in its summary, and the exact name is not lost.
fn path_json<S: serde::Serializer>(path: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    use std::os::unix::ffi::OsStrExt;
    match path.to_str() {
        Some(text) => s.serialize_str(text),
        None => {
            let hex: String = path
                .as_os_str()
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let mut o = s.serialize_struct("Path", 2)?;
            o.serialize_field("display", &path.to_string_lossy())?;
            o.serialize_field("bytes_hex", &hex)?;
            o.end()
        }
    }
}

fn paths_json<S: serde::Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    struct One<'a>(&'a std::path::Path);
    impl Serialize for One<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            path_json(self.0, s)
        }
    }
    let mut seq = s.serialize_seq(Some(paths.len()))?;
    for p in paths {
        seq.serialize_element(&One(p))?;
    }
    seq.end()
}

#[cfg(test)]
mod datagram_tests {
    use super::*;
    use hmtt_format::geometry::Geometry;
    use hmtt_format::stats::{CounterLayout, StatsRecord};

    #[test]
    fn statistics_packets_are_neither_trace_packets_nor_rejects() {
        let g = Geometry::ddr3_default();
        let r = StatsRecord {
            board: 0,
            flags: 1,
            start_tick: 0,
            end_tick: 1 << 16,
            interval_log2: 16,
            geometry: g,
            tick_ps: 1250,
            unsent_before: 0,
            counters: vec![1; CounterLayout::new(&g).len()],
            reuse: None,
        };
        let (_, _, bytes) = r.emit_packets(0, 3, 356).remove(0);
        assert!(matches!(classify_datagram(&bytes), Datagram::Statistics));
        assert!(matches!(
            classify_datagram(&bytes[..bytes.len() - 4]),
            Datagram::Reject
        ));
        assert!(matches!(classify_datagram(b"HMTT"), Datagram::Reject));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::record::RecordWord;

    #[test]
    fn lost_counts_agree_with_the_words_decoded_one_by_one() {
        // Every K bit and opcode, with payloads up to the field's top.
        let mut words = Vec::new();
        let mut x = 0x9e37_79b9u32;
        for i in 0..4096u32 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let op = (i % 16) << field::OP_SHIFT;
            let k = if i % 3 == 0 { 0 } else { field::K_BIT };
            words.push((x & !(field::K_BIT | field::OP_MASK << field::OP_SHIFT)) | op | k);
        }
        let (mut want_words, mut want_refs) = (0, 0);
        for &w in &words {
            let w = RecordWord(w);
            if w.is_control() && w.opcode() == Opcode::Lost {
                want_words += 1;
                want_refs += u64::from(w.payload());
            }
        }
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert!(want_words > 100);
        assert_eq!(lost_counts(&bytes), (want_words, want_refs));
    }

    #[test]
    fn lost_counts_do_not_overflow_on_a_jumbo_packet_of_lost_words() {
        // More words than one 32-bit block sums, every one LOST with the
        // largest payload.
        let word =
            field::K_BIT | (Opcode::Lost.bits() as u32) << field::OP_SHIFT | field::PAYLOAD_MASK;
        for n in [2047usize, 2048, 2049, 2235, 4097] {
            let bytes: Vec<u8> = (0..n).flat_map(|_| word.to_le_bytes()).collect();
            let want = (n as u64, n as u64 * u64::from(field::PAYLOAD_MASK));
            assert_eq!(lost_counts(&bytes), want, "{n} words");
            // A trailing part-word is not a word.
            let mut cut = bytes.clone();
            cut.push(0xff);
            assert_eq!(lost_counts(&cut), want, "{n} words and a byte");
        }
    }
}
