//! The capture file (`.hmttcap`, format.md §7): a 64-byte header, then the
//! packets byte-exact, each behind a 16-byte record header. The reader works
//! on a byte slice (a memory map, typically) and stops cleanly at a cut.

use crate::bytes::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::geometry::Geometry;

/// "HMTTCAP\0".
pub const MAGIC: [u8; 8] = *b"HMTTCAP\0";
/// Capture file version.
pub const VERSION: u16 = 1;
/// Header length written by this version.
pub const HEADER_LEN: usize = 64;
/// Per-packet record header length.
pub const RECORD_HEADER_LEN: usize = 16;
/// File extension.
pub const EXTENSION: &str = "hmttcap";
/// Board or port id meaning "not known".
pub const UNKNOWN_ID: u8 = 0xFF;
/// Record flag: the kernel reported drops before this packet.
pub const RECORD_FLAG_KERNEL_DROPS: u32 = 1;
/// Record flag: the datagram or frame was longer than the receiver keeps
/// (`MAX_RECORD_LEN`) or was cut by the capture: only its first `len` bytes
/// are stored. Only rejected datagrams carry it.
pub const RECORD_FLAG_CUT: u32 = 2;
/// Largest packet length a record may claim (a jumbo frame).
pub const MAX_RECORD_LEN: usize = 9018;

mod field {
    use crate::bytes::Field;
    pub const MAGIC: Field = 0..8;
    pub const VERSION: Field = 8..10;
    pub const HEADER_LEN: Field = 10..12;
    pub const BOARD: usize = 12;
    pub const PORT: usize = 13;
    pub const STRIPE: Field = 14..16;
    pub const START_NS: Field = 16..24;
    pub const ROW_BITS: usize = 24;
    pub const RANK_BANK: usize = 25;
    pub const COL_LINE_BITS: usize = 26;
    pub const SOURCE_KIND: usize = 27;
    pub const TICK_PS: Field = 28..30;
    pub const SOURCE_NAME: Field = 32..64;

    pub const REC_TIME: Field = 0..8;
    pub const REC_LEN: Field = 8..12;
    pub const REC_FLAGS: Field = 12..16;
}

/// Where the packets came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    Udp,
    PcapLive,
    PcapFile,
    Simulation,
    Other(u8),
}

impl SourceKind {
    pub fn from_byte(b: u8) -> SourceKind {
        match b {
            0 => SourceKind::Udp,
            1 => SourceKind::PcapLive,
            2 => SourceKind::PcapFile,
            3 => SourceKind::Simulation,
            o => SourceKind::Other(o),
        }
    }
    pub fn byte(self) -> u8 {
        match self {
            SourceKind::Udp => 0,
            SourceKind::PcapLive => 1,
            SourceKind::PcapFile => 2,
            SourceKind::Simulation => 3,
            SourceKind::Other(o) => o,
        }
    }
}

/// Why a capture file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    #[error("file of {0} bytes is too short for a capture header")]
    TooShort(usize),
    #[error("not a capture file (magic {0:02x?})")]
    BadMagic([u8; 8]),
    #[error("capture file version {0} is not supported (this build reads version {VERSION})")]
    BadVersion(u16),
    #[error("capture header length {0} is invalid")]
    BadHeaderLen(u16),
}

/// The capture header as plain values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureHeader {
    pub board: u8,
    pub port: u8,
    pub stripe: u16,
    pub start_ns: u64,
    /// `None` when the receiver did not know it.
    pub geometry: Option<Geometry>,
    pub source_kind: SourceKind,
    pub tick_ps: u16,
    /// Interface or address, at most 32 bytes of ASCII.
    pub source_name: String,
}

