//! The build flow: Verilog from the top level, yosys, nextpnr with the
//! board's constraints, the packer, then the report (JSON and text) next to
//! the bitstream.

use crate::board::{Board, Family, Units};
use crate::error::FirmwareError;
use crate::report::{self, BuildReport};
use crate::tools::{self, Tool};
use crate::tops::{self, TopChoice};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub board: Board,
    pub out_dir: PathBuf,
    pub top: TopChoice,
    /// The optional units in the board top (default none: the ECP5's core
    /// with the Statistic Unit does not yet meet its fabric clock).
    pub units: Units,
    /// nextpnr's placer seed; results vary with it, so reports record it.
    pub seed: u64,
}

impl BuildOptions {
    pub fn new(board: Board, out_dir: impl Into<PathBuf>) -> BuildOptions {
        BuildOptions {
            board,
            out_dir: out_dir.into(),
            top: TopChoice::Board,
            units: Units::None,
            seed: 1,
        }
    }
}

/// File names inside the output directory.
pub struct BuildPaths {
    pub verilog: PathBuf,
    pub constraints: PathBuf,
    pub netlist: PathBuf,
    pub yosys_log: PathBuf,
    pub yosys_stat: PathBuf,
    pub nextpnr_log: PathBuf,
    pub placed: PathBuf,
    pub pack_log: PathBuf,
    pub bitstream: PathBuf,
    pub report_json: PathBuf,
    pub report_text: PathBuf,
}

impl BuildPaths {
    pub fn new(board: Board, out_dir: &Path) -> BuildPaths {
        let b = board.name();
        let (constraints_name, _) = board.constraints();
        let placed_ext = match board.family() {
            Family::Ecp5 => "config",
            Family::Ice40 => "asc",
        };
        BuildPaths {
            verilog: out_dir.join(format!("{b}.v")),
            constraints: out_dir.join(constraints_name),
            netlist: out_dir.join(format!("{b}.json")),
            yosys_log: out_dir.join(format!("{b}.yosys.log")),
            yosys_stat: out_dir.join(format!("{b}.yosys-stat.txt")),
            nextpnr_log: out_dir.join(format!("{b}.nextpnr.log")),
            placed: out_dir.join(format!("{b}.{placed_ext}")),
            pack_log: out_dir.join(format!("{b}.pack.log")),
            bitstream: out_dir.join(format!("{b}.{}", board.bitstream_extension())),
            report_json: out_dir.join(format!("{b}.report.json")),
            report_text: out_dir.join(format!("{b}.report.txt")),
        }
    }
}

fn write(path: &Path, text: &str) -> Result<(), FirmwareError> {
    std::fs::write(path, text).map_err(|e| FirmwareError::io("writing", path, e))
}

