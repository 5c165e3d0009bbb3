//! Statistics packets of the board's Statistic Unit (format.md §5.3): one
//! record of counters per interval, cut into packets of at most one
//! frame, with their own magic and sequence so that trace readers of
//! format.md §5 never take them for trace packets.

use crate::geometry::{Geometry, GeometryError};

/// Magic of a statistics packet ("HMTS").
pub const STATS_MAGIC: [u8; 4] = *b"HMTS";
/// Statistics packet version.
pub const STATS_VERSION: u8 = 1;
/// Header length in bytes; counters follow.
pub const STATS_HEADER_LEN: usize = 48;
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
    /// In [`CounterLayout`] order, each saturating at `2^32 - 1`.
    pub counters: Vec<u32>,
}

impl StatsRecord {
    pub fn layout(&self) -> CounterLayout {
        CounterLayout::new(&self.geometry)
    }

    pub fn bank(&self, rank: usize, bank: usize, c: BankCounter) -> u32 {
        self.counters[self.layout().bank(rank, bank, c)]
    }

    pub fn rank(&self, rank: usize, c: RankCounter) -> u32 {
        self.counters[self.layout().rank(rank, c)]
    }

    /// The packets of this record, each of at most `max_counters` counters
    /// (so at most `48 + 4 * max_counters` bytes), with sequence numbers
    /// from `first_seq` and ports `seq % ports`.
    pub fn emit_packets(
        &self,
        first_seq: u64,
        ports: u8,
        max_counters: usize,
    ) -> Vec<(u64, u8, Vec<u8>)> {
        let max_counters = max_counters.max(1);
        let chunks: Vec<&[u32]> = self.counters.chunks(max_counters).collect();
        let parts = chunks.len();
        let (row, rank_bank, col) = self.geometry.header_bytes();
        let mut out = Vec::with_capacity(parts);
        for (part, chunk) in chunks.into_iter().enumerate() {
            let seq = first_seq + part as u64;
            let port = (seq % u64::from(ports.max(1))) as u8;
            let mut b = Vec::with_capacity(STATS_HEADER_LEN + 4 * chunk.len());
            b.extend_from_slice(&STATS_MAGIC);
            b.push(STATS_VERSION);
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
    #[error("statistics packet version {0}, this reader knows 1")]
    BadVersion(u8),
    #[error("statistics packet of {got} bytes, its header says {want}")]
    BadLength { got: usize, want: usize },
    #[error("bad geometry in statistics header: {0}")]
    BadGeometry(#[from] GeometryError),
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
    pub first_counter: usize,
    pub part: u8,
    pub parts: u8,
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
        if b[4] != STATS_VERSION {
            return Err(StatsError::BadVersion(b[4]));
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let n = usize::from(u16_at(38));
        let want = STATS_HEADER_LEN + 4 * n;
        if b.len() != want {
            return Err(StatsError::BadLength { got: b.len(), want });
        }
        let geometry = Geometry::from_header_bytes(b[33], b[34], b[35])?;
        let first = usize::from(u16_at(44));
        let (part, parts) = (b[46], b[47]);
        let len = CounterLayout::new(&geometry).len();
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
            first_counter: first,
            part,
            parts,
            counters: (0..n).map(|i| u32_at(STATS_HEADER_LEN + 4 * i)).collect(),
        })
    }
}

/// Puts the parts of records back together. Parts of one record carry the
/// same board, start and end tick; a record whose parts do not all arrive
/// is counted, not returned.
#[derive(Debug, Default)]
pub struct StatsAssembler {
    open: Vec<(StatsRecord, Vec<bool>)>,
    /// Parts refused or left over (a record with a part missing).
    pub incomplete_parts: u64,
}

impl StatsAssembler {
    /// Takes one part; returns the record once all of its parts are in.
    pub fn push(&mut self, p: StatsPart) -> Option<StatsRecord> {
        let key = (p.board, p.start_tick, p.end_tick);
        let pos = self
            .open
            .iter()
            .position(|(r, _)| (r.board, r.start_tick, r.end_tick) == key);
        let i = match pos {
            Some(i) => i,
            None => {
                let len = CounterLayout::new(&p.geometry).len();
                self.open.push((
                    StatsRecord {
                        board: p.board,
                        flags: p.flags,
                        start_tick: p.start_tick,
                        end_tick: p.end_tick,
                        interval_log2: p.interval_log2,
                        geometry: p.geometry,
                        tick_ps: p.tick_ps,
                        unsent_before: p.unsent_before,
                        counters: vec![0; len],
                    },
                    vec![false; usize::from(p.parts)],
                ));
                self.open.len() - 1
            }
        };
        let (rec, seen) = &mut self.open[i];
        let part = usize::from(p.part);
        if part >= seen.len()
            || seen[part]
            || p.first_counter + p.counters.len() > rec.counters.len()
        {
            self.incomplete_parts += 1;
            return None;
        }
        seen[part] = true;
        rec.counters[p.first_counter..p.first_counter + p.counters.len()]
            .copy_from_slice(&p.counters);
        if seen.iter().all(|&s| s) {
            return Some(self.open.swap_remove(i).0);
        }
        None
    }

