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
mod frames;
pub mod tags;
pub mod writer;

use std::collections::HashMap;

use hmtt_format::config::{classify_event, EventKind};
use hmtt_format::klog::{DmaDirection, Event, RecordRepr};
use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::vtrace::{ref_flags, VirtualRecord, REF_DMA, REF_TRANSLATED};

pub use attribution::Ambiguity;
pub use hmtt_format::vtrace::Miss;
pub use tags::DEFAULT_WINDOW as DEFAULT_TAG_WINDOW;
pub use writer::VtraceWriter;

use attribution::{Decision, Processes};
use frames::{FastMap, FrameTable, Owner, Owners};
use hmtt_format::events::EventWindow;
use tags::{SeqWindow, Tag};

const PAGE_SHIFT: u32 = 12;
const PAGE_MASK: u64 = (1 << PAGE_SHIFT) - 1;
/// `BoardState::decided`'s mark of a frame decided per reference (a code
/// no `Ambiguity` has, in its bits).
const CONTESTED: u16 = CAUSE_MASK << CAUSE_SHIFT;
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

/// A log record that could not be placed at its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unplaced {
    /// Its tag was lost; applied at the end of the lost window (`tick`).
    LostTag { board: u8, seq: u64, tick: u64 },
    /// The trace ended before its tag (a log longer than the trace).
    NoTag { board: u8, seq: u64 },
}

/// A window of a board's stream covered by lost packets: the references in
/// it are unknown, and log records whose tags were in it are applied at its
/// end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostWindow {
    pub board: u8,
    /// Tick of the GAP_BEGIN (0 if the trace starts with the gap's end).
    pub from_tick: u64,
    /// Tick of the GAP_END.
    pub to_tick: u64,
    pub packets: u64,
}

/// Counters of a replay; `table3` and `table4` follow the paper.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    pub references: u64,
    pub translated: u64,
    /// Untranslated references by class, indexed by `Miss::code() - 1`.
    pub misses: [u64; 3],
    /// [cpu read, cpu write, dma read, dma write] (Table 3).
    pub table3: [u64; 4],
    /// DMA requests (buffers) by direction, their sizes in bytes (Table 4).
    pub dma_requests: HashMap<&'static str, Vec<u64>>,
    /// References attributed by rule to one of a frame's several owners,
    /// indexed by `Ambiguity::code() - 1`.
    pub ambiguous: [u64; 5],
    /// The log has SWITCH records: who runs is known.
    pub switches: bool,
    /// References made while a traced process was running (SWITCH
    /// records), and how many of them were not attributed for certain.
    pub while_traced: u64,
    pub unattributed_while_traced: u64,
    /// References that may be a traced process's: to a frame a traced
    /// process maps (the others are the kernel's or an untraced process's
    /// as far as the log tells), made while a traced process ran if the log
    /// says who runs; and how many of them were not attributed for certain
    /// (given to one of several owners by rule). The measure of
    /// `--max-unattributed`.
    pub attributable: u64,
    pub unattributed_attributable: u64,
    /// Log tags placed: each at its record, or at a number the log does
    /// not hold (`tags_without_record` of them).
    pub tags_placed: u64,
    /// Tags whose sequence number is beyond the log (a log shorter than the trace).
    pub tags_without_record: u64,
    /// Tags placed behind a later number (out of sequence order, within
    /// the window).
    pub tags_reordered: u64,
    /// Tags whose record had been applied without them (given up as lost
    /// when the window moved past, or a tag repeated): they change nothing.
    pub tags_late: u64,
    pub unplaced: Vec<Unplaced>,
    pub unplaced_count: u64,
    /// Of `unplaced_count`: records whose tags were lost, applied where
    /// that was found ([`Unplaced::LostTag`]), and records never applied
    /// ([`Unplaced::NoTag`]).
    pub lost_tags: u64,
    pub no_tags: u64,
    /// The lost windows (first 1000), and how many there were.
    pub lost_windows: Vec<LostWindow>,
    pub lost_window_count: u64,
    /// References handed on (passed the view).
    pub selected: u64,
}

