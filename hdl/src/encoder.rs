//! Record encoder and the logical TX FIFO (format.md 4.1, board.md steps 1
//! and 2): per tick, the pending LOST event and then the tick's event are
//! encoded into words (TIME, LINE_HI, the word) and pushed atomically if the
//! FIFO has room; then the drain's rate limiter decides whether the tick
//! pops a word. The fill level, the room and the pops are exact per tick;
//! the words themselves go to `tx_fifo::TxFifoStorage` one clock later.
//!
//! Hardware bound (differs from the golden model for gaps over 2^27 ticks,
//! about 0.17 s at DDR3-1600): one push holds at most one TIME word. A
//! keeper pushes a filler TIME word (payload 2^21-1, dt 0) at the first tick
//! at which `tick - last >= 64 * (2^21-1)`, before that tick's events, so
//! events never need more. An event whose gap would still need two TIME
//! words (only after the keeper found the FIFO full for 64 ticks in a row)
//! is dropped and counted lost, and `time_overflows` counts it.

use rust_hdl::prelude::*;

use crate::tx_fifo::DrainStep;

/// Largest TIME / LINE_HI / LOST payload, 2^21-1.
pub const PAYLOAD_MAX: u64 = (1 << 21) - 1;
/// Gap in ticks at which the keeper pushes a filler TIME word.
pub const KEEPER_GAP: u64 = PAYLOAD_MAX * 64;

#[derive(LogicBlock)]
pub struct Encoder<const L: usize> {
    pub clock: Signal<In, Clock>,
    pub ev_valid: [Signal<In, Bit>; L],
    pub ev_kind: [Signal<In, Bits<2>>; L],
    pub ev_write: [Signal<In, Bit>; L],
    pub ev_value: [Signal<In, Bits<48>>; L],
    pub tick_in: Signal<In, Bits<64>>,
    pub tick_valid_in: Signal<In, Bit>,
    /// FIFO depth in words (a build parameter, held constant).
    pub depth: Signal<In, Bits<32>>,
    /// Drain rate `num / den` words per tick, `num * L < den`.
    pub drain_num: Signal<In, Bits<32>>,
    pub drain_den: Signal<In, Bits<32>>,
    /// One clock after the events: the words pushed per lane, in order.
    pub lane_count: [Signal<Out, Bits<32>>; L],
    pub lane_pos: [Signal<Out, Bits<32>>; L],
    pub word0: [Signal<Out, Bits<32>>; L],
    pub word1: [Signal<Out, Bits<32>>; L],
    pub word2: [Signal<Out, Bits<32>>; L],
    pub word3: [Signal<Out, Bits<32>>; L],
    pub word4: [Signal<Out, Bits<32>>; L],
    /// Fill level after each lane's tick (after its pushes and its pop).
    pub fill: [Signal<Out, Bits<32>>; L],
    /// A word popped in this clock: its stream position and lane.
    pub pop: Signal<Out, Bit>,
    pub pop_ptr: Signal<Out, Bits<32>>,
    pub pop_lane: Signal<Out, Bits<2>>,
    pub tick: Signal<Out, Bits<64>>,
    pub tick_valid: Signal<Out, Bit>,
    pub events_dropped: Signal<Out, Bits<32>>,
    pub lost_words: Signal<Out, Bits<32>>,
    pub time_fillers: Signal<Out, Bits<32>>,
    pub time_overflows: Signal<Out, Bits<32>>,
    pub high_water: Signal<Out, Bits<32>>,
    lane: [EncoderLane; L],
    drain: [DrainStep; L],
    lane_start: [Signal<Local, Bits<32>>; L],
    last: DFF<Bits<64>>,
    hi: DFF<Bits<21>>,
    lost: DFF<Bits<32>>,
    level: DFF<Bits<32>>,
    credit: DFF<Bits<32>>,
    write_ptr: DFF<Bits<32>>,
    read_ptr: DFF<Bits<32>>,
    out_count: [DFF<Bits<32>>; L],
    out_pos: [DFF<Bits<32>>; L],
    out_word0: [DFF<Bits<32>>; L],
    out_word1: [DFF<Bits<32>>; L],
    out_word2: [DFF<Bits<32>>; L],
    out_word3: [DFF<Bits<32>>; L],
    out_word4: [DFF<Bits<32>>; L],
    out_fill: [DFF<Bits<32>>; L],
    out_pop: DFF<Bit>,
    out_pop_ptr: DFF<Bits<32>>,
    out_pop_lane: DFF<Bits<2>>,
    out_tick: DFF<Bits<64>>,
    out_tick_valid: DFF<Bit>,
    dropped: DFF<Bits<32>>,
    lost_count: DFF<Bits<32>>,
    filler_count: DFF<Bits<32>>,
    overflow_count: DFF<Bits<32>>,
    high: DFF<Bits<32>>,
    dropped_sum: [Signal<Local, Bits<32>>; L],
    lost_sum: [Signal<Local, Bits<32>>; L],
    filler_sum: [Signal<Local, Bits<32>>; L],
    overflow_sum: [Signal<Local, Bits<32>>; L],
    high_max: [Signal<Local, Bits<32>>; L],
    any_pop: [Signal<Local, Bit>; L],
}

