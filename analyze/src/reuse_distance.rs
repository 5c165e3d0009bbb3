//! Reuse distances of lines: for each reference, the number of distinct
//! other lines referenced since the last reference to the same line (its
//! exact LRU stack distance; 0 = the line was the last one referenced).
//! Not sampled: a bit per last-use time is set at the time each line was
//! last used, so the distance is the count of set bits between that time
//! and now: popcounts of the words at both ends and, between them, a
//! Fenwick tree of the bits per block of 512 times, O(log(n / 512)) per
//! reference (the two walks stop where they meet, and a short distance
//! costs a word or two and no walk). When the times run past
//! the tree, the live times are renumbered 0..d (d = distinct lines, in
//! one pass over the times' owners) and the tree is rebuilt with twice that
//! room, so memory stays proportional to the distinct lines, not to the
//! references. A line's last use is kept in a table indexed by line for
//! the DIMM's first [`MAX_TABLE_LINES`] lines (allocated zeroed: only the
//! parts touched take memory), in a map beyond.

use serde::Serialize;

use super::{log2_bucket, FastMap};

/// Least room of the tree after a renumbering.
const MIN_ROOM: usize = 1 << 16;

/// Room up to which the tree keeps eight times its live lines (the owner
/// table takes 8 bytes a time: 128 MiB at most); twice beyond.
const MAX_SPARE_ROOM: usize = 1 << 24;

/// Lines whose last use is kept in the table (4 GiB of memory, a 256 MiB
/// table at most).
pub const MAX_TABLE_LINES: u64 = 1 << 26;

/// Times per block of [`LiveTimes`]' tree (eight words of bits).
const BLOCK_TIMES: usize = 512;

/// A Fenwick (binary indexed) tree of counts.
struct Fenwick(Vec<u32>);

