//! Lost-packet accounting. A board numbers its packets consecutively across
//! all its ports, so gaps are counted on the union of the ports: a sliding
//! bitmap of seen sequence numbers per board, which tolerates reordering
//! between ports up to the window's width.
//!
//! A number a window or more ahead of the highest seen is held back until
//! the next packet: if that one carries on near it, the board's stream did
//! jump (a long loss) and both count; if not, the far number was a corrupt
//! packet's and is counted as such, not as a gap of up to 2^64 packets.

use serde::Serialize;

const WINDOW: u64 = 1 << 16;
const WORDS: usize = (WINDOW / 64) as usize;

/// Seen sequence numbers of one board.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    /// Lowest sequence number the bitmap covers.
    base: u64,
    bits: Box<[u64; WORDS]>,
    min_seen: u64,
    max_seen: u64,
    received: u64,
    duplicates: u64,
    /// Older than the window: cannot tell duplicate from very late.
    too_late: u64,
    /// A number far ahead, waiting for the next packet to confirm it.
    far_ahead: Option<u64>,
    /// Far numbers the next packet did not confirm.
    corrupt: u64,
}

/// Counts of one board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SeqCounts {
    pub first_seq: u64,
    pub last_seq: u64,
    /// Distinct packets received.
    pub received: u64,
    /// Sequence numbers between the first and last seen that never arrived.
    pub lost: u64,
    pub duplicates: u64,
    pub too_late: u64,
    /// Packets whose number was far outside the stream's (corrupt); not
    /// counted in `received` or `lost`.
    pub corrupt_seq: u64,
}

impl SeqTracker {
    pub fn new(first: u64) -> SeqTracker {
        // Start the window below the first number seen: another port may
        // deliver a slightly older packet next.
        let base = first.saturating_sub(WINDOW / 4);
        SeqTracker {
            base,
            bits: Box::new([0; WORDS]),
            min_seen: first,
            max_seen: first,
            received: 0,
            duplicates: 0,
            too_late: 0,
            far_ahead: None,
            corrupt: 0,
        }
    }

    fn test_and_set(&mut self, seq: u64) -> bool {
        let i = (seq % WINDOW) as usize;
        let (w, b) = (i / 64, i % 64);
        let was = self.bits[w] >> b & 1 == 1;
        self.bits[w] |= 1 << b;
        was
    }

    /// Slides the window so that `seq` is inside it. Numbers leaving the
    /// window need no settling: `lost` is the span minus distinct arrivals.
    fn advance_to(&mut self, seq: u64) {
        // `seq >= base + WINDOW`, so this cannot wrap, even at u64::MAX.
        let new_base = seq - (WINDOW - 1);
        if new_base - self.base >= WINDOW {
            self.bits.fill(0);
        } else {
            for s in self.base..new_base {
                let i = (s % WINDOW) as usize;
                self.bits[i / 64] &= !(1 << (i % 64));
            }
        }
        self.base = new_base;
    }

    pub fn record(&mut self, seq: u64) {
        if let Some(far) = self.far_ahead.take() {
            if seq.abs_diff(far) < WINDOW {
                self.place(far);
            } else {
                self.corrupt += 1;
            }
        }
        // (A difference: `max_seen + WINDOW` saturates near 2^64.)
        if seq > self.max_seen && seq - self.max_seen >= WINDOW {
            self.far_ahead = Some(seq);
            return;
        }
        self.place(seq);
    }

    fn place(&mut self, seq: u64) {
        if seq < self.base {
            self.too_late += 1;
            return;
        }
        // (A difference: `base + WINDOW` wraps for a forged seq near 2^64.)
        if seq - self.base >= WINDOW {
            self.advance_to(seq);
        }
        if self.test_and_set(seq) {
            self.duplicates += 1;
            return;
        }
        self.received += 1;
        self.min_seen = self.min_seen.min(seq);
        self.max_seen = self.max_seen.max(seq);
    }

