//! A board's replay state: its tag window, frame table, processes, the
//! decisions on contested frames, its live DMA buffers, and the page its
//! last reference fell in ([`CurrentPage`]), which lets the hot path skip
//! the lookup while references stay in one page.

use super::*;

/// How far (in trace records) the replay looks ahead for a reference
/// that tells which CPU is issuing.
const LOOK_AHEAD: u64 = 1 << 16;

/// The board's view of the page its last reference fell in.
#[derive(Clone, Copy)]
pub(super) struct CurrentPage {
    /// `u64::MAX`: none (state changed since).
    pub(super) frame: u64,
    /// Record flags for a reference in this page (when `dma_partial` is off).
    pub(super) flags: u8,
    /// `Ambiguity::code() << CAUSE_SHIFT` (0: the attribution is
    /// certain), and `TRACED_RUNNING` if a traced process runs.
    pub(super) cause: u16,
    /// `flags | cause`: what the reference is counted as.
    pub(super) key: u16,
    pub(super) pid: u32,
    /// Virtual page base; with `offset_mask` 0 for untranslated pages.
    pub(super) vbase: u64,
    pub(super) offset_mask: u64,
    /// A DMA buffer covers part of the page: decide per reference.
    pub(super) dma_partial: bool,
    /// Several running processes map the frame: decide per reference.
    pub(super) contested: bool,
    /// `dma_partial || contested`.
    pub(super) slow: bool,
    pub(super) page_table: bool,
    /// While several CPUs run traced processes: the one CPU whose process
    /// uses the frame, if one does ([`NO_CPU`]: none, or several).
    pub(super) cpu: u16,
}

/// `CurrentPage::cpu` and `Ahead::cpu` of none.
pub(super) const NO_CPU: u16 = u16::MAX;

/// The next telling reference (see [`BoardState::evidence`]) after the
/// position the last look-ahead started from: at `at`, made by `cpu`
/// (`NO_CPU`: none up to `at`, where the look-ahead stopped).
#[derive(Clone, Copy, Default)]
pub(super) struct Ahead {
    pub(super) at: u64,
    pub(super) cpu: u16,
}

impl Ahead {
    /// Whether this look-ahead tells the next telling reference after
    /// position `pos` (positions only grow within a replay, so any
    /// before `at` is past where it started).
    #[inline]
    pub(super) fn covers(&self, pos: u64) -> bool {
        pos < self.at
    }
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
            cpu: NO_CPU,
        }
    }
}

pub(super) struct BoardState {
    pub(super) tags: SeqWindow,
    pub(super) frames: FrameTable,
    pub(super) procs: Processes,
    /// Decisions on frames with several owners, until the next log record
    /// (`CONTESTED` for a frame decided per reference among the
    /// contenders kept in `contested`).
    pub(super) decided: FastMap<u64, (u32, u64, u16)>,
    pub(super) contested: FastMap<u64, Vec<(u32, u64)>>,
    /// The contenders for the current page's frame, if contested.
    pub(super) contenders: Vec<(u32, u64)>,
    /// Live DMA buffers `[lo, hi)`.
    pub(super) dma: Vec<(u64, u64)>,
    pub(super) cur: CurrentPage,
    pub(super) gap_from: u64,
    /// The CPU that made the board's last telling reference: a log tag
    /// (the CPU that logged the record), or a reference to a frame only
    /// one CPU's process uses ([`NO_CPU`]: none yet).
    pub(super) evidence: u16,
    /// Where the board's last telling reference was (0: none yet); for a
    /// run of references to a telling page, the position after its last.
    pub(super) evidence_at: u64,
    /// The next telling reference, as far as the last look-ahead saw.
    pub(super) ahead: Ahead,
    /// Frames a CPU uses alone: references to them are telling too.
    pub(super) cpu_frames: CpuFrames,
}

