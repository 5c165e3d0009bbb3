//! The multi-board merge: each board's stream is already in time order, so
//! the boards are interleaved by a merge on the tick (ties go to the lower
//! board id): two-way merges of blocks, in a tree for more than two boards.
//! Records flow in blocks into a [`RecordSink`]; memory stays bounded by a
//! few decoded blocks per board.

use hmtt_format::trace::TraceRecord;
use hmtt_format::AddressMapping;

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::reassemble::{BoardStream, ChannelJoin, DEFAULT_REORDER_DEPTH};
use crate::report::{BoardReport, MergeReport};
use crossbeam_channel::{Receiver, Sender};
use std::hint::select_unpredictable;

/// Where merged records go: whole blocks through `write`, or, for a sink
/// with its own output buffer, built in place through `spare` and `commit`.
pub trait RecordSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError>;
    /// Room to build the next records in place, in order from its start;
    /// `None` (the default) when the sink only takes `write`. Once a sink
    /// gives room it must give a non-empty slice on every call.
    fn spare(&mut self) -> Option<&mut [TraceRecord]> {
        None
    }
    /// The first `n` records of the last `spare` slice are done.
    fn commit(&mut self, n: usize) -> Result<(), MergeError> {
        let _ = n;
        Ok(())
    }
}

/// Keeps every record in memory (tests, small runs).
#[derive(Debug, Default)]
pub struct VecSink(pub Vec<TraceRecord>);

impl RecordSink for VecSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.0.extend_from_slice(records);
        Ok(())
    }
}

/// Counts records and drops them (measuring decode speed alone).
#[derive(Debug, Default)]
pub struct CountSink {
    pub records: u64,
    /// Sum of the packed words, so the work cannot be optimised away.
    pub checksum: u64,
}

impl RecordSink for CountSink {
    fn write(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        self.records += records.len() as u64;
        for r in records {
            self.checksum = self.checksum.wrapping_add(r.packed ^ r.tick);
        }
        Ok(())
    }
}

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// Mapping file text (format.md §3); `None`: the linear mapping.
    pub mapping_toml: Option<String>,
    /// Packets each port may be out of place.
    pub reorder_depth: usize,
    /// With several boards, one per memory channel: the channel interleave
    /// (blocks of `1 << shift` bytes, channel = the board's rank among the
    /// board ids). `None`: each board's addresses are used as they are.
    pub interleave_shift: Option<u32>,
    /// Decode each board in a thread of its own (the output is the same).
    pub decode_threads: bool,
}

impl Default for MergeOptions {
    fn default() -> Self {
        MergeOptions {
            mapping_toml: None,
            reorder_depth: DEFAULT_REORDER_DEPTH,
            interleave_shift: None,
            decode_threads: true,
        }
    }
}

/// Records per block handed to the sink (and decoded per board at a time):
/// 128 KiB, so the blocks being merged stay in the L2 cache.
const BLOCK: usize = 1 << 13;

/// Decoded blocks of one board, from its decode thread.
struct Batch {
    records: Vec<TraceRecord>,
    /// Capture bytes of the board consumed so far.
    bytes: u64,
}

/// Where a lane's records come from.
enum Source<'a> {
    /// Decoded here, on demand.
    Here(Box<BoardStream<'a>>),
    /// Decoded by a thread of its own; used blocks go back to it.
    Thread {
        batches: Receiver<Batch>,
        used: Sender<Vec<TraceRecord>>,
    },
}

struct Lane<'a> {
    source: Source<'a>,
    buf: Vec<TraceRecord>,
    pos: usize,
    done: bool,
    bytes: u64,
}

