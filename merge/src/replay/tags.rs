//! Placing log tags that reach the trace out of sequence order.
//!
//! A tag carries `seq & 0xFFFF`. With several CPUs, their tag stores reach
//! the bus in an order that need not follow their sequence numbers, but one
//! CPU's stores arrive in its own order (the module reserves a number and
//! stores its tag with interrupts off, on the CPU the record names). So:
//! - a tag stands for the sequence number with its low bits nearest the
//!   next one expected;
//! - a number below `next` was settled before (its record applied at its
//!   tag, or given up as lost): the tag is late and changes nothing;
//! - a record is applied at its own tag; records of the same CPU with
//!   smaller numbers whose tags have not come are lost (their effect is
//!   applied there, before it); records of other CPUs wait for their tags
//!   until the window has moved W past them, then are lost in turn.
//!
//! With every tag in order this is the plain alignment: each tag is the next
//! number, and a number skipped by the next tag is lost and applied there.

use std::collections::VecDeque;

/// Default window, in sequence numbers.
pub const DEFAULT_WINDOW: u64 = 4096;
/// Largest window: the nearest candidate must be unique.
const MAX_WINDOW: u64 = 1 << 15;
const LOW_MASK: u64 = 0xFFFF;
/// Half the range of a tag's low bits.
const HALF_RANGE: u64 = 1 << 15;

/// What a tag turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Its record is `seq`: apply it here, after the `lost` ones.
    Placed { seq: u64, reordered: bool },
    /// Its number was settled before (lost and applied, or a tag repeated).
    Late,
    /// No record has its number (beyond the log, or a hole in it).
    NoRecord,
}

/// One board's position in the log.
pub struct SeqWindow {
    window: u64,
    /// Every number below has been settled.
    next: u64,
    /// Every number at or above has not been seen (by a tag or by a later
    /// tag passing it).
    top: u64,
    /// Settled numbers in `[next, top)`, a bit per number modulo the window.
    settled: Vec<u64>,
    /// By CPU: its unsettled numbers in `[next, top)`, in order.
    waiting: Vec<VecDeque<u64>>,
}

impl SeqWindow {
    pub fn new(first: u64, window: u64) -> SeqWindow {
        let window = window.clamp(64, MAX_WINDOW).next_power_of_two();
        SeqWindow {
            window,
            next: first,
            top: first,
            settled: vec![0; (window / 64) as usize],
            waiting: Vec::new(),
        }
    }

    pub fn next(&self) -> u64 {
        self.next
    }

    fn bit(&self, seq: u64) -> (usize, u64) {
        let i = seq & (self.window - 1);
        ((i / 64) as usize, 1 << (i % 64))
    }
    fn is_settled(&self, seq: u64) -> bool {
        let (w, b) = self.bit(seq);
        self.settled[w] & b != 0
    }
    fn settle(&mut self, seq: u64) {
        let (w, b) = self.bit(seq);
        self.settled[w] |= b;
    }
    fn clear(&mut self, seq: u64) {
        let (w, b) = self.bit(seq);
        self.settled[w] &= !b;
    }

    fn queue(&mut self, cpu: u16) -> &mut VecDeque<u64> {
        let c = usize::from(cpu);
        if self.waiting.len() <= c {
            self.waiting.resize_with(c + 1, VecDeque::new);
        }
        &mut self.waiting[c]
    }

    /// The sequence number a tag with low bits `low` stands for: the
    /// nearest one to `next` with those bits (ahead on a tie).
    pub fn resolve(&self, low: u16) -> u64 {
        let ahead = self
            .next
            .saturating_add(u64::from(low).wrapping_sub(self.next) & LOW_MASK);
        match ahead.checked_sub(LOW_MASK + 1) {
            Some(behind) if ahead - self.next > HALF_RANGE => behind,
            _ => ahead,
        }
    }

    /// Moves `next` over the settled numbers.
    fn advance(&mut self) {
        while self.next < self.top && self.is_settled(self.next) {
            self.clear(self.next);
            self.next += 1;
        }
    }

    /// Gives up every unsettled number below `bound`: each one that has a
    /// record goes to `lost`, in order.
    pub fn lose_below(
        &mut self,
        bound: u64,
        cpu_of: &impl Fn(u64) -> Option<u16>,
        lost: &mut Vec<u64>,
    ) {
        while self.next < bound {
            let seq = self.next;
            if seq < self.top {
                if !self.is_settled(seq) {
                    lost.push(seq);
                    if let Some(cpu) = cpu_of(seq) {
                        let q = self.queue(cpu);
                        match q.front() {
                            Some(&s) if s == seq => {
                                q.pop_front();
                            }
                            _ => q.retain(|&s| s != seq),
                        }
                    }
                }
                self.clear(seq);
            } else if cpu_of(seq).is_some() {
                lost.push(seq);
            }
            self.next += 1;
        }
        self.top = self.top.max(self.next);
        self.advance();
    }

