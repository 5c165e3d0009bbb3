//! Writes an indexed file (the native trace of format.md §11 and the
//! virtual trace of §12 share its layout) as records stream in.
//! [`IndexedWriter`] keeps what every such file needs whatever holds its
//! bytes (the time index, the count, the first and last tick, the finished
//! common header) and hands the records to a [`RecordStore`]: a
//! [`BlockFile`] (the file itself), or the trace archive's blocks
//! (`crate::archive_writer`). A [`BlockFile`] writes a placeholder header and
//! the records through large page-aligned blocks, then the time index,
//! the names and the block checksums, and finally the real header, which
//! the file type fills in. The file is written under a temporary name and
//! renamed into place when finished ([`hmtt_format::atomic_file`]): a
//! writer that fails or dies leaves no file under the final name.
//!
//! A trace holds about four times the bytes of its captures, so writing is
//! the largest cost of a merge. The blocks go to the file with direct I/O
//! (O_DIRECT, bypassing the page cache, whose per-page work costs more CPU
//! than the decoding here) from a writer thread, so decoding and the disk
//! work at the same time. Where direct I/O is refused (tmpfs, some network
//! file systems) the same blocks are written through the page cache.

use hmtt_format::atomic_file::AtomicFile;
use std::fs::{File, OpenOptions};
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use hmtt_format::events::EventNames;
use hmtt_format::indexed::{tail_checksum, BlockChecksums, CommonHeader, FileRecord, IndexBuilder};
use memmap2::MmapMut;

use crate::error::MergeError;

/// Bytes per block written; a multiple of [`ALIGN`].
pub(crate) const BLOCK_BYTES: usize = 4 << 20;
/// Offsets, lengths and addresses of direct writes are multiples of this
/// (the largest logical block size of common devices; blocks are mapped
/// pages, so they are aligned to it).
const ALIGN: usize = 4096;
/// Blocks in rotation: one being filled, the others being written.
const BLOCKS: usize = 3;

/// Size of a huge page (x86-64 and most 64-bit Linux systems).
const HUGE_PAGE: usize = 2 << 20;

/// [`BLOCK_BYTES`] of anonymous memory, starting on a huge-page boundary
/// inside a slightly larger mapping and advised to use huge pages: the
/// kernel pins a block for each direct write (its largest cost in a merge),
/// and two huge pages pin faster than a thousand small ones; the first
/// writes fault twice instead of a thousand times. Where huge pages are
/// off the advice is ignored and the block works the same.
struct Block {
    map: MmapMut,
    start: usize,
}

impl Block {
    fn new() -> std::io::Result<Block> {
        let map = MmapMut::map_anon(BLOCK_BYTES + HUGE_PAGE)?;
        let start = map.as_ptr().align_offset(HUGE_PAGE).min(HUGE_PAGE);
        #[cfg(target_os = "linux")]
        let _ = map.advise_range(memmap2::Advice::HugePage, start, BLOCK_BYTES);
        Ok(Block { map, start })
    }
}

impl std::ops::Deref for Block {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.start..self.start + BLOCK_BYTES]
    }
}

impl std::ops::DerefMut for Block {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.start..self.start + BLOCK_BYTES]
    }
}

/// A block and the file offset it goes to.
struct Job {
    block: Block,
    offset: u64,
    len: usize,
}

/// Where an [`IndexedWriter`] puts the records and, at the end, the header,
/// index and names.
pub trait RecordStore<R> {
    /// Appends records (in tick order).
    fn put(&mut self, records: &[R]) -> Result<(), MergeError>;
    /// Room to build the next records in place; `None` when the store only
    /// takes [`put`](Self::put).
    fn spare(&mut self) -> Option<&mut [R]> {
        None
    }
    /// Keeps the first `n` records built in [`spare`](Self::spare) and
    /// gives them back for the bookkeeping; [`settle`](Self::settle) follows.
    fn keep(&mut self, n: usize) -> Result<&mut [R], MergeError>;
    /// Called after the bookkeeping of [`keep`](Self::keep)'s records.
    fn settle(&mut self) -> Result<(), MergeError> {
        Ok(())
    }
    /// Stores the finished file's parts, `common` saying where each goes;
    /// returns the stored size.
    fn finish(self, parts: FinishedParts) -> Result<u64, MergeError>;
    /// Puts what is known before the records (`early`: tick length, start
    /// time) into the unfinished file's placeholder header, if it is not
    /// stored yet, so a file whose writer dies still tells its times.
    fn announce(&mut self, early: &CommonHeader) {
        let _ = early;
    }
}

