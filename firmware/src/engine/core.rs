//! The board cores the Verilator engine simulates and the golden model's
//! configuration that matches each exactly.
//!
//! A core's type parameters (lanes, references per clock, TX FIFO depth,
//! ports, port data FIFO) are fixed by its firmware build; its
//! `BoardTopConfig` values (geometry, config window, `max_words`, idle
//! flush, drain, tick, board id, mode at reset) are constants in the
//! generated Verilog, so a run may change them and the engine generates the
//! core again with the new constants.
//!
//! A board whose firmware builds the Statistic Unit (`tops::
//! Ecp5CoreWithStatistics`) has a second core, the one with the unit, that
//! a configuration with statistics runs ([`CoreSpec::top_config`] and
//! [`CoreSpec::verilog`] choose it); the unit's `k`, share and burst are
//! constants too, its geometry (`R`, `NB`, `LB`) a build parameter.

use std::marker::PhantomData;

use hmtt_board_model::{BoardConfig, DrainRate, StatsConfig};
use hmtt_format::config::ConfigWindow;
use hmtt_format::stats::{MAX_INTERVAL_LOG2, MIN_INTERVAL_LOG2};
use hmtt_hdl::board_top::{BoardStatistics, BoardTop, BoardTopConfig};
use hmtt_hdl::dsmu::LineGeometry;
use hmtt_hdl::statistics::packets::StatsPacketPlan;
use rust_hdl::prelude::*;

use super::EngineError;
use crate::board::Board;
use crate::error::FirmwareError;
use crate::tops::{self, Ecp5Core, Ecp5CoreWithStatistics, Ice40Core};

/// Stack for generating a core's Verilog: the cores are large structs that
/// debug builds move through the stack several times.
const GENERATE_STACK_BYTES: usize = 256 << 20;

/// One board core as the firmware builds it.
#[derive(Clone, Debug)]
pub struct CoreSpec {
    pub board: Board,
    /// Lanes `L`: ticks per fabric clock.
    pub lanes: u32,
    /// References a clock takes, `E`.
    pub refs_per_clock: u32,
    /// TX FIFO depth in words.
    pub fifo_depth: usize,
    pub ports: u8,
    /// Words of each port's data FIFO (two packets must fit).
    pub port_fifo_words: usize,
    /// The build parameters of the firmware's core.
    pub top: BoardTopConfig,
    /// The Statistic Unit's build shape, in the core that has it.
    pub unit: Option<UnitShape>,
    /// The board's core with the unit, beside this one without it.
    with_unit: Option<Box<CoreSpec>>,
    generate: fn(BoardTopConfig) -> Result<String, FirmwareError>,
}

/// What a Statistic Unit is built for (`BoardTop`'s `R`, `NB`, `LB`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitShape {
    pub ranks: usize,
    /// Banks in all ranks.
    pub banks: usize,
    pub line_bits: usize,
}