    /// A tag with low bits `low`; records given up as lost on the way go
    /// to `lost` (apply them before the tag's own).
    pub fn tag(
        &mut self,
        low: u16,
        cpu_of: &impl Fn(u64) -> Option<u16>,
        lost: &mut Vec<u64>,
    ) -> Tag {
        let seq = self.resolve(low);
        if seq < self.next {
            return Tag::Late;
        }
        let Some(cpu) = cpu_of(seq) else {
            return Tag::NoRecord;
        };
        if seq >= self.next.saturating_add(self.window) {
            // seq >= window here, and seq may be u64::MAX in a damaged log.
            self.lose_below(seq - (self.window - 1), cpu_of, lost);
        }
        let reordered = seq < self.top;
        if reordered && self.is_settled(seq) {
            return Tag::Late;
        }
        // The same CPU's earlier records whose tags did not come.
        let q = self.queue(cpu);
        let mut earlier = Vec::new();
        while let Some(&s) = q.front() {
            if s > seq {
                break;
            }
            q.pop_front();
            if s < seq {
                earlier.push(s);
            }
        }
        for &s in &earlier {
            self.settle(s);
        }
        lost.extend(earlier);
        if !reordered {
            // The numbers passed come into the window.
            for s in self.top..seq {
                match cpu_of(s) {
                    None => self.settle(s),
                    Some(c) if c == cpu => {
                        lost.push(s);
                        self.settle(s);
                    }
                    Some(c) => self.queue(c).push_back(s),
                }
            }
            self.top = seq.saturating_add(1);
        }
        self.settle(seq);
        self.advance();
        Tag::Placed { seq, reordered }
    }

    /// The numbers below `end` never settled, that have a record.
    pub fn unsettled(&self, end: u64, has_record: impl Fn(u64) -> bool) -> Vec<u64> {
        (self.next..end)
            .filter(|&s| (s >= self.top || !self.is_settled(s)) && has_record(s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records 0..n on the CPUs given by `cpus` (cycled).
    fn cpus_of(n: u64, cpus: &'static [u16]) -> impl Fn(u64) -> Option<u16> {
        move |s| (s < n).then(|| cpus[(s % cpus.len() as u64) as usize])
    }

    #[test]
    fn in_order_tags_are_the_next_numbers() {
        let cpu = cpus_of(200_000, &[0]);
        let mut w = SeqWindow::new(0, DEFAULT_WINDOW);
        let mut lost = Vec::new();
        for s in 0..200_000u64 {
            assert_eq!(
                w.tag((s & LOW_MASK) as u16, &cpu, &mut lost),
                Tag::Placed {
                    seq: s,
                    reordered: false
                }
            );
        }
        assert!(lost.is_empty());
        assert!(w.unsettled(200_000, |_| true).is_empty());
    }

    #[test]
    fn a_number_skipped_on_one_cpu_is_lost_there() {
        let cpu = cpus_of(10, &[0]);
        let mut w = SeqWindow::new(0, DEFAULT_WINDOW);
        let mut lost = Vec::new();
        w.tag(0, &cpu, &mut lost);
        assert_eq!(
            w.tag(3, &cpu, &mut lost),
            Tag::Placed {
                seq: 3,
                reordered: false
            }
        );
        assert_eq!(lost, vec![1, 2]);
        assert_eq!(w.next(), 4);
        // Their tags after all: late.
        assert_eq!(w.tag(1, &cpu, &mut lost), Tag::Late);
    }

    #[test]
    fn a_tag_far_behind_is_late_not_a_jump_ahead() {
        let cpu = cpus_of(70_000, &[0, 1]);
        let mut w = SeqWindow::new(0, 64);
        let mut lost = Vec::new();
        for s in (0..10_000u64).step_by(2) {
            w.tag(s as u16, &cpu, &mut lost);
        }
        // CPU 1's 1 comes 10,000 numbers late: not 65,537.
        assert_eq!(w.tag(1, &cpu, &mut lost), Tag::Late);
        assert_eq!(w.resolve(1), 1);
        assert!(w.next() < 10_000);
    }

    #[test]
    fn another_cpus_tags_may_come_late_within_the_window() {
        let cpu = cpus_of(100, &[0, 1]);
        let mut w = SeqWindow::new(0, 64);
        let mut lost = Vec::new();
        // CPU 0's 0, 2, 4 come before CPU 1's 1 and 3.
        for s in [0u16, 2, 4] {
            w.tag(s, &cpu, &mut lost);
        }
        assert_eq!(w.next(), 1);
        assert_eq!(
            w.tag(1, &cpu, &mut lost),
            Tag::Placed {
                seq: 1,
                reordered: true
            }
        );
        assert_eq!(w.next(), 3);
        // CPU 1's 5 passes its 3: lost.
        w.tag(5, &cpu, &mut lost);
        assert_eq!(lost, vec![3]);
        assert_eq!(w.next(), 6);
        lost.clear();
        // CPU 1's 7 never comes; CPU 0 goes on past the window.
        for s in (6u16..80).step_by(2) {
            w.tag(s, &cpu, &mut lost);
        }
        assert_eq!(lost, vec![7, 9, 11, 13]);
        assert_eq!(w.next(), 15);
        assert_eq!(w.tag(9, &cpu, &mut lost), Tag::Late);
        assert_eq!(w.unsettled(100, |s| s < 100).len(), 100 - 79 + 32);
    }

    #[test]
    fn a_number_beyond_the_log_moves_nothing() {
        let cpu = cpus_of(3, &[0]);
        let mut w = SeqWindow::new(0, DEFAULT_WINDOW);
        let mut lost = Vec::new();
        w.tag(0, &cpu, &mut lost);
        assert_eq!(w.tag(40_000, &cpu, &mut lost), Tag::NoRecord);
        assert_eq!(w.next(), 1);
        assert_eq!(w.unsettled(3, |s| s < 3), vec![1, 2]);
    }
}
