//! The summary of a Verilator run: the golden model's summary file with
//! every figure the hardware (or its frames) gives and null for the rest,
//! and where each figure came from.

use std::collections::BTreeMap;

use hmtt_board_model::output::{PortFile, RunSummary};
use hmtt_board_model::{BoardConfig, BoardCounters, Mode};
use hmtt_format::command::DdrCmd;
use hmtt_format::packet::{FLAG_TAGS_ONLY, FLAG_TRACING};
use hmtt_hdl::testbench::HardwareCounter;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde_json::{json, Value};

use super::simulate::HardwareRun;
use super::verilator::Simulator;
use crate::board::Board;

/// Counters in the golden model's order ([`BoardCounters`]' keys), each a
/// figure or null.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredCounters(pub Vec<(String, Value)>);

impl MeasuredCounters {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl serde::Serialize for MeasuredCounters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The keys of a JSON object in their order.
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, IgnoredAny)) = a.next_entry::<String, IgnoredAny>()? {
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// The golden model's counter names, in its order, for a board with or
/// without the Statistic Unit (its `statistics` only with it).
pub fn model_counter_names(statistics: bool) -> Vec<String> {
    let counters = BoardCounters {
        statistics: statistics.then(hmtt_board_model::StatsCounters::default),
        ..BoardCounters::default()
    };
    let text = serde_json::to_string(&counters).expect("counters serialize");
    serde_json::from_str::<Keys>(&text)
        .expect("counters are an object")
        .0
}

/// Where the figures of a Verilator run come from.
const FROM_COMMAND_FILE: [&str; 3] = ["commands", "per_kind", "last_command_tick"];
const FROM_FRAMES: [&str; 6] = [
    "packets",
    "packet_words",
    "packets_closed_full",
    "packets_closed_sync",
    "packets_closed_idle",
    "lost_reported",
];
const FROM_POPS: [&str; 2] = ["words_popped", "injected_line_hi"];
const DERIVED: [&str; 1] = ["lost_pending"];
/// The Statistic Unit's figures ([`hmtt_board_model::StatsCounters`]' keys
/// under `statistics`) a Verilator run has: the hardware's record counters,
/// the statistics frames, and what follows from both.
const STATS_FROM_COUNTERS: [&str; 2] = ["records_sent", "records_unsent"];
const STATS_FROM_FRAMES: [&str; 2] = ["packets", "bytes"];
const STATS_DERIVED: [&str; 1] = ["unsent_pending"];

/// The figures of `run` by the model's counter names.
fn measured(run: &HardwareRun) -> BTreeMap<&'static str, Value> {
    let mut m: BTreeMap<&'static str, Value> = BTreeMap::new();
    let i = &run.input;
    m.insert("commands", i.commands.into());
    let per_kind: BTreeMap<&str, u64> = DdrCmd::ALL
        .iter()
        .zip(i.per_kind)
        .map(|(c, n)| (c.mnemonic(), n))
        .collect();
    m.insert("per_kind", json!(per_kind));
    m.insert("last_command_tick", i.last_command_tick.into());
    for (c, v) in HardwareCounter::ALL.iter().zip(run.counters) {
        m.insert(c.name(), v.into());
    }
    let f = &run.frames;
    m.insert("packets", f.packets.into());
    m.insert("packet_words", f.packet_words.into());
    m.insert("packets_closed_full", f.closed_full.into());
    m.insert("packets_closed_sync", f.closed_sync.into());
    m.insert("packets_closed_idle", f.closed_idle.into());
    m.insert("lost_reported", f.lost_reported.into());
    m.insert("words_popped", run.words_at_cut.into());
    if run.missing.is_empty() {
        m.insert(
            "injected_line_hi",
            f.packet_words.saturating_sub(run.words_at_cut).into(),
        );
    }
    let lost = run.counter(HardwareCounter::EventsDropped)
        + run.counter(HardwareCounter::ReferencesOverLimit);
    m.insert("lost_pending", lost.saturating_sub(f.lost_reported).into());
    if let Some(s) = &run.statistics {
        let mut su = serde_json::Map::new();
        for key in stats_counter_names() {
            su.insert(key, Value::Null);
        }
        let mut set = |k: &str, v: u64| su.insert(k.into(), v.into());
        set("records_sent", s.records_sent);
        set("records_unsent", s.records_unsent);
        set("packets", s.packets);
        set("bytes", s.bytes);
        // The unsent records no record sent reported.
        set(
            "unsent_pending",
            s.records_unsent.saturating_sub(s.unsent_reported),
        );
        m.insert("statistics", Value::Object(su));
    }
    m
}

/// The golden model's Statistic Unit counter names.
fn stats_counter_names() -> Vec<String> {
    let text = serde_json::to_string(&hmtt_board_model::StatsCounters::default())
        .expect("counters serialize");
    serde_json::from_str::<Keys>(&text)
        .expect("counters are an object")
        .0
}

