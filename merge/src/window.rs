//! The event window of the analyses: [`hmtt_format::events::EventWindow`],
//! its one home, named here so that `crate::window` keeps resolving.

pub(crate) use hmtt_format::events::EventWindow;
