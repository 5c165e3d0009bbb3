//! One reader for a native trace (§11) or its archive (§13): the header,
//! the names, and the records from a time on, decoding only the archive
//! blocks the reader reaches.

use super::{ArchiveError, ArchiveView};
use crate::events::EventNames;
use crate::trace::{TraceError, TraceHeader, TraceRecord, TraceView};

/// Why a file is neither a usable trace nor a usable archive.
#[derive(Debug, thiserror::Error)]
pub enum AnyTraceError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Archive(#[from] ArchiveError),
}

/// A trace file or a trace archive, told apart by magic.
#[derive(Debug)]
pub enum AnyTrace<'a> {
    Trace(TraceView<'a>),
    Archive(ArchiveView<'a>),
}

impl<'a> AnyTrace<'a> {
    /// Whether `data` starts like an archive.
    pub fn is_archive(data: &[u8]) -> bool {
        data.starts_with(&super::MAGIC)
    }

    /// Checks `data` as an archive if it has the archive's magic, as a
    /// trace file otherwise.
    pub fn new_checked(data: &'a [u8]) -> Result<AnyTrace<'a>, AnyTraceError> {
        Ok(if AnyTrace::is_archive(data) {
            AnyTrace::Archive(ArchiveView::new_checked(data)?)
        } else {
            AnyTrace::Trace(TraceView::new_checked(data)?)
        })
    }

    /// [`new_checked`](Self::new_checked) of bytes a view has verified
    /// already (see [`TraceView::new_checked_again`]).
    pub fn new_checked_again(data: &'a [u8]) -> Result<AnyTrace<'a>, AnyTraceError> {
        Ok(if AnyTrace::is_archive(data) {
            AnyTrace::Archive(ArchiveView::new_checked(data)?)
        } else {
            AnyTrace::Trace(TraceView::new_checked_again(data)?)
        })
    }

    pub fn header(&self) -> &TraceHeader {
        match self {
            AnyTrace::Trace(v) => v.header(),
            AnyTrace::Archive(a) => a.trace_header(),
        }
    }
    pub fn names(&self) -> &EventNames {
        match self {
            AnyTrace::Trace(v) => v.names(),
            AnyTrace::Archive(a) => a.names(),
        }
    }
    pub fn len(&self) -> usize {
        match self {
            AnyTrace::Trace(v) => v.len(),
            AnyTrace::Archive(a) => a.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Archive blocks decoded so far (0 for a trace file).
    pub fn blocks_decoded(&self) -> u64 {
        match self {
            AnyTrace::Trace(_) => 0,
            AnyTrace::Archive(a) => a.blocks_decoded(),
        }
    }

    /// Every record.
    pub fn records(&self) -> Records<'_, 'a> {
        self.records_from_tick(0)
            .expect("starting at tick 0 decodes nothing")
    }

    /// The records from the first with `tick >= t` on. An archive decodes
    /// at most one block here, then one block each time the iterator
    /// crosses into the next.
    pub fn records_from_tick(&self, t: u64) -> Result<Records<'_, 'a>, ArchiveError> {
        Ok(match self {
            AnyTrace::Trace(v) => Records {
                inner: Inner::Trace {
                    view: v,
                    pos: if t == 0 { 0 } else { v.seek_tick(t) },
                },
            },
            AnyTrace::Archive(a) => {
                let mut buf = Vec::new();
                let (block, pos, decoded) = if t == 0 {
                    (0, 0, false)
                } else {
                    a.seek_tick(t, &mut buf)?
                };
                Records {
                    inner: Inner::Archive {
                        view: a,
                        next_block: if decoded { block + 1 } else { block },
                        buf,
                        pos,
                    },
                }
            }
        })
    }
}

/// Records of an [`AnyTrace`] in order; an archive block that cannot be
/// decoded is an `Err` item, after which the iterator ends.
pub struct Records<'v, 'a> {
    inner: Inner<'v, 'a>,
}

enum Inner<'v, 'a> {
    Trace {
        view: &'v TraceView<'a>,
        pos: usize,
    },
    Archive {
        view: &'v ArchiveView<'a>,
        next_block: usize,
        buf: Vec<TraceRecord>,
        pos: usize,
    },
}

impl Iterator for Records<'_, '_> {
    type Item = Result<TraceRecord, ArchiveError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            Inner::Trace { view, pos } => {
                let r = view.record(*pos)?;
                *pos += 1;
                Some(Ok(r))
            }
            Inner::Archive {
                view,
                next_block,
                buf,
                pos,
            } => {
                if *pos >= buf.len() {
                    if *next_block >= view.block_count() {
                        return None;
                    }
                    let b = *next_block;
                    *next_block = view.block_count().max(b + 1);
                    if let Err(e) = view.decode_block(b, buf) {
                        buf.clear();
                        return Some(Err(e));
                    }
                    *next_block = b + 1;
                    *pos = 0;
                }
                let r = buf[*pos];
                *pos += 1;
                Some(Ok(r))
            }
        }
    }
}
