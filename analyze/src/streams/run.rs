//! [`Streams::access_run`]: the detector over a run of references of one
//! address space, for windows of up to 64, in two steps a reference:
//!
//! 1. which of the window's previous references its line may continue
//!    (their line is its line - 1 or + 1): a comparison of all of them at
//!    once on the lines' low 16 bits ([`super::candidates`]), which needs
//!    nothing of the chains;
//! 2. which of those are live chain ends that point its way: two masks
//!    over the window (bit `k`: the chain end of the `k + 1`-th reference
//!    back, live and continuable upwards, or downwards), kept in
//!    registers; the newest (lowest bit) is taken, its whole line checked.
//!
//! The step from one reference to the next is a few register operations
//! on the masks, without a branch on what the trace does; each reference
//! writes only which end it continued and whether the end that left the
//! window was live. A second pass, oldest first, then carries the chains'
//! lengths and births along those links and counts the chains whose end
//! left the window live.

use super::candidates::{self, key, LANES};
use super::{log2_bucket, toggle_in, ChainEnd, Streams, HEAD_REFERENCES, LINE_BUCKETS};

/// References the run loop takes at once (its arrays stay in cache).
const CHUNK: usize = 1024;
/// The run loop's arrays' length: a chunk, a window and [`LANES`] more
/// (a power of two).
const SPAN: usize = 2048;
const _: () = assert!(CHUNK + 64 + LANES < SPAN && SPAN.is_power_of_two());
/// A link of a reference that continued nothing: past every window.
const NO_LINK: u8 = LANES as u8 + 1;
/// The bit of a link that says the chain went down.
const DOWN: u8 = 0x80;

/// The run loop's arrays, kept from run to run.
#[derive(Default)]
pub(super) struct RunScratch {
    run: Vec<u64>,
    arrays: Option<Box<RunArrays>>,
}

/// A chunk of `n` references after the `w` chain ends of the ring,
/// indexed newest first: the chunk's reference `r` at `n - 1 - r`, the
/// ring's ends (oldest last) after them, then padding, so that the
/// previous references of each follow it.
struct RunArrays {
    keys: [u16; SPAN],
    lines: [u64; SPAN],
    /// By reference: how far back the end it continued was (1 to 64;
    /// [`NO_LINK`]: none), and [`DOWN`] if downwards.
    links: [u8; SPAN],
    lens: [u64; SPAN],
    borns: [u64; SPAN],
    dirs: [i8; SPAN],
    /// By reference: whether the end that left the window after it was
    /// live (and of the run's address space).
    closed_live: [bool; SPAN],
}

impl RunArrays {
    fn new() -> Box<RunArrays> {
        Box::new(RunArrays {
            keys: [0; SPAN],
            lines: [0; SPAN],
            links: [0; SPAN],
            lens: [0; SPAN],
            borns: [0; SPAN],
            dirs: [0; SPAN],
            closed_live: [false; SPAN],
        })
    }
}

/// Which comparison the run loop's first step uses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Simd {
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    Portable,
    Sse2,
    Avx2,
}

impl Simd {
    fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("bmi1")
            {
                Simd::Avx2
            } else {
                Simd::Sse2
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Simd::Portable
        }
    }
}

