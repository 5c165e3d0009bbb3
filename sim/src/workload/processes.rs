//! Several workloads at once: their streams interleaved a quantum at a
//! time in a seeded random order.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{OpResult, OpStream};

/// Interleaves streams `quantum` ops at a time, choosing the next stream at
/// random (seeded) among those not finished.
pub(super) struct Interleave {
    streams: Vec<OpStream>,
    current: usize,
    left: u32,
    quantum: u32,
    rng: ChaCha8Rng,
}

impl Interleave {
    pub(super) fn new(streams: Vec<OpStream>, quantum: u32, seed: u64) -> Self {
        Interleave {
            streams,
            current: 0,
            left: quantum,
            quantum,
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1ea7),
        }
    }
}

impl Iterator for Interleave {
    type Item = OpResult;

    fn next(&mut self) -> Option<OpResult> {
        while !self.streams.is_empty() {
            if self.left == 0 {
                self.left = self.quantum;
                self.current = self.rng.gen_range(0..self.streams.len());
            }
            match self.streams[self.current].next() {
                Some(op) => {
                    self.left -= 1;
                    return Some(op);
                }
                None => {
                    drop(self.streams.swap_remove(self.current));
                    self.left = 0;
                }
            }
        }
        None
    }
}