/// A file's name inside the output directory: the tools run there, and the
/// YoWASP (WebAssembly) tools can only reach files below their working
/// directory, so no absolute paths.
fn arg(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Checks that every tool the board's flow needs is installed, before
/// spending minutes on the earlier stages.
pub fn check_tools(board: Board) -> Result<(), FirmwareError> {
    let needed: &[Tool] = match board.family() {
        Family::Ecp5 => &[tools::YOSYS, tools::NEXTPNR_ECP5, tools::ECPPACK],
        Family::Ice40 => &[tools::YOSYS, tools::NEXTPNR_ICE40, tools::ICEPACK],
    };
    for tool in needed {
        tool.locate()?;
    }
    Ok(())
}

/// Runs the whole flow and writes the bitstream and both reports.
pub fn build(options: &BuildOptions) -> Result<BuildReport, FirmwareError> {
    let board = options.board;
    let units = options.units;
    tops::check_units(board, options.top, units)?;
    check_tools(board)?;
    let out = &options.out_dir;
    std::fs::create_dir_all(out).map_err(|e| FirmwareError::io("creating", out, e))?;
    let out = &out
        .canonicalize()
        .map_err(|e| FirmwareError::io("resolving", out, e))?;
    let paths = BuildPaths::new(board, out);
    let mut stages = Vec::new();

    let started = std::time::Instant::now();
    let top = tops::generate(board, options.top, units)?;
    write(&paths.verilog, &top.verilog)?;
    write(&paths.constraints, board.constraints().1)?;
    stages.push(("verilog".to_string(), started.elapsed().as_secs_f64()));
    tracing::info!(board = %board, top = top.name, "Verilog written to {}", paths.verilog.display());

    let synth = match board.family() {
        // abc9 gives ECP5 the better fmax. No LUT5-7 (PFUMX/L6MUX): mapping
        // the board's multiplexer networks into wide LUTs duplicated the
        // shared stages (TX FIFO write crossbar: 13.3k LUT4 + 8.2k muxes
        // against 6.8k LUT4), i.e. more cells and wires to place and route.
        // The iCE40's default mapping is fine.
        Family::Ecp5 => "synth_ecp5 -abc9 -nowidelut",
        Family::Ice40 => "synth_ice40",
    };
    // The synth script up to its `check` step, then that step without
    // `autoname`: renaming the flattened board's internal nets was 93 of
    // 266 CPU-s on the ECP5 board, and only the names in the logs change.
    let script = format!(
        "read_verilog {}; {synth} -top top -run :check; hierarchy -check; \
         check -noinit; blackbox =A:whitebox; write_json {}; tee -q -o {} stat",
        arg(&paths.verilog),
        arg(&paths.netlist),
        arg(&paths.yosys_stat)
    );
    let secs = tools::YOSYS.run(&["-p".into(), script], out, &paths.yosys_log)?;
    stages.push(("yosys".to_string(), secs));

    let (pnr, mut pnr_args): (_, Vec<String>) = match board.family() {
        Family::Ecp5 => (
            tools::NEXTPNR_ECP5,
            vec![
                "--85k".into(),
                "--package".into(),
                "CABGA381".into(),
                "--speed".into(),
                "8".into(),
                "--lpf".into(),
                arg(&paths.constraints),
                "--textcfg".into(),
                arg(&paths.placed),
                // router1 does not converge on the board core's
                // congestion; router2 (negotiated congestion over all nets
                // per iteration) does.
                "--router".into(),
                "router2".into(),
                // Rip up and reroute the nets of failing paths: without
                // it the fabric clock misses its margin on some seeds.
                "--tmg-ripup".into(),
                // HeAP (the default) packs the board core into the left
                // ~45 % of the die at its fixed density limit of 0.5 (the
                // ECP5 arch overrides --placer-heap-beta), where the TX
                // FIFO crossbar's routing does not fit; the electrostatic
                // placer spreads it over the die, at a lower wirelength
                // after legalisation too.
                "--placer".into(),
                "static".into(),
            ],
        ),
        Family::Ice40 => (
            tools::NEXTPNR_ICE40,
            vec![
                "--hx8k".into(),
                "--package".into(),
                "ct256".into(),
                "--pcf".into(),
                arg(&paths.constraints),
                "--asc".into(),
                arg(&paths.placed),
            ],
        ),
    };
    pnr_args.extend([
        "--json".into(),
        arg(&paths.netlist),
        "--seed".into(),
        options.seed.to_string(),
        "--log".into(),
        arg(&paths.nextpnr_log),
        // A missed clock is a figure for the report, not a crash.
        "--timing-allow-fail".into(),
    ]);
    // nextpnr writes its own --log; its console output goes next to it.
    let console = out.join(format!("{}.nextpnr.console", board.name()));
    let secs = match pnr.run(&pnr_args, out, &console) {
        Ok(secs) => secs,
        Err(e) => return Err(explain_pnr_failure(board, &console, e)),
    };
    stages.push(("nextpnr".to_string(), secs));

    let (packer, pack_args) = match board.family() {
        Family::Ecp5 => (
            tools::ECPPACK,
            vec![
                "--compress".into(),
                arg(&paths.placed),
                arg(&paths.bitstream),
            ],
        ),
        Family::Ice40 => (
            tools::ICEPACK,
            vec![arg(&paths.placed), arg(&paths.bitstream)],
        ),
    };
    let secs = packer.run(&pack_args, out, &paths.pack_log)?;
    stages.push(("pack".to_string(), secs));

    let log_text = std::fs::read_to_string(&paths.nextpnr_log)
        .map_err(|e| FirmwareError::io("reading", &paths.nextpnr_log, e))?;
    let figures = report::parse_nextpnr_log(&log_text);
    if figures.resources.is_empty() {
        return Err(FirmwareError::Report {
            log: paths.nextpnr_log.clone(),
            reason: "no \"Device utilisation\" table".into(),
        });
    }
    let stat = std::fs::read_to_string(&paths.yosys_stat).unwrap_or_default();
    let flip_flops = match board.family() {
        Family::Ecp5 => None,
        Family::Ice40 => Some(report::count_yosys_cells(&stat, &["SB_DFF"])),
    };
    let (clocks, other_clocks) = report::match_clocks(board.required_clocks(), &figures.clocks);
    let transfers = report::match_transfers(
        board.required_clocks(),
        board.transfers(),
        &figures.crossings,
    );
    let bitstream_bytes = std::fs::metadata(&paths.bitstream)
        .map_err(|e| FirmwareError::io("reading", &paths.bitstream, e))?
        .len();
    let report = BuildReport {
        board,
        device: board.device().to_string(),
        memory: board.memory().to_string(),
        lanes: board.lanes(),
        top: top.name.to_string(),
        placeholder: top.placeholder,
        top_note: top.note.to_string(),
        seed: options.seed,
        summary: report::summarize(board, &figures.resources, flip_flops),
        resources: figures.resources,
        pass: clocks.iter().all(|c| c.pass) && transfers.iter().all(|t| t.pass),
        clocks,
        other_clocks,
        transfers,
        dimm: board.dimm().name.to_string(),
        dimm_ck_mhz: board.dimm().ck_mhz,
        stage_seconds: stages,
        bitstream: paths.bitstream.clone(),
        bitstream_bytes,
    };
    write(&paths.report_json, &report.to_json())?;
    write(&paths.report_text, &report.to_text())?;
    tracing::info!(board = %board, pass = report.pass, "report written to {}", paths.report_text.display());
    Ok(report)
}

/// A design that needs more of a resource than the device has is the
/// common place-and-route failure; say which resource instead of the log's
/// last lines.
fn explain_pnr_failure(board: Board, console: &Path, error: FirmwareError) -> FirmwareError {
    let Ok(text) = std::fs::read_to_string(console) else {
        return error;
    };
    let figures = report::parse_nextpnr_log(&text);
    let over: Vec<_> = figures
        .resources
        .into_iter()
        .filter(|r| r.used > r.available)
        .collect();
    if over.is_empty() {
        error
    } else {
        FirmwareError::DoesNotFit {
            board,
            over: over
                .iter()
                .map(|r| format!("{} {}/{}", r.name, r.used, r.available))
                .collect::<Vec<_>>()
                .join(", "),
            log: console.to_path_buf(),
        }
    }
}
