//! The ECP5 board's 2:1 widening stage: the IDDRX2F deserializers deliver
//! 4 command ticks per 200 MHz clock (`sample_clk`, CLKDIVF of the edge
//! clock); the core takes 8 per 100 MHz clock (`fabric_clk`, a second
//! output of the same PLL). Registers only, so the fast side has no logic
//! to speak of.
//!
//! The two clocks come from one VCO, so their frequencies are locked, but
//! their phase is not known: the 200 MHz clock goes through the edge clock
//! tree and the divider, the 100 MHz one through the primary clock tree,
//! and the divider starts on either edge. nextpnr-ecp5 treats the two
//! outputs as unrelated clocks (no common driver), so it times neither
//! setup nor hold between them; it only reports each crossing's longest
//! path ("Max delay"). The transfer is therefore made safe for any phase:
//!
//! - The fast side stages the first 4 ticks of a word, then writes all 8
//!   into one of 4 slots (a ring), one slot per 10 ns: each slot holds its
//!   word for 40 ns.
//! - The fast side starts when the PLL has locked and then raises
//!   `running`, 10 ns before it writes slot 0 (it writes a clock after
//!   `running_late`, whose copies per pin start the pins' counters). The
//!   slow side synchronizes `running_late` through two flip-flops and,
//!   from the clock on which the second one is high, reads one slot per
//!   clock, in the same order. Slot 0 is thus read 10 to 20 ns after it
//!   was written (20 to 30 ns if the first flip-flop missed the change),
//!   and since both sides then step by exactly 10 ns, every slot is read
//!   10 to 30 ns after its write and 10 to 30 ns before it is overwritten.
//!
//! The command pins sit on two banks along the whole left edge, so a
//! signal shared by all pins spans it. Each pin therefore has its own
//! copy of the ring's counters (bit `p` of the `pin_*` vectors) and of the
//! slots' write enables, next to its own deserializer and slot bits; the
//! only net that spans the pins is `running` into the per-pin copies,
//! flop to flop, once.
//!
//! A path from a slot to the slow side's output register therefore has 10
//! ns, less the skew between the two clock trees, whatever the phase; the
//! firmware report checks nextpnr's figure for it against
//! [`TRANSFER_BUDGET_NS`]. Until the slow side reads, it presents idle
//! ticks (no rank selected).

use crate::primitives::CA_BITS;
use hmtt_hdl::kept::KeptBits;
use rust_hdl::prelude::*;

/// Ticks per fast (sampling) clock.
pub const FAST_LANES: usize = 4;
/// Ticks per slow (core) clock.
pub const SLOW_LANES: usize = 2 * FAST_LANES;
const _: () = assert!(
    FAST_LANES == 4,
    "LaneWidener::update indexes the second half with 4"
);
/// Slots of the ring.
pub const SLOTS: usize = 4;
/// The most a slot-to-output path may take: the 10 ns every slot is held
/// around the slow clock's read, less 2 ns allowed for the skew between
/// the edge-clock/divider tree and the primary clock tree, which nextpnr
/// does not report for unrelated clocks.
pub const TRANSFER_BUDGET_NS: f64 = 8.0;

/// An idle tick in the packed lane layout (`primitives::CA_LAYOUT`): CKE
/// high, both chip selects high (no rank selected), RAS#/CAS#/WE# high.
pub const IDLE_LANE: u64 = 0b11_1111;

