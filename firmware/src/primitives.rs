//! Vendor primitives the board tops need, as rust-hdl wrappers: ECP5
//! clocking (EHXPLLL, ECLKSYNCB, CLKDIVF), the 1:4 command/address deserializer
//! (IDDRX2F) and RGMII's DDR outputs (ODDRX1F); iCE40 clocking (SB_PLL40_PAD),
//! the command/address pins' DDR input registers and clock forwarding (SB_IO). They are not simulated: `update` does
//! nothing, and yosys' `synth_ecp5`/`synth_ice40` supply the cell
//! definitions, so the wrappers declare no black boxes of their own.

use rust_hdl::prelude::*;

/// DIMM clock to the deserializer's and the core's clocks: the PLL locks to
/// the pin (DIMM CK/2, 400 MHz for DDR3-1600) and drives the edge clock at
/// the same frequency (CLKOP), sampling both edges, i.e. once per DDR tCK;
/// CLKDIVF divides it by 2 into `sclk` (200 MHz, the deserializers' 4
/// ticks per clock). CLKOS, a quarter of CLKOP from the same VCO (100 MHz,
/// zero phase at the PLL), clocks the core (8 ticks per clock, through
/// `widen::LaneWidener`, which does not rely on the phase).
#[derive(LogicBlock, Default)]
pub struct Ecp5CommandClocking {
    pub ck_in: Signal<In, Clock>,
    pub eclk: Signal<Out, Clock>,
    pub sclk: Signal<Out, Clock>,
    pub core_clk: Signal<Out, Clock>,
    pub locked: Signal<Out, Bit>,
}

