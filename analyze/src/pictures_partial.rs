//! The pictures of a physical trace split into runs of blocks, as the
//! analysis is (docs/format.md §15). The pictures' pass needs the whole
//! trace's first pass (its time span, the pages it touched, its hottest
//! pages: the *plot axes*), so a split run takes three steps:
//!
//! 1. the partial analyses of the runs (`--partial`), combined
//!    (`--combine`), which also write the plot axes (`--write-plot-axes`);
//! 2. each run's grids over those axes (`--plot-axes AXES --partial`): a
//!    *pictures partial*;
//! 3. `--combine` of the partial analyses and the pictures partials, which
//!    sums the grids in block order and draws the pictures of one pass
//!    over the whole trace (`--plot`).
//!
//! The same sum, over threads instead of files, draws `hmtt analyze
//! --plot --threads N`. Virtual traces are not split.

use std::io::{Read, Write};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::partial::{blocks_within, on_block_runs, PartialError, Tiling};
use super::pictures::{Pictures, HEAT_PAGES};
use super::{Access, Analysis, AnalyzeError, Analyzer, TraceInput, TraceMeta};
use hmtt_format::archive::AnyTrace;
use hmtt_format::trace::RecordKind;
use hmtt_format::trace_blocks::BlockReader;

/// The `format` field of a plot axes file.
pub const AXES_FORMAT: &str = "hmtt-analyze-plot-axes";
/// The `format` field of a pictures partial.
pub const PICTURES_FORMAT: &str = "hmtt-analyze-pictures-partial";
/// The version of both (docs/format.md §15).
pub const PICTURES_VERSION: u32 = 1;

/// What identifies the trace a file was made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TraceId {
    trace: TraceMeta,
    trace_records: u64,
    trace_blocks: usize,
}

impl TraceId {
    fn of(trace: &AnyTrace) -> TraceId {
        TraceId {
            trace: TraceInput::Physical(trace).meta(),
            trace_records: trace.len() as u64,
            trace_blocks: BlockReader::new(trace).block_count(),
        }
    }
}

/// The axes of the pictures, from the whole trace's first pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlotAxes {
    format: String,
    version: u32,
    #[serde(flatten)]
    id: TraceId,
    /// Tick of the trace's first and last references.
    first_tick: u64,
    last_tick: u64,
    /// The page numbers touched, sorted.
    pages: Vec<u64>,
    /// The hottest pages' addresses, hottest first.
    heat_pages: Vec<u64>,
}

impl PlotAxes {
    /// The axes of the pictures of the whole trace whose first pass made
    /// `analysis` (`analyzer` its state).
    pub fn of(
        meta: &TraceMeta,
        records: u64,
        blocks: usize,
        analysis: &Analysis,
        analyzer: &Analyzer,
    ) -> PlotAxes {
        let p = Pictures::new(analysis, analyzer);
        PlotAxes {
            format: AXES_FORMAT.into(),
            version: PICTURES_VERSION,
            id: TraceId {
                trace: meta.clone(),
                trace_records: records,
                trace_blocks: blocks,
            },
            first_tick: p.first_tick,
            last_tick: p.last_tick,
            pages: p.axis.pages().to_vec(),
            heat_pages: p.heat_pages,
        }
    }

    fn pictures(&self) -> Pictures {
        Pictures::with_axes(
            self.first_tick,
            self.last_tick,
            self.pages.clone(),
            self.heat_pages.clone(),
        )
    }

