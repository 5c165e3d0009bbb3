//! Who maps each physical frame now: a two-level table keyed by frame number
//! (a directory of fixed-size chunks of packed 8-byte slots), so a lookup is
//! two array indexings while a frame has one owner, the common case.
//!
//! A frame can have several owners, (pid, virtual page) pairs: pages shared
//! copy-on-write by a parent and its forked child (same virtual page, two
//! pids), MAP_SHARED regions (possibly at different virtual pages), the zero
//! page. Those frames, and owners too large to pack, are kept in a side map
//! and the slot says so. Each process's own pages (virtual page → frame)
//! are kept as well: a virtual page maps one frame at a time, so a MAP of
//! a page to a new frame ends its mapping of the old one, an UNMAP removes
//! only that process's mapping, and an exit or exec drops only that
//! process's mappings.

use std::collections::HashMap;

/// Frames per chunk (64 MiB of physical memory with 4 KiB pages).
const CHUNK_SHIFT: u32 = 14;
const CHUNK_MASK: u64 = (1 << CHUNK_SHIFT) - 1;

/// A fast hasher for chunk numbers (multiplicative; no DoS concerns here).
#[derive(Default, Clone, Copy)]
pub struct FrameHasher(u64);

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
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FrameHasher>>;

/// Chunks below this number are found through a flat directory (frames
/// below 2^34: 64 TiB of physical memory); higher ones through a hash map.
const FLAT_CHUNKS: u64 = 1 << 20;
const NO_CHUNK: u32 = u32::MAX;

// A slot is one u64, so more of the table stays in cache: the virtual page
// number in the low 39 bits, the pid in the next 22, and three flags. A
// frame with several owners, or an owner that does not fit (a pid >= 2^22
// or a virtual page >= 2^39), is kept in the side map and the slot says so.
const VPN_BITS: u32 = 39;
const VPN_MASK: u64 = (1 << VPN_BITS) - 1;
const PID_BITS: u32 = 22;
const PID_MASK: u64 = (1 << PID_BITS) - 1;
const W_SIDE: u64 = 1 << 61;
const W_PAGE_TABLE: u64 = 1 << 62;
const W_OWNED: u64 = 1 << 63;

/// Above this many owners a frame's owners are also indexed by (pid,
/// virtual page), so mapping and unmapping stay O(1) (the zero page can
/// have a mapping per untouched page of a process).
const INDEX_OWNERS: usize = 32;

/// One mapping of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub vpn: u64,
    /// Larger for a later mapping (among one frame's owners).
    pub stamp: u64,
}

/// Who maps a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owners<'a> {
    None,
    One {
        pid: u32,
        vpn: u64,
    },
    /// Two or more, in no particular order.
    Several(&'a [Owner]),
}

#[derive(Default)]
struct SideOwners {
    list: Vec<Owner>,
    /// (pid, vpn) → position in `list`, once the list is long.
    index: Option<FastMap<(u32, u64), u32>>,
}

impl SideOwners {
    fn position(&self, pid: u32, vpn: u64) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(&(pid, vpn)).map(|&i| i as usize),
            None => self.list.iter().position(|o| o.pid == pid && o.vpn == vpn),
        }
    }

    fn add(&mut self, o: Owner) {
        if let Some(i) = self.position(o.pid, o.vpn) {
            self.list[i].stamp = o.stamp;
            return;
        }
        self.list.push(o);
        match &mut self.index {
            Some(ix) => {
                ix.insert((o.pid, o.vpn), (self.list.len() - 1) as u32);
            }
            None if self.list.len() > INDEX_OWNERS => {
                self.index = Some(
                    self.list
                        .iter()
                        .enumerate()
                        .map(|(i, o)| ((o.pid, o.vpn), i as u32))
                        .collect(),
                );
            }
            None => {}
        }
    }

    fn remove(&mut self, pid: u32, vpn: u64) {
        let Some(i) = self.position(pid, vpn) else {
            return;
        };
        self.list.swap_remove(i);
        if let Some(ix) = &mut self.index {
            ix.remove(&(pid, vpn));
            if let Some(moved) = self.list.get(i) {
                ix.insert((moved.pid, moved.vpn), i as u32);
            }
            if self.list.len() <= INDEX_OWNERS / 2 {
                self.index = None;
            }
        }
    }
}

