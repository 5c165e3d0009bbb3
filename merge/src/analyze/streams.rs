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

/// Clears slot `j`'s bits from the buckets of `line` ± 1, where the chain
/// end of `line` held in slot `j` is indexed if it is live (a dead or
/// never used slot has no bits: clearing them costs no branch).
#[inline(always)]
fn clear_in(index: &mut [u64; LINE_BUCKETS], j: usize, line: u64) {
    let keep = !(1u64 << j);
    index[line_bucket(line.wrapping_add(1))] &= keep;
    index[line_bucket(line.wrapping_sub(1))] &= keep;
}

/// A ring of up to 64 chain ends taken apart for [`Streams::access_run`].
struct RunRing {
    lines: [u64; 64],
    lens: [u64; 64],
    borns: [u64; 64],
    dirs: [i8; 64],
    /// The lengths of the live chain ends, 0 for the others: what a slot
    /// leaving the window gives the longest, without a branch.
    closing: [u64; 64],
    /// Slots of live chain ends.
    live: u64,
    /// Slots of chain ends of another address space than the run's.
    foreign: u64,
    /// Slots written during the run.
    written: u64,
}

impl RunRing {
    fn take(ring: &[ChainEnd], lines: &[u64], space: u32) -> RunRing {
        let mut run = RunRing {
            lines: [0; 64],
            lens: [0; 64],
            borns: [0; 64],
            dirs: [0; 64],
            closing: [0; 64],
            live: 0,
            foreign: 0,
            written: 0,
        };
        for (j, (e, &line)) in ring.iter().zip(lines).enumerate() {
            run.lines[j] = line;
            run.lens[j] = e.len;
            run.borns[j] = e.born;
            run.dirs[j] = e.dir;
            run.closing[j] = if e.live { e.len } else { 0 };
            run.live |= u64::from(e.live) << j;
            run.foreign |= u64::from(e.space != space) << j;
        }
        run
    }

    fn give_back(&self, ring: &mut [ChainEnd], lines: &mut [u64], space: u32) {
        for (j, (e, line)) in ring.iter_mut().zip(lines).enumerate() {
            if self.written >> j & 1 == 1 {
                *e = ChainEnd {
                    space,
                    line: self.lines[j],
                    dir: self.dirs[j],
                    len: self.lens[j],
                    live: true,
                    born: self.borns[j],
                };
                *line = self.lines[j];
            }
            e.live = self.live >> j & 1 == 1;
        }
    }
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
                self.head_close(old);
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

