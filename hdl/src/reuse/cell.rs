//! One cell of the systolic LRU stack: a stack position, its snapshot,
//! and the register of the token that leaves it for the cell below.

use rust_hdl::prelude::*;

use super::KEY_BITS;

/// Stack position `k` (the cell's place in the chain; the token's
/// `depth` says it). An entry is a page and the key of its count, which
/// lives in block RAM ([`super::SlotCounts`]): the count's slot, or,
/// while `pending`, the tag of the reference that made the entry at the
/// top and whose token has not yet found the page's old slot.
///
/// A token is a reference on its way down the stack (`active` until it
/// finds its page) with the entry it carries, pushed out of the cell
/// above; a token that finds its page at this cell leaves its carried
/// entry there and takes the page's key on down in the carried entry's
/// place (`c_valid` then 0; its stack distance is `depth`), and one that
/// does not swaps its carried entry with the cell's. A token with
/// `close` first copies the cell's entry to the snapshot (a count is
/// per interval in the RAMs, so the entry itself does not change).
/// The bottom broadcasts each token's slot under its tag (`bc_*`); an
/// entry pending under that tag takes it, wherever it is: in the cell
/// or in a carried entry (or a token that took the entry's key there).
/// A snapshot keeps its pending tag: the hot-page scan completes it as
/// it reads it.
#[derive(LogicBlock)]
pub struct StackCell<const W: usize> {
    pub clock: Signal<In, Clock>,
    // The token arriving.
    pub t_valid: Signal<In, Bit>,
    pub t_active: Signal<In, Bit>,
    pub t_close: Signal<In, Bit>,
    pub t_page: Signal<In, Bits<W>>,
    pub t_depth: Signal<In, Bits<8>>,
    pub c_valid: Signal<In, Bit>,
    pub c_page: Signal<In, Bits<W>>,
    pub c_pending: Signal<In, Bit>,
    pub c_key: Signal<In, Bits<KEY_BITS>>,
    // The bottom's broadcast: the slot of the entry the reference
    // `bc_tag` made at the top.
    pub bc_valid: Signal<In, Bit>,
    pub bc_tag: Signal<In, Bits<KEY_BITS>>,
    pub bc_slot: Signal<In, Bits<KEY_BITS>>,
    /// Shift the snapshots up a cell (the hot-page scan reads the top).
    pub scan: Signal<In, Bit>,
    pub below_valid: Signal<In, Bit>,
    pub below_page: Signal<In, Bits<W>>,
    pub below_pending: Signal<In, Bit>,
    pub below_key: Signal<In, Bits<KEY_BITS>>,
    // The token leaving, registered.
    pub o_valid: Signal<Out, Bit>,
    pub o_active: Signal<Out, Bit>,
    pub o_close: Signal<Out, Bit>,
    pub o_page: Signal<Out, Bits<W>>,
    pub o_depth: Signal<Out, Bits<8>>,
    pub oc_valid: Signal<Out, Bit>,
    pub oc_page: Signal<Out, Bits<W>>,
    pub oc_pending: Signal<Out, Bit>,
    pub oc_key: Signal<Out, Bits<KEY_BITS>>,
    // The snapshot.
    pub s_valid: Signal<Out, Bit>,
    pub s_page: Signal<Out, Bits<W>>,
    pub s_pending: Signal<Out, Bit>,
    pub s_key: Signal<Out, Bits<KEY_BITS>>,
    e_valid: DFF<Bit>,
    e_page: DFF<Bits<W>>,
    e_pending: DFF<Bit>,
    e_key: DFF<Bits<KEY_BITS>>,
    sn_valid: DFF<Bit>,
    sn_page: DFF<Bits<W>>,
    sn_pending: DFF<Bit>,
    sn_key: DFF<Bits<KEY_BITS>>,
    r_valid: DFF<Bit>,
    r_active: DFF<Bit>,
    r_close: DFF<Bit>,
    r_page: DFF<Bits<W>>,
    r_depth: DFF<Bits<8>>,
    rc_valid: DFF<Bit>,
    rc_page: DFF<Bits<W>>,
    rc_pending: DFF<Bit>,
    rc_key: DFF<Bits<KEY_BITS>>,
    /// The cell's and the carried entry's key and pending flag with
    /// this clock's broadcast applied.
    e_hit_bc: Signal<Local, Bit>,
    e_k: Signal<Local, Bits<KEY_BITS>>,
    e_pend: Signal<Local, Bit>,
    c_hit_bc: Signal<Local, Bit>,
    c_k: Signal<Local, Bits<KEY_BITS>>,
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
            t_depth: Default::default(),
            c_valid: Default::default(),
            c_page: Default::default(),
            c_pending: Default::default(),
            c_key: Default::default(),
            bc_valid: Default::default(),
            bc_tag: Default::default(),
            bc_slot: Default::default(),
            scan: Default::default(),
            below_valid: Default::default(),
            below_page: Default::default(),
            below_pending: Default::default(),
            below_key: Default::default(),
            o_valid: Default::default(),
            o_active: Default::default(),
            o_close: Default::default(),
            o_page: Default::default(),
            o_depth: Default::default(),
            oc_valid: Default::default(),
            oc_page: Default::default(),
            oc_pending: Default::default(),
            oc_key: Default::default(),
            s_valid: Default::default(),
            s_page: Default::default(),
            s_pending: Default::default(),
            s_key: Default::default(),
            e_valid: Default::default(),
            e_page: Default::default(),
            e_pending: Default::default(),
            e_key: Default::default(),
            sn_valid: Default::default(),
            sn_page: Default::default(),
            sn_pending: Default::default(),
            sn_key: Default::default(),
            r_valid: Default::default(),
            r_active: Default::default(),
            r_close: Default::default(),
            r_page: Default::default(),
            r_depth: Default::default(),
            rc_valid: Default::default(),
            rc_page: Default::default(),
            rc_pending: Default::default(),
            rc_key: Default::default(),
            e_hit_bc: Default::default(),
            e_k: Default::default(),
            e_pend: Default::default(),
            c_hit_bc: Default::default(),
            c_k: Default::default(),
            c_pend: Default::default(),
            hit: Default::default(),
        }
    }
}

