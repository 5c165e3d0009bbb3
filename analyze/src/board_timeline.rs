//! The board's Statistic Unit over time, for `hmtt analyze --plot`: per
//! board, its records' row-buffer outcomes and column commands per rank
//! and bank, summed into at most [`TIMELINE_COLUMNS`] columns of equal
//! ticks. A run too long for them merges neighbouring columns and doubles
//! their width, so memory stays bounded whatever the side file's length,
//! in one pass.

use std::collections::BTreeMap;

use hmtt_format::stats::{BankCounter, CounterLayout};

use hmtt_merge::board_statistics::StatsLine;

/// Columns a board's timeline keeps at most.
pub const TIMELINE_COLUMNS: usize = 512;

/// One column's sums.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimelineColumn {
    pub hits: u64,
    pub misses: u64,
    pub conflicts: u64,
    /// RD and WR commands (auto-precharge included) per rank and bank,
    /// rank-major.
    pub column_commands: Vec<u64>,
}

impl TimelineColumn {
    fn add(&mut self, other: &TimelineColumn) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.conflicts += other.conflicts;
        if self.column_commands.len() < other.column_commands.len() {
            self.column_commands.resize(other.column_commands.len(), 0);
        }
        for (a, b) in self.column_commands.iter_mut().zip(&other.column_commands) {
            *a += b;
        }
    }

    /// Hits among the column commands whose row-buffer outcome was
    /// counted; `None` without any.
    pub fn hit_share(&self) -> Option<f64> {
        let all = self.hits + self.misses + self.conflicts;
        (all > 0).then(|| self.hits as f64 / all as f64)
    }

    pub fn conflict_share(&self) -> Option<f64> {
        let all = self.hits + self.misses + self.conflicts;
        (all > 0).then(|| self.conflicts as f64 / all as f64)
    }
}

/// One board's Statistic Unit records over time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardTimeline {
    pub board: u8,
    pub tick_ps: u16,
    pub ranks: u32,
    pub banks: u32,
    /// The first record's start: column `i` holds the records that start
    /// in `origin + i × column_ticks ..` the next column.
    pub origin_tick: u64,
    pub column_ticks: u64,
    pub columns: Vec<TimelineColumn>,
    /// The last record's end.
    pub end_tick: u64,
    /// Records that started before the first one (a side file out of
    /// order), put into column 0.
    pub early_records: u64,
}

impl BoardTimeline {
    fn new(line: &StatsLine, layout: &CounterLayout) -> BoardTimeline {
        BoardTimeline {
            board: line.board,
            tick_ps: line.tick_ps,
            ranks: layout.ranks as u32,
            banks: layout.banks as u32,
            origin_tick: line.start_tick,
            column_ticks: line.end_tick.saturating_sub(line.start_tick).max(1),
            columns: Vec::new(),
            end_tick: line.end_tick,
            early_records: 0,
        }
    }

    /// Adds one record's counters (the layout's order).
    fn add(&mut self, line: &StatsLine, layout: &CounterLayout) {
        let mut column = TimelineColumn {
            column_commands: vec![0; layout.ranks * layout.banks],
            ..Default::default()
        };
        for r in 0..layout.ranks {
            for b in 0..layout.banks {
                let at = |c| u64::from(line.counters[layout.bank(r, b, c)]);
                column.hits += at(BankCounter::Hit);
                column.misses += at(BankCounter::Miss);
                column.conflicts += at(BankCounter::Conflict);
                column.column_commands[r * layout.banks + b] =
                    at(BankCounter::Rd) + at(BankCounter::Wr);
            }
        }
        if line.start_tick < self.origin_tick {
            self.early_records += 1;
        }
        let mut index = self.index_of(line.start_tick);
        while index >= TIMELINE_COLUMNS {
            self.halve();
            index = self.index_of(line.start_tick);
        }
        if self.columns.len() <= index {
            self.columns.resize(index + 1, TimelineColumn::default());
        }
        self.columns[index].add(&column);
        self.end_tick = self.end_tick.max(line.end_tick);
    }

    fn index_of(&self, tick: u64) -> usize {
        let index = tick.saturating_sub(self.origin_tick) / self.column_ticks;
        usize::try_from(index).unwrap_or(usize::MAX)
    }

