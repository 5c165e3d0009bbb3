//! The reference limit (board.md step 2, "The limit"): a fabric clock takes
//! its first `E` references on to the config unit; each later one is
//! dropped and counted lost.

/// What the limit does with one reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// One of the clock's first `E`: it goes on to the config unit.
    Taken,
    /// Dropped; the first drop of its clock.
    FirstOver,
    /// Dropped; the clock had dropped one already.
    Over,
}

/// The count of the current clock's references.
#[derive(Debug, Clone, Copy)]
pub struct RefLimit {
    /// `!(L - 1)`: a tick's clock starts at `tick & clock_mask`.
    clock_mask: u64,
    per_clock: u32,
    /// The first tick of the clock whose references `taken` counts.
    clock_tick: u64,
    taken: u32,
}

impl RefLimit {
    /// `lanes` a power of two, `1 <= per_clock`.
    pub fn new(lanes: u32, per_clock: u32) -> RefLimit {
        debug_assert!(lanes.is_power_of_two() && per_clock >= 1);
        RefLimit {
            clock_mask: !(u64::from(lanes) - 1),
            per_clock,
            clock_tick: 0,
            taken: 0,
        }
    }

    /// A reference at `tick` (ticks never decrease).
    #[inline(always)]
    pub fn admit(&mut self, tick: u64) -> Admission {
        self.admit_in_clock(tick & self.clock_mask)
    }

    /// A reference in the clock that starts at tick `clock_tick`.
    #[inline(always)]
    pub fn admit_in_clock(&mut self, clock_tick: u64) -> Admission {
        // Without a branch on the clock: a new one starts the count again.
        let same = clock_tick == self.clock_tick;
        self.taken = if same { self.taken + 1 } else { 1 };
        self.clock_tick = clock_tick;
        if self.taken <= self.per_clock {
            Admission::Taken
        } else {
            self.over()
        }
    }

    #[cold]
    fn over(&self) -> Admission {
        if self.taken == self.per_clock + 1 {
            Admission::FirstOver
        } else {
            Admission::Over
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_clock_and_restarts_at_the_next() {
        let mut l = RefLimit::new(8, 3);
        let got: Vec<Admission> = [0, 1, 7, 7, 7, 8, 9, 10, 15, 23, 100]
            .iter()
            .map(|&t| l.admit(t))
            .collect();
        use Admission::*;
        assert_eq!(
            got,
            vec![
                Taken, Taken, Taken, FirstOver, Over, Taken, Taken, Taken, FirstOver, Taken, Taken
            ]
        );
        let mut one = RefLimit::new(1, 1);
        assert_eq!([5, 5, 6].map(|t| one.admit(t)), [Taken, FirstOver, Taken]);
    }
}
