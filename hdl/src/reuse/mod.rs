//! The Reuse Distance & Hot Pages Unit (board.md "Reuse Distance & Hot
//! Pages Unit"): a 128-page LRU stack taking one reference a fabric clock
//! (the contract's `P = 1`; the clock's other references are counted as
//! skipped), with per interval the histogram of stack distances, the
//! skipped references and the `H = 8` hot pages. Not yet in any top: the
//! Statistic Unit does not feed it and no record leaves the board.
//!
//! The stack is a systolic array (J. Grossman, "A systolic array for
//! implementing LRU replacement", MIT AI Lab 2002): cell `k` holds stack
//! position `k`, and a reference walks down one cell a clock as a token
//! ([`StackCell`]). At cell 0 it leaves its page (the new top) and takes
//! the old top along; each cell that does not hold the page swaps what
//! the token carries with its own entry (the shift of the LRU update),
//! and the cell that holds it takes the carried entry and ends the shift.
//! A token behind sees each cell only after the tokens ahead of it
//! updated it, so the stack behaves as if the references came one at a
//! time; no clock has a path through more than one cell, and every token
//! reaches the bottom [`STACK_LATENCY`] clocks after its reference, with
//! its stack distance (the cell where it found its page, or 128: deeper
//! or new), which the histogram counts there.
//!
//! Counts. A page's count is the references to it since it entered the
//! stack, restarting at each close. The counts are not in the cells but
//! in block RAM ([`SlotCounts`]), one slot per stack entry: an entry is
//! its page and its slot ([`SLOT_BITS`]). The new top's slot is its old
//! entry's, which the token finds deeper and later; so the new entry is
//! `pending` under the reference's tag (its clock, mod 256) until the
//! token reaches the bottom and, a clock later (the slot chosen there is
//! registered), broadcasts the slot to every cell and carried entry,
//! which take it where their pending tag matches. A page found nowhere
//! takes the slot of the entry its token pushes out at the bottom (or,
//! while the stack fills, one never used). From that register the token
//! counts its reference: a read-modify-write of its slot over three
//! clocks, from 0 for a new page. A token that found its page in an
//! entry still pending takes that tag (in its carried entry's
//! registers), and the broadcast completes it by the clock after it
//! leaves the bottom (tokens broadcast in their order; the token right
//! behind one takes that one's slot from the broadcast's register).
//! Counts are [`COUNT_BITS`] wide.
//!
//! Intervals. `close` in clock `c` opens the next interval with that
//! clock's references. It walks down the stack with the clock's token:
//! each cell copies its entry to its snapshot (the stack as the last
//! reference before the close left it) before the token acts on it; a
//! snapshot still pending keeps its tag. Once the close reaches the
//! bottom (every tag a snapshot waits for has been or is being counted,
//! and a table in block RAM keeps each bottom token's new count by its
//! tag) the counts' RAMs swap a clock later and the histogram's
//! ([`Histogram`]) two clocks later (the closed interval's stay for the
//! scan and the record, the others count from 0), and the hot pages are
//! picked over 128 clocks from then: the snapshots shift up a cell a
//! clock, the top one is registered, a stage reads each one's count
//! (from its slot in the closed interval's RAM, or if pending from the
//! table),
//! and a sorted list of 8 takes each one with a count above 0 after the
//! entries with a count at least as high (equal counts nearer the top
//! first). The record is out [`RECORD_LATENCY`] clocks
//! after the close and holds until the next interval's record starts
//! ([`ReuseDistanceUnit::record_valid`]). Closes must be at least
//! [`MIN_INTERVAL`] clocks apart; a closer one sets `overrun`.

use rust_hdl::prelude::*;

mod cell;
mod counts;
mod histogram;

pub use cell::StackCell;
pub use counts::{IntervalCounts, SlotCounts};
pub use histogram::Histogram;