impl Logic for Ecp5CommandClocking {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.eclk.connect();
        self.sclk.connect();
        self.core_clk.connect();
        self.locked.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
wire pll_clkop;
// VCO = 400 MHz * CLKOP_DIV (2) = 800 MHz, inside EHXPLLL's 400-800 MHz range;
// CLKOS = VCO / 8 = 100 MHz. CPHASE = DIV - 1 is zero phase.
(* FREQUENCY_PIN_CLKI="400.000000", FREQUENCY_PIN_CLKOP="400.000000", FREQUENCY_PIN_CLKOS="100.000000" *)
EHXPLLL #(
    .CLKI_DIV(1), .CLKFB_DIV(1), .CLKOP_DIV(2), .CLKOP_CPHASE(1), .CLKOP_FPHASE(0),
    .CLKOS_DIV(8), .CLKOS_CPHASE(7), .CLKOS_FPHASE(0),
    .CLKOP_ENABLE("ENABLED"), .CLKOS_ENABLE("ENABLED"), .FEEDBK_PATH("CLKOP")
) pll (
    .CLKI(ck_in), .CLKFB(pll_clkop), .CLKOP(pll_clkop), .CLKOS(core_clk), .LOCK(locked),
    .RST(1'b0), .STDBY(1'b0), .PHASESEL0(1'b0), .PHASESEL1(1'b0), .PHASEDIR(1'b0),
    .PHASESTEP(1'b0), .PHASELOADREG(1'b0), .PLLWAKESYNC(1'b0), .ENCLKOP(1'b0)
);
ECLKSYNCB eclk_sync (.ECLKI(pll_clkop), .STOP(1'b0), .ECLKO(eclk));
CLKDIVF #(.DIV("2.0")) sclk_div (.CLKI(eclk), .RST(1'b0), .ALIGNWD(1'b0), .CDIVX(sclk));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// The DIMM's command/address pins, each deserialized 1:4 by an IDDRX2F on
/// the edge clock. `laneJ` holds the pins of the J-th tick of a fabric
/// clock (lane 0 the earliest), packed as [`CA_LAYOUT`] says.
#[derive(LogicBlock, Default)]
pub struct Ecp5CommandDeserializer {
    pub eclk: Signal<In, Clock>,
    pub sclk: Signal<In, Clock>,
    pub cke: Signal<In, Bit>,
    pub cs_n: Signal<In, Bits<2>>,
    pub ras_n: Signal<In, Bit>,
    pub cas_n: Signal<In, Bit>,
    pub we_n: Signal<In, Bit>,
    pub ba: Signal<In, Bits<3>>,
    pub a: Signal<In, Bits<16>>,
    pub odt: Signal<In, Bit>,
    pub lane0: Signal<Out, Bits<CA_BITS>>,
    pub lane1: Signal<Out, Bits<CA_BITS>>,
    pub lane2: Signal<Out, Bits<CA_BITS>>,
    pub lane3: Signal<Out, Bits<CA_BITS>>,
}

/// Width of one tick's command/address pins.
pub const CA_BITS: usize = 26;

/// Bit layout of a packed command/address lane, least significant first.
pub const CA_LAYOUT: &str =
    "{odt[25], a[24:9], ba[8:6], we_n[5], cas_n[4], ras_n[3], cs_n[2:1], cke[0]}";

impl Logic for Ecp5CommandDeserializer {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.lane0.connect();
        self.lane1.connect();
        self.lane2.connect();
        self.lane3.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
wire [25:0] pins = {odt, a, ba, we_n, cas_n, ras_n, cs_n, cke};
genvar i;
generate for (i = 0; i < 26; i = i + 1) begin : pin
    IDDRX2F iddr (.D(pins[i]), .ECLK(eclk), .SCLK(sclk), .RST(1'b0), .ALIGNWD(1'b0),
                  .Q0(lane0[i]), .Q1(lane1[i]), .Q2(lane2[i]), .Q3(lane3[i]));
end endgenerate
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// GMII byte stream to RGMII pins: data and control on both edges of the
/// 125 MHz clock (ODDRX1F), and TXC forwarded the same way. The PHYs are
/// strapped for their internal TX clock delay (RGMII-ID), so TXC leaves
/// edge-aligned.
#[derive(LogicBlock, Default)]
pub struct Ecp5RgmiiTx {
    pub clock: Signal<In, Clock>,
    pub gmii_txd: Signal<In, Bits<8>>,
    pub gmii_tx_en: Signal<In, Bit>,
    pub gmii_tx_er: Signal<In, Bit>,
    pub txc: Signal<Out, Bit>,
    pub tx_ctl: Signal<Out, Bit>,
    pub txd: Signal<Out, Bits<4>>,
}

impl Logic for Ecp5RgmiiTx {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.txc.connect();
        self.tx_ctl.connect();
        self.txd.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
// RGMII: low nibble on the rising edge, high nibble on the falling edge;
// TX_CTL is TX_EN on the rising edge and TX_EN xor TX_ER on the falling one.
genvar i;
generate for (i = 0; i < 4; i = i + 1) begin : nibble
    ODDRX1F oddr (.D0(gmii_txd[i]), .D1(gmii_txd[i + 4]), .SCLK(clock), .RST(1'b0), .Q(txd[i]));
end endgenerate
ODDRX1F ctl_oddr (.D0(gmii_tx_en), .D1(gmii_tx_en ^ gmii_tx_er), .SCLK(clock), .RST(1'b0), .Q(tx_ctl));
ODDRX1F clk_oddr (.D0(1'b1), .D1(1'b0), .SCLK(clock), .RST(1'b0), .Q(txc));
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// A clock forwarded to a pin through the iCE40 I/O cell's DDR output
/// (high on the rising edge, low on the falling one), so it leaves the chip
/// with the same delay as registered data instead of through fabric routing.
#[derive(LogicBlock, Default)]
pub struct Ice40ClockForward {
    pub clock: Signal<In, Clock>,
    pub pin: Signal<Out, Bit>,
}

impl Logic for Ice40ClockForward {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.pin.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
// PIN_TYPE 0100_01: DDR output, simple input.
SB_IO #(.PIN_TYPE(6'b010001)) forward (
    .PACKAGE_PIN(pin), .OUTPUT_CLK(clock), .CLOCK_ENABLE(1'b1),
    .D_OUT_0(1'b1), .D_OUT_1(1'b0), .OUTPUT_ENABLE(1'b1)
);
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// DIMM clock to the iCE40 core's clock: the bottom PLL, fed from its own
/// pad (R9), divides CK (100 MHz at DDR-200) by 2 (VCO 800 MHz, DIVQ 16;
/// parameters from `icepll -i 100 -o 50`). Its global output clocks the
/// command pins' DDR input registers ([`Ice40DdrInputs`]: one sample on
/// each edge, i.e. every CK cycle) and the core (2 ticks per clock).
#[derive(LogicBlock, Default)]
pub struct Ice40CommandClocking {
    /// The pad (the PLL's own input, not a fabric net).
    pub ck_pin: Signal<In, Clock>,
    pub fabric_clk: Signal<Out, Clock>,
    pub locked: Signal<Out, Bit>,
}

impl Logic for Ice40CommandClocking {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.fabric_clk.connect();
        self.locked.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
SB_PLL40_PAD #(
    .FEEDBACK_PATH("SIMPLE"), .PLLOUT_SELECT("GENCLK"),
    .DIVR(4'd0), .DIVF(7'd7), .DIVQ(3'd4), .FILTER_RANGE(3'd5)
) pll (
    .PACKAGEPIN(ck_pin), .PLLOUTGLOBAL(fabric_clk), .LOCK(locked),
    .RESETB(1'b1), .BYPASS(1'b0)
);
"#
            .into(),
            cores: String::new(),
        })
    }
}

/// The DIMM's command/address pins, each through an SB_IO input register
/// in DDR mode on the core's clock: `lane0` holds the sample taken on the
/// rising edge before the clock's own (the earlier tick), `lane1` the one
/// on the falling edge between them, packed as [`CA_LAYOUT`] says.
#[derive(LogicBlock, Default)]
pub struct Ice40DdrInputs {
    pub clock: Signal<In, Clock>,
    pub cke: Signal<In, Bit>,
    pub cs_n: Signal<In, Bits<2>>,
    pub ras_n: Signal<In, Bit>,
    pub cas_n: Signal<In, Bit>,
    pub we_n: Signal<In, Bit>,
    pub ba: Signal<In, Bits<3>>,
    pub a: Signal<In, Bits<16>>,
    pub odt: Signal<In, Bit>,
    pub lane0: Signal<Out, Bits<CA_BITS>>,
    pub lane1: Signal<Out, Bits<CA_BITS>>,
}

impl Logic for Ice40DdrInputs {
    fn update(&mut self) {}

    fn connect(&mut self) {
        self.lane0.connect();
        self.lane1.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Wrapper(Wrapper {
            code: r#"
wire [25:0] pins = {odt, a, ba, we_n, cas_n, ras_n, cs_n, cke};
// PIN_TYPE 0000_00: no output, registered DDR input (D_IN_0 on the rising
// edge, D_IN_1 on the falling edge of INPUT_CLK).
genvar i;
generate for (i = 0; i < 26; i = i + 1) begin : pin
    SB_IO #(.PIN_TYPE(6'b000000)) ddr_in (
        .PACKAGE_PIN(pins[i]), .INPUT_CLK(clock), .CLOCK_ENABLE(1'b1),
        .D_IN_0(lane0[i]), .D_IN_1(lane1[i])
    );
end endgenerate
"#
            .into(),
            cores: String::new(),
        })
    }
}
