//! One module per subcommand; each owns its arguments and calls the libraries.
pub mod sim;
pub mod board;
pub mod capture;
pub mod merge;
pub mod dump;
pub mod stats;
pub mod replay;
pub mod demo;
pub mod firmware;
pub mod icode;
pub mod log;
