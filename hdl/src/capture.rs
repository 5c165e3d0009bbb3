//! The capture chain, DDR command pins to TX FIFO words: DCBU → DSMU →
//! reference limit → CU → encoder (with the logical FIFO and the drain's
//! pop decision) → TX FIFO storage. Everything runs in the fabric clock
//! domain, once per clock of `L` ticks (board.md 2.2); the crossing to the
//! Ethernet clock comes after the packetizer.
//!
//! Latencies (fabric clocks after the pins of a clock are sampled): DCBU 2,
//! DSMU `dsmu::LATENCY` (2), limit 1, CU 1, encoder `encoder::LATENCY` (4):
//! the clock's pushes and pop come out 10 clocks after its pins (the fill
//! level a clock later), the popped word
//! `tx_fifo::READ_LATENCY` (3) later, with the pop clock's tick and mode.

use rust_hdl::prelude::*;

use crate::cu::ConfigUnit;
use crate::dcbu::Dcbu;
use crate::dsmu::{Dsmu, LineGeometry};
use crate::encoder::{Encoder, GROUPS, LEVEL_BITS};
use crate::pins::DimmPins;
use crate::ref_limit::RefLimit;
use crate::tx_fifo::TxFifoStorage;

/// Build parameters of the capture chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureConfig {
    pub geometry: LineGeometry,
    pub window_rank: u64,
    pub window_row_first: u64,
    pub window_row_count: u64,
    /// Mode at reset: tracing on (board.md default).
    pub start_tracing: bool,
}

impl CaptureConfig {
    /// The board.md default window: the top 8 MiB (2^17 lines) of the last
    /// rank, or the top sixteenth of its rows when a rank is smaller.
    pub fn with_default_window(geometry: LineGeometry) -> Self {
        let lines_per_row = 1u64 << (geometry.bank_bits + geometry.col_line_bits);
        let rows = 1u64 << geometry.row_bits;
        let wanted = (1u64 << 17) / lines_per_row;
        let count = if wanted >= 1 && wanted <= rows && (1u64 << 17).is_multiple_of(lines_per_row) {
            wanted
        } else {
            (rows / 16).max(1)
        };
        CaptureConfig {
            geometry,
            window_rank: (1 << geometry.rank_bits) - 1,
            window_row_first: rows - count,
            window_row_count: count,
            start_tracing: true,
        }
    }
    pub fn first_line(&self) -> u64 {
        self.geometry
            .line(self.window_rank, self.window_row_first, 0, 0)
    }
}

