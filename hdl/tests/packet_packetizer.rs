//! The packetizer alone, against the golden model's packetizer
//! (`hmtt_sim::board::Packetizer`) fed the same popped words: packets are
//! rebuilt from what the HDL writes into the port buffers (words per port,
//! descriptors in close order) and must equal the model's byte for byte,
//! for L = 1, 2 and 4, one and three ports, with closes by max_words, SYNC
//! and idle flush, and LINE_HI injection.

mod eth_support;

use eth_support::Lcg;
use hmtt_format::record::Opcode;
use hmtt_format::{BoardEvent, EventEncoder, Geometry, PacketHeader, RecordWord};
use hmtt_hdl::packetizer::{Descriptor, Packetizer, PacketizerConfig};
use hmtt_sim::board::{BoardPacket, CloseReason, Packetizer as GoldenPacketizer};
use rust_hdl::prelude::*;

const BOARD_ID: u8 = 5;
const TICK_PS: u16 = 1250;

/// One popped word: tick, word, mode flags at that tick.
#[derive(Clone, Copy, Debug)]
struct Pop {
    tick: u64,
    word: RecordWord,
    flags: u8,
}

/// A random stream of popped words as the encoder would produce them:
/// accesses crossing LINE_HI boundaries, tags, SYNC commands, long gaps.
fn random_pops(rng: &mut Lcg, n: usize, lanes: u64) -> Vec<Pop> {
    let mut enc = EventEncoder::default();
    let mut tick = 0u64;
    let mut flags = 1u8;
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
        if rng.below(50) == 0 {
            flags = rng.below(4) as u8;
        }
        let e = enc.encode(tick, event).unwrap();
        enc = e.next;
        words.extend(e.words().iter().map(|&w| (w, flags)));
    }
    // The drain pops later than the pushes and at most once per cycle;
    // here words are popped at random later ticks, one per fabric cycle.
    let mut pops = vec![];
    let mut t = 0u64;
    for (word, flags) in words {
        t += lanes
            * (1 + match rng.below(8) {
                0 => rng.below(300),
                _ => rng.below(3),
            });
        pops.push(Pop {
            tick: t + rng.below(lanes),
            word,
            flags,
        });
    }
    pops
}

/// The golden packetizer with board.md's idle flush, tick by tick.
fn golden(pops: &[Pop], cfg: &PacketizerConfig, flags_at: impl Fn(u64) -> u8) -> Vec<BoardPacket> {
    let mut p = GoldenPacketizer::new(
        Geometry::ddr3_default(),
        BOARD_ID,
        TICK_PS,
        cfg.ports,
        cfg.max_words as usize,
        cfg.idle_flush_ticks,
    );
    for pop in pops {
        if let Some(deadline) = p.flush_deadline() {
            if deadline < pop.tick {
                p.close(deadline, flags_at(deadline), CloseReason::IdleFlush);
            }
        }
        p.pop(pop.tick, pop.word, pop.flags);
    }
    if let Some(deadline) = p.flush_deadline() {
        p.close(deadline, flags_at(deadline), CloseReason::IdleFlush);
    }
    let mut out = vec![];
    p.drain_packets(&mut out);
    out
}

/// What the HDL wrote into the port buffers.
#[derive(Default)]
struct PortWrites {
    words: Vec<Vec<u32>>,
    descs: Vec<(u8, Descriptor)>,
}

fn run_hdl<const L: usize>(
    pops: &[Pop],
    cfg: PacketizerConfig,
    flags_at: impl Fn(u64) -> u8,
) -> (PortWrites, bool) {
    let mut uut = Packetizer::<L>::new(cfg);
    uut.connect_all();
    let mut out = PortWrites {
        words: vec![vec![]; cfg.ports as usize],
        ..Default::default()
    };
    let last = pops.last().map(|p| p.tick).unwrap_or(0) + cfg.idle_flush_ticks + 2 * L as u64;
    let mut next = 0;
    let mut cycle_tick = 0u64;
    while cycle_tick <= last {
        uut.out_tick.next = cycle_tick.to_bits();
        uut.out_tick_valid.next = true;
        for j in 0..L {
            let f = flags_at(cycle_tick + j as u64);
            uut.out_tracing[j].next = f & 1 != 0;
            uut.out_tags_only[j].next = f & 2 != 0;
        }
        let pop = pops.get(next).filter(|p| p.tick < cycle_tick + L as u64);
        uut.pop_valid.next = pop.is_some();
        if let Some(p) = pop {
            assert!(
                p.tick >= cycle_tick,
                "test stream has two pops in one cycle"
            );
            uut.pop_word.next = (p.word.0 as u64).to_bits();
            uut.pop_tick.next = p.tick.to_bits();
            uut.pop_tracing.next = p.flags & 1 != 0;
            uut.pop_tags_only.next = p.flags & 2 != 0;
            next += 1;
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
                .push((port as u8, Descriptor::unpack(uut.desc_data.val())));
        }
        uut.clock.next = Clock { clk: true };
        assert!(simulate(&mut uut, 100));
        uut.clock.next = Clock { clk: false };
        assert!(simulate(&mut uut, 100));
        cycle_tick += L as u64;
    }
    let overrun = uut.desc_overrun.val();
    (out, overrun)
}

