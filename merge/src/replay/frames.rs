//! Who maps each physical frame now: a two-level table keyed by frame number
//! (a directory of fixed-size chunks of packed 8-byte slots), so a lookup is
//! two array indexings; only frames beyond 64 TiB, and owners too large to
//! pack, go through a hash map.

use std::collections::HashMap;

/// Frames per chunk (64 MiB of physical memory with 4 KiB pages).
const CHUNK_SHIFT: u32 = 14;
const CHUNK_MASK: u64 = (1 << CHUNK_SHIFT) - 1;

/// Slot flag: a process maps the frame (`pid`, `vpn` valid).
pub const OWNED: u8 = 1;
/// Slot flag: the frame holds page tables (a PTE address of the log fell in it).
pub const PAGE_TABLE: u8 = 2;

/// What is known about one frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    pub vpn: u64,
    pub pid: u32,
    pub flags: u8,
}

impl Slot {
    pub fn owner(&self) -> Option<(u32, u64)> {
        (self.flags & OWNED != 0).then_some((self.pid, self.vpn))
    }
}

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
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
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
// number in the low 39 bits, the pid in the next 22, and three flags. An
// owner that does not fit (a pid >= 2^22 or a virtual page >= 2^39) is kept
// in a side map and the slot says so.
const VPN_BITS: u32 = 39;
const VPN_MASK: u64 = (1 << VPN_BITS) - 1;
const PID_BITS: u32 = 22;
const PID_MASK: u64 = (1 << PID_BITS) - 1;
const W_BIG: u64 = 1 << 61;
const W_PAGE_TABLE: u64 = 1 << 62;
const W_OWNED: u64 = 1 << 63;

/// Frame number → [`Slot`], plus the frames each process was given so an
/// exit releases them without a walk over every frame.
#[derive(Default)]
pub struct FrameTable {
    /// Chunk number → position in `chunks` (`NO_CHUNK`: none), for the
    /// chunks below `FLAT_CHUNKS`; grown up to the highest one used.
    flat: Vec<u32>,
    high: FastMap<u64, u32>,
    chunks: Vec<Box<[u64]>>,
    /// Owners too large for a packed slot, by frame.
    big: FastMap<u64, (u32, u64)>,
    /// Frames mapped by each pid (may hold frames since given to others).
    by_pid: FastMap<u32, Vec<u64>>,
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

    /// The frame's slot (empty if nothing is known about it).
    #[inline]
    pub fn get(&self, frame: u64) -> Slot {
        let w = self.word(frame);
        let flags =
            (u8::from(w & W_OWNED != 0) * OWNED) | (u8::from(w & W_PAGE_TABLE != 0) * PAGE_TABLE);
        if w & W_BIG != 0 {
            let (pid, vpn) = self.big.get(&frame).copied().unwrap_or_default();
            return Slot { vpn, pid, flags };
        }
        Slot {
            vpn: w & VPN_MASK,
            pid: ((w >> VPN_BITS) & PID_MASK) as u32,
            flags,
        }
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

    /// `pid` maps virtual page `vpn` to `frame` (replacing any owner).
    pub fn map(&mut self, frame: u64, pid: u32, vpn: u64) {
        let old = *self.word_mut(frame);
        let new = if u64::from(pid) <= PID_MASK && vpn <= VPN_MASK {
            if old & W_BIG != 0 {
                self.big.remove(&frame);
            }
            W_OWNED | (old & W_PAGE_TABLE) | (u64::from(pid) << VPN_BITS) | vpn
        } else {
            self.big.insert(frame, (pid, vpn));
            W_OWNED | W_BIG | (old & W_PAGE_TABLE)
        };
        *self.word_mut(frame) = new;
        self.by_pid.entry(pid).or_default().push(frame);
    }

    /// Nobody maps `frame` any more.
    pub fn unmap(&mut self, frame: u64) {
        let old = self.word(frame);
        if old & W_OWNED != 0 {
            if old & W_BIG != 0 {
                self.big.remove(&frame);
            }
            *self.word_mut(frame) = old & W_PAGE_TABLE;
        }
    }

    pub fn mark_page_table(&mut self, frame: u64) {
        *self.word_mut(frame) |= W_PAGE_TABLE;
    }

    /// `pid` exits: its frames are free.
    pub fn exit(&mut self, pid: u32) {
        let Some(frames) = self.by_pid.remove(&pid) else {
            return;
        };
        for frame in frames {
            if self.get(frame).owner().is_some_and(|o| o.0 == pid) {
                self.unmap(frame);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_unmap_exit_and_reuse() {
        let mut t = FrameTable::default();
        let far = 5u64 << 40;
        let mid = 3u64 << 30;
        assert_eq!(t.get(7), Slot::default());
        t.map(7, 1, 0x100);
        t.map(far, 1, 0x101);
        t.map(8, 2, 0x200);
        t.map(mid, 3, 0x400);
        t.mark_page_table(9);
        assert_eq!(t.get(mid).owner(), Some((3, 0x400)));
        assert_eq!(t.get(mid + 1), Slot::default());
        assert_eq!(t.get(7).owner(), Some((1, 0x100)));
        assert_eq!(t.get(far).owner(), Some((1, 0x101)));
        assert_eq!(t.get(9).flags, PAGE_TABLE);
        // Frame 7 is given to process 2 before process 1 exits.
        t.unmap(7);
        assert_eq!(t.get(7).owner(), None);
        t.map(7, 2, 0x300);
        t.exit(1);
        assert_eq!(t.get(7).owner(), Some((2, 0x300)));
        assert_eq!(t.get(far).owner(), None);
        assert_eq!(t.get(8).owner(), Some((2, 0x200)));
        t.exit(2);
        assert_eq!(t.get(7).owner(), None);
        // Owners too large for a packed slot.
        let huge_pid = u32::MAX;
        let huge_vpn = (1u64 << 52) - 1;
        t.mark_page_table(20);
        t.map(20, huge_pid, 0x10);
        t.map(21, 5, huge_vpn);
        assert_eq!(t.get(20).owner(), Some((huge_pid, 0x10)));
        assert_eq!(t.get(20).flags, OWNED | PAGE_TABLE);
        assert_eq!(t.get(21).owner(), Some((5, huge_vpn)));
        t.map(21, 6, 0x22);
        assert_eq!(t.get(21).owner(), Some((6, 0x22)));
        t.exit(huge_pid);
        assert_eq!(t.get(20).owner(), None);
        assert_eq!(t.get(20).flags, PAGE_TABLE);
        assert!(t.big.is_empty());
        assert_eq!(t.get(9).flags, PAGE_TABLE);
    }
}