/// The 2:1 widening ring; see the module documentation.
#[derive(LogicBlock)]
pub struct LaneWidener {
    /// 200 MHz: the deserializers' SCLK.
    pub fast_clock: Signal<In, Clock>,
    /// 100 MHz: the core's clock.
    pub slow_clock: Signal<In, Clock>,
    /// The PLL has locked (asynchronous; synchronized here).
    pub locked: Signal<In, Bit>,
    /// Fast domain: the ticks of one fast clock, lane 0 the earliest.
    pub fast_lanes: [Signal<In, Bits<CA_BITS>>; FAST_LANES],
    /// Slow domain: the ticks of one slow clock, lane 0 the earliest.
    pub slow_lanes: [Signal<Out, Bits<CA_BITS>>; SLOW_LANES],
    locked_meta: DFF<Bit>,
    locked_sync: DFF<Bit>,
    running: DFF<Bit>,
    /// `running` a clock later, in step with the per-pin copies.
    running_late: DFF<Bit>,
    /// Per pin (bit `p`): `running`, then this fast clock brings the second
    /// half of a word (and writes a slot), the slot it writes.
    pin_running: KeptBits<CA_BITS>,
    pin_second_half: KeptBits<CA_BITS>,
    pin_slot_low: KeptBits<CA_BITS>,
    pin_slot_high: KeptBits<CA_BITS>,
    /// The last fast clock's ticks (the first half when a slot is written).
    stage: [DFF<Bits<CA_BITS>>; FAST_LANES],
    /// Slot `k` is written at the end of this clock, per pin (bit `p`).
    write0: KeptBits<CA_BITS>,
    write1: KeptBits<CA_BITS>,
    write2: KeptBits<CA_BITS>,
    write3: KeptBits<CA_BITS>,
    // The ring's slots, one word of SLOW_LANES ticks each.
    slot0: [DFF<Bits<CA_BITS>>; SLOW_LANES],
    slot1: [DFF<Bits<CA_BITS>>; SLOW_LANES],
    slot2: [DFF<Bits<CA_BITS>>; SLOW_LANES],
    slot3: [DFF<Bits<CA_BITS>>; SLOW_LANES],
    all_pins: Constant<Bits<CA_BITS>>,
    no_pins: Constant<Bits<CA_BITS>>,
    /// Per pin: this fast clock brings the first half of a word.
    pin_first: Signal<Local, Bits<CA_BITS>>,
    word: [Signal<Local, Bits<CA_BITS>>; SLOW_LANES],
    running_meta: DFF<Bit>,
    running_sync: DFF<Bit>,
    read_slot: DFF<Bits<2>>,
    out: [DFF<Bits<CA_BITS>>; SLOW_LANES],
    idle_lane: Constant<Bits<CA_BITS>>,
}

impl Default for LaneWidener {
    fn default() -> Self {
        Self {
            fast_clock: Default::default(),
            slow_clock: Default::default(),
            locked: Default::default(),
            fast_lanes: Default::default(),
            slow_lanes: Default::default(),
            locked_meta: Default::default(),
            locked_sync: Default::default(),
            running: Default::default(),
            running_late: Default::default(),
            pin_running: Default::default(),
            pin_second_half: Default::default(),
            pin_slot_low: Default::default(),
            pin_slot_high: Default::default(),
            stage: Default::default(),
            write0: Default::default(),
            write1: Default::default(),
            write2: Default::default(),
            write3: Default::default(),
            slot0: Default::default(),
            slot1: Default::default(),
            slot2: Default::default(),
            slot3: Default::default(),
            all_pins: Constant::new(((1u64 << CA_BITS) - 1).to_bits()),
            no_pins: Constant::new(0u64.to_bits()),
            pin_first: Default::default(),
            word: Default::default(),
            running_meta: Default::default(),
            running_sync: Default::default(),
            read_slot: Default::default(),
            out: Default::default(),
            idle_lane: Constant::new(IDLE_LANE.to_bits()),
        }
    }
}

