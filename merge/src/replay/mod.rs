//! Replay (paper §4.6, §6.1, §6.3): the kernel log placed at its tags, the
//! page-table log applied in trace order to translate each physical
//! reference into (pid, virtual address), and each reference classified as
//! CPU or DMA (inside a logged DMA buffer between its DMA_MAP and DMA_UNMAP
//! tags). State is kept per board, because each board's stream carries the
//! tags in its own time order.
//!
//! Alignment: a tag carries `seq & 0xFFFF`; the full sequence number is the
//! first one at or after the board's next expected `seq` with those low
//! bits, so wrap-around is handled. Tags lost with lost packets are found
//! when the next tag arrives; because tags come in log order, the records
//! they announced took effect inside the lost window, so they are applied at
//! the window's end (GAP_END), found by looking ahead to the next tag.

use std::collections::HashMap;

use hmtt_format::config::{classify_event, EventKind, LOG_SEQ_MASK};
use hmtt_format::klog::{DmaDirection, Event, RecordRepr};
use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};

const PAGE_SHIFT: u32 = 12;

/// Random access to trace records (a mapped trace file, or a slice).
pub trait RecordSource {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> TraceRecord;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RecordSource for [TraceRecord] {
    fn len(&self) -> usize {
        <[TraceRecord]>::len(self)
    }
    #[inline]
    fn get(&self, i: usize) -> TraceRecord {
        self[i]
    }
}

impl RecordSource for TraceView<'_> {
    fn len(&self) -> usize {
        TraceView::len(self)
    }
    #[inline]
    fn get(&self, i: usize) -> TraceRecord {
        self.record(i).expect("index below len")
    }
}

/// Why a reference has no (pid, virtual address).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Miss {
    /// Inside a DMA buffer, in a frame no process maps.
    Dma,
    /// A page-table page (a PTE address of the log) or the kernel's own memory.
    Kernel,
    /// A frame no process maps now.
    Unmapped,
}

/// One physical reference after replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualRef {
    pub tick: u64,
    pub board: u8,
    pub pa: u64,
    pub write: bool,
    /// Inside a DMA buffer being transferred: a device's access.
    pub dma: bool,
    /// The process mapping the frame, and the virtual address.
    pub owner: Option<(u32, u64)>,
    pub miss: Option<Miss>,
}

/// A log record that could not be placed at its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unplaced {
    /// Its tag was lost; applied at the end of the lost window (`tick`).
    LostTag { board: u8, seq: u64, tick: u64 },
    /// The trace ended before its tag (a log longer than the trace).
    NoTag { board: u8, seq: u64 },
}

/// Counters of a replay; `table3` and `table4` follow the paper.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    pub references: u64,
    pub translated: u64,
    pub misses: HashMap<Miss, u64>,
    /// [cpu read, cpu write, dma read, dma write] (Table 3).
    pub table3: [u64; 4],
    /// DMA requests (buffers) by direction: (count, bytes) (Table 4).
    pub dma_requests: HashMap<&'static str, Vec<u64>>,
    pub tags_placed: u64,
    /// Tags whose sequence number is beyond the log (a log shorter than the trace).
    pub tags_without_record: u64,
    pub unplaced: Vec<Unplaced>,
    pub unplaced_count: u64,
}

impl ReplayReport {
    pub fn miss_rate(&self) -> f64 {
        if self.references == 0 {
            0.0
        } else {
            1.0 - self.translated as f64 / self.references as f64
        }
    }
}

/// Which references to hand on.
#[derive(Debug, Clone, Default)]
pub struct ReplayFilter {
    pub pid: Option<u32>,
    /// Physical range `[lo, hi)`.
    pub pa: Option<(u64, u64)>,
    /// Virtual range `[lo, hi)` (only translated references match).
    pub va: Option<(u64, u64)>,
    /// Only between the first TAG of the first event index and the next
    /// TAG of the second.
    pub window: Option<(u32, u32)>,
}

impl ReplayFilter {
    fn accepts(&self, r: &VirtualRef) -> bool {
        if let Some(p) = self.pid {
            if r.owner.map(|o| o.0) != Some(p) {
                return false;
            }
        }
        if let Some((lo, hi)) = self.pa {
            if !(lo..hi).contains(&r.pa) {
                return false;
            }
        }
        if let Some((lo, hi)) = self.va {
            if !r.owner.is_some_and(|o| (lo..hi).contains(&o.1)) {
                return false;
            }
        }
        true
    }
}

