//! The Statistic Unit's counters built: every signal and sub-block of
//! [`StatisticCounters`] made for a geometry and an interval, and the
//! names of the counters of a record in format.md §5.3 order.

use super::*;

impl<const L: usize, const E: usize, const R: usize, const NB: usize, const LB: usize>
    StatisticCounters<L, E, R, NB, LB>
{
    /// Counters for `geometry`, on from reset at intervals of
    /// `2^interval_log2` ticks until an inner command says otherwise.
    pub fn new(geometry: LineGeometry, interval_log2: u32) -> Self {
        let g = geometry.checked();
        assert_eq!(R, 1 << g.rank_bits, "R: the geometry's ranks");
        assert_eq!(
            NB,
            R << g.bank_bits,
            "NB: the geometry's banks in all ranks"
        );
        assert_eq!(LB, g.line_bits() as usize, "LB: the geometry's line bits");
        assert!(
            (6..=31).contains(&interval_log2),
            "interval 2^k ticks, k in 6..=31"
        );
        assert!((1..=L).contains(&E) && L <= 8, "1 <= E <= L <= 8");
        let banks_per_rank = NB / R;
        // The counters after the banks'; the readout's index is 10 bits.
        let others = NB * BANK_COUNTERS;
        assert!(
            2 * R + LB + 2 <= 8 * OTHER_GROUPS,
            "the readout's groups for the counters after the banks'"
        );
        assert!(others + 8 * OTHER_GROUPS <= 1 << 10, "the readout's index");
        Self {
            clock: Default::default(),
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
            record_valid: Default::default(),
            record_start: Default::default(),
            record_end: Default::default(),
            record_k: Default::default(),
            hold_write: Default::default(),
            hold_slot: Default::default(),
            read_slot: Default::default(),
            read_index: Default::default(),
            read_value: Default::default(),
            enabled: Default::default(),
            open_end: Default::default(),
            aligned: Default::default(),
            banks: std::array::from_fn(|_| Default::default()),
            refresh: std::array::from_fn(|_| Default::default()),
            busy: std::array::from_fn(|_| Default::default()),
            toggles: std::array::from_fn(|_| Default::default()),
            over_limit: Default::default(),
            lost_fifo: Default::default(),
            kind_delay: std::array::from_fn(|_| Default::default()),
            rank_delay: std::array::from_fn(|_| Default::default()),
            bank_delay: std::array::from_fn(|_| Default::default()),
            addr_delay: std::array::from_fn(|_| Default::default()),
            toggle_delay: std::array::from_fn(|_| Default::default()),
            over_delay: Default::default(),
            cmd_valid_delay: std::array::from_fn(|_| Default::default()),
            cmd_index_delay: std::array::from_fn(|_| Default::default()),
            bus_tick_delay: Default::default(),
            ref_tick_delay: Default::default(),
            over_tick_delay: Default::default(),
            cmd_tick_delay: Default::default(),
            bank_high: Constant::new((0xFu64 & !((1u64 << g.bank_bits) - 1)).to_bits()),
            mask_bit_at: std::array::from_fn(|i| Constant::new((i as u64).to_bits())),
            bank_rank: std::array::from_fn(|b| {
                Constant::new(((b / banks_per_rank) as u64).to_bits())
            }),
            bank_index: std::array::from_fn(|b| {
                Constant::new(((b % banks_per_rank) as u64).to_bits())
            }),
            rank_index: std::array::from_fn(|r| Constant::new((r as u64).to_bits())),
            lane_addr: std::array::from_fn(LaneAddr::new),
            bank_at: std::array::from_fn(|b| Constant::new((b as u64).to_bits())),
            other_at: std::array::from_fn(|g| Constant::new(((NB + g) as u64).to_bits())),
            refresh_at: std::array::from_fn(|r| Constant::new(((others + 2 * r) as u64).to_bits())),
            busy_at: std::array::from_fn(|r| {
                Constant::new(((others + 2 * r + 1) as u64).to_bits())
            }),
            toggle_at: std::array::from_fn(|i| {
                Constant::new(((others + 2 * R + i) as u64).to_bits())
            }),
            over_limit_at: Constant::new(((others + 2 * R + LB) as u64).to_bits()),
            lost_fifo_at: Constant::new(((others + 2 * R + LB + 1) as u64).to_bits()),
            bank_read: std::array::from_fn(|_| Default::default()),
            other_read: std::array::from_fn(|_| Default::default()),
            bank_hit: std::array::from_fn(|_| Default::default()),
            other_hit: std::array::from_fn(|_| Default::default()),
            read: Default::default(),
            read_next: Default::default(),
            last_line: Default::default(),
            line_lanes: std::array::from_fn(|_| Default::default()),
            ref_valid_bits: Default::default(),
            lanes_before: std::array::from_fn(|j| Constant::new(((1u64 << j) - 1).to_bits())),
            lanes_after: std::array::from_fn(|j| {
                Constant::new((((1u64 << L) - 1) & !((2u64 << j) - 1)).to_bits())
            }),
            prior: std::array::from_fn(|_| Default::default()),
            toggled: std::array::from_fn(|_| Default::default()),
            ones: std::array::from_fn(|_| Default::default()),
            ones_s1: Default::default(),
            ones_c1: Default::default(),
            ones_s2: Default::default(),
            ones_c2: Default::default(),
            ones_s3: Default::default(),
            ones_c3: Default::default(),
            ones_c4: Default::default(),
            ones_t: Default::default(),
            ones_d1: Default::default(),
            ones_d2: Default::default(),
            ones_bit0: Default::default(),
            ones_bit1: Default::default(),
            ones_bit2: Default::default(),
            ones_bit3: Default::default(),
            toggle_count: std::array::from_fn(|_| Default::default()),
            k_act: Default::default(),
            k_column: Default::default(),
            k_write: Default::default(),
            k_auto: Default::default(),
            k_pre: Default::default(),
            k_prea: Default::default(),
            k_ref: Default::default(),
            counted: Default::default(),
            bank_sel: std::array::from_fn(|_| Default::default()),
            rank_sel: std::array::from_fn(|_| Default::default()),
            lane_addrs: Default::default(),
            addr_ne: Default::default(),
            bank_rank_sel: std::array::from_fn(|_| Default::default()),
            p_ref: Default::default(),
            p_counted: Default::default(),
            p_rank_sel: std::array::from_fn(|_| Default::default()),
            refresh_lanes: std::array::from_fn(|_| Default::default()),
            busy_lanes: std::array::from_fn(|_| Default::default()),
            on: DFFWithInit::new(true),
            k: DFFWithInit::new(u64::from(interval_log2).to_bits()),
            start: Default::default(),
            start_k: DFFWithInit::new(u64::from(interval_log2).to_bits()),
            due_close: Default::default(),
            due_any: Default::default(),
            due_on: Default::default(),
            due_k: Default::default(),
            cmd_is_on: std::array::from_fn(|_| Default::default()),
            cmd_is_off: std::array::from_fn(|_| Default::default()),
            cmd_is_interval: std::array::from_fn(|_| Default::default()),
            cmd_valid_now: std::array::from_fn(|_| Default::default()),
            cmd_index_now: std::array::from_fn(|_| Default::default()),
            mask: DFFWithInit::new(((1u64 << interval_log2) - 1).to_bits()),
            mask_now: Default::default(),
            natural: Default::default(),
            close: Default::default(),
            on_now: Default::default(),
            k_now: Default::default(),
            closed_start: Default::default(),
            closed_end: Default::default(),
            closed_k: Default::default(),
            header_start: Default::default(),
            header_end: Default::default(),
            header_k: Default::default(),
            closing: Default::default(),
            record_due: Default::default(),
            any_busy: Default::default(),
        }
    }

    /// The counters of a record in format.md §5.3 order: per rank and
    /// bank the eight of [`BankStats::counters`], per rank REF and busy
    /// ticks, per line bit the toggles, OVER_LIMIT, LOST_FIFO.
    pub fn record_counters(&self) -> Vec<&IntervalCounter<L>> {
        let mut all = Vec::with_capacity(NB * BANK_COUNTERS + 2 * R + LB + 2);
        for b in &self.banks {
            all.extend(b.counters());
        }
        for r in 0..R {
            all.push(&self.refresh[r]);
            all.push(&self.busy[r]);
        }
        all.extend(self.toggles.iter());
        all.push(&self.over_limit);
        all.push(&self.lost_fifo);
        all
    }

    /// The Verilog names of [`Self::record_counters`]' snapshots inside
    /// the generated module of this block, in the same order.
    pub fn record_counter_names() -> Vec<String> {
        Self::record_port_names("snapshot")
    }

    /// The same for their held records of the slot being read
    /// ([`IntervalCounter::held`]).
    pub fn record_held_names() -> Vec<String> {
        Self::record_port_names("held")
    }

    fn record_port_names(port: &str) -> Vec<String> {
        let bank = [
            "rd",
            "wr",
            "act_count",
            "pre_count",
            "hit",
            "miss",
            "conflict",
            "unused_act",
        ];
        let mut all = Vec::with_capacity(NB * BANK_COUNTERS + 2 * R + LB + 2);
        for b in 0..NB {
            all.extend(bank.iter().map(|c| format!("banks${b}.{c}${port}")));
        }
        for r in 0..R {
            all.push(format!("refresh${r}${port}"));
            all.push(format!("busy${r}${port}"));
        }
        all.extend((0..LB).map(|i| format!("toggles${i}${port}")));
        all.push(format!("over_limit${port}"));
        all.push(format!("lost_fifo${port}"));
        all
    }
}
