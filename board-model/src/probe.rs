//! The co-simulation probe (board.md "Co-simulation interface"): the TX
//! FIFO's pushes and pops by fabric clock, and the fill level they give.

use hmtt_format::record::RecordWord;

/// What the co-simulation probe saw (see `Board::enable_probe`). Clocks are
/// fabric clock indices `k` (clock `k` carries ticks `k*L .. k*L+L-1`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Every word pushed into the FIFO, with the clock of its push.
    pub pushed: Vec<(u64, RecordWord)>,
    /// Every word popped, with the clock of its pop.
    pub popped: Vec<(u64, RecordWord)>,
}

/// One clock in which something happened to the FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockActivity {
    pub clock: u64,
    /// Words pushed in this clock.
    pub pushed: u32,
    /// Whether a word was popped in this clock.
    pub popped: bool,
    /// Fill level after the clock, `level_{k+1}`.
    pub level: u32,
}

impl Probe {
    /// The clocks with pushes or a pop, in order, with the fill level after
    /// each. Clocks not listed leave the level unchanged.
    pub fn activity(&self) -> Vec<ClockActivity> {
        let mut out: Vec<ClockActivity> = Vec::new();
        let (mut i, mut j) = (0, 0);
        let mut level = 0u32;
        while i < self.pushed.len() || j < self.popped.len() {
            let kp = self.pushed.get(i).map_or(u64::MAX, |p| p.0);
            let kq = self.popped.get(j).map_or(u64::MAX, |p| p.0);
            let clock = kp.min(kq);
            let mut a = ClockActivity {
                clock,
                pushed: 0,
                popped: false,
                level,
            };
            while i < self.pushed.len() && self.pushed[i].0 == clock {
                a.pushed += 1;
                i += 1;
            }
            if j < self.popped.len() && self.popped[j].0 == clock {
                a.popped = true;
                j += 1;
            }
            level = level + a.pushed - u32::from(a.popped);
            a.level = level;
            out.push(a);
        }
        out
    }

    /// The fill level after every clock of `first..=last`.
    pub fn levels(&self, first: u64, last: u64) -> Vec<u32> {
        let act = self.activity();
        let mut out = Vec::with_capacity((last.saturating_sub(first) + 1) as usize);
        let mut k = 0;
        let mut level = 0;
        for clock in first..=last {
            while k < act.len() && act[k].clock <= clock {
                level = act[k].level;
                k += 1;
            }
            out.push(level);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activity_merges_pushes_and_pops_by_clock() {
        let w = RecordWord(7);
        let p = Probe {
            pushed: vec![(0, w), (0, w), (0, w), (2, w)],
            popped: vec![(1, w), (2, w), (5, w)],
        };
        let a = p.activity();
        let summary: Vec<_> = a
            .iter()
            .map(|a| (a.clock, a.pushed, a.popped, a.level))
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, 3, false, 3),
                (1, 0, true, 2),
                (2, 1, true, 2),
                (5, 0, true, 1)
            ]
        );
        assert_eq!(p.levels(0, 6), vec![3, 2, 2, 2, 2, 1, 1]);
        assert_eq!(p.levels(3, 4), vec![2, 2]);
    }
}