#[inline]
fn packable(pid: u32, vpn: u64) -> bool {
    u64::from(pid) <= PID_MASK && vpn <= VPN_MASK
}

#[inline]
fn pack(pid: u32, vpn: u64) -> u64 {
    W_OWNED | (u64::from(pid) << VPN_BITS) | vpn
}

/// Frame number → its owners, plus each process's pages.
#[derive(Default)]
pub struct FrameTable {
    /// Chunk number → position in `chunks` (`NO_CHUNK`: none), for the
    /// chunks below `FLAT_CHUNKS`; grown up to the highest one used.
    flat: Vec<u32>,
    high: FastMap<u64, u32>,
    chunks: Vec<Box<[u64]>>,
    /// Owners of the frames whose slot has `W_SIDE`.
    side: FastMap<u64, SideOwners>,
    /// Each process's mapped pages: virtual page → frame.
    spaces: FastMap<u32, FastMap<u64, u64>>,
    stamp: u64,
}

impl FrameTable {
    #[inline]
    fn chunk_index(&self, chunk: u64) -> Option<u32> {
        if chunk < FLAT_CHUNKS {
            match self.flat.get(chunk as usize) {
                Some(&i) if i != NO_CHUNK => Some(i),
                _ => None,
            }
        } else {
            self.high.get(&chunk).copied()
        }
    }

    #[inline]
    fn word(&self, frame: u64) -> u64 {
        match self.chunk_index(frame >> CHUNK_SHIFT) {
            Some(i) => self.chunks[i as usize][(frame & CHUNK_MASK) as usize],
            None => 0,
        }
    }

    /// The frame's owners, and whether it holds page tables (a PTE address
    /// of the log fell in it).
    #[inline]
    pub fn lookup(&self, frame: u64) -> (Owners<'_>, bool) {
        let w = self.word(frame);
        let page_table = w & W_PAGE_TABLE != 0;
        if w & W_OWNED == 0 {
            return (Owners::None, page_table);
        }
        if w & W_SIDE == 0 {
            let owners = Owners::One {
                pid: ((w >> VPN_BITS) & PID_MASK) as u32,
                vpn: w & VPN_MASK,
            };
            return (owners, page_table);
        }
        let owners = match self.side.get(&frame).map(|s| s.list.as_slice()) {
            None | Some([]) => Owners::None,
            Some([o]) => Owners::One {
                pid: o.pid,
                vpn: o.vpn,
            },
            Some(list) => Owners::Several(list),
        };
        (owners, page_table)
    }

    fn word_mut(&mut self, frame: u64) -> &mut u64 {
        let chunk = frame >> CHUNK_SHIFT;
        let i = match self.chunk_index(chunk) {
            Some(i) => i,
            None => {
                let i = self.chunks.len() as u32;
                self.chunks
                    .push(vec![0u64; 1 << CHUNK_SHIFT].into_boxed_slice());
                if chunk < FLAT_CHUNKS {
                    let c = chunk as usize;
                    if self.flat.len() <= c {
                        self.flat.resize(c + 1, NO_CHUNK);
                    }
                    self.flat[c] = i;
                } else {
                    self.high.insert(chunk, i);
                }
                i
            }
        };
        &mut self.chunks[i as usize][(frame & CHUNK_MASK) as usize]
    }

