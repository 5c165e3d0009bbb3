//! Partial analyses (`hmtt analyze --partial FILE --blocks A..B`, combined
//! by `hmtt analyze --combine FILE...`; docs/format.md §15): the state of
//! the analyses after one run of a physical trace's blocks, saved as JSON,
//! so that runs analysed apart (on other machines, or later) merge into the
//! report of one pass over the whole trace, byte for byte. A run that does
//! not start the trace keeps what its beginning needs from the run before
//! (see each analysis' `merge`).

use std::io::{Read, Write};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::reuse_sampled::ReuseModes;
use super::{
    analyze_blocks, bank_parallelism, banks, first_reference_tick, mix, page_hotness, row_locality,
    splittable, streams, timeline, Analysis, AnalyzeError, AnalyzeOptions, Analyzer, Reuse,
    TraceInput, TraceMeta,
};
use hmtt_format::archive::AnyTrace;
use hmtt_format::trace_blocks::BlockReader;

/// The `format` field of a partial analysis.
pub const FORMAT: &str = "hmtt-analyze-partial";
/// Its version (docs/format.md §15).
pub const VERSION: u32 = 2;
/// The versions read: version 1 is version 2 without the exact and
/// sampled reuse histograms made together.
const VERSIONS_READ: [u32; 2] = [1, 2];

/// Why a partial analysis cannot be written or combined.
#[derive(Debug, thiserror::Error)]
pub enum PartialError {
    #[error(transparent)]
    Analyze(#[from] AnalyzeError),
    #[error("partial analysis: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Streams(#[from] streams::NotConverged),
}

/// The options of the analysis, as saved (all partials of one analysis
/// have the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedOptions {
    pub interval_ns: Option<f64>,
    pub blp_window_ns: f64,
    pub geometry: Option<String>,
    pub mapping_toml: Option<String>,
    pub interleave_shift: u32,
    pub top_pages: usize,
    pub stream_window: usize,
    pub stream_min_len: u64,
    pub reuse: String,
}

impl SavedOptions {
    fn new(o: &AnalyzeOptions) -> SavedOptions {
        SavedOptions {
            interval_ns: o.interval_ns,
            blp_window_ns: o.blp_window_ns,
            geometry: o.geometry.map(|g| g.to_string()),
            mapping_toml: o.mapping_toml.clone(),
            interleave_shift: o.interleave_shift,
            top_pages: o.top_pages,
            stream_window: o.stream_window,
            stream_min_len: o.stream_min_len,
            reuse: ReuseModes {
                first: o.reuse,
                beside: o.reuse_beside,
            }
            .to_string(),
        }
    }

    fn options(&self) -> Result<AnalyzeOptions, PartialError> {
        let bad = |what: String| PartialError::Refused(format!("partial analysis: {what}"));
        let reuse = self.reuse.parse::<ReuseModes>().map_err(bad)?;
        Ok(AnalyzeOptions {
            window: None,
            interval_ns: self.interval_ns,
            blp_window_ns: self.blp_window_ns,
            geometry: self
                .geometry
                .as_deref()
                .map(|g| g.parse().map_err(|e| bad(format!("geometry {g}: {e}"))))
                .transpose()?,
            mapping_toml: self.mapping_toml.clone(),
            interleave_shift: self.interleave_shift,
            top_pages: self.top_pages,
            stream_window: self.stream_window,
            stream_min_len: self.stream_min_len,
            reuse: reuse.first,
            reuse_beside: reuse.beside,
        })
    }
}

/// The analyses' state after a run of blocks.
#[derive(Serialize, Deserialize)]
struct State {
    mix: mix::MixCounts,
    timeline: timeline::Timeline,
    banks: banks::BankCounts,
    bank_parallelism: bank_parallelism::BankParallelism,
    row_locality: row_locality::RowLocality,
    pages: page_hotness::PageHotness,
    reuse: Reuse,
    /// `--reuse exact,sampled:RATE`: the sample beside the exact histogram
    /// (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reuse_beside: Option<super::reuse_sampled::SampledReuse>,
    streams: streams::Streams,
}

/// One partial analysis: blocks `blocks` of a trace of `trace_blocks`.
#[derive(Serialize, Deserialize)]
pub struct Partial {
    pub format: String,
    pub version: u32,
    pub trace: TraceMeta,
    pub trace_records: u64,
    pub trace_blocks: usize,
    pub blocks: Range<usize>,
    /// Tick of the first reference of the whole trace.
    pub origin: Option<u64>,
    pub options: SavedOptions,
    state: State,
}

/// Analyses blocks `blocks` of the physical trace `data` (its bytes; any
/// range past the last block is cut to it) and writes the partial analysis
/// to `out`.
pub fn write_partial(
    data: &[u8],
    opts: &AnalyzeOptions,
    blocks: Range<usize>,
    out: impl Write,
) -> Result<Range<usize>, PartialError> {
    let trace = AnyTrace::new_checked(data).map_err(AnalyzeError::from)?;
    let input = TraceInput::Physical(&trace);
    if !splittable(&input, opts) {
        return Err(PartialError::Refused(
            "a partial analysis is of a physical trace, without --window or --reuse sampled-size"
                .into(),
        ));
    }
    let count = BlockReader::new(&trace).block_count();
    let blocks = blocks_within(blocks, count)?;
    let origin = first_reference_tick(&trace)?;
    let later = (blocks.start > 0).then_some(origin);
    let a = analyze_blocks(&input, opts, blocks.clone(), later)?;
    let partial = Partial {
        format: FORMAT.into(),
        version: VERSION,
        trace: input.meta(),
        trace_records: trace.len() as u64,
        trace_blocks: count,
        blocks: blocks.clone(),
        origin,
        options: SavedOptions::new(opts),
        state: State {
            mix: a.mix,
            timeline: a.timeline,
            banks: a.banks,
            bank_parallelism: a.blp,
            row_locality: a.rows,
            pages: a.pages,
            reuse: a.reuse,
            reuse_beside: a.reuse_beside,
            streams: a.streams,
        },
    };
    serde_json::to_writer(std::io::BufWriter::new(out), &partial)?;
    Ok(blocks)
}

