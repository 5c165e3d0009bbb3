//! The OS model: virtual pages mapped to physical frames on first touch
//! from a shuffled free list (memory as a buddy allocator leaves it after
//! boot), unmapped on free and exit, frames reused most-recently-freed
//! first so they move between processes. Page tables live in physical
//! frames of their own, so every PTE has a real physical address.
//!
//! Each page-table update is logged as a kernel log record (format.md §8);
//! the caller turns every [`OsEffect`] into memory traffic: the PTE store
//! goes through the cache like any kernel store, and a logged record is
//! announced by its I-code TAG at that very moment.

use crate::workload::PAGE;
use hmtt_format::klog::{DmaDirection, Event, Name, RecordRepr};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, VecDeque};

/// PTEs per page-table frame (x86-64: 512 eight-byte entries).
const PTES_PER_FRAME: u64 = 512;
const PTE_BYTES: u64 = 8;

/// Something the caller must turn into memory traffic, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OsEffect {
    /// The kernel stores a PTE at this physical address.
    PteWrite { pa: u64 },
    /// A kernel log record was written; announce it with its tag now.
    Logged { seq: u64 },
}

/// Why the OS could not go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OsError {
    #[error("out of physical memory: no free frame for pid {pid} (the machine has {frames} usable frames)")]
    OutOfMemory { pid: u32, frames: usize },
}

/// Free physical frames: never-used frames come in a seeded random order
/// (a lazy Fisher-Yates shuffle, so a large memory costs nothing up
/// front); freed frames are reused first, most recent first.
#[derive(Debug, Clone)]
pub struct FramePool {
    fresh: Vec<u64>,
    freed: Vec<u64>,
    rng: ChaCha8Rng,
    total: usize,
}

impl FramePool {
    /// A pool over `frames` (frame numbers), handed out in an order
    /// shuffled with `seed`.
    pub fn shuffled(frames: Vec<u64>, seed: u64) -> FramePool {
        let total = frames.len();
        FramePool {
            fresh: frames,
            freed: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            total,
        }
    }
    pub fn alloc(&mut self) -> Option<u64> {
        if let Some(f) = self.freed.pop() {
            return Some(f);
        }
        if self.fresh.is_empty() {
            return None;
        }
        let j = self.rng.gen_range(0..self.fresh.len());
        Some(self.fresh.swap_remove(j))
    }
    pub fn release(&mut self, pfn: u64) {
        self.freed.push(pfn);
    }
    pub fn free_count(&self) -> usize {
        self.fresh.len() + self.freed.len()
    }
    pub fn total(&self) -> usize {
        self.total
    }
}

#[derive(Debug, Default)]
struct Process {
    /// vpn → pfn.
    pages: HashMap<u64, u64>,
    /// vpn / 512 → page-table frame.
    tables: HashMap<u64, u64>,
    name: String,
}

/// Counters of the OS model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OsStats {
    pub maps: u64,
    pub unmaps: u64,
    pub execs: u64,
    pub exits: u64,
    pub dma_maps: u64,
    pub dma_unmaps: u64,
    pub page_table_frames: u64,
    /// Frames mapped that had been used (by anyone) before.
    pub reused_frames: u64,
}

/// A logged ownership change not yet announced: (seq, pfn, new owner).
type Unpublished = (u64, u64, Option<(u32, u64)>);

/// The OS state.
#[derive(Debug)]
pub struct Os {
    pool: FramePool,
    procs: HashMap<u32, Process>,
    /// pfn → (pid, vpn) of its current user mapping.
    owner: HashMap<u64, (u32, u64)>,
    /// Ownership changes logged but not yet announced: (seq, pfn, owner).
    unpublished: VecDeque<Unpublished>,
    used_before: std::collections::HashSet<u64>,
    log: Vec<RecordRepr>,
    seq: u64,
    pub stats: OsStats,
}

impl Os {
    pub fn new(pool: FramePool) -> Os {
        Os {
            pool,
            procs: HashMap::new(),
            owner: HashMap::new(),
            unpublished: VecDeque::new(),
            used_before: Default::default(),
            log: Vec::new(),
            seq: 0,
            stats: OsStats::default(),
        }
    }

    /// The kernel log written so far.
    pub fn log(&self) -> &[RecordRepr] {
        &self.log
    }

    pub fn take_log(&mut self) -> Vec<RecordRepr> {
        std::mem::take(&mut self.log)
    }