impl CaptureHeader {
    /// Parses a header; returns it and the offset of the first record.
    pub fn parse(b: &[u8]) -> Result<(CaptureHeader, usize), CaptureError> {
        if b.len() < HEADER_LEN {
            return Err(CaptureError::TooShort(b.len()));
        }
        let magic: [u8; 8] = b[field::MAGIC].try_into().expect("8 bytes");
        if magic != MAGIC {
            return Err(CaptureError::BadMagic(magic));
        }
        let version = u16_at(b, field::VERSION);
        if version != VERSION {
            return Err(CaptureError::BadVersion(version));
        }
        let hlen = u16_at(b, field::HEADER_LEN);
        if usize::from(hlen) < HEADER_LEN || usize::from(hlen) > b.len() {
            return Err(CaptureError::BadHeaderLen(hlen));
        }
        let geometry = if b[field::ROW_BITS] == 0 {
            None
        } else {
            Geometry::from_header_bytes(
                b[field::ROW_BITS],
                b[field::RANK_BANK],
                b[field::COL_LINE_BITS],
            )
            .ok()
        };
        let name = &b[field::SOURCE_NAME];
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        Ok((
            CaptureHeader {
                board: b[field::BOARD],
                port: b[field::PORT],
                stripe: u16_at(b, field::STRIPE),
                start_ns: u64_at(b, field::START_NS),
                geometry,
                source_kind: SourceKind::from_byte(b[field::SOURCE_KIND]),
                tick_ps: u16_at(b, field::TICK_PS),
                source_name: String::from_utf8_lossy(&name[..end]).into_owned(),
            },
            usize::from(hlen),
        ))
    }

    /// The 64 header bytes. A source name longer than 32 bytes is cut.
    pub fn emit(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::MAGIC].copy_from_slice(&MAGIC);
        put_u16(&mut b, field::VERSION, VERSION);
        put_u16(&mut b, field::HEADER_LEN, HEADER_LEN as u16);
        b[field::BOARD] = self.board;
        b[field::PORT] = self.port;
        put_u16(&mut b, field::STRIPE, self.stripe);
        put_u64(&mut b, field::START_NS, self.start_ns);
        if let Some(g) = self.geometry {
            let (row, rank_bank, col) = g.header_bytes();
            b[field::ROW_BITS] = row;
            b[field::RANK_BANK] = rank_bank;
            b[field::COL_LINE_BITS] = col;
        }
        b[field::SOURCE_KIND] = self.source_kind.byte();
        put_u16(&mut b, field::TICK_PS, self.tick_ps);
        let name = self.source_name.as_bytes();
        let n = name.len().min(32);
        b[field::SOURCE_NAME][..n].copy_from_slice(&name[..n]);
        b
    }
}

/// The 16-byte header of one packet record.
pub fn emit_record_header(recv_ns: u64, len: u32, flags: u32) -> [u8; RECORD_HEADER_LEN] {
    let mut b = [0u8; RECORD_HEADER_LEN];
    put_u64(&mut b, field::REC_TIME, recv_ns);
    put_u32(&mut b, field::REC_LEN, len);
    put_u32(&mut b, field::REC_FLAGS, flags);
    b
}

/// One packet record, borrowed from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureRecord<'a> {
    /// Offset of the record header in the file.
    pub offset: usize,
    pub recv_ns: u64,
    pub flags: u32,
    pub packet: &'a [u8],
}

/// How the records of a file ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CaptureEnd {
    /// The file ends exactly after the last record.
    Clean,
    /// The file was cut inside a record (crash, full disk): `offset` is where
    /// the partial record starts and `leftover` the bytes after it.
    Truncated { offset: usize, leftover: usize },
    /// A record header claims an impossible length: the rest is unreadable.
    Corrupt { offset: usize, claimed_len: u32 },
    /// From the record boundary `offset` to the end, `len` bytes are all
    /// zero: space the file system gave the file (preallocated, or shown
    /// after a crash) that no record was written into. No real record
    /// starts with a zero receive time and length, so these are not records.
    ZeroTail { offset: usize, len: usize },
}

/// Iterates over the records of a whole capture file held in memory.
pub struct CaptureReader<'a> {
    data: &'a [u8],
    pos: usize,
    end: Option<CaptureEnd>,
}

impl<'a> CaptureReader<'a> {
    /// Parses the header and positions at the first record.
    pub fn new(data: &'a [u8]) -> Result<(CaptureHeader, CaptureReader<'a>), CaptureError> {
        let (h, pos) = CaptureHeader::parse(data)?;
        Ok((
            h,
            CaptureReader {
                data,
                pos,
                end: None,
            },
        ))
    }

    /// How the file ended; `None` until the iterator is exhausted.
    pub fn end(&self) -> Option<CaptureEnd> {
        self.end
    }

    /// Offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for CaptureReader<'a> {
    type Item = CaptureRecord<'a>;

