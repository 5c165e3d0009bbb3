//! The multi-board merge: each board's stream is already in time order, so
//! the boards are interleaved by a merge on the tick (ties go to the lower
//! board id): two-way merges of blocks, in a tree for more than two boards.
//! Records flow in blocks into a [`RecordSink`]; memory stays bounded by a
//! few decoded blocks per board. The two-way merge of two runs, the inner
//! loop, is `two_way`.

use hmtt_format::trace::TraceRecord;
use hmtt_format::AddressMapping;

use crate::error::MergeError;
use crate::input::CaptureSet;
use crate::reassemble::{BoardStream, ChannelJoin, DEFAULT_REORDER_DEPTH};
use crate::report::{BoardReport, MergeReport};
use crossbeam_channel::{Receiver, Sender};

#[cfg(test)]
mod tests;
mod two_way;

use two_way::merge_two;

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

/// Whether a decode thread per board pays off here: when the machine has
/// a core for each of the `boards` and one for the merge; with fewer the
/// threads only take turns, at a cost.
pub fn decode_threads_pay_off(boards: usize) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    boards > 1 && cores > boards
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
        preallocation_freed: set.preallocation_freed,
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
