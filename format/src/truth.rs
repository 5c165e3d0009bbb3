//! The ground truth of a simulated run: every reference the board should
//! see, in the order and at the tick of its RD/WR command, with who made it.
//! The simulator writes it; checks of the merged trace read it.
//!
//! File format (`truth.hmtttruth`, docs/format.md §10.1): a 32-byte header
//! and 48-byte records, little-endian; or CSV with the same columns.

use std::io::{self, Write};

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::text::Row;

pub const MAGIC: [u8; 8] = *b"HMTTTRU\0";
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 32;
pub const RECORD_LEN: usize = 48;

mod field {
    use crate::bytes::Field;
    pub const MAGIC: Field = 0..8;
    pub const VERSION: Field = 8..10;
    pub const RECORD_LEN: Field = 10..12;
    pub const BOARDS: Field = 12..14;
    pub const TICK_PS: Field = 14..16;

    pub const TICK: Field = 0..8;
    pub const PA: Field = 8..16;
    pub const LINE: Field = 16..24;
    pub const VADDR: Field = 24..32;
    pub const PID: Field = 32..36;
    pub const BOARD: usize = 36;
    pub const KIND: usize = 37;
    pub const FLAGS: usize = 38;
    pub const EVENT: Field = 40..44;
}

const FLAG_WRITE: u8 = 1;
const FLAG_OWNER: u8 = 2;

/// Who caused a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum RefKind {
    /// A user process's load or store (a cache miss, or any reference with
    /// the cache off).
    Cpu = 0,
    /// A dirty line evicted or flushed from the cache.
    Writeback = 1,
    /// A device's DMA read or write.
    Dma = 2,
    /// An I-code: a reference to the configuration space (a TAG or CMD word
    /// on the board, never an ACCESS).
    Icode = 3,
    /// The kernel: page-table stores, copies to and from DMA buffers.
    Kernel = 4,
}

impl RefKind {
    pub fn from_u8(v: u8) -> Option<RefKind> {
        Some(match v {
            0 => RefKind::Cpu,
            1 => RefKind::Writeback,
            2 => RefKind::Dma,
            3 => RefKind::Icode,
            4 => RefKind::Kernel,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            RefKind::Cpu => "cpu",
            RefKind::Writeback => "writeback",
            RefKind::Dma => "dma",
            RefKind::Icode => "icode",
            RefKind::Kernel => "kernel",
        }
    }
}

/// One reference as the board should record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TruthRecord {
    /// Tick of the RD/WR command.
    pub tick: u64,
    /// Board (channel) whose bus carried it.
    pub board: u8,
    /// Physical address of the line (64-byte aligned, system-wide).
    pub pa: u64,
    /// The line index on the board's DIMM (`{rank,row,bank,col_line}`).
    pub line: u64,
    pub write: bool,
    pub kind: RefKind,
    /// The user mapping of the line in force at the reference: the process
    /// and the virtual address of the line's first byte. For CPU references
    /// it is the issuing process's address; for write-backs, DMA and kernel
    /// references it is whatever maps the frame then (usually none).
    pub owner: Option<(u32, u64)>,
    /// For I-codes, the configuration-space event index.
    pub event: Option<u32>,
}

impl TruthRecord {
    pub fn pid(&self) -> Option<u32> {
        self.owner.map(|o| o.0)
    }
    pub fn vaddr(&self) -> Option<u64> {
        self.owner.map(|o| o.1)
    }

    pub fn to_bytes(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        put_u64(&mut b, field::TICK, self.tick);
        put_u64(&mut b, field::PA, self.pa);
        put_u64(&mut b, field::LINE, self.line);
        let (pid, vaddr) = self.owner.unwrap_or((0, 0));
        put_u64(&mut b, field::VADDR, vaddr);
        put_u32(&mut b, field::PID, pid);
        b[field::BOARD] = self.board;
        b[field::KIND] = self.kind as u8;
        b[field::FLAGS] = if self.write { FLAG_WRITE } else { 0 }
            | if self.owner.is_some() { FLAG_OWNER } else { 0 };
        put_u32(&mut b, field::EVENT, self.event.unwrap_or(0));
        b
    }

    pub fn parse(b: &[u8]) -> Result<TruthRecord, TruthError> {
        if b.len() < RECORD_LEN {
            return Err(TruthError::Truncated(b.len()));
        }
        let kind = RefKind::from_u8(b[field::KIND]).ok_or(TruthError::BadKind(b[field::KIND]))?;
        let flags = b[field::FLAGS];
        Ok(TruthRecord {
            tick: u64_at(b, field::TICK),
            board: b[field::BOARD],
            pa: u64_at(b, field::PA),
            line: u64_at(b, field::LINE),
            write: flags & FLAG_WRITE != 0,
            kind,
            owner: (flags & FLAG_OWNER != 0)
                .then(|| (u32_at(b, field::PID), u64_at(b, field::VADDR))),
            event: (kind == RefKind::Icode).then(|| u32_at(b, field::EVENT)),
        })
    }
}

/// Why a ground-truth file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TruthError {
    #[error("ground-truth data of {0} bytes is too short")]
    Truncated(usize),
    #[error("not a ground-truth file (magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error("ground-truth version {0} is not supported (this build reads 1)")]
    BadVersion(u16),
    #[error("ground-truth record size {0} is not {RECORD_LEN}")]
    BadRecordLen(u16),
    #[error("unknown reference kind {0}")]
    BadKind(u8),
    #[error("file ends {0} bytes into a record")]
    CutRecord(usize),
}

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruthHeader {
    pub boards: u16,
    pub tick_ps: u16,
}

