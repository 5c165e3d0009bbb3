//! `hmtt capture --live`: the boards' statistics records (format.md §5.3)
//! as they arrive, while the capture writes every packet as usual. The
//! receive threads hand each statistics packet to a bounded queue (never
//! waiting on it: a packet that finds it full is counted, and still
//! written to the capture files); one thread puts the records back
//! together, writes each as a line of JSON (the side file's lines, for a
//! program to read online, from a FIFO or standard output) and sums them
//! per board into a [`LiveSnapshot`] once per refresh period.
//! It never drops or delays what the capture writes.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use hmtt_format::stats::{BankCounter, StatsAssembler, StatsLine, StatsPart, StatsRecord};
use hmtt_format::TickLength;
use serde::Serialize;

use crate::stats::Shared;

/// Statistics packets the queue holds before it counts the next ones as
/// dropped from the live view: at most 36 MiB of 9000-byte frames, and
/// milliseconds of records at the shortest interval, which the live
/// thread takes in microseconds each.
pub const QUEUE_PACKETS: usize = 4096;
/// Records whose parts are still coming, per board, before the oldest is
/// given up (a lost part must not keep a record open for the whole run).
const OPEN_RECORDS: usize = 64;
/// Hot pages a snapshot shows.
pub const SNAPSHOT_HOT_PAGES: usize = 8;

/// What `--live` shows and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveOptions {
    /// Sum the records into [`LiveSnapshot`]s once per `refresh`.
    pub view: bool,
    /// Write each record as a line of JSON here as it arrives (`-`:
    /// standard output); a FIFO is opened when the first record is ready.
    pub lines: Option<PathBuf>,
    pub refresh: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            view: true,
            lines: None,
            refresh: Duration::from_secs(1),
        }
    }
}

/// A queue of statistics packets for the live view: the receive threads'
/// end, and the live thread's.
pub fn queue() -> (Arc<LiveTap>, Receiver<Vec<u8>>) {
    let (tx, rx) = crossbeam_channel::bounded(QUEUE_PACKETS);
    let tap = LiveTap {
        tx,
        dropped: AtomicU64::new(0),
    };
    (Arc::new(tap), rx)
}

/// The receive threads' end of the queue.
#[derive(Debug)]
pub struct LiveTap {
    tx: Sender<Vec<u8>>,
    /// Statistics packets that found the queue full.
    pub dropped: AtomicU64,
}

impl LiveTap {
    /// Queues a copy of a statistics packet, or counts it if the queue is
    /// full: the receive thread never waits on the live view.
    pub fn offer(&self, packet: Vec<u8>) {
        if self.tx.try_send(packet).is_err() {
            self.dropped.fetch_add(1, Relaxed);
        }
    }
}

/// What the live view made of a run, for the capture's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LiveSummary {
    /// Whole records put back together.
    pub records: u64,
    /// Lines of JSON written (equal to `records` unless writing failed).
    pub lines_written: u64,
    /// Statistics packets that found the queue full (still captured).
    pub packets_dropped: u64,
    /// Packets that did not parse, and parts of records whose other parts
    /// never came (or that were given up after 64 younger records).
    pub packets_refused: u64,
    pub incomplete_parts: u64,
    /// Why the lines stopped, if they did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_error: Option<String>,
}

/// One board's records over one refresh period, with its totals so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LiveSnapshot {
    pub board: u8,
    /// Records in the period, and the traced time they span (ns).
    pub records: u64,
    pub traced_ns: f64,
    /// RD and WR commands counted by the Statistic Unit in the period.
    pub references: u64,
    /// Row-buffer outcomes of the period's column commands.
    pub row_hits: u64,
    pub row_misses: u64,
    pub row_conflicts: u64,
    /// References the board lost at its FIFO or passed over the per-clock
    /// limit, in the period and since the start.
    pub lost_fifo: u64,
    pub over_limit: u64,
    pub lost_fifo_total: u64,
    pub over_limit_total: u64,
    /// Records the board's statistics path could not send (each record
    /// tells how many before it), in the period and since the start.
    pub records_unsent: u64,
    pub records_unsent_total: u64,
    /// The RDHPU's hottest pages of the period (page number, that is line
    /// index >> 6, and references).
    pub hot_pages: Vec<(u64, u64)>,
    /// References the trace packets reported LOST on every port, and the
    /// board's packets missing from its sequence, since the start.
    pub trace_lost_refs: u64,
    pub packets_missing: u64,
}

impl LiveSnapshot {
    /// Bytes a second of traced time that the period's references moved
    /// (64-byte lines), when the period spans any time.
    pub fn bytes_per_second(&self) -> Option<f64> {
        (self.traced_ns > 0.0).then(|| self.references as f64 * 64.0 / (self.traced_ns * 1e-9))
    }

