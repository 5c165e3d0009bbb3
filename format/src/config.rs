//! The configuration space: the board's window of DDR coordinates, event
//! indices and inner commands (format.md §6).

use crate::geometry::{DdrCoord, Geometry, GeometryError, LINE_BYTES};

/// Inner commands: event indices 0..=63.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InnerCommand {
    BeginTracing,
    EndTracing,
    TagsOnly,
    TraceAll,
    InsertTag,
    Sync,
    /// 6: switches the Statistic Unit on (format.md §6; no effect on a
    /// board without the unit).
    StatsOn,
    /// 7: switches the Statistic Unit off.
    StatsOff,
    /// `32 + k` for `k` in 6..=31: statistics intervals of `2^k` ticks.
    StatsInterval(u8),
    /// 8: switches the Reuse Distance & Hot Pages Unit on (no effect on a
    /// board without it).
    ReuseOn,
    /// 9: switches the RDHPU off.
    ReuseOff,
    /// 10: statistics-only mode: tags-only and every statistics unit of
    /// the board on (no effect on a board without a statistics unit).
    StatsOnly,
    /// 11..=37: recorded as a CMD word, no other effect.
    Reserved(u32),
}

/// Names of `StatsInterval(k)`, `k` = 6..=31.
const STATS_INTERVAL_NAMES: [&str; 26] = [
    "STATS_INTERVAL_6",
    "STATS_INTERVAL_7",
    "STATS_INTERVAL_8",
    "STATS_INTERVAL_9",
    "STATS_INTERVAL_10",
    "STATS_INTERVAL_11",
    "STATS_INTERVAL_12",
    "STATS_INTERVAL_13",
    "STATS_INTERVAL_14",
    "STATS_INTERVAL_15",
    "STATS_INTERVAL_16",
    "STATS_INTERVAL_17",
    "STATS_INTERVAL_18",
    "STATS_INTERVAL_19",
    "STATS_INTERVAL_20",
    "STATS_INTERVAL_21",
    "STATS_INTERVAL_22",
    "STATS_INTERVAL_23",
    "STATS_INTERVAL_24",
    "STATS_INTERVAL_25",
    "STATS_INTERVAL_26",
    "STATS_INTERVAL_27",
    "STATS_INTERVAL_28",
    "STATS_INTERVAL_29",
    "STATS_INTERVAL_30",
    "STATS_INTERVAL_31",
];

/// Inner command index of `StatsInterval(k)` is `STATS_INTERVAL_BASE + k`.
pub const STATS_INTERVAL_BASE: u32 = 32;

impl InnerCommand {
    pub fn from_index(i: u32) -> Option<InnerCommand> {
        Some(match i {
            0 => InnerCommand::BeginTracing,
            1 => InnerCommand::EndTracing,
            2 => InnerCommand::TagsOnly,
            3 => InnerCommand::TraceAll,
            4 => InnerCommand::InsertTag,
            5 => InnerCommand::Sync,
            6 => InnerCommand::StatsOn,
            7 => InnerCommand::StatsOff,
            8 => InnerCommand::ReuseOn,
            9 => InnerCommand::ReuseOff,
            10 => InnerCommand::StatsOnly,
            38..=63 => InnerCommand::StatsInterval((i - STATS_INTERVAL_BASE) as u8),
            11..=37 => InnerCommand::Reserved(i),
            _ => return None,
        })
    }
    pub const fn index(self) -> u32 {
        match self {
            InnerCommand::BeginTracing => 0,
            InnerCommand::EndTracing => 1,
            InnerCommand::TagsOnly => 2,
            InnerCommand::TraceAll => 3,
            InnerCommand::InsertTag => 4,
            InnerCommand::Sync => 5,
            InnerCommand::StatsOn => 6,
            InnerCommand::StatsOff => 7,
            InnerCommand::ReuseOn => 8,
            InnerCommand::ReuseOff => 9,
            InnerCommand::StatsOnly => 10,
            InnerCommand::StatsInterval(k) => STATS_INTERVAL_BASE + k as u32,
            InnerCommand::Reserved(i) => i,
        }
    }
    /// The command named `name`: its [`name`](Self::name) in any case,
    /// with `-` or `_` between words (`BEGIN_TRACING`, `begin-tracing`),
    /// or `begin` and `end` for the tracing pair. Reserved commands have
    /// no name.
    pub fn from_name(name: &str) -> Option<InnerCommand> {
        let name = name.trim().to_ascii_uppercase().replace('-', "_");
        match name.as_str() {
            "BEGIN" => return Some(InnerCommand::BeginTracing),
            "END" => return Some(InnerCommand::EndTracing),
            _ => {}
        }
        (0..64)
            .filter_map(InnerCommand::from_index)
            .filter(|c| !matches!(c, InnerCommand::Reserved(_)))
            .find(|c| c.name() == name)
    }

