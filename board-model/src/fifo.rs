//! The TX FIFO (board.md steps 2 and 3): a ring buffer of record words
//! with, per word, a fabric clock: the clock of its push until the drain's
//! rate limiter has "settled" it, then the clock of its pop.
//!
//! The pop clocks are a function of the push clocks (the FIFO is first in,
//! first out, a word pushed in clock `c` can leave in clock `c + 1` at the
//! earliest, and the limiter is deterministic), so pushes only store the
//! word and its clock, and [`TxFifo::settle`] turns push clocks into pop
//! clocks in one tight loop when someone needs them: the room check once
//! the FIFO may be nearly full, the packetizer, the probe. The highest fill
//! level is found there too.
//!
//! Four positions, counted from reset: `end` (words pushed), `settled`
//! (words whose pop clock is known), `front` (words popped in the clocks
//! before the one the board last looked at; the logical FIFO is
//! `front..end`, and its length then is `level_k` plus the words pushed in
//! clock `k` so far) and `consumed` (words the packetizer has taken), with
//! `consumed <= front <= settled <= end`.

use super::drain::Limiter;

/// Words the packetizer may lag behind the FIFO's depth before the board
/// makes it catch up; the ring holds the depth, this lag and one event.
pub const RING_SLACK: usize = 8192;

/// The TX FIFO of a fixed logical depth.
#[derive(Debug, Clone)]
pub struct TxFifo {
    words: Box<[u32]>,
    /// Push clock of words `settled..end`, pop clock of the others.
    clocks: Box<[u64]>,
    mask: u64,
    consumed: u64,
    front: u64,
    settled: u64,
    end: u64,
    depth: usize,
    limiter: Limiter,
    /// Highest fill level right after a push among the settled words, and
    /// the words popped before the push clock of the one that reached it
    /// (a lower bound for later words: push clocks never decrease).
    high_water: u64,
    popped_before_push: u64,
    /// The clocks of the last pushes: the words pushed in the current
    /// clock and the one before, for the room test (board.md 2.2).
    push_clocks: PushClocks,
}

/// The last two clocks that pushed words, and where their words start.
#[derive(Debug, Clone, Copy)]
pub struct PushClocks {
    /// The clock of the last push (`u64::MAX`: none) and `end` before its
    /// first push.
    clock: u64,
    start: u64,
    /// The same for the clock that pushed before it.
    prev_clock: u64,
    prev_start: u64,
}

impl PushClocks {
    const NONE: PushClocks = PushClocks {
        clock: u64::MAX,
        start: 0,
        prev_clock: u64::MAX,
        prev_start: 0,
    };

    /// Before a push in clock `clock` at position `end`: the first push of
    /// a clock records where that clock's words start.
    #[inline(always)]
    fn mark(&mut self, end: u64, clock: u64) {
        if clock != self.clock {
            self.prev_clock = self.clock;
            self.prev_start = self.start;
            self.clock = clock;
            self.start = end;
        }
    }
}

impl TxFifo {
    /// A FIFO holding at most `depth` words (`depth >= 1`) drained at
    /// `num / den` words per clock (`0 < num < den`: a board of `L` lanes
    /// passes `L * num` of its per-tick rate).
    pub fn new(depth: usize, num: u64, den: u64) -> TxFifo {
        let cap = (depth.max(1) + RING_SLACK + 8).next_power_of_two();
        TxFifo {
            words: vec![0; cap].into_boxed_slice(),
            clocks: vec![0; cap].into_boxed_slice(),
            mask: cap as u64 - 1,
            consumed: 0,
            front: 0,
            settled: 0,
            end: 0,
            depth,
            limiter: Limiter::new(num, den),
            high_water: 0,
            popped_before_push: 0,
            push_clocks: PushClocks::NONE,
        }
    }

