//! From capture files to traces: reassembly by sequence number, multi-board
//! merge, address decoding, log alignment and replay, statistics, and
//! checks of a trace against a simulation's ground truth.
//! It reads captures and logs; it never talks to the network or the board.
//!
//! The path of `hmtt merge`: [`input::CaptureSet`] maps and checks the
//! capture files and groups them by board; [`reassemble::BoardStream`] orders
//! one board's packets by `seq` across its ports and decodes them into
//! [`hmtt_format::trace::TraceRecord`]s; [`merge::merge`] interleaves the
//! boards by time into a [`merge::RecordSink`] such as
//! [`writer::TraceWriter`], and returns a [`report::MergeReport`].

pub mod archive_writer;
pub mod board_statistics;
pub mod error;
pub mod indexed_writer;
pub mod input;
pub mod merge;
pub mod names;
pub mod reassemble;
pub mod record_blocks;
pub mod replay;
pub mod report;
pub mod side_files;
pub mod stats;
pub mod synth;
pub mod verify;
pub mod writer;

pub use archive_writer::{merge_to_archive, ArchiveTraceWriter};
pub use error::MergeError;
pub use input::CaptureSet;
pub use merge::{merge, MergeOptions, RecordSink, VecSink};
pub use report::MergeReport;
pub use writer::{merge_to_trace, TraceWriter};
