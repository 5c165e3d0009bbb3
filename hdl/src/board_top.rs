//! The board's whole core, DDR command pins to Ethernet ports: the capture
//! chain ([`crate::capture::Capture`]: DCBU, DSMU, CU, encoder, TX FIFO and
//! the drain's pop decision), the packetizer, and per port the clock-domain
//! crossing and the framer ([`crate::port_buffer::EthPort`]). Board tops in
//! `firmware/` wrap it with pins, PLLs and PHY interfaces (GMII as is, or
//! RGMII through [`crate::rgmii::RgmiiTx`]).
//!
//! Two clocks: `fabric_clock` carries `L` DDR command ticks per cycle;
//! `eth_clock` is the ports' 125 MHz transmit clock (all ports share it).
//! Type parameters: `L` lanes, `E` references per clock, the TX FIFO as
//! `B` banks of `2^AB` words (see `capture`), `P` ports, and each port's data FIFO of `2^DN` words
//! (`DNP1 = DN + 1`; default 4096 words, two jumbo packets; 1024 words
//! hold two 1500-byte packets, enough for `max_words` up to 512).
//!
//! The Statistic Unit (board.md "Statistic Unit"), a build option: with
//! `S = 1` and [`BoardTopConfig::statistics`] the core holds a
//! [`StatisticUnit`] for `R` ranks, `NB` banks in all and `LB` line bits
//! (the geometry's) on the capture chain's taps; the trace's drain runs at
//! the line rate less the unit's share `1/2^s`
//! ([`BoardTopConfig::set_line_rate`]), and each port takes the unit's
//! packets (port `seq % ports`) before the trace's at a packet boundary,
//! and before any trace packet that closes after the unit took their
//! record ([`crate::port_buffer::EthPort`]). `S = 0` (the default, with `R`,
//! `NB`, `LB` unused) has none of it.

use crate::capture::{Capture, CaptureConfig};
use crate::dsmu::LineGeometry;
use crate::framer::{FramerConfig, UDP_FRAME_OVERHEAD};
use crate::packetizer::{Packetizer, PacketizerConfig};
use crate::pins::DimmPins;
use crate::port_buffer::EthPort;
use crate::statistics::packets::StatsPacketConfig;
use crate::statistics::unit::{LaneTap, SlotTap, StatisticUnit, LANE_TAPS_BITS, SLOT_TAPS_BITS};
use hmtt_format::Geometry;
use rust_hdl::prelude::*;

/// Build parameters of the board core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardTopConfig {
    pub geometry: Geometry,
    pub capture: CaptureConfig,
    pub packetizer: PacketizerConfig,
    pub board_id: u8,
    pub tick_ps: u16,
    /// Drain rate `num / den` words per tick (board.md "Drain"); the
    /// hardware takes `L num` per clock.
    pub drain_num: u64,
    pub drain_den: u64,
    /// One framer configuration per port.
    pub ports: Vec<FramerConfig>,
    /// The Statistic Unit, if the board has one (`BoardTop`'s `S = 1`).
    pub statistics: Option<BoardStatistics>,
}

/// A board's Statistic Unit (board.md "Statistic Unit", the golden model's
/// `StatsConfig` without an RDHPU): on from reset at intervals of
/// `2^interval_log2` ticks (6..=31), its path's share of the ports
/// `1/2^share_log2` (1..=8) and its burst of records (1..=16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardStatistics {
    pub interval_log2: u8,
    pub share_log2: u8,
    pub burst_records: u32,
}

impl Default for BoardStatistics {
    /// board.md's defaults: `k = 20`, `s = 5`, a burst of 4.
    fn default() -> BoardStatistics {
        BoardStatistics {
            interval_log2: 20,
            share_log2: 5,
            burst_records: 4,
        }
    }
}

