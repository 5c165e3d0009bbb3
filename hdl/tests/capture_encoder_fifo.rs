//! Encoder (format.md 4.1 with the keeper) and TX FIFO storage alone, plus
//! yosys on both.

use hmtt_format::record::{Opcode, RecordWord};
use hmtt_hdl::cu::event_kind;
use hmtt_hdl::encoder::{Encoder, KEEPER_GAP, LATENCY, PAYLOAD_MAX};
use hmtt_hdl::tx_fifo::TxFifoStorage;
use rust_hdl::prelude::*;

/// (tick, kind, write, value); one event per clock.
type Ev = (u64, u64, bool, u64);

/// Runs events through an `Encoder<1>` of `depth` words with no drain;
/// returns the words per event and the fill level after each, and the
/// dropped and LOST counters.
fn encode(depth: u64, events: Vec<Ev>) -> (Vec<(Vec<u32>, u64)>, u64, u64) {
    let mut uut = Encoder::<1>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Encoder<1>>| x.clock.next = !x.clock.val());
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Encoder<1>>| {
        let mut x = sim.init()?;
        x.depth.next = depth.to_bits();
        x.drain_num.next = 0.into();
        x.drain_den.next = 1.into();
        // One event per clock, then idle ticks until the pipeline has
        // given the last event's words out; outputs are found by their tick.
        let mut by_tick = std::collections::BTreeMap::new();
        let last_tick = events.last().map_or(0, |e| e.0);
        let idle = (1..=LATENCY as u64 + 2).map(|k| (last_tick + k, None));
        let inputs = events.iter().map(|&(t, k, w, v)| (t, Some((k, w, v))));
        for (tick, ev) in inputs.chain(idle) {
            x.tick_in.next = tick.to_bits();
            x.tick_valid_in.next = true;
            let (kind, write, value) = ev.unwrap_or((0, false, 0));
            x.ev_valid[0].next = ev.is_some();
            x.ev_kind[0].next = kind.to_bits();
            x.ev_write[0].next = write;
            x.ev_value[0].next = value.to_bits();
            wait_clock_cycle!(sim, clock, x);
            if !x.tick_valid.val() {
                continue;
            }
            let words = [
                x.word0[0].val().to_u32(),
                x.word1[0].val().to_u32(),
                x.word2[0].val().to_u32(),
                x.word3[0].val().to_u32(),
                x.word4[0].val().to_u32(),
            ];
            let n = x.lane_count[0].val().to_u64() as usize;
            by_tick.insert(
                x.tick.val().to_u64(),
                (words[..n].to_vec(), x.fill[0].val().to_u64()),
            );
        }
        let out: Vec<_> = events.iter().map(|e| by_tick[&e.0].clone()).collect();
        let dropped = x.events_dropped.val().to_u64();
        let lost = x.lost_words.val().to_u64();
        tx.send((out, dropped, lost)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

fn ctl(dt: u32, op: Opcode, payload: u32) -> u32 {
    RecordWord::control(dt, op, payload).unwrap().0
}

fn acc(dt: u32, write: bool, line: u64) -> u32 {
    RecordWord::access(dt, write, line & 0xFF_FFFF).unwrap().0
}

#[test]
fn encoder_time_line_hi_and_atomic_push() {
    use event_kind::*;
    let (out, dropped, lost) = encode(
        5,
        vec![
            (0, ACCESS, true, 0x100_0005),
            (100, ACCESS, false, 0x100_0006),
            (101, TAG, true, 0x45),
            // The FIFO is full: dropped (lost 1).
            (102, ACCESS, false, 0x200_0007),
            // Still full: the pending LOST and the event both fail.
            (103, CMD, false, 5),
        ],
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
    // before the event's own TIME word; then the FIFO (depth 4, no drain)
    // is full and later events are dropped.
    let (out, dropped, _) = encode(
        4,
        vec![
            (0, CMD, false, 4),
            (KEEPER_GAP + 70, TAG, false, 0x10001),
            (KEEPER_GAP + 71, ACCESS, false, 0x5),
            (KEEPER_GAP + 72, ACCESS, false, 0x6),
        ],
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
    assert_eq!(out[2], (vec![], 4));
    assert_eq!(dropped, 2);
}

/// Writes `lanes[k]` (words per lane) at clock k at consecutive positions,
/// pops everything one word per clock afterwards, returns the read words.
fn storage_roundtrip(lanes: Vec<[Vec<u32>; 4]>) -> Vec<u32> {
    let mut uut = TxFifoStorage::<4, 32, 1>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<TxFifoStorage<4, 32, 1>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<TxFifoStorage<4, 32, 1>>| {
        let mut x = sim.init()?;
        let mut pos = 0u64;
        let mut read_ptr = 0u64;
        let total: usize = lanes.iter().flatten().map(|l| l.len()).sum();
        let mut out = vec![];
        let mut k = 0;
        while out.len() < total && k < 200 {
            for j in 0..4 {
                let words = lanes.get(k).map_or(vec![], |c| c[j].clone());
                x.lane_count[j].next = (words.len() as u64).to_bits();
                x.lane_pos[j].next = pos.to_bits();
                let w = |i: usize| (*words.get(i).unwrap_or(&0) as u64).to_bits();
                x.word0[j].next = w(0);
                x.word1[j].next = w(1);
                x.word2[j].next = w(2);
                x.word3[j].next = w(3);
                x.word4[j].next = w(4);
                pos += words.len() as u64;
            }
            // Pop the oldest word every clock once something was written
            // (the FIFO never holds more than its 64 words here).
            x.pop.next = read_ptr < pos;
            x.pop_ptr.next = read_ptr.to_bits();
            if read_ptr < pos {
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
fn storage_takes_twenty_words_per_clock_and_reads_them_in_order() {
    let mut next = 0x1000u32;
    let mut word = || {
        next += 1;
        next
    };
    // A full burst (5 words on every lane), an uneven one, a word popped
    // in the very clock it is written.
    let first: [Vec<u32>; 4] = std::array::from_fn(|_| (0..5).map(|_| word()).collect());
    let second = [
        vec![word()],
        vec![],
        (0..3).map(|_| word()).collect(),
        vec![word(), word()],
    ];
    let clocks = vec![first, second, [vec![], vec![], vec![], vec![]]];
    let expected: Vec<u32> = clocks.iter().flatten().flatten().copied().collect();
    assert_eq!(storage_roundtrip(clocks), expected);
}

#[test]
fn encoder_and_storage_verilog_pass_yosys() {
    let mut uut = Encoder::<4>::default();
    uut.connect_all();
    yosys_validate("hmtt_encoder_l4", &generate_verilog(&uut)).unwrap();
    let mut uut = TxFifoStorage::<1, 8, 11>::default();
    uut.connect_all();
    yosys_validate("hmtt_tx_fifo_16k", &generate_verilog(&uut)).unwrap();
}
