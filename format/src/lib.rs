//! The wire and file formats shared by the board (HDL and golden model), the
//! receiver and the merge tool. See `docs/format.md`, which this crate
//! implements. Pure Rust: no I/O, no allocation on the hot paths. Nothing
//! else in the workspace may encode or decode these formats by hand.
