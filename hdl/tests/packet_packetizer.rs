//! The packetizer alone, against the golden model's packetizer
//! (`hmtt_board_model::Packetizer`, board.md 2.2 steps 3 and 4, in clocks)
//! fed the same popped words in the same clocks: packets are rebuilt from
//! what the HDL writes into the port buffers (words per port, descriptors
//! in close order) and must equal the model's byte for byte, each leaving
//! in the same clock, for L = 1, 2, 4 and 8, one to four ports, with closes
//! by max_words, SYNC and idle flush, and LINE_HI injection.

mod eth_support;

use eth_support::Lcg;
use hmtt_board_model::{BoardPacket, CloseReason, Packetizer as GoldenPacketizer};
use hmtt_format::record::Opcode;
use hmtt_format::{BoardEvent, EventEncoder, Geometry, PacketHeader, RecordWord};
use hmtt_hdl::packetizer::{Descriptor, Packetizer, PacketizerConfig};
use rust_hdl::prelude::*;

const BOARD_ID: u8 = 5;
const TICK_PS: u16 = 1250;

/// One word popped in fabric clock `clock`.
#[derive(Clone, Copy, Debug)]
struct Pop {
    clock: u64,
    word: RecordWord,
}

/// A random stream of popped words as the encoder would produce them
/// (accesses crossing LINE_HI boundaries, tags, SYNC commands, long gaps),
/// popped at most one per clock with random idle clocks between them.
fn random_pops(rng: &mut Lcg, n: usize) -> Vec<Pop> {
    let mut enc = EventEncoder::default();
    let mut tick = 0u64;
    let mut words = vec![];
    while words.len() < n {
        tick += match rng.below(10) {
            0 => 1000 + rng.below(5000),
            1..=3 => rng.below(100),
            _ => rng.below(8),
        };
        let event = match rng.below(20) {
            0 => BoardEvent::Cmd { code: 5 },
            1 => BoardEvent::Cmd {
                code: rng.below(6) as u32,
            },
            2 => BoardEvent::Tag {
                event: 0x40 + rng.below(100) as u32,
                write: false,
            },
            _ => BoardEvent::Access {
                line: (rng.below(4) << 24) | rng.below(1 << 24),
                write: rng.below(2) == 0,
            },
        };
        let e = enc.encode(tick, event).unwrap();
        enc = e.next;
        words.extend(e.words().iter().copied());
    }
    let mut clock = 0u64;
    words
        .into_iter()
        .map(|word| {
            clock += 1 + match rng.below(8) {
                0 => rng.below(300),
                _ => rng.below(3),
            };
            Pop { clock, word }
        })
        .collect()
}

/// The board mode (header flags) after each clock's events: random, held
/// for a few clocks to a few hundred.
fn random_modes(rng: &mut Lcg, clocks: u64) -> Vec<u8> {
    let mut modes = Vec::with_capacity(clocks as usize);
    let mut mode = 1u8;
    while (modes.len() as u64) < clocks {
        let hold = 1 + match rng.below(4) {
            0 => rng.below(4),
            _ => rng.below(300),
        };
        modes.extend(std::iter::repeat_n(mode, hold as usize));
        mode = rng.below(4) as u8;
    }
    modes
}

/// The clocks the HDL runs: past the last pop's idle flush.
fn clocks_to_run(pops: &[Pop], cfg: &PacketizerConfig, lanes: u64) -> u64 {
    pops.last().map_or(0, |p| p.clock) + cfg.idle_flush_ticks.div_ceil(lanes) + 3
}

/// The golden packetizer driven as board.md's steps 3 and 4: an open
/// packet whose idle flush falls in a clock before the next pop closes
/// there; a pop in the deadline clock itself joins the packet.
fn golden(pops: &[Pop], cfg: &PacketizerConfig, lanes: u32, modes: &[u8]) -> Vec<BoardPacket> {
    let mut p = GoldenPacketizer::new(
        Geometry::ddr3_default(),
        BOARD_ID,
        TICK_PS,
        cfg.ports,
        cfg.max_words as usize,
        cfg.idle_flush_ticks,
        lanes,
    );
    for pop in pops {
        if let Some(deadline) = p.flush_deadline() {
            if deadline < pop.clock {
                p.close(deadline, modes[deadline as usize], CloseReason::IdleFlush);
            }
        }
        p.pop(pop.clock, pop.word, modes[pop.clock as usize]);
    }
    if let Some(deadline) = p.flush_deadline() {
        p.close(deadline, modes[deadline as usize], CloseReason::IdleFlush);
    }
    let mut out = vec![];
    p.drain_packets(&mut out);
    out
}

