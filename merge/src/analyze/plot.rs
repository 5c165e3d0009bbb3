//! The pictures of `hmtt analyze --plot DIR`, each as PNG and SVG (the
//! `plotters` crate): `address_time` (address-versus-time density),
//! `bandwidth` (the timeline, I-code events marked), `reuse_cdf` (the
//! reuse-distance CDF), `page_heat` (the hottest pages over time) and
//! `banks` (references per bank). Text is drawn with a TrueType font read
//! at run time (`HMTT_FONT`, or DejaVu Sans of Debian's
//! `fonts-dejavu-core`), so no font library of the system is needed.

use hmtt_format::TickLength;
use std::io::Write;
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::AtomicFile;
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use super::pictures::{
    AddressAxis, Pictures, ProcessScatter, HEAT_COLS, LOST_COLS, SCATTER_COLS, SCATTER_ROWS,
};
use super::png_text::PngBackend;
use super::reuse_distance::ReuseReport;
use super::timeline::EventMark;
use super::Analysis;

/// Font files tried in order after `HMTT_FONT`.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];
const FONT: &str = "sans-serif";

/// Why the pictures could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("no font for the pictures' text: install Debian's fonts-dejavu-core or set HMTT_FONT to a .ttf file (tried {0})")]
    NoFont(String),
    #[error("creating {0}: {1}")]
    Dir(PathBuf, std::io::Error),
    #[error("--plot {0}: a file of that name exists; the pictures go into a directory")]
    NotADirectory(PathBuf),
    #[error("writing {0}: {1}")]
    Write(PathBuf, std::io::Error),
    #[error("drawing {0}: {1}")]
    Draw(PathBuf, String),
}

/// Registers the font once (for plotters' layout and the SVG pictures);
/// returns its bytes (for the PNG pictures' text, [`PngBackend`]).
fn font() -> Result<&'static [u8], PlotError> {
    static DONE: OnceLock<Result<&'static [u8], String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let mut tried: Vec<String> = std::env::var("HMTT_FONT").into_iter().collect();
        tried.extend(FONT_PATHS.iter().map(|s| s.to_string()));
        for p in &tried {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if register_font(FONT, FontStyle::Normal, bytes).is_ok() {
                    return Ok(bytes);
                }
            }
        }
        Err(tried.join(", "))
    })
    .clone()
    .map_err(PlotError::NoFont)
}

type DrawResult = Result<(), String>;
type Area<DB> = DrawingArea<DB, Shift>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

// ---------------------------------------------------------------------
// The figure style: every picture's size, text, palette and margins.
// ---------------------------------------------------------------------

/// Width of every picture: 3.5 in, a paper's single column, at 300 dpi.
const WIDTH: u32 = 1050;
/// Height of a picture of one panel (7:5 with [`WIDTH`]).
const HEIGHT: u32 = 750;
/// Size of all text but the title (plotters' size: the font's ascent
/// minus its descent). DejaVu Sans' em is `size / 1.164`: 34 px here,
/// 8.2 pt at 300 dpi, so the labels read at single-column width.
const TEXT: u32 = 40;
/// Size of a title.
const TITLE: u32 = 44;
/// Blank border around a picture, and room between a chart and its
/// colour bar.
const MARGIN: u32 = 18;
/// Room left of the right edge, so the last tick label is not cut.
const RIGHT_MARGIN: u32 = 40;
/// Height of a row of the page heat map: room for its label.
const PAGE_ROW: u32 = 38;
/// Height of the area under a chart: tick labels and the axis title.
const X_LABEL_AREA: u32 = TEXT * 2 + TICK_MARK + 16;
/// Length of the tick marks.
const TICK_MARK: u32 = 10;
/// At most this many labelled ticks on a horizontal axis, and on a
/// vertical one: 1-2-5 steps that fit.
const X_TICKS: usize = 6;
const Y_TICKS: usize = 7;

/// Okabe and Ito's colour-blind-safe palette: reads, writes, I-code
/// events, a second curve, lost references.
const READ_COLOUR: RGBColor = RGBColor(0, 114, 178);
const WRITE_COLOUR: RGBColor = RGBColor(230, 159, 0);
const EVENT_COLOUR: RGBColor = RGBColor(213, 94, 0);
const SECOND_COLOUR: RGBColor = RGBColor(0, 158, 115);
const LOST_COLOUR: RGBColor = RGBColor(204, 121, 167);
/// Marks drawn over the data (axis breaks, cache sizes).
const MARK_COLOUR: RGBColor = RGBColor(60, 60, 60);

fn text() -> TextStyle<'static> {
    (FONT, TEXT).into_font().color(&BLACK)
}

/// The mesh of every chart: labels in [`TEXT`], tick marks, a light
/// bold grid and a lighter minor one.
fn styled<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style(text())
        .axis_desc_style(text())
        .set_all_tick_mark_size(TICK_MARK)
        .bold_line_style(BLACK.mix(0.18))
        .light_line_style(BLACK.mix(0.06))
        .x_labels(X_TICKS)
        .y_labels(Y_TICKS)
        .max_light_lines(2)
}

/// A chart's frame: the title, the margins, and label areas as wide as
/// the widest label (`y_labels`) plus the axis title beside them.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    y_labels: impl IntoIterator<Item = String>,
) -> ChartBuilder<'a, 'b, DB> {
    let widest = y_labels
        .into_iter()
        .filter_map(|l| root.estimate_text_size(&l, &text()).ok())
        .map(|(w, _)| w)
        .max()
        .unwrap_or(0);
    let mut b = ChartBuilder::on(root);
    b.margin(MARGIN)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(widest + TEXT + TICK_MARK + 20);
    if !title.is_empty() {
        b.caption(title, (FONT, TITLE));
    }
    b
}