/// A finished indexed file's parts besides its records, in file order
/// after them: index, names, block checksums.
pub struct FinishedParts {
    pub common: CommonHeader,
    pub header: Vec<u8>,
    pub index: Vec<u8>,
    pub names: Vec<u8>,
    pub checksums: Vec<u8>,
}

/// Streams an indexed file of `R` records into a [`RecordStore`].
pub struct IndexedWriter<R, S = BlockFile<R>> {
    store: S,
    index: IndexBuilder,
    checksums: BlockChecksums,
    /// Byte conversion where the records' memory is not their layout.
    scratch: Vec<u8>,
    count: u64,
    first_tick: Option<u64>,
    last_tick: u64,
    records: PhantomData<fn(&R)>,
}

/// The file itself as an indexed file's store: records through large
/// page-aligned blocks, written by a thread with direct I/O.
pub struct BlockFile<R> {
    path: PathBuf,
    /// The file under its temporary name until [`RecordStore::finish`]
    /// renames it into place; dropped unfinished, it is removed.
    out: Option<AtomicFile>,
    /// Header, index and names: small positioned writes through the cache.
    plain: File,
    /// The block being filled and how many bytes it holds.
    block: Option<Block>,
    filled: usize,
    /// File offset of the block being filled.
    offset: u64,
    to_writer: Option<Sender<Job>>,
    /// Blocks written (or the first error), back from the writer thread.
    free: Receiver<std::io::Result<Block>>,
    writer: Option<JoinHandle<()>>,
    /// Byte conversion where the records' memory is not their layout.
    staging: Vec<u8>,
    records: PhantomData<fn(&R)>,
}

/// Opens `path` for direct I/O where the system allows it.
fn open_direct(path: &Path) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The writer thread: writes each block where it belongs, directly while
/// the file system accepts it, through the page cache after that.
fn write_blocks(
    mut direct: Option<File>,
    plain: File,
    jobs: Receiver<Job>,
    free: Sender<std::io::Result<Block>>,
) {
    for job in jobs {
        let bytes = &job.block[..job.len];
        let mut result = Err(std::io::ErrorKind::Other.into());
        if let Some(d) = &direct {
            result = d.write_all_at(bytes, job.offset);
            if result.is_err() {
                // EINVAL and the like: this file system or device does not
                // take direct writes; a real I/O error shows again below.
                direct = None;
            }
        }
        if direct.is_none() {
            result = plain.write_all_at(bytes, job.offset);
        }
        let failed = result.is_err();
        if free.send(result.map(|()| job.block)).is_err() || failed {
            return;
        }
    }
}

impl<R: FileRecord> IndexedWriter<R> {
    /// Creates `path` as a [`BlockFile`] (see [`BlockFile::create`]); the
    /// index gets an entry every `index_stride` records.
    pub fn create(path: &Path, index_stride: u64) -> Result<IndexedWriter<R>, MergeError> {
        Ok(IndexedWriter::over(BlockFile::create(path)?, index_stride))
    }

    pub fn path(&self) -> &Path {
        &self.store.path
    }
}

impl<R: FileRecord, S: RecordStore<R>> IndexedWriter<R, S> {
    /// A writer into `store`; the index gets an entry every `index_stride`
    /// records.
    pub fn over(store: S, index_stride: u64) -> IndexedWriter<R, S> {
        IndexedWriter {
            store,
            index: IndexBuilder::new(index_stride),
            checksums: BlockChecksums::new(index_stride, R::FILE.record_len),
            scratch: Vec::new(),
            count: 0,
            first_tick: None,
            last_tick: 0,
            records: PhantomData,
        }
    }

    pub fn records(&self) -> u64 {
        self.count
    }

    /// The tick length and start time, for the unfinished file's header
    /// (see [`RecordStore::announce`]); before the first records.
    pub fn announce(&mut self, tick_ps: u16, start_ns: u64) {
        self.store.announce(&CommonHeader {
            tick_ps,
            start_ns,
            ..CommonHeader::default()
        });
    }

    /// Appends records (in tick order).
    pub fn write(&mut self, records: &[R]) -> Result<(), MergeError> {
        self.account(records);
        self.store.put(records)
    }