/// `L` lanes, `E` references per clock, FIFO of `B` banks of `2^AB` words
/// (`B >= 2 + 3 E`).
#[derive(LogicBlock)]
pub struct Capture<const L: usize, const E: usize, const B: usize, const AB: usize> {
    pub clock: Signal<In, Clock>,
    pub pins: [DimmPins; L],
    /// Drain rate per clock: `L num / den` words (board.md "Drain").
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    /// Per clock: the word popped in it (if any), the clock's tick and the
    /// board mode after the clock's events.
    pub pop_valid: Signal<Out, Bit>,
    pub pop_word: Signal<Out, Bits<32>>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub tracing: Signal<Out, Bit>,
    pub tags_only: Signal<Out, Bit>,
    /// Observation of the push side (`READ_LATENCY - 1` clocks ahead of the
    /// pop outputs): the clock `push_tick`'s words in groups
    /// (`encoder::Words`), and the fill level after it. The encoder gives
    /// the level a clock after the words, so the words are held a clock.
    pub push_tick: Signal<Out, Bits<64>>,
    pub push_tick_valid: Signal<Out, Bit>,
    pub push_count: [Signal<Out, Bits<2>>; GROUPS],
    pub push_word0: [Signal<Out, Bits<32>>; GROUPS],
    pub push_word1: [Signal<Out, Bits<32>>; GROUPS],
    pub push_word2: [Signal<Out, Bits<32>>; GROUPS],
    pub fill: Signal<Out, Bits<32>>,
    pub protocol_errors: Signal<Out, Bits<32>>,
    pub unknown_commands: Signal<Out, Bits<32>>,
    /// ACT/RD/WR that did not fit the geometry (ignored, board.md step 2).
    pub out_of_range: Signal<Out, Bits<32>>,
    pub references_over_limit: Signal<Out, Bits<32>>,
    pub clocks_over_limit: Signal<Out, Bits<32>>,
    pub config_events: Signal<Out, Bits<32>>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub high_water: Signal<Out, Bits<32>>,
    // Taps for the Statistic Unit (`crate::statistics`), each stage with
    // the tick of its clock: the bus as the DCBU decoded it (before the
    // geometry check), the DSMU's references, the limit's dropped count,
    // the CU's inner commands (CMD events: their index), the encoder's
    // dropped events. Unconnected, synthesis removes them.
    pub bus_kind: [Signal<Out, Bits<4>>; L],
    pub bus_rank: [Signal<Out, Bits<2>>; L],
    pub bus_bank: [Signal<Out, Bits<4>>; L],
    pub bus_addr: [Signal<Out, Bits<18>>; L],
    pub bus_tick: Signal<Out, Bits<64>>,
    pub ref_valid: [Signal<Out, Bit>; L],
    pub ref_line: [Signal<Out, Bits<48>>; L],
    pub ref_tick: Signal<Out, Bits<64>>,
    pub over: Signal<Out, Bits<4>>,
    pub over_tick: Signal<Out, Bits<64>>,
    pub cmd_valid: [Signal<Out, Bit>; E],
    pub cmd_index: [Signal<Out, Bits<6>>; E],
    pub cmd_tick: Signal<Out, Bits<64>>,
    pub dropped: Signal<Out, Bits<3>>,
    pub dropped_tick: Signal<Out, Bits<64>>,
    pub dropped_tick_valid: Signal<Out, Bit>,
    dcbu: Dcbu<L>,
    dsmu: Dsmu<L>,
    limit: RefLimit<L, E>,
    cu: ConfigUnit<E>,
    encoder: Encoder<E>,
    storage: TxFifoStorage<E, B, AB>,
    /// The limit's count, delayed by the CU's clock.
    over_delayed: DFF<Bits<4>>,
    /// The encoder's tick, registered: the DCBU's tick of the clock before,
    /// less `2 L` (the counter steps by `L` a clock once valid), so no
    /// 64-bit subtraction sits in front of the encoder's tick step.
    encoder_tick: DFF<Bits<64>>,
    /// The encoder's words, held for the fill level (observation only).
    push_count_held: [DFF<Bits<2>>; GROUPS],
    push_word0_held: [DFF<Bits<32>>; GROUPS],
    push_word1_held: [DFF<Bits<32>>; GROUPS],
    push_word2_held: [DFF<Bits<32>>; GROUPS],
    /// The encoder's per-clock outputs, delayed to the popped word.
    tick_1: DFF<Bits<64>>,
    tick_2: DFF<Bits<64>>,
    tick_3: DFF<Bits<64>>,
    tick_valid_1: DFF<Bit>,
    tick_valid_2: DFF<Bit>,
    tick_valid_3: DFF<Bit>,
    tracing_1: DFF<Bit>,
    tracing_2: DFF<Bit>,
    tracing_3: DFF<Bit>,
    tags_only_1: DFF<Bit>,
    tags_only_2: DFF<Bit>,
    tags_only_3: DFF<Bit>,
    depth: Constant<Bits<LEVEL_BITS>>,
    chain_ticks: Constant<Bits<64>>,
    window_rank: Constant<Bits<2>>,
    window_row_first: Constant<Bits<32>>,
    window_row_count: Constant<Bits<32>>,
    window_first_line: Constant<Bits<48>>,
}

impl<const L: usize, const E: usize, const B: usize, const AB: usize> Capture<L, E, B, AB> {
    pub const DEPTH: usize = B << AB;