    /// The share of column commands that hit an open row.
    pub fn row_hit_rate(&self) -> Option<f64> {
        let all = self.row_hits + self.row_misses + self.row_conflicts;
        (all > 0).then(|| self.row_hits as f64 / all as f64)
    }

    /// Adds one record's counters and hot pages.
    pub fn add(&mut self, r: &StatsRecord) {
        self.records += 1;
        self.records_unsent += u64::from(r.unsent_before);
        self.records_unsent_total += u64::from(r.unsent_before);
        if let Some(tick) = TickLength::of_ps(r.tick_ps) {
            self.traced_ns += tick.ns(r.end_tick.saturating_sub(r.start_tick));
        }
        if !r.counters.is_empty() {
            let layout = r.layout();
            let total = |c| layout.bank_total(&r.counters, c);
            self.references += total(BankCounter::Rd) + total(BankCounter::Wr);
            self.row_hits += total(BankCounter::Hit);
            self.row_misses += total(BankCounter::Miss);
            self.row_conflicts += total(BankCounter::Conflict);
            let lost = u64::from(r.counters[layout.lost_fifo()]);
            let over = u64::from(r.counters[layout.over_limit()]);
            self.lost_fifo += lost;
            self.over_limit += over;
            self.lost_fifo_total += lost;
            self.over_limit_total += over;
        }
        if let Some(reuse) = &r.reuse {
            for h in &reuse.hot {
                match self.hot_pages.iter_mut().find(|(p, _)| *p == h.page) {
                    Some(e) => e.1 += u64::from(h.count),
                    None => self.hot_pages.push((h.page, u64::from(h.count))),
                }
            }
        }
    }

    /// The period's figures cleared, the totals kept.
    fn next_period(&self) -> LiveSnapshot {
        LiveSnapshot {
            board: self.board,
            lost_fifo_total: self.lost_fifo_total,
            over_limit_total: self.over_limit_total,
            records_unsent_total: self.records_unsent_total,
            ..LiveSnapshot::default()
        }
    }

    /// The snapshot as shown: the hottest pages first, at most
    /// [`SNAPSHOT_HOT_PAGES`].
    fn shown(&self) -> LiveSnapshot {
        let mut s = self.clone();
        s.hot_pages
            .sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        s.hot_pages.truncate(SNAPSHOT_HOT_PAGES);
        s
    }
}

impl std::fmt::Display for LiveSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "live board {}: {} records, {:.3} ms traced",
            self.board,
            self.records,
            self.traced_ns / 1e6
        )?;
        match self.bytes_per_second() {
            Some(b) => write!(f, ", {:.2} GB/s", b / 1e9)?,
            None => write!(f, ", no traced time")?,
        }
        match self.row_hit_rate() {
            Some(h) => write!(f, ", row hits {:.1} %", h * 100.0)?,
            None => write!(f, ", no column commands")?,
        }
        write!(
            f,
            "; lost {} at the FIFO, {} over the limit ({} and {} since the start), trace LOST {} refs, {} packets missing, {} records unsent ({} since the start)",
            self.lost_fifo,
            self.over_limit,
            self.lost_fifo_total,
            self.over_limit_total,
            self.trace_lost_refs,
            self.packets_missing,
            self.records_unsent,
            self.records_unsent_total
        )?;
        if !self.hot_pages.is_empty() {
            // Page numbers as `hmtt stats` shows them: line index >> 6.
            write!(f, "; hot pages")?;
            for (page, count) in &self.hot_pages {
                write!(f, " {page:#x} ({count})")?;
            }
        }
        Ok(())
    }
}

/// The live thread, its queue and what it hands back.
pub struct Live {
    pub tap: Arc<LiveTap>,
    handle: std::thread::JoinHandle<LiveSummary>,
    done: Arc<AtomicBool>,
    snapshots: Option<Receiver<LiveSnapshot>>,
}

impl Live {
    /// Starts the live thread on the queue that `tap` feeds; `shared`
    /// gives it the capture's own counts (LOST words of the trace packets,
    /// missing packets).
    pub fn start(
        opts: LiveOptions,
        shared: Arc<Shared>,
        tap: Arc<LiveTap>,
        rx: Receiver<Vec<u8>>,
    ) -> std::io::Result<Live> {
        let done = Arc::new(AtomicBool::new(false));
        let (snap_tx, snap_rx) = match opts.view {
            true => {
                let (t, r) = crossbeam_channel::unbounded();
                (Some(t), Some(r))
            }
            false => (None, None),
        };
        let worker = Worker {
            opts,
            shared,
            done: done.clone(),
            snapshots: snap_tx,
            boards: BTreeMap::new(),
            assemblers: HashMap::new(),
            summary: LiveSummary::default(),
            lines: None,
        };
        let handle = std::thread::Builder::new()
            .name("hmtt-live".into())
            .spawn(move || worker.run(rx))?;
        Ok(Live {
            tap,
            handle,
            done,
            snapshots: snap_rx,
        })
    }

