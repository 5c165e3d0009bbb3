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
use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
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
    pub status: Signal<Out, Bits<4>>,
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
        self.status.next = self.fold.q.val().get_bits::<4>(0);
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
    pub led: Signal<Out, Bits<4>>,
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
        self.led.next = self.core.status.val();
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
    pub led: Signal<Out, Bits<4>>,
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
            led: Default::default(),
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
        self.led.next = self.core.status.val();
    }
}

/// One tick's packed command/address pins (`primitives::CA_LAYOUT`) as the
/// board core's per-lane inputs: chip selects widened to 4 ranks (unused
/// ones deselected), bank address to 4 bits, address to 18 bits.
#[derive(LogicBlock)]
pub struct LaneUnpack {
    pub lane: Signal<In, Bits<CA_BITS>>,
    pub cs_n: Signal<Out, Bits<4>>,
    pub ras_n: Signal<Out, Bit>,
    pub cas_n: Signal<Out, Bit>,
    pub we_n: Signal<Out, Bit>,
    pub cke: Signal<Out, Bit>,
    pub ba: Signal<Out, Bits<4>>,
    pub addr: Signal<Out, Bits<18>>,
    absent_ranks: Constant<Bits<4>>,
}

impl Default for LaneUnpack {
    fn default() -> Self {
        LaneUnpack {
            lane: Default::default(),
            cs_n: Default::default(),
            ras_n: Default::default(),
            cas_n: Default::default(),
            we_n: Default::default(),
            cke: Default::default(),
            ba: Default::default(),
            addr: Default::default(),
            absent_ranks: Constant::new(0b1100u64.to_bits()),
        }
    }
}

impl Logic for LaneUnpack {
    #[hdl_gen]
    fn update(&mut self) {
        self.cke.next = self.lane.val().get_bit(0);
        self.cs_n.next =
            bit_cast::<4, 2>(self.lane.val().get_bits::<2>(1)) | self.absent_ranks.val();
        self.ras_n.next = self.lane.val().get_bit(3);
        self.cas_n.next = self.lane.val().get_bit(4);
        self.we_n.next = self.lane.val().get_bit(5);
        self.ba.next = bit_cast::<4, 3>(self.lane.val().get_bits::<3>(6));
        self.addr.next = bit_cast::<18, 16>(self.lane.val().get_bits::<16>(9));
    }
}

/// ECP5 board core: L = 4, TX FIFO 32 banks x 512 words = 16384 words
/// (board.md's default), 3 ports.
pub type Ecp5Core = BoardTop<4, 32, 9, 3>;
/// iCE40 board core: L = 1, TX FIFO 8 banks x 256 words = 2048 words, 1 port.
pub type Ice40Core = BoardTop<1, 8, 8, 1>;

/// The ECP5 core's parameters: DDR3-4G geometry (2 ranks), tCK 1250 ps,
/// 3 ports, board id 0.
pub fn ecp5_core_config() -> BoardTopConfig {
    BoardTopConfig::new(Geometry::ddr3_default(), 3, 0, 1250)
}

/// The iCE40 core's parameters: DDR-512M geometry, tCK 10 ns (DDR-200),
/// 1 port, board id 0.
pub fn ice40_core_config() -> BoardTopConfig {
    BoardTopConfig::new(
        Geometry::preset("ddr-512m").expect("preset exists"),
        1,
        0,
        10_000,
    )
}

/// The reference board: the ECP5 I/O shell around `hmtt-hdl`'s board core.
#[derive(LogicBlock)]
pub struct Ecp5BoardTop {
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
    /// Status LEDs: PLL locked, events dropped, packet error, frame underrun.
    pub led: Signal<Out, Bits<4>>,
    fabric_clk: Signal<Local, Clock>,
    clocking: Ecp5CommandClocking,
    deserializer: Ecp5CommandDeserializer,
    unpack: [LaneUnpack; 4],
    core: Ecp5Core,
    rgmii: [Ecp5RgmiiTx; 3],
}

impl Ecp5BoardTop {
    pub fn new(config: &BoardTopConfig) -> Self {
        Ecp5BoardTop {
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
            eth0_txc: Default::default(),
            eth0_tx_ctl: Default::default(),
            eth0_txd: Default::default(),
            eth1_txc: Default::default(),
            eth1_tx_ctl: Default::default(),
            eth1_txd: Default::default(),
            eth2_txc: Default::default(),
            eth2_tx_ctl: Default::default(),
            eth2_txd: Default::default(),
            eth_rst_n: Default::default(),
            led: Default::default(),
            fabric_clk: Default::default(),
            clocking: Default::default(),
            deserializer: Default::default(),
            unpack: Default::default(),
            core: Ecp5Core::new(config),
            rgmii: Default::default(),
        }
    }
}

