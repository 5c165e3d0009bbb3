//! The one look of every picture: the font, sizes and margins, the
//! colours, the axes (1-2-5 ticks, logarithmic or given), the frame and
//! mesh, the colour bar of density pictures and the legends. A picture
//! takes these and draws its data; it sets none of them itself.

use std::path::PathBuf;

use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

/// Font files tried in order after `HMTT_FONT`.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];
pub(super) const FONT: &str = "sans-serif";

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
pub(super) fn font() -> Result<&'static [u8], PlotError> {
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

pub(super) type DrawResult = Result<(), String>;
pub(super) type Area<DB> = DrawingArea<DB, Shift>;

pub(super) fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

// ---------------------------------------------------------------------
// The figure style: every picture's size, text, palette and margins.
// ---------------------------------------------------------------------

/// Width of every picture: 3.5 in, a paper's single column, at 300 dpi.
pub(super) const WIDTH: u32 = 1050;
/// Height of a picture of one panel (7:5 with [`WIDTH`]).
pub(super) const HEIGHT: u32 = 750;
/// Size of all text but the title (plotters' size: the font's ascent
/// minus its descent). DejaVu Sans' em is `size / 1.164`: 34 px here,
/// 8.2 pt at 300 dpi, so the labels read at single-column width.
pub(super) const TEXT: u32 = 40;
/// Size of a title.
pub(super) const TITLE: u32 = 44;
/// Blank border around a picture, and room between a chart and its
/// colour bar.
pub(super) const MARGIN: u32 = 18;
/// Room left of the right edge, so the last tick label is not cut.
pub(super) const RIGHT_MARGIN: u32 = 40;
/// Height of a row of the page heat map: room for its label.
pub(super) const PAGE_ROW: u32 = 38;
/// Height of the area under a chart: tick labels and the axis title.
pub(super) const X_LABEL_AREA: u32 = TEXT * 2 + TICK_MARK + 16;
/// Length of the tick marks.
pub(super) const TICK_MARK: u32 = 10;
/// At most this many labelled ticks on a horizontal axis, and on a
/// vertical one: 1-2-5 steps that fit.
pub(super) const X_TICKS: usize = 6;
pub(super) const Y_TICKS: usize = 7;

/// Okabe and Ito's colour-blind-safe palette: reads, writes, I-code
/// events, a second curve, lost references.
pub(super) const READ_COLOUR: RGBColor = RGBColor(0, 114, 178);
pub(super) const WRITE_COLOUR: RGBColor = RGBColor(230, 159, 0);
pub(super) const EVENT_COLOUR: RGBColor = RGBColor(213, 94, 0);
pub(super) const SECOND_COLOUR: RGBColor = RGBColor(0, 158, 115);
pub(super) const LOST_COLOUR: RGBColor = RGBColor(204, 121, 167);
/// Marks drawn over the data (axis breaks, cache sizes).
pub(super) const MARK_COLOUR: RGBColor = RGBColor(60, 60, 60);

pub(super) fn text() -> TextStyle<'static> {
    (FONT, TEXT).into_font().color(&BLACK)
}

/// The mesh of every chart: labels in [`TEXT`], tick marks, a light
/// bold grid and a lighter minor one.
pub(super) fn styled<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
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
pub(super) fn frame<'a, 'b, DB: DrawingBackend>(
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
pub(super) struct Axis {
    lo: f64,
    hi: f64,
    /// Logarithmic in this base.
    log: Option<f64>,
    pub(super) ticks: Vec<f64>,
    /// Ticks of the minor grid (the major ones among them).
    minor: Vec<f64>,
}

/// The multiples of `step` in `lo..=hi`.
pub(super) fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The 1-2-5 step that gives at most `n` ticks in `lo..=hi`.
pub(super) fn nice_step(lo: f64, hi: f64, n: usize) -> f64 {
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
    pub(super) fn linear(lo: f64, hi: f64, n: usize) -> Axis {
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

    /// `lo..hi` with the ticks given (no minor grid): an axis whose
    /// ticks mean something other than round numbers.
    pub(super) fn with_ticks(lo: f64, hi: f64, ticks: Vec<f64>) -> Axis {
        Axis {
            lo,
            hi,
            log: None,
            ticks,
            minor: Vec::new(),
        }
    }

    /// `base^lo_exp..base^hi_exp`, a tick at every `every`-th power.
    pub(super) fn log(base: f64, lo_exp: i32, hi_exp: i32, n: usize) -> Axis {
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
    pub(super) fn log_counts(max: f64, n: usize) -> Axis {
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
pub(super) fn viridis(t: f64) -> RGBColor {
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
pub(super) fn density_position(n: f64, max: f64) -> f64 {
    if max <= 1.0 {
        1.0
    } else {
        n.max(1.0).ln() / max.ln()
    }
}

/// The colour of a cell of `n` references among cells of up to `max`.
pub(super) fn density(n: u32, max: u32) -> RGBColor {
    viridis(density_position(f64::from(n), f64::from(max)))
}

/// Width of a colour bar's area: the bar (about 36 px), its labels and
/// its title.
pub(super) const BAR_AREA: u32 = 210;

/// `root` under `title`, split into the chart's area and its colour
/// bar's, each as tall as the other.
pub(super) fn with_colour_bar<DB: DrawingBackend>(
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
pub(super) fn colour_bar<DB: DrawingBackend>(
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

/// A tick label: an integer without a fraction ("4500", not "4500.0"),
/// any other value with the fewest decimals (up to 6) that give it back.
pub(super) fn axis_number(v: &f64) -> String {
    let v = if v.abs() < 1e-12 { 0.0 } else { *v };
    (0..=6)
        .map(|d| format!("{v:.d$}"))
        .find(|s| {
            s.parse::<f64>()
                .is_ok_and(|x| (x - v).abs() <= 1e-9 * v.abs().max(1.0))
        })
        .unwrap_or_else(|| format!("{v}"))
}

pub(super) fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The time axis of a picture of `span` ms, from 0.
pub(super) fn time_axis(span: f64) -> Axis {
    Axis::linear(0.0, span.max(1e-6), X_TICKS)
}

pub(super) const TIME_DESC: &str = "time from the first reference (ms)";

/// A legend in one row across the top of `area`, swatch and name for
/// each of `entries`; returns the area under it.
pub(super) fn legend_row<DB: DrawingBackend>(
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

/// A legend's filled square.
pub(super) fn swatch(x: i32, y: i32, colour: RGBColor) -> Rectangle<(i32, i32)> {
    let h = TEXT as i32 / 3;
    Rectangle::new([(x, y - h), (x + 2 * h, y + h)], colour.filled())
}

/// A legend's line.
pub(super) fn stroke(x: i32, y: i32, style: ShapeStyle) -> PathElement<(i32, i32)> {
    PathElement::new([(x, y), (x + 2 * TEXT as i32 / 3, y)], style)
}

/// The legend of every chart, at `position`, over a white ground.
pub(super) fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
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

/// A count on an axis: "600k" for 600000, "1.5M" for 1500000, "5.17M"
/// for 5168401, "731k" for 731170.
pub(super) fn count_label(v: &f64) -> String {
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
