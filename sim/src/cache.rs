//! The last-level cache: set-associative, physically indexed, 64-byte
//! lines, write-back, write-allocate, true LRU. Switched off it is the
//! paper's cache-disabled mode: every reference reaches memory.

use hmtt_format::LINE_BYTES;

/// Size and associativity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CacheConfig {
    pub size_bytes: u64,
    pub ways: u32,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            size_bytes: 2 << 20,
            ways: 16,
        }
    }
}

/// Why a cache shape is impossible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cache of {size_bytes} bytes and {ways} ways: {reason}")]
pub struct CacheShapeError {
    pub size_bytes: u64,
    pub ways: u32,
    pub reason: &'static str,
}

/// What one reference needs from memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The line must be read from memory (a miss, also for writes).
    pub fill: bool,
    /// A dirty victim to write back (its line address).
    pub writeback: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub writebacks: u64,
}

const INVALID: u64 = u64::MAX;

/// The cache state.
#[derive(Debug, Clone)]
pub struct Cache {
    sets: u64,
    ways: usize,
    /// Line number (pa / 64) per way, `INVALID` when empty.
    tags: Vec<u64>,
    /// Last use per way; the smallest is the LRU victim.
    used: Vec<u64>,
    dirty: Vec<bool>,
    clock: u64,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(cfg: CacheConfig) -> Result<Cache, CacheShapeError> {
        let err = |reason| CacheShapeError {
            size_bytes: cfg.size_bytes,
            ways: cfg.ways,
            reason,
        };
        if cfg.ways == 0 {
            return Err(err("needs at least one way"));
        }
        let lines = cfg.size_bytes / LINE_BYTES;
        if lines == 0 || !lines.is_multiple_of(u64::from(cfg.ways)) {
            return Err(err("size must be a whole number of sets of 64-byte lines"));
        }
        let sets = lines / u64::from(cfg.ways);
        if lines > 1 << 28 {
            return Err(err("larger than 16 GiB"));
        }
        let n = lines as usize;
        Ok(Cache {
            sets,
            ways: cfg.ways as usize,
            tags: vec![INVALID; n],
            used: vec![0; n],
            dirty: vec![false; n],
            clock: 0,
            stats: CacheStats::default(),
        })
    }

    #[inline]
    fn set_of(&self, line: u64) -> usize {
        (line % self.sets) as usize * self.ways
    }

    /// A load or store of the line holding physical address `pa`.
    #[inline]
    pub fn access(&mut self, pa: u64, write: bool) -> Outcome {
        let line = pa / LINE_BYTES;
        let base = self.set_of(line);
        self.clock += 1;
        let set = base..base + self.ways;
        if let Some(i) = self.tags[set.clone()].iter().position(|&t| t == line) {
            let w = base + i;
            self.used[w] = self.clock;
            self.dirty[w] |= write;
            self.stats.hits += 1;
            return Outcome::default();
        }
        self.stats.misses += 1;
        let victim = set
            .min_by_key(|&w| {
                if self.tags[w] == INVALID {
                    0
                } else {
                    self.used[w]
                }
            })
            .expect("ways >= 1");
        let writeback = (self.tags[victim] != INVALID && self.dirty[victim])
            .then(|| self.tags[victim] * LINE_BYTES);
        if writeback.is_some() {
            self.stats.writebacks += 1;
        }
        self.tags[victim] = line;
        self.used[victim] = self.clock;
        self.dirty[victim] = write;
        Outcome {
            fill: true,
            writeback,
        }
    }

    /// Writes back (if dirty) and invalidates the line holding `pa`, as
    /// streaming DMA mapping does; returns the line to write back.
    pub fn flush_line(&mut self, pa: u64) -> Option<u64> {
        let line = pa / LINE_BYTES;
        let base = self.set_of(line);
        let i = self.tags[base..base + self.ways]
            .iter()
            .position(|&t| t == line)?;
        let w = base + i;
        self.tags[w] = INVALID;
        let dirty = std::mem::take(&mut self.dirty[w]);
        if dirty {
            self.stats.writebacks += 1;
        }
        dirty.then_some(line * LINE_BYTES)
    }

    /// Every dirty line (then all invalid), in set order: `wbinvd`.
    pub fn flush_all(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        for w in 0..self.tags.len() {
            if self.tags[w] != INVALID && self.dirty[w] {
                out.push(self.tags[w] * LINE_BYTES);
                self.stats.writebacks += 1;
            }
            self.tags[w] = INVALID;
            self.dirty[w] = false;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_write_back_write_allocate() {
        // 2 sets of 2 ways.
        let mut c = Cache::new(CacheConfig {
            size_bytes: 256,
            ways: 2,
        })
        .unwrap();
        let a = 0; // set 0
        let b = 128; // set 0
        let d = 256; // set 0
        let filled = |writeback| Outcome {
            fill: true,
            writeback,
        };
        assert_eq!(c.access(a, true), filled(None));
        assert_eq!(c.access(b, false), filled(None));
        assert_eq!(c.access(a, false), Outcome::default());
        // b is LRU and clean: no write-back.
        assert_eq!(c.access(d, false), filled(None));
        // a is LRU now and dirty.
        assert_eq!(c.access(b, false), filled(Some(a)));
        assert_eq!(
            c.stats,
            CacheStats {
                hits: 1,
                misses: 4,
                writebacks: 1
            }
        );
        assert!(c.access(64, true).fill);
        assert_eq!(c.flush_line(64), Some(64));
        assert_eq!(c.flush_line(64), None);
        assert!(c.flush_all().is_empty());
    }

    #[test]
    fn bad_shapes() {
        assert!(Cache::new(CacheConfig {
            size_bytes: 100,
            ways: 2
        })
        .is_err());
        assert!(Cache::new(CacheConfig {
            size_bytes: 4096,
            ways: 0
        })
        .is_err());
        assert!(Cache::new(CacheConfig {
            size_bytes: 64 * 3,
            ways: 2
        })
        .is_err());
    }
}
