//! The DRAM controller model and a checker of its output.
//!
//! The controller keeps rows open (open-page policy), honours per-bank and
//! per-rank timing (tRCD, CL, CWL, tCCD, tRP, tRAS, tRC, tWR, tWTR, tRTP,
//! tRRD, tFAW), the data bus (burst length 8, read/write turnaround, rank
//! switching) and refresh (a PREA then a REF every tREFI per rank, nothing
//! to the rank for tRFC), and schedules in order (FCFS) or first-ready
//! first (FR-FCFS: row hits before older misses, with a starvation cap). It
//! emits the DDR command stream of format.md §1 with one command per cycle.
//!
//! I-code references are barriers: every older request is issued before
//! them and no younger one passes them, as an uncached access orders the
//! traffic around it. A request never passes an older one to the same line.
//!
//! [`check`] verifies a command stream against the same timing rules,
//! written independently from the scheduler so one can catch the other.
//!
//! `timing` holds the DDR speed grades, `controller` the scheduler,
//! `check` the independent checker.

mod check;
mod controller;
#[cfg(test)]
mod tests;
mod timing;

pub use check::{check, StreamChecker, Violation};
pub use controller::{Controller, ControllerConfig, ControllerStats, Issued, Request, Scheduler};
pub use timing::Timing;