    fn record(&mut self, pid: u32, time_ns: u64, event: Event, fx: &mut Vec<OsEffect>) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        self.log.push(RecordRepr {
            seq,
            cpu: 0,
            pid,
            time_ns,
            event,
        });
        fx.push(OsEffect::Logged { seq });
        seq
    }

    /// Makes the ownership change of record `seq` visible to
    /// [`owner_of`](Self::owner_of): the caller does this when it issues the
    /// record's tag, so traffic queued before the tag (a write-back caused
    /// by the PTE store, say) still sees the old owner.
    pub fn publish(&mut self, seq: u64) {
        while let Some(&(s, pfn, owner)) = self.unpublished.front() {
            if s > seq {
                break;
            }
            self.unpublished.pop_front();
            match owner {
                Some(o) => self.owner.insert(pfn, o),
                None => self.owner.remove(&pfn),
            };
        }
    }

    fn alloc(&mut self, pid: u32) -> Result<u64, OsError> {
        let pfn = self.pool.alloc().ok_or(OsError::OutOfMemory {
            pid,
            frames: self.pool.total(),
        })?;
        if !self.used_before.insert(pfn) {
            self.stats.reused_frames += 1;
        }
        Ok(pfn)
    }

    /// A process starts: EXEC record.
    pub fn exec(&mut self, pid: u32, name: &str, time_ns: u64, fx: &mut Vec<OsEffect>) {
        let p = self.procs.entry(pid).or_default();
        p.name = name.to_string();
        self.stats.execs += 1;
        self.record(
            pid,
            time_ns,
            Event::Exec {
                comm: Name::new(name),
            },
            fx,
        );
    }

    /// The physical address of `vaddr` in `pid`, mapping its page on first
    /// touch (page-table frame if needed, PTE store, MAP record).
    #[inline]
    pub fn translate(
        &mut self,
        pid: u32,
        vaddr: u64,
        time_ns: u64,
        fx: &mut Vec<OsEffect>,
    ) -> Result<u64, OsError> {
        let vpn = vaddr / PAGE;
        if let Some(p) = self.procs.get(&pid) {
            if let Some(&pfn) = p.pages.get(&vpn) {
                return Ok(pfn * PAGE + vaddr % PAGE);
            }
        }
        let pfn = self.map(pid, vpn, time_ns, fx)?;
        Ok(pfn * PAGE + vaddr % PAGE)
    }

    fn pte_pa(&mut self, pid: u32, vpn: u64) -> Result<u64, OsError> {
        let table = vpn / PTES_PER_FRAME;
        let existing = self
            .procs
            .get(&pid)
            .and_then(|p| p.tables.get(&table).copied());
        let frame = match existing {
            Some(f) => f,
            None => {
                let f = self.alloc(pid)?;
                self.stats.page_table_frames += 1;
                self.procs.entry(pid).or_default().tables.insert(table, f);
                f
            }
        };
        Ok(frame * PAGE + (vpn % PTES_PER_FRAME) * PTE_BYTES)
    }

    fn map(
        &mut self,
        pid: u32,
        vpn: u64,
        time_ns: u64,
        fx: &mut Vec<OsEffect>,
    ) -> Result<u64, OsError> {
        let pte = self.pte_pa(pid, vpn)?;
        let pfn = self.alloc(pid)?;
        self.procs.entry(pid).or_default().pages.insert(vpn, pfn);
        self.stats.maps += 1;
        fx.push(OsEffect::PteWrite { pa: pte });
        let seq = self.record(
            pid,
            time_ns,
            Event::Map {
                vpn,
                pfn,
                pte_phys: pte,
            },
            fx,
        );
        self.unpublished.push_back((seq, pfn, Some((pid, vpn))));
        Ok(pfn)
    }

    fn unmap(&mut self, pid: u32, vpn: u64, time_ns: u64, fx: &mut Vec<OsEffect>) {
        let Some(pfn) = self.procs.get_mut(&pid).and_then(|p| p.pages.remove(&vpn)) else {
            return;
        };
        let table = self.procs[&pid].tables[&(vpn / PTES_PER_FRAME)];
        let pte = table * PAGE + (vpn % PTES_PER_FRAME) * PTE_BYTES;
        fx.push(OsEffect::PteWrite { pa: pte });
        let seq = self.record(
            pid,
            time_ns,
            Event::Unmap {
                vpn,
                pfn,
                pte_phys: pte,
            },
            fx,
        );
        self.unpublished.push_back((seq, pfn, None));
        self.pool.release(pfn);
        self.stats.unmaps += 1;
    }

    /// munmap of `[vaddr, vaddr+len)`: UNMAP for every mapped page, in
    /// address order.
    pub fn free(&mut self, pid: u32, vaddr: u64, len: u64, time_ns: u64, fx: &mut Vec<OsEffect>) {
        let Some(p) = self.procs.get(&pid) else {
            return;
        };
        let (first, end) = (vaddr / PAGE, (vaddr + len).div_ceil(PAGE));
        let mut vpns: Vec<u64> = if end - first <= p.pages.len() as u64 {
            (first..end).filter(|v| p.pages.contains_key(v)).collect()
        } else {
            p.pages
                .keys()
                .copied()
                .filter(|v| (first..end).contains(v))
                .collect()
        };
        vpns.sort_unstable();
        for vpn in vpns {
            self.unmap(pid, vpn, time_ns, fx);
        }
    }

    /// Exit: every page still mapped is unmapped, then EXIT; the page-table
    /// frames go back to the pool.
    pub fn exit(&mut self, pid: u32, time_ns: u64, fx: &mut Vec<OsEffect>) {
        let Some(p) = self.procs.get(&pid) else {
            return;
        };
        let mut vpns: Vec<u64> = p.pages.keys().copied().collect();
        vpns.sort_unstable();
        for vpn in vpns {
            self.unmap(pid, vpn, time_ns, fx);
        }
        let p = self.procs.remove(&pid).expect("present");
        self.stats.exits += 1;
        self.record(
            pid,
            time_ns,
            Event::Exit {
                comm: Name::new(&p.name),
            },
            fx,
        );
        let mut tables: Vec<u64> = p.tables.into_values().collect();
        tables.sort_unstable();
        for f in tables {
            self.pool.release(f);
        }
    }

    /// Frames for a kernel buffer (not mapped in any process).
    pub fn alloc_kernel(&mut self, n: u64) -> Result<Vec<u64>, OsError> {
        (0..n).map(|_| self.alloc(0)).collect()
    }

    pub fn free_kernel(&mut self, frames: &[u64]) {
        for &f in frames.iter().rev() {
            self.pool.release(f);
        }
    }

    /// DMA_MAP (the paper's DMA_BEGIN) or DMA_UNMAP (DMA_END) of a buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn dma_log(
        &mut self,
        map: bool,
        addr: u64,
        size: u64,
        to_device: bool,
        device: &str,
        time_ns: u64,
        fx: &mut Vec<OsEffect>,
    ) {
        let dir = if to_device {
            DmaDirection::ToDevice
        } else {
            DmaDirection::FromDevice
        };
        let device = Name::new(device);
        let event = if map {
            self.stats.dma_maps += 1;
            Event::DmaMap {
                addr,
                size,
                dir,
                device,
            }
        } else {
            self.stats.dma_unmaps += 1;
            Event::DmaUnmap {
                addr,
                size,
                dir,
                device,
            }
        };
        self.record(0, time_ns, event, fx);
    }

    /// The user mapping in force for physical address `pa`: `(pid, virtual
    /// address of the same byte)`.
    #[inline]
    pub fn owner_of(&self, pa: u64) -> Option<(u32, u64)> {
        self.owner
            .get(&(pa / PAGE))
            .map(|&(pid, vpn)| (pid, vpn * PAGE + pa % PAGE))
    }

    pub fn free_frames(&self) -> usize {
        self.pool.free_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_on_first_touch_logs_and_reuses_frames() {
        let mut os = Os::new(FramePool::shuffled((100..200).collect(), 3));
        let mut fx = Vec::new();
        os.exec(7, "a", 0, &mut fx);
        let pa = os.translate(7, 0x1234_5678, 1, &mut fx).unwrap();
        assert_eq!(pa % PAGE, 0x678);
        // EXEC, PTE store, MAP.
        assert_eq!(fx.len(), 3);
        assert!(matches!(fx[1], OsEffect::PteWrite { .. }));
        let pa2 = os.translate(7, 0x1234_5000, 2, &mut fx).unwrap();
        assert_eq!(pa2 / PAGE, pa / PAGE);
        assert_eq!(fx.len(), 3, "second touch maps nothing");
        assert_eq!(os.owner_of(pa), None, "not announced yet");
        os.publish(1);
        assert_eq!(os.owner_of(pa), Some((7, 0x1234_5678)));
        os.exit(7, 3, &mut fx);
        assert_eq!(os.owner_of(pa), Some((7, 0x1234_5678)));
        os.publish(3);
        assert_eq!(os.owner_of(pa), None);
        // The frame freed last is handed out first.
        os.exec(8, "b", 4, &mut fx);
        let pb = os.translate(8, 0x9000, 5, &mut fx).unwrap();
        let kinds: Vec<_> = os.log().iter().map(|r| r.event.kind()).collect();
        use hmtt_format::klog::Kind;
        assert_eq!(
            kinds,
            [
                Kind::Exec,
                Kind::Map,
                Kind::Unmap,
                Kind::Exit,
                Kind::Exec,
                Kind::Map
            ]
        );
        // The page-table frame (freed after the page) comes back first, then
        // the user frame is the one process 7 had.
        assert_eq!(pb / PAGE, pa / PAGE);
        assert!(os.stats.reused_frames >= 1);
        let seqs: Vec<u64> = os.log().iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (0..6).collect::<Vec<_>>());
    }

    #[test]
    fn out_of_memory_is_an_error() {
        let mut os = Os::new(FramePool::shuffled(vec![1, 2], 0));
        let mut fx = Vec::new();
        os.translate(1, 0, 0, &mut fx).unwrap();
        assert!(matches!(
            os.translate(1, PAGE, 0, &mut fx),
            Err(OsError::OutOfMemory { .. })
        ));
    }
}
