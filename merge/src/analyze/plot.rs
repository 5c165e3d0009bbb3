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

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use super::pictures::{Pictures, HEAT_COLS, SCATTER_COLS, SCATTER_ROWS};
use super::png_text::PngBackend;
use super::reuse_distance::bucket_range;
use super::Analysis;

/// Font files tried in order after `HMTT_FONT`.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];
const SIZE: (u32, u32) = (1000, 640);
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

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Black through blue, green and yellow for `t` in 0..=1.
fn heat_colour(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let x = t.clamp(0.0, 1.0) * 4.0;
    let i = (x as usize).min(3);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f) as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Log-scaled colour of `n` among counts up to `max`.
fn density(n: u32, max: u32) -> RGBColor {
    heat_colour(f64::from(n).ln_1p() / f64::from(max.max(1)).ln_1p())
}

/// The span of the pictured references in milliseconds (0..0 when the
/// analysis holds no tick length).
fn time_span_ms(a: &Analysis, p: &Pictures) -> (f64, f64) {
    TickLength::of_ps(a.tick_ps).map_or((0.0, 0.0), |t| {
        (t.ms(p.first_tick), t.ms(p.last_tick.saturating_add(1)))
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

fn address_time<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &Analysis,
    p: &Pictures,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (t0, t1) = time_span_ms(a, p);
    let span = p.axis.span() as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Address versus time (density; long gaps between touched pages removed)",
            (FONT, 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(110)
        .build_cartesian_2d(t0..t1, 0.0..span)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("time (ms)")
        .x_label_formatter(&axis_number)
        .y_desc("physical address")
        .y_label_formatter(&|y| format!("{:#x}", p.axis.address_at(*y)))
        .label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    let max = p.scatter.iter().copied().max().unwrap_or(0);
    let (dx, dy) = ((t1 - t0) / SCATTER_COLS as f64, span / SCATTER_ROWS as f64);
    chart
        .draw_series(
            p.scatter
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| {
                    let (row, col) = (i / SCATTER_COLS, i % SCATTER_COLS);
                    let (x, y) = (t0 + col as f64 * dx, row as f64 * dy);
                    Rectangle::new([(x, y), (x + dx, y + dy)], density(n, max).filled())
                }),
        )
        .map_err(err)?;
    Ok(())
}

fn bandwidth<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, a: &Analysis) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let t = &a.timeline;
    let points: Vec<(f64, f64)> = t
        .intervals
        .iter()
        .map(|r| (ms(r.start_ns + t.interval_ns / 2.0), r.mb_per_s))
        .collect();
    let event_times = t.events.iter().map(|e| ms(e.time_ns));
    let first = t.intervals.first().map_or(0.0, |r| ms(r.start_ns));
    let last = t
        .intervals
        .last()
        .map_or(1.0, |r| ms(r.start_ns + t.interval_ns));
    let lo = event_times.clone().fold(first, f64::min);
    let hi = event_times.fold(last, f64::max).max(lo + 1e-6);
    // A margin, so events at the ends stay visible.
    let (x0, x1) = (lo - (hi - lo) * 0.03, hi + (hi - lo) * 0.03);
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "Bandwidth (intervals of {:.3} ms), I-code events marked",
                ms(t.interval_ns)
            ),
            (FONT, 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .x_label_formatter(&axis_number)
        .y_desc("MB/s (64-byte lines)")
        .y_label_formatter(&axis_number)
        .label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    let events: Vec<_> = t
        .events
        .iter()
        .filter(|e| (x0..=x1).contains(&ms(e.time_ns)))
        .collect();
    let label_every = events.len().div_ceil(24).max(1);
    for (k, e) in events.iter().enumerate() {
        let x = ms(e.time_ns);
        chart
            .draw_series(LineSeries::new([(x, 0.0), (x, ymax)], RED.mix(0.5)))
            .map_err(err)?;
        if k % label_every == 0 {
            // Labels in the right half end at their line.
            let right_half = x > (x0 + x1) / 2.0;
            let pos = if right_half {
                Pos::new(HPos::Right, VPos::Top)
            } else {
                Pos::new(HPos::Left, VPos::Top)
            };
            let style = (FONT, 12).into_font().color(&RED).pos(pos);
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" {} ", e.name),
                    (x, ymax * (0.99 - 0.04 * ((k / label_every) % 4) as f64)),
                    style,
                )))
                .map_err(err)?;
        }
    }
    chart
        .draw_series(LineSeries::new(points, BLUE.stroke_width(2)))
        .map_err(err)?;
    Ok(())
}

fn reuse_cdf<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, a: &Analysis) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let r = &a.reuse;
    let reuses: u64 = r.buckets.iter().map(|b| b.2).sum();
    let mut acc = 0u64;
    let mut points = vec![(0.0, 0.0)];
    for (k, b) in r.buckets.iter().enumerate() {
        acc += b.2;
        points.push(((k + 1) as f64, acc as f64 / reuses.max(1) as f64));
    }
    let xmax = r.buckets.len().max(4) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "Reuse-distance CDF (exact LRU stack distance of 64-byte lines; {} reuses, {} first uses)",
                reuses, r.cold
            ),
            (FONT, 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax, 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("d: share of reuses at a distance below d (distinct lines between two uses)")
        .y_desc("fraction of reuses")
        .x_labels(xmax as usize + 1)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() > 1e-6 {
                return String::new();
            }
            match x.round() as usize {
                0 => "0".into(),
                k => format!("{}", bucket_range(k).0),
            }
        })
        .label_style((FONT, 13))
        .draw()
        .map_err(err)?;
    if reuses == 0 {
        chart
            .draw_series(std::iter::once(Text::new(
                "no line was referenced twice",
                (xmax * 0.35, 0.5),
                (FONT, 18),
            )))
            .map_err(err)?;
    }
    chart
        .draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))
        .map_err(err)?;
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
        .map_err(err)?;
    Ok(())
}

