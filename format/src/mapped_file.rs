//! How every tool maps an input file, so that a file cut short under a
//! reader ends the command with a clear error instead of SIGBUS.
//!
//! hmtt's own writers rename a finished file into place
//! ([`crate::atomic_file`]), so a mapped input never changes under a reader
//! when hmtt rewrites it. A program outside hmtt that truncates the file in
//! place (`cp`, `>` redirection, `truncate`) does cut the mapping: touching
//! a page past the new end raises SIGBUS. [`MappedFile`] catches that
//! signal. Its handler maps zero-filled pages over the rest of the mapping,
//! marks the file as cut and lets the reader go on; the reader then meets
//! zeros (which the trace and archive checksums refuse), and
//! [`crate::atomic_file::AtomicFile::commit`] refuses to put any output in
//! place while an input of the process is marked cut
//! ([`cut_inputs`]). The command reports the cut input by name.
//!
//! A SIGBUS at an address no `MappedFile` holds is passed on to the handler
//! that was there before (Rust's own stack-overflow handler, or the
//! default action), so other faults still end the process as they would.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// How many files may be mapped with the guard at once; more are mapped
/// unguarded, with a warning.
const SLOTS: usize = 1024;

/// One guarded mapping: `[start, end)`, 0 when free. Read by the signal
/// handler, so only atomics.
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    cut: AtomicBool,
}

static GUARDED: [Slot; SLOTS] = [const {
    Slot {
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        cut: AtomicBool::new(false),
    }
}; SLOTS];
/// The path of each slot, for the error message (never touched by the
/// handler). A cut slot's path stays here after its file is closed.
static PATHS: Mutex<Vec<Option<PathBuf>>> = Mutex::new(Vec::new());
/// Slots whose file was cut; kept after the file is closed.
static CUT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
/// The handler before ours, to pass foreign faults on to.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// An input file mapped read-only, guarded against being cut short.
pub struct MappedFile {
    map: Option<memmap2::Mmap>,
    slot: Option<usize>,
    path: PathBuf,
}

/// An input that another program cut short while it was read.
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: the file was cut short by another program while it was read (truncated in place); \
     what was read past its new end is void",
    path.display()
)]
pub struct InputCut {
    pub path: PathBuf,
}

impl MappedFile {
    /// Maps `path` read-only. An empty file maps to no bytes.
    pub fn open(path: &Path) -> io::Result<MappedFile> {
        let f = File::open(path)?;
        Self::from_file(&f, path)
    }

