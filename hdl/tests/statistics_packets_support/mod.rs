//! What the statistics packets' tests share: the capture chain with the
//! Statistic Unit's counters on its taps and the statistics path
//! (`StatisticPackets`) on the counters' record and readout
//! (`CapturePackets`), and the golden model's statistics packets for the
//! same stream and path.
#![allow(dead_code)]

use crate::capture_support::*;
use hmtt_board_model::statistics::StatsCounters;
use hmtt_board_model::{run_commands_with_statistics, BoardConfig, BoardPacket, StatsConfig};
use hmtt_format::command::{Command, DdrCmd};
use hmtt_hdl::capture::{Capture, CaptureConfig};
use hmtt_hdl::pins::DimmPins;
use hmtt_hdl::statistics::packets::{StatisticPackets, StatsPacketConfig};
use hmtt_hdl::statistics::StatisticCounters;
use rust_hdl::prelude::*;

/// The statistics path's parameters of a test: those of
/// [`StatsPacketConfig`] but the geometry, and the interval at reset.
#[derive(Clone, Copy, Debug)]
pub struct PathParams {
    pub k: u8,
    pub board_id: u8,
    pub ports: u8,
    pub tick_ps: u16,
    pub max_words: u16,
    pub share_log2: u8,
    pub burst_records: u32,
}

pub fn packet_config(cfg: &BoardConfig, p: &PathParams, lanes: u8) -> StatsPacketConfig {
    StatsPacketConfig {
        geometry: line_geometry(&cfg.geometry),
        lanes,
        board_id: p.board_id,
        ports: p.ports,
        tick_ps: p.tick_ps,
        max_words: p.max_words,
        share_log2: p.share_log2,
        burst_records: p.burst_records,
    }
}

/// The capture chain, the unit's counters on its taps, and the path on
/// the counters' record and readout; the header's flags are the capture
/// chain's mode in the clock of `record_valid` (its packetizer stage is
/// three clocks behind the counting stage, so that is the mode after the
/// interval's last clock).
#[derive(LogicBlock)]
pub struct CapturePackets<
    const L: usize,
    const E: usize,
    const B: usize,
    const AB: usize,
    const R: usize,
    const NB: usize,
    const LB: usize,
> {
    pub clock: Signal<In, Clock>,
    pub pins: [DimmPins; L],
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    pub word_write: Signal<Out, Bit>,
    pub word_data: Signal<Out, Bits<32>>,
    pub word_port: Signal<Out, Bits<2>>,
    pub word_first: Signal<Out, Bit>,
    pub word_last: Signal<Out, Bit>,
    pub desc_write: Signal<Out, Bit>,
    pub desc_words: Signal<Out, Bits<16>>,
    pub desc_port: Signal<Out, Bits<2>>,
    pub records_sent: Signal<Out, Bits<32>>,
    pub records_unsent: Signal<Out, Bits<32>>,
    pub overrun: Signal<Out, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    pub record_valid: Signal<Out, Bit>,
    pub hold_write: Signal<Out, Bit>,
    pub dropped_tick_valid: Signal<Out, Bit>,
    pub dropped_tick: Signal<Out, Bits<64>>,
    pub capture: Capture<L, E, B, AB>,
    pub su: StatisticCounters<L, E, R, NB, LB>,
    pub packets: StatisticPackets,
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > CapturePackets<L, E, B, AB, R, NB, LB>
{
    pub fn new(capture: CaptureConfig, k: u32, path: &StatsPacketConfig) -> Self {
        Self {
            clock: Default::default(),
            pins: hmtt_hdl::pins::lanes(),
            drain_num: Default::default(),
            drain_den: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            word_port: Default::default(),
            word_first: Default::default(),
            word_last: Default::default(),
            desc_write: Default::default(),
            desc_words: Default::default(),
            desc_port: Default::default(),
            records_sent: Default::default(),
            records_unsent: Default::default(),
            overrun: Default::default(),
            busy: Default::default(),
            record_valid: Default::default(),
            hold_write: Default::default(),
            dropped_tick_valid: Default::default(),
            dropped_tick: Default::default(),
            su: StatisticCounters::new(capture.geometry, k),
            capture: Capture::new(capture),
            packets: StatisticPackets::new(path),
        }
    }
}

impl<
        const L: usize,
        const E: usize,
        const B: usize,
        const AB: usize,
        const R: usize,
        const NB: usize,
        const LB: usize,
    > Logic for CapturePackets<L, E, B, AB, R, NB, LB>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.capture.clock.next = self.clock.val();
        self.su.clock.next = self.clock.val();
        self.packets.clock.next = self.clock.val();
        self.capture.drain_num.next = self.drain_num.val();
        self.capture.drain_den.next = self.drain_den.val();
        for j in 0..L {
            self.capture.pins[j].cs_n.next = self.pins[j].cs_n.val();
            self.capture.pins[j].ras_n.next = self.pins[j].ras_n.val();
            self.capture.pins[j].cas_n.next = self.pins[j].cas_n.val();
            self.capture.pins[j].we_n.next = self.pins[j].we_n.val();
            self.capture.pins[j].cke.next = self.pins[j].cke.val();
            self.capture.pins[j].ba.next = self.pins[j].ba.val();
            self.capture.pins[j].addr.next = self.pins[j].addr.val();
            self.su.bus_kind[j].next = self.capture.bus_kind[j].val();
            self.su.bus_rank[j].next = self.capture.bus_rank[j].val();
            self.su.bus_bank[j].next = self.capture.bus_bank[j].val();
            self.su.bus_addr[j].next = self.capture.bus_addr[j].val();
            self.su.ref_valid[j].next = self.capture.ref_valid[j].val();
            self.su.ref_line[j].next = self.capture.ref_line[j].val();
        }
        for s in 0..E {
            self.su.cmd_valid[s].next = self.capture.cmd_valid[s].val();
            self.su.cmd_index[s].next = self.capture.cmd_index[s].val();
        }
        self.su.bus_tick.next = self.capture.bus_tick.val();
        self.su.ref_tick.next = self.capture.ref_tick.val();
        self.su.over.next = self.capture.over.val();
        self.su.over_tick.next = self.capture.over_tick.val();
        self.su.cmd_tick.next = self.capture.cmd_tick.val();
        self.su.dropped.next = self.capture.dropped.val();
        self.su.dropped_tick.next = self.capture.dropped_tick.val();
        self.su.dropped_tick_valid.next = self.capture.dropped_tick_valid.val();
        self.packets.record_valid.next = self.su.record_valid.val();
        self.packets.record_start.next = self.su.record_start.val();
        self.packets.record_end.next = self.su.record_end.val();
        self.packets.record_k.next = self.su.record_k.val();
        self.packets.tracing.next = self.capture.tracing.val();
        self.packets.tags_only.next = self.capture.tags_only.val();
        self.su.hold_write.next = self.packets.hold_write.val();
        self.su.hold_slot.next = self.packets.hold_slot.val();
        self.su.read_slot.next = self.packets.read_slot.val();
        self.su.read_index.next = self.packets.read_index.val();
        self.packets.read_value.next = self.su.read_value.val();
        self.word_write.next = self.packets.word_write.val();
        self.word_data.next = self.packets.word_data.val();
        self.word_port.next = self.packets.word_port.val();
        self.word_first.next = self.packets.word_first.val();
        self.word_last.next = self.packets.word_last.val();
        self.desc_write.next = self.packets.desc_write.val();
        self.desc_words.next = self.packets.desc_words.val();
        self.desc_port.next = self.packets.desc_port.val();
        self.records_sent.next = self.packets.records_sent.val();
        self.records_unsent.next = self.packets.records_unsent.val();
        self.overrun.next = self.packets.overrun.val();
        self.busy.next = self.packets.busy.val();
        self.record_valid.next = self.su.record_valid.val();
        self.hold_write.next = self.packets.hold_write.val();
        self.dropped_tick_valid.next = self.capture.dropped_tick_valid.val();
        self.dropped_tick.next = self.capture.dropped_tick.val();
    }
}