    /// The snapshots, once per refresh period per board that sent records;
    /// the channel ends when the capture does.
    pub fn snapshots(&mut self) -> Option<Receiver<LiveSnapshot>> {
        self.snapshots.take()
    }

    /// Once the receive threads are done: takes the packets still queued,
    /// shows a last snapshot and returns what the live view made.
    pub fn finish(self) -> LiveSummary {
        self.done.store(true, Relaxed);
        let dropped = self.tap.dropped.load(Relaxed);
        let mut s = self.handle.join().unwrap_or_else(|_| LiveSummary {
            lines_error: Some("the live thread panicked".into()),
            ..LiveSummary::default()
        });
        s.packets_dropped = dropped;
        s
    }
}

struct Worker {
    opts: LiveOptions,
    shared: Arc<Shared>,
    done: Arc<AtomicBool>,
    snapshots: Option<Sender<LiveSnapshot>>,
    boards: BTreeMap<u8, LiveSnapshot>,
    assemblers: HashMap<u8, StatsAssembler>,
    summary: LiveSummary,
    lines: Option<Box<dyn Write + Send>>,
}

impl Worker {
    fn run(mut self, rx: Receiver<Vec<u8>>) -> LiveSummary {
        let mut next_show = Instant::now() + self.opts.refresh;
        loop {
            let wait = next_show.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait.min(Duration::from_millis(50))) {
                Ok(packet) => self.take(&packet),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if Instant::now() >= next_show {
                self.show();
                next_show = Instant::now() + self.opts.refresh;
            }
            if self.done.load(Relaxed) {
                while let Ok(packet) = rx.try_recv() {
                    self.take(&packet);
                }
                break;
            }
        }
        self.show();
        for a in self.assemblers.values_mut() {
            self.summary.incomplete_parts += a.finish();
        }
        if let Some(w) = &mut self.lines {
            if let Err(e) = w.flush() {
                self.lines_failed(e);
            }
        }
        self.summary
    }

    fn take(&mut self, packet: &[u8]) {
        let Ok(part) = StatsPart::parse(packet) else {
            self.summary.packets_refused += 1;
            return;
        };
        let assembler = self.assemblers.entry(part.board).or_default();
        let record = assembler.push(part);
        assembler.give_up_beyond(OPEN_RECORDS);
        let Some(record) = record else {
            return;
        };
        self.summary.records += 1;
        self.write_line(&record);
        self.boards
            .entry(record.board)
            .or_insert_with(|| LiveSnapshot {
                board: record.board,
                ..LiveSnapshot::default()
            })
            .add(&record);
    }

    fn write_line(&mut self, record: &StatsRecord) {
        if self.summary.lines_error.is_some() {
            return;
        }
        let Some(path) = &self.opts.lines else {
            return;
        };
        if self.lines.is_none() {
            let opened: std::io::Result<Box<dyn Write + Send>> = if path.as_os_str() == "-" {
                Ok(Box::new(std::io::stdout()))
            } else {
                // A FIFO's open waits for its reader: the queue holds the
                // packets meanwhile.
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(path)
                    .map(|f| Box::new(f) as Box<dyn Write + Send>)
            };
            match opened {
                Ok(w) => self.lines = Some(w),
                Err(e) => return self.lines_failed(e),
            }
        }
        let line =
            serde_json::to_string(&StatsLine::from_record(record)).expect("a record serializes");
        let w = self.lines.as_mut().expect("opened above");
        // One line at a time, flushed: a reader sees each record whole as
        // soon as it is made.
        match writeln!(w, "{line}").and_then(|()| w.flush()) {
            Ok(()) => self.summary.lines_written += 1,
            Err(e) => self.lines_failed(e),
        }
    }

    fn lines_failed(&mut self, e: std::io::Error) {
        let path = self
            .opts
            .lines
            .as_deref()
            .unwrap_or(std::path::Path::new("-"));
        let msg = format!(
            "live lines to {}: {e}; no more lines written",
            path.display()
        );
        tracing::warn!("{msg}");
        self.summary.lines_error = Some(msg);
        self.lines = None;
    }

