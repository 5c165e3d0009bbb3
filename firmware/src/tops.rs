//! Per-board top levels: clocks, deserialization of the DIMM's
//! command/address pins, Ethernet pin drivers and the pin names the
//! constraints in `constraints/` refer to, around a trace core.
//!
//! Two cores exist: the board's logic from `hmtt-hdl` (its board top) and a
//! flow probe (a placeholder that folds the sampled pins into a counter on
//! the Ethernet pins) that only proves the tool flow. Reports and file
//! names say which one was built; a probe bitstream is never the board.

use crate::board::Board;
use crate::error::FirmwareError;
use crate::primitives::{
    Ecp5CommandClocking, Ecp5CommandDeserializer, Ecp5RgmiiTx, Ice40ClockForward, CA_BITS,
};
use rust_hdl::prelude::*;

/// Which core goes inside the board's I/O shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopChoice {
    /// The board's logic from `hmtt-hdl`.
    Board,
    /// The flow probe placeholder.
    FlowProbe,
}

/// Generated Verilog of a top level and what it is.
pub struct GeneratedTop {
    pub name: &'static str,
    pub placeholder: bool,
    pub note: &'static str,
    pub verilog: String,
}

/// PLACEHOLDER core: not the board's logic. It keeps every sampled pin
/// alive (folded into a register) and drives the Ethernet ports with a
/// counter mixed with that fold, so synthesis keeps the I/O and both clock
/// domains and place and route has something to time.
#[derive(LogicBlock, Default)]
pub struct FlowProbeCore {
    pub clock: Signal<In, Clock>,
    pub eth_clock: Signal<In, Clock>,
    pub lane0: Signal<In, Bits<CA_BITS>>,
    pub lane1: Signal<In, Bits<CA_BITS>>,
    pub lane2: Signal<In, Bits<CA_BITS>>,
    pub lane3: Signal<In, Bits<CA_BITS>>,
    pub gmii_txd0: Signal<Out, Bits<8>>,
    pub gmii_txd1: Signal<Out, Bits<8>>,
    pub gmii_txd2: Signal<Out, Bits<8>>,
    pub gmii_tx_en: Signal<Out, Bits<3>>,
    pub gmii_tx_er: Signal<Out, Bits<3>>,
    fold: DFF<Bits<32>>,
    sync0: DFF<Bits<8>>,
    sync1: DFF<Bits<8>>,
    counter: DFF<Bits<32>>,
    txd0: DFF<Bits<8>>,
    txd1: DFF<Bits<8>>,
    txd2: DFF<Bits<8>>,
}

impl Logic for FlowProbeCore {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, fold);
        dff_setup!(self, eth_clock, sync0, sync1, counter, txd0, txd1, txd2);
        self.fold.d.next = (self.fold.q.val() << 1)
            ^ bit_cast::<32, 1>(self.fold.q.val().get_bit(31).into())
            ^ bit_cast::<32, CA_BITS>(self.lane0.val())
            ^ (bit_cast::<32, CA_BITS>(self.lane1.val()) << 2)
            ^ (bit_cast::<32, CA_BITS>(self.lane2.val()) << 4)
            ^ (bit_cast::<32, CA_BITS>(self.lane3.val()) << 6);
        self.sync0.d.next = self.fold.q.val().get_bits::<8>(24);
        self.sync1.d.next = self.sync0.q.val();
        self.counter.d.next = self.counter.q.val() + 1;
        self.txd0.d.next = self.counter.q.val().get_bits::<8>(0) ^ self.sync1.q.val();
        self.txd1.d.next = self.counter.q.val().get_bits::<8>(8) ^ self.sync1.q.val();
        self.txd2.d.next = self.counter.q.val().get_bits::<8>(16) ^ self.sync1.q.val();
        self.gmii_txd0.next = self.txd0.q.val();
        self.gmii_txd1.next = self.txd1.q.val();
        self.gmii_txd2.next = self.txd2.q.val();
        self.gmii_tx_en.next = self.counter.q.val().get_bits::<3>(24);
        self.gmii_tx_er.next = self.counter.q.val().get_bits::<3>(27);
    }
}