    /// Words pushed in clock `clock` so far and in the clock before it
    /// (`clock` at or after every push's clock): the fill level less these
    /// is the level the room test of `clock` reads (board.md 2.2).
    #[inline(always)]
    pub fn pushed_in_clock_and_previous(&self, clock: u64) -> u64 {
        let p = &self.push_clocks;
        if p.clock == u64::MAX || p.clock.saturating_add(1) < clock {
            0
        } else if p.clock == clock && p.prev_clock != u64::MAX && p.prev_clock + 1 == clock {
            self.end - p.prev_start
        } else {
            self.end - p.start
        }
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Slots in the ring.
    #[inline(always)]
    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    #[inline(always)]
    fn slot(&self, i: u64) -> usize {
        (i & self.mask) as usize
    }

    /// Words pushed since reset.
    #[inline(always)]
    pub fn pushed(&self) -> u64 {
        self.end
    }

    /// Words the packetizer has taken since reset.
    #[inline(always)]
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Words whose pop clock is known.
    #[inline(always)]
    pub fn settled(&self) -> u64 {
        self.settled
    }

    /// Words popped before the clock of the last [`TxFifo::advance`].
    #[inline(always)]
    pub fn front(&self) -> u64 {
        self.front
    }

    /// The highest fill level after a push among the settled words.
    pub fn high_water(&self) -> u64 {
        self.high_water
    }

    /// Computes the pop clock of every word pushed so far and the highest
    /// fill level reached by their pushes.
    #[inline]
    pub fn settle(&mut self) {
        if self.settled == self.end {
            return;
        }
        self.settle_all();
    }

    #[inline(never)]
    fn settle_all(&mut self) {
        // Pop clocks stay below `start + (words + 1) * (gap + 1)`, `start`
        // the clock after the last push or the last pop: when that fits in
        // u64, the limiter needs no saturating arithmetic.
        let last_push = self.clocks[self.slot(self.end - 1)];
        let words = self.end - self.settled;
        let bound = (words + 1)
            .checked_mul(self.limiter.gap_q() + 2)
            .and_then(|span| {
                span.checked_add(last_push.checked_add(1)?.max(self.limiter.tail_free()))
            });
        if bound.is_some() {
            self.settle_loop::<false>();
        } else {
            self.settle_loop::<true>();
        }
    }

    #[inline(always)]
    fn settle_loop<const SATURATE: bool>(&mut self) {
        let mask = self.mask;
        let depth = self.depth as u64;
        let mut lim = self.limiter;
        let mut hw = self.high_water;
        // The level that could raise the mark: past `hw`, never once the
        // mark is the depth.
        let mut beat = if hw < depth { hw } else { u64::MAX };
        let mut before = self.popped_before_push;
        let clocks = &mut self.clocks[..];
        assert_eq!(clocks.len() as u64, mask + 1);
        for i in self.settled..self.end {
            let s = (i & mask) as usize;
            // SAFETY (every `get_unchecked` here): indices are masked by
            // `mask`, and `clocks` holds `mask + 1` elements.
            let push = unsafe { *clocks.get_unchecked(s) };
            // The fill level right after this word's push is the words
            // pushed so far minus those popped in clocks before its own
            // (`before`). Exact when the FIFO was empty at the push (the
            // last pop is in an earlier clock); otherwise `before` lags,
            // and is brought up to date only when the bound could beat the
            // mark.
            before = if lim.tail_free() <= push { i } else { before };
            if i + 1 - before > beat {
                // Stops at word i at the latest: its slot still holds its
                // push clock.
                while unsafe { *clocks.get_unchecked((before & mask) as usize) } < push {
                    before += 1;
                }
                hw = hw.max(i + 1 - before);
                beat = if hw < depth { hw } else { u64::MAX };
            }
            let pop = lim.next::<SATURATE>(push);
            unsafe { *clocks.get_unchecked_mut(s) = pop };
        }
        self.limiter = lim;
        self.high_water = hw;
        self.popped_before_push = before;
        self.settled = self.end;
    }

    /// Marks as popped every settled word whose pop clock is before
    /// `clock`.
    #[inline]
    pub fn advance(&mut self, clock: u64) {
        debug_assert_eq!(self.settled, self.end, "advance before settle");
        // Every word popped before the last push's clock has popped by
        // `clock`.
        let mut f = self.front.max(self.consumed).max(self.popped_before_push);
        while f < self.end && self.clocks[self.slot(f)] < clock {
            f += 1;
        }
        self.front = f;
    }

    /// Words in the FIFO as of the last `advance`.
    #[inline(always)]
    pub fn len(&self) -> usize {
        (self.end - self.front) as usize
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.end == self.front
    }

    /// Words in the FIFO in clock `clock` (≥ the clocks of every push so
    /// far) before its pop: the words pushed minus those popped in earlier
    /// clocks. The unsettled words' pops are worked out on a copy of the
    /// limiter.
    pub fn len_at(&self, clock: u64) -> usize {
        let mut popped = self.front.max(self.consumed);
        while popped < self.settled && self.clocks[self.slot(popped)] < clock {
            popped += 1;
        }
        let mut lim = self.limiter;
        for i in self.settled..self.end {
            if lim.next::<true>(self.clocks[self.slot(i)]) < clock && popped == i {
                popped += 1;
            }
        }
        (self.end - popped) as usize
    }

    /// Pop clock of the oldest word in the FIFO (settled, not empty).
    #[inline]
    pub fn front_pop_clock(&self) -> u64 {
        debug_assert!(!self.is_empty() && self.front < self.settled);
        self.clocks[self.slot(self.front)]
    }

    /// Pushes one word in clock `clock`; the caller has checked the room
    /// and that the ring has room (`end + 3 <= consumed + capacity`).
    #[inline(always)]
    pub fn push(&mut self, word: u32, clock: u64) {
        debug_assert!(
            self.end + 3 - self.consumed <= self.capacity(),
            "ring overrun"
        );
        self.push_clocks.mark(self.end, clock);
        let i = self.slot(self.end);
        self.words[i] = word;
        self.clocks[i] = clock;
        self.end += 1;
    }

    /// The push end of the ring for a run of events; `end` is written
    /// back when the [`Pusher`] is dropped.
    #[inline(always)]
    pub fn pusher(&mut self) -> Pusher<'_> {
        assert!(self.words.len() == self.clocks.len() && self.words.len() as u64 == self.mask + 1);
        Pusher {
            words: &mut self.words,
            clocks: &mut self.clocks,
            mask: self.mask,
            end: self.end,
            fifo_end: &mut self.end,
            push_clocks: &mut self.push_clocks,
        }
    }

