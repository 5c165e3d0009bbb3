//! The build report: resources and fmax per clock domain parsed from
//! nextpnr's log (and flip-flop counts from yosys' statistics), pass/fail
//! against each board's required clocks, as JSON and as text; and the fmax
//! history the benchmark keeps so regressions show.

use crate::board::{Board, ClockRequirement};
use crate::error::FirmwareError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One line of nextpnr's "Device utilisation" table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resource {
    pub name: String,
    pub used: u64,
    pub available: u64,
}

/// One "Max frequency for clock" line (the last one nextpnr printed for it,
/// i.e. after routing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockFmax {
    pub nextpnr_name: String,
    pub fmax_mhz: f64,
    pub constraint_mhz: f64,
}

/// What nextpnr's log says about a placed-and-routed design.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PnrFigures {
    pub resources: Vec<Resource>,
    pub clocks: Vec<ClockFmax>,
}

/// A required clock domain against what place and route reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockResult {
    pub domain: String,
    pub net: String,
    pub purpose: String,
    pub required_mhz: f64,
    /// None when nextpnr reported no clock with this net in its name.
    pub fmax_mhz: Option<f64>,
    pub nextpnr_name: Option<String>,
    pub pass: bool,
}

/// The headline resource counts, named the same way for both families.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceSummary {
    pub logic_cells: Option<Resource>,
    pub flip_flops: Option<u64>,
    pub block_rams: Option<Resource>,
    pub ios: Option<Resource>,
    pub plls: Option<Resource>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildReport {
    pub board: Board,
    pub device: String,
    pub memory: String,
    pub lanes: usize,
    /// Name of the top level that was built.
    pub top: String,
    /// True when the top is a flow probe, not the board's logic.
    pub placeholder: bool,
    pub top_note: String,
    pub seed: u64,
    pub summary: ResourceSummary,
    pub resources: Vec<Resource>,
    pub clocks: Vec<ClockResult>,
    /// Clocks nextpnr timed that match no required domain.
    pub other_clocks: Vec<ClockFmax>,
    pub stage_seconds: Vec<(String, f64)>,
    pub bitstream: PathBuf,
    pub bitstream_bytes: u64,
    /// Every required clock met.
    pub pass: bool,
}

fn parse_resource_line(line: &str) -> Option<Resource> {
    // "Info: \t          TRELLIS_IO:      17/    365     4%"
    let body = line.strip_prefix("Info:")?.trim();
    let (name, rest) = body.split_once(':')?;
    let (used, rest) = rest.split_once('/')?;
    let available = rest.split_whitespace().next()?;
    Some(Resource {
        name: name.trim().to_string(),
        used: used.trim().parse().ok()?,
        available: available.parse().ok()?,
    })
}

fn parse_fmax_line(line: &str) -> Option<ClockFmax> {
    // "Info: Max frequency for clock   '$glbnet$sclk': 478.93 MHz (PASS at 200.00 MHz)"
    let rest = line.split_once("Max frequency for clock")?.1;
    let open = rest.find('\'')?;
    let close = open + 1 + rest[open + 1..].find("':")?;
    let name = &rest[open + 1..close];
    let after = &rest[close + 2..];
    let mut words = after.split_whitespace();
    let fmax: f64 = words.next()?.parse().ok()?;
    let constraint = after
        .split_once(" at ")
        .and_then(|(_, c)| c.split_whitespace().next())
        .and_then(|c| c.parse().ok())
        .unwrap_or(0.0);
    Some(ClockFmax {
        nextpnr_name: name.to_string(),
        fmax_mhz: fmax,
        constraint_mhz: constraint,
    })
}

/// Parses nextpnr's log text: the first "Device utilisation" table and the
/// last fmax line per clock.
pub fn parse_nextpnr_log(text: &str) -> PnrFigures {
    let mut resources = Vec::new();
    let mut in_table = false;
    let mut table_done = false;
    let mut clocks: BTreeMap<String, ClockFmax> = BTreeMap::new();
    for line in text.lines() {
        if !table_done {
            if line.contains("Device utilisation:") {
                in_table = true;
                continue;
            }
            if in_table {
                match parse_resource_line(line) {
                    Some(r) => resources.push(r),
                    None => {
                        in_table = false;
                        table_done = !resources.is_empty();
                    }
                }
            }
        }
        if let Some(c) = parse_fmax_line(line) {
            clocks.insert(c.nextpnr_name.clone(), c);
        }
    }
    PnrFigures {
        resources,
        clocks: clocks.into_values().collect(),
    }
}