/// ECP5 reference board with the flow probe inside (PLACEHOLDER core):
/// DDR3 command/address pins deserialized 1:4 (L = 4 at 200 MHz), three
/// RGMII transmitters on the 125 MHz reference clock.
#[derive(LogicBlock, Default)]
pub struct Ecp5ProbeTop {
    /// DIMM CK divided by 2 on the board (400 MHz for DDR3-1600).
    pub ddr_ck: Signal<In, Clock>,
    pub ddr_cke: Signal<In, Bit>,
    pub ddr_cs_n: Signal<In, Bits<2>>,
    pub ddr_ras_n: Signal<In, Bit>,
    pub ddr_cas_n: Signal<In, Bit>,
    pub ddr_we_n: Signal<In, Bit>,
    pub ddr_ba: Signal<In, Bits<3>>,
    pub ddr_a: Signal<In, Bits<16>>,
    pub ddr_odt: Signal<In, Bit>,
    pub ref_clk_125: Signal<In, Clock>,
    pub eth0_txc: Signal<Out, Bit>,
    pub eth0_tx_ctl: Signal<Out, Bit>,
    pub eth0_txd: Signal<Out, Bits<4>>,
    pub eth1_txc: Signal<Out, Bit>,
    pub eth1_tx_ctl: Signal<Out, Bit>,
    pub eth1_txd: Signal<Out, Bits<4>>,
    pub eth2_txc: Signal<Out, Bit>,
    pub eth2_tx_ctl: Signal<Out, Bit>,
    pub eth2_txd: Signal<Out, Bits<4>>,
    /// PHY reset, released when the command clock's PLL has locked.
    pub eth_rst_n: Signal<Out, Bit>,
    fabric_clk: Signal<Local, Clock>,
    clocking: Ecp5CommandClocking,
    deserializer: Ecp5CommandDeserializer,
    core: FlowProbeCore,
    rgmii0: Ecp5RgmiiTx,
    rgmii1: Ecp5RgmiiTx,
    rgmii2: Ecp5RgmiiTx,
}

impl Logic for Ecp5ProbeTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.clocking.ck_in.next = self.ddr_ck.val();
        self.fabric_clk.next = self.clocking.sclk.val();
        self.deserializer.eclk.next = self.clocking.eclk.val();
        self.deserializer.sclk.next = self.fabric_clk.val();
        self.deserializer.cke.next = self.ddr_cke.val();
        self.deserializer.cs_n.next = self.ddr_cs_n.val();
        self.deserializer.ras_n.next = self.ddr_ras_n.val();
        self.deserializer.cas_n.next = self.ddr_cas_n.val();
        self.deserializer.we_n.next = self.ddr_we_n.val();
        self.deserializer.ba.next = self.ddr_ba.val();
        self.deserializer.a.next = self.ddr_a.val();
        self.deserializer.odt.next = self.ddr_odt.val();
        self.core.clock.next = self.fabric_clk.val();
        self.core.eth_clock.next = self.ref_clk_125.val();
        self.core.lane0.next = self.deserializer.lane0.val();
        self.core.lane1.next = self.deserializer.lane1.val();
        self.core.lane2.next = self.deserializer.lane2.val();
        self.core.lane3.next = self.deserializer.lane3.val();
        self.rgmii0.clock.next = self.ref_clk_125.val();
        self.rgmii1.clock.next = self.ref_clk_125.val();
        self.rgmii2.clock.next = self.ref_clk_125.val();
        self.rgmii0.gmii_txd.next = self.core.gmii_txd0.val();
        self.rgmii1.gmii_txd.next = self.core.gmii_txd1.val();
        self.rgmii2.gmii_txd.next = self.core.gmii_txd2.val();
        self.rgmii0.gmii_tx_en.next = self.core.gmii_tx_en.val().get_bit(0);
        self.rgmii1.gmii_tx_en.next = self.core.gmii_tx_en.val().get_bit(1);
        self.rgmii2.gmii_tx_en.next = self.core.gmii_tx_en.val().get_bit(2);
        self.rgmii0.gmii_tx_er.next = self.core.gmii_tx_er.val().get_bit(0);
        self.rgmii1.gmii_tx_er.next = self.core.gmii_tx_er.val().get_bit(1);
        self.rgmii2.gmii_tx_er.next = self.core.gmii_tx_er.val().get_bit(2);
        self.eth0_txc.next = self.rgmii0.txc.val();
        self.eth0_tx_ctl.next = self.rgmii0.tx_ctl.val();
        self.eth0_txd.next = self.rgmii0.txd.val();
        self.eth1_txc.next = self.rgmii1.txc.val();
        self.eth1_tx_ctl.next = self.rgmii1.tx_ctl.val();
        self.eth1_txd.next = self.rgmii1.txd.val();
        self.eth2_txc.next = self.rgmii2.txc.val();
        self.eth2_tx_ctl.next = self.rgmii2.tx_ctl.val();
        self.eth2_txd.next = self.rgmii2.txd.val();
        self.eth_rst_n.next = self.clocking.locked.val();
    }
}

