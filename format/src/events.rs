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

use crate::config::{FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG, FIRST_USER_EVENT};
use crate::indexed::NameTable;

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

/// User event names and indices, each used once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventNames {
    by_name: BTreeMap<String, u32>,
    by_index: BTreeMap<u32, String>,
}

impl EventNames {
    /// Reads the text of an events file, checking every entry.
    pub fn parse(text: &str) -> Result<EventNames, EventsError> {
        let file: EventsFile =
            toml::from_str(text).map_err(|e| EventsError::Parse(e.to_string()))?;
        let mut names = EventNames::default();
        for (name, index) in file.events {
            names.insert(&name, index)?;
        }
        Ok(names)
    }

    /// The file text, entries in name order.
    pub fn to_toml(&self) -> String {
        emit(self.iter())
    }

    /// Names `index` (already so named: nothing to do).
    pub fn insert(&mut self, name: &str, index: u32) -> Result<(), EventsError> {
        if name.is_empty() {
            return Err(EventsError::EmptyName);
        }
        if !is_user_event(index) {
            return Err(EventsError::NotUserEvent {
                name: name.to_string(),
                index,
            });
        }
        if let Some(existing) = self.get(name) {
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
        self.by_name.insert(name.to_string(), index);
        self.by_index.insert(index, name.to_string());
        Ok(())
    }

    /// The lowest user event index no name has.
    pub fn first_free(&self) -> Result<u32, EventsError> {
        (FIRST_USER_EVENT..FIRST_LOG_TAG)
            .chain(FIRST_HIGH_USER_EVENT..=u32::MAX)
            .find(|i| !self.by_index.contains_key(i))
            .ok_or(EventsError::Full)
    }

    /// The index of `name`, if any.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The name of `index`, if any.
    pub fn name_of(&self, index: u32) -> Option<&str> {
        self.by_index.get(&index).map(String::as_str)
    }

    /// (name, index) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.by_name.iter().map(|(n, &i)| (n.as_str(), i))
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
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
pub fn event_index(s: &str, names: &NameTable) -> Result<u32, EventRefError> {
    let s = s.trim();
    if let Some((i, _)) = names.names.iter().find(|(_, n)| n == s) {
        return Ok(*i);
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
    pub fn parse(spec: &str, names: &NameTable) -> Result<EventWindow, EventRefError> {
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
        let names = NameTable {
            names: vec![(64, "a_begin".into()), (65, "a_end".into())],
        };
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
        let names = NameTable {
            names: vec![(0x1_0000, "1_0".into())],
        };
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
        assert_eq!(back.get("a begin"), Some(64));
        assert_eq!(back.get("x\"y"), Some(0x20000));
        // In name order, the same text as the serializer gives the table.
        let file = EventsFile {
            events: entries.iter().map(|&(n, i)| (n.to_string(), i)).collect(),
        };
        assert_eq!(back.to_toml(), toml::to_string(&file).unwrap());
        assert_eq!(emit([]), toml::to_string(&EventsFile::default()).unwrap());
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