impl Fenwick {
    /// The tree of `counts`, built in O(n).
    fn from_counts(counts: &[u32]) -> Fenwick {
        let mut t = vec![0u32; counts.len() + 1];
        for i in 1..t.len() {
            t[i] = t[i].wrapping_add(counts[i - 1]);
            let parent = i + (i & i.wrapping_neg());
            if parent < t.len() {
                t[parent] = t[parent].wrapping_add(t[i]);
            }
        }
        Fenwick(t)
    }
    #[inline(always)]
    fn add(&mut self, pos: usize, delta: u32) {
        let mut i = pos + 1;
        while i < self.0.len() {
            self.0[i] = self.0[i].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }
    /// Sum of positions `lo .. hi` (`lo < hi`): the two prefix walks, each
    /// stopped where it meets the other.
    #[inline(always)]
    fn range(&self, lo: usize, hi: usize) -> u64 {
        let (mut i, mut j) = (hi, lo);
        let mut sum = 0u64;
        while i > j {
            sum += u64::from(self.0[i]);
            i -= i & i.wrapping_neg();
            while j > i {
                sum = sum.wrapping_sub(u64::from(self.0[j]));
                j -= j & j.wrapping_neg();
            }
        }
        sum
    }
}

/// The set of live last-use times: a bit per time, and a Fenwick tree of
/// the bits set per block of [`BLOCK_TIMES`], so that counting the times
/// between two is a few popcounts at each end and a walk of a tree 512
/// times smaller than the times (short distances, the common case, touch
/// one or two words and no tree). Times are set in increasing order, and a
/// count never reads the tree at the block of the newest time: that block
/// enters the tree when the times move past it, so setting a time costs
/// one bit.
struct LiveTimes {
    words: Vec<u64>,
    blocks: Fenwick,
    /// The block of the newest time, left out of `blocks`.
    open_block: usize,
}

impl LiveTimes {
    /// Room for `n` times, the first `ones` live; the next time set is
    /// `ones` or later.
    fn with_leading_ones(n: usize, ones: usize) -> LiveTimes {
        let mut words = vec![0u64; n.div_ceil(64)];
        for (w, word) in words.iter_mut().enumerate() {
            let set = ones.saturating_sub(w * 64).min(64);
            *word = if set == 64 {
                u64::MAX
            } else {
                (1u64 << set) - 1
            };
        }
        let open_block = ones / BLOCK_TIMES;
        let counts: Vec<u32> = (0..n.div_ceil(BLOCK_TIMES))
            .map(|b| {
                if b < open_block {
                    BLOCK_TIMES as u32
                } else {
                    0
                }
            })
            .collect();
        LiveTimes {
            words,
            blocks: Fenwick::from_counts(&counts),
            open_block,
        }
    }
    /// Sets time `t`, the newest so far.
    #[inline(always)]
    fn set(&mut self, t: usize) {
        if t / BLOCK_TIMES != self.open_block {
            self.close_block(t / BLOCK_TIMES);
        }
        self.words[t / 64] |= 1 << (t % 64);
    }
    /// Enters the open block's count in the tree and opens `next`.
    #[inline(never)]
    fn close_block(&mut self, next: usize) {
        let words_per_block = BLOCK_TIMES / 64;
        let first = self.open_block * words_per_block;
        let end = (first + words_per_block).min(self.words.len());
        let count: u32 = self.words[first..end].iter().map(|w| w.count_ones()).sum();
        self.blocks.add(self.open_block, count);
        self.open_block = next;
    }
    #[inline(always)]
    fn clear(&mut self, t: usize) {
        self.words[t / 64] &= !(1 << (t % 64));
        if t / BLOCK_TIMES < self.open_block {
            self.blocks.add(t / BLOCK_TIMES, u32::MAX);
        }
    }
    /// Live times in `lo + 1 .. hi` (both ends left out; `lo < hi`; `hi`
    /// at most the newest time set).
    #[inline(always)]
    fn between(&self, lo: usize, hi: usize) -> u64 {
        // `a == b` (the line was the last one used, common) needs no
        // branch of its own: the one-word case below counts no bit then.
        let (a, b) = (lo + 1, hi);
        debug_assert!(a <= b);
        let ones = |w: u64| u64::from(w.count_ones());
        let (wa, wb) = (a / 64, b / 64);
        let below_b = (1u64 << (b % 64)).wrapping_sub(1);
        if wa == wb {
            return ones((self.words[wa] >> (a % 64)) & (below_b >> (a % 64)));
        }
        let mut sum = ones(self.words[wa] >> (a % 64));
        let mut w = wa + 1;
        let words_per_block = BLOCK_TIMES / 64;
        let (first_block, last_block) = (w.div_ceil(words_per_block), wb / words_per_block);
        if first_block < last_block {
            for &word in &self.words[w..first_block * words_per_block] {
                sum += ones(word);
            }
            sum += self.blocks.range(first_block, last_block);
            w = last_block * words_per_block;
        }
        for &word in &self.words[w..wb] {
            sum += ones(word);
        }
        if b % 64 != 0 {
            sum += ones(self.words[wb] & below_b);
        }
        sum
    }
}

/// Last use of each line: time + 1 (0: never) in a table for the lines
/// below its length, in a map beyond.
struct LastUse {
    table: Vec<u32>,
    beyond: FastMap<u64, u32>,
}

impl LastUse {
    /// Sets `line`'s last use to `now`; returns the one before.
    #[inline(always)]
    fn replace(&mut self, line: u64, now: u32) -> Option<u32> {
        match self.table.get_mut(line as usize) {
            Some(slot) => std::mem::replace(slot, now + 1).checked_sub(1),
            None => self.beyond.insert(line, now),
        }
    }
    fn remove(&mut self, line: u64) -> Option<u32> {
        match self.table.get_mut(line as usize) {
            Some(slot) => std::mem::take(slot).checked_sub(1),
            None => self.beyond.remove(&line),
        }
    }
    #[inline]
    fn get(&self, line: u64) -> Option<u32> {
        match self.table.get(line as usize) {
            Some(&t) => t.checked_sub(1),
            None => self.beyond.get(&line).copied(),
        }
    }
}

/// Exact LRU stack distances of a stream of lines (the engine of the
/// exact histogram and of the sampled one, which also forgets lines).
/// Saved as its table's length and its lines, least recently used first.
#[derive(serde::Deserialize)]
#[serde(from = "StackState")]
pub struct StackDistances {
    last_use: LastUse,
    tree: LiveTimes,
    /// The line last used at each time below `now`.
    owner: Vec<u64>,
    now: u32,
}

/// What [`StackDistances`] is saved as.
#[derive(serde::Serialize, serde::Deserialize)]
struct StackState {
    table_lines: u64,
    lines: Vec<u64>,
}

impl serde::Serialize for StackDistances {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StackState {
            table_lines: self.last_use.table.len() as u64,
            lines: self.lines_by_last_use(),
        }
        .serialize(s)
    }
}