fn page_heat<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &Analysis,
    p: &Pictures,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (t0, t1) = time_span_ms(a, p);
    let rows = p.heat_pages.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "Hottest {} pages over time (references per cell, log colour)",
                p.heat_pages.len()
            ),
            (FONT, 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(110)
        // An integer range holds its end: 0..rows - 1 gives `rows` segments
        // (two for one row: plotters needs a range that is not empty).
        .build_cartesian_2d(t0..t1, (0..(rows - 1).max(1)).into_segmented())
        .map_err(err)?;
    // Row 0, the hottest page, on top: segment `rows - 1 - i` holds row i.
    let row_at = |segment: usize| (rows - 1).checked_sub(segment);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("time (ms)")
        .x_label_formatter(&axis_number)
        .y_desc("page, hottest on top")
        .y_labels(rows)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(s) => row_at(*s)
                .and_then(|row| p.heat_pages.get(row))
                .map_or(String::new(), |pg| format!("{pg:#x}")),
            _ => String::new(),
        })
        .label_style((FONT, 11))
        .draw()
        .map_err(err)?;
    let max = p.heat.iter().copied().max().unwrap_or(0);
    let dx = (t1 - t0) / HEAT_COLS as f64;
    chart
        .draw_series(
            p.heat
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(i, &n)| {
                    let (row, col) = (i / HEAT_COLS, i % HEAT_COLS);
                    let x = t0 + col as f64 * dx;
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
    Ok(())
}

/// Okabe and Ito's colour-blind-safe blue and orange: reads and writes.
const READ_COLOUR: RGBColor = RGBColor(0, 114, 178);
const WRITE_COLOUR: RGBColor = RGBColor(230, 159, 0);

/// The geometry's `rank,bank,row,col_line` bits, in words.
fn geometry_words(geometry: &str, source: &str) -> String {
    let bits: Vec<&str> = geometry.split(',').collect();
    match bits[..] {
        [rank, bank, row, col] => format!(
            "geometry from the {source}: {rank} rank, {bank} bank, {row} row and {col} column-line address bits"
        ),
        _ => format!("geometry {geometry} ({source})"),
    }
}

fn banks<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, a: &Analysis) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let b = &a.banks.banks;
    let ymax = b.iter().map(|r| r.reads + r.writes).max().unwrap_or(1) as f64 * 1.1;
    let n = b.len().max(1);
    // Each bar a segment of its own, labelled at its centre (an integer
    // range holds its end: 0..n - 1 is n segments; two for one bar).
    let every = n.div_ceil(32);
    let mut chart = ChartBuilder::on(root)
        .caption("References per bank", (FONT, 20))
        .margin(12)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d((0..(n - 1).max(1)).into_segmented(), 0.0..ymax.max(1.0))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(format!(
            "board/rank/bank ({})",
            geometry_words(&a.banks.geometry, &a.banks.geometry_source)
        ))
        .y_desc("references")
        .y_label_formatter(&axis_number)
        .x_labels(n)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) if i % every == 0 => b.get(*i).map_or(String::new(), |r| {
                format!("{}/{}/{}", r.board, r.rank, r.bank)
            }),
            _ => String::new(),
        })
        .label_style((FONT, 12))
        .draw()
        .map_err(err)?;
    let bar = |i: usize, lo: u64, hi: u64, colour: RGBColor| {
        let mut r = Rectangle::new(
            [
                (SegmentValue::Exact(i), lo as f64),
                (SegmentValue::Exact(i + 1), hi as f64),
            ],
            colour.filled(),
        );
        r.set_margin(0, 0, 3, 3);
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
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], READ_COLOUR.filled()));
    chart
        .draw_series(
            b.iter()
                .enumerate()
                .map(|(i, r)| bar(i, r.reads, r.reads + r.writes, WRITE_COLOUR)),
        )
        .map_err(err)?
        .label("writes")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], WRITE_COLOUR.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 14))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// The pictures' names.
pub const PICTURES: [&str; 5] = [
    "address_time",
    "bandwidth",
    "reuse_cdf",
    "page_heat",
    "banks",
];

/// The files `draw_all` writes into its directory.
pub fn file_names() -> impl Iterator<Item = String> {
    PICTURES
        .iter()
        .flat_map(|p| [format!("{p}.png"), format!("{p}.svg")])
}

/// Draws `draw` into `dir/name.png` and `dir/name.svg`; returns both paths.
fn both(
    dir: &Path,
    name: &str,
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
        let backend = PngBackend::new(BitMapBackend::new(png_file.writing_path(), SIZE), font()?)
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
        let root = SVGBackend::with_string(&mut svg_text, SIZE).into_drawing_area();
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
        |r| address_time(r, a, p),
        |r| address_time(r, a, p),
    )?);
    files.extend(both(
        dir,
        "bandwidth",
        |r| bandwidth(r, a),
        |r| bandwidth(r, a),
    )?);
    files.extend(both(
        dir,
        "reuse_cdf",
        |r| reuse_cdf(r, a),
        |r| reuse_cdf(r, a),
    )?);
    files.extend(both(
        dir,
        "page_heat",
        |r| page_heat(r, a, p),
        |r| page_heat(r, a, p),
    )?);
    files.extend(both(dir, "banks", |r| banks(r, a), |r| banks(r, a))?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::axis_number;

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