impl TruthHeader {
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::MAGIC].copy_from_slice(&MAGIC);
        put_u16(&mut b, field::VERSION, VERSION);
        put_u16(&mut b, field::RECORD_LEN, RECORD_LEN as u16);
        put_u16(&mut b, field::BOARDS, self.boards);
        put_u16(&mut b, field::TICK_PS, self.tick_ps);
        b
    }

    pub fn parse(b: &[u8]) -> Result<TruthHeader, TruthError> {
        if b.len() < HEADER_LEN {
            return Err(TruthError::Truncated(b.len()));
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8");
        if magic != MAGIC {
            return Err(TruthError::BadMagic(magic));
        }
        let version = u16_at(b, field::VERSION);
        if version != VERSION {
            return Err(TruthError::BadVersion(version));
        }
        let len = u16_at(b, field::RECORD_LEN);
        if usize::from(len) != RECORD_LEN {
            return Err(TruthError::BadRecordLen(len));
        }
        Ok(TruthHeader {
            boards: u16_at(b, field::BOARDS),
            tick_ps: u16_at(b, field::TICK_PS),
        })
    }
}

/// Writes a whole binary ground-truth file.
pub fn write_binary<W: Write>(
    out: &mut W,
    header: &TruthHeader,
    records: &[TruthRecord],
) -> io::Result<()> {
    out.write_all(&header.to_bytes())?;
    for r in records {
        out.write_all(&r.to_bytes())?;
    }
    Ok(())
}

/// Reads a whole binary ground-truth image.
pub fn read_binary(bytes: &[u8]) -> Result<(TruthHeader, Vec<TruthRecord>), TruthError> {
    let header = TruthHeader::parse(bytes)?;
    let body = &bytes[HEADER_LEN..];
    if !body.len().is_multiple_of(RECORD_LEN) {
        return Err(TruthError::CutRecord(body.len() % RECORD_LEN));
    }
    let records = body
        .chunks_exact(RECORD_LEN)
        .map(TruthRecord::parse)
        .collect::<Result<_, _>>()?;
    Ok((header, records))
}

/// The CSV header line.
pub const CSV_HEADER: &str = "tick,board,pa,line,rw,kind,pid,vaddr,event";

/// Writes the records as CSV (addresses in hex, empty fields for none).
pub fn write_csv<W: Write>(out: &mut W, records: &[TruthRecord]) -> io::Result<()> {
    writeln!(out, "{CSV_HEADER}")?;
    for r in records {
        write_csv_row(out, r)?;
    }
    Ok(())
}

/// Writes one record as a CSV row (after [`CSV_HEADER`]).
pub fn write_csv_row<W: Write>(out: &mut W, r: &TruthRecord) -> io::Result<()> {
    let mut row = Row::new();
    csv_row_into(&mut row, r);
    out.write_all(row.as_bytes())
}

/// One record's CSV row, newline included, into a row the caller reuses:
/// what a writer of long streams calls, without `fmt` machinery or
/// allocation.
#[inline]
pub fn csv_row_into(row: &mut Row, r: &TruthRecord) {
    row.decimal(r.tick);
    row.byte(b',');
    row.decimal(u64::from(r.board));
    row.byte(b',');
    row.hex(r.pa);
    row.byte(b',');
    row.hex(r.line);
    row.byte(b',');
    row.byte(if r.write { b'W' } else { b'R' });
    row.byte(b',');
    row.bytes(r.kind.name().as_bytes());
    row.byte(b',');
    if let Some((pid, vaddr)) = r.owner {
        row.decimal(u64::from(pid));
        row.byte(b',');
        row.hex(vaddr);
    } else {
        row.byte(b',');
    }
    row.byte(b',');
    if let Some(e) = r.event {
        row.hex(u64::from(e));
    }
    row.byte(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_files_are_checked() {
        let recs = [
            TruthRecord {
                tick: 123,
                board: 1,
                pa: 0x1234_5640,
                line: 0x48d159,
                write: true,
                kind: RefKind::Cpu,
                owner: Some((1000, 0x5555_0000_0040)),
                event: None,
            },
            TruthRecord {
                tick: 124,
                board: 0,
                pa: 0xfff0_0000,
                line: 7,
                write: false,
                kind: RefKind::Icode,
                owner: None,
                event: Some(0x10005),
            },
        ];
        let mut file = Vec::new();
        let h = TruthHeader {
            boards: 2,
            tick_ps: 1250,
        };
        write_binary(&mut file, &h, &recs).unwrap();
        assert_eq!(file.len(), HEADER_LEN + 2 * RECORD_LEN);
        let (h2, back) = read_binary(&file).unwrap();
        assert_eq!(h2, h);
        assert_eq!(back, recs);
        assert_eq!(
            read_binary(&file[..file.len() - 1]),
            Err(TruthError::CutRecord(47))
        );
        let mut bad = file.clone();
        bad[0] = b'X';
        assert!(matches!(read_binary(&bad), Err(TruthError::BadMagic(_))));
        let mut csv = Vec::new();
        write_csv(&mut csv, &recs).unwrap();
        let text = String::from_utf8(csv).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "123,1,0x12345640,0x48d159,W,cpu,1000,0x555500000040,"
        );
        assert_eq!(
            text.lines().nth(2).unwrap(),
            "124,0,0xfff00000,0x7,R,icode,,,0x10005"
        );
    }
}