    pub fn counts(&self) -> SeqCounts {
        let span = (self.max_seen - self.min_seen).saturating_add(1);
        SeqCounts {
            // Unconfirmed at the end: nothing came after it.
            corrupt_seq: self.corrupt + u64::from(self.far_ahead.is_some()),
            first_seq: self.min_seen,
            last_seq: self.max_seen,
            received: self.received,
            lost: span.saturating_sub(self.received),
            duplicates: self.duplicates,
            too_late: self.too_late,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_has_no_loss() {
        let mut t = SeqTracker::new(0);
        for s in 0..200_000 {
            t.record(s);
        }
        let c = t.counts();
        assert_eq!((c.received, c.lost, c.duplicates), (200_000, 0, 0));
    }

    /// Found by `fuzz_readers` (a mutated pcap): seqs at the top of the
    /// u64 range wrapped `base + WINDOW` and panicked the receive thread.
    #[test]
    fn seqs_at_the_top_of_the_range_do_not_wrap() {
        for first in [0, u64::MAX - 3, u64::MAX] {
            let mut t = SeqTracker::new(first);
            for s in [u64::MAX - 1, u64::MAX, u64::MAX, 0, u64::MAX - 2] {
                t.record(s);
            }
            let c = t.counts();
            // Each of the 5 numbers lands in one count at most.
            let counted = c.received + c.duplicates + c.too_late + c.corrupt_seq;
            assert!(counted <= 5 && c.received <= 4, "{first}: {c:?}");
        }
        // A stream that runs into the top: nothing lost, the end counted.
        let mut t = SeqTracker::new(u64::MAX - 9);
        for s in u64::MAX - 9..=u64::MAX {
            t.record(s);
        }
        let c = t.counts();
        assert_eq!((c.received, c.lost, c.last_seq), (10, 0, u64::MAX));
    }

    #[test]
    fn gaps_reorder_and_duplicates() {
        let mut t = SeqTracker::new(10);
        // two ports interleaved out of order, seq 13 and 14 lost, 11 twice
        for s in [10, 12, 11, 15, 11, 16, 9, 17] {
            t.record(s);
        }
        let c = t.counts();
        assert_eq!(c.first_seq, 9);
        assert_eq!(c.last_seq, 17);
        assert_eq!(c.received, 7);
        assert_eq!(c.lost, 2);
        assert_eq!(c.duplicates, 1);
    }

    #[test]
    fn loss_across_window_slides() {
        let mut t = SeqTracker::new(0);
        let mut sent = 0;
        for s in 0..1_000_000u64 {
            if s % 1000 != 999 {
                t.record(s);
                sent += 1;
            }
        }
        // A far jump, confirmed by the packet after it.
        t.record(5_000_000);
        t.record(5_000_001);
        let c = t.counts();
        assert_eq!(c.received, sent + 2);
        assert_eq!(c.lost, 1000 + (5_000_000 - 1_000_000));
        assert_eq!(c.corrupt_seq, 0);
        t.record(1); // long gone
        assert_eq!(t.counts().too_late, 1);
    }

    #[test]
    fn a_forged_far_seq_is_corrupt_not_a_gap() {
        for forged in [u64::MAX - 2, 2_800_000_000, 1000 + WINDOW] {
            let mut t = SeqTracker::new(0);
            for s in 0..1000u64 {
                t.record(s);
                if s == 500 {
                    t.record(forged);
                }
            }
            let c = t.counts();
            assert_eq!(
                (c.received, c.lost, c.corrupt_seq),
                (1000, 0, 1),
                "{forged}"
            );
            assert_eq!((c.first_seq, c.last_seq), (0, 999));
            // As the last packet, nothing confirms it.
            t.record(forged);
            let c = t.counts();
            assert_eq!(
                (c.received, c.lost, c.corrupt_seq),
                (1000, 0, 2),
                "{forged}"
            );
        }
    }
}
