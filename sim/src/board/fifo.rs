//! The TX FIFO: a ring buffer of record words with, per word, a tick: the
//! tick of its push until the rate limiter has "settled" it, then the tick
//! of its pop.
//!
//! The pop ticks are a function of the push ticks (the FIFO is first in,
//! first out and the limiter deterministic), so pushes only store the word
//! and its tick, and [`TxFifo::settle`] turns push ticks into pop ticks in
//! one tight loop when someone needs them: the room check once the FIFO
//! may be nearly full, the packetizer, the probe. The highest fill level
//! is found there too.
//!
//! Four positions, counted from reset: `end` (words pushed), `settled`
//! (words whose pop tick is known), `front` (words popped before the tick
//! the board last looked at; the logical FIFO is `front..end`) and
//! `consumed` (words the packetizer has taken), with
//! `consumed <= front <= settled <= end`.

/// Words the packetizer may lag behind the FIFO's depth before the board
/// makes it catch up; the ring holds the depth, this lag and one event.
pub const RING_SLACK: usize = 8192;

/// The rate limiter of board.md step 2, after the last settled word.
#[derive(Debug, Clone, Copy)]
struct Limiter {
    num: u64,
    /// The gap from a pop that left credit `c` to the next one while the
    /// FIFO is not empty, `ceil((den - c) / num)`, is `gap_q + (c < gap_r)`
    /// for every `c` in `0..=num`.
    gap_q: u64,
    gap_r: u64,
    /// The credit a gap of `gap_q` (`gap_q + 1`) ticks adds, minus the
    /// pop's `den`, modulo 2^64: `gap * num - den` without a multiply on
    /// the credit's dependency chain.
    step_short: u64,
    step_long: u64,
    /// The tick after the last pop (0 at reset: a virtual pop at tick -1
    /// that left credit 0).
    tail_free: u64,
    /// The credit right after that pop.
    credit: u64,
}

impl Limiter {
    fn new(num: u64, den: u64) -> Limiter {
        let (q, r) = (den / num, den % num);
        // With r = 0, c = num is the only credit one tick short of q.
        let (gap_q, gap_r) = if r == 0 { (q - 1, num) } else { (q, r) };
        Limiter {
            num,
            gap_q,
            gap_r,
            step_short: gap_q.wrapping_mul(num).wrapping_sub(den),
            step_long: (gap_q + 1).wrapping_mul(num).wrapping_sub(den),
            tail_free: 0,
            credit: 0,
        }
    }

    /// The pop tick of a word pushed at `push` behind every word so far,
    /// and the state after it. Without branches: the limiter pops at the
    /// tick its credit reaches `den` or, if the FIFO was empty by then (the
    /// credit capped at `den`), at the push itself with `num` left.
    /// `SATURATE`: ticks may come near `u64::MAX` (the caller checked).
    #[inline(always)]
    fn next<const SATURATE: bool>(&mut self, push: u64) -> u64 {
        let c = self.credit;
        let long = c < self.gap_r;
        let gap = self.gap_q + u64::from(long);
        let natural = if SATURATE {
            self.tail_free.saturating_add(gap - 1)
        } else {
            self.tail_free + (gap - 1)
        };
        let late = push > natural;
        let pop = if late { push } else { natural };
        self.credit = if late {
            self.num
        } else {
            c.wrapping_add(if long {
                self.step_long
            } else {
                self.step_short
            })
        };
        self.tail_free = if SATURATE {
            pop.saturating_add(1)
        } else {
            pop + 1
        };
        pop
    }
}

/// The TX FIFO of a fixed logical depth.
#[derive(Debug, Clone)]
pub struct TxFifo {
    words: Box<[u32]>,
    /// Push tick of words `settled..end`, pop tick of the others.
    ticks: Box<[u64]>,
    mask: u64,
    consumed: u64,
    front: u64,
    settled: u64,
    end: u64,
    depth: usize,
    limiter: Limiter,
    /// Highest fill level right after a push among the settled words, and
    /// the words popped before the push tick of the one that reached it
    /// (a lower bound for later words: push ticks never decrease).
    high_water: u64,
    popped_before_push: u64,
}

