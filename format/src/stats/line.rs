//! One statistics record as a line of JSON (format.md §5.3): the lines of
//! the side file `hmtt merge` writes beside a trace and of the stream
//! `hmtt capture --live-jsonl` writes as records arrive.

use super::{ReuseRecord, StatsRecord};
use crate::geometry::Geometry;

/// One statistics record, as a line of the side file or of the live stream
/// (format.md §5.3).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatsLine {
    pub board: u8,
    pub start_tick: u64,
    pub end_tick: u64,
    pub k: u8,
    pub flags: u8,
    pub tick_ps: u16,
    /// `"rank,bank,row,col_line"` bits.
    pub geometry: String,
    pub unsent_before: u32,
    /// The Statistic Unit's counters; empty when it was off (the RDHPU on).
    pub counters: Vec<u32>,
    /// The RDHPU's section, when it was on (absent from the lines of
    /// records without it, which keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<ReuseRecord>,
}

impl StatsLine {
    pub fn from_record(r: &StatsRecord) -> StatsLine {
        let g = r.geometry;
        StatsLine {
            board: r.board,
            start_tick: r.start_tick,
            end_tick: r.end_tick,
            k: r.interval_log2,
            flags: r.flags,
            tick_ps: r.tick_ps,
            geometry: format!(
                "{},{},{},{}",
                g.rank_bits(),
                g.bank_bits(),
                g.row_bits(),
                g.col_line_bits()
            ),
            unsent_before: r.unsent_before,
            counters: r.counters.clone(),
            reuse: r.reuse.clone(),
        }
    }

    pub fn geometry(&self) -> Option<Geometry> {
        self.geometry.parse().ok()
    }
}
