//! Shared test harness: drives `Capture` with a DDR command stream through
//! rust-hdl's `Simulation` and records the push side (words and fill level
//! per clock) and the pop side (words and their pop clocks); `cosim`
//! compares that with the golden model's probe over the same clocks
//! (`model`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::dcbu::{kind, CommandPins};
use hmtt_hdl::encoder::GROUPS;
use hmtt_hdl::pins::DimmPins;

mod model;
pub use model::model;
use rust_hdl::prelude::*;

/// One command for the pins: a [`kind`] code, rank, bank, arg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinCommand {
    pub tick: u64,
    pub kind: u64,
    pub rank: u64,
    pub bank: u64,
    pub arg: u64,
}

/// What the capture chain did, clock by clock (board.md 2.2: `k` is the
/// fabric clock carrying ticks `k L .. k L + L - 1`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaptureTrace {
    /// Every word pushed, with the clock of its push.
    pub pushed: Vec<(u64, u32)>,
    /// Every word popped, with the clock of its pop.
    pub popped: Vec<(u64, u32)>,
    /// Fill level after every clock, from clock 0.
    pub levels: Vec<u32>,
    /// Header flags of the board mode after every clock.
    pub modes: Vec<u8>,
    pub protocol_errors: u64,
    pub unknown_commands: u64,
    pub out_of_range: u64,
    pub references_over_limit: u64,
    pub clocks_over_limit: u64,
    pub events_dropped: u64,
    pub lost_words: u64,
    pub time_fillers: u64,
    pub time_overflows: u64,
    pub high_water: u64,
    /// Lost count still pending at the end (model only).
    pub lost_pending: u64,
}

pub struct Drain {
    pub num: u64,
    pub den: u64,
}

/// Puts `p` on lane `j` of `pins`.
pub fn set_pins(pins: &mut DimmPins, p: CommandPins) {
    pins.cs_n.next = p.cs_n.to_bits();
    pins.ras_n.next = p.ras_n;
    pins.cas_n.next = p.cas_n;
    pins.we_n.next = p.we_n;
    pins.cke.next = p.cke;
    pins.ba.next = p.ba.to_bits();
    pins.addr.next = p.addr.to_bits();
}

