//! One cell of the systolic LRU stack: a stack position, its snapshot,
//! and the register of the token that leaves it for the cell below.

use rust_hdl::prelude::*;

use super::{COUNT_BITS, TAG_BITS};

/// Stack position `k` (the cell's place in the chain; the token's
/// `depth` says it). A token is a reference on its way down the stack
/// (`active` until it finds its page) with the entry it carries, pushed
/// out of the cell above; a token that finds its page at this cell
/// leaves its carried entry there and takes the page's count on down in
/// the carried entry's place (`c_valid` then 0; its stack distance is
/// `depth`), and one that does not swaps its carried entry with the
/// cell's. A token with `close` first copies the cell to the snapshot
/// and restarts its count. A count still `pending` (its entry made at
/// the top by a reference whose old count has not yet reached the
/// bottom) takes the count the bottom broadcasts (`bc_*`), wherever it
/// is: in the cell or in a carried entry (or a token that
/// took the entry's count there). A token's carried entry and the count
/// it found never travel together, so they share the registers and the
/// adder. A snapshot keeps its count's pending tag: the hot-page scan
/// completes it (from the broadcasts' table) as it reads it.
#[derive(LogicBlock)]
pub struct StackCell<const W: usize> {
    pub clock: Signal<In, Clock>,
    // The token arriving.
    pub t_valid: Signal<In, Bit>,
    pub t_active: Signal<In, Bit>,
    pub t_close: Signal<In, Bit>,
    pub t_page: Signal<In, Bits<W>>,
    pub t_tag: Signal<In, Bits<TAG_BITS>>,
    pub t_depth: Signal<In, Bits<8>>,
    pub c_valid: Signal<In, Bit>,
    pub c_page: Signal<In, Bits<W>>,
    pub c_count: Signal<In, Bits<COUNT_BITS>>,
    pub c_pending: Signal<In, Bit>,
    pub c_tag: Signal<In, Bits<TAG_BITS>>,
    // The bottom's broadcast: the count of the entry the reference
    // `bc_tag` made at the top (1 plus the old count it found).
    pub bc_valid: Signal<In, Bit>,
    pub bc_tag: Signal<In, Bits<TAG_BITS>>,
    pub bc_count: Signal<In, Bits<COUNT_BITS>>,
    /// Shift the snapshots up a cell (the hot-page scan reads the top).
    pub scan: Signal<In, Bit>,
    pub below_valid: Signal<In, Bit>,
    pub below_page: Signal<In, Bits<W>>,
    pub below_count: Signal<In, Bits<COUNT_BITS>>,
    pub below_pending: Signal<In, Bit>,
    pub below_tag: Signal<In, Bits<TAG_BITS>>,
    // The token leaving, registered.
    pub o_valid: Signal<Out, Bit>,
    pub o_active: Signal<Out, Bit>,
    pub o_close: Signal<Out, Bit>,
    pub o_page: Signal<Out, Bits<W>>,
    pub o_tag: Signal<Out, Bits<TAG_BITS>>,
    pub o_depth: Signal<Out, Bits<8>>,
    pub oc_valid: Signal<Out, Bit>,
    pub oc_page: Signal<Out, Bits<W>>,
    pub oc_count: Signal<Out, Bits<COUNT_BITS>>,
    pub oc_pending: Signal<Out, Bit>,
    pub oc_tag: Signal<Out, Bits<TAG_BITS>>,
    // The snapshot.
    pub s_valid: Signal<Out, Bit>,
    pub s_page: Signal<Out, Bits<W>>,
    pub s_count: Signal<Out, Bits<COUNT_BITS>>,
    pub s_pending: Signal<Out, Bit>,
    pub s_tag: Signal<Out, Bits<TAG_BITS>>,
    e_valid: DFF<Bit>,
    e_page: DFF<Bits<W>>,
    e_count: DFF<Bits<COUNT_BITS>>,
    e_pending: DFF<Bit>,
    e_tag: DFF<Bits<TAG_BITS>>,
    sn_valid: DFF<Bit>,
    sn_page: DFF<Bits<W>>,
    sn_count: DFF<Bits<COUNT_BITS>>,
    sn_pending: DFF<Bit>,
    sn_tag: DFF<Bits<TAG_BITS>>,
    r_valid: DFF<Bit>,
    r_active: DFF<Bit>,
    r_close: DFF<Bit>,
    r_page: DFF<Bits<W>>,
    r_tag: DFF<Bits<TAG_BITS>>,
    r_depth: DFF<Bits<8>>,
    rc_valid: DFF<Bit>,
    rc_page: DFF<Bits<W>>,
    rc_count: DFF<Bits<COUNT_BITS>>,
    rc_pending: DFF<Bit>,
    rc_tag: DFF<Bits<TAG_BITS>>,
    /// The cell's and the carried entry's count and pending flag with
    /// this clock's broadcast applied, and the cell's after a close.
    e_hit_bc: Signal<Local, Bit>,
    e_cnt: Signal<Local, Bits<COUNT_BITS>>,
    e_pend: Signal<Local, Bit>,
    c_hit_bc: Signal<Local, Bit>,
    c_cnt: Signal<Local, Bits<COUNT_BITS>>,
    c_pend: Signal<Local, Bit>,
    hit: Signal<Local, Bit>,
}

