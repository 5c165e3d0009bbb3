//! Large sequential outputs written around the page cache.
//!
//! An export of a 100 M-reference trace writes gigabytes (CSV, the
//! simulators' text formats). Written through the page cache, the kernel's
//! copying and its management of those pages cost the process more CPU
//! than formatting the text: on this project's 156 M-record CSV export,
//! 8.3 s of system time against 2.8 s of user time. [`DirectWriter`] writes
//! whole aligned chunks with `O_DIRECT` instead (the bytes go from its
//! buffer to the device), and the last partial chunk through the page
//! cache. Where the file system refuses `O_DIRECT` (tmpfs before Linux
//! 6.6, some network file systems) or the file's offset is not aligned, it
//! writes through the page cache as any file: the bytes are the same.
//!
//! [`StdoutFile`] does the same for standard output redirected to a regular
//! file (`hmtt dump --csv > rows.csv`).
//!
//! It does not sync: the caller (an [`AtomicFile`](crate::atomic_file::AtomicFile)'s
//! commit) does, after flushing it.

use std::alloc::{alloc, dealloc, Layout};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;

/// The alignment of `O_DIRECT` transfers: of the buffer's address, of the
/// file offset and of each length. 4 KiB covers every logical block size
/// Linux's block devices have.
const ALIGN: usize = 4096;

/// The chunk written at once: large enough that the device's per-request
/// cost is small, small enough to stay out of the way.
pub const DIRECT_CHUNK: usize = 8 << 20;

