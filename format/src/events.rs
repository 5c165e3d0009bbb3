//! The events file (`events.toml`, docs/format.md §9): names of user
//! events, a table from names to configuration-space event indices.
//!
//! ```toml
//! [events]
//! sort-begin = 64
//! sort-end = 65
//! ```
//!
//! [`EventNames`] holds the table both ways and checks it; [`emit`] writes
//! the text of any list of entries, in the list's order. An event given on
//! a command line, by name or index, is read by [`event_index`], and a span
//! between two events (`--window BEGIN,END`) by [`EventWindow::parse`].

use std::collections::BTreeMap;

use crate::bytes::{u16_at, u32_at};
use crate::config::{FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG, FIRST_USER_EVENT};

/// The events file's name in a run's directory.
pub const FILE_NAME: &str = "events.toml";

/// Why an events file or an entry is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventsError {
    #[error("not a valid events file: {0}")]
    Parse(String),
    #[error("event name must not be empty")]
    EmptyName,
    #[error(
        "event {name:?}: index {index:#x} is not a user event (0x40..0xffff or 0x20000 and up)"
    )]
    NotUserEvent { name: String, index: u32 },
    #[error("event index {index:#x} is taken by both {first:?} and {second:?}")]
    Duplicate {
        index: u32,
        first: String,
        second: String,
    },
    #[error("event {name:?} is already {existing:#x}, not {requested:#x}")]
    Rebound {
        name: String,
        existing: u32,
        requested: u32,
    },
    #[error("no free user event index left")]
    Full,
}

/// Whether `index` may name a user event.
pub fn is_user_event(index: u32) -> bool {
    (FIRST_USER_EVENT..FIRST_LOG_TAG).contains(&index) || index >= FIRST_HIGH_USER_EVENT
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    #[serde(default)]
    events: BTreeMap<String, u32>,
}

/// The text of an events file holding `entries` in the order given. Names
/// are quoted as TOML requires.
pub fn emit<'a>(entries: impl IntoIterator<Item = (&'a str, u32)>) -> String {
    let mut text = String::from("[events]\n");
    for (name, index) in entries {
        // One entry at a time, so that the order is the caller's and each
        // key is written (quoted or bare) as the TOML serializer does.
        let line = toml::to_string(&BTreeMap::from([(name, index)]))
            .expect("a string key and an integer serialize");
        text.push_str(&line);
    }
    text
}

/// Event names: (index, name) pairs, kept in the order they were given
/// (the order of a names section), listed in name order. The one
/// table of names every tool uses: an events file read by
/// [`EventNames::parse`] (each entry checked, in name order), the names
/// section a trace or virtual trace stores ([`EventNames::parse_section`],
/// as stored, unchecked: a reader shows what a writer wrote), and the
/// names a command adds to a trace's from an events file.
///
/// Where an index or a name appears twice (a trace's names and an events
/// file's), the first entry answers. Serialized as the list of (index,
/// name) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct EventNames {
    entries: Vec<(u32, String)>,
}

impl EventNames {
    /// Reads the text of an events file, checking every entry.
    pub fn parse(text: &str) -> Result<EventNames, EventsError> {
        let file: EventsFile =
            toml::from_str(text).map_err(|e| EventsError::Parse(e.to_string()))?;
        // Checked against a map, not entry by entry, so that a large file
        // reads in n log n.
        let mut by_index: BTreeMap<u32, &str> = BTreeMap::new();
        for (name, &index) in &file.events {
            check_entry(name, index)?;
            if let Some(first) = by_index.insert(index, name) {
                return Err(EventsError::Duplicate {
                    index,
                    first: first.to_string(),
                    second: name.to_string(),
                });
            }
        }
        Ok(EventNames {
            entries: file.events.into_iter().map(|(n, i)| (i, n)).collect(),
        })
    }

    /// The events file's text, entries in name order.
    pub fn to_toml(&self) -> String {
        emit(self.iter())
    }

    /// Names `index` (already so named: nothing to do), checked as an
    /// events file's entry is.
    pub fn insert(&mut self, name: &str, index: u32) -> Result<(), EventsError> {
        check_entry(name, index)?;
        if let Some(existing) = self.index_of(name) {
            if existing == index {
                return Ok(());
            }
            return Err(EventsError::Rebound {
                name: name.to_string(),
                existing,
                requested: index,
            });
        }
        if let Some(other) = self.name_of(index) {
            return Err(EventsError::Duplicate {
                index,
                first: other.to_string(),
                second: name.to_string(),
            });
        }
        self.entries.push((index, name.to_string()));
        Ok(())
    }

    /// `other`'s entries after these (a trace's names, then an events
    /// file's), unchecked.
    pub fn extend(&mut self, other: EventNames) {
        self.entries.extend(other.entries);
    }

