//! Replay (paper §4.6, §6.1, §6.3): the kernel log placed at its tags, the
//! page-table log applied in trace order to translate each physical
//! reference into (pid, virtual address), and each reference classified as
//! CPU or DMA (inside a logged DMA buffer between its DMA_MAP and DMA_UNMAP
//! tags). State is kept per board, because each board's stream carries the
//! tags in its own time order.
//!
//! Alignment: a tag carries `seq & 0xFFFF`; the full sequence number is the
//! one with those low bits nearest the board's next expected `seq` (within
//! a window, so wrap-around is handled and tags of several CPUs that reach
//! the trace out of order are placed; see [`tags`]). Tags lost with lost
//! packets are found when the next tag arrives: the records they announced
//! took effect inside the lost window, so they are applied at the window's
//! end (GAP_END), found by looking ahead to the next tag.
//!
//! Ownership: a frame can have several owners (copy-on-write after a fork,
//! shared memory, a vfork child using its parent's pages); who runs, from
//! the SWITCH records, decides a reference to it (see [`attribution`]).
//! FORK, EXEC and EXIT records start and end processes' address spaces.
//!
//! The hot path works block by block: records are read in blocks, each
//! reference is looked up only when its page differs from the board's
//! previous one, and the results go out as blocks of
//! [`hmtt_format::vtrace::VirtualRecord`]s (the virtual trace's records).

pub mod archive;
pub mod attribution;
mod board;
mod frames;
mod report;
mod summary;
pub mod tags;
pub mod writer;

use std::collections::HashMap;

use hmtt_format::config::{classify_event, EventKind};
use hmtt_format::klog::{DmaDirection, Event, RecordRepr};
use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::vtrace::{ref_flags, VirtualRecord, REF_DMA, REF_TRANSLATED};

pub use attribution::Ambiguity;
use board::{BoardState, CurrentPage, NO_CPU};
pub use hmtt_format::vtrace::Miss;
use report::dir_name;
pub use report::{LostWindow, ReplayFilter, ReplayOutput, ReplayReport, Unplaced};
pub use summary::{ReplaySummary, TooManyUnattributed};
pub use tags::DEFAULT_WINDOW as DEFAULT_TAG_WINDOW;
pub use writer::VtraceWriter;

use attribution::{Decision, Processes};
use frames::{CpuFrames, FastMap, FrameTable, Owner, Owners};
use hmtt_format::events::EventWindow;
use tags::{SeqWindow, Tag};

const PAGE_SHIFT: u32 = 12;
const PAGE_MASK: u64 = (1 << PAGE_SHIFT) - 1;
/// `BoardState::decided`'s mark of a frame decided per reference (a bit
/// above the counting key's, never counted).
const CONTESTED: u16 = 1 << 15;
/// Records read and handed on per block.
const BLOCK: usize = 1024;
/// Default `--max-unattributed`: the share (%) of the references that may
/// be a traced process's ([`ReplayReport::attributable`]) that may go
/// unattributed before the replay fails.
pub const DEFAULT_MAX_UNATTRIBUTED: f64 = 50.0;
/// Counting-key bit: a traced process was running (from SWITCH records).
/// Below it: the record flags (bits 0..3) and `Ambiguity::code()` (bits
/// 4..6).
const TRACED_RUNNING: u16 = 1 << 7;
/// Counting-key bit: a traced process maps the frame: the reference may be
/// a traced process's (the others are the kernel's or an untraced
/// process's, as far as the log tells).
const TRACED_FRAME: u16 = 1 << 8;
/// Counting-key bits of `Ambiguity::code()`.
const CAUSE_SHIFT: u32 = 4;
const CAUSE_MASK: u16 = 7;

