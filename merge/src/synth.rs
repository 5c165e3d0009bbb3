//! Synthetic captures for tests and benchmarks: board events encoded by the
//! format crate's encoder (format.md §4.1), cut into packets by the
//! packetizer rules of §5.2 (no FIFO, so nothing is ever dropped here) and
//! written as capture files (§7). This is not the board's golden model (that
//! is `hmtt-sim`); it only produces valid input with a known content.

use std::io::Write;

use hmtt_format::capture::{emit_record_header, CaptureHeader, SourceKind};
use hmtt_format::packet::{PacketHeader, FLAG_TRACING};
use hmtt_format::record::{BoardEvent, EventEncoder, Opcode, RecordWord, TimedEvent, TIME_UNIT};
use hmtt_format::Geometry;

/// Cuts a stream of events into packets.
pub struct Packetizer {
    pub board: u8,
    pub geometry: Geometry,
    pub tick_ps: u16,
    pub max_words: usize,
    enc: EventEncoder,
    /// Time and LINE_HI of the last word put into a packet.
    time: u64,
    hi: u32,
    words: Vec<RecordWord>,
    t0: u64,
    seq: u64,
    /// Events whose last word is in the open packet.
    events_in_packet: usize,
}

/// A finished packet and how many events it completes.
pub struct SynthPacket {
    pub seq: u64,
    pub bytes: Vec<u8>,
    pub events: usize,
}

impl Packetizer {
    pub fn new(board: u8, geometry: Geometry, tick_ps: u16, max_words: usize) -> Packetizer {
        Packetizer {
            board,
            geometry,
            tick_ps,
            max_words: max_words.clamp(2, hmtt_format::packet::MAX_WORDS_JUMBO),
            enc: EventEncoder::default(),
            time: 0,
            hi: 0,
            words: Vec::new(),
            t0: 0,
            seq: 0,
            events_in_packet: 0,
        }
    }

    fn push_word(&mut self, w: RecordWord, out: &mut dyn FnMut(SynthPacket)) {
        if self.words.is_empty() {
            self.t0 = self.time;
            if self.hi != 0 {
                self.words
                    .push(RecordWord::control_unchecked(0, Opcode::LineHi, self.hi));
            }
        }
        self.time += u64::from(w.dt());
        if w.is_control() {
            match w.opcode() {
                Opcode::Time => self.time += u64::from(w.payload()) * TIME_UNIT,
                Opcode::LineHi => self.hi = w.payload(),
                _ => {}
            }
        }
        self.words.push(w);
        if self.words.len() >= self.max_words {
            self.close(out);
        }
    }

    /// Closes the open packet, if any.
    pub fn close(&mut self, out: &mut dyn FnMut(SynthPacket)) {
        if self.words.is_empty() {
            return;
        }
        let h = PacketHeader {
            flags: FLAG_TRACING,
            board: self.board,
            port: 0,
            seq: self.seq,
            t0: self.t0,
            nwords: 0,
            geometry: self.geometry,
            tick_ps: self.tick_ps,
        };
        out(SynthPacket {
            seq: self.seq,
            bytes: h.build(&self.words),
            events: self.events_in_packet,
        });
        self.seq += 1;
        self.words.clear();
        self.events_in_packet = 0;
    }

    /// Encodes one event (ticks never decrease).
    pub fn event(&mut self, t: u64, ev: BoardEvent, out: &mut dyn FnMut(SynthPacket)) {
        while let Some((w, next)) = self.enc.time_filler(t) {
            self.push_word(w, out);
            self.enc = next;
        }
        let e = self
            .enc
            .encode(t, ev)
            .expect("a gap that fits after fillers");
        let n = e.len();
        for (i, &w) in e.words().iter().enumerate() {
            if i + 1 == n {
                self.events_in_packet += 1;
            }
            self.push_word(w, out);
        }
        self.enc = e.next;
    }
}

/// Encodes `events` into packets (all ports' packets in `seq` order). Each
/// packet's `events` tells how many of `events`, in order, it completes.
pub fn packets(
    board: u8,
    geometry: Geometry,
    tick_ps: u16,
    max_words: usize,
    events: &[TimedEvent],
) -> Vec<SynthPacket> {
    let mut p = Packetizer::new(board, geometry, tick_ps, max_words);
    let mut out = Vec::new();
    for e in events {
        p.event(e.tick, e.event, &mut |pkt| out.push(pkt));
    }
    p.close(&mut |pkt| out.push(pkt));
    out
}

/// The capture header a receiver would write for `board`/`port`.
pub fn capture_header(board: u8, port: u8, geometry: Geometry, tick_ps: u16) -> CaptureHeader {
    CaptureHeader {
        board,
        port,
        stripe: 0,
        start_ns: 1_700_000_000_000_000_000,
        geometry: Some(geometry),
        source_kind: SourceKind::Simulation,
        tick_ps,
        source_name: format!("synth board {board} port {port}"),
    }
}

/// Appends one packet record to a capture file being built.
pub fn append_record(file: &mut impl Write, recv_ns: u64, packet: &[u8]) -> std::io::Result<()> {
    file.write_all(&emit_record_header(recv_ns, packet.len() as u32, 0))?;
    file.write_all(packet)
}

/// Capture files (one per port) of packets dealt round-robin, with the port
/// id written into each packet as a board would.
pub fn deal(header: &CaptureHeader, ports: u8, packets: &[SynthPacket]) -> Vec<Vec<u8>> {
    let mut files: Vec<Vec<u8>> = (0..ports)
        .map(|p| {
            let mut h = header.clone();
            h.port = p;
            h.emit().to_vec()
        })
        .collect();
    for (i, pkt) in packets.iter().enumerate() {
        let port = (pkt.seq % u64::from(ports)) as u8;
        let mut bytes = pkt.bytes.clone();
        let mut view = hmtt_format::Packet::new_unchecked(&mut bytes[..]);
        view.set_port(port);
        append_record(&mut files[usize::from(port)], i as u64, &bytes).expect("in memory");
    }
    files
}

/// A small deterministic generator (xorshift) so tests need no dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// A mixed workload: mostly accesses over the whole DIMM with short and
/// occasional long gaps, plus tags, inner commands and LOST counts.
pub fn workload(seed: u64, n: usize, geometry: Geometry) -> Vec<TimedEvent> {
    let mut rng = Rng(seed | 1);
    let mut t = 0u64;
    let lines = geometry.lines();
    let mut line = rng.below(lines);
    (0..n)
        .map(|_| {
            t += match rng.below(100) {
                0 => rng.below(1 << 20),
                1..=10 => rng.below(200),
                _ => rng.below(8),
            };
            let event = match rng.below(1000) {
                0..=4 => BoardEvent::Tag {
                    event: 0x40 + rng.below(8) as u32,
                    write: rng.below(2) == 0,
                },
                5..=6 => BoardEvent::Tag {
                    event: 0x10000 + rng.below(0x10000) as u32,
                    write: false,
                },
                7 => BoardEvent::Cmd {
                    code: rng.below(6) as u32,
                },
                8 => BoardEvent::Lost {
                    count: 1 + rng.below(100) as u32,
                },
                _ => {
                    line = if rng.below(4) == 0 {
                        rng.below(lines)
                    } else {
                        (line + 1) % lines
                    };
                    BoardEvent::Access {
                        line,
                        write: rng.below(3) == 0,
                    }
                }
            };
            TimedEvent { tick: t, event }
        })
        .collect()
}
