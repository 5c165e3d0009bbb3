//! The encoder step (board.md steps 1 and 2, format.md §4.1): the keeper's
//! filler TIME word at a clock's tick, the reference limit and the config
//! unit in front of the encoder, and each event's words pushed into the TX
//! FIFO, the pending LOST first, if the clock is open (board.md 2.2: the
//! FIFO's room at the clock's start plus the previous clock's words is at
//! least `2(2 + 3E)`); a clock that is not open drops its events.
//!
//! These are the general ("slow") paths of the board; `fast_path.rs` does
//! the same for the common commands with its state in locals.

use hmtt_format::record::{
    BoardEvent, EventEncoder, Opcode, RecordWord, GAP_TOO_LONG, LINE_LO_MASK, PAYLOAD_MAX,
    TIME_UNIT,
};

use super::cu::CuOutcome;
use super::dsmu::Reference;
use super::limit::Admission;
use super::Board;

/// The words of an ACCESS event at gap `gap` (< [`GAP_TOO_LONG`]) from the
/// encoder's `last`, with stream LINE_HI `hi`, for `Pusher::push_event`:
/// the TIME word (if `gap >= 64`), the LINE_HI word (if the line's high
/// bits differ from `hi`), the ACCESS word; the two skips say which are
/// there. Exactly `EventEncoder::encode`, without branches.
#[inline(always)]
pub(super) fn access_words(
    gap: u64,
    line: u64,
    write_bit: u32,
    hi: u32,
) -> ([u32; 3], u64, u64, u32) {
    use hmtt_format::record::field::{DT_SHIFT, K_BIT, OP_SHIFT};
    const LINE_HI_OP: u32 = (Opcode::LineHi.bits() as u32) << OP_SHIFT;
    debug_assert!(gap < GAP_TOO_LONG);
    let time = u64::from(gap >= TIME_UNIT);
    let line_hi = (line >> 24) as u32;
    let new_hi = u64::from(line_hi != hi);
    let dt = (gap % TIME_UNIT) as u32;
    let time_word = K_BIT | (gap / TIME_UNIT) as u32;
    let hi_word = (dt << DT_SHIFT) | K_BIT | LINE_HI_OP | (line_hi & PAYLOAD_MAX);
    // The dt goes to the first word after TIME: LINE_HI if there is one.
    let access_dt = dt & (new_hi as u32).wrapping_sub(1);
    let access_word = (access_dt << DT_SHIFT) | write_bit | (line & LINE_LO_MASK) as u32;
    ([time_word, hi_word, access_word], time, new_hi, line_hi)
}

impl Board {
    /// A reference from the DSMU at the current tick: the limit, then the
    /// config unit, then the encoder.
    pub(super) fn reference(&mut self, r: &Reference) {
        self.counters.references += 1;
        match self.limit.admit(self.cur) {
            Admission::Taken => {}
            over => {
                self.over_limit(u64::from(over == Admission::FirstOver), 1);
                return;
            }
        }
        let ev = match self.cu.reference(r) {
            CuOutcome::Access(ev) => {
                self.counters.access_events += 1;
                ev
            }
            CuOutcome::AccessSuppressed => {
                self.counters.suppressed += 1;
                return;
            }
            other => match self.config_event(other) {
                Some(ev) => ev,
                None => return,
            },
        };
        self.counters.events += 1;
        self.record(ev);
    }

    /// References dropped by the limit: `clocks` clocks newly over it,
    /// `refs` references; they join the lost count.
    pub(super) fn over_limit(&mut self, clocks: u64, refs: u64) {
        self.counters.clocks_over_limit += clocks;
        self.counters.references_over_limit += refs;
        self.lost += refs;
        self.counters.lost_pending = self.lost;
        // The next event's LOST goes first, on the slow path.
        self.push_limit = 0;
    }

