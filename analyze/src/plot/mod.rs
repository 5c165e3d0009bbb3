//! The pictures of `hmtt analyze --plot DIR`, each as PNG and SVG (the
//! `plotters` crate), and PDF when asked ([`PlotFormats`]): `address_time` (address-versus-time density),
//! `bandwidth` (the timeline, I-code events marked), `reuse_cdf` (the
//! reuse-distance CDF), `page_heat` (the hottest pages over time) and
//! `banks` (references per bank); with the board's statistics, the
//! pictures of `board.rs`. Text is drawn with a TrueType font read
//! at run time (`HMTT_FONT`, or DejaVu Sans of Debian's
//! `fonts-dejavu-core`), so no font library of the system is needed.

use hmtt_format::TickLength;
use std::io::Write;
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::AtomicFile;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::pictures::{Pictures, HEAT_COLS, LOST_COLS};
use super::png_text::PngBackend;
use super::reuse_distance::ReuseReport;
use super::timeline::EventMark;
use super::Analysis;

mod style;
use style::count_label;
use style::{
    axis_number, colour_bar, density, err, font, frame, legend, legend_row, ms, stroke, styled,
    swatch, text, time_axis, with_colour_bar, Area, Axis, DrawResult, EVENT_COLOUR, FONT, HEIGHT,
    LOST_COLOUR, MARGIN, MARK_COLOUR, PAGE_ROW, READ_COLOUR, SECOND_COLOUR, TEXT, TICK_MARK,
    TIME_DESC, TITLE, WIDTH, WRITE_COLOUR, X_LABEL_AREA, X_TICKS, Y_TICKS,
};
pub use style::{PlotError, FONT_PATHS};
mod address_time;
mod board;
mod formats;
pub use board::BOARD_PICTURES;
pub use formats::{PlotFormats, EXTENSIONS};
mod pdf;
mod png_encode;
use address_time::{address_time, process_address_time, ADDRESS_TIME_HEIGHT};

/// The length of the pictured span in milliseconds, from the first
/// reference, as the bandwidth timeline counts time (0 when the analysis
/// holds no tick length).
pub(super) fn time_span_ms(a: &Analysis, p: &Pictures) -> f64 {
    TickLength::of_ps(a.tick_ps).map_or(0.0, |t| {
        t.ms(p.last_tick.saturating_add(1)) - t.ms(p.first_tick)
    })
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
            let tick_ns = TickLength::of_ps(a.tick_ps).map_or(0.0, TickLength::ns_per_tick);
            let end_of_last = a.duration_ns + tick_ns;
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

/// `v` (positive) to three significant digits at most.
fn three_digits(v: f64) -> String {
    let unit = 10f64.powi(v.log10().floor() as i32 - 2);
    axis_number(&((v / unit).round() * unit))
}

/// The legend's name of a reuse histogram: how it was made and of what.
fn reuse_curve_name(r: &ReuseReport) -> String {
    let reuses: u64 = r.buckets.iter().map(|b| b.2).sum();
    match &r.sampling {
        None => format!("exact ({} reuses)", count_label(&(reuses as f64))),
        // The rate is a threshold over 2^24 hashes: 0.05 is 0.0500000119.
        Some(s) => format!(
            "SHARDS estimate, {} % of lines ({} references)",
            three_digits(s.rate * 100.0),
            count_label(&(s.sampled_references as f64))
        ),
    }
}

/// The histograms the reuse CDF draws: the report's `reuse`, and its
/// sampled estimate beside it when both were asked.
pub fn reuse_curves(a: &Analysis) -> Vec<&ReuseReport> {
    std::iter::once(&a.reuse).chain(&a.reuse_sampled).collect()
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
            .and_then(|rest| {
                EXTENSIONS
                    .iter()
                    .find_map(|e| rest.strip_suffix(&format!(".{e}")))
            })
            .is_some_and(|pid| pid.parse::<u32>().is_ok())
}

/// The files `draw_all` may write into its directory whatever the trace,
/// in any format (a virtual trace adds a [`process_picture`] for each
/// process drawn).
pub fn file_names() -> impl Iterator<Item = String> {
    PICTURES
        .iter()
        .chain(&BOARD_PICTURES)
        .flat_map(|p| EXTENSIONS.map(|e| format!("{p}.{e}")))
}

/// Writes `bytes` to `path`, under a temporary name renamed into place
/// once written: a failed run leaves no cut picture.
fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    let mut file = AtomicFile::create(path).map_err(|e| PlotError::Write(path.to_path_buf(), e))?;
    file.write_all(bytes)
        .and_then(|()| file.commit())
        .map_err(|e| PlotError::Write(path.to_path_buf(), e))
}

