//! The trace an analysis reads ([`TraceInput`]: physical, archive or
//! virtual), walked as [`Item`]s, and its I-code events.

use super::*;

/// A trace to analyse.
pub enum TraceInput<'v, 'a> {
    Physical(&'v AnyTrace<'a>),
    Virtual(&'v VtraceView<'a>),
}

/// What a virtual trace adds to a reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtualInfo {
    /// (pid, virtual address) when translated.
    pub owner: Option<(u32, u64)>,
    pub dma: bool,
}

/// One reference, as the analyses see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub tick: u64,
    pub board: u8,
    pub pa: u64,
    pub write: bool,
    /// Virtual traces only.
    pub virt: Option<VirtualInfo>,
}

/// A record of the trace, as a pass sees it.
pub enum Item {
    /// A reference inside the window (or any, without one).
    Access(Access),
    /// A user I-code event (TAG of a user event index) seen inside the
    /// window, or any without one.
    Event { tick: u64, index: u32 },
    /// References the board dropped (a LOST record) inside the window.
    Lost { count: u64 },
    /// Packets missing from a capture (a GAP_BEGIN record) inside the
    /// window.
    Gap { packets: u64 },
}

/// What the analyses need to know of a trace besides its records.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TraceMeta {
    pub virtual_trace: bool,
    pub tick_ps: u16,
    pub boards: u8,
    /// The geometry in the header, as `rank,bank,row,col_line` bits.
    pub geometry: Option<String>,
    /// The event names stored in the trace.
    pub names: EventNames,
}

impl TraceInput<'_, '_> {
    pub fn meta(&self) -> TraceMeta {
        TraceMeta {
            virtual_trace: self.is_virtual(),
            tick_ps: self.tick_ps(),
            boards: self.boards(),
            geometry: self.geometry().map(|g| g.to_string()),
            names: self.names().clone(),
        }
    }

    pub fn names(&self) -> &EventNames {
        match self {
            TraceInput::Physical(t) => t.names(),
            TraceInput::Virtual(v) => v.names(),
        }
    }
    pub fn tick_ps(&self) -> u16 {
        match self {
            TraceInput::Physical(t) => t.header().common.tick_ps,
            TraceInput::Virtual(v) => v.header().common.tick_ps,
        }
    }
    pub fn boards(&self) -> u8 {
        match self {
            TraceInput::Physical(t) => t.header().boards,
            TraceInput::Virtual(v) => v.header().boards,
        }
    }
    pub fn is_virtual(&self) -> bool {
        matches!(self, TraceInput::Virtual(_))
    }
    /// The geometry in the header (virtual traces carry none).
    pub fn geometry(&self) -> Option<Geometry> {
        match self {
            TraceInput::Physical(t) => {
                let (a, b, c) = t.header().geometry_bytes;
                Geometry::from_header_bytes(a, b, c).ok()
            }
            TraceInput::Virtual(_) => None,
        }
    }

    /// Runs `f` on each reference and user event inside `window` (all
    /// without one), in trace order.
    pub fn each(
        &self,
        mut window: Option<EventWindow>,
        f: &mut dyn FnMut(Item),
    ) -> Result<(), AnalyzeError> {
        let mut one = |r: TraceRecord, virt: Option<VirtualInfo>| {
            let inside = window.as_ref().is_none_or(|w| w.contains(r.board()));
            match r.kind() {
                RecordKind::Read | RecordKind::Write if inside => f(Item::Access(Access {
                    tick: r.tick,
                    board: r.board(),
                    pa: r.pa(),
                    write: r.kind() == RecordKind::Write,
                    virt,
                })),
                RecordKind::Lost if inside => f(Item::Lost { count: r.value() }),
                RecordKind::GapBegin if inside => f(Item::Gap { packets: r.value() }),
                RecordKind::Tag { .. } => {
                    if let Some((tick, index)) = user_event(&r, &mut window) {
                        f(Item::Event { tick, index });
                    }
                }
                _ => {}
            }
        };
        match self {
            TraceInput::Physical(t) => {
                for r in t.records() {
                    one(r?, None);
                }
            }
            TraceInput::Virtual(v) => {
                for r in v.records_from(0) {
                    let info = VirtualInfo {
                        owner: r.owner(),
                        dma: r.is_dma(),
                    };
                    one(r.physical(), r.is_access().then_some(info));
                }
            }
        }
        Ok(())
    }
}

/// A TAG record: moves `window` on by it, and gives its (tick, event
/// index) when it is a user I-code event inside the window (or one of the
/// window's own events), as the analyses report events.
pub(super) fn user_event(r: &TraceRecord, window: &mut Option<EventWindow>) -> Option<(u64, u32)> {
    let index = r.value() as u32;
    if let Some(w) = window.as_mut() {
        w.tag(r.board(), index);
    }
    let inside = window.as_ref().is_none_or(|w| w.contains(r.board()));
    let boundary = window
        .as_ref()
        .is_some_and(|w| w.events().0 == index || w.events().1 == index);
    (matches!(classify_event(index), EventKind::User(_)) && (inside || boundary))
        .then_some((r.tick, index))
}