/// Decodes at least a block of `stream` into `buf`; `false` at the end.
fn decode_block(stream: &mut BoardStream, buf: &mut Vec<TraceRecord>) -> Result<bool, MergeError> {
    while buf.len() < BLOCK {
        if !stream.fill(buf)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A board's decode thread: blocks go out as they are decoded, at most
/// `BATCHES_AHEAD` ahead of the merge. Stops early when the merge is gone.
fn decode_thread(
    mut stream: Box<BoardStream>,
    batches: Sender<Batch>,
    used: Receiver<Vec<TraceRecord>>,
) -> Result<BoardReport, MergeError> {
    loop {
        let mut buf = used
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BLOCK + 4096));
        buf.clear();
        let more = decode_block(&mut stream, &mut buf)?;
        let batch = Batch {
            records: buf,
            bytes: stream.report.bytes,
        };
        if batches.send(batch).is_err() || !more {
            return Ok(stream.report);
        }
    }
}

/// Blocks a decode thread may have ready before the merge takes them.
const BATCHES_AHEAD: usize = 2;

impl Lane<'_> {
    /// Makes sure the lane has a record to offer, unless it is finished.
    fn ready(&mut self) -> Result<(), MergeError> {
        while self.pos == self.buf.len() && !self.done {
            self.pos = 0;
            match &mut self.source {
                Source::Here(stream) => {
                    self.buf.clear();
                    self.done = !decode_block(stream, &mut self.buf)?;
                    self.bytes = stream.report.bytes;
                }
                Source::Thread { batches, used } => {
                    let old = std::mem::take(&mut self.buf);
                    // A full return channel only means the thread has
                    // blocks enough; this one is then dropped.
                    if old.capacity() > 0 {
                        let _ = used.try_send(old);
                    }
                    match batches.recv() {
                        Ok(b) => {
                            self.buf = b.records;
                            self.bytes = b.bytes;
                        }
                        // The thread finished (or failed: its result says).
                        Err(_) => self.done = true,
                    }
                }
            }
        }
        Ok(())
    }
    fn rest(&self) -> &[TraceRecord] {
        &self.buf[self.pos..]
    }
}

/// The merge's output: the sink's own buffer when it has one (records are
/// built in place), else a block of ours handed over whole.
struct Out<'s> {
    sink: &'s mut dyn RecordSink,
    in_place: bool,
    block: Vec<TraceRecord>,
    filled: usize,
    records: u64,
}

