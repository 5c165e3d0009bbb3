//! A board's configuration from a base and the options of a run (those of
//! `hmtt board`): which options a firmware core takes, when the drain
//! follows the line rate, how many lanes the board gets, and where the
//! config window comes from (board.md "Defaults", "Drain rate").

use hmtt_format::config::{ConfigWindow, WindowError};
use hmtt_format::geometry::Geometry;
use hmtt_format::mapping::{AddressMapping, MappingError};
use hmtt_format::text::{parse_list, parse_number, GivenError, NotANumber};

use super::config::{BoardConfig, DrainRate, DEFAULT_CONFIG_BYTES, DEFAULT_REFS_PER_CLOCK};
use super::output::{window_for_range, RangeError};
use super::reuse_unit::ReuseConfig;
use super::statistics::StatsConfig;

/// What a run changes of its base configuration; `None` keeps the base's.
#[derive(Debug, Clone)]
pub struct BoardOptions {
    /// Another DIMM: the config window becomes this geometry's default.
    pub geometry: Option<Geometry>,
    pub ports: Option<u8>,
    pub lanes: Option<u32>,
    pub refs_per_clock: Option<u32>,
    pub fifo_depth: Option<usize>,
    pub max_words: Option<usize>,
    pub idle_flush_ticks: Option<u64>,
    /// The drain; default: the base's if a core's link is unchanged, else
    /// the line rate.
    pub drain: Option<DrainRate>,
    pub tick_ps: Option<u16>,
    pub board_id: Option<u8>,
    pub tracing_off: bool,
    pub tags_only: bool,
    /// The Statistic Unit's interval, 2^K ticks: the board gets a unit.
    pub stats_interval_log2: Option<u8>,
    pub stats_share_log2: Option<u8>,
    pub stats_burst: Option<u32>,
    pub stats_off: bool,
    /// The Reuse Distance & Hot Pages Unit beside the Statistic Unit.
    pub reuse: bool,
    pub reuse_off: bool,
    pub reuse_hot_pages: Option<u8>,
    pub reuse_refs_per_clock: Option<u32>,
    /// The config window in DDR coordinates (rank, first row, rows);
    /// overrides the range below.
    pub window: Option<[u32; 3]>,
    /// The address mapping file, to find the window of the config space's
    /// physical range; linear if absent.
    pub mapping: Option<MappingText>,
    /// The config space's physical base; default: the top `config_bytes`.
    pub config_base: Option<u64>,
    /// The config space's size ([`DEFAULT_CONFIG_BYTES`] unless given).
    pub config_bytes: u64,
}

impl Default for BoardOptions {
    fn default() -> BoardOptions {
        BoardOptions {
            geometry: None,
            ports: None,
            lanes: None,
            refs_per_clock: None,
            fifo_depth: None,
            max_words: None,
            idle_flush_ticks: None,
            drain: None,
            tick_ps: None,
            board_id: None,
            tracing_off: false,
            tags_only: false,
            stats_interval_log2: None,
            stats_share_log2: None,
            stats_burst: None,
            stats_off: false,
            reuse: false,
            reuse_off: false,
            reuse_hot_pages: None,
            reuse_refs_per_clock: None,
            window: None,
            mapping: None,
            config_base: None,
            config_bytes: DEFAULT_CONFIG_BYTES,
        }
    }
}

/// An address mapping file's text (docs/format.md §3), parsed once the
/// geometry is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingText {
    /// The file as named to the user.
    pub name: String,
    pub text: String,
}

/// The base a run's options apply to.
#[derive(Debug, Clone)]
pub enum BaseConfig {
    /// board.md's defaults: lanes fit to the drain.
    Defaults,
    /// A firmware core's build: its lanes and references per clock are its
    /// own, and its drain holds while its link (ports, packet size, tick)
    /// is unchanged.
    Core(BoardConfig),
}

