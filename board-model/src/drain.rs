//! The drain (board.md step 3): the rational rate limiter that decides in
//! which clock each word leaves the TX FIFO, and the board's hand-over of
//! the popped words to the packetizer, with the idle flushes (step 4)
//! between them, in clock order.

use hmtt_format::record::RecordWord;

use super::packetizer::CloseReason;
use super::Board;

/// The rate limiter of board.md step 3 after the last settled word, in
/// clocks: `num` is the credit one clock adds (`L` times the per-tick
/// numerator), `0 < num < den`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limiter {
    num: u64,
    /// The gap from a pop that left credit `c` to the next one while the
    /// FIFO is not empty, `ceil((den - c) / num)`, is `gap_q + (c < gap_r)`
    /// for every `c` in `0..=num`.
    gap_q: u64,
    gap_r: u64,
    /// The credit a gap of `gap_q` (`gap_q + 1`) clocks adds, minus the
    /// pop's `den`, modulo 2^64: `gap * num - den` without a multiply on
    /// the credit's dependency chain.
    step_short: u64,
    step_long: u64,
    /// The clock after the last pop (0 at reset: a virtual pop in clock -1
    /// that left credit 0).
    tail_free: u64,
    /// The credit right after that pop.
    credit: u64,
}

impl Limiter {
    pub(super) fn new(num: u64, den: u64) -> Limiter {
        let (q, r) = (den / num, den % num);
        // With r = 0, c = num is the only credit one clock short of q.
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

    /// The shortest gap between two pops, less one.
    #[inline(always)]
    pub(super) fn gap_q(&self) -> u64 {
        self.gap_q
    }

    /// The clock after the last pop.
    #[inline(always)]
    pub(super) fn tail_free(&self) -> u64 {
        self.tail_free
    }

    /// The pop clock of a word pushed in clock `push` behind every word so
    /// far, and the state after it. The word counts in `level` from clock
    /// `push + 1` on. Without branches: the limiter pops in the clock its
    /// credit reaches `den` or, if nothing from earlier clocks was left by
    /// then (the credit capped at `den`), in clock `push + 1` with `num`
    /// left. `SATURATE`: clocks may come near `u64::MAX` (the caller
    /// checked).
    #[inline(always)]
    pub(super) fn next<const SATURATE: bool>(&mut self, push: u64) -> u64 {
        let c = self.credit;
        let long = c < self.gap_r;
        let gap = self.gap_q + u64::from(long);
        let (natural, first) = if SATURATE {
            (
                self.tail_free.saturating_add(gap - 1),
                push.saturating_add(1),
            )
        } else {
            (self.tail_free + (gap - 1), push + 1)
        };
        let late = first > natural;
        let pop = if late { first } else { natural };
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

impl Board {
    /// The packetizer takes every pop and idle flush of the clocks before
    /// the current one.
    pub(super) fn catch_up(&mut self) {
        if !self.finished {
            self.take_until(self.cur_clock(), None);
        }
    }

    /// Steps 3 and 4 for the packetizer: it takes the words popped in
    /// clocks before `limit` and closes the open packet by idle flush if
    /// that falls in a clock before `limit`, in clock order. With `target`
    /// (end of stream), stops as soon as the first `target` words pushed
    /// are in closed packets and returns whether that happened.
    #[inline(never)]
    pub(super) fn take_until(&mut self, limit: u64, target: Option<u64>) -> bool {
        self.fifo.settle();
        let reached = match target {
            None => {
                self.take_batch(limit);
                false
            }
            Some(n) => self.take_to_target(limit, n),
        };
        self.sync_packet_counters();
        self.refresh_push_limit();
        reached
    }

    /// `take_until` one word at a time, stopping at the close that puts
    /// the first `target` words pushed into closed packets.
    fn take_to_target(&mut self, limit: u64, target: u64) -> bool {
        let reached = |b: &Board| {
            let taken = b.fifo.consumed();
            taken >= target && taken - b.packetizer.fifo_words_in_open() as u64 >= target
        };
        while !reached(self) {
            let next = self.fifo.next_unconsumed().filter(|&(_, p)| p < limit);
            let upto = next.map_or(limit, |(_, p)| p);
            if let Some(f) = self.packetizer.flush_deadline() {
                if f < upto {
                    self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
                    continue;
                }
            }
            let Some((w, p)) = next else {
                return false;
            };
            self.fifo.consume();
            let w = RecordWord(w);
            self.packetizer.pop(p, w, self.flags);
            if let Some(pr) = self.probe.as_deref_mut() {
                pr.popped.push((p, w));
            }
        }
        true
    }

    /// `take_until` without a target: the words popped before `limit` in
    /// runs, the idle flushes between them and before `limit`.
    fn take_batch(&mut self, limit: u64) {
        loop {
            let (words, clocks) = self.fifo.popped_span(limit);
            let Some(&first) = clocks.first() else {
                break;
            };
            if let Some(f) = self.packetizer.flush_deadline() {
                if f < first {
                    self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
                }
            }
            let n = self.packetizer.pop_run(words, clocks, self.flags);
            if let Some(pr) = self.probe.as_deref_mut() {
                pr.popped.extend(
                    clocks[..n]
                        .iter()
                        .zip(&words[..n])
                        .map(|(&p, &w)| (p, RecordWord(w))),
                );
            }
            self.fifo.consume_n(n);
        }
        if let Some(f) = self.packetizer.flush_deadline() {
            if f < limit {
                self.packetizer.close(f, self.flags, CloseReason::IdleFlush);
            }
        }
    }

    pub(super) fn sync_packet_counters(&mut self) {
        let p = self.packetizer.counters();
        let c = &mut self.counters;
        c.words_pushed = self.fifo.pushed();
        c.words_popped = self.fifo.consumed();
        c.fifo_high_water = self.fifo.high_water();
        c.packets = p.packets;
        c.packet_words = p.packet_words;
        c.injected_line_hi = p.injected_line_hi;
        c.packets_closed_full = p.closed_full;
        c.packets_closed_sync = p.closed_sync;
        c.packets_closed_idle = p.closed_idle;
    }
}
