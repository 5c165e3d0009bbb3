//! The CRC-32C checksums of a finished indexed file (from version 2): one
//! per block of `index stride` records, one over the index, names and
//! block checksums, one over the header. Written by [`seal_file`] and
//! [`seal_header`]; verified, over several threads for a large file, when
//! a reader opens it.

use super::*;
use crate::bytes::{put_u32, put_u64, u16_at, u32_at, u64_at};

/// CRC-32C of a header (its first `header.len()` bytes), its own checksum
/// field read as zeros.
pub fn header_checksum(header: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&header[..field::HEADER_CRC.start]);
    let crc = crc32c::crc32c_append(crc, &[0; 4]);
    crc32c::crc32c_append(crc, &header[field::HEADER_CRC.end..])
}

/// Writes the header checksum into `header`, whose every other field is
/// final.
pub fn seal_header(header: &mut [u8]) {
    let crc = header_checksum(header);
    put_u32(header, field::HEADER_CRC, crc);
}

/// CRC-32C of the time index, the name table and the block checksums, in
/// that order (contiguous in a file as written).
pub fn tail_checksum(index: &[u8], names: &[u8], checksums: &[u8]) -> u32 {
    let crc = crc32c::crc32c(index);
    let crc = crc32c::crc32c_append(crc, names);
    crc32c::crc32c_append(crc, checksums)
}

/// Builds the block checksums while record bytes stream out: one CRC-32C
/// over each run of `stride` records' bytes (the last run may be short).
#[derive(Debug, Clone)]
pub struct BlockChecksums {
    block_bytes: usize,
    crc: u32,
    filled: usize,
    sums: Vec<u32>,
}

impl BlockChecksums {
    pub fn new(stride: u64, record_len: usize) -> BlockChecksums {
        BlockChecksums {
            block_bytes: (stride.max(1) as usize).saturating_mul(record_len),
            crc: 0,
            filled: 0,
            sums: Vec::new(),
        }
    }
    /// The next records' bytes, in file order.
    #[inline]
    pub fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = bytes.len().min(self.block_bytes - self.filled);
            self.crc = crc32c::crc32c_append(self.crc, &bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == self.block_bytes {
                self.sums.push(self.crc);
                self.crc = 0;
                self.filled = 0;
            }
        }
    }
    /// The checksum table: `u32` checksums, one per block.
    pub fn emit(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self.sums.iter().flat_map(|c| c.to_le_bytes()).collect();
        if self.filled > 0 {
            out.extend_from_slice(&self.crc.to_le_bytes());
        }
        out
    }
}

/// Completes a file laid out, as its complete header says, up to the end
/// of its name table: appends the block checksums and writes the tail and
/// header checksums (for files built whole in memory, as tests do; a
/// streaming writer uses [`BlockChecksums`] and [`seal_header`]).
pub fn seal_file(file: &mut Vec<u8>) {
    let header_len = usize::from(u16_at(file, field::HEADER_LEN));
    let record_len = usize::from(u16_at(file, field::RECORD_LEN));
    let records = u64_at(file, field::RECORD_COUNT) as usize;
    let stride = u64_at(file, field::INDEX_STRIDE);
    let index_offset = u64_at(file, field::INDEX_OFFSET) as usize;
    let names_end = (u64_at(file, field::NAMES_OFFSET) + u64_at(file, field::NAMES_LEN)) as usize;
    let mut sums = BlockChecksums::new(stride, record_len);
    sums.push(&file[header_len..header_len + records * record_len]);
    let table = sums.emit();
    file.truncate(names_end);
    let tail = tail_checksum(&file[index_offset..names_end], &[], &table);
    file.extend_from_slice(&table);
    put_u64(file, field::CHECKSUMS_OFFSET, names_end as u64);
    put_u32(file, field::TAIL_CRC, tail);
    seal_header(&mut file[..header_len]);
}

/// Verifies a finished file's tail checksum and every block checksum.
pub(super) fn verify_checksums(
    ty: &FileType,
    header: &CommonHeader,
    header_len: usize,
    data: &[u8],
    records: &[u8],
    index: &[u8],
    verify_blocks: bool,
) -> Result<(), TraceFileError> {
    let file = ty.name;
    if header.index_stride == 0 {
        return Err(TraceFileError::BadStride { file });
    }
    let count = header.block_count();
    let table = section(data, header.checksums_offset, count, CHECKSUM_LEN).ok_or(
        TraceFileError::BadChecksums {
            file,
            offset: header.checksums_offset,
            count,
        },
    )?;
    // The names were found inside the file by the caller.
    let names = section(data, header.names_offset, header.names_len, 1).unwrap_or(&[]);
    let computed = tail_checksum(index, names, table);
    if computed != header.tail_crc {
        return Err(TraceFileError::TailChecksum {
            file,
            offset: header.index_offset,
            end: header.checksums_offset + count * CHECKSUM_LEN as u64,
            stored: header.tail_crc,
            computed,
        });
    }
    if !verify_blocks {
        return Ok(());
    }
    let block_bytes = header.index_stride as usize * ty.record_len;
    match first_bad_block(records, table, block_bytes) {
        None => Ok(()),
        Some((b, stored, computed)) => {
            let len = records.len().min((b + 1) * block_bytes) - b * block_bytes;
            let offset = (header_len + b * block_bytes) as u64;
            let first_record = b as u64 * header.index_stride;
            Err(TraceFileError::BlockChecksum {
                file,
                block: b as u64,
                first_record,
                end_record: first_record + (len / ty.record_len) as u64,
                offset,
                end: offset + len as u64,
                stored,
                computed,
            })
        }
    }
}

/// Files at least this long are verified on every core.
pub(super) const PARALLEL_VERIFY_BYTES: usize = 64 << 20;

/// The first block of `records` (blocks of `block_bytes`) whose CRC-32C is
/// not its entry of `table`: `(block, stored, computed)`.
pub(super) fn first_bad_block(
    records: &[u8],
    table: &[u8],
    block_bytes: usize,
) -> Option<(usize, u32, u32)> {
    let scan = |first: usize, records: &[u8], table: &[u8]| {
        records
            .chunks(block_bytes)
            .zip(table.chunks_exact(CHECKSUM_LEN))
            .enumerate()
            .find_map(|(i, (block, stored))| {
                let stored = u32_at(stored, 0..4);
                let computed = crc32c::crc32c(block);
                (computed != stored).then_some((first + i, stored, computed))
            })
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let blocks = table.len() / CHECKSUM_LEN;
    if threads <= 1 || records.len() < PARALLEL_VERIFY_BYTES {
        return scan(0, records, table);
    }
    let per_thread = blocks.div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..blocks)
            .step_by(per_thread)
            .map(|first| {
                let end = (first + per_thread).min(blocks);
                let recs = &records[(first * block_bytes).min(records.len())
                    ..(end * block_bytes).min(records.len())];
                let sums = &table[first * CHECKSUM_LEN..end * CHECKSUM_LEN];
                s.spawn(move || scan(first, recs, sums))
            })
            .collect();
        // The first bad block of the first part that has one.
        parts
            .into_iter()
            .map(|h| h.join().expect("a checksum thread panicked"))
            .collect::<Vec<_>>()
            .into_iter()
            .flatten()
            .next()
    })
}
