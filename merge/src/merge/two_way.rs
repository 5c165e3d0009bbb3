//! The merge's inner loop: two time-sorted runs into one, branch-free.

use hmtt_format::trace::TraceRecord;
use std::hint::select_unpredictable;

/// Merges two time-sorted runs into `out` (ties go to `a`) until `out` is
/// full or one run is used up; returns how many records of each it took.
/// A run that ends before the other's next record is copied wholesale.
/// Otherwise the output is cut in two halves at their exact split points
/// (a binary search) and both halves are merged in one loop: each step of
/// a half depends on the one before it (load, compare, select), so two
/// independent halves keep the core twice as busy. Records are picked
/// without a branch on the comparison, since interleaved boards make that
/// branch unpredictable. Not inlined, so that the loop has the registers
/// to itself.
#[inline(never)]
pub(super) fn merge_two(
    a: &[TraceRecord],
    b: &[TraceRecord],
    out: &mut [TraceRecord],
) -> (usize, usize) {
    let (Some(a_last), Some(b_last)) = (a.last(), b.last()) else {
        return (0, 0);
    };
    if a_last.tick <= b[0].tick {
        let n = a.len().min(out.len());
        out[..n].copy_from_slice(&a[..n]);
        return (n, 0);
    }
    if b_last.tick < a[0].tick {
        let n = b.len().min(out.len());
        out[..n].copy_from_slice(&b[..n]);
        return (0, n);
    }
    // Records that can go out now: up to where the first run is used up
    // (the other's later records may belong after it), at most `out`.
    let until_a_ends = a.len() + b.partition_point(|r| r.tick < a_last.tick);
    let until_b_ends = b.len() + a.partition_point(|r| r.tick <= b_last.tick);
    let m = until_a_ends.min(until_b_ends).min(out.len());
    let (p, q) = split(a, b, m);
    let half = m / 2;
    let (p1, q1) = split(&a[..p], &b[..q], half);
    let (out1, out2) = out[..m].split_at_mut(half);
    let mut first = Half::new(&a[..p1], &b[..q1], out1);
    let mut second = Half::new(&a[p1..p], &b[q1..q], out2);
    loop {
        let steps = first.steps().min(second.steps());
        if steps == 0 {
            break;
        }
        for _ in 0..steps {
            // SAFETY: each step uses up one record of one part of its
            // half, so `steps` steps leave both halves' parts non-empty
            // before each step (and fill at most as many output slots).
            unsafe {
                first.step();
                second.step();
            }
        }
    }
    first.finish();
    second.finish();
    (p, q)
}

/// How many of the first `k` records of the merge of `a` and `b` (ties to
/// `a`) come from each: the merge-path split, by binary search.
fn split(a: &[TraceRecord], b: &[TraceRecord], k: usize) -> (usize, usize) {
    let (mut lo, mut hi) = (k.saturating_sub(b.len()), k.min(a.len()));
    while lo < hi {
        let i = (lo + hi) / 2;
        // a[i] goes before b[k - i - 1]: more of a is in the first k.
        if a[i].tick <= b[k - i - 1].tick {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    (lo, k - lo)
}

/// Bytes of a record, the step of the addresses in [`Half`].
const RECORD: usize = std::mem::size_of::<TraceRecord>();

/// One half of a two-run merge: its part of each run and its output,
/// walked by address, since the bounds checks of both halves would cost
/// the loop its registers. Every step puts one record out and takes one
/// from `a` or `b`, so `b`'s next record is found from the other two
/// (`b = k + out - a`): a step moves two addresses, not three. The output
/// has exactly the room for both parts.
struct Half<'r> {
    a_base: *const TraceRecord,
    b_base: *const TraceRecord,
    out_base: *mut TraceRecord,
    /// Address of `a`'s next record, and its end.
    a: usize,
    a_end: usize,
    b_end: usize,
    /// `b`'s start minus the output's start plus `a`'s start (wrapping).
    k: usize,
    /// Address of the next output slot.
    out: usize,
    _runs: std::marker::PhantomData<(&'r [TraceRecord], &'r mut [TraceRecord])>,
}

impl<'r> Half<'r> {
    fn new(a: &'r [TraceRecord], b: &'r [TraceRecord], out: &'r mut [TraceRecord]) -> Half<'r> {
        assert_eq!(a.len() + b.len(), out.len());
        let (a_base, b_base, out_base) = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
        Half {
            a_base,
            b_base,
            out_base,
            a: a_base as usize,
            a_end: a_base as usize + a.len() * RECORD,
            b_end: b_base as usize + b.len() * RECORD,
            k: (b_base as usize)
                .wrapping_sub(out_base as usize)
                .wrapping_add(a_base as usize),
            out: out_base as usize,
            _runs: std::marker::PhantomData,
        }
    }
    /// Address of `b`'s next record.
    #[inline(always)]
    fn b(&self) -> usize {
        self.k.wrapping_add(self.out).wrapping_sub(self.a)
    }
    /// Steps that can run before either part is used up.
    fn steps(&self) -> usize {
        ((self.a_end - self.a) / RECORD).min((self.b_end - self.b()) / RECORD)
    }
    /// Puts the next record of the half out.
    ///
    /// # Safety
    /// `self.steps() > 0`: neither part is used up.
    #[inline(always)]
    unsafe fn step(&mut self) {
        debug_assert!(self.steps() > 0);
        let a = self.a_base.with_addr(self.a);
        let b = self.b_base.with_addr(self.b());
        // SAFETY: both parts have a record left by the caller's promise,
        // and the output has a slot for each.
        let take_b = unsafe { (*b).tick < (*a).tick };
        unsafe {
            copy_record(
                select_unpredictable(take_b, b, a),
                self.out_base.with_addr(self.out),
            )
        };
        self.a = select_unpredictable(take_b, self.a, self.a + RECORD);
        self.out += RECORD;
    }
    /// Runs to the end of the output.
    fn finish(&mut self) {
        while self.steps() > 0 {
            // SAFETY: checked just above.
            unsafe { self.step() };
        }
        let (rest, n) = if self.a < self.a_end {
            (
                self.a_base.with_addr(self.a),
                (self.a_end - self.a) / RECORD,
            )
        } else {
            let b = self.b();
            (self.b_base.with_addr(b), (self.b_end - b) / RECORD)
        };
        // SAFETY: the rest of one part, and the output's room left is as
        // long (the output has exactly the room for both parts).
        unsafe { std::ptr::copy_nonoverlapping(rest, self.out_base.with_addr(self.out), n) };
        self.out += n * RECORD;
    }
}

/// One record from `from` to `to` as one 16-byte move (the compiler would
/// otherwise split it in two and keep the tick from the comparison, which
/// costs the loop more instructions).
///
/// # Safety
/// `from` is readable and `to` writable for a record.
#[inline(always)]
unsafe fn copy_record(from: *const TraceRecord, to: *mut TraceRecord) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's promise; SSE2 is part of x86_64.
    unsafe {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_storeu_si128};
        _mm_storeu_si128(to.cast(), _mm_loadu_si128(from.cast()));
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's promise.
    unsafe {
        to.write(from.read())
    };
}
