//! Statistics packets of the board's Statistic Unit and Reuse Distance &
//! Hot Pages Unit (format.md §5.3): one record per interval, cut into
//! packets of at most one frame, with their own magic and sequence so that
//! trace readers of format.md §5 never take them for trace packets. A
//! record of the Statistic Unit's counters alone is a version 1 packet, as
//! before the RDHPU; a record with the RDHPU's section is version 2.

use crate::geometry::{Geometry, GeometryError};

mod line;
pub use line::StatsLine;

/// Magic of a statistics packet ("HMTS").
pub const STATS_MAGIC: [u8; 4] = *b"HMTS";
/// Statistics packet version of a record of the Statistic Unit's counters
/// alone.
pub const STATS_VERSION: u8 = 1;
/// Statistics packet version of a record with sections (format.md §5.3):
/// the RDHPU's, the Statistic Unit's or both.
pub const STATS_VERSION_SECTIONS: u8 = 2;
/// Header length in bytes of a version 1 packet; counters follow.
pub const STATS_HEADER_LEN: usize = 48;
/// Header length in bytes of a version 2 packet.
pub const STATS_HEADER_LEN_SECTIONS: usize = 56;
/// Section bits of a version 2 header: the Statistic Unit's counters.
pub const SECTION_COUNTERS: u8 = 1;
/// Section bits: the RDHPU's histogram, skipped count and hot pages.
pub const SECTION_REUSE: u8 = 2;
/// The RDHPU's LRU stack depth, in pages (board.md "Reuse Distance & Hot
/// Pages Unit").
pub const REUSE_DEPTH: u16 = 128;
/// A page is `line >> PAGE_LINE_SHIFT`: 64 lines of 64 bytes, 4 KiB.
pub const PAGE_LINE_SHIFT: u8 = 6;
/// Fewest and most hot pages a record reports.
pub const MIN_HOT_PAGES: u8 = 8;
pub const MAX_HOT_PAGES: u8 = 64;
/// Words of one hot page entry: page low 32 bits, page high bits, count.
pub const HOT_ENTRY_WORDS: usize = 3;
/// Shortest and longest interval, as `log2` of its ticks (format.md §6:
/// inner commands `32 + k`).
pub const MIN_INTERVAL_LOG2: u8 = 6;
pub const MAX_INTERVAL_LOG2: u8 = 31;

/// The counters of one bank, in record order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BankCounter {
    Rd,
    Wr,
    Act,
    Pre,
    Hit,
    Miss,
    Conflict,
    UnusedAct,
}

impl BankCounter {
    pub const ALL: [BankCounter; 8] = [
        BankCounter::Rd,
        BankCounter::Wr,
        BankCounter::Act,
        BankCounter::Pre,
        BankCounter::Hit,
        BankCounter::Miss,
        BankCounter::Conflict,
        BankCounter::UnusedAct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BankCounter::Rd => "rd",
            BankCounter::Wr => "wr",
            BankCounter::Act => "act",
            BankCounter::Pre => "pre",
            BankCounter::Hit => "hit",
            BankCounter::Miss => "miss",
            BankCounter::Conflict => "conflict",
            BankCounter::UnusedAct => "unused_act",
        }
    }
}

/// The counters of one rank, after every bank's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankCounter {
    Ref,
    BusyTicks,
}

impl RankCounter {
    pub const ALL: [RankCounter; 2] = [RankCounter::Ref, RankCounter::BusyTicks];

    pub fn name(self) -> &'static str {
        match self {
            RankCounter::Ref => "ref",
            RankCounter::BusyTicks => "busy_ticks",
        }
    }
}

/// Where each counter sits in a record of geometry `g` (format.md §5.3):
/// every bank's 8 (rank major), every rank's 2, one per line-index bit,
/// then references over the limit and events lost at the FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterLayout {
    pub ranks: usize,
    pub banks: usize,
    pub line_bits: usize,
}

impl CounterLayout {
    pub fn new(g: &Geometry) -> CounterLayout {
        CounterLayout {
            ranks: g.ranks() as usize,
            banks: g.banks() as usize,
            line_bits: g.line_bits() as usize,
        }
    }

