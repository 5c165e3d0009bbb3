//! The capture files of one run: mapped, checked and grouped by board and
//! port. Everything that makes a set of files unmergeable (not a capture, two
//! files for the same port and stripe, boards with different geometries or
//! tick lengths, starts far apart) is refused here, before any decoding.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hmtt_format::capture::{
    has_space_past_end, open_unless_being_written, set_len_giving_back_space, CaptureHeader,
    CaptureReader, EXTENSION, UNKNOWN_ID,
};
use hmtt_format::mapped_file::MappedFile;
use hmtt_format::packet::Packet;
use hmtt_format::Geometry;

use crate::error::MergeError;

/// Default largest spread of the files' start times in one run.
pub const DEFAULT_MAX_START_SKEW_NS: u64 = 600 * 1_000_000_000;

/// The bytes of one capture file.
enum Bytes {
    Map(MappedFile),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m.bytes(),
            Bytes::Owned(v) => v,
        }
    }
}

/// One capture file.
pub struct CaptureSource {
    pub name: String,
    pub header: CaptureHeader,
    bytes: Bytes,
    /// Board and port of the stream this file belongs to.
    pub board: u8,
    pub port: u8,
    /// Geometry and tick length of its first valid packet, if any.
    pub first_packet: Option<(Geometry, u16)>,
}

impl CaptureSource {
    pub fn data(&self) -> &[u8] {
        self.bytes.as_slice()
    }
    pub fn len(&self) -> u64 {
        self.data().len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.data().is_empty()
    }
}

/// The capture files of one run, grouped.
pub struct CaptureSet {
    pub sources: Vec<CaptureSource>,
    /// board → port → source indices in stripe order.
    pub boards: BTreeMap<u8, BTreeMap<u8, Vec<usize>>>,
    pub geometry: Option<Geometry>,
    pub tick_ps: u16,
    pub start_ns: u64,
    /// Disk space given back from past the files' ends (a killed capture's
    /// preallocation), bytes, and in how many files.
    pub preallocation_freed: (u64, usize),
}

/// Expands directories into their `*.hmttcap` files (reject files left out),
/// sorted by name.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| MergeError::io(p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.extension().is_some_and(|x| x == EXTENSION)
                        && !f
                            .file_name()
                            .is_some_and(|n| n.to_string_lossy().contains("reject"))
                })
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Gives back the space a killed capture preallocated past the end of the
/// file at `path`, `len` bytes long, as `hmtt capture --repair` does; a file
/// a running capture is writing keeps it. Returns the bytes freed.
fn give_back_preallocation(path: &Path, len: u64) -> std::io::Result<u64> {
    match open_unless_being_written(path)? {
        Some(f) => set_len_giving_back_space(&f, len),
        None => Ok(0),
    }
}

impl CaptureSet {
    /// Maps every file (directories are searched for `*.hmttcap`).
    pub fn open(paths: &[PathBuf], max_start_skew_ns: u64) -> Result<CaptureSet, MergeError> {
        let files = expand_paths(paths)?;
        let mut named = Vec::with_capacity(files.len());
        let mut freed = (0, 0);
        for path in files {
            let f = std::fs::File::open(&path).map_err(|e| MergeError::io(&path, e))?;
            let meta = f.metadata().map_err(|e| MergeError::io(&path, e))?;
            let len = meta.len();
            if has_space_past_end(&meta) {
                match give_back_preallocation(&path, len) {
                    Ok(0) => {}
                    Ok(n) => freed = (freed.0 + n, freed.1 + 1),
                    Err(e) => tracing::warn!(
                        "{}: space preallocated past the end not given back: {e}",
                        path.display()
                    ),
                }
            }
            // An empty file maps to no bytes and is refused as too short
            // below. A file cut short under the map reads as zeros past the
            // cut, and the command is failed for it (mapped_file).
            let bytes =
                Bytes::Map(MappedFile::from_file(&f, &path).map_err(|e| MergeError::io(&path, e))?);
            named.push((path, bytes));
        }
        let mut set = Self::build(named, max_start_skew_ns)?;
        set.preallocation_freed = freed;
        Ok(set)
    }

    /// A set over in-memory files (tests, pipelines): `(name, bytes)`.
    pub fn from_memory(
        files: Vec<(String, Vec<u8>)>,
        max_start_skew_ns: u64,
    ) -> Result<CaptureSet, MergeError> {
        Self::build(
            files
                .into_iter()
                .map(|(n, b)| (PathBuf::from(n), Bytes::Owned(b)))
                .collect(),
            max_start_skew_ns,
        )
    }

