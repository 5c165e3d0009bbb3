//! The simulated traced machine, end to end: workload → OS model → cache →
//! DRAM controller (one per channel) → board golden model (one per
//! channel), keeping the ground truth of every reference.
//!
//! ```
//! use hmtt_sim::machine::{simulate, SimConfig};
//! use hmtt_sim::workload::Workload;
//!
//! let out = simulate(&SimConfig::default().workload(Workload::Quicksort { n: 200 })).unwrap();
//! assert!(!out.truth.is_empty());
//! assert_eq!(out.packets.len(), 1);
//! ```

use crate::cache::{Cache, CacheConfig, CacheShapeError, CacheStats};
use crate::dram::{Controller, ControllerConfig, ControllerStats, Request};
use crate::os::{FramePool, Os, OsEffect, OsError, OsStats};
use crate::workload::{DmaDir, Op, Workload, PAGE};
use hmtt_board_model::output::OutputError;
use hmtt_board_model::{
    default_window, Board, BoardConfig, BoardCounters, BoardError, BoardPacket, DrainRate,
    DEFAULT_REFS_PER_CLOCK,
};
use hmtt_format::config::{
    log_tag_event, ConfigWindow, FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG, FIRST_USER_EVENT,
};
use hmtt_format::klog::RecordRepr;
use hmtt_format::tick::TickLength;
use hmtt_format::truth::{RefKind, TruthRecord};
use hmtt_format::{AddressMapping, Command, Geometry, LINE_BYTES};
use std::collections::HashMap;

/// The board side of the machine: one board per channel, numbered from
/// `first_board_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardSettings {
    /// Lanes `L`; `None`: the model's default, halved while the drain
    /// would pop a word or more per clock ([`BoardConfig::fit_lanes`]).
    pub lanes: Option<u32>,
    /// References per clock `E`; `None`: the default capped at `L`.
    pub refs_per_clock: Option<u32>,
    pub ports: u8,
    pub fifo_depth: usize,
    pub max_words: usize,
    pub idle_flush_ticks: u64,
    /// `None`: the ports' line rate.
    pub drain: Option<DrainRate>,
    pub first_board_id: u8,
}

impl Default for BoardSettings {
    fn default() -> Self {
        let d = BoardConfig::new(Geometry::ddr3_default());
        BoardSettings {
            lanes: None,
            refs_per_clock: None,
            ports: d.ports,
            fifo_depth: d.fifo_depth,
            max_words: d.max_words,
            idle_flush_ticks: d.idle_flush_ticks,
            drain: None,
            first_board_id: 0,
        }
    }
}

/// Everything a simulation run is made of.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub workload: Workload,
    pub seed: u64,
    /// `None`: the cache is off (every reference reaches memory).
    pub cache: Option<CacheConfig>,
    /// Geometry of every channel's DIMM.
    pub geometry: Geometry,
    /// Address mapping of every channel; `None`: linear.
    pub mapping: Option<AddressMapping>,
    pub controller: ControllerConfig,
    /// Channels, each with its own board.
    pub boards: u8,
    /// Physical memory is interleaved over channels in blocks of
    /// `1 << interleave_shift` bytes.
    pub interleave_shift: u32,
    pub board: BoardSettings,
    /// Run the golden model (off: only commands and truth).
    pub run_boards: bool,
    /// CPU ticks per line referenced: the pace of the processor. The
    /// default (12 ticks, 15 ns at DDR3-1600) is the cache-disabled mode's
    /// slowdown; it keeps the memory traffic within what three Gigabit
    /// ports drain (about 0.11 words per tick), so nothing is lost.
    pub cpu_ticks_per_ref: u64,
    /// Low physical memory kept by the kernel image, never allocated.
    pub kernel_reserved_bytes: u64,
    /// At most this much physical memory is handed out (the frame pool is
    /// built from the lowest frames).
    pub usable_memory_bytes: u64,
    /// Write back every dirty line at the end (wbinvd).
    pub flush_cache_at_end: bool,
    /// Send every I-code to every board (so each channel's stream carries
    /// all tags); otherwise only to the first.
    pub icodes_to_all_boards: bool,
    /// Wall-clock time of tick 0 (capture and log headers).
    pub wall_start_ns: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            workload: Workload::default(),
            seed: 1,
            cache: Some(CacheConfig::default()),
            geometry: Geometry::ddr3_default(),
            mapping: None,
            controller: ControllerConfig::default(),
            boards: 1,
            interleave_shift: 12,
            board: BoardSettings::default(),
            run_boards: true,
            cpu_ticks_per_ref: 12,
            kernel_reserved_bytes: 16 << 20,
            usable_memory_bytes: 8 << 30,
            flush_cache_at_end: false,
            icodes_to_all_boards: true,
            wall_start_ns: 1_700_000_000_000_000_000,
        }
    }
}

