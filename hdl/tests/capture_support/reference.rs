//! A small per-clock reference of board.md 2.0 steps 1 to 3 for the
//! capture chain's tests: the golden model's DSMU and CU
//! (`hmtt_sim::board`, whose behaviour 2.0 does not change) and the
//! format's event encoder, stepped clock by clock with the reference
//! limit, the keeper, the atomic pushes against `depth - level_k - (words
//! already pushed in clock k)` and the drain. It records what the capture
//! chain's probe outputs show: words pushed and popped with their clock,
//! the fill level after every clock and the counters.

use hmtt_format::command::Command;
use hmtt_format::record::{BoardEvent, EventEncoder, RecordWord, PAYLOAD_MAX};
use hmtt_sim::board::{BoardConfig, ConfigUnit, CuOutcome, Dsmu, DsmuOutcome, Mode};
use std::collections::VecDeque;

use super::CaptureTrace;

/// Runs `cmds` (ticks increasing) through `clocks` fabric clocks of `lanes`
/// ticks, at most `slots` references per clock.
pub fn reference(
    cfg: &BoardConfig,
    lanes: u64,
    slots: usize,
    cmds: &[Command],
    clocks: u64,
) -> CaptureTrace {
    let mut dsmu = Dsmu::new(&cfg.geometry);
    let mode = Mode {
        tracing: cfg.start_tracing,
        tags_only: cfg.start_tags_only,
    };
    let mut cu = ConfigUnit::new(&cfg.geometry, cfg.window, mode);
    let mut enc = EventEncoder::default();
    let mut fifo: VecDeque<u32> = VecDeque::new();
    let depth = cfg.fifo_depth;
    let (num, den) = (cfg.drain.num * lanes, cfg.drain.den);
    let mut credit = 0u64;
    let mut lost = 0u64;
    let mut trace = CaptureTrace::default();
    let mut next = 0;
    for k in 0..clocks {
        let tick = k * lanes;
        let level = fifo.len();
        let mut words: Vec<u32> = vec![];
        let room = |words: &Vec<u32>| depth - level - words.len();
        // 1. Keeper.
        if let Some((w, e)) = enc.time_filler(tick) {
            if room(&words) >= 1 {
                words.push(w.0);
                enc = e;
                trace.time_fillers += 1;
            }
        }
        // 2. Commands, limit, CU, encoder.
        let mut taken = 0;
        let mut over = 0;
        while next < cmds.len() && cmds[next].cycle < tick + lanes {
            let c = &cmds[next];
            next += 1;
            let r = match dsmu.command(c) {
                DsmuOutcome::Reference(r) | DsmuOutcome::ReferenceAfterPrecharge(r) => r,
                DsmuOutcome::ProtocolError => {
                    trace.protocol_errors += 1;
                    continue;
                }
                DsmuOutcome::OutOfRange => {
                    trace.out_of_range += 1;
                    continue;
                }
                DsmuOutcome::Unknown => {
                    trace.unknown_commands += 1;
                    continue;
                }
                DsmuOutcome::Accepted => continue,
            };
            if taken == slots {
                over += 1;
                lost += 1;
                continue;
            }
            taken += 1;
            let event = match cu.reference(&r) {
                CuOutcome::Access(e) | CuOutcome::Tag(e) | CuOutcome::Inner(_, e) => e,
                CuOutcome::AccessSuppressed | CuOutcome::TagSuppressed => continue,
            };
            let t = c.cycle;
            if lost > 0 {
                let payload = lost.min(PAYLOAD_MAX as u64);
                if let Some(e) = enc.encode(
                    t,
                    BoardEvent::Lost {
                        count: payload as u32,
                    },
                ) {
                    if room(&words) >= e.len() {
                        words.extend(e.words().iter().map(|w: &RecordWord| w.0));
                        enc = e.next;
                        lost -= payload;
                        trace.lost_words += 1;
                    }
                }
            }
            match enc.encode(t, event) {
                Some(e) if room(&words) >= e.len() => {
                    words.extend(e.words().iter().map(|w| w.0));
                    enc = e.next;
                }
                Some(_) => {
                    trace.events_dropped += 1;
                    lost += 1;
                }
                None => {
                    trace.events_dropped += 1;
                    trace.time_overflows += 1;
                    lost += 1;
                }
            }
        }
        if over > 0 {
            trace.references_over_limit += over;
            trace.clocks_over_limit += 1;
        }
        trace.high_water = trace.high_water.max((level + words.len()) as u64);
        // 3. Drain: only words of earlier clocks can leave.
        credit += num;
        let mut popped = false;
        if level > 0 && credit >= den {
            trace.popped.push((k, fifo.pop_front().unwrap()));
            credit -= den;
            popped = true;
        }
        if level - usize::from(popped) == 0 {
            credit = credit.min(den);
        }
        for w in words {
            trace.pushed.push((k, w));
            fifo.push_back(w);
        }
        trace.levels.push(fifo.len() as u32);
        trace.modes.push(cu.mode().header_flags());
    }
    trace.lost_pending = lost;
    trace
}
