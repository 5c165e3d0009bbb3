//! DDR timing parameters in command clocks, with the speed grades
//! `--speed` names.

use std::str::FromStr;

/// DDR timing in command clocks (ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Timing {
    pub name: &'static str,
    /// Length of one tick in picoseconds.
    pub tick_ps: u16,
    pub cl: u64,
    pub cwl: u64,
    pub trcd: u64,
    pub trp: u64,
    pub tras: u64,
    pub trc: u64,
    pub tccd: u64,
    pub twr: u64,
    pub twtr: u64,
    pub trtp: u64,
    pub trrd: u64,
    /// Four-activate window (0: none).
    pub tfaw: u64,
    pub trefi: u64,
    pub trfc: u64,
    /// Extra data-bus cycles when the bus switches rank.
    pub trtrs: u64,
    /// Data-bus cycles of one BL8 burst.
    pub burst: u64,
    /// Mode-register-set to next command.
    pub tmod: u64,
    /// ZQ calibration at initialisation.
    pub tzqinit: u64,
}

impl Timing {
    /// DDR3-1600K (11-11-11), 1 KiB pages, 4 Gb devices.
    pub const DDR3_1600: Timing = Timing {
        name: "ddr3-1600",
        tick_ps: 1250,
        cl: 11,
        cwl: 8,
        trcd: 11,
        trp: 11,
        tras: 28,
        trc: 39,
        tccd: 4,
        twr: 12,
        twtr: 6,
        trtp: 6,
        trrd: 5,
        tfaw: 24,
        trefi: 6240,
        trfc: 208,
        trtrs: 2,
        burst: 4,
        tmod: 12,
        tzqinit: 512,
    };
    /// DDR2-400 (3-3-3), 1 Gb devices.
    pub const DDR2_400: Timing = Timing {
        name: "ddr2-400",
        tick_ps: 5000,
        cl: 3,
        cwl: 2,
        trcd: 3,
        trp: 3,
        tras: 8,
        trc: 11,
        tccd: 2,
        twr: 3,
        twtr: 2,
        trtp: 2,
        trrd: 2,
        tfaw: 8,
        trefi: 1560,
        trfc: 26,
        trtrs: 1,
        burst: 4,
        tmod: 2,
        tzqinit: 0,
    };
    /// DDR-200 (CL2), as on the paper's first board.
    pub const DDR_200: Timing = Timing {
        name: "ddr-200",
        tick_ps: 10000,
        cl: 2,
        cwl: 1,
        trcd: 2,
        trp: 2,
        tras: 5,
        trc: 7,
        tccd: 1,
        twr: 2,
        twtr: 1,
        trtp: 2,
        trrd: 2,
        tfaw: 0,
        trefi: 780,
        trfc: 8,
        trtrs: 1,
        burst: 4,
        tmod: 2,
        tzqinit: 0,
    };
    pub const ALL: [Timing; 3] = [Timing::DDR3_1600, Timing::DDR2_400, Timing::DDR_200];

    /// Write command to the end of its data burst.
    pub(super) fn write_end(&self) -> u64 {
        self.cwl + self.burst
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::DDR3_1600
    }
}

impl FromStr for Timing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Timing::ALL
            .into_iter()
            .find(|t| t.name.eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown speed grade '{s}' (known: {})",
                    Timing::ALL.map(|t| t.name).join(", ")
                )
            })
    }
}
