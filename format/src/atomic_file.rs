//! How every tool writes an output file, so that no failed, killed or
//! concurrent run leaves a partial file under the final name, and no output
//! overwrites an input of the same run.
//!
//! [`AtomicFile`] writes to a temporary file in the destination's directory
//! (`.NAME.partial-PID.EXT`), and [`AtomicFile::commit`] syncs it and renames
//! it over the destination: readers see the old file or the whole new one,
//! never a part. Dropped without a commit (an error, a panic), the temporary
//! file is removed; a killed process leaves only the hidden temporary file,
//! which the next writer of the same destination names in a warning.
//! A reader that has the old file mapped keeps the old file's bytes (the
//! rename gives the destination a new inode), so a rewrite cannot shrink a
//! file under a reader. A destination that exists and is not a regular file
//! (`/dev/null`, a pipe) is written in place, since renaming over it would
//! replace the device.
//!
//! Nor is an output committed while an input of the process was cut short
//! under its reader ([`crate::mapped_file`]).
//!
//! [`refuse_output_over_input`] compares files by device and inode, not by
//! name, so `a/../t.hmtttrace` and a hard link are caught too.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::mapped_file::InputCut;

/// An output not put in place because an input of the process was cut
/// short under its reader: the error [`AtomicFile::commit`] and
/// [`AtomicDir::commit`] return then,
/// inside an `io::Error` whose source is the [`InputCut`]
/// ([`crate::mapped_file::is_input_cut`] tells it).
#[derive(Debug, thiserror::Error)]
#[error("{} was not written: an input it derives from was cut short", dest.display())]
pub struct NotWritten {
    pub dest: PathBuf,
    #[source]
    pub cut: InputCut,
}

/// An output file being written under a temporary name.
#[derive(Debug)]
pub struct AtomicFile {
    file: File,
    /// The temporary file, or `None` when writing in place (a device).
    temp: Option<PathBuf>,
    dest: PathBuf,
}

/// The temporary name of `dest` for this process: hidden, in the same
/// directory (a rename never crosses file systems), with `dest`'s extension
/// kept last (`.NAME.partial-PID.EXT`) for writers that choose the format
/// by it. A second writer of `dest` in the same process takes
/// `.NAME.partial-PID-2.EXT`, and so on ([`AtomicFile::create`]).
pub fn temp_path_of(dest: &Path) -> io::Result<PathBuf> {
    temp_path_numbered(dest, 1)
}

/// The `n`-th temporary name of `dest` for this process (1: no number).
fn temp_path_numbered(dest: &Path, n: u32) -> io::Result<PathBuf> {
    let stem = dest.file_stem().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", dest.display()),
        )
    })?;
    let mut temp = OsString::from(".");
    temp.push(stem);
    temp.push(format!(".partial-{}", std::process::id()));
    if n > 1 {
        temp.push(format!("-{n}"));
    }
    if let Some(ext) = dest.extension() {
        temp.push(".");
        temp.push(ext);
    }
    Ok(dest.with_file_name(temp))
}

impl AtomicFile {
    /// Starts writing `dest`: creates its temporary file (readable and
    /// writable, permissions as `File::create` gives). `dest` itself is not
    /// touched until [`commit`](Self::commit).
    pub fn create(dest: &Path) -> io::Result<AtomicFile> {
        match std::fs::metadata(dest) {
            Ok(m) if m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is a directory", dest.display()),
                ))
            }
            Ok(m) if !m.is_file() => {
                let file = OpenOptions::new().write(true).open(dest)?;
                return Ok(AtomicFile {
                    file,
                    temp: None,
                    dest: dest.to_path_buf(),
                });
            }
            _ => {}
        }
        warn_of_killed_writers(dest);
        let (temp, file) = create_unused(
            |n| temp_path_numbered(dest, n),
            |temp| {
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(temp)
            },
        )?;
        Ok(AtomicFile {
            file,
            temp: Some(temp),
            dest: dest.to_path_buf(),
        })
    }

    /// The open temporary file (positioned writes, `set_len`, `try_clone`).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Where the bytes are being written now: the temporary file (or the
    /// destination when it is written in place).
    pub fn writing_path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.dest)
    }

    /// The final name.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs the file and renames it over the destination, then syncs the
    /// directory so the rename survives a crash. Every writer over a clone
    /// of [`file`](Self::file) must have flushed before.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let file = &self.file;
        put_in_place(
            &temp,
            &self.dest,
            || file.sync_all(),
            |t| std::fs::remove_file(t),
        )
    }
}