impl ReplayReport {
    pub fn miss_rate(&self) -> f64 {
        if self.references == 0 {
            0.0
        } else {
            1.0 - self.translated as f64 / self.references as f64
        }
    }
    pub fn miss_count(&self, m: Miss) -> u64 {
        self.misses[usize::from(m.code() - 1)]
    }
    pub fn ambiguous_count(&self, a: Ambiguity) -> u64 {
        self.ambiguous[usize::from(a.code() - 1)]
    }
    /// Log records placed at their own tags.
    pub fn records_placed(&self) -> u64 {
        self.tags_placed - self.tags_without_record
    }
    /// References not attributed for certain: in a frame no process maps
    /// (nor a page table or a DMA buffer explains), or given to one of a
    /// frame's several owners by rule.
    pub fn unattributed(&self) -> u64 {
        self.miss_count(Miss::Unmapped) + self.ambiguous.iter().sum::<u64>()
    }
    /// The threshold on [`Self::unattributed_percent`] that applies: the
    /// one given, else [`DEFAULT_MAX_UNATTRIBUTED`] when the log says who
    /// runs (without SWITCH records no reference to a frame several
    /// processes map is certain, so no default applies).
    pub fn unattributed_limit(&self, given: Option<f64>) -> Option<f64> {
        given.or(self.switches.then_some(DEFAULT_MAX_UNATTRIBUTED))
    }
    /// The share (%) of references not attributed for certain among those
    /// the replay is expected to attribute ([`Self::attributable`]): to
    /// frames a traced process maps, made while a traced process ran (a
    /// log with SWITCH records) or whenever (a log without, which does not
    /// say who runs).
    pub fn unattributed_percent(&self) -> f64 {
        let (n, of) = (self.unattributed_attributable, self.attributable);
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
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
    /// Only between a TAG of the first event index and the next TAG of the
    /// second (on the same board), as often as the pair occurs.
    pub window: Option<(u32, u32)>,
}

impl ReplayFilter {
    pub fn is_empty(&self) -> bool {
        self.pid.is_none() && self.pa.is_none() && self.va.is_none() && self.window.is_none()
    }

    #[inline]
    fn accepts(&self, r: &VirtualRecord) -> bool {
        let translated = r.flags & REF_TRANSLATED != 0;
        if let Some(p) = self.pid {
            if !translated || r.pid != p {
                return false;
            }
        }
        if let Some((lo, hi)) = self.pa {
            if !(lo..hi).contains(&r.pa()) {
                return false;
            }
        }
        if let Some((lo, hi)) = self.va {
            if !translated || !(lo..hi).contains(&r.vaddr) {
                return false;
            }
        }
        true
    }
}

/// What a replay hands on besides the references.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOutput {
    /// Also hand on every record that is not a reference (tags, commands,
    /// losses, gaps), whatever the filter: a virtual trace keeps them.
    pub markers: bool,
}

fn dir_name(d: DmaDirection) -> &'static str {
    match d {
        DmaDirection::ToDevice => "to device (DMA read)",
        DmaDirection::FromDevice => "from device (DMA write)",
        DmaDirection::Bidirectional => "bidirectional",
        DmaDirection::None => "none",
    }
}

/// The board's view of the page its last reference fell in.
#[derive(Clone, Copy)]
struct CurrentPage {
    /// `u64::MAX`: none (state changed since).
    frame: u64,
    /// Record flags for a reference in this page (when `dma_partial` is off).
    flags: u8,
    /// `Ambiguity::code() << CAUSE_SHIFT` (0: the attribution is
    /// certain), and `TRACED_RUNNING` if a traced process runs.
    cause: u16,
    /// `flags | cause`: what the reference is counted as.
    key: u16,
    pid: u32,
    /// Virtual page base; with `offset_mask` 0 for untranslated pages.
    vbase: u64,
    offset_mask: u64,
    /// A DMA buffer covers part of the page: decide per reference.
    dma_partial: bool,
    /// Several running processes map the frame: decide per reference.
    contested: bool,
    /// `dma_partial || contested`.
    slow: bool,
    page_table: bool,
}

impl Default for CurrentPage {
    fn default() -> CurrentPage {
        CurrentPage {
            frame: u64::MAX,
            flags: 0,
            cause: 0,
            key: 0,
            pid: 0,
            vbase: 0,
            offset_mask: 0,
            dma_partial: false,
            contested: false,
            slow: false,
            page_table: false,
        }
    }
}

