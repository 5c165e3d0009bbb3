//! One module per subcommand; each owns its arguments and calls the libraries.
pub mod analyze;
pub mod board;
pub mod capture;
pub mod demo;
pub mod dump;
pub mod export;
pub mod firmware;
pub mod icode;
pub mod log;
pub mod merge;
pub mod pack;
pub mod qemu;
pub mod replay;
pub mod sim;
pub mod stats;