    /// The word at position `i` (pushed, not yet overwritten).
    pub fn word(&self, i: u64) -> u32 {
        debug_assert!(i < self.end && self.end - i <= self.capacity());
        self.words[self.slot(i)]
    }

    /// The next word for the packetizer and its pop clock, if it has been
    /// pushed and settled (popped or not).
    #[inline(always)]
    pub fn next_unconsumed(&self) -> Option<(u32, u64)> {
        (self.consumed < self.settled).then(|| {
            let s = self.slot(self.consumed);
            (self.words[s], self.clocks[s])
        })
    }

    /// The settled words the packetizer has not taken that were popped
    /// before clock `limit`, from the oldest, with their pop clocks: a
    /// contiguous part of the ring.
    #[inline]
    pub fn popped_span(&self, limit: u64) -> (&[u32], &[u64]) {
        let start = self.slot(self.consumed);
        let avail = ((self.settled - self.consumed) as usize).min(self.words.len() - start);
        let clocks = &self.clocks[start..start + avail];
        let n = if clocks.last().is_some_and(|&p| p < limit) {
            avail
        } else {
            clocks.partition_point(|&p| p < limit)
        };
        (&self.words[start..start + n], &clocks[..n])
    }

    /// The packetizer takes `n` words.
    #[inline]
    pub fn consume_n(&mut self, n: usize) {
        self.consumed += n as u64;
        debug_assert!(self.consumed <= self.settled);
        if self.front < self.consumed {
            self.front = self.consumed;
        }
    }

    /// The packetizer takes the word `next_unconsumed` gave.
    #[inline(always)]
    pub fn consume(&mut self) {
        self.consume_n(1);
    }
}

/// The push end of the ring, borrowed for a run of events
/// ([`TxFifo::pusher`]): the position in a register.
pub struct Pusher<'a> {
    words: &'a mut [u32],
    clocks: &'a mut [u64],
    mask: u64,
    end: u64,
    fifo_end: &'a mut u64,
    push_clocks: &'a mut PushClocks,
}