/// What the HDL wrote into the port buffers.
#[derive(Default)]
struct PortWrites {
    words: Vec<Vec<u32>>,
    /// Port, descriptor and the clock of the write, in write order.
    descs: Vec<(u8, Descriptor, u64)>,
}

/// Clocks the HDL packetizer: clock `k` carries tick `k L`, the mode after
/// the clock's events and the word popped in it, if any.
fn run_hdl<const L: usize>(pops: &[Pop], cfg: PacketizerConfig, modes: &[u8]) -> PortWrites {
    let mut uut = Packetizer::<L>::new(cfg);
    uut.connect_all();
    let mut out = PortWrites {
        words: vec![vec![]; cfg.ports as usize],
        ..Default::default()
    };
    let mut pops = pops.iter().peekable();
    let mut late = vec![];
    for clock in 0..modes.len() as u64 {
        uut.tick.next = (clock * L as u64).to_bits();
        uut.tick_valid.next = true;
        let mode = modes[clock as usize];
        uut.tracing.next = mode & 1 != 0;
        uut.tags_only.next = mode & 2 != 0;
        let pop = pops.next_if(|p| p.clock == clock);
        uut.pop_valid.next = pop.is_some();
        if let Some(p) = pop {
            uut.pop_word.next = (p.word.0 as u64).to_bits();
        }
        assert!(simulate(&mut uut, 100));
        if uut.word_write.val() {
            let port: u64 = uut.word_port.val().into();
            let w: u64 = uut.word_data.val().into();
            out.words[port as usize].push(w as u32);
        }
        if uut.desc_write.val() {
            let port: u64 = uut.desc_port.val().into();
            out.descs
                .push((port as u8, Descriptor::unpack(uut.desc_data.val()), clock));
        }
        // The port buffers' copy of the clock before's descriptor.
        if uut.desc_write_late.val() {
            late.push(late_desc(&uut, clock - 1));
        }
        uut.clock.next = Clock { clk: true };
        assert!(simulate(&mut uut, 100));
        uut.clock.next = Clock { clk: false };
        assert!(simulate(&mut uut, 100));
    }
    assert!(pops.next().is_none(), "every pop was fed");
    if uut.desc_write_late.val() {
        late.push(late_desc(&uut, modes.len() as u64 - 1));
    }
    assert_eq!(late, out.descs, "the late descriptors are the close's");
    out
}

/// The descriptor the port buffers take in this clock, closed in `clock`.
fn late_desc<const L: usize>(uut: &Packetizer<L>, clock: u64) -> (u8, Descriptor, u64) {
    let port: u64 = uut.desc_port_late.val().into();
    (
        port as u8,
        Descriptor::unpack(uut.desc_data_late.val()),
        clock,
    )
}

/// Rebuilds the packets from the port buffer writes, as the framers do.
fn rebuild(w: &PortWrites, ports: u8, lanes: u64) -> Vec<BoardPacket> {
    let mut cursor = vec![0usize; ports as usize];
    w.descs
        .iter()
        .enumerate()
        .map(|(seq, &(port, d, clock))| {
            assert_eq!(port as u64, seq as u64 % ports as u64, "round-robin");
            let mut words = vec![];
            if d.line_hi != 0 {
                words.push(RecordWord::control(0, Opcode::LineHi, d.line_hi).unwrap());
            }
            let n = d.nwords as usize - words.len();
            let c = &mut cursor[port as usize];
            words.extend(
                w.words[port as usize][*c..*c + n]
                    .iter()
                    .map(|&x| RecordWord(x)),
            );
            *c += n;
            let bytes = PacketHeader {
                flags: d.flags,
                board: BOARD_ID,
                port,
                seq: seq as u64,
                t0: d.t0,
                nwords: d.nwords,
                geometry: Geometry::ddr3_default(),
                tick_ps: TICK_PS,
            }
            .build(&words);
            BoardPacket {
                port,
                seq: seq as u64,
                leave_tick: clock * lanes,
                bytes,
            }
        })
        .collect()
}

/// Every word written to a port buffer belongs to a closed packet.
fn assert_no_stray_words(w: &PortWrites) {
    let mut per_port = vec![0usize; w.words.len()];
    for &(port, d, _) in &w.descs {
        per_port[port as usize] += d.nwords as usize - usize::from(d.line_hi != 0);
    }
    let written: Vec<usize> = w.words.iter().map(Vec::len).collect();
    assert_eq!(written, per_port, "words written per port vs in packets");
}