    /// Counters in a record.
    pub fn len(&self) -> usize {
        self.ranks * self.banks * BankCounter::ALL.len()
            + self.ranks * RankCounter::ALL.len()
            + self.line_bits
            + 2
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline]
    pub fn bank(&self, rank: usize, bank: usize, c: BankCounter) -> usize {
        (rank * self.banks + bank) * BankCounter::ALL.len() + c as usize
    }

    /// Where counter `c` of every rank and bank is, rank by rank.
    pub fn bank_indices(&self, c: BankCounter) -> impl Iterator<Item = usize> + '_ {
        (0..self.ranks)
            .flat_map(move |rank| (0..self.banks).map(move |bank| self.bank(rank, bank, c)))
    }

    /// Counter `c` of `counters` (a record's, in this layout) summed over
    /// every rank and bank.
    pub fn bank_total(&self, counters: &[u32], c: BankCounter) -> u64 {
        self.bank_indices(c).map(|i| u64::from(counters[i])).sum()
    }

    #[inline]
    pub fn rank(&self, rank: usize, c: RankCounter) -> usize {
        self.ranks * self.banks * BankCounter::ALL.len()
            + rank * RankCounter::ALL.len()
            + c as usize
    }

    #[inline]
    pub fn toggles(&self, bit: usize) -> usize {
        self.ranks * (self.banks * BankCounter::ALL.len() + RankCounter::ALL.len()) + bit
    }

    #[inline]
    pub fn over_limit(&self) -> usize {
        self.len() - 2
    }

    #[inline]
    pub fn lost_fifo(&self) -> usize {
        self.len() - 1
    }
}

/// One interval's record: the header fields and every counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsRecord {
    pub board: u8,
    /// Board mode flags at the close (format.md §5 bit0 tracing, bit1
    /// tags-only).
    pub flags: u8,
    /// Ticks `[start_tick, end_tick)`.
    pub start_tick: u64,
    pub end_tick: u64,
    pub interval_log2: u8,
    pub geometry: Geometry,
    pub tick_ps: u16,
    /// Records of earlier intervals the unit could not send since the
    /// last one it sent (saturating).
    pub unsent_before: u32,
    /// The Statistic Unit's counters in [`CounterLayout`] order, each
    /// saturating at `2^32 - 1`; empty when the record has no such section
    /// (the unit was off, the RDHPU on).
    pub counters: Vec<u32>,
    /// The RDHPU's section, when it was on.
    pub reuse: Option<ReuseRecord>,
}

/// One page of the RDHPU's hot pages: its number (`line >> 6`) and the
/// references to it the interval counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HotPage {
    pub page: u64,
    pub count: u32,
}

/// The RDHPU's section of a record (format.md §5.3), and of a side file's
/// line (the same fields, in this order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReuseRecord {
    /// Stack depth `D` (128).
    pub depth: u16,
    /// A page is `line >> page_shift` (6).
    pub page_shift: u8,
    /// Hot page entries the record has room for (`H`).
    pub hot_entries: u8,
    /// `D + 1` bins: stack distance 0..D-1, then deeper or new.
    pub histogram: Vec<u32>,
    /// References the unit could not take (board.md), saturating.
    pub skipped: u32,
    /// The hot pages, at most `hot_entries`, hottest first; only pages
    /// with a count.
    pub hot: Vec<HotPage>,
}

impl ReuseRecord {
    /// References the unit took (the histogram's sum).
    pub fn taken(&self) -> u64 {
        self.histogram.iter().map(|&h| u64::from(h)).sum()
    }

    /// Words of a section of stack depth `depth` and `hot` entries.
    pub fn words_of(depth: u16, hot: u8) -> usize {
        usize::from(depth) + 2 + HOT_ENTRY_WORDS * usize::from(hot)
    }

    fn push_words(&self, out: &mut Vec<u32>) {
        out.extend_from_slice(&self.histogram);
        out.push(self.skipped);
        for i in 0..usize::from(self.hot_entries) {
            let h = self
                .hot
                .get(i)
                .copied()
                .unwrap_or(HotPage { page: 0, count: 0 });
            out.extend_from_slice(&[h.page as u32, (h.page >> 32) as u32, h.count]);
        }
    }

