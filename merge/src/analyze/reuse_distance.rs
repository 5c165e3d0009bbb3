//! Reuse distances of lines: for each reference, the number of distinct
//! other lines referenced since the last reference to the same line (its
//! exact LRU stack distance; 0 = the line was the last one referenced).
//! Not sampled: a Fenwick tree over last-use times holds a 1 at the time
//! each line was last used, so the distance is the count of ones after
//! that time, O(log n) per reference. When the times run past the tree,
//! the live times are renumbered 0..d (d = distinct lines) and the tree is
//! rebuilt with twice that room, so memory stays proportional to the
//! distinct lines, not to the references.

use serde::Serialize;

use super::{log2_bucket, FastMap};

/// Least room of the tree after a renumbering.
const MIN_ROOM: usize = 1 << 16;

/// A Fenwick (binary indexed) tree of counts.
struct Fenwick(Vec<u32>);

impl Fenwick {
    /// A tree of `n` zeros.
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0; n + 1])
    }
    /// A tree whose first `ones` positions hold 1, built in O(n).
    fn with_leading_ones(n: usize, ones: usize) -> Fenwick {
        let mut t = vec![0u32; n + 1];
        for (i, slot) in t.iter_mut().enumerate().skip(1) {
            // Node i covers positions (i - lowbit(i), i] (1-based); the
            // first `ones` of all positions are 1.
            let low = i - (i & i.wrapping_neg());
            *slot = i.min(ones).saturating_sub(low) as u32;
        }
        Fenwick(t)
    }
    fn add(&mut self, pos: usize, delta: i32) {
        let mut i = pos + 1;
        while i < self.0.len() {
            self.0[i] = self.0[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }
    /// Sum of positions `0..=pos`.
    fn prefix(&self, pos: usize) -> u64 {
        let mut i = pos + 1;
        let mut s = 0u64;
        while i > 0 {
            s += u64::from(self.0[i]);
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// The reuse-distance histogram in the making.
pub struct ReuseDistance {
    last_use: FastMap<u64, u32>,
    tree: Fenwick,
    room: usize,
    now: u32,
    /// Bucket 0: distance 0; bucket k: distances in [2^(k-1), 2^k).
    buckets: [u64; 65],
    cold: u64,
}

/// The histogram of exact LRU stack distances.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ReuseReport {
    /// First references to a line (no reuse; an infinite distance).
    pub cold: u64,
    /// `(lo, hi, count)`: references whose distance d is in `lo..=hi`
    /// (buckets of powers of two; the first is d = 0).
    pub buckets: Vec<(u64, u64, u64)>,
    /// Distinct lines referenced.
    pub distinct_lines: u64,
}

impl Default for ReuseDistance {
    fn default() -> Self {
        ReuseDistance {
            last_use: FastMap::default(),
            tree: Fenwick::new(MIN_ROOM),
            room: MIN_ROOM,
            now: 0,
            buckets: [0; 65],
            cold: 0,
        }
    }
}

impl ReuseDistance {
    /// A reference to `line`; returns its distance (`None`: first use).
    #[inline]
    pub fn access(&mut self, line: u64) -> Option<u64> {
        let now = self.now;
        let distance = match self.last_use.insert(line, now) {
            Some(t) => {
                let d = self.tree.prefix(now as usize - 1) - self.tree.prefix(t as usize);
                self.tree.add(t as usize, -1);
                self.buckets[log2_bucket(d)] += 1;
                Some(d)
            }
            None => {
                self.cold += 1;
                None
            }
        };
        self.tree.add(now as usize, 1);
        self.now += 1;
        if self.now as usize >= self.room {
            self.renumber();
        }
        distance
    }

    /// Gives the live last-use times the numbers 0..d in their order.
    fn renumber(&mut self) {
        let mut live: Vec<(u32, u64)> = self.last_use.iter().map(|(&l, &t)| (t, l)).collect();
        live.sort_unstable_by_key(|&(t, _)| t);
        for (i, (_, line)) in live.iter().enumerate() {
            self.last_use.insert(*line, i as u32);
        }
        let d = live.len();
        self.room = (2 * d).max(MIN_ROOM);
        assert!(
            self.room < u32::MAX as usize,
            "more than 2^31 distinct lines"
        );
        self.tree = Fenwick::with_leading_ones(self.room, d);
        self.now = d as u32;
    }

    pub fn report(&self) -> ReuseReport {
        let last = self
            .buckets
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |i| i + 1);
        ReuseReport {
            cold: self.cold,
            buckets: (0..last)
                .map(|k| {
                    let (lo, hi) = bucket_range(k);
                    (lo, hi, self.buckets[k])
                })
                .collect(),
            distinct_lines: self.last_use.len() as u64,
        }
    }
}

/// The distances bucket `k` of [`log2_bucket`] holds, `lo..=hi`.
pub fn bucket_range(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        k => (1 << (k - 1), (1 << k) - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_built_with_leading_ones_equals_one_built_by_adds() {
        for n in [1, 5, 16, 33] {
            for ones in 0..=n {
                let fast = Fenwick::with_leading_ones(n, ones);
                let mut slow = Fenwick::new(n);
                for i in 0..ones {
                    slow.add(i, 1);
                }
                assert_eq!(fast.0, slow.0, "n {n} ones {ones}");
            }
        }
    }

    #[test]
    fn renumbering_keeps_the_distances() {
        // More references than the tree's first room: renumbered at least once.
        let mut r = ReuseDistance::default();
        let lines = 1000u64;
        let mut got = Vec::new();
        for i in 0..(3 * MIN_ROOM as u64) {
            got.push(r.access(i % lines));
        }
        assert!(got[..lines as usize].iter().all(Option::is_none));
        assert!(got[lines as usize..].iter().all(|d| *d == Some(lines - 1)));
        assert_eq!(r.report().distinct_lines, lines);
    }
}
