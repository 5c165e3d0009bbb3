//! The counters the board keeps in hardware (board.md "Counters"): one
//! table for the HDL top, its testbench, the golden model and the CLI.

/// The counters the board's hardware keeps itself (board.md "Counters"):
/// each a 32-bit output of hmtt-hdl's `BoardTop`, and a key of the board
/// summary's counters (the golden model's `BoardCounters` field of that
/// name), in the order of the testbench's counter vector. The summary's
/// other counts come, on the hardware, from the pins driven or the frames
/// sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HardwareCounter {
    EventsDropped,
    ProtocolErrors,
    UnknownCommands,
    OutOfRange,
    ConfigEvents,
    LostWords,
    FifoHighWater,
    TimeFillers,
    TimeOverflows,
    ReferencesOverLimit,
    ClocksOverLimit,
}

impl HardwareCounter {
    /// Every counter, in the vector's order (`c as usize` is its index).
    pub const ALL: [HardwareCounter; 11] = [
        HardwareCounter::EventsDropped,
        HardwareCounter::ProtocolErrors,
        HardwareCounter::UnknownCommands,
        HardwareCounter::OutOfRange,
        HardwareCounter::ConfigEvents,
        HardwareCounter::LostWords,
        HardwareCounter::FifoHighWater,
        HardwareCounter::TimeFillers,
        HardwareCounter::TimeOverflows,
        HardwareCounter::ReferencesOverLimit,
        HardwareCounter::ClocksOverLimit,
    ];

    /// The name of the `BoardTop` output and of the [`BoardCounters`] field.
    pub const fn name(self) -> &'static str {
        match self {
            HardwareCounter::EventsDropped => "events_dropped",
            HardwareCounter::ProtocolErrors => "protocol_errors",
            HardwareCounter::UnknownCommands => "unknown_commands",
            HardwareCounter::OutOfRange => "out_of_range",
            HardwareCounter::ConfigEvents => "config_events",
            HardwareCounter::LostWords => "lost_words",
            HardwareCounter::FifoHighWater => "fifo_high_water",
            HardwareCounter::TimeFillers => "time_fillers",
            HardwareCounter::TimeOverflows => "time_overflows",
            HardwareCounter::ReferencesOverLimit => "references_over_limit",
            HardwareCounter::ClocksOverLimit => "clocks_over_limit",
        }
    }
}