impl<'s> Out<'s> {
    fn new(sink: &'s mut dyn RecordSink) -> Out<'s> {
        let in_place = sink.spare().is_some_and(|s| !s.is_empty());
        Out {
            sink,
            in_place,
            block: if in_place {
                Vec::new()
            } else {
                vec![TraceRecord::default(); BLOCK]
            },
            filled: 0,
            records: 0,
        }
    }
    /// Room for the next records; an error rather than no room, so that
    /// a sink breaking its promise cannot stall the merge.
    fn room(&mut self) -> Result<&mut [TraceRecord], MergeError> {
        let room = if self.in_place {
            self.sink.spare().unwrap_or_default()
        } else {
            &mut self.block[self.filled..]
        };
        if room.is_empty() {
            return Err(MergeError::io(
                "merge output",
                std::io::Error::other("the record sink gave no room for records"),
            ));
        }
        Ok(room)
    }
    /// The first `n` records of `room()` are done.
    fn advance(&mut self, n: usize) -> Result<(), MergeError> {
        self.records += n as u64;
        if self.in_place {
            return self.sink.commit(n);
        }
        self.filled += n;
        if self.filled == self.block.len() {
            self.flush()?;
        }
        Ok(())
    }
    /// Records that are ready as they are.
    fn extend(&mut self, records: &[TraceRecord]) -> Result<(), MergeError> {
        if records.is_empty() {
            return Ok(());
        }
        self.flush()?;
        self.records += records.len() as u64;
        self.sink.write(records)
    }
    fn flush(&mut self) -> Result<(), MergeError> {
        if self.filled > 0 {
            self.sink.write(&self.block[..self.filled])?;
            self.filled = 0;
        }
        Ok(())
    }
}

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
fn merge_two(a: &[TraceRecord], b: &[TraceRecord], out: &mut [TraceRecord]) -> (usize, usize) {
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

/// Merges every board of `set` into `sink`. `progress` is called now and
/// then with the capture bytes consumed so far. With `opts.decode_threads`
/// each board is decoded by a thread of its own while this one merges.
pub fn merge(
    set: &CaptureSet,
    opts: &MergeOptions,
    sink: &mut dyn RecordSink,
    progress: &mut dyn FnMut(u64),
) -> Result<MergeReport, MergeError> {
    let geometry = set.geometry.unwrap_or_default();
    let mapping = match &opts.mapping_toml {
        Some(text) => AddressMapping::from_toml(text, geometry)?,
        None => AddressMapping::linear(geometry),
    };
    let mut streams = Vec::new();
    let channels = set.boards.len() as u64;
    for (rank, &board) in set.boards.keys().enumerate() {
        let channel = match opts.interleave_shift {
            Some(shift) if channels > 1 => Some(ChannelJoin {
                channels,
                channel: rank as u64,
                shift: shift.clamp(6, 40),
            }),
            _ => None,
        };
        streams.push(Box::new(BoardStream::new(
            set,
            board,
            mapping.clone(),
            channel,
            opts.reorder_depth,
        )?));
    }
    let lane = |source| Lane {
        source,
        buf: Vec::new(),
        pos: 0,
        done: false,
        bytes: 0,
    };
    let (records, boards) = if opts.decode_threads {
        std::thread::scope(|scope| {
            let mut lanes = Vec::new();
            let mut threads = Vec::new();
            for stream in streams {
                let (batch_tx, batches) = crossbeam_channel::bounded(BATCHES_AHEAD);
                let (used, used_rx) = crossbeam_channel::bounded(BATCHES_AHEAD + 1);
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("decode-board-{}", stream.board()))
                        .spawn_scoped(scope, move || decode_thread(stream, batch_tx, used_rx))
                        .map_err(|e| MergeError::io("decode thread", e))?,
                );
                lanes.push(lane(Source::Thread { batches, used }));
            }
            let merged = interleave(&mut lanes, sink, progress);
            // Dropping the lanes stops threads still decoding (after an
            // error here); their own errors come first.
            drop(lanes);
            let mut boards = Vec::new();
            for t in threads {
                let report = t.join().map_err(|_| {
                    MergeError::io(
                        "decode thread",
                        std::io::Error::other("a decode thread panicked"),
                    )
                })?;
                boards.push(report?);
            }
            Ok::<_, MergeError>((merged?, boards))
        })?
    } else {
        let mut lanes: Vec<Lane> = streams.into_iter().map(|s| lane(Source::Here(s))).collect();
        let records = interleave(&mut lanes, sink, progress)?;
        let boards = lanes
            .into_iter()
            .filter_map(|l| match l.source {
                Source::Here(s) => Some(s.report),
                Source::Thread { .. } => None,
            })
            .collect();
        (records, boards)
    };
    Ok(MergeReport {
        boards,
        files: set.sources.len(),
        input_bytes: set.total_bytes(),
        records,
        tick_ps: set.tick_ps,
    })
}

/// Time-sorted records in blocks: a board's lane, or the merge of two
/// nodes (more than two boards make a tree of two-way merges).
enum Node<'l, 'a> {
    Leaf(&'l mut Lane<'a>),
    Pair(Box<Pair<'l, 'a>>),
}

struct Pair<'l, 'a> {
    left: Node<'l, 'a>,
    right: Node<'l, 'a>,
    buf: Vec<TraceRecord>,
    pos: usize,
    done: bool,
}