    fn from_words(depth: u16, page_shift: u8, hot_entries: u8, w: &[u32]) -> ReuseRecord {
        let d = usize::from(depth);
        ReuseRecord {
            depth,
            page_shift,
            hot_entries,
            histogram: w[..=d].to_vec(),
            skipped: w[d + 1],
            hot: w[d + 2..]
                .chunks_exact(HOT_ENTRY_WORDS)
                .filter(|e| e[2] > 0)
                .map(|e| HotPage {
                    page: u64::from(e[0]) | u64::from(e[1]) << 32,
                    count: e[2],
                })
                .collect(),
        }
    }
}

impl StatsRecord {
    /// The section bits of the record (a version 1 record: counters only).
    pub fn sections(&self) -> u8 {
        (if self.counters.is_empty() {
            0
        } else {
            SECTION_COUNTERS
        }) | (if self.reuse.is_some() {
            SECTION_REUSE
        } else {
            0
        })
    }

    /// Every word of the record, the sections in order.
    pub fn words(&self) -> Vec<u32> {
        let mut w = self.counters.clone();
        if let Some(r) = &self.reuse {
            r.push_words(&mut w);
        }
        w
    }

    pub fn layout(&self) -> CounterLayout {
        CounterLayout::new(&self.geometry)
    }

    pub fn bank(&self, rank: usize, bank: usize, c: BankCounter) -> u32 {
        self.counters[self.layout().bank(rank, bank, c)]
    }

    pub fn rank(&self, rank: usize, c: RankCounter) -> u32 {
        self.counters[self.layout().rank(rank, c)]
    }

    /// The packets of this record, each of at most `max_counters` words
    /// (so at most `56 + 4 * max_counters` bytes), with sequence numbers
    /// from `first_seq` and ports `seq % ports`: version 1 for the
    /// Statistic Unit's counters alone, else version 2.
    pub fn emit_packets(
        &self,
        first_seq: u64,
        ports: u8,
        max_counters: usize,
    ) -> Vec<(u64, u8, Vec<u8>)> {
        let max_counters = max_counters.max(1);
        let words = self.words();
        let chunks: Vec<&[u32]> = words.chunks(max_counters).collect();
        let parts = chunks.len();
        let (row, rank_bank, col) = self.geometry.header_bytes();
        let v1 = self.reuse.is_none();
        let mut out = Vec::with_capacity(parts);
        for (part, chunk) in chunks.into_iter().enumerate() {
            let seq = first_seq + part as u64;
            let port = (seq % u64::from(ports.max(1))) as u8;
            let mut b = Vec::with_capacity(STATS_HEADER_LEN_SECTIONS + 4 * chunk.len());
            b.extend_from_slice(&STATS_MAGIC);
            b.push(if v1 {
                STATS_VERSION
            } else {
                STATS_VERSION_SECTIONS
            });
            b.push(self.flags);
            b.push(self.board);
            b.push(port);
            b.extend_from_slice(&seq.to_le_bytes());
            b.extend_from_slice(&self.start_tick.to_le_bytes());
            b.extend_from_slice(&self.end_tick.to_le_bytes());
            b.push(self.interval_log2);
            b.push(row);
            b.push(rank_bank);
            b.push(col);
            b.extend_from_slice(&self.tick_ps.to_le_bytes());
            b.extend_from_slice(&(chunk.len() as u16).to_le_bytes());
            b.extend_from_slice(&self.unsent_before.to_le_bytes());
            b.extend_from_slice(&((part * max_counters) as u16).to_le_bytes());
            b.push(part as u8);
            b.push(parts as u8);
            if let Some(r) = &self.reuse {
                b.push(self.sections());
                b.push(r.hot_entries);
                b.extend_from_slice(&r.depth.to_le_bytes());
                b.push(r.page_shift);
                b.extend_from_slice(&[0; 3]);
            }
            for c in chunk {
                b.extend_from_slice(&c.to_le_bytes());
            }
            out.push((seq, port, b));
        }
        out
    }
}

