//! The Statistic Unit as a board top holds it: the counters
//! ([`StatisticCounters`]) on the capture chain's taps and the statistics
//! path ([`StatisticPackets`]) on their record and readout, wired as
//! `hdl/tests/statistics_packets_support` wires them.
//!
//! Why the lanes come packed. A board top holds the unit in an array of
//! zero or one (`[StatisticUnit; S]`), so that a board without it has none
//! of it, and rust-hdl 0.46 resolves one array index per name (module
//! documentation of [`super`]): `su[s].bus_kind[j]` would not be a signal
//! in the Verilog. So the unit takes each lane's taps as [`LANE_TAP_BITS`]
//! bits of one vector, lane `j` at bit `LANE_TAP_BITS * j`, and each slot's
//! inner command as [`SLOT_TAP_BITS`] bits of another, placed there by a
//! [`LaneTap`] per lane and a [`SlotTap`] per slot (rust-hdl's `bit_cast`
//! takes no indexed signal in a loop, so each lane's casts are a block's).

use rust_hdl::prelude::*;

use super::packets::{StatisticPackets, StatsPacketConfig};
use super::StatisticCounters;

/// The most lanes a board has.
pub const MAX_LANES: usize = 8;

/// A lane's taps, low bits first: the bus command's kind (4), rank (2),
/// bank (4) and address (18), the DSMU's reference valid (1) and line
/// (48).
pub const LANE_TAP_BITS: usize = 77;
pub const LANE_TAPS_BITS: usize = LANE_TAP_BITS * MAX_LANES;
/// A slot's inner command: valid (1), index (6).
pub const SLOT_TAP_BITS: usize = 7;
pub const SLOT_TAPS_BITS: usize = SLOT_TAP_BITS * MAX_LANES;

/// One lane's taps placed at lane `j`'s bits of the packed vector.
#[derive(LogicBlock)]
pub struct LaneTap {
    pub kind: Signal<In, Bits<4>>,
    pub rank: Signal<In, Bits<2>>,
    pub bank: Signal<In, Bits<4>>,
    pub addr: Signal<In, Bits<18>>,
    pub valid: Signal<In, Bit>,
    pub line: Signal<In, Bits<48>>,
    pub placed: Signal<Out, Bits<LANE_TAPS_BITS>>,
    at: Constant<Bits<10>>,
    valid_bit: Constant<Bits<LANE_TAPS_BITS>>,
}

impl LaneTap {
    pub fn new(lane: usize) -> Self {
        assert!(lane < MAX_LANES);
        Self {
            kind: Default::default(),
            rank: Default::default(),
            bank: Default::default(),
            addr: Default::default(),
            valid: Default::default(),
            line: Default::default(),
            placed: Default::default(),
            at: Constant::new(((LANE_TAP_BITS * lane) as u64).to_bits()),
            valid_bit: Constant::new((1u64 << 28).to_bits()),
        }
    }
}

impl Logic for LaneTap {
    #[hdl_gen]
    fn update(&mut self) {
        self.placed.next = (bit_cast::<LANE_TAPS_BITS, 4>(self.kind.val())
            | (bit_cast::<LANE_TAPS_BITS, 2>(self.rank.val()) << 4)
            | (bit_cast::<LANE_TAPS_BITS, 4>(self.bank.val()) << 6)
            | (bit_cast::<LANE_TAPS_BITS, 18>(self.addr.val()) << 10)
            | (bit_cast::<LANE_TAPS_BITS, 48>(self.line.val()) << 29))
            << self.at.val();
        if self.valid.val() {
            self.placed.next = self.placed.val() | (self.valid_bit.val() << self.at.val());
        }
    }
}

/// One slot's inner command placed at slot `e`'s bits of the packed
/// vector.
#[derive(LogicBlock)]
pub struct SlotTap {
    pub valid: Signal<In, Bit>,
    pub index: Signal<In, Bits<6>>,
    pub placed: Signal<Out, Bits<SLOT_TAPS_BITS>>,
    at: Constant<Bits<10>>,
    valid_bit: Constant<Bits<SLOT_TAPS_BITS>>,
}

impl SlotTap {
    pub fn new(slot: usize) -> Self {
        assert!(slot < MAX_LANES);
        Self {
            valid: Default::default(),
            index: Default::default(),
            placed: Default::default(),
            at: Constant::new(((SLOT_TAP_BITS * slot) as u64).to_bits()),
            valid_bit: Constant::new(1u64.to_bits()),
        }
    }
}

