//! The packetizer (format.md 5.2, board.md 2.2 steps 3 and 4): cuts the
//! stream of popped record words into packets and deals them to the ports
//! round-robin.
//!
//! It runs in the fabric clock domain, once per clock, after the capture
//! chain's drain: per clock it takes at most one popped word (popped at the
//! clock's tick `k L`), the clock's tick and the board mode after the
//! clock's events (the header flags of a packet closed in the clock). It
//! does not touch the header bytes: the words of the open packet go
//! straight into the data buffer of the port the packet will be dealt to
//! (the packet that closes next always gets the next `seq`, so its port is
//! known when it opens), and at close a short descriptor (t0, nwords,
//! flags, injected LINE_HI) goes to that port's descriptor buffer (a clock
//! later, from registers: `desc_*_late`). The
//! framer ([`crate::framer`]) builds the header from the descriptor, puts
//! the injected LINE_HI word first, and counts `seq` per port (`seq = k *
//! ports + port` for the port's k-th packet). A clock closes at most one
//! packet: the idle flush happens only in a clock without a pop.
//!
//! Descriptor layout ([`Descriptor`]): bits 0..64 t0, 64..80 nwords
//! (including the injected word), 80..88 header flags, 88..109 the injected
//! LINE_HI value (0: none).

use rust_hdl::prelude::*;

/// Width of a packed packet descriptor.
pub const DESC_BITS: usize = 109;

/// A closed packet's header fields as the packetizer hands them to a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub t0: u64,
    pub nwords: u16,
    pub flags: u8,
    pub line_hi: u32,
}

impl Descriptor {
    pub fn pack(&self) -> Bits<DESC_BITS> {
        let mut b: Bits<DESC_BITS> = Bits::default();
        b.set_bits::<64>(0, self.t0.to_bits());
        b.set_bits::<16>(64, (self.nwords as u64).to_bits());
        b.set_bits::<8>(80, (self.flags as u64).to_bits());
        b.set_bits::<21>(88, (self.line_hi as u64).to_bits());
        b
    }

    pub fn unpack(b: Bits<DESC_BITS>) -> Descriptor {
        let t0: u64 = b.get_bits::<64>(0).into();
        let nwords: u64 = b.get_bits::<16>(64).into();
        let flags: u64 = b.get_bits::<8>(80).into();
        let line_hi: u64 = b.get_bits::<21>(88).into();
        Descriptor {
            t0,
            nwords: nwords as u16,
            flags: flags as u8,
            line_hi: line_hi as u32,
        }
    }
}

/// Build-time parameters of the packetizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketizerConfig {
    /// Words per packet at most (including the injected LINE_HI); >= 2.
    pub max_words: u16,
    /// Idle ticks after the last pop that close a non-empty packet; >= 1.
    pub idle_flush_ticks: u64,
    /// Number of Ethernet ports (1..=4).
    pub ports: u8,
}

impl Default for PacketizerConfig {
    fn default() -> Self {
        PacketizerConfig {
            max_words: 360,
            idle_flush_ticks: 65536,
            ports: 3,
        }
    }
}