/// Creates the first of the temporary names `numbered(1)`, `numbered(2)`,
/// ... that no other writer holds (`create` fails with `AlreadyExists` on a
/// taken one): two writers of one destination in one process must not
/// share, and truncate, one temporary file or directory.
fn create_unused<T>(
    numbered: impl Fn(u32) -> io::Result<PathBuf>,
    create: impl Fn(&Path) -> io::Result<T>,
) -> io::Result<(PathBuf, T)> {
    let mut n = 1;
    loop {
        let temp = numbered(n)?;
        match create(&temp) {
            Ok(made) => return Ok((temp, made)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// The commit of a temporary file or directory: not put in place if an
/// input was cut short under the reader (crate::mapped_file), else synced
/// (`sync`), renamed over `dest` and the rename synced; removed (`remove`)
/// on any failure.
fn put_in_place(
    temp: &Path,
    dest: &Path,
    sync: impl FnOnce() -> io::Result<()>,
    remove: impl Fn(&Path) -> io::Result<()>,
) -> io::Result<()> {
    if let Err(cut) = crate::mapped_file::check_inputs() {
        let _ = remove(temp);
        return Err(io::Error::other(NotWritten {
            dest: dest.to_path_buf(),
            cut,
        }));
    }
    if let Err(e) = sync().and_then(|()| std::fs::rename(temp, dest)) {
        let _ = remove(temp);
        return Err(e);
    }
    sync_parent_dir(dest);
    Ok(())
}

/// Syncs the directory that holds `dest`, so a rename into it survives a
/// crash. Best effort: some file systems refuse to sync a directory.
fn sync_parent_dir(dest: &Path) {
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Warns of the temporary files of `dest` that a killed writer left
/// (`.NAME.partial-PID….EXT` whose process is gone). They are not removed:
/// a killed kernel-log drain's file holds records drained from the kernel,
/// and a killed merge's can be read with `--allow-incomplete`.
fn warn_of_killed_writers(dest: &Path) {
    let (Some(stem), Some(dir)) = (dest.file_stem(), dest.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut prefix = OsString::from(".");
    prefix.push(stem);
    prefix.push(".partial-");
    let prefix = prefix.as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.as_encoded_bytes().strip_prefix(prefix) else {
            continue;
        };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(pid) = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            tracing::warn!(
                "{}: a temporary file ({size} bytes) of {} left by a writer that was killed \
                 (process {pid} is gone); it is not a finished output: delete it, or rename \
                 it to keep what it holds (docs/guide.md §10)",
                entry.path().display(),
                dest.display(),
            );
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// An output directory being written under a temporary name: the
/// directory counterpart of [`AtomicFile`] (a dataset of several files).
/// Its files are written into a hidden sibling directory
/// (`.NAME.partial-PID`, whole name kept), and [`AtomicDir::commit`] renames that over the
/// destination, so readers see no directory or the whole new one. The
/// destination must not exist or be an empty directory (the rename
/// replaces only that): a directory holding files is refused, never
/// deleted. Dropped without a commit, the temporary directory is removed.
#[derive(Debug)]
pub struct AtomicDir {
    temp: Option<PathBuf>,
    dest: PathBuf,
}

impl AtomicDir {
    /// Starts writing the directory `dest`: creates its empty temporary
    /// directory. `dest` itself is not touched until [`commit`](Self::commit).
    pub fn create(dest: &Path) -> io::Result<AtomicDir> {
        match std::fs::metadata(dest) {
            Ok(m) if !m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a directory", dest.display()),
                ))
            }
            Ok(_) if std::fs::read_dir(dest)?.next().is_some() => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} is a directory that holds files: remove it or choose another output",
                        dest.display()
                    ),
                ))
            }
            _ => {}
        }
        let name = dest.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no directory", dest.display()),
            )
        })?;
        let numbered = |n: u32| {
            let mut temp = OsString::from(".");
            temp.push(name);
            temp.push(format!(".partial-{}", std::process::id()));
            if n > 1 {
                temp.push(format!("-{n}"));
            }
            Ok(dest.with_file_name(temp))
        };
        let (temp, ()) = create_unused(numbered, |temp| std::fs::create_dir(temp))?;
        Ok(AtomicDir {
            temp: Some(temp),
            dest: dest.to_path_buf(),
        })
    }

    /// The temporary directory the files go into.
    pub fn path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.dest)
    }

    /// The final name.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Renames the temporary directory over the destination (which must
    /// still be absent or empty), then syncs the parent directory. Every
    /// file in it must have been written, flushed and synced before.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        let sync = || File::open(&temp).and_then(|d| d.sync_all());
        put_in_place(&temp, &self.dest, sync, |t| std::fs::remove_dir_all(t))
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
}

/// An output that is also an input of the same command.
#[derive(Debug, thiserror::Error)]
#[error(
    "the output {} is the input {} (the same file): writing it would destroy the input; \
     choose another output path",
    output.display(),
    input.display()
)]
pub struct OutputIsInput {
    pub output: PathBuf,
    pub input: PathBuf,
}