    /// Counters of a reference inside the config window; its event, if any.
    fn config_event(&mut self, outcome: CuOutcome) -> Option<BoardEvent> {
        self.counters.config_events += 1;
        match outcome {
            CuOutcome::Tag(ev) => {
                self.counters.tag_events += 1;
                Some(ev)
            }
            CuOutcome::Inner(command, ev) => {
                self.counters.inner_commands += 1;
                let next_clock = (self.cur_clock() + 1) << self.shift;
                if let Some(su) = self.su.as_deref_mut() {
                    self.su_stop |= su.inner(command, next_clock);
                }
                self.counters.cmd_events += 1;
                let flags = self.cu.mode().header_flags();
                if flags != self.flags {
                    // Packets closing in the clocks before this one carry
                    // the old mode; those closing in it, the mode after
                    // its commands.
                    self.take_until(self.cur_clock(), None);
                    self.flags = flags;
                }
                Some(ev)
            }
            CuOutcome::TagSuppressed => {
                self.counters.suppressed += 1;
                None
            }
            CuOutcome::Access(_) | CuOutcome::AccessSuppressed => None,
        }
    }

    /// Encoder step for one event (format.md §4.1): the pending LOST first,
    /// then the event, each pushed atomically. The keeper of this clock has
    /// already run (`run_until`).
    pub(super) fn record(&mut self, ev: BoardEvent) {
        let t = self.cur;
        let clock = t >> self.shift;
        let level = self.prepare_push(clock);
        if !self.clock_is_open(clock, level) {
            self.drop_event(t);
        } else {
            if self.lost > 0 {
                let count = self.lost.min(u64::from(PAYLOAD_MAX)) as u32;
                if self.try_push_lost(t, count) {
                    self.lost -= u64::from(count);
                    self.counters.lost_words += 1;
                    self.counters.lost_reported += u64::from(count);
                }
            }
            if !self.try_push(t, ev) {
                self.drop_event(t);
            }
            self.counters.lost_pending = self.lost;
        }
        self.refresh_push_limit();
        // While the clocks stay closed, the events of the fast path are
        // dropped without looking: the fill level at a clock's start can
        // fall only after a pop, so no clock before the one after the next
        // pop is open.
        self.drop_before = 0;
        if self.lost > 0 && !self.clock_is_open(clock, self.fifo.len()) {
            if self.fifo.front() >= self.fifo.settled() {
                self.fifo.settle();
            }
            let free_clock = self.fifo.front_pop_clock().saturating_add(1);
            self.drop_before = free_clock.saturating_mul(1 << self.shift);
        }
    }

    /// Board.md 2.2: clock `clock` takes its events if the FIFO's room at
    /// its start plus the previous clock's words is `2(2 + 3E)` or more;
    /// `level` is the fill level now (`level_k` plus the words pushed in
    /// the clock so far).
    #[inline]
    fn clock_is_open(&self, clock: u64, level: usize) -> bool {
        self.lagged_room(clock, level) >= self.open_room
    }

    /// `depth - level_k + pushed_{k-1}` for clock `clock` at fill level
    /// `level` (as `clock_is_open`): the room the tests of board.md 2.2
    /// read, known a clock before the previous clock's words are.
    #[inline]
    fn lagged_room(&self, clock: u64, level: usize) -> usize {
        let lagged_level = level - self.fifo.pushed_in_clock_and_previous(clock) as usize;
        self.fifo_depth - lagged_level
    }

    /// An event found no room (or its gap needs two TIME words).
    fn drop_event(&mut self, t: u64) {
        self.lost += 1;
        self.counters.events_dropped += 1;
        if self.encoder.gap_too_long(t) {
            self.counters.time_overflows += 1;
        }
        self.counters.lost_pending = self.lost;
    }

