//! The bench's table: a run's row and the lines under it.

use super::{per_gbps, Step};

/// Prints a run's row, where its lost datagrams went, and where the
/// receiver's threads ran.
pub fn print_step(name: &str, w: usize, gbps: f64, size: usize, step: &Step, busy_columns: bool) {
    let lost = step.sent.saturating_sub(step.got);
    let pps = step.rate * 1e9 / 8.0 / size as f64;
    let busy = step.busy.unwrap_or_default();
    let row = [
        name.to_string(),
        format!("{gbps:.2}"),
        format!("{:.2}", step.rate),
        step.sent.to_string(),
        lost.to_string(),
        format!("{:.3}", lost as f64 * 100.0 / step.sent.max(1) as f64),
        format!("{:.2}", step.cpu),
        format!("{:.2}", step.sender_cpu),
        format!("{:.3}", per_gbps(step.cpu, step.rate)),
        format!("{:.3}", per_gbps(step.cpu + step.sender_cpu, step.rate)),
        format!("{:.3}", step.cpu / pps.max(1e-9) * 1e6),
        format!("{:.3}", step.sender_cpu / pps.max(1e-9) * 1e6),
        format!("{:.2}", busy.busy),
        format!("{:.2}", busy.interrupts),
        format!("{:.2}", step.others_at_least()),
        format!("{:.3}", per_gbps(busy.busy, step.rate)),
        step.seq_gaps.map_or("-".into(), |g| g.to_string()),
    ];
    println!("{}", columns(w, &row, busy_columns));
    if lost > 0 {
        println!("{:<w$} ({})", "", step.losses.describe(lost));
    }
    if let Some((threads, tail)) = &step.threads {
        println!(
            "{:<w$} (over the send: {threads}; after it {tail:.2} CPU-s)",
            ""
        );
    }
}

/// A table line: the name left-aligned in `w`, the rest right-aligned in
/// their columns' widths; the last five (the capture CPU's) only if `busy`.
pub fn columns(w: usize, cells: &[String; 17], busy: bool) -> String {
    const WIDTHS: [usize; 16] = [6, 6, 9, 8, 7, 6, 6, 6, 7, 7, 7, 6, 6, 6, 6, 6];
    let shown = if busy { 16 } else { 11 };
    let mut line = format!("{:<w$}", cells[0]);
    for (cell, width) in cells[1..].iter().zip(WIDTHS).take(shown) {
        line.push_str(&format!(" {cell:>width$}"));
    }
    line
}