/// The loop over a chunk of `n` references (in `a`) in a window of
/// `window`, from the masks of the chain ends before it (`up`, `down`:
/// bit `k` the `k + 1`-th end back, live and continuable upwards,
/// downwards): writes each reference's link and whether the end that
/// left the window after it was live; returns the masks after it.
#[inline(always)]
fn run_loop<const WIDE: bool, const SIMD: u8>(
    a: &mut RunArrays,
    n: usize,
    window: usize,
    mut up: u64,
    mut down: u64,
) -> (u64, u64) {
    let n = n.min(CHUNK);
    let in_window = u64::MAX >> (64 - window);
    for i in (0..n).rev() {
        let line = a.lines[i];
        let Ok(before) = <&[u16; LANES]>::try_from(&a.keys[i + 1..i + 1 + LANES]) else {
            unreachable!("SPAN holds them");
        };
        let (cu, cd) = match SIMD {
            #[cfg(target_arch = "x86_64")]
            1 => candidates::sse2::<WIDE>(before, key(line)),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SIMD 2 is only run where the CPU has AVX2.
            2 => unsafe { candidates::avx2::<WIDE>(before, key(line)) },
            _ => candidates::portable::<WIDE>(before, key(line)),
        };
        let (mut cu, mut cd) = (cu & in_window, cd & in_window);
        // The newest live end that points this way (the lowest bit; none:
        // the 65th reference back, past every window).
        let m = (cu & up) | (cd & down);
        let mut j = m & m.wrapping_neg();
        let mut back = 1 + j.trailing_zeros() as usize;
        // Its whole line; a key that matched on a line that does not
        // (rare) is dropped and the next tried. Without a join, the check
        // reads the line it has just written (no reference of the loop
        // reads that far back again): no branch on whether it joins.
        let expected = line
            .wrapping_add(1)
            .wrapping_sub(2 * u64::from(cu & j != 0));
        a.lines[(i + 1 + LANES) & (SPAN - 1)] = expected;
        if a.lines[(i + back) & (SPAN - 1)] != expected {
            (j, back) = newest_whole_match(a, i, line, &mut cu, &mut cd, up, down);
        }
        let (from_below, from_above) = (cu & j != 0, cd & j != 0);
        a.links[i] = back as u8 | (u8::from(from_above) << 7);
        a.closed_live[i] = ((up | down) & !j) >> (window - 1) & 1 == 1;
        // The new end continues upwards unless it went down, and so on.
        up = ((up & !j) << 1) | u64::from(!from_above);
        down = ((down & !j) << 1) | u64::from(!from_below);
    }
    (up, down)
}

/// The newest live end of `cu & up | cd & down` whose whole line
/// reference `i`'s `line` continues (dropping those whose key only
/// matched), as `(bit, how far back)`; `(0, 65)` for none.
#[cold]
#[inline(never)]
fn newest_whole_match(
    a: &RunArrays,
    i: usize,
    line: u64,
    cu: &mut u64,
    cd: &mut u64,
    up: u64,
    down: u64,
) -> (u64, usize) {
    loop {
        let m = (*cu & up) | (*cd & down);
        let j = m & m.wrapping_neg();
        let back = 1 + j.trailing_zeros() as usize;
        let expected = if *cu & j != 0 {
            line.wrapping_sub(1)
        } else {
            line.wrapping_add(1)
        };
        if j == 0 || a.lines[i + back] == expected {
            return (j, back);
        }
        *cu &= !j;
        *cd &= !j;
    }
}

/// [`run_loop`] with AVX2 (and BMI1 for the masks).
///
/// # Safety
/// The CPU must have AVX2 and BMI1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi1")]
unsafe fn run_loop_avx2<const WIDE: bool>(
    a: &mut RunArrays,
    n: usize,
    window: usize,
    up: u64,
    down: u64,
) -> (u64, u64) {
    run_loop::<WIDE, 2>(a, n, window, up, down)
}