/// Why the options give no configuration.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("--config-window")]
    Window(#[source] WindowError),
    #[error("mapping file {name}")]
    Mapping {
        name: String,
        #[source]
        source: MappingError,
    },
    #[error("--config-bytes is larger than the DIMM")]
    ConfigBytesTooLarge,
    #[error("config space")]
    ConfigSpace(#[source] RangeError),
    #[error(transparent)]
    Given(#[from] GivenError),
    #[error("config window: {0} is too large")]
    WindowNumberTooLarge(u64),
    #[error(transparent)]
    Number(#[from] NotANumber),
    #[error("{0} is not in 64..=1G (the config space is a few MiB)")]
    ConfigBytesRange(u64),
}

/// A config window in DDR coordinates as given, `RANK,ROW_FIRST,ROW_COUNT`
/// ([`BoardOptions::window`]).
pub fn parse_window(s: &str) -> Result<[u32; 3], OptionsError> {
    let numbers = parse_list::<3>("config window", s)?;
    let mut window = [0u32; 3];
    for (w, n) in window.iter_mut().zip(numbers) {
        *w = u32::try_from(n).map_err(|_| OptionsError::WindowNumberTooLarge(n))?;
    }
    Ok(window)
}

/// The size of a config space as given ([`BoardOptions::config_bytes`]):
/// 64 bytes to 1 GiB.
pub fn parse_config_bytes(s: &str) -> Result<u64, OptionsError> {
    let n = parse_number(s)?;
    if !(64..=1 << 30).contains(&n) {
        return Err(OptionsError::ConfigBytesRange(n));
    }
    Ok(n)
}

impl BoardOptions {
    /// The configuration of `base` with these options applied. It is not
    /// checked yet: a core's caller checks it against the core's build
    /// first (an option the core cannot take says so, not what follows
    /// from it), then [`BoardConfig::validate`].
    pub fn apply(&self, base: BaseConfig) -> Result<BoardConfig, OptionsError> {
        let core = match &base {
            BaseConfig::Defaults => None,
            BaseConfig::Core(c) => Some(c),
        };
        let mut cfg = match core {
            Some(c) => c.clone(),
            None => BoardConfig::new(Geometry::ddr3_default()),
        };
        let link = (cfg.ports, cfg.max_words, cfg.tick_ps);
        if let Some(geometry) = self.geometry {
            cfg.geometry = geometry;
            cfg.window = super::default_window(&geometry);
        }
        let geometry = cfg.geometry;
        cfg.ports = self.ports.unwrap_or(cfg.ports);
        cfg.fifo_depth = self.fifo_depth.unwrap_or(cfg.fifo_depth);
        cfg.max_words = self.max_words.unwrap_or(cfg.max_words);
        cfg.idle_flush_ticks = self.idle_flush_ticks.unwrap_or(cfg.idle_flush_ticks);
        cfg.tick_ps = self.tick_ps.unwrap_or(cfg.tick_ps);
        cfg.board_id = self.board_id.unwrap_or(cfg.board_id);
        cfg.start_tracing &= !self.tracing_off;
        cfg.start_tags_only |= self.tags_only;
        if let Some(k) = self.stats_interval_log2 {
            let defaults = StatsConfig::default();
            cfg.statistics = Some(StatsConfig {
                interval_log2: k,
                start_enabled: !self.stats_off,
                share_log2: self.stats_share_log2.unwrap_or(defaults.share_log2),
                burst_records: self.stats_burst.unwrap_or(defaults.burst_records),
                reuse: self.reuse.then(|| {
                    let d = ReuseConfig::default();
                    ReuseConfig {
                        start_enabled: !self.reuse_off,
                        hot_pages: self.reuse_hot_pages.unwrap_or(d.hot_pages),
                        refs_per_clock: self.reuse_refs_per_clock.unwrap_or(d.refs_per_clock),
                    }
                }),
            });
        }
        let same_link = (cfg.ports, cfg.max_words, cfg.tick_ps) == link && cfg.statistics.is_none();
        if let Some(d) = self.drain {
            cfg.drain = d;
        } else if !(core.is_some() && same_link) {
            cfg.set_line_rate();
        }
        if core.is_none() {
            cfg.fit_lanes();
            if let Some(lanes) = self.lanes {
                cfg.lanes = lanes;
                cfg.refs_per_clock = DEFAULT_REFS_PER_CLOCK.min(lanes);
            }
        } else if let Some(lanes) = self.lanes {
            cfg.lanes = lanes;
        }
        if let Some(e) = self.refs_per_clock {
            cfg.refs_per_clock = e;
        }
        if let Some([rank, first, count]) = self.window {
            cfg.window =
                ConfigWindow::new(&geometry, rank, first, count).map_err(OptionsError::Window)?;
        } else if self.mapping.is_some()
            || self.config_base.is_some()
            || self.config_bytes != DEFAULT_CONFIG_BYTES
        {
            cfg.window = self.config_space_window(geometry)?;
        }
        Ok(cfg)
    }

    /// The window of the config space's physical range under the mapping.
    fn config_space_window(&self, geometry: Geometry) -> Result<ConfigWindow, OptionsError> {
        let mapping = match &self.mapping {
            Some(m) => AddressMapping::from_toml(&m.text, geometry).map_err(|source| {
                OptionsError::Mapping {
                    name: m.name.clone(),
                    source,
                }
            })?,
            None => AddressMapping::linear(geometry),
        };
        let base = match self.config_base {
            Some(b) => b,
            None => geometry
                .capacity_bytes()
                .checked_sub(self.config_bytes)
                .ok_or(OptionsError::ConfigBytesTooLarge)?,
        };
        window_for_range(&mapping, base, self.config_bytes).map_err(OptionsError::ConfigSpace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_sizes_and_drains_as_given() {
        assert_eq!(parse_window("3,100,2").unwrap(), [3, 100, 2]);
        assert!(matches!(
            parse_window("0,4294967296,1"),
            Err(OptionsError::WindowNumberTooLarge(4_294_967_296))
        ));
        assert!(matches!(parse_window("1,2"), Err(OptionsError::Given(_))));
        assert_eq!(parse_config_bytes("0x800000").unwrap(), 8 << 20);
        assert_eq!(parse_config_bytes("64").unwrap(), 64);
        assert_eq!(
            parse_config_bytes("63").unwrap_err().to_string(),
            "63 is not in 64..=1G (the config space is a few MiB)"
        );
        assert!(parse_config_bytes(&(1u64 << 30 | 1).to_string()).is_err());
        assert_eq!(
            "1/7".parse::<DrainRate>().unwrap(),
            DrainRate { num: 1, den: 7 }
        );
        assert!("1/x".parse::<DrainRate>().is_err());
    }

    fn apply(o: BoardOptions) -> BoardConfig {
        let cfg = o.apply(BaseConfig::Defaults).unwrap();
        cfg.validate().unwrap();
        cfg
    }

    #[test]
    fn without_options_the_defaults_of_board_md() {
        assert_eq!(
            apply(BoardOptions::default()),
            BoardConfig::new(Geometry::ddr3_default())
        );
    }

    #[test]
    fn lanes_fit_the_drain_unless_given() {
        // DDR-200 with 3 ports: 0.88 words per tick, one lane.
        let slow = BoardOptions {
            tick_ps: Some(10_000),
            ..BoardOptions::default()
        };
        let cfg = apply(slow.clone());
        assert_eq!((cfg.lanes, cfg.refs_per_clock), (1, 1));
        // 8 lanes would pop 7 words per clock.
        let eight = BoardOptions {
            lanes: Some(8),
            ..slow
        };
        let cfg = eight.apply(BaseConfig::Defaults).unwrap();
        assert!(cfg.validate().is_err());
        let two = apply(BoardOptions {
            lanes: Some(2),
            ..BoardOptions::default()
        });
        assert_eq!((two.lanes, two.refs_per_clock), (2, 2));
    }

    #[test]
    fn a_core_keeps_its_drain_while_its_link_is_unchanged() {
        let mut core = BoardConfig::new(Geometry::ddr3_default());
        core.drain = DrainRate { num: 1, den: 100 };
        core.lanes = 4;
        let same = BoardOptions {
            board_id: Some(2),
            lanes: Some(2),
            ..BoardOptions::default()
        };
        let cfg = same.apply(BaseConfig::Core(core.clone())).unwrap();
        assert_eq!(cfg.drain, core.drain);
        assert_eq!((cfg.lanes, cfg.refs_per_clock), (2, core.refs_per_clock));
        let other = BoardOptions {
            max_words: Some(100),
            ..BoardOptions::default()
        };
        let cfg = other.apply(BaseConfig::Core(core)).unwrap();
        assert_eq!(cfg.drain, DrainRate::line_rate(cfg.ports, 100, cfg.tick_ps));
    }

    #[test]
    fn the_window_from_rows_or_from_the_config_space() {
        let rows = apply(BoardOptions {
            geometry: Some(Geometry::preset("ddr4-64g").unwrap()),
            window: Some([3, 100, 2]),
            ..BoardOptions::default()
        });
        let w = rows.window;
        assert_eq!((w.rank, w.row_first, w.row_count), (3, 100, 2));
        let range = apply(BoardOptions {
            config_base: Some(0x1000_0000),
            ..BoardOptions::default()
        });
        assert_eq!(
            range.window.first_line(&Geometry::ddr3_default()),
            0x1000_0000 / 64
        );
        let too_large = BoardOptions {
            geometry: Some(Geometry::preset("ddr-512m").unwrap()),
            config_bytes: 1 << 30,
            ..BoardOptions::default()
        };
        assert!(matches!(
            too_large.apply(BaseConfig::Defaults),
            Err(OptionsError::ConfigBytesTooLarge)
        ));
        let bad_mapping = BoardOptions {
            mapping: Some(MappingText {
                name: "m.toml".into(),
                text: "not toml [".into(),
            }),
            ..BoardOptions::default()
        };
        let e = bad_mapping.apply(BaseConfig::Defaults).unwrap_err();
        assert_eq!(e.to_string(), "mapping file m.toml");
    }
}
