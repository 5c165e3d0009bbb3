//! Per-board top levels: clocks, deserialization of the DIMM's
//! command/address pins into the core's `L` lanes, Ethernet pin drivers and
//! the pin names the constraints in `constraints/` refer to, around a trace
//! core.
//!
//! Two cores exist: the board's logic from `hmtt-hdl` (its board top) and a
//! flow probe (a placeholder that folds the sampled pins into a counter on
//! the Ethernet pins) that only proves the tool flow. Reports and file
//! names say which one was built; a probe bitstream is never the board.

use crate::board::{Board, Units};
use crate::error::FirmwareError;
use crate::primitives::{
    Ecp5CommandClocking, Ecp5CommandDeserializer, Ecp5RgmiiTx, Ice40ClockForward,
    Ice40CommandClocking, Ice40DdrInputs, CA_BITS,
};
use crate::widen::{LaneWidener, SLOW_LANES};
use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardStatistics, BoardTop, BoardTopConfig};
use hmtt_hdl::pins::DimmPins;
use rust_hdl::prelude::*;

/// Which core goes inside the board's I/O shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
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

/// PLACEHOLDER core: not the board's logic. It has the board core's ports
/// (those the shells use), keeps every sampled pin alive (folded into a
/// register) and drives the Ethernet ports with a counter mixed with that
/// fold, so synthesis keeps the I/O and both clock domains and place and
/// route has something to time.
#[derive(LogicBlock)]
pub struct FlowProbeCore<const L: usize, const P: usize> {
    pub fabric_clock: Signal<In, Clock>,
    pub eth_clock: Signal<In, Clock>,
    pub pins: [DimmPins; L],
    pub txd: [Signal<Out, Bits<8>>; P],
    pub tx_en: [Signal<Out, Bit>; P],
    pub tx_er: [Signal<Out, Bit>; P],
    pub fifo_fill: Signal<Out, Bits<32>>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub packet_error: Signal<Out, Bit>,
    pub frame_underrun: Signal<Out, Bit>,
    pack: [ProbeLanePack; L],
    lane_fold: [Signal<Local, Bits<32>>; L],
    fold: DFF<Bits<32>>,
    sync0: DFF<Bits<8>>,
    sync1: DFF<Bits<8>>,
    counter: DFF<Bits<32>>,
    txd_reg: DFF<Bits<8>>,
}

impl<const L: usize, const P: usize> Default for FlowProbeCore<L, P> {
    fn default() -> Self {
        FlowProbeCore {
            fabric_clock: Default::default(),
            eth_clock: Default::default(),
            pins: hmtt_hdl::pins::lanes(),
            txd: std::array::from_fn(|_| Default::default()),
            tx_en: std::array::from_fn(|_| Default::default()),
            tx_er: std::array::from_fn(|_| Default::default()),
            fifo_fill: Default::default(),
            events_dropped: Default::default(),
            packet_error: Default::default(),
            frame_underrun: Default::default(),
            pack: std::array::from_fn(|_| Default::default()),
            lane_fold: std::array::from_fn(|_| Default::default()),
            fold: Default::default(),
            sync0: Default::default(),
            sync1: Default::default(),
            counter: Default::default(),
            txd_reg: Default::default(),
        }
    }
}

