//! The memory trace board's FPGA logic in RustHDL (paper Fig. 5 and 6): one
//! module per block, each with its own simulation tests, bit-exact with the
//! golden model in `hmtt-sim`. Board-specific top levels live in `firmware/`.

pub mod board_top;
pub mod capture;
pub mod crc32;
pub mod cu;
pub mod dcbu;
pub mod dsmu;
pub mod encoder;
pub mod framer;
pub mod gmii;
pub mod kept;
pub mod packetizer;
pub mod pins;
pub mod port_buffer;
pub mod ref_limit;
pub mod reuse;
pub mod rgmii;
pub mod statistics;
pub mod testbench;
pub mod tx_fifo;