impl Pusher<'_> {
    /// Words pushed since reset.
    #[inline(always)]
    pub fn pushed(&self) -> u64 {
        self.end
    }

    /// The word at position `i` (pushed, not yet overwritten).
    pub fn word(&self, i: u64) -> u32 {
        self.words[(i & self.mask) as usize]
    }

    /// Pushes the words of one event in clock `clock` without branches on
    /// their number: `words[0]` goes to slot `end`, `words[1]` to
    /// `end + skip1`, `words[2]` to `end + skip1 + skip2` (`skip`s 0 or 1,
    /// a later word overwriting a skipped one), then `end` moves past the
    /// last. The caller has checked the room and the ring
    /// (`end + 3 <= consumed + capacity`).
    #[inline(always)]
    pub fn push_event(&mut self, words: [u32; 3], skip1: u64, skip2: u64, clock: u64) {
        debug_assert!(skip1 <= 1 && skip2 <= 1);
        self.push_clocks.mark(self.end, clock);
        let mask = self.mask;
        let i0 = self.end;
        let i1 = i0 + skip1;
        let i2 = i1 + skip2;
        for (i, w) in [(i0, words[0]), (i1, words[1]), (i2, words[2])] {
            let s = (i & mask) as usize;
            // SAFETY: `s <= mask`, and both slices hold `mask + 1`
            // elements (asserted in `TxFifo::pusher`).
            unsafe {
                *self.words.get_unchecked_mut(s) = w;
                *self.clocks.get_unchecked_mut(s) = clock;
            }
        }
        self.end = i2 + 1;
    }
}

impl Drop for Pusher<'_> {
    fn drop(&mut self) {
        *self.fifo_end = self.end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drain of board.md step 3 run clock by clock, `num` the credit a
    /// clock adds: `level_k` counts the words pushed in earlier clocks.
    fn literal_pops(num: u64, den: u64, pushes: &[u64]) -> Vec<u64> {
        let mut credit = 0u64;
        let mut level = 0usize;
        let mut out = vec![];
        let mut pushed = 0;
        let mut k = 0u64;
        while out.len() < pushes.len() {
            credit += num;
            let mut popped = 0;
            if level > 0 && credit >= den {
                out.push(k);
                credit -= den;
                popped = 1;
            }
            if level - popped == 0 {
                credit = credit.min(den);
            }
            let mut pushed_k = 0;
            while pushed < pushes.len() && pushes[pushed] == k {
                pushed += 1;
                pushed_k += 1;
            }
            level = level + pushed_k - popped;
            k += 1;
        }
        out
    }

    #[test]
    fn settled_pops_are_those_of_the_literal_limiter() {
        let mut seed = 12345u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for (num, den) in [(1, 2), (3, 37), (2, 4), (5, 10), (999, 1000), (1, 7)] {
            let mut pushes = vec![];
            let mut t = 0;
            for _ in 0..400 {
                t += [0, 0, 1, 3, 20][rnd(5) as usize];
                pushes.push(t);
            }
            let mut f = TxFifo::new(1 << 12, num, den);
            for (i, &p) in pushes.iter().enumerate() {
                f.push(i as u32, p);
                if rnd(7) == 0 {
                    f.settle();
                }
            }
            f.settle();
            let got: Vec<u64> = (0..pushes.len() as u64)
                .map(|i| f.clocks[f.slot(i)])
                .collect();
            let want = literal_pops(num, den, &pushes);
            assert_eq!(got, want, "{num}/{den}");
            // No word leaves in the clock of its push.
            assert!(pushes.iter().zip(&want).all(|(c, p)| p > c));
            // The high-water mark: the level right after each push, the
            // pops of the push's own clock not subtracted.
            let hw = (0..pushes.len())
                .map(|i| i + 1 - want.iter().filter(|&&p| p < pushes[i]).count())
                .max()
                .unwrap();
            assert_eq!(f.high_water(), hw as u64, "{num}/{den}");
        }
    }

    #[test]
    fn pops_by_clock_and_keeps_order() {
        let mut f = TxFifo::new(5, 1, 3);
        let (mut next_in, mut next_out) = (0u32, 0u32);
        for round in 0..100u64 {
            let now = round * 10;
            f.settle();
            f.advance(now);
            assert_eq!(f.len_at(now), f.len());
            for _ in 0..((round % 5) + 1).min(5 - f.len() as u64) {
                f.push(next_in, now);
                next_in += 1;
            }
            f.settle();
            f.advance(now);
            assert!(f.len() <= 5);
            // The packetizer takes what was popped before `now`.
            while let Some((w, p)) = f.next_unconsumed() {
                if p >= now {
                    break;
                }
                assert_eq!(w, next_out);
                f.consume();
                next_out += 1;
            }
        }
        f.advance(u64::MAX);
        assert!(f.is_empty());
        while let Some((w, _)) = f.next_unconsumed() {
            assert_eq!(w, next_out);
            f.consume();
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
        assert_eq!(f.pushed(), f.consumed());
    }
}