    /// `pid` maps virtual page `vpn` to `frame`; the page's mapping of
    /// another frame, if any, ends.
    pub fn map(&mut self, frame: u64, pid: u32, vpn: u64) {
        let space = self.spaces.entry(pid).or_default();
        if let Some(old) = space.insert(vpn, frame) {
            if old != frame {
                self.remove_owner(old, pid, vpn);
            }
        }
        self.stamp += 1;
        let stamp = self.stamp;
        let old = *self.word_mut(frame);
        let keep = old & W_PAGE_TABLE;
        if old & W_OWNED == 0 {
            *self.word_mut(frame) = if packable(pid, vpn) {
                keep | pack(pid, vpn)
            } else {
                self.side.insert(
                    frame,
                    SideOwners {
                        list: vec![Owner { pid, vpn, stamp }],
                        index: None,
                    },
                );
                keep | W_OWNED | W_SIDE
            };
            return;
        }
        if old & W_SIDE == 0 {
            let (p0, v0) = (((old >> VPN_BITS) & PID_MASK) as u32, old & VPN_MASK);
            if (p0, v0) == (pid, vpn) {
                return;
            }
            // The packed owner mapped the frame before this one.
            let first = Owner {
                pid: p0,
                vpn: v0,
                stamp: stamp - 1,
            };
            self.stamp += 1;
            let side = self.side.entry(frame).or_default();
            side.list.clear();
            side.index = None;
            side.add(first);
            side.add(Owner {
                pid,
                vpn,
                stamp: stamp + 1,
            });
            *self.word_mut(frame) = keep | W_OWNED | W_SIDE;
            return;
        }
        self.side
            .entry(frame)
            .or_default()
            .add(Owner { pid, vpn, stamp });
    }

    /// Removes one mapping of `frame`; a frame left with one owner that
    /// fits goes back into its packed slot.
    fn remove_owner(&mut self, frame: u64, pid: u32, vpn: u64) {
        let old = self.word(frame);
        if old & W_OWNED == 0 {
            return;
        }
        let keep = old & W_PAGE_TABLE;
        if old & W_SIDE == 0 {
            if packable(pid, vpn) && old & !(W_OWNED | W_PAGE_TABLE) == pack(pid, vpn) & !W_OWNED {
                *self.word_mut(frame) = keep;
            }
            return;
        }
        let Some(side) = self.side.get_mut(&frame) else {
            *self.word_mut(frame) = keep;
            return;
        };
        side.remove(pid, vpn);
        match side.list.as_slice() {
            [] => {
                self.side.remove(&frame);
                *self.word_mut(frame) = keep;
            }
            [o] if packable(o.pid, o.vpn) => {
                let w = keep | pack(o.pid, o.vpn);
                self.side.remove(&frame);
                *self.word_mut(frame) = w;
            }
            _ => {}
        }
    }

    /// `pid` no longer maps `vpn` to `frame`; other owners of the frame
    /// keep theirs.
    pub fn unmap(&mut self, frame: u64, pid: u32, vpn: u64) {
        if let Some(space) = self.spaces.get_mut(&pid) {
            if space.get(&vpn) == Some(&frame) {
                space.remove(&vpn);
            }
        }
        self.remove_owner(frame, pid, vpn);
    }

    pub fn mark_page_table(&mut self, frame: u64) {
        *self.word_mut(frame) |= W_PAGE_TABLE;
    }

    /// `pid`'s address space is gone (exit, exec): its mappings end.
    pub fn drop_pid(&mut self, pid: u32) {
        let Some(space) = self.spaces.remove(&pid) else {
            return;
        };
        for (vpn, frame) in space {
            self.remove_owner(frame, pid, vpn);
        }
    }

    /// `from`'s mappings become `to`'s (an address space that lives on in
    /// another process).
    pub fn hand_over(&mut self, from: u32, to: u32) {
        let Some(space) = self.spaces.remove(&from) else {
            return;
        };
        let mut pages: Vec<(u64, u64)> = space.into_iter().collect();
        pages.sort_unstable();
        for (vpn, frame) in pages {
            self.remove_owner(frame, from, vpn);
            self.map(frame, to, vpn);
        }
    }
}

#[cfg(test)]
mod tests {

    fn area(frame: u64, frames: u64, owner: u16) -> hmtt_format::klog::RecordRepr {
        hmtt_format::klog::RecordRepr {
            seq: 0,
            cpu: 0,
            pid: 0,
            time_ns: 0,
            event: hmtt_format::klog::Event::CpuArea {
                frame,
                frames,
                owner,
                area: hmtt_format::klog::Name::new("percpu"),
            },
        }
    }

