//! Summaries of a trace: counts by kind and board, the read/write mix, the
//! bandwidth over time in the form of the paper's Table 5, the tags seen and
//! the losses.

use std::collections::BTreeMap;

use hmtt_format::trace::{RecordKind, TraceRecord};

mod json;
mod report;
mod rows;
pub use report::StatsReport;
pub use rows::{
    BandwidthRow, BesideTrace, CounterRow, CounterTotals, DistanceBin, ReuseRow, TagRow, TagRows,
};

/// One interval of the bandwidth table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interval {
    pub start_tick: u64,
    pub reads: u64,
    pub writes: u64,
}

/// The intervals past the rows shown, summed up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaterIntervals {
    /// How many intervals (empty ones included) they span.
    pub intervals: u64,
    pub reads: u64,
    pub writes: u64,
}

/// Everything `hmtt stats` prints.
///
/// The bandwidth table keeps only the non-empty intervals among the first
/// `max_rows` (the rows shown) and a sum of the later ones, so memory does
/// not grow with the trace's time span: a corrupt trace can span 2^64
/// ticks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceStats {
    pub records: u64,
    pub reads: u64,
    pub writes: u64,
    pub by_board: BTreeMap<u8, (u64, u64)>,
    pub tags: BTreeMap<(u32, bool), u64>,
    pub commands: BTreeMap<u32, u64>,
    pub lost_words: u64,
    pub references_lost: u64,
    pub gaps: u64,
    pub packets_in_gaps: u64,
    pub first_tick: Option<u64>,
    pub last_tick: u64,
    pub interval_ticks: u64,
    max_rows: u64,
    /// Interval index (from the first tick) → its counts, for the
    /// non-empty intervals among the first `max_rows`.
    shown: BTreeMap<u64, (u64, u64)>,
    /// Index of the last non-empty interval.
    last_slot: Option<u64>,
    later_reads: u64,
    later_writes: u64,
    pub distinct_lines: Option<u64>,
}

impl TraceStats {
    /// An empty summary with bandwidth intervals of `interval_ticks`, of
    /// which the first `max_rows` are kept one by one.
    pub fn new(interval_ticks: u64, max_rows: usize) -> TraceStats {
        TraceStats {
            interval_ticks: interval_ticks.max(1),
            max_rows: max_rows as u64,
            ..Default::default()
        }
    }

    #[inline]
    pub fn add(&mut self, r: &TraceRecord) {
        self.records += 1;
        let first = *self.first_tick.get_or_insert(r.tick);
        self.last_tick = r.tick;
        match r.kind() {
            RecordKind::Read | RecordKind::Write => {
                let write = r.kind() == RecordKind::Write;
                let slot = r.tick.saturating_sub(first) / self.interval_ticks;
                self.last_slot = Some(self.last_slot.map_or(slot, |l| l.max(slot)));
                let b = self.by_board.entry(r.board()).or_default();
                let counts = if slot < self.max_rows {
                    let c = self.shown.entry(slot).or_default();
                    (&mut c.0, &mut c.1)
                } else {
                    (&mut self.later_reads, &mut self.later_writes)
                };
                if write {
                    self.writes += 1;
                    *counts.1 += 1;
                    b.1 += 1;
                } else {
                    self.reads += 1;
                    *counts.0 += 1;
                    b.0 += 1;
                }
            }
            RecordKind::Tag { write } => {
                *self.tags.entry((r.value() as u32, write)).or_default() += 1
            }
            RecordKind::Cmd => *self.commands.entry(r.value() as u32).or_default() += 1,
            RecordKind::Lost => {
                self.lost_words += 1;
                self.references_lost += r.value();
            }
            RecordKind::GapBegin => {
                self.gaps += 1;
                self.packets_in_gaps += r.value();
            }
            RecordKind::GapEnd | RecordKind::Reserved(_) => {}
        }
    }

    /// The rows of the bandwidth table: every interval, empty or not, from
    /// the first to the last with a reference, at most `max_rows` of them.
    pub fn intervals(&self) -> impl Iterator<Item = Interval> + '_ {
        let first = self.first_tick.unwrap_or(0);
        let rows = self
            .last_slot
            .map_or(0, |l| l.saturating_add(1).min(self.max_rows));
        (0..rows).map(move |slot| {
            let (reads, writes) = self.shown.get(&slot).copied().unwrap_or_default();
            Interval {
                start_tick: first.saturating_add(slot.saturating_mul(self.interval_ticks)),
                reads,
                writes,
            }
        })
    }

    /// The intervals after the rows of [`TraceStats::intervals`], summed up;
    /// `None` when there are none.
    pub fn later_intervals(&self) -> Option<LaterIntervals> {
        let last = self.last_slot?;
        (last >= self.max_rows).then(|| LaterIntervals {
            intervals: last - self.max_rows + 1,
            reads: self.later_reads,
            writes: self.later_writes,
        })
    }

    pub fn references(&self) -> u64 {
        self.reads + self.writes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(tick: u64) -> TraceRecord {
        TraceRecord::access(tick, 0, false, 64)
    }

    #[test]
    fn a_span_of_2_pow_64_ticks_keeps_memory_to_the_rows_shown() {
        // One interval per tick over the whole u64 range: a dense table
        // would need 2^64 intervals.
        let mut s = TraceStats::new(1, 20);
        for t in [0, 3, 3, 19, 20, 1 << 40, u64::MAX - 100] {
            s.add(&read(t));
        }
        assert_eq!(s.shown.len(), 3);
        let rows: Vec<Interval> = s.intervals().collect();
        assert_eq!(rows.len(), 20);
        assert_eq!((rows[3].start_tick, rows[3].reads), (3, 2));
        assert_eq!(rows.iter().map(|r| r.reads).sum::<u64>(), 4);
        let later = s.later_intervals().unwrap();
        assert_eq!(later.intervals, u64::MAX - 100 - 20 + 1);
        assert_eq!((later.reads, later.writes), (3, 0));
    }

    #[test]
    fn rows_stop_at_the_last_interval_with_references() {
        let mut s = TraceStats::new(10, 1000);
        for t in [5, 7, 35] {
            s.add(&read(t));
        }
        s.add(&TraceRecord::access(36, 0, true, 64));
        let rows: Vec<(u64, u64, u64)> = s
            .intervals()
            .map(|r| (r.start_tick, r.reads, r.writes))
            .collect();
        assert_eq!(rows, [(5, 2, 0), (15, 0, 0), (25, 0, 0), (35, 1, 1)]);
        assert_eq!(s.later_intervals(), None);
    }
}
