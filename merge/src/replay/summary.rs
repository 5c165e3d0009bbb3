//! What `hmtt replay` prints when it is done: the counts of a replay
//! ([`ReplayReport`]) beside the facts of its run (the kernel log's damage,
//! the time taken), as text or as JSON (`--json`); and the check of
//! `--max-unattributed`.

use std::fmt;

use hmtt_format::klog::LogImage;
use hmtt_format::TickLength;

use super::{Ambiguity, Miss, ReplayReport, Unplaced};

/// Lost windows and records not placed listed by name; the rest counted.
const LISTED: usize = 10;

/// A finished replay as `hmtt replay` reports it (its [`fmt::Display`]).
#[derive(Debug, Clone, Copy)]
pub struct ReplaySummary<'a> {
    pub report: &'a ReplayReport,
    /// The kernel log replayed: its records and what was wrong with it.
    pub log: &'a LogImage,
    /// Wall-clock seconds the replay took.
    pub seconds: f64,
    /// Boards in the trace (tags are counted per board when several).
    pub boards: u8,
    /// The trace's tick length; `None` (unknown) gives lost windows at 0 ns.
    pub tick: Option<TickLength>,
}

/// More references not attributed for certain than `--max-unattributed`
/// allows.
#[derive(Debug, Clone, PartialEq)]
pub struct TooManyUnattributed {
    /// The share not attributed for certain ([`ReplayReport::unattributed_percent`]).
    pub percent: f64,
    /// The threshold that applied ([`ReplayReport::unattributed_limit`]).
    pub limit: f64,
    /// The log has SWITCH records: the share is of references made while
    /// a traced process ran.
    pub switches: bool,
}

impl fmt::Display for TooManyUnattributed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let of = if self.switches {
            "of the references to frames a traced process maps, made while one ran,"
        } else {
            "of the references to frames a traced process maps"
        };
        write!(
            f,
            "{:.2}% {of} not attributed for certain, above --max-unattributed {} (causes above)",
            self.percent, self.limit
        )
    }
}

impl std::error::Error for TooManyUnattributed {}

impl ReplayReport {
    /// Fails when more references than the threshold allows (`given`, or
    /// the default of [`Self::unattributed_limit`]) are not attributed for
    /// certain.
    pub fn check_unattributed(&self, given: Option<f64>) -> Result<(), TooManyUnattributed> {
        match self.unattributed_limit(given) {
            Some(limit) if self.unattributed_percent() > limit => Err(TooManyUnattributed {
                percent: self.unattributed_percent(),
                limit,
                switches: self.switches,
            }),
            _ => Ok(()),
        }
    }

    /// `x` as a percentage of all references (0 when there are none).
    fn percent_of_references(&self, x: u64) -> f64 {
        if self.references == 0 {
            0.0
        } else {
            100.0 * x as f64 / self.references as f64
        }
    }
}

impl fmt::Display for ReplaySummary<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        let pct = |x: u64| r.percent_of_references(x);
        let secs = self.seconds;
        writeln!(
            out,
            "replayed {} references with {} log records in {:.2} s ({:.1} M references/s); {} selected",
            r.references,
            self.log.records.len(),
            secs,
            r.references as f64 / 1e6 / secs.max(1e-9),
            r.selected
        )?;
        writeln!(
            out,
            "translated to (pid, virtual address): {} ({:.2}%); miss rate {:.2}%",
            r.translated,
            pct(r.translated),
            100.0 * r.miss_rate()
        )?;
        for (m, name) in [
            (Miss::Unmapped, "unmapped"),
            (Miss::Kernel, "kernel (page tables)"),
            (Miss::Dma, "DMA buffers"),
        ] {
            let n = r.miss_count(m);
            writeln!(out, "  misses, {name:<22} {n:>12} ({:.2}%)", pct(n))?;
        }
        writeln!(out, "Table 3 (shares of all references):")?;
        for (i, name) in ["CPU read", "CPU write", "DMA read", "DMA write"]
            .iter()
            .enumerate()
        {
            writeln!(
                out,
                "  {name:<10} {:>12} {:>7.2}%",
                r.table3[i],
                pct(r.table3[i])
            )?;
        }
        self.table4(out)?;
        self.attribution(out)?;
        self.log_and_losses(out)
    }
}