impl<const L: usize> Default for Encoder<L> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            ev_valid: std::array::from_fn(|_| Default::default()),
            ev_kind: std::array::from_fn(|_| Default::default()),
            ev_write: std::array::from_fn(|_| Default::default()),
            ev_value: std::array::from_fn(|_| Default::default()),
            tick_in: Default::default(),
            tick_valid_in: Default::default(),
            depth: Default::default(),
            drain_num: Default::default(),
            drain_den: Default::default(),
            lane_count: std::array::from_fn(|_| Default::default()),
            lane_pos: std::array::from_fn(|_| Default::default()),
            word0: std::array::from_fn(|_| Default::default()),
            word1: std::array::from_fn(|_| Default::default()),
            word2: std::array::from_fn(|_| Default::default()),
            word3: std::array::from_fn(|_| Default::default()),
            word4: std::array::from_fn(|_| Default::default()),
            fill: std::array::from_fn(|_| Default::default()),
            pop: Default::default(),
            pop_ptr: Default::default(),
            pop_lane: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            events_dropped: Default::default(),
            lost_words: Default::default(),
            time_fillers: Default::default(),
            time_overflows: Default::default(),
            high_water: Default::default(),
            lane: std::array::from_fn(|j| EncoderLane::new(j as u64)),
            drain: std::array::from_fn(|_| Default::default()),
            lane_start: std::array::from_fn(|_| Default::default()),
            last: Default::default(),
            hi: Default::default(),
            lost: Default::default(),
            level: Default::default(),
            credit: Default::default(),
            write_ptr: Default::default(),
            read_ptr: Default::default(),
            out_count: std::array::from_fn(|_| Default::default()),
            out_pos: std::array::from_fn(|_| Default::default()),
            out_word0: std::array::from_fn(|_| Default::default()),
            out_word1: std::array::from_fn(|_| Default::default()),
            out_word2: std::array::from_fn(|_| Default::default()),
            out_word3: std::array::from_fn(|_| Default::default()),
            out_word4: std::array::from_fn(|_| Default::default()),
            out_fill: std::array::from_fn(|_| Default::default()),
            out_pop: Default::default(),
            out_pop_ptr: Default::default(),
            out_pop_lane: Default::default(),
            out_tick: Default::default(),
            out_tick_valid: Default::default(),
            dropped: Default::default(),
            lost_count: Default::default(),
            filler_count: Default::default(),
            overflow_count: Default::default(),
            high: Default::default(),
            dropped_sum: std::array::from_fn(|_| Default::default()),
            lost_sum: std::array::from_fn(|_| Default::default()),
            filler_sum: std::array::from_fn(|_| Default::default()),
            overflow_sum: std::array::from_fn(|_| Default::default()),
            high_max: std::array::from_fn(|_| Default::default()),
            any_pop: std::array::from_fn(|_| Default::default()),
        }
    }
}