/// Random access to trace records (a mapped trace file, or a slice).
pub trait RecordSource {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> TraceRecord;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Records `start..start + len` (clipped at the end), borrowed or
    /// decoded into `buf`.
    fn block<'s>(
        &'s self,
        start: usize,
        len: usize,
        buf: &'s mut Vec<TraceRecord>,
    ) -> &'s [TraceRecord] {
        let end = start.saturating_add(len).min(self.len());
        buf.clear();
        buf.extend((start..end).map(|i| self.get(i)));
        buf
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
    fn block<'s>(
        &'s self,
        start: usize,
        len: usize,
        _buf: &'s mut Vec<TraceRecord>,
    ) -> &'s [TraceRecord] {
        let end = start.saturating_add(len).min(self.len());
        &self[start.min(end)..end]
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
    fn block<'s>(
        &'s self,
        start: usize,
        len: usize,
        buf: &'s mut Vec<TraceRecord>,
    ) -> &'s [TraceRecord] {
        buf.clear();
        buf.extend(self.records_from(start).take(len));
        buf
    }
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

impl VirtualRef {
    /// The reference of a READ/WRITE virtual record.
    #[inline]
    pub fn from_record(r: &VirtualRecord) -> VirtualRef {
        VirtualRef {
            tick: r.tick,
            board: r.board(),
            pa: r.pa(),
            write: r.is_write(),
            dma: r.is_dma(),
            owner: r.owner(),
            miss: r.miss(),
        }
    }
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
    window: Option<EventWindow>,
    tag_window: u64,
    /// The log has SWITCH records.
    switches: bool,
    /// Frames only one CPU uses, from the log's CPU_AREA records.
    cpu_frames: CpuFrames,
    /// DMA_MAP records counted in Table 4, a bit per record.
    dma_counted: Vec<u64>,
    /// Records given up as lost by one tag (reused).
    lost: Vec<u64>,
    /// References by counting key and write bit: `key << 1 | write`.
    counts: [u64; 1024],
}

/// The low 16 bits of the sequence number a log tag carries, if `r` is
/// one (a TAG record of the log's I-code range).
pub(super) fn log_tag(r: &TraceRecord) -> Option<u16> {
    match r.kind() {
        RecordKind::Tag { .. } => match classify_event(r.value() as u32) {
            EventKind::LogSeq(low) => Some(low),
            _ => None,
        },
        _ => None,
    }
}

/// The record with sequence number `seq`, if the log holds it.
fn record_in(log: &[RecordRepr], first_seq: u64, seq: u64) -> Option<&RecordRepr> {
    let i = seq.checked_sub(first_seq)?;
    log.get(usize::try_from(i).ok()?).filter(|r| r.seq == seq)
}

impl<'l> Replayer<'l> {
    pub fn new(log: &'l [RecordRepr], filter: ReplayFilter) -> Replayer<'l> {
        let cpu_frames = CpuFrames::from_log(log);
        let (cpu_area_frames, cpu_area_cpus) = cpu_frames.counts();
        Replayer {
            log,
            first_seq: log.first().map_or(0, |r| r.seq),
            boards: Vec::new(),
            seen: [false; 256],
            report: ReplayReport {
                cpu_area_frames,
                cpu_area_cpus,
                ..ReplayReport::default()
            },
            window: filter.window.map(|(a, b)| EventWindow::new(a, b)),
            filter,
            tag_window: DEFAULT_TAG_WINDOW,
            switches: log.iter().any(|r| matches!(r.event, Event::Switch { .. })),
            cpu_frames,
            dma_counted: vec![0; log.len() / 64 + 1],
            lost: Vec::new(),
            counts: [0; 1024],
        }
    }

    /// How far (in sequence numbers) a tag may arrive out of order and
    /// still be placed (rounded up to a power of two, 64 to 32768).
    pub fn with_tag_window(mut self, window: u64) -> Replayer<'l> {
        self.tag_window = window;
        self
    }

