//! Helpers shared by the integration tests: each test file declares
//! `mod support;` and imports what it uses from the submodules.

// Every test file is its own crate and compiles this whole module, while
// using only some of its helpers: the rest would warn as dead code in
// that crate.
#![allow(dead_code)]

pub mod cli;
pub mod replay;
