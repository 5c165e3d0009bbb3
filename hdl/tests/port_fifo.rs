//! The port buffers' asynchronous FIFO (`port_buffer::AsyncFifo`) on two
//! unrelated clocks: random write and read rates, writer faster and slower
//! than reader; every word written while `full` was low comes out once, in
//! order (so `full` never let a write overwrite an unread word and `empty`
//! never showed a word that was not there); the capacity with an idle
//! reader (`2^N + 1`), the dropped write and sticky `overflow` when full,
//! the latency and the throughput the documentation states.

mod eth_support;

use eth_support::Lcg;
use hmtt_hdl::port_buffer::AsyncFifo;
use rust_hdl::prelude::*;
use std::collections::VecDeque;

/// A 16-word FIFO, so random runs hit `full` often.
type Fifo = AsyncFifo<Bits<32>, 4, 5>;
const WORDS: usize = 16;

/// Both clocks as rising/falling edge times; write edges fall on even
/// simulation times and read edges on odd ones, so no two edges coincide.
struct Bench {
    uut: Fifo,
    write_period: u64,
    read_period: u64,
    /// Next rising edge of each clock.
    write_edge: u64,
    read_edge: u64,
    /// Words accepted by the FIFO (written while `full` was low), not yet read.
    pending: VecDeque<u32>,
    next_word: u32,
    /// Words read so far, in order.
    received: Vec<u32>,
    write_clocks: u64,
    read_clocks: u64,
    /// Read clock of each read.
    read_at: Vec<u64>,
}

/// What the writer and reader do at their next edge.
#[derive(Clone, Copy)]
struct Rates {
    /// Chance (in 1/256) that the writer offers a word in a write clock.
    write: u64,
    /// Chance (in 1/256) that the reader takes the head in a read clock.
    read: u64,
}

impl Bench {
    fn new(write_period: u64, read_period: u64) -> Bench {
        assert!(write_period.is_multiple_of(2) && read_period.is_multiple_of(2));
        let mut uut = Fifo::default();
        uut.connect_all();
        assert!(simulate(&mut uut, 100));
        Bench {
            uut,
            write_period,
            read_period,
            write_edge: write_period,
            read_edge: read_period + 1,
            pending: VecDeque::new(),
            next_word: 0,
            received: vec![],
            write_clocks: 0,
            read_clocks: 0,
            read_at: vec![],
        }
    }

    fn edge(&mut self, write_side: bool, level: bool) {
        let clock = Clock { clk: level };
        if write_side {
            self.uut.write_clock.next = clock;
        } else {
            self.uut.read_clock.next = clock;
        }
        assert!(simulate(&mut self.uut, 100));
    }

    /// One write clock: offer a word if `write`; a word offered while
    /// `full` is low is accepted, one offered while `full` is high is
    /// dropped.
    fn write_clock(&mut self, write: bool) {
        let full = self.uut.full.val();
        self.uut.write.next = write;
        self.uut.data_in.next = (self.next_word as u64).into();
        assert!(simulate(&mut self.uut, 100));
        if write {
            if !full {
                self.pending.push_back(self.next_word);
            }
            self.next_word += 1;
        }
        self.edge(true, true);
        self.uut.write.next = false;
        self.write_clocks += 1;
    }

    /// One read clock: take the head if `read` and the FIFO is not empty;
    /// the head must be the oldest word accepted and not yet read.
    fn read_clock(&mut self, read: bool) {
        let empty = self.uut.empty.val();
        let take = read && !empty;
        if take {
            let head: u64 = self.uut.data_out.val().into();
            let expected = self.pending.pop_front().unwrap_or_else(|| {
                panic!(
                    "read clock {}: not empty, but no word was written (head {head})",
                    self.read_clocks
                )
            });
            assert_eq!(
                head, expected as u64,
                "read clock {}: head word",
                self.read_clocks
            );
            self.received.push(expected);
            self.read_at.push(self.read_clocks);
        }
        self.uut.read.next = take;
        assert!(simulate(&mut self.uut, 100));
        self.edge(false, true);
        self.uut.read.next = false;
        self.read_clocks += 1;
    }

    /// Offers one word at the next write edge, `full` or not (read clocks
    /// before it pass without reads).
    fn offer_now(&mut self) {
        while self.read_edge < self.write_edge {
            self.edge(false, false);
            self.read_clock(false);
            self.read_edge += self.read_period;
        }
        self.edge(true, false);
        self.write_clock(true);
        self.write_edge += self.write_period;
    }

    /// Runs `clocks` write clocks (read clocks if `count_reads`), with the writer and reader at `rates`.
    fn run(&mut self, rng: &mut Lcg, rates: Rates, clocks: u64, count_reads: bool) {
        let stop = if count_reads {
            self.read_clocks + clocks
        } else {
            self.write_clocks + clocks
        };
        while (if count_reads {
            self.read_clocks
        } else {
            self.write_clocks
        }) < stop
        {
            // Each clock falls just before it rises again: only the order
            // of the two clocks' rising edges matters to the flip-flops.
            if self.write_edge < self.read_edge {
                self.edge(true, false);
                // The writer respects `full`, as the packetizer would.
                let w = rng.below(256) < rates.write && !self.uut.full.val();
                self.write_clock(w);
                self.write_edge += self.write_period;
            } else {
                self.edge(false, false);
                let r = rng.below(256) < rates.read;
                self.read_clock(r);
                self.read_edge += self.read_period;
            }
        }
    }
}

