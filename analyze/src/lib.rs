//! What users study in a trace: the analyses of `hmtt analyze`, their
//! pictures and partial results, and the exports ([`export`]: CSV, Parquet,
//! DRAMsim3, Ramulator 2, gem5, Perfetto). It reads merged traces, archives
//! and virtual traces (and replays through `hmtt-merge`); it must not
//! reassemble captures, merge boards or replay logs itself (`hmtt-merge`'s
//! jobs), and it never writes over its inputs.
//!
//! `hmtt analyze`: what users study in a trace, computed in one streaming
//! pass over a physical trace (`.hmtttrace`), its archive (`.hmttz`) or a
//! virtual trace (`.hmttvtrace`), optionally restricted to the span
//! between two I-code events ([`hmtt_format::events::EventWindow`], as `hmtt
//! replay --window`). One file per analysis:
//!
//! - [`mix`]: the read/write mix (and CPU/DMA for virtual traces);
//! - [`timeline`]: bandwidth over time, with the I-code events;
//! - [`banks`]: references per rank and per bank, decoded with the
//!   trace's geometry; [`bank_parallelism`]: distinct banks per short
//!   window; [`row_locality`]: same-row references per bank (an estimate);
//! - [`page_hotness`]: the hottest pages;
//! - [`reuse_distance`]: exact LRU stack distances of lines, or
//!   [`reuse_sampled`]: estimated from a spatially hashed sample (SHARDS);
//! - [`streams`]: sequential streams and the paper's SCR;
//! - [`footprint`], [`dma_requests`]: per-process footprint and DMA
//!   request sizes of virtual traces.
//!
//! Memory is bounded by the distinct lines (reuse distances) and pages
//! (hotness), not by the references. The pictures ([`pictures`],
//! [`plot`]) take a second pass over the same records, once the first has
//! fixed the time span and the pages touched, into fixed grids.

pub mod bank_parallelism;
pub mod banks;
pub mod board_timeline;
pub mod board_twin;
pub mod dma_requests;
pub mod export;
pub mod footprint;
mod input;
pub mod mix;
mod outputs;
pub mod page_hotness;
pub mod partial;
pub mod pictures;
pub mod pictures_partial;
pub mod plot;
mod png_text;
pub mod replayed;
mod report;
pub mod reuse_distance;
pub mod reuse_sampled;
pub mod row_locality;
mod serde_tables;
pub mod streams;
pub mod timeline;

use input::user_event;
pub use input::{Access, Item, TraceInput, TraceMeta, VirtualInfo};
pub use outputs::{
    combine_files, read_plot_axes_file, write_partial_file, write_pictures_partial_file,
    write_plot_axes_file, AnalysisOutputs, Combined, OutputFileError,
};
pub use report::AnalysisReport;

use hmtt_format::TickLength;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use hmtt_format::archive::{AnyTrace, AnyTraceError, ArchiveError};
use hmtt_format::config::{classify_event, EventKind};
use hmtt_format::events::EventNames;
use hmtt_format::mapping::MappingError;
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::trace_blocks::BlockReader;
use hmtt_format::vtrace::VtraceView;
use hmtt_format::{AddressMapping, Geometry};
use serde::Serialize;

use hmtt_format::events::EventWindow;
use hmtt_merge::names::event_name;

/// Why an analysis could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    Mapping(#[from] MappingError),
    #[error(transparent)]
    Trace(#[from] AnyTraceError),
    #[error("the trace's tick length is unknown (0 in its header): its times cannot be computed")]
    UnknownTickLength,
}

/// A hasher for integer keys (the std one is made for untrusted keys and
/// costs several times more per lookup).
#[derive(Default, Clone, Copy)]
pub struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
}

/// A map with integer keys.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MulHasher>>;
/// A set of integer keys.
pub type FastSet<K> = HashSet<K, BuildHasherDefault<MulHasher>>;