fn dir_name(d: DmaDirection) -> &'static str {
    match d {
        DmaDirection::ToDevice => "to device (DMA read)",
        DmaDirection::FromDevice => "from device (DMA write)",
        DmaDirection::Bidirectional => "bidirectional",
        DmaDirection::None => "none",
    }
}

/// A fast hasher for frame numbers (multiplicative; no DoS concerns here).
#[derive(Default, Clone, Copy)]
struct FrameHasher(u64);

impl std::hash::Hasher for FrameHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

type FrameMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<FrameHasher>>;

#[derive(Default)]
struct BoardState {
    next_seq: u64,
    owner: FrameMap<(u32, u64)>,
    /// Frames of page tables (from PTE addresses in the log).
    pt_frames: FrameMap<()>,
    dma: Vec<(u64, u64)>,
    /// Last lookup (frame, owner): consecutive lines share a page.
    last: Option<(u64, Option<(u32, u64)>)>,
    in_window: bool,
}

/// Replays `trace` with the kernel `log` (records in `seq` order).
pub struct Replayer<'l> {
    log: &'l [RecordRepr],
    first_seq: u64,
    /// Indexed by board id; `seen` marks the boards present.
    boards: Vec<BoardState>,
    seen: [bool; 256],
    pub report: ReplayReport,
    filter: ReplayFilter,
    dma_counted_upto: u64,
}

impl<'l> Replayer<'l> {
    pub fn new(log: &'l [RecordRepr], filter: ReplayFilter) -> Replayer<'l> {
        Replayer {
            log,
            first_seq: log.first().map_or(0, |r| r.seq),
            boards: (0..256).map(|_| BoardState::default()).collect(),
            seen: [false; 256],
            report: ReplayReport::default(),
            filter,
            dma_counted_upto: 0,
        }
    }

    fn record(&self, seq: u64) -> Option<&'l RecordRepr> {
        let i = seq.checked_sub(self.first_seq)?;
        self.log
            .get(usize::try_from(i).ok()?)
            .filter(|r| r.seq == seq)
    }

    fn apply(&mut self, board: u8, seq: u64) {
        let Some(rec) = self.record(seq) else {
            self.report.tags_without_record += 1;
            return;
        };
        let st = &mut self.boards[usize::from(board)];
        st.last = None;
        match rec.event {
            Event::Map { vpn, pfn, pte_phys } | Event::SnapshotMap { vpn, pfn, pte_phys } => {
                st.owner.insert(pfn, (rec.pid, vpn));
                st.pt_frames.insert(pte_phys >> PAGE_SHIFT, ());
            }
            Event::Unmap { pfn, pte_phys, .. } => {
                st.owner.remove(&pfn);
                st.pt_frames.insert(pte_phys >> PAGE_SHIFT, ());
            }
            Event::Exit { .. } => st.owner.retain(|_, o| o.0 != rec.pid),
            Event::DmaMap {
                addr, size, dir, ..
            } => {
                st.dma.push((addr, addr.saturating_add(size)));
                // Table 4 counts each request once, whichever board's tag
                // applies it first (every board carries every tag).
                if seq >= self.dma_counted_upto {
                    self.dma_counted_upto = seq + 1;
                    self.report
                        .dma_requests
                        .entry(dir_name(dir))
                        .or_default()
                        .push(size);
                }
            }
            Event::DmaUnmap { addr, size, .. } => {
                let w = (addr, addr.saturating_add(size));
                if let Some(i) = st.dma.iter().position(|&d| d == w) {
                    st.dma.swap_remove(i);
                }
            }
            Event::Exec { .. } | Event::Overrun { .. } => {}
        }
    }

    /// The full sequence number a tag with low bits `low` stands for.
    fn resolve(next: u64, low: u16) -> u64 {
        let m = LOG_SEQ_MASK + 1;
        next + ((u64::from(low) + m - (next & LOG_SEQ_MASK)) & LOG_SEQ_MASK)
    }

