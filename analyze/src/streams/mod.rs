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
//! Memory: a ring of `window` chain ends. For a window of up to 64, the
//! live chain ends are also kept by the low bits of the lines that may
//! continue them (a mask of slots per bucket), so a reference finds the
//! chain ends it may continue without a scan of the ring, and without
//! trying the ends that are dead or point the other way (a few hot lines
//! fill the ring with those).

use serde::Serialize;

use super::log2_bucket;

mod run;
#[cfg(test)]
mod tests;

/// Default detection window (the paper's 32 entries).
pub const DEFAULT_WINDOW: usize = 32;
/// Default shortest chain that counts as a stream.
pub const DEFAULT_MIN_LEN: u64 = 3;

#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct ChainEnd {
    space: u32,
    line: u64,
    /// +1 ascending, -1 descending, 0 a single reference so far.
    dir: i8,
    len: u64,
    live: bool,
    /// Index of the chain's first reference (in this detector's count).
    born: u64,
}

impl ChainEnd {
    /// The direction in which `line` (of address space `space`) continues
    /// this live chain end, if it does.
    #[inline(always)]
    fn continued_by(&self, space: u32, line: u64) -> Option<i8> {
        if !self.live || self.space != space {
            return None;
        }
        let dir = if line == self.line.wrapping_add(1) {
            1
        } else if line == self.line.wrapping_sub(1) {
            -1
        } else {
            return None;
        };
        (self.dir == 0 || self.dir == dir).then_some(dir)
    }
}

/// References of a part of a trace that follows another kept for
/// [`Streams::merge`].
pub const HEAD_REFERENCES: u64 = 1 << 16;
/// Where the detector's state is kept for [`Streams::merge`] to compare.
const CHECKPOINTS: [u64; 6] = [64, 256, 1024, 4096, 16384, 65536];

/// The counters of the detector at one time.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Counts {
    references: u64,
    stream_references: u64,
    streams: u64,
    #[serde(with = "super::serde_tables::array")]
    lengths: [u64; 65],
}

/// The detector's state after the first `at` references of a part.
#[derive(serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    at: u64,
    ring: Vec<ChainEnd>,
    lines: Vec<u64>,
    pos: usize,
    counts: Counts,
    /// The longest chain born after it that ended (the chains running at
    /// it end with other lengths in one pass: [`Streams::merge`] counts
    /// those itself).
    longest_after: u64,
}

/// What a part of a trace that follows another keeps so that
/// [`Streams::merge`] can give the counts of one pass: its first
/// references, the detector's state at a few of them, and the chains
/// started among them that ended later. Which references join which chain
/// depends on the chain ends of the part before only until the chain ends
/// of the detector run on from the part before equal this part's own in
/// all but length (after every chain end of the window has come from this
/// part, in practice within the first checkpoint); from then on both
/// detectors join the same references to the same slots, and only the
/// lengths of the chains running at that point differ: longer by what
/// they had before, or shorter, when a reference of the part continued a
/// chain of the part before that the part alone saw start with it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Head {
    references: Vec<(u32, u64)>,
    checkpoints: Vec<Checkpoint>,
    /// (index of the reference that ended it, born, length) of chains born
    /// among the first references.
    closes: Vec<(u64, u64, u64)>,
}

/// Why two parts' streams cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stream detector's state after the part before did not meet this part's own within its first {HEAD_REFERENCES} references")]
pub struct NotConverged;

/// Buckets of [`Streams::slots_expecting`].
const LINE_BUCKETS: usize = 1024;

#[inline(always)]
fn line_bucket(line: u64) -> usize {
    (line as usize) & (LINE_BUCKETS - 1)
}

/// The newest live chain end of `ring` (its newest slot before `pos`)
/// among the slots of `mask` that `line` continues: (slot, direction).
#[inline(always)]
fn newest_fitting(
    ring: &[ChainEnd],
    pos: usize,
    mask: u64,
    space: u32,
    line: u64,
) -> Option<(usize, i8)> {
    let fits = |e: &ChainEnd| e.continued_by(space, line);
    // Slots below `pos` are the newer, the highest of each part newest.
    let newer = mask & ((1u64 << pos) - 1);
    for mut part in [newer, mask & !newer] {
        while part != 0 {
            let j = 63 - part.leading_zeros() as usize;
            part &= !(1u64 << j);
            if let Some(dir) = fits(&ring[j]) {
                return Some((j, dir));
            }
        }
    }
    None
}

/// Sets or clears the bits of slot `j`, holding the live chain end `e`,
/// in the buckets of `index` of the lines that may continue `e`: a
/// toggle, since each end is indexed once when it is made and once when it
/// ends (without a branch on the direction, which the trace decides).
#[inline(always)]
fn toggle_in(index: &mut [u64; LINE_BUCKETS], j: usize, e: &ChainEnd) {
    let bit = 1u64 << j;
    let up = bit & 0u64.wrapping_sub(u64::from(e.dir >= 0));
    let down = bit & 0u64.wrapping_sub(u64::from(e.dir <= 0));
    index[line_bucket(e.line.wrapping_add(1))] ^= up;
    index[line_bucket(e.line.wrapping_sub(1))] ^= down;
}