impl<const L: usize> Logic for Encoder<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            last,
            hi,
            lost,
            level,
            credit,
            write_ptr,
            read_ptr,
            out_pop,
            out_pop_ptr,
            out_pop_lane,
            out_tick,
            out_tick_valid,
            dropped,
            lost_count,
            filler_count,
            overflow_count,
            high
        );
        // Lane chain: state flows lane 0 -> L-1 (ticks in order); each lane
        // pushes, then its drain step may pop.
        self.lane[0].last_in.next = self.last.q.val();
        self.lane[0].hi_in.next = self.hi.q.val();
        self.lane[0].lost_in.next = self.lost.q.val();
        self.lane[0].fill_in.next = self.level.q.val();
        self.drain[0].credit_in.next = self.credit.q.val();
        self.lane_start[0].next = self.write_ptr.q.val();
        self.dropped_sum[0].next = self.dropped.q.val() + self.lane[0].dropped.val();
        self.lost_sum[0].next = self.lost_count.q.val() + self.lane[0].lost_pushed.val();
        self.filler_sum[0].next = self.filler_count.q.val() + self.lane[0].filler_pushed.val();
        self.overflow_sum[0].next = self.overflow_count.q.val() + self.lane[0].overflow.val();
        self.high_max[0].next = self.high.q.val();
        if self.lane[0].fill_out.val() > self.high.q.val() {
            self.high_max[0].next = self.lane[0].fill_out.val();
        }
        self.any_pop[0].next = self.drain[0].pop.val();
        for j in 1..L {
            self.lane[j].last_in.next = self.lane[j - 1].last_out.val();
            self.lane[j].hi_in.next = self.lane[j - 1].hi_out.val();
            self.lane[j].lost_in.next = self.lane[j - 1].lost_out.val();
            self.lane[j].fill_in.next = self.drain[j - 1].fill_out.val();
            self.drain[j].credit_in.next = self.drain[j - 1].credit_out.val();
            self.lane_start[j].next = self.lane_start[j - 1].val() + self.lane[j - 1].count.val();
            self.dropped_sum[j].next = self.dropped_sum[j - 1].val() + self.lane[j].dropped.val();
            self.lost_sum[j].next = self.lost_sum[j - 1].val() + self.lane[j].lost_pushed.val();
            self.filler_sum[j].next =
                self.filler_sum[j - 1].val() + self.lane[j].filler_pushed.val();
            self.overflow_sum[j].next =
                self.overflow_sum[j - 1].val() + self.lane[j].overflow.val();
            self.high_max[j].next = self.high_max[j - 1].val();
            if self.lane[j].fill_out.val() > self.high_max[j - 1].val() {
                self.high_max[j].next = self.lane[j].fill_out.val();
            }
            self.any_pop[j].next = self.any_pop[j - 1].val() | self.drain[j].pop.val();
        }
        self.out_pop.d.next = false;
        self.out_pop_ptr.d.next = self.read_ptr.q.val();
        self.out_pop_lane.d.next = 0.into();
        self.out_tick.d.next = self.tick_in.val();
        self.out_tick_valid.d.next = self.tick_valid_in.val();
        for j in 0..L {
            self.lane[j].tick_base.next = self.tick_in.val();
            self.lane[j].ev_valid.next = self.ev_valid[j].val() & self.tick_valid_in.val();
            self.lane[j].ev_kind.next = self.ev_kind[j].val();
            self.lane[j].ev_write.next = self.ev_write[j].val();
            self.lane[j].ev_value.next = self.ev_value[j].val();
            self.lane[j].depth.next = self.depth.val();
            self.drain[j].fill_in.next = self.lane[j].fill_out.val();
            self.drain[j].num.next = self.drain_num.val();
            self.drain[j].den.next = self.drain_den.val();
            self.out_count[j].clock.next = self.clock.val();
            self.out_pos[j].clock.next = self.clock.val();
            self.out_word0[j].clock.next = self.clock.val();
            self.out_word1[j].clock.next = self.clock.val();
            self.out_word2[j].clock.next = self.clock.val();
            self.out_word3[j].clock.next = self.clock.val();
            self.out_word4[j].clock.next = self.clock.val();
            self.out_fill[j].clock.next = self.clock.val();
            self.out_count[j].d.next = 0.into();
            self.out_pos[j].d.next = self.lane_start[j].val();
            self.out_word0[j].d.next = self.lane[j].word0.val();
            self.out_word1[j].d.next = self.lane[j].word1.val();
            self.out_word2[j].d.next = self.lane[j].word2.val();
            self.out_word3[j].d.next = self.lane[j].word3.val();
            self.out_word4[j].d.next = self.lane[j].word4.val();
            self.out_fill[j].d.next = self.out_fill[j].q.val();
            if self.tick_valid_in.val() {
                self.out_count[j].d.next = self.lane[j].count.val();
                self.out_fill[j].d.next = self.drain[j].fill_out.val();
                // At most one pop per clock (num * L < den).
                if self.drain[j].pop.val() {
                    self.out_pop.d.next = true;
                    self.out_pop_lane.d.next = j.to_bits();
                }
                // The last lane's state is the state for the next clock.
                self.last.d.next = self.lane[j].last_out.val();
                self.hi.d.next = self.lane[j].hi_out.val();
                self.lost.d.next = self.lane[j].lost_out.val();
                self.level.d.next = self.drain[j].fill_out.val();
                self.credit.d.next = self.drain[j].credit_out.val();
                self.write_ptr.d.next = self.lane_start[j].val() + self.lane[j].count.val();
                self.read_ptr.d.next = self.read_ptr.q.val() + self.any_pop[j].val();
                self.dropped.d.next = self.dropped_sum[j].val();
                self.lost_count.d.next = self.lost_sum[j].val();
                self.filler_count.d.next = self.filler_sum[j].val();
                self.overflow_count.d.next = self.overflow_sum[j].val();
                self.high.d.next = self.high_max[j].val();
            }
            self.lane_count[j].next = self.out_count[j].q.val();
            self.lane_pos[j].next = self.out_pos[j].q.val();
            self.word0[j].next = self.out_word0[j].q.val();
            self.word1[j].next = self.out_word1[j].q.val();
            self.word2[j].next = self.out_word2[j].q.val();
            self.word3[j].next = self.out_word3[j].q.val();
            self.word4[j].next = self.out_word4[j].q.val();
            self.fill[j].next = self.out_fill[j].q.val();
        }
        self.pop.next = self.out_pop.q.val();
        self.pop_ptr.next = self.out_pop_ptr.q.val();
        self.pop_lane.next = self.out_pop_lane.q.val();
        self.tick.next = self.out_tick.q.val();
        self.tick_valid.next = self.out_tick_valid.q.val();
        self.events_dropped.next = self.dropped.q.val();
        self.lost_words.next = self.lost_count.q.val();
        self.time_fillers.next = self.filler_count.q.val();
        self.time_overflows.next = self.overflow_count.q.val();
        self.high_water.next = self.high.q.val();
    }
}

