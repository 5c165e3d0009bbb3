//! The boards the flows know: device, package, constraints, the clocks each
//! must meet and how its bitstream is packed and flashed.

use crate::error::FirmwareError;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Board {
    /// Reference Memory Trace Board: LFE5U-85F-8BG381C, DDR3-1600 UDIMM, 3 RGMII PHYs.
    #[serde(rename = "ecp5-85f")]
    Ecp5_85f,
    /// Small build: iCE40-HX8K CT256, DDR-200/DDR2-400 class, 1 GMII PHY.
    #[serde(rename = "ice40-hx8k")]
    Ice40Hx8k,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Ecp5,
    Ice40,
}

/// A clock domain the design must meet, and how to find it in nextpnr's log.
#[derive(Clone, Copy, Debug)]
pub struct ClockRequirement {
    /// Domain name as the report prints it.
    pub domain: &'static str,
    /// Net name as the top level names it; nextpnr's clock names contain it.
    pub net: &'static str,
    pub required_mhz: f64,
    pub purpose: &'static str,
}

impl Board {
    pub const ALL: [Board; 2] = [Board::Ecp5_85f, Board::Ice40Hx8k];

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

    /// Commands per fabric clock.
    pub fn lanes(self) -> usize {
        match self {
            Board::Ecp5_85f => 4,
            Board::Ice40Hx8k => 1,
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
                    required_mhz: 200.0,
                    purpose: "DDR3-1600 command clock / 4 (L = 4 lanes)",
                },
                ClockRequirement {
                    domain: "ethernet",
                    net: "ref_clk_125",
                    required_mhz: 125.0,
                    purpose: "RGMII transmit, 1 Gb/s",
                },
            ],
            Board::Ice40Hx8k => &[
                ClockRequirement {
                    domain: "fabric",
                    net: "ddr_ck",
                    required_mhz: 100.0,
                    purpose: "DDR-200 command clock (L = 1)",
                },
                ClockRequirement {
                    domain: "ethernet",
                    net: "ref_clk_125",
                    required_mhz: 125.0,
                    purpose: "GMII transmit, 1 Gb/s",
                },
            ],
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