/// Bucket of `d` among powers of two: 0 for 0, `k` for `2^(k-1) <= d < 2^k`.
#[inline]
pub fn log2_bucket(d: u64) -> usize {
    (64 - d.leading_zeros()) as usize
}

/// `part / whole` in percent (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// What to analyse and how.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    pub window: Option<EventWindow>,
    /// Bandwidth interval, ns; `None`: the shortest 2^k µs that spans the
    /// analysis in 512 intervals.
    pub interval_ns: Option<f64>,
    /// Bank-level parallelism window, ns.
    pub blp_window_ns: f64,
    /// The DIMM geometry, when the trace has none or to override it.
    pub geometry: Option<Geometry>,
    /// Address mapping file (TOML); linear without.
    pub mapping_toml: Option<String>,
    /// log2 of the channel interleave block of a trace of several boards.
    pub interleave_shift: u32,
    /// Hottest pages reported.
    pub top_pages: usize,
    pub stream_window: usize,
    pub stream_min_len: u64,
    /// Exact reuse distances, or sampled.
    pub reuse: reuse_sampled::ReuseMode,
    /// A sampled estimate made beside the exact histogram of `reuse`
    /// (`--reuse exact,sampled:RATE`): the report's `reuse_sampled`.
    pub reuse_beside: Option<reuse_sampled::ReuseMode>,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            window: None,
            interval_ns: None,
            blp_window_ns: bank_parallelism::DEFAULT_WINDOW_NS,
            geometry: None,
            mapping_toml: None,
            interleave_shift: 12,
            top_pages: 20,
            stream_window: streams::DEFAULT_WINDOW,
            stream_min_len: streams::DEFAULT_MIN_LEN,
            reuse: reuse_sampled::ReuseMode::Exact,
            reuse_beside: None,
        }
    }
}

/// Everything `hmtt analyze` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub virtual_trace: bool,
    pub tick_ps: u16,
    /// `BEGIN,END` event indices, when restricted to a window.
    pub window: Option<(u32, u32)>,
    pub mix: mix::Mix,
    pub duration_ns: f64,
    pub timeline: timeline::TimelineReport,
    pub banks: banks::BankReport,
    pub bank_parallelism: bank_parallelism::ParallelismReport,
    pub row_locality: row_locality::RowReport,
    pub pages: page_hotness::PageReport,
    pub reuse: reuse_distance::ReuseReport,
    /// The sampled estimate made beside the exact `reuse`, when both were
    /// asked (absent otherwise, so a report of one mode keeps its bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse_sampled: Option<reuse_distance::ReuseReport>,
    /// Over physical lines.
    pub streams: streams::StreamReport,
    /// Virtual traces: over each process's virtual lines.
    pub virtual_streams: Option<streams::StreamReport>,
    pub processes: Option<Vec<footprint::ProcessRow>>,
    pub dma_requests: Option<Vec<dma_requests::DmaRow>>,
    /// The board's statistics and their trace-side twin
    /// ([`board_twin::board_statistics`]), when the trace has them or they
    /// were asked for (absent otherwise, so other reports keep their bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub board_statistics: Option<board_twin::BoardStatisticsReport>,
}

/// Records an analysis goes over at once: a run decoded, then gone over
/// by the analyses (the mix and the timeline in loops of their own), stays
/// in cache (L1) meanwhile.
pub const RUN_RECORDS: usize = 2048;

/// The bits of a record's packed word that are 0 in a READ or WRITE.
const NOT_ACCESS_BITS: u64 = 0xe;

/// Tags of one event on several boards closer than this are one event.
const SAME_EVENT_NS: f64 = 1000.0;

/// The reuse distances in the making. One per analyzer, touched on every
/// reference: the variants stay inline (a box would add an indirection to
/// the hot path to save a few hundred bytes once).
#[derive(serde::Serialize, serde::Deserialize)]
#[allow(clippy::large_enum_variant)]
enum Reuse {
    Exact(reuse_distance::ReuseDistance),
    Sampled(reuse_sampled::SampledReuse),
}

