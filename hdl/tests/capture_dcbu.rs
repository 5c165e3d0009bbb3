//! DCBU: pin decoding per the JEDEC DDR3 truth table, lanes in order, and
//! its generated Verilog.

use hmtt_hdl::dcbu::{kind, CommandPins, Dcbu};
use rust_hdl::prelude::*;

#[test]
fn dcbu_verilog_passes_yosys() {
    for lanes in [1usize, 4] {
        let vlog = match lanes {
            1 => {
                let mut uut = Dcbu::<1>::default();
                uut.connect_all();
                generate_verilog(&uut)
            }
            _ => {
                let mut uut = Dcbu::<4>::default();
                uut.connect_all();
                generate_verilog(&uut)
            }
        };
        yosys_validate(&format!("hmtt_dcbu_l{lanes}"), &vlog).unwrap();
    }
}
