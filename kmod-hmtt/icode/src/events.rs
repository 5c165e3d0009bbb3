//! Named user events kept in an events file (docs/format.md section 9) that
//! merge reads: the table and its text are `hmtt_format::events`; this is
//! the file on disk and the choice of free indices.

use std::io;
use std::path::{Path, PathBuf};

use hmtt_format::events::EventNames;
pub use hmtt_format::events::EventsError as TableError;

/// Why the events file could not be read, changed or written.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error("cannot read {}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error("{}", path.display())]
    File { path: PathBuf, source: TableError },
    #[error(transparent)]
    Table(#[from] TableError),
    #[error("this registry has no file to save to")]
    NoPath,
}

/// Names for user event indices, kept in an events file that merge reads.
#[derive(Debug, Clone, Default)]
pub struct EventRegistry {
    path: Option<PathBuf>,
    names: EventNames,
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
        let names = match std::fs::read_to_string(&path) {
            Ok(text) => EventNames::parse(&text).map_err(|source| EventsError::File {
                path: path.clone(),
                source,
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => EventNames::default(),
            Err(source) => return Err(EventsError::Read { path, source }),
        };
        Ok(EventRegistry {
            path: Some(path),
            names,
        })
    }

    /// Parse the text of an events file.
    pub fn from_toml(text: &str) -> Result<Self, EventsError> {
        Ok(EventRegistry {
            path: None,
            names: EventNames::parse(text)?,
        })
    }

    /// The events file text.
    pub fn to_toml(&self) -> String {
        self.names.to_toml()
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
        self.names.index_of(name)
    }

    /// The name of `index`, if any.
    pub fn name_of(&self, index: u32) -> Option<&str> {
        self.names.name_of(index)
    }

    /// Register `name` at the lowest free user index (or return its index
    /// if already registered).
    pub fn register(&mut self, name: &str) -> Result<u32, EventsError> {
        if let Some(index) = self.get(name) {
            return Ok(index);
        }
        let index = self.names.first_free()?;
        self.register_at(name, index)?;
        Ok(index)
    }

    /// Register `name` at a chosen index.
    pub fn register_at(&mut self, name: &str, index: u32) -> Result<(), EventsError> {
        Ok(self.names.insert(name, index)?)
    }

    /// (name, index) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.names.iter()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::config::{FIRST_HIGH_USER_EVENT, FIRST_LOG_TAG, FIRST_USER_EVENT};

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
            Err(EventsError::Table(TableError::NotUserEvent {
                index: 5,
                ..
            }))
        ));
        assert!(matches!(
            r.register_at("tag", 0x1_0001),
            Err(EventsError::Table(TableError::NotUserEvent { .. }))
        ));
        assert!(matches!(
            r.register_at("", 0x40),
            Err(EventsError::Table(TableError::EmptyName))
        ));
        r.register_at("a", 0x50).unwrap();
        assert!(matches!(
            r.register_at("b", 0x50),
            Err(EventsError::Table(TableError::Duplicate {
                index: 0x50,
                ..
            }))
        ));
        assert!(matches!(
            r.register_at("a", 0x51),
            Err(EventsError::Table(TableError::Rebound {
                existing: 0x50,
                ..
            }))
        ));
        assert!(matches!(
            EventRegistry::from_toml("[events]\na = 64\nb = 64\n"),
            Err(EventsError::Table(TableError::Duplicate { .. }))
        ));
        assert!(matches!(
            EventRegistry::from_toml("[events]\na = \"x\"\n"),
            Err(EventsError::Table(TableError::Parse(_)))
        ));
        assert!(matches!(
            EventRegistry::from_toml("[other]\na = 1\n"),
            Err(EventsError::Table(TableError::Parse(_)))
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