impl Reuse {
    /// The histogram of `mode` over `lines` lines; `part`: of a part of a
    /// trace that follows another.
    fn new(mode: reuse_sampled::ReuseMode, lines: u64, part: bool) -> Reuse {
        match (mode, part) {
            (reuse_sampled::ReuseMode::Exact, false) => {
                Reuse::Exact(reuse_distance::ReuseDistance::new(lines))
            }
            (reuse_sampled::ReuseMode::Exact, true) => {
                Reuse::Exact(reuse_distance::ReuseDistance::for_later_part(lines))
            }
            (mode, false) => Reuse::Sampled(reuse_sampled::SampledReuse::new(mode)),
            (mode, true) => Reuse::Sampled(reuse_sampled::SampledReuse::for_later_part(mode)),
        }
    }
}

/// The state of the first pass.
pub struct Analyzer {
    decoder: banks::BankDecoder,
    geometry_source: &'static str,
    tick: TickLength,
    mix: mix::MixCounts,
    timeline: timeline::Timeline,
    banks: banks::BankCounts,
    blp: bank_parallelism::BankParallelism,
    rows: row_locality::RowLocality,
    pub(crate) pages: page_hotness::PageHotness,
    reuse: Reuse,
    /// The sampled estimate beside `reuse` ([`AnalyzeOptions::reuse_beside`]),
    /// fed in a loop of its own, so a run without it pays nothing per
    /// reference.
    reuse_beside: Option<reuse_sampled::SampledReuse>,
    streams: streams::Streams,
    virtual_streams: Option<streams::Streams>,
    footprint: Option<footprint::Footprint>,
    dma: Option<dma_requests::DmaRequests>,
    /// Scratch of [`Analyzer::add_run`]: the run's references.
    run_accesses: Vec<TraceRecord>,
}

impl Analyzer {
    pub fn new(input: &TraceInput, opts: &AnalyzeOptions) -> Result<Analyzer, AnalyzeError> {
        Analyzer::for_part(&input.meta(), opts, None)
    }

    /// The analyzer of a part of a physical trace: `later: Some(origin)`
    /// for a part that follows another, `origin` being the tick of the
    /// analysis' first reference (`None` when it has none); its results
    /// only make sense merged after those of the parts before
    /// ([`Analyzer::merge`]).
    pub fn for_part(
        meta: &TraceMeta,
        opts: &AnalyzeOptions,
        later: Option<Option<u64>>,
    ) -> Result<Analyzer, AnalyzeError> {
        let header_geometry = meta.geometry.as_deref().and_then(|g| g.parse().ok());
        let (geometry, geometry_source) = match (opts.geometry, header_geometry) {
            (Some(g), _) => (g, "option"),
            (None, Some(g)) => (g, "trace header"),
            (None, None) => (Geometry::default(), "assumed"),
        };
        let mapping = match &opts.mapping_toml {
            Some(t) => AddressMapping::from_toml(t, geometry)?,
            None => AddressMapping::linear(geometry),
        };
        let tick = TickLength::of_ps(meta.tick_ps).ok_or(AnalyzeError::UnknownTickLength)?;
        let ticks = |ns: f64| tick.ticks_in_ns(ns);
        let (width, max) = match opts.interval_ns {
            Some(ns) => (ticks(ns), timeline::MAX_INTERVALS),
            None => (ticks(1000.0), timeline::DEFAULT_INTERVALS),
        };
        let timeline = match later {
            Some(origin) => timeline::Timeline::for_part(width, max, origin, true),
            None => timeline::Timeline::new(width, max),
        };
        let virt = meta.virtual_trace;
        let part = later.is_some();
        let blp_ticks = ticks(opts.blp_window_ns);
        Ok(Analyzer {
            decoder: banks::BankDecoder::new(
                mapping,
                u64::from(meta.boards),
                opts.interleave_shift,
            ),
            geometry_source,
            tick,
            mix: mix::MixCounts::default(),
            timeline,
            banks: banks::BankCounts::default(),
            blp: if part {
                bank_parallelism::BankParallelism::for_later_part(blp_ticks)
            } else {
                bank_parallelism::BankParallelism::new(blp_ticks)
            },
            rows: row_locality::RowLocality::default(),
            pages: page_hotness::PageHotness::new(geometry.capacity_bytes()),
            reuse: Reuse::new(opts.reuse, geometry.lines(), part),
            reuse_beside: opts.reuse_beside.map(|mode| match part {
                false => reuse_sampled::SampledReuse::new(mode),
                true => reuse_sampled::SampledReuse::for_later_part(mode),
            }),
            streams: if part {
                streams::Streams::for_later_part(opts.stream_window, opts.stream_min_len)
            } else {
                streams::Streams::new(opts.stream_window, opts.stream_min_len)
            },
            virtual_streams: virt
                .then(|| streams::Streams::new(opts.stream_window, opts.stream_min_len)),
            footprint: virt.then(footprint::Footprint::default),
            dma: virt.then(dma_requests::DmaRequests::default),
            run_accesses: Vec::new(),
        })
    }