    /// Maps an open file; `path` names it in messages.
    pub fn from_file(f: &File, path: &Path) -> io::Result<MappedFile> {
        let path = path.to_path_buf();
        if f.metadata()?.len() == 0 {
            return Ok(MappedFile {
                map: None,
                slot: None,
                path,
            });
        }
        install_handler();
        // SAFETY: read-only; a cut under the map is caught by the handler
        // (module comment), and every reader bounds-checks what it reads.
        let map = unsafe { memmap2::Mmap::map(f) }?;
        let slot = guard(&map, &path);
        Ok(MappedFile {
            map: Some(map),
            slot,
            path,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file was cut short under this mapping.
    pub fn was_cut(&self) -> bool {
        self.slot
            .is_some_and(|s| GUARDED[s].cut.load(Ordering::SeqCst))
    }

    /// An error when the file was cut short under this mapping.
    pub fn check(&self) -> Result<(), InputCut> {
        if self.was_cut() {
            Err(InputCut {
                path: self.path.clone(),
            })
        } else {
            Ok(())
        }
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // The slot is freed before the map is unmapped (fields drop after
        // this), so the handler never claims an address being reused.
        if let Some(s) = self.slot.take() {
            release(s);
        }
    }
}

/// Every input of this process that was cut short under a reader, in the
/// order met, including files already closed.
pub fn cut_inputs() -> Vec<PathBuf> {
    collect_cuts();
    CUT.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The first input of this process cut short under a reader, as an error.
pub fn check_inputs() -> Result<(), InputCut> {
    match cut_inputs().into_iter().next() {
        Some(path) => Err(InputCut { path }),
        None => Ok(()),
    }
}

/// Whether `e`, or one of its causes, is an [`InputCut`]: the cut is then
/// already what the error reports.
pub fn is_input_cut(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| e.is::<InputCut>())
}

/// Moves the paths of open cut slots to `CUT`.
fn collect_cuts() {
    let paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    let mut cut = CUT.lock().unwrap_or_else(|e| e.into_inner());
    for (i, p) in paths.iter().enumerate() {
        if let Some(p) = p {
            if GUARDED[i].cut.load(Ordering::SeqCst) && !cut.contains(p) {
                cut.push(p.clone());
            }
        }
    }
}

fn guard(map: &memmap2::Mmap, path: &Path) -> Option<usize> {
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    if paths.is_empty() {
        paths.resize(SLOTS, None);
    }
    let Some(i) = paths.iter().position(Option::is_none) else {
        tracing::warn!(
            "{}: more than {SLOTS} files mapped at once; this one is read without the guard against being cut short",
            path.display()
        );
        return None;
    };
    let start = map.as_ptr() as usize;
    let slot = &GUARDED[i];
    slot.cut.store(false, Ordering::SeqCst);
    slot.end.store(start + map.len(), Ordering::SeqCst);
    slot.start.store(start, Ordering::SeqCst);
    paths[i] = Some(path.to_path_buf());
    Some(i)
}

fn release(i: usize) {
    let mut paths = PATHS.lock().unwrap_or_else(|e| e.into_inner());
    let slot = &GUARDED[i];
    slot.start.store(0, Ordering::SeqCst);
    slot.end.store(0, Ordering::SeqCst);
    if slot.cut.swap(false, Ordering::SeqCst) {
        if let Some(p) = paths[i].clone() {
            let mut cut = CUT.lock().unwrap_or_else(|e| e.into_inner());
            if !cut.contains(&p) {
                cut.push(p);
            }
        }
    }
    paths[i] = None;
}

fn install_handler() {
    INSTALL.call_once(|| {
        // SAFETY: sysconf and sigaction with a handler that only reads
        // atomics and calls mmap and sigaction.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::SeqCst);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            // The previous handler is stored before ours can run.
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current);
            let _ = PREVIOUS.set(current);
            if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
                tracing::warn!(
                    "the SIGBUS handler could not be installed: an input cut short while read ends the run with SIGBUS"
                );
            }
        }
    });
}

extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in &GUARDED {
        let start = slot.start.load(Ordering::SeqCst);
        let end = slot.end.load(Ordering::SeqCst);
        if start == 0 || addr < start || addr >= end {
            continue;
        }
        let from = addr & !(page - 1);
        // SAFETY: replaces pages of our own read-only file mapping, from
        // the faulting page to its end, by zero-filled private pages;
        // the Mmap's munmap later removes them with the rest.
        let zeros = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            slot.cut.store(true, Ordering::SeqCst);
            return;
        }
        break;
    }
    // Not ours (or the zero pages could not be mapped): what was there
    // before handles it.
    match PREVIOUS.get().copied() {
        Some(p)
            if p.sa_sigaction != libc::SIG_DFL
                && p.sa_sigaction != libc::SIG_IGN
                && p.sa_flags & libc::SA_SIGINFO != 0 =>
        {
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                // SAFETY: an SA_SIGINFO handler has this signature.
                unsafe { std::mem::transmute(p.sa_sigaction) };
            handler(signal, info, context);
        }
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            let handler: extern "C" fn(libc::c_int) =
                // SAFETY: a plain handler has this signature.
                unsafe { std::mem::transmute(p.sa_sigaction) };
            handler(signal);
        }
        _ => {
            // The default action: returning re-runs the faulting access,
            // which raises SIGBUS again, now with no handler.
            // SAFETY: resets this signal's action.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
            }
        }
    }
}