/// Draws `draw` into `dir/name.EXT` for each of `formats`; returns the
/// paths written. The PDF is made from the SVG.
fn each_format(
    dir: &Path,
    name: &str,
    size: (u32, u32),
    formats: PlotFormats,
    png: impl FnOnce(&DrawingArea<PngBackend, Shift>) -> DrawResult,
    svg: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> DrawResult,
) -> Result<Vec<PathBuf>, PlotError> {
    let path = |ext: &str| dir.join(format!("{name}.{ext}"));
    let mut written = Vec::new();
    if formats.png {
        let png_path = path("png");
        // Drawn into memory, then encoded here (png_encode.rs: indexed
        // colour when it fits, the best compression).
        let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
        {
            let backend = PngBackend::new(BitMapBackend::with_buffer(&mut pixels, size), font()?)
                .map_err(|e| PlotError::Draw(png_path.clone(), e))?;
            let root = backend.into_drawing_area();
            png(&root)
                .and_then(|_| root.present().map_err(err))
                .map_err(|e| PlotError::Draw(png_path.clone(), e))?;
        }
        let encoded = png_encode::encode_png(&pixels, size)
            .map_err(|e| PlotError::Draw(png_path.clone(), e))?;
        write_whole(&png_path, &encoded)?;
        written.push(png_path);
    }
    if formats.svg || formats.pdf {
        let mut svg_text = String::new();
        {
            let root = SVGBackend::with_string(&mut svg_text, size).into_drawing_area();
            svg(&root)
                .and_then(|_| root.present().map_err(err))
                .map_err(|e| PlotError::Draw(path("svg"), e))?;
        }
        if formats.svg {
            write_whole(&path("svg"), svg_text.as_bytes())?;
            written.push(path("svg"));
        }
        if formats.pdf {
            let pdf =
                pdf::svg_to_pdf(&svg_text, font()?).map_err(|e| PlotError::Draw(path("pdf"), e))?;
            write_whole(&path("pdf"), &pdf)?;
            written.push(path("pdf"));
        }
    }
    Ok(written)
}

/// Draws every picture into `dir` (created if needed) in each of
/// `formats`; returns the files.
pub fn draw_all(
    dir: &Path,
    a: &Analysis,
    p: &Pictures,
    formats: PlotFormats,
) -> Result<Vec<PathBuf>, PlotError> {
    font()?;
    if dir.exists() && !dir.is_dir() {
        return Err(PlotError::NotADirectory(dir.to_path_buf()));
    }
    std::fs::create_dir_all(dir).map_err(|e| PlotError::Dir(dir.to_path_buf(), e))?;
    let mut files = Vec::new();
    files.extend(each_format(
        dir,
        "address_time",
        (WIDTH, ADDRESS_TIME_HEIGHT),
        formats,
        |r| address_time(r, a, p),
        |r| address_time(r, a, p),
    )?);
    files.extend(each_format(
        dir,
        "bandwidth",
        (WIDTH, HEIGHT),
        formats,
        |r| bandwidth(r, a, p),
        |r| bandwidth(r, a, p),
    )?);
    files.extend(each_format(
        dir,
        "reuse_cdf",
        (WIDTH, HEIGHT),
        formats,
        |r| reuse_cdf(r, &reuse_curves(a)),
        |r| reuse_cdf(r, &reuse_curves(a)),
    )?);
    files.extend(each_format(
        dir,
        "page_heat",
        (WIDTH, page_heat_height(p)),
        formats,
        |r| page_heat(r, a, p),
        |r| page_heat(r, a, p),
    )?);
    files.extend(each_format(
        dir,
        "banks",
        (WIDTH, HEIGHT),
        formats,
        |r| banks(r, a),
        |r| banks(r, a),
    )?);
    for process in &p.processes {
        files.extend(each_format(
            dir,
            &process_picture(process.pid),
            (WIDTH, ADDRESS_TIME_HEIGHT),
            formats,
            |r| process_address_time(r, a, p, process),
            |r| process_address_time(r, a, p, process),
        )?);
    }
    if let Some(s) = &a.board_statistics {
        for name in board::board_pictures(s) {
            files.extend(match name {
                "board_row_hits" => each_format(
                    dir,
                    name,
                    (WIDTH, HEIGHT),
                    formats,
                    |r| board::row_hits(r, s),
                    |r| board::row_hits(r, s),
                )?,
                "board_banks" => each_format(
                    dir,
                    name,
                    (WIDTH, board::banks_height(s)),
                    formats,
                    |r| board::banks(r, s),
                    |r| board::banks(r, s),
                )?,
                _ => each_format(
                    dir,
                    name,
                    (WIDTH, HEIGHT),
                    formats,
                    |r| board::reuse(r, s),
                    |r| board::reuse(r, s),
                )?,
            });
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests;