    /// Ends the input: the parts of records still incomplete are counted.
    pub fn finish(&mut self) -> u64 {
        for (_, seen) in self.open.drain(..) {
            self.incomplete_parts += seen.iter().filter(|&&s| s).count() as u64;
        }
        self.incomplete_parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(g: Geometry) -> StatsRecord {
        let n = CounterLayout::new(&g).len();
        StatsRecord {
            board: 2,
            flags: 1,
            start_tick: 4096,
            end_tick: 8192,
            interval_log2: 12,
            geometry: g,
            tick_ps: 1250,
            unsent_before: 3,
            counters: (0..n as u32).map(|i| i * 7 + 1).collect(),
        }
    }

    #[test]
    fn a_record_comes_back_from_its_packets_in_any_order() {
        let g = Geometry::preset("ddr4-64g").unwrap();
        let r = record(g);
        let packets = r.emit_packets(10, 3, 356);
        assert_eq!(packets.len(), r.counters.len().div_ceil(356));
        assert!(packets.iter().all(|(_, _, b)| b.len() <= 48 + 4 * 356));
        let mut a = StatsAssembler::default();
        let mut got = None;
        for (seq, port, b) in packets.iter().rev() {
            let p = StatsPart::parse(b).unwrap();
            assert_eq!((p.seq, p.port), (*seq, *port));
            assert_eq!(u64::from(p.port), p.seq % 3);
            got = a.push(p).or(got);
        }
        assert_eq!(got.unwrap(), r);
        assert_eq!(a.finish(), 0);
    }

    #[test]
    fn layout_offsets_are_disjoint_and_cover_the_record() {
        let g = Geometry::ddr3_default();
        let l = CounterLayout::new(&g);
        let mut seen = vec![false; l.len()];
        for r in 0..l.ranks {
            for b in 0..l.banks {
                for c in BankCounter::ALL {
                    assert!(!std::mem::replace(&mut seen[l.bank(r, b, c)], true));
                }
            }
            for c in RankCounter::ALL {
                assert!(!std::mem::replace(&mut seen[l.rank(r, c)], true));
            }
        }
        for bit in 0..l.line_bits {
            assert!(!std::mem::replace(&mut seen[l.toggles(bit)], true));
        }
        assert!(!std::mem::replace(&mut seen[l.over_limit()], true));
        assert!(!std::mem::replace(&mut seen[l.lost_fifo()], true));
        assert!(seen.iter().all(|&s| s));
        assert_eq!(l.len(), 2 * 8 * 8 + 2 * 2 + 26 + 2);
    }

    #[test]
    fn damaged_packets_are_refused() {
        let r = record(Geometry::ddr3_default());
        let (_, _, b) = r.emit_packets(0, 1, 1000).remove(0);
        assert_eq!(
            StatsPart::parse(&b[..b.len() - 4]).unwrap_err(),
            StatsError::BadLength {
                got: b.len() - 4,
                want: b.len()
            }
        );
        let mut v = b.clone();
        v[4] = 2;
        assert_eq!(StatsPart::parse(&v).unwrap_err(), StatsError::BadVersion(2));
        let mut v = b.clone();
        v[47] = 0;
        assert!(matches!(
            StatsPart::parse(&v),
            Err(StatsError::BadPart { .. })
        ));
        assert_eq!(StatsPart::parse(b"HMTT").unwrap_err(), StatsError::BadMagic);
    }
}