/// Rebuilds the packets from the port buffer writes, as the framers do.
fn rebuild(w: &PortWrites, ports: u8) -> Vec<BoardPacket> {
    let mut cursor = vec![0usize; ports as usize];
    w.descs
        .iter()
        .enumerate()
        .map(|(seq, &(port, d))| {
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
                leave_tick: 0,
                bytes,
            }
        })
        .collect()
}

fn check<const L: usize>(seed: u64, ports: u8, max_words: u16, idle: u64) {
    let mut rng = Lcg(seed);
    let pops = random_pops(&mut rng, 1500, L as u64);
    let cfg = PacketizerConfig {
        max_words,
        idle_flush_ticks: idle,
        ports,
    };
    // Mode after each tick, for idle-flush headers: changes every 1000 ticks.
    let flags_at = |t: u64| ((t / 1000) % 4) as u8;
    let expected = golden(&pops, &cfg, flags_at);
    let (writes, overrun) = run_hdl::<L>(&pops, cfg, flags_at);
    assert!(!overrun);
    let got = rebuild(&writes, ports);
    assert!(
        expected.len() > 20,
        "too few packets to be a test: {}",
        expected.len()
    );
    assert_eq!(got.len(), expected.len(), "packet count");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((g.port, g.seq), (e.port, e.seq));
        assert_eq!(g.bytes, e.bytes, "packet seq {}", e.seq);
    }
    // Every close reason must have happened for the test to mean anything.
    let (mut full, mut sync, mut idle_closed) = (0, 0, 0);
    for e in &expected {
        let words = (e.bytes.len() - 32) / 4;
        let last = &e.bytes[e.bytes.len() - 4..];
        let last = RecordWord(u32::from_le_bytes([last[0], last[1], last[2], last[3]]));
        if words == max_words as usize {
            full += 1;
        } else if last.is_control() && last.opcode() == Opcode::Cmd && last.payload() == 5 {
            sync += 1;
        } else {
            idle_closed += 1;
        }
    }
    assert!(
        full > 0 && sync > 0 && idle_closed > 0,
        "{full} full, {sync} sync, {idle_closed} idle"
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
fn packetizer_is_synthesizable() {
    let mut uut = Packetizer::<4>::new(PacketizerConfig::default());
    uut.connect_all();
    yosys_validate("hmtt_packetizer", &generate_verilog(&uut)).unwrap();
}

/// An idle flush and a pop that closes at once (SYNC) in the same fabric
/// cycle, with one port: the second descriptor waits a cycle in `hold`.
#[test]
fn idle_flush_and_sync_close_in_one_cycle() {
    let access = |dt| RecordWord::access(dt, false, 7).unwrap();
    let sync = RecordWord::control(1, Opcode::Cmd, 5).unwrap();
    let pops = [
        Pop {
            tick: 0,
            word: access(3),
            flags: 1,
        },
        // Deadline 0 + 8 = tick 8; this cycle carries ticks 8..12.
        Pop {
            tick: 10,
            word: sync,
            flags: 3,
        },
        Pop {
            tick: 13,
            word: access(2),
            flags: 1,
        },
    ];
    let cfg = PacketizerConfig {
        max_words: 4,
        idle_flush_ticks: 8,
        ports: 1,
    };
    let flags_at = |t: u64| if t < 9 { 1 } else { 2 };
    let expected = golden(&pops, &cfg, flags_at);
    assert_eq!(expected.len(), 3);
    assert_eq!(expected[0].leave_tick, 8);
    assert_eq!(expected[1].leave_tick, 10);
    let (writes, overrun) = run_hdl::<4>(&pops, cfg, flags_at);
    assert!(!overrun);
    let got = rebuild(&writes, 1);
    assert_eq!(got.len(), 3);
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g.bytes, e.bytes, "packet seq {}", e.seq);
    }
}