fn compare(got: &[BoardPacket], expected: &[BoardPacket]) {
    assert_eq!(got.len(), expected.len(), "packet count");
    for (g, e) in got.iter().zip(expected) {
        assert_eq!((g.port, g.seq), (e.port, e.seq));
        assert_eq!(g.leave_tick, e.leave_tick, "leave tick of seq {}", e.seq);
        assert_eq!(g.bytes, e.bytes, "packet seq {}", e.seq);
    }
}

fn check<const L: usize>(seed: u64, ports: u8, max_words: u16, idle: u64) {
    let mut rng = Lcg(seed);
    let pops = random_pops(&mut rng, 1500);
    let cfg = PacketizerConfig {
        max_words,
        idle_flush_ticks: idle,
        ports,
    };
    let modes = random_modes(&mut rng, clocks_to_run(&pops, &cfg, L as u64));
    let expected = golden(&pops, &cfg, L as u32, &modes);
    let writes = run_hdl::<L>(&pops, cfg, &modes);
    assert_no_stray_words(&writes);
    let got = rebuild(&writes, ports, L as u64);
    assert!(
        expected.len() > 20,
        "too few packets to be a test: {}",
        expected.len()
    );
    compare(&got, &expected);
    // Every close reason and LINE_HI injection must have happened for the
    // test to mean anything.
    let (mut full, mut sync, mut idle_closed, mut injected) = (0, 0, 0, 0);
    for e in &expected {
        let words = (e.bytes.len() - 32) / 4;
        let word = |i: usize| {
            let b = &e.bytes[32 + 4 * i..36 + 4 * i];
            RecordWord(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (first, last) = (word(0), word(words - 1));
        if first.is_control() && first.opcode() == Opcode::LineHi && first.dt() == 0 {
            injected += 1;
        }
        if words == max_words as usize {
            full += 1;
        } else if last.is_control() && last.opcode() == Opcode::Cmd && last.payload() == 5 {
            sync += 1;
        } else {
            idle_closed += 1;
        }
    }
    assert!(
        full > 0 && sync > 0 && idle_closed > 0 && injected > 0,
        "{full} full, {sync} sync, {idle_closed} idle, {injected} with an injected LINE_HI"
    );
}

#[test]
fn l1_three_ports_matches_the_golden_packetizer() {
    check::<1>(11, 3, 7, 200);
}

#[test]
fn l2_one_port_matches_the_golden_packetizer() {
    check::<2>(12, 1, 5, 150);
}

#[test]
fn l4_three_ports_matches_the_golden_packetizer() {
    check::<4>(13, 3, 9, 120);
}

#[test]
fn l4_four_ports_short_idle_flush() {
    check::<4>(14, 4, 24, 64);
}

#[test]
fn l8_three_ports_idle_flush_not_a_multiple_of_the_lanes() {
    check::<8>(15, 3, 12, 101);
}

#[test]
fn l8_two_ports_two_word_packets() {
    check::<8>(16, 2, 2, 40);
}

#[test]
fn packetizer_is_synthesizable() {
    let mut uut = Packetizer::<8>::new(PacketizerConfig::default());
    uut.connect_all();
    yosys_validate("hmtt_packetizer", &generate_verilog(&uut)).unwrap();
}

/// The idle flush around a pop, one port, L = 4, idle flush 8 ticks (2
/// clocks): a pop in the deadline clock joins the open packet (here a SYNC
/// that then closes it), and a deadline one clock before a pop closes the
/// packet there, the pop opening the next one.
#[test]
fn pop_in_the_deadline_clock_joins_the_open_packet() {
    let access = |dt| RecordWord::access(dt, false, 7).unwrap();
    let sync = RecordWord::control(1, Opcode::Cmd, 5).unwrap();
    let pops = [
        Pop {
            clock: 0,
            word: access(3),
        },
        // The deadline of the pop in clock 0.
        Pop {
            clock: 2,
            word: sync,
        },
        Pop {
            clock: 5,
            word: access(2),
        },
        // One clock after the deadline (7) of the pop in clock 5.
        Pop {
            clock: 8,
            word: access(1),
        },
    ];
    let cfg = PacketizerConfig {
        max_words: 4,
        idle_flush_ticks: 8,
        ports: 1,
    };
    let modes: Vec<u8> = (0..clocks_to_run(&pops, &cfg, 4))
        .map(|k| if k < 2 { 1 } else { 2 + (k % 2) as u8 })
        .collect();
    let expected = golden(&pops, &cfg, 4, &modes);
    let leave: Vec<u64> = expected.iter().map(|p| p.leave_tick).collect();
    assert_eq!(leave, [8, 28, 40], "SYNC in clock 2, flushes in 7 and 10");
    let writes = run_hdl::<4>(&pops, cfg, &modes);
    assert_no_stray_words(&writes);
    compare(&rebuild(&writes, 1, 4), &expected);
}