    fn show(&mut self) {
        let Some(tx) = &self.snapshots else {
            return;
        };
        let seqs = self.shared.boards();
        let trace_lost: u64 = self
            .shared
            .ports
            .iter()
            .map(|p| p.lost_refs.load(Relaxed))
            .sum();
        for snap in self.boards.values_mut() {
            if snap.records == 0 {
                continue;
            }
            snap.trace_lost_refs = trace_lost;
            snap.packets_missing = seqs
                .iter()
                .find(|b| b.board == snap.board)
                .map_or(0, |b| b.seq.lost);
            let _ = tx.send(snap.shown());
            *snap = snap.next_period();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;
    use hmtt_format::stats::{CounterLayout, HotPage, ReuseRecord};

    fn record(start: u64, hot: &[(u64, u32)]) -> StatsRecord {
        let g = Geometry::ddr3_default();
        let layout = CounterLayout::new(&g);
        let mut counters = vec![0u32; layout.len()];
        // Rank 0 bank 1 and rank 1 bank 7 count; every other bank is idle.
        for (rank, bank, n) in [(0, 1, 10u32), (layout.ranks - 1, layout.banks - 1, 30)] {
            counters[layout.bank(rank, bank, BankCounter::Rd)] = n;
            counters[layout.bank(rank, bank, BankCounter::Wr)] = n / 2;
            counters[layout.bank(rank, bank, BankCounter::Hit)] = n;
            counters[layout.bank(rank, bank, BankCounter::Miss)] = n / 10;
            counters[layout.bank(rank, bank, BankCounter::Conflict)] = n / 2 - n / 10;
        }
        counters[layout.lost_fifo()] = 3;
        counters[layout.over_limit()] = 1;
        StatsRecord {
            board: 1,
            flags: 1,
            start_tick: start,
            end_tick: start + 8000,
            interval_log2: 13,
            geometry: g,
            tick_ps: 1250,
            unsent_before: 2,
            counters,
            reuse: Some(ReuseRecord {
                depth: 128,
                page_shift: 6,
                hot_entries: 8,
                histogram: vec![0; 129],
                skipped: 0,
                hot: hot
                    .iter()
                    .map(|&(page, count)| HotPage { page, count })
                    .collect(),
            }),
        }
    }

    #[test]
    fn a_period_sums_its_records_and_keeps_the_totals_across_periods() {
        let mut s = LiveSnapshot {
            board: 1,
            ..LiveSnapshot::default()
        };
        s.add(&record(0, &[(0x10, 5), (0x20, 9)]));
        s.add(&record(8192, &[(0x20, 1), (0x30, 7)]));
        assert_eq!(s.records, 2);
        // 2 records of 8000 ticks of 1.25 ns.
        assert_eq!(s.traced_ns, 20_000.0);
        // RD + WR: (10 + 5) + (30 + 15), twice.
        assert_eq!(s.references, 120);
        assert_eq!((s.row_hits, s.row_misses, s.row_conflicts), (80, 8, 32));
        assert_eq!(s.row_hit_rate(), Some(80.0 / 120.0));
        assert_eq!(s.bytes_per_second(), Some(120.0 * 64.0 / 20e-6));
        assert_eq!((s.lost_fifo, s.over_limit), (6, 2));
        assert_eq!((s.records_unsent, s.records_unsent_total), (4, 4));
        let shown = s.shown();
        assert_eq!(shown.hot_pages, vec![(0x20, 10), (0x30, 7), (0x10, 5)]);
        let text = shown.to_string();
        for part in [
            "live board 1: 2 records, 0.020 ms traced, 0.38 GB/s, row hits 66.7 %",
            "lost 6 at the FIFO, 2 over the limit (6 and 2 since the start)",
            "4 records unsent (4 since the start)",
            "hot pages 0x20 (10) 0x30 (7) 0x10 (5)",
        ] {
            assert!(text.contains(part), "{part} not in {text}");
        }
        let mut next = s.next_period();
        assert_eq!(next.records, 0);
        assert!(next.hot_pages.is_empty());
        next.add(&record(16384, &[]));
        assert_eq!((next.lost_fifo, next.lost_fifo_total), (3, 9));
        assert_eq!(next.over_limit_total, 3);
        assert_eq!((next.records_unsent, next.records_unsent_total), (2, 6));
    }

    #[test]
    fn a_snapshot_without_time_or_column_commands_says_so() {
        let s = LiveSnapshot::default();
        assert_eq!(s.bytes_per_second(), None);
        assert_eq!(s.row_hit_rate(), None);
        let text = s.to_string();
        assert!(text.contains("no traced time") && text.contains("no column commands"));
    }
}
