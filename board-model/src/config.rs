//! What the board is built with (board.md "Defaults", "Drain rate") and
//! the checks a configuration must pass.

use hmtt_format::config::{ConfigWindow, WindowError};
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::MAX_WORDS_JUMBO;

use super::statistics::StatsConfig;

/// Default lanes `L`: ticks sampled per fabric clock.
pub const DEFAULT_LANES: u32 = 8;
/// Default references a fabric clock takes (`E`).
pub const DEFAULT_REFS_PER_CLOCK: u32 = 3;
/// Default TX FIFO depth in words.
pub const DEFAULT_FIFO_DEPTH: usize = 16384;
/// Default number of Ethernet ports.
pub const DEFAULT_PORTS: u8 = 3;
/// Default words per packet (1500-byte MTU).
pub const DEFAULT_MAX_WORDS: usize = 360;
/// Default idle flush in ticks.
pub const DEFAULT_IDLE_FLUSH_TICKS: u64 = 65536;
/// Default tick length: DDR3-1600.
pub const DEFAULT_TICK_PS: u16 = 1250;
/// Default config space: the top 8 MiB.
pub const DEFAULT_CONFIG_BYTES: u64 = 8 << 20;
/// Bytes on the wire per frame besides the words: 32 header, 8 UDP, 20 IPv4,
/// 14 Ethernet, 4 FCS, 8 preamble/SFD, 12 IFG.
pub const FRAME_OVERHEAD_BYTES: u64 = 98;

/// The drain's rate limiter: `num / den` words per tick, at most one word
/// per fabric clock (`0 < lanes * num < den`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DrainRate {
    pub num: u64,
    pub den: u64,
}

impl DrainRate {
    /// The ports' payload rate (board.md "Drain rate"): `ports` Gigabit
    /// Ethernet ports, `max_words` words per frame.
    pub fn line_rate(ports: u8, max_words: usize, tick_ps: u16) -> DrainRate {
        DrainRate {
            num: u64::from(ports) * max_words as u64 * u64::from(tick_ps),
            den: (4 * max_words as u64 + FRAME_OVERHEAD_BYTES) * 8000,
        }
    }

    /// Words per tick.
    pub fn words_per_tick(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Whether a drain of `lanes` lanes pops less than one word per clock
    /// at this rate (`0 < lanes * num < den`).
    pub fn fits_lanes(&self, lanes: u32) -> bool {
        self.num > 0
            && self
                .num
                .checked_mul(u64::from(lanes))
                .is_some_and(|n| n < self.den)
    }
}

/// `NUM/DEN` (or `NUM,DEN`), as `hmtt board --drain` takes it.
impl std::str::FromStr for DrainRate {
    type Err = hmtt_format::text::GivenError;
    fn from_str(s: &str) -> Result<DrainRate, Self::Err> {
        let [num, den] = hmtt_format::text::parse_list::<2>("drain rate", s)?;
        Ok(DrainRate { num, den })
    }
}

/// Everything the board is built with (board.md "Defaults").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardConfig {
    pub geometry: Geometry,
    pub board_id: u8,
    /// Lanes `L`, ticks per fabric clock: 1, 2, 4 or 8.
    pub lanes: u32,
    /// References a fabric clock takes, `E`: 1..=`lanes`.
    pub refs_per_clock: u32,
    /// Ethernet ports the packets are dealt to, 1..=255.
    pub ports: u8,
    /// TX FIFO depth in words, at least [`BoardConfig::min_fifo_depth`].
    pub fifo_depth: usize,
    /// Words per packet, 2..=2235, the injected LINE_HI included.
    pub max_words: usize,
    /// Ticks without a pop after which an open packet closes, >= 1.
    pub idle_flush_ticks: u64,
    /// Drain rate. [`BoardConfig::new`] and [`BoardConfig::with_ports`] set
    /// it to the line rate of the ports; set it by hand for anything else.
    pub drain: DrainRate,
    /// Length of a tick in picoseconds (packet header), > 0.
    pub tick_ps: u16,
    pub window: ConfigWindow,
    /// Mode at reset: tracing on.
    pub start_tracing: bool,
    /// Mode at reset: tags-only.
    pub start_tags_only: bool,
    /// The Statistic Unit (board.md "Statistic Unit"), if the board has
    /// one; `None` by default, as every HDL core today.
    pub statistics: Option<StatsConfig>,
}

impl BoardConfig {
    /// The defaults of board.md for `geometry`. The config window is the top
    /// 8 MiB under the linear mapping; a geometry whose last rank is smaller
    /// than 8 MiB gets the top sixteenth of that rank's rows instead.
    pub fn new(geometry: Geometry) -> BoardConfig {
        BoardConfig {
            geometry,
            board_id: 0,
            lanes: DEFAULT_LANES,
            refs_per_clock: DEFAULT_REFS_PER_CLOCK,
            ports: DEFAULT_PORTS,
            fifo_depth: DEFAULT_FIFO_DEPTH,
            max_words: DEFAULT_MAX_WORDS,
            idle_flush_ticks: DEFAULT_IDLE_FLUSH_TICKS,
            drain: DrainRate::line_rate(DEFAULT_PORTS, DEFAULT_MAX_WORDS, DEFAULT_TICK_PS),
            tick_ps: DEFAULT_TICK_PS,
            window: default_window(&geometry),
            start_tracing: true,
            start_tags_only: false,
            statistics: None,
        }
    }

    /// Sets the number of ports and the drain to their line rate.
    pub fn with_ports(mut self, ports: u8) -> BoardConfig {
        self.ports = ports;
        self.set_line_rate();
        self
    }

    /// Sets lanes and references per clock.
    pub fn with_lanes(mut self, lanes: u32, refs_per_clock: u32) -> BoardConfig {
        self.lanes = lanes;
        self.refs_per_clock = refs_per_clock;
        self
    }

