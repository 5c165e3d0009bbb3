//! The receiver bench's search for each tool's zero-loss rate
//! (`benches/receiver/search.rs`), whose tests run here: a bench without
//! the test harness runs none.

#[path = "../benches/receiver/search.rs"]
#[allow(dead_code)]
mod search;
