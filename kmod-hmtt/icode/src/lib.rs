//! User-space I-code library: maps `/dev/hmtt` and injects events by touching
//! the configuration space, and keeps the events file the merge tool reads.
//! It never touches memory outside the mapped configuration space.