// ---------------------------------------------------------------------
// Axes with 1-2-5 ticks, linear or logarithmic.
// ---------------------------------------------------------------------

/// A numeric axis whose ticks are chosen here: multiples of 1, 2 or 5
/// times a power of ten on a linear axis (0 among them when the range
/// holds it), powers of the base on a logarithmic one.
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    /// Logarithmic in this base.
    log: Option<f64>,
    ticks: Vec<f64>,
    /// Ticks of the minor grid (the major ones among them).
    minor: Vec<f64>,
}

/// The multiples of `step` in `lo..=hi`.
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The 1-2-5 step that gives at most `n` ticks in `lo..=hi`.
fn nice_step(lo: f64, hi: f64, n: usize) -> f64 {
    let span = (hi - lo).abs().max(1e-12);
    let mut magnitude = 10f64.powf((span / n.max(1) as f64).log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * magnitude;
            if multiples(lo, hi, step).len() <= n.max(2) {
                return step;
            }
        }
        magnitude *= 10.0;
    }
}

impl Axis {
    /// `lo..hi` with at most `n` labelled ticks.
    fn linear(lo: f64, hi: f64, n: usize) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        let step = nice_step(lo, hi, n);
        Axis {
            lo,
            hi,
            log: None,
            ticks: multiples(lo, hi, step),
            minor: multiples(lo, hi, step / 2.0),
        }
    }

    /// `base^lo_exp..base^hi_exp`, a tick at every `every`-th power.
    fn log(base: f64, lo_exp: i32, hi_exp: i32, n: usize) -> Axis {
        let hi_exp = hi_exp.max(lo_exp + 1);
        let every = (1..)
            .find(|e| ((hi_exp - lo_exp) / e + 1) as usize <= n.max(2))
            .unwrap_or(1);
        let powers = |step: i32| {
            (lo_exp..=hi_exp)
                .filter(|k| (k - lo_exp) % step == 0)
                .map(|k| base.powi(k))
                .collect()
        };
        Axis {
            lo: base.powi(lo_exp),
            hi: base.powi(hi_exp),
            log: Some(base),
            ticks: powers(every),
            minor: powers(1),
        }
    }

    /// Counts `1..max` on a log scale: ticks at 1, 2, 5, 10, 20... or,
    /// when those are more than `n`, at powers of ten.
    fn log_counts(max: f64, n: usize) -> Axis {
        let max = max.max(2.0);
        let decades = max.log10().floor() as i32;
        let one_two_five: Vec<f64> = (0..=decades)
            .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
            .filter(|&v| v <= max * (1.0 + 1e-9))
            .collect();
        let ticks = if one_two_five.len() <= n {
            one_two_five
        } else {
            let every = (1..).find(|e| (decades / e + 1) as usize <= n).unwrap_or(1);
            (0..=decades)
                .filter(|k| k % every == 0)
                .map(|k| 10f64.powi(k))
                .collect()
        };
        Axis {
            lo: 1.0,
            hi: max,
            log: Some(10.0),
            ticks,
            minor: Vec::new(),
        }
    }

    fn position(&self, v: f64) -> f64 {
        match self.log {
            Some(_) => v.max(1e-300).ln(),
            None => v,
        }
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let (lo, hi) = (self.position(self.lo), self.position(self.hi));
        let f = if hi > lo {
            (self.position(*v) - lo) / (hi - lo)
        } else {
            0.5
        };
        limit.0 + (f64::from(limit.1 - limit.0) * f).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold => self.ticks.clone(),
            KeyPointWeight::Any => self.minor.clone(),
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, v: &f64) -> String {
        axis_number(v)
    }
}

/// Viridis (matplotlib's default, readable in grey and by colour-blind
/// readers) at `t` in 0..=1: dark purple through blue and green to
/// yellow, at the eight stops plotters' `ViridisRGB` has.
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 8] = [
        (68.0, 1.0, 84.0),
        (70.0, 50.0, 127.0),
        (54.0, 92.0, 141.0),
        (39.0, 127.0, 143.0),
        (31.0, 162.0, 136.0),
        (74.0, 194.0, 110.0),
        (160.0, 219.0, 57.0),
        (254.0, 232.0, 37.0),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Where a count `n` (1..=max) sits on the log colour scale, 0..=1.
fn density_position(n: f64, max: f64) -> f64 {
    if max <= 1.0 {
        1.0
    } else {
        n.max(1.0).ln() / max.ln()
    }
}

/// The colour of a cell of `n` references among cells of up to `max`.
fn density(n: u32, max: u32) -> RGBColor {
    viridis(density_position(f64::from(n), f64::from(max)))
}

/// Width of a colour bar's area: the bar (about 36 px), its labels and
/// its title.
const BAR_AREA: u32 = 210;

/// `root` under `title`, split into the chart's area and its colour
/// bar's, each as tall as the other.
fn with_colour_bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<(Area<DB>, Area<DB>), String> {
    let body = root.titled(title, (FONT, TITLE)).map_err(err)?;
    let width = body.dim_in_pixel().0;
    Ok(body.split_horizontally(width.saturating_sub(BAR_AREA)))
}

/// The colour bar of a density map whose cells hold up to `max`
/// references: the log scale from 1 to `max`, labelled at 1-2-5 counts
/// or powers of ten. `x_label_area`: that of the map beside it, so the
/// bar spans its plot.
fn colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    max: u32,
    x_label_area: u32,
) -> DrawResult {
    let top = f64::from(max.max(2));
    let axis = Axis::log_counts(top, Y_TICKS);
    let widest = axis
        .ticks
        .iter()
        .filter_map(|t| area.estimate_text_size(&count_label(t), &text()).ok())
        .map(|(w, _)| w)
        .max()
        .unwrap_or(0);
    let mut chart = ChartBuilder::on(area)
        .margin(MARGIN)
        .margin_left(0)
        .x_label_area_size(x_label_area)
        .right_y_label_area_size(widest + TEXT + TICK_MARK + 20)
        .build_cartesian_2d(0.0..1.0, axis)
        .map_err(err)?;
    styled(&mut chart.configure_mesh())
        .disable_mesh()
        .disable_x_axis()
        .y_desc("references per cell")
        .y_label_formatter(&count_label)
        .draw()
        .map_err(err)?;
    const STEPS: usize = 128;
    chart
        .draw_series((0..STEPS).map(|i| {
            let (f0, f1) = (i as f64 / STEPS as f64, (i + 1) as f64 / STEPS as f64);
            Rectangle::new(
                [(0.0, top.powf(f0)), (1.0, top.powf(f1))],
                viridis((f0 + f1) / 2.0).filled(),
            )
        }))
        .map_err(err)?;
    Ok(())
}

