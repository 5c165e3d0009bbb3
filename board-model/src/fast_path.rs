//! The board's fast path: runs of the common commands (RD/WR to an open
//! row outside the config window, ACT, PRE, REF/MRS/ZQ/NOP, in clocks
//! with no keeper due) with the state in locals. Everything it does is
//! what the general path (`encoder.rs`) would do.
//!
//! Pushes store a word and its clock without looking at the FIFO as long
//! as a bound on its fill level (the words popped in the clocks before the
//! one it was last looked at) leaves room, and a full FIFO drops events
//! without looking until the clock after its next pop. The reference
//! limit is one more local: the clock being counted and its count.

use hmtt_format::command::Command;
use hmtt_format::record::{BoardEvent, EventEncoder, RecordWord, KEEPER_GAP};

use super::counters::kind_index;
use super::encoder::access_words;
use super::limit::Admission;
use super::Board;

/// `DdrCmd` discriminants (the `DdrCmd::ALL` order) for the fast path.
const KIND_ACT: usize = 0;
const KIND_PRE: usize = 5;
const KIND_REF: usize = 7;
const KIND_NOP: usize = 10;
/// The W bit of an ACCESS word, by kind: WR and WRA.
const WRITE_BIT: [u32; 12] = [0, 0, 1 << 24, 0, 1 << 24, 0, 0, 0, 0, 0, 0, 0];

impl Board {
    /// The common commands, from `cs[from]` on, until one needs the slow
    /// path (returns its index, nothing done for it): a clock that needs
    /// the keeper, a tick that goes back, an RD/WR out of range, to a bank
    /// without an open row or inside the config window, an event that may
    /// not fit, ACT out of range, PREA and unknown commands. `PROBE`: the
    /// probe is on. With the index, the line of an RD/WR that stopped it
    /// only because its event may not fit (the limit has taken it).
    #[inline(never)]
    pub(super) fn fast_run<const PROBE: bool>(
        &mut self,
        cs: &[Command],
        from: usize,
    ) -> (usize, Option<u64>) {
        if self.finished {
            return (from, None);
        }
        let shift = self.shift;
        let clock_of_tick = !((1u64 << shift) - 1);
        let mut cur = self.cur;
        let mut enc = self.encoder;
        let mut push_limit = self.push_limit;
        let drop_before = self.drop_before;
        let mut limit = self.limit;
        let (first_line, window_lines) = self.cu.window_range();
        let record_access = self.cu.mode().records_accesses();
        let mut dsmu = self.dsmu.view();
        let mut fifo = self.fifo.pusher();
        let per_kind = &mut self.counters.per_kind;
        // RD/WR taken: each is a reference; over the limit, or an ACCESS
        // event (pushed or dropped), or suppressed by the mode, which does
        // not change on this path.
        let mut columns = 0u64;
        let mut over = 0u64;
        let mut over_clocks = 0u64;
        let mut dropped = 0u64;
        let mut no_room = None;
        let mut rest = cs[from..].iter();
        while let Some(c) = rest.as_slice().first() {
            let t = c.cycle;
            let clock_tick = t & clock_of_tick;
            // No keeper is due up to the clock of `t`: the keeper needs its
            // clock's tick KEEPER_GAP after the last push (and then every
            // gap of the clock is below GAP_TOO_LONG for the encoder).
            if (t < cur) | (clock_tick.saturating_sub(enc.last) >= KEEPER_GAP) {
                break;
            }
            let k = c.cmd as usize;
            if k.wrapping_sub(1) < 4 {
                // RD, WR, RDA, WRA.
                let Some(line) = dsmu.column_line(c.rank, c.bank, c.arg) else {
                    break;
                };
                if line.wrapping_sub(first_line) < window_lines {
                    break;
                }
                match limit.admit_in_clock(clock_tick) {
                    Admission::Taken => {
                        if record_access {
                            if fifo.pushed() + 3 <= push_limit {
                                let (words, time, new_hi, hi) =
                                    access_words(t - enc.last, line, WRITE_BIT[k], enc.hi);
                                let start = fifo.pushed();
                                let clock = t >> shift;
                                fifo.push_event(words, time, new_hi, clock);
                                enc = EventEncoder { last: t, hi };
                                if PROBE {
                                    if let Some(p) = self.probe.as_deref_mut() {
                                        p.pushed.extend(
                                            (start..fifo.pushed())
                                                .map(|i| (clock, RecordWord(fifo.word(i)))),
                                        );
                                    }
                                }
                            } else if t < drop_before {
                                dropped += 1;
                            } else {
                                no_room = Some(line);
                                cur = t;
                                break;
                            }
                        }
                    }
                    over_limit => {
                        over += 1;
                        over_clocks += u64::from(over_limit == Admission::FirstOver);
                        // A LOST is pending: it goes first, on the slow path.
                        push_limit = 0;
                    }
                }
                columns += 1;
            } else if k == KIND_ACT {
                if !dsmu.activate(c.rank, c.bank, c.arg) {
                    break;
                }
            } else if k == KIND_PRE {
                dsmu.precharge(c.rank, c.bank);
            } else if !(KIND_REF..=KIND_NOP).contains(&k) {
                // PREA and unknown commands.
                break;
            }
            per_kind[k] += 1;
            cur = t;
            rest.next();
        }
        let i = cs.len() - rest.as_slice().len();
        drop(fifo);
        // The limit has counted the RD/WR left for want of room too.
        self.limit = limit;
        if i > from || no_room.is_some() {
            self.cur = cur;
            self.encoder = enc;
            self.push_limit = push_limit;
            let n = &mut self.counters;
            n.commands += (i - from) as u64;
            if i > from {
                n.last_command_tick = cur;
            }
            if columns > 0 {
                n.references += columns;
                let taken = columns - over;
                if record_access {
                    n.access_events += taken;
                    n.events += taken;
                } else {
                    n.suppressed += taken;
                }
            }
            if dropped > 0 {
                n.events_dropped += dropped;
                self.lost += dropped;
                n.lost_pending = self.lost;
            }
            if over > 0 {
                self.over_limit(over_clocks, over);
            }
            self.counters.words_pushed = self.fifo.pushed();
        }
        (i, no_room)
    }