impl<'l, 'a> Node<'l, 'a> {
    /// The tree over `lanes` in order: the left half lower, as ties want.
    fn build(lanes: &'l mut [Lane<'a>]) -> Node<'l, 'a> {
        if lanes.len() == 1 {
            return Node::Leaf(&mut lanes[0]);
        }
        let (l, r) = lanes.split_at_mut(lanes.len() / 2);
        Node::Pair(Box::new(Pair {
            left: Node::build(l),
            right: Node::build(r),
            buf: Vec::new(),
            pos: 0,
            done: false,
        }))
    }
    /// Makes sure there is a record to offer, unless the node is finished.
    fn ready(&mut self) -> Result<(), MergeError> {
        let p = match self {
            Node::Leaf(lane) => return lane.ready(),
            Node::Pair(p) => p,
        };
        while p.pos == p.buf.len() && !p.done {
            p.buf.clear();
            p.pos = 0;
            p.left.ready()?;
            p.right.ready()?;
            let (a, b) = (p.left.rest(), p.right.rest());
            let (i, j) = match (a.is_empty(), b.is_empty()) {
                (true, true) => {
                    p.done = true;
                    (0, 0)
                }
                // One side is finished: the other's block as it is.
                (false, true) => {
                    p.buf.extend_from_slice(a);
                    (a.len(), 0)
                }
                (true, false) => {
                    p.buf.extend_from_slice(b);
                    (0, b.len())
                }
                (false, false) => {
                    p.buf.resize(BLOCK, TraceRecord::default());
                    let (i, j) = merge_two(a, b, &mut p.buf);
                    p.buf.truncate(i + j);
                    (i, j)
                }
            };
            p.left.consume(i);
            p.right.consume(j);
        }
        Ok(())
    }
    fn rest(&self) -> &[TraceRecord] {
        match self {
            Node::Leaf(lane) => lane.rest(),
            Node::Pair(p) => &p.buf[p.pos..],
        }
    }
    fn consume(&mut self, n: usize) {
        match self {
            Node::Leaf(lane) => lane.pos += n,
            Node::Pair(p) => p.pos += n,
        }
    }
    /// Capture bytes consumed by the lanes below.
    fn bytes(&self) -> u64 {
        match self {
            Node::Leaf(lane) => lane.bytes,
            Node::Pair(p) => p.left.bytes() + p.right.bytes(),
        }
    }
}

