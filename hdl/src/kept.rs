//! A vector of flip-flops that synthesis keeps: yosys merges flip-flops
//! that compute the same value, which would undo a copy made on purpose
//! (per-pin copies of a counter or an enable, a second copy of a
//! high-fanout flag for one timing-critical load). Must not hold logic.

use rust_hdl::prelude::*;

/// `N` flip-flops, `q <= d` at each rising edge, kept by synthesis even
/// when they duplicate other flip-flops. Starts at zero.
#[derive(LogicBlock, Default)]
pub struct KeptBits<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub d: Signal<In, Bits<N>>,
    pub q: Signal<Out, Bits<N>>,
}

impl<const N: usize> Logic for KeptBits<N> {
    fn update(&mut self) {
        if self.clock.pos_edge() {
            self.q.next = self.d.val();
        }
    }

    fn connect(&mut self) {
        self.q.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "\
initial begin
   q = 0;
end

(* keep *)
always @(posedge clock) begin
   q <= d;
end
"
            .into(),
        )
    }
}