    #[test]
    fn cpu_frames_keep_one_cpu_per_frame_and_ignore_what_is_not_an_area() {
        let log = [
            area(0x100, 3, 0),
            area(0x200, 2, 1),
            // Frame 0x201 given to two CPUs tells neither.
            area(0x201, 1, 2),
            // Too large to be a CPU's area.
            area(0x1000, CpuFrames::MAX_PER_RECORD + 1, 3),
        ];
        let f = CpuFrames::from_log(&log);
        assert_eq!(f.cpu(0x100), Some(0));
        assert_eq!(f.cpu(0x102), Some(0));
        assert_eq!(f.cpu(0x103), None);
        assert_eq!(f.cpu(0x200), Some(1));
        assert_eq!(f.cpu(0x201), None);
        assert_eq!(f.cpu(0x1000), None);
        assert_eq!(f.counts(), (4, 2));
        assert_eq!(CpuFrames::from_log(&[]).cpu(0x100), None);
    }
    use super::*;

    fn owner(t: &FrameTable, frame: u64) -> Option<(u32, u64)> {
        match t.lookup(frame).0 {
            Owners::One { pid, vpn } => Some((pid, vpn)),
            _ => None,
        }
    }

    fn several(t: &FrameTable, frame: u64) -> Vec<(u32, u64)> {
        match t.lookup(frame).0 {
            Owners::Several(list) => {
                let mut v: Vec<_> = list.iter().map(|o| (o.pid, o.vpn)).collect();
                v.sort_unstable();
                v
            }
            Owners::One { pid, vpn } => vec![(pid, vpn)],
            Owners::None => vec![],
        }
    }

    #[test]
    fn map_unmap_exit_and_reuse() {
        let mut t = FrameTable::default();
        let far = 5u64 << 40;
        let mid = 3u64 << 30;
        assert_eq!(t.lookup(7), (Owners::None, false));
        t.map(7, 1, 0x100);
        t.map(far, 1, 0x101);
        t.map(8, 2, 0x200);
        t.map(mid, 3, 0x400);
        t.mark_page_table(9);
        assert_eq!(owner(&t, mid), Some((3, 0x400)));
        assert_eq!(t.lookup(mid + 1), (Owners::None, false));
        assert_eq!(owner(&t, 7), Some((1, 0x100)));
        assert_eq!(owner(&t, far), Some((1, 0x101)));
        assert_eq!(t.lookup(9), (Owners::None, true));
        // Frame 7 is given to process 2 before process 1 exits.
        t.unmap(7, 1, 0x100);
        assert_eq!(owner(&t, 7), None);
        t.map(7, 2, 0x300);
        t.drop_pid(1);
        assert_eq!(owner(&t, 7), Some((2, 0x300)));
        assert_eq!(owner(&t, far), None);
        assert_eq!(owner(&t, 8), Some((2, 0x200)));
        t.drop_pid(2);
        assert_eq!(owner(&t, 7), None);
        // Owners too large for a packed slot.
        let huge_pid = u32::MAX;
        let huge_vpn = (1u64 << 52) - 1;
        t.mark_page_table(20);
        t.map(20, huge_pid, 0x10);
        t.map(21, 5, huge_vpn);
        assert_eq!(owner(&t, 20), Some((huge_pid, 0x10)));
        assert!(t.lookup(20).1);
        assert_eq!(owner(&t, 21), Some((5, huge_vpn)));
        t.unmap(21, 5, huge_vpn);
        t.map(21, 6, 0x22);
        assert_eq!(owner(&t, 21), Some((6, 0x22)));
        t.drop_pid(huge_pid);
        assert_eq!(t.lookup(20), (Owners::None, true));
        assert!(t.side.is_empty());
        assert_eq!(t.lookup(9), (Owners::None, true));
    }