    /// A digest of the axes (64-bit FNV-1a over their numbers), which
    /// each pictures partial carries: grids drawn over other axes do not
    /// add up.
    fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let head = [
            self.first_tick,
            self.last_tick,
            self.pages.len() as u64,
            self.heat_pages.len() as u64,
        ];
        let numbers = head.iter().chain(&self.pages).chain(&self.heat_pages);
        for n in numbers {
            for b in n.to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    pub fn write(&self, out: impl Write) -> Result<(), PartialError> {
        Ok(serde_json::to_writer(std::io::BufWriter::new(out), self)?)
    }

    pub fn read(input: impl Read) -> Result<PlotAxes, PartialError> {
        let a: PlotAxes = serde_json::from_reader(std::io::BufReader::new(input))?;
        if a.format != AXES_FORMAT || a.version != PICTURES_VERSION {
            return Err(PartialError::Refused(format!(
                "not plot axes of version {PICTURES_VERSION} ({} version {})",
                a.format, a.version
            )));
        }
        // A file may lie: the grids are sized by these.
        if !a.pages.windows(2).all(|w| w[0] < w[1]) {
            return Err(PartialError::Refused(
                "plot axes: the pages are not in ascending order".into(),
            ));
        }
        if a.heat_pages.len() > HEAT_PAGES {
            return Err(PartialError::Refused(format!(
                "plot axes: {} heat map pages, more than {HEAT_PAGES}",
                a.heat_pages.len()
            )));
        }
        Ok(a)
    }
}

/// A grid's cells that are not zero, as (index, count) pairs.
type Cells<T> = Vec<(u32, T)>;

fn cells<T: Copy + Default + PartialEq>(grid: &[T]) -> Cells<T> {
    let zero = T::default();
    grid.iter()
        .enumerate()
        .filter(|&(_, &c)| c != zero)
        .map(|(i, &c)| (i as u32, c))
        .collect()
}

fn fill<T: Copy>(grid: &mut [T], cells: &Cells<T>, what: &str) -> Result<(), PartialError> {
    for &(i, c) in cells {
        let cell = grid.get_mut(i as usize).ok_or_else(|| {
            PartialError::Refused(format!(
                "pictures partial: {what} cell {i} is outside its grid"
            ))
        })?;
        *cell = c;
    }
    Ok(())
}

/// The grids of one run of blocks, over given plot axes.
#[derive(Serialize, Deserialize)]
pub struct PicturesPartial {
    format: String,
    version: u32,
    #[serde(flatten)]
    id: TraceId,
    pub blocks: Range<usize>,
    axes_digest: u64,
    scatter_reads: Cells<u32>,
    scatter_writes: Cells<u32>,
    heat: Cells<u32>,
    lost: Cells<u64>,
    /// References lost before the run's first reference.
    lost_before_first: u64,
    /// Tick of the run's last reference.
    last_reference_tick: Option<u64>,
}

impl PicturesPartial {
    pub fn read(input: impl Read) -> Result<PicturesPartial, PartialError> {
        let p: PicturesPartial = serde_json::from_reader(std::io::BufReader::new(input))?;
        if p.format != PICTURES_FORMAT || p.version != PICTURES_VERSION {
            return Err(PartialError::Refused(format!(
                "not a pictures partial of version {PICTURES_VERSION} ({} version {})",
                p.format, p.version
            )));
        }
        Ok(p)
    }

    fn grids(self, axes: &PlotAxes) -> Result<Pictures, PartialError> {
        let mut p = axes.pictures();
        fill(&mut p.scatter_reads, &self.scatter_reads, "reads")?;
        fill(&mut p.scatter_writes, &self.scatter_writes, "writes")?;
        fill(&mut p.heat, &self.heat, "heat map")?;
        fill(&mut p.lost, &self.lost, "lost")?;
        p.lost_before_first = self.lost_before_first;
        p.last_seen = self.last_reference_tick;
        Ok(p)
    }
}

/// The kind of a partial file, from its `format` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialKind {
    Analysis,
    Pictures,
}

/// Which kind of partial `bytes` hold (`None`: neither).
pub fn partial_kind(bytes: &[u8]) -> Option<PartialKind> {
    #[derive(Deserialize)]
    struct Format {
        format: String,
    }
    let f: Format = serde_json::from_slice(bytes).ok()?;
    match f.format.as_str() {
        super::partial::FORMAT => Some(PartialKind::Analysis),
        PICTURES_FORMAT => Some(PartialKind::Pictures),
        _ => None,
    }
}

/// The pictures' grids of blocks `blocks` of `trace` over `pictures`'
/// axes (empty grids), with the references lost before the run's first
/// reference left in `lost_before_first`.
fn grids_of_blocks(
    trace: &AnyTrace,
    mut pictures: Pictures,
    blocks: Range<usize>,
) -> Result<Pictures, AnalyzeError> {
    let mut reader = BlockReader::new(trace);
    for b in blocks {
        for r in reader.block(b)? {
            match r.kind() {
                kind @ (RecordKind::Read | RecordKind::Write) => pictures.add(&Access {
                    tick: r.tick,
                    board: r.board(),
                    pa: r.pa(),
                    write: kind == RecordKind::Write,
                    virt: None,
                }),
                RecordKind::Lost => pictures.add_lost(r.value()),
                _ => {}
            }
        }
    }
    Ok(pictures)
}