    /// The command's one name, as dumps and reports print it.
    pub fn name(self) -> &'static str {
        match self {
            InnerCommand::BeginTracing => "BEGIN_TRACING",
            InnerCommand::EndTracing => "END_TRACING",
            InnerCommand::TagsOnly => "TAGS_ONLY",
            InnerCommand::TraceAll => "TRACE_ALL",
            InnerCommand::InsertTag => "INSERT_TAG",
            InnerCommand::Sync => "SYNC",
            InnerCommand::StatsOn => "STATS_ON",
            InnerCommand::StatsOff => "STATS_OFF",
            InnerCommand::ReuseOn => "REUSE_ON",
            InnerCommand::ReuseOff => "REUSE_OFF",
            InnerCommand::StatsOnly => "STATS_ONLY",
            InnerCommand::StatsInterval(k) => STATS_INTERVAL_NAMES[(k.clamp(6, 31) - 6) as usize],
            InnerCommand::Reserved(_) => "RESERVED",
        }
    }
}

/// First user event index (byte offset 0x1000 in the paper).
pub const FIRST_USER_EVENT: u32 = 0x40;
/// First kernel-log sequence tag.
pub const FIRST_LOG_TAG: u32 = 0x1_0000;
/// Log sequence tags carry `seq & LOG_SEQ_MASK`.
pub const LOG_SEQ_MASK: u64 = 0xFFFF;
/// First user event index beyond the log tags (windows over 8 MiB).
pub const FIRST_HIGH_USER_EVENT: u32 = 0x2_0000;

/// What an event index means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Inner(InnerCommand),
    User(u32),
    /// A kernel log record's tag: the low 16 bits of its sequence number.
    LogSeq(u16),
}

/// Classifies an event index (format.md §6).
pub fn classify_event(index: u32) -> EventKind {
    if let Some(c) = InnerCommand::from_index(index) {
        EventKind::Inner(c)
    } else if (FIRST_LOG_TAG..FIRST_HIGH_USER_EVENT).contains(&index) {
        EventKind::LogSeq((index - FIRST_LOG_TAG) as u16)
    } else {
        EventKind::User(index)
    }
}

/// The event index that announces kernel log record `seq`.
pub fn log_tag_event(seq: u64) -> u32 {
    FIRST_LOG_TAG + (seq & LOG_SEQ_MASK) as u32
}

/// Why a window is impossible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("config window rank {rank} does not exist ({ranks} ranks)")]
    BadRank { rank: u32, ranks: u32 },
    #[error("config window rows {first}..{end} exceed the {rows} rows of the DIMM")]
    BadRows { first: u32, end: u64, rows: u32 },
    #[error("config window is empty")]
    Empty,
    #[error(
        "config window of {lines} lines holds more event indices than a TAG word can carry (2^20)"
    )]
    TooLarge { lines: u64 },
    #[error("config space of {0} bytes is not a whole number of rows of every bank")]
    NotWholeRows(u64),
    #[error(transparent)]
    Geometry(#[from] GeometryError),
}

/// The window of DDR coordinates the config unit matches: one rank and a
/// range of rows, all banks and columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigWindow {
    pub rank: u32,
    pub row_first: u32,
    pub row_count: u32,
}