    /// Pushes the words of `ev` at tick `t` if they all fit
    /// (`prepare_push` done for its clock).
    fn try_push(&mut self, t: u64, ev: BoardEvent) -> bool {
        if let BoardEvent::Access { line, write } = ev {
            if t - self.encoder.last < GAP_TOO_LONG {
                let (words, time, new_hi, hi) = access_words(
                    t - self.encoder.last,
                    line,
                    if write { 1 << 24 } else { 0 },
                    self.encoder.hi,
                );
                return self.try_push_words(t, words, time, new_hi, hi);
            }
        }
        // None: the gap needs two TIME words (the keeper was blocked).
        let Some(e) = self.encoder.encode(t, ev) else {
            return false;
        };
        if self.fifo.len() + e.len() > self.fifo_depth {
            return false;
        }
        let clock = t >> self.shift;
        for w in e.words() {
            self.fifo.push(w.0, clock);
        }
        if let Some(p) = self.probe.as_deref_mut() {
            p.pushed.extend(e.words().iter().map(|&w| (clock, w)));
        }
        self.encoder = e.next;
        true
    }

    /// `try_push` of a LOST event.
    fn try_push_lost(&mut self, t: u64, count: u32) -> bool {
        let gap = t - self.encoder.last;
        if gap >= GAP_TOO_LONG {
            return self.try_push(t, BoardEvent::Lost { count });
        }
        // As `EventEncoder::encode`: a TIME word if the gap is 64 or more,
        // the LOST word with the rest of the gap.
        let time_word = RecordWord::control_unchecked(0, Opcode::Time, (gap / TIME_UNIT) as u32);
        let lost = RecordWord::control_unchecked(
            (gap % TIME_UNIT) as u32,
            Opcode::Lost,
            count.min(PAYLOAD_MAX),
        );
        let hi = self.encoder.hi;
        self.try_push_words(
            t,
            [time_word.0, lost.0, lost.0],
            u64::from(gap >= TIME_UNIT),
            0,
            hi,
        )
    }

    /// Pushes the words of one event (as `Pusher::push_event` takes them)
    /// at tick `t` if they fit; the encoder's LINE_HI becomes `hi`.
    fn try_push_words(&mut self, t: u64, words: [u32; 3], skip1: u64, skip2: u64, hi: u32) -> bool {
        let len = 1 + skip1 + skip2;
        if self.fifo.len() as u64 + len > self.fifo_depth as u64 {
            return false;
        }
        let clock = t >> self.shift;
        let start = self.fifo.pushed();
        self.fifo.pusher().push_event(words, skip1, skip2, clock);
        if let Some(p) = self.probe.as_deref_mut() {
            let f = &self.fifo;
            p.pushed
                .extend((start..f.pushed()).map(|i| (clock, RecordWord(f.word(i)))));
        }
        self.encoder = EventEncoder { last: t, hi };
        true
    }

    /// Before pushes in clock `clock`: the pops of the clocks before it
    /// leave the FIFO, the packetizer catches up if the ring is short of
    /// room. Returns the fill level: `level_k` plus the words pushed in
    /// this clock so far.
    fn prepare_push(&mut self, clock: u64) -> usize {
        self.fifo.settle();
        self.fifo.advance(clock);
        // Room in the ring for what may follow: a LOST and an event, their
        // last three slots written in any case.
        if self.fifo.pushed() + 8 > self.fifo.consumed() + self.fifo.capacity()
            || self.fifo.front() - self.fifo.consumed() >= super::TAKE_BATCH / 2
        {
            self.take_until(clock, None);
        }
        self.fifo.len()
    }

    /// The fast path's bound (see `push_limit`).
    pub(super) fn refresh_push_limit(&mut self) {
        // An event pushed while `pushed + 3 <= push_limit` finds its clock
        // open: the level at the clock's start less the previous clock's
        // words is at most `pushed - front`.
        self.push_limit = if self.lost > 0 || self.fifo_depth < self.open_room {
            0
        } else {
            let room = self.fifo.front() + (self.fifo_depth - self.open_room) as u64 + 3;
            room.min(self.fifo.consumed() + self.fifo.capacity())
                .min(self.fifo.pushed() + super::TAKE_BATCH)
        };
    }