/// Runs `commands` (ticks strictly increasing) through a `Capture<L, E, B,
/// AB>` until the stream has ended, the FIFO is empty and every pop came
/// out, or `max_clocks` clocks. The drain is `num / den` words per tick.
pub fn run_capture<const L: usize, const E: usize, const B: usize, const AB: usize>(
    config: CaptureConfig,
    drain: Drain,
    commands: &[PinCommand],
    max_clocks: u64,
) -> CaptureTrace {
    let by_tick: BTreeMap<u64, PinCommand> = commands.iter().map(|c| (c.tick, *c)).collect();
    assert_eq!(
        by_tick.len(),
        commands.len(),
        "one command per tick on the pins"
    );
    let last_clock = commands.last().map_or(0, |c| c.tick / L as u64);
    let mut uut = Capture::<L, E, B, AB>::new(config);
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Capture<L, E, B, AB>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<Capture<L, E, B, AB>>| {
        let mut x = sim.init()?;
        x.drain_num.next = (drain.num * L as u64).to_bits();
        x.drain_den.next = drain.den.to_bits();
        let mut trace = CaptureTrace::default();
        let mut clock = 0u64;
        let mut drained_since = None;
        loop {
            for j in 0..L {
                let t = clock * L as u64 + j as u64;
                let pins = match by_tick.get(&t) {
                    Some(c) => CommandPins::for_command(c.kind, c.rank, c.bank, c.arg),
                    None => CommandPins::DESELECT,
                };
                set_pins(&mut x.pins[j], pins);
            }
            wait_clock_cycle!(sim, clock, x);
            clock += 1;
            if x.push_tick_valid.val() {
                let k = x.push_tick.val().to_u64() / L as u64;
                assert_eq!(trace.levels.len() as u64, k, "clocks out of order");
                for g in 0..GROUPS {
                    let words = [
                        x.push_word0[g].val().to_u32(),
                        x.push_word1[g].val().to_u32(),
                        x.push_word2[g].val().to_u32(),
                    ];
                    let n = x.push_count[g].val().to_u64() as usize;
                    for w in &words[..n] {
                        trace.pushed.push((k, *w));
                    }
                }
                trace.levels.push(x.fill.val().to_u32());
            }
            if x.tick_valid.val() {
                let k = x.tick.val().to_u64() / L as u64;
                let flags = u8::from(x.tracing.val()) | u8::from(x.tags_only.val()) << 1;
                assert_eq!(trace.modes.len() as u64, k, "pop clocks out of order");
                trace.modes.push(flags);
                if x.pop_valid.val() {
                    trace.popped.push((k, x.pop_word.val().to_u32()));
                }
            }
            let clocks_seen = trace.levels.len() as u64;
            let empty = trace.levels.last() == Some(&0);
            if clocks_seen > last_clock && empty && trace.popped.len() == trace.pushed.len() {
                // A few clocks more so a late pop would show up.
                let since = *drained_since.get_or_insert(clock);
                if clock >= since + 6 {
                    break;
                }
            }
            if clocks_seen >= max_clocks {
                break;
            }
        }
        trace.protocol_errors = x.protocol_errors.val().to_u64();
        trace.unknown_commands = x.unknown_commands.val().to_u64();
        trace.out_of_range = x.out_of_range.val().to_u64();
        trace.references_over_limit = x.references_over_limit.val().to_u64();
        trace.clocks_over_limit = x.clocks_over_limit.val().to_u64();
        trace.events_dropped = x.events_dropped.val().to_u64();
        trace.lost_words = x.lost_words.val().to_u64();
        trace.time_fillers = x.time_fillers.val().to_u64();
        trace.time_overflows = x.time_overflows.val().to_u64();
        trace.high_water = x.high_water.val().to_u64();
        tx.send(trace).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

pub fn cmd(tick: u64, kind: u64, rank: u64, bank: u64, arg: u64) -> PinCommand {
    PinCommand {
        tick,
        kind,
        rank,
        bank,
        arg,
    }
}

pub use kind::*;

use hmtt_board_model::{BoardConfig, DrainRate};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;
use hmtt_hdl::dsmu::LineGeometry;

/// The DCBU kind code a memory controller puts on the pins for `cmd`.
pub fn kind_of(cmd: DdrCmd) -> u64 {
    match cmd {
        DdrCmd::Act => ACT,
        DdrCmd::Rd => RD,
        DdrCmd::Wr => WR,
        DdrCmd::Rda => RDA,
        DdrCmd::Wra => WRA,
        DdrCmd::Pre => PRE,
        DdrCmd::Prea => PREA,
        DdrCmd::Ref => REF,
        DdrCmd::Mrs => MRS,
        DdrCmd::Zq => ZQ,
        DdrCmd::Nop => NOP,
        DdrCmd::Unknown => UNKNOWN,
    }
}

pub fn pin_commands(cmds: &[Command]) -> Vec<PinCommand> {
    cmds.iter()
        .map(|c| {
            cmd(
                c.cycle,
                kind_of(c.cmd),
                c.rank.into(),
                c.bank.into(),
                c.arg.into(),
            )
        })
        .collect()
}

pub fn line_geometry(g: &Geometry) -> LineGeometry {
    LineGeometry {
        rank_bits: g.rank_bits(),
        bank_bits: g.bank_bits(),
        row_bits: g.row_bits(),
        col_line_bits: g.col_line_bits(),
    }
}

/// The capture chain's parameters for the golden model's configuration.
pub fn capture_config(cfg: &BoardConfig) -> CaptureConfig {
    CaptureConfig {
        geometry: line_geometry(&cfg.geometry),
        window_rank: cfg.window.rank.into(),
        window_row_first: cfg.window.row_first.into(),
        window_row_count: cfg.window.row_count.into(),
        start_tracing: cfg.start_tracing,
    }
}

/// A small deterministic generator (splitmix64) for random streams.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random legal stream: one command per tick at most (the pins carry
/// one), gaps `1..=max_gap`, every RD/WR to an activated bank, some
/// references to the config window (inner commands among them), some
/// PRE/REF/NOP/unknown commands.
pub fn random_stream(cfg: &BoardConfig, seed: u64, count: usize, max_gap: u64) -> Vec<Command> {
    let g = &cfg.geometry;
    let w = &cfg.window;
    let mut rng = Rng(seed);
    let mut open: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut out = Vec::with_capacity(count);
    let mut t = rng.below(5);
    let push = |out: &mut Vec<Command>, t: &mut u64, cmd, rank, bank, arg, rng: &mut Rng| {
        out.push(Command {
            cycle: *t,
            cmd,
            rank,
            bank,
            arg,
        });
        *t += 1 + rng.below(max_gap);
    };
    while out.len() < count {
        let roll = rng.below(100);
        let (rank, bank, row, col) = if roll < 12 {
            // Config window: inner commands (0..5, sometimes reserved ones)
            // and user events.
            let index = if rng.below(3) == 0 {
                rng.below(8)
            } else {
                64 + rng.below(4000)
            };
            let line = w.first_line(g) + index;
            let col_line = line & ((1 << g.col_line_bits()) - 1);
            let bank = (line >> g.col_line_bits()) & ((1 << g.bank_bits()) - 1);
            let row = (line >> (g.col_line_bits() + g.bank_bits())) & ((1 << g.row_bits()) - 1);
            (w.rank, bank as u32, row as u32, (col_line << 3) as u32)
        } else {
            let rank = rng.below(g.ranks().into()) as u32;
            let bank = rng.below(g.banks().into()) as u32;
            // A few rows per bank so rows are reused and LINE_HI changes.
            let row = (rng.below(4) * 0x1357 + rng.below(3)) as u32 % g.rows();
            let col = (rng.below(g.lines_per_row().into()) << 3) as u32;
            (rank, bank, row, col)
        };
        if roll >= 94 {
            let cmd = [
                DdrCmd::Pre,
                DdrCmd::Ref,
                DdrCmd::Nop,
                DdrCmd::Unknown,
                DdrCmd::Zq,
                DdrCmd::Prea,
            ][(roll - 94) as usize];
            push(&mut out, &mut t, cmd, rank, bank, 0, &mut rng);
            continue;
        }
        if open.get(&(rank, bank)) != Some(&row) {
            push(&mut out, &mut t, DdrCmd::Act, rank, bank, row, &mut rng);
            open.insert((rank, bank), row);
        }
        let cmd = [DdrCmd::Rd, DdrCmd::Wr, DdrCmd::Rda, DdrCmd::Wra][rng.below(4) as usize];
        push(&mut out, &mut t, cmd, rank, bank, col, &mut rng);
    }
    out.truncate(count);
    out
}

/// `legal` with commands that do not fit the geometry mixed in (as many as
/// the pins can carry: ranks up to 3, banks up to 15, rows up to 2^18-1,
/// columns up to 2^11-1): one before about every `every`-th command, each
/// aimed at a slot in use so that cutting its high bits would matter.
/// Commands are re-timed, keeping the gaps, one command per tick.
pub fn with_out_of_range(
    cfg: &BoardConfig,
    legal: &[Command],
    seed: u64,
    every: u64,
) -> Vec<Command> {
    let g = &cfg.geometry;
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(legal.len() * 2);
    let mut last: Option<u64> = None;
    let mut prev = legal.first().map_or(0, |c| c.cycle);
    for c in legal {
        let mut t = last.map_or(c.cycle, |l| l + (c.cycle - prev).max(1));
        prev = c.cycle;
        if rng.below(every) == 0 {
            let (mut rank, mut bank, mut arg) = (c.rank, c.bank, c.arg);
            let cmd = [DdrCmd::Act, DdrCmd::Rd, DdrCmd::Wra][rng.below(3) as usize];
            match rng.below(3) {
                0 if g.rank_bits() < 2 => rank += g.ranks(),
                1 if g.bank_bits() < 4 => bank += g.banks(),
                _ if cmd == DdrCmd::Act => arg = rng.below(1 << 18).max(g.rows().into()) as u32,
                _ => arg = rng.below(1 << 11).max(u64::from(g.lines_per_row()) << 3) as u32,
            }
            out.push(Command {
                cycle: t,
                cmd,
                rank,
                bank,
                arg,
            });
            t += 1;
        }
        out.push(Command { cycle: t, ..*c });
        last = Some(t);
    }
    out
}

/// Board configuration for co-simulation: `geometry`, FIFO `depth`, drain.
pub fn board_config(geometry: Geometry, depth: usize, drain: DrainRate) -> BoardConfig {
    let mut cfg = BoardConfig::new(geometry);
    cfg.fifo_depth = depth;
    cfg.drain = drain;
    cfg
}

/// Runs the capture chain and the golden model (`model`) over the same
/// clocks and compares pushes, pops, fill levels, modes and counters.
pub fn cosim<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
) -> CaptureTrace {
    cosim_with_model::<L, E, B, AB>(cfg, cmds).0
}

/// [`cosim`], returning the capture chain's trace and the model's.
pub fn cosim_with_model<const L: usize, const E: usize, const B: usize, const AB: usize>(
    cfg: &BoardConfig,
    cmds: &[Command],
) -> (CaptureTrace, CaptureTrace) {
    assert_eq!(cfg.fifo_depth, B << AB, "FIFO depths differ");
    let pins = pin_commands(cmds);
    let hw = run_capture::<L, E, B, AB>(
        capture_config(cfg),
        Drain {
            num: cfg.drain.num,
            den: cfg.drain.den,
        },
        &pins,
        u64::MAX,
    );
    let gold = model(cfg, L as u64, E, cmds, hw.levels.len() as u64);
    compare(&hw, &gold);
    (hw, gold)
}

/// Asserts that the capture chain's trace equals the golden model's.
pub fn compare(hw: &CaptureTrace, gold: &CaptureTrace) {
    assert_eq!(hw.pushed.len(), gold.pushed.len(), "number of pushed words");
    for (i, (h, g)) in hw.pushed.iter().zip(&gold.pushed).enumerate() {
        assert_eq!(
            h, g,
            "pushed word {i} (clock, word) differs: hdl {h:x?} model {g:x?}"
        );
    }
    assert_eq!(hw.popped, gold.popped, "popped words and their clocks");
    for (k, (h, g)) in hw.levels.iter().zip(&gold.levels).enumerate() {
        assert_eq!(h, g, "fill level after clock {k}");
    }
    let n = hw.modes.len().min(gold.modes.len());
    assert_eq!(hw.modes[..n], gold.modes[..n], "mode after each clock");
    assert_eq!(hw.protocol_errors, gold.protocol_errors, "protocol errors");
    assert_eq!(
        hw.unknown_commands, gold.unknown_commands,
        "unknown commands"
    );
    assert_eq!(hw.out_of_range, gold.out_of_range, "out-of-range commands");
    assert_eq!(
        hw.references_over_limit, gold.references_over_limit,
        "references over the limit"
    );
    assert_eq!(
        hw.clocks_over_limit, gold.clocks_over_limit,
        "clocks over the limit"
    );
    assert_eq!(hw.events_dropped, gold.events_dropped, "events dropped");
    assert_eq!(hw.lost_words, gold.lost_words, "LOST words");
    assert_eq!(hw.time_fillers, gold.time_fillers, "keeper fillers");
    assert_eq!(hw.time_overflows, gold.time_overflows, "time overflows");
    assert_eq!(hw.high_water, gold.high_water, "high-water mark");
}

/// `capture_lanes`: packs the per-lane ports `x$j` of the generated `top`
/// into vectors for the testbench.
pub fn lanes_wrapper(lanes: usize) -> String {
    let mut v = String::new();
    let l = lanes;
    writeln!(v, "module capture_lanes(clock, cs_n, ras_n, cas_n, we_n, cke, ba, addr, drain_num, drain_den, push_tick_valid, push_tick, push_count, push_word0, push_word1, push_word2, push_word3, push_word4, fill, pop_valid, pop_word, pop_tick, protocol_errors, unknown_commands, events_dropped, lost_words, high_water);").unwrap();
    writeln!(v, "input clock; input [{}:0] cs_n; input [{}:0] ras_n, cas_n, we_n, cke; input [{}:0] ba; input [{}:0] addr; input [31:0] drain_num, drain_den;", 4 * l - 1, l - 1, 4 * l - 1, 18 * l - 1).unwrap();
    writeln!(v, "output push_tick_valid; output [63:0] push_tick; output [{0}:0] push_count, push_word0, push_word1, push_word2, push_word3, push_word4, fill;", 32 * l - 1).unwrap();
    writeln!(v, "output pop_valid; output [31:0] pop_word; output [63:0] pop_tick; output [31:0] protocol_errors, unknown_commands, events_dropped, lost_words, high_water;").unwrap();
    write!(v, "top core(.clock(clock), .drain_num(drain_num), .drain_den(drain_den), .push_tick_valid(push_tick_valid), .push_tick(push_tick), .pop_valid(pop_valid), .pop_word(pop_word), .pop_tick(pop_tick), .protocol_errors(protocol_errors), .unknown_commands(unknown_commands), .events_dropped(events_dropped), .lost_words(lost_words), .high_water(high_water)").unwrap();
    for j in 0..l {
        write!(v, ", .cs_n${j}(cs_n[{}:{}])", 4 * j + 3, 4 * j).unwrap();
        for p in ["ras_n", "cas_n", "we_n", "cke"] {
            write!(v, ", .{p}${j}({p}[{j}])").unwrap();
        }
        write!(
            v,
            ", .ba${j}(ba[{}:{}]), .addr${j}(addr[{}:{}])",
            4 * j + 3,
            4 * j,
            18 * j + 17,
            18 * j
        )
        .unwrap();
        for p in [
            "push_count",
            "push_word0",
            "push_word1",
            "push_word2",
            "push_word3",
            "push_word4",
            "fill",
        ] {
            write!(v, ", .{p}${j}({p}[{}:{}])", 32 * j + 31, 32 * j).unwrap();
        }
    }
    writeln!(v, ");\nendmodule").unwrap();
    v
}
