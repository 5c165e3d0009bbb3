//! From capture files to traces: reassembly by sequence number, multi-board
//! merge, address decoding, log alignment and replay, analysis and export.
//! It reads captures and logs; it never talks to the network or the board.
