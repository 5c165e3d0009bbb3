//! The traced machine in software: workloads, an OS model, a last-level
//! cache, a DRAM controller, the QEMU launcher and the UDP sender, feeding the
//! board's golden model (`hmtt-board-model`), with the ground truth kept so
//! every stage downstream can be checked exactly.
//! It must not model the board itself (that is `hmtt-board-model`'s) nor
//! decode packets for its own checks (that is `hmtt-merge`'s job).

pub mod cache;
pub mod dram;
pub mod faults;
pub mod full_rate;
pub mod machine;
pub mod os;
pub mod outdir;
pub mod qemu;
pub mod qemu_guest;
pub mod report;
pub mod send;
pub mod stream;
pub mod workload;