    /// The clock in which the keeper runs next (always after the current
    /// clock once the keeper of that clock has run): the first whose tick
    /// is `KEEPER_GAP` or more after `last`, or later if the keeper is
    /// waiting for room.
    #[inline]
    pub(super) fn keeper_clock(&self) -> u64 {
        let due = self.encoder.keeper_tick();
        let due_clock = if due == u64::MAX {
            u64::MAX
        } else {
            due.div_ceil(1 << self.shift)
        };
        due_clock.max(self.keeper_retry)
    }

    /// The keeper at the start of clock `k` (step 1, before the clock's
    /// events): a filler TIME word if the FIFO has room for it after the
    /// most words the clock before can have pushed (board.md 2.2).
    pub(super) fn keeper_step(&mut self, k: u64) {
        self.keeper_retry = k.saturating_add(1);
        let level = self.prepare_push(k);
        if self.lagged_room(k, level) < self.filler_room {
            // No room at the start of clock k: the room the test reads
            // grows only after a pop, so the clock after the next pop (in
            // k or later) is the first chance.
            self.keeper_retry = self.fifo.front_pop_clock().saturating_add(1);
            return;
        }
        let Some((w, next)) = self.encoder.time_filler(k << self.shift) else {
            return;
        };
        self.fifo.push(w.0, k);
        if let Some(p) = self.probe.as_deref_mut() {
            p.pushed.push((k, w));
        }
        self.encoder = next;
        self.counters.time_fillers += 1;
        self.counters.words_pushed = self.fifo.pushed();
        self.drop_before = 0;
    }

    /// The keeper (step 1) of the clocks after the current one up to the
    /// clock of tick `end`; then `cur = end`. The pops and idle flushes of
    /// the clocks before are fixed already; the packetizer takes them
    /// later.
    pub(super) fn run_until(&mut self, end: u64) {
        let end_clock = end >> self.shift;
        loop {
            let keeper = self.keeper_clock();
            if keeper > end_clock || keeper == u64::MAX {
                break;
            }
            self.keeper_step(keeper);
        }
        self.cur = end;
        self.set_next_event();
    }

    /// `next_event`: the last tick before the keeper's next clock.
    pub(super) fn set_next_event(&mut self) {
        self.next_event = self
            .keeper_clock()
            .checked_mul(1 << self.shift)
            .map_or(u64::MAX, |t| t - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::record::KEEPER_GAP;

    #[test]
    fn branchless_access_words_are_the_encoders() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..20_000u64 {
            let gap = match i % 5 {
                0 => rnd() % 64,
                1 => 64 + rnd() % 200,
                2 => rnd() % KEEPER_GAP,
                3 => KEEPER_GAP - 1 - rnd() % 3,
                // An event later in the keeper's clock than its tick.
                _ => GAP_TOO_LONG - 1 - rnd() % 64,
            };
            let line = rnd() >> (rnd() % 40);
            let write = rnd() % 2 == 0;
            let hi = if rnd() % 2 == 0 {
                (line >> 24) as u32 & PAYLOAD_MAX
            } else {
                (rnd() % 16) as u32
            };
            let last = rnd() % (1 << 40);
            let enc = EventEncoder { last, hi };
            let e = enc
                .encode(last + gap, BoardEvent::Access { line, write })
                .expect("a gap below GAP_TOO_LONG fits one TIME word");
            let (words, skip1, skip2, new_hi) =
                access_words(gap, line, if write { 1 << 24 } else { 0 }, hi);
            // What push_event leaves in the ring.
            let mut ring = [0u32; 3];
            ring[0] = words[0];
            ring[skip1 as usize] = words[1];
            ring[(skip1 + skip2) as usize] = words[2];
            let len = (1 + skip1 + skip2) as usize;
            let got: Vec<u32> = ring[..len].to_vec();
            let want: Vec<u32> = e.words().iter().map(|w| w.0).collect();
            assert_eq!(got, want, "gap {gap} line {line:#x} hi {hi}");
            assert_eq!(new_hi, e.next.hi);
        }
    }
}
