//! The packetizer (format.md §5.2, board.md steps 3 and 4): cuts the stream
//! of popped words into packets, injects LINE_HI at packet open, closes on
//! `max_words`, SYNC and idle flush, numbers the packets and deals them to
//! the ports round-robin. It works in fabric clocks (at most one pop per
//! clock); a packet closing in clock `k` leaves at tick `k*L`.

use hmtt_format::config::InnerCommand;
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::{PacketHeader, HEADER_LEN};
use hmtt_format::record::field::{DT_SHIFT, K_BIT, OP_MASK, OP_SHIFT, PAYLOAD_MASK};
use hmtt_format::record::{Opcode, RecordWord, TIME_UNIT};

/// One packet as the board sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardPacket {
    /// The port the packet was dealt to (`seq % ports`).
    pub port: u8,
    /// Per-board packet number, from 0.
    pub seq: u64,
    /// The tick at which the packet closed (board.md "leaves"): `k*L` for
    /// a close in clock `k`.
    pub leave_tick: u64,
    /// The whole packet, header and words (the UDP payload).
    pub bytes: Vec<u8>,
}

/// Why a packet closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    Full,
    Sync,
    IdleFlush,
}

/// Packetizer counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PacketizerCounters {
    pub packets: u64,
    /// Words in packets, the injected LINE_HI words included.
    pub packet_words: u64,
    pub injected_line_hi: u64,
    pub closed_full: u64,
    pub closed_sync: u64,
    pub closed_idle: u64,
}

/// The packet being built and the stream state the packetizer tracks.
#[derive(Debug, Clone)]
pub struct Packetizer {
    header: PacketHeader,
    max_words: usize,
    ports: u64,
    /// Clocks from a pop to the idle flush it arms: the first clock `k`
    /// with `k*L - last_pop*L >= idle_flush_ticks`, `ceil(idle / L)` after.
    idle_flush_clocks: u64,
    /// `log2(L)`.
    lanes_shift: u32,
    /// Time of the last word popped (0 at reset).
    run_time: u64,
    /// LINE_HI of the stream as of the last word popped.
    run_hi: u32,
    /// Clock of the last pop.
    last_pop: u64,
    open: bool,
    /// Whether the open packet starts with an injected LINE_HI word.
    injected: bool,
    /// Words in the open packet.
    nwords: usize,
    /// The open packet's bytes: room for the header, then the words as
    /// they come (the header is written at close).
    bytes: Vec<u8>,
    t0: u64,
    next_seq: u64,
    closed: Vec<BoardPacket>,
    counters: PacketizerCounters,
}

const SYNC_CODE: u32 = InnerCommand::Sync.index();
/// Record word patterns (format.md §4) for the batch loops: a CONTROL
/// word's kind bit and opcode, without its dt.
const OP_KIND_MASK: u32 = K_BIT | (OP_MASK << OP_SHIFT);
const TIME_BITS: u32 = K_BIT | ((Opcode::Time.bits() as u32) << OP_SHIFT);
const LINE_HI_BITS: u32 = K_BIT | ((Opcode::LineHi.bits() as u32) << OP_SHIFT);
/// The CMD word of SYNC without its dt.
const SYNC_MASK: u32 = OP_KIND_MASK | PAYLOAD_MASK;
const SYNC_BITS: u32 = K_BIT | ((Opcode::Cmd.bits() as u32) << OP_SHIFT) | SYNC_CODE;