/// Packet assembly; see the module documentation.
#[derive(LogicBlock)]
pub struct Packetizer<const L: usize> {
    pub clock: Signal<In, Clock>,
    // From the capture chain's drain, once per fabric clock.
    pub pop_valid: Signal<In, Bit>,
    pub pop_word: Signal<In, Bits<32>>,
    /// The clock's tick `k L`.
    pub tick: Signal<In, Bits<64>>,
    pub tick_valid: Signal<In, Bit>,
    /// Board mode after the clock's events.
    pub tracing: Signal<In, Bit>,
    pub tags_only: Signal<In, Bit>,
    // To the port buffers.
    pub word_write: Signal<Out, Bit>,
    pub word_data: Signal<Out, Bits<32>>,
    pub word_port: Signal<Out, Bits<2>>,
    pub desc_write: Signal<Out, Bit>,
    pub desc_data: Signal<Out, Bits<DESC_BITS>>,
    pub desc_port: Signal<Out, Bits<2>>,
    /// The same descriptor write a clock later, for the port buffers: the
    /// close decision (a compare on the popped word) then ends at a
    /// register, not in a buffer's write logic, and the descriptor comes
    /// from registers (after a close `t0`, `count` and `pkt_hi` hold the
    /// closed packet's fields until the next pop). A packet's words reach
    /// its port before its descriptor, as the framer needs.
    pub desc_write_late: Signal<Out, Bit>,
    pub desc_data_late: Signal<Out, Bits<DESC_BITS>>,
    pub desc_port_late: Signal<Out, Bits<2>>,
    closed: DFF<Bit>,
    closed_port: DFF<Bits<2>>,
    closed_flags: DFF<Bits<8>>,
    // Parameters.
    /// `max_words - 1`, and `max_words == 2`: the close test on the
    /// count before the word (a register), not on the count after it.
    max_words_m1: Constant<Bits<16>>,
    max_words_is_2: Constant<Bit>,
    count_full: Signal<Local, Bit>,
    fresh_full: Signal<Local, Bit>,
    words_full: Signal<Local, Bit>,
    /// `idle_flush_ticks - L`: ticks left to the deadline at the clock
    /// after a pop, and whether that is already <= 0.
    rem_after_pop: Constant<Bits<33>>,
    due_after_pop: Constant<Bit>,
    lanes: Constant<Bits<33>>,
    last_port: Constant<Bits<2>>,
    // Stream state.
    /// The running time in halves; the high half takes `run_hi_inc`
    /// (kept at `run_hi + 1`) when the low half carries, so no 64-bit carry
    /// chain runs between registers. The carry is registered
    /// (`run_carry`) and taken by the high half a clock later, with the
    /// running time reading `run_hi_inc` meanwhile: the popped word's add
    /// then drives one flip-flop, not the high half's 64 enables. (A step
    /// is below `2^27`, so the next carry is never in the next clock; the
    /// update holds even if it were.)
    run_lo: DFF<Bits<32>>,
    run_hi: DFF<Bits<32>>,
    run_hi_inc: DFFWithInit<Bits<32>>,
    run_carry: DFF<Bit>,
    run_hi_now: Signal<Local, Bits<32>>,
    stream_hi: DFF<Bits<21>>,
    /// The flush deadline (last pop tick + `idle_flush_ticks`) as ticks
    /// left from this clock's tick, counted down by `L` a clock, so the
    /// flush decision is a flag: `due` once the deadline is reached
    /// (sticky until the next pop). This relies on the tick advancing by
    /// exactly `L` each clock (the capture chain's counter is free-running).
    rem: DFF<Bits<33>>,
    due: DFF<Bit>,
    // The open packet.
    open: DFF<Bit>,
    count: DFF<Bits<16>>,
    t0: DFF<Bits<64>>,
    pkt_hi: DFF<Bits<21>>,
    port: DFF<Bits<2>>,
    // Combinational intermediates.
    flush: Signal<Local, Bit>,
    flags: Signal<Local, Bits<8>>,
    port_next: Signal<Local, Bits<2>>,
    word_step: Signal<Local, Bits<32>>,
    run_lo_sum: Signal<Local, Bits<33>>,
    run_time: Signal<Local, Bits<64>>,
    word_is_control: Signal<Local, Bit>,
    word_op: Signal<Local, Bits<4>>,
    word_payload: Signal<Local, Bits<21>>,
    new_count: Signal<Local, Bits<16>>,
    new_t0: Signal<Local, Bits<64>>,
    new_hi: Signal<Local, Bits<21>>,
    pop_close: Signal<Local, Bit>,
}

