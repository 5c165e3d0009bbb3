//! The config unit (format.md §6, board.md step 2): references inside the
//! config window become CMD or TAG events, every other reference an ACCESS
//! event, according to the board's mode.

use hmtt_format::config::{classify_event, ConfigWindow, EventKind, InnerCommand};
use hmtt_format::geometry::Geometry;
use hmtt_format::record::BoardEvent;

use super::dsmu::Reference;

/// The board's recording mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Mode {
    /// BEGIN_TRACING / END_TRACING.
    pub tracing: bool,
    /// TAGS_ONLY / TRACE_ALL.
    pub tags_only: bool,
}

impl Mode {
    /// Whether references outside the config window become ACCESS events.
    #[inline]
    pub fn records_accesses(self) -> bool {
        self.tracing && !self.tags_only
    }

    /// The packet header flags for this mode (format.md §5).
    #[inline]
    pub fn header_flags(self) -> u8 {
        use hmtt_format::packet::{FLAG_TAGS_ONLY, FLAG_TRACING};
        (if self.tracing { FLAG_TRACING } else { 0 })
            | (if self.tags_only { FLAG_TAGS_ONLY } else { 0 })
    }
}

/// What the config unit made of one reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CuOutcome {
    /// Outside the window: record this ACCESS event.
    Access(BoardEvent),
    /// Outside the window, but the mode records no accesses.
    AccessSuppressed,
    /// A user or log event inside the window: record this TAG event.
    Tag(BoardEvent),
    /// A user or log event while tracing is off: nothing recorded.
    TagSuppressed,
    /// An inner command: it has been executed; record this CMD event.
    Inner(InnerCommand, BoardEvent),
}

/// The window comparator and the mode register.
#[derive(Debug, Clone)]
pub struct ConfigUnit {
    window: ConfigWindow,
    first_line: u64,
    window_lines: u64,
    mode: Mode,
    /// The board has a statistics unit: STATS_ONLY sets tags-only mode.
    statistics: bool,
}

impl ConfigUnit {
    pub fn new(g: &Geometry, window: ConfigWindow, mode: Mode) -> ConfigUnit {
        ConfigUnit {
            window,
            first_line: window.first_line(g),
            window_lines: window.lines(g),
            mode,
            statistics: false,
        }
    }

