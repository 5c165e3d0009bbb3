//! The address-versus-time pictures: reads and writes of the whole trace
//! in two panels over physical addresses (`address_time`), and each of the
//! busiest processes of a virtual trace over its own virtual addresses
//! (`address_time_pidPID`). Stretches of unused address space are cut out
//! of the axis and the cuts marked.

use plotters::prelude::*;

use crate::pictures::{AddressAxis, Pictures, ProcessScatter, SCATTER_COLS, SCATTER_ROWS};
use crate::Analysis;

use super::style::{
    colour_bar, density, err, frame, styled, time_axis, with_colour_bar, Area, Axis, DrawResult,
    MARK_COLOUR, TEXT, TICK_MARK, TIME_DESC, X_LABEL_AREA,
};
use super::time_span_ms;

/// Height of the address-versus-time picture: two panels.
pub(super) const ADDRESS_TIME_HEIGHT: u32 = 1300;

/// The address axis: ticks at the starts of stretches of pages (where the
/// address under a tick is exact), at most `n`, spread evenly.
pub(super) fn address_axis(axis: &AddressAxis, n: usize) -> Axis {
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
    Axis::with_ticks(0.0, span, ticks)
}

/// The address axis of a panel and its title.
pub(super) struct AddressScale<'a> {
    axis: &'a AddressAxis,
    desc: &'a str,
}

/// One panel of the address-versus-time picture: `grid`'s densities,
/// coloured against `max`, the axis breaks marked.
#[allow(clippy::too_many_arguments)]
pub(super) fn address_panel<DB: DrawingBackend>(
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
pub(super) fn address_time_of<DB: DrawingBackend>(
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

pub(super) fn address_time<DB: DrawingBackend>(
    root: &Area<DB>,
    a: &Analysis,
    p: &Pictures,
) -> DrawResult {
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
pub(super) fn process_address_time<DB: DrawingBackend>(
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