    /// Runs over every record; `out` gets each reference that passes the filter.
    pub fn run<S: RecordSource + ?Sized>(&mut self, trace: &S, out: &mut dyn FnMut(&VirtualRef)) {
        for st in self.boards.iter_mut() {
            st.next_seq = self.first_seq;
        }
        let n = trace.len();
        for i in 0..n {
            let r = trace.get(i);
            let board = r.board();
            self.seen[usize::from(board)] = true;
            match r.kind() {
                RecordKind::Read | RecordKind::Write => {
                    let st = &mut self.boards[usize::from(board)];
                    let pa = r.pa();
                    let frame = pa >> PAGE_SHIFT;
                    let owner = match st.last {
                        Some((f, o)) if f == frame => o,
                        _ => {
                            let o = st.owner.get(&frame).copied();
                            st.last = Some((frame, o));
                            o
                        }
                    };
                    let owner = owner.map(|(pid, vpn)| (pid, (vpn << PAGE_SHIFT) | (pa & 0xfff)));
                    let dma =
                        !st.dma.is_empty() && st.dma.iter().any(|&(lo, hi)| (lo..hi).contains(&pa));
                    let write = r.kind() == RecordKind::Write;
                    let miss = if owner.is_some() {
                        None
                    } else if dma {
                        Some(Miss::Dma)
                    } else if st.pt_frames.contains_key(&frame) {
                        Some(Miss::Kernel)
                    } else {
                        Some(Miss::Unmapped)
                    };
                    let rep = &mut self.report;
                    rep.references += 1;
                    match miss {
                        None => rep.translated += 1,
                        Some(m) => *rep.misses.entry(m).or_default() += 1,
                    }
                    rep.table3[usize::from(dma) * 2 + usize::from(write)] += 1;
                    let window_ok = self.filter.window.is_none() || st.in_window;
                    let v = VirtualRef {
                        tick: r.tick,
                        board,
                        pa,
                        write,
                        dma,
                        owner,
                        miss,
                    };
                    if window_ok && self.filter.accepts(&v) {
                        out(&v);
                    }
                }
                RecordKind::Tag { .. } => {
                    let index = r.value() as u32;
                    if let Some((a, b)) = self.filter.window {
                        let st = &mut self.boards[usize::from(board)];
                        if index == a {
                            st.in_window = true;
                        } else if index == b {
                            st.in_window = false;
                        }
                    }
                    if let EventKind::LogSeq(low) = classify_event(index) {
                        let next = self.boards[usize::from(board)].next_seq;
                        let seq = Self::resolve(next, low);
                        for lost in next..seq {
                            // Only reachable without a GAP_END (e.g. a capture cut short).
                            self.note_unplaced(Unplaced::LostTag {
                                board,
                                seq: lost,
                                tick: r.tick,
                            });
                            self.apply(board, lost);
                        }
                        self.apply(board, seq);
                        self.report.tags_placed += 1;
                        self.boards[usize::from(board)].next_seq = seq + 1;
                    }
                }
                RecordKind::GapEnd => {
                    // The records whose tags were in the lost packets took
                    // effect inside the window: apply them now.
                    let next = self.boards[usize::from(board)].next_seq;
                    let ahead = (i + 1..n).map(|j| trace.get(j)).find_map(|x| {
                        if x.board() != board {
                            return None;
                        }
                        match x.kind() {
                            RecordKind::Tag { .. } => match classify_event(x.value() as u32) {
                                EventKind::LogSeq(low) => Some(Some(Self::resolve(next, low))),
                                _ => None,
                            },
                            _ => None,
                        }
                    });
                    // No tag follows: nothing tells which records were in
                    // the window; they stay unplaced (reported at the end).
                    let upto = match ahead {
                        Some(Some(s)) => s,
                        _ => next,
                    };
                    for lost in next..upto {
                        self.note_unplaced(Unplaced::LostTag {
                            board,
                            seq: lost,
                            tick: r.tick,
                        });
                        self.apply(board, lost);
                    }
                    if upto > next {
                        self.boards[usize::from(board)].next_seq = upto;
                    }
                }
                _ => {}
            }
        }
        let end = self.first_seq + self.log.len() as u64;
        let left: Vec<(u8, u64)> = self
            .boards
            .iter()
            .enumerate()
            .filter(|(b, _)| self.seen[*b])
            .flat_map(|(b, st)| (st.next_seq..end).map(move |s| (b as u8, s)))
            .collect();
        for (board, seq) in left {
            self.note_unplaced(Unplaced::NoTag { board, seq });
        }
    }

    fn note_unplaced(&mut self, u: Unplaced) {
        self.report.unplaced_count += 1;
        if self.report.unplaced.len() < 1000 {
            self.report.unplaced.push(u);
        }
    }
}