impl BoardState {
    pub(super) fn new(
        first_seq: u64,
        window: u64,
        switches: bool,
        cpu_frames: CpuFrames,
    ) -> BoardState {
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
            evidence: NO_CPU,
            evidence_at: 0,
            ahead: Ahead::default(),
            cpu_frames,
        }
    }

    /// The one CPU whose references `frame` tells, under the present
    /// state: a CPU's own frame, or a frame only one CPU's running
    /// process maps.
    #[inline]
    fn telling_cpu(&self, frame: u64, owners: &Owners<'_>) -> Option<u16> {
        self.procs
            .only_cpu(owners)
            .or_else(|| self.cpu_frames.cpu(frame))
    }

    #[inline(never)]
    pub(super) fn refresh(&mut self, frame: u64) {
        let running = if self.procs.traced_running() {
            TRACED_RUNNING
        } else {
            0
        };
        let (owners, page_table) = self.frames.lookup(frame);
        let cpu = if self.procs.contested() {
            self.telling_cpu(frame, &owners).unwrap_or(NO_CPU)
        } else {
            NO_CPU
        };
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
                cpu,
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
                cpu,
            },
        };
    }

    /// The board's references left `page` after one to `last_pa` at
    /// `pos`: while several CPUs run traced processes, a certain
    /// reference tells who referenced what lately.
    #[inline]
    pub(super) fn left_page(
        &mut self,
        page: &CurrentPage,
        last_pa: u64,
        last_write: bool,
        pos: u64,
    ) {
        if page.cpu != NO_CPU {
            self.evidence_at = pos;
        }
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
    pub(super) fn slow_ref(&mut self, pa: u64, write: bool, pos: u64) -> (u8, u16, u32, u64) {
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
        // The processes of the CPUs that made the telling references
        // before and after it.
        let runner = |cpu: u16| {
            if cpu == NO_CPU {
                0
            } else {
                self.procs.runner(cpu)
            }
        };
        let after = if self.ahead.covers(pos) {
            runner(self.ahead.cpu)
        } else {
            0
        };
        let around = (runner(self.evidence), after);
        // Without CPU_AREA records telling references are too sparse to
        // say that a CPU whose telling reference came just before is
        // still issuing (measured on 2-vCPU boots: worse, not better).
        let told_at = if self.cpu_frames.is_empty() {
            0
        } else {
            self.evidence_at
        };
        let (pid, vpn, why) = self.procs.contest.decide(
            &self.contenders,
            pa & PAGE_MASK,
            write,
            pos,
            around,
            told_at,
        );
        let keep = cur.cause & (TRACED_RUNNING | TRACED_FRAME);
        (
            flags,
            u16::from(flags) | keep | (u16::from(why.code()) << CAUSE_SHIFT),
            pid,
            (vpn << PAGE_SHIFT) | (pa & PAGE_MASK),
        )
    }

    /// Looks ahead after position `from` (the board's records only, up to
    /// `LOOK_AHEAD` of the trace's) for the next telling reference: a log
    /// tag (its record's CPU), a reference to a CPU's own frame, or one to
    /// a frame only one CPU's process uses under the present state. It stops at the board's
    /// first other marker (a loss, or an I-code that is not a log tag:
    /// neither tells the CPU, and the state may change after a tag).
    pub(super) fn look_ahead<S: RecordSource + ?Sized>(
        &mut self,
        trace: &S,
        board: u8,
        from: u64,
        record_cpu: &dyn Fn(u64) -> Option<u16>,
    ) {
        let n = trace.len() as u64;
        let end = from.saturating_add(LOOK_AHEAD).min(n);
        let (mut frame, mut cpu) = (u64::MAX, NO_CPU);
        let mut j = from + 1;
        while j < end {
            let r = trace.get(j as usize);
            if r.board() != board {
                j += 1;
                continue;
            }
            if !r.is_access() {
                // An I-code that is not a log tag changes nothing: go on.
                let told = match (log_tag(&r), r.kind()) {
                    (Some(low), _) => record_cpu(self.tags.resolve(low)),
                    (None, RecordKind::Tag { .. }) => {
                        j += 1;
                        continue;
                    }
                    (None, _) => None,
                };
                self.ahead = Ahead {
                    at: j,
                    cpu: told.unwrap_or(NO_CPU),
                };
                return;
            }
            let f = r.pa() >> PAGE_SHIFT;
            if f != frame {
                frame = f;
                cpu = self
                    .telling_cpu(f, &self.frames.lookup(f).0)
                    .unwrap_or(NO_CPU);
            }
            if cpu != NO_CPU {
                self.ahead = Ahead { at: j, cpu };
                return;
            }
            j += 1;
        }
        self.ahead = Ahead {
            at: end,
            cpu: NO_CPU,
        };
    }

    /// Record flags of a reference to `pa` in a page only partly covered
    /// by DMA buffers.
    #[cold]
    pub(super) fn partial_flags(&self, pa: u64) -> u8 {
        let dma = self.dma.iter().any(|&(lo, hi)| (lo..hi).contains(&pa));
        if self.cur.flags & REF_TRANSLATED != 0 {
            ref_flags(true, dma, None)
        } else {
            miss_flags(dma, self.cur.page_table)
        }
    }
}

#[inline]
pub(super) fn miss_flags(dma: bool, page_table: bool) -> u8 {
    let miss = if dma {
        Miss::Dma
    } else if page_table {
        Miss::Kernel
    } else {
        Miss::Unmapped
    };
    ref_flags(false, dma, Some(miss))
}