    /// The lowest user event index no name has.
    pub fn first_free(&self) -> Result<u32, EventsError> {
        let taken: std::collections::BTreeSet<u32> = self.entries.iter().map(|e| e.0).collect();
        (FIRST_USER_EVENT..FIRST_LOG_TAG)
            .chain(FIRST_HIGH_USER_EVENT..=u32::MAX)
            .find(|i| !taken.contains(i))
            .ok_or(EventsError::Full)
    }

    /// The index of `name`, if any.
    pub fn index_of(&self, name: &str) -> Option<u32> {
        self.entries.iter().find(|(_, n)| n == name).map(|e| e.0)
    }

    /// The name of `index`, if any.
    pub fn name_of(&self, index: u32) -> Option<&str> {
        self.entries
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, n)| n.as_str())
    }

    /// (name, index) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        let mut pairs: Vec<(&str, u32)> =
            self.entries.iter().map(|(i, n)| (n.as_str(), *i)).collect();
        pairs.sort_unstable();
        pairs.into_iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The names section of a trace or virtual trace (docs/format.md):
    /// repeated `u32 index, u16 length, length bytes of UTF-8`, in the
    /// table's order; a name longer than 65535 bytes is cut there.
    pub fn emit_section(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (index, name) in &self.entries {
            let bytes = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
            out.extend_from_slice(&index.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A names section as stored ([`Self::emit_section`]); `None` if the
    /// bytes are malformed.
    pub fn parse_section(mut b: &[u8]) -> Option<EventNames> {
        let mut entries = Vec::new();
        while !b.is_empty() {
            if b.len() < 6 {
                return None;
            }
            let index = u32_at(b, 0..4);
            let len = usize::from(u16_at(b, 4..6));
            let name = b.get(6..6 + len)?;
            entries.push((index, String::from_utf8_lossy(name).into_owned()));
            b = &b[6 + len..];
        }
        Some(EventNames { entries })
    }
}

/// (index, name) pairs as given, unchecked (a table a test or a writer
/// builds).
impl FromIterator<(u32, String)> for EventNames {
    fn from_iter<I: IntoIterator<Item = (u32, String)>>(iter: I) -> EventNames {
        EventNames {
            entries: iter.into_iter().collect(),
        }
    }
}

/// Why `name` may not name `index` in an events file.
fn check_entry(name: &str, index: u32) -> Result<(), EventsError> {
    if name.is_empty() {
        return Err(EventsError::EmptyName);
    }
    if !is_user_event(index) {
        return Err(EventsError::NotUserEvent {
            name: name.to_string(),
            index,
        });
    }
    Ok(())
}

/// Why an event given on a command line names no event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventRefError {
    #[error("no event named '{0}' in the trace (or its events file)")]
    UnknownEvent(String),
    #[error("a window is BEGIN,END (two event names or indices), not '{0}'")]
    NotAPair(String),
}

/// The index of event `s`: a name of `names`, or a number as
/// [`crate::text::parse_number`] reads it that fits an event index.
pub fn event_index(s: &str, names: &EventNames) -> Result<u32, EventRefError> {
    let s = s.trim();
    if let Some(i) = names.index_of(s) {
        return Ok(i);
    }
    crate::text::parse_number(s)
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| EventRefError::UnknownEvent(s.to_string()))
}

/// The span between two events (`--window BEGIN,END` of `hmtt replay` and
/// `hmtt analyze`): a board is inside the window from a TAG of the first
/// event index to the next TAG of the second, as often as the pair occurs.
/// Each board's stream carries the tags in its own time order, so the
/// state is kept per board.
#[derive(Debug, Clone)]
pub struct EventWindow {
    begin: u32,
    end: u32,
    inside: [bool; 256],
}

impl EventWindow {
    /// A window from a TAG of event `begin` to the next TAG of `end`.
    pub fn new(begin: u32, end: u32) -> EventWindow {
        EventWindow {
            begin,
            end,
            inside: [false; 256],
        }
    }

    /// The window `BEGIN,END` of event names (from `names`) or indices.
    pub fn parse(spec: &str, names: &EventNames) -> Result<EventWindow, EventRefError> {
        let (a, b) = spec
            .split_once(',')
            .ok_or_else(|| EventRefError::NotAPair(spec.to_string()))?;
        Ok(EventWindow::new(
            event_index(a, names)?,
            event_index(b, names)?,
        ))
    }

    /// The (begin, end) event indices.
    pub fn events(&self) -> (u32, u32) {
        (self.begin, self.end)
    }

    /// A TAG of event `index` seen on `board`.
    #[inline]
    pub fn tag(&mut self, board: u8, index: u32) {
        if index == self.begin {
            self.inside[usize::from(board)] = true;
        } else if index == self.end {
            self.inside[usize::from(board)] = false;
        }
    }