impl Packetizer {
    pub fn new(
        geometry: Geometry,
        board_id: u8,
        tick_ps: u16,
        ports: u8,
        max_words: usize,
        idle_flush_ticks: u64,
        lanes: u32,
    ) -> Packetizer {
        debug_assert!(lanes.is_power_of_two() && idle_flush_ticks >= 1);
        debug_assert_eq!(
            RecordWord::control_unchecked(0, Opcode::LineHi, 0).0,
            LINE_HI_BITS
        );
        debug_assert_eq!(
            RecordWord::control_unchecked(0, Opcode::Cmd, SYNC_CODE).0,
            SYNC_BITS
        );
        Packetizer {
            header: PacketHeader {
                flags: 0,
                board: board_id,
                port: 0,
                seq: 0,
                t0: 0,
                nwords: 0,
                geometry,
                tick_ps,
            },
            max_words,
            ports: u64::from(ports),
            idle_flush_clocks: idle_flush_ticks.div_ceil(u64::from(lanes)),
            lanes_shift: lanes.trailing_zeros(),
            run_time: 0,
            run_hi: 0,
            last_pop: 0,
            open: false,
            injected: false,
            nwords: 0,
            bytes: Self::fresh_buffer(max_words),
            t0: 0,
            next_seq: 0,
            closed: Vec::new(),
            counters: PacketizerCounters::default(),
        }
    }