/// A page-aligned heap buffer (`O_DIRECT` needs the address aligned).
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain bytes owned by this value alone.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len, ALIGN).expect("chunk size and alignment");
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` holds `layout.size()` bytes for our lifetime; the
        // bytes are written before they are read (`len` tracks how many).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// A buffered writer of a regular file that writes its full chunks with
/// `O_DIRECT` where the file system takes it (module docs).
pub struct DirectWriter {
    file: File,
    buf: AlignedBuf,
    len: usize,
    direct: bool,
    flags: libc::c_int,
}

impl DirectWriter {
    /// Writes to `file` (a handle of its own: its flags are changed, and
    /// the open file description's with them, until the last chunk is
    /// written or the writer dropped). Dropped unflushed, it does not write
    /// what it holds (the output of a failed run is not committed anyway).
    pub fn new(file: File) -> DirectWriter {
        Self::with_chunk(file, DIRECT_CHUNK)
    }

    /// As [`new`](Self::new), with chunks of `chunk` bytes (a multiple of
    /// 4 KiB; tests use small ones).
    pub fn with_chunk(file: File, chunk: usize) -> DirectWriter {
        let chunk = chunk.max(ALIGN).next_multiple_of(ALIGN);
        let fd = file.as_raw_fd();
        // SAFETY: F_GETFL on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        let direct =
            flags >= 0 && starts_aligned(&file) && set_flags(&file, flags | libc::O_DIRECT);
        DirectWriter {
            file,
            buf: AlignedBuf::new(chunk),
            len: 0,
            direct,
            flags: flags.max(0),
        }
    }

    /// Whether full chunks still go around the page cache (false once the
    /// file system has refused it).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Writes the buffered chunk; a refusal of `O_DIRECT` (EINVAL) turns it
    /// off and writes the same bytes through the page cache.
    fn write_chunk(&mut self) -> io::Result<()> {
        let len = self.len;
        if len == 0 {
            return Ok(());
        }
        if self.direct && len.is_multiple_of(ALIGN) {
            let bytes = &self.buf.as_mut_slice()[..len];
            match (&self.file).write_all(bytes) {
                Ok(()) => {
                    self.len = 0;
                    return Ok(());
                }
                // Nothing of a refused O_DIRECT write reached the file:
                // write it again through the page cache.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.stop_direct()?,
                Err(e) => return Err(e),
            }
        } else if self.direct {
            // A partial last chunk: O_DIRECT needs whole blocks.
            self.stop_direct()?;
        }
        let bytes = &self.buf.as_mut_slice()[..len];
        (&self.file).write_all(bytes)?;
        self.len = 0;
        Ok(())
    }

    fn stop_direct(&mut self) -> io::Result<()> {
        self.direct = false;
        if set_flags(&self.file, self.flags & !libc::O_DIRECT) {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Whether the file's offset is a multiple of the alignment (a fresh file's
/// is 0; standard output appended to may not be).
fn starts_aligned(file: &File) -> bool {
    // SAFETY: lseek with SEEK_CUR and offset 0 only reads the offset.
    let at = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_CUR) };
    at >= 0 && (at as u64).is_multiple_of(ALIGN as u64)
}

fn set_flags(file: &File, flags: libc::c_int) -> bool {
    // SAFETY: F_SETFL on a descriptor we own; the kernel checks the flags.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags) == 0 }
}

impl Write for DirectWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.buf.layout.size() - self.len;
        let n = data.len().min(room);
        self.buf.as_mut_slice()[self.len..self.len + n].copy_from_slice(&data[..n]);
        self.len += n;
        if self.len == self.buf.layout.size() {
            self.write_chunk()?;
        }
        Ok(n)
    }

    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = self.write(data)?;
            data = &data[n..];
        }
        Ok(())
    }

    /// Writes what is buffered. Writers flush once, at their end: a flush
    /// of a partial chunk before it writes the rest of the file through the
    /// page cache.
    fn flush(&mut self) -> io::Result<()> {
        self.write_chunk()
    }
}

impl Drop for DirectWriter {
    fn drop(&mut self) {
        if self.direct {
            let _ = set_flags(&self.file, self.flags & !libc::O_DIRECT);
        }
    }
}

/// Standard output's regular file, opened again (`/proc/self/fd/1`) so that
/// `O_DIRECT` stays off the description the shell shares with others; at
/// each flush fd 1's offset is moved to the new description's, past what
/// was written.
pub struct StdoutFile {
    out: DirectWriter,
}

impl StdoutFile {
    /// `None` unless standard output is a regular file, not opened for
    /// appending (whose offset moves under other writers).
    pub fn open() -> Option<StdoutFile> {
        let fd = std::io::stdout().as_raw_fd();
        // SAFETY: F_GETFL and fstat on fd 1 only read its state.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || flags & libc::O_APPEND != 0 || flags & libc::O_ACCMODE == libc::O_RDONLY {
            return None;
        }
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is a valid stat buffer.
        if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        // SAFETY: lseek with offset 0 and SEEK_CUR reads the offset.
        let start = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
        let start = u64::try_from(start).ok()?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/self/fd/1")
            .ok()?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(start)).ok()?;
        Some(StdoutFile {
            out: DirectWriter::new(file),
        })
    }

    fn flush_to_offset(&mut self) -> io::Result<()> {
        self.out.flush()?;
        // SAFETY: reads the offset of our own description, then moves fd
        // 1's there, where later output (this process's or the shell's)
        // continues.
        let end = unsafe { libc::lseek(self.out.file.as_raw_fd(), 0, libc::SEEK_CUR) };
        let fd = std::io::stdout().as_raw_fd();
        if end < 0 || unsafe { libc::lseek(fd, end, libc::SEEK_SET) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for StdoutFile {
    /// As a `BufWriter`, a dropped one writes what it holds; the errors
    /// then have nowhere to go.
    fn drop(&mut self) {
        let _ = self.flush_to_offset();
    }
}

impl Write for StdoutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_to_offset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("hmtt-direct-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("out")
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 4099) as u8).collect()
    }

    fn write_in_pieces(path: &std::path::Path, data: &[u8], chunk: usize) -> bool {
        let mut w = DirectWriter::with_chunk(File::create(path).unwrap(), chunk);
        let was_direct = w.is_direct();
        let mut rest = data;
        let mut piece = 1;
        while !rest.is_empty() {
            let n = piece.min(rest.len());
            w.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
            piece = piece * 3 % 20011 + 1;
        }
        w.flush().unwrap();
        was_direct
    }

    #[test]
    fn every_byte_arrives_in_order_whatever_the_sizes() {
        for (name, len) in [
            ("empty", 0),
            ("short", 100),
            ("chunks", 3 * 16384),
            ("odd", 123_457),
        ] {
            let path = scratch(name);
            let data = pattern(len);
            write_in_pieces(&path, &data, 16384);
            let mut back = Vec::new();
            File::open(&path).unwrap().read_to_end(&mut back).unwrap();
            assert_eq!(back, data, "{name}");
            std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        }
    }

    #[test]
    fn a_file_system_without_o_direct_gets_the_same_bytes() {
        // /dev/shm is tmpfs: O_DIRECT is refused there on older kernels and
        // taken on newer ones; either way the bytes must be the same.
        let dir = std::path::Path::new("/dev/shm");
        if !dir.is_dir() {
            return;
        }
        let path = dir.join(format!("hmtt-direct-{}", std::process::id()));
        let data = pattern(200_000);
        write_in_pieces(&path, &data, 8192);
        let back = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn an_unaligned_start_writes_through_the_page_cache() {
        let path = scratch("unaligned");
        let mut f = File::create(&path).unwrap();
        f.write_all(b"head").unwrap();
        let mut w = DirectWriter::with_chunk(f, 4096);
        assert!(!w.is_direct());
        w.write_all(&pattern(10_000)).unwrap();
        w.flush().unwrap();
        let back = std::fs::read(&path).unwrap();
        assert_eq!(&back[..4], b"head");
        assert_eq!(&back[4..], &pattern(10_000)[..]);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_flags_are_restored_after_the_last_chunk() {
        // A partial last chunk (9000 bytes) is written through the page
        // cache at the flush; whole chunks only (8192) leave O_DIRECT on
        // until the writer is dropped.
        for (name, len) in [("partial", 9000), ("whole", 8192)] {
            let path = scratch(name);
            let f = File::create(&path).unwrap();
            let mut w = DirectWriter::with_chunk(f.try_clone().unwrap(), 4096);
            w.write_all(&pattern(len)).unwrap();
            w.flush().unwrap();
            drop(w);
            // SAFETY: F_GETFL on an open descriptor.
            let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
            assert_eq!(flags & libc::O_DIRECT, 0, "{name}");
            assert_eq!(std::fs::read(&path).unwrap(), pattern(len), "{name}");
            std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        }
    }
}
