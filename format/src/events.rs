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
//! the text of any list of entries, in the list's order.

use std::collections::BTreeMap;

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

#[cfg(test)]
mod tests {
    use super::*;

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