    /// One item of the pass.
    #[inline]
    pub fn add(&mut self, item: Item) {
        let a = match item {
            Item::Access(a) => a,
            Item::Event { tick, index } => return self.event(tick, index),
            Item::Lost { count } => return self.mix.add_lost(count),
            Item::Gap { packets } => return self.mix.add_gap(packets),
        };
        self.access(a.tick, a.board, a.pa, a.write);
        if let Some(s) = self.reuse_beside.as_mut() {
            s.access(a.pa >> 6);
        }
        if let Some(v) = a.virt {
            self.mix.add_virtual(&v, a.write);
            if let Some((pid, va)) = v.owner {
                if let Some(s) = self.virtual_streams.as_mut() {
                    s.access(pid, va >> 6);
                }
                if let Some(f) = self.footprint.as_mut() {
                    f.add(pid, va, a.write);
                }
            }
            if v.dma {
                if let Some(d) = self.dma.as_mut() {
                    d.add(a.pa >> 6, a.write);
                }
            }
        }
    }

    fn event(&mut self, tick: u64, index: u32) {
        let same = self.tick.tick_at_ns(SAME_EVENT_NS);
        self.timeline.event(tick, index, same);
    }

    /// What every analysis of a physical reference does.
    #[inline(always)]
    fn access(&mut self, tick: u64, board: u8, pa: u64, write: bool) {
        self.mix.add(tick, board, write);
        self.timeline.reference(tick, write);
        self.access_but_counts(tick, board, pa, write);
    }

    /// [`Analyzer::access`] but the mix and the timeline.
    #[inline(always)]
    fn access_but_counts(&mut self, tick: u64, board: u8, pa: u64, write: bool) {
        self.access_but_counts_and_streams(tick, board, pa, write);
        self.streams.access(0, pa >> 6);
    }

    /// [`Analyzer::access`] but the mix, the timeline and the streams.
    #[inline(always)]
    fn access_but_counts_and_streams(&mut self, tick: u64, board: u8, pa: u64, write: bool) {
        match self.decoder.bank_row(board, pa) {
            Some((id, row)) => {
                self.banks.add(id, write);
                self.rows.add(id, row);
                if let Some((start, banks)) = self.blp.add(tick, id) {
                    self.timeline.parallelism(start, banks);
                }
            }
            None => self.banks.outside(),
        }
        self.pages.add(pa, write);
        let line = pa >> 6;
        match &mut self.reuse {
            Reuse::Exact(r) => {
                r.access(line);
            }
            Reuse::Sampled(r) => r.access(line),
        }
    }

    /// The records of a physical trace, in order: as [`TraceInput::each`]
    /// gives them to [`Analyzer::add`], a block at a time. `window` is the
    /// pass's event window (its state carries from block to block).
    pub fn add_records(&mut self, records: &[TraceRecord], window: &mut Option<EventWindow>) {
        for run in records.chunks(RUN_RECORDS) {
            self.add_run(run, window);
        }
    }