impl<const W: usize> Default for StackCell<W> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            t_valid: Default::default(),
            t_active: Default::default(),
            t_close: Default::default(),
            t_page: Default::default(),
            t_tag: Default::default(),
            t_depth: Default::default(),
            c_valid: Default::default(),
            c_page: Default::default(),
            c_count: Default::default(),
            c_pending: Default::default(),
            c_tag: Default::default(),
            bc_valid: Default::default(),
            bc_tag: Default::default(),
            bc_count: Default::default(),
            scan: Default::default(),
            below_valid: Default::default(),
            below_page: Default::default(),
            below_count: Default::default(),
            below_pending: Default::default(),
            below_tag: Default::default(),
            o_valid: Default::default(),
            o_active: Default::default(),
            o_close: Default::default(),
            o_page: Default::default(),
            o_tag: Default::default(),
            o_depth: Default::default(),
            oc_valid: Default::default(),
            oc_page: Default::default(),
            oc_count: Default::default(),
            oc_pending: Default::default(),
            oc_tag: Default::default(),
            s_valid: Default::default(),
            s_page: Default::default(),
            s_count: Default::default(),
            s_pending: Default::default(),
            s_tag: Default::default(),
            e_valid: Default::default(),
            e_page: Default::default(),
            e_count: Default::default(),
            e_pending: Default::default(),
            e_tag: Default::default(),
            sn_valid: Default::default(),
            sn_page: Default::default(),
            sn_count: Default::default(),
            sn_pending: Default::default(),
            sn_tag: Default::default(),
            r_valid: Default::default(),
            r_active: Default::default(),
            r_close: Default::default(),
            r_page: Default::default(),
            r_tag: Default::default(),
            r_depth: Default::default(),
            rc_valid: Default::default(),
            rc_page: Default::default(),
            rc_count: Default::default(),
            rc_pending: Default::default(),
            rc_tag: Default::default(),
            e_hit_bc: Default::default(),
            e_cnt: Default::default(),
            e_pend: Default::default(),
            c_hit_bc: Default::default(),
            c_cnt: Default::default(),
            c_pend: Default::default(),
            hit: Default::default(),
        }
    }
}