impl BoardTopConfig {
    /// board.md's defaults for `geometry` and `ports` ports: the default
    /// config window, `max_words` 360, idle flush 65536 ticks, the drain at
    /// the ports' line rate, format.md 5.1 addresses, broadcast destination.
    pub fn new(geometry: Geometry, ports: u8, board_id: u8, tick_ps: u16) -> BoardTopConfig {
        let line = LineGeometry {
            rank_bits: geometry.rank_bits(),
            bank_bits: geometry.bank_bits(),
            row_bits: geometry.row_bits(),
            col_line_bits: geometry.col_line_bits(),
        };
        let packetizer = PacketizerConfig {
            ports,
            ..PacketizerConfig::default()
        };
        let mut c = BoardTopConfig {
            geometry,
            capture: CaptureConfig::with_default_window(line),
            packetizer,
            board_id,
            tick_ps,
            drain_num: 0,
            drain_den: 0,
            ports: vec![],
            statistics: None,
        };
        c.set_line_rate();
        c.set_default_ports();
        c
    }

    /// The drain at the ports' payload rate (board.md "Drain rate"), less
    /// the Statistic Unit's share if the board has one: `1 - 2^-s` of it,
    /// as the golden model's `BoardConfig::set_line_rate`.
    pub fn set_line_rate(&mut self) {
        let w = self.packetizer.max_words as u64;
        self.drain_num = self.packetizer.ports as u64 * w * self.tick_ps as u64;
        self.drain_den = (4 * w + UDP_FRAME_OVERHEAD as u64) * 8000;
        if let Some(su) = &self.statistics {
            let share = 1u64 << su.share_log2;
            self.drain_num *= share - 1;
            self.drain_den *= share;
        }
    }

    /// The board with a Statistic Unit, the drain at the line rate less
    /// its share.
    pub fn with_statistics(mut self, statistics: BoardStatistics) -> BoardTopConfig {
        self.statistics = Some(statistics);
        self.set_line_rate();
        self
    }

    /// The statistics path's parameters for `lanes` lanes, if the board
    /// has the unit.
    pub fn stats_packet_config(&self, lanes: u8) -> Option<StatsPacketConfig> {
        self.statistics.map(|su| StatsPacketConfig {
            geometry: self.capture.geometry,
            lanes,
            board_id: self.board_id,
            ports: self.packetizer.ports,
            tick_ps: self.tick_ps,
            max_words: self.packetizer.max_words,
            share_log2: su.share_log2,
            burst_records: su.burst_records,
        })
    }

    /// format.md 5.1 addresses for every port.
    pub fn set_default_ports(&mut self) {
        let n = self.packetizer.ports;
        self.ports = (0..n)
            .map(|p| FramerConfig::board_default(self.board_id, p, n, self.geometry, self.tick_ps))
            .collect();
    }
}

/// The board core; see the module documentation.
#[derive(LogicBlock)]
pub struct BoardTop<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const P: usize,
    const DN: usize = 12,
    const DNP1: usize = 13,
    const S: usize = 0,
    const R: usize = 1,
    const NB: usize = 1,
    const LB: usize = 1,
