//! [`Streams::access_run`]: the detector over a run of references, its
//! ring taken apart into local arrays.

use super::{
    line_bucket, log2_bucket, toggle_in, ChainEnd, Streams, HEAD_REFERENCES, LINE_BUCKETS,
};

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
    /// Slots of chain ends of another address space than the run's: out
    /// of the index during the run (no reference of the run continues
    /// them), put back in after it if the run left them.
    foreign: u64,
    /// Slots written during the run (found after it from where it began
    /// and how many references it took).
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

/// The slots of a ring of `w` (up to 64) that `n` references written
/// from slot `p` on fill.
fn ring_span(p: usize, n: u64, w: usize) -> u64 {
    let all = u64::MAX >> (64 - w);
    if n >= w as u64 {
        return all;
    }
    // `n` slots from `p`, turned round the ring of `w`.
    let span = ((1u128 << n) - 1) << p;
    (span | span >> w) as u64 & all
}

impl Streams {
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
    ///
    /// A part that follows another takes its first [`HEAD_REFERENCES`]
    /// references one at a time (they are kept, with the detector's state
    /// at a few of them), the rest in the loop.
    pub fn access_run(&mut self, space: u32, mut lines: impl Iterator<Item = u64>) {
        if self.ring.len() > 64 || self.slots_expecting.len() != LINE_BUCKETS {
            return self.access_each(space, lines);
        }
        if self.head.is_none() {
            return self.run_indexed::<false>(space, lines);
        }
        let kept = HEAD_REFERENCES.saturating_sub(self.references);
        if kept > 0 {
            self.access_each(space, lines.by_ref().take(kept as usize));
        }
        self.run_indexed::<true>(space, lines);
    }

    /// [`Streams::access`] on each of `lines` (out of line: the loops of
    /// the caller keep their registers).
    #[inline(never)]
    fn access_each(&mut self, space: u32, lines: impl Iterator<Item = u64>) {
        lines.for_each(|line| {
            self.access(space, line);
        });
    }

    /// The loop of [`Streams::access_run`]; `LATER`: of a part that follows
    /// another, past its first references, which keeps the chains it ends
    /// for [`Streams::merge`] as [`Streams::access`] does: those born among
    /// its first references one by one (rare once the first window has
    /// gone), the longest of those born after them.
    /// Out of line, as the caller's loops keep their registers better so
    /// (inlined, the shared figures' loop took 2.7 % more instructions).
    #[inline(never)]
    fn run_indexed<const LATER: bool>(&mut self, space: u32, lines: impl Iterator<Item = u64>) {
        let w = self.ring.len();
        self.count_running(false);
        let mut run = RunRing::take(&self.ring, &self.lines, space);
        let Ok(index) = <&mut [u64; LINE_BUCKETS]>::try_from(self.slots_expecting.as_mut_slice())
        else {
            unreachable!("checked above");
        };
        let lengths = &mut self.lengths;
        // Chain ends of another address space leave the index for the run.
        let mut others = run.foreign & run.live;
        while others != 0 {
            let j = others.trailing_zeros() as usize;
            others &= others - 1;
            clear_in(index, j, run.lines[j]);
        }
        let (p_before, refs_before) = (self.pos, self.references);
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
            ..
        } = run;
        // Chains of one reference made in the run (lengths[1]).
        let mut singles = 0u64;
        // `LATER`: (index of the reference that ended it, born, length) of
        // the chains born among the first references that ended in the
        // run, and the longest of the others that did.
        let mut head_closes = Vec::new();
        let mut late_longest = 0u64;
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
            if LATER {
                let (closed, born) = (closing[p_at], borns[p_at]);
                if born < HEAD_REFERENCES && closed != 0 {
                    head_closes.push((refs - 1, born, closed));
                }
                late_longest = late_longest.max(if born < HEAD_REFERENCES { 0 } else { closed });
            }
            index[line_bucket(next_a)] |= bit;
            index[line_bucket(next_b)] |= bit;
            ends[p_at] = line;
            lens[p_at] = len;
            closing[p_at] = len;
            borns[p_at] = born;
            dirs[p_at] = dir;
            live |= bit;
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
        run.written = ring_span(p_before, refs - refs_before, w);
        run.give_back(&mut self.ring, &mut self.lines, space);
        let mut others = run.foreign & !run.written & run.live;
        while others != 0 {
            let j = others.trailing_zeros() as usize;
            others &= others - 1;
            toggle_in(index, j, &self.ring[j]);
        }
        self.count_running(true);
        if LATER {
            for (at, born, len) in head_closes {
                self.head_close(at, born, len);
            }
            if let Some(head) = self.head.as_mut() {
                for cp in &mut head.checkpoints {
                    cp.longest_after = cp.longest_after.max(late_longest);
                }
            }
        }
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
}