/// The length of the pictured span in milliseconds, from the first
/// reference, as the bandwidth timeline counts time (0 when the analysis
/// holds no tick length).
fn time_span_ms(a: &Analysis, p: &Pictures) -> f64 {
    TickLength::of_ps(a.tick_ps).map_or(0.0, |t| {
        t.ms(p.last_tick.saturating_add(1)) - t.ms(p.first_tick)
    })
}

/// A tick label: an integer without a fraction ("4500", not "4500.0"),
/// any other value with the fewest decimals (up to 6) that give it back.
fn axis_number(v: &f64) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { *v };
    (0..=6)
        .map(|d| format!("{v:.d$}"))
        .find(|s| {
            s.parse::<f64>()
                .is_ok_and(|x| (x - v).abs() <= 1e-9 * v.abs().max(1.0))
        })
        .unwrap_or_else(|| format!("{v}"))
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The time axis of a picture of `span` ms, from 0.
fn time_axis(span: f64) -> Axis {
    Axis::linear(0.0, span.max(1e-6), X_TICKS)
}

const TIME_DESC: &str = "time from the first reference (ms)";

/// Height of the address-versus-time picture: two panels.
const ADDRESS_TIME_HEIGHT: u32 = 1300;

/// The address axis: ticks at the starts of stretches of pages (where the
/// address under a tick is exact), at most `n`, spread evenly.
fn address_axis(axis: &AddressAxis, n: usize) -> Axis {
    let span = axis.span() as f64;
    let starts: Vec<f64> = std::iter::once(0.0).chain(axis.breaks()).collect();
    // The start of a stretch of pages near each even step, else the page
    // at the step (a long stretch, as a process's heap, gets ticks inside).
    let mut ticks: Vec<f64> = (0..n)
        .filter_map(|k| {
            let want = span * k as f64 / n as f64;
            let start = starts
                .iter()
                .copied()
                .min_by(|x, y| (x - want).abs().total_cmp(&(y - want).abs()))?;
            Some(if (start - want).abs() <= span / (2 * n) as f64 {
                start
            } else {
                want.floor()
            })
        })
        .collect();
    ticks.dedup();
    Axis {
        lo: 0.0,
        hi: span,
        log: None,
        ticks,
        minor: Vec::new(),
    }
}

/// The address axis of a panel and its title.
struct AddressScale<'a> {
    axis: &'a AddressAxis,
    desc: &'a str,
}

