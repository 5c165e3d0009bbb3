//! One bin of the stack-distance histogram.

use rust_hdl::prelude::*;

use super::COUNT_BITS;

/// The references of the open interval whose stack distance is the
/// bin's, and its snapshot of the last closed interval. `depth` and
/// `valid` are the stack's bottom token; a token with `close` opens the
/// next interval (its own reference belongs to it). The snapshots of the
/// bins form a chain read at bin 0: `shift` moves each to the bin before
/// (`next_snapshot` is the next bin's).
#[derive(LogicBlock)]
pub struct HistogramBin {
    pub clock: Signal<In, Clock>,
    pub valid: Signal<In, Bit>,
    pub depth: Signal<In, Bits<8>>,
    pub close: Signal<In, Bit>,
    pub shift: Signal<In, Bit>,
    pub next_snapshot: Signal<In, Bits<COUNT_BITS>>,
    pub snapshot: Signal<Out, Bits<COUNT_BITS>>,
    index: Constant<Bits<8>>,
    inc: Signal<Local, Bits<COUNT_BITS>>,
    count: DFF<Bits<COUNT_BITS>>,
    snap: DFF<Bits<COUNT_BITS>>,
}

impl HistogramBin {
    pub fn new(distance: u8) -> HistogramBin {
        HistogramBin {
            clock: Default::default(),
            valid: Default::default(),
            depth: Default::default(),
            close: Default::default(),
            shift: Default::default(),
            next_snapshot: Default::default(),
            snapshot: Default::default(),
            index: Constant::new(u64::from(distance).to_bits()),
            inc: Default::default(),
            count: Default::default(),
            snap: Default::default(),
        }
    }
}

impl Logic for HistogramBin {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, count, snap);
        self.inc.next = 0.into();
        if self.valid.val() & (self.depth.val() == self.index.val()) {
            self.inc.next = 1.into();
        }
        self.count.d.next = self.count.q.val() + self.inc.val();
        if self.shift.val() {
            self.snap.d.next = self.next_snapshot.val();
        }
        if self.close.val() {
            self.snap.d.next = self.count.q.val();
            self.count.d.next = self.inc.val();
        }
        self.snapshot.next = self.snap.q.val();
    }
}