impl ReplaySummary<'_> {
    /// The paper's Table 4: DMA requests by direction and size.
    fn table4(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        writeln!(out, "Table 4 (DMA requests by type):")?;
        if r.dma_requests.is_empty() {
            writeln!(out, "  none")?;
        }
        // By direction: the map's own order differs from run to run.
        let mut by_direction: Vec<_> = r.dma_requests.iter().collect();
        by_direction.sort_unstable_by_key(|(dir, _)| **dir);
        for (dir, sizes) in by_direction {
            let avg = sizes.iter().sum::<u64>() as f64 / sizes.len().max(1) as f64;
            let bucket = |lo: u64, hi: u64| sizes.iter().filter(|&&s| s > lo && s <= hi).count();
            writeln!(out, "  {dir:<24} {:>8} requests, average {:.0} bytes; <=4K {}, 4K-16K {}, 16K-64K {}, >64K {}",
                sizes.len(), avg, bucket(0, 4096), bucket(4096, 16384), bucket(16384, 65536), bucket(65536, u64::MAX))?;
        }
        Ok(())
    }

    /// References not attributed for certain, by cause, and the measure
    /// of `--max-unattributed`.
    fn attribution(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        writeln!(
            out,
            "not attributed for certain: {} ({:.2}%)",
            r.unattributed(),
            r.percent_of_references(r.unattributed())
        )?;
        writeln!(
            out,
            "  {:<44} {:>12}",
            "no process maps the frame (unmapped)",
            r.miss_count(Miss::Unmapped)
        )?;
        for a in Ambiguity::ALL {
            writeln!(
                out,
                "  {:<44} {:>12} ({})",
                a.describe(),
                r.ambiguous_count(a),
                a.rule()
            )?;
        }
        if r.switches {
            writeln!(
                out,
                "while a traced process ran: {} references, {} not attributed for certain",
                r.while_traced, r.unattributed_while_traced,
            )?;
        }
        writeln!(
            out,
            "to frames a traced process maps{}: {} references, {} not attributed for certain ({:.2}%, the measure of --max-unattributed)",
            if r.switches { ", while one ran" } else { "" },
            r.attributable,
            r.unattributed_attributable,
            r.unattributed_percent()
        )
    }

    /// The log's records placed at their tags, the kernel log's damage
    /// and the lost windows.
    fn log_and_losses(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, image) = (self.report, self.log);
        let boards = if self.boards > 1 {
            ", counted per board"
        } else {
            ""
        };
        writeln!(
            out,
            "log records placed at their tags: {}; not placed: {} ({} with lost tags applied where found, {} never applied{boards}); tags beyond the log: {}; tags placed out of order: {}; late tags ignored: {}",
            r.records_placed(),
            r.unplaced_count,
            r.lost_tags,
            r.no_tags,
            r.tags_without_record,
            r.tags_reordered,
            r.tags_late
        )?;
        for u in r.unplaced.iter().take(LISTED) {
            writeln!(out, "  {u:?}")?;
        }
        if r.cpu_area_frames > 0 {
            writeln!(
                out,
                "frames that tell their CPU (CPU_AREA records): {} of {} CPUs",
                r.cpu_area_frames, r.cpu_area_cpus
            )?;
        }
        if image.cut_short_bytes > 0 {
            writeln!(
                out,
                "kernel log cut short: {} bytes of a partial record at its end ignored",
                image.cut_short_bytes
            )?;
        }
        if image.seq_holes > 0 {
            writeln!(
                out,
                "kernel log seq holes: {} records missing in {} holes (their mappings are unknown)",
                image.seq_missing, image.seq_holes
            )?;
        }
        if image.duplicates > 0 {
            writeln!(
                out,
                "kernel log duplicate seqs: {} records dropped",
                image.duplicates
            )?;
        }
        if r.lost_window_count > 0 {
            writeln!(
                out,
                "lost windows (references unknown; log records whose tags were lost applied at the end): {}",
                r.lost_window_count
            )?;
            let ns = |ticks: u64| self.tick.map_or(0.0, |t| t.ns(ticks));
            for w in r.lost_windows.iter().take(LISTED) {
                writeln!(
                    out,
                    "  board {} ticks {}..{} ({:.3}..{:.3} ns), {} packets",
                    w.board,
                    w.from_tick,
                    w.to_tick,
                    ns(w.from_tick),
                    ns(w.to_tick),
                    w.packets
                )?;
            }
        }
        Ok(())
    }
}

