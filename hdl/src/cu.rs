//! CU, the config unit (format.md section 6, board.md step 1): a reference
//! inside the config window `(rank, rows [row_first, row_first+row_count))`
//! is a config event with index `line - first_line`. Indices 0..63 are inner
//! commands (executed and recorded as CMD in every mode), the others become
//! TAG events when tracing is on. Other references become ACCESS events when
//! tracing is on and not tags-only. It takes the `E` slots the reference
//! limit passes per fabric clock (`ref_limit`), in stream order: the mode
//! changes of slot i apply to slots j > i of the same clock.

use rust_hdl::prelude::*;

/// Event kinds on `ev_kind`.
pub mod event_kind {
    pub const ACCESS: u64 = 0;
    pub const TAG: u64 = 1;
    pub const CMD: u64 = 2;
}

#[derive(LogicBlock)]
pub struct ConfigUnit<const E: usize> {
    pub clock: Signal<In, Clock>,
    pub ref_valid: [Signal<In, Bit>; E],
    pub ref_write: [Signal<In, Bit>; E],
    pub ref_line: [Signal<In, Bits<48>>; E],
    pub ref_rank: [Signal<In, Bits<2>>; E],
    pub ref_row: [Signal<In, Bits<18>>; E],
    pub ref_lane: [Signal<In, Bits<3>>; E],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// The window (build parameters of the board, held constant).
    pub window_rank: Signal<In, Bits<2>>,
    pub window_row_first: Signal<In, Bits<32>>,
    pub window_row_count: Signal<In, Bits<32>>,
    pub window_first_line: Signal<In, Bits<48>>,
    /// One fabric clock after the references.
    pub ev_valid: [Signal<Out, Bit>; E],
    /// An [`event_kind`] code.
    pub ev_kind: [Signal<Out, Bits<2>>; E],
    pub ev_write: [Signal<Out, Bit>; E],
    /// The line (ACCESS) or the event index (TAG, CMD).
    pub ev_value: [Signal<Out, Bits<48>>; E],
    /// The slot's lane (tick offset in the clock).
    pub ev_lane: [Signal<Out, Bits<3>>; E],
    /// Board mode after the clock (after its last slot).
    pub tracing: Signal<Out, Bit>,
    pub tags_only: Signal<Out, Bit>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub config_events: Signal<Out, Bits<32>>,
    lane: [ConfigLane; E],
    mode_tracing: DFF<Bit>,
    mode_tags_only: DFF<Bit>,
    out_valid: [DFF<Bit>; E],
    out_kind: [DFF<Bits<2>>; E],
    out_write: [DFF<Bit>; E],
    out_value: [DFF<Bits<48>>; E],
    out_lane: [DFF<Bits<3>>; E],
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    config_count: DFF<Bits<32>>,
    config_sum: [Signal<Local, Bits<32>>; E],
    tracing_at_reset: Constant<Bit>,
}

impl<const E: usize> ConfigUnit<E> {
    /// `initially_tracing`: the board's reset mode (format.md: tracing on,
    /// all references; a build parameter).
    pub fn new(initially_tracing: bool) -> Self {
        Self {
            clock: Default::default(),
            ref_valid: std::array::from_fn(|_| Default::default()),
            ref_write: std::array::from_fn(|_| Default::default()),
            ref_line: std::array::from_fn(|_| Default::default()),
            ref_rank: std::array::from_fn(|_| Default::default()),
            ref_row: std::array::from_fn(|_| Default::default()),
            ref_lane: std::array::from_fn(|_| Default::default()),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            window_rank: Default::default(),
            window_row_first: Default::default(),
            window_row_count: Default::default(),
            window_first_line: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            ev_kind: std::array::from_fn(|_| Default::default()),
            ev_write: std::array::from_fn(|_| Default::default()),
            ev_value: std::array::from_fn(|_| Default::default()),
            ev_lane: std::array::from_fn(|_| Default::default()),
            tracing: Default::default(),
            tags_only: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            config_events: Default::default(),
            lane: std::array::from_fn(|_| Default::default()),
            // The DFF holds the inverse so that power-on zero means the
            // reset mode whatever the parameter.
            mode_tracing: Default::default(),
            mode_tags_only: Default::default(),
            out_valid: std::array::from_fn(|_| Default::default()),
            out_kind: std::array::from_fn(|_| Default::default()),
            out_write: std::array::from_fn(|_| Default::default()),
            out_value: std::array::from_fn(|_| Default::default()),
            out_lane: std::array::from_fn(|_| Default::default()),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            config_count: Default::default(),
            config_sum: std::array::from_fn(|_| Default::default()),
            tracing_at_reset: Constant::new(initially_tracing),
        }
    }
}