struct BoardState {
    tags: SeqWindow,
    frames: FrameTable,
    procs: Processes,
    /// Decisions on frames with several owners, until the next log record
    /// (`CONTESTED` for a frame decided per reference among the
    /// contenders kept in `contested`).
    decided: FastMap<u64, (u32, u64, u16)>,
    contested: FastMap<u64, Vec<(u32, u64)>>,
    /// The contenders for the current page's frame, if contested.
    contenders: Vec<(u32, u64)>,
    /// Live DMA buffers `[lo, hi)`.
    dma: Vec<(u64, u64)>,
    cur: CurrentPage,
    gap_from: u64,
}

impl BoardState {
    fn new(first_seq: u64, window: u64, switches: bool) -> BoardState {
        BoardState {
            tags: SeqWindow::new(first_seq, window),
            frames: FrameTable::default(),
            procs: Processes::new(switches),
            decided: FastMap::default(),
            contested: FastMap::default(),
            contenders: Vec::new(),
            dma: Vec::new(),
            cur: CurrentPage::default(),
            gap_from: 0,
        }
    }

    #[inline(never)]
    fn refresh(&mut self, frame: u64) {
        let running = if self.procs.traced_running() {
            TRACED_RUNNING
        } else {
            0
        };
        let (owners, page_table) = self.frames.lookup(frame);
        let (owner, cause) = match owners {
            Owners::None => (None, running),
            Owners::One { pid, vpn } if !self.procs.has_vm_users(pid) => {
                (Some((pid, vpn)), running)
            }
            owners => {
                // Decided once per frame until the log changes something
                // (a frame like the zero page can have thousands of owners).
                let (pid, vpn, why) = match self.decided.get(&frame) {
                    Some(&d) => d,
                    None => {
                        let mut contenders = Vec::new();
                        let decision = match owners {
                            Owners::Several(list) => self.procs.decide(list, &mut contenders),
                            Owners::One { pid, vpn } => self
                                .procs
                                .decide(&[Owner { pid, vpn, stamp: 0 }], &mut contenders),
                            Owners::None => unreachable!("handled above"),
                        };
                        let d = match decision {
                            Decision::Fixed(pid, vpn, why) => (
                                pid,
                                vpn,
                                why.map_or(0, |a| u16::from(a.code()) << CAUSE_SHIFT),
                            ),
                            Decision::Contested => {
                                let (pid, vpn) = contenders[0];
                                self.contested.insert(frame, contenders);
                                (pid, vpn, CONTESTED)
                            }
                        };
                        self.decided.insert(frame, d);
                        d
                    }
                };
                if why == CONTESTED {
                    self.contenders.clear();
                    if let Some(c) = self.contested.get(&frame) {
                        self.contenders.extend_from_slice(c);
                    }
                }
                (Some((pid, vpn)), running | why)
            }
        };
        let contested = owner.is_some() && cause & !TRACED_RUNNING == CONTESTED;
        let cause = if contested {
            running | (u16::from(Ambiguity::SeveralRunning.code()) << CAUSE_SHIFT)
        } else {
            cause
        };
        let cause = if owner.is_some() {
            cause | TRACED_FRAME
        } else {
            cause
        };
        let (lo, hi) = (frame << PAGE_SHIFT, (frame + 1) << PAGE_SHIFT);
        let mut whole = false;
        let mut partial = false;
        for &(a, b) in &self.dma {
            if a <= lo && hi <= b {
                whole = true;
            } else if a < hi && lo < b {
                partial = true;
            }
        }
        self.cur = match owner {
            Some((pid, vpn)) => CurrentPage {
                frame,
                flags: ref_flags(true, whole, None),
                cause,
                key: u16::from(ref_flags(true, whole, None)) | cause,
                pid,
                vbase: vpn << PAGE_SHIFT,
                offset_mask: PAGE_MASK,
                dma_partial: partial && !whole,
                contested,
                slow: contested || (partial && !whole),
                page_table,
            },
            None => CurrentPage {
                frame,
                flags: miss_flags(whole, page_table),
                cause,
                key: u16::from(miss_flags(whole, page_table)) | cause,
                pid: 0,
                vbase: 0,
                offset_mask: 0,
                dma_partial: partial && !whole,
                contested: false,
                slow: partial && !whole,
                page_table,
            },
        };
    }