/// The stack's pages.
pub const DEPTH: usize = 128;
/// The histogram's bins: distances 0..127, then deeper or new.
pub const BINS: usize = DEPTH + 1;
/// Hot pages in a record.
pub const HOT: usize = 8;
/// Bits of a count (a page's, a histogram bin's): exact for intervals of
/// up to `2^29 - 1` clocks, one reference a clock (board.md: at `L = 8`
/// the longest interval, `2^31` ticks, is `2^28` clocks). The record's
/// counts are 32 bits, zero-extended.
pub const COUNT_BITS: usize = 29;
/// Bits of a reference's tag: more than the clocks an entry is pending.
pub const TAG_BITS: usize = 8;
/// Bits of a count's slot in block RAM: one slot per stack entry.
pub const SLOT_BITS: usize = 7;
/// Bits of an entry's key: its count's slot, or while pending a tag.
pub const KEY_BITS: usize = TAG_BITS;
/// Clocks from a reference at the inputs to its token at the bottom:
/// the inputs' register, the token's, and a clock a cell.
pub const STACK_LATENCY: usize = DEPTH + 2;
/// Clocks from a close at the inputs to its record's `record_valid`:
/// the stack, then a clock per snapshot, and four for the last one:
/// the top snapshot's two registers, the read of its count, the scan's
/// stage.
pub const RECORD_LATENCY: usize = STACK_LATENCY + DEPTH + 4;
/// Least clocks between two closes: the hot-page scan of one close must
/// be done when the next close writes the snapshot of cell 0.
pub const MIN_INTERVAL: usize = 2 * DEPTH;