/// Combinational: one tick of the encoder (format.md 4.1 plus the keeper):
/// filler, pending LOST, then the tick's event, each pushed only if all its
/// words fit. Words come out packed in slots 0..count-1.
#[derive(LogicBlock)]
pub struct EncoderLane {
    /// Tick of lane 0; this lane's tick is `tick_base + lane`.
    pub tick_base: Signal<In, Bits<64>>,
    pub ev_valid: Signal<In, Bit>,
    pub ev_kind: Signal<In, Bits<2>>,
    pub ev_write: Signal<In, Bit>,
    pub ev_value: Signal<In, Bits<48>>,
    pub last_in: Signal<In, Bits<64>>,
    pub hi_in: Signal<In, Bits<21>>,
    pub lost_in: Signal<In, Bits<32>>,
    pub fill_in: Signal<In, Bits<32>>,
    pub depth: Signal<In, Bits<32>>,
    pub last_out: Signal<Out, Bits<64>>,
    pub hi_out: Signal<Out, Bits<21>>,
    pub lost_out: Signal<Out, Bits<32>>,
    /// Fill level after this tick's pushes.
    pub fill_out: Signal<Out, Bits<32>>,
    pub count: Signal<Out, Bits<32>>,
    pub word0: Signal<Out, Bits<32>>,
    pub word1: Signal<Out, Bits<32>>,
    pub word2: Signal<Out, Bits<32>>,
    pub word3: Signal<Out, Bits<32>>,
    pub word4: Signal<Out, Bits<32>>,
    pub dropped: Signal<Out, Bit>,
    pub lost_pushed: Signal<Out, Bit>,
    pub filler_pushed: Signal<Out, Bit>,
    pub overflow: Signal<Out, Bit>,
    tick: Signal<Local, Bits<64>>,
    keep: Signal<Local, Bit>,
    last_kept: Signal<Local, Bits<64>>,
    fill_kept: Signal<Local, Bits<32>>,
    gap: Signal<Local, Bits<64>>,
    need_time: Signal<Local, Bit>,
    too_long: Signal<Local, Bit>,
    room: Signal<Local, Bits<32>>,
    lost_size: Signal<Local, Bits<32>>,
    lost_ok: Signal<Local, Bit>,
    room_after_lost: Signal<Local, Bits<32>>,
    line_hi: Signal<Local, Bits<21>>,
    hi_change: Signal<Local, Bit>,
    event_size: Signal<Local, Bits<32>>,
    event_ok: Signal<Local, Bit>,
    time_used: Signal<Local, Bit>,
    hi_used: Signal<Local, Bit>,
    dt: Signal<Local, Bits<32>>,
    dt_after_hi: Signal<Local, Bits<32>>,
    lost_payload: Signal<Local, Bits<32>>,
    lost_left: Signal<Local, Bits<32>>,
    time_word: Signal<Local, Bits<32>>,
    lost_word: Signal<Local, Bits<32>>,
    hi_word: Signal<Local, Bits<32>>,
    event_word: Signal<Local, Bits<32>>,
    at_time: Signal<Local, Bits<32>>,
    at_lost: Signal<Local, Bits<32>>,
    at_hi: Signal<Local, Bits<32>>,
    at_event: Signal<Local, Bits<32>>,
    lane: Constant<Bits<64>>,
    payload_max: Constant<Bits<64>>,
    keeper_gap: Constant<Bits<64>>,
    filler_word: Constant<Bits<32>>,
}