    /// An RD/WR that `fast_run` left because its ACCESS event may not fit:
    /// the clock needs no keeper, the line is outside the window, the
    /// limit took it, the mode records accesses; `cur` is its tick.
    #[inline(never)]
    pub(super) fn access_without_room(&mut self, c: &Command, line: u64) {
        debug_assert_eq!(c.cycle, self.cur);
        let n = &mut self.counters;
        n.commands += 1;
        n.per_kind[kind_index(c.cmd)] += 1;
        n.last_command_tick = c.cycle;
        n.references += 1;
        n.access_events += 1;
        n.events += 1;
        self.record(BoardEvent::Access {
            line,
            write: c.cmd.is_write(),
        });
        self.counters.words_pushed = self.fifo.pushed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::command::DdrCmd;

    #[test]
    fn fast_path_kind_constants_follow_ddr_cmd() {
        for (k, c) in DdrCmd::ALL.iter().enumerate() {
            assert_eq!(kind_index(*c), k);
            assert_eq!(*c as usize, k, "{c:?}");
            assert_eq!(WRITE_BIT[k] != 0, c.is_write(), "{c:?}");
        }
        assert_eq!(DdrCmd::Act as usize, KIND_ACT);
        assert_eq!(DdrCmd::Pre as usize, KIND_PRE);
        assert_eq!(DdrCmd::Ref as usize, KIND_REF);
        assert_eq!(DdrCmd::Nop as usize, KIND_NOP);
        assert_eq!(
            [DdrCmd::Rd, DdrCmd::Wr, DdrCmd::Rda, DdrCmd::Wra].map(|c| c as usize),
            [1, 2, 3, 4]
        );
    }
}
