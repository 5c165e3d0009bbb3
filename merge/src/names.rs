//! Names of event indices for dumps and reports: user events from the
//! events file (or the trace's name table), inner commands and log tags
//! from the event ranges of format.md §6.

use hmtt_format::config::{classify_event, EventKind};
use hmtt_format::events::EventNames;

/// A readable name for event index `index`.
pub fn event_name(index: u32, names: &EventNames) -> String {
    if let Some(n) = names.name_of(index) {
        return n.to_string();
    }
    match classify_event(index) {
        EventKind::Inner(c) => c.name().to_string(),
        EventKind::LogSeq(s) => format!("LOG#{s}"),
        EventKind::User(u) => format!("event#{u}"),
    }
}