/// The summary as `hmtt replay --json` writes it (docs/guide.md): the
/// text's figures, each under a name.
#[derive(serde::Serialize)]
struct ReplayJson<'a> {
    references: u64,
    selected: u64,
    translated: u64,
    miss_rate: f64,
    misses: Vec<MissJson>,
    table3: Table3Json,
    dma_requests: Vec<DmaRequestsJson<'a>>,
    not_attributed: u64,
    attributed_by_rule: Vec<RuleJson>,
    /// With SWITCH records only.
    while_traced: Option<CountedJson>,
    attributable: AttributableJson,
    log: LogJson,
    /// The first records not placed (the report keeps 1000).
    unplaced: &'a [Unplaced],
    lost_window_count: u64,
    /// The first lost windows (the report keeps 1000).
    lost_windows: Vec<LostWindowJson>,
    seconds: f64,
}

#[derive(serde::Serialize)]
struct MissJson {
    class: &'static str,
    references: u64,
}

#[derive(serde::Serialize)]
struct Table3Json {
    cpu_read: u64,
    cpu_write: u64,
    dma_read: u64,
    dma_write: u64,
}

#[derive(serde::Serialize)]
struct DmaRequestsJson<'a> {
    direction: &'a str,
    requests: usize,
    bytes: u64,
    up_to_4k: usize,
    from_4k_to_16k: usize,
    from_16k_to_64k: usize,
    over_64k: usize,
}

#[derive(serde::Serialize)]
struct RuleJson {
    cause: &'static str,
    rule: &'static str,
    references: u64,
}

#[derive(serde::Serialize)]
struct CountedJson {
    references: u64,
    not_attributed: u64,
}

#[derive(serde::Serialize)]
struct AttributableJson {
    references: u64,
    not_attributed: u64,
    /// The measure of `--max-unattributed`.
    not_attributed_percent: f64,
}

#[derive(serde::Serialize)]
struct LogJson {
    records: usize,
    placed: u64,
    not_placed: u64,
    lost_tags_applied_where_found: u64,
    never_applied: u64,
    tags_beyond_the_log: u64,
    tags_out_of_order: u64,
    late_tags_ignored: u64,
    cut_short_bytes: usize,
    seq_holes: u64,
    seq_missing: u64,
    duplicate_seqs: u64,
}

#[derive(serde::Serialize)]
struct LostWindowJson {
    board: u8,
    from_tick: u64,
    to_tick: u64,
    /// From the trace's tick length; 0 when it is unknown.
    from_ns: f64,
    to_ns: f64,
    packets: u64,
}

