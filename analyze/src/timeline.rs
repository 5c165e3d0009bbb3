//! Bandwidth over time: references per interval from the first reference
//! analysed, reads and writes apart, with the mean bank-level parallelism
//! of each interval and the I-code events seen. Memory is bounded: when
//! an interval past `max_intervals` would be needed, the interval doubles
//! and neighbours are summed. Without an interval given, it starts at
//! 1 µs and the timeline keeps at most 512 intervals, so the interval is
//! the shortest 2^k µs that spans the analysis in 512.

use hmtt_format::trace::TraceRecord;
use hmtt_format::TickLength;
use serde::Serialize;

/// Intervals kept when no interval is given.
pub const DEFAULT_INTERVALS: usize = 512;
/// Intervals kept when one is given (then it doubles).
pub const MAX_INTERVALS: usize = 1 << 20;
/// User events kept for the timeline.
pub const MAX_EVENTS: usize = 10_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Bin {
    reads: u64,
    writes: u64,
    blp_sum: u64,
    blp_windows: u64,
}

fn add(a: &Bin, b: &Bin) -> Bin {
    Bin {
        reads: a.reads + b.reads,
        writes: a.writes + b.writes,
        blp_sum: a.blp_sum + b.blp_sum,
        blp_windows: a.blp_windows + b.blp_windows,
    }
}

/// `bins` at twice their width: neighbours summed.
fn coarsened(bins: &[Bin]) -> Vec<Bin> {
    bins.chunks(2)
        .map(|c| c.iter().fold(Bin::default(), |a, b| add(&a, b)))
        .collect()
}

/// The timeline in the making.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Timeline {
    origin: Option<u64>,
    width: u64,
    max: usize,
    bins: Vec<Bin>,
    events: Vec<(u64, u32)>,
    events_dropped: u64,
    /// A part of a trace that follows another keeps every event as seen
    /// (whether one repeats an event kept depends on the part before);
    /// [`Timeline::merge`] then adds them as one pass would have.
    raw_events: Option<Vec<(u64, u32)>>,
    /// The bin the last reference went to and the ticks `lo..hi` that
    /// fall in it, so a reference in the same bin costs no division.
    cached: usize,
    cached_lo: u64,
    cached_hi: u64,
    /// The same for the last bank-parallelism window: windows close in the
    /// figures' loop after the run's references were counted, so they
    /// would miss the bin of the last reference. Not saved (0..0: none).
    #[serde(skip)]
    window_cached: usize,
    #[serde(skip)]
    window_cached_lo: u64,
    #[serde(skip)]
    window_cached_hi: u64,
}

/// One interval of the bandwidth timeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalRow {
    pub start_ns: f64,
    pub reads: u64,
    pub writes: u64,
    /// Memory traffic, MB/s (64-byte lines).
    pub mb_per_s: f64,
    /// Mean distinct banks per bank-parallelism window (windows with references).
    pub mean_banks: f64,
}

/// An I-code event on the timeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EventMark {
    pub time_ns: f64,
    pub index: u32,
    pub name: String,
}

/// The bandwidth timeline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TimelineReport {
    pub interval_ns: f64,
    pub intervals: Vec<IntervalRow>,
    pub events: Vec<EventMark>,
    /// User events beyond the first MAX_EVENTS.
    pub events_dropped: u64,
}

impl Timeline {
    /// Intervals of `width` ticks, at most `max` of them before doubling.
    pub fn new(width: u64, max: usize) -> Timeline {
        Timeline {
            origin: None,
            width: width.max(1),
            max: max.max(2),
            bins: Vec::new(),
            events: Vec::new(),
            events_dropped: 0,
            raw_events: None,
            cached: 0,
            cached_lo: 1,
            cached_hi: 0,
            window_cached: 0,
            window_cached_lo: 1,
            window_cached_hi: 0,
        }
    }

    /// A timeline of a part of a trace whose first reference (of the whole
    /// analysis) is at `origin`; `later`: the part follows another (its
    /// events are kept raw for [`Timeline::merge`]).
    pub fn for_part(width: u64, max: usize, origin: Option<u64>, later: bool) -> Timeline {
        Timeline {
            origin,
            raw_events: later.then(Vec::new),
            ..Timeline::new(width, max)
        }
    }

