//! DMA request sizes of a virtual trace, estimated from its DMA references
//! (the kernel log's DMA_MAP records, which give them exactly, are not in
//! the virtual trace; `hmtt replay` prints those as Table 4). A request is
//! a run of DMA references of one direction (read: to the device; write:
//! from it), each within 4 KiB of the one before (the controller may
//! reorder the lines of a transfer); CPU references in between do not end
//! it. Its size is the span of lines it covers.

use serde::Serialize;

const NEAR_LINES: u64 = 64;
/// Table 4's size classes, upper bounds in bytes.
pub const SIZE_CLASSES: [u64; 3] = [4096, 16384, 65536];

#[derive(Clone, Copy)]
struct Run {
    write: bool,
    lo: u64,
    hi: u64,
    last: u64,
}

/// Runs in the making.
#[derive(Default)]
pub struct DmaRequests {
    run: Option<Run>,
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
        match &mut self.run {
            Some(r) if r.write == write && r.last.abs_diff(line) <= NEAR_LINES => {
                r.lo = r.lo.min(line);
                r.hi = r.hi.max(line);
                r.last = line;
            }
            _ => {
                self.close();
                self.run = Some(Run {
                    write,
                    lo: line,
                    hi: line,
                    last: line,
                });
            }
        }
    }

    fn close(&mut self) {
        if let Some(r) = self.run.take() {
            let bytes = (r.hi - r.lo + 1) * 64;
            let d = &mut self.by_dir[usize::from(r.write)];
            d.0 += 1;
            d.1 += bytes;
            d.2[SIZE_CLASSES.iter().take_while(|&&c| bytes > c).count()] += 1;
        }
    }

    pub fn finish(&mut self) -> Vec<DmaRow> {
        self.close();
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