impl From<StackState> for StackDistances {
    fn from(state: StackState) -> StackDistances {
        let mut s = StackDistances::new(state.table_lines);
        for line in state.lines {
            s.access(line);
        }
        s
    }
}

impl StackDistances {
    /// Keeps the last uses of the lines below `table_lines` (at most
    /// [`MAX_TABLE_LINES`]) in the table, the others in a map.
    pub fn new(table_lines: u64) -> StackDistances {
        StackDistances {
            last_use: LastUse {
                table: vec![0; table_lines.min(MAX_TABLE_LINES) as usize],
                beyond: FastMap::default(),
            },
            tree: LiveTimes::with_leading_ones(MIN_ROOM, 0),
            owner: vec![0; MIN_ROOM],
            now: 0,
        }
    }

    /// A reference to `line`; returns its distance (`None`: first use, or
    /// first since it was forgotten).
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> Option<u64> {
        let now = self.now;
        // Set first: the count between the last use and now leaves now out,
        // and a count reaches no further than the newest time set.
        self.tree.set(now as usize);
        let distance = self.last_use.replace(line, now).map(|t| {
            let d = self.tree.between(t as usize, now as usize);
            self.tree.clear(t as usize);
            d
        });
        self.owner[now as usize] = line;
        self.now += 1;
        if self.now as usize >= self.owner.len() {
            self.renumber();
        }
        distance
    }

    /// The lines in the stack, least recently used first.
    pub fn lines_by_last_use(&self) -> Vec<u64> {
        (0..self.now as usize)
            .filter(|&t| self.last_use.get(self.owner[t]) == Some(t as u32))
            .map(|t| self.owner[t])
            .collect()
    }

    /// Leaves `line` out of the stack, as if never referenced.
    pub fn forget(&mut self, line: u64) {
        if let Some(t) = self.last_use.remove(line) {
            self.tree.clear(t as usize);
        }
    }

    /// Gives the live last-use times the numbers 0..d in their order.
    #[inline(never)]
    fn renumber(&mut self) {
        // A time is live exactly when its bit is set: the bits, not the
        // owners' last uses (a random read per time), say which to keep.
        let mut live = 0usize;
        let now = self.now as usize;
        for w in 0..now.div_ceil(64) {
            let mut bits = self.tree.words[w];
            if (w + 1) * 64 > now {
                bits &= (1u64 << (now - w * 64)) - 1;
            }
            while bits != 0 {
                let t = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let line = self.owner[t];
                self.last_use.replace(line, live as u32);
                self.owner[live] = line;
                live += 1;
            }
        }
        // Room for several times the live lines between renumberings (each
        // costs a write per live line), within a bounded owner table.
        let room = (2 * live).max(MIN_ROOM).max((8 * live).min(MAX_SPARE_ROOM));
        assert!(room < u32::MAX as usize, "more than 2^31 distinct lines");
        self.owner.truncate(live);
        self.owner.resize(room, 0);
        self.owner.shrink_to(room);
        self.tree = LiveTimes::with_leading_ones(room, live);
        self.now = live as u32;
    }
}

/// The reuse-distance histogram in the making.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct ReuseDistance {
    stack: StackDistances,
    /// Bucket 0: distance 0; bucket k: distances in [2^(k-1), 2^k).
    #[serde(with = "super::serde_tables::array")]
    buckets: [u64; 65],
    cold: u64,
    /// A part of a trace that follows another: the lines of its first
    /// references to each line, in order (their distances depend on the
    /// part before; [`ReuseDistance::merge`] measures them).
    firsts: Option<Vec<u64>>,
}

/// The histogram of exact LRU stack distances.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReuseReport {
    /// First references to a line (no reuse; an infinite distance).
    pub cold: u64,
    /// `(lo, hi, count)`: references whose distance d is in `lo..=hi`
    /// (buckets of powers of two; the first is d = 0).
    pub buckets: Vec<(u64, u64, u64)>,
    /// Distinct lines referenced.
    pub distinct_lines: u64,
    /// Present when the histogram is estimated from a sample
    /// (`--reuse sampled`): then every count above is an estimate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<super::reuse_sampled::Sampling>,
}

impl Default for ReuseDistance {
    fn default() -> Self {
        ReuseDistance::new(0)
    }
}