impl<const L: usize> Packetizer<L> {
    pub fn new(config: PacketizerConfig) -> Self {
        assert!(
            config.max_words >= 2,
            "max_words must leave room for the injected LINE_HI"
        );
        assert!(matches!(L, 1 | 2 | 4 | 8), "L must be 1, 2, 4 or 8");
        assert!((1..=4).contains(&config.ports), "1 to 4 ports");
        assert!(config.idle_flush_ticks >= 1);
        assert!(
            config.idle_flush_ticks <= 1 << 32,
            "idle_flush_ticks must fit the 32-bit deadline countdown"
        );
        let rem_after_pop = config.idle_flush_ticks as i64 - L as i64;
        Self {
            clock: Default::default(),
            pop_valid: Default::default(),
            pop_word: Default::default(),
            tick: Default::default(),
            tick_valid: Default::default(),
            tracing: Default::default(),
            tags_only: Default::default(),
            word_write: Default::default(),
            word_data: Default::default(),
            word_port: Default::default(),
            desc_write: Default::default(),
            desc_data: Default::default(),
            desc_port: Default::default(),
            desc_write_late: Default::default(),
            desc_data_late: Default::default(),
            desc_port_late: Default::default(),
            closed: Default::default(),
            closed_port: Default::default(),
            closed_flags: Default::default(),
            max_words_m1: Constant::new((config.max_words as u64 - 1).to_bits()),
            max_words_is_2: Constant::new(config.max_words == 2),
            count_full: Default::default(),
            fresh_full: Default::default(),
            words_full: Default::default(),
            rem_after_pop: Constant::new((rem_after_pop.max(0) as u64).to_bits()),
            due_after_pop: Constant::new(rem_after_pop <= 0),
            lanes: Constant::new((L as u64).to_bits()),
            last_port: Constant::new(((config.ports - 1) as u64).to_bits()),
            run_lo: Default::default(),
            run_hi: Default::default(),
            run_hi_inc: DFFWithInit::new(1u64.to_bits()),
            run_carry: Default::default(),
            run_hi_now: Default::default(),
            stream_hi: Default::default(),
            rem: Default::default(),
            due: Default::default(),
            open: Default::default(),
            count: Default::default(),
            t0: Default::default(),
            pkt_hi: Default::default(),
            port: Default::default(),
            flush: Default::default(),
            flags: Default::default(),
            port_next: Default::default(),
            word_step: Default::default(),
            run_lo_sum: Default::default(),
            run_time: Default::default(),
            word_is_control: Default::default(),
            word_op: Default::default(),
            word_payload: Default::default(),
            new_count: Default::default(),
            new_t0: Default::default(),
            new_hi: Default::default(),
            pop_close: Default::default(),
        }
    }
}