impl ConfigWindow {
    pub fn new(
        g: &Geometry,
        rank: u32,
        row_first: u32,
        row_count: u32,
    ) -> Result<Self, WindowError> {
        if rank >= g.ranks() {
            return Err(WindowError::BadRank {
                rank,
                ranks: g.ranks(),
            });
        }
        if row_count == 0 {
            return Err(WindowError::Empty);
        }
        let end = u64::from(row_first) + u64::from(row_count);
        if end > u64::from(g.rows()) {
            return Err(WindowError::BadRows {
                first: row_first,
                end,
                rows: g.rows(),
            });
        }
        let w = ConfigWindow {
            rank,
            row_first,
            row_count,
        };
        if w.lines(g) > 1 << 20 {
            return Err(WindowError::TooLarge { lines: w.lines(g) });
        }
        Ok(w)
    }

    /// The window that holds the top `bytes` of the DIMM under the linear
    /// mapping (the default `memmap=` reservation at the top of memory).
    pub fn top_of_memory(g: &Geometry, bytes: u64) -> Result<Self, WindowError> {
        let row_bytes = u64::from(g.lines_per_row()) * u64::from(g.banks()) * LINE_BYTES;
        if bytes == 0 || !bytes.is_multiple_of(row_bytes) {
            return Err(WindowError::NotWholeRows(bytes));
        }
        let rows = bytes / row_bytes;
        if rows > u64::from(g.rows()) {
            return Err(WindowError::NotWholeRows(bytes));
        }
        let rows = rows as u32;
        ConfigWindow::new(g, g.ranks() - 1, g.rows() - rows, rows)
    }

    /// The window that holds physical range `[base, base+bytes)` under the
    /// linear mapping.
    pub fn linear_range(g: &Geometry, base: u64, bytes: u64) -> Result<Self, WindowError> {
        let row_bytes = u64::from(g.lines_per_row()) * u64::from(g.banks()) * LINE_BYTES;
        if bytes == 0 || !bytes.is_multiple_of(row_bytes) || !base.is_multiple_of(row_bytes) {
            return Err(WindowError::NotWholeRows(bytes));
        }
        let first = g.coord(base / LINE_BYTES);
        let last = g.coord((base + bytes) / LINE_BYTES - 1);
        if first.rank != last.rank {
            return Err(WindowError::NotWholeRows(bytes));
        }
        ConfigWindow::new(g, first.rank, first.row, last.row - first.row + 1)
    }

    /// Number of lines in the window.
    pub fn lines(&self, g: &Geometry) -> u64 {
        u64::from(self.row_count) * u64::from(g.banks()) * u64::from(g.lines_per_row())
    }

    /// Line index of event 0.
    pub fn first_line(&self, g: &Geometry) -> u64 {
        g.line_index_unchecked(DdrCoord {
            rank: self.rank,
            bank: 0,
            row: self.row_first,
            col_line: 0,
        })
    }

    /// Whether `(rank, row)` is inside; the hardware compares only these.
    #[inline]
    pub fn contains(&self, rank: u32, row: u32) -> bool {
        rank == self.rank && row.wrapping_sub(self.row_first) < self.row_count
    }

    /// The event index of a reference at `line`, if inside.
    #[inline]
    pub fn event_index(&self, g: &Geometry, line: u64) -> Option<u32> {
        let c = g.coord(line);
        if self.contains(c.rank, c.row) {
            Some((line - self.first_line(g)) as u32)
        } else {
            None
        }
    }