/// One panel of the address-versus-time picture: `grid`'s densities,
/// coloured against `max`, the axis breaks marked.
#[allow(clippy::too_many_arguments)]
fn address_panel<DB: DrawingBackend>(
    area: &Area<DB>,
    name: &str,
    scale: &AddressScale,
    grid: &[u32],
    max: u32,
    t1: f64,
    x_desc: bool,
) -> DrawResult {
    let span = scale.axis.span() as f64;
    let address = |y: &f64| format!("{:#x}", scale.axis.address_at(*y));
    let axis = address_axis(scale.axis, 5);
    let labels: Vec<String> = axis.ticks.iter().map(address).collect();
    let mut builder = frame(area, name, labels);
    if !x_desc {
        builder.x_label_area_size(TEXT + TICK_MARK + 12);
    }
    let mut chart = builder
        .build_cartesian_2d(time_axis(t1), axis)
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    styled(&mut mesh)
        .disable_mesh()
        .y_desc(scale.desc)
        .y_label_formatter(&address);
    if x_desc {
        mesh.x_desc(TIME_DESC);
    }
    mesh.draw().map_err(err)?;
    // Each break: a faint line across the panel, and the break sign (two
    // slashes) on the axis where there is room for it.
    let breaks = scale.axis.breaks();
    chart
        .draw_series(
            breaks
                .iter()
                .map(|&y| PathElement::new([(0.0, y), (t1, y)], MARK_COLOUR.mix(0.12))),
        )
        .map_err(err)?;
    let (dx, dy) = (t1 / SCATTER_COLS as f64, span / SCATTER_ROWS as f64);
    chart
        .draw_series(
            grid.iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| {
                    let (row, col) = (i / SCATTER_COLS, i % SCATTER_COLS);
                    let (x, y) = (col as f64 * dx, row as f64 * dy);
                    Rectangle::new([(x, y), (x + dx, y + dy)], density(n, max).filled())
                }),
        )
        .map_err(err)?;
    let mut last_sign = i32::MAX;
    let (base_x, base_y) = area.get_base_pixel();
    for &y in &breaks {
        let (x, py) = chart.backend_coord(&(0.0, y));
        let (x, py) = (x - base_x, py - base_y);
        if (last_sign - py).abs() < 40 {
            continue;
        }
        last_sign = py;
        let d = 7;
        area.draw(&Rectangle::new(
            [(x - 10, py - 3), (x + 10, py + 3)],
            WHITE.filled(),
        ))
        .map_err(err)?;
        for off in [-4, 4] {
            area.draw(&PathElement::new(
                [(x - 10, py + off + d / 2), (x + 10, py + off - d / 2)],
                BLACK.stroke_width(2),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// The address-versus-time picture of `reads` and `writes` over `scale`.
fn address_time_of<DB: DrawingBackend>(
    root: &Area<DB>,
    title: &str,
    scale: &AddressScale,
    reads: &[u32],
    writes: &[u32],
    t1: f64,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let max = reads.iter().chain(writes).copied().max().unwrap_or(0);
    let (main, bar) = with_colour_bar(root, title)?;
    let height = main.dim_in_pixel().1;
    let (top, bottom) = main.split_vertically(height / 2 - X_LABEL_AREA / 4);
    address_panel(&top, "reads", scale, reads, max, t1, false)?;
    address_panel(&bottom, "writes", scale, writes, max, t1, true)?;
    colour_bar(&bar, max, X_LABEL_AREA)
}

fn address_time<DB: DrawingBackend>(root: &Area<DB>, a: &Analysis, p: &Pictures) -> DrawResult {
    let scale = AddressScale {
        axis: &p.axis,
        desc: if a.virtual_trace {
            "physical address (gaps cut)"
        } else {
            "address (gaps cut)"
        },
    };
    address_time_of(
        root,
        "Address versus time",
        &scale,
        &p.scatter_reads,
        &p.scatter_writes,
        time_span_ms(a, p),
    )
}

/// A process of a virtual trace, in its virtual addresses.
fn process_address_time<DB: DrawingBackend>(
    root: &Area<DB>,
    a: &Analysis,
    p: &Pictures,
    process: &ProcessScatter,
) -> DrawResult {
    let scale = AddressScale {
        axis: &process.axis,
        desc: "virtual address (gaps cut)",
    };
    address_time_of(
        root,
        &format!("Virtual addresses of pid {}", process.pid),
        &scale,
        &process.scatter_reads,
        &process.scatter_writes,
        time_span_ms(a, p),
    )
}

/// One interval of the bandwidth picture: its start and end (ms from
/// the first reference), the reads' MB/s and the total's (reads and
/// writes stacked: the JSON's `mb_per_s`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StackedInterval {
    pub start_ms: f64,
    pub end_ms: f64,
    pub reads_mb_per_s: f64,
    pub total_mb_per_s: f64,
}

/// The time of the first reference, from which the pictures count time
/// (the JSON's times count from the trace's tick 0).
pub fn time_origin_ns(a: &Analysis) -> f64 {
    TickLength::of_ps(a.tick_ps).map_or(0.0, |t| t.ns(a.mix.first_tick.unwrap_or(0)))
}

/// The bandwidth picture's intervals.
pub fn bandwidth_stack(a: &Analysis) -> Vec<StackedInterval> {
    let t = &a.timeline;
    let origin = time_origin_ns(a);
    let n = t.intervals.len();
    t.intervals
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let refs = r.reads + r.writes;
            // The last interval ends one tick after the last reference
            // (its MB/s are over that length).
            let end_of_last = a.duration_ns + f64::from(a.tick_ps) / 1e3;
            let start_ns = r.start_ns - origin;
            let end_ns = match k + 1 == n && end_of_last > start_ns {
                true => end_of_last.min(start_ns + t.interval_ns),
                false => start_ns + t.interval_ns,
            };
            StackedInterval {
                start_ms: ms(start_ns),
                end_ms: ms(end_ns),
                reads_mb_per_s: if refs == 0 {
                    0.0
                } else {
                    r.mb_per_s * r.reads as f64 / refs as f64
                },
                total_mb_per_s: r.mb_per_s,
            }
        })
        .collect()
}

/// The outline of a step function over `intervals`: `(start, end,
/// value)` each.
fn steps(intervals: impl Iterator<Item = (f64, f64, f64)>) -> Vec<(f64, f64)> {
    intervals
        .flat_map(|(x0, x1, y)| [(x0, y), (x1, y)])
        .collect()
}

fn bandwidth<DB: DrawingBackend>(root: &Area<DB>, a: &Analysis, p: &Pictures) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let t = &a.timeline;
    let stack = bandwidth_stack(a);
    let origin = time_origin_ns(a);
    let event_ms = |e: &EventMark| ms(e.time_ns - origin);
    let event_times = t.events.iter().map(event_ms);
    let last = stack.last().map_or(1.0, |r| r.end_ms);
    let lo = event_times.clone().fold(0.0, f64::min);
    let hi = event_times.fold(last, f64::max).max(lo + 1e-6);
    // A margin, so events at the ends stay visible.
    let (x0, x1) = (lo - (hi - lo) * 0.03, hi + (hi - lo) * 0.03);
    let top = stack.iter().map(|r| r.total_mb_per_s).fold(0.0, f64::max);
    let ymax = top.max(1.0) * 1.35;
    let y = Axis::linear(0.0, ymax, Y_TICKS);
    let y_labels: Vec<String> = y.ticks.iter().map(axis_number).collect();
    let body = root
        .titled(
            &format!(
                "Bandwidth ({} ms intervals)",
                axis_number(&ms(t.interval_ns))
            ),
            (FONT, TITLE),
        )
        .map_err(err)?;
    let mut entries = vec![
        ("reads".to_string(), READ_COLOUR),
        ("writes".to_string(), WRITE_COLOUR),
    ];
    if a.mix.lost_references > 0 {
        entries.push((
            format!(
                "lost ({} references)",
                count_label(&(a.mix.lost_references as f64))
            ),
            LOST_COLOUR,
        ));
    }
    let body = legend_row(&body, &entries)?;
    let mut chart = frame(&body, "", y_labels)
        .build_cartesian_2d(Axis::linear(x0, x1, X_TICKS), y)
        .map_err(err)?;
    styled(&mut chart.configure_mesh())
        .x_desc(TIME_DESC)
        .y_desc("MB/s (64-byte lines)")
        .draw()
        .map_err(err)?;
    // The references lost: a strip along the top over the time they
    // were lost in.
    if a.mix.lost_references > 0 {
        let span = time_span_ms(a, p);
        let width = span / LOST_COLS as f64;
        chart
            .draw_series(
                p.lost
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(c, _)| {
                        let x = c as f64 * width;
                        Rectangle::new([(x, ymax * 0.96), (x + width, ymax)], LOST_COLOUR.filled())
                    }),
            )
            .map_err(err)?;
    }
    // Reads from 0, writes stacked on them: the top is the total.
    let reads = steps(
        stack
            .iter()
            .map(|r| (r.start_ms, r.end_ms, r.reads_mb_per_s)),
    );
    let totals = steps(
        stack
            .iter()
            .map(|r| (r.start_ms, r.end_ms, r.total_mb_per_s)),
    );
    let base = steps(stack.iter().map(|r| (r.start_ms, r.end_ms, 0.0)));
    if !stack.is_empty() {
        let area = |upper: &[(f64, f64)], lower: &[(f64, f64)]| -> Vec<(f64, f64)> {
            upper.iter().chain(lower.iter().rev()).copied().collect()
        };
        chart
            .draw_series(std::iter::once(Polygon::new(
                area(&reads, &base),
                READ_COLOUR.filled(),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Polygon::new(
                area(&totals, &reads),
                WRITE_COLOUR.filled(),
            )))
            .map_err(err)?;
    }
    let events: Vec<_> = t
        .events
        .iter()
        .filter(|e| (x0..=x1).contains(&event_ms(e)))
        .collect();
    let label_every = events.len().div_ceil(8).max(1);
    for (k, e) in events.iter().enumerate() {
        let x = event_ms(e);
        chart
            .draw_series(LineSeries::new(
                [(x, 0.0), (x, ymax)],
                EVENT_COLOUR.stroke_width(2),
            ))
            .map_err(err)?;
        if k % label_every == 0 {
            // Labels in the right half end at their line.
            let right_half = x > (x0 + x1) / 2.0;
            let pos = if right_half {
                Pos::new(HPos::Right, VPos::Top)
            } else {
                Pos::new(HPos::Left, VPos::Top)
            };
            let style = text().color(&EVENT_COLOUR).pos(pos);
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" {} ", e.name),
                    (x, ymax * (0.94 - 0.08 * ((k / label_every) % 2) as f64)),
                    style,
                )))
                .map_err(err)?;
        }
    }
    Ok(())
}