impl Logic for SlotTap {
    #[hdl_gen]
    fn update(&mut self) {
        self.placed.next = (bit_cast::<SLOT_TAPS_BITS, 6>(self.index.val()) << 1) << self.at.val();
        if self.valid.val() {
            self.placed.next = self.placed.val() | (self.valid_bit.val() << self.at.val());
        }
    }
}

/// The unit; see the module documentation.
#[derive(LogicBlock)]
pub struct StatisticUnit<
    const L: usize,
    const E: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
> {
    pub clock: Signal<In, Clock>,
    /// The capture chain's taps: per lane (packed), per slot (packed),
    /// and the rest as `Capture` has them.
    pub lane_taps: Signal<In, Bits<LANE_TAPS_BITS>>,
    pub slot_taps: Signal<In, Bits<SLOT_TAPS_BITS>>,
    pub bus_tick: Signal<In, Bits<64>>,
    pub ref_tick: Signal<In, Bits<64>>,
    pub over: Signal<In, Bits<4>>,
    pub over_tick: Signal<In, Bits<64>>,
    pub cmd_tick: Signal<In, Bits<64>>,
    pub dropped: Signal<In, Bits<3>>,
    pub dropped_tick: Signal<In, Bits<64>>,
    pub dropped_tick_valid: Signal<In, Bit>,
    /// The capture chain's mode, for the packets' flags.
    pub tracing: Signal<In, Bit>,
    pub tags_only: Signal<In, Bit>,
    /// The statistics packets toward the ports, as
    /// [`StatisticPackets`] has them.
    pub word_write: Signal<Out, Bit>,
    pub word_data: Signal<Out, Bits<32>>,
    pub word_port: Signal<Out, Bits<2>>,
    pub desc_write: Signal<Out, Bit>,
    pub desc_words: Signal<Out, Bits<16>>,
    pub desc_port: Signal<Out, Bits<2>>,
    pub records_sent: Signal<Out, Bits<32>>,
    pub records_unsent: Signal<Out, Bits<32>>,
    pub overrun: Signal<Out, Bits<32>>,
    /// A record is taken (in the clock its packets' order is fixed): port
    /// `p` gets `announce_counts` bits `8p..8p + 8` of its packets, so
    /// that each port can keep its trace packets that close from now on
    /// behind them ([`crate::port_buffer::EthPort`]).
    pub announce: Signal<Out, Bit>,
    pub announce_counts: Signal<Out, Bits<32>>,
    /// For simulation: [`StatisticCounters::open_end`].
    pub open_end: Signal<Out, Bits<64>>,
    pub counters: StatisticCounters<L, E, R, NB, LB>,
    pub path: StatisticPackets,
    /// The next packet's port (its `seq % ports`), and per value of it a
    /// record's packets per port and the port after the record.
    next_port: DFF<Bits<2>>,
    port_index: [Constant<Bits<2>>; 4],
    counts_from: [Constant<Bits<32>>; 4],
    next_port_from: [Constant<Bits<2>>; 4],
}

impl<const L: usize, const E: usize, const R: usize, const NB: usize, const LB: usize>
    StatisticUnit<L, E, R, NB, LB>
{
    /// The unit for `path`'s geometry and lanes, on from reset at
    /// intervals of `2^interval_log2` ticks.
    pub fn new(path: &StatsPacketConfig, interval_log2: u32) -> Self {
        assert_eq!(path.lanes as usize, L, "the path's lanes are the unit's");
        let parts = path.plan().parts;
        let ports = u64::from(path.ports);
        Self {
            clock: Default::default(),
            lane_taps: Default::default(),
            slot_taps: Default::default(),
            bus_tick: Default::default(),
            ref_tick: Default::default(),
            over: Default::default(),
            over_tick: Default::default(),
            cmd_tick: Default::default(),
            dropped: Default::default(),
            dropped_tick: Default::default(),
            dropped_tick_valid: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            word_port: Default::default(),
            desc_write: Default::default(),
            desc_words: Default::default(),
            desc_port: Default::default(),
            records_sent: Default::default(),
            records_unsent: Default::default(),
            overrun: Default::default(),
            announce: Default::default(),
            announce_counts: Default::default(),
            open_end: Default::default(),
            counters: StatisticCounters::new(path.geometry, interval_log2),
            path: StatisticPackets::new(path),
            next_port: Default::default(),
            port_index: std::array::from_fn(|r| Constant::new((r as u64).to_bits())),
            counts_from: std::array::from_fn(|r| {
                Constant::new(packets_per_port(parts, ports, r as u64).to_bits())
            }),
            next_port_from: std::array::from_fn(|r| {
                Constant::new(((r as u64 + parts) % ports).to_bits())
            }),
        }
    }
}

