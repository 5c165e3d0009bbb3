//! Per-slot preparation of the encoder's events, a clock ahead of the
//! decision: the event's word without dt and its LINE_HI, and which slots
//! of the clock share a LINE_HI.

use rust_hdl::prelude::*;

/// Combinational: an event's word with dt 0 and its LINE_HI.
#[derive(LogicBlock, Default)]
pub struct EventBody {
    pub kind: Signal<In, Bits<2>>,
    pub write: Signal<In, Bit>,
    pub value: Signal<In, Bits<48>>,
    pub access: Signal<Out, Bit>,
    pub body: Signal<Out, Bits<32>>,
    pub line_hi: Signal<Out, Bits<21>>,
}

impl Logic for EventBody {
    #[hdl_gen]
    fn update(&mut self) {
        // ACCESS: W at bit 24, line_lo; TAG (op 2): W at bit 20, index;
        // CMD (op 3): index.
        self.access.next = self.kind.val() == 0;
        self.body.next = (bit_cast::<32, 1>(self.write.val().into()) << 24)
            | bit_cast::<32, 48>(self.value.val() & 0xFF_FFFF);
        if self.kind.val() == 1 {
            self.body.next = 0x0240_0000
                | (bit_cast::<32, 1>(self.write.val().into()) << 20)
                | bit_cast::<32, 48>(self.value.val() & 0xF_FFFF);
        }
        if self.kind.val() == 2 {
            self.body.next = 0x0260_0000 | bit_cast::<32, 48>(self.value.val() & 0x1F_FFFF);
        }
        self.line_hi.next = bit_cast::<21, 48>(self.value.val() >> 24);
    }
}
