//! Per-process footprint of a virtual trace: each process's references,
//! its reads and writes, and the distinct virtual pages it touched (times
//! 4 KiB, its footprint). Memory: one entry per distinct (pid, page).

use std::collections::BTreeMap;

use serde::Serialize;

use super::page_hotness::PAGE_SHIFT;
use super::FastSet;

/// Footprints in the making.
#[derive(Default)]
pub struct Footprint {
    per_pid: BTreeMap<u32, (u64, u64)>,
    pages: FastSet<(u32, u64)>,
}

/// One process.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProcessRow {
    pub pid: u32,
    pub reads: u64,
    pub writes: u64,
    pub pages: u64,
    pub footprint_bytes: u64,
}

impl Footprint {
    #[inline]
    pub fn add(&mut self, pid: u32, va: u64, write: bool) {
        let c = self.per_pid.entry(pid).or_default();
        if write {
            c.1 += 1;
        } else {
            c.0 += 1;
        }
        self.pages.insert((pid, va >> PAGE_SHIFT));
    }

    pub fn report(&self) -> Vec<ProcessRow> {
        let mut pages: BTreeMap<u32, u64> = BTreeMap::new();
        for (pid, _) in &self.pages {
            *pages.entry(*pid).or_default() += 1;
        }
        self.per_pid
            .iter()
            .map(|(&pid, &(reads, writes))| {
                let p = pages.get(&pid).copied().unwrap_or(0);
                ProcessRow {
                    pid,
                    reads,
                    writes,
                    pages: p,
                    footprint_bytes: p << PAGE_SHIFT,
                }
            })
            .collect()
    }
}
