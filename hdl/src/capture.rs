//! The capture chain, DDR command pins to TX FIFO words: DCBU → DSMU → CU →
//! encoder (with the logical FIFO and the drain's pop decision) → TX FIFO
//! storage. Everything runs in the command/fabric clock domain so that the
//! fill level per tick is exactly board.md's; the crossing to the Ethernet
//! clock comes after the packetizer.
//!
//! Latencies (fabric clocks after the pins of a tick are sampled): push
//! stream and fill level 8, popped words 10 (the encoder's pipeline is 4
//! of them, see `encoder`).

use rust_hdl::prelude::*;

use crate::cu::ConfigUnit;
use crate::dcbu::Dcbu;
use crate::dsmu::{Dsmu, LineGeometry};
use crate::encoder::Encoder;
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

/// `L` lanes, FIFO of `B` banks of `2^AB` words (`B >= 5 L`).
#[derive(LogicBlock)]
pub struct Capture<const L: usize, const B: usize, const AB: usize> {
    pub clock: Signal<In, Clock>,
    pub cs_n: [Signal<In, Bits<4>>; L],
    pub ras_n: [Signal<In, Bit>; L],
    pub cas_n: [Signal<In, Bit>; L],
    pub we_n: [Signal<In, Bit>; L],
    pub cke: [Signal<In, Bit>; L],
    pub ba: [Signal<In, Bits<4>>; L],
    pub addr: [Signal<In, Bits<18>>; L],
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    /// Popped words, in order, with the tick of their pop and the mode then.
    pub pop_valid: Signal<Out, Bit>,
    pub pop_word: Signal<Out, Bits<32>>,
    pub pop_tick: Signal<Out, Bits<64>>,
    pub pop_tracing: Signal<Out, Bit>,
    pub pop_tags_only: Signal<Out, Bit>,
    /// Aligned with the pop outputs: the ticks `out_tick .. out_tick+L-1`
    /// and the mode after each of them.
    pub out_tick: Signal<Out, Bits<64>>,
    pub out_tick_valid: Signal<Out, Bit>,
    pub out_tracing: [Signal<Out, Bit>; L],
    pub out_tags_only: [Signal<Out, Bit>; L],
    /// Observation of the push side (two clocks ahead of the pop outputs):
    /// ticks `push_tick + j`, words pushed at each, fill level after each.
    pub push_tick: Signal<Out, Bits<64>>,
    pub push_tick_valid: Signal<Out, Bit>,
    pub push_count: [Signal<Out, Bits<32>>; L],
    pub push_word0: [Signal<Out, Bits<32>>; L],
    pub push_word1: [Signal<Out, Bits<32>>; L],
    pub push_word2: [Signal<Out, Bits<32>>; L],
    pub push_word3: [Signal<Out, Bits<32>>; L],
    pub push_word4: [Signal<Out, Bits<32>>; L],
    pub fill: [Signal<Out, Bits<32>>; L],
    pub protocol_errors: Signal<Out, Bits<32>>,
    pub unknown_commands: Signal<Out, Bits<32>>,
    /// ACT/RD/WR that did not fit the geometry (ignored, board.md step 1).
    pub out_of_range: Signal<Out, Bits<32>>,
    pub config_events: Signal<Out, Bits<32>>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub high_water: Signal<Out, Bits<32>>,
    dcbu: Dcbu<L>,
    dsmu: Dsmu<L>,
    cu: ConfigUnit<L>,
    encoder: Encoder<L>,
    storage: TxFifoStorage<L, B, AB>,
    /// Mode per lane, delayed to the encoder's output (`encoder::LATENCY`),
    /// then to the pops.
    mode_tracing_e1: [DFF<Bit>; L],
    mode_tags_only_e1: [DFF<Bit>; L],
    mode_tracing_e2: [DFF<Bit>; L],
    mode_tags_only_e2: [DFF<Bit>; L],
    mode_tracing_e3: [DFF<Bit>; L],
    mode_tags_only_e3: [DFF<Bit>; L],
    mode_tracing_1: [DFF<Bit>; L],
    mode_tags_only_1: [DFF<Bit>; L],
    mode_tracing_2: [DFF<Bit>; L],
    mode_tags_only_2: [DFF<Bit>; L],
    mode_tracing_3: [DFF<Bit>; L],
    mode_tags_only_3: [DFF<Bit>; L],
    pop_tick_2: DFF<Bits<64>>,
    pop_tick_3: DFF<Bits<64>>,
    pop_tracing_2: DFF<Bit>,
    pop_tracing_3: DFF<Bit>,
    pop_tags_only_2: DFF<Bit>,
    pop_tags_only_3: DFF<Bit>,
    tick_2: DFF<Bits<64>>,
    tick_3: DFF<Bits<64>>,
    tick_valid_2: DFF<Bit>,
    tick_valid_3: DFF<Bit>,
    pop_tracing_now: Signal<Local, Bit>,
    pop_tags_only_now: Signal<Local, Bit>,
    depth: Constant<Bits<32>>,
    window_rank: Constant<Bits<2>>,
    window_row_first: Constant<Bits<32>>,
    window_row_count: Constant<Bits<32>>,
    window_first_line: Constant<Bits<48>>,
}