/// The loop of the detected comparison and of the window's width.
fn run_loop_for(
    simd: Simd,
    a: &mut RunArrays,
    n: usize,
    window: usize,
    up: u64,
    down: u64,
) -> (u64, u64) {
    match (simd, window > 32) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::Avx2` is only detected where the CPU has both.
        (Simd::Avx2, false) => unsafe { run_loop_avx2::<false>(a, n, window, up, down) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        (Simd::Avx2, true) => unsafe { run_loop_avx2::<true>(a, n, window, up, down) },
        (Simd::Sse2, false) => run_loop::<false, 1>(a, n, window, up, down),
        (Simd::Sse2, true) => run_loop::<true, 1>(a, n, window, up, down),
        (_, false) => run_loop::<false, 0>(a, n, window, up, down),
        (_, true) => run_loop::<true, 0>(a, n, window, up, down),
    }
}

/// The chains that the second pass saw end (a live chain end leaving the
/// window), but those of 4 or more references, counted in the lengths at
/// once.
#[derive(Default)]
struct Ended {
    ones: u64,
    twos_threes: u64,
    streams: u64,
    stream_references: u64,
    longest: u64,
}

/// The second pass over a chunk of `n` references in a window of
/// `window`, oldest first: each reference's chain length from the end it
/// continued, then the chain of the end that leaves the window after it,
/// if live, counted.
#[inline(always)]
fn lengths_and_ends(
    a: &mut RunArrays,
    n: usize,
    window: usize,
    min_len: u64,
    lengths: &mut [u64; 65],
) -> Ended {
    let n = n.min(CHUNK);
    let mut ended = Ended::default();
    for i in (0..n).rev() {
        let back = usize::from(a.links[i] & !DOWN);
        // Selected without a branch: the trace decides whether it joins.
        let joined = 0u64.wrapping_sub(u64::from(back != usize::from(NO_LINK)));
        a.lens[i] = (a.lens[(i + back) & (SPAN - 1)] & joined) + 1;
        // The oldest end leaves the window after this reference.
        let live = 0u64.wrapping_sub(u64::from(a.closed_live[i]));
        let closed = a.lens[(i + window) & (SPAN - 1)] & live;
        ended.longest = ended.longest.max(closed);
        ended.ones += u64::from(closed == 1);
        ended.twos_threes += u64::from(closed >> 1 == 1);
        let stream = u64::from(closed >= min_len);
        ended.streams += stream;
        ended.stream_references += closed & 0u64.wrapping_sub(stream);
        if closed >= 4 {
            lengths[log2_bucket(closed)] += 1;
        }
    }
    ended
}

/// The births and directions of references `0..upto` (newest first) of
/// a chunk of `n`, oldest first: a chain's birth followed back along the
/// links to its first reference, or to an end whose birth is known (of
/// the ring, or resolved before: chains do not share ends, so each end is
/// followed at most once).
fn births(a: &mut RunArrays, n: usize, upto: usize, first: u64) {
    for i in (0..upto).rev() {
        let mut at = i;
        let born = loop {
            let link = a.links[at];
            let back = usize::from(link & !DOWN);
            if back == usize::from(NO_LINK) {
                break first + (n - 1 - at) as u64;
            }
            at += back;
            if at >= n || at < upto {
                break a.borns[at];
            }
        };
        let link = a.links[i];
        a.borns[i] = born;
        a.dirs[i] = if link & !DOWN == NO_LINK {
            0
        } else if link & DOWN != 0 {
            -1
        } else {
            1
        };
    }
}

impl Streams {
    /// References to the lines `lines` of address space `space`, in
    /// order: the same as [`Streams::access`] on each. Windows of up to
    /// [`LANES`] take the run loop (the module's note), a chunk of
    /// references at a time; wider ones a reference at a time.
    ///
    /// A part that follows another takes its first [`HEAD_REFERENCES`]
    /// references one at a time (they are kept, with the detector's state
    /// at a few of them), the rest in the loop.
    pub fn access_run(&mut self, space: u32, mut lines: impl Iterator<Item = u64>) {
        if self.ring.len() > LANES || self.slots_expecting.len() != LINE_BUCKETS {
            return self.access_each(space, lines);
        }
        if self.head.is_some() {
            let kept = HEAD_REFERENCES.saturating_sub(self.references);
            if kept > 0 {
                self.access_each(space, lines.by_ref().take(kept as usize));
            }
        }
        let mut run = std::mem::take(&mut self.scratch.run);
        let simd = Simd::detect();
        loop {
            run.clear();
            run.extend(lines.by_ref().take(CHUNK));
            if !run.is_empty() {
                self.run_chunk(simd, space, &run);
            }
            if run.len() < CHUNK {
                break;
            }
        }
        self.scratch.run = run;
    }

    /// [`Streams::access`] on each of `lines` (out of line: the loops of
    /// the caller keep their registers).
    #[inline(never)]
    fn access_each(&mut self, space: u32, lines: impl Iterator<Item = u64>) {
        lines.for_each(|line| {
            self.access(space, line);
        });
    }

    /// Toggles every live chain end in the index of expected lines: out
    /// before a run (the index is then empty), in again after it.
    fn toggle_live_ends(&mut self) {
        let Ok(index) = <&mut [u64; LINE_BUCKETS]>::try_from(self.slots_expecting.as_mut_slice())
        else {
            return;
        };
        for (j, e) in self.ring.iter().enumerate() {
            if e.live {
                toggle_in(index, j, e);
            }
        }
    }

    /// The run loop and the second pass over `run` (at most [`CHUNK`]
    /// references), and the ring, counters and index brought up to date.
    #[inline(never)]
    fn run_chunk(&mut self, simd: Simd, space: u32, run: &[u64]) {
        let (w, n) = (self.ring.len(), run.len().min(CHUNK));
        self.toggle_live_ends();
        let (p0, first) = (self.pos, self.references);
        // Newest-first index of the oldest chain end of the ring.
        let top = w + n - 1;
        let mut a = self.scratch.arrays.take().unwrap_or_else(RunArrays::new);
        // The ring's chain ends, oldest first from slot `pos`, and which
        // of them the run may continue, by age.
        let (mut up, mut down, mut foreign_live) = (0u64, 0u64, 0u64);
        for h in 0..w {
            let slot = (p0 + h) % w;
            let (e, line, i) = (&self.ring[slot], self.lines[slot], top - h);
            (a.keys[i], a.lines[i]) = (key(line), line);
            (a.lens[i], a.borns[i], a.dirs[i]) = (e.len, e.born, e.dir);
            let mine = e.live && e.space == space;
            up |= u64::from(mine && e.dir >= 0) << (w - 1 - h);
            down |= u64::from(mine && e.dir <= 0) << (w - 1 - h);
            foreign_live |= u64::from(e.live && e.space != space) << h;
        }
        for (r, &line) in run[..n].iter().enumerate() {
            (a.keys[n - 1 - r], a.lines[n - 1 - r]) = (key(line), line);
        }
        let (up, down) = run_loop_for(simd, &mut a, n, w, up, down);
        // The ring's ends of another address space that left the window
        // (the loop's masks have only the run's).
        for h in 0..n.min(w) {
            if foreign_live >> h & 1 == 1 {
                a.closed_live[n - 1 - h] = true;
            }
        }
        let later = self.head.is_some();
        if later {
            // Every reference's birth: the chains of the part's first
            // references that end are kept.
            births(&mut a, n, n, first);
        }
        let ended = lengths_and_ends(&mut a, n, w, self.min_len, &mut self.lengths);
        if !later {
            births(&mut a, n, n.min(w), first);
        }
        self.lengths[1] += ended.ones;
        self.lengths[2] += ended.twos_threes;
        self.streams += ended.streams;
        self.stream_references += ended.stream_references;
        self.longest = self.longest.max(ended.longest);
        // The ring: the newest `w` ends, the newest at bit 0 of the masks.
        let live = up | down;
        for h in n..=top {
            let (slot, i) = ((p0 + h) % w, top - h);
            let live = live >> i & 1 == 1;
            if h >= w {
                self.ring[slot] = ChainEnd {
                    space,
                    line: a.lines[i],
                    dir: a.dirs[i],
                    len: a.lens[i],
                    live,
                    born: a.borns[i],
                };
                self.lines[slot] = a.lines[i];
            } else {
                self.ring[slot].live = live || foreign_live >> h & 1 == 1;
            }
        }
        if later {
            self.later_ends(&a, n, first);
        }
        self.scratch.arrays = Some(a);
        self.pos = (p0 + n) % w;
        self.references += n as u64;
        self.toggle_live_ends();
    }

    /// What a later part keeps of the chains that ended in a chunk of `n`
    /// references from reference `first` on, as [`Streams::access`] keeps
    /// it: those born among its first references one by one (rare once
    /// the first window has gone), the longest of the others.
    fn later_ends(&mut self, a: &RunArrays, n: usize, first: u64) {
        let w = self.ring.len();
        let mut longest = 0u64;
        for r in 0..n {
            let i = n - 1 - r;
            if !a.closed_live[i] {
                continue;
            }
            let (born, len) = (a.borns[i + w], a.lens[i + w]);
            if born < HEAD_REFERENCES {
                self.head_close(first + r as u64, born, len);
            } else {
                longest = longest.max(len);
            }
        }
        if let Some(head) = self.head.as_mut() {
            for cp in &mut head.checkpoints {
                cp.longest_after = cp.longest_after.max(longest);
            }
        }
    }
}
