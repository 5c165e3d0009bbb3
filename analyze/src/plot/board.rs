//! The pictures of the board's own statistics (board.md 3.x), drawn when
//! the trace has a statistics side file: `board_row_hits` (the row-buffer
//! hit and conflict shares of the column commands over time),
//! `board_banks` (column commands per rank and bank over time) and
//! `board_reuse` (the RDHPU's page stack distances, with the trace-side
//! twin's when it was computed).

use hmtt_format::TickLength;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{
    axis_number, colour_bar, count_label, density, err, frame, legend, stroke, styled, swatch,
    time_axis, with_colour_bar, Area, Axis, DrawResult, HEIGHT, MARGIN, PAGE_ROW, READ_COLOUR,
    SECOND_COLOUR, TEXT, TITLE, WRITE_COLOUR, X_LABEL_AREA, X_TICKS, Y_TICKS,
};
use crate::board_timeline::{BoardTimeline, TimelineColumn};
use crate::board_twin::BoardStatisticsReport;

/// The board pictures' names.
pub const BOARD_PICTURES: [&str; 3] = ["board_row_hits", "board_banks", "board_reuse"];

const BOARD_TIME_DESC: &str = "time from the first statistics record (ms)";

/// Which board pictures `s` has data for, in [`BOARD_PICTURES`]' order.
pub fn board_pictures(s: &BoardStatisticsReport) -> Vec<&'static str> {
    let mut names = Vec::new();
    if s.timelines.iter().any(|t| !t.columns.is_empty()) {
        names.extend(["board_row_hits", "board_banks"]);
    }
    if s.boards.iter().any(|b| b.reuse.is_some()) {
        names.push("board_reuse");
    }
    names
}

/// The first record's start over every board, in ns, and the span to
/// the last record's end, in ms.
fn time_frame(timelines: &[BoardTimeline]) -> (f64, f64) {
    let ns =
        |t: &BoardTimeline, tick: u64| TickLength::of_ps(t.tick_ps).map_or(0.0, |l| l.ns(tick));
    let origin = timelines
        .iter()
        .map(|t| ns(t, t.origin_tick))
        .fold(f64::INFINITY, f64::min);
    let end = timelines
        .iter()
        .map(|t| ns(t, t.end_tick))
        .fold(0.0, f64::max);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    (origin, ((end - origin) / 1e6).max(1e-6))
}

/// Column `i` of `t`: its start and end in ms from `origin_ns`.
fn column_ms(t: &BoardTimeline, i: usize, origin_ns: f64) -> (f64, f64) {
    let Some(l) = TickLength::of_ps(t.tick_ps) else {
        return (0.0, 0.0);
    };
    let start = t.origin_tick + i as u64 * t.column_ticks;
    let end = (start + t.column_ticks).min(t.end_tick.max(start + 1));
    (
        (l.ns(start) - origin_ns) / 1e6,
        (l.ns(end) - origin_ns) / 1e6,
    )
}

/// One share of a column's outcomes, `None` without any.
type Share = fn(&TimelineColumn) -> Option<f64>;