    fn fresh_buffer(max_words: usize) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_LEN + 4 * max_words);
        b.resize(HEADER_LEN, 0);
        b
    }

    /// The clock in which the open packet closes by idle flush unless a
    /// word is popped in it or before; `None` when no packet is open.
    #[inline]
    pub fn flush_deadline(&self) -> Option<u64> {
        self.open
            .then(|| self.last_pop.saturating_add(self.idle_flush_clocks))
    }

    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Words in the open packet.
    pub fn open_words(&self) -> usize {
        self.nwords
    }

    /// Words of the open packet that came from the FIFO (the injected
    /// LINE_HI not counted).
    pub fn fifo_words_in_open(&self) -> usize {
        self.nwords - usize::from(self.injected)
    }

    /// Clock of the last pop (0 before any).
    pub fn last_pop_clock(&self) -> u64 {
        self.last_pop
    }

    /// Clocks from a pop to the idle flush it arms.
    pub fn idle_flush_clocks(&self) -> u64 {
        self.idle_flush_clocks
    }

    /// Time of the last word popped.
    pub fn run_time(&self) -> u64 {
        self.run_time
    }

    pub fn counters(&self) -> &PacketizerCounters {
        &self.counters
    }

    /// Takes the word popped in clock `clock`; `flags` is the board mode
    /// after that clock's commands, used if the packet closes now. Returns
    /// whether the packet closed.
    #[inline]
    pub fn pop(&mut self, clock: u64, word: RecordWord, flags: u8) -> bool {
        if !self.open {
            self.open_packet();
        }
        self.bytes.extend_from_slice(&word.to_le_bytes());
        self.nwords += 1;
        self.last_pop = clock;
        self.run_time += u64::from(word.dt());
        if word.is_control() {
            match word.opcode() {
                Opcode::Time => self.run_time += u64::from(word.payload()) * TIME_UNIT,
                Opcode::LineHi => self.run_hi = word.payload(),
                Opcode::Cmd if word.payload() == SYNC_CODE && self.nwords < self.max_words => {
                    self.close(clock, flags, CloseReason::Sync);
                    return true;
                }
                _ => {}
            }
        }
        if self.nwords >= self.max_words {
            self.close(clock, flags, CloseReason::Full);
            return true;
        }
        false
    }

    /// Takes popped words in order, each with its pop clock (`clocks`,
    /// increasing; the caller has closed the packet if its idle flush falls
    /// before `clocks[0]`), until the packet closes, an idle flush falls
    /// before the next word, or the words run out; returns how many it took
    /// (at least one if `words` is not empty). Same result as `pop` per
    /// word.
    #[inline]
    pub fn pop_run(&mut self, words: &[u32], clocks: &[u64], flags: u8) -> usize {
        debug_assert_eq!(words.len(), clocks.len());
        if words.is_empty() {
            return 0;
        }
        if !self.open {
            self.open_packet();
        }
        let mut n = words.len().min(self.max_words - self.nwords);
        if clocks[n - 1] - clocks[0] > self.idle_flush_clocks {
            // An idle flush may fall inside: stop before the first gap
            // longer than `idle_flush_clocks`.
            let idle = self.idle_flush_clocks;
            n = 1 + clocks[..n]
                .windows(2)
                .position(|w| w[1] - w[0] > idle)
                .unwrap_or(n - 1);
        }
        // A SYNC CMD word (any dt) closes the packet right after it; rare,
        // so looked for over the whole run first (vectorizes).
        let sync = words[..n]
            .iter()
            .fold(false, |a, &w| a | (w & SYNC_MASK == SYNC_BITS));
        if sync {
            n = 1 + words[..n]
                .iter()
                .position(|&w| w & SYNC_MASK == SYNC_BITS)
                .expect("found above");
        }
        let words = &words[..n];
        // The running time: every dt, and 64 per unit of TIME payload; no
        // branch on the word kinds, so it vectorizes.
        let (dts, time_units) = words.iter().fold((0u64, 0u64), |(d, u), &w| {
            let time_mask = 0u32.wrapping_sub(u32::from(w & OP_KIND_MASK == TIME_BITS));
            (
                d + u64::from(w >> DT_SHIFT),
                u + u64::from(w & PAYLOAD_MASK & time_mask),
            )
        });
        self.run_time += dts + time_units * TIME_UNIT;
        // The stream's LINE_HI: the last LINE_HI word, if any.
        if let Some(&w) = words
            .iter()
            .rev()
            .find(|&&w| w & OP_KIND_MASK == LINE_HI_BITS)
        {
            self.run_hi = w & PAYLOAD_MASK;
        }
        self.bytes.reserve(4 * n);
        if cfg!(target_endian = "little") {
            // SAFETY: any initialized u32 memory is valid as bytes (u8 has
            // alignment 1); on a little-endian machine they are the words'
            // little-endian bytes.
            let raw = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), 4 * n) };
            self.bytes.extend_from_slice(raw);
        } else {
            for w in words {
                self.bytes.extend_from_slice(&w.to_le_bytes());
            }
        }
        self.nwords += n;
        let clock = clocks[n - 1];
        self.last_pop = clock;
        if self.nwords >= self.max_words {
            self.close(clock, flags, CloseReason::Full);
        } else if sync {
            self.close(clock, flags, CloseReason::Sync);
        }
        n
    }

    #[inline(never)]
    fn open_packet(&mut self) {
        self.open = true;
        self.t0 = self.run_time;
        self.injected = self.run_hi != 0;
        if self.injected {
            let w = RecordWord::control_unchecked(0, Opcode::LineHi, self.run_hi);
            self.bytes.extend_from_slice(&w.to_le_bytes());
            self.nwords += 1;
            self.counters.injected_line_hi += 1;
        }
    }

    /// Closes the open packet in clock `clock`.
    pub fn close(&mut self, clock: u64, flags: u8, reason: CloseReason) {
        debug_assert!(self.open && self.nwords > 0);
        let seq = self.next_seq;
        self.next_seq += 1;
        let port = (seq % self.ports) as u8;
        let mut h = self.header;
        h.flags = flags;
        h.port = port;
        h.seq = seq;
        h.t0 = self.t0;
        h.nwords = self.nwords as u16;
        h.emit(&mut self.bytes);
        let bytes = std::mem::replace(&mut self.bytes, Self::fresh_buffer(self.max_words));
        self.counters.packets += 1;
        self.counters.packet_words += self.nwords as u64;
        match reason {
            CloseReason::Full => self.counters.closed_full += 1,
            CloseReason::Sync => self.counters.closed_sync += 1,
            CloseReason::IdleFlush => self.counters.closed_idle += 1,
        }
        self.closed.push(BoardPacket {
            port,
            seq,
            leave_tick: clock.saturating_mul(1 << self.lanes_shift),
            bytes,
        });
        self.nwords = 0;
        self.open = false;
        self.injected = false;
    }

    /// Moves the closed packets to `out`, in `seq` order.
    pub fn drain_packets(&mut self, out: &mut Vec<BoardPacket>) {
        out.append(&mut self.closed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::packet::Packet;
    use hmtt_format::record::{BoardEvent, TimedEvent};

    /// Four lanes: an idle flush of 100 ticks is 25 clocks.
    fn pk(max_words: usize) -> Packetizer {
        Packetizer::new(Geometry::ddr3_default(), 7, 1250, 3, max_words, 100, 4)
    }

    fn access(dt: u32, lo: u64) -> RecordWord {
        RecordWord::access_unchecked(dt, false, lo)
    }

    #[test]
    fn full_packets_seq_ports_and_t0() {
        let mut p = pk(4);
        for i in 0..13u64 {
            p.pop(10 + i, access(2, i), 1);
        }
        let mut out = vec![];
        p.drain_packets(&mut out);
        assert_eq!(out.len(), 3);
        for (i, bp) in out.iter().enumerate() {
            let pkt = Packet::new_checked(&bp.bytes[..]).unwrap();
            let h = PacketHeader::parse(&pkt).unwrap();
            assert_eq!(h.seq, i as u64);
            assert_eq!(bp.seq, i as u64);
            assert_eq!(h.port, (i % 3) as u8);
            assert_eq!(bp.port, h.port);
            assert_eq!(h.board, 7);
            assert_eq!(h.flags, 1);
            assert_eq!(h.tick_ps, 1250);
            assert_eq!(h.nwords, 4);
            // t0: time of the last word before the packet.
            assert_eq!(h.t0, 8 * i as u64);
            // Closed in the clock of its fourth pop, at that clock's tick.
            assert_eq!(bp.leave_tick, 4 * (10 + 4 * i as u64 + 3));
        }
        assert!(p.is_open());
        assert_eq!(p.open_words(), 1);
        assert_eq!(p.flush_deadline(), Some(22 + 25));
    }

    #[test]
    fn line_hi_is_injected_when_a_packet_opens_with_a_nonzero_stream_hi() {
        let mut p = pk(3);
        let hi = RecordWord::control_unchecked(5, Opcode::LineHi, 0x1234);
        p.pop(0, hi, 1);
        p.pop(1, access(1, 7), 1);
        p.pop(2, access(1, 8), 1); // closes: 3 words
        p.pop(3, access(1, 9), 1); // opens with injected LINE_HI: 2 words
        p.pop(4, access(1, 10), 1); // closes
        let mut out = vec![];
        p.drain_packets(&mut out);
        assert_eq!(out.len(), 2);
        let second = Packet::new_checked(&out[1].bytes[..]).unwrap();
        let words: Vec<_> = second.words().collect();
        assert_eq!(words.len(), 3);
        assert_eq!(
            words[0],
            RecordWord::control_unchecked(0, Opcode::LineHi, 0x1234)
        );
        let events: Vec<_> = second.events().map(|e| e.unwrap()).collect();
        assert_eq!(
            events,
            vec![
                TimedEvent {
                    tick: 8,
                    event: BoardEvent::Access {
                        line: (0x1234 << 24) | 9,
                        write: false
                    }
                },
                TimedEvent {
                    tick: 9,
                    event: BoardEvent::Access {
                        line: (0x1234 << 24) | 10,
                        write: false
                    }
                },
            ]
        );
        assert_eq!(p.counters().injected_line_hi, 1);
        // Back to LINE_HI 0: no injection.
        let mut p = pk(2);
        p.pop(0, RecordWord::control_unchecked(0, Opcode::LineHi, 3), 1);
        p.pop(0, RecordWord::control_unchecked(0, Opcode::LineHi, 0), 1);
        p.pop(1, access(0, 1), 1);
        assert_eq!(p.open_words(), 1);
        assert_eq!(p.counters().injected_line_hi, 0);
    }

    #[test]
    fn sync_closes_right_after_its_cmd_word_and_time_words_count() {
        let mut p = pk(360);
        p.pop(5, RecordWord::control_unchecked(3, Opcode::Time, 2), 1);
        p.pop(6, RecordWord::control_unchecked(0, Opcode::Cmd, 4), 1);
        assert!(p.is_open());
        p.pop(7, RecordWord::control_unchecked(1, Opcode::Cmd, 5), 3);
        assert!(!p.is_open());
        p.pop(8, access(0, 1), 1);
        p.close(50, 0, CloseReason::IdleFlush);
        let mut out = vec![];
        p.drain_packets(&mut out);
        assert_eq!(out.len(), 2);
        let a = Packet::new_checked(&out[0].bytes[..]).unwrap();
        assert_eq!((a.nwords(), a.flags(), out[0].leave_tick), (3, 3, 4 * 7));
        let b = Packet::new_checked(&out[1].bytes[..]).unwrap();
        assert_eq!((b.nwords(), b.flags(), b.t0()), (1, 0, 3 + 128 + 1));
        assert_eq!(out[1].leave_tick, 4 * 50);
        let c = p.counters();
        assert_eq!((c.closed_sync, c.closed_idle, c.closed_full), (1, 1, 0));
        assert_eq!(c.packet_words, 4);
    }

    #[test]
    fn the_idle_flush_falls_in_the_first_clock_at_least_idle_ticks_after_the_pop() {
        // L = 8, 100 ticks: 13 clocks (104 ticks; 12 clocks are 96).
        for (lanes, idle, clocks) in [(8, 100, 13), (8, 104, 13), (8, 105, 14), (1, 100, 100)] {
            let p = Packetizer::new(Geometry::ddr3_default(), 0, 1250, 1, 360, idle, lanes);
            assert_eq!(p.idle_flush_clocks(), clocks, "L {lanes} idle {idle}");
        }
    }

    #[test]
    fn a_run_is_taken_as_word_by_word_pops() {
        let mut seed = 99u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..40 {
            let max_words = [2, 3, 7, 360][case % 4];
            let mk = || Packetizer::new(Geometry::ddr3_default(), 1, 1250, 2, max_words, 37, 8);
            let (mut one, mut run) = (mk(), mk());
            let mut clock = 0u64;
            let mut words = vec![];
            let mut clocks = vec![];
            for _ in 0..300 {
                clock += [1, 1, 2, 4, 5, 6][rnd(6) as usize];
                clocks.push(clock);
                words.push(match rnd(10) {
                    0 => RecordWord::control_unchecked(1, Opcode::Cmd, 5),
                    1 => RecordWord::control_unchecked(0, Opcode::LineHi, rnd(3) as u32),
                    2 => RecordWord::control_unchecked(2, Opcode::Time, 9),
                    _ => access(rnd(64) as u32, rnd(1 << 24)),
                });
            }
            // Word by word, with the idle flushes the board would do.
            for (&w, &c) in words.iter().zip(&clocks) {
                if let Some(f) = one.flush_deadline() {
                    if f < c {
                        one.close(f, 1, CloseReason::IdleFlush);
                    }
                }
                one.pop(c, RecordWord(w.0), 1);
            }
            let raw: Vec<u32> = words.iter().map(|w| w.0).collect();
            let mut i = 0;
            while i < raw.len() {
                if let Some(f) = run.flush_deadline() {
                    if f < clocks[i] {
                        run.close(f, 1, CloseReason::IdleFlush);
                    }
                }
                i += run.pop_run(&raw[i..], &clocks[i..], 1);
            }
            let (mut a, mut b) = (vec![], vec![]);
            one.drain_packets(&mut a);
            run.drain_packets(&mut b);
            assert!(a.len() > 3, "case {case}");
            assert_eq!(a, b, "case {case}");
            assert_eq!(one.counters(), run.counters());
            assert!(a.iter().all(|p| p.leave_tick % 8 == 0));
        }
    }
}
