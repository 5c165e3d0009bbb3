//! What a replay tells and what it keeps: the report (counts, attribution,
//! tags not placed, lost windows), the filter of the records written, and
//! where the virtual trace goes.

use super::*;

/// A log record that could not be placed at its tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unplaced {
    /// Its tag was lost; applied at the end of the lost window (`tick`).
    LostTag { board: u8, seq: u64, tick: u64 },
    /// The trace ended before its tag (a log longer than the trace).
    NoTag { board: u8, seq: u64 },
}

/// A window of a board's stream covered by lost packets: the references in
/// it are unknown, and log records whose tags were in it are applied at its
/// end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostWindow {
    pub board: u8,
    /// Tick of the GAP_BEGIN (0 if the trace starts with the gap's end).
    pub from_tick: u64,
    /// Tick of the GAP_END.
    pub to_tick: u64,
    pub packets: u64,
}

/// Counters of a replay; `table3` and `table4` follow the paper.
#[derive(Debug, Clone, Default)]
pub struct ReplayReport {
    pub references: u64,
    pub translated: u64,
    /// Untranslated references by class, indexed by `Miss::code() - 1`.
    pub misses: [u64; 3],
    /// [cpu read, cpu write, dma read, dma write] (Table 3).
    pub table3: [u64; 4],
    /// DMA requests (buffers) by direction, their sizes in bytes (Table 4).
    pub dma_requests: HashMap<&'static str, Vec<u64>>,
    /// References attributed by rule to one of a frame's several owners,
    /// indexed by `Ambiguity::code() - 1`.
    pub ambiguous: [u64; 7],
    /// The log has SWITCH records: who runs is known.
    pub switches: bool,
    /// Frames the log's CPU_AREA records give to one CPU each, and the
    /// CPUs they describe.
    pub cpu_area_frames: u64,
    pub cpu_area_cpus: u64,
    /// References made while a traced process was running (SWITCH
    /// records), and how many of them were not attributed for certain.
    pub while_traced: u64,
    pub unattributed_while_traced: u64,
    /// References that may be a traced process's: to a frame a traced
    /// process maps (the others are the kernel's or an untraced process's
    /// as far as the log tells), made while a traced process ran if the log
    /// says who runs; and how many of them were not attributed for certain
    /// (given to one of several owners by rule). The measure of
    /// `--max-unattributed`.
    pub attributable: u64,
    pub unattributed_attributable: u64,
    /// Log tags placed: each at its record, or at a number the log does
    /// not hold (`tags_without_record` of them).
    pub tags_placed: u64,
    /// Tags whose sequence number is beyond the log (a log shorter than the trace).
    pub tags_without_record: u64,
    /// Tags placed behind a later number (out of sequence order, within
    /// the window).
    pub tags_reordered: u64,
    /// Tags whose record had been applied without them (given up as lost
    /// when the window moved past, or a tag repeated): they change nothing.
    pub tags_late: u64,
    pub unplaced: Vec<Unplaced>,
    pub unplaced_count: u64,
    /// Of `unplaced_count`: records whose tags were lost, applied where
    /// that was found ([`Unplaced::LostTag`]), and records never applied
    /// ([`Unplaced::NoTag`]).
    pub lost_tags: u64,
    pub no_tags: u64,
    /// The lost windows (first 1000), and how many there were.
    pub lost_windows: Vec<LostWindow>,
    pub lost_window_count: u64,
    /// References handed on (passed the view).
    pub selected: u64,
}

impl ReplayReport {
    pub fn miss_rate(&self) -> f64 {
        if self.references == 0 {
            0.0
        } else {
            1.0 - self.translated as f64 / self.references as f64
        }
    }
    pub fn miss_count(&self, m: Miss) -> u64 {
        self.misses[usize::from(m.code() - 1)]
    }
    pub fn ambiguous_count(&self, a: Ambiguity) -> u64 {
        self.ambiguous[usize::from(a.code() - 1)]
    }
    /// Log records placed at their own tags.
    pub fn records_placed(&self) -> u64 {
        self.tags_placed - self.tags_without_record
    }
    /// References not attributed for certain: in a frame no process maps
    /// (nor a page table or a DMA buffer explains), or given to one of a
    /// frame's several owners by rule.
    pub fn unattributed(&self) -> u64 {
        self.miss_count(Miss::Unmapped) + self.ambiguous.iter().sum::<u64>()
    }
    /// The threshold on [`Self::unattributed_percent`] that applies: the
    /// one given, else [`DEFAULT_MAX_UNATTRIBUTED`] when the log says who
    /// runs (without SWITCH records no reference to a frame several
    /// processes map is certain, so no default applies).
    pub fn unattributed_limit(&self, given: Option<f64>) -> Option<f64> {
        given.or(self.switches.then_some(DEFAULT_MAX_UNATTRIBUTED))
    }
    /// The share (%) of references not attributed for certain among those
    /// the replay is expected to attribute ([`Self::attributable`]): to
    /// frames a traced process maps, made while a traced process ran (a
    /// log with SWITCH records) or whenever (a log without, which does not
    /// say who runs).
    pub fn unattributed_percent(&self) -> f64 {
        let (n, of) = (self.unattributed_attributable, self.attributable);
        if of == 0 {
            0.0
        } else {
            100.0 * n as f64 / of as f64
        }
    }
}

/// Which references to hand on.
#[derive(Debug, Clone, Default)]
pub struct ReplayFilter {
    pub pid: Option<u32>,
    /// Physical range `[lo, hi)`.
    pub pa: Option<(u64, u64)>,
    /// Virtual range `[lo, hi)` (only translated references match).
    pub va: Option<(u64, u64)>,
    /// Only between a TAG of the first event index and the next TAG of the
    /// second (on the same board), as often as the pair occurs.
    pub window: Option<(u32, u32)>,
}

impl ReplayFilter {
    pub fn is_empty(&self) -> bool {
        self.pid.is_none() && self.pa.is_none() && self.va.is_none() && self.window.is_none()
    }

    #[inline]
    pub(super) fn accepts(&self, r: &VirtualRecord) -> bool {
        let translated = r.flags & REF_TRANSLATED != 0;
        if let Some(p) = self.pid {
            if !translated || r.pid != p {
                return false;
            }
        }
        if let Some((lo, hi)) = self.pa {
            if !(lo..hi).contains(&r.pa()) {
                return false;
            }
        }
        if let Some((lo, hi)) = self.va {
            if !translated || !(lo..hi).contains(&r.vaddr) {
                return false;
            }
        }
        true
    }
}

/// What a replay hands on besides the references.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOutput {
    /// Also hand on every record that is not a reference (tags, commands,
    /// losses, gaps), whatever the filter: a virtual trace keeps them.
    pub markers: bool,
}

pub(super) fn dir_name(d: DmaDirection) -> &'static str {
    match d {
        DmaDirection::ToDevice => "to device (DMA read)",
        DmaDirection::FromDevice => "from device (DMA write)",
        DmaDirection::Bidirectional => "bidirectional",
        DmaDirection::None => "none",
    }
}
