//! RGMII transmit (the ECP5 board's PHYs): the GMII byte stream of a framer
//! at 125 MHz becomes 4 data bits and a control bit per clock edge, double
//! data rate. Rising edge: `txd[3:0]` and `TX_EN`; falling edge: `txd[7:4]`
//! and `TX_EN xor TX_ER` (RGMII 2.0). The byte on `txd` at a rising edge
//! goes out during the clock period that edge starts. `txc` forwards the
//! clock; the 2 ns data-to-clock skew is left to
//! the PHY's internal delay (RGMII-ID), set by the board's PHY straps.
//!
//! Two Verilog flavours with the same behaviour: [`DdrFlavour::Generic`]
//! (two flops and a clock-level multiplexer; for simulation and lint) and
//! [`DdrFlavour::Ecp5`] (Lattice `ODDRX1F` output registers, as the pins
//! need on the ECP5).

use rust_hdl::prelude::*;

/// Which output register the generated Verilog uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DdrFlavour {
    #[default]
    Generic,
    Ecp5,
}

#[derive(Clone, Copy, Debug, Default)]
struct DdrRegisters {
    rise_data: u8,
    rise_ctl: bool,
    fall_data: u8,
    fall_ctl: bool,
    fall_data_out: u8,
    fall_ctl_out: bool,
}

/// GMII-to-RGMII transmit converter.
#[derive(LogicBlock, Default)]
pub struct RgmiiTx {
    pub clock: Signal<In, Clock>,
    pub txd: Signal<In, Bits<8>>,
    pub tx_en: Signal<In, Bit>,
    pub tx_er: Signal<In, Bit>,
    pub rgmii_txd: Signal<Out, Bits<4>>,
    pub rgmii_tx_ctl: Signal<Out, Bit>,
    pub rgmii_txc: Signal<Out, Bit>,
    _flavour: DdrFlavour,
    _regs: DdrRegisters,
}

impl RgmiiTx {
    pub fn new(flavour: DdrFlavour) -> Self {
        RgmiiTx {
            _flavour: flavour,
            ..Default::default()
        }
    }
}

impl Logic for RgmiiTx {
    fn update(&mut self) {
        let r = &mut self._regs;
        if self.clock.pos_edge() {
            let d: u64 = self.txd.val().into();
            r.rise_data = (d & 0xf) as u8;
            r.rise_ctl = self.tx_en.val();
            r.fall_data = (d >> 4) as u8;
            r.fall_ctl = self.tx_en.val() ^ self.tx_er.val();
        }
        if self.clock.neg_edge() {
            r.fall_data_out = r.fall_data;
            r.fall_ctl_out = r.fall_ctl;
        }
        let high = self.clock.val().clk;
        let (data, ctl) = if high {
            (r.rise_data, r.rise_ctl)
        } else {
            (r.fall_data_out, r.fall_ctl_out)
        };
        self.rgmii_txd.next = (data as u64).into();
        self.rgmii_tx_ctl.next = ctl;
        self.rgmii_txc.next = high;
    }

    fn connect(&mut self) {
        self.rgmii_txd.connect();
        self.rgmii_tx_ctl.connect();
        self.rgmii_txc.connect();
    }

    fn hdl(&self) -> Verilog {
        match self._flavour {
            DdrFlavour::Generic => Verilog::Custom(
                "\
reg [3:0] rise_data;
reg [3:0] fall_data;
reg [3:0] fall_data_out;
reg rise_ctl;
reg fall_ctl;
reg fall_ctl_out;
always @(posedge clock) begin
   rise_data <= txd[3:0];
   fall_data <= txd[7:4];
   rise_ctl <= tx_en;
   fall_ctl <= tx_en ^ tx_er;
end
always @(negedge clock) begin
   fall_data_out <= fall_data;
   fall_ctl_out <= fall_ctl;
end
always @(*) begin
   rgmii_txd = clock ? rise_data : fall_data_out;
   rgmii_tx_ctl = clock ? rise_ctl : fall_ctl_out;
   rgmii_txc = clock;
end
"
                .into(),
            ),
            DdrFlavour::Ecp5 => {
                let mut v = String::from(
                    "\
wire [3:0] q_data;
wire q_ctl;
wire q_clk;
",
                );
                for i in 0..4 {
                    v += &format!(
                        "ODDRX1F oddr_txd{i} (.D0(txd[{i}]), .D1(txd[{}]), .SCLK(clock), .RST(1'b0), .Q(q_data[{i}]));\n",
                        i + 4
                    );
                }
                v += "ODDRX1F oddr_ctl (.D0(tx_en), .D1(tx_en ^ tx_er), .SCLK(clock), .RST(1'b0), .Q(q_ctl));\n";
                v += "ODDRX1F oddr_txc (.D0(1'b1), .D1(1'b0), .SCLK(clock), .RST(1'b0), .Q(q_clk));\n";
                v += "always @(*) begin\n   rgmii_txd = q_data;\n   rgmii_tx_ctl = q_ctl;\n   rgmii_txc = q_clk;\nend\n";
                Verilog::Custom(v)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_clock(uut: &mut RgmiiTx, high: bool) {
        uut.clock.next = Clock { clk: high };
        assert!(simulate(uut, 20));
    }

    #[test]
    fn both_edges_carry_the_gmii_byte_of_the_rising_edge() {
        let mut uut = RgmiiTx::new(DdrFlavour::Generic);
        uut.connect_all();
        let input: Vec<(u8, bool, bool)> = (0..64u32)
            .map(|i| ((i * 37 + 11) as u8, i % 3 != 0, i % 7 == 0))
            .collect();
        let mut seen = vec![];
        for &(d, en, er) in &input {
            uut.txd.next = (d as u64).into();
            uut.tx_en.next = en;
            uut.tx_er.next = er;
            set_clock(&mut uut, true);
            let lo: u64 = uut.rgmii_txd.val().into();
            let ctl_rise = uut.rgmii_tx_ctl.val();
            assert!(uut.rgmii_txc.val());
            set_clock(&mut uut, false);
            let hi: u64 = uut.rgmii_txd.val().into();
            let ctl_fall = uut.rgmii_tx_ctl.val();
            assert!(!uut.rgmii_txc.val());
            seen.push(((hi << 4 | lo) as u8, ctl_rise, ctl_rise ^ ctl_fall));
        }
        assert_eq!(seen, input);
    }

    #[test]
    fn generic_rgmii_is_synthesizable() {
        let mut uut = RgmiiTx::new(DdrFlavour::Generic);
        uut.connect_all();
        yosys_validate("hmtt_rgmii_tx", &generate_verilog(&uut)).unwrap();
    }
}