impl EncoderLane {
    pub fn new(lane: u64) -> Self {
        Self {
            tick_base: Default::default(),
            ev_valid: Default::default(),
            ev_kind: Default::default(),
            ev_write: Default::default(),
            ev_value: Default::default(),
            last_in: Default::default(),
            hi_in: Default::default(),
            lost_in: Default::default(),
            fill_in: Default::default(),
            depth: Default::default(),
            last_out: Default::default(),
            hi_out: Default::default(),
            lost_out: Default::default(),
            fill_out: Default::default(),
            count: Default::default(),
            word0: Default::default(),
            word1: Default::default(),
            word2: Default::default(),
            word3: Default::default(),
            word4: Default::default(),
            dropped: Default::default(),
            lost_pushed: Default::default(),
            filler_pushed: Default::default(),
            overflow: Default::default(),
            tick: Default::default(),
            keep: Default::default(),
            last_kept: Default::default(),
            fill_kept: Default::default(),
            gap: Default::default(),
            need_time: Default::default(),
            too_long: Default::default(),
            room: Default::default(),
            lost_size: Default::default(),
            lost_ok: Default::default(),
            room_after_lost: Default::default(),
            line_hi: Default::default(),
            hi_change: Default::default(),
            event_size: Default::default(),
            event_ok: Default::default(),
            time_used: Default::default(),
            hi_used: Default::default(),
            dt: Default::default(),
            dt_after_hi: Default::default(),
            lost_payload: Default::default(),
            lost_left: Default::default(),
            time_word: Default::default(),
            lost_word: Default::default(),
            hi_word: Default::default(),
            event_word: Default::default(),
            at_time: Default::default(),
            at_lost: Default::default(),
            at_hi: Default::default(),
            at_event: Default::default(),
            lane: Constant::new(lane.to_bits()),
            payload_max: Constant::new(PAYLOAD_MAX.to_bits()),
            keeper_gap: Constant::new(KEEPER_GAP.to_bits()),
            // TIME, dt 0, payload 2^21-1.
            filler_word: Constant::new(((1u64 << 25) | PAYLOAD_MAX).to_bits()),
        }
    }
}

