//! What `hmtt analyze` prints: an [`Analysis`] as text, a summary of each
//! figure (`--json` and `--plot` give them whole).

use std::fmt;

use super::{percent, Analysis};

/// An analysis as `hmtt analyze` prints it (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct AnalysisReport<'a> {
    /// The trace as named to the user (or where a combined analysis came
    /// from).
    pub name: &'a str,
    /// The event window as the user gave it, if any.
    pub window: Option<&'a str>,
    pub analysis: &'a Analysis,
}

impl fmt::Display for AnalysisReport<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        let m = &a.mix;
        let refs = m.references();
        let pct = |x: u64| percent(x, refs);
        writeln!(
            out,
            "{} {}: {refs} references over {:.3} ms{}",
            if a.virtual_trace {
                "virtual trace"
            } else {
                "trace"
            },
            self.name,
            a.duration_ns / 1e6,
            match (self.window, a.window) {
                (Some(w), Some((b, e))) => format!(" in the window {w} (events {b},{e})"),
                _ => String::new(),
            }
        )?;
        if m.lost_references > 0 || m.gaps > 0 {
            writeln!(
                out,
                "not in any figure: {} references the board dropped (LOST records), {} capture gaps ({} packets missing)",
                m.lost_references, m.gaps, m.gap_packets
            )?;
        }
        writeln!(out, "\nread/write mix")?;
        writeln!(
            out,
            "  reads {} ({:.1}%), writes {} ({:.1}%)",
            m.reads,
            pct(m.reads),
            m.writes,
            pct(m.writes)
        )?;
        for (b, (r, w)) in &m.by_board {
            writeln!(out, "  board {b}: {r} reads, {w} writes")?;
        }
        if a.virtual_trace {
            let [cr, cw, dr, dw] = m.cpu_dma;
            writeln!(
                out,
                "  CPU read {cr}, CPU write {cw}, DMA read {dr}, DMA write {dw}; translated {} ({:.1}%)",
                m.translated,
                pct(m.translated)
            )?;
        }
        self.timeline(out)?;
        self.banks(out)?;
        self.rows_and_pages(out)?;
        self.reuse(out)?;
        self.streams_and_processes(out)
    }
}