    /// A run of records: its READ/WRITE records inside the window are
    /// gathered (a run of nothing else, without a window, is taken as it
    /// is), then each analysis goes over them in a loop of its own.
    fn add_run(&mut self, run: &[TraceRecord], window: &mut Option<EventWindow>) {
        let others = run
            .iter()
            .fold(0, |acc, r| acc | (r.packed & NOT_ACCESS_BITS));
        if others == 0 && window.is_none() {
            return self.add_accesses(run);
        }
        let mut accesses = std::mem::take(&mut self.run_accesses);
        accesses.clear();
        for r in run {
            if r.is_access() {
                if window.as_ref().is_none_or(|w| w.contains(r.board())) {
                    accesses.push(*r);
                }
            } else {
                // Lost references, gaps and events touch no counter of
                // the references: taken before them.
                self.add_other(r, window);
            }
        }
        self.add_accesses(&accesses);
        self.run_accesses = accesses;
    }

    /// What every analysis of a physical reference does, for a run of
    /// READ/WRITE records: the mix and the timeline (counts that a run
    /// sums) in loops of their own, the rest a reference at a time in one
    /// loop, where the work of one analysis overlaps the waits of another
    /// (the stream detector's and the reuse distances' steps depend each
    /// on the one before: apart, their loops run slower).
    fn add_accesses(&mut self, run: &[TraceRecord]) {
        self.mix.add_run(run);
        self.timeline.add_run(run);
        let Analyzer {
            decoder,
            banks,
            rows,
            blp,
            timeline,
            pages,
            reuse,
            ..
        } = self;
        let shared = SharedFigures {
            banks,
            rows,
            blp,
            timeline,
            pages,
        };
        // One loop per decoder and reuse mode, chosen once per run: their
        // numbers stay in registers over the loop.
        match (decoder.linear(), reuse) {
            (Some(d), Reuse::Exact(r)) => shared.add_run(
                run,
                |b, pa| d.bank_row(b, pa),
                |line| {
                    r.access(line);
                },
            ),
            (Some(d), Reuse::Sampled(r)) => {
                shared.add_run(run, |b, pa| d.bank_row(b, pa), |line| r.access(line))
            }
            (None, Reuse::Exact(r)) => shared.add_run(
                run,
                |b, pa| decoder.bank_row(b, pa),
                |line| {
                    r.access(line);
                },
            ),
            (None, Reuse::Sampled(r)) => {
                shared.add_run(run, |b, pa| decoder.bank_row(b, pa), |line| r.access(line))
            }
        }
        if let Some(s) = self.reuse_beside.as_mut() {
            for r in run {
                s.access(r.pa() >> 6);
            }
        }
        self.streams.access_run(0, run.iter().map(|r| r.pa() >> 6));
    }

    /// A record other than a READ or WRITE.
    #[inline(never)]
    fn add_other(&mut self, r: &TraceRecord, window: &mut Option<EventWindow>) {
        let inside = window.as_ref().is_none_or(|w| w.contains(r.board()));
        match r.kind() {
            RecordKind::Lost if inside => self.mix.add_lost(r.value()),
            RecordKind::GapBegin if inside => self.mix.add_gap(r.value()),
            RecordKind::Tag { .. } => {
                if let Some((tick, index)) = user_event(r, window) {
                    self.event(tick, index);
                }
            }
            _ => {}
        }
    }

    /// Adds the analysis of the part of the trace that follows this one
    /// (made by [`Analyzer::for_part`] with the same input and options):
    /// afterwards this is the analysis of both parts, as one pass makes it.
    pub fn merge(&mut self, later: Analyzer) -> Result<(), streams::NotConverged> {
        self.mix.merge(&later.mix);
        let same = self.tick.tick_at_ns(SAME_EVENT_NS);
        self.timeline.merge(later.timeline, same);
        self.banks.merge(&later.banks);
        for (start, banks) in self.blp.merge(later.blp) {
            self.timeline.parallelism(start, banks);
        }
        self.rows.merge(&later.rows);
        self.pages.merge(&later.pages);
        match (&mut self.reuse, later.reuse) {
            (Reuse::Exact(a), Reuse::Exact(b)) => a.merge(b),
            (Reuse::Sampled(a), Reuse::Sampled(b)) => a.merge(b),
            _ => unreachable!("parts made with the same options"),
        }
        if let (Some(a), Some(b)) = (self.reuse_beside.as_mut(), later.reuse_beside) {
            a.merge(b);
        }
        self.streams.merge(later.streams)
    }