> {
    pub fabric_clock: Signal<In, Clock>,
    pub eth_clock: Signal<In, Clock>,
    /// DDR command pins, one set per lane (lane 0 the earliest tick).
    pub pins: [DimmPins; L],
    // GMII transmit per port, clocked by `eth_clock`.
    pub txd: [Signal<Out, Bits<8>>; P],
    pub tx_en: [Signal<Out, Bit>; P],
    pub tx_er: [Signal<Out, Bit>; P],
    // Status and the capture chain's counters (board.md "Counters").
    pub fifo_fill: Signal<Out, Bits<32>>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub protocol_errors: Signal<Out, Bits<32>>,
    pub unknown_commands: Signal<Out, Bits<32>>,
    pub out_of_range: Signal<Out, Bits<32>>,
    pub config_events: Signal<Out, Bits<32>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub fifo_high_water: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub references_over_limit: Signal<Out, Bits<32>>,
    pub clocks_over_limit: Signal<Out, Bits<32>>,
    /// Sticky: a port buffer overflowed.
    pub packet_error: Signal<Out, Bit>,
    /// Sticky: a framer ran out of words mid-frame.
    pub frame_underrun: Signal<Out, Bit>,
    /// The Statistic Unit's records sent, refused by its credit, and lost
    /// for want of a held slot (board.md "The HDL's transport"); 0
    /// without the unit.
    pub stats_records_sent: Signal<Out, Bits<32>>,
    pub stats_records_unsent: Signal<Out, Bits<32>>,
    pub stats_overrun: Signal<Out, Bits<32>>,
    // Observation for simulation; the firmware shells leave it unconnected
    // and synthesis removes it. Per fabric clock at the packetizer: the
    // clock's tick `k L` (valid with `obs_tick_valid`), whether it popped a
    // word and whether it closed a packet (packets close in `seq` order and
    // leave at the tick of their close). `fifo_fill` is the fill level after
    // the clock `obs_fill_tick` (valid with `obs_fill_valid`), a few clocks
    // ahead of `obs_tick`.
    pub obs_tick: Signal<Out, Bits<64>>,
    pub obs_tick_valid: Signal<Out, Bit>,
    pub obs_pop: Signal<Out, Bit>,
    pub obs_close: Signal<Out, Bit>,
    pub obs_fill_tick: Signal<Out, Bits<64>>,
    pub obs_fill_valid: Signal<Out, Bit>,
    // With the unit: the tick of its counting stage (valid with
    // `obs_stats_tick_valid`) and the open interval's end tick there (0
    // while it is off); without it, all 0.
    pub obs_stats_tick: Signal<Out, Bits<64>>,
    pub obs_stats_tick_valid: Signal<Out, Bit>,
    pub obs_stats_end: Signal<Out, Bits<64>>,
    drain_num: Constant<Bits<32>>,
    drain_den: Constant<Bits<32>>,
    capture: Capture<L, E, B, AB>,
    /// Public so that co-simulation can see when packets close.
    pub packetizer: Packetizer<L>,
    ports: [EthPort<DN, DNP1, S>; P],
    /// The unit, and its taps packed (`statistics::unit`): the shifts of
    /// each lane's and slot's taps, the packed vectors.
    su: [StatisticUnit<L, E, R, NB, LB>; S],
    tap_lane: [LaneTap; L],
    tap_slot: [SlotTap; E],
    lane_taps: [Signal<Local, Bits<LANE_TAPS_BITS>>; S],
    slot_taps: [Signal<Local, Bits<SLOT_TAPS_BITS>>; S],
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const P: usize,
        const DN: usize,
        const DNP1: usize,
        const S: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > BoardTop<L, E, B, AB, P, DN, DNP1, S, R, NB, LB>
{
    pub fn new(config: &BoardTopConfig) -> Self {
        assert_eq!(
            config.statistics.is_some() as usize,
            S,
            "S = 1 exactly for a board with the Statistic Unit"
        );
        let path = config.stats_packet_config(L as u8);
        if let Some(path) = &path {
            // The unit's records are written to a port's statistics FIFO
            // faster than the port sends them; the credit lets `burst` of
            // them come back to back, so the FIFO holds that many whole.
            let plan = path.plan();
            let words = plan.words + 12 * plan.parts;
            assert!(
                u64::from(path.burst_records) * words <= 1 << DN,
                "a port's statistics FIFO must hold a burst of records"
            );
        }
        assert_eq!(config.packetizer.ports as usize, P, "ports");
        assert_eq!(config.ports.len(), P, "one framer configuration per port");
        assert!(
            config.drain_num * (L as u64) < config.drain_den,
            "at most one pop per fabric clock (L num < den)"
        );
        assert!(config.drain_den < 1 << 32);
        assert!(
            2 * config.packetizer.max_words as usize <= 1 << DN,
            "a port's data FIFO must hold two packets"
        );
        Self {
            fabric_clock: Default::default(),
            eth_clock: Default::default(),
            pins: crate::pins::lanes(),
            txd: std::array::from_fn(|_| Default::default()),
            tx_en: std::array::from_fn(|_| Default::default()),
            tx_er: std::array::from_fn(|_| Default::default()),
            fifo_fill: Default::default(),
            events_dropped: Default::default(),
            protocol_errors: Default::default(),
            unknown_commands: Default::default(),
            out_of_range: Default::default(),
            config_events: Default::default(),
            lost_words: Default::default(),
            fifo_high_water: Default::default(),
            time_fillers: Default::default(),
            time_overflows: Default::default(),
            references_over_limit: Default::default(),
            clocks_over_limit: Default::default(),
            packet_error: Default::default(),
            frame_underrun: Default::default(),
            stats_records_sent: Default::default(),
            stats_records_unsent: Default::default(),
            stats_overrun: Default::default(),
            obs_tick: Default::default(),
            obs_tick_valid: Default::default(),
            obs_pop: Default::default(),
            obs_close: Default::default(),
            obs_fill_tick: Default::default(),
            obs_fill_valid: Default::default(),
            obs_stats_tick: Default::default(),
            obs_stats_tick_valid: Default::default(),
            obs_stats_end: Default::default(),
            drain_num: Constant::new((config.drain_num * L as u64).to_bits()),
            drain_den: Constant::new(config.drain_den.to_bits()),
            capture: Capture::new(config.capture),
            packetizer: Packetizer::new(config.packetizer),
            ports: std::array::from_fn(|p| EthPort::new(&config.ports[p])),
            su: std::array::from_fn(|_| {
                let su = config.statistics.expect("S = 1 has the unit");
                StatisticUnit::new(&path.expect("S = 1"), su.interval_log2.into())
            }),
            tap_lane: std::array::from_fn(LaneTap::new),
            tap_slot: std::array::from_fn(SlotTap::new),
            lane_taps: std::array::from_fn(|_| Default::default()),
            slot_taps: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const P: usize,
        const DN: usize,
        const DNP1: usize,
        const S: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > Logic for BoardTop<L, E, B, AB, P, DN, DNP1, S, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.capture.clock.next = self.fabric_clock.val();
        self.packetizer.clock.next = self.fabric_clock.val();
        for j in 0..L {
            self.capture.pins[j].cs_n.next = self.pins[j].cs_n.val();
            self.capture.pins[j].ras_n.next = self.pins[j].ras_n.val();
            self.capture.pins[j].cas_n.next = self.pins[j].cas_n.val();
            self.capture.pins[j].we_n.next = self.pins[j].we_n.val();
            self.capture.pins[j].cke.next = self.pins[j].cke.val();
            self.capture.pins[j].ba.next = self.pins[j].ba.val();
            self.capture.pins[j].addr.next = self.pins[j].addr.val();
        }
        self.capture.drain_num.next = self.drain_num.val();
        self.capture.drain_den.next = self.drain_den.val();
        self.packetizer.pop_valid.next = self.capture.pop_valid.val();
        self.packetizer.pop_word.next = self.capture.pop_word.val();
        self.packetizer.tick.next = self.capture.tick.val();
        self.packetizer.tick_valid.next = self.capture.tick_valid.val();
        self.packetizer.tracing.next = self.capture.tracing.val();
        self.packetizer.tags_only.next = self.capture.tags_only.val();
        self.packet_error.next = false;
        self.frame_underrun.next = false;
        self.stats_records_sent.next = 0.into();
        self.stats_records_unsent.next = 0.into();
        self.stats_overrun.next = 0.into();
        self.obs_stats_tick.next = 0.into();
        self.obs_stats_tick_valid.next = false;
        self.obs_stats_end.next = 0.into();
        // The taps placed in the unit's packed vectors (unread without the
        // unit, and then removed by synthesis).
        for j in 0..L {
            self.tap_lane[j].kind.next = self.capture.bus_kind[j].val();
            self.tap_lane[j].rank.next = self.capture.bus_rank[j].val();
            self.tap_lane[j].bank.next = self.capture.bus_bank[j].val();
            self.tap_lane[j].addr.next = self.capture.bus_addr[j].val();
            self.tap_lane[j].valid.next = self.capture.ref_valid[j].val();
            self.tap_lane[j].line.next = self.capture.ref_line[j].val();
        }
        for e in 0..E {
            self.tap_slot[e].valid.next = self.capture.cmd_valid[e].val();
            self.tap_slot[e].index.next = self.capture.cmd_index[e].val();
        }
        for s in 0..S {
            self.su[s].clock.next = self.fabric_clock.val();
            self.lane_taps[s].next = 0.into();
            for j in 0..L {
                self.lane_taps[s].next = self.lane_taps[s].val() | self.tap_lane[j].placed.val();
            }
            self.slot_taps[s].next = 0.into();
            for e in 0..E {
                self.slot_taps[s].next = self.slot_taps[s].val() | self.tap_slot[e].placed.val();
            }
            self.su[s].lane_taps.next = self.lane_taps[s].val();
            self.su[s].slot_taps.next = self.slot_taps[s].val();
            self.su[s].bus_tick.next = self.capture.bus_tick.val();
            self.su[s].ref_tick.next = self.capture.ref_tick.val();
            self.su[s].over.next = self.capture.over.val();
            self.su[s].over_tick.next = self.capture.over_tick.val();
            self.su[s].cmd_tick.next = self.capture.cmd_tick.val();
            self.su[s].dropped.next = self.capture.dropped.val();
            self.su[s].dropped_tick.next = self.capture.dropped_tick.val();
            self.su[s].dropped_tick_valid.next = self.capture.dropped_tick_valid.val();
            self.su[s].tracing.next = self.capture.tracing.val();
            self.su[s].tags_only.next = self.capture.tags_only.val();
            self.stats_records_sent.next = self.su[s].records_sent.val();
            self.stats_records_unsent.next = self.su[s].records_unsent.val();
            self.stats_overrun.next = self.su[s].overrun.val();
            self.obs_stats_tick.next = self.capture.dropped_tick.val();
            self.obs_stats_tick_valid.next = self.capture.dropped_tick_valid.val();
            self.obs_stats_end.next = self.su[s].open_end.val();
        }
        for p in 0..P {
            self.ports[p].fabric_clock.next = self.fabric_clock.val();
            self.ports[p].eth_clock.next = self.eth_clock.val();
            self.ports[p].word_write.next =
                self.packetizer.word_write.val() & (self.packetizer.word_port.val().index() == p);
            self.ports[p].word_data.next = self.packetizer.word_data.val();
            self.ports[p].desc_write.next = self.packetizer.desc_write_late.val()
                & (self.packetizer.desc_port_late.val().index() == p);
            self.ports[p].desc_data.next = self.packetizer.desc_data_late.val();
            self.ports[p].stats_word_write.next = false;
            self.ports[p].stats_word_data.next = 0.into();
            self.ports[p].stats_desc_write.next = false;
            self.ports[p].stats_desc_words.next = 0.into();
            self.ports[p].stats_announce.next = false;
            self.ports[p].stats_announce_count.next = 0.into();
            for s in 0..S {
                self.ports[p].stats_announce.next = self.su[s].announce.val();
                self.ports[p].stats_announce_count.next =
                    self.su[s].announce_counts.val().get_bits::<8>(8 * p);
                self.ports[p].stats_word_write.next =
                    self.su[s].word_write.val() & (self.su[s].word_port.val().index() == p);
                self.ports[p].stats_word_data.next = self.su[s].word_data.val();
                self.ports[p].stats_desc_write.next =
                    self.su[s].desc_write.val() & (self.su[s].desc_port.val().index() == p);
                self.ports[p].stats_desc_words.next = self.su[s].desc_words.val();
            }
            self.txd[p].next = self.ports[p].txd.val();
            self.tx_en[p].next = self.ports[p].tx_en.val();
            self.tx_er[p].next = self.ports[p].tx_er.val();
            if self.ports[p].overflow.val() {
                self.packet_error.next = true;
            }
            if self.ports[p].underrun.val() {
                self.frame_underrun.next = true;
            }
        }
        self.fifo_fill.next = self.capture.fill.val();
        self.obs_tick.next = self.capture.tick.val();
        self.obs_tick_valid.next = self.capture.tick_valid.val();
        self.obs_pop.next = self.capture.pop_valid.val();
        self.obs_close.next = self.packetizer.desc_write.val();
        self.obs_fill_tick.next = self.capture.push_tick.val();
        self.obs_fill_valid.next = self.capture.push_tick_valid.val();
        self.references_over_limit.next = self.capture.references_over_limit.val();
        self.clocks_over_limit.next = self.capture.clocks_over_limit.val();
        self.events_dropped.next = self.capture.events_dropped.val();
        self.protocol_errors.next = self.capture.protocol_errors.val();
        self.unknown_commands.next = self.capture.unknown_commands.val();
        self.out_of_range.next = self.capture.out_of_range.val();
        self.config_events.next = self.capture.config_events.val();
        self.lost_words.next = self.capture.lost_words.val();
        self.fifo_high_water.next = self.capture.high_water.val();
        self.time_fillers.next = self.capture.time_fillers.val();
        self.time_overflows.next = self.capture.time_overflows.val();
    }
}
