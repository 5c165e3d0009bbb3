//! The build report: resources, fmax per clock domain and the longest path
//! of each clock crossing, parsed from nextpnr's log (and flip-flop counts
//! from yosys' statistics); pass/fail against each board's required clocks
//! and crossing budgets with a 5 % margin ([`REQUIRED_MARGIN`]), and the
//! DIMM command clock the routed design can follow; as JSON and as text;
//! and the fmax history the benchmark keeps so regressions show.

use crate::board::{Board, ClockRequirement, TransferRequirement, REQUIRED_MARGIN};
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

/// One "Max delay" line: the longest path from one clock (or `<async>`) to
/// another, which nextpnr reports for clocks it does not relate and times
/// against nothing (the last line per pair, i.e. after routing).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossingDelay {
    /// As nextpnr names them, e.g. "posedge $glbnet$sample_clk".
    pub from: String,
    pub to: String,
    pub delay_ns: f64,
}

/// What nextpnr's log says about a placed-and-routed design.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PnrFigures {
    pub resources: Vec<Resource>,
    pub clocks: Vec<ClockFmax>,
    pub crossings: Vec<CrossingDelay>,
}

/// A required clock domain against what place and route reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockResult {
    pub domain: String,
    pub net: String,
    pub purpose: String,
    pub required_mhz: f64,
    /// DIMM command ticks per cycle of this clock (0: not on the command path).
    #[serde(default)]
    pub ticks_per_clock: usize,
    /// None when nextpnr reported no clock with this net in its name.
    pub fmax_mhz: Option<f64>,
    pub nextpnr_name: Option<String>,
    /// The required period less the routed critical path.
    #[serde(default)]
    pub slack_ns: Option<f64>,
    /// `fmax / required - 1`.
    #[serde(default)]
    pub margin: Option<f64>,
    /// Routed at least at the required frequency.
    #[serde(default)]
    pub meets: bool,
    /// Routed with at least [`REQUIRED_MARGIN`] to spare.
    pub pass: bool,
}

/// A clock crossing's longest routed path against the design's budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransferResult {
    pub from: String,
    pub to: String,
    pub budget_ns: f64,
    pub why: String,
    /// None when nextpnr reported no path between the two clocks.
    pub delay_ns: Option<f64>,
    /// Within the budget less [`REQUIRED_MARGIN`] of it.
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
    #[serde(default)]
    pub transfers: Vec<TransferResult>,
    /// The DIMM the board is built for, e.g. "DDR3-1600", and its CK.
    #[serde(default)]
    pub dimm: String,
    #[serde(default)]
    pub dimm_ck_mhz: f64,
    pub stage_seconds: Vec<(String, f64)>,
    pub bitstream: PathBuf,
    pub bitstream_bytes: u64,
    /// Every required clock met and every crossing within its budget, each
    /// with [`REQUIRED_MARGIN`].
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

fn parse_crossing_line(line: &str) -> Option<CrossingDelay> {
    // "Info: Max delay posedge $glbnet$a     -> posedge $glbnet$b: 1.83 ns"
    let rest = line.split_once("Max delay ")?.1;
    let (from, rest) = rest.split_once("->")?;
    let (to, delay) = rest.rsplit_once(':')?;
    let delay_ns = delay.trim().strip_suffix("ns")?.trim().parse().ok()?;
    Some(CrossingDelay {
        from: from.trim().to_string(),
        to: to.trim().to_string(),
        delay_ns,
    })
}