impl<const E: usize> Logic for ConfigUnit<E> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            mode_tracing,
            mode_tags_only,
            out_tick,
            out_tick_valid,
            config_count
        );
        self.out_tick.d.next = self.tick_in.val();
        self.out_tick_valid.d.next = self.tick_valid_in.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.config_events.next = self.config_count.q.val();
        // The mode registers hold the mode after the previous clock.
        self.tracing.next = self.mode_tracing.q.val() ^ self.tracing_at_reset.val();
        self.tags_only.next = self.mode_tags_only.q.val();
        // mode_tracing.q holds "tracing differs from the reset mode".
        self.lane[0].tracing_in.next = self.mode_tracing.q.val() ^ self.tracing_at_reset.val();
        self.lane[0].tags_only_in.next = self.mode_tags_only.q.val();
        for j in 1..E {
            self.lane[j].tracing_in.next = self.lane[j - 1].tracing_out.val();
            self.lane[j].tags_only_in.next = self.lane[j - 1].tags_only_out.val();
        }
        for j in 0..E {
            self.lane[j].ref_valid.next = self.ref_valid[j].val();
            self.lane[j].ref_line.next = self.ref_line[j].val();
            self.lane[j].ref_rank.next = self.ref_rank[j].val();
            self.lane[j].ref_row.next = self.ref_row[j].val();
            self.lane[j].window_rank.next = self.window_rank.val();
            self.lane[j].window_row_first.next = self.window_row_first.val();
            self.lane[j].window_row_count.next = self.window_row_count.val();
            self.lane[j].window_first_line.next = self.window_first_line.val();
            self.out_valid[j].clock.next = self.clock.val();
            self.out_kind[j].clock.next = self.clock.val();
            self.out_write[j].clock.next = self.clock.val();
            self.out_value[j].clock.next = self.clock.val();
            self.out_lane[j].clock.next = self.clock.val();
            self.out_valid[j].d.next = self.lane[j].ev_valid.val();
            self.out_kind[j].d.next = self.lane[j].ev_kind.val();
            self.out_write[j].d.next = self.ref_write[j].val();
            self.out_value[j].d.next = self.lane[j].ev_value.val();
            self.out_lane[j].d.next = self.ref_lane[j].val();
            self.ev_valid[j].next = self.out_valid[j].q.val();
            self.ev_kind[j].next = self.out_kind[j].q.val();
            self.ev_write[j].next = self.out_write[j].q.val();
            self.ev_value[j].next = self.out_value[j].q.val();
            self.ev_lane[j].next = self.out_lane[j].q.val();
            // The last lane's mode is the mode for the next fabric clock.
            self.mode_tracing.d.next = self.lane[j].tracing_out.val() ^ self.tracing_at_reset.val();
            self.mode_tags_only.d.next = self.lane[j].tags_only_out.val();
        }
        self.config_sum[0].next = self.config_count.q.val() + self.lane[0].in_window.val();
        for j in 1..E {
            self.config_sum[j].next = self.config_sum[j - 1].val() + self.lane[j].in_window.val();
        }
        for j in 0..E {
            self.config_count.d.next = self.config_sum[j].val();
        }
    }
}

/// Combinational: one lane's window match, inner-command execution and
/// event choice, given the mode before the lane's tick.
#[derive(LogicBlock, Default)]
pub struct ConfigLane {
    pub ref_valid: Signal<In, Bit>,
    pub ref_line: Signal<In, Bits<48>>,
    pub ref_rank: Signal<In, Bits<2>>,
    pub ref_row: Signal<In, Bits<18>>,
    pub window_rank: Signal<In, Bits<2>>,
    pub window_row_first: Signal<In, Bits<32>>,
    pub window_row_count: Signal<In, Bits<32>>,
    pub window_first_line: Signal<In, Bits<48>>,
    pub tracing_in: Signal<In, Bit>,
    pub tags_only_in: Signal<In, Bit>,
    pub in_window: Signal<Out, Bit>,
    pub ev_valid: Signal<Out, Bit>,
    pub ev_kind: Signal<Out, Bits<2>>,
    pub ev_value: Signal<Out, Bits<48>>,
    pub tracing_out: Signal<Out, Bit>,
    pub tags_only_out: Signal<Out, Bit>,
    row_offset: Signal<Local, Bits<32>>,
    index: Signal<Local, Bits<48>>,
}

impl Logic for ConfigLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.row_offset.next = bit_cast::<32, 18>(self.ref_row.val()) - self.window_row_first.val();
        self.index.next = self.ref_line.val() - self.window_first_line.val();
        // Unsigned wrap-around makes rows below row_first fail the compare.
        self.in_window.next = self.ref_valid.val()
            & (self.ref_rank.val() == self.window_rank.val())
            & (self.row_offset.val() < self.window_row_count.val());
        self.tracing_out.next = self.tracing_in.val();
        self.tags_only_out.next = self.tags_only_in.val();
        self.ev_valid.next = false;
        self.ev_kind.next = 0.into();
        self.ev_value.next = self.ref_line.val();
        if self.in_window.val() {
            self.ev_value.next = self.index.val();
            if self.index.val() < 64 {
                // Inner command: CMD in every mode; 0..3 change the mode.
                self.ev_valid.next = true;
                self.ev_kind.next = 2.into();
                if self.index.val() == 0 {
                    self.tracing_out.next = true;
                }
                if self.index.val() == 1 {
                    self.tracing_out.next = false;
                }
                if self.index.val() == 2 {
                    self.tags_only_out.next = true;
                }
                if self.index.val() == 3 {
                    self.tags_only_out.next = false;
                }
            } else {
                self.ev_valid.next = self.tracing_in.val();
                self.ev_kind.next = 1.into();
            }
        } else {
            self.ev_valid.next =
                self.ref_valid.val() & self.tracing_in.val() & !self.tags_only_in.val();
        }
    }
}
