//! The board's counters (board.md "Counters"), written as JSON by `hmtt
//! board`.

use std::collections::BTreeMap;

use hmtt_format::command::DdrCmd;
pub use hmtt_format::counters::HardwareCounter;

/// Counters (board.md "Counters"); reported, never fatal.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct BoardCounters {
    /// Commands seen, every kind.
    pub commands: u64,
    /// Per mnemonic, in `DdrCmd::ALL` order.
    #[serde(serialize_with = "per_kind_map")]
    pub per_kind: [u64; 12],
    /// RD/WR with no row opened since reset.
    pub protocol_errors: u64,
    /// RD/WR to a bank precharged since its last ACT (reference still
    /// emitted with the last row; a legal stream never does this).
    pub references_after_precharge: u64,
    /// ACT/RD/WR whose rank, bank, row or column does not fit the geometry.
    pub out_of_range: u64,
    /// Unknown mnemonics.
    pub unknown_commands: u64,
    /// RD/WR that yielded a line reference (those over the limit included).
    pub references: u64,
    /// References after the `E`-th of their clock: dropped before the
    /// config unit and added to the lost count (board.md "The limit").
    pub references_over_limit: u64,
    /// Clocks that had references over the limit.
    pub clocks_over_limit: u64,
    /// References inside the config window.
    pub config_events: u64,
    /// Inner commands executed, by index (0..=63).
    pub inner_commands: u64,
    /// Events offered to the encoder: ACCESS, TAG, CMD.
    pub events: u64,
    pub access_events: u64,
    pub tag_events: u64,
    pub cmd_events: u64,
    /// References not recorded because of the mode.
    pub suppressed: u64,
    /// Events dropped because the FIFO had no room (each counted in LOST).
    pub events_dropped: u64,
    /// LOST words pushed.
    pub lost_words: u64,
    /// Sum of the LOST words' counts.
    pub lost_reported: u64,
    /// Dropped events and references over the limit not yet reported by a
    /// LOST word (`lost_reported + lost_pending = events_dropped +
    /// references_over_limit`).
    pub lost_pending: u64,
    /// Keeper filler TIME words pushed (one per `KEEPER_GAP` ticks without
    /// a push, format.md §4.1, at a clock's tick).
    pub time_fillers: u64,
    /// Events whose gap needed two TIME words (the keeper found the FIFO
    /// full): dropped, and counted in `events_dropped` too.
    pub time_overflows: u64,
    /// Words pushed into / popped from the TX FIFO.
    pub words_pushed: u64,
    pub words_popped: u64,
    /// Highest FIFO fill level within a clock: `level_k` plus the words
    /// pushed in clock `k`.
    pub fifo_high_water: u64,
    /// Packets closed and the words in them (injected LINE_HI included).
    pub packets: u64,
    pub packet_words: u64,
    pub injected_line_hi: u64,
    pub packets_closed_full: u64,
    pub packets_closed_sync: u64,
    pub packets_closed_idle: u64,
    /// Tick of the last command seen.
    pub last_command_tick: u64,
    /// The Statistic Unit's counters, on a board that has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statistics: Option<super::statistics::StatsCounters>,
}

fn per_kind_map<S: serde::Serializer>(v: &[u64; 12], s: S) -> Result<S::Ok, S::Error> {
    let m: BTreeMap<&str, u64> = DdrCmd::ALL
        .iter()
        .zip(v)
        .map(|(c, n)| (c.mnemonic(), *n))
        .collect();
    serde::Serialize::serialize(&m, s)
}

/// Index of a mnemonic in `DdrCmd::ALL` / `BoardCounters::per_kind`.
#[inline]
pub fn kind_index(c: DdrCmd) -> usize {
    match c {
        DdrCmd::Act => 0,
        DdrCmd::Rd => 1,
        DdrCmd::Wr => 2,
        DdrCmd::Rda => 3,
        DdrCmd::Wra => 4,
        DdrCmd::Pre => 5,
        DdrCmd::Prea => 6,
        DdrCmd::Ref => 7,
        DdrCmd::Mrs => 8,
        DdrCmd::Zq => 9,
        DdrCmd::Nop => 10,
        DdrCmd::Unknown => 11,
    }
}

impl BoardCounters {
    /// Count of one mnemonic.
    pub fn kind(&self, c: DdrCmd) -> u64 {
        self.per_kind[kind_index(c)]
    }

    /// The model's value of hardware counter `c`.
    pub fn hardware(&self, c: HardwareCounter) -> u64 {
        *self.clone().hardware_mut(c)
    }

    fn hardware_mut(&mut self, c: HardwareCounter) -> &mut u64 {
        match c {
            HardwareCounter::EventsDropped => &mut self.events_dropped,
            HardwareCounter::ProtocolErrors => &mut self.protocol_errors,
            HardwareCounter::UnknownCommands => &mut self.unknown_commands,
            HardwareCounter::OutOfRange => &mut self.out_of_range,
            HardwareCounter::ConfigEvents => &mut self.config_events,
            HardwareCounter::LostWords => &mut self.lost_words,
            HardwareCounter::FifoHighWater => &mut self.fifo_high_water,
            HardwareCounter::TimeFillers => &mut self.time_fillers,
            HardwareCounter::TimeOverflows => &mut self.time_overflows,
            HardwareCounter::ReferencesOverLimit => &mut self.references_over_limit,
            HardwareCounter::ClocksOverLimit => &mut self.clocks_over_limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each hardware counter's name is the model's field it reads: with
    /// that field alone set, the model's JSON has it under that name and
    /// every other count 0; and `c as usize` is its place in `ALL`.
    #[test]
    fn hardware_counters_name_the_fields_they_read() {
        for (i, c) in HardwareCounter::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?} out of order");
            let mut counters = BoardCounters::default();
            *counters.hardware_mut(*c) = 7;
            assert_eq!(counters.hardware(*c), 7);
            let json = serde_json::to_value(&counters).unwrap();
            for (name, v) in json.as_object().unwrap() {
                if let Some(v) = v.as_u64() {
                    assert_eq!(v, if name == c.name() { 7 } else { 0 }, "{c:?}: {name}");
                }
            }
            assert!(
                json.get(c.name()).is_some(),
                "{} is no model field",
                c.name()
            );
        }
    }
}