impl<const W: usize> Logic for StackCell<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, e_valid, e_page, e_pending, e_key, sn_valid, sn_page, sn_pending, sn_key,
            r_valid, r_active, r_close, r_page, r_depth, rc_valid, rc_page, rc_pending, rc_key
        );
        // The broadcast, taken where its tag is pending.
        self.e_hit_bc.next = self.bc_valid.val()
            & self.e_pending.q.val()
            & (self.e_key.q.val() == self.bc_tag.val());
        self.e_k.next = self.e_key.q.val();
        if self.e_hit_bc.val() {
            self.e_k.next = self.bc_slot.val();
        }
        self.e_pend.next = self.e_pending.q.val() & !self.e_hit_bc.val();
        self.c_hit_bc.next =
            self.bc_valid.val() & self.c_pending.val() & (self.c_key.val() == self.bc_tag.val());
        self.c_k.next = self.c_key.val();
        if self.c_hit_bc.val() {
            self.c_k.next = self.bc_slot.val();
        }
        self.c_pend.next = self.c_pending.val() & !self.c_hit_bc.val();
        // A close: the snapshot takes the cell as the interval left it.
        if self.t_close.val() {
            self.sn_valid.d.next = self.e_valid.q.val();
            self.sn_page.d.next = self.e_page.q.val();
            self.sn_pending.d.next = self.e_pend.val();
            self.sn_key.d.next = self.e_k.val();
        }
        if self.scan.val() {
            self.sn_valid.d.next = self.below_valid.val();
            self.sn_page.d.next = self.below_page.val();
            self.sn_pending.d.next = self.below_pending.val();
            self.sn_key.d.next = self.below_key.val();
        }
        self.hit.next =
            self.t_active.val() & self.e_valid.q.val() & (self.e_page.q.val() == self.t_page.val());
        // The token passes on. An active token swaps its carried entry
        // with the cell's (a hit ends the shift: it carries only the
        // found entry's key on, as no entry); one that found its page
        // carries what it carried.
        self.r_valid.d.next = self.t_valid.val();
        self.r_active.d.next = self.t_active.val() & !self.hit.val();
        self.r_close.d.next = self.t_close.val();
        self.r_page.d.next = self.t_page.val();
        self.r_depth.d.next = self.t_depth.val();
        self.e_valid.d.next = self.e_valid.q.val();
        self.e_pending.d.next = self.e_pend.val();
        self.e_key.d.next = self.e_k.val();
        self.rc_valid.d.next = self.c_valid.val();
        self.rc_page.d.next = self.c_page.val();
        self.rc_pending.d.next = self.c_pend.val();
        self.rc_key.d.next = self.c_k.val();
        if self.t_active.val() {
            self.e_valid.d.next = self.c_valid.val();
            self.e_page.d.next = self.c_page.val();
            self.e_pending.d.next = self.c_pend.val();
            self.e_key.d.next = self.c_k.val();
            self.rc_valid.d.next = self.e_valid.q.val() & !self.hit.val();
            self.rc_page.d.next = self.e_page.q.val();
            self.rc_pending.d.next = self.e_pend.val();
            self.rc_key.d.next = self.e_k.val();
            if !self.hit.val() {
                self.r_depth.d.next = self.t_depth.val() + 1;
            }
        }
        self.o_valid.next = self.r_valid.q.val();
        self.o_active.next = self.r_active.q.val();
        self.o_close.next = self.r_close.q.val();
        self.o_page.next = self.r_page.q.val();
        self.o_depth.next = self.r_depth.q.val();
        self.oc_valid.next = self.rc_valid.q.val();
        self.oc_page.next = self.rc_page.q.val();
        self.oc_pending.next = self.rc_pending.q.val();
        self.oc_key.next = self.rc_key.q.val();
        self.s_valid.next = self.sn_valid.q.val();
        self.s_page.next = self.sn_page.q.val();
        self.s_pending.next = self.sn_pending.q.val();
        self.s_key.next = self.sn_key.q.val();
    }
}