/// iCE40-HX8K small build with the flow probe inside (PLACEHOLDER core):
/// DDR-200 command/address pins sampled directly on the DIMM clock (L = 1),
/// one GMII transmitter on the 125 MHz reference clock.
#[derive(LogicBlock)]
pub struct Ice40ProbeTop {
    /// DIMM CK (100 MHz for DDR-200), the fabric clock.
    pub ddr_ck: Signal<In, Clock>,
    pub ddr_cke: Signal<In, Bit>,
    pub ddr_cs_n: Signal<In, Bits<2>>,
    pub ddr_ras_n: Signal<In, Bit>,
    pub ddr_cas_n: Signal<In, Bit>,
    pub ddr_we_n: Signal<In, Bit>,
    pub ddr_ba: Signal<In, Bits<3>>,
    pub ddr_a: Signal<In, Bits<16>>,
    pub ddr_odt: Signal<In, Bit>,
    pub ref_clk_125: Signal<In, Clock>,
    pub eth_gtx_clk: Signal<Out, Bit>,
    pub eth_txd: Signal<Out, Bits<8>>,
    pub eth_tx_en: Signal<Out, Bit>,
    pub eth_tx_er: Signal<Out, Bit>,
    pub eth_rst_n: Signal<Out, Bit>,
    core: FlowProbeCore,
    gtx_forward: Ice40ClockForward,
    no_lane: Constant<Bits<CA_BITS>>,
    released: Constant<Bit>,
}

impl Default for Ice40ProbeTop {
    fn default() -> Self {
        Ice40ProbeTop {
            ddr_ck: Default::default(),
            ddr_cke: Default::default(),
            ddr_cs_n: Default::default(),
            ddr_ras_n: Default::default(),
            ddr_cas_n: Default::default(),
            ddr_we_n: Default::default(),
            ddr_ba: Default::default(),
            ddr_a: Default::default(),
            ddr_odt: Default::default(),
            ref_clk_125: Default::default(),
            eth_gtx_clk: Default::default(),
            eth_txd: Default::default(),
            eth_tx_en: Default::default(),
            eth_tx_er: Default::default(),
            eth_rst_n: Default::default(),
            core: Default::default(),
            gtx_forward: Default::default(),
            no_lane: Constant::new(0u64.to_bits()),
            released: Constant::new(true),
        }
    }
}

impl Logic for Ice40ProbeTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.core.clock.next = self.ddr_ck.val();
        self.core.eth_clock.next = self.ref_clk_125.val();
        self.core.lane0.next = bit_cast::<CA_BITS, 1>(self.ddr_cke.val().into())
            | (bit_cast::<CA_BITS, 2>(self.ddr_cs_n.val()) << 1)
            | (bit_cast::<CA_BITS, 1>(self.ddr_ras_n.val().into()) << 3)
            | (bit_cast::<CA_BITS, 1>(self.ddr_cas_n.val().into()) << 4)
            | (bit_cast::<CA_BITS, 1>(self.ddr_we_n.val().into()) << 5)
            | (bit_cast::<CA_BITS, 3>(self.ddr_ba.val()) << 6)
            | (bit_cast::<CA_BITS, 16>(self.ddr_a.val()) << 9)
            | (bit_cast::<CA_BITS, 1>(self.ddr_odt.val().into()) << 25);
        self.core.lane1.next = self.no_lane.val();
        self.core.lane2.next = self.no_lane.val();
        self.core.lane3.next = self.no_lane.val();
        self.gtx_forward.clock.next = self.ref_clk_125.val();
        self.eth_gtx_clk.next = self.gtx_forward.pin.val();
        self.eth_txd.next = self.core.gmii_txd0.val();
        self.eth_tx_en.next = self.core.gmii_tx_en.val().get_bit(0);
        self.eth_tx_er.next = self.core.gmii_tx_er.val().get_bit(0);
        self.eth_rst_n.next = self.released.val();
    }
}

fn checked_verilog<U: Block>(uut: &mut U) -> Result<String, FirmwareError> {
    uut.connect_all();
    check_all(uut).map_err(|e| FirmwareError::HdlCheck(format!("{e:?}")))?;
    Ok(generate_verilog_unchecked(uut))
}

/// The Verilog of `board`'s top with the chosen core (module `top`).
pub fn generate(board: Board, choice: TopChoice) -> Result<GeneratedTop, FirmwareError> {
    match (board, choice) {
        (Board::Ecp5_85f, TopChoice::FlowProbe) => Ok(GeneratedTop {
            name: "ecp5-flow-probe",
            placeholder: true,
            note: "ECP5 I/O shell (PLL, IDDRX2F 1:4, RGMII ODDRX1F) around the flow probe",
            verilog: checked_verilog(&mut Ecp5ProbeTop::default())?,
        }),
        (Board::Ice40Hx8k, TopChoice::FlowProbe) => Ok(GeneratedTop {
            name: "ice40-flow-probe",
            placeholder: true,
            note: "iCE40 I/O shell (GMII, SB_IO clock forward) around the flow probe",
            verilog: checked_verilog(&mut Ice40ProbeTop::default())?,
        }),
        (_, TopChoice::Board) => Err(FirmwareError::BoardCoreMissing),
    }
}