impl TxFifo {
    /// A FIFO holding at most `depth` words (`depth >= 1`) drained at
    /// `num / den` words per tick (`0 < num < den`).
    pub fn new(depth: usize, num: u64, den: u64) -> TxFifo {
        let cap = (depth.max(1) + RING_SLACK + 8).next_power_of_two();
        TxFifo {
            words: vec![0; cap].into_boxed_slice(),
            ticks: vec![0; cap].into_boxed_slice(),
            mask: cap as u64 - 1,
            consumed: 0,
            front: 0,
            settled: 0,
            end: 0,
            depth,
            limiter: Limiter::new(num, den),
            high_water: 0,
            popped_before_push: 0,
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

    /// Words whose pop tick is known.
    #[inline(always)]
    pub fn settled(&self) -> u64 {
        self.settled
    }

    /// Words popped before the tick of the last [`TxFifo::advance`].
    #[inline(always)]
    pub fn front(&self) -> u64 {
        self.front
    }

    /// The highest fill level after a push among the settled words.
    pub fn high_water(&self) -> u64 {
        self.high_water
    }

    /// Computes the pop tick of every word pushed so far and the highest
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
        // Pop ticks stay below `start + (words + 1) * (gap + 1)`: when that
        // fits in u64, the limiter needs no saturating arithmetic.
        let last_push = self.ticks[self.slot(self.end - 1)];
        let words = self.end - self.settled;
        let bound = (words + 1)
            .checked_mul(self.limiter.gap_q + 2)
            .and_then(|span| span.checked_add(last_push.max(self.limiter.tail_free)));
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
        let ticks = &mut self.ticks[..];
        assert_eq!(ticks.len() as u64, mask + 1);
        for i in self.settled..self.end {
            let s = (i & mask) as usize;
            // SAFETY (every `get_unchecked` here): indices are masked by
            // `mask`, and `ticks` holds `mask + 1` elements.
            let push = unsafe { *ticks.get_unchecked(s) };
            // The fill level right after this word's push is the words
            // pushed so far minus those popped before its tick (`before`).
            // Exact when the FIFO was empty at the push (the last pop is
            // before it); otherwise `before` lags, and is brought up to
            // date only when the bound could beat the mark.
            before = if lim.tail_free <= push { i } else { before };
            if i + 1 - before > beat {
                // Stops at word i at the latest: its slot still holds its
                // push tick.
                while unsafe { *ticks.get_unchecked((before & mask) as usize) } < push {
                    before += 1;
                }
                hw = hw.max(i + 1 - before);
                beat = if hw < depth { hw } else { u64::MAX };
            }
            let pop = lim.next::<SATURATE>(push);
            unsafe { *ticks.get_unchecked_mut(s) = pop };
        }
        self.limiter = lim;
        self.high_water = hw;
        self.popped_before_push = before;
        self.settled = self.end;
    }

    /// Marks as popped every settled word whose pop tick is before `t`.
    #[inline]
    pub fn advance(&mut self, t: u64) {
        debug_assert_eq!(self.settled, self.end, "advance before settle");
        // Every word popped before the last push's tick has popped by `t`.
        let mut f = self.front.max(self.consumed).max(self.popped_before_push);
        while f < self.end && self.ticks[self.slot(f)] < t {
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

    /// Words in the FIFO at tick `t` (≥ the ticks of every push so far),
    /// before its pop; the unsettled words' pops are worked out on a copy
    /// of the limiter.
    pub fn len_at(&self, t: u64) -> usize {
        let mut popped = self.front.max(self.consumed);
        while popped < self.settled && self.ticks[self.slot(popped)] < t {
            popped += 1;
        }
        let mut lim = self.limiter;
        for i in self.settled..self.end {
            if lim.next::<true>(self.ticks[self.slot(i)]) < t && popped == i {
                popped += 1;
            }
        }
        (self.end - popped) as usize
    }

    /// Pop tick of the oldest word in the FIFO (settled, not empty).
    #[inline]
    pub fn front_pop_tick(&self) -> u64 {
        debug_assert!(!self.is_empty() && self.front < self.settled);
        self.ticks[self.slot(self.front)]
    }

    /// Pushes one word at tick `tick`; the caller has checked the room and
    /// that the ring has room (`end + 3 <= consumed + capacity`).
    #[inline(always)]
    pub fn push(&mut self, word: u32, tick: u64) {
        debug_assert!(
            self.end + 3 - self.consumed <= self.capacity(),
            "ring overrun"
        );
        let i = self.slot(self.end);
        self.words[i] = word;
        self.ticks[i] = tick;
        self.end += 1;
    }

    /// The push end of the ring for a run of events; `end` is written
    /// back when the [`Pusher`] is dropped.
    #[inline(always)]
    pub fn pusher(&mut self) -> Pusher<'_> {
        assert!(self.words.len() == self.ticks.len() && self.words.len() as u64 == self.mask + 1);
        Pusher {
            words: &mut self.words,
            ticks: &mut self.ticks,
            mask: self.mask,
            end: self.end,
            fifo_end: &mut self.end,
        }
    }

    /// The word at position `i` (pushed, not yet overwritten).
    pub fn word(&self, i: u64) -> u32 {
        debug_assert!(i < self.end && self.end - i <= self.capacity());
        self.words[self.slot(i)]
    }

    /// The next word for the packetizer and its pop tick, if it has been
    /// pushed and settled (popped or not).
    #[inline(always)]
    pub fn next_unconsumed(&self) -> Option<(u32, u64)> {
        (self.consumed < self.settled).then(|| {
            let s = self.slot(self.consumed);
            (self.words[s], self.ticks[s])
        })
    }

    /// The settled words the packetizer has not taken that were popped
    /// before `limit`, from the oldest, with their pop ticks: a contiguous
    /// part of the ring.
    #[inline]
    pub fn popped_span(&self, limit: u64) -> (&[u32], &[u64]) {
        let start = self.slot(self.consumed);
        let avail = ((self.settled - self.consumed) as usize).min(self.words.len() - start);
        let ticks = &self.ticks[start..start + avail];
        let n = if ticks.last().is_some_and(|&p| p < limit) {
            avail
        } else {
            ticks.partition_point(|&p| p < limit)
        };
        (&self.words[start..start + n], &ticks[..n])
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
    ticks: &'a mut [u64],
    mask: u64,
    end: u64,
    fifo_end: &'a mut u64,
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

    /// Pushes the words of one event at tick `tick` without branches on
    /// their number: `words[0]` goes to slot `end`, `words[1]` to
    /// `end + skip1`, `words[2]` to `end + skip1 + skip2` (`skip`s 0 or 1,
    /// a later word overwriting a skipped one), then `end` moves past the
    /// last. The caller has checked the room and the ring
    /// (`end + 3 <= consumed + capacity`).
    #[inline(always)]
    pub fn push_event(&mut self, words: [u32; 3], skip1: u64, skip2: u64, tick: u64) {
        debug_assert!(skip1 <= 1 && skip2 <= 1);
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
                *self.ticks.get_unchecked_mut(s) = tick;
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

    /// The limiter of board.md step 2 run tick by tick.
    fn literal_pops(num: u64, den: u64, pushes: &[u64]) -> Vec<u64> {
        let mut credit = 0u64;
        let mut queue = std::collections::VecDeque::new();
        let mut out = vec![];
        let mut k = 0;
        let mut t = 0u64;
        while out.len() < pushes.len() {
            while k < pushes.len() && pushes[k] == t {
                queue.push_back(k);
                k += 1;
            }
            credit += num;
            if !queue.is_empty() && credit >= den {
                queue.pop_front();
                out.push(t);
                credit -= den;
            }
            if queue.is_empty() {
                credit = credit.min(den);
            }
            t += 1;
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
                .map(|i| f.ticks[f.slot(i)])
                .collect();
            let want = literal_pops(num, den, &pushes);
            assert_eq!(got, want, "{num}/{den}");
            // The high-water mark: the level right after each push.
            let hw = (0..pushes.len())
                .map(|i| i + 1 - want.iter().filter(|&&p| p < pushes[i]).count())
                .max()
                .unwrap();
            assert_eq!(f.high_water(), hw as u64, "{num}/{den}");
        }
    }

    #[test]
    fn pops_by_tick_and_keeps_order() {
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