/// The stream detector.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Streams {
    ring: Vec<ChainEnd>,
    /// The ring's lines alone (`u64::MAX` for a slot never used), for the
    /// search.
    lines: Vec<u64>,
    /// Windows of up to 64: bucket of a line's low bits → mask of the
    /// slots of live chain ends that a line of the bucket may continue
    /// (their line ± 1, as their direction allows). Derived from the ring:
    /// not saved, rebuilt by [`Streams::rebuild_index`].
    #[serde(skip)]
    slots_expecting: Vec<u64>,
    pos: usize,
    min_len: u64,
    references: u64,
    stream_references: u64,
    streams: u64,
    longest: u64,
    /// Chain lengths by [`log2_bucket`].
    #[serde(with = "super::serde_tables::array")]
    lengths: [u64; 65],
    head: Option<Box<Head>>,
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
            slots_expecting: if window <= 64 {
                vec![0; LINE_BUCKETS]
            } else {
                Vec::new()
            },
            pos: 0,
            min_len: min_len.max(1),
            references: 0,
            stream_references: 0,
            streams: 0,
            longest: 0,
            lengths: [0; 65],
            head: None,
        }
    }

    /// The detector of a part of a trace that follows another.
    pub fn for_later_part(window: usize, min_len: u64) -> Streams {
        Streams {
            head: Some(Box::new(Head {
                references: Vec::new(),
                checkpoints: Vec::new(),
                closes: Vec::new(),
            })),
            ..Streams::new(window, min_len)
        }
    }

    fn counts(&self) -> Counts {
        Counts {
            references: self.references,
            stream_references: self.stream_references,
            streams: self.streams,
            lengths: self.lengths,
        }
    }

    /// How far this ring's slots are turned from those of `cp` (the part
    /// started its ring at slot 0, wherever this one was).
    fn turn(&self, cp: &Checkpoint) -> usize {
        let w = self.ring.len();
        (self.pos + w - cp.pos % w) % w
    }

    /// Whether the chain ends are those of `cp`, lengths apart.
    fn same_shape(&self, cp: &Checkpoint) -> bool {
        let (w, turn) = (self.ring.len(), self.turn(cp));
        cp.ring.len() == w
            && (0..w).all(|j| {
                let (a, b) = (&self.ring[(j + turn) % w], &cp.ring[j]);
                self.lines[(j + turn) % w] == cp.lines[j]
                    && a.live == b.live
                    && (!a.live || (a.space, a.line, a.dir) == (b.space, b.line, b.dir))
            })
    }

    /// Adds the part of the trace that follows this one (made by
    /// [`Streams::for_later_part`] with the same window): its first
    /// references are run on from this state until the state meets the
    /// part's own, then the part's counts from there on are added, the
    /// chains running at that point lengthened by what they had here.
    pub fn merge(&mut self, mut later: Streams) -> Result<(), NotConverged> {
        let head = later.head.take().expect("a later part's detector");
        for (i, &(space, line)) in head.references.iter().enumerate() {
            self.access(space, line);
            let k = i as u64 + 1;
            let Some(cp) = head.checkpoints.iter().find(|c| c.at == k) else {
                continue;
            };
            if !self.same_shape(cp) {
                continue;
            }
            let (w, turn) = (self.ring.len(), self.turn(cp));
            let deltas: Vec<(u64, i64)> = (0..w)
                .map(|j| (&self.ring[(j + turn) % w], &cp.ring[j]))
                .filter(|(_, b)| b.live)
                .map(|(a, b)| (b.born, a.len as i64 - b.len as i64))
                .collect();
            let delta = |born: u64| deltas.iter().find(|d| d.0 == born).map(|d| d.1);
            self.references += later.references - cp.counts.references;
            self.stream_references = self
                .stream_references
                .wrapping_add(later.stream_references - cp.counts.stream_references);
            self.streams = self.streams.wrapping_add(later.streams - cp.counts.streams);
            for (a, (b, c)) in self
                .lengths
                .iter_mut()
                .zip(later.lengths.iter().zip(&cp.counts.lengths))
            {
                *a = a.wrapping_add(b - c);
            }
            self.longest = self.longest.max(cp.longest_after);
            for &(at, born, len) in &head.closes {
                if let Some(d) = delta(born).filter(|_| at >= k) {
                    self.uncount(len);
                    self.close(len.wrapping_add_signed(d));
                }
            }
            for (j, e) in later.ring.iter().enumerate() {
                let mut e = *e;
                if e.live {
                    e.len = e.len.wrapping_add_signed(delta(e.born).unwrap_or(0));
                }
                self.ring[(j + turn) % w] = e;
                self.lines[(j + turn) % w] = later.lines[j];
            }
            self.pos = (later.pos + turn) % w;
            self.rebuild_index();
            return Ok(());
        }
        if head.references.len() as u64 == later.references {
            Ok(())
        } else {
            Err(NotConverged)
        }
    }

    /// Takes back a chain counted by [`Streams::close`].
    fn uncount(&mut self, len: u64) {
        self.lengths[log2_bucket(len)] = self.lengths[log2_bucket(len)].wrapping_sub(1);
        if len >= self.min_len {
            self.streams = self.streams.wrapping_sub(1);
            self.stream_references = self.stream_references.wrapping_sub(len);
        }
    }

    /// A later part's bookkeeping of its first references.
    #[inline(never)]
    fn keep_head(&mut self, space: u32, line: u64) {
        let index = self.references - 1;
        if index < HEAD_REFERENCES {
            self.head
                .as_mut()
                .expect("a later part")
                .references
                .push((space, line));
        }
    }

    #[inline(never)]
    fn checkpoint(&mut self) {
        let cp = Checkpoint {
            at: self.references,
            ring: self.ring.clone(),
            lines: self.lines.clone(),
            pos: self.pos,
            counts: self.counts(),
            longest_after: 0,
        };
        self.head
            .as_mut()
            .expect("a later part")
            .checkpoints
            .push(cp);
    }

    /// A reference to `line` of address space `space` (0 physical, or a
    /// process); returns the length of its chain so far.
    #[inline(always)]
    pub fn access(&mut self, space: u32, line: u64) -> u64 {
        self.references += 1;
        if self.head.is_some() {
            self.keep_head(space, line);
        }
        let joined = self.find(space, line);
        let (dir, len, born) = match joined {
            Some((j, dir)) => {
                let e = self.ring[j];
                self.toggle(j, &e);
                self.ring[j].live = false;
                (dir, e.len + 1, e.born)
            }
            None => (0, 1, self.references - 1),
        };
        let old = self.ring[self.pos];
        if old.live {
            self.toggle(self.pos, &old);
            self.close(old.len);
            if self.head.is_some() {
                self.head_close(self.references - 1, old.born, old.len);
            }
        }
        let new = ChainEnd {
            space,
            line,
            dir,
            len,
            live: true,
            born,
        };
        self.toggle(self.pos, &new);
        self.ring[self.pos] = new;
        self.lines[self.pos] = line;
        self.pos = if self.pos + 1 == self.ring.len() {
            0
        } else {
            self.pos + 1
        };
        if self.head.is_some() && CHECKPOINTS.contains(&self.references) {
            self.checkpoint();
        }
        len
    }

    /// A later part's bookkeeping of a chain born at reference `born`, of
    /// `len` references, that reference `at` ended.
    #[inline(never)]
    fn head_close(&mut self, at: u64, born: u64, len: u64) {
        let head = self.head.as_mut().expect("a later part");
        for cp in head.checkpoints.iter_mut().filter(|cp| born >= cp.at) {
            cp.longest_after = cp.longest_after.max(len);
        }
        if born < HEAD_REFERENCES {
            head.closes.push((at, born, len));
        }
    }

    /// The newest live chain end `line` continues: (slot, direction).
    #[inline(always)]
    fn find(&self, space: u32, line: u64) -> Option<(usize, i8)> {
        let fits = |e: &ChainEnd| e.continued_by(space, line);
        let w = self.ring.len();
        if w <= 64 {
            let mask = self.slots_expecting[line_bucket(line)];
            if mask == 0 {
                return None;
            }
            return newest_fitting(&self.ring, self.pos, mask, space, line);
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

    /// Sets or clears the bits of slot `j`, holding the live chain end
    /// `e`, in the buckets of the lines that may continue `e`: a toggle,
    /// since each end is indexed once when it is made and once when it
    /// ends (without a branch on the direction, which the trace decides).
    #[inline(always)]
    fn toggle(&mut self, j: usize, e: &ChainEnd) {
        if let Ok(index) = <&mut [u64; LINE_BUCKETS]>::try_from(self.slots_expecting.as_mut_slice())
        {
            toggle_in(index, j, e);
        }
    }

    /// Rebuilds the index of the live chain ends from the ring (after a
    /// merge, or a detector read back from a partial analysis).
    pub(crate) fn rebuild_index(&mut self) {
        if self.ring.len() > 64 {
            self.slots_expecting = Vec::new();
            return;
        }
        self.slots_expecting = vec![0; LINE_BUCKETS];
        for j in 0..self.ring.len() {
            let e = self.ring[j];
            if e.live {
                self.toggle(j, &e);
            }
        }
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