    /// The report, once every item has been added.
    pub fn finish(&mut self, input: &TraceInput, opts: &AnalyzeOptions) -> Analysis {
        self.finish_meta(&input.meta(), opts)
    }

    /// The report, once every item has been added.
    pub fn finish_meta(&mut self, meta: &TraceMeta, opts: &AnalyzeOptions) -> Analysis {
        if let Some((start, banks)) = self.blp.finish() {
            self.timeline.parallelism(start, banks);
        }
        let names = &meta.names;
        let mix = self.mix.mix();
        let duration_ticks = mix.last_tick - mix.first_tick.unwrap_or(mix.last_tick);
        Analysis {
            virtual_trace: meta.virtual_trace,
            tick_ps: meta.tick_ps,
            window: opts.window.as_ref().map(EventWindow::events),
            duration_ns: self.tick.ns(duration_ticks),
            timeline: self
                .timeline
                .report(self.tick, mix.last_tick, &|i| event_name(i, names)),
            banks: self
                .banks
                .report(self.decoder.geometry(), self.geometry_source),
            bank_parallelism: self.blp.report(self.tick),
            row_locality: self.rows.report(),
            pages: self.pages.report(opts.top_pages, mix.references()),
            reuse: match &self.reuse {
                Reuse::Exact(r) => r.report(),
                Reuse::Sampled(r) => r.report(),
            },
            reuse_sampled: self
                .reuse_beside
                .as_ref()
                .map(reuse_sampled::SampledReuse::report),
            streams: self.streams.finish(),
            virtual_streams: self.virtual_streams.as_mut().map(streams::Streams::finish),
            processes: self.footprint.as_ref().map(footprint::Footprint::report),
            dma_requests: self.dma.as_mut().map(dma_requests::DmaRequests::finish),
            board_statistics: None,
            mix,
        }
    }
}

/// The figures [`Analyzer::add_accesses`] takes a reference at a time in
/// one loop, where the work of one overlaps the waits of another.
struct SharedFigures<'a> {
    banks: &'a mut banks::BankCounts,
    rows: &'a mut row_locality::RowLocality,
    blp: &'a mut bank_parallelism::BankParallelism,
    timeline: &'a mut timeline::Timeline,
    pages: &'a mut page_hotness::PageHotness,
}

impl SharedFigures<'_> {
    /// What [`Analyzer::access_but_counts_and_streams`] does, for each
    /// reference of `run`, with `bank_row` the decoder's and `reuse` the
    /// reuse distances'.
    #[inline(always)]
    fn add_run(
        self,
        run: &[TraceRecord],
        bank_row: impl Fn(u8, u64) -> Option<(usize, u32)>,
        mut reuse: impl FnMut(u64),
    ) {
        for r in run {
            let (pa, write) = (r.pa(), r.packed & 1 == 1);
            match bank_row(r.board(), pa) {
                Some((id, row)) => {
                    self.banks.add(id, write);
                    self.rows.add(id, row);
                    if let Some((start, banks)) = self.blp.add(r.tick, id) {
                        self.timeline.parallelism(start, banks);
                    }
                }
                None => self.banks.outside(),
            }
            self.pages.add(pa, write);
            reuse(pa >> 6);
        }
    }
}