impl Logic for EncoderLane {
    #[hdl_gen]
    fn update(&mut self) {
        self.tick.next = self.tick_base.val() + self.lane.val();
        // Keeper: a filler TIME word once the gap reaches 64 * (2^21-1).
        self.keep.next = ((self.tick.val() - self.last_in.val()) >= self.keeper_gap.val())
            & (self.fill_in.val() < self.depth.val());
        self.last_kept.next = self.last_in.val();
        self.fill_kept.next = self.fill_in.val();
        if self.keep.val() {
            self.last_kept.next = self.last_in.val() + self.keeper_gap.val();
            self.fill_kept.next = self.fill_in.val() + 1;
        }
        self.gap.next = self.tick.val() - self.last_kept.val();
        self.need_time.next = self.gap.val() >= 64;
        self.too_long.next = (self.gap.val() >> 6) > self.payload_max.val();
        self.room.next = self.depth.val() - self.fill_kept.val();
        self.dt.next = bit_cast::<32, 64>(self.gap.val() & 63);
        // Pending LOST: [TIME] LOST, atomically.
        self.lost_size.next = bit_cast::<32, 1>(self.need_time.val().into()) + 1;
        // Only before an event (format.md 4.1).
        self.lost_ok.next = self.ev_valid.val()
            & (self.lost_in.val() != 0)
            & !self.too_long.val()
            & (self.lost_size.val() <= self.room.val());
        self.room_after_lost.next = self.room.val();
        if self.lost_ok.val() {
            self.room_after_lost.next = self.room.val() - self.lost_size.val();
        }
        self.lost_payload.next = self.lost_in.val();
        if self.lost_in.val() > 0x1FFFFF {
            self.lost_payload.next = 0x1FFFFF.into();
        }
        // The event: [TIME] [LINE_HI] word; after a LOST the gap is 0.
        self.line_hi.next = bit_cast::<21, 48>(self.ev_value.val() >> 24);
        self.hi_change.next = (self.ev_kind.val() == 0) & (self.line_hi.val() != self.hi_in.val());
        self.event_size.next = bit_cast::<32, 1>(self.hi_change.val().into())
            + bit_cast::<32, 1>((self.need_time.val() & !self.lost_ok.val()).into())
            + 1;
        self.event_ok.next = self.ev_valid.val()
            & !self.too_long.val()
            & (self.event_size.val() <= self.room_after_lost.val());
        self.time_used.next = self.need_time.val() & (self.lost_ok.val() | self.event_ok.val());
        self.hi_used.next = self.event_ok.val() & self.hi_change.val();
        self.dt_after_hi.next = self.dt.val();
        if self.lost_ok.val() | self.hi_used.val() {
            self.dt_after_hi.next = 0.into();
        }
        // Slots: [filler] [TIME] [LOST] [LINE_HI] [word].
        self.at_time.next = bit_cast::<32, 1>(self.keep.val().into());
        self.at_lost.next = self.at_time.val() + bit_cast::<32, 1>(self.time_used.val().into());
        self.at_hi.next = self.at_lost.val() + bit_cast::<32, 1>(self.lost_ok.val().into());
        self.at_event.next = self.at_hi.val() + bit_cast::<32, 1>(self.hi_used.val().into());
        self.count.next = self.at_event.val() + bit_cast::<32, 1>(self.event_ok.val().into());
        // TIME (op 0), dt 0.
        self.time_word.next = 0x0200_0000 | bit_cast::<32, 64>(self.gap.val() >> 6);
        // LOST (op 4).
        self.lost_word.next = (self.dt.val() << 26) | 0x0280_0000 | self.lost_payload.val();
        // LINE_HI (op 1).
        self.hi_word.next =
            (self.dt.val() << 26) | 0x0220_0000 | bit_cast::<32, 21>(self.line_hi.val());
        if self.lost_ok.val() {
            self.hi_word.next = 0x0220_0000 | bit_cast::<32, 21>(self.line_hi.val());
        }
        // ACCESS: W at bit 24, line_lo; TAG (op 2): W at bit 20, index;
        // CMD (op 3): index.
        self.event_word.next = (self.dt_after_hi.val() << 26)
            | (bit_cast::<32, 1>(self.ev_write.val().into()) << 24)
            | bit_cast::<32, 48>(self.ev_value.val() & 0xFF_FFFF);
        if self.ev_kind.val() == 1 {
            self.event_word.next = (self.dt_after_hi.val() << 26)
                | 0x0240_0000
                | (bit_cast::<32, 1>(self.ev_write.val().into()) << 20)
                | bit_cast::<32, 48>(self.ev_value.val() & 0xF_FFFF);
        }
        if self.ev_kind.val() == 2 {
            self.event_word.next = (self.dt_after_hi.val() << 26)
                | 0x0260_0000
                | bit_cast::<32, 48>(self.ev_value.val() & 0x1F_FFFF);
        }
        self.word0.next = 0.into();
        self.word1.next = 0.into();
        self.word2.next = 0.into();
        self.word3.next = 0.into();
        self.word4.next = 0.into();
        if self.keep.val() {
            self.word0.next = self.filler_word.val();
        }
        if self.time_used.val() {
            if self.at_time.val() == 0 {
                self.word0.next = self.time_word.val();
            } else {
                self.word1.next = self.time_word.val();
            }
        }
        if self.lost_ok.val() {
            if self.at_lost.val() == 0 {
                self.word0.next = self.lost_word.val();
            }
            if self.at_lost.val() == 1 {
                self.word1.next = self.lost_word.val();
            }
            if self.at_lost.val() == 2 {
                self.word2.next = self.lost_word.val();
            }
        }
        if self.hi_used.val() {
            if self.at_hi.val() == 0 {
                self.word0.next = self.hi_word.val();
            }
            if self.at_hi.val() == 1 {
                self.word1.next = self.hi_word.val();
            }
            if self.at_hi.val() == 2 {
                self.word2.next = self.hi_word.val();
            }
            if self.at_hi.val() == 3 {
                self.word3.next = self.hi_word.val();
            }
        }
        if self.event_ok.val() {
            if self.at_event.val() == 0 {
                self.word0.next = self.event_word.val();
            }
            if self.at_event.val() == 1 {
                self.word1.next = self.event_word.val();
            }
            if self.at_event.val() == 2 {
                self.word2.next = self.event_word.val();
            }
            if self.at_event.val() == 3 {
                self.word3.next = self.event_word.val();
            }
            if self.at_event.val() == 4 {
                self.word4.next = self.event_word.val();
            }
        }
        self.fill_out.next = self.fill_in.val() + self.count.val();
        self.last_out.next = self.last_kept.val();
        if self.lost_ok.val() | self.event_ok.val() {
            self.last_out.next = self.tick.val();
        }
        self.hi_out.next = self.hi_in.val();
        if self.hi_used.val() {
            self.hi_out.next = self.line_hi.val();
        }
        self.lost_left.next = self.lost_in.val();
        if self.lost_ok.val() {
            self.lost_left.next = self.lost_in.val() - self.lost_payload.val();
        }
        self.lost_out.next = self.lost_left.val();
        self.dropped.next = self.ev_valid.val() & !self.event_ok.val();
        if self.ev_valid.val() & !self.event_ok.val() & !self.lost_left.val().all() {
            self.lost_out.next = self.lost_left.val() + 1;
        }
        self.lost_pushed.next = self.lost_ok.val();
        self.filler_pushed.next = self.keep.val();
        self.overflow.next = self.ev_valid.val() & self.too_long.val();
    }
}