    /// Room where records can be built straight into the bytes that are
    /// stored ([`FileRecord::in_file_bytes_mut`]), if the store has it;
    /// [`commit`](Self::commit) keeps the first of them.
    pub fn spare(&mut self) -> Option<&mut [R]> {
        self.store.spare()
    }

    /// Keeps the first `n` records built in [`spare`](Self::spare).
    pub fn commit(&mut self, n: usize) -> Result<(), MergeError> {
        let done = self.store.keep(n)?;
        if let (Some(first), Some(last)) = (done.first(), done.last()) {
            self.first_tick.get_or_insert(first.tick());
            self.last_tick = last.tick();
        }
        self.index.push_block(self.count, done);
        self.checksums
            .push(R::as_file_bytes(done, &mut self.scratch));
        self.count += n as u64;
        self.store.settle()
    }

    /// Bookkeeping for `records`, which were just placed at the end of the
    /// file (index, count, first and last tick).
    fn account(&mut self, records: &[R]) {
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return;
        };
        self.first_tick.get_or_insert(first.tick());
        self.last_tick = last.tick();
        self.index.push_block(self.count, records);
        self.checksums
            .push(R::as_file_bytes(records, &mut self.scratch));
        self.count += records.len() as u64;
    }

    /// Stores the index and the names, then the header that `header` makes
    /// of the finished file's common fields (counts, offsets, ticks, the
    /// complete flag; start time, tick length and further flags are the
    /// caller's to set). Returns the stored size.
    pub fn finish(
        self,
        names: &EventNames,
        header: impl FnOnce(CommonHeader) -> Vec<u8>,
    ) -> Result<u64, MergeError> {
        let names = names.emit_section();
        let index = self.index.emit();
        let checksums = self.checksums.emit();
        let common = CommonHeader {
            first_tick: self.first_tick.unwrap_or(0),
            last_tick: self.last_tick,
            tail_crc: tail_checksum(&index, &names, &checksums),
            ..CommonHeader::finished(
                R::FILE.header_len,
                R::FILE.record_len,
                self.count,
                &self.index,
                names.len(),
            )
        };
        self.store.finish(FinishedParts {
            common,
            header: header(common),
            index,
            names,
            checksums,
        })
    }
}

impl<R: FileRecord> BlockFile<R> {
    /// Creates `path` with a placeholder header (the file type's
    /// identification, not complete).
    pub fn create(path: &Path) -> Result<BlockFile<R>, MergeError> {
        let io = |e| MergeError::io(path, e);
        let header_len = R::FILE.header_len;
        // Records never straddle two blocks, so they can be built in place.
        assert!(header_len.is_multiple_of(R::FILE.record_len));
        assert!(BLOCK_BYTES.is_multiple_of(R::FILE.record_len));
        let out = AtomicFile::create(path).map_err(io)?;
        let plain = out.file().try_clone().map_err(io)?;
        let direct = open_direct(out.writing_path());
        let (to_writer, jobs) = crossbeam_channel::bounded::<Job>(BLOCKS);
        let (give_back, free) = crossbeam_channel::bounded(BLOCKS);
        for _ in 1..BLOCKS {
            give_back.send(Block::new()).expect("the receiver is here");
        }
        let thread_file = plain.try_clone().map_err(io)?;
        let writer = std::thread::Builder::new()
            .name("trace-writer".into())
            .spawn(move || write_blocks(direct, thread_file, jobs, give_back))
            .map_err(io)?;
        let mut block = Block::new().map_err(io)?;
        block[..header_len].fill(0);
        CommonHeader::default().emit(&R::FILE, &mut block[..header_len]);
        Ok(BlockFile {
            path: path.to_path_buf(),
            out: Some(out),
            plain,
            block: Some(block),
            filled: header_len,
            offset: 0,
            to_writer: Some(to_writer),
            free,
            writer: Some(writer),
            staging: Vec::new(),
            records: PhantomData,
        })
    }