impl<const L: usize, const B: usize, const AB: usize> Capture<L, B, AB> {
    pub const DEPTH: usize = B << AB;

    pub fn new(config: CaptureConfig) -> Self {
        Self {
            clock: Default::default(),
            cs_n: std::array::from_fn(|_| Default::default()),
            ras_n: std::array::from_fn(|_| Default::default()),
            cas_n: std::array::from_fn(|_| Default::default()),
            we_n: std::array::from_fn(|_| Default::default()),
            cke: std::array::from_fn(|_| Default::default()),
            ba: std::array::from_fn(|_| Default::default()),
            addr: std::array::from_fn(|_| Default::default()),
            drain_num: Default::default(),
            drain_den: Default::default(),
            pop_valid: Default::default(),
            pop_word: Default::default(),
            pop_tick: Default::default(),
            pop_tracing: Default::default(),
            pop_tags_only: Default::default(),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            out_tracing: std::array::from_fn(|_| Default::default()),
            out_tags_only: std::array::from_fn(|_| Default::default()),
            push_tick: Default::default(),
            push_tick_valid: Default::default(),
            push_count: std::array::from_fn(|_| Default::default()),
            push_word0: std::array::from_fn(|_| Default::default()),
            push_word1: std::array::from_fn(|_| Default::default()),
            push_word2: std::array::from_fn(|_| Default::default()),
            push_word3: std::array::from_fn(|_| Default::default()),
            push_word4: std::array::from_fn(|_| Default::default()),
            fill: std::array::from_fn(|_| Default::default()),
            protocol_errors: Default::default(),
            unknown_commands: Default::default(),
            out_of_range: Default::default(),
            config_events: Default::default(),
            events_dropped: Default::default(),
            lost_words: Default::default(),
            time_fillers: Default::default(),
            time_overflows: Default::default(),
            high_water: Default::default(),
            dcbu: Dcbu::new(config.geometry),
            dsmu: Dsmu::new(config.geometry),
            cu: ConfigUnit::new(config.start_tracing),
            encoder: Default::default(),
            storage: Default::default(),
            mode_tracing_e1: std::array::from_fn(|_| Default::default()),
            mode_tags_only_e1: std::array::from_fn(|_| Default::default()),
            mode_tracing_e2: std::array::from_fn(|_| Default::default()),
            mode_tags_only_e2: std::array::from_fn(|_| Default::default()),
            mode_tracing_e3: std::array::from_fn(|_| Default::default()),
            mode_tags_only_e3: std::array::from_fn(|_| Default::default()),
            mode_tracing_1: std::array::from_fn(|_| Default::default()),
            mode_tags_only_1: std::array::from_fn(|_| Default::default()),
            mode_tracing_2: std::array::from_fn(|_| Default::default()),
            mode_tags_only_2: std::array::from_fn(|_| Default::default()),
            mode_tracing_3: std::array::from_fn(|_| Default::default()),
            mode_tags_only_3: std::array::from_fn(|_| Default::default()),
            pop_tick_2: Default::default(),
            pop_tick_3: Default::default(),
            pop_tracing_2: Default::default(),
            pop_tracing_3: Default::default(),
            pop_tags_only_2: Default::default(),
            pop_tags_only_3: Default::default(),
            tick_2: Default::default(),
            tick_3: Default::default(),
            tick_valid_2: Default::default(),
            tick_valid_3: Default::default(),
            pop_tracing_now: Default::default(),
            pop_tags_only_now: Default::default(),
            depth: Constant::new(((B << AB) as u64).to_bits()),
            window_rank: Constant::new(config.window_rank.to_bits()),
            window_row_first: Constant::new(config.window_row_first.to_bits()),
            window_row_count: Constant::new(config.window_row_count.to_bits()),
            window_first_line: Constant::new(config.first_line().to_bits()),
        }
    }
}

