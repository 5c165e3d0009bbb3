//! Firmware flows: Verilog generation from `hmtt-hdl`, synthesis, place and
//! route, bitstream packing and flashing with the open FPGA tools. It drives
//! external tools and reports; it holds no logic of the board itself.

pub mod board;
pub mod engine;
pub mod error;
pub mod flash;
pub mod flow;
pub mod primitives;
pub mod report;
pub mod tools;
pub mod tops;
pub mod widen;

pub use board::Board;
pub use error::FirmwareError;
pub use flow::{build, BuildOptions};
pub use report::BuildReport;
pub use tops::TopChoice;
