//! Sequential streams and the paper's Stream Coverage Rate (SCR, §6.1: the
//! share of references that belong to streams). A stream here is a chain
//! of references to consecutive lines, ascending or descending (a stride
//! of one line, the sequential case of the fixed-stride streams of the
//! paper's detector), in which each reference comes within the last
//! `window` references of the one before it: other references may be
//! interleaved with a stream, as a detector with a `window`-entry table
//! sees them (the paper uses 32 entries). A reference continues the most
//! recent chain it fits; otherwise it starts one. A chain counts as a
//! stream from `min_len` references on (3: a prefetcher's "three
//! contiguous accesses").
//!
//! Memory: a ring of `window` chain ends.

use serde::Serialize;

use super::log2_bucket;

/// Default detection window (the paper's 32 entries).
pub const DEFAULT_WINDOW: usize = 32;
/// Default shortest chain that counts as a stream.
pub const DEFAULT_MIN_LEN: u64 = 3;

#[derive(Clone, Copy, Default)]
struct ChainEnd {
    space: u32,
    line: u64,
    /// +1 ascending, -1 descending, 0 a single reference so far.
    dir: i8,
    len: u64,
    live: bool,
}

/// The stream detector.
pub struct Streams {
    ring: Vec<ChainEnd>,
    /// The ring's lines alone (`u64::MAX` for a slot never used), for the
    /// search.
    lines: Vec<u64>,
    pos: usize,
    min_len: u64,
    references: u64,
    stream_references: u64,
    streams: u64,
    longest: u64,
    /// Chain lengths by [`log2_bucket`].
    lengths: [u64; 65],
}

/// What the detector found.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StreamReport {
    pub window: usize,
    pub min_len: u64,
    pub references: u64,
    /// References in chains of at least `min_len`.
    pub stream_references: u64,
    /// Stream Coverage Rate, percent.
    pub scr_percent: f64,
    /// Chains of at least `min_len`.
    pub streams: u64,
    pub longest: u64,
    /// `(lo, hi, chains)`: chains of every length in `lo..=hi` (powers of two).
    pub run_lengths: Vec<(u64, u64, u64)>,
}

impl Streams {
    pub fn new(window: usize, min_len: u64) -> Streams {
        Streams {
            ring: vec![ChainEnd::default(); window.max(1)],
            lines: vec![u64::MAX; window.max(1)],
            pos: 0,
            min_len: min_len.max(1),
            references: 0,
            stream_references: 0,
            streams: 0,
            longest: 0,
            lengths: [0; 65],
        }
    }

    /// A reference to `line` of address space `space` (0 physical, or a
    /// process); returns the length of its chain so far.
    #[inline]
    pub fn access(&mut self, space: u32, line: u64) -> u64 {
        self.references += 1;
        let joined = self.find(space, line);
        let (dir, len) = match joined {
            Some((j, dir)) => {
                self.ring[j].live = false;
                (dir, self.ring[j].len + 1)
            }
            None => (0, 1),
        };
        let old = self.ring[self.pos];
        if old.live {
            self.close(old.len);
        }
        self.ring[self.pos] = ChainEnd {
            space,
            line,
            dir,
            len,
            live: true,
        };
        self.lines[self.pos] = line;
        self.pos = if self.pos + 1 == self.ring.len() {
            0
        } else {
            self.pos + 1
        };
        len
    }

    /// The newest live chain end `line` continues: (slot, direction).
    #[inline]
    fn find(&self, space: u32, line: u64) -> Option<(usize, i8)> {
        let fits = |e: &ChainEnd| -> Option<i8> {
            if !e.live || e.space != space {
                return None;
            }
            let dir = if line == e.line.wrapping_add(1) {
                1
            } else if line == e.line.wrapping_sub(1) {
                -1
            } else {
                return None;
            };
            (e.dir == 0 || e.dir == dir).then_some(dir)
        };
        let w = self.ring.len();
        if w <= 64 {
            // One pass the compiler vectorises over the lines alone finds
            // the few candidates; they are then tried newest first.
            let (up, down) = (line.wrapping_sub(1), line.wrapping_add(1));
            let mut mask = 0u64;
            for (j, &l) in self.lines.iter().enumerate() {
                mask |= u64::from((l == up) | (l == down)) << j;
            }
            // Slots below `pos` are the newer, the highest of each part newest.
            let newer = mask & ((1u64 << self.pos) - 1);
            for mut part in [newer, mask & !newer] {
                while part != 0 {
                    let j = 63 - part.leading_zeros() as usize;
                    part &= !(1u64 << j);
                    if let Some(dir) = fits(&self.ring[j]) {
                        return Some((j, dir));
                    }
                }
            }
            return None;
        }
        // Newest first: the slots before `pos`, then those from it on.
        let (before, after) = self.ring.split_at(self.pos);
        before
            .iter()
            .enumerate()
            .rev()
            .chain(
                after
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, e)| (i + self.pos, e)),
            )
            .find_map(|(j, e)| fits(e).map(|dir| (j, dir)))
    }

    fn close(&mut self, len: u64) {
        self.lengths[log2_bucket(len)] += 1;
        self.longest = self.longest.max(len);
        if len >= self.min_len {
            self.streams += 1;
            self.stream_references += len;
        }
    }

    /// Closes the chains still open and reports.
    pub fn finish(&mut self) -> StreamReport {
        for k in 0..self.ring.len() {
            let e = self.ring[k];
            if e.live {
                self.ring[k].live = false;
                self.close(e.len);
            }
        }
        let last = self
            .lengths
            .iter()
            .rposition(|&n| n > 0)
            .map_or(0, |i| i + 1);
        StreamReport {
            window: self.ring.len(),
            min_len: self.min_len,
            references: self.references,
            stream_references: self.stream_references,
            scr_percent: super::percent(self.stream_references, self.references),
            streams: self.streams,
            longest: self.longest,
            run_lengths: (1..last)
                .map(|k| {
                    let (lo, hi) = super::reuse_distance::bucket_range(k);
                    (lo, hi, self.lengths[k])
                })
                .collect(),
        }
    }
}
