//! The board's statistics records (format.md §5.3) of a run's captures:
//! `hmtt merge` keeps them in a side file beside the trace
//! (`TRACE.stats.jsonl`), `hmtt stats` shows them per interval and in
//! total: the Statistic Unit's counters and the Reuse Distance & Hot Pages
//! Unit's histogram, skipped references and hot pages.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use hmtt_format::atomic_file::AtomicFile;
use hmtt_format::capture::CaptureReader;
use hmtt_format::geometry::Geometry;
pub use hmtt_format::stats::StatsLine;
use hmtt_format::stats::{
    is_stats_packet, BankCounter, CounterLayout, RankCounter, ReuseRecord, StatsAssembler,
    StatsPart,
};

use crate::error::MergeError;
use crate::input::CaptureSet;

/// The side file of the trace at `trace`: `TRACE.stats.jsonl`.
pub fn side_file_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".stats.jsonl");
    PathBuf::from(name)
}

/// What the merge found of statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StatsKept {
    /// Statistics packets read, and whole records written.
    pub packets: u64,
    pub records: u64,
    /// Packets refused (damaged, or of another board than their file's).
    pub refused: u64,
    /// Parts of records whose other parts never came.
    pub incomplete_parts: u64,
    /// The side file, when there was a record to write.
    pub path: Option<PathBuf>,
}

impl StatsKept {
    /// Whether statistics packets were read but not kept.
    pub fn rejected(&self) -> bool {
        self.refused + self.incomplete_parts > 0
    }
}

/// Writes the statistics records of `set`'s captures into the side file
/// of `trace`, one line per whole record, each board's in the order its
/// ports received them (their files' receive times). Writes no file when
/// there is no record (and removes one an earlier merge left). The capture files are read, never held whole.
pub fn keep_statistics(set: &CaptureSet, trace: &Path) -> Result<StatsKept, MergeError> {
    let path = side_file_path(trace);
    let mut kept = StatsKept::default();
    let mut out: Option<std::io::BufWriter<AtomicFile>> = None;
    for ports in set.boards.values() {
        let mut readers = Vec::new();
        for sources in ports.values() {
            readers.push(PortStats::new(set, sources.clone()));
        }
        let mut assembler = StatsAssembler::default();
        loop {
            // The port whose next statistics packet was received first.
            let next = readers
                .iter_mut()
                .enumerate()
                .filter_map(|(i, r)| r.peek_time().map(|t| (t, i)))
                .min();
            let Some((_, i)) = next else {
                break;
            };
            let Some((board, bytes)) = readers[i].take() else {
                continue;
            };
            kept.packets += 1;
            let part = match StatsPart::parse(&bytes) {
                Ok(p) if p.board == board => p,
                _ => {
                    kept.refused += 1;
                    continue;
                }
            };
            if let Some(record) = assembler.push(part) {
                let w = match &mut out {
                    Some(w) => w,
                    None => out.insert(std::io::BufWriter::new(
                        AtomicFile::create(&path).map_err(|e| MergeError::io(&path, e))?,
                    )),
                };
                let line = serde_json::to_string(&StatsLine::from_record(&record))
                    .expect("a record serializes");
                writeln!(w, "{line}").map_err(|e| MergeError::io(&path, e))?;
                kept.records += 1;
            }
        }
        kept.incomplete_parts += assembler.finish();
    }
    if let Some(w) = out {
        let file = w
            .into_inner()
            .map_err(|e| MergeError::io(&path, e.into_error()))?;
        file.commit().map_err(|e| MergeError::io(&path, e))?;
        kept.path = Some(path);
    } else if path.is_file() {
        // A side file of an earlier merge to this trace would tell of
        // records this one does not have.
        std::fs::remove_file(&path).map_err(|e| MergeError::io(&path, e))?;
    }
    Ok(kept)
}

/// The statistics packets of one port's files, in file order.
struct PortStats<'a> {
    set: &'a CaptureSet,
    files: Vec<usize>,
    file: usize,
    reader: Option<CaptureReader<'a>>,
    head: Option<(u64, u8, Vec<u8>)>,
}

impl<'a> PortStats<'a> {
    fn new(set: &'a CaptureSet, files: Vec<usize>) -> PortStats<'a> {
        PortStats {
            set,
            files,
            file: 0,
            reader: None,
            head: None,
        }
    }

    fn peek_time(&mut self) -> Option<u64> {
        while self.head.is_none() {
            if self.reader.is_none() {
                let &source = self.files.get(self.file)?;
                self.file += 1;
                // The merge opened every file already: its header is sound.
                if let Ok((_, r)) = CaptureReader::new(self.set.sources[source].data()) {
                    self.reader = Some(r);
                }
                continue;
            }
            let reader = self.reader.as_mut().expect("set above");
            match reader.next() {
                Some(rec) if is_stats_packet(rec.packet) => {
                    let board = self.set.sources[self.files[self.file - 1]].board;
                    self.head = Some((rec.recv_ns, board, rec.packet.to_vec()));
                }
                Some(_) => {}
                None => self.reader = None,
            }
        }
        self.head.as_ref().map(|h| h.0)
    }

    fn take(&mut self) -> Option<(u8, Vec<u8>)> {
        self.head.take().map(|(_, b, bytes)| (b, bytes))
    }
}

/// Totals and the first intervals of a side file, per board.
#[derive(Debug, Clone, Default)]
pub struct BoardStatistics {
    pub board: u8,
    pub geometry: Option<Geometry>,
    pub tick_ps: u16,
    pub records: u64,
    /// Records the board could not send, as the records sent report them.
    pub unsent: u64,
    /// Ticks the records cover.
    pub ticks: u64,
    /// Records with the Statistic Unit's counters.
    pub counter_records: u64,
    /// Sums over every record, in the record's counter order.
    pub totals: Vec<u64>,
    /// The RDHPU's sections summed, when a record has one.
    pub reuse: Option<ReuseTotals>,
    /// The first records, whole.
    pub first: Vec<StatsLine>,
}

impl BoardStatistics {
    pub fn layout(&self) -> Option<CounterLayout> {
        self.geometry.as_ref().map(CounterLayout::new)
    }