/// The RDHPU for `L` lanes of references to pages of `W` bits.
///
/// In, each clock: `ref_valid` (bit `j`: lane `j` holds a reference, lane
/// order is tick order), `ref_page` per lane, and `close`. The stack
/// takes the first reference of the clock; the others count as skipped.
///
/// Out: `record_valid` for one clock per close, [`RECORD_LATENCY`] clocks
/// after it; the record is then `record_skipped`, `hot_page`/`hot_count`
/// (most references first, count 0 past the last hot page) and the
/// histogram, read a bin a clock: `hist_value` is distance 0's bin, and
/// each clock with `hist_shift` brings the next bin there in the next
/// clock (distance `d` after `d` shifts, 128 for deeper or new). The
/// record holds through the fourth clock after the next close leaves the
/// bottom of the stack ([`STACK_LATENCY`] + 4 clocks after that close:
/// at least 128 clocks after `record_valid`, time for the 128 shifts).
#[derive(LogicBlock)]
pub struct ReuseDistanceUnit<const L: usize, const W: usize> {
    pub clock: Signal<In, Clock>,
    pub ref_valid: Signal<In, Bits<L>>,
    pub ref_page: [Signal<In, Bits<W>>; L],
    pub close: Signal<In, Bit>,
    pub record_valid: Signal<Out, Bit>,
    pub record_skipped: Signal<Out, Bits<32>>,
    pub hot_page: [Signal<Out, Bits<W>>; HOT],
    pub hot_count: [Signal<Out, Bits<32>>; HOT],
    /// Sticky: two closes came less than [`MIN_INTERVAL`] clocks apart.
    pub overrun: Signal<Out, Bit>,
    pub hist_shift: Signal<In, Bit>,
    pub hist_value: Signal<Out, Bits<32>>,
    histogram: Histogram,
    cells: [StackCell<W>; DEPTH],
    counts: SlotCounts,
    /// The token leaving the bottom cell: the histogram's and the
    /// counts', and the broadcast of its slot to every cell.
    bottom_valid: Signal<Local, Bit>,
    bottom_close: Signal<Local, Bit>,
    /// Its tag: tokens move a cell a clock, so it is the top's of
    /// [`DEPTH`] clocks before.
    bottom_tag: Signal<Local, Bits<TAG_BITS>>,
    bottom_depth: Signal<Local, Bits<8>>,
    /// Its page entered the stack (found nowhere), in a new slot.
    bottom_first: Signal<Local, Bit>,
    /// The slot of the entry its reference made at the top: the found
    /// entry's, or the one of the entry pushed out at the bottom, or
    /// one never used while the stack fills.
    bottom_slot: Signal<Local, Bits<SLOT_BITS>>,
    /// What it carries out: the found entry's key, or the key of the
    /// entry pushed out.
    bottom_key: Signal<Local, Bits<KEY_BITS>>,
    /// It found no page and pushed out no entry: the stack was not full.
    bottom_unused: Signal<Local, Bit>,
    /// What it carries out is still pending: under the tag of the token
    /// right ahead, whose slot is broadcast this clock.
    bottom_pending: Signal<Local, Bit>,
    stack_clocks: Constant<Bits<TAG_BITS>>,
    unused_slot: DFF<Bits<SLOT_BITS>>,
    /// The bottom token a clock later, its slot chosen: what the counts
    /// read and the cells take the broadcast from, so that no path runs
    /// from the bottom cell through the choice into the counts' fresh
    /// bits or across the stack.
    chosen_valid: DFF<Bit>,
    chosen_close: DFF<Bit>,
    chosen_first: DFF<Bit>,
    chosen_tag: DFF<Bits<TAG_BITS>>,
    chosen_slot: DFF<Bits<SLOT_BITS>>,
    chosen_depth: DFF<Bits<8>>,
    /// The bottom token two and three clocks later, for the histogram
    /// (its RAMs then swap late enough for the record to hold its 128
    /// clocks).
    late_valid: DFF<Bit>,
    late_close: DFF<Bit>,
    late_depth: DFF<Bits<8>>,
    hist_valid: DFF<Bit>,
    hist_close: DFF<Bit>,
    hist_depth: DFF<Bits<8>>,
    /// The tag of the token whose count [`SlotCounts`] loads this clock,
    /// and of the one it adds, and the table's count written the clock
    /// before, for the scan.
    load_tag: DFF<Bits<TAG_BITS>>,
    add_tag: DFF<Bits<TAG_BITS>>,
    wrote_count: DFF<Bits<COUNT_BITS>>,
    /// The write of the top snapshot's read clock is its pending key's
    /// (compared a clock ahead, so that only registered choices follow
    /// the RAMs' outputs into `scan_count`).
    read_forwarded: DFF<Bit>,
    in_valid: DFF<Bits<L>>,
    in_page: [DFF<Bits<W>>; L],
    in_close: DFF<Bit>,
    /// Per lane, the lanes before it.
    lanes_before: [Constant<Bits<L>>; L],
    first_page: Signal<Local, Bits<W>>,
    lanes: Signal<Local, Bits<4>>,
    skipped_now: Signal<Local, Bits<32>>,
    /// The clock's skipped references, added to the interval's a clock
    /// later (with the close a clock later, `top_close`), so that the
    /// lanes' count and the 32-bit add are in different clocks.
    skipped_lanes: DFF<Bits<32>>,
    tag: DFF<Bits<TAG_BITS>>,
    top_valid: DFF<Bit>,
    top_page: DFF<Bits<W>>,
    top_close: DFF<Bit>,
    top_tag: DFF<Bits<TAG_BITS>>,
    skipped: DFF<Bits<32>>,
    skipped_snap: DFF<Bits<32>>,
    record_skips: DFF<Bits<32>>,
    /// Clocks until the next close may come.
    busy: DFF<Bits<9>>,
    busy_reload: Constant<Bits<9>>,
    scan_reload: Constant<Bits<8>>,
    overrun_flag: DFF<Bit>,
    /// Snapshots left to scan after this clock (the clock the close
    /// leaves the stack scans the first).
    scan_left: DFF<Bits<8>>,
    scanning: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    /// The count of the snapshot the scan reads, zero-extended.
    scanned_count: Signal<Local, Bits<32>>,
    /// Place `j` of the hot list holds a count at least the scanned one's.
    at_least: [Signal<Local, Bit>; HOT],
    list_page: [DFF<Bits<W>>; HOT],
    /// The list the scanned snapshot goes into: the hot list, or none as
    /// the scan starts.
    list_from_page: [Signal<Local, Bits<W>>; HOT],
    list_from_count: [Signal<Local, Bits<32>>; HOT],
    list_count: [DFF<Bits<32>>; HOT],
    /// The scan's last snapshot came to the top, and the clocks until it
    /// is in the list.
    done: DFF<Bit>,
    done_held: DFF<Bit>,
    done_read: DFF<Bit>,
    done_listed: DFF<Bit>,
    record_out: DFF<Bit>,
    /// Each bottom token's new count by its tag, for the snapshots
    /// still pending.
    counts_by_tag: RAM<Bits<COUNT_BITS>, TAG_BITS>,
    /// The top snapshot, registered, and a clock later (when every count
    /// of the closed interval is written or being written): its key is
    /// the address of the counts' read.
    held_scan: DFF<Bit>,
    held_first: DFF<Bit>,
    held_valid: DFF<Bit>,
    held_page: DFF<Bits<W>>,
    held_pending: DFF<Bit>,
    held_key: DFF<Bits<KEY_BITS>>,
    snap_scan: DFF<Bit>,
    snap_first: DFF<Bit>,
    snap_valid: DFF<Bit>,
    snap_page: DFF<Bits<W>>,
    snap_pending: DFF<Bit>,
    snap_key: DFF<Bits<KEY_BITS>>,
    /// The scan's stage: the snapshot the scan read the clock before.
    scan_stage: DFF<Bit>,
    scan_first: DFF<Bit>,
    scan_entry: DFF<Bit>,
    scan_page: DFF<Bits<W>>,
    scan_count: DFF<Bits<COUNT_BITS>>,
    /// That snapshot the clock after, with the RAMs' data.
    read_scan: DFF<Bit>,
    read_first: DFF<Bit>,
    read_entry: DFF<Bit>,
    read_page: DFF<Bits<W>>,
    read_pending: DFF<Bit>,
    read_total: Signal<Local, Bits<COUNT_BITS>>,
}