impl<const W: usize> Logic for StackCell<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, e_valid, e_page, e_count, e_pending, e_tag, sn_valid, sn_page, sn_count,
            sn_pending, sn_tag, r_valid, r_active, r_close, r_page, r_tag, r_depth, rc_valid,
            rc_page, rc_count, rc_pending, rc_tag
        );
        // The broadcast, taken where its tag is pending. A pending count
        // is always the 1 of the reference that made the entry (a hit
        // moves the count into the token and leaves a new entry, a close
        // restarts it), so the broadcast brings the whole count.
        self.e_hit_bc.next = self.bc_valid.val()
            & self.e_pending.q.val()
            & (self.e_tag.q.val() == self.bc_tag.val());
        self.e_cnt.next = self.e_count.q.val();
        if self.e_hit_bc.val() {
            self.e_cnt.next = self.bc_count.val();
        }
        self.e_pend.next = self.e_pending.q.val() & !self.e_hit_bc.val();
        self.c_hit_bc.next =
            self.bc_valid.val() & self.c_pending.val() & (self.c_tag.val() == self.bc_tag.val());
        self.c_cnt.next = self.c_count.val();
        if self.c_hit_bc.val() {
            self.c_cnt.next = self.bc_count.val();
        }
        self.c_pend.next = self.c_pending.val() & !self.c_hit_bc.val();
        // A close: the snapshot takes the cell as the interval left it,
        // and the cell's count starts again (a count still pending is the
        // snapshot's, with its tag).
        if self.t_close.val() {
            self.sn_valid.d.next = self.e_valid.q.val();
            self.sn_page.d.next = self.e_page.q.val();
            self.sn_count.d.next = self.e_cnt.val();
            self.sn_pending.d.next = self.e_pend.val();
            self.sn_tag.d.next = self.e_tag.q.val();
            self.e_cnt.next = 0.into();
            self.e_pend.next = false;
        }
        if self.scan.val() {
            self.sn_valid.d.next = self.below_valid.val();
            self.sn_page.d.next = self.below_page.val();
            self.sn_count.d.next = self.below_count.val();
            self.sn_pending.d.next = self.below_pending.val();
            self.sn_tag.d.next = self.below_tag.val();
        }
        self.hit.next =
            self.t_active.val() & self.e_valid.q.val() & (self.e_page.q.val() == self.t_page.val());
        // The cell keeps its entry, or takes the carried one.
        self.e_valid.d.next = self.e_valid.q.val();
        self.e_count.d.next = self.e_cnt.val();
        self.e_pending.d.next = self.e_pend.val();
        // The token passes on; it carries what it carried, or the cell's
        // entry if it swapped, or nothing once it found its page.
        self.r_valid.d.next = self.t_valid.val();
        self.r_active.d.next = self.t_active.val() & !self.hit.val();
        self.r_close.d.next = self.t_close.val();
        self.r_page.d.next = self.t_page.val();
        self.r_tag.d.next = self.t_tag.val();
        self.r_depth.d.next = self.t_depth.val();
        self.rc_valid.d.next = self.c_valid.val();
        self.rc_page.d.next = self.c_page.val();
        self.rc_count.d.next = self.c_cnt.val();
        self.rc_pending.d.next = self.c_pend.val();
        self.rc_tag.d.next = self.c_tag.val();
        if self.t_active.val() {
            self.e_valid.d.next = self.c_valid.val();
            self.e_page.d.next = self.c_page.val();
            self.e_count.d.next = self.c_cnt.val();
            self.e_pending.d.next = self.c_pend.val();
            self.e_tag.d.next = self.c_tag.val();
            if self.hit.val() {
                self.rc_valid.d.next = false;
                self.rc_count.d.next = self.e_cnt.val();
                self.rc_pending.d.next = self.e_pend.val();
                self.rc_tag.d.next = self.e_tag.q.val();
            } else {
                self.r_depth.d.next = self.t_depth.val() + 1;
                self.rc_valid.d.next = self.e_valid.q.val();
                self.rc_page.d.next = self.e_page.q.val();
                self.rc_count.d.next = self.e_cnt.val();
                self.rc_pending.d.next = self.e_pend.val();
                self.rc_tag.d.next = self.e_tag.q.val();
            }
        }
        self.o_valid.next = self.r_valid.q.val();
        self.o_active.next = self.r_active.q.val();
        self.o_close.next = self.r_close.q.val();
        self.o_page.next = self.r_page.q.val();
        self.o_tag.next = self.r_tag.q.val();
        self.o_depth.next = self.r_depth.q.val();
        self.oc_valid.next = self.rc_valid.q.val();
        self.oc_page.next = self.rc_page.q.val();
        self.oc_count.next = self.rc_count.q.val();
        self.oc_pending.next = self.rc_pending.q.val();
        self.oc_tag.next = self.rc_tag.q.val();
        self.s_valid.next = self.sn_valid.q.val();
        self.s_page.next = self.sn_page.q.val();
        self.s_count.next = self.sn_count.q.val();
        self.s_pending.next = self.sn_pending.q.val();
        self.s_tag.next = self.sn_tag.q.val();
    }
}