impl<const L: usize, const P: usize> Logic for FlowProbeCore<L, P> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, fabric_clock, fold);
        dff_setup!(self, eth_clock, sync0, sync1, counter, txd_reg);
        for j in 0..L {
            self.pack[j].cs_n.next = self.pins[j].cs_n.val();
            self.pack[j].ras_n.next = self.pins[j].ras_n.val();
            self.pack[j].cas_n.next = self.pins[j].cas_n.val();
            self.pack[j].we_n.next = self.pins[j].we_n.val();
            self.pack[j].cke.next = self.pins[j].cke.val();
            self.pack[j].ba.next = self.pins[j].ba.val();
            self.pack[j].addr.next = self.pins[j].addr.val();
        }
        self.lane_fold[0].next = (self.fold.q.val() << 1) ^ self.pack[0].packed.val();
        for j in 1..L {
            self.lane_fold[j].next = (self.lane_fold[j - 1].val() << 1) ^ self.pack[j].packed.val();
        }
        for j in 0..L {
            self.fold.d.next = self.lane_fold[j].val();
        }
        self.sync0.d.next = self.fold.q.val().get_bits::<8>(24);
        self.sync1.d.next = self.sync0.q.val();
        self.counter.d.next = self.counter.q.val() + 1;
        self.txd_reg.d.next = self.counter.q.val().get_bits::<8>(0) ^ self.sync1.q.val();
        for p in 0..P {
            self.txd[p].next = self.txd_reg.q.val();
            self.tx_en[p].next = self.counter.q.val().get_bit(24);
            self.tx_er[p].next = self.counter.q.val().get_bit(27);
        }
        self.fifo_fill.next = self.fold.q.val();
        self.events_dropped.next = self.counter.q.val();
        self.packet_error.next = self.fold.q.val().get_bit(0);
        self.frame_underrun.next = self.fold.q.val().get_bit(1);
    }
}

/// Combinational: one lane's unpacked pins folded back into 32 bits (the
/// probe's, so no pin is optimised away).
#[derive(LogicBlock, Default)]
pub struct ProbeLanePack {
    pub cs_n: Signal<In, Bits<4>>,
    pub ras_n: Signal<In, Bit>,
    pub cas_n: Signal<In, Bit>,
    pub we_n: Signal<In, Bit>,
    pub cke: Signal<In, Bit>,
    pub ba: Signal<In, Bits<4>>,
    pub addr: Signal<In, Bits<18>>,
    pub packed: Signal<Out, Bits<32>>,
}