    /// The board's references left `page` after one to `last_pa` at
    /// `pos`: while several CPUs run traced processes, a certain
    /// reference tells who referenced what lately.
    #[inline]
    fn left_page(&mut self, page: &CurrentPage, last_pa: u64, last_write: bool, pos: u64) {
        if self.procs.contested()
            && page.pid != 0
            && !page.contested
            && page.cause & (CAUSE_MASK << CAUSE_SHIFT) == 0
        {
            self.procs.contest.certain(
                page.pid,
                page.vbase | (last_pa & PAGE_MASK),
                last_write,
                pos,
            );
        }
    }

    /// A reference to `pa` in a page decided per reference (part
    /// DMA buffer, or contested): its flags, counting key, pid and
    /// virtual address.
    #[cold]
    #[inline(never)]
    fn slow_ref(&mut self, pa: u64, write: bool) -> (u8, u16, u32, u64) {
        let cur = self.cur;
        let flags = if cur.dma_partial {
            self.partial_flags(pa)
        } else {
            cur.flags
        };
        if !cur.contested {
            return (
                flags,
                u16::from(flags) | cur.cause,
                cur.pid,
                cur.vbase | (pa & cur.offset_mask),
            );
        }
        let (pid, vpn, why) = self
            .procs
            .contest
            .decide(&self.contenders, pa & PAGE_MASK, write);
        let keep = cur.cause & (TRACED_RUNNING | TRACED_FRAME);
        (
            flags,
            u16::from(flags) | keep | (u16::from(why.code()) << CAUSE_SHIFT),
            pid,
            (vpn << PAGE_SHIFT) | (pa & PAGE_MASK),
        )
    }

    /// Record flags of a reference to `pa` in a page only partly covered
    /// by DMA buffers.
    #[cold]
    fn partial_flags(&self, pa: u64) -> u8 {
        let dma = self.dma.iter().any(|&(lo, hi)| (lo..hi).contains(&pa));
        if self.cur.flags & REF_TRANSLATED != 0 {
            ref_flags(true, dma, None)
        } else {
            miss_flags(dma, self.cur.page_table)
        }
    }
}

#[inline]
fn miss_flags(dma: bool, page_table: bool) -> u8 {
    let miss = if dma {
        Miss::Dma
    } else if page_table {
        Miss::Kernel
    } else {
        Miss::Unmapped
    };
    ref_flags(false, dma, Some(miss))
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
    /// DMA_MAP records counted in Table 4, a bit per record.
    dma_counted: Vec<u64>,
    /// Records given up as lost by one tag (reused).
    lost: Vec<u64>,
    /// References by counting key and write bit: `key << 1 | write`.
    counts: [u64; 1024],
}

/// The record with sequence number `seq`, if the log holds it.
fn record_in(log: &[RecordRepr], first_seq: u64, seq: u64) -> Option<&RecordRepr> {
    let i = seq.checked_sub(first_seq)?;
    log.get(usize::try_from(i).ok()?).filter(|r| r.seq == seq)
}

impl<'l> Replayer<'l> {
    pub fn new(log: &'l [RecordRepr], filter: ReplayFilter) -> Replayer<'l> {
        Replayer {
            log,
            first_seq: log.first().map_or(0, |r| r.seq),
            boards: Vec::new(),
            seen: [false; 256],
            report: ReplayReport::default(),
            window: filter.window.map(|(a, b)| EventWindow::new(a, b)),
            filter,
            tag_window: DEFAULT_TAG_WINDOW,
            switches: log.iter().any(|r| matches!(r.event, Event::Switch { .. })),
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
            Event::Switch { prev } => st.procs.switch(rec.cpu, prev, rec.pid, seq),
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
            Event::Overrun { .. } => {}
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
            .map(|_| BoardState::new(self.first_seq, self.tag_window, self.switches))
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
                    }
                    let (flags, key, pid, vaddr) = if page.slow {
                        self.boards[board].slow_ref(pa, r.packed & 1 != 0)
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
                if let EventKind::LogSeq(low) = classify_event(index) {
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
                let ahead = (i + 1..trace.len()).map(|j| trace.get(j)).find_map(|x| {
                    if x.board() != board {
                        return None;
                    }
                    match x.kind() {
                        RecordKind::Tag { .. } => match classify_event(x.value() as u32) {
                            EventKind::LogSeq(low) => Some(low),
                            _ => None,
                        },
                        _ => None,
                    }
                });
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
        rep.ambiguous = [0; 5];
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