    pub fn new(config: CaptureConfig) -> Self {
        Self {
            clock: Default::default(),
            pins: crate::pins::lanes(),
            drain_num: Default::default(),
            drain_den: Default::default(),
            pop_valid: Default::default(),
            pop_word: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
            push_tick: Default::default(),
            push_tick_valid: Default::default(),
            push_count: std::array::from_fn(|_| Default::default()),
            push_word0: std::array::from_fn(|_| Default::default()),
            push_word1: std::array::from_fn(|_| Default::default()),
            push_word2: std::array::from_fn(|_| Default::default()),
            fill: Default::default(),
            protocol_errors: Default::default(),
            unknown_commands: Default::default(),
            out_of_range: Default::default(),
            references_over_limit: Default::default(),
            clocks_over_limit: Default::default(),
            config_events: Default::default(),
            events_dropped: Default::default(),
            lost_words: Default::default(),
            time_fillers: Default::default(),
            time_overflows: Default::default(),
            high_water: Default::default(),
            bus_kind: std::array::from_fn(|_| Default::default()),
            bus_rank: std::array::from_fn(|_| Default::default()),
            bus_bank: std::array::from_fn(|_| Default::default()),
            bus_addr: std::array::from_fn(|_| Default::default()),
            bus_tick: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_tick: Default::default(),
            over: Default::default(),
            over_tick: Default::default(),
            cmd_valid: std::array::from_fn(|_| Default::default()),
            cmd_index: std::array::from_fn(|_| Default::default()),
            cmd_tick: Default::default(),
            dropped: Default::default(),
            dropped_tick: Default::default(),
            dropped_tick_valid: Default::default(),
            dcbu: Dcbu::new(config.geometry),
            dsmu: Dsmu::new(config.geometry),
            limit: Default::default(),
            cu: ConfigUnit::new(config.start_tracing),
            encoder: Encoder::new(L >= 4),
            storage: Default::default(),
            over_delayed: Default::default(),
            encoder_tick: Default::default(),
            push_count_held: std::array::from_fn(|_| Default::default()),
            push_word0_held: std::array::from_fn(|_| Default::default()),
            push_word1_held: std::array::from_fn(|_| Default::default()),
            push_word2_held: std::array::from_fn(|_| Default::default()),
            tick_1: Default::default(),
            tick_2: Default::default(),
            tick_3: Default::default(),
            tick_valid_1: Default::default(),
            tick_valid_2: Default::default(),
            tick_valid_3: Default::default(),
            tracing_1: Default::default(),
            tracing_2: Default::default(),
            tracing_3: Default::default(),
            tags_only_1: Default::default(),
            tags_only_2: Default::default(),
            tags_only_3: Default::default(),
            depth: Constant::new(((B << AB) as u64).to_bits()),
            chain_ticks: Constant::new((((crate::dsmu::LATENCY + 1) * L) as u64).to_bits()),
            window_rank: Constant::new(config.window_rank.to_bits()),
            window_row_first: Constant::new(config.window_row_first.to_bits()),
            window_row_count: Constant::new(config.window_row_count.to_bits()),
            window_first_line: Constant::new(config.first_line().to_bits()),
        }
    }
}