impl AnalysisReport<'_> {
    /// The bandwidth over time, every interval up to 16 shown.
    fn timeline(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        let t = &a.timeline;
        writeln!(
            out,
            "\nbandwidth over time: {} intervals of {:.3} ms (--json or --plot for all)",
            t.intervals.len(),
            t.interval_ns / 1e6
        )?;
        let peak = t.intervals.iter().map(|r| r.mb_per_s).fold(0.0, f64::max);
        let mean = if a.duration_ns > 0.0 {
            a.mix.references() as f64 * 64.0 / a.duration_ns * 1e3
        } else {
            0.0
        };
        writeln!(out, "  mean {mean:.1} MB/s, peak interval {peak:.1} MB/s")?;
        writeln!(
            out,
            "  {:>12} {:>10} {:>10} {:>12} {:>10}",
            "start_ms", "reads", "writes", "MB/s", "banks"
        )?;
        let step = t.intervals.len().div_ceil(16).max(1);
        for r in t.intervals.iter().step_by(step) {
            writeln!(
                out,
                "  {:>12.4} {:>10} {:>10} {:>12.1} {:>10.2}",
                r.start_ns / 1e6,
                r.reads,
                r.writes,
                r.mb_per_s,
                r.mean_banks
            )?;
        }
        if step > 1 {
            writeln!(out, "  (every {step}th interval shown)")?;
        }
        writeln!(
            out,
            "  I-code events: {}",
            t.events.len() as u64 + t.events_dropped
        )?;
        Ok(())
    }

    /// The banks referenced and their parallelism.
    fn banks(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        let pct = |x: u64| percent(x, a.mix.references());
        let b = &a.banks;
        writeln!(
            out,
            "\nbanks (geometry {}, from the {}): {} banks referenced, {} references beyond the DIMM",
            b.geometry,
            b.geometry_source,
            b.banks.len(),
            b.outside
        )?;
        for (board, rank, n) in &b.ranks {
            writeln!(out, "  board {board} rank {rank}: {n} ({:.1}%)", pct(*n))?;
        }
        for r in &b.banks {
            writeln!(
                out,
                "    board {} rank {} bank {:>2}: {:>10} reads {:>10} writes ({:.1}%)",
                r.board,
                r.rank,
                r.bank,
                r.reads,
                r.writes,
                pct(r.reads + r.writes)
            )?;
        }
        let p = &a.bank_parallelism;
        writeln!(
            out,
            "  bank-level parallelism: distinct banks per {:.0} ns window with references: mean {:.2}, max {} ({} windows)",
            p.window_ns, p.mean, p.max, p.windows
        )?;
        Ok(())
    }

    /// Row locality and the hottest pages.
    fn rows_and_pages(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        let r = &a.row_locality;
        writeln!(
            out,
            "\nrow locality (an estimate: the trace has no ACTIVATE/PRECHARGE; a hit is a reference to the row last referenced in its bank)"
        )?;
        writeln!(
            out,
            "  same row {} ({:.1}%), other row {}, first in bank {}",
            r.same_row, r.hit_percent, r.other_row, r.first_in_bank
        )?;
        let pg = &a.pages;
        writeln!(
            out,
            "\npages: {} distinct 4 KiB pages; the {} hottest take {:.1}% of the references",
            pg.distinct_pages,
            pg.top.len(),
            pg.top_share_percent
        )?;
        for h in &pg.top {
            writeln!(
                out,
                "  {:#014x} {:>10} refs ({} reads, {} writes)",
                h.page,
                h.reads + h.writes,
                h.reads,
                h.writes
            )?;
        }
        Ok(())
    }

    /// The reuse distances (and their sampled estimate beside them, when
    /// both were asked).
    fn reuse(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        for u in std::iter::once(&a.reuse).chain(&a.reuse_sampled) {
            reuse_histogram(out, u)?;
        }
        Ok(())
    }

    /// Sequential streams, processes and DMA requests.
    fn streams_and_processes(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.analysis;
        for (label, s) in [
            ("physical", Some(&a.streams)),
            ("virtual", a.virtual_streams.as_ref()),
        ] {
            let Some(s) = s else { continue };
            writeln!(
                out,
                "\nsequential streams over {label} lines (window {}, at least {} lines): SCR {:.1}% ({} of {} references in {} streams), longest {}",
                s.window, s.min_len, s.scr_percent, s.stream_references, s.references, s.streams, s.longest
            )?;
            for (lo, hi, n) in &s.run_lengths {
                writeln!(out, "  run length {lo:>8} ..= {hi:<8} {n:>10}")?;
            }
        }
        if let Some(procs) = &a.processes {
            writeln!(out, "\nprocesses (translated references):")?;
            for p in procs {
                writeln!(
                    out,
                    "  pid {:>6}: {:>10} reads {:>10} writes, footprint {} pages ({:.1} KiB)",
                    p.pid,
                    p.reads,
                    p.writes,
                    p.pages,
                    p.footprint_bytes as f64 / 1024.0
                )?;
            }
        }
        if let Some(dma) = &a.dma_requests {
            writeln!(
                out,
                "\nDMA requests (estimated from runs of DMA references; `hmtt replay` gives the logged sizes):"
            )?;
            if dma.is_empty() {
                writeln!(out, "  none")?;
            }
            for d in dma {
                writeln!(
                    out,
                    "  {:<24} {:>8} requests, {} bytes; <=4K {}, 4K-16K {}, 16K-64K {}, >64K {}",
                    d.direction,
                    d.requests,
                    d.bytes,
                    d.size_classes[0],
                    d.size_classes[1],
                    d.size_classes[2],
                    d.size_classes[3]
                )?;
            }
        }
        if let Some(b) = &a.board_statistics {
            write!(out, "{b}")?;
        }
        Ok(())
    }
}

/// One reuse-distance histogram, as text.
fn reuse_histogram(
    out: &mut fmt::Formatter<'_>,
    u: &super::reuse_distance::ReuseReport,
) -> fmt::Result {
    let reuses: u64 = u.buckets.iter().map(|b| b.2).sum();
    match &u.sampling {
        None => writeln!(
            out,
            "\nreuse distance (exact LRU stack distance over {} distinct lines): {} first uses, {} reuses",
            u.distinct_lines, u.cold, reuses
        )?,
        Some(s) => writeln!(
            out,
            "\nreuse distance (estimated, SHARDS {} sampling at rate {:.5} from {} references): about {} distinct lines, {} first uses, {} reuses",
            s.mode, s.rate, s.sampled_references, u.distinct_lines, u.cold, reuses
        )?,
    }
    let mut acc = 0;
    for (lo, hi, n) in &u.buckets {
        acc += n;
        writeln!(
            out,
            "  {:>12} ..= {:<12} {:>10}  cdf {:.3}",
            lo,
            hi,
            n,
            acc as f64 / reuses.max(1) as f64
        )?;
    }
    Ok(())
}