impl<const L: usize, const E: usize, const R: usize, const NB: usize, const LB: usize> Logic
    for StatisticUnit<L, E, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.counters.clock.next = self.clock.val();
        self.path.clock.next = self.clock.val();
        self.next_port.clock.next = self.clock.val();
        self.next_port.d.next = self.next_port.q.val();
        self.announce.next = self.path.hold_write.val();
        self.announce_counts.next = 0.into();
        for r in 0..4 {
            if self.next_port.q.val() == self.port_index[r].val() {
                self.announce_counts.next = self.counts_from[r].val();
                if self.path.hold_write.val() {
                    self.next_port.d.next = self.next_port_from[r].val();
                }
            }
        }
        for j in 0..L {
            self.counters.bus_kind[j].next = self.lane_taps.val().get_bits::<4>(77 * j);
            self.counters.bus_rank[j].next = self.lane_taps.val().get_bits::<2>(77 * j + 4);
            self.counters.bus_bank[j].next = self.lane_taps.val().get_bits::<4>(77 * j + 6);
            self.counters.bus_addr[j].next = self.lane_taps.val().get_bits::<18>(77 * j + 10);
            self.counters.ref_valid[j].next = self.lane_taps.val().get_bit(77 * j + 28);
            self.counters.ref_line[j].next = self.lane_taps.val().get_bits::<48>(77 * j + 29);
        }
        for e in 0..E {
            self.counters.cmd_valid[e].next = self.slot_taps.val().get_bit(7 * e);
            self.counters.cmd_index[e].next = self.slot_taps.val().get_bits::<6>(7 * e + 1);
        }
        self.counters.bus_tick.next = self.bus_tick.val();
        self.counters.ref_tick.next = self.ref_tick.val();
        self.counters.over.next = self.over.val();
        self.counters.over_tick.next = self.over_tick.val();
        self.counters.cmd_tick.next = self.cmd_tick.val();
        self.counters.dropped.next = self.dropped.val();
        self.counters.dropped_tick.next = self.dropped_tick.val();
        self.counters.dropped_tick_valid.next = self.dropped_tick_valid.val();
        self.path.record_valid.next = self.counters.record_valid.val();
        self.path.record_start.next = self.counters.record_start.val();
        self.path.record_end.next = self.counters.record_end.val();
        self.path.record_k.next = self.counters.record_k.val();
        self.path.tracing.next = self.tracing.val();
        self.path.tags_only.next = self.tags_only.val();
        self.counters.hold_write.next = self.path.hold_write.val();
        self.counters.hold_slot.next = self.path.hold_slot.val();
        self.counters.read_slot.next = self.path.read_slot.val();
        self.counters.read_index.next = self.path.read_index.val();
        self.path.read_value.next = self.counters.read_value.val();
        self.word_write.next = self.path.word_write.val();
        self.word_data.next = self.path.word_data.val();
        self.word_port.next = self.path.word_port.val();
        self.desc_write.next = self.path.desc_write.val();
        self.desc_words.next = self.path.desc_words.val();
        self.desc_port.next = self.path.desc_port.val();
        self.records_sent.next = self.path.records_sent.val();
        self.records_unsent.next = self.path.records_unsent.val();
        self.overrun.next = self.path.overrun.val();
        self.open_end.next = self.counters.open_end.val();
    }
}

/// A record's packets on each port, 8 bits each (port `p` at bit `8p`),
/// its first packet on port `first`: packet `i` goes to port `(first +
/// i) % ports`.
fn packets_per_port(parts: u64, ports: u64, first: u64) -> u64 {
    (0..parts).fold(0, |counts, i| counts + (1 << (8 * ((first + i) % ports))))
}

const _: () = assert!(4 + 2 + 4 + 18 + 1 + 48 == LANE_TAP_BITS && 1 + 6 == SLOT_TAP_BITS);
