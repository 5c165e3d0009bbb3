//! The TX FIFO: a ring buffer of record words, each stored with the tick
//! of its pop, which the rate limiter fixes at push time.
//!
//! Three positions, counted from reset: `end` (words pushed), `front`
//! (words popped before the tick the board last looked at: the logical
//! FIFO is `front..end`) and `consumed` (words the packetizer has taken,
//! `consumed <= front`). The packetizer lags behind the pops and takes the
//! popped words in batches; the ring holds the logical FIFO plus that lag.

/// Words the packetizer may lag behind the pops before it must catch up.
pub const CONSUME_BATCH: u64 = 1024;

/// One word in the ring and the tick of its pop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    pub pop_tick: u64,
    pub word: u32,
}

/// The TX FIFO of a fixed logical depth.
#[derive(Debug, Clone)]
pub struct TxFifo {
    slots: Box<[Slot]>,
    mask: u64,
    consumed: u64,
    front: u64,
    end: u64,
    depth: usize,
}

impl TxFifo {
    /// A FIFO holding at most `depth` words (`depth >= 1`).
    pub fn new(depth: usize) -> TxFifo {
        // The logical FIFO, an event's words and the packetizer's lag.
        let cap = (depth.max(1) + CONSUME_BATCH as usize + 8).next_power_of_two();
        TxFifo {
            slots: vec![Slot::default(); cap].into_boxed_slice(),
            mask: cap as u64 - 1,
            consumed: 0,
            front: 0,
            end: 0,
            depth,
        }
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Marks as popped every word whose pop tick is before `t`.
    #[inline(always)]
    pub fn advance(&mut self, t: u64) {
        while self.front < self.end && self.slots[(self.front & self.mask) as usize].pop_tick < t {
            self.front += 1;
        }
    }

    /// Marks every word as popped (the caller knows the last pop is past).
    #[inline(always)]
    pub fn advance_all(&mut self) {
        self.front = self.end;
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

    /// Words in the FIFO at tick `t` (≥ the last `advance`), before its pop.
    pub fn len_at(&self, t: u64) -> usize {
        let mut i = self.front;
        while i < self.end && self.slots[(i & self.mask) as usize].pop_tick < t {
            i += 1;
        }
        (self.end - i) as usize
    }

    /// Pop tick of the oldest word in the FIFO (not empty).
    #[inline]
    pub fn front_pop_tick(&self) -> u64 {
        debug_assert!(!self.is_empty());
        self.slots[(self.front & self.mask) as usize].pop_tick
    }

    /// Popped words the packetizer has not taken yet.
    #[inline(always)]
    pub fn lag(&self) -> u64 {
        self.front - self.consumed
    }

    /// Words pushed since reset.
    pub fn pushed(&self) -> u64 {
        self.end
    }

    /// Words the packetizer has taken since reset.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Pushes one word popped at `pop_tick`; the caller has checked the room
    /// and the lag.
    #[inline(always)]
    pub fn push(&mut self, word: u32, pop_tick: u64) {
        debug_assert!(self.len() < self.depth, "push into a full FIFO");
        debug_assert!(self.end - self.consumed <= self.mask, "ring overrun");
        let i = (self.end & self.mask) as usize;
        self.slots[i] = Slot { pop_tick, word };
        self.end += 1;
    }

    /// Pushes the first `len` (1..=3) of `words` with their pop ticks; the
    /// caller has checked the room and the lag. Writes all three slots
    /// (the ring has room to spare), so no branch depends on `len`.
    #[inline(always)]
    pub fn push3(&mut self, words: [u32; 3], pop_ticks: [u64; 3], len: usize) {
        debug_assert!((1..=3).contains(&len));
        debug_assert!(self.len() + len <= self.depth, "push into a full FIFO");
        debug_assert!(
            self.end + 3 - self.consumed <= self.mask + 1,
            "ring overrun"
        );
        for k in 0..3 {
            let i = ((self.end + k as u64) & self.mask) as usize;
            self.slots[i] = Slot {
                pop_tick: pop_ticks[k],
                word: words[k],
            };
        }
        self.end += len as u64;
    }

    /// The next word for the packetizer and its pop tick, if it has been
    /// pushed (popped or not).
    #[inline(always)]
    pub fn next_unconsumed(&self) -> Option<(u32, u64)> {
        (self.consumed < self.end).then(|| {
            let s = self.slots[(self.consumed & self.mask) as usize];
            (s.word, s.pop_tick)
        })
    }

    /// The words the packetizer has not taken that were popped before
    /// `limit`, from the oldest: a contiguous part of the ring.
    #[inline]
    pub fn popped_span(&self, limit: u64) -> &[Slot] {
        let start = (self.consumed & self.mask) as usize;
        let avail = ((self.end - self.consumed) as usize).min(self.slots.len() - start);
        let span = &self.slots[start..start + avail];
        &span[..span.partition_point(|s| s.pop_tick < limit)]
    }

    /// The packetizer takes `n` words.
    #[inline]
    pub fn consume_n(&mut self, n: usize) {
        self.consumed += n as u64;
        debug_assert!(self.consumed <= self.end);
        if self.front < self.consumed {
            self.front = self.consumed;
        }
    }

    /// The packetizer takes the word `next_unconsumed` gave.
    #[inline(always)]
    pub fn consume(&mut self) {
        self.consumed += 1;
        if self.front < self.consumed {
            self.front = self.consumed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_tick_and_keeps_order() {
        let mut f = TxFifo::new(5);
        let (mut next_in, mut next_out) = (0u32, 0u32);
        let mut last_pop = 0u64;
        for round in 0..100u64 {
            let now = round * 10;
            f.advance(now);
            for _ in 0..((round % 5) + 1).min(5 - f.len() as u64) {
                last_pop = (last_pop + 3).max(now);
                f.push(next_in, last_pop);
                next_in += 1;
            }
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
            assert_eq!(f.len_at(now), f.len());
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