/// The pictures partial of blocks `blocks` of the physical trace `data`
/// (cut to its blocks, as `--partial`'s) over `axes`, written to `out`.
pub fn write_pictures_partial(
    data: &[u8],
    axes: &PlotAxes,
    blocks: Range<usize>,
    out: impl Write,
) -> Result<Range<usize>, PartialError> {
    let trace = AnyTrace::new_checked(data).map_err(AnalyzeError::from)?;
    let id = TraceId::of(&trace);
    if id != axes.id {
        return Err(PartialError::Refused(
            "the plot axes are of another trace".into(),
        ));
    }
    let blocks = blocks_within(blocks, id.trace_blocks)?;
    let p = grids_of_blocks(&trace, axes.pictures(), blocks.clone())?;
    let partial = PicturesPartial {
        format: PICTURES_FORMAT.into(),
        version: PICTURES_VERSION,
        id,
        blocks: blocks.clone(),
        axes_digest: axes.digest(),
        scatter_reads: cells(&p.scatter_reads),
        scatter_writes: cells(&p.scatter_writes),
        heat: cells(&p.heat),
        lost: cells(&p.lost),
        lost_before_first: p.lost_before_first,
        last_reference_tick: p.last_seen,
    };
    serde_json::to_writer(std::io::BufWriter::new(out), &partial)?;
    Ok(blocks)
}

/// The pictures of the whole trace from its pictures partials (in any
/// order, covering its blocks once), made over `axes`: those of the
/// combined analysis.
pub fn combine_pictures(
    axes: &PlotAxes,
    mut parts: Vec<PicturesPartial>,
) -> Result<Pictures, PartialError> {
    parts.sort_by_key(|p| p.blocks.start);
    let digest = axes.digest();
    let mut tiling = Tiling::new("pictures partial");
    for p in &parts {
        if p.id != axes.id {
            return Err(PartialError::Refused(
                "the pictures partials are of another trace than the partial analyses".into(),
            ));
        }
        if p.axes_digest != digest {
            return Err(PartialError::Refused(format!(
                "the pictures partial of blocks {}..{} was made over other plot axes \
                 than those of the partial analyses combined",
                p.blocks.start, p.blocks.end
            )));
        }
        tiling.take(&p.blocks)?;
    }
    tiling.finish(axes.id.trace_blocks)?;
    let mut whole: Option<Pictures> = None;
    for p in parts {
        let grids = p.grids(axes)?;
        match whole.as_mut() {
            None => whole = Some(grids),
            Some(w) => w.append(grids),
        }
    }
    let mut whole = whole.unwrap_or_else(|| axes.pictures());
    whole.settle_lost_before_first();
    Ok(whole)
}

/// The pictures of the physical trace `data` (whose first pass made
/// `analysis`) on `threads` threads, each over a run of its blocks: the
/// grids of one pass.
pub fn collect_in_parts(
    data: &[u8],
    analysis: &Analysis,
    analyzer: &Analyzer,
    threads: usize,
) -> Result<Pictures, AnalyzeError> {
    let trace = AnyTrace::new_checked(data)?;
    let blocks = BlockReader::new(&trace).block_count();
    let threads = threads.clamp(1, blocks.max(1));
    let empty = Pictures::new(analysis, analyzer);
    let parts = on_block_runs(blocks, threads, |_, run| {
        let trace = AnyTrace::new_checked(data)?;
        grids_of_blocks(&trace, empty.clone(), run)
    });
    let mut whole: Option<Pictures> = None;
    for p in parts {
        let p = p?;
        match whole.as_mut() {
            None => whole = Some(p),
            Some(w) => w.append(p),
        }
    }
    let mut whole = whole.unwrap_or(empty);
    whole.settle_lost_before_first();
    Ok(whole)
}

/// The pictures of `input` (opened from `data`) after its first pass made
/// `analysis`: block by block over `threads` threads where the analysis
/// splits ([`super::splittable`]), else record by record in one pass.
pub fn collect(
    data: &[u8],
    input: &TraceInput,
    opts: &super::AnalyzeOptions,
    analysis: &Analysis,
    analyzer: &Analyzer,
    threads: usize,
) -> Result<Pictures, AnalyzeError> {
    match super::splittable(input, opts) {
        true => collect_in_parts(data, analysis, analyzer, threads),
        false => Pictures::collect(input, opts, analysis, analyzer),
    }
}