    /// Neighbouring columns merged, each twice as wide.
    fn halve(&mut self) {
        let merged = self
            .columns
            .chunks(2)
            .map(|pair| {
                let mut c = pair[0].clone();
                if let Some(second) = pair.get(1) {
                    c.add(second);
                }
                c
            })
            .collect();
        self.columns = merged;
        self.column_ticks = self.column_ticks.saturating_mul(2);
    }
}

/// Collects the timelines of a side file's records, a line at a time.
#[derive(Debug, Default)]
pub struct TimelineBuilder {
    boards: BTreeMap<u8, (CounterLayout, BoardTimeline)>,
}

impl TimelineBuilder {
    /// Takes one record; records without the Statistic Unit's counters
    /// (the RDHPU alone) or whose geometry does not parse are not drawn.
    pub fn add(&mut self, line: &StatsLine) {
        let Some(geometry) = line.geometry() else {
            return;
        };
        let layout = CounterLayout::new(&geometry);
        if line.counters.len() != layout.len() {
            return;
        }
        let (layout, timeline) = self
            .boards
            .entry(line.board)
            .or_insert_with(|| (layout, BoardTimeline::new(line, &layout)));
        timeline.add(line, layout);
    }

    pub fn finish(self) -> Vec<BoardTimeline> {
        self.boards.into_values().map(|(_, t)| t).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::Geometry;

    fn line(board: u8, start: u64, end: u64, hits: u32, conflicts: u32, rd: u32) -> StatsLine {
        let geometry: Geometry = "1,3,14,7".parse().unwrap();
        let layout = CounterLayout::new(&geometry);
        let mut counters = vec![0u32; layout.len()];
        counters[layout.bank(0, 2, BankCounter::Hit)] = hits;
        counters[layout.bank(1, 5, BankCounter::Conflict)] = conflicts;
        counters[layout.bank(1, 5, BankCounter::Rd)] = rd;
        StatsLine {
            board,
            start_tick: start,
            end_tick: end,
            k: 10,
            flags: 1,
            tick_ps: 1250,
            geometry: "1,3,14,7".into(),
            unsent_before: 0,
            counters,
            reuse: None,
        }
    }

    #[test]
    fn a_long_run_keeps_its_sums_in_bounded_columns() {
        let mut b = TimelineBuilder::default();
        let n = 3 * TIMELINE_COLUMNS as u64 + 7;
        for i in 0..n {
            b.add(&line(0, 1000 + i * 1024, 1000 + (i + 1) * 1024, 3, 1, 2));
        }
        let t = b.finish().remove(0);
        assert!(t.columns.len() <= TIMELINE_COLUMNS);
        assert_eq!(t.column_ticks, 4 * 1024, "halved twice");
        assert_eq!(t.columns.iter().map(|c| c.hits).sum::<u64>(), 3 * n);
        assert_eq!(t.columns.iter().map(|c| c.conflicts).sum::<u64>(), n);
        let bank = 8 + 5;
        let per_bank: u64 = t.columns.iter().map(|c| c.column_commands[bank]).sum();
        assert_eq!(per_bank, 2 * n);
        assert_eq!(t.columns[0].hits, 3 * 4, "four records a column");
        assert_eq!(t.columns[0].hit_share(), Some(0.75));
        assert_eq!(t.end_tick, 1000 + n * 1024);
        assert_eq!((t.ranks, t.banks), (2, 8));
    }

    #[test]
    fn boards_apart_and_records_out_of_order_counted() {
        let mut b = TimelineBuilder::default();
        b.add(&line(1, 5000, 6000, 1, 0, 0));
        b.add(&line(0, 5000, 6000, 2, 0, 0));
        b.add(&line(1, 4000, 5000, 4, 0, 0));
        let mut no_counters = line(1, 7000, 8000, 9, 0, 0);
        no_counters.counters.clear();
        b.add(&no_counters);
        let t = b.finish();
        assert_eq!(t.iter().map(|t| t.board).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(t[1].early_records, 1);
        assert_eq!(t[1].columns[0].hits, 5);
        assert_eq!(
            t[1].columns.len(),
            1,
            "the record without counters is not drawn"
        );
        assert_eq!(
            TimelineColumn::default().hit_share(),
            None,
            "no outcome, no share"
        );
    }
}
