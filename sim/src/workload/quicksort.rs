//! Quicksort of random integers on a simulated array.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Quicksort (Lomuto partition, explicit stack) over a real array of
/// 32-bit integers; every element load and store is reported as a
/// reference at byte offset `4 * index`. First the array is filled (one
/// store per element), then sorted.
pub struct Quicksort {
    data: Vec<u32>,
    fill_next: usize,
    stack: Vec<(usize, usize)>,
    part: Option<Partition>,
}

struct Partition {
    lo: usize,
    hi: usize,
    pivot: u32,
    i: usize,
    j: usize,
}

impl Quicksort {
    pub fn new(n: u64, seed: u64) -> Quicksort {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let data: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let stack = if n > 1 {
            vec![(0, n as usize - 1)]
        } else {
            Vec::new()
        };
        Quicksort {
            data,
            fill_next: 0,
            stack,
            part: None,
        }
    }

    /// The array as it stands (sorted once the stream has ended).
    pub fn data(&self) -> &[u32] {
        &self.data
    }

    /// Runs one small step, reporting `(byte offset, write)` references;
    /// false when sorted.
    pub fn step(&mut self, emit: &mut dyn FnMut(u64, bool)) -> bool {
        let off = |i: usize| 4 * i as u64;
        if self.fill_next < self.data.len() {
            emit(off(self.fill_next), true);
            self.fill_next += 1;
            return true;
        }
        if let Some(p) = &mut self.part {
            if p.j < p.hi {
                emit(off(p.j), false);
                if self.data[p.j] < p.pivot {
                    if p.i != p.j {
                        emit(off(p.i), false);
                        self.data.swap(p.i, p.j);
                        emit(off(p.i), true);
                        emit(off(p.j), true);
                    }
                    p.i += 1;
                }
                p.j += 1;
                return true;
            }
            // Put the pivot in place and push the two halves.
            let (lo, hi, i) = (p.lo, p.hi, p.i);
            if i != hi {
                emit(off(i), false);
                self.data.swap(i, hi);
                emit(off(i), true);
                emit(off(hi), true);
            }
            self.part = None;
            if i > lo + 1 {
                self.stack.push((lo, i - 1));
            }
            if i + 1 < hi {
                self.stack.push((i + 1, hi));
            }
            return true;
        }
        match self.stack.pop() {
            None => false,
            Some((lo, hi)) => {
                emit(off(hi), false);
                self.part = Some(Partition {
                    lo,
                    hi,
                    pivot: self.data[hi],
                    i: lo,
                    j: lo,
                });
                true
            }
        }
    }
}