    /// The line index software must touch for event `index`.
    pub fn line_of_event(&self, g: &Geometry, index: u32) -> Option<u64> {
        (u64::from(index) < self.lines(g)).then(|| self.first_line(g) + u64::from(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_commands_are_read_by_their_one_name() {
        for i in (0..11).chain(38..64) {
            let c = InnerCommand::from_index(i).unwrap();
            assert_eq!(InnerCommand::from_name(c.name()), Some(c));
            let lower = c.name().to_ascii_lowercase().replace('_', "-");
            assert_eq!(InnerCommand::from_name(&lower), Some(c), "{lower}");
        }
        assert_eq!(
            InnerCommand::from_name("begin"),
            Some(InnerCommand::BeginTracing)
        );
        assert_eq!(
            InnerCommand::from_name("End"),
            Some(InnerCommand::EndTracing)
        );
        for bad in ["RESERVED", "sync2", "", "begin_"] {
            assert_eq!(InnerCommand::from_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn event_ranges() {
        assert_eq!(
            classify_event(0),
            EventKind::Inner(InnerCommand::BeginTracing)
        );
        assert_eq!(
            classify_event(1),
            EventKind::Inner(InnerCommand::EndTracing)
        );
        assert_eq!(
            classify_event(63),
            EventKind::Inner(InnerCommand::StatsInterval(31))
        );
        assert_eq!(
            classify_event(38),
            EventKind::Inner(InnerCommand::StatsInterval(6))
        );
        assert_eq!(
            classify_event(37),
            EventKind::Inner(InnerCommand::Reserved(37))
        );
        assert_eq!(InnerCommand::StatsInterval(12).name(), "STATS_INTERVAL_12");
        assert_eq!(classify_event(64), EventKind::User(64));
        assert_eq!(classify_event(0xFFFF), EventKind::User(0xFFFF));
        assert_eq!(classify_event(0x10000), EventKind::LogSeq(0));
        assert_eq!(classify_event(0x1FFFF), EventKind::LogSeq(0xFFFF));
        assert_eq!(classify_event(0x20000), EventKind::User(0x20000));
        assert_eq!(log_tag_event(0x12345), 0x12345);
        assert_eq!(log_tag_event(0x3_0007), 0x1_0007);
        // The sequence number wraps within the log tags' range.
        assert_eq!(log_tag_event(0), FIRST_LOG_TAG);
        assert_eq!(log_tag_event(0xffff), FIRST_HIGH_USER_EVENT - 1);
        assert_eq!(log_tag_event(u64::MAX), FIRST_HIGH_USER_EVENT - 1);
        for i in 0..64 {
            assert_eq!(InnerCommand::from_index(i).unwrap().index(), i);
        }
        // END_TRACING is a read at byte offset 0x40, as in the paper.
        assert_eq!(
            u64::from(InnerCommand::EndTracing.index()) * LINE_BYTES,
            0x40
        );
        assert_eq!(u64::from(FIRST_USER_EVENT) * LINE_BYTES, 0x1000);
    }

    #[test]
    fn default_window_is_the_top_8_mib() {
        let g = Geometry::ddr3_default();
        let w = ConfigWindow::top_of_memory(&g, 8 << 20).unwrap();
        assert_eq!(w.rank, 1);
        assert_eq!(w.row_count, 128);
        assert_eq!(w.row_first, (1 << 15) - 128);
        assert_eq!(w.lines(&g), (8 << 20) / 64);
        let base_line = (g.capacity_bytes() - (8 << 20)) / 64;
        assert_eq!(w.first_line(&g), base_line);
        assert_eq!(w.event_index(&g, base_line + 5), Some(5));
        assert_eq!(w.event_index(&g, base_line - 1), None);
        assert_eq!(w.line_of_event(&g, 7), Some(base_line + 7));
        assert_eq!(w.line_of_event(&g, 1 << 17), None);
    }

    #[test]
    fn linear_range_matches_memmap() {
        let g = Geometry::ddr3_default();
        let w = ConfigWindow::linear_range(&g, 0x1000_0000, 8 << 20).unwrap();
        assert_eq!(w.first_line(&g), 0x1000_0000 / 64);
        assert_eq!((w.rank, w.row_count), (0, 128));
        assert!(ConfigWindow::linear_range(&g, 0x1000_0040, 8 << 20).is_err());
    }

    #[test]
    fn impossible_windows() {
        let g = Geometry::ddr3_default();
        assert!(matches!(
            ConfigWindow::new(&g, 2, 0, 1),
            Err(WindowError::BadRank { .. })
        ));
        assert!(matches!(
            ConfigWindow::new(&g, 0, 32767, 2),
            Err(WindowError::BadRows { .. })
        ));
        assert!(matches!(
            ConfigWindow::new(&g, 0, 0, 0),
            Err(WindowError::Empty)
        ));
        assert!(matches!(
            ConfigWindow::new(&g, 0, 0, 2048),
            Err(WindowError::TooLarge { .. })
        ));
        assert!(ConfigWindow::top_of_memory(&g, 1000).is_err());
    }
}