/// The k-way merge by time of the lanes into `sink`; returns the number of
/// records written.
fn interleave(
    lanes: &mut [Lane],
    sink: &mut dyn RecordSink,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, MergeError> {
    let bytes_done = |lanes: &[Lane]| lanes.iter().map(|l| l.bytes).sum::<u64>();
    let mut out = Out::new(sink);
    match lanes.len() {
        0 => {}
        1 => {
            // One board: its decoded blocks go to the sink as they are.
            let lane = &mut lanes[0];
            loop {
                lane.ready()?;
                if lane.pos == lane.buf.len() {
                    break;
                }
                let from = std::mem::replace(&mut lane.pos, lane.buf.len());
                out.extend(&lane.buf[from..])?;
                progress(lane.bytes);
            }
        }
        k => {
            // Two subtrees of lanes, lower boards on the left (so ties go
            // to them), merged block by block straight into the output.
            let (l, r) = lanes.split_at_mut(k / 2);
            let (mut left, mut right) = (Node::build(l), Node::build(r));
            let mut since_progress = 0usize;
            loop {
                left.ready()?;
                right.ready()?;
                let (a, b) = (left.rest(), right.rest());
                if a.is_empty() || b.is_empty() {
                    break;
                }
                let (i, j) = merge_two(a, b, out.room()?);
                left.consume(i);
                right.consume(j);
                out.advance(i + j)?;
                since_progress += i + j;
                if since_progress >= BLOCK {
                    progress(left.bytes() + right.bytes());
                    since_progress = 0;
                }
            }
            // One side is finished: the other's records follow as they are.
            for side in [&mut left, &mut right] {
                loop {
                    side.ready()?;
                    let rest = side.rest();
                    if rest.is_empty() {
                        break;
                    }
                    let n = rest.len();
                    out.extend(rest)?;
                    side.consume(n);
                }
            }
        }
    }
    out.flush()?;
    progress(bytes_done(lanes));
    Ok(out.records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth;
    use hmtt_format::record::TimedEvent;
    use hmtt_format::trace::RecordKind;
    use hmtt_format::Geometry;
    use proptest::prelude::*;

    fn sorted_run(ticks: Vec<u64>, board: u8) -> Vec<TraceRecord> {
        let mut ticks = ticks;
        ticks.sort_unstable();
        ticks
            .into_iter()
            .enumerate()
            .map(|(i, t)| TraceRecord::new(t, board, RecordKind::Cmd, i as u64))
            .collect()
    }

    proptest! {
        #[test]
        fn merge_two_is_a_stable_merge(
            a in proptest::collection::vec(0u64..50, 0..60),
            b in proptest::collection::vec(0u64..50, 0..60),
            room in 1usize..130,
        ) {
            let (a, b) = (sorted_run(a, 0), sorted_run(b, 1));
            let mut out = vec![TraceRecord::default(); room];
            let (i, j) = merge_two(&a, &b, &mut out);
            prop_assert!(i <= a.len() && j <= b.len() && i + j <= room);
            // It stops only when out is full or a run is used up.
            prop_assert!(i + j == room || i == a.len() || j == b.len());
            let mut want: Vec<TraceRecord> = a[..i].iter().chain(&b[..j]).copied().collect();
            want.sort_by_key(|r| (r.tick, r.board()));
            prop_assert_eq!(&out[..i + j], &want[..]);
            // Nothing left behind comes before what was taken.
            let last = out[..i + j].last().map(|r| (r.tick, r.board()));
            if let Some(last) = last {
                for r in a[i..].iter().chain(&b[j..]) {
                    prop_assert!((r.tick, r.board()) >= last);
                }
            }
        }
    }

    /// `boards` boards of a mixed workload (with gaps in time long enough
    /// that one board runs alone for a while), merged with `opts`; compared
    /// with each board decoded alone and stably sorted by (tick, board).
    fn check_boards(boards: u8, events: usize, opts: &MergeOptions) {
        let g = Geometry::ddr3_default();
        let mut files = Vec::new();
        let mut per_board: Vec<Vec<TimedEvent>> = Vec::new();
        for b in 0..boards {
            let mut ev = synth::workload(100 + u64::from(b), events, g);
            // A long stretch where only this board is busy.
            let shift = u64::from(b) * 3_000_000;
            for e in ev.iter_mut().skip(events / 2) {
                e.tick += shift;
            }
            let packets = synth::packets(b, g, 1250, 360, &ev);
            for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 3, &packets)
                .into_iter()
                .enumerate()
            {
                files.push((format!("b{b}p{p}"), f));
            }
            per_board.push(ev);
        }
        let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
        let mut sink = VecSink::default();
        let report = merge(&set, opts, &mut sink, &mut |_| {}).unwrap();
        let mut want = Vec::new();
        for b in 0..boards {
            let one = CaptureSet::from_memory(
                set.sources
                    .iter()
                    .filter(|s| s.board == b)
                    .map(|s| (s.name.clone(), s.data().to_vec()))
                    .collect(),
                u64::MAX,
            )
            .unwrap();
            // Decoded alone, then given the board's channel as the merge
            // of all boards would.
            let mut alone = VecSink::default();
            let o = MergeOptions {
                interleave_shift: None,
                ..opts.clone()
            };
            merge(&one, &o, &mut alone, &mut |_| {}).unwrap();
            assert_eq!(alone.0.len(), per_board[usize::from(b)].len());
            let join = opts.interleave_shift.map(|shift| ChannelJoin {
                channels: u64::from(boards),
                channel: u64::from(b),
                shift,
            });
            want.extend(alone.0.into_iter().map(|r| match join {
                Some(j) if r.is_access() && boards > 1 => {
                    TraceRecord::access(r.tick, b, r.kind() == RecordKind::Write, j.join(r.pa()))
                }
                _ => r,
            }));
        }
        want.sort_by_key(|r| (r.tick, r.board()));
        assert_eq!(report.records, want.len() as u64);
        assert_eq!(sink.0.len(), want.len());
        assert!(sink.0 == want, "{boards} boards differ");
    }

    #[test]
    fn one_to_four_boards_merge_like_a_stable_sort() {
        for decode_threads in [false, true] {
            let opts = MergeOptions {
                decode_threads,
                ..Default::default()
            };
            for boards in 1..=4 {
                check_boards(boards, 40_000, &opts);
            }
        }
    }

    #[test]
    fn damaged_packets_in_a_decode_thread_are_counted_as_without_threads() {
        // Board 1's first port file ends with packets of another geometry:
        // rejected and counted the same way with and without decode threads.
        let g = Geometry::ddr3_default();
        let other = Geometry::preset("ddr2-2g").unwrap();
        let mut files = Vec::new();
        for b in 0..2u8 {
            let ev = synth::workload(50 + u64::from(b), 20_000, g);
            let packets = synth::packets(b, g, 1250, 360, &ev);
            for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 2, &packets)
                .into_iter()
                .enumerate()
            {
                files.push((format!("b{b}p{p}"), f));
            }
        }
        let ev = synth::workload(99, 2_000, other);
        let foreign = synth::packets(1, other, 1250, 360, &ev);
        for p in &foreign {
            synth::append_record(&mut files[2].1, 0, &p.bytes).unwrap();
        }
        let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
        let mut runs = Vec::new();
        for decode_threads in [false, true] {
            let opts = MergeOptions {
                decode_threads,
                ..Default::default()
            };
            let mut sink = VecSink::default();
            let report = merge(&set, &opts, &mut sink, &mut |_| {}).unwrap();
            assert_eq!(report.boards[0].packets_rejected, 0);
            assert_eq!(
                report.boards[1].packets_rejected,
                foreign.len() as u64,
                "{report}"
            );
            assert!(report.to_string().contains("geometry"), "{report}");
            runs.push((report.records, sink.0));
        }
        assert_eq!(runs[0].0, 40_000);
        assert!(runs[0] == runs[1], "threaded and unthreaded merges differ");
    }

    #[test]
    fn records_built_in_the_writers_blocks_equal_the_block_path() {
        let g = Geometry::ddr3_default();
        for boards in 1..=3u8 {
            let mut files = Vec::new();
            for b in 0..boards {
                // Enough records to fill several of the writer's blocks.
                let ev = synth::workload(7 + u64::from(b), 150_000, g);
                let packets = synth::packets(b, g, 1250, 360, &ev);
                for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 2, &packets)
                    .into_iter()
                    .enumerate()
                {
                    files.push((format!("b{b}p{p}"), f));
                }
            }
            let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
            let opts = MergeOptions::default();
            let mut vec = VecSink::default();
            merge(&set, &opts, &mut vec, &mut |_| {}).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.hmtttrace");
            let mut w = crate::TraceWriter::create(&path).unwrap();
            assert!(w.spare().is_some_and(|s| !s.is_empty()));
            let report = merge(&set, &opts, &mut w, &mut |_| {}).unwrap();
            w.finish(&report, set.geometry, set.start_ns, &Default::default())
                .unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let v = hmtt_format::trace::TraceView::new_checked(&bytes).unwrap();
            assert_eq!(v.len(), vec.0.len(), "{boards} boards");
            assert!(v.records().eq(vec.0.iter().copied()), "{boards} boards");
            assert_eq!(v.index().count(), vec.0.len().div_ceil(4096));
            assert_eq!(v.header().common.last_tick, vec.0.last().unwrap().tick);
        }
    }

    #[test]
    fn interleaved_channels_merge_like_a_stable_sort() {
        for boards in 2..=3 {
            let opts = MergeOptions {
                interleave_shift: Some(12),
                ..Default::default()
            };
            check_boards(boards, 20_000, &opts);
        }
    }
}
