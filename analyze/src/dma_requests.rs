//! DMA request sizes of a virtual trace, estimated from its DMA references
//! (the kernel log's DMA_MAP records, which give them exactly, are not in
//! the virtual trace; `hmtt replay` prints those as Table 4). A request is
//! a run of DMA references of one direction (read: to the device; write:
//! from it), each within 4 KiB of the one before (the controller may
//! reorder the lines of a transfer); CPU references in between do not end
//! it, and up to [`OPEN_RUNS`] runs go on at once (a device streams
//! several buffers together, on several channels). A line the run already
//! holds starts a new run (the next transfer through the same buffer; the
//! lines held are remembered up to [`MAX_TRACKED`] per run). Its size is
//! the span of lines it covers.

use serde::Serialize;

use super::FastSet;

const NEAR_LINES: u64 = 64;
/// Runs followed at once; the least recently extended ends first.
pub const OPEN_RUNS: usize = 8;
/// Lines a run remembers (1 MiB) to tell a repeated transfer.
pub const MAX_TRACKED: usize = 16384;
/// Table 4's size classes, upper bounds in bytes.
pub const SIZE_CLASSES: [u64; 3] = [4096, 16384, 65536];

struct Run {
    write: bool,
    lo: u64,
    hi: u64,
    last: u64,
    lines: FastSet<u64>,
}

/// Runs in the making.
#[derive(Default)]
pub struct DmaRequests {
    /// Open runs, most recently extended last.
    runs: Vec<Run>,
    /// [read, write] → (requests, bytes, counts per size class (4 classes)).
    by_dir: [(u64, u64, [u64; 4]); 2],
}

/// One direction's requests.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DmaRow {
    /// "to device (DMA read)" or "from device (DMA write)".
    pub direction: String,
    pub requests: u64,
    pub bytes: u64,
    /// Requests of at most 4K, 4K-16K, 16K-64K, over 64K.
    pub size_classes: [u64; 4],
}

impl DmaRequests {
    /// A DMA reference to `line`.
    #[inline]
    pub fn add(&mut self, line: u64, write: bool) {
        let near = self
            .runs
            .iter()
            .rposition(|r| r.write == write && r.last.abs_diff(line) <= NEAR_LINES);
        let repeated = near.is_some_and(|i| self.runs[i].lines.contains(&line));
        if let (Some(i), true) = (near, repeated) {
            let r = self.runs.remove(i);
            self.close(r);
        }
        let mut run = match near.filter(|_| !repeated) {
            Some(i) => self.runs.remove(i),
            None => {
                if self.runs.len() == OPEN_RUNS {
                    let oldest = self.runs.remove(0);
                    self.close(oldest);
                }
                Run {
                    write,
                    lo: line,
                    hi: line,
                    last: line,
                    lines: FastSet::default(),
                }
            }
        };
        run.lo = run.lo.min(line);
        run.hi = run.hi.max(line);
        run.last = line;
        if run.lines.len() < MAX_TRACKED {
            run.lines.insert(line);
        }
        self.runs.push(run);
    }

    fn close(&mut self, r: Run) {
        let bytes = (r.hi - r.lo + 1) * 64;
        let d = &mut self.by_dir[usize::from(r.write)];
        d.0 += 1;
        d.1 += bytes;
        d.2[SIZE_CLASSES.iter().take_while(|&&c| bytes > c).count()] += 1;
    }

    pub fn finish(&mut self) -> Vec<DmaRow> {
        for r in std::mem::take(&mut self.runs) {
            self.close(r);
        }
        ["to device (DMA read)", "from device (DMA write)"]
            .iter()
            .zip(&self.by_dir)
            .filter(|(_, d)| d.0 > 0)
            .map(|(name, d)| DmaRow {
                direction: name.to_string(),
                requests: d.0,
                bytes: d.1,
                size_classes: d.2,
            })
            .collect()
    }
}