impl Logic for ProbeLanePack {
    #[hdl_gen]
    fn update(&mut self) {
        self.packed.next = bit_cast::<32, 1>(self.cke.val().into())
            | (bit_cast::<32, 4>(self.cs_n.val()) << 1)
            | (bit_cast::<32, 1>(self.ras_n.val().into()) << 5)
            | (bit_cast::<32, 1>(self.cas_n.val().into()) << 6)
            | (bit_cast::<32, 1>(self.we_n.val().into()) << 7)
            | (bit_cast::<32, 4>(self.ba.val()) << 8)
            | (bit_cast::<32, 18>(self.addr.val()) << 12);
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

/// ECP5 board core: L = 8 behind the 200 -> 100 MHz widening stage, E = 3
/// references per clock (board.md 2.2), TX FIFO 16 banks (>= 2 + 3E words a
/// clock) x 1024 words = 16384 words (board.md's default), 3 ports.
pub type Ecp5Core = BoardTop<8, 3, 16, 10, 3>;
/// The ECP5 core with the Statistic Unit for the DDR3-4G geometry: 2
/// ranks, 16 banks in all, 26 line-index bits (`BoardTop`'s `R`, `NB`,
/// `LB`).
pub type Ecp5CoreWithStatistics = BoardTop<8, 3, 16, 10, 3, 12, 13, 1, 2, 16, 26>;
/// iCE40 board core: L = 2 (both clock edges sampled), E = 2, TX FIFO 8
/// banks (>= 2 + 3E) x 256 words = 2048 words (16 EBR), 1 port with a
/// 1024-word data FIFO (8 EBR, two 1500-byte packets at `max_words` 360),
/// so the core fits the HX8K's 32 EBR.
pub type Ice40Core = BoardTop<2, 2, 8, 8, 1, 10, 11>;

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

/// The ECP5 reference board's I/O shell around a core with the board
/// core's ports: DDR3 command/address pins deserialized 1:4 (IDDRX2F, 4
/// ticks per 200 MHz `sample_clk`), widened 2:1 into the 100 MHz
/// `fabric_clk` (L = 8, [`LaneWidener`]), three RGMII transmitters
/// (ODDRX1F) on the 125 MHz reference clock. One port list for the board
/// and the flow probe.
macro_rules! ecp5_shell {
    ($(#[$attr:meta])* $name:ident, $core:ty) => {
        $(#[$attr])*
        #[derive(LogicBlock)]
        pub struct $name {
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
            sample_clk: Signal<Local, Clock>,
            fabric_clk: Signal<Local, Clock>,
            clocking: Ecp5CommandClocking,
            deserializer: Ecp5CommandDeserializer,
            widener: LaneWidener,
            unpack: [LaneUnpack; SLOW_LANES],
            core: $core,
            rgmii: [Ecp5RgmiiTx; 3],
        }

        impl $name {
            pub fn with_core(core: $core) -> Self {
                $name {
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
                    sample_clk: Default::default(),
                    fabric_clk: Default::default(),
                    clocking: Default::default(),
                    deserializer: Default::default(),
                    widener: Default::default(),
                    unpack: Default::default(),
                    core,
                    rgmii: Default::default(),
                }
            }
        }

        impl Logic for $name {
            #[hdl_gen]
            fn update(&mut self) {
                self.clocking.ck_in.next = self.ddr_ck.val();
                self.sample_clk.next = self.clocking.sclk.val();
                self.fabric_clk.next = self.clocking.core_clk.val();
                self.deserializer.eclk.next = self.clocking.eclk.val();
                self.deserializer.sclk.next = self.sample_clk.val();
                self.deserializer.cke.next = self.ddr_cke.val();
                self.deserializer.cs_n.next = self.ddr_cs_n.val();
                self.deserializer.ras_n.next = self.ddr_ras_n.val();
                self.deserializer.cas_n.next = self.ddr_cas_n.val();
                self.deserializer.we_n.next = self.ddr_we_n.val();
                self.deserializer.ba.next = self.ddr_ba.val();
                self.deserializer.a.next = self.ddr_a.val();
                self.deserializer.odt.next = self.ddr_odt.val();
                self.widener.fast_clock.next = self.sample_clk.val();
                self.widener.slow_clock.next = self.fabric_clk.val();
                self.widener.locked.next = self.clocking.locked.val();
                self.widener.fast_lanes[0].next = self.deserializer.lane0.val();
                self.widener.fast_lanes[1].next = self.deserializer.lane1.val();
                self.widener.fast_lanes[2].next = self.deserializer.lane2.val();
                self.widener.fast_lanes[3].next = self.deserializer.lane3.val();
                self.core.fabric_clock.next = self.fabric_clk.val();
                self.core.eth_clock.next = self.ref_clk_125.val();
                for j in 0..SLOW_LANES {
                    self.unpack[j].lane.next = self.widener.slow_lanes[j].val();
                    self.core.pins[j].cs_n.next = self.unpack[j].cs_n.val();
                    self.core.pins[j].ras_n.next = self.unpack[j].ras_n.val();
                    self.core.pins[j].cas_n.next = self.unpack[j].cas_n.val();
                    self.core.pins[j].we_n.next = self.unpack[j].we_n.val();
                    self.core.pins[j].cke.next = self.unpack[j].cke.val();
                    self.core.pins[j].ba.next = self.unpack[j].ba.val();
                    self.core.pins[j].addr.next = self.unpack[j].addr.val();
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
    };
}

/// The iCE40-HX8K small build's I/O shell around a core with the board
/// core's ports: the bottom PLL divides the DIMM clock (DDR-200's 100 MHz,
/// on the PLL's own pad) by 2 into `fabric_clk` (50 MHz), whose two edges
/// sample the command/address pins in the I/O cells' DDR input registers
/// (L = 2); one GMII transmitter on the 125 MHz reference clock.
macro_rules! ice40_shell {
    ($(#[$attr:meta])* $name:ident, $core:ty) => {
        $(#[$attr])*
        #[derive(LogicBlock)]
        pub struct $name {
            /// DIMM CK (100 MHz for DDR-200), the PLL's reference.
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
            /// PHY reset, released when the command clock's PLL has locked.
            pub eth_rst_n: Signal<Out, Bit>,
            /// Status LEDs: FIFO not empty, events dropped, packet error, frame underrun.
            pub led: Signal<Out, Bits<4>>,
            fabric_clk: Signal<Local, Clock>,
            clocking: Ice40CommandClocking,
            inputs: Ice40DdrInputs,
            unpack: [LaneUnpack; 2],
            core: $core,
            gtx_forward: Ice40ClockForward,
        }

        impl $name {
            pub fn with_core(core: $core) -> Self {
                $name {
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
                    fabric_clk: Default::default(),
                    clocking: Default::default(),
                    inputs: Default::default(),
                    unpack: Default::default(),
                    core,
                    gtx_forward: Default::default(),
                }
            }
        }

        impl Logic for $name {
            #[hdl_gen]
            fn update(&mut self) {
                self.clocking.ck_pin.next = self.ddr_ck.val();
                self.fabric_clk.next = self.clocking.fabric_clk.val();
                self.inputs.clock.next = self.fabric_clk.val();
                self.inputs.cke.next = self.ddr_cke.val();
                self.inputs.cs_n.next = self.ddr_cs_n.val();
                self.inputs.ras_n.next = self.ddr_ras_n.val();
                self.inputs.cas_n.next = self.ddr_cas_n.val();
                self.inputs.we_n.next = self.ddr_we_n.val();
                self.inputs.ba.next = self.ddr_ba.val();
                self.inputs.a.next = self.ddr_a.val();
                self.inputs.odt.next = self.ddr_odt.val();
                self.unpack[0].lane.next = self.inputs.lane0.val();
                self.unpack[1].lane.next = self.inputs.lane1.val();
                self.core.fabric_clock.next = self.fabric_clk.val();
                self.core.eth_clock.next = self.ref_clk_125.val();
                for j in 0..2 {
                    self.core.pins[j].cs_n.next = self.unpack[j].cs_n.val();
                    self.core.pins[j].ras_n.next = self.unpack[j].ras_n.val();
                    self.core.pins[j].cas_n.next = self.unpack[j].cas_n.val();
                    self.core.pins[j].we_n.next = self.unpack[j].we_n.val();
                    self.core.pins[j].cke.next = self.unpack[j].cke.val();
                    self.core.pins[j].ba.next = self.unpack[j].ba.val();
                    self.core.pins[j].addr.next = self.unpack[j].addr.val();
                }
                self.gtx_forward.clock.next = self.ref_clk_125.val();
                self.eth_gtx_clk.next = self.gtx_forward.pin.val();
                self.eth_txd.next = self.core.txd[0].val();
                self.eth_tx_en.next = self.core.tx_en[0].val();
                self.eth_tx_er.next = self.core.tx_er[0].val();
                self.eth_rst_n.next = self.clocking.locked.val();
                self.led.next = bit_cast::<4, 1>(self.core.fifo_fill.val().any().into())
                    | (bit_cast::<4, 1>(self.core.events_dropped.val().any().into()) << 1)
                    | (bit_cast::<4, 1>(self.core.packet_error.val().into()) << 2)
                    | (bit_cast::<4, 1>(self.core.frame_underrun.val().into()) << 3);
            }
        }
    };
}

ecp5_shell!(
    /// The reference board: the ECP5 I/O shell around `hmtt-hdl`'s board core.
    Ecp5BoardTop,
    Ecp5Core
);
ecp5_shell!(
    /// The reference board with the Statistic Unit in its core.
    Ecp5StatisticsBoardTop,
    Ecp5CoreWithStatistics
);
ecp5_shell!(
    /// The ECP5 I/O shell around the flow probe (PLACEHOLDER core).
    Ecp5ProbeTop,
    FlowProbeCore<SLOW_LANES, 3>
);
ice40_shell!(
    /// The small build: the iCE40 I/O shell around `hmtt-hdl`'s board core.
    Ice40BoardTop,
    Ice40Core
);
ice40_shell!(
    /// The iCE40 I/O shell around the flow probe (PLACEHOLDER core).
    Ice40ProbeTop,
    FlowProbeCore<2, 1>
);

fn checked_verilog<U: Block>(uut: &mut U) -> Result<String, FirmwareError> {
    uut.connect_all();
    check_all(uut).map_err(|e| FirmwareError::HdlCheck(format!("{e:?}")))?;
    Ok(generate_verilog_unchecked(uut))
}

/// Stack for building a top: the board cores are large structs, and debug
/// builds move them through the stack several times.
const GENERATE_STACK_BYTES: usize = 256 << 20;

/// The Verilog of `board`'s top with the chosen core and units (module
/// `top`). The flow probe has no units; asking it for any is an error, as
/// is a unit the board cannot hold.
pub fn generate(
    board: Board,
    choice: TopChoice,
    units: Units,
) -> Result<GeneratedTop, FirmwareError> {
    std::thread::Builder::new()
        .name("verilog".into())
        .stack_size(GENERATE_STACK_BYTES)
        .spawn(move || generate_here(board, choice, units))
        .map_err(|e| FirmwareError::HdlCheck(format!("cannot start the generator thread: {e}")))?
        .join()
        .unwrap_or_else(|_| {
            Err(FirmwareError::HdlCheck(
                "the Verilog generator panicked".into(),
            ))
        })
}

/// Refuses units that `board`'s top `choice` cannot hold, with the reason.
pub fn check_units(board: Board, choice: TopChoice, units: Units) -> Result<(), FirmwareError> {
    let reason = match (units, choice) {
        (Units::None, _) => return Ok(()),
        (_, TopChoice::FlowProbe) => "the flow probe has no units",
        (_, TopChoice::Board) if !board.can_hold(units) => {
            "the device is 99 % full with the capture core alone"
        }
        (_, TopChoice::Board) => return Ok(()),
    };
    Err(FirmwareError::UnitsUnavailable {
        board,
        units: units.name(),
        reason,
    })
}

fn generate_here(
    board: Board,
    choice: TopChoice,
    units: Units,
) -> Result<GeneratedTop, FirmwareError> {
    check_units(board, choice, units)?;
    match (board, choice) {
        (Board::Ecp5_85f, TopChoice::Board) if units == Units::Statistics => Ok(GeneratedTop {
            name: "ecp5-board-statistics",
            placeholder: false,
            note: "hmtt-hdl BoardTop<L=8, E=3, FIFO 16x1024 = 16384 words, 3 ports> with the Statistic Unit (k = 20, s = 5, burst 4) at 100 MHz behind the 200 MHz sampler, DDR3-4G geometry, tCK 1250 ps",
            verilog: checked_verilog(&mut Ecp5StatisticsBoardTop::with_core(
                Ecp5CoreWithStatistics::new(
                    &ecp5_core_config().with_statistics(BoardStatistics::default()),
                ),
            ))?,
        }),
        (Board::Ecp5_85f, TopChoice::FlowProbe) => Ok(GeneratedTop {
            name: "ecp5-flow-probe",
            placeholder: true,
            note: "ECP5 I/O shell (PLL, IDDRX2F 1:4 at 200 MHz, 2:1 widening to 100 MHz, RGMII ODDRX1F) around the flow probe",
            verilog: checked_verilog(&mut Ecp5ProbeTop::with_core(Default::default()))?,
        }),
        (Board::Ice40Hx8k, TopChoice::FlowProbe) => Ok(GeneratedTop {
            name: "ice40-flow-probe",
            placeholder: true,
            note: "iCE40 I/O shell (PLL 50 MHz, SB_IO DDR inputs, GMII, SB_IO clock forward) around the flow probe",
            verilog: checked_verilog(&mut Ice40ProbeTop::with_core(Default::default()))?,
        }),
        (Board::Ecp5_85f, TopChoice::Board) => Ok(GeneratedTop {
            name: "ecp5-board",
            placeholder: false,
            note: "hmtt-hdl BoardTop<L=8, E=3, FIFO 16x1024 = 16384 words, 3 ports> at 100 MHz behind the 200 MHz sampler, DDR3-4G geometry, tCK 1250 ps",
            verilog: checked_verilog(&mut Ecp5BoardTop::with_core(Ecp5Core::new(
                &ecp5_core_config(),
            )))?,
        }),
        (Board::Ice40Hx8k, TopChoice::Board) => Ok(GeneratedTop {
            name: "ice40-board",
            placeholder: false,
            note: "hmtt-hdl BoardTop<L=2, E=2, FIFO 8x256 = 2048 words, 1 port, port FIFO 1024 words> at 50 MHz, DDR-512M geometry, tCK 10 ns",
            verilog: checked_verilog(&mut Ice40BoardTop::with_core(Ice40Core::new(
                &ice40_core_config(),
            )))?,
        }),
    }
}