impl ReuseDistance {
    /// Keeps the last uses of the lines below `table_lines` (at most
    /// [`MAX_TABLE_LINES`]) in a table.
    pub fn new(table_lines: u64) -> ReuseDistance {
        ReuseDistance {
            stack: StackDistances::new(table_lines),
            buckets: [0; 65],
            cold: 0,
            firsts: None,
        }
    }

    /// The same for a part of a trace that follows another.
    pub fn for_later_part(table_lines: u64) -> ReuseDistance {
        ReuseDistance {
            firsts: Some(Vec::new()),
            ..ReuseDistance::new(table_lines)
        }
    }

    /// Adds the part of the trace that follows this one: the first
    /// references of `later`'s lines are measured against this part's
    /// stack, then the stack takes `later`'s order.
    pub fn merge(&mut self, later: ReuseDistance) {
        for &line in later.firsts.iter().flatten() {
            match self.stack.access(line) {
                Some(d) => self.buckets[log2_bucket(d)] += 1,
                None => self.cold += 1,
            }
        }
        for line in later.stack.lines_by_last_use() {
            self.stack.access(line);
        }
        for (a, b) in self.buckets.iter_mut().zip(later.buckets) {
            *a += b;
        }
        self.cold += later.cold;
    }

    /// A reference to `line`; returns its distance (`None`: first use).
    #[inline(always)]
    pub fn access(&mut self, line: u64) -> Option<u64> {
        let d = self.stack.access(line);
        match d {
            Some(d) => self.buckets[log2_bucket(d)] += 1,
            None => self.first(line),
        }
        d
    }

    #[inline(never)]
    fn first(&mut self, line: u64) {
        match self.firsts.as_mut() {
            Some(f) => f.push(line),
            None => self.cold += 1,
        }
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
            distinct_lines: self.cold,
            sampling: None,
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
    fn live_times_count_as_a_plain_list_does() {
        // Sizes around the word and block edges; times set in order (as
        // the stack does), random live ones cleared, and counts up to the
        // newest time checked against a list of bools.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for n in [1, 63, 64, 65, 511, 512, 513, 1500, 4100] {
            for ones in [0, 1, n / 3, n] {
                let mut fast = LiveTimes::with_leading_ones(n, ones);
                let mut slow: Vec<bool> = (0..n).map(|i| i < ones).collect();
                for now in ones..n {
                    let t = (next() % (now as u64 + 1)) as usize;
                    if slow[t] {
                        fast.clear(t);
                        slow[t] = false;
                    }
                    fast.set(now);
                    slow[now] = true;
                    for _ in 0..8 {
                        let lo = (next() % (now as u64 + 1)) as usize;
                        if lo == now {
                            continue;
                        }
                        let want = slow[lo + 1..now].iter().filter(|&&b| b).count() as u64;
                        assert_eq!(fast.between(lo, now), want, "n {n} ones {ones} {lo}..{now}");
                    }
                }
                let last = n - 1;
                for lo in 0..last {
                    let want = slow[lo + 1..last].iter().filter(|&&b| b).count() as u64;
                    assert_eq!(
                        fast.between(lo, last),
                        want,
                        "n {n} ones {ones} {lo}..{last}"
                    );
                }
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

    #[test]
    fn renumbering_with_room_beyond_the_least_keeps_the_distances() {
        // Enough lines that a renumbering leaves eight times their number
        // of room (more than MIN_ROOM), and lines forgotten in between (as
        // the sampled histogram forgets them): the live times are read from
        // the bits, which must skip the forgotten.
        let lines = (MIN_ROOM / 4) as u64;
        let mut s = StackDistances::new(0);
        for round in 0..6u64 {
            for i in 0..lines {
                let d = s.access(i);
                if round == 0 {
                    assert_eq!(d, None);
                } else if i % 7 == 0 && round % 2 == 0 {
                    // Forgotten at the end of the round before.
                    assert_eq!(d, None, "round {round} line {i}");
                } else {
                    // Every other line was used since, minus the forgotten
                    // ones not yet used again this round.
                    let forgotten_after = if round % 2 == 0 {
                        (i + 1..lines).filter(|j| j % 7 == 0).count() as u64
                    } else {
                        0
                    };
                    assert_eq!(
                        d,
                        Some(lines - 1 - forgotten_after),
                        "round {round} line {i}"
                    );
                }
            }
            if round % 2 == 1 {
                for i in (0..lines).step_by(7) {
                    s.forget(i);
                }
            }
        }
        assert!(s.owner.len() > MIN_ROOM, "renumbered with more room");
    }
}