impl Logic for LaneWidener {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            fast_clock,
            locked_meta,
            locked_sync,
            running,
            running_late
        );
        dff_setup!(self, slow_clock, running_meta, running_sync, read_slot);
        self.pin_running.clock.next = self.fast_clock.val();
        self.pin_second_half.clock.next = self.fast_clock.val();
        self.pin_slot_low.clock.next = self.fast_clock.val();
        self.pin_slot_high.clock.next = self.fast_clock.val();
        self.write0.clock.next = self.fast_clock.val();
        self.write1.clock.next = self.fast_clock.val();
        self.write2.clock.next = self.fast_clock.val();
        self.write3.clock.next = self.fast_clock.val();
        for j in 0..FAST_LANES {
            self.stage[j].clock.next = self.fast_clock.val();
            self.stage[j].d.next = self.fast_lanes[j].val();
        }
        for j in 0..SLOW_LANES {
            self.slot0[j].clock.next = self.fast_clock.val();
            self.slot1[j].clock.next = self.fast_clock.val();
            self.slot2[j].clock.next = self.fast_clock.val();
            self.slot3[j].clock.next = self.fast_clock.val();
            self.out[j].clock.next = self.slow_clock.val();
            self.out[j].d.next = self.idle_lane.val();
        }
        // Fast side: the lock synchronized, `running` set once.
        self.locked_meta.d.next = self.locked.val();
        self.locked_sync.d.next = self.locked_meta.q.val();
        self.running.d.next = self.running.q.val() | self.locked_sync.q.val();
        self.running_late.d.next = self.running.q.val();
        // Per pin: the same counters, bitwise, started a clock after
        // `running`. A slot is written on the clock after a first half.
        self.pin_running.d.next = self.no_pins.val();
        if self.running.q.val() {
            self.pin_running.d.next = self.all_pins.val();
        }
        self.pin_second_half.d.next = self.pin_second_half.q.val() ^ self.pin_running.q.val();
        self.pin_slot_low.d.next =
            self.pin_slot_low.q.val() ^ (self.pin_running.q.val() & self.pin_second_half.q.val());
        self.pin_slot_high.d.next = self.pin_slot_high.q.val()
            ^ (self.pin_running.q.val() & self.pin_second_half.q.val() & self.pin_slot_low.q.val());
        self.pin_first.next = self.pin_running.q.val() & !self.pin_second_half.q.val();
        self.write0.d.next =
            self.pin_first.val() & !self.pin_slot_high.q.val() & !self.pin_slot_low.q.val();
        self.write1.d.next =
            self.pin_first.val() & !self.pin_slot_high.q.val() & self.pin_slot_low.q.val();
        self.write2.d.next =
            self.pin_first.val() & self.pin_slot_high.q.val() & !self.pin_slot_low.q.val();
        self.write3.d.next =
            self.pin_first.val() & self.pin_slot_high.q.val() & self.pin_slot_low.q.val();
        // The word: the staged ticks, then this clock's. (The Verilog
        // generator takes literals only in an index: `4` is FAST_LANES.)
        for j in 0..FAST_LANES {
            self.word[j].next = self.stage[j].q.val();
            self.word[j + 4].next = self.fast_lanes[j].val();
        }
        // Each pin's bits of a slot take the word where its enable is set.
        for j in 0..SLOW_LANES {
            self.slot0[j].d.next = (self.slot0[j].q.val() & !self.write0.q.val())
                | (self.word[j].val() & self.write0.q.val());
            self.slot1[j].d.next = (self.slot1[j].q.val() & !self.write1.q.val())
                | (self.word[j].val() & self.write1.q.val());
            self.slot2[j].d.next = (self.slot2[j].q.val() & !self.write2.q.val())
                | (self.word[j].val() & self.write2.q.val());
            self.slot3[j].d.next = (self.slot3[j].q.val() & !self.write3.q.val())
                | (self.word[j].val() & self.write3.q.val());
        }
        // Slow side.
        self.running_meta.d.next = self.running_late.q.val();
        self.running_sync.d.next = self.running_meta.q.val();
        if self.running_sync.q.val() {
            for j in 0..SLOW_LANES {
                match self.read_slot.q.val().index() {
                    0 => self.out[j].d.next = self.slot0[j].q.val(),
                    1 => self.out[j].d.next = self.slot1[j].q.val(),
                    2 => self.out[j].d.next = self.slot2[j].q.val(),
                    _ => self.out[j].d.next = self.slot3[j].q.val(),
                }
            }
            self.read_slot.d.next = self.read_slot.q.val() + 1;
        }
        for j in 0..SLOW_LANES {
            self.slow_lanes[j].next = self.out[j].q.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulation time units per ns.
    const UNIT: u64 = 4;
    const FAST_PERIOD: u64 = 5 * UNIT;
    const SLOW_PERIOD: u64 = 10 * UNIT;

    struct Run {
        /// Ticks seen on the slow side, in order, from its first read on.
        ticks: Vec<u64>,
        /// Per read: ns since the slot's write, and until its next write.
        read_after_write_ns: Vec<f64>,
        read_before_overwrite_ns: Vec<f64>,
    }

    /// Runs the widener with the slow clock's rising edges `offset` units
    /// after the fast clock's and the lock arriving at `lock_at`; the fast
    /// side's tick `t` carries the number `t`. Before its first read the
    /// slow side must present idle ticks.
    fn run(offset: u64, lock_at: u64, slow_clocks: u64) -> Run {
        assert!(
            !offset.is_multiple_of(FAST_PERIOD),
            "edges must not coincide"
        );
        let mut uut = LaneWidener::default();
        uut.connect_all();
        assert!(simulate(&mut uut, 100));
        let idle: Bits<CA_BITS> = IDLE_LANE.to_bits();
        let mut fast_edges = 0u64;
        // Per slot, the times of its writes.
        let mut writes: Vec<Vec<u64>> = vec![vec![]; SLOTS];
        // Per read: slot, writes of the slot before it, time.
        let mut reads = vec![];
        let mut ticks = vec![];
        for time in 1..slow_clocks * SLOW_PERIOD {
            let fast_rise = time % FAST_PERIOD == 0;
            let slow_rise = time % SLOW_PERIOD == offset;
            uut.locked.next = time >= lock_at;
            let mut reading = false;
            if fast_rise {
                for j in 0..FAST_LANES {
                    uut.fast_lanes[j].next = (fast_edges * FAST_LANES as u64 + j as u64).to_bits();
                }
                assert!(simulate(&mut uut, 100));
                // Every pin's copy of an enable agrees; a set one writes
                // its slot at this edge.
                let enables = [
                    uut.write0.q.val(),
                    uut.write1.q.val(),
                    uut.write2.q.val(),
                    uut.write3.q.val(),
                ];
                for (s, enable) in enables.into_iter().enumerate() {
                    let all: Bits<CA_BITS> = ((1u64 << CA_BITS) - 1).to_bits();
                    assert!(enable == all || !enable.any(), "pins disagree");
                    if enable == all {
                        writes[s].push(time);
                    }
                }
                uut.fast_clock.next = Clock { clk: true };
                fast_edges += 1;
            }
            if time % FAST_PERIOD == FAST_PERIOD / 2 {
                uut.fast_clock.next = Clock { clk: false };
            }
            if slow_rise {
                assert!(simulate(&mut uut, 100));
                reading = uut.running_sync.q.val();
                if reading {
                    let s: u64 = uut.read_slot.q.val().into();
                    reads.push((s as usize, writes[s as usize].len(), time));
                }
                uut.slow_clock.next = Clock { clk: true };
            }
            if time % SLOW_PERIOD == (offset + SLOW_PERIOD / 2) % SLOW_PERIOD {
                uut.slow_clock.next = Clock { clk: false };
            }
            assert!(simulate(&mut uut, 100));
            if slow_rise {
                for j in 0..SLOW_LANES {
                    let lane = uut.slow_lanes[j].val();
                    if reading {
                        let t: u64 = lane.into();
                        ticks.push(t);
                    } else {
                        assert_eq!(
                            lane, idle,
                            "offset {offset}: not idle before the first read"
                        );
                    }
                }
            }
        }
        let mut run = Run {
            ticks,
            read_after_write_ns: vec![],
            read_before_overwrite_ns: vec![],
        };
        for (slot, writes_before, at) in reads {
            let written = writes[slot][writes_before - 1];
            run.read_after_write_ns
                .push((at - written) as f64 / UNIT as f64);
            if let Some(next) = writes[slot].get(writes_before) {
                run.read_before_overwrite_ns
                    .push((next - at) as f64 / UNIT as f64);
            }
        }
        run
    }

    #[test]
    fn every_phase_keeps_ticks_in_order_and_reads_each_slot_10_to_20_ns_after_its_write() {
        for offset in (1..SLOW_PERIOD).filter(|o| !o.is_multiple_of(FAST_PERIOD)) {
            for lock_at in [3 * UNIT, 37 * UNIT + 1, 52 * UNIT + 2] {
                let r = run(offset, lock_at, 200);
                assert!(r.ticks.len() > 150 * SLOW_LANES, "offset {offset}");
                // Consecutive ticks from the first word on: nothing lost,
                // repeated or reordered.
                let first = r.ticks[0];
                for (k, &t) in r.ticks.iter().enumerate() {
                    assert_eq!(t, first + k as u64, "offset {offset}, lock {lock_at}");
                }
                // Without metastability the first synchronizer flip-flop
                // never misses, so reads fall 10-20 ns after the write
                // (the documented 10-30 ns covers a miss).
                assert_eq!(r.read_after_write_ns.len(), r.ticks.len() / SLOW_LANES);
                for &ns in &r.read_after_write_ns {
                    assert!(
                        ns > 10.0 && ns <= 20.0,
                        "offset {offset}: read {ns} ns after write"
                    );
                }
                for &ns in &r.read_before_overwrite_ns {
                    assert!(
                        (20.0..30.0).contains(&ns),
                        "offset {offset}: {ns} ns before overwrite"
                    );
                }
            }
        }
    }
}