    fn record(&self, seq: u64) -> Option<&'l RecordRepr> {
        record_in(self.log, self.first_seq, seq)
    }

    fn apply(&mut self, board: u8, seq: u64) {
        let Some(rec) = self.record(seq) else {
            return;
        };
        let st = &mut self.boards[usize::from(board)];
        st.cur = CurrentPage::default();
        if !st.decided.is_empty() {
            st.decided.clear();
        }
        match rec.event {
            Event::Map { vpn, pfn, pte_phys } | Event::SnapshotMap { vpn, pfn, pte_phys } => {
                st.frames.map(pfn, rec.pid, vpn);
                st.frames.mark_page_table(pte_phys >> PAGE_SHIFT);
            }
            Event::Unmap { vpn, pfn, pte_phys } => {
                st.frames.unmap(pfn, rec.pid, vpn);
                st.frames.mark_page_table(pte_phys >> PAGE_SHIFT);
            }
            Event::Exit { .. } => st.procs.exit(rec.pid, &mut st.frames),
            Event::Exec { .. } => st.procs.exec(rec.pid, rec.cpu, seq, &mut st.frames),
            Event::Fork { parent, flags, .. } => {
                st.procs
                    .fork(rec.pid, parent, flags, rec.cpu, seq, &mut st.frames)
            }
            Event::Switch { prev } => {
                st.procs.switch(rec.cpu, prev, rec.pid, seq);
                st.procs.switched_out(prev, &mut st.frames);
            }
            Event::DmaMap {
                addr, size, dir, ..
            } => {
                st.dma.push((addr, addr.saturating_add(size)));
                // Table 4 counts each request once, whichever board's tag
                // applies it first (every board carries every tag).
                let i = (seq - self.first_seq) as usize;
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                if self.dma_counted[word] & bit == 0 {
                    self.dma_counted[word] |= bit;
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
            // Known from the start (CpuFrames::from_log): what a CPU's
            // entry area and per-CPU variables occupy does not change.
            Event::Overrun { .. } | Event::CpuArea { .. } => {}
        }
    }

    /// Applies the records given up as lost (their effect at `tick`).
    fn apply_lost(&mut self, board: u8, tick: u64, lost: &[u64]) {
        for &seq in lost {
            self.note_unplaced(Unplaced::LostTag { board, seq, tick });
            self.apply(board, seq);
        }
    }

    /// Runs over every record; `out` gets each reference that passes the filter.
    pub fn run<S: RecordSource + ?Sized>(&mut self, trace: &S, out: &mut dyn FnMut(&VirtualRef)) {
        self.run_blocks(trace, ReplayOutput::default(), &mut |block| {
            for r in block {
                out(&VirtualRef::from_record(r));
            }
        });
    }

    /// Runs over every record; `out` gets, block by block and in trace
    /// order, the references that pass the filter (and the other records if
    /// `what.markers`), as virtual-trace records.
    pub fn run_blocks<S: RecordSource + ?Sized>(
        &mut self,
        trace: &S,
        what: ReplayOutput,
        out: &mut dyn FnMut(&[VirtualRecord]),
    ) {
        self.boards = (0..256)
            .map(|_| {
                BoardState::new(
                    self.first_seq,
                    self.tag_window,
                    self.switches,
                    self.cpu_frames.clone(),
                )
            })
            .collect();
        let n = trace.len();
        let selecting = !self.filter.is_empty();
        let mut buf = Vec::with_capacity(BLOCK);
        // Written by index, handed on as `virt[..used]`: no per-record
        // capacity check, no clearing.
        let mut virt = vec![VirtualRecord::default(); BLOCK];
        let mut start = 0;
        let mut selected = 0u64;
        let (mut run_key, mut run_len, mut run_writes) = (0u16, 0u64, 0u64);
        // The board and page of the previous reference (`packed >> 12`
        // holds both) and what replay says about that page, in locals.
        let mut page_key = u64::MAX;
        let mut page = CurrentPage::default();
        // The previous reference: its board, physical address, direction.
        let (mut last_board, mut last_pa, mut last_write) = (usize::MAX, 0u64, false);
        while start < n {
            let block = trace.block(start, BLOCK, &mut buf);
            let block = &block[..block.len().min(BLOCK)];
            if block.is_empty() {
                break;
            }
            let mut used = 0;
            for (k, r) in block.iter().enumerate() {
                if r.is_access() {
                    let pa = r.pa();
                    let board = usize::from(r.board());
                    if r.packed >> PAGE_SHIFT != page_key {
                        page_key = r.packed >> PAGE_SHIFT;
                        self.seen[board] = true;
                        if last_board == board {
                            self.boards[board].left_page(
                                &page,
                                last_pa,
                                last_write,
                                (start + k) as u64,
                            );
                        }
                        let st = &mut self.boards[board];
                        let frame = pa >> PAGE_SHIFT;
                        if frame != st.cur.frame {
                            st.refresh(frame);
                        }
                        page = st.cur;
                        if page.cpu != NO_CPU {
                            st.evidence = page.cpu;
                            st.evidence_at = (start + k) as u64;
                        }
                    }
                    let (flags, key, pid, vaddr) = if page.slow {
                        let pos = (start + k) as u64;
                        let st = &mut self.boards[board];
                        if page.contested && !st.ahead.covers(pos) {
                            let (log, first) = (self.log, self.first_seq);
                            st.look_ahead(trace, r.board(), pos, &|s| {
                                record_in(log, first, s).map(|rec| rec.cpu)
                            });
                        }
                        st.slow_ref(pa, r.packed & 1 != 0, pos)
                    } else {
                        (
                            page.flags,
                            page.key,
                            page.pid,
                            page.vbase | (pa & page.offset_mask),
                        )
                    };
                    (last_board, last_pa, last_write) = (board, pa, r.packed & 1 != 0);
                    // Counted in registers while the key stays the same
                    // (a counter in memory would chain every reference).
                    if key != run_key {
                        self.counts[usize::from(run_key) << 1] += run_len - run_writes;
                        self.counts[(usize::from(run_key) << 1) | 1] += run_writes;
                        (run_key, run_len, run_writes) = (key, 0, 0);
                    }
                    run_len += 1;
                    run_writes += r.packed & 1;
                    let v = VirtualRecord {
                        tick: r.tick,
                        packed: r.packed,
                        vaddr,
                        pid,
                        flags,
                    };
                    if selecting
                        && (self.window.as_ref().is_some_and(|w| !w.contains(r.board()))
                            || !self.filter.accepts(&v))
                    {
                        continue;
                    }
                    selected += 1;
                    virt[used] = v;
                    used += 1;
                } else {
                    self.marker(trace, start + k, *r);
                    // The log may have changed any board's pages.
                    page_key = u64::MAX;
                    if what.markers {
                        virt[used] = VirtualRecord::marker(*r);
                        used += 1;
                    }
                }
            }
            if used > 0 {
                out(&virt[..used]);
            }
            start += block.len();
        }
        self.counts[usize::from(run_key) << 1] += run_len - run_writes;
        self.counts[(usize::from(run_key) << 1) | 1] += run_writes;
        self.report.selected += selected;
        self.finish_counts();
        let end = self.first_seq.saturating_add(self.log.len() as u64);
        let (log, first) = (self.log, self.first_seq);
        let left: Vec<(u8, u64)> = self
            .boards
            .iter()
            .enumerate()
            .filter(|(b, _)| self.seen[*b])
            .flat_map(|(b, st)| {
                st.tags
                    .unsettled(end, |s| record_in(log, first, s).is_some())
                    .into_iter()
                    .map(move |s| (b as u8, s))
            })
            .collect();
        for (board, seq) in left {
            self.note_unplaced(Unplaced::NoTag { board, seq });
        }
    }

    /// A record other than a reference, at position `i` of the trace.
    fn marker<S: RecordSource + ?Sized>(&mut self, trace: &S, i: usize, r: TraceRecord) {
        let board = r.board();
        self.seen[usize::from(board)] = true;
        let (log, first) = (self.log, self.first_seq);
        let cpu_of = |s: u64| record_in(log, first, s).map(|rec| rec.cpu);
        match r.kind() {
            RecordKind::Tag { .. } => {
                let index = r.value() as u32;
                if let Some(w) = self.window.as_mut() {
                    w.tag(board, index);
                }
                if let Some(low) = log_tag(&r) {
                    let mut lost = std::mem::take(&mut self.lost);
                    lost.clear();
                    let tag = self.boards[usize::from(board)]
                        .tags
                        .tag(low, &cpu_of, &mut lost);
                    // Only reachable without a GAP_END (e.g. a capture cut
                    // short), or for another CPU's records whose tags did
                    // not come within the window.
                    self.apply_lost(board, r.tick, &lost);
                    self.lost = lost;
                    match tag {
                        Tag::Placed { seq, reordered } => {
                            self.apply(board, seq);
                            // The CPU that logged the record wrote its tag.
                            if let Some(rec) = self.record(seq) {
                                let st = &mut self.boards[usize::from(board)];
                                st.evidence = rec.cpu;
                                st.evidence_at = i as u64;
                            }
                            self.report.tags_placed += 1;
                            self.report.tags_reordered += u64::from(reordered);
                        }
                        Tag::NoRecord => {
                            self.report.tags_placed += 1;
                            self.report.tags_without_record += 1;
                        }
                        Tag::Late => self.report.tags_late += 1,
                    }
                }
            }
            RecordKind::GapBegin => self.boards[usize::from(board)].gap_from = r.tick,
            RecordKind::GapEnd => {
                let st = &mut self.boards[usize::from(board)];
                let window = LostWindow {
                    board,
                    from_tick: std::mem::take(&mut st.gap_from),
                    to_tick: r.tick,
                    packets: r.value(),
                };
                self.report.lost_window_count += 1;
                if self.report.lost_windows.len() < 1000 {
                    self.report.lost_windows.push(window);
                }
                // The records whose tags were in the lost packets took
                // effect inside the window: apply them now.
                let ahead = (i + 1..trace.len())
                    .map(|j| trace.get(j))
                    .find_map(|x| (x.board() == board).then(|| log_tag(&x)).flatten());
                // No tag follows: nothing tells which records were in
                // the window; they stay unplaced (reported at the end).
                if let Some(low) = ahead {
                    let upto = st.tags.resolve(low);
                    let mut lost = std::mem::take(&mut self.lost);
                    lost.clear();
                    st.tags.lose_below(upto, &cpu_of, &mut lost);
                    self.apply_lost(board, r.tick, &lost);
                    self.lost = lost;
                }
            }
            _ => {}
        }
    }

    /// Folds the per-key counters into the report.
    fn finish_counts(&mut self) {
        let rep = &mut self.report;
        rep.references = 0;
        rep.translated = 0;
        rep.misses = [0; 3];
        rep.ambiguous = [0; 7];
        rep.table3 = [0; 4];
        rep.switches = self.switches;
        rep.while_traced = 0;
        rep.unattributed_while_traced = 0;
        rep.attributable = 0;
        rep.unattributed_attributable = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            let (key, write) = ((i >> 1) as u16, i & 1);
            let flags = (key & 0xF) as u8;
            rep.references += c;
            if flags & REF_TRANSLATED != 0 {
                rep.translated += c;
            }
            if let Some(m) = Miss::from_code(flags >> 2) {
                rep.misses[usize::from(m.code() - 1)] += c;
            }
            let ambiguous = Ambiguity::from_code(((key >> CAUSE_SHIFT) & CAUSE_MASK) as u8);
            if let Some(a) = ambiguous {
                rep.ambiguous[usize::from(a.code() - 1)] += c;
            }
            let unattributed =
                ambiguous.is_some() || Miss::from_code(flags >> 2) == Some(Miss::Unmapped);
            if key & TRACED_RUNNING != 0 {
                rep.while_traced += c;
                if unattributed {
                    rep.unattributed_while_traced += c;
                }
            }
            if key & TRACED_FRAME != 0 && (!self.switches || key & TRACED_RUNNING != 0) {
                rep.attributable += c;
                if unattributed {
                    rep.unattributed_attributable += c;
                }
            }
            let dma = usize::from(flags & REF_DMA != 0);
            rep.table3[dma * 2 + write] += c;
        }
    }

    fn note_unplaced(&mut self, u: Unplaced) {
        self.report.unplaced_count += 1;
        match u {
            Unplaced::LostTag { .. } => self.report.lost_tags += 1,
            Unplaced::NoTag { .. } => self.report.no_tags += 1,
        }
        if self.report.unplaced.len() < 1000 {
            self.report.unplaced.push(u);
        }
    }
}