/// A legend in one row across the top of `area`, swatch and name for
/// each of `entries`; returns the area under it.
fn legend_row<DB: DrawingBackend>(
    area: &Area<DB>,
    entries: &[(String, RGBColor)],
) -> Result<Area<DB>, String> {
    let (row, rest) = area.split_vertically(TEXT * 3 / 2);
    let (width, height) = row.dim_in_pixel();
    let (side, gap, between) = (TEXT as i32 * 2 / 3, TEXT as i32 / 4, TEXT as i32);
    let widths: Vec<i32> = entries
        .iter()
        .map(|(name, _)| {
            row.estimate_text_size(name, &text())
                .map_or(0, |s| s.0 as i32)
        })
        .collect();
    let total: i32 = widths.iter().map(|w| side + gap + w).sum::<i32>()
        + between * (entries.len() as i32 - 1).max(0);
    let mut x = (width as i32 - total) / 2;
    let mid = height as i32 / 2;
    for ((name, colour), w) in entries.iter().zip(widths) {
        row.draw(&Rectangle::new(
            [(x, mid - side / 2), (x + side, mid + side / 2)],
            colour.filled(),
        ))
        .map_err(err)?;
        row.draw(&Text::new(
            name.clone(),
            (x + side + gap, mid),
            text().pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
        x += side + gap + w + between;
    }
    Ok(rest)
}

/// The reuse CDF as drawn: for each bucket of the histogram, the
/// distance bound `d` (a power of two, one past the bucket's last
/// distance) and the share of reuses at a distance below `d`, known
/// exactly there. Between two bounds the picture holds the share of the
/// lower one (a step), so it never shows more reuses than there are.
pub fn reuse_cdf_points(r: &ReuseReport) -> Vec<(u64, f64)> {
    let reuses: u64 = r.buckets.iter().map(|b| b.2).sum();
    let mut below = 0u64;
    r.buckets
        .iter()
        .map(|&(_, hi, n)| {
            below += n;
            (hi.saturating_add(1), below as f64 / reuses.max(1) as f64)
        })
        .collect()
}

/// The caches of a typical hierarchy marked on the reuse CDF: a fully
/// associative LRU cache of `bytes` hits exactly the reuses at a distance
/// below its lines.
const CACHE_SIZES: [(u64, &str); 3] = [
    (32 << 10, "32 KiB"),
    (1 << 20, "1 MiB"),
    (32 << 20, "32 MiB"),
];

/// A count of lines with a binary prefix: "512", "4K", "1M".
fn lines_label(v: &f64) -> String {
    let v = v.round() as u64;
    match v {
        v if v >= 1 << 30 && v % (1 << 30) == 0 => format!("{}G", v >> 30),
        v if v >= 1 << 20 && v % (1 << 20) == 0 => format!("{}M", v >> 20),
        v if v >= 1 << 10 && v % (1 << 10) == 0 => format!("{}K", v >> 10),
        v => v.to_string(),
    }
}

/// The legend's name of a reuse histogram: how it was made and of what.
fn reuse_curve_name(r: &ReuseReport) -> String {
    let reuses: u64 = r.buckets.iter().map(|b| b.2).sum();
    match &r.sampling {
        None => format!("exact ({} reuses)", count_label(&(reuses as f64))),
        Some(s) => format!("SHARDS estimate, rate {}", axis_number(&s.rate)),
    }
}

/// The reuse-distance CDF of each of `curves` (an exact histogram and
/// its sampled estimate, when both were made), as steps on a log2 axis of
/// distances in lines, the caches of [`CACHE_SIZES`] marked.
fn reuse_cdf<DB: DrawingBackend>(root: &Area<DB>, curves: &[&ReuseReport]) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let points: Vec<Vec<(u64, f64)>> = curves.iter().map(|r| reuse_cdf_points(r)).collect();
    let largest_cache = CACHE_SIZES.iter().map(|c| c.0 / 64).max().unwrap_or(1);
    let last = points
        .iter()
        .flatten()
        .map(|p| p.0)
        .chain([largest_cache * 2])
        .max()
        .unwrap_or(2);
    let top_exp = 64 - (last - 1).leading_zeros() as i32;
    let y = Axis::linear(0.0, 1.0, Y_TICKS);
    let y_labels: Vec<String> = y.ticks.iter().map(axis_number).collect();
    let mut chart = frame(root, "Reuse-distance CDF", y_labels)
        .build_cartesian_2d(Axis::log(2.0, 0, top_exp, X_TICKS), y)
        .map_err(err)?;
    styled(&mut chart.configure_mesh())
        .x_desc("reuse distance d (64-byte lines)")
        .y_desc("reuses at distance < d")
        .x_label_formatter(&lines_label)
        .draw()
        .map_err(err)?;
    let right = 2f64.powi(top_exp);
    for (bytes, name) in CACHE_SIZES {
        let x = (bytes / 64) as f64;
        chart
            .draw_series(std::iter::once(plotters::element::DashedPathElement::new(
                [(x, 0.0), (x, 1.0)],
                12,
                8,
                MARK_COLOUR.stroke_width(2),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{name} "),
                (x, 0.04),
                text()
                    .color(&MARK_COLOUR)
                    .pos(Pos::new(HPos::Right, VPos::Bottom)),
            )))
            .map_err(err)?;
    }
    let colours = [READ_COLOUR, SECOND_COLOUR];
    for ((r, pts), colour) in curves.iter().zip(&points).zip(colours.iter().cycle()) {
        let reuses: u64 = r.buckets.iter().map(|b| b.2).sum();
        if reuses == 0 {
            chart
                .draw_series(std::iter::once(Text::new(
                    "no line was referenced twice",
                    (2.0, 0.5),
                    text(),
                )))
                .map_err(err)?;
            continue;
        }
        // Each share holds from its bound to the next one, then steps up;
        // past the last bound every reuse is below.
        let mut steps = Vec::with_capacity(2 * pts.len() + 1);
        for (k, &(d, share)) in pts.iter().enumerate() {
            let next = pts.get(k + 1).map_or(right, |p| p.0 as f64);
            steps.push((d as f64, share));
            steps.push((next, share));
        }
        let style = colour.stroke_width(4);
        chart
            .draw_series(LineSeries::new(steps, style))
            .map_err(err)?
            .label(reuse_curve_name(r))
            .legend(move |(x, y)| stroke(x, y, style));
    }
    legend(&mut chart, SeriesLabelPosition::MiddleRight)
}

/// The page heat map is as tall as its rows' labels need.
fn page_heat_height(p: &Pictures) -> u32 {
    (p.heat_pages.len() as u32 * PAGE_ROW + 2 * TEXT + 4 * MARGIN + TITLE * 2).max(HEIGHT)
}

fn page_heat<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &Analysis,
    p: &Pictures,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let t1 = time_span_ms(a, p);
    let rows = p.heat_pages.len().max(1);
    let page_labels = p.heat_pages.iter().map(|pg| format!("{pg:#x}"));
    let (main, bar) = with_colour_bar(
        root,
        &format!("Hottest {} pages over time", p.heat_pages.len()),
    )?;
    let mut chart = frame(&main, "", page_labels)
        // An integer range holds its end: 0..rows - 1 gives `rows` segments
        // (two for one row: plotters needs a range that is not empty).
        .build_cartesian_2d(time_axis(t1), (0..(rows - 1).max(1)).into_segmented())
        .map_err(err)?;
    // Row 0, the hottest page, on top: segment `rows - 1 - i` holds row i.
    let row_at = |segment: usize| (rows - 1).checked_sub(segment);
    styled(&mut chart.configure_mesh())
        .disable_mesh()
        .x_desc(TIME_DESC)
        .y_desc("page, hottest on top")
        .y_labels(rows)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(s) => row_at(*s)
                .and_then(|row| p.heat_pages.get(row))
                .map_or(String::new(), |pg| format!("{pg:#x}")),
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    let max = p.heat.iter().copied().max().unwrap_or(0);
    let dx = t1 / HEAT_COLS as f64;
    chart
        .draw_series(
            p.heat
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| {
                    let (row, col) = (i / HEAT_COLS, i % HEAT_COLS);
                    let x = col as f64 * dx;
                    // Rows and segments are each other's mirror.
                    let segment = rows - 1 - row;
                    Rectangle::new(
                        [
                            (x, SegmentValue::Exact(segment)),
                            (x + dx, SegmentValue::Exact(segment + 1)),
                        ],
                        density(n, max).filled(),
                    )
                }),
        )
        .map_err(err)?;
    colour_bar(&bar, max, X_LABEL_AREA)
}

