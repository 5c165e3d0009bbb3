//! Named user events and the events file (docs/format.md section 9):
//!
//! ```toml
//! [events]
//! sort-begin = 64
//! sort-end = 65
//! ```

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use hmtt_format::config::{FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG, FIRST_USER_EVENT};

/// Why the events file could not be read, changed or written.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("{path}: not a valid events file: {message}")]
    Parse { path: PathBuf, message: String },
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
    #[error("this registry has no file to save to")]
    NoPath,
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    #[serde(default)]
    events: BTreeMap<String, u32>,
}

/// Whether `index` may name a user event.
pub fn is_user_event(index: u32) -> bool {
    (FIRST_USER_EVENT..FIRST_LOG_TAG).contains(&index) || index >= FIRST_HIGH_USER_EVENT
}

/// Names for user event indices, kept in an events file that merge reads.
#[derive(Debug, Clone, Default)]
pub struct EventRegistry {
    path: Option<PathBuf>,
    events: BTreeMap<String, u32>,
    by_index: BTreeMap<u32, String>,
}

impl EventRegistry {
    /// An empty registry with no file.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Load `path` if it exists, else start empty; [`save`](Self::save)
    /// writes it back.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, EventsError> {
        let path = path.as_ref().to_path_buf();
        let mut registry = match std::fs::read_to_string(&path) {
            Ok(text) => Self::from_toml(&text).map_err(|e| match e {
                EventsError::Parse { message, .. } => EventsError::Parse {
                    path: path.clone(),
                    message,
                },
                other => other,
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Self::default(),
            Err(source) => return Err(EventsError::Read { path, source }),
        };
        registry.path = Some(path);
        Ok(registry)
    }

    /// Parse the text of an events file.
    pub fn from_toml(text: &str) -> Result<Self, EventsError> {
        let file: EventsFile = toml::from_str(text).map_err(|e| EventsError::Parse {
            path: PathBuf::new(),
            message: e.to_string(),
        })?;
        let mut registry = Self::default();
        for (name, index) in file.events {
            registry.register_at(&name, index)?;
        }
        Ok(registry)
    }

    /// The events file text.
    pub fn to_toml(&self) -> String {
        let file = EventsFile {
            events: self.events.clone(),
        };
        toml::to_string(&file).expect("a map of strings to integers serializes")
    }

    /// Write the events file (atomically: a temporary file renamed over it).
    pub fn save(&self) -> Result<(), EventsError> {
        let path = self.path.as_ref().ok_or(EventsError::NoPath)?;
        let tmp = path.with_extension("toml.tmp");
        let write_err = |source| EventsError::Write {
            path: path.clone(),
            source,
        };
        std::fs::write(&tmp, self.to_toml()).map_err(write_err)?;
        std::fs::rename(&tmp, path).map_err(write_err)
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The index of `name`, if registered.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.events.get(name).copied()
    }

    /// The name of `index`, if any.
    pub fn name_of(&self, index: u32) -> Option<&str> {
        self.by_index.get(&index).map(String::as_str)
    }

    /// Register `name` at the lowest free user index (or return its index
    /// if already registered).
    pub fn register(&mut self, name: &str) -> Result<u32, EventsError> {
        if let Some(index) = self.get(name) {
            return Ok(index);
        }
        let index = (FIRST_USER_EVENT..FIRST_LOG_TAG)
            .chain(FIRST_HIGH_USER_EVENT..=u32::MAX)
            .find(|i| !self.by_index.contains_key(i))
            .ok_or(EventsError::Full)?;
        self.register_at(name, index)?;
        Ok(index)
    }

    /// Register `name` at a chosen index.
    pub fn register_at(&mut self, name: &str, index: u32) -> Result<(), EventsError> {
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
        self.events.insert(name.to_string(), index);
        self.by_index.insert(index, name.to_string());
        Ok(())
    }

    /// (name, index) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.events.iter().map(|(n, &i)| (n.as_str(), i))
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_lowest_free_user_indices_and_round_trips() {
        let mut r = EventRegistry::in_memory();
        assert_eq!(r.register("sort-begin").unwrap(), 0x40);
        assert_eq!(r.register("sort-end").unwrap(), 0x41);
        assert_eq!(r.register("sort-begin").unwrap(), 0x40);
        r.register_at("far", 0x100).unwrap();
        let text = r.to_toml();
        assert_eq!(
            text,
            "[events]\nfar = 256\nsort-begin = 64\nsort-end = 65\n"
        );
        let back = EventRegistry::from_toml(&text).unwrap();
        assert_eq!(back.get("far"), Some(0x100));
        assert_eq!(back.name_of(0x41), Some("sort-end"));
        assert_eq!(back.len(), 3);
    }

    #[test]
    fn names_needing_quotes_survive() {
        let mut r = EventRegistry::in_memory();
        r.register("phase 1: init").unwrap();
        let back = EventRegistry::from_toml(&r.to_toml()).unwrap();
        assert_eq!(back.get("phase 1: init"), Some(0x40));
    }

    #[test]
    fn skips_the_kernel_log_range_when_full_below_it() {
        let mut r = EventRegistry::in_memory();
        for i in FIRST_USER_EVENT..FIRST_LOG_TAG {
            r.register_at(&format!("e{i}"), i).unwrap();
        }
        assert_eq!(r.register("next").unwrap(), FIRST_HIGH_USER_EVENT);
    }

    #[test]
    fn refuses_bad_indices_duplicates_and_rebinding() {
        let mut r = EventRegistry::in_memory();
        assert!(matches!(
            r.register_at("inner", 5),
            Err(EventsError::NotUserEvent { index: 5, .. })
        ));
        assert!(matches!(
            r.register_at("tag", 0x1_0001),
            Err(EventsError::NotUserEvent { .. })
        ));
        assert!(matches!(
            r.register_at("", 0x40),
            Err(EventsError::EmptyName)
        ));
        r.register_at("a", 0x50).unwrap();
        assert!(matches!(
            r.register_at("b", 0x50),
            Err(EventsError::Duplicate { index: 0x50, .. })
        ));
        assert!(matches!(
            r.register_at("a", 0x51),
            Err(EventsError::Rebound { existing: 0x50, .. })
        ));
        assert!(matches!(
            EventRegistry::from_toml("[events]\na = 64\nb = 64\n"),
            Err(EventsError::Duplicate { .. })
        ));
        assert!(matches!(
            EventRegistry::from_toml("[events]\na = \"x\"\n"),
            Err(EventsError::Parse { .. })
        ));
        assert!(matches!(
            EventRegistry::from_toml("[other]\na = 1\n"),
            Err(EventsError::Parse { .. })
        ));
    }

    #[test]
    fn open_save_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.toml");
        let mut r = EventRegistry::open(&path).unwrap();
        assert!(r.is_empty());
        r.register("x").unwrap();
        r.save().unwrap();
        let again = EventRegistry::open(&path).unwrap();
        assert_eq!(again.get("x"), Some(0x40));
        std::fs::write(&path, "not toml [").unwrap();
        let err = EventRegistry::open(&path).unwrap_err();
        assert!(err.to_string().contains("events.toml"), "{err}");
        assert!(matches!(
            EventRegistry::in_memory().save(),
            Err(EventsError::NoPath)
        ));
    }
}