    /// A bank counter summed over every rank and bank.
    pub fn bank_total(&self, c: BankCounter) -> u64 {
        let Some(l) = self.layout() else { return 0 };
        l.bank_indices(c).map(|i| self.totals[i]).sum()
    }

    /// A rank counter summed over every rank.
    pub fn rank_total(&self, c: RankCounter) -> u64 {
        let Some(l) = self.layout() else { return 0 };
        (0..l.ranks).map(|r| self.totals[l.rank(r, c)]).sum()
    }

    pub fn over_limit(&self) -> u64 {
        self.layout().map_or(0, |l| self.totals[l.over_limit()])
    }

    pub fn lost_fifo(&self) -> u64 {
        self.layout().map_or(0, |l| self.totals[l.lost_fifo()])
    }
}

/// The RDHPU's sections of a board's records, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReuseTotals {
    pub records: u64,
    /// Ticks of the records with the section.
    pub ticks: u64,
    pub histogram: Vec<u64>,
    pub skipped: u64,
    /// Every page of the records' hot lists with the sum of its counts
    /// there, hottest first (the most references, then the lowest page).
    pub hot: Vec<(u64, u64)>,
}

impl ReuseTotals {
    fn add(&mut self, r: &ReuseRecord, ticks: u64, hot: &mut BTreeMap<u64, u64>) {
        if self.histogram.len() < r.histogram.len() {
            self.histogram.resize(r.histogram.len(), 0);
        }
        for (t, &h) in self.histogram.iter_mut().zip(&r.histogram) {
            *t += u64::from(h);
        }
        self.records += 1;
        self.ticks += ticks;
        self.skipped += u64::from(r.skipped);
        for p in &r.hot {
            *hot.entry(p.page).or_default() += u64::from(p.count);
        }
    }

    /// References the unit took.
    pub fn taken(&self) -> u64 {
        self.histogram.iter().sum()
    }
}

/// Why a side file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatsFileError {
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: line {line}: {reason}", path.display())]
    Bad {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// Reads a side file: per board, the totals and the first `max_rows`
/// records (memory bounded by `max_rows`, not by the file).
pub fn read_statistics(
    path: &Path,
    max_rows: usize,
) -> Result<Vec<BoardStatistics>, StatsFileError> {
    let f = std::fs::File::open(path).map_err(|source| StatsFileError::Io {
        path: path.into(),
        source,
    })?;
    let mut boards: BTreeMap<u8, BoardStatistics> = BTreeMap::new();
    let mut hot: BTreeMap<u8, BTreeMap<u64, u64>> = BTreeMap::new();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let bad = |reason: String| StatsFileError::Bad {
            path: path.into(),
            line: i + 1,
            reason,
        };
        let line = line.map_err(|source| StatsFileError::Io {
            path: path.into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let s: StatsLine = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let g = s
            .geometry()
            .ok_or_else(|| bad(format!("geometry {:?}", s.geometry)))?;
        if s.counters.is_empty() && s.reuse.is_none() {
            return Err(bad(
                "a record with neither counters nor a reuse section".into()
            ));
        }
        if let Some(r) = &s.reuse {
            if r.histogram.len() != usize::from(r.depth) + 1 {
                return Err(bad(format!(
                    "a reuse histogram of {} bins, its stack of {} needs {}",
                    r.histogram.len(),
                    r.depth,
                    usize::from(r.depth) + 1
                )));
            }
        }
        if !s.counters.is_empty() && s.counters.len() != CounterLayout::new(&g).len() {
            return Err(bad(format!(
                "{} counters, the geometry's record has {}",
                s.counters.len(),
                CounterLayout::new(&g).len()
            )));
        }
        let b = boards.entry(s.board).or_insert_with(|| BoardStatistics {
            board: s.board,
            geometry: Some(g),
            tick_ps: s.tick_ps,
            totals: vec![0; CounterLayout::new(&g).len()],
            ..Default::default()
        });
        if b.geometry != Some(g) {
            return Err(bad(
                "a geometry other than the board's first record's".into()
            ));
        }
        b.records += 1;
        b.unsent += u64::from(s.unsent_before);
        let ticks = s.end_tick.saturating_sub(s.start_tick);
        b.ticks += ticks;
        if !s.counters.is_empty() {
            b.counter_records += 1;
        }
        for (t, &c) in b.totals.iter_mut().zip(&s.counters) {
            *t += u64::from(c);
        }
        if let Some(r) = &s.reuse {
            let pages = hot.entry(s.board).or_default();
            b.reuse
                .get_or_insert_with(ReuseTotals::default)
                .add(r, ticks, pages);
        }
        if b.first.len() < max_rows {
            b.first.push(s);
        }
    }
    for (board, pages) in hot {
        if let Some(r) = boards.get_mut(&board).and_then(|b| b.reuse.as_mut()) {
            r.hot = pages.into_iter().collect();
            r.hot
                .sort_by_key(|&(page, count)| (std::cmp::Reverse(count), page));
        }
    }
    Ok(boards.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_side_file_is_named_after_the_trace() {
        assert_eq!(
            side_file_path(Path::new("run/x.hmtttrace")),
            PathBuf::from("run/x.hmtttrace.stats.jsonl")
        );
    }
}