impl ReplaySummary<'_> {
    /// The summary as pretty JSON, a line end after it.
    pub fn write_json(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut out, &self.json())?;
        writeln!(out)
    }

    fn json(&self) -> ReplayJson<'_> {
        let (r, image) = (self.report, self.log);
        let mut by_direction: Vec<_> = r.dma_requests.iter().collect();
        by_direction.sort_unstable_by_key(|(dir, _)| **dir);
        let ns = |ticks: u64| self.tick.map_or(0.0, |t| t.ns(ticks));
        ReplayJson {
            references: r.references,
            selected: r.selected,
            translated: r.translated,
            miss_rate: r.miss_rate(),
            misses: Miss::ALL
                .into_iter()
                .map(|m| MissJson {
                    class: m.name(),
                    references: r.miss_count(m),
                })
                .collect(),
            table3: Table3Json {
                cpu_read: r.table3[0],
                cpu_write: r.table3[1],
                dma_read: r.table3[2],
                dma_write: r.table3[3],
            },
            dma_requests: by_direction
                .into_iter()
                .map(|(dir, sizes)| {
                    let bucket =
                        |lo: u64, hi: u64| sizes.iter().filter(|&&s| s > lo && s <= hi).count();
                    DmaRequestsJson {
                        direction: dir,
                        requests: sizes.len(),
                        bytes: sizes.iter().sum(),
                        up_to_4k: bucket(0, 4096),
                        from_4k_to_16k: bucket(4096, 16384),
                        from_16k_to_64k: bucket(16384, 65536),
                        over_64k: bucket(65536, u64::MAX),
                    }
                })
                .collect(),
            not_attributed: r.unattributed(),
            attributed_by_rule: Ambiguity::ALL
                .into_iter()
                .map(|a| RuleJson {
                    cause: a.describe(),
                    rule: a.rule(),
                    references: r.ambiguous_count(a),
                })
                .collect(),
            while_traced: r.switches.then_some(CountedJson {
                references: r.while_traced,
                not_attributed: r.unattributed_while_traced,
            }),
            attributable: AttributableJson {
                references: r.attributable,
                not_attributed: r.unattributed_attributable,
                not_attributed_percent: r.unattributed_percent(),
            },
            log: LogJson {
                records: image.records.len(),
                placed: r.records_placed(),
                not_placed: r.unplaced_count,
                lost_tags_applied_where_found: r.lost_tags,
                never_applied: r.no_tags,
                tags_beyond_the_log: r.tags_without_record,
                tags_out_of_order: r.tags_reordered,
                late_tags_ignored: r.tags_late,
                cut_short_bytes: image.cut_short_bytes,
                seq_holes: image.seq_holes,
                seq_missing: image.seq_missing,
                duplicate_seqs: image.duplicates,
            },
            unplaced: &r.unplaced,
            lost_window_count: r.lost_window_count,
            lost_windows: r
                .lost_windows
                .iter()
                .map(|w| LostWindowJson {
                    board: w.board,
                    from_tick: w.from_tick,
                    to_tick: w.to_tick,
                    from_ns: ns(w.from_tick),
                    to_ns: ns(w.to_tick),
                    packets: w.packets,
                })
                .collect(),
            seconds: self.seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_4_lists_the_directions_in_their_order() {
        let mut report = ReplayReport::default();
        for (dir, size) in [("to device (DMA read)", 4096), ("bidirectional", 100_000)] {
            report.dma_requests.insert(dir, vec![size]);
        }
        let log = LogImage::default();
        let text = ReplaySummary {
            report: &report,
            log: &log,
            seconds: 1.0,
            boards: 1,
            tick: TickLength::of_ps(1250),
        }
        .to_string();
        let table4: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Table 4"))
            .skip(1)
            .take(2)
            .collect();
        assert_eq!(
            table4,
            [
                "  bidirectional                   1 requests, average 100000 bytes; <=4K 0, 4K-16K 0, 16K-64K 0, >64K 1",
                "  to device (DMA read)            1 requests, average 4096 bytes; <=4K 1, 4K-16K 0, 16K-64K 0, >64K 0",
            ]
        );
    }

    #[test]
    fn the_json_names_each_figure_of_the_text() {
        let mut report = ReplayReport {
            references: 10,
            translated: 7,
            misses: [1, 2, 0],
            table3: [5, 3, 2, 0],
            unplaced: vec![Unplaced::NoTag { board: 1, seq: 9 }],
            unplaced_count: 1,
            no_tags: 1,
            lost_windows: vec![super::super::LostWindow {
                board: 0,
                from_tick: 8,
                to_tick: 16,
                packets: 2,
            }],
            lost_window_count: 1,
            ..ReplayReport::default()
        };
        report
            .dma_requests
            .insert("bidirectional", vec![4096, 100_000]);
        let log = LogImage {
            cut_short_bytes: 3,
            ..LogImage::default()
        };
        let summary = ReplaySummary {
            report: &report,
            log: &log,
            seconds: 0.5,
            boards: 1,
            tick: TickLength::of_ps(1250),
        };
        let mut bytes = Vec::new();
        summary.write_json(&mut bytes).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["references"], 10);
        assert_eq!(json["misses"][1]["class"], "kernel");
        assert_eq!(json["misses"][1]["references"], 2);
        assert_eq!(json["table3"]["cpu_write"], 3);
        assert_eq!(json["dma_requests"][0]["bytes"], 104_096);
        assert_eq!(json["dma_requests"][0]["up_to_4k"], 1);
        assert_eq!(json["dma_requests"][0]["over_64k"], 1);
        assert_eq!(json["while_traced"], serde_json::Value::Null);
        assert_eq!(json["log"]["cut_short_bytes"], 3);
        assert_eq!(json["log"]["never_applied"], 1);
        assert_eq!(
            json["unplaced"][0],
            serde_json::json!({"kind": "no_tag", "board": 1, "seq": 9})
        );
        assert_eq!(json["lost_windows"][0]["to_ns"], 20.0);
        assert!(bytes.ends_with(b"}\n"));
    }

    #[test]
    fn the_unattributed_threshold_fails_above_it_only() {
        let mut r = ReplayReport {
            attributable: 200,
            unattributed_attributable: 101,
            switches: true,
            ..ReplayReport::default()
        };
        let e = r.check_unattributed(None).unwrap_err();
        assert_eq!(e.limit, super::super::DEFAULT_MAX_UNATTRIBUTED);
        assert_eq!(
            e.to_string(),
            "50.50% of the references to frames a traced process maps, made while one ran, \
             not attributed for certain, above --max-unattributed 50 (causes above)"
        );
        assert!(r.check_unattributed(Some(50.5)).is_ok());
        r.switches = false;
        assert!(
            r.check_unattributed(None).is_ok(),
            "no default without SWITCH records"
        );
        let e = r.check_unattributed(Some(10.0)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("50.50% of the references to frames a traced process maps not"),
            "{e}"
        );
    }
}