/// `blocks` cut to a trace of `count` blocks; refused where nothing of
/// them is left of a trace that has blocks.
pub(super) fn blocks_within(
    blocks: Range<usize>,
    count: usize,
) -> Result<Range<usize>, PartialError> {
    let blocks = blocks.start.min(count)..blocks.end.min(count);
    if blocks.is_empty() && count > 0 {
        return Err(PartialError::Refused(format!(
            "blocks {}..{} hold nothing: the trace has blocks 0..{count}",
            blocks.start, blocks.end
        )));
    }
    Ok(blocks)
}

/// Runs `work` on `threads` threads, the `i`-th over the `i`-th of
/// `threads` runs of `blocks` blocks that tile them in order; its results
/// in that order. The one shape of `--threads N` (the analysis and the
/// pictures alike).
pub(super) fn on_block_runs<T: Send>(
    blocks: usize,
    threads: usize,
    work: impl Fn(usize, Range<usize>) -> Result<T, AnalyzeError> + Sync,
) -> Vec<Result<T, AnalyzeError>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let run = blocks * i / threads..blocks * (i + 1) / threads;
                scope.spawn(move || work(i, run))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an analysis thread panicked"))
            .collect()
    })
}

/// The check that runs of blocks, taken in order of their start, cover a
/// trace's blocks once each; `what` names the files that hold them.
pub(super) struct Tiling {
    next: usize,
    what: &'static str,
}

impl Tiling {
    pub(super) fn new(what: &'static str) -> Tiling {
        Tiling { next: 0, what }
    }

    /// The next run: refused where it does not start where the runs
    /// before end.
    pub(super) fn take(&mut self, blocks: &Range<usize>) -> Result<(), PartialError> {
        if blocks.start != self.next {
            return Err(PartialError::Refused(format!(
                "blocks {}..{} are in no {} (or in two)",
                self.next,
                blocks.start.max(self.next),
                self.what
            )));
        }
        self.next = blocks.end;
        Ok(())
    }

    /// Refused where the runs end before the trace's `count` blocks.
    pub(super) fn finish(self, count: usize) -> Result<(), PartialError> {
        match self.next == count {
            true => Ok(()),
            false => Err(PartialError::Refused(format!(
                "blocks {}..{count} are in no {}",
                self.next, self.what
            ))),
        }
    }
}

/// Reads a partial analysis.
pub fn read_partial(input: impl Read) -> Result<Partial, PartialError> {
    let p: Partial = serde_json::from_reader(std::io::BufReader::new(input))?;
    if p.format != FORMAT || !VERSIONS_READ.contains(&p.version) {
        return Err(PartialError::Refused(format!(
            "not a partial analysis of version 1 or {VERSION} ({} version {})",
            p.format, p.version
        )));
    }
    Ok(p)
}

/// Merges partial analyses that together cover one trace's blocks (in any
/// order): the report of one pass, its options and the trace's description.
pub fn combine(
    mut parts: Vec<Partial>,
) -> Result<(Analysis, Analyzer, TraceMeta, AnalyzeOptions), PartialError> {
    parts.sort_by_key(|p| p.blocks.start);
    let Some(first) = parts.first() else {
        return Err(PartialError::Refused(
            "no partial analysis to combine".into(),
        ));
    };
    let (meta, saved) = (first.trace.clone(), first.options.clone());
    let (records, count, origin) = (first.trace_records, first.trace_blocks, first.origin);
    let opts = saved.options()?;
    let mut tiling = Tiling::new("partial analysis");
    for p in &parts {
        if p.trace != meta
            || p.trace_records != records
            || p.trace_blocks != count
            || p.origin != origin
        {
            return Err(PartialError::Refused(
                "the partial analyses are of different traces".into(),
            ));
        }
        if p.options != saved {
            return Err(PartialError::Refused(
                "the partial analyses were made with different options".into(),
            ));
        }
        tiling.take(&p.blocks)?;
    }
    tiling.finish(count)?;
    let mut whole: Option<Analyzer> = None;
    for p in parts {
        let later = (p.blocks.start > 0).then_some(origin);
        let mut a = Analyzer::for_part(&meta, &opts, later)?;
        let mut s = p.state;
        s.streams.rebuild_index();
        (
            a.mix,
            a.timeline,
            a.banks,
            a.blp,
            a.rows,
            a.pages,
            a.reuse,
            a.reuse_beside,
            a.streams,
        ) = (
            s.mix,
            s.timeline,
            s.banks,
            s.bank_parallelism,
            s.row_locality,
            s.pages,
            s.reuse,
            s.reuse_beside,
            s.streams,
        );
        match whole.as_mut() {
            None => whole = Some(a),
            Some(w) => w.merge(a)?,
        }
    }
    let mut whole = whole.expect("at least one part");
    let report = whole.finish_meta(&meta, &opts);
    Ok((report, whole, meta, opts))
}