/// Parses nextpnr's log text: the first "Device utilisation" table, the
/// last fmax line per clock and the last "Max delay" line per pair of
/// clocks.
pub fn parse_nextpnr_log(text: &str) -> PnrFigures {
    let mut resources = Vec::new();
    let mut in_table = false;
    let mut table_done = false;
    let mut clocks: BTreeMap<String, ClockFmax> = BTreeMap::new();
    let mut crossings: BTreeMap<(String, String), CrossingDelay> = BTreeMap::new();
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
        if let Some(c) = parse_crossing_line(line) {
            crossings.insert((c.from.clone(), c.to.clone()), c);
        }
    }
    PnrFigures {
        resources,
        clocks: clocks.into_values().collect(),
        crossings: crossings.into_values().collect(),
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
            let fmax = best.map(|b| b.fmax_mhz);
            let margin = fmax.map(|f| f / req.required_mhz - 1.0);
            ClockResult {
                domain: req.domain.to_string(),
                net: req.net.to_string(),
                purpose: req.purpose.to_string(),
                required_mhz: req.required_mhz,
                ticks_per_clock: req.ticks_per_clock,
                fmax_mhz: fmax,
                nextpnr_name: best.map(|b| b.nextpnr_name.clone()),
                slack_ns: fmax.map(|f| 1000.0 / req.required_mhz - 1000.0 / f),
                margin,
                meets: fmax.is_some_and(|f| f >= req.required_mhz),
                pass: margin.is_some_and(|m| m >= REQUIRED_MARGIN - 1e-9),
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

/// Each required crossing against nextpnr's longest path from a clock
/// whose name contains the source domain's net to one whose name contains
/// the destination's (the longest if several match).
pub fn match_transfers(
    clocks: &[ClockRequirement],
    transfers: &[TransferRequirement],
    seen: &[CrossingDelay],
) -> Vec<TransferResult> {
    let net_of = |domain: &str| {
        clocks
            .iter()
            .find(|c| c.domain == domain)
            .map(|c| c.net)
            .unwrap_or_else(|| panic!("transfer names an unknown domain `{domain}`"))
    };
    transfers
        .iter()
        .map(|t| {
            let (from, to) = (net_of(t.from), net_of(t.to));
            let delay = seen
                .iter()
                .filter(|c| c.from.contains(from) && c.to.contains(to))
                .map(|c| c.delay_ns)
                .fold(None, |worst: Option<f64>, d| {
                    Some(worst.map_or(d, |w| w.max(d)))
                });
            TransferResult {
                from: t.from.to_string(),
                to: t.to.to_string(),
                budget_ns: t.budget_ns,
                why: t.why.to_string(),
                delay_ns: delay,
                pass: delay.is_some_and(|d| d <= t.budget_ns * (1.0 - REQUIRED_MARGIN) + 1e-9),
            }
        })
        .collect()
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

    /// The fastest DIMM command clock the routed design can follow: each
    /// clock on the command path takes a fixed number of ticks per cycle
    /// (the core `L`), so the least of `ticks x fmax` over them (None when
    /// one of them was not timed). Reports from before the ticks were
    /// recorded count the fabric clock with `L`.
    pub fn command_clock_allowed_mhz(&self) -> Option<f64> {
        let mut allowed: Option<f64> = None;
        for c in &self.clocks {
            let ticks = match c.ticks_per_clock {
                0 if c.domain == "fabric" => self.lanes,
                t => t,
            };
            if ticks > 0 {
                let mhz = c.fmax_mhz? * ticks as f64;
                allowed = Some(allowed.map_or(mhz, |a| a.min(mhz)));
            }
        }
        allowed
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
        let _ = writeln!(
            s,
            "\nclocks (fmax after routing vs required; PASS needs {:.0} % margin)",
            100.0 * REQUIRED_MARGIN
        );
        for c in &self.clocks {
            match c.fmax_mhz {
                Some(f) => {
                    let verdict = match (c.pass, c.meets) {
                        (true, _) => "PASS",
                        (false, true) => "FAIL (margin)",
                        (false, false) => "FAIL",
                    };
                    let _ = writeln!(
                        s,
                        "  {:<10} {:>8.2} MHz  need {:>7.2} MHz  slack {:+6.2} ns ({:+6.1} %)  {}  [{}; {}]",
                        c.domain,
                        f,
                        c.required_mhz,
                        c.slack_ns.unwrap_or(1000.0 / c.required_mhz - 1000.0 / f),
                        100.0 * c.margin.unwrap_or(f / c.required_mhz - 1.0),
                        verdict,
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
        if !self.transfers.is_empty() {
            let _ = writeln!(
                s,
                "\nclock crossings (not timed by nextpnr: longest routed path vs the design's budget)"
            );
        }
        for t in &self.transfers {
            match t.delay_ns {
                Some(d) => {
                    let _ = writeln!(
                        s,
                        "  {} -> {}  {:>6.2} ns  budget {:>5.2} ns  slack {:+6.2} ns  {}  [{}]",
                        t.from,
                        t.to,
                        d,
                        t.budget_ns,
                        t.budget_ns - d,
                        if t.pass { "PASS" } else { "FAIL" },
                        t.why
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  {} -> {}  no path reported by nextpnr  budget {:.2} ns  FAIL  [{}]",
                        t.from, t.to, t.budget_ns, t.why
                    );
                }
            }
        }
        if let Some(ck) = self.command_clock_allowed_mhz() {
            // The speed the timing allows, stated as the memory's own
            // figures: DDR moves data on both edges, so DDR-(2 x clock).
            let _ = writeln!(
                s,
                "\nDIMM       timing allows a command clock up to {ck:.1} MHz (DDR-{:.0}, tCK {:.2} ns) with L = {}",
                2.0 * ck,
                1000.0 / ck,
                self.lanes
            );
            if self.dimm_ck_mhz > 0.0 {
                let _ = writeln!(
                    s,
                    "           {} (CK {:.0} MHz): {}",
                    self.dimm,
                    self.dimm_ck_mhz,
                    if self.pass {
                        "followed, every clock and crossing with its margin"
                    } else if ck >= self.dimm_ck_mhz {
                        "within the timing, but not every clock and crossing has its margin"
                    } else {
                        "NOT followed"
                    }
                );
            }
        }
        let _ = writeln!(s, "\nstages");
        for (stage, secs) in &self.stage_seconds {
            let _ = writeln!(s, "  {stage:<10} {secs:7.1} s");
        }
        let _ = writeln!(
            s,
            "\nresult     {}{}",
            if self.pass {
                "PASS: every required clock and crossing is met with its margin"
            } else {
                "FAIL: a required clock or crossing is not met with its margin"
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
    /// Longest routed path per budgeted clock crossing ("from->to").
    #[serde(default)]
    pub transfer_ns: BTreeMap<String, Option<f64>>,
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
            transfer_ns: report
                .transfers
                .iter()
                .map(|t| (format!("{}->{}", t.from, t.to), t.delay_ns))
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

/// `report`'s figures (as of `commit`) against the history file at
/// `history_path` (a missing file is an empty history), as
/// [`compare_text`] gives them, with the number of malformed lines
/// skipped; with `append`, the record is then added to the file.
pub fn compare_with_history(
    report: &BuildReport,
    history_path: &Path,
    commit: &str,
    append: bool,
) -> Result<(String, usize), FirmwareError> {
    let text = match std::fs::read_to_string(history_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(FirmwareError::io("reading", history_path, e)),
    };
    let (history, bad) = read_history(&text);
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let record = FmaxRecord::from_report(report, when, commit);
    if append {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(history_path)
            .map_err(|e| FirmwareError::io("opening", history_path, e))?;
        std::io::Write::write_all(&mut file, format!("{}\n", record.to_json_line()).as_bytes())
            .map_err(|e| FirmwareError::io("appending to", history_path, e))?;
    }
    Ok((compare_text(&record, &history), bad))
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
    for (crossing, now) in &current.transfer_ns {
        let before = previous.and_then(|p| p.transfer_ns.get(crossing).copied().flatten());
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10} {:>9}",
            format!("{crossing} (ns)"),
            fmt_opt(*now),
            fmt_opt(before),
            "-"
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
mod tests;