    /// Hands the block being filled (its first `len` bytes) to the writer
    /// thread and takes a free one.
    fn send_block(&mut self, len: usize) -> Result<(), MergeError> {
        let Some(block) = self.block.take() else {
            return Err(self.stopped());
        };
        let job = Job {
            block,
            offset: self.offset,
            len,
        };
        let sent = self.to_writer.as_ref().is_some_and(|t| t.send(job).is_ok());
        self.offset += len as u64;
        self.filled = 0;
        // A thread that stopped left its error behind it.
        let next = if sent {
            self.free.recv().ok()
        } else {
            self.free.try_iter().find(|r| r.is_err())
        };
        match next {
            Some(Ok(block)) => {
                self.block = Some(block);
                Ok(())
            }
            Some(Err(e)) => Err(MergeError::io(&self.path, e)),
            None => Err(self.stopped()),
        }
    }

    fn stopped(&self) -> MergeError {
        MergeError::io(
            &self.path,
            std::io::Error::other("the trace writer stopped after an error"),
        )
    }
}

impl<R: FileRecord> RecordStore<R> for BlockFile<R> {
    fn put(&mut self, records: &[R]) -> Result<(), MergeError> {
        let mut staging = std::mem::take(&mut self.staging);
        let mut bytes = R::as_file_bytes(records, &mut staging);
        while !bytes.is_empty() {
            let Some(block) = self.block.as_mut() else {
                return Err(self.stopped());
            };
            let n = bytes.len().min(BLOCK_BYTES - self.filled);
            block[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == BLOCK_BYTES {
                self.send_block(BLOCK_BYTES)?;
            }
        }
        self.staging = staging;
        Ok(())
    }

    fn spare(&mut self) -> Option<&mut [R]> {
        let block = self.block.as_mut()?;
        R::in_file_bytes_mut(&mut block[self.filled..])
    }

    fn keep(&mut self, n: usize) -> Result<&mut [R], MergeError> {
        if self.block.is_none() {
            return Err(self.stopped());
        }
        let end = self.filled + n * R::FILE.record_len;
        if end > BLOCK_BYTES {
            return Err(MergeError::io(
                &self.path,
                std::io::Error::other("more records committed than there was room for"),
            ));
        }
        let start = self.filled;
        self.filled = end;
        let block = self.block.as_mut().expect("checked above");
        match R::in_file_bytes_mut(&mut block[start..end]) {
            Some(done) => Ok(done),
            None => Err(MergeError::io(
                &self.path,
                std::io::Error::other("records cannot be built in place here"),
            )),
        }
    }

    fn announce(&mut self, early: &CommonHeader) {
        if self.offset == 0 {
            if let Some(block) = self.block.as_mut() {
                early.emit(&R::FILE, &mut block[..R::FILE.header_len]);
            }
        }
    }

    fn settle(&mut self) -> Result<(), MergeError> {
        if self.filled == BLOCK_BYTES {
            self.send_block(BLOCK_BYTES)?;
        }
        Ok(())
    }

    fn finish(mut self, parts: FinishedParts) -> Result<u64, MergeError> {
        // The last block, padded for direct I/O; the padding is cut below.
        let len = self.filled;
        let padded = len.div_ceil(ALIGN) * ALIGN;
        let Some(block) = self.block.as_mut() else {
            return Err(self.stopped());
        };
        block[len..padded].fill(0);
        if len > 0 {
            self.send_block(padded)?;
        }
        drop(self.to_writer.take());
        if let Some(w) = self.writer.take() {
            w.join().map_err(|_| {
                MergeError::io(
                    &self.path,
                    std::io::Error::other("the trace writer thread panicked"),
                )
            })?;
        }
        // Errors of the blocks still in flight.
        while let Ok(r) = self.free.try_recv() {
            r.map_err(|e| MergeError::io(&self.path, e))?;
        }
        let io = |e| MergeError::io(&self.path, e);
        let common = parts.common;
        self.plain.set_len(common.index_offset).map_err(io)?;
        self.plain
            .write_all_at(&parts.index, common.index_offset)
            .map_err(io)?;
        self.plain
            .write_all_at(&parts.names, common.names_offset)
            .map_err(io)?;
        self.plain
            .write_all_at(&parts.checksums, common.checksums_offset)
            .map_err(io)?;
        self.plain.write_all_at(&parts.header, 0).map_err(io)?;
        if let Some(out) = self.out.take() {
            out.commit().map_err(io)?;
        }
        Ok(common.checksums_offset + parts.checksums.len() as u64)
    }
}

impl<R> Drop for BlockFile<R> {
    fn drop(&mut self) {
        // Not finished (an error elsewhere): stop the thread; dropping `out`
        // then removes the temporary file.
        drop(self.to_writer.take());
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}
