//! The TX FIFO: a ring buffer of record words with a fixed logical depth.

/// A ring buffer of `u32` words of fixed depth. Pushes are checked by the
/// caller (`free`) so an event goes in whole or not at all.
#[derive(Debug, Clone)]
pub struct TxFifo {
    buf: Box<[u32]>,
    mask: usize,
    head: usize,
    len: usize,
    depth: usize,
    high_water: usize,
}

impl TxFifo {
    /// A FIFO holding at most `depth` words (`depth >= 1`).
    pub fn new(depth: usize) -> TxFifo {
        let cap = depth.max(1).next_power_of_two();
        TxFifo {
            buf: vec![0u32; cap].into_boxed_slice(),
            mask: cap - 1,
            head: 0,
            len: 0,
            depth,
            high_water: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Words that can still be pushed.
    #[inline]
    pub fn free(&self) -> usize {
        self.depth - self.len
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Highest fill level seen.
    pub fn high_water(&self) -> usize {
        self.high_water
    }

    /// Pushes one word; the caller has checked `free() >= 1`.
    #[inline]
    pub fn push(&mut self, word: u32) {
        debug_assert!(self.len < self.depth, "push into a full FIFO");
        self.buf[(self.head + self.len) & self.mask] = word;
        self.len += 1;
        if self.len > self.high_water {
            self.high_water = self.len;
        }
    }

    /// Pops the oldest word; the caller has checked `!is_empty()`.
    #[inline]
    pub fn pop(&mut self) -> u32 {
        debug_assert!(self.len > 0, "pop from an empty FIFO");
        let w = self.buf[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_around_and_keeps_order() {
        let mut f = TxFifo::new(5);
        assert_eq!(f.free(), 5);
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        for round in 0..100 {
            let n = (round % 5) + 1;
            for _ in 0..n.min(f.free()) {
                f.push(next_in);
                next_in += 1;
            }
            assert!(f.len() <= 5);
            for _ in 0..(round % 3 + 1).min(f.len()) {
                assert_eq!(f.pop(), next_out);
                next_out += 1;
            }
        }
        while !f.is_empty() {
            assert_eq!(f.pop(), next_out);
            next_out += 1;
        }
        assert_eq!(next_in, next_out);
        assert_eq!(f.high_water(), 5);
    }
}