/// The golden model's statistics packets and its unit's counters for
/// `cmds`, its unit on from reset at `2^k` with the path of `p`.
pub fn model_packets(
    cfg: &BoardConfig,
    lanes: u32,
    refs: u32,
    cmds: &[Command],
    p: &PathParams,
) -> (Vec<BoardPacket>, StatsCounters) {
    let mut cfg = cfg.clone().with_lanes(lanes, refs);
    cfg.board_id = p.board_id;
    cfg.ports = p.ports;
    cfg.tick_ps = p.tick_ps;
    cfg.max_words = p.max_words.into();
    cfg.statistics = Some(StatsConfig {
        interval_log2: p.k,
        start_enabled: true,
        share_log2: p.share_log2,
        burst_records: p.burst_records,
        reuse: None,
    });
    let (_, packets, counters) = run_commands_with_statistics(cfg, cmds).expect("model runs");
    (
        packets,
        counters.statistics.expect("the model has the unit"),
    )
}

/// `cmds` with a silence of `ticks` before command `at`: the credit
/// fills while nothing is counted.
pub fn with_silence(cmds: &[Command], at: usize, ticks: u64) -> Vec<Command> {
    cmds.iter()
        .enumerate()
        .map(|(i, c)| Command {
            cycle: c.cycle + if i >= at { ticks } else { 0 },
            ..*c
        })
        .collect()
}

/// `cmds` with the references to the unit's inner commands STATS_ON (6)
/// and STATS_OFF (7) in the config window moved to user events (index
/// 64 on: the same row, another column), so that every interval closes
/// at its natural end, `2^k` ticks after the one before.
pub fn without_unit_commands(cfg: &BoardConfig, cmds: &[Command]) -> Vec<Command> {
    let g = &cfg.geometry;
    let first = cfg.window.first_line(g);
    let mut open = std::collections::BTreeMap::new();
    let mut moved = 0;
    let out: Vec<Command> = cmds
        .iter()
        .map(|c| {
            let mut c = *c;
            if c.cmd == DdrCmd::Act {
                open.insert((c.rank, c.bank), c.arg);
            }
            if !matches!(c.cmd, DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra) {
                return c;
            }
            let Some(&row) = open.get(&(c.rank, c.bank)) else {
                return c;
            };
            let line = (((u64::from(c.rank) << g.row_bits()) | u64::from(row)) << g.bank_bits()
                | u64::from(c.bank))
                << g.col_line_bits()
                | u64::from(c.arg >> 3);
            let index = line.wrapping_sub(first);
            if matches!(index, 6 | 7) {
                c.arg += ((64 - index) << 3) as u32;
                moved += 1;
            }
            c
        })
        .collect();
    assert!(moved > 0, "the stream had the unit's inner commands");
    out
}