/// A `BoardTop` instance type's parameters and generator.
trait CoreType {
    const LANES: usize;
    const REFS_PER_CLOCK: usize;
    const FIFO_DEPTH: usize;
    const PORTS: usize;
    const PORT_FIFO_WORDS: usize;
    const UNIT: Option<UnitShape>;
    fn verilog(top: BoardTopConfig) -> Result<String, FirmwareError>;
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const P: usize,
        const DN: usize,
        const DNP1: usize,
    > CoreType for PhantomData<BoardTop<L, E, B, AB, P, DN, DNP1>>
{
    const LANES: usize = L;
    const REFS_PER_CLOCK: usize = E;
    const FIFO_DEPTH: usize = B << AB;
    const PORTS: usize = P;
    const PORT_FIFO_WORDS: usize = 1 << DN;
    const UNIT: Option<UnitShape> = None;

    fn verilog(top: BoardTopConfig) -> Result<String, FirmwareError> {
        checked_verilog(BoardTop::<L, E, B, AB, P, DN, DNP1>::new(&top))
    }
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const P: usize,
        const DN: usize,
        const DNP1: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > CoreType for PhantomData<BoardTop<L, E, B, AB, P, DN, DNP1, 1, R, NB, LB>>
{
    const LANES: usize = L;
    const REFS_PER_CLOCK: usize = E;
    const FIFO_DEPTH: usize = B << AB;
    const PORTS: usize = P;
    const PORT_FIFO_WORDS: usize = 1 << DN;
    const UNIT: Option<UnitShape> = Some(UnitShape {
        ranks: R,
        banks: NB,
        line_bits: LB,
    });

    fn verilog(top: BoardTopConfig) -> Result<String, FirmwareError> {
        checked_verilog(BoardTop::<L, E, B, AB, P, DN, DNP1, 1, R, NB, LB>::new(
            &top,
        ))
    }
}

fn checked_verilog<U: Block>(mut uut: U) -> Result<String, FirmwareError> {
    uut.connect_all();
    check_all(&uut).map_err(|e| FirmwareError::HdlCheck(format!("{e:?}")))?;
    Ok(generate_verilog_unchecked(&uut))
}

fn spec<C: CoreType>(board: Board, top: BoardTopConfig) -> CoreSpec {
    CoreSpec {
        board,
        lanes: C::LANES as u32,
        refs_per_clock: C::REFS_PER_CLOCK as u32,
        fifo_depth: C::FIFO_DEPTH,
        ports: C::PORTS as u8,
        port_fifo_words: C::PORT_FIFO_WORDS,
        top,
        unit: C::UNIT,
        with_unit: None,
        generate: C::verilog,
    }
}

impl CoreSpec {
    /// The core of `board`'s firmware (`tops::Ecp5Core`, `tops::Ice40Core`).
    pub fn of(board: Board) -> CoreSpec {
        match board {
            Board::Ecp5_85f => CoreSpec {
                with_unit: Some(Box::new(spec::<PhantomData<Ecp5CoreWithStatistics>>(
                    board,
                    tops::ecp5_core_config(),
                ))),
                ..spec::<PhantomData<Ecp5Core>>(board, tops::ecp5_core_config())
            },
            Board::Ice40Hx8k => spec::<PhantomData<Ice40Core>>(board, tops::ice40_core_config()),
        }
    }

    /// The golden model's configuration of the core as built.
    pub fn board_config(&self) -> BoardConfig {
        let t = &self.top;
        let mut cfg = BoardConfig::new(t.geometry).with_ports(self.ports);
        cfg.lanes = self.lanes;
        cfg.refs_per_clock = self.refs_per_clock;
        cfg.fifo_depth = self.fifo_depth;
        cfg.max_words = usize::from(t.packetizer.max_words);
        cfg.idle_flush_ticks = t.packetizer.idle_flush_ticks;
        cfg.drain = DrainRate {
            num: t.drain_num,
            den: t.drain_den,
        };
        cfg.tick_ps = t.tick_ps;
        cfg.board_id = t.board_id;
        let c = &t.capture;
        let n = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        cfg.window = ConfigWindow::new(
            &t.geometry,
            n(c.window_rank),
            n(c.window_row_first),
            n(c.window_row_count),
        )
        .expect("a core's window fits its geometry");
        cfg.start_tracing = c.start_tracing;
        cfg.start_tags_only = false;
        cfg
    }

    /// The core's build parameters for the golden model's configuration
    /// `cfg`, or why the core cannot run it; with statistics, those of the
    /// board's core with the Statistic Unit.
    pub fn top_config(&self, cfg: &BoardConfig) -> Result<BoardTopConfig, EngineError> {
        let unsupported = |reason: String| EngineError::Unsupported {
            core: self.board,
            reason,
        };
        match (&cfg.statistics, self.unit, &self.with_unit) {
            (Some(_), None, Some(with_unit)) => return with_unit.top_config(cfg),
            (Some(_), None, None) => {
                return Err(unsupported(
                    "its firmware has no Statistic Unit (the device has no room for it)".into(),
                ))
            }
            (None, Some(_), _) => {
                return Err(unsupported(
                    "its core with the Statistic Unit runs only with the unit".into(),
                ))
            }
            _ => {}
        }
        let fixed: [(&str, u64, u64); 4] = [
            ("lanes", self.lanes.into(), cfg.lanes.into()),
            (
                "references per clock",
                self.refs_per_clock.into(),
                cfg.refs_per_clock.into(),
            ),
            (
                "TX FIFO depth",
                self.fifo_depth as u64,
                cfg.fifo_depth as u64,
            ),
            ("ports", self.ports.into(), cfg.ports.into()),
        ];
        for (what, built, asked) in fixed {
            if built != asked {
                return Err(unsupported(format!(
                    "its {what} is {built} (a build parameter), not {asked}"
                )));
            }
        }
        if cfg.start_tags_only {
            return Err(unsupported(
                "its config unit starts in trace-all mode (no tags-only reset option)".into(),
            ));
        }
        if cfg.max_words * 2 > self.port_fifo_words {
            return Err(unsupported(format!(
                "max_words {} does not fit twice in its {}-word port FIFOs (at most {})",
                cfg.max_words,
                self.port_fifo_words,
                self.port_fifo_words / 2
            )));
        }
        if cfg.idle_flush_ticks > 1 << 32 {
            return Err(unsupported(format!(
                "idle_flush_ticks {} is beyond its 32-bit countdown (at most 2^32)",
                cfg.idle_flush_ticks
            )));
        }
        let DrainRate { num, den } = cfg.drain;
        if den >= 1 << 32 || num * u64::from(cfg.lanes) >= 1 << 32 {
            return Err(unsupported(format!(
                "drain rate {num}/{den} needs more than its 32-bit credit"
            )));
        }
        let g = cfg.geometry;
        let line = line_geometry(&g);
        if line.rank_bits > 2
            || !(1..=4).contains(&line.bank_bits)
            || !(10..=18).contains(&line.row_bits)
            || !(3..=8).contains(&line.col_line_bits)
        {
            return Err(unsupported(format!(
                "geometry {g} is beyond its DSMU and pins (at most 2 rank bits, 1-4 bank \
                 bits, 10-18 row bits, 3-8 column-line bits)"
            )));
        }
        let statistics = match (&cfg.statistics, self.unit) {
            (Some(sc), Some(shape)) => Some(self.unit_config(cfg, sc, shape)?),
            _ => None,
        };
        let mut top = self.top.clone();
        top.statistics = statistics;
        top.geometry = g;
        top.capture.geometry = line;
        top.capture.window_rank = cfg.window.rank.into();
        top.capture.window_row_first = cfg.window.row_first.into();
        top.capture.window_row_count = cfg.window.row_count.into();
        top.capture.start_tracing = cfg.start_tracing;
        top.packetizer.max_words = cfg.max_words as u16;
        top.packetizer.idle_flush_ticks = cfg.idle_flush_ticks;
        top.board_id = cfg.board_id;
        top.tick_ps = cfg.tick_ps;
        top.drain_num = num;
        top.drain_den = den;
        for f in &mut top.ports {
            f.board_id = cfg.board_id;
            f.geometry = g;
            f.tick_ps = cfg.tick_ps;
        }
        Ok(top)
    }

    /// The unit's build parameters for `sc`, or why the unit built as
    /// `shape` cannot run it.
    fn unit_config(
        &self,
        cfg: &BoardConfig,
        sc: &StatsConfig,
        shape: UnitShape,
    ) -> Result<BoardStatistics, EngineError> {
        let unsupported = |reason: String| EngineError::Unsupported {
            core: self.board,
            reason,
        };
        if sc.reuse.is_some() {
            return Err(unsupported(
                "its Statistic Unit has no Reuse Distance & Hot Pages Unit".into(),
            ));
        }
        if !sc.start_enabled {
            return Err(unsupported(
                "its Statistic Unit counts from reset (no --stats-off; STATS_OFF in the stream \
                 switches it off)"
                    .into(),
            ));
        }
        let g = cfg.geometry;
        let ranks = 1usize << g.rank_bits();
        let asked = UnitShape {
            ranks,
            banks: ranks << g.bank_bits(),
            line_bits: g.line_bits() as usize,
        };
        if asked != shape {
            return Err(unsupported(format!(
                "its Statistic Unit is built for {} ranks, {} banks in all and {}-bit lines, \
                 not geometry {g}'s {}, {} and {}",
                shape.ranks,
                shape.banks,
                shape.line_bits,
                asked.ranks,
                asked.banks,
                asked.line_bits
            )));
        }
        if !(MIN_INTERVAL_LOG2..=MAX_INTERVAL_LOG2).contains(&sc.interval_log2) {
            return Err(unsupported(format!(
                "its Statistic Unit's interval is 2^k ticks with k in \
                 {MIN_INTERVAL_LOG2}..={MAX_INTERVAL_LOG2}, not {}",
                sc.interval_log2
            )));
        }
        let unit = BoardStatistics {
            interval_log2: sc.interval_log2,
            share_log2: sc.share_log2,
            burst_records: sc.burst_records,
        };
        let plan = self
            .unit_plan(cfg, unit)
            .map_err(|e| unsupported(format!("its Statistic Unit's transport cannot: {e}")))?;
        let burst_words = u64::from(unit.burst_records) * (plan.words + 12 * plan.parts);
        if burst_words > self.port_fifo_words as u64 {
            return Err(unsupported(format!(
                "a burst of {} records ({burst_words} words) does not fit its {}-word \
                 statistics FIFOs",
                unit.burst_records, self.port_fifo_words
            )));
        }
        Ok(unit)
    }

    /// The statistics path's plan for `unit` on `cfg`'s link.
    fn unit_plan(
        &self,
        cfg: &BoardConfig,
        unit: BoardStatistics,
    ) -> Result<StatsPacketPlan, String> {
        let mut top = self.top.clone();
        top.geometry = cfg.geometry;
        top.capture.geometry = line_geometry(&cfg.geometry);
        top.board_id = cfg.board_id;
        top.tick_ps = cfg.tick_ps;
        top.packetizer.max_words = u16::try_from(cfg.max_words).unwrap_or(u16::MAX);
        top.statistics = Some(unit);
        top.stats_packet_config(self.lanes as u8)
            .expect("the unit is set")
            .check()
    }

    /// Packets a statistics record takes in the run of `top` (from
    /// [`CoreSpec::top_config`]); 0 without the unit.
    pub fn stats_parts(&self, top: &BoardTopConfig) -> u64 {
        top.stats_packet_config(self.lanes as u8)
            .map_or(0, |p| p.plan().parts)
    }

    /// The core's Verilog (module `top`) built with `top` (from
    /// [`CoreSpec::top_config`]: with statistics, the core with the unit).
    pub fn verilog(&self, top: &BoardTopConfig) -> Result<String, FirmwareError> {
        if let (Some(_), None, Some(with_unit)) = (&top.statistics, self.unit, &self.with_unit) {
            return with_unit.verilog(top);
        }
        let generate = self.generate;
        let top = top.clone();
        std::thread::Builder::new()
            .name("verilog".into())
            .stack_size(GENERATE_STACK_BYTES)
            .spawn(move || generate(top))
            .map_err(|e| FirmwareError::HdlCheck(format!("cannot start the generator: {e}")))?
            .join()
            .unwrap_or_else(|_| {
                Err(FirmwareError::HdlCheck(
                    "the Verilog generator panicked".into(),
                ))
            })
    }
}

fn line_geometry(g: &hmtt_format::Geometry) -> LineGeometry {
    LineGeometry {
        rank_bits: g.rank_bits(),
        bank_bits: g.bank_bits(),
        row_bits: g.row_bits(),
        col_line_bits: g.col_line_bits(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;

    #[test]
    fn a_core_runs_its_own_configuration_and_refuses_its_build_parameters() {
        for board in Board::ALL {
            let core = CoreSpec::of(board);
            let cfg = core.board_config();
            cfg.validate().unwrap();
            assert_eq!(core.top_config(&cfg).unwrap(), core.top, "{board}");
            let mut other = cfg.clone();
            other.ports = if core.ports == 1 { 2 } else { 1 };
            other.set_line_rate();
            let e = core.top_config(&other).unwrap_err().to_string();
            assert!(e.contains("its ports is"), "{e}");
            let mut tags = cfg.clone();
            tags.start_tags_only = true;
            assert!(core.top_config(&tags).is_err());
            let mut words = cfg.clone();
            words.max_words = core.port_fifo_words / 2 + 1;
            assert!(core.top_config(&words).is_err());
        }
    }

    #[test]
    fn run_time_values_reach_the_build_parameters() {
        let core = CoreSpec::of(Board::Ecp5_85f);
        let mut cfg = core.board_config();
        cfg.geometry = Geometry::new(1, 3, 14, 7).unwrap();
        cfg.window = ConfigWindow::new(&cfg.geometry, 1, 100, 4).unwrap();
        cfg.board_id = 5;
        cfg.max_words = 64;
        cfg.idle_flush_ticks = 999;
        cfg.drain = DrainRate { num: 1, den: 50 };
        cfg.start_tracing = false;
        let top = core.top_config(&cfg).unwrap();
        assert_eq!(top.capture.window_row_first, 100);
        assert_eq!(top.capture.geometry.row_bits, 14);
        assert_eq!((top.drain_num, top.drain_den), (1, 50));
        assert_eq!(top.packetizer.max_words, 64);
        assert_eq!(top.packetizer.idle_flush_ticks, 999);
        assert!(!top.capture.start_tracing);
        assert!(top.ports.iter().all(|f| f.board_id == 5));
        // Eight ranks: the format has them, the pins' four chip selects not.
        cfg.geometry = Geometry::new(3, 3, 14, 7).unwrap();
        cfg.window = ConfigWindow::new(&cfg.geometry, 1, 100, 4).unwrap();
        let e = core.top_config(&cfg).unwrap_err().to_string();
        assert!(e.contains("beyond its DSMU"), "{e}");
    }

    #[test]
    fn statistics_take_the_core_with_the_unit_within_its_build() {
        use hmtt_board_model::ReuseConfig;
        let core = CoreSpec::of(Board::Ecp5_85f);
        let sc = StatsConfig {
            interval_log2: 12,
            share_log2: 1,
            ..StatsConfig::default()
        };
        let cfg = core.board_config().with_statistics(sc);
        let top = core.top_config(&cfg).unwrap();
        assert_eq!(
            top.statistics,
            Some(BoardStatistics {
                interval_log2: 12,
                share_log2: 1,
                burst_records: 4
            })
        );
        assert_eq!(
            (top.drain_num, top.drain_den),
            (cfg.drain.num, cfg.drain.den)
        );
        assert_eq!(core.stats_parts(&top), 1);
        assert_eq!(core.stats_parts(&core.top), 0);
        let refused = |cfg: &BoardConfig, says: &str| {
            let e = core.top_config(cfg).unwrap_err().to_string();
            assert!(e.contains(says), "{says}: {e}");
        };
        let mut reuse = sc;
        reuse.reuse = Some(ReuseConfig::default());
        refused(
            &core.board_config().with_statistics(reuse),
            "Reuse Distance",
        );
        let off = StatsConfig {
            start_enabled: false,
            ..sc
        };
        refused(
            &core.board_config().with_statistics(off),
            "counts from reset",
        );
        // Another geometry of 26-bit lines with one rank: not the unit's.
        let mut other = cfg.clone();
        other.geometry = Geometry::new(0, 3, 16, 7).unwrap();
        other.window = ConfigWindow::new(&other.geometry, 0, 100, 4).unwrap();
        refused(&other, "built for 2 ranks, 16 banks");
        // Sixteen records of ten packets each overflow its 4096-word FIFOs.
        let mut burst = core.board_config().with_statistics(StatsConfig {
            burst_records: 16,
            ..sc
        });
        burst.max_words = 20;
        refused(&burst, "does not fit");
        let ice40 = CoreSpec::of(Board::Ice40Hx8k);
        let e = ice40
            .top_config(&ice40.board_config().with_statistics(sc))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no Statistic Unit"), "{e}");
    }
}
