//! Merging a simulated run in memory, for the replay tests.

use std::collections::HashSet;

use hmtt_format::trace::TraceRecord;
use hmtt_merge::synth;
use hmtt_merge::{merge, CaptureSet, MergeOptions, VecSink};
use hmtt_sim::machine::{SimConfig, SimOutput};

/// Capture files of the run's packets (one per board port), minus `drop`.
pub fn merged(out: &SimOutput, cfg: &SimConfig, drop: &HashSet<(u8, u64)>) -> Vec<TraceRecord> {
    let mut files = Vec::new();
    for (bi, packets) in out.packets.iter().enumerate() {
        let c = &out.board_configs[bi];
        for port in 0..c.ports {
            let mut f = synth::capture_header(c.board_id, port, c.geometry, c.tick_ps)
                .emit()
                .to_vec();
            for p in packets
                .iter()
                .filter(|p| p.port == port && !drop.contains(&(c.board_id, p.seq)))
            {
                synth::append_record(&mut f, 0, &p.bytes).unwrap();
            }
            files.push((format!("b{}p{port}", c.board_id), f));
        }
    }
    let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
    let opts = MergeOptions {
        interleave_shift: (cfg.boards > 1).then_some(cfg.interleave_shift),
        ..Default::default()
    };
    let mut sink = VecSink::default();
    merge(&set, &opts, &mut sink, &mut |_| {}).unwrap();
    sink.0
}