/// Why a statistics packet was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StatsError {
    #[error("not a statistics packet (magic)")]
    BadMagic,
    #[error("statistics packet version {0}, this reader knows 1 and 2")]
    BadVersion(u8),
    #[error("statistics packet of {got} bytes, its header says {want}")]
    BadLength { got: usize, want: usize },
    #[error("bad geometry in statistics header: {0}")]
    BadGeometry(#[from] GeometryError),
    #[error("statistics sections {sections:#x}, stack depth {depth}, page shift {page_shift}, {hot} hot pages")]
    BadSections {
        sections: u8,
        depth: u16,
        page_shift: u8,
        hot: u8,
    },
    #[error("statistics part {part} of {parts}, counters {first}..{end} of a record of {len}")]
    BadPart {
        part: u8,
        parts: u8,
        first: usize,
        end: usize,
        len: usize,
    },
}

/// Whether `bytes` starts like a statistics packet (its magic).
pub fn is_stats_packet(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes[..4] == STATS_MAGIC
}

/// One statistics packet, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsPart {
    pub board: u8,
    pub flags: u8,
    pub port: u8,
    pub seq: u64,
    pub start_tick: u64,
    pub end_tick: u64,
    pub interval_log2: u8,
    pub geometry: Geometry,
    pub tick_ps: u16,
    pub unsent_before: u32,
    /// Section bits ([`SECTION_COUNTERS`] alone in a version 1 packet).
    pub sections: u8,
    /// The RDHPU section's stack depth, page shift and hot entries (0
    /// without the section).
    pub depth: u16,
    pub page_shift: u8,
    pub hot_entries: u8,
    pub first_counter: usize,
    pub part: u8,
    pub parts: u8,
    /// Words of the record from `first_counter` on.
    pub counters: Vec<u32>,
}