/// Sums yosys `stat` cell counts whose type starts with one of `prefixes`.
pub fn count_yosys_cells(stat_text: &str, prefixes: &[&str]) -> u64 {
    let mut total = 0;
    for line in stat_text.lines() {
        let mut words = line.split_whitespace();
        if let (Some(cell), Some(count), None) = (words.next(), words.next(), words.next()) {
            if prefixes.iter().any(|p| cell.starts_with(p)) {
                total += count.parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

/// Matches each required clock with nextpnr's clocks whose name contains its
/// net; with several matches the slowest counts.
pub fn match_clocks(
    required: &[ClockRequirement],
    seen: &[ClockFmax],
) -> (Vec<ClockResult>, Vec<ClockFmax>) {
    let mut used = vec![false; seen.len()];
    let results = required
        .iter()
        .map(|req| {
            let mut best: Option<&ClockFmax> = None;
            for (i, c) in seen.iter().enumerate() {
                if c.nextpnr_name.contains(req.net) {
                    used[i] = true;
                    if best.is_none_or(|b| c.fmax_mhz < b.fmax_mhz) {
                        best = Some(c);
                    }
                }
            }
            ClockResult {
                domain: req.domain.to_string(),
                net: req.net.to_string(),
                purpose: req.purpose.to_string(),
                required_mhz: req.required_mhz,
                fmax_mhz: best.map(|b| b.fmax_mhz),
                nextpnr_name: best.map(|b| b.nextpnr_name.clone()),
                pass: best.is_some_and(|b| b.fmax_mhz >= req.required_mhz),
            }
        })
        .collect();
    let others = seen
        .iter()
        .zip(used)
        .filter(|(_, u)| !u)
        .map(|(c, _)| c.clone())
        .collect();
    (results, others)
}

fn find_resource(resources: &[Resource], names: &[&str]) -> Option<Resource> {
    names
        .iter()
        .find_map(|n| resources.iter().find(|r| r.name == *n).cloned())
}

pub fn summarize(board: Board, resources: &[Resource], flip_flops: Option<u64>) -> ResourceSummary {
    use crate::board::Family;
    match board.family() {
        Family::Ecp5 => ResourceSummary {
            logic_cells: find_resource(resources, &["TRELLIS_COMB", "TRELLIS_SLICE"]),
            flip_flops: flip_flops
                .or_else(|| find_resource(resources, &["TRELLIS_FF"]).map(|r| r.used)),
            block_rams: find_resource(resources, &["DP16KD"]),
            ios: find_resource(resources, &["TRELLIS_IO"]),
            plls: find_resource(resources, &["EHXPLLL"]),
        },
        Family::Ice40 => ResourceSummary {
            logic_cells: find_resource(resources, &["ICESTORM_LC"]),
            flip_flops,
            block_rams: find_resource(resources, &["ICESTORM_RAM"]),
            ios: find_resource(resources, &["SB_IO"]),
            plls: find_resource(resources, &["ICESTORM_PLL"]),
        },
    }
}

impl BuildReport {
    /// Wall seconds of one flow stage, if it ran.
    pub fn seconds_of(&self, stage: &str) -> Option<f64> {
        self.stage_seconds
            .iter()
            .find(|(name, _)| name == stage)
            .map(|&(_, secs)| secs)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    pub fn load(path: &Path) -> Result<BuildReport, FirmwareError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| FirmwareError::io("reading", path, e))?;
        serde_json::from_str(&text).map_err(|e| FirmwareError::BadReport {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// The fastest DIMM command clock the routed fabric can follow: the
    /// core takes `L` command ticks per fabric clock, so `L x fabric fmax`
    /// (None when the fabric clock was not timed).
    pub fn command_clock_allowed_mhz(&self) -> Option<f64> {
        let fabric = self.clocks.iter().find(|c| c.domain == "fabric")?;
        Some(fabric.fmax_mhz? * self.lanes as f64)
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "board      {} — {}", self.board, self.device);
        let _ = writeln!(s, "memory     {}, L = {} lanes", self.memory, self.lanes);
        let _ = writeln!(s, "top        {}", self.top);
        if self.placeholder {
            let _ = writeln!(
                s,
                "           PLACEHOLDER: a flow probe, NOT the board's logic ({})",
                self.top_note
            );
        } else {
            let _ = writeln!(s, "           {}", self.top_note);
        }
        let _ = writeln!(
            s,
            "bitstream  {} ({} bytes)",
            self.bitstream.display(),
            self.bitstream_bytes
        );
        let _ = writeln!(s, "seed       {}", self.seed);
        let _ = writeln!(s, "\nresources");
        let row = |s: &mut String, label: &str, r: &Option<Resource>| {
            if let Some(r) = r {
                let pct = if r.available > 0 {
                    100.0 * r.used as f64 / r.available as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    s,
                    "  {label:<12} {:>7} / {:<7} {pct:5.1}%  ({})",
                    r.used, r.available, r.name
                );
            }
        };
        row(&mut s, "logic cells", &self.summary.logic_cells);
        if let Some(ff) = self.summary.flip_flops {
            let _ = writeln!(s, "  {:<12} {ff:>7}", "flip-flops");
        }
        row(&mut s, "block RAM", &self.summary.block_rams);
        row(&mut s, "I/O", &self.summary.ios);
        row(&mut s, "PLL", &self.summary.plls);
        let _ = writeln!(s, "\nclocks (fmax after routing vs required)");
        for c in &self.clocks {
            match c.fmax_mhz {
                Some(f) => {
                    let _ = writeln!(
                        s,
                        "  {:<10} {:>8.2} MHz  need {:>7.2} MHz  {:+8.2} MHz  {}  [{}; {}]",
                        c.domain,
                        f,
                        c.required_mhz,
                        f - c.required_mhz,
                        if c.pass { "PASS" } else { "FAIL" },
                        c.purpose,
                        c.nextpnr_name.as_deref().unwrap_or("")
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  {:<10} not timed by nextpnr (no clock net containing `{}`)  need {:.2} MHz  FAIL",
                        c.domain, c.net, c.required_mhz
                    );
                }
            }
        }
        for c in &self.other_clocks {
            let _ = writeln!(
                s,
                "  (other)    {:>8.2} MHz  {}",
                c.fmax_mhz, c.nextpnr_name
            );
        }
        if let Some(ck) = self.command_clock_allowed_mhz() {
            // The speed the timing allows, stated as the memory's own
            // figures: DDR moves data on both edges, so DDR-(2 x clock).
            let _ = writeln!(
                s,
                "  timing allows a DIMM command clock up to {ck:.1} MHz (DDR-{:.0}, tCK {:.2} ns) with L = {}",
                2.0 * ck,
                1000.0 / ck,
                self.lanes
            );
        }
        let _ = writeln!(s, "\nstages");
        for (stage, secs) in &self.stage_seconds {
            let _ = writeln!(s, "  {stage:<10} {secs:7.1} s");
        }
        let _ = writeln!(
            s,
            "\nresult     {}{}",
            if self.pass {
                "PASS: every required clock is met"
            } else {
                "FAIL: a required clock is not met"
            },
            if self.placeholder {
                " (placeholder top)"
            } else {
                ""
            }
        );
        s
    }
}

/// One benchmark record: the figures that regressions show in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FmaxRecord {
    /// Seconds since the Unix epoch.
    pub when: u64,
    pub commit: String,
    pub board: Board,
    pub top: String,
    pub placeholder: bool,
    pub seed: u64,
    pub fmax_mhz: BTreeMap<String, Option<f64>>,
    pub logic_cells: Option<u64>,
    pub flip_flops: Option<u64>,
    pub block_rams: Option<u64>,
    pub ios: Option<u64>,
    pub pass: bool,
    /// Wall seconds of synthesis and of place and route (absent in old records).
    #[serde(default)]
    pub yosys_seconds: Option<f64>,
    #[serde(default)]
    pub nextpnr_seconds: Option<f64>,
}

impl FmaxRecord {
    /// One line of the JSON-lines history.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("a record always serializes")
    }

    pub fn from_report(report: &BuildReport, when: u64, commit: &str) -> FmaxRecord {
        FmaxRecord {
            when,
            commit: commit.to_string(),
            board: report.board,
            top: report.top.clone(),
            placeholder: report.placeholder,
            seed: report.seed,
            fmax_mhz: report
                .clocks
                .iter()
                .map(|c| (c.domain.clone(), c.fmax_mhz))
                .collect(),
            logic_cells: report.summary.logic_cells.as_ref().map(|r| r.used),
            flip_flops: report.summary.flip_flops,
            block_rams: report.summary.block_rams.as_ref().map(|r| r.used),
            ios: report.summary.ios.as_ref().map(|r| r.used),
            pass: report.pass,
            yosys_seconds: report.seconds_of("yosys"),
            nextpnr_seconds: report.seconds_of("nextpnr"),
        }
    }
}

/// Reads a JSON-lines history; a malformed line is skipped and counted.
pub fn read_history(text: &str) -> (Vec<FmaxRecord>, usize) {
    let mut bad = 0;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(r) => Some(r),
            Err(_) => {
                bad += 1;
                None
            }
        })
        .collect();
    (records, bad)
}

/// The figures of `current` side by side with the last record of the same
/// board and top in `history` (if any).
pub fn compare_text(current: &FmaxRecord, history: &[FmaxRecord]) -> String {
    let previous = history
        .iter()
        .rev()
        .find(|r| r.board == current.board && r.top == current.top);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}{}), seed {}: {}",
        current.board,
        current.top,
        if current.placeholder {
            ", placeholder"
        } else {
            ""
        },
        current.seed,
        match previous {
            Some(p) => format!("previous record: commit {} at {}", p.commit, p.when),
            None => "no previous record".to_string(),
        }
    );
    let fmt_opt = |v: Option<f64>| v.map_or("-".to_string(), |f| format!("{f:.2}"));
    let _ = writeln!(
        s,
        "  {:<22} {:>10} {:>10} {:>9}",
        "figure", "now", "previous", "change"
    );
    for (domain, now) in &current.fmax_mhz {
        let before = previous.and_then(|p| p.fmax_mhz.get(domain).copied().flatten());
        let change = match (now, before) {
            (Some(n), Some(b)) if b > 0.0 => format!("{:+.1}%", 100.0 * (n - b) / b),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10} {:>9}",
            format!("fmax {domain} (MHz)"),
            fmt_opt(*now),
            fmt_opt(before),
            change
        );
    }
    let counts: [(&str, Option<u64>, Option<u64>); 4] = [
        (
            "logic cells",
            current.logic_cells,
            previous.and_then(|p| p.logic_cells),
        ),
        (
            "flip-flops",
            current.flip_flops,
            previous.and_then(|p| p.flip_flops),
        ),
        (
            "block RAMs",
            current.block_rams,
            previous.and_then(|p| p.block_rams),
        ),
        ("I/O", current.ios, previous.and_then(|p| p.ios)),
    ];
    for (label, now, before) in counts {
        let change = match (now, before) {
            (Some(n), Some(b)) => format!("{:+}", n as i64 - b as i64),
            _ => "-".to_string(),
        };
        let show = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10} {:>9}",
            label,
            show(now),
            show(before),
            change
        );
    }
    let times: [(&str, Option<f64>, Option<f64>); 2] = [
        (
            "yosys (s)",
            current.yosys_seconds,
            previous.and_then(|p| p.yosys_seconds),
        ),
        (
            "nextpnr (s)",
            current.nextpnr_seconds,
            previous.and_then(|p| p.nextpnr_seconds),
        ),
    ];
    for (label, now, before) in times {
        let show = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10} {:>9}",
            label,
            show(now),
            show(before),
            "-"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECP5_LOG: &str = "Info: Device utilisation:
Info: \t          TRELLIS_IO:      17/    365     4%
Info: \t              DP16KD:       3/    208     1%
Info: \t             EHXPLLL:       1/      4    25%
Info: \t          TRELLIS_FF:      14/  83640     0%
Info: \t        TRELLIS_COMB:      28/  83640     0%

Info: Placed 33 cells based on constraints.
Info: Max frequency for clock '$glbnet$ref_clk_125$TRELLIS_IO_IN': 672.49 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock                      '$glbnet$fabric_clk': 213.56 MHz (PASS at 200.00 MHz)
Info: Device utilisation:
Info: \t          TRELLIS_IO:      99/    365     4%
Info: Max frequency for clock '$glbnet$ref_clk_125$TRELLIS_IO_IN': 515.20 MHz (PASS at 125.00 MHz)
Info: Max frequency for clock                      '$glbnet$fabric_clk': 178.93 MHz (FAIL at 200.00 MHz)
";

    #[test]
    fn parses_first_utilisation_table_and_last_fmax() {
        let f = parse_nextpnr_log(ECP5_LOG);
        assert_eq!(f.resources.len(), 5);
        assert_eq!(
            f.resources[0],
            Resource {
                name: "TRELLIS_IO".into(),
                used: 17,
                available: 365
            }
        );
        assert_eq!(f.resources[1].used, 3);
        assert_eq!(f.clocks.len(), 2);
        let fabric = f
            .clocks
            .iter()
            .find(|c| c.nextpnr_name.contains("fabric"))
            .unwrap();
        assert_eq!(fabric.fmax_mhz, 178.93);
        assert_eq!(fabric.constraint_mhz, 200.0);
    }

    #[test]
    fn required_clocks_pass_fail_and_missing() {
        let f = parse_nextpnr_log(ECP5_LOG);
        let req = Board::Ecp5_85f.required_clocks();
        let (results, others) = match_clocks(req, &f.clocks);
        assert!(others.is_empty());
        let fabric = &results[0];
        assert_eq!(fabric.fmax_mhz, Some(178.93));
        assert!(!fabric.pass);
        assert!(results[1].pass);
        let (missing, others) = match_clocks(req, &f.clocks[..1]);
        assert_eq!(missing.iter().filter(|c| c.fmax_mhz.is_none()).count(), 1);
        assert!(!missing.iter().all(|c| c.pass));
        assert!(others.is_empty());
    }

    #[test]
    fn text_states_the_command_clock_the_fabric_allows() {
        let f = parse_nextpnr_log(ECP5_LOG);
        let (clocks, other_clocks) = match_clocks(Board::Ecp5_85f.required_clocks(), &f.clocks);
        let mut report = BuildReport {
            board: Board::Ecp5_85f,
            device: "LFE5U-85F".into(),
            memory: "DDR3-1600".into(),
            lanes: 4,
            top: "ecp5-board".into(),
            placeholder: false,
            top_note: String::new(),
            seed: 1,
            summary: ResourceSummary::default(),
            resources: Vec::new(),
            clocks,
            other_clocks,
            stage_seconds: Vec::new(),
            bitstream: PathBuf::from("x.bit"),
            bitstream_bytes: 1,
            pass: false,
        };
        // 4 lanes x 178.93 MHz fabric.
        assert_eq!(report.command_clock_allowed_mhz(), Some(4.0 * 178.93));
        let text = report.to_text();
        assert!(
            text.contains("command clock up to 715.7 MHz (DDR-1431, tCK 1.40 ns) with L = 4"),
            "{text}"
        );
        report.clocks.retain(|c| c.domain != "fabric");
        assert_eq!(report.command_clock_allowed_mhz(), None);
        assert!(!report.to_text().contains("timing allows"));
    }

    #[test]
    fn yosys_stat_counts_by_prefix() {
        let stat = "   Number of cells:   40\n     SB_DFF   3\n     SB_DFFER  4\n     SB_LUT4  30\n     SB_DFF 2 extra\n";
        assert_eq!(count_yosys_cells(stat, &["SB_DFF"]), 7);
    }

    #[test]
    fn comparison_shows_previous_figures_of_same_board() {
        let mut fmax = BTreeMap::new();
        fmax.insert("fabric".to_string(), Some(150.0));
        let old = FmaxRecord {
            when: 1,
            commit: "abc".into(),
            board: Board::Ice40Hx8k,
            top: "t".into(),
            placeholder: false,
            seed: 1,
            fmax_mhz: fmax.clone(),
            logic_cells: Some(100),
            flip_flops: Some(50),
            block_rams: Some(4),
            ios: Some(30),
            pass: true,
            yosys_seconds: Some(60.0),
            nextpnr_seconds: None,
        };
        let mut now = old.clone();
        now.nextpnr_seconds = Some(125.4);
        now.fmax_mhz.insert("fabric".to_string(), Some(120.0));
        now.logic_cells = Some(110);
        let history_text = format!("{}\nnot json\n", serde_json::to_string(&old).unwrap());
        let (history, bad) = read_history(&history_text);
        assert_eq!((history.len(), bad), (1, 1));
        let text = compare_text(&now, &history);
        assert!(text.contains("-20.0%"), "{text}");
        assert!(text.contains("+10"), "{text}");
        assert!(
            text.contains("nextpnr (s)") && text.contains("125"),
            "{text}"
        );
        // Records from before the timing fields still load.
        let legacy = r#"{"when":1,"commit":"a","board":"ice40-hx8k","top":"t","placeholder":true,"seed":1,"fmax_mhz":{},"logic_cells":null,"flip_flops":null,"block_rams":null,"ios":null,"pass":true}"#;
        assert_eq!(read_history(legacy).0[0].yosys_seconds, None);
        assert!(compare_text(&now, &[]).contains("no previous record"));
    }
}