/// Random rates on two clocks, changing every few hundred clocks; then the
/// writer stops and the reader takes what is left.
fn random_run(write_period: u64, read_period: u64, seed: u64) {
    let mut rng = Lcg(seed);
    let mut bench = Bench::new(write_period, read_period);
    let mut saw_full = 0;
    for _ in 0..40 {
        let rates = Rates {
            write: 16 + rng.below(241),
            read: 16 + rng.below(241),
        };
        for _ in 0..100 {
            bench.run(&mut rng, rates, 4, false);
            saw_full += bench.uut.full.val() as u32;
        }
        assert!(!bench.uut.overflow.val(), "the writer respects full");
    }
    let accepted = bench.pending.len() + bench.received.len();
    bench.run(
        &mut rng,
        Rates {
            write: 0,
            read: 256,
        },
        (4 * WORDS as u64 + 20) * 3,
        true,
    );
    assert!(bench.pending.is_empty(), "words left after the drain");
    assert!(bench.uut.empty.val());
    assert_eq!(bench.received.len(), accepted);
    // Accepted words are a subsequence of the offered ones in order, and
    // reads return exactly them: nothing lost, duplicated or reordered.
    assert!(bench.received.windows(2).all(|w| w[0] < w[1]));
    assert!(accepted > 1000, "only {accepted} words went through");
    assert!(saw_full > 0, "the run never filled the FIFO");
}

#[test]
fn random_rates_writer_faster() {
    random_run(8, 20, 1);
}

#[test]
fn random_rates_reader_faster() {
    random_run(36, 8, 2);
}

#[test]
fn random_rates_close_clocks() {
    random_run(32, 28, 3);
    random_run(12, 12, 4);
}

/// With the reader idle the FIFO takes `2^N + 1` words (the RAM and the
/// head register) and then says full; one more write is dropped and sets
/// `overflow`; the reader then gets exactly the accepted words.
#[test]
fn capacity_overflow_and_drain() {
    for (wp, rp) in [(8, 12), (12, 8)] {
        let mut rng = Lcg(5);
        let mut bench = Bench::new(wp, rp);
        let offer_all = Rates {
            write: 256,
            read: 0,
        };
        bench.run(&mut rng, offer_all, 8 * WORDS as u64, false);
        assert!(bench.uut.full.val());
        assert!(!bench.uut.overflow.val());
        assert_eq!(bench.pending.len(), WORDS + 1, "capacity with {wp}/{rp}");
        bench.offer_now();
        bench.run(&mut rng, Rates { write: 0, read: 0 }, 2, false);
        assert!(
            bench.uut.overflow.val(),
            "a write while full is an overflow"
        );
        assert_eq!(bench.pending.len(), WORDS + 1, "the dropped word");
        bench.run(
            &mut rng,
            Rates {
                write: 0,
                read: 256,
            },
            3 * WORDS as u64 + 20,
            true,
        );
        assert_eq!(bench.received.len(), WORDS + 1);
        assert!(bench.pending.is_empty() && bench.uut.empty.val());
        assert!(!bench.uut.full.val());
        assert!(bench.uut.overflow.val(), "overflow is sticky");
    }
}

/// A word written into an empty FIFO shows 5 read clocks later; with
/// a backlog an always-reading reader gets one word every three read clocks.
#[test]
fn latency_and_throughput() {
    let mut rng = Lcg(6);
    for phase in 0..4 {
        let mut bench = Bench::new(16, 16);
        bench.read_edge += 2 * phase;
        bench.run(&mut rng, Rates { write: 0, read: 0 }, 4, true);
        bench.offer_now();
        let written_before = bench.read_clocks;
        let mut waited = 0;
        while bench.uut.empty.val() {
            bench.run(&mut rng, Rates { write: 0, read: 0 }, 1, true);
            waited += 1;
            assert!(waited < 20, "the word never showed");
        }
        assert_eq!(bench.read_clocks - written_before, waited);
        // Two synchronizer flip-flops, the registered compare, the fetch,
        // the head register (one more in hardware when the first flip-flop
        // misses the change).
        assert_eq!(waited, 5, "phase {phase}");
    }
    let mut bench = Bench::new(4, 8);
    bench.run(
        &mut rng,
        Rates {
            write: 256,
            read: 0,
        },
        40,
        false,
    );
    bench.run(
        &mut rng,
        Rates {
            write: 0,
            read: 256,
        },
        3 * WORDS as u64,
        true,
    );
    let gaps: Vec<u64> = bench.read_at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= WORDS - 1);
    assert!(gaps.iter().all(|&g| g == 3), "{gaps:?}");
}