    #[inline]
    fn next(&mut self) -> Option<CaptureRecord<'a>> {
        if self.end.is_some() {
            return None;
        }
        let rest = &self.data[self.pos..];
        if rest.is_empty() {
            self.end = Some(CaptureEnd::Clean);
            return None;
        }
        // Only a zero first byte costs the scan of the rest.
        if rest[0] == 0 && is_zero_tail(rest) {
            self.end = Some(CaptureEnd::ZeroTail {
                offset: self.pos,
                len: rest.len(),
            });
            return None;
        }
        if rest.len() < RECORD_HEADER_LEN {
            self.end = Some(CaptureEnd::Truncated {
                offset: self.pos,
                leftover: rest.len(),
            });
            return None;
        }
        let recv_ns = u64_at(rest, field::REC_TIME);
        let len = u32_at(rest, field::REC_LEN);
        let flags = u32_at(rest, field::REC_FLAGS);
        if len as usize > MAX_RECORD_LEN {
            self.end = Some(CaptureEnd::Corrupt {
                offset: self.pos,
                claimed_len: len,
            });
            return None;
        }
        let total = RECORD_HEADER_LEN + len as usize;
        if rest.len() < total {
            self.end = Some(CaptureEnd::Truncated {
                offset: self.pos,
                leftover: rest.len(),
            });
            return None;
        }
        let rec = CaptureRecord {
            offset: self.pos,
            recv_ns,
            flags,
            packet: &rest[RECORD_HEADER_LEN..total],
        };
        self.pos += total;
        Some(rec)
    }
}

/// The least space a killed receiver leaves past a capture file's end: it
/// preallocates a stripe and this much more, and writes at most a stripe.
pub const KILLED_PREALLOCATION_MIN: u64 = 1 << 20;

/// Whether the file system holds blocks for the file of `meta` past its
/// end that a killed writer's preallocation (`fallocate` with KEEP_SIZE)
/// left: at least [`KILLED_PREALLOCATION_MIN`]. A file closed cleanly may
/// keep a block or so past its end (ext4 does after the writer's truncate
/// on close), which is not a killed capture's and is left alone.
pub fn has_space_past_end(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let block = meta.blksize().max(512);
    meta.blocks() * 512 >= meta.len().div_ceil(block) * block + KILLED_PREALLOCATION_MIN
}

/// Opens the capture file at `path` to trim it, or gives `None` when a
/// running capture is writing it: the receiver holds a lock on each file it
/// writes ([`lock_while_writing`]), released when it closes or dies.
pub fn open_unless_being_written(path: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Marks `file` as being written, for [`open_unless_being_written`]. On a
/// file system without locks the error says so; the file then stays
/// unmarked, which only lets a trim run beside the writer.
pub fn lock_while_writing(file: &std::fs::File) -> Result<(), std::fs::TryLockError> {
    file.try_lock()
}

/// Sets the length of `file` (open for writing) to `len`, which gives back
/// every block held past it, a preallocation included; returns the bytes
/// of disk space freed.
pub fn set_len_giving_back_space(file: &std::fs::File, len: u64) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let before = file.metadata()?.blocks() * 512;
    file.set_len(len)?;
    file.sync_all()?;
    Ok(before.saturating_sub(file.metadata()?.blocks() * 512))
}

