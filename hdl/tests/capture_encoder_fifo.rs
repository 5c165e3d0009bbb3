//! Encoder (format.md 4.1 with the keeper, board.md 2.2 per clock: up to
//! `E` slots with their lanes, the limit's drops, a clock open only when
//! its room plus the previous clock's words, `depth - level_k +
//! pushed_{k-1}`, is at least `2(2 + 3E)`) and TX FIFO storage alone, plus
//! yosys on both. Here the previous clock is the one given before, whatever
//! the ticks between them.

use hmtt_format::record::{Opcode, RecordWord};
use hmtt_hdl::cu::event_kind;
use hmtt_hdl::encoder::{Encoder, GROUPS, KEEPER_GAP, LATENCY, PAYLOAD_MAX};
use hmtt_hdl::tx_fifo::TxFifoStorage;
use rust_hdl::prelude::*;

/// (lane, kind, write, value) of one slot.
type Slot = (u64, u64, bool, u64);

/// One clock for the encoder: its tick, its slots (at most `E`) and the
/// references the limit dropped after them.
struct Clock {
    tick: u64,
    slots: Vec<Slot>,
    over: u64,
}

/// What the encoder pushed in one clock and the fill level after it.
type Pushed = (Vec<u32>, u64);

/// Runs `clocks` through an `Encoder<E>` of `depth` words with no drain;
/// returns the words pushed in each clock (its groups in order) with the
/// fill level after it, and the dropped and LOST counters. Ticks may jump
/// between clocks (the keeper runs at the clocks given).
fn encode<const E: usize>(depth: u64, clocks: Vec<Clock>) -> (Vec<Pushed>, u64, u64) {
    let mut uut = Encoder::<E>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Encoder<E>>| x.clock.next = !x.clock.val());
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Encoder<E>>| {
        let mut x = sim.init()?;
        x.depth.next = depth.to_bits();
        x.drain_num.next = 0.into();
        x.drain_den.next = 1.into();
        // Then idle clocks until the pipeline has given the last clock's
        // words out; outputs are found by their tick.
        let mut by_tick = std::collections::BTreeMap::new();
        let mut fill_by_tick = std::collections::BTreeMap::new();
        let last_tick = clocks.last().map_or(0, |c| c.tick);
        let idle = (1..=LATENCY as u64 + 2).map(|k| (last_tick + 8 * k, &[][..], 0));
        let inputs = clocks.iter().map(|c| (c.tick, &c.slots[..], c.over));
        for (tick, slots, over) in inputs.chain(idle) {
            x.tick_in.next = tick.to_bits();
            x.tick_valid_in.next = true;
            x.over.next = over.to_bits();
            for s in 0..E {
                let (lane, kind, write, value) = slots.get(s).copied().unwrap_or((0, 0, false, 0));
                x.ev_valid[s].next = s < slots.len();
                x.ev_lane[s].next = lane.to_bits();
                x.ev_kind[s].next = kind.to_bits();
                x.ev_write[s].next = write;
                x.ev_value[s].next = value.to_bits();
            }
            wait_clock_cycle!(sim, clock, x);
            // The fill level comes a clock after the words.
            if x.fill_tick_valid.val() {
                fill_by_tick.insert(x.fill_tick.val().to_u64(), x.fill.val().to_u64());
            }
            if !x.tick_valid.val() {
                continue;
            }
            let mut words = vec![];
            for g in 0..GROUPS {
                let group = [
                    x.group_word0[g].val().to_u32(),
                    x.group_word1[g].val().to_u32(),
                    x.group_word2[g].val().to_u32(),
                ];
                words.extend_from_slice(&group[..x.group_count[g].val().to_u64() as usize]);
            }
            assert_eq!(x.pushed.val().to_u64(), words.len() as u64, "pushed");
            by_tick.insert(x.tick.val().to_u64(), words);
        }
        // The counters are a clock behind the words.
        wait_clock_cycle!(sim, clock, x);
        let out: Vec<_> = clocks
            .iter()
            .map(|c| (by_tick[&c.tick].clone(), fill_by_tick[&c.tick]))
            .collect();
        let dropped = x.events_dropped.val().to_u64();
        let lost = x.lost_words.val().to_u64();
        tx.send((out, dropped, lost)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

/// One event per clock at `L = 1` (lane 0, the clock's tick is the event's).
fn one_per_clock(events: &[(u64, u64, bool, u64)]) -> Vec<Clock> {
    events
        .iter()
        .map(|&(tick, kind, write, value)| Clock {
            tick,
            slots: vec![(0, kind, write, value)],
            over: 0,
        })
        .collect()
}

fn ctl(dt: u32, op: Opcode, payload: u32) -> u32 {
    RecordWord::control(dt, op, payload).unwrap().0
}

fn acc(dt: u32, write: bool, line: u64) -> u32 {
    RecordWord::access(dt, write, line & 0xFF_FFFF).unwrap().0
}

#[test]
fn encoder_time_line_hi_and_closed_clocks() {
    use event_kind::*;
    // Depth 12: a clock is open when `12 - level_k + pushed_{k-1}` is
    // 2(2 + 3E) = 10 or more.
    let (out, dropped, lost) = encode::<1>(
        12,
        one_per_clock(&[
            (0, ACCESS, true, 0x100_0005),
            (100, ACCESS, false, 0x100_0006),
            (101, TAG, true, 0x45),
            // Level 5 after a clock of one word: room 8, the clock is
            // closed, its event dropped (lost 1) although its two words
            // would fit.
            (102, ACCESS, false, 0x200_0007),
            // Still closed: no LOST, the event dropped.
            (103, CMD, false, 5),
        ]),
    );
    assert_eq!(
        out[0],
        (vec![ctl(0, Opcode::LineHi, 1), acc(0, true, 5)], 2)
    );
    assert_eq!(
        out[1],
        (vec![ctl(0, Opcode::Time, 1), acc(36, false, 6)], 4)
    );
    assert_eq!(out[2], (vec![ctl(1, Opcode::Tag, (1 << 20) | 0x45)], 5));
    assert_eq!(out[3], (vec![], 5));
    assert_eq!(out[4], (vec![], 5));
    assert_eq!((dropped, lost), (2, 0));
}

#[test]
fn encoder_keeper_fills_long_gaps() {
    use event_kind::*;
    // The keeper pushes a filler TIME word at a gap of 64 * (2^21-1) ticks,
    // before the event's own TIME word; then the FIFO (depth 11, no drain)
    // holds 5 words after a clock of one, room 11 - 5 + 1 < 10, and later
    // events are dropped.
    let (out, dropped, _) = encode::<1>(
        11,
        one_per_clock(&[
            (0, CMD, false, 4),
            (KEEPER_GAP + 70, TAG, false, 0x10001),
            (KEEPER_GAP + 71, ACCESS, false, 0x5),
            (KEEPER_GAP + 72, ACCESS, false, 0x6),
        ]),
    );
    assert_eq!(out[0], (vec![ctl(0, Opcode::Cmd, 4)], 1));
    assert_eq!(
        out[1],
        (
            vec![
                ctl(0, Opcode::Time, PAYLOAD_MAX as u32),
                ctl(0, Opcode::Time, 1),
                ctl(6, Opcode::Tag, 0x10001)
            ],
            4
        )
    );
    assert_eq!(out[2], (vec![acc(1, false, 5)], 5));
    assert_eq!(out[3], (vec![], 5));
    assert_eq!(dropped, 1);
}

#[test]
fn encoder_takes_three_slots_a_clock_with_their_lanes_and_the_limits_drops() {
    use event_kind::*;
    // L = 8: clock k has tick 8k; each slot's event is at tick 8k + lane.
    // Depth 27: a clock is open when `27 - level_k + pushed_{k-1}` is
    // 2(2 + 3E) = 22 or more.
    let (out, dropped, lost) = encode::<3>(
        27,
        vec![
            // Two slots share LINE_HI 1, the third needs LINE_HI 2; two
            // references over the limit after them.
            Clock {
                tick: 0,
                slots: vec![
                    (1, ACCESS, false, 0x100_0001),
                    (4, ACCESS, true, 0x100_0002),
                    (7, ACCESS, false, 0x200_0003),
                ],
                over: 2,
            },
            // The lost count goes out first (LOST at the event's tick 78),
            // with the TIME word for the gap of 78 - 7 = 64 + 7 ticks.
            Clock {
                tick: 72,
                slots: vec![(6, TAG, true, 0x45)],
                over: 0,
            },
            // Level 8 after 3 words: open. The CMD (1 word), LINE_HI back to 1 and the
            // word, then an ACCESS of the same LINE_HI (1 word).
            Clock {
                tick: 80,
                slots: vec![
                    (0, CMD, false, 5),
                    (2, ACCESS, true, 0x100_0009),
                    (3, ACCESS, false, 0x100_000A),
                ],
                over: 0,
            },
            // Level 12 after 4 words: room 19, closed, the event dropped
            // (lost 1).
            Clock {
                tick: 88,
                slots: vec![(1, ACCESS, false, 0x100_000B)],
                over: 0,
            },
        ],
    );
    assert_eq!(
        out[0],
        (
            vec![
                ctl(1, Opcode::LineHi, 1),
                acc(0, false, 1),
                acc(3, true, 2),
                ctl(3, Opcode::LineHi, 2),
                acc(0, false, 3),
            ],
            5
        )
    );
    assert_eq!(
        out[1],
        (
            vec![
                ctl(0, Opcode::Time, 1),
                ctl(7, Opcode::Lost, 2),
                ctl(0, Opcode::Tag, (1 << 20) | 0x45),
            ],
            8
        )
    );
    assert_eq!(
        out[2],
        (
            vec![
                ctl(2, Opcode::Cmd, 5),
                ctl(2, Opcode::LineHi, 1),
                acc(0, true, 9),
                acc(1, false, 0xA),
            ],
            12
        )
    );
    assert_eq!(out[3], (vec![], 12));
    assert_eq!((dropped, lost), (1, 1));
}

/// Writes `groups[k]` (words per group) at clock k at consecutive stream
/// positions, pops one word per clock from the clock after its push on,
/// returns the words read.
fn storage_roundtrip(groups: Vec<[Vec<u32>; GROUPS]>) -> Vec<u32> {
    let mut uut = TxFifoStorage::<4, 16, 2>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<TxFifoStorage<4, 16, 2>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<TxFifoStorage<4, 16, 2>>| {
        let mut x = sim.init()?;
        let mut pos = 0u64;
        let mut read_ptr = 0u64;
        let total: usize = groups.iter().flatten().map(|g| g.len()).sum();
        let mut out = vec![];
        let mut k = 0;
        while out.len() < total && k < 200 {
            // Only words of earlier clocks can be popped (board.md step 3).
            let poppable = pos;
            x.base.next = pos.to_bits();
            for g in 0..GROUPS {
                let words = groups.get(k).map_or(vec![], |c| c[g].clone());
                x.count[g].next = (words.len() as u64).to_bits();
                let w = |i: usize| (*words.get(i).unwrap_or(&0) as u64).to_bits();
                x.word0[g].next = w(0);
                x.word1[g].next = w(1);
                x.word2[g].next = w(2);
                pos += words.len() as u64;
            }
            // The FIFO never holds more than its 64 words here.
            x.pop.next = read_ptr < poppable;
            x.pop_ptr.next = read_ptr.to_bits();
            if read_ptr < poppable {
                read_ptr += 1;
            }
            wait_clock_cycle!(sim, clock, x);
            if x.read_valid.val() {
                out.push(x.read_word.val().to_u32());
            }
            k += 1;
        }
        tx.send(out).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 10_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn storage_takes_fourteen_words_per_clock_and_reads_them_in_order() {
    let mut next = 0x1000u32;
    let mut word = || {
        next += 1;
        next
    };
    // A full clock (2 + 3E words at E = 4), an uneven one, an empty one,
    // then full clocks wrapping the 64-word storage while it drains.
    let full = |word: &mut dyn FnMut() -> u32| -> [Vec<u32>; GROUPS] {
        std::array::from_fn(|g| {
            let n = if g == 0 { 2 } else { 3 };
            (0..n).map(|_| word()).collect()
        })
    };
    let first = full(&mut word);
    let second = [
        vec![word()],
        vec![],
        (0..3).map(|_| word()).collect(),
        vec![word(), word()],
        vec![],
    ];
    let mut clocks = vec![first, second, Default::default()];
    clocks.extend((0..20).map(|_| Default::default()));
    clocks.push(full(&mut word));
    clocks.extend((0..20).map(|_| Default::default()));
    clocks.push(full(&mut word));
    clocks.extend((0..20).map(|_| Default::default()));
    clocks.push(full(&mut word));
    clocks.extend((0..20).map(|_| Default::default()));
    clocks.push(full(&mut word));
    let expected: Vec<u32> = clocks.iter().flatten().flatten().copied().collect();
    assert_eq!(storage_roundtrip(clocks), expected);
}

#[test]
fn encoder_and_storage_verilog_pass_yosys() {
    let mut uut = Encoder::<3>::default();
    uut.connect_all();
    yosys_validate("hmtt_encoder_e3", &generate_verilog(&uut)).unwrap();
    let mut uut = TxFifoStorage::<2, 8, 11>::default();
    uut.connect_all();
    yosys_validate("hmtt_tx_fifo_16k", &generate_verilog(&uut)).unwrap();
}