/// The mode at the end: the last packet's header flags, if it closed at or
/// after the clock of the last command (no mode change after it).
fn end_mode(cfg: &BoardConfig, run: &HardwareRun) -> Option<Mode> {
    let start = Mode {
        tracing: cfg.start_tracing,
        tags_only: cfg.start_tags_only,
    };
    if run.input.commands == 0 {
        return Some(start);
    }
    let lanes = u64::from(cfg.lanes);
    let last_clock_tick = run.input.last_command_tick / lanes * lanes;
    match run.frames.last {
        Some((flags, leave)) if leave >= last_clock_tick && run.missing.is_empty() => Some(Mode {
            tracing: flags & FLAG_TRACING != 0,
            tags_only: flags & FLAG_TAGS_ONLY != 0,
        }),
        _ => None,
    }
}

/// The summary of a Verilator run of `core`.
pub fn hardware_summary(
    source: &str,
    cfg: &BoardConfig,
    core: Board,
    files: Vec<PortFile>,
    run: &HardwareRun,
    sim: &Simulator,
) -> RunSummary<MeasuredCounters> {
    let figures = measured(run);
    let names = model_counter_names(run.statistics.is_some());
    let mut not_measured: Vec<String> = names
        .iter()
        .filter(|n| !figures.contains_key(n.as_str()))
        .cloned()
        .collect();
    if let Some(Value::Object(su)) = figures.get("statistics") {
        not_measured.extend(
            su.iter()
                .filter(|(_, v)| v.is_null())
                .map(|(k, _)| format!("statistics.{k}")),
        );
    }
    let counters = MeasuredCounters(
        names
            .iter()
            .map(|n| {
                let v = figures.get(n.as_str()).cloned().unwrap_or(Value::Null);
                (n.clone(), v)
            })
            .collect(),
    );
    let mut s = RunSummary::with_counters(
        "verilator",
        source,
        cfg,
        end_mode(cfg, run),
        counters,
        files,
    );
    s.core = Some(core.name().into());
    let pops: Vec<&str> = FROM_POPS
        .into_iter()
        .filter(|n| figures.contains_key(n))
        .collect();
    s.measurement = Some(json!({
        "sources": {
            "command file (the pins driven)": FROM_COMMAND_FILE,
            "hardware counters (64-bit extended)": HardwareCounter::ALL.map(HardwareCounter::name),
            "frames sent": FROM_FRAMES,
            "pops observed in the simulation (injected_line_hi: packet_words - words_popped)": pops,
            "derived (events_dropped + references_over_limit - lost_reported)": DERIVED,
            "statistics: the Statistic Unit's record counters": STATS_FROM_COUNTERS,
            "statistics: its frames sent": STATS_FROM_FRAMES,
            "statistics: derived (records_unsent - the unsent counts the records sent carry)": STATS_DERIVED,
        },
        "statistics_overrun": run.statistics.as_ref().map(|s| s.overrun),
        "statistics_held_behind_earlier_trace": run.statistics.as_ref().map(|s| s.held),
        "not_measured": not_measured,
        "end_mode": if s.end_mode.is_some() {
            "the last packet's header flags"
        } else {
            "not seen: no packet closed after the last command"
        },
        "packets_closed": run.packets_at_cut,
        "packets_missing": run.missing,
        "packet_error": run.packet_error,
        "frame_underrun": run.frame_underrun,
        "fabric_clocks": run.fabric_clocks,
        "simulation_seconds": run.seconds,
        "simulation_cpu_seconds": run.cpu_seconds,
        "fabric_clocks_per_cpu_second": run.fabric_clocks as f64 / run.cpu_seconds.max(1e-9),
        "verilator_build_seconds": sim.build_seconds,
        "simulator": sim.binary,
    }));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_names_follow_the_model_and_cover_the_hardware() {
        let without = model_counter_names(false);
        assert_eq!(
            without.last().map(String::as_str),
            Some("last_command_tick")
        );
        let names = model_counter_names(true);
        assert_eq!(names[0], "commands");
        assert_eq!(names.last().map(String::as_str), Some("statistics"));
        for n in HardwareCounter::ALL
            .map(HardwareCounter::name)
            .iter()
            .chain(&FROM_COMMAND_FILE)
            .chain(&FROM_FRAMES)
            .chain(&FROM_POPS)
            .chain(&DERIVED)
        {
            assert!(names.iter().any(|m| m == n), "{n} is a model counter");
        }
        let su = stats_counter_names();
        for n in STATS_FROM_COUNTERS
            .iter()
            .chain(&STATS_FROM_FRAMES)
            .chain(&STATS_DERIVED)
        {
            assert!(su.iter().any(|m| m == n), "{n} is a unit counter");
        }
    }
}