    /// References to the lines `lines` of address space `space`, in
    /// order: the same as [`Streams::access`] on each, for a window of up
    /// to 64 with the ring taken apart into local arrays (its lines,
    /// lengths, births, directions) and the slots' liveness as a mask in a
    /// register over the run, so that the loop reads and writes no more of
    /// a chain end than it needs and nothing of it is read again after a
    /// store to the index.
    ///
    /// A chain end that leaves the window takes no branch and no count:
    /// over the run the counters hold every chain as if it ended at its
    /// newest end (a new end counts its chain at its length, a join takes
    /// back the length it continued), so a chain end that leaves the
    /// window, live or not, only has its bits cleared from the index and
    /// its length kept for the longest. The chains still running are
    /// taken back out at the end of the run, leaving the counts of the
    /// chains that ended, as [`Streams::access`] keeps them.
    pub fn access_run(&mut self, space: u32, lines: impl Iterator<Item = u64>) {
        let w = self.ring.len();
        if self.head.is_some() || w > 64 || self.slots_expecting.len() != LINE_BUCKETS {
            return lines.for_each(|line| {
                self.access(space, line);
            });
        }
        self.count_running(false);
        let mut run = RunRing::take(&self.ring, &self.lines, space);
        let Ok(index) = <&mut [u64; LINE_BUCKETS]>::try_from(self.slots_expecting.as_mut_slice())
        else {
            unreachable!("checked above");
        };
        let lengths = &mut self.lengths;
        let (mut p, mut refs, min_len) = (self.pos, self.references, self.min_len);
        let (mut chains, mut in_chains, mut long) =
            (self.streams, self.stream_references, self.longest);
        let RunRing {
            lines: ref mut ends,
            ref mut lens,
            ref mut borns,
            ref mut dirs,
            ref mut closing,
            mut live,
            mut foreign,
            mut written,
        } = run;
        // Chains of one reference made in the run (lengths[1]).
        let mut singles = 0u64;
        for line in lines {
            refs += 1;
            let mask = index[line_bucket(line)];
            let (up, down) = (line.wrapping_sub(1), line.wrapping_add(1));
            let mut joined = None;
            if mask != 0 {
                // Newest first: slots below `p`, then from it on, each
                // part from its highest. A slot of the bucket is live and
                // indexed for this side of its line: its line tells the
                // direction.
                let mask = mask & !foreign;
                let newer = mask & ((1u64 << p) - 1);
                'parts: for mut part in [newer, mask & !newer] {
                    while part != 0 {
                        let j = (63 - part.leading_zeros() as usize) & 63;
                        part &= !(1u64 << j);
                        if ends[j] == up {
                            joined = Some((j, 1i8));
                            break 'parts;
                        }
                        if ends[j] == down {
                            joined = Some((j, -1i8));
                            break 'parts;
                        }
                    }
                }
            }
            // The lines that may continue the new chain end: both sides of
            // a new chain, the side of its direction for a joined one
            // (twice: setting a bit twice costs no branch).
            let (dir, len, born, next_a, next_b) = match joined {
                Some((j, dir)) => {
                    clear_in(index, j, ends[j]);
                    live &= !(1u64 << j);
                    closing[j] = 0;
                    let len = lens[j] + 1;
                    // The chain's length moves to the next bucket only at
                    // a power of two.
                    let moved = u64::from(len.is_power_of_two());
                    let k = log2_bucket(len);
                    lengths[k] = lengths[k].wrapping_add(moved);
                    lengths[k - 1] = lengths[k - 1].wrapping_sub(moved);
                    // A chain reaching `min_len` becomes a stream of that
                    // many references; a longer one adds this reference.
                    let reaches = u64::from(len == min_len);
                    chains += reaches;
                    in_chains += reaches * len + u64::from(len > min_len);
                    let next = if dir > 0 { down } else { up };
                    (dir, len, borns[j], next, next)
                }
                None => {
                    singles += 1;
                    (0, 1, refs - 1, down, up)
                }
            };
            // Below 64 (`w` is): the arrays' bounds need no check.
            let p_at = p & 63;
            let bit = 1u64 << p_at;
            clear_in(index, p_at, ends[p_at]);
            long = long.max(closing[p_at]);
            index[line_bucket(next_a)] |= bit;
            index[line_bucket(next_b)] |= bit;
            ends[p_at] = line;
            lens[p_at] = len;
            closing[p_at] = len;
            borns[p_at] = born;
            dirs[p_at] = dir;
            live |= bit;
            foreign &= !bit;
            written |= bit;
            p = if p + 1 == w { 0 } else { p + 1 };
        }
        if min_len == 1 {
            chains += singles;
            in_chains += singles;
        }
        lengths[1] = lengths[1].wrapping_add(singles);
        (self.pos, self.references) = (p, refs);
        (self.streams, self.stream_references, self.longest) = (chains, in_chains, long);
        run.live = live;
        run.foreign = foreign;
        run.written = written;
        run.give_back(&mut self.ring, &mut self.lines, space);
        self.count_running(true);
    }

    /// Adds the chains running (the live chain ends) to the counters as if
    /// they ended now, or takes them back out (`back`).
    fn count_running(&mut self, back: bool) {
        for k in 0..self.ring.len() {
            let e = self.ring[k];
            if !e.live {
                continue;
            }
            let bucket = &mut self.lengths[log2_bucket(e.len)];
            let (n, refs) = if e.len >= self.min_len {
                (1, e.len)
            } else {
                (0, 0)
            };
            if back {
                *bucket = bucket.wrapping_sub(1);
                self.streams = self.streams.wrapping_sub(n);
                self.stream_references = self.stream_references.wrapping_sub(refs);
            } else {
                *bucket = bucket.wrapping_add(1);
                self.streams = self.streams.wrapping_add(n);
                self.stream_references = self.stream_references.wrapping_add(refs);
            }
        }
    }

    /// A later part's bookkeeping of a chain that ended.
    #[inline(never)]
    fn head_close(&mut self, e: ChainEnd) {
        let at = self.references - 1;
        let head = self.head.as_mut().expect("a later part");
        for cp in head.checkpoints.iter_mut().filter(|cp| e.born >= cp.at) {
            cp.longest_after = cp.longest_after.max(e.len);
        }
        if e.born < HEAD_REFERENCES {
            head.closes.push((at, e.born, e.len));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one_pass(lines: &[u64], window: usize) -> StreamReport {
        let mut s = Streams::new(window, DEFAULT_MIN_LEN);
        for &line in lines {
            s.access(0, line);
        }
        s.finish()
    }

    /// The report of `lines` cut at `cut`, each part run apart and merged;
    /// `None` when the merge did not converge.
    fn merged(lines: &[u64], cut: usize, window: usize) -> Option<StreamReport> {
        let mut first = Streams::new(window, DEFAULT_MIN_LEN);
        for &line in &lines[..cut] {
            first.access(0, line);
        }
        let mut later = Streams::for_later_part(window, DEFAULT_MIN_LEN);
        for &line in &lines[cut..] {
            later.access(0, line);
        }
        first.merge(later).ok()?;
        Some(first.finish())
    }

    /// A descending chain of the part before is continued by the later
    /// part's first reference, which the part alone takes for the start
    /// of an ascending chain: its ascending chain is one longer than the
    /// one-pass detector's.
    #[test]
    fn a_chain_the_part_alone_starts_earlier_is_merged_shorter() {
        let before = [1000, 500, 10, 9];
        let after: Vec<u64> = (8..400).chain(5000..5100).collect();
        let lines: Vec<u64> = before.iter().copied().chain(after).collect();
        for window in [4, 32, 100] {
            let merged = merged(&lines, before.len(), window).expect("converges");
            assert_eq!(merged, one_pass(&lines, window), "window {window}");
        }
    }

    proptest! {
        /// A run taken at once gives the detector of its references taken
        /// one at a time, for any window (with and without the index) and
        /// for the part that follows another (which keeps its first
        /// references).
        #[test]
        fn a_run_is_its_references_one_at_a_time(
            steps in prop::collection::vec((-2i64..3, 0u8..4), 1..2000),
            runs in prop::collection::vec(1usize..300, 1..20),
            window in prop::sample::select(vec![1usize, 3, 32, 64, 65]),
            later in any::<bool>(),
        ) {
            let make = || if later {
                Streams::for_later_part(window, DEFAULT_MIN_LEN)
            } else {
                Streams::new(window, DEFAULT_MIN_LEN)
            };
            let mut at = 1u64 << 20;
            let lines: Vec<u64> = steps
                .iter()
                .map(|&(step, jump)| {
                    at = if jump == 0 { at + 4096 } else { at.wrapping_add_signed(step) };
                    at
                })
                .collect();
            let (mut one, mut run) = (make(), make());
            for &line in &lines {
                one.access(0, line);
            }
            let mut rest = &lines[..];
            for &n in runs.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at(n.min(rest.len()));
                run.access_run(0, now.iter().copied());
                rest = later;
            }
            prop_assert_eq!(one.pos, run.pos);
            // The counters between runs are those of the chains that
            // ended (a partial analysis saves them), not only the report.
            let counters = |s: &Streams| {
                (s.references, s.stream_references, s.streams, s.longest, s.lengths)
            };
            prop_assert_eq!(counters(&one), counters(&run));
            let ends = |s: &Streams| {
                s.ring
                    .iter()
                    .map(|e| (e.space, e.line, e.dir, e.len, e.live, e.born))
                    .collect::<Vec<_>>()
            };
            prop_assert_eq!(ends(&one), ends(&run));
            prop_assert_eq!(&one.lines, &run.lines);
            prop_assert_eq!(&one.slots_expecting, &run.slots_expecting);
            prop_assert_eq!(one.finish(), run.finish());
        }

        /// Runs up and down from near where the run before ended (turns
        /// at a line are common, and the ones at the cut are those that
        /// make the parts' chains differ), jumps between them, cut
        /// anywhere: merged or refused, never different.
        #[test]
        fn parts_merge_into_the_one_pass_report(
            runs in prop::collection::vec((-3i64..4, 1u64..40, any::<bool>(), 0u64..8), 1..200),
            cut_share in 0.0f64..1.0,
            window in prop::sample::select(vec![1usize, 3, 32, 64, 65, 100]),
        ) {
            let (mut lines, mut at) = (Vec::new(), 1u64 << 20);
            for (from_end, len, up, jump) in runs {
                at = at.wrapping_add_signed(from_end);
                if jump == 0 {
                    at += 1 << 10;
                }
                for _ in 0..len {
                    lines.push(at);
                    at = if up { at + 1 } else { at - 1 };
                }
            }
            let cut = ((lines.len() as f64) * cut_share) as usize;
            if let Some(merged) = merged(&lines, cut, window) {
                prop_assert_eq!(merged, one_pass(&lines, window));
            }
        }
    }
}