/// Refuses `output` when it is one of `inputs` (device and inode), before
/// anything is opened for writing. A device such as `/dev/null` is never
/// refused: writing it destroys nothing.
pub fn refuse_output_over_input<'a>(
    output: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<(), OutputIsInput> {
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !out.is_file() && !out.is_dir() {
        return Ok(());
    }
    for input in inputs {
        if let Ok(m) = std::fs::metadata(input) {
            if m.dev() == out.dev() && m.ino() == out.ino() {
                return Err(OutputIsInput {
                    output: output.to_path_buf(),
                    input: input.to_path_buf(),
                });
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `dest` through an [`AtomicFile`]: `dest` holds the
/// old bytes or all the new ones, never a part.
pub fn write_atomically(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let out = AtomicFile::create(dest)?;
    out.file().write_all(bytes)?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_at_once_replaces_the_old_one_whole() {
        let dir = std::env::temp_dir().join(format!("hmtt-atomic-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("report.json");
        std::fs::write(&dest, b"old bytes, longer than the new").unwrap();
        write_atomically(&dest, b"{}\n").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"{}\n");
        assert!(write_atomically(&dir, b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "hmtt-atomic-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names_in(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_destination_appears_only_on_commit() {
        let d = tempdir();
        let dest = d.join("out.csv");
        std::fs::write(&dest, "old\n").unwrap();
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"old\n");
        assert_eq!(names_in(&d).len(), 2);
        f.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new\n");
        assert_eq!(names_in(&d), ["out.csv"]);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_dropped_file_leaves_nothing() {
        let d = tempdir();
        let dest = d.join("out.csv");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"part").unwrap();
        drop(f);
        assert!(names_in(&d).is_empty());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn writers_of_one_destination_in_one_process_take_their_own_temporaries() {
        let d = tempdir();
        let dest = d.join("out.csv");
        let pid = std::process::id();
        let files: Vec<AtomicFile> = (0..3).map(|_| AtomicFile::create(&dest).unwrap()).collect();
        let temps: Vec<String> = files
            .iter()
            .map(|f| {
                f.writing_path()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            temps,
            [
                format!(".out.partial-{pid}.csv"),
                format!(".out.partial-{pid}-2.csv"),
                format!(".out.partial-{pid}-3.csv"),
            ]
        );
        drop(files);
        let dir = d.join("set");
        let dirs: Vec<AtomicDir> = (0..2).map(|_| AtomicDir::create(&dir).unwrap()).collect();
        assert_eq!(
            names_in(&d),
            [
                format!(".set.partial-{pid}"),
                format!(".set.partial-{pid}-2")
            ]
        );
        drop(dirs);
        assert!(names_in(&d).is_empty());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_killed_writers_temporary_file_is_kept() {
        let d = tempdir();
        let dest = d.join("out.hmtttrace");
        // No process has pid 2^22 + 1 (beyond Linux's pid_max).
        let left = d.join(".out.partial-4194305.hmtttrace");
        std::fs::write(&left, "part").unwrap();
        let f = AtomicFile::create(&dest).unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&left).unwrap(), b"part");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_device_is_written_in_place_and_a_directory_refused() {
        let mut f = AtomicFile::create(Path::new("/dev/null")).unwrap();
        f.write_all(b"x").unwrap();
        f.commit().unwrap();
        assert!(Path::new("/dev/null").exists());
        let d = tempdir();
        let e = AtomicFile::create(&d).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_directory_appears_only_on_commit_and_a_full_one_is_refused() {
        let d = tempdir();
        let dest = d.join("set.parquet");
        let out = AtomicDir::create(&dest).unwrap();
        std::fs::write(out.path().join("part"), "x").unwrap();
        assert!(!dest.exists());
        let temp = out.path().to_path_buf();
        out.commit().unwrap();
        assert_eq!(std::fs::read(dest.join("part")).unwrap(), b"x");
        assert!(!temp.exists());
        // A directory holding files is refused, not replaced.
        let e = AtomicDir::create(&dest).unwrap_err();
        assert!(e.to_string().contains("holds files"), "{e}");
        // A dropped one leaves nothing; an empty destination is replaced.
        let empty = d.join("empty");
        std::fs::create_dir(&empty).unwrap();
        let out = AtomicDir::create(&empty).unwrap();
        std::fs::write(out.path().join("part"), "y").unwrap();
        drop(out);
        assert!(names_in(&d).iter().all(|n| !n.contains("partial")));
        let out = AtomicDir::create(&empty).unwrap();
        std::fs::write(out.path().join("part"), "z").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(empty.join("part")).unwrap(), b"z");
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn an_output_over_an_input_is_refused_by_inode() {
        let d = tempdir();
        let input = d.join("t.hmtttrace");
        std::fs::write(&input, "x").unwrap();
        let link = d.join("link");
        std::fs::hard_link(&input, &link).unwrap();
        let e = refuse_output_over_input(&link, [input.as_path()]).unwrap_err();
        assert!(e.to_string().contains("is the input"), "{e}");
        let other = d.join("other");
        assert!(refuse_output_over_input(&other, [input.as_path()]).is_ok());
        std::fs::write(&other, "y").unwrap();
        assert!(refuse_output_over_input(&other, [input.as_path()]).is_ok());
        assert!(refuse_output_over_input(Path::new("/dev/null"), [Path::new("/dev/null")]).is_ok());
        std::fs::remove_dir_all(d).unwrap();
    }
}