impl StatsPart {
    /// Decodes and checks a statistics packet (format.md §5.3).
    pub fn parse(b: &[u8]) -> Result<StatsPart, StatsError> {
        if !is_stats_packet(b) {
            return Err(StatsError::BadMagic);
        }
        if b.len() < STATS_HEADER_LEN {
            return Err(StatsError::BadLength {
                got: b.len(),
                want: STATS_HEADER_LEN,
            });
        }
        let header = match b[4] {
            STATS_VERSION => STATS_HEADER_LEN,
            STATS_VERSION_SECTIONS => STATS_HEADER_LEN_SECTIONS,
            v => return Err(StatsError::BadVersion(v)),
        };
        if b.len() < header {
            return Err(StatsError::BadLength {
                got: b.len(),
                want: header,
            });
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let n = usize::from(u16_at(38));
        let want = header + 4 * n;
        if b.len() != want {
            return Err(StatsError::BadLength { got: b.len(), want });
        }
        let geometry = Geometry::from_header_bytes(b[33], b[34], b[35])?;
        let (sections, hot_entries, depth, page_shift) = if header == STATS_HEADER_LEN {
            (SECTION_COUNTERS, 0, 0, 0)
        } else {
            (b[48], b[49], u16_at(50), b[52])
        };
        let reuse = sections & SECTION_REUSE != 0;
        let sound = if header == STATS_HEADER_LEN {
            true
        } else {
            reuse
                && sections & !(SECTION_COUNTERS | SECTION_REUSE) == 0
                && (1..=1024).contains(&depth)
                && page_shift <= 32
                && (MIN_HOT_PAGES..=MAX_HOT_PAGES).contains(&hot_entries)
                && b[53..56] == [0; 3]
        };
        if !sound {
            return Err(StatsError::BadSections {
                sections,
                depth,
                page_shift,
                hot: hot_entries,
            });
        }
        let first = usize::from(u16_at(44));
        let (part, parts) = (b[46], b[47]);
        let len = record_words(&geometry, sections, depth, hot_entries);
        if part >= parts || first + n > len || n == 0 {
            return Err(StatsError::BadPart {
                part,
                parts,
                first,
                end: first + n,
                len,
            });
        }
        Ok(StatsPart {
            board: b[6],
            flags: b[5],
            port: b[7],
            seq: u64_at(8),
            start_tick: u64_at(16),
            end_tick: u64_at(24),
            interval_log2: b[32],
            geometry,
            tick_ps: u16_at(36),
            unsent_before: u32_at(40),
            sections,
            depth,
            page_shift,
            hot_entries,
            first_counter: first,
            part,
            parts,
            counters: (0..n).map(|i| u32_at(header + 4 * i)).collect(),
        })
    }
}

/// Words of a record of geometry `g` with `sections` (the RDHPU's of
/// stack depth `depth` and `hot` entries).
pub fn record_words(g: &Geometry, sections: u8, depth: u16, hot: u8) -> usize {
    (if sections & SECTION_COUNTERS != 0 {
        CounterLayout::new(g).len()
    } else {
        0
    }) + (if sections & SECTION_REUSE != 0 {
        ReuseRecord::words_of(depth, hot)
    } else {
        0
    })
}

/// Puts the parts of records back together. Parts of one record carry the
/// same board, start and end tick; a record whose parts do not all arrive
/// is counted, not returned.
#[derive(Debug, Default)]
pub struct StatsAssembler {
    open: Vec<OpenRecord>,
    /// Parts refused or left over (a record with a part missing).
    pub incomplete_parts: u64,
}

/// A record whose parts are coming: its first part's header, its words.
#[derive(Debug)]
struct OpenRecord {
    head: StatsPart,
    words: Vec<u32>,
    seen: Vec<bool>,
}

impl OpenRecord {
    fn record(self) -> StatsRecord {
        let h = self.head;
        let su = if h.sections & SECTION_COUNTERS != 0 {
            CounterLayout::new(&h.geometry).len()
        } else {
            0
        };
        let mut words = self.words;
        let reuse = (h.sections & SECTION_REUSE != 0)
            .then(|| ReuseRecord::from_words(h.depth, h.page_shift, h.hot_entries, &words[su..]));
        words.truncate(su);
        StatsRecord {
            board: h.board,
            flags: h.flags,
            start_tick: h.start_tick,
            end_tick: h.end_tick,
            interval_log2: h.interval_log2,
            geometry: h.geometry,
            tick_ps: h.tick_ps,
            unsent_before: h.unsent_before,
            counters: words,
            reuse,
        }
    }
}

impl StatsAssembler {
    /// Takes one part; returns the record once all of its parts are in.
    pub fn push(&mut self, p: StatsPart) -> Option<StatsRecord> {
        let key = (p.board, p.start_tick, p.end_tick);
        let pos = self
            .open
            .iter()
            .position(|r| (r.head.board, r.head.start_tick, r.head.end_tick) == key);
        let i = match pos {
            Some(i) => i,
            None => {
                let len = record_words(&p.geometry, p.sections, p.depth, p.hot_entries);
                self.open.push(OpenRecord {
                    words: vec![0; len],
                    seen: vec![false; usize::from(p.parts)],
                    head: StatsPart {
                        counters: Vec::new(),
                        ..p.clone()
                    },
                });
                self.open.len() - 1
            }
        };
        let rec = &mut self.open[i];
        let part = usize::from(p.part);
        let same_shape = (p.sections, p.depth, p.hot_entries, p.geometry)
            == (
                rec.head.sections,
                rec.head.depth,
                rec.head.hot_entries,
                rec.head.geometry,
            );
        if part >= rec.seen.len()
            || rec.seen[part]
            || !same_shape
            || p.first_counter + p.counters.len() > rec.words.len()
        {
            self.incomplete_parts += 1;
            return None;
        }
        rec.seen[part] = true;
        rec.words[p.first_counter..p.first_counter + p.counters.len()].copy_from_slice(&p.counters);
        if rec.seen.iter().all(|&s| s) {
            return Some(self.open.swap_remove(i).record());
        }
        None
    }

    /// Records whose parts are still coming.
    pub fn open_records(&self) -> usize {
        self.open.len()
    }

    /// Gives up the records that began earliest until at most `keep` are
    /// open, counting their parts as incomplete: a reader that runs for
    /// days (`hmtt capture --live`) must not keep every record a lost part
    /// left open.
    pub fn give_up_beyond(&mut self, keep: usize) {
        while self.open.len() > keep {
            let oldest = (0..self.open.len())
                .min_by_key(|&i| self.open[i].head.start_tick)
                .expect("more than keep >= 0 records");
            let r = self.open.swap_remove(oldest);
            self.incomplete_parts += r.seen.iter().filter(|&&s| s).count() as u64;
        }
    }

    /// Ends the input: the parts of records still incomplete are counted.
    pub fn finish(&mut self) -> u64 {
        for r in self.open.drain(..) {
            self.incomplete_parts += r.seen.iter().filter(|&&s| s).count() as u64;
        }
        self.incomplete_parts
    }
}

#[cfg(test)]
mod tests;