    /// Whether `board` is between a BEGIN and its END.
    #[inline]
    pub fn contains(&self, board: u8) -> bool {
        self.inside[usize::from(board)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_enter_and_leave_on_their_own_tags() {
        let names = EventNames::from_iter([(64, "a_begin".into()), (65, "a_end".into())]);
        let mut w = EventWindow::parse("a_begin, 0x41", &names).unwrap();
        assert_eq!(w.events(), (64, 65));
        assert!(!w.contains(0));
        w.tag(0, 64);
        assert!(w.contains(0) && !w.contains(1));
        w.tag(1, 65);
        assert!(w.contains(0));
        w.tag(0, 65);
        assert!(!w.contains(0));
        assert_eq!(
            EventWindow::parse("nope,a_end", &names).unwrap_err(),
            EventRefError::UnknownEvent("nope".into())
        );
        assert_eq!(
            EventWindow::parse("a_begin", &names).unwrap_err(),
            EventRefError::NotAPair("a_begin".into())
        );
    }

    #[test]
    fn event_indices_are_numbers_as_every_option_reads_them() {
        let names = EventNames::from_iter([(0x1_0000, "1_0".into())]);
        // A name wins over the number it spells.
        assert_eq!(event_index("1_0", &names), Ok(0x1_0000));
        assert_eq!(event_index("0x1_0001", &names), Ok(0x1_0001));
        assert_eq!(event_index(" 65_536 ", &names), Ok(65_536));
        assert_eq!(event_index("0xffff_ffff", &names), Ok(u32::MAX));
        for bad in ["0x1_0000_0000", "-1", "x"] {
            assert_eq!(
                event_index(bad, &names),
                Err(EventRefError::UnknownEvent(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn emit_keeps_the_callers_order_and_quotes_as_toml_does() {
        let entries = [("b_end", 65), ("a begin", 64), ("x\"y", 0x20000)];
        let text = emit(entries);
        assert_eq!(
            text.lines().next(),
            Some("[events]"),
            "the table comes first: {text}"
        );
        let order: Vec<u32> = text
            .lines()
            .skip(1)
            .map(|l| l.rsplit(" = ").next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(order, [65, 64, 0x20000]);
        let back = EventNames::parse(&text).unwrap();
        assert_eq!(back.index_of("a begin"), Some(64));
        assert_eq!(back.index_of("x\"y"), Some(0x20000));
        // In name order, the same text as the serializer gives the table.
        let file = EventsFile {
            events: entries.iter().map(|&(n, i)| (n.to_string(), i)).collect(),
        };
        assert_eq!(back.to_toml(), toml::to_string(&file).unwrap());
        assert_eq!(emit([]), toml::to_string(&EventsFile::default()).unwrap());
    }

    #[test]
    fn a_table_keeps_its_order_lists_in_name_order_and_the_first_entry_answers() {
        let mut names = EventNames::default();
        names.insert("zeta", 0x41).unwrap();
        names.insert("alpha", 0x40).unwrap();
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            [("alpha", 0x40), ("zeta", 0x41)]
        );
        // Written as given: the section keeps the order a trace stored.
        assert_eq!(&names.emit_section()[..4], &0x41u32.to_le_bytes());
        assert_eq!(names.to_toml(), "[events]\nalpha = 64\nzeta = 65\n");
        let mut stored = EventNames::from_iter([(0x40, "stored".to_string())]);
        stored.extend(names);
        assert_eq!(stored.len(), 3);
        assert_eq!(stored.name_of(0x40), Some("stored"));
        assert_eq!(stored.index_of("alpha"), Some(0x40));
        let section = stored.emit_section();
        assert_eq!(EventNames::parse_section(&section), Some(stored));
        assert_eq!(
            EventNames::parse_section(&section[..section.len() - 1]),
            None
        );
    }

    #[test]
    fn entries_are_checked() {
        let mut names = EventNames::default();
        assert_eq!(names.first_free(), Ok(FIRST_USER_EVENT));
        names.insert("a", 0x40).unwrap();
        names.insert("a", 0x40).unwrap();
        assert_eq!(names.first_free(), Ok(0x41));
        assert_eq!(names.name_of(0x40), Some("a"));
        assert!(matches!(
            names.insert("b", 0x40),
            Err(EventsError::Duplicate { index: 0x40, .. })
        ));
        assert!(matches!(
            names.insert("a", 0x41),
            Err(EventsError::Rebound { existing: 0x40, .. })
        ));
        assert_eq!(names.insert("", 0x42), Err(EventsError::EmptyName));
        for index in [5, FIRST_LOG_TAG, FIRST_HIGH_USER_EVENT - 1] {
            assert!(matches!(
                names.insert("c", index),
                Err(EventsError::NotUserEvent { .. })
            ));
        }
        assert!(matches!(
            EventNames::parse("[events]\na = 64\nb = 64\n"),
            Err(EventsError::Duplicate { .. })
        ));
        for bad in ["[events]\na = \"x\"\n", "[other]\na = 1\n", "not toml ["] {
            assert!(
                matches!(EventNames::parse(bad), Err(EventsError::Parse(_))),
                "{bad}"
            );
        }
        assert_eq!(EventNames::parse(""), Ok(EventNames::default()));
    }
}