/// The geometry's `rank,bank,row,col_line` bits, in words.
fn geometry_words(geometry: &str, source: &str) -> String {
    let bits: Vec<u32> = geometry.split(',').filter_map(|b| b.parse().ok()).collect();
    let plural = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match bits[..] {
        [rank, bank, _, _] if rank < 16 && bank < 16 => format!(
            "{} × {}, {source}",
            plural(1 << rank, "rank"),
            plural(1 << bank, "bank")
        ),
        _ => format!("geometry {geometry}, {source}"),
    }
}

/// A count on an axis: "600k" for 600000, "1.5M" for 1500000, "5.17M"
/// for 5168401, "731k" for 731170.
fn count_label(v: &f64) -> String {
    // Three significant digits at most: a label, not the figure.
    let short = |x: f64| {
        let unit = 10f64.powi(x.abs().log10().floor() as i32 - 2);
        axis_number(&((x / unit).round() * unit))
    };
    match v.abs() {
        x if x >= 1e6 => format!("{}M", short(v / 1e6)),
        x if x >= 1e3 => format!("{}k", short(v / 1e3)),
        _ => axis_number(v),
    }
}

fn banks<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, a: &Analysis) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let b = &a.banks.banks;
    let ymax = b.iter().map(|r| r.reads + r.writes).max().unwrap_or(1) as f64 * 1.3;
    let n = b.len().max(1);
    let boards = b.iter().map(|r| r.board).max().unwrap_or(0) > 0;
    let y = Axis::linear(0.0, ymax.max(1.0), Y_TICKS);
    let y_labels: Vec<String> = y.ticks.iter().map(count_label).collect();
    // Each bar a segment of its own, labelled at its centre with its bank
    // (an integer range holds its end: 0..n - 1 is n segments; two for
    // one bar); under the banks, their rank.
    let mut chart = frame(root, "References per bank", y_labels)
        .x_label_area_size(TEXT * 3 + TICK_MARK + 24)
        .build_cartesian_2d((0..(n - 1).max(1)).into_segmented(), y)
        .map_err(err)?;
    let every = n.div_ceil(24);
    styled(&mut chart.configure_mesh())
        .disable_x_mesh()
        .x_desc(format!(
            "bank ({})",
            geometry_words(&a.banks.geometry, &a.banks.geometry_source)
        ))
        .y_desc("references")
        .y_label_formatter(&count_label)
        .x_labels(n)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) if i % every == 0 => {
                b.get(*i).map_or(String::new(), |r| r.bank.to_string())
            }
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    // The ranks: one label under each run of bars of one rank.
    let mut start = 0;
    while start < b.len() {
        let key = (b[start].board, b[start].rank);
        let end = start
            + b[start..]
                .iter()
                .take_while(|r| (r.board, r.rank) == key)
                .count();
        let (left, axis_y) = chart.backend_coord(&(SegmentValue::Exact(start), 0.0));
        let (right, _) = chart.backend_coord(&(SegmentValue::Exact(end), 0.0));
        let name = if boards {
            format!("board {} rank {}", key.0, key.1)
        } else {
            format!("rank {}", key.1)
        };
        let y = axis_y + TICK_MARK as i32 + TEXT as i32 + 6;
        root.draw(&PathElement::new(
            [(left + 6, y), (right - 6, y)],
            MARK_COLOUR.stroke_width(2),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            name,
            ((left + right) / 2, y + 4),
            text().pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
        start = end;
    }
    let bar = |i: usize, lo: u64, hi: u64, colour: RGBColor| {
        let mut r = Rectangle::new(
            [
                (SegmentValue::Exact(i), lo as f64),
                (SegmentValue::Exact(i + 1), hi as f64),
            ],
            colour.filled(),
        );
        r.set_margin(0, 0, 4, 4);
        r
    };
    chart
        .draw_series(
            b.iter()
                .enumerate()
                .map(|(i, r)| bar(i, 0, r.reads, READ_COLOUR)),
        )
        .map_err(err)?
        .label("reads")
        .legend(|(x, y)| swatch(x, y, READ_COLOUR));
    chart
        .draw_series(
            b.iter()
                .enumerate()
                .map(|(i, r)| bar(i, r.reads, r.reads + r.writes, WRITE_COLOUR)),
        )
        .map_err(err)?
        .label("writes")
        .legend(|(x, y)| swatch(x, y, WRITE_COLOUR));
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// A legend's filled square.
fn swatch(x: i32, y: i32, colour: RGBColor) -> Rectangle<(i32, i32)> {
    let h = TEXT as i32 / 3;
    Rectangle::new([(x, y - h), (x + 2 * h, y + h)], colour.filled())
}

/// A legend's line.
fn stroke(x: i32, y: i32, style: ShapeStyle) -> PathElement<(i32, i32)> {
    PathElement::new([(x, y), (x + 2 * TEXT as i32 / 3, y)], style)
}

/// The legend of every chart, at `position`, over a white ground.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font(text())
        .legend_area_size(TEXT)
        .margin(12)
        .draw()
        .map_err(err)
}

/// The pictures' names.
pub const PICTURES: [&str; 5] = [
    "address_time",
    "bandwidth",
    "reuse_cdf",
    "page_heat",
    "banks",
];

/// The name of a process's address-versus-time picture (virtual traces).
pub fn process_picture(pid: u32) -> String {
    format!("address_time_pid{pid}")
}

/// Whether `file` may be a picture `draw_all` writes: one of
/// [`file_names`], or a process's.
pub fn is_picture_file(file: &str) -> bool {
    file_names().any(|f| f == file)
        || file
            .strip_prefix("address_time_pid")
            .and_then(|rest| rest.strip_suffix(".png").or(rest.strip_suffix(".svg")))
            .is_some_and(|pid| pid.parse::<u32>().is_ok())
}

/// The files `draw_all` writes into its directory whatever the trace (a
/// virtual trace adds a [`process_picture`] for each process drawn).
pub fn file_names() -> impl Iterator<Item = String> {
    PICTURES
        .iter()
        .flat_map(|p| [format!("{p}.png"), format!("{p}.svg")])
}

/// Draws `draw` into `dir/name.png` and `dir/name.svg`; returns both paths.
fn both(
    dir: &Path,
    name: &str,
    size: (u32, u32),
    png: impl FnOnce(&DrawingArea<PngBackend, Shift>) -> DrawResult,
    svg: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
) -> Result<[PathBuf; 2], PlotError> {
    let png_path = dir.join(format!("{name}.png"));
    let svg_path = dir.join(format!("{name}.svg"));
    // Each picture is drawn under a temporary name and renamed into place
    // once written: a failed run leaves no cut picture.
    let png_file =
        AtomicFile::create(&png_path).map_err(|e| PlotError::Write(png_path.clone(), e))?;
    {
        // The backend opens the file by name (its extension gives the
        // format) and writes it on `present`.
        let backend = PngBackend::new(BitMapBackend::new(png_file.writing_path(), size), font()?)
            .map_err(|e| PlotError::Draw(png_path.clone(), e))?;
        let root = backend.into_drawing_area();
        png(&root)
            .and_then(|_| root.present().map_err(err))
            .map_err(|e| PlotError::Draw(png_path.clone(), e))?;
    }
    png_file
        .commit()
        .map_err(|e| PlotError::Write(png_path.clone(), e))?;
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, size).into_drawing_area();
        svg(&root)
            .and_then(|_| root.present().map_err(err))
            .map_err(|e| PlotError::Draw(svg_path.clone(), e))?;
    }
    let mut svg_file =
        AtomicFile::create(&svg_path).map_err(|e| PlotError::Write(svg_path.clone(), e))?;
    svg_file
        .write_all(svg_text.as_bytes())
        .and_then(|()| svg_file.commit())
        .map_err(|e| PlotError::Write(svg_path.clone(), e))?;
    Ok([png_path, svg_path])
}