/// Whether [`analyze_parts`] can split this analysis: a physical trace,
/// no event window (whether a board is inside it depends on every tag
/// before), and reuse distances exact or sampled at a fixed rate (beside
/// the exact ones too).
pub fn splittable(input: &TraceInput, opts: &AnalyzeOptions) -> bool {
    matches!(input, TraceInput::Physical(_))
        && opts.window.is_none()
        && reuse_sampled::SampledReuse::mergeable(opts.reuse)
        && opts
            .reuse_beside
            .is_none_or(reuse_sampled::SampledReuse::mergeable)
}

/// The tick of the first reference of a physical trace.
pub fn first_reference_tick(trace: &AnyTrace) -> Result<Option<u64>, AnalyzeError> {
    let mut reader = BlockReader::new(trace);
    for b in 0..reader.block_count() {
        if let Some(r) = reader.block(b)?.iter().find(|r| r.is_access()) {
            return Ok(Some(r.tick));
        }
    }
    Ok(None)
}

/// The analysis of blocks `blocks` of a physical trace (the blocks of
/// [`BlockReader`]); `origin` as [`Analyzer::for_part`] takes it (`None`
/// for the part that starts the trace).
pub fn analyze_blocks(
    input: &TraceInput,
    opts: &AnalyzeOptions,
    blocks: std::ops::Range<usize>,
    origin: Option<Option<u64>>,
) -> Result<Analyzer, AnalyzeError> {
    let TraceInput::Physical(trace) = input else {
        unreachable!("only physical traces are split");
    };
    let mut a = Analyzer::for_part(&input.meta(), opts, origin)?;
    let mut reader = BlockReader::new(trace);
    let mut window = None;
    for b in blocks {
        reader.block_runs(b, RUN_RECORDS, |run| a.add_records(run, &mut window))?;
    }
    Ok(a)
}

/// Analyses `input` on `threads` threads, each over a run of the trace's
/// blocks, and merges the parts in order: the same report as
/// [`analyze`]'s. `data` holds the bytes `input` was opened from: each
/// thread opens a view of its own (an archive view decodes with scratch
/// buffers of its own). Falls back to one pass when the analysis cannot be
/// split ([`splittable`]) or the parts' streams do not merge.
pub fn analyze_parts(
    data: &[u8],
    input: &TraceInput,
    opts: &AnalyzeOptions,
    threads: usize,
) -> Result<(Analysis, Analyzer), AnalyzeError> {
    let TraceInput::Physical(trace) = input else {
        return analyze(input, opts);
    };
    let blocks = BlockReader::new(trace).block_count();
    let threads = threads.min(blocks);
    if threads <= 1 || !splittable(input, opts) {
        return analyze(input, opts);
    }
    let origin = first_reference_tick(trace)?;
    let parts = partial::on_block_runs(blocks, threads, |i, run| {
        // The caller's view verified these bytes.
        let trace = AnyTrace::new_checked_again(data)?;
        let later = (i > 0).then_some(origin);
        analyze_blocks(&TraceInput::Physical(&trace), opts, run, later)
    });
    let mut parts = parts.into_iter();
    let mut whole = parts.next().expect("at least one part")?;
    for part in parts {
        if let Err(e) = whole.merge(part?) {
            tracing::warn!("{e}: analysed again in one pass");
            return analyze(input, opts);
        }
    }
    let report = whole.finish(input, opts);
    Ok((report, whole))
}

/// Analyses `input` in one pass; returns the report and the analyzer (whose
/// pages the pictures need).
pub fn analyze(
    input: &TraceInput,
    opts: &AnalyzeOptions,
) -> Result<(Analysis, Analyzer), AnalyzeError> {
    let mut a = Analyzer::new(input, opts)?;
    match input {
        TraceInput::Physical(trace) => {
            let mut window = opts.window.clone();
            let mut reader = BlockReader::new(trace);
            for b in 0..reader.block_count() {
                reader.block_runs(b, RUN_RECORDS, |run| a.add_records(run, &mut window))?;
            }
        }
        TraceInput::Virtual(_) => input.each(opts.window.clone(), &mut |item| a.add(item))?,
    }
    let report = a.finish(input, opts);
    Ok((report, a))
}