/// Whether `rest`, from a record boundary, is unwritten space: nothing but
/// zeros to the end.
fn is_zero_tail(rest: &[u8]) -> bool {
    rest.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_killed_writers_preallocation_counts_as_space_past_the_end() {
        use std::os::unix::io::AsRawFd;
        let path = std::env::temp_dir().join(format!(
            "hmtt-space-past-end-{}.hmttcap",
            std::process::id()
        ));
        std::fs::write(&path, vec![1u8; 10_000]).unwrap();
        let meta = || std::fs::metadata(&path).unwrap();
        assert!(!has_space_past_end(&meta()));
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let keep = |len: i64| {
            // SAFETY: fallocate on an open descriptor.
            unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) == 0 }
        };
        // A block or two past the end (a cleanly closed file may keep one).
        if keep(10_000 + 8192) {
            assert!(!has_space_past_end(&meta()));
        }
        // What a killed receiver leaves: its extra preallocation at least.
        if keep(10_000 + KILLED_PREALLOCATION_MIN as i64 + 4096) {
            assert!(has_space_past_end(&meta()));
        }
        drop(f);
        std::fs::remove_file(&path).unwrap();
    }

    fn header() -> CaptureHeader {
        CaptureHeader {
            board: 1,
            port: 2,
            stripe: 3,
            start_ns: 1_700_000_000_000_000_000,
            geometry: Some(Geometry::ddr3_default()),
            source_kind: SourceKind::Udp,
            tick_ps: 1250,
            source_name: "127.0.0.1:5002".into(),
        }
    }

    fn file(packets: &[&[u8]]) -> Vec<u8> {
        let mut f = header().emit().to_vec();
        for (i, p) in packets.iter().enumerate() {
            f.extend_from_slice(&emit_record_header(i as u64 * 10, p.len() as u32, 0));
            f.extend_from_slice(p);
        }
        f
    }

    #[test]
    fn header_round_trip_and_layout() {
        let b = header().emit();
        assert_eq!(&b[0..8], b"HMTTCAP\0");
        assert_eq!(b[10], 64);
        let (h, off) = CaptureHeader::parse(&b).unwrap();
        assert_eq!(h, header());
        assert_eq!(off, 64);
        let mut unknown = header();
        unknown.geometry = None;
        assert_eq!(
            CaptureHeader::parse(&unknown.emit()).unwrap().0.geometry,
            None
        );
    }

    #[test]
    fn records_read_back_and_clean_end() {
        let f = file(&[&[1, 2, 3, 4], &[5, 6, 7, 8, 9, 10, 11, 12]]);
        let (_, mut r) = CaptureReader::new(&f).unwrap();
        let a = r.next().unwrap();
        assert_eq!((a.recv_ns, a.packet), (0, &[1u8, 2, 3, 4][..]));
        let b = r.next().unwrap();
        assert_eq!(b.packet.len(), 8);
        assert_eq!(b.offset, 64 + 16 + 4);
        assert!(r.next().is_none());
        assert_eq!(r.end(), Some(CaptureEnd::Clean));
    }

    #[test]
    fn every_cut_reads_up_to_the_last_whole_record() {
        let f = file(&[&[1, 2, 3, 4], &[5, 6, 7, 8]]);
        let second = 64 + 16 + 4;
        for cut in second + 1..f.len() {
            let (_, mut r) = CaptureReader::new(&f[..cut]).unwrap();
            assert_eq!(r.by_ref().count(), 1, "cut at {cut}");
            assert_eq!(
                r.end(),
                Some(CaptureEnd::Truncated {
                    offset: second,
                    leftover: cut - second
                })
            );
        }
    }

    #[test]
    fn not_a_capture() {
        assert!(matches!(
            CaptureReader::new(b"short"),
            Err(CaptureError::TooShort(5))
        ));
        let mut f = file(&[]);
        f[0] = b'X';
        assert!(matches!(
            CaptureReader::new(&f),
            Err(CaptureError::BadMagic(_))
        ));
        let mut f = file(&[]);
        f[8] = 9;
        assert!(matches!(
            CaptureReader::new(&f),
            Err(CaptureError::BadVersion(9))
        ));
        let mut f = file(&[&[0; 4]]);
        f[64 + 8..64 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        let (_, mut r) = CaptureReader::new(&f).unwrap();
        assert!(r.next().is_none());
        assert!(matches!(
            r.end(),
            Some(CaptureEnd::Corrupt { offset: 64, .. })
        ));
    }

    #[test]
    fn a_zero_tail_is_unwritten_space_not_records() {
        let f = file(&[&[1, 2, 3, 4], &[5, 6, 7, 8]]);
        for zeros in [1, 15, 16, 17, 32, 4096] {
            let mut g = f.clone();
            g.resize(f.len() + zeros, 0);
            let (_, mut r) = CaptureReader::new(&g).unwrap();
            assert_eq!(r.by_ref().count(), 2, "{zeros} zeros");
            assert_eq!(
                r.end(),
                Some(CaptureEnd::ZeroTail {
                    offset: f.len(),
                    len: zeros
                })
            );
        }
        // A zero header with anything after it is read as before: a
        // zero-length record, which merge rejects as a packet.
        let mut g = f.clone();
        g.extend_from_slice(&[0; 16]);
        g.extend_from_slice(&emit_record_header(30, 4, 0));
        g.extend_from_slice(&[9; 4]);
        let (_, mut r) = CaptureReader::new(&g).unwrap();
        assert_eq!(r.by_ref().count(), 4);
        assert_eq!(r.end(), Some(CaptureEnd::Clean));
    }
}