    fn build(
        files: Vec<(PathBuf, Bytes)>,
        max_start_skew_ns: u64,
    ) -> Result<CaptureSet, MergeError> {
        if files.is_empty() {
            return Err(MergeError::NoInput);
        }
        let mut sources = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            let (header, reader) =
                CaptureReader::new(bytes.as_slice()).map_err(|source| MergeError::NotACapture {
                    path: path.clone(),
                    source,
                })?;
            let name = path.display().to_string();
            // The first packet that passes its checks names the stream when
            // the header does not, and is checked against the header.
            let first = reader
                .take(64)
                .find_map(|r| Packet::new_checked(r.packet).ok())
                .map(|p| {
                    (
                        p.board(),
                        p.port(),
                        p.seq(),
                        p.geometry().expect("checked"),
                        p.tick_ps(),
                    )
                });
            let board = if header.board != UNKNOWN_ID {
                header.board
            } else {
                first.map_or(UNKNOWN_ID, |f| f.0)
            };
            let port = if header.port != UNKNOWN_ID {
                header.port
            } else {
                first.map_or(UNKNOWN_ID, |f| f.1)
            };
            if let (Some(hg), Some((_, _, seq, pg, _))) = (header.geometry, first) {
                if hg != pg {
                    return Err(MergeError::WrongGeometry {
                        path: name,
                        board,
                        seq,
                        found: pg.to_string(),
                        expected: format!("{hg} (the file header's)"),
                    });
                }
            }
            if let Some((pb, _, seq, _, _)) = first {
                if header.board != UNKNOWN_ID && pb != header.board {
                    return Err(MergeError::MixedRuns(format!(
                        "{name}: the header says board {} but packet seq {seq} comes from board {pb}",
                        header.board
                    )));
                }
            }
            sources.push(CaptureSource {
                name,
                first_packet: first.map(|f| (f.3, f.4)),
                header,
                bytes,
                board,
                port,
            });
        }

        // One geometry and one tick length for the whole run.
        let mut geometry: Option<(Geometry, &str)> = None;
        let mut tick: Option<(u16, &str)> = None;
        for s in &sources {
            let g = s.header.geometry.or(s.first_packet.map(|f| f.0));
            if let Some(g) = g {
                match geometry {
                    None => geometry = Some((g, &s.name)),
                    Some((g0, n0)) if g0 != g => {
                        return Err(MergeError::MixedRuns(format!(
                            "{} has geometry {g} but {n0} has {g0}",
                            s.name
                        )))
                    }
                    _ => {}
                }
            }
            let t = if s.header.tick_ps != 0 {
                Some(s.header.tick_ps)
            } else {
                s.first_packet.map(|f| f.1)
            };
            if let Some(t) = t {
                match tick {
                    None => tick = Some((t, &s.name)),
                    Some((t0, n0)) if t0 != t => {
                        return Err(MergeError::MixedRuns(format!(
                            "{} has a tick of {t} ps but {n0} has {t0} ps",
                            s.name
                        )))
                    }
                    _ => {}
                }
            }
        }
        let starts: Vec<(u64, &str)> = sources
            .iter()
            .filter(|s| s.header.start_ns != 0)
            .map(|s| (s.header.start_ns, s.name.as_str()))
            .collect();
        if let (Some(lo), Some(hi)) = (starts.iter().min(), starts.iter().max()) {
            if hi.0 - lo.0 > max_start_skew_ns {
                return Err(MergeError::MixedRuns(format!(
                    "{} started {:.1} s after {} (more than {:.1} s apart: not one run)",
                    hi.1,
                    (hi.0 - lo.0) as f64 / 1e9,
                    lo.1,
                    max_start_skew_ns as f64 / 1e9
                )));
            }
        }
        let geometry = geometry.map(|g| g.0);
        let tick_ps = tick.map_or(0, |t| t.0);

        let mut boards: BTreeMap<u8, BTreeMap<u8, Vec<usize>>> = BTreeMap::new();
        for (i, s) in sources.iter().enumerate() {
            boards
                .entry(s.board)
                .or_default()
                .entry(s.port)
                .or_default()
                .push(i);
        }
        for (board, ports) in boards.iter_mut() {
            for (port, files) in ports.iter_mut() {
                files.sort_by_key(|&i| sources[i].header.stripe);
                for w in files.windows(2) {
                    let (a, b) = (&sources[w[0]], &sources[w[1]]);
                    if a.header.stripe == b.header.stripe && *port != UNKNOWN_ID {
                        return Err(MergeError::MixedRuns(format!(
                            "{} and {} are both stripe {} of board {board} port {port}",
                            a.name, b.name, a.header.stripe
                        )));
                    }
                }
            }
        }
        let start_ns = starts.iter().map(|s| s.0).min().unwrap_or(0);
        Ok(CaptureSet {
            sources,
            boards,
            geometry,
            tick_ps,
            start_ns,
            preallocation_freed: (0, 0),
        })
    }

    /// Total bytes of all files.
    pub fn total_bytes(&self) -> u64 {
        self.sources.iter().map(CaptureSource::len).sum()
    }

    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.sources.iter().map(|s| Path::new(s.name.as_str()))
    }
}