    /// The config unit of a board with a statistics unit, whose STATS_ONLY
    /// switches the trace to tags-only mode (format.md §6).
    pub fn with_statistics(mut self, statistics: bool) -> ConfigUnit {
        self.statistics = statistics;
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn window(&self) -> &ConfigWindow {
        &self.window
    }

    /// The window as line indices: a line `l` is inside when
    /// `l.wrapping_sub(first) < lines`.
    #[inline]
    pub fn window_range(&self) -> (u64, u64) {
        (self.first_line, self.window_lines)
    }

    /// Classifies a reference; an inner command changes the mode at once
    /// (the next reference, even in the same clock, sees the new mode).
    #[inline]
    pub fn reference(&mut self, r: &Reference) -> CuOutcome {
        // `ConfigWindow::contains` in one comparison: the window's rows of
        // one rank are one range of line indices (rank and row are above
        // bank and column in a line index).
        let inside = r.line.wrapping_sub(self.first_line) < self.window_lines;
        debug_assert_eq!(inside, self.window.contains(r.rank, r.row));
        if !inside {
            return if self.mode.records_accesses() {
                CuOutcome::Access(BoardEvent::Access {
                    line: r.line,
                    write: r.write,
                })
            } else {
                CuOutcome::AccessSuppressed
            };
        }
        // The window holds at most 2^20 lines (ConfigWindow::new checks).
        let index = (r.line - self.first_line) as u32;
        match classify_event(index) {
            EventKind::Inner(c) => {
                match c {
                    InnerCommand::BeginTracing => self.mode.tracing = true,
                    InnerCommand::EndTracing => self.mode.tracing = false,
                    InnerCommand::TagsOnly => self.mode.tags_only = true,
                    InnerCommand::TraceAll => self.mode.tags_only = false,
                    // Without a statistics unit there is nothing to keep
                    // but tags: the trace goes on as it was.
                    InnerCommand::StatsOnly => self.mode.tags_only |= self.statistics,
                    // The Statistic Unit's commands act in the unit
                    // (`Board::config_event`), SYNC in the packetizer when
                    // its CMD word is popped.
                    InnerCommand::InsertTag
                    | InnerCommand::Sync
                    | InnerCommand::StatsOn
                    | InnerCommand::StatsOff
                    | InnerCommand::StatsInterval(_)
                    | InnerCommand::ReuseOn
                    | InnerCommand::ReuseOff
                    | InnerCommand::Reserved(_) => {}
                }
                CuOutcome::Inner(c, BoardEvent::Cmd { code: index })
            }
            EventKind::User(_) | EventKind::LogSeq(_) => {
                if self.mode.tracing {
                    CuOutcome::Tag(BoardEvent::Tag {
                        event: index,
                        write: r.write,
                    })
                } else {
                    CuOutcome::TagSuppressed
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::DdrCoord;

    fn setup() -> (Geometry, ConfigUnit, u64) {
        let g = Geometry::ddr3_default();
        let w = ConfigWindow::top_of_memory(&g, 8 << 20).unwrap();
        let first = w.first_line(&g);
        let cu = ConfigUnit::new(
            &g,
            w,
            Mode {
                tracing: true,
                tags_only: false,
            },
        );
        (g, cu, first)
    }

    fn reference(g: &Geometry, line: u64, write: bool) -> Reference {
        let c: DdrCoord = g.coord(line);
        Reference {
            line,
            write,
            rank: c.rank,
            row: c.row,
        }
    }

    #[test]
    fn every_inner_command_and_mode() {
        let (g, mut cu, first) = setup();
        let outside = reference(&g, 12345, true);
        let user = reference(&g, first + 0x40, true);
        let log = reference(&g, first + 0x1_0007, false);
        let inner = |i: u64| reference(&g, first + i, false);
        assert_eq!(
            cu.reference(&outside),
            CuOutcome::Access(BoardEvent::Access {
                line: 12345,
                write: true
            })
        );
        assert_eq!(
            cu.reference(&user),
            CuOutcome::Tag(BoardEvent::Tag {
                event: 0x40,
                write: true
            })
        );
        assert_eq!(
            cu.reference(&log),
            CuOutcome::Tag(BoardEvent::Tag {
                event: 0x1_0007,
                write: false
            })
        );
        // TAGS_ONLY: tags yes, accesses no.
        assert_eq!(
            cu.reference(&inner(2)),
            CuOutcome::Inner(InnerCommand::TagsOnly, BoardEvent::Cmd { code: 2 })
        );
        assert_eq!(cu.mode().header_flags(), 3);
        assert_eq!(cu.reference(&outside), CuOutcome::AccessSuppressed);
        assert!(matches!(cu.reference(&user), CuOutcome::Tag(_)));
        // END_TRACING: only CMD words.
        assert_eq!(
            cu.reference(&inner(1)),
            CuOutcome::Inner(InnerCommand::EndTracing, BoardEvent::Cmd { code: 1 })
        );
        assert_eq!(cu.mode().header_flags(), 2);
        assert_eq!(cu.reference(&outside), CuOutcome::AccessSuppressed);
        assert_eq!(cu.reference(&user), CuOutcome::TagSuppressed);
        // Inner commands execute in every mode.
        assert_eq!(
            cu.reference(&inner(3)),
            CuOutcome::Inner(InnerCommand::TraceAll, BoardEvent::Cmd { code: 3 })
        );
        assert_eq!(cu.mode().header_flags(), 0);
        assert_eq!(cu.reference(&outside), CuOutcome::AccessSuppressed);
        assert_eq!(
            cu.reference(&inner(0)),
            CuOutcome::Inner(InnerCommand::BeginTracing, BoardEvent::Cmd { code: 0 })
        );
        assert_eq!(cu.mode().header_flags(), 1);
        assert!(matches!(cu.reference(&outside), CuOutcome::Access(_)));
        // Markers and reserved indices: a CMD word, no mode change.
        for (i, c) in [
            (4, InnerCommand::InsertTag),
            (5, InnerCommand::Sync),
            (6, InnerCommand::StatsOn),
            (8, InnerCommand::ReuseOn),
            (10, InnerCommand::StatsOnly),
            (11, InnerCommand::Reserved(11)),
            (63, InnerCommand::StatsInterval(31)),
        ] {
            assert_eq!(
                cu.reference(&inner(i)),
                CuOutcome::Inner(c, BoardEvent::Cmd { code: i as u32 })
            );
            assert_eq!(cu.mode().header_flags(), 1);
        }
        // A write to an inner command's line executes it too.
        let w = Reference {
            write: true,
            ..inner(1)
        };
        assert!(matches!(
            cu.reference(&w),
            CuOutcome::Inner(InnerCommand::EndTracing, _)
        ));
        assert!(!cu.mode().tracing);
    }

    #[test]
    fn window_edges() {
        let (g, mut cu, first) = setup();
        let before = reference(&g, first - 1, false);
        assert!(matches!(cu.reference(&before), CuOutcome::Access(_)));
        let last = first + cu.window().lines(&g) - 1;
        assert_eq!(last, g.lines() - 1);
        assert_eq!(
            cu.reference(&reference(&g, last, false)),
            CuOutcome::Tag(BoardEvent::Tag {
                event: (last - first) as u32,
                write: false
            })
        );
    }
}