impl<const L: usize> Logic for Packetizer<L> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            run_lo,
            run_hi,
            run_hi_inc,
            run_carry,
            stream_hi,
            rem,
            due,
            open,
            count,
            t0,
            pkt_hi,
            port,
            closed,
            closed_port,
            closed_flags
        );
        // Idle flush (step 4): an open packet closes in a clock without a
        // pop whose tick is at least the last pop's plus idle_flush_ticks.
        self.flush.next =
            self.tick_valid.val() & self.open.q.val() & self.due.q.val() & !self.pop_valid.val();
        self.flags.next = 0.into();
        if self.tracing.val() {
            self.flags.next = 1.into();
            if self.tags_only.val() {
                self.flags.next = 3.into();
            }
        } else if self.tags_only.val() {
            self.flags.next = 2.into();
        }
        // The popped word: decode what the running time and LINE_HI need.
        // dt, plus payload * 64 for TIME: the two do not overlap.
        self.word_step.next = bit_cast::<32, 6>(self.pop_word.val().get_bits::<6>(26));
        self.word_is_control.next = self.pop_word.val().get_bit(25);
        self.word_op.next = self.pop_word.val().get_bits::<4>(21);
        self.word_payload.next = self.pop_word.val().get_bits::<21>(0);
        if self.word_is_control.val() & (self.word_op.val() == 0) {
            self.word_step.next =
                self.word_step.val() | (bit_cast::<32, 21>(self.word_payload.val()) << 6);
        }
        self.run_lo_sum.next =
            bit_cast::<33, 32>(self.run_lo.q.val()) + bit_cast::<33, 32>(self.word_step.val());
        self.run_hi_now.next = self.run_hi.q.val();
        if self.run_carry.q.val() {
            self.run_hi_now.next = self.run_hi_inc.q.val();
        }
        self.run_time.next = (bit_cast::<64, 32>(self.run_hi_now.val()) << 32)
            | bit_cast::<64, 32>(self.run_lo.q.val());
        // A packet opened by this word starts at the running time before it,
        // with an injected LINE_HI word when the stream's LINE_HI is not 0.
        if self.open.q.val() {
            self.new_count.next = self.count.q.val() + 1;
            self.new_t0.next = self.t0.q.val();
            self.new_hi.next = self.pkt_hi.q.val();
        } else {
            self.new_count.next = 1.into();
            if self.stream_hi.q.val().any() {
                self.new_count.next = 2.into();
            }
            self.new_t0.next = self.run_time.val();
            self.new_hi.next = self.stream_hi.q.val();
        }
        // new_count == max_words, from the count register: an open packet
        // holds count + 1 words, a new one 1 or 2.
        self.count_full.next = self.count.q.val() == self.max_words_m1.val();
        self.fresh_full.next = self.max_words_is_2.val() & self.stream_hi.q.val().any();
        self.words_full.next = self.fresh_full.val();
        if self.open.q.val() {
            self.words_full.next = self.count_full.val();
        }
        self.pop_close.next = self.pop_valid.val()
            & (self.words_full.val()
                | (self.word_is_control.val()
                    & (self.word_op.val() == 3)
                    & (self.word_payload.val() == 5)));
        self.port_next.next = self.port.q.val() + 1;
        if self.port.q.val() == self.last_port.val() {
            self.port_next.next = 0.into();
        }
        // Words go to the data buffer of the open packet's port.
        self.word_write.next = self.pop_valid.val();
        self.word_data.next = self.pop_word.val();
        self.word_port.next = self.port.q.val();
        // The deadline: counted down by L a clock; due once it is <= 0.
        if !self.due.q.val() {
            self.rem.d.next = self.rem.q.val() - self.lanes.val();
            self.due.d.next = self.rem.q.val() <= self.lanes.val();
        }
        if self.run_carry.q.val() {
            self.run_hi.d.next = self.run_hi_inc.q.val();
            self.run_hi_inc.d.next = self.run_hi_inc.q.val() + 1;
        }
        self.run_carry.d.next = false;
        if self.pop_valid.val() {
            self.run_lo.d.next = self.run_lo_sum.val().get_bits::<32>(0);
            self.run_carry.d.next = self.run_lo_sum.val().get_bit(32);
            if self.word_is_control.val() & (self.word_op.val() == 1) {
                self.stream_hi.d.next = self.word_payload.val();
            }
            // The deadline moves to this clock's tick + idle_flush_ticks.
            self.rem.d.next = self.rem_after_pop.val();
            self.due.d.next = self.due_after_pop.val();
            self.open.d.next = !self.pop_close.val();
            self.count.d.next = self.new_count.val();
            self.t0.d.next = self.new_t0.val();
            self.pkt_hi.d.next = self.new_hi.val();
        }
        if self.flush.val() {
            self.open.d.next = false;
        }
        // Descriptors: at most one per clock (a flush needs a clock
        // without a pop).
        self.desc_write.next = self.flush.val() | self.pop_close.val();
        self.desc_port.next = self.port.q.val();
        self.desc_data.next = bit_cast::<DESC_BITS, 64>(self.new_t0.val())
            | (bit_cast::<DESC_BITS, 16>(self.new_count.val()) << 64)
            | (bit_cast::<DESC_BITS, 8>(self.flags.val()) << 80)
            | (bit_cast::<DESC_BITS, 21>(self.new_hi.val()) << 88);
        if self.flush.val() {
            self.desc_data.next = bit_cast::<DESC_BITS, 64>(self.t0.q.val())
                | (bit_cast::<DESC_BITS, 16>(self.count.q.val()) << 64)
                | (bit_cast::<DESC_BITS, 8>(self.flags.val()) << 80)
                | (bit_cast::<DESC_BITS, 21>(self.pkt_hi.q.val()) << 88);
        }
        if self.flush.val() | self.pop_close.val() {
            self.port.d.next = self.port_next.val();
        }
        self.closed.d.next = self.flush.val() | self.pop_close.val();
        self.closed_port.d.next = self.port.q.val();
        self.closed_flags.d.next = self.flags.val();
        self.desc_write_late.next = self.closed.q.val();
        self.desc_port_late.next = self.closed_port.q.val();
        self.desc_data_late.next = bit_cast::<DESC_BITS, 64>(self.t0.q.val())
            | (bit_cast::<DESC_BITS, 16>(self.count.q.val()) << 64)
            | (bit_cast::<DESC_BITS, 8>(self.closed_flags.q.val()) << 80)
            | (bit_cast::<DESC_BITS, 21>(self.pkt_hi.q.val()) << 88);
    }
}