    /// Sets the drain to the line rate of `ports`, `max_words`, `tick_ps`.
    pub fn set_line_rate(&mut self) {
        self.drain = DrainRate::line_rate(self.ports, self.max_words, self.tick_ps);
        if let Some(sc) = &self.statistics {
            // The statistics path takes 1/2^s of the line (board.md
            // "Statistic Unit"), the trace's drain the rest.
            let share = 1u64 << sc.share_log2;
            self.drain.num *= share - 1;
            self.drain.den *= share;
        }
    }

    /// The board with a Statistic Unit; the drain becomes the line rate
    /// less the statistics' share.
    pub fn with_statistics(mut self, sc: StatsConfig) -> BoardConfig {
        self.statistics = Some(sc);
        self.set_line_rate();
        self
    }

    /// The default lanes for a drain (board.md "Defaults"): [`DEFAULT_LANES`],
    /// halved while the drain would pop a word or more per clock (a slow
    /// DIMM's line-rate drain), and `E` the default capped at `L`.
    pub fn fit_lanes(&mut self) {
        let mut lanes = DEFAULT_LANES;
        while lanes > 1 && !self.drain.fits_lanes(lanes) {
            lanes /= 2;
        }
        self.lanes = lanes;
        self.refs_per_clock = DEFAULT_REFS_PER_CLOCK.min(lanes);
    }

    /// The most words one clock pushes, `2 + 3E` (board.md "Words per
    /// clock").
    pub fn most_words_per_clock(&self) -> usize {
        2 + 3 * self.refs_per_clock as usize
    }

    /// The smallest FIFO depth for this `E`: twice the most words one
    /// clock pushes, so that an empty FIFO takes a clock's events (board.md
    /// 2.2's room test).
    pub fn min_fifo_depth(&self) -> usize {
        2 * self.most_words_per_clock()
    }

    /// Checks every parameter; the board refuses an invalid configuration.
    pub fn validate(&self) -> Result<(), BoardError> {
        let bad = |what: String| Err(BoardError::InvalidConfig(what));
        if ![1, 2, 4, 8].contains(&self.lanes) {
            return bad(format!("lanes {} is not 1, 2, 4 or 8", self.lanes));
        }
        if !(1..=self.lanes).contains(&self.refs_per_clock) {
            return bad(format!(
                "refs_per_clock {} is outside 1..={} (the lanes)",
                self.refs_per_clock, self.lanes
            ));
        }
        if self.ports == 0 {
            return bad("ports must be at least 1".into());
        }
        if self.fifo_depth < self.min_fifo_depth() {
            return bad(format!(
                "fifo_depth {} is below 2 * (2 + 3 * refs_per_clock) = {}",
                self.fifo_depth,
                self.min_fifo_depth()
            ));
        }
        if self.fifo_depth > 1 << 30 {
            return bad(format!("fifo_depth {} is absurdly large", self.fifo_depth));
        }
        if !(2..=MAX_WORDS_JUMBO).contains(&self.max_words) {
            return bad(format!(
                "max_words {} is outside 2..={MAX_WORDS_JUMBO}",
                self.max_words
            ));
        }
        if self.idle_flush_ticks == 0 {
            return bad("idle_flush_ticks must be at least 1".into());
        }
        if self.tick_ps == 0 {
            return bad("tick_ps must be at least 1".into());
        }
        let DrainRate { num, den } = self.drain;
        if !self.drain.fits_lanes(self.lanes) || den >= 1 << 62 {
            return bad(format!(
                "drain rate {num}/{den} with {} lanes must satisfy 0 < lanes * num < den < 2^62 \
                 (less than one word per fabric clock)",
                self.lanes
            ));
        }
        if let Some(sc) = &self.statistics {
            sc.validate().map_err(BoardError::InvalidConfig)?;
        }
        ConfigWindow::new(
            &self.geometry,
            self.window.rank,
            self.window.row_first,
            self.window.row_count,
        )?;
        Ok(())
    }
}

/// The default config window of a geometry (see [`BoardConfig::new`]).
pub fn default_window(g: &Geometry) -> ConfigWindow {
    ConfigWindow::top_of_memory(g, DEFAULT_CONFIG_BYTES).unwrap_or_else(|_| {
        let rows = (g.rows() / 16).max(1);
        ConfigWindow::new(g, g.ranks() - 1, g.rows() - rows, rows)
            .or_else(|_| ConfigWindow::new(g, g.ranks() - 1, g.rows() - 1, 1))
            .expect("one row of the last rank is always a valid window")
    })
}

/// Why the board refused something.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("invalid board configuration: {0}")]
    InvalidConfig(String),
    #[error("invalid config window")]
    Window(#[from] WindowError),
    #[error("command at cycle {cycle} is before the board's current tick {current}")]
    CycleDecreased { cycle: u64, current: u64 },
    #[error("command after the end of the stream (finish was called)")]
    Finished,
    #[error(
        "command at tick {cycle} is {} ticks after the board's current tick {current}: \
         the model takes gaps up to 2^40 ticks (a live DDR bus refreshes every few \
         microseconds; a gap that long stands for {} keeper fillers)",
        cycle - current,
        (cycle - current) / hmtt_format::record::KEEPER_GAP
    )]
    GapTooLong { cycle: u64, current: u64 },
}

/// The longest gap between commands (or to `advance_to`'s tick) the model
/// takes, 2^40 ticks (23 minutes at DDR3-1600, 8192 keeper fillers): its
/// keeper steps through a gap filler by filler, so a forged tick near 2^64
/// would run for hours and pile up packets.
pub const MAX_COMMAND_GAP: u64 = 1 << 40;
