//! The wire and file formats shared by the board (HDL and golden model), the
//! receiver, the merge tool, the kernel module's tools and the simulator.
//! See `docs/format.md`, which this crate implements. Pure Rust: it opens no
//! files or sockets (writers take any `io::Write`), and allocates nothing on
//! the hot paths; the two exceptions are [`atomic_file`], the way every tool
//! creates its output files, and [`mapped_file`], the way every tool maps
//! its input files. Nothing else in the workspace may encode or decode these
//! formats by hand.

pub mod archive;
pub mod atomic_file;
mod bytes;
pub mod capture;
pub mod command;
pub mod config;
pub mod counters;
pub mod direct_write;
pub mod events;
pub mod geometry;
pub mod indexed;
pub mod input;
pub mod klog;
pub mod mapped_file;
pub mod mapping;
pub mod packet;
pub mod record;
pub mod stats;
pub mod text;
pub mod tick;
pub mod trace;
pub mod trace_blocks;
pub mod truth;
pub mod vtrace;

pub use command::{Command, DdrCmd};
pub use config::{ConfigWindow, EventKind, InnerCommand};
pub use geometry::{DdrCoord, Geometry, LINE_BYTES};
pub use mapping::AddressMapping;
pub use packet::{Packet, PacketHeader};
pub use record::{BoardEvent, EventEncoder, Opcode, RecordWord, TimedEvent, WordDecoder};
pub use tick::TickLength;
