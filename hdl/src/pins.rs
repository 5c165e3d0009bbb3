//! The DIMM's command/address pin group of one command clock (one lane), as
//! one interface: the DCBU, the capture chain, the board core and the
//! firmware shells all carry `[DimmPins; L]`, lane 0 the earliest tick.
//!
//! rust-hdl 0.46 has no `LogicLink` for arrays, so an array of interfaces
//! cannot be `link!`ed or `join!`ed as a whole; it is wired field by field
//! (`DimmPins::drive_from` in a Rust model, or per field in `#[hdl_gen]`).
//! In the Verilog a lane's pins are `pins$j$cs_n` and so on.

use rust_hdl::prelude::*;

/// One tick's pins, active-low signals as on the DIMM.
#[derive(LogicInterface, Default)]
pub struct DimmPins {
    /// Chip selects, one bit per rank (active low); unused ranks tied high.
    pub cs_n: Signal<In, Bits<4>>,
    pub ras_n: Signal<In, Bit>,
    pub cas_n: Signal<In, Bit>,
    pub we_n: Signal<In, Bit>,
    pub cke: Signal<In, Bit>,
    /// Bank address; DDR4 bank-group bits are the high bits.
    pub ba: Signal<In, Bits<4>>,
    pub addr: Signal<In, Bits<18>>,
}

/// `L` lanes of pins.
pub fn lanes<const L: usize>() -> [DimmPins; L] {
    std::array::from_fn(|_| Default::default())
}