impl<const L: usize, const E: usize, const B: usize, const AB: usize> Logic
    for Capture<L, E, B, AB>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            over_delayed,
            encoder_tick,
            tick_1,
            tick_2,
            tick_3,
            tick_valid_1,
            tick_valid_2,
            tick_valid_3,
            tracing_1,
            tracing_2,
            tracing_3,
            tags_only_1,
            tags_only_2,
            tags_only_3
        );
        self.dcbu.clock.next = self.clock.val();
        self.dsmu.clock.next = self.clock.val();
        self.limit.clock.next = self.clock.val();
        self.cu.clock.next = self.clock.val();
        self.encoder.clock.next = self.clock.val();
        self.storage.clock.next = self.clock.val();
        // DCBU -> DSMU -> limit -> CU -> encoder: ticks and lanes.
        self.dsmu.tick_in.next = self.dcbu.tick.val();
        self.dsmu.tick_valid_in.next = self.dcbu.tick_valid.val();
        self.limit.tick_in.next = self.dsmu.tick.val();
        self.limit.tick_valid_in.next = self.dsmu.tick_valid.val();
        self.cu.tick_in.next = self.limit.tick.val();
        self.cu.tick_valid_in.next = self.limit.tick_valid.val();
        self.cu.window_rank.next = self.window_rank.val();
        self.cu.window_row_first.next = self.window_row_first.val();
        self.cu.window_row_count.next = self.window_row_count.val();
        self.cu.window_first_line.next = self.window_first_line.val();
        // The encoder's clock is four clocks (DSMU 2, limit, CU) behind the
        // DCBU's, whose free-running counter runs from 0 with step L: its
        // tick from the DCBU's instead of a 64-bit register per stage.
        self.encoder_tick.d.next = self.dcbu.tick.val() - self.chain_ticks.val();
        self.encoder.tick_in.next = self.encoder_tick.q.val();
        self.encoder.tick_valid_in.next = self.cu.tick_valid.val();
        self.encoder.tracing_in.next = self.cu.tracing.val();
        self.encoder.tags_only_in.next = self.cu.tags_only.val();
        self.over_delayed.d.next = self.limit.over.val();
        self.encoder.over.next = self.over_delayed.q.val();
        self.encoder.depth.next = self.depth.val();
        self.encoder.drain_num.next = self.drain_num.val();
        self.encoder.drain_den.next = self.drain_den.val();
        for j in 0..L {
            self.dcbu.pins[j].cs_n.next = self.pins[j].cs_n.val();
            self.dcbu.pins[j].ras_n.next = self.pins[j].ras_n.val();
            self.dcbu.pins[j].cas_n.next = self.pins[j].cas_n.val();
            self.dcbu.pins[j].we_n.next = self.pins[j].we_n.val();
            self.dcbu.pins[j].cke.next = self.pins[j].cke.val();
            self.dcbu.pins[j].ba.next = self.pins[j].ba.val();
            self.dcbu.pins[j].addr.next = self.pins[j].addr.val();
            self.dsmu.cmd_kind[j].next = self.dcbu.cmd_kind[j].val();
            self.dsmu.cmd_rank[j].next = self.dcbu.cmd_rank[j].val();
            self.dsmu.cmd_bank[j].next = self.dcbu.cmd_bank[j].val();
            self.dsmu.cmd_arg[j].next = self.dcbu.cmd_arg[j].val();
            self.limit.ref_valid[j].next = self.dsmu.ref_valid[j].val();
            self.limit.ref_write[j].next = self.dsmu.ref_write[j].val();
            self.limit.ref_line[j].next = self.dsmu.ref_line[j].val();
            self.limit.ref_rank[j].next = self.dsmu.ref_rank[j].val();
            self.limit.ref_row[j].next = self.dsmu.ref_row[j].val();
            self.bus_kind[j].next = self.dcbu.bus_kind[j].val();
            self.bus_rank[j].next = self.dcbu.cmd_rank[j].val();
            self.bus_bank[j].next = self.dcbu.cmd_bank[j].val();
            self.bus_addr[j].next = self.dcbu.bus_addr[j].val();
            self.ref_valid[j].next = self.dsmu.ref_valid[j].val();
            self.ref_line[j].next = self.dsmu.ref_line[j].val();
        }
        self.bus_tick.next = self.dcbu.tick.val();
        self.ref_tick.next = self.dsmu.tick.val();
        self.over.next = self.limit.over.val();
        self.over_tick.next = self.limit.tick.val();
        self.cmd_tick.next = self.cu.tick.val();
        self.dropped.next = self.encoder.dropped_clock.val();
        self.dropped_tick.next = self.encoder.tick.val();
        self.dropped_tick_valid.next = self.encoder.tick_valid.val();
        for s in 0..E {
            self.cu.ref_valid[s].next = self.limit.slot_valid[s].val();
            self.cu.ref_write[s].next = self.limit.slot_write[s].val();
            self.cu.ref_line[s].next = self.limit.slot_line[s].val();
            self.cu.ref_rank[s].next = self.limit.slot_rank[s].val();
            self.cu.ref_row[s].next = self.limit.slot_row[s].val();
            self.cu.ref_lane[s].next = self.limit.slot_lane[s].val();
            self.encoder.ev_valid[s].next = self.cu.ev_valid[s].val();
            self.encoder.ev_kind[s].next = self.cu.ev_kind[s].val();
            self.encoder.ev_write[s].next = self.cu.ev_write[s].val();
            self.encoder.ev_value[s].next = self.cu.ev_value[s].val();
            self.encoder.ev_lane[s].next = self.cu.ev_lane[s].val();
            self.cmd_valid[s].next = self.cu.ev_valid[s].val() & (self.cu.ev_kind[s].val() == 2);
            self.cmd_index[s].next = self.cu.ev_value[s].val().get_bits::<6>(0);
        }
        // Encoder -> storage, and the push side's observation.
        self.storage.base.next = self.encoder.base.val();
        self.storage.pop.next = self.encoder.pop.val();
        self.storage.pop_ptr.next = self.encoder.pop_ptr.val();
        for g in 0..GROUPS {
            self.storage.count[g].next = self.encoder.group_count[g].val();
            self.storage.word0[g].next = self.encoder.group_word0[g].val();
            self.storage.word1[g].next = self.encoder.group_word1[g].val();
            self.storage.word2[g].next = self.encoder.group_word2[g].val();
            self.push_count_held[g].clock.next = self.clock.val();
            self.push_word0_held[g].clock.next = self.clock.val();
            self.push_word1_held[g].clock.next = self.clock.val();
            self.push_word2_held[g].clock.next = self.clock.val();
            self.push_count_held[g].d.next = self.encoder.group_count[g].val();
            self.push_word0_held[g].d.next = self.encoder.group_word0[g].val();
            self.push_word1_held[g].d.next = self.encoder.group_word1[g].val();
            self.push_word2_held[g].d.next = self.encoder.group_word2[g].val();
            self.push_count[g].next = self.push_count_held[g].q.val();
            self.push_word0[g].next = self.push_word0_held[g].q.val();
            self.push_word1[g].next = self.push_word1_held[g].q.val();
            self.push_word2[g].next = self.push_word2_held[g].q.val();
        }
        self.push_tick.next = self.encoder.fill_tick.val();
        self.push_tick_valid.next = self.encoder.fill_tick_valid.val();
        self.fill.next = self.encoder.fill.val();
        // Pop side: the storage answers READ_LATENCY clocks after the pop.
        self.tick_1.d.next = self.encoder.tick.val();
        self.tick_2.d.next = self.tick_1.q.val();
        self.tick_3.d.next = self.tick_2.q.val();
        self.tick_valid_1.d.next = self.encoder.tick_valid.val();
        self.tick_valid_2.d.next = self.tick_valid_1.q.val();
        self.tick_valid_3.d.next = self.tick_valid_2.q.val();
        self.tracing_1.d.next = self.encoder.tracing.val();
        self.tracing_2.d.next = self.tracing_1.q.val();
        self.tracing_3.d.next = self.tracing_2.q.val();
        self.tags_only_1.d.next = self.encoder.tags_only.val();
        self.tags_only_2.d.next = self.tags_only_1.q.val();
        self.tags_only_3.d.next = self.tags_only_2.q.val();
        self.pop_valid.next = self.storage.read_valid.val();
        self.pop_word.next = self.storage.read_word.val();
        self.tick.next = self.tick_3.q.val();
        self.tick_valid.next = self.tick_valid_3.q.val();
        self.tracing.next = self.tracing_3.q.val();
        self.tags_only.next = self.tags_only_3.q.val();
        self.protocol_errors.next = self.dsmu.protocol_errors.val();
        self.unknown_commands.next = self.dsmu.unknown_commands.val();
        self.out_of_range.next = self.dcbu.out_of_range.val();
        self.references_over_limit.next = self.limit.references_over_limit.val();
        self.clocks_over_limit.next = self.limit.clocks_over_limit.val();
        self.config_events.next = self.cu.config_events.val();
        self.events_dropped.next = self.encoder.events_dropped.val();
        self.lost_words.next = self.encoder.lost_words.val();
        self.time_fillers.next = self.encoder.time_fillers.val();
        self.time_overflows.next = self.encoder.time_overflows.val();
        self.high_water.next = self.encoder.high_water.val();
    }
}
