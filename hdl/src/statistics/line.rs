//! The toggles of the line-index bits between consecutive references.

use rust_hdl::prelude::*;

/// Combinational: one lane's reference against the line before it.
#[derive(LogicBlock, Default)]
pub struct LineLane {
    pub prior: Signal<In, Bits<48>>,
    pub valid: Signal<In, Bit>,
    pub line: Signal<In, Bits<48>>,
    pub after: Signal<Out, Bits<48>>,
    pub toggled: Signal<Out, Bits<48>>,
}

impl Logic for LineLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.after.next = self.prior.val();
        self.toggled.next = 0.into();
        if self.valid.val() {
            self.after.next = self.line.val();
            self.toggled.next = self.line.val() ^ self.prior.val();
        }
    }
}
