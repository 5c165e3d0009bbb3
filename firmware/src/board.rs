//! The boards the flows know: device, package, constraints, the clocks each
//! must meet (with [`REQUIRED_MARGIN`]), the clock crossings whose budget
//! the design sets rather than nextpnr, and how its bitstream is packed
//! and flashed.

use crate::error::FirmwareError;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Board {
    /// Reference Memory Trace Board: LFE5U-85F-8BG381C, DDR3-1600 UDIMM, 3 RGMII PHYs.
    #[serde(rename = "ecp5-85f")]
    #[cfg_attr(feature = "clap", value(name = "ecp5-85f"))]
    Ecp5_85f,
    /// Small build: iCE40-HX8K CT256, DDR-200/DDR2-400 class, 1 GMII PHY.
    #[serde(rename = "ice40-hx8k")]
    #[cfg_attr(feature = "clap", value(name = "ice40-hx8k"))]
    Ice40Hx8k,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ecp5,
    Ice40,
}

/// How much faster than required a clock must route to PASS (5 %: the
/// routed fmax at least 1.05 times the required frequency), and how much
/// shorter than its budget a clock crossing's longest path must be.
pub const REQUIRED_MARGIN: f64 = 0.05;

/// A clock domain the design must meet, and how to find it in nextpnr's log.
#[derive(Clone, Copy, Debug)]
pub struct ClockRequirement {
    /// Domain name as the report prints it.
    pub domain: &'static str,
    /// Net name as the top level names it; nextpnr's clock names contain it.
    pub net: &'static str,
    pub required_mhz: f64,
    /// DIMM command ticks this clock takes per cycle (0: not on the
    /// command path), so `ticks x fmax` is the command clock it can follow.
    pub ticks_per_clock: usize,
    pub purpose: &'static str,
}

/// A crossing between two clocks that nextpnr treats as unrelated (it
/// reports only its longest path, against nothing), made safe by the
/// design: its paths must stay within `budget_ns`.
#[derive(Clone, Copy, Debug)]
pub struct TransferRequirement {
    /// Domains (as in [`ClockRequirement::domain`]) it goes from and to.
    pub from: &'static str,
    pub to: &'static str,
    pub budget_ns: f64,
    pub why: &'static str,
}

/// The DIMM a board is built to follow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DimmSpeed {
    /// JEDEC name, e.g. "DDR3-1600".
    pub name: &'static str,
    /// Its command clock (CK).
    pub ck_mhz: f64,
}

/// The optional units (board.md "Statistic Unit") a board top holds: a
/// build option, since each costs the device's room and the fabric clock's
/// margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Units {
    /// The capture core alone.
    None,
    /// The core with the Statistic Unit at board.md's defaults (`k = 20`,
    /// `s = 5`, a burst of 4), on from reset.
    Statistics,
}

impl Units {
    pub const ALL: [Units; 2] = [Units::None, Units::Statistics];

    pub fn name(self) -> &'static str {
        match self {
            Units::None => "none",
            Units::Statistics => "statistics",
        }
    }

    pub fn from_name(name: &str) -> Result<Units, FirmwareError> {
        Units::ALL
            .into_iter()
            .find(|u| u.name() == name)
            .ok_or_else(|| FirmwareError::UnknownUnits(name.to_string()))
    }
}

impl std::str::FromStr for Units {
    type Err = FirmwareError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Units::from_name(s)
    }
}

impl Board {
    pub const ALL: [Board; 2] = [Board::Ecp5_85f, Board::Ice40Hx8k];

    /// Whether the device has room for `units` beside the capture core (the
    /// Statistic Unit alone is about 23,000 LUTs; the HX8K has 7,680).
    pub fn can_hold(self, units: Units) -> bool {
        units == Units::None || self == Board::Ecp5_85f
    }