impl<const L: usize, const W: usize> Default for ReuseDistanceUnit<L, W> {
    fn default() -> Self {
        assert!((1..=8).contains(&L), "1 <= L <= 8");
        assert!(W <= 64, "pages of at most 64 bits");
        const { assert!(DEPTH == 1 << SLOT_BITS && SLOT_BITS < KEY_BITS) };
        Self {
            clock: Default::default(),
            ref_valid: Default::default(),
            ref_page: std::array::from_fn(|_| Default::default()),
            close: Default::default(),
            record_valid: Default::default(),
            record_skipped: Default::default(),
            hot_page: std::array::from_fn(|_| Default::default()),
            hot_count: std::array::from_fn(|_| Default::default()),
            overrun: Default::default(),
            hist_shift: Default::default(),
            hist_value: Default::default(),
            histogram: Default::default(),
            cells: std::array::from_fn(|_| Default::default()),
            counts: Default::default(),
            bottom_valid: Default::default(),
            bottom_close: Default::default(),
            bottom_tag: Default::default(),
            bottom_depth: Default::default(),
            bottom_first: Default::default(),
            bottom_slot: Default::default(),
            bottom_key: Default::default(),
            bottom_unused: Default::default(),
            bottom_pending: Default::default(),
            stack_clocks: Constant::new((DEPTH as u64).to_bits()),
            unused_slot: Default::default(),
            chosen_valid: Default::default(),
            chosen_close: Default::default(),
            chosen_first: Default::default(),
            chosen_tag: Default::default(),
            chosen_slot: Default::default(),
            chosen_depth: Default::default(),
            late_valid: Default::default(),
            late_close: Default::default(),
            late_depth: Default::default(),
            hist_valid: Default::default(),
            hist_close: Default::default(),
            hist_depth: Default::default(),
            load_tag: Default::default(),
            add_tag: Default::default(),
            wrote_count: Default::default(),
            read_forwarded: Default::default(),
            in_valid: Default::default(),
            in_page: std::array::from_fn(|_| Default::default()),
            in_close: Default::default(),
            lanes_before: std::array::from_fn(|j| Constant::new(((1u64 << j) - 1).to_bits())),
            first_page: Default::default(),
            lanes: Default::default(),
            skipped_now: Default::default(),
            skipped_lanes: Default::default(),
            tag: Default::default(),
            top_valid: Default::default(),
            top_page: Default::default(),
            top_close: Default::default(),
            top_tag: Default::default(),
            skipped: Default::default(),
            skipped_snap: Default::default(),
            record_skips: Default::default(),
            busy: Default::default(),
            busy_reload: Constant::new(((MIN_INTERVAL - 1) as u64).to_bits()),
            scan_reload: Constant::new(((DEPTH - 1) as u64).to_bits()),
            overrun_flag: Default::default(),
            scan_left: Default::default(),
            scanning: Default::default(),
            take: Default::default(),
            scanned_count: Default::default(),
            at_least: std::array::from_fn(|_| Default::default()),
            list_page: std::array::from_fn(|_| Default::default()),
            list_from_page: std::array::from_fn(|_| Default::default()),
            list_from_count: std::array::from_fn(|_| Default::default()),
            list_count: std::array::from_fn(|_| Default::default()),
            done: Default::default(),
            done_held: Default::default(),
            done_read: Default::default(),
            done_listed: Default::default(),
            record_out: Default::default(),
            counts_by_tag: Default::default(),
            held_scan: Default::default(),
            held_first: Default::default(),
            held_valid: Default::default(),
            held_page: Default::default(),
            held_pending: Default::default(),
            held_key: Default::default(),
            snap_scan: Default::default(),
            snap_first: Default::default(),
            snap_valid: Default::default(),
            snap_page: Default::default(),
            snap_pending: Default::default(),
            snap_key: Default::default(),
            scan_stage: Default::default(),
            scan_first: Default::default(),
            scan_entry: Default::default(),
            scan_page: Default::default(),
            scan_count: Default::default(),
            read_scan: Default::default(),
            read_first: Default::default(),
            read_entry: Default::default(),
            read_page: Default::default(),
            read_pending: Default::default(),
            read_total: Default::default(),
        }
    }
}

