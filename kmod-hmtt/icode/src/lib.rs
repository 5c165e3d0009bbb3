//! User-space I-code library: maps `/dev/hmtt` and injects events by touching
//! the configuration space, and keeps the events file the merge tool reads.
//! It never touches memory outside the mapped configuration space.
//!
//! - [`ConfigSpace`]: the mapped configuration space; [`ConfigSpace::icode`]
//!   touches the line of an event index (docs/format.md section 6).
//! - [`EventRegistry`]: named user events, saved as the events file
//!   (section 9).
//! - [`Tracer`]: both together, with begin/end tracing helpers.
//! - [`drain`]: copies the kernel log (`/dev/hmtt_log`) into a `.hmttlog`
//!   file (section 8), for `hmtt log`.
//! - [`abi`]: the kernel module's ioctl interface, mirrored from
//!   `kmod-hmtt/include/hmtt_ioctl.h`.

pub mod abi;
pub mod drain;
mod events;
mod space;

pub use events::{EventRegistry, EventsError, TableError};
pub use space::{Access, ConfigSpace, SpaceError};

use hmtt_format::config::InnerCommand;

/// Why a [`Tracer`] call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Space(#[from] SpaceError),
    #[error(transparent)]
    Events(#[from] EventsError),
}

/// A configuration space and the registry of named events, for programs
/// that mark their phases: `tracer.event("sort-begin")?`.
pub struct Tracer {
    space: ConfigSpace,
    registry: EventRegistry,
}

impl Tracer {
    pub fn new(space: ConfigSpace, registry: EventRegistry) -> Self {
        Self { space, registry }
    }

    /// Tell the board to start recording (inner command BEGIN_TRACING).
    pub fn begin_tracing(&self) -> Result<(), Error> {
        Ok(self.space.inner(InnerCommand::BeginTracing)?)
    }

    /// Tell the board to stop recording (inner command END_TRACING).
    pub fn end_tracing(&self) -> Result<(), Error> {
        Ok(self.space.inner(InnerCommand::EndTracing)?)
    }

    /// Emit the named event, registering (and saving) the name on first use.
    pub fn event(&mut self, name: &str) -> Result<u32, Error> {
        let index = match self.registry.get(name) {
            Some(index) => index,
            None => {
                let index = self.registry.register(name)?;
                self.registry.save()?;
                index
            }
        };
        self.space.icode(index)?;
        Ok(index)
    }

    pub fn space(&self) -> &ConfigSpace {
        &self.space
    }

    pub fn registry(&self) -> &EventRegistry {
        &self.registry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn tracer_names_events_saves_them_and_touches_their_lines() {
        let dir = tempfile::tempdir().unwrap();
        let space_path = dir.path().join("space");
        std::fs::File::create(&space_path)
            .unwrap()
            .write_all(&vec![0u8; 1 << 20])
            .unwrap();
        let events_path = dir.path().join("events.toml");
        let space = ConfigSpace::from_file(&space_path, 0x1000_0000).unwrap();
        let mut tracer = Tracer::new(space, EventRegistry::open(&events_path).unwrap());
        tracer.begin_tracing().unwrap();
        assert_eq!(tracer.event("sort-begin").unwrap(), 0x40);
        assert_eq!(tracer.event("sort-end").unwrap(), 0x41);
        assert_eq!(tracer.event("sort-begin").unwrap(), 0x40);
        tracer.end_tracing().unwrap();

        let saved = EventRegistry::open(&events_path).unwrap();
        assert_eq!(saved.get("sort-begin"), Some(0x40));
        assert_eq!(saved.get("sort-end"), Some(0x41));
        let bytes = std::fs::read(&space_path).unwrap();
        let word = |off: usize| u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap());
        // BEGIN_TRACING stores 0 at offset 0, so check the others and that
        // nothing else was written.
        assert_eq!(word(0x40), 1, "END_TRACING at byte 0x40");
        assert_eq!(word(0x40 * 64), 0x40);
        assert_eq!(word(0x41 * 64), 0x41);
        let nonzero = bytes
            .chunks_exact(8)
            .filter(|w| w.iter().any(|&b| b != 0))
            .count();
        assert_eq!(nonzero, 3);
    }
}