    pub fn name(self) -> &'static str {
        match self {
            Board::Ecp5_85f => "ecp5-85f",
            Board::Ice40Hx8k => "ice40-hx8k",
        }
    }

    pub fn from_name(name: &str) -> Result<Board, FirmwareError> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| FirmwareError::UnknownBoard(name.to_string()))
    }

    pub fn family(self) -> Family {
        match self {
            Board::Ecp5_85f => Family::Ecp5,
            Board::Ice40Hx8k => Family::Ice40,
        }
    }

    pub fn device(self) -> &'static str {
        match self {
            Board::Ecp5_85f => "LFE5U-85F-8BG381C (speed grade 8, CABGA381)",
            Board::Ice40Hx8k => "iCE40-HX8K-CT256",
        }
    }

    /// Command ticks per fabric (core) clock, `L` of board.md.
    pub fn lanes(self) -> usize {
        match self {
            Board::Ecp5_85f => 8,
            Board::Ice40Hx8k => 2,
        }
    }

    /// The DIMM speed the board's clocks are chosen for.
    pub fn dimm(self) -> DimmSpeed {
        match self {
            Board::Ecp5_85f => DimmSpeed {
                name: "DDR3-1600",
                ck_mhz: 800.0,
            },
            Board::Ice40Hx8k => DimmSpeed {
                name: "DDR-200",
                ck_mhz: 100.0,
            },
        }
    }

    pub fn memory(self) -> &'static str {
        match self {
            Board::Ecp5_85f => "DDR3-1600 UDIMM (tCK 1250 ps), 2 ranks",
            Board::Ice40Hx8k => "DDR-200 (tCK 10 ns), 1-2 ranks",
        }
    }

    /// The constraints file, compiled in so a built `hmtt` needs no source tree.
    pub fn constraints(self) -> (&'static str, &'static str) {
        match self {
            Board::Ecp5_85f => (
                "ecp5-85f.lpf",
                include_str!("../../constraints/ecp5-85f.lpf"),
            ),
            Board::Ice40Hx8k => (
                "ice40-hx8k.pcf",
                include_str!("../../constraints/ice40-hx8k.pcf"),
            ),
        }
    }

    pub fn bitstream_extension(self) -> &'static str {
        match self.family() {
            Family::Ecp5 => "bit",
            Family::Ice40 => "bin",
        }
    }

    pub fn required_clocks(self) -> &'static [ClockRequirement] {
        match self {
            Board::Ecp5_85f => &[
                ClockRequirement {
                    domain: "fabric",
                    net: "fabric_clk",
                    required_mhz: 100.0,
                    ticks_per_clock: 8,
                    purpose: "the core: DDR3-1600 CK / 8 (L = 8, E = 3)",
                },
                ClockRequirement {
                    domain: "sampler",
                    net: "sample_clk",
                    required_mhz: 200.0,
                    ticks_per_clock: 4,
                    purpose: "IDDRX2F and the 2:1 widening stage: CK / 4",
                },
                ClockRequirement {
                    domain: "ethernet",
                    net: "ref_clk_125",
                    required_mhz: 125.0,
                    ticks_per_clock: 0,
                    purpose: "RGMII transmit, 1 Gb/s",
                },
            ],
            Board::Ice40Hx8k => &[
                ClockRequirement {
                    domain: "fabric",
                    net: "fabric_clk",
                    required_mhz: 50.0,
                    ticks_per_clock: 2,
                    purpose: "the core: DDR-200 CK / 2, both edges sampled (L = 2, E = 2)",
                },
                ClockRequirement {
                    domain: "ethernet",
                    net: "ref_clk_125",
                    required_mhz: 125.0,
                    ticks_per_clock: 0,
                    purpose: "GMII transmit, 1 Gb/s",
                },
            ],
        }
    }

    /// The crossings between clocks nextpnr does not time against each
    /// other, with the budget the design gives them.
    pub fn transfers(self) -> &'static [TransferRequirement] {
        match self {
            Board::Ecp5_85f => &[TransferRequirement {
                from: "sampler",
                to: "fabric",
                budget_ns: crate::widen::TRANSFER_BUDGET_NS,
                why: "widening ring: a slot is read 10-30 ns after its write, whatever the phase",
            }],
            // One PLL clock for the core; the command pins' DDR input
            // registers are in the I/O cells on that clock.
            Board::Ice40Hx8k => &[],
        }
    }
}

impl fmt::Display for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Board {
    type Err = FirmwareError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Board::from_name(s)
    }
}
