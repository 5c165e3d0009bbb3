//! Firmware flows: Verilog generation from `hmtt-hdl`, synthesis, place and
//! route, bitstream packing and flashing with the open FPGA tools. It drives
//! external tools and reports; it holds no logic of the board itself.