    #[test]
    fn several_owners_leave_one_by_one() {
        let mut t = FrameTable::default();
        // Parent and child share frame 5 copy-on-write; a third process
        // maps it at another page (MAP_SHARED).
        t.map(5, 1, 0x40);
        t.map(5, 2, 0x40);
        t.map(5, 3, 0x99);
        assert_eq!(several(&t, 5), vec![(1, 0x40), (2, 0x40), (3, 0x99)]);
        // The child's copy-on-write break: its page maps a new frame.
        t.map(6, 2, 0x40);
        assert_eq!(several(&t, 5), vec![(1, 0x40), (3, 0x99)]);
        assert_eq!(owner(&t, 6), Some((2, 0x40)));
        // An UNMAP of process 3's page leaves the parent's.
        t.unmap(5, 3, 0x99);
        assert_eq!(owner(&t, 5), Some((1, 0x40)));
        assert!(t.side.is_empty());
        // An UNMAP that names another page of the process removes nothing.
        t.unmap(5, 1, 0x41);
        assert_eq!(owner(&t, 5), Some((1, 0x40)));
        t.map(5, 2, 0x50);
        t.drop_pid(1);
        assert_eq!(owner(&t, 5), Some((2, 0x50)));
        // The later mapping has the larger stamp.
        t.map(5, 4, 0x60);
        let Owners::Several(list) = t.lookup(5).0 else {
            panic!("two owners")
        };
        let stamp = |pid| list.iter().find(|o| o.pid == pid).map(|o| o.stamp);
        assert!(stamp(4) > stamp(2));
        // Handing process 2's pages to process 7.
        t.hand_over(2, 7);
        assert_eq!(several(&t, 5), vec![(4, 0x60), (7, 0x50)]);
        assert_eq!(owner(&t, 6), Some((7, 0x40)));
    }

    #[test]
    fn a_frame_with_many_pages_is_indexed() {
        let mut t = FrameTable::default();
        let n = 10 * INDEX_OWNERS as u64;
        for v in 0..n {
            t.map(1, 9, 0x1000 + v);
        }
        t.map(1, 8, 0x5);
        assert_eq!(several(&t, 1).len(), n as usize + 1);
        for v in (0..n).rev() {
            t.unmap(1, 9, 0x1000 + v);
        }
        assert_eq!(owner(&t, 1), Some((8, 0x5)));
        assert!(t.side.is_empty());
    }
}

/// Frames that only one CPU uses (its entry area, its per-CPU variables),
/// from the kernel log's CPU_AREA records: a reference to one tells which
/// CPU made it. Shared by every board's state.
#[derive(Clone, Default)]
pub struct CpuFrames(std::sync::Arc<FastMap<u64, u16>>);

impl CpuFrames {
    /// Frames one CPU_AREA record may name: a CPU's entry area is about 40
    /// pages, so a larger count is not one and is ignored.
    pub const MAX_PER_RECORD: u64 = 1024;
    /// Frames kept in all: enough for 1,000 CPUs' areas, bounded for a
    /// forged log.
    pub const MAX_FRAMES: usize = 1 << 17;

    pub fn from_log(log: &[hmtt_format::klog::RecordRepr]) -> CpuFrames {
        let mut map = FastMap::default();
        for r in log {
            if let hmtt_format::klog::Event::CpuArea {
                frame,
                frames,
                owner,
                ..
            } = r.event
            {
                if frames > Self::MAX_PER_RECORD {
                    continue;
                }
                for f in frame..frame.saturating_add(frames) {
                    if map.len() >= Self::MAX_FRAMES {
                        break;
                    }
                    // A frame two records give to different CPUs tells
                    // neither.
                    map.entry(f)
                        .and_modify(|c| {
                            if *c != owner {
                                *c = NO_OWNER
                            }
                        })
                        .or_insert(owner);
                }
            }
        }
        map.retain(|_, c| *c != NO_OWNER);
        CpuFrames(std::sync::Arc::new(map))
    }

    /// The one CPU that uses `frame`, if it is a CPU's own.
    #[inline]
    pub fn cpu(&self, frame: u64) -> Option<u16> {
        if self.0.is_empty() {
            None
        } else {
            self.0.get(&frame).copied()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many frames tell a CPU, and of how many CPUs.
    pub fn counts(&self) -> (u64, u64) {
        let cpus: std::collections::BTreeSet<u16> = self.0.values().copied().collect();
        (self.0.len() as u64, cpus.len() as u64)
    }
}

const NO_OWNER: u16 = u16::MAX;
