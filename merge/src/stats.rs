//! Summaries of a trace: counts by kind and board, the read/write mix, the
//! bandwidth over time in the form of the paper's Table 5, the tags seen and
//! the losses.

use std::collections::BTreeMap;

use hmtt_format::trace::{RecordKind, TraceRecord};

/// One interval of the bandwidth table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interval {
    pub start_tick: u64,
    pub reads: u64,
    pub writes: u64,
}

/// Everything `hmtt stats` prints.
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
    pub intervals: Vec<Interval>,
    pub distinct_lines: Option<u64>,
}

impl TraceStats {
    /// An empty summary with bandwidth intervals of `interval_ticks`.
    pub fn new(interval_ticks: u64) -> TraceStats {
        TraceStats {
            interval_ticks: interval_ticks.max(1),
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
                let slot = ((r.tick.saturating_sub(first)) / self.interval_ticks) as usize;
                if slot >= self.intervals.len() {
                    let it = self.interval_ticks;
                    self.intervals
                        .extend((self.intervals.len()..=slot).map(|i| Interval {
                            start_tick: first + i as u64 * it,
                            ..Default::default()
                        }));
                }
                let b = self.by_board.entry(r.board()).or_default();
                if write {
                    self.writes += 1;
                    self.intervals[slot].writes += 1;
                    b.1 += 1;
                } else {
                    self.reads += 1;
                    self.intervals[slot].reads += 1;
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

    pub fn references(&self) -> u64 {
        self.reads + self.writes
    }
}