/// The hit and conflict shares of each board's column commands over time,
/// one step a column; a column without column commands breaks the line.
pub(super) fn row_hits<DB: DrawingBackend>(
    root: &Area<DB>,
    s: &BoardStatisticsReport,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (origin, span) = time_frame(&s.timelines);
    // Room above 1 for the legend.
    let y = Axis::with_ticks(0.0, 1.45, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
    let y_labels: Vec<String> = y.ticks.iter().map(axis_number).collect();
    let mut chart = frame(root, "Row-buffer outcomes (the board's counters)", y_labels)
        .build_cartesian_2d(time_axis(span), y)
        .map_err(err)?;
    styled(&mut chart.configure_mesh())
        .x_desc(BOARD_TIME_DESC)
        .y_desc("share of column commands")
        .draw()
        .map_err(err)?;
    let several = s.timelines.len() > 1;
    let series: [(&str, RGBColor, Share); 2] = [
        ("row hits", READ_COLOUR, |c| c.hit_share()),
        ("row conflicts", WRITE_COLOUR, |c| c.conflict_share()),
    ];
    for (k, t) in s.timelines.iter().enumerate() {
        for (name, colour, share) in series {
            let style = if k % 2 == 0 {
                colour.stroke_width(4)
            } else {
                colour.mix(0.55).stroke_width(3)
            };
            // Runs of columns with a share, each drawn as steps.
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for (i, c) in t.columns.iter().enumerate() {
                match share(c) {
                    Some(v) => {
                        let (x0, x1) = column_ms(t, i, origin);
                        let run = runs.last_mut().expect("one run at least");
                        run.extend([(x0, v), (x1, v)]);
                    }
                    None => runs.push(Vec::new()),
                }
            }
            let label = if several {
                format!("{name}, board {}", t.board)
            } else {
                name.to_string()
            };
            let mut labelled = false;
            for run in runs.into_iter().filter(|r| !r.is_empty()) {
                let drawn = chart
                    .draw_series(LineSeries::new(run, style))
                    .map_err(err)?;
                if !labelled {
                    drawn
                        .label(label.clone())
                        .legend(move |(x, y)| stroke(x, y, style));
                    labelled = true;
                }
            }
        }
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

/// The board banks picture is as tall as its rows need.
pub(super) fn banks_height(s: &BoardStatisticsReport) -> u32 {
    let rows: u32 = s.timelines.iter().map(|t| t.ranks * t.banks).sum();
    (rows * PAGE_ROW + 2 * TEXT + 4 * MARGIN + TITLE * 2).max(HEIGHT)
}

/// Column commands per rank and bank and per column, a heat map: a row
/// per (board,) rank and bank, rank 0 bank 0 on top.
pub(super) fn banks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    s: &BoardStatisticsReport,
) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let (origin, span) = time_frame(&s.timelines);
    let several = s.timelines.len() > 1;
    let mut rows: Vec<(String, &BoardTimeline, usize)> = Vec::new();
    for t in &s.timelines {
        for r in 0..t.ranks {
            for b in 0..t.banks {
                let name = if several {
                    format!("b{} r{r} k{b}", t.board)
                } else {
                    format!("rank {r} bank {b}")
                };
                rows.push((name, t, (r * t.banks + b) as usize));
            }
        }
    }
    let n = rows.len().max(1);
    let (main, bar) = with_colour_bar(root, "Column commands per bank (the board's counters)")?;
    let mut chart = frame(&main, "", rows.iter().map(|r| r.0.clone()))
        .build_cartesian_2d(time_axis(span), (0..(n - 1).max(1)).into_segmented())
        .map_err(err)?;
    let every = n.div_ceil(32);
    styled(&mut chart.configure_mesh())
        .disable_mesh()
        .x_desc(BOARD_TIME_DESC)
        .y_desc("bank")
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(seg) => (n - 1)
                .checked_sub(*seg)
                .filter(|row| row % every == 0)
                .and_then(|row| rows.get(row))
                .map_or(String::new(), |r| r.0.clone()),
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    let cap = |v: u64| v.min(u64::from(u32::MAX)) as u32;
    let max = rows
        .iter()
        .flat_map(|(_, t, k)| t.columns.iter().map(move |c| cap(c.column_commands[*k])))
        .max()
        .unwrap_or(0);
    let mut cells = Vec::new();
    for (row, (_, t, k)) in rows.iter().enumerate() {
        let segment = n - 1 - row;
        for (i, c) in t.columns.iter().enumerate() {
            let v = cap(c.column_commands[*k]);
            if v == 0 {
                continue;
            }
            let (x0, x1) = column_ms(t, i, origin);
            cells.push(Rectangle::new(
                [
                    (x0, SegmentValue::Exact(segment)),
                    (x1, SegmentValue::Exact(segment + 1)),
                ],
                density(v, max).filled(),
            ));
        }
    }
    chart.draw_series(cells).map_err(err)?;
    colour_bar(&bar, max, X_LABEL_AREA)
}

/// The RDHPU's histogram of page stack distances, every board's summed,
/// as bars on a log scale; the twin's, when computed, as a line over it.
pub(super) fn reuse<DB: DrawingBackend>(root: &Area<DB>, s: &BoardStatisticsReport) -> DrawResult {
    root.fill(&WHITE).map_err(err)?;
    let sum = |hs: &mut dyn Iterator<Item = &Vec<u64>>| {
        let mut total: Vec<u64> = Vec::new();
        for h in hs {
            if total.len() < h.len() {
                total.resize(h.len(), 0);
            }
            for (t, v) in total.iter_mut().zip(h) {
                *t += v;
            }
        }
        total
    };
    let board = sum(&mut s
        .boards
        .iter()
        .filter_map(|b| b.reuse.as_ref().map(|r| &r.histogram)));
    let twin = sum(&mut s
        .boards
        .iter()
        .filter_map(|b| b.twin.as_ref().map(|t| &t.histogram_in_records)));
    let bins = board.len().max(2);
    // Room above the bars for the legend.
    let top = board.iter().chain(&twin).copied().max().unwrap_or(1).max(2) as f64 * 40.0;
    let y = Axis::log_counts(top, Y_TICKS);
    let y_labels: Vec<String> = y.ticks.iter().map(count_label).collect();
    let mut chart = frame(root, "Page stack distances (the board's RDHPU)", y_labels)
        .build_cartesian_2d((0..bins - 1).into_segmented(), y)
        .map_err(err)?;
    let every = (bins - 1).div_ceil(X_TICKS + 2).next_power_of_two();
    styled(&mut chart.configure_mesh())
        .disable_x_mesh()
        .x_desc("page stack distance (last bar: deeper or new)")
        .y_desc("references")
        .y_label_formatter(&count_label)
        // Every bin a label's place (most left empty), without a tick
        // mark each.
        .x_labels(bins)
        .set_tick_mark_size(LabelAreaPosition::Bottom, 0)
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) if *i + 1 == bins => "new".into(),
            SegmentValue::CenterOf(i) if i % every == 0 && *i + every < bins => i.to_string(),
            _ => String::new(),
        })
        .draw()
        .map_err(err)?;
    chart
        .draw_series(
            board
                .iter()
                .enumerate()
                .filter(|(_, &v)| v > 0)
                .map(|(i, &v)| {
                    let mut r = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 1.0),
                            (SegmentValue::Exact(i + 1), v as f64),
                        ],
                        READ_COLOUR.filled(),
                    );
                    r.set_margin(0, 0, 1, 1);
                    r
                }),
        )
        .map_err(err)?
        .label("the board's counts")
        .legend(|(x, y)| swatch(x, y, READ_COLOUR));
    if !twin.is_empty() {
        // A mark across each bin at the twin's count: bins apart, as the
        // bars are.
        let style = SECOND_COLOUR.stroke_width(4);
        chart
            .draw_series(
                twin.iter()
                    .enumerate()
                    .filter(|(_, &v)| v > 0)
                    .map(|(i, &v)| {
                        PathElement::new(
                            [
                                (SegmentValue::Exact(i), v as f64),
                                (SegmentValue::Exact(i + 1), v as f64),
                            ],
                            style,
                        )
                    }),
            )
            .map_err(err)?
            .label("the trace's twin, same intervals")
            .legend(move |(x, y)| stroke(x, y, style));
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}