impl SimConfig {
    pub fn workload(mut self, w: Workload) -> Self {
        self.workload = w;
        self
    }
    pub fn cache(mut self, c: Option<CacheConfig>) -> Self {
        self.cache = c;
        self
    }
    pub fn cache_off(self) -> Self {
        self.cache(None)
    }
    /// The run starts now on the wall clock (its files' start times).
    pub fn starting_now(mut self) -> Self {
        self.wall_start_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        self
    }
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    pub fn boards(mut self, n: u8) -> Self {
        self.boards = n;
        self
    }
    pub fn ports(mut self, n: u8) -> Self {
        self.board.ports = n;
        self
    }

    fn mapping_for(&self) -> AddressMapping {
        self.mapping
            .clone()
            .unwrap_or_else(|| AddressMapping::linear(self.geometry))
    }

    /// The board configuration of channel `b`.
    pub fn board_config(&self, b: u8) -> BoardConfig {
        let s = &self.board;
        let mut c = BoardConfig::new(self.geometry);
        c.board_id = s.first_board_id.wrapping_add(b);
        c.ports = s.ports;
        c.fifo_depth = s.fifo_depth;
        c.max_words = s.max_words;
        c.idle_flush_ticks = s.idle_flush_ticks;
        c.tick_ps = self.controller.timing.tick_ps;
        c.window = default_window(&self.geometry);
        match s.drain {
            Some(d) => c.drain = d,
            None => c.set_line_rate(),
        }
        c.fit_lanes();
        if let Some(lanes) = s.lanes {
            c.lanes = lanes;
            c.refs_per_clock = DEFAULT_REFS_PER_CLOCK.min(lanes);
        }
        if let Some(e) = s.refs_per_clock {
            c.refs_per_clock = e;
        }
        c
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Os(#[from] OsError),
    #[error(transparent)]
    Cache(#[from] CacheShapeError),
    #[error("board {board}: {error}")]
    Board { board: u8, error: BoardError },
    #[error("bad configuration: {0}")]
    Config(String),
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
}

impl From<OutputError> for SimError {
    fn from(e: OutputError) -> SimError {
        SimError::Io {
            path: e.path.display().to_string(),
            error: e.error,
        }
    }
}

/// Counters of a run.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SimStats {
    pub ops: u64,
    /// Virtual references of the workload (before splitting into lines).
    pub references: u64,
    /// Memory requests (lines) sent to the controllers.
    pub memory_requests: u64,
    pub per_kind: HashMap<String, u64>,
    pub cache: Option<CacheStats>,
    pub os: OsStats,
    pub controllers: Vec<ControllerStats>,
    /// Last command tick over all channels.
    pub end_tick: u64,
    pub usable_frames: usize,
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct SimOutput {
    /// DDR command stream per board (channel).
    pub commands: Vec<Vec<Command>>,
    /// The ground truth, by tick then board.
    pub truth: Vec<TruthRecord>,
    /// The kernel log (page-table and DMA records).
    pub klog: Vec<RecordRepr>,
    /// Packets per board, in `seq` order (empty when boards did not run).
    pub packets: Vec<Vec<BoardPacket>>,
    pub board_counters: Vec<BoardCounters>,
    pub board_configs: Vec<BoardConfig>,
    /// User event names and their indices (the events file).
    pub events: Vec<(String, u32)>,
    pub stats: SimStats,
    pub tick_ps: u16,
    pub wall_start_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    pa: u64,
    kind: RefKind,
    owner: Option<(u32, u64)>,
    event: Option<u32>,
}

pub(crate) struct Channel {
    ctrl: Controller<Meta>,
}

/// Channel interleaving: global physical address ↔ (channel, local).
#[derive(Debug, Clone, Copy)]
struct Interleave {
    n: u64,
    shift: u32,
}

impl Interleave {
    #[inline]
    fn split(&self, pa: u64) -> (usize, u64) {
        if self.n == 1 {
            return (0, pa);
        }
        let block = pa >> self.shift;
        let low = pa & ((1 << self.shift) - 1);
        (
            (block % self.n) as usize,
            ((block / self.n) << self.shift) | low,
        )
    }
    fn join(&self, ch: usize, local: u64) -> u64 {
        if self.n == 1 {
            return local;
        }
        let block = local >> self.shift;
        let low = local & ((1 << self.shift) - 1);
        ((block * self.n + ch as u64) << self.shift) | low
    }
}

/// The machine while it runs.
pub struct Machine {
    pub(crate) cfg: SimConfig,
    pub(crate) os: Os,
    cache: Option<Cache>,
    pub(crate) channels: Vec<Channel>,
    mapping: AddressMapping,
    interleave: Interleave,
    pub(crate) window: ConfigWindow,
    now: u64,
    fx: Vec<OsEffect>,
    events: HashMap<String, u32>,
    pub(crate) event_order: Vec<(String, u32)>,
    tlb: Option<(u32, u64, u64)>,
    kind_counts: [u64; 5],
    pub(crate) stats: SimStats,
}

impl Machine {
    pub fn new(cfg: SimConfig) -> Result<Machine, SimError> {
        if cfg.boards == 0 {
            return Err(SimError::Config("at least one board is needed".into()));
        }
        if !(6..=40).contains(&cfg.interleave_shift) {
            return Err(SimError::Config(format!(
                "interleave shift {} is outside 6..=40",
                cfg.interleave_shift
            )));
        }
        let g = cfg.geometry;
        let mapping = cfg.mapping_for();
        if *mapping.geometry() != g {
            return Err(SimError::Config(
                "the mapping was loaded for another geometry".into(),
            ));
        }
        let window = default_window(&g);
        if window.lines(&g) < u64::from(FIRST_HIGH_USER_EVENT) {
            return Err(SimError::Config(format!(
                "geometry {g} is too small: its config window of {} lines cannot hold the log tags (0x10000..0x20000)",
                window.lines(&g)
            )));
        }
        let interleave = Interleave {
            n: u64::from(cfg.boards),
            shift: cfg.interleave_shift,
        };
        // Frames holding any configuration-space line are reserved.
        let total = g.capacity_bytes() * u64::from(cfg.boards);
        let end = total.min(
            cfg.usable_memory_bytes
                .max(cfg.kernel_reserved_bytes + PAGE),
        );
        let end_frame = end / PAGE;
        let mut reserved = vec![0u64; end_frame.div_ceil(64) as usize];
        for b in 0..cfg.boards as usize {
            let first = window.first_line(&g);
            let mut last_frame = u64::MAX;
            for i in 0..window.lines(&g) {
                let frame = interleave.join(b, mapping.pa_of(first + i)) / PAGE;
                if frame != last_frame && frame < end_frame {
                    reserved[(frame / 64) as usize] |= 1 << (frame % 64);
                }
                last_frame = frame;
            }
        }
        let frames: Vec<u64> = (cfg.kernel_reserved_bytes.div_ceil(PAGE)..end_frame)
            .filter(|&f| reserved[(f / 64) as usize] >> (f % 64) & 1 == 0)
            .collect();
        let usable = frames.len();
        let os = Os::new(FramePool::shuffled(frames, cfg.seed));
        let cache = cfg.cache.map(Cache::new).transpose()?;
        let channels = (0..cfg.boards)
            .map(|_| Channel {
                ctrl: Controller::new(cfg.controller, g),
            })
            .collect();
        Ok(Machine {
            os,
            cache,
            channels,
            mapping,
            interleave,
            window,
            now: 0,
            fx: Vec::new(),
            events: HashMap::new(),
            event_order: Vec::new(),
            tlb: None,
            kind_counts: [0; 5],
            stats: SimStats {
                usable_frames: usable,
                ..SimStats::default()
            },
            cfg,
        })
    }

    fn time_ns(&self) -> u64 {
        TickLength::of_ps(self.cfg.controller.timing.tick_ps).map_or(0, |t| t.whole_ns(self.now))
    }

    /// Sends one line request to its channel's controller.
    pub(crate) fn memory(
        &mut self,
        pa: u64,
        write: bool,
        kind: RefKind,
        owner: Option<(u32, u64)>,
        event: Option<u32>,
    ) {
        let pa = pa & !(LINE_BYTES - 1);
        let (ch, local) = self.interleave.split(pa);
        let coord = self
            .cfg
            .geometry
            .coord(self.mapping.line_of(local).unwrap_or(local / LINE_BYTES));
        let owner = match kind {
            RefKind::Cpu => owner,
            RefKind::Icode => None,
            _ => self
                .os
                .owner_of(pa)
                .map(|(p, v)| (p, v & !(LINE_BYTES - 1))),
        };
        self.stats.memory_requests += 1;
        self.kind_counts[kind as usize] += 1;
        let c = &mut self.channels[ch];
        c.ctrl.run_until(self.now);
        if c.ctrl.is_full() {
            let t = c.ctrl.make_room();
            self.now = self.now.max(t);
        }
        c.ctrl.enqueue(Request {
            arrival: self.now,
            coord,
            write,
            barrier: kind == RefKind::Icode,
            meta: Meta {
                pa,
                kind,
                owner,
                event,
            },
        });
    }

    /// An I-code: an uncached reference to event `index` of the config
    /// space, on every board (or the first).
    pub(crate) fn icode(&mut self, index: u32, write: bool) {
        let boards = if self.cfg.icodes_to_all_boards {
            self.channels.len()
        } else {
            1
        };
        let line = self
            .window
            .line_of_event(&self.cfg.geometry, index)
            .expect("event index inside the window");
        let local = self.mapping.pa_of(line);
        for b in 0..boards {
            let pa = self.interleave.join(b, local);
            self.memory(pa, write, RefKind::Icode, None, Some(index));
        }
    }

    /// A cached reference (or a direct one with the cache off).
    pub(crate) fn cached(
        &mut self,
        pa: u64,
        write: bool,
        kind: RefKind,
        owner: Option<(u32, u64)>,
    ) {
        match &mut self.cache {
            None => self.memory(pa, write, kind, owner, None),
            Some(cache) => {
                let o = cache.access(pa, write);
                if o.fill {
                    self.memory(pa, false, kind, owner, None);
                }
                if let Some(victim) = o.writeback {
                    self.memory(victim, true, RefKind::Writeback, None, None);
                }
            }
        }
        self.now += self.cfg.cpu_ticks_per_ref;
    }

    fn effects(&mut self) {
        let fx = std::mem::take(&mut self.fx);
        for e in &fx {
            match *e {
                OsEffect::PteWrite { pa } => self.cached(pa, true, RefKind::Kernel, None),
                OsEffect::Logged { seq } => {
                    self.os.publish(seq);
                    self.icode(log_tag_event(seq), true)
                }
            }
        }
        self.fx = fx;
        self.fx.clear();
    }

    fn user_event(&mut self, name: &str) -> Result<u32, SimError> {
        if let Some(&i) = self.events.get(name) {
            return Ok(i);
        }
        let i = FIRST_USER_EVENT + self.events.len() as u32;
        if i >= FIRST_LOG_TAG {
            return Err(SimError::Config(format!(
                "more than {} distinct user events",
                FIRST_LOG_TAG - FIRST_USER_EVENT
            )));
        }
        self.events.insert(name.to_string(), i);
        self.event_order.push((name.to_string(), i));
        Ok(i)
    }

    /// Runs one workload operation.
    pub fn step(&mut self, op: &Op) -> Result<(), SimError> {
        self.stats.ops += 1;
        let t = self.time_ns();
        match op {
            Op::Exec { pid, name } => {
                self.os.exec(*pid, name, t, &mut self.fx);
                self.effects();
            }
            Op::Access {
                pid,
                vaddr,
                write,
                size,
            } => {
                self.stats.references += 1;
                let first = vaddr & !(LINE_BYTES - 1);
                let last = (vaddr + u64::from((*size).max(1)) - 1) & !(LINE_BYTES - 1);
                let mut line = first;
                loop {
                    let vpn = line / PAGE;
                    let pa = match self.tlb {
                        Some((p, v, pfn)) if p == *pid && v == vpn => pfn * PAGE + line % PAGE,
                        _ => {
                            let pa = self
                                .os
                                .translate(*pid, line, self.time_ns(), &mut self.fx)?;
                            self.effects();
                            self.tlb = Some((*pid, vpn, pa / PAGE));
                            pa
                        }
                    };
                    self.cached(pa, *write, RefKind::Cpu, Some((*pid, line)));
                    if line == last {
                        break;
                    }
                    line += LINE_BYTES;
                }
            }
            Op::Event { name, .. } => {
                let i = self.user_event(name)?;
                self.icode(i, false);
            }
            Op::Free { pid, vaddr, len } => {
                self.tlb = None;
                self.os.free(*pid, *vaddr, *len, t, &mut self.fx);
                self.effects();
            }
            Op::Exit { pid } => {
                self.tlb = None;
                self.os.exit(*pid, t, &mut self.fx);
                self.effects();
            }
            Op::Dma { device, bytes, dir } => self.dma(device, *bytes, *dir)?,
        }
        Ok(())
    }

    /// A streaming DMA transfer through a fresh kernel buffer, page by page
    /// (one DMA_MAP/DMA_UNMAP pair per page-sized segment).
    fn dma(&mut self, device: &str, bytes: u64, dir: DmaDir) -> Result<(), SimError> {
        let to_device = dir == DmaDir::ToDevice;
        let frames = self.os.alloc_kernel(bytes.div_ceil(PAGE))?;
        let segments: Vec<(u64, u64)> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f * PAGE, (bytes - i as u64 * PAGE).min(PAGE)))
            .collect();
        let lines = |&(pa, len): &(u64, u64)| {
            (0..len.div_ceil(LINE_BYTES)).map(move |i| pa + i * LINE_BYTES)
        };
        if to_device {
            // The kernel copies the data in.
            for pa in segments.iter().flat_map(lines).collect::<Vec<_>>() {
                self.cached(pa, true, RefKind::Kernel, None);
            }
        }
        for seg in &segments {
            // dma_map: write back and invalidate the buffer's lines.
            for pa in lines(seg) {
                let wb = self.cache.as_mut().and_then(|c| c.flush_line(pa));
                if let Some(wb) = wb {
                    self.memory(wb, true, RefKind::Writeback, None, None);
                }
            }
            let t = self.time_ns();
            self.os
                .dma_log(true, seg.0, seg.1, to_device, device, t, &mut self.fx);
            self.effects();
        }
        for pa in segments.iter().flat_map(lines).collect::<Vec<_>>() {
            self.memory(pa, !to_device, RefKind::Dma, None, None);
            self.now += 1;
        }
        for seg in &segments {
            let t = self.time_ns();
            self.os
                .dma_log(false, seg.0, seg.1, to_device, device, t, &mut self.fx);
            self.effects();
        }
        if !to_device {
            for pa in segments.iter().flat_map(lines).collect::<Vec<_>>() {
                self.cached(pa, false, RefKind::Kernel, None);
            }
        }
        self.os.free_kernel(&frames);
        Ok(())
    }

    /// The end of the workload: the optional cache flush, then every queued
    /// request served.
    pub(crate) fn end_of_run(&mut self) {
        if self.cfg.flush_cache_at_end {
            let dirty = self
                .cache
                .as_mut()
                .map(|c| c.flush_all())
                .unwrap_or_default();
            for pa in dirty {
                self.memory(pa, true, RefKind::Writeback, None, None);
            }
        }
        for ch in &mut self.channels {
            ch.ctrl.drain();
        }
    }

    /// Channel `b`'s DDR commands and ground truth (in command order)
    /// issued since the last take; they are final.
    pub(crate) fn take_channel(&mut self, b: usize) -> (Vec<Command>, Vec<TruthRecord>) {
        let mut out = (Vec::new(), Vec::new());
        self.take_channel_into(b, &mut out);
        out
    }

    /// [`take_channel`](Self::take_channel) into `out`, whose vectors are
    /// taken empty and their room reused: a streamed run hands the writer a
    /// batch of millions of commands and records at a time, and growing
    /// fresh vectors to that size page-faulted and copied them every batch.
    pub(crate) fn take_channel_into(
        &mut self,
        b: usize,
        (cmds, truth): &mut (Vec<Command>, Vec<TruthRecord>),
    ) {
        let g = self.cfg.geometry;
        let ctrl = &mut self.channels[b].ctrl;
        ctrl.swap_commands(cmds);
        self.stats.end_tick = self.stats.end_tick.max(cmds.last().map_or(0, |c| c.cycle));
        truth.clear();
        truth.extend(ctrl.issued_drain().map(|i| TruthRecord {
            tick: i.tick,
            board: b as u8,
            pa: i.meta.pa,
            line: g.line_index_unchecked(i.coord),
            write: i.write,
            kind: i.meta.kind,
            owner: i.meta.owner,
            event: i.meta.event,
        }));
    }

    /// The counters that are read once the run is over.
    pub(crate) fn final_stats(&mut self) {
        for k in [
            RefKind::Cpu,
            RefKind::Writeback,
            RefKind::Dma,
            RefKind::Icode,
            RefKind::Kernel,
        ] {
            self.stats
                .per_kind
                .insert(k.name().to_string(), self.kind_counts[k as usize]);
        }
        self.stats.cache = self.cache.as_ref().map(|c| c.stats);
        self.stats.os = self.os.stats;
        self.stats.controllers = self.channels.iter().map(|ch| ch.ctrl.stats).collect();
    }

    /// Ends the run: optional cache flush, controllers drained, boards run.
    pub fn finish(mut self) -> Result<SimOutput, SimError> {
        self.end_of_run();
        let mut commands = Vec::new();
        let mut truth = Vec::new();
        for b in 0..self.channels.len() {
            let (cmds, t) = self.take_channel(b);
            commands.push(cmds);
            truth.extend(t);
        }
        truth.sort_by_key(|r| (r.tick, r.board));
        self.final_stats();
        let board_configs: Vec<BoardConfig> = (0..self.cfg.boards)
            .map(|b| self.cfg.board_config(b))
            .collect();
        let mut packets = Vec::new();
        let mut board_counters = Vec::new();
        if self.cfg.run_boards {
            for (b, (cfg, cmds)) in board_configs.iter().zip(&commands).enumerate() {
                let err = |error| SimError::Board {
                    board: b as u8,
                    error,
                };
                let mut board = Board::new(cfg.clone()).map_err(err)?;
                board.commands(cmds).map_err(err)?;
                board.finish();
                let mut p = Vec::new();
                board.drain_packets(&mut p);
                packets.push(p);
                board_counters.push(board.counters().clone());
            }
        }
        Ok(SimOutput {
            commands,
            truth,
            klog: self.os.take_log(),
            packets,
            board_counters,
            board_configs,
            events: self.event_order,
            stats: self.stats,
            tick_ps: self.cfg.controller.timing.tick_ps,
            wall_start_ns: self.cfg.wall_start_ns,
        })
    }
}

/// Runs a whole simulation.
pub fn simulate(cfg: &SimConfig) -> Result<SimOutput, SimError> {
    Machine::run(cfg.clone())
}

impl Machine {
    /// Runs `cfg`'s workload from start to end.
    pub fn run(cfg: SimConfig) -> Result<SimOutput, SimError> {
        let ops = cfg.workload.ops(cfg.seed);
        let mut m = Machine::new(cfg)?;
        for op in ops {
            m.step(&op?)?;
        }
        m.finish()
    }
}