/// Draws every picture into `dir` (created if needed); returns the files.
pub fn draw_all(dir: &Path, a: &Analysis, p: &Pictures) -> Result<Vec<PathBuf>, PlotError> {
    font()?;
    if dir.exists() && !dir.is_dir() {
        return Err(PlotError::NotADirectory(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.to_path_buf(), e))?;
    let mut files = Vec::new();
    files.extend(both(
        dir,
        "address_time",
        (WIDTH, ADDRESS_TIME_HEIGHT),
        |r| address_time(r, a, p),
        |r| address_time(r, a, p),
    )?);
    files.extend(both(
        dir,
        "bandwidth",
        (WIDTH, HEIGHT),
        |r| bandwidth(r, a, p),
        |r| bandwidth(r, a, p),
    )?);
    files.extend(both(
        dir,
        "reuse_cdf",
        (WIDTH, HEIGHT),
        |r| reuse_cdf(r, &[&a.reuse]),
        |r| reuse_cdf(r, &[&a.reuse]),
    )?);
    files.extend(both(
        dir,
        "page_heat",
        (WIDTH, page_heat_height(p)),
        |r| page_heat(r, a, p),
        |r| page_heat(r, a, p),
    )?);
    files.extend(both(
        dir,
        "banks",
        (WIDTH, HEIGHT),
        |r| banks(r, a),
        |r| banks(r, a),
    )?);
    for process in &p.processes {
        files.extend(both(
            dir,
            &process_picture(process.pid),
            (WIDTH, ADDRESS_TIME_HEIGHT),
            |r| process_address_time(r, a, p, process),
            |r| process_address_time(r, a, p, process),
        )?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::{axis_number, Axis};

    #[test]
    fn counts_are_labelled_in_three_significant_digits() {
        for (v, want) in [
            (600000.0, "600k"),
            (1500000.0, "1.5M"),
            (5168401.0, "5.17M"),
            (731170.0, "731k"),
            (999.0, "999"),
            (0.0, "0"),
        ] {
            assert_eq!(super::count_label(&v), want, "{v}");
        }
    }

    #[test]
    fn ticks_step_by_one_two_or_five_times_a_power_of_ten_from_zero() {
        for (lo, hi, n, want) in [
            (0.0, 78.6, 6, vec![0.0, 20.0, 40.0, 60.0]),
            (
                0.0,
                5300.0,
                7,
                vec![0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0],
            ),
            (0.0, 1.0, 7, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
            (-2.4, 81.0, 6, vec![0.0, 20.0, 40.0, 60.0, 80.0]),
            (0.0, 0.37, 6, vec![0.0, 0.1, 0.2, 0.3]),
        ] {
            let ticks = Axis::linear(lo, hi, n).ticks;
            assert_eq!(ticks.len(), want.len(), "{lo}..{hi}: {ticks:?}");
            for (t, w) in ticks.iter().zip(&want) {
                assert!((t - w).abs() < 1e-9, "{lo}..{hi}: {ticks:?}");
            }
        }
    }

    #[test]
    fn tick_labels_carry_no_needless_fraction() {
        for (v, want) in [
            (4500.0, "4500"),
            (10.0, "10"),
            (0.0, "0"),
            (-0.0, "0"),
            (1e-15, "0"),
            (2.5, "2.5"),
            (0.125, "0.125"),
            (-37.5, "-37.5"),
            (0.1 + 0.2, "0.3"),
            (1234567.0, "1234567"),
        ] {
            assert_eq!(axis_number(&v), want, "{v}");
        }
    }
}