impl<const L: usize, const W: usize> Logic for ReuseDistanceUnit<L, W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            in_valid,
            in_close,
            tag,
            top_valid,
            top_page,
            top_close,
            top_tag,
            skipped,
            skipped_lanes,
            skipped_snap,
            record_skips,
            busy,
            overrun_flag,
            scan_left,
            done,
            done_held,
            done_read,
            done_listed,
            record_out,
            held_scan,
            held_first,
            held_valid,
            held_page,
            held_pending,
            held_key,
            snap_scan,
            snap_first,
            snap_valid,
            snap_page,
            snap_pending,
            snap_key,
            scan_stage,
            scan_first,
            scan_entry,
            scan_page,
            scan_count,
            read_scan,
            read_first,
            read_entry,
            read_page,
            read_pending,
            unused_slot,
            chosen_valid,
            chosen_close,
            chosen_first,
            chosen_tag,
            chosen_slot,
            chosen_depth,
            late_valid,
            late_close,
            late_depth,
            hist_valid,
            hist_close,
            hist_depth,
            load_tag,
            add_tag,
            wrote_count,
            read_forwarded
        );
        for j in 0..L {
            self.in_page[j].clock.next = self.clock.val();
            self.in_page[j].d.next = self.ref_page[j].val();
        }
        for j in 0..HOT {
            self.list_page[j].clock.next = self.clock.val();
            self.list_count[j].clock.next = self.clock.val();
        }
        self.in_valid.d.next = self.ref_valid.val();
        self.in_close.d.next = self.close.val();
        // The clock's first reference goes on; the others are skipped.
        self.first_page.next = 0.into();
        self.lanes.next = 0.into();
        for j in 0..L {
            if self.in_valid.q.val().get_bit(j)
                & ((self.in_valid.q.val() & self.lanes_before[j].val()) == 0)
            {
                self.first_page.next = self.in_page[j].q.val();
            }
            if self.in_valid.q.val().get_bit(j) {
                self.lanes.next = self.lanes.val() + 1;
            }
        }
        self.skipped_now.next = 0.into();
        if self.lanes.val() != 0 {
            self.skipped_now.next = bit_cast::<32, 4>(self.lanes.val() - 1);
        }
        self.tag.d.next = self.tag.q.val() + 1;
        self.top_valid.d.next = self.in_valid.q.val() != 0;
        self.top_page.d.next = self.first_page.val();
        self.top_close.d.next = self.in_close.q.val();
        self.top_tag.d.next = self.tag.q.val();
        self.skipped_lanes.d.next = self.skipped_now.val();
        self.skipped.d.next = self.skipped.q.val() + self.skipped_lanes.q.val();
        if self.top_close.q.val() {
            self.skipped_snap.d.next = self.skipped.q.val();
            self.skipped.d.next = self.skipped_lanes.q.val();
        }
        if self.busy.q.val() != 0 {
            self.busy.d.next = self.busy.q.val() - 1;
        }
        if self.in_close.q.val() {
            self.busy.d.next = self.busy_reload.val();
            if self.busy.q.val() != 0 {
                self.overrun_flag.d.next = true;
            }
        }
        // The stack: cell 0 takes the clock's token, carrying the new top.
        // (rust-hdl's Verilog names an array's element by a literal or
        // a loop variable only: the bottom cell is the loop's one.)
        for k in (DEPTH - 1)..DEPTH {
            self.bottom_valid.next = self.cells[k].o_valid.val();
            self.bottom_close.next = self.cells[k].o_close.val();
            self.bottom_depth.next = self.cells[k].o_depth.val();
            // A token still active found no page: its page takes the slot
            // of the entry it pushes out, or a slot not yet used.
            self.bottom_first.next = self.cells[k].o_active.val();
            self.bottom_key.next = self.cells[k].oc_key.val();
            self.bottom_unused.next = self.cells[k].o_active.val() & !self.cells[k].oc_valid.val();
            self.bottom_pending.next = self.cells[k].oc_pending.val();
            self.cells[k].below_valid.next = false;
            self.cells[k].below_page.next = 0.into();
            self.cells[k].below_pending.next = false;
            self.cells[k].below_key.next = 0.into();
        }
        self.bottom_tag.next = self.top_tag.q.val() - self.stack_clocks.val();
        self.bottom_slot.next = bit_cast::<SLOT_BITS, KEY_BITS>(self.bottom_key.val());
        // The broadcast comes a clock after its token left the bottom, so
        // the token right behind may carry its tag out still pending
        // (it found the page the token ahead made the top): it takes the
        // slot from the broadcast's register, as a cell would have.
        if self.bottom_pending.val()
            & self.chosen_valid.q.val()
            & (self.bottom_key.val() == self.chosen_tag.q.val())
        {
            self.bottom_slot.next = self.chosen_slot.q.val();
        }
        // The stack holds an entry per slot taken unused (at most DEPTH),
        // and pushes none out until it holds DEPTH.
        if self.bottom_unused.val() {
            self.bottom_slot.next = self.unused_slot.q.val();
            self.unused_slot.d.next = self.unused_slot.q.val() + 1;
        }
        self.chosen_valid.d.next = self.bottom_valid.val();
        self.chosen_close.d.next = self.bottom_close.val();
        self.chosen_first.d.next = self.bottom_first.val();
        self.chosen_tag.d.next = self.bottom_tag.val();
        self.chosen_slot.d.next = self.bottom_slot.val();
        self.chosen_depth.d.next = self.bottom_depth.val();
        self.late_valid.d.next = self.chosen_valid.q.val();
        self.late_close.d.next = self.chosen_close.q.val();
        self.late_depth.d.next = self.chosen_depth.q.val();
        self.hist_valid.d.next = self.late_valid.q.val();
        self.hist_close.d.next = self.late_close.q.val();
        self.hist_depth.d.next = self.late_depth.q.val();
        for k in 0..DEPTH {
            self.cells[k].clock.next = self.clock.val();
            self.cells[k].bc_valid.next = self.chosen_valid.q.val();
            self.cells[k].bc_tag.next = self.chosen_tag.q.val();
            self.cells[k].bc_slot.next = bit_cast::<KEY_BITS, SLOT_BITS>(self.chosen_slot.q.val());
        }
        // The page's count: one more in its slot, or 1 in a new one.
        self.counts.clock.next = self.clock.val();
        self.counts.valid.next = self.chosen_valid.q.val();
        self.counts.address.next = self.chosen_slot.q.val();
        self.counts.first.next = self.chosen_first.q.val();
        self.counts.close.next = self.chosen_close.q.val();
        self.load_tag.d.next = self.chosen_tag.q.val();
        self.add_tag.d.next = self.load_tag.q.val();
        self.cells[0].t_valid.next = self.top_valid.q.val();
        self.cells[0].t_active.next = self.top_valid.q.val();
        self.cells[0].t_close.next = self.top_close.q.val();
        self.cells[0].t_page.next = self.top_page.q.val();
        self.cells[0].t_depth.next = 0.into();
        self.cells[0].c_valid.next = self.top_valid.q.val();
        self.cells[0].c_page.next = self.top_page.q.val();
        self.cells[0].c_pending.next = self.top_valid.q.val();
        self.cells[0].c_key.next = self.top_tag.q.val();
        for k in 1..DEPTH {
            self.cells[k].t_valid.next = self.cells[k - 1].o_valid.val();
            self.cells[k].t_active.next = self.cells[k - 1].o_active.val();
            self.cells[k].t_close.next = self.cells[k - 1].o_close.val();
            self.cells[k].t_page.next = self.cells[k - 1].o_page.val();
            self.cells[k].t_depth.next = self.cells[k - 1].o_depth.val();
            self.cells[k].c_valid.next = self.cells[k - 1].oc_valid.val();
            self.cells[k].c_page.next = self.cells[k - 1].oc_page.val();
            self.cells[k].c_pending.next = self.cells[k - 1].oc_pending.val();
            self.cells[k].c_key.next = self.cells[k - 1].oc_key.val();
            self.cells[k - 1].below_valid.next = self.cells[k].s_valid.val();
            self.cells[k - 1].below_page.next = self.cells[k].s_page.val();
            self.cells[k - 1].below_pending.next = self.cells[k].s_pending.val();
            self.cells[k - 1].below_key.next = self.cells[k].s_key.val();
        }
        // The bottom: the histogram, and the close's scan of the snapshots.
        self.histogram.clock.next = self.clock.val();
        self.histogram.valid.next = self.hist_valid.q.val();
        self.histogram.depth.next = self.hist_depth.q.val();
        self.histogram.close.next = self.hist_close.q.val();
        self.histogram.shift.next = self.hist_shift.val();
        // Bin 0 with `record_valid`.
        self.histogram.rewind.next = self.done_read.q.val();
        self.hist_value.next = bit_cast::<32, COUNT_BITS>(self.histogram.value.val());
        // The close's scan starts as it leaves the stack, from an empty
        // list.
        self.scanning.next = (self.scan_left.q.val() != 0) | self.bottom_close.val();
        for k in 0..DEPTH {
            self.cells[k].scan.next = self.scanning.val();
        }
        // The scan's count, over four stages so that neither the RAMs'
        // address nor their output nor a forwarded write shares a clock
        // with the sorted list: the top snapshot is registered twice
        // (from the clock the close leaves the stack, a snapshot a
        // clock), its count read the clock after (from its slot in the
        // closed interval's RAM, which has swapped by then, or if it is
        // pending from the table of the bottom tokens' counts by tag)
        // and the sorted list takes it the clock after that. By the top
        // snapshot's read the close's last token writes its count (the
        // counts' third clock), so the table holds every tag a snapshot
        // waits for but the write of the read's clock, which is taken
        // from the write's register; none is overwritten before it is
        // read: a tag comes back 256 clocks later.
        self.snap_scan.d.next = self.scanning.val();
        self.snap_first.d.next = self.bottom_close.val();
        self.snap_valid.d.next = self.cells[0].s_valid.val();
        self.snap_page.d.next = self.cells[0].s_page.val();
        self.snap_pending.d.next = self.cells[0].s_pending.val();
        self.snap_key.d.next = self.cells[0].s_key.val();
        self.held_scan.d.next = self.snap_scan.q.val();
        self.held_first.d.next = self.snap_first.q.val();
        self.held_valid.d.next = self.snap_valid.q.val();
        self.held_page.d.next = self.snap_page.q.val();
        self.held_pending.d.next = self.snap_pending.q.val();
        self.held_key.d.next = self.snap_key.q.val();
        self.counts.read_address.next = bit_cast::<SLOT_BITS, KEY_BITS>(self.held_key.q.val());
        self.counts_by_tag.read_address.next = self.held_key.q.val();
        self.counts.read_fresh_known.next = false;
        self.counts.read_fresh_given.next = false;
        self.counts_by_tag.read_clock.next = self.clock.val();
        self.counts_by_tag.write_clock.next = self.clock.val();
        self.counts_by_tag.write_address.next = self.add_tag.q.val();
        self.counts_by_tag.write_data.next = self.counts.added.val();
        self.counts_by_tag.write_enable.next = self.counts.added_valid.val();
        self.wrote_count.d.next = self.counts.added.val();
        self.read_forwarded.d.next =
            self.counts.added_valid.val() & (self.add_tag.q.val() == self.held_key.q.val());
        self.read_scan.d.next = self.held_scan.q.val();
        self.read_first.d.next = self.held_first.q.val();
        self.read_entry.d.next = self.held_valid.q.val();
        self.read_page.d.next = self.held_page.q.val();
        self.read_pending.d.next = self.held_pending.q.val();
        self.read_total.next = self.counts.read_count.val();
        if self.read_pending.q.val() {
            self.read_total.next = self.counts_by_tag.read_data.val();
            if self.read_forwarded.q.val() {
                self.read_total.next = self.wrote_count.q.val();
            }
        }
        self.scan_stage.d.next = self.read_scan.q.val();
        self.scan_first.d.next = self.read_first.q.val();
        self.scan_entry.d.next = self.read_entry.q.val();
        self.scan_page.d.next = self.read_page.q.val();
        self.scan_count.d.next = self.read_total.val();
        self.scanned_count.next = bit_cast::<32, COUNT_BITS>(self.scan_count.q.val());
        for j in 0..HOT {
            self.list_from_page[j].next = self.list_page[j].q.val();
            self.list_from_count[j].next = self.list_count[j].q.val();
            if self.scan_first.q.val() {
                self.list_from_page[j].next = 0.into();
                self.list_from_count[j].next = 0.into();
            }
            self.list_page[j].d.next = self.list_from_page[j].val();
            self.list_count[j].d.next = self.list_from_count[j].val();
            self.at_least[j].next = (self.list_from_count[j].val() != 0)
                & (self.list_from_count[j].val() >= self.scanned_count.val());
        }
        self.take.next =
            self.scan_stage.q.val() & self.scan_entry.q.val() & (self.scanned_count.val() != 0);
        if self.take.val() {
            if !self.at_least[0].val() {
                self.list_page[0].d.next = self.scan_page.q.val();
                self.list_count[0].d.next = self.scanned_count.val();
            }
            for j in 1..HOT {
                if !self.at_least[j].val() {
                    if self.at_least[j - 1].val() {
                        self.list_page[j].d.next = self.scan_page.q.val();
                        self.list_count[j].d.next = self.scanned_count.val();
                    } else {
                        self.list_page[j].d.next = self.list_from_page[j - 1].val();
                        self.list_count[j].d.next = self.list_from_count[j - 1].val();
                    }
                }
            }
        }
        if self.scan_left.q.val() != 0 {
            self.scan_left.d.next = self.scan_left.q.val() - 1;
        }
        self.done.d.next = self.scan_left.q.val() == 1;
        self.done_held.d.next = self.done.q.val();
        self.done_read.d.next = self.done_held.q.val();
        self.done_listed.d.next = self.done_read.q.val();
        if self.bottom_close.val() {
            self.scan_left.d.next = self.scan_reload.val();
        }
        if self.scan_first.q.val() {
            self.record_skips.d.next = self.skipped_snap.q.val();
        }
        self.record_out.d.next = self.done_listed.q.val();
        self.record_valid.next = self.record_out.q.val();
        self.record_skipped.next = self.record_skips.q.val();
        for j in 0..HOT {
            self.hot_page[j].next = self.list_page[j].q.val();
            self.hot_count[j].next = self.list_count[j].q.val();
        }
        self.overrun.next = self.overrun_flag.q.val();
    }
}