    /// Adds the part of the trace that follows this one (made by
    /// [`Timeline::for_part`] with the same origin and interval).
    pub fn merge(&mut self, later: Timeline, same_ticks: u64) {
        self.origin = self.origin.or(later.origin);
        let mut bins = later.bins;
        let mut width = later.width;
        while self.width < width {
            self.coarsen();
        }
        while width < self.width {
            bins = coarsened(&bins);
            width = width.saturating_mul(2);
        }
        if bins.len() > self.bins.len() {
            self.bins.resize(bins.len(), Bin::default());
        }
        for (a, b) in self.bins.iter_mut().zip(&bins) {
            *a = add(a, b);
        }
        while self.bins.len() > self.max {
            self.coarsen();
        }
        for (tick, index) in later.raw_events.unwrap_or(later.events) {
            self.event(tick, index, same_ticks);
        }
    }

    /// The tick of the first reference (None before one).
    pub fn origin(&self) -> Option<u64> {
        self.origin
    }

    #[inline]
    fn bin(&mut self, tick: u64) -> &mut Bin {
        let origin = *self.origin.get_or_insert(tick);
        let offset = tick.saturating_sub(origin);
        while offset / self.width >= self.max as u64 {
            self.coarsen();
        }
        let i = (offset / self.width) as usize;
        if i >= self.bins.len() {
            self.bins.resize(i + 1, Bin::default());
        }
        &mut self.bins[i]
    }

    fn coarsen(&mut self) {
        (self.cached_lo, self.cached_hi) = (1, 0);
        (self.window_cached_lo, self.window_cached_hi) = (1, 0);
        self.width = self.width.saturating_mul(2);
        self.bins = coarsened(&self.bins);
    }

    #[inline(always)]
    pub fn reference(&mut self, tick: u64, write: bool) {
        let b = if tick >= self.cached_lo && tick < self.cached_hi {
            &mut self.bins[self.cached]
        } else {
            self.reference_bin(tick)
        };
        if write {
            b.writes += 1;
        } else {
            b.reads += 1;
        }
    }

    /// A run of READ/WRITE records, in order: counted a bin at a time
    /// (the references of one bin found with one comparison each, then
    /// their writes summed in a loop of its own, and added to it).
    pub fn add_run(&mut self, run: &[TraceRecord]) {
        let mut rest = run;
        loop {
            let lo = self.cached_lo;
            // Ticks `lo..hi` are `lo` and the `width` after it (none when
            // no bin is cached: `hi <= lo`).
            let width = self.cached_hi.saturating_sub(lo);
            let inside = rest
                .iter()
                .position(|r| r.tick.wrapping_sub(lo) >= width)
                .unwrap_or(rest.len());
            if inside > 0 {
                let writes: u64 = rest[..inside].iter().map(|r| r.packed & 1).sum();
                let b = &mut self.bins[self.cached];
                b.writes += writes;
                b.reads += inside as u64 - writes;
            }
            let Some(r) = rest.get(inside) else {
                return;
            };
            self.reference(r.tick, r.packed & 1 == 1);
            rest = &rest[inside + 1..];
        }
    }

    /// The bin of a reference at `tick`, remembered for the next.
    #[inline(never)]
    fn reference_bin(&mut self, tick: u64) -> &mut Bin {
        let (i, lo, hi) = self.bin_span(tick);
        (self.cached, self.cached_lo, self.cached_hi) = (i, lo, hi);
        &mut self.bins[i]
    }

    /// The bin of `tick` (made if needed), and the ticks `lo..hi` that
    /// fall in it.
    fn bin_span(&mut self, tick: u64) -> (usize, u64, u64) {
        self.bin(tick);
        let origin = self.origin.unwrap_or(0);
        let i = (tick.saturating_sub(origin) / self.width) as usize;
        let lo = if i == 0 {
            0
        } else {
            origin.saturating_add(i as u64 * self.width)
        };
        // An interval as wide as the tick counter (`--interval-ms` of
        // years) ends past 2^64: the end saturates.
        let hi = origin.saturating_add((i as u64 + 1).saturating_mul(self.width));
        (i, lo, hi)
    }