impl Logic for Ecp5BoardTop {
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
        self.unpack[0].lane.next = self.deserializer.lane0.val();
        self.unpack[1].lane.next = self.deserializer.lane1.val();
        self.unpack[2].lane.next = self.deserializer.lane2.val();
        self.unpack[3].lane.next = self.deserializer.lane3.val();
        self.core.fabric_clock.next = self.fabric_clk.val();
        self.core.eth_clock.next = self.ref_clk_125.val();
        for j in 0..4 {
            self.core.cs_n[j].next = self.unpack[j].cs_n.val();
            self.core.ras_n[j].next = self.unpack[j].ras_n.val();
            self.core.cas_n[j].next = self.unpack[j].cas_n.val();
            self.core.we_n[j].next = self.unpack[j].we_n.val();
            self.core.cke[j].next = self.unpack[j].cke.val();
            self.core.ba[j].next = self.unpack[j].ba.val();
            self.core.addr[j].next = self.unpack[j].addr.val();
        }
        for p in 0..3 {
            self.rgmii[p].clock.next = self.ref_clk_125.val();
            self.rgmii[p].gmii_txd.next = self.core.txd[p].val();
            self.rgmii[p].gmii_tx_en.next = self.core.tx_en[p].val();
            self.rgmii[p].gmii_tx_er.next = self.core.tx_er[p].val();
        }
        self.eth0_txc.next = self.rgmii[0].txc.val();
        self.eth0_tx_ctl.next = self.rgmii[0].tx_ctl.val();
        self.eth0_txd.next = self.rgmii[0].txd.val();
        self.eth1_txc.next = self.rgmii[1].txc.val();
        self.eth1_tx_ctl.next = self.rgmii[1].tx_ctl.val();
        self.eth1_txd.next = self.rgmii[1].txd.val();
        self.eth2_txc.next = self.rgmii[2].txc.val();
        self.eth2_tx_ctl.next = self.rgmii[2].tx_ctl.val();
        self.eth2_txd.next = self.rgmii[2].txd.val();
        self.eth_rst_n.next = self.clocking.locked.val();
        self.led.next = bit_cast::<4, 1>(self.clocking.locked.val().into())
            | (bit_cast::<4, 1>(self.core.events_dropped.val().any().into()) << 1)
            | (bit_cast::<4, 1>(self.core.packet_error.val().into()) << 2)
            | (bit_cast::<4, 1>(self.core.frame_underrun.val().into()) << 3);
    }
}

/// The small build: the iCE40 I/O shell around `hmtt-hdl`'s board core.
#[derive(LogicBlock)]
pub struct Ice40BoardTop {
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
    /// Status LEDs: FIFO not empty, events dropped, packet error, frame underrun.
    pub led: Signal<Out, Bits<4>>,
    unpack: LaneUnpack,
    core: Ice40Core,
    gtx_forward: Ice40ClockForward,
    released: Constant<Bit>,
}

impl Ice40BoardTop {
    pub fn new(config: &BoardTopConfig) -> Self {
        Ice40BoardTop {
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
            led: Default::default(),
            unpack: Default::default(),
            core: Ice40Core::new(config),
            gtx_forward: Default::default(),
            released: Constant::new(true),
        }
    }
}

impl Logic for Ice40BoardTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.unpack.lane.next = bit_cast::<CA_BITS, 1>(self.ddr_cke.val().into())
            | (bit_cast::<CA_BITS, 2>(self.ddr_cs_n.val()) << 1)
            | (bit_cast::<CA_BITS, 1>(self.ddr_ras_n.val().into()) << 3)
            | (bit_cast::<CA_BITS, 1>(self.ddr_cas_n.val().into()) << 4)
            | (bit_cast::<CA_BITS, 1>(self.ddr_we_n.val().into()) << 5)
            | (bit_cast::<CA_BITS, 3>(self.ddr_ba.val()) << 6)
            | (bit_cast::<CA_BITS, 16>(self.ddr_a.val()) << 9)
            | (bit_cast::<CA_BITS, 1>(self.ddr_odt.val().into()) << 25);
        self.core.fabric_clock.next = self.ddr_ck.val();
        self.core.eth_clock.next = self.ref_clk_125.val();
        self.core.cs_n[0].next = self.unpack.cs_n.val();
        self.core.ras_n[0].next = self.unpack.ras_n.val();
        self.core.cas_n[0].next = self.unpack.cas_n.val();
        self.core.we_n[0].next = self.unpack.we_n.val();
        self.core.cke[0].next = self.unpack.cke.val();
        self.core.ba[0].next = self.unpack.ba.val();
        self.core.addr[0].next = self.unpack.addr.val();
        self.gtx_forward.clock.next = self.ref_clk_125.val();
        self.eth_gtx_clk.next = self.gtx_forward.pin.val();
        self.eth_txd.next = self.core.txd[0].val();
        self.eth_tx_en.next = self.core.tx_en[0].val();
        self.eth_tx_er.next = self.core.tx_er[0].val();
        self.eth_rst_n.next = self.released.val();
        self.led.next = bit_cast::<4, 1>(self.core.fifo_fill.val().any().into())
            | (bit_cast::<4, 1>(self.core.events_dropped.val().any().into()) << 1)
            | (bit_cast::<4, 1>(self.core.packet_error.val().into()) << 2)
            | (bit_cast::<4, 1>(self.core.frame_underrun.val().into()) << 3);
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
        (Board::Ecp5_85f, TopChoice::Board) => Ok(GeneratedTop {
            name: "ecp5-board",
            placeholder: false,
            note: "hmtt-hdl BoardTop<L=4, FIFO 32x512 = 16384 words, 3 ports>, DDR3-4G geometry, tCK 1250 ps",
            verilog: checked_verilog(&mut Ecp5BoardTop::new(&ecp5_core_config()))?,
        }),
        (Board::Ice40Hx8k, TopChoice::Board) => Ok(GeneratedTop {
            name: "ice40-board",
            placeholder: false,
            note: "hmtt-hdl BoardTop<L=1, FIFO 8x256 = 2048 words, 1 port>, DDR-512M geometry, tCK 10 ns",
            verilog: checked_verilog(&mut Ice40BoardTop::new(&ice40_core_config()))?,
        }),
    }
}