impl<const L: usize, const B: usize, const AB: usize> Logic for Capture<L, B, AB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            pop_tick_2,
            pop_tick_3,
            pop_tracing_2,
            pop_tracing_3,
            pop_tags_only_2,
            pop_tags_only_3,
            tick_2,
            tick_3,
            tick_valid_2,
            tick_valid_3
        );
        self.dcbu.clock.next = self.clock.val();
        self.dsmu.clock.next = self.clock.val();
        self.cu.clock.next = self.clock.val();
        self.encoder.clock.next = self.clock.val();
        self.storage.clock.next = self.clock.val();
        // DCBU -> DSMU -> CU -> encoder: tick and per-lane signals.
        self.dsmu.tick_in.next = self.dcbu.tick.val();
        self.dsmu.tick_valid_in.next = self.dcbu.tick_valid.val();
        self.cu.tick_in.next = self.dsmu.tick.val();
        self.cu.tick_valid_in.next = self.dsmu.tick_valid.val();
        self.cu.window_rank.next = self.window_rank.val();
        self.cu.window_row_first.next = self.window_row_first.val();
        self.cu.window_row_count.next = self.window_row_count.val();
        self.cu.window_first_line.next = self.window_first_line.val();
        self.encoder.tick_in.next = self.cu.tick.val();
        self.encoder.tick_valid_in.next = self.cu.tick_valid.val();
        self.encoder.depth.next = self.depth.val();
        self.encoder.drain_num.next = self.drain_num.val();
        self.encoder.drain_den.next = self.drain_den.val();
        self.storage.pop.next = self.encoder.pop.val();
        self.storage.pop_ptr.next = self.encoder.pop_ptr.val();
        self.pop_tracing_now.next = false;
        self.pop_tags_only_now.next = false;
        for j in 0..L {
            self.dcbu.cs_n[j].next = self.cs_n[j].val();
            self.dcbu.ras_n[j].next = self.ras_n[j].val();
            self.dcbu.cas_n[j].next = self.cas_n[j].val();
            self.dcbu.we_n[j].next = self.we_n[j].val();
            self.dcbu.cke[j].next = self.cke[j].val();
            self.dcbu.ba[j].next = self.ba[j].val();
            self.dcbu.addr[j].next = self.addr[j].val();
            self.dsmu.cmd_kind[j].next = self.dcbu.cmd_kind[j].val();
            self.dsmu.cmd_rank[j].next = self.dcbu.cmd_rank[j].val();
            self.dsmu.cmd_bank[j].next = self.dcbu.cmd_bank[j].val();
            self.dsmu.cmd_arg[j].next = self.dcbu.cmd_arg[j].val();
            self.cu.ref_valid[j].next = self.dsmu.ref_valid[j].val();
            self.cu.ref_write[j].next = self.dsmu.ref_write[j].val();
            self.cu.ref_line[j].next = self.dsmu.ref_line[j].val();
            self.cu.ref_rank[j].next = self.dsmu.ref_rank[j].val();
            self.cu.ref_row[j].next = self.dsmu.ref_row[j].val();
            self.encoder.ev_valid[j].next = self.cu.ev_valid[j].val();
            self.encoder.ev_kind[j].next = self.cu.ev_kind[j].val();
            self.encoder.ev_write[j].next = self.cu.ev_write[j].val();
            self.encoder.ev_value[j].next = self.cu.ev_value[j].val();
            self.storage.lane_count[j].next = self.encoder.lane_count[j].val();
            self.storage.lane_pos[j].next = self.encoder.lane_pos[j].val();
            self.storage.word0[j].next = self.encoder.word0[j].val();
            self.storage.word1[j].next = self.encoder.word1[j].val();
            self.storage.word2[j].next = self.encoder.word2[j].val();
            self.storage.word3[j].next = self.encoder.word3[j].val();
            self.storage.word4[j].next = self.encoder.word4[j].val();
            self.push_count[j].next = self.encoder.lane_count[j].val();
            self.push_word0[j].next = self.encoder.word0[j].val();
            self.push_word1[j].next = self.encoder.word1[j].val();
            self.push_word2[j].next = self.encoder.word2[j].val();
            self.push_word3[j].next = self.encoder.word3[j].val();
            self.push_word4[j].next = self.encoder.word4[j].val();
            self.fill[j].next = self.encoder.fill[j].val();
            // Mode: CU output is aligned with the encoder's input.
            self.mode_tracing_e1[j].clock.next = self.clock.val();
            self.mode_tags_only_e1[j].clock.next = self.clock.val();
            self.mode_tracing_e2[j].clock.next = self.clock.val();
            self.mode_tags_only_e2[j].clock.next = self.clock.val();
            self.mode_tracing_e3[j].clock.next = self.clock.val();
            self.mode_tags_only_e3[j].clock.next = self.clock.val();
            self.mode_tracing_e1[j].d.next = self.cu.tracing[j].val();
            self.mode_tags_only_e1[j].d.next = self.cu.tags_only[j].val();
            self.mode_tracing_e2[j].d.next = self.mode_tracing_e1[j].q.val();
            self.mode_tags_only_e2[j].d.next = self.mode_tags_only_e1[j].q.val();
            self.mode_tracing_e3[j].d.next = self.mode_tracing_e2[j].q.val();
            self.mode_tags_only_e3[j].d.next = self.mode_tags_only_e2[j].q.val();
            self.mode_tracing_1[j].clock.next = self.clock.val();
            self.mode_tags_only_1[j].clock.next = self.clock.val();
            self.mode_tracing_2[j].clock.next = self.clock.val();
            self.mode_tags_only_2[j].clock.next = self.clock.val();
            self.mode_tracing_3[j].clock.next = self.clock.val();
            self.mode_tags_only_3[j].clock.next = self.clock.val();
            self.mode_tracing_1[j].d.next = self.mode_tracing_e3[j].q.val();
            self.mode_tags_only_1[j].d.next = self.mode_tags_only_e3[j].q.val();
            self.mode_tracing_2[j].d.next = self.mode_tracing_1[j].q.val();
            self.mode_tags_only_2[j].d.next = self.mode_tags_only_1[j].q.val();
            self.mode_tracing_3[j].d.next = self.mode_tracing_2[j].q.val();
            self.mode_tags_only_3[j].d.next = self.mode_tags_only_2[j].q.val();
            self.out_tracing[j].next = self.mode_tracing_3[j].q.val();
            self.out_tags_only[j].next = self.mode_tags_only_3[j].q.val();
            if self.encoder.pop_lane.val().index() == j {
                self.pop_tracing_now.next = self.mode_tracing_1[j].q.val();
                self.pop_tags_only_now.next = self.mode_tags_only_1[j].q.val();
            }
        }
        self.push_tick.next = self.encoder.tick.val();
        self.push_tick_valid.next = self.encoder.tick_valid.val();
        // Pop side: the storage answers two clocks after the encoder's pop.
        self.pop_tick_2.d.next =
            self.encoder.tick.val() + bit_cast::<64, 2>(self.encoder.pop_lane.val());
        self.pop_tick_3.d.next = self.pop_tick_2.q.val();
        self.pop_tracing_2.d.next = self.pop_tracing_now.val();
        self.pop_tracing_3.d.next = self.pop_tracing_2.q.val();
        self.pop_tags_only_2.d.next = self.pop_tags_only_now.val();
        self.pop_tags_only_3.d.next = self.pop_tags_only_2.q.val();
        self.tick_2.d.next = self.encoder.tick.val();
        self.tick_3.d.next = self.tick_2.q.val();
        self.tick_valid_2.d.next = self.encoder.tick_valid.val();
        self.tick_valid_3.d.next = self.tick_valid_2.q.val();
        self.pop_valid.next = self.storage.read_valid.val();
        self.pop_word.next = self.storage.read_word.val();
        self.pop_tick.next = self.pop_tick_3.q.val();
        self.pop_tracing.next = self.pop_tracing_3.q.val();
        self.pop_tags_only.next = self.pop_tags_only_3.q.val();
        self.out_tick.next = self.tick_3.q.val();
        self.out_tick_valid.next = self.tick_valid_3.q.val();
        self.protocol_errors.next = self.dsmu.protocol_errors.val();
        self.unknown_commands.next = self.dsmu.unknown_commands.val();
        self.out_of_range.next = self.dcbu.out_of_range.val();
        self.config_events.next = self.cu.config_events.val();
        self.events_dropped.next = self.encoder.events_dropped.val();
        self.lost_words.next = self.encoder.lost_words.val();
        self.time_fillers.next = self.encoder.time_fillers.val();
        self.time_overflows.next = self.encoder.time_overflows.val();
        self.high_water.next = self.encoder.high_water.val();
    }
}