    /// The bin of a bank-parallelism window starting at `tick`,
    /// remembered for the next.
    #[inline(never)]
    fn window_bin(&mut self, tick: u64) -> &mut Bin {
        let (i, lo, hi) = self.bin_span(tick);
        (
            self.window_cached,
            self.window_cached_lo,
            self.window_cached_hi,
        ) = (i, lo, hi);
        &mut self.bins[i]
    }

    /// A bank-parallelism window starting at `tick` had `banks` distinct banks.
    pub fn parallelism(&mut self, tick: u64, banks: u32) {
        if self.origin.is_none() {
            return;
        }
        // Windows close in time order, mostly in the bin of the window
        // before: the division of `bin` only when they leave it.
        let b = if tick >= self.window_cached_lo && tick < self.window_cached_hi {
            &mut self.bins[self.window_cached]
        } else {
            self.window_bin(tick.max(self.origin.unwrap_or(0)))
        };
        b.blp_sum += u64::from(banks);
        b.blp_windows += 1;
    }

    /// A user I-code event `index` at `tick`. Every board records every
    /// tag, so the same event on another board within `same_ticks` of one
    /// kept is left out.
    pub fn event(&mut self, tick: u64, index: u32, same_ticks: u64) {
        if let Some(raw) = self.raw_events.as_mut() {
            return raw.push((tick, index));
        }
        let seen = self
            .events
            .iter()
            .rev()
            .take(256)
            .any(|&(t, i)| i == index && t.abs_diff(tick) <= same_ticks);
        if seen {
            return;
        }
        if self.events.len() < MAX_EVENTS {
            self.events.push((tick, index));
        } else {
            self.events_dropped += 1;
        }
    }

    /// The report; `last_tick` (the last reference's) ends the last
    /// interval, whose rate is over the time it covers.
    pub fn report(
        &self,
        tick: TickLength,
        last_tick: u64,
        name: &dyn Fn(u32) -> String,
    ) -> TimelineReport {
        let origin = self.origin.unwrap_or(0);
        let n = self.bins.len();
        TimelineReport {
            interval_ns: tick.ns(self.width),
            intervals: self
                .bins
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let start = origin.saturating_add(i as u64 * self.width);
                    let ticks = if i + 1 == n {
                        (last_tick + 1).saturating_sub(start).clamp(1, self.width)
                    } else {
                        self.width
                    };
                    (start, ticks, b)
                })
                .map(|(start, ticks, b)| IntervalRow {
                    start_ns: tick.ns(start),
                    reads: b.reads,
                    writes: b.writes,
                    mb_per_s: (b.reads + b.writes) as f64 * 64.0 / tick.ns(ticks) * 1e3,
                    mean_banks: if b.blp_windows == 0 {
                        0.0
                    } else {
                        b.blp_sum as f64 / b.blp_windows as f64
                    },
                })
                .collect(),
            events: self
                .events
                .iter()
                .map(|&(t, index)| EventMark {
                    time_ns: tick.ns(t),
                    index,
                    name: name(index),
                })
                .collect(),
            events_dropped: self.events_dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A run counts as its references one at a time, in bins of any
        /// width, with ticks in order or not.
        #[test]
        fn a_run_is_its_references_one_at_a_time(
            steps in prop::collection::vec((0u64..400, -300i64..300, any::<bool>(), any::<bool>()), 1..600),
            width in 1u64..200,
            runs in prop::collection::vec(1usize..100, 1..10),
        ) {
            let mut tick = 1000u64;
            let records: Vec<TraceRecord> = steps
                .iter()
                .map(|&(up, back, backwards, write)| {
                    tick = if backwards { tick.saturating_add_signed(back) } else { tick + up };
                    TraceRecord::access(tick, 0, write, 64)
                })
                .collect();
            let (mut one, mut run) = (Timeline::new(width, 64), Timeline::new(width, 64));
            for r in &records {
                one.reference(r.tick, r.packed & 1 == 1);
            }
            let mut rest = &records[..];
            for &n in runs.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at(n.min(rest.len()));
                run.add_run(now);
                rest = later;
            }
            prop_assert_eq!(&one.bins, &run.bins);
            prop_assert_eq!(one.width, run.width);
        }
    }
}
