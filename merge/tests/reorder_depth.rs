//! `reorder_depth` means what `hmtt merge --help` says: a packet `k`
//! positions late in its port's file is put in place with depth `k`, and
//! with depth `k - 1` it is late (dropped and counted).

use hmtt_format::Geometry;
use hmtt_merge::{merge, synth, CaptureSet, MergeOptions, MergeReport, VecSink};

const PORTS: u64 = 2;

/// Board 0's packets dealt to two ports, with port 0's packet at position
/// 10 moved `late` positions further down its file; merged with `depth`.
fn merge_displaced(late: usize, depth: usize) -> (MergeReport, usize) {
    let g = Geometry::ddr3_default();
    let events = synth::workload(11, 20_000, g);
    let packets = synth::packets(0, g, 1250, 360, &events);
    let mut ports: Vec<Vec<&synth::SynthPacket>> = vec![Vec::new(); PORTS as usize];
    for p in &packets {
        ports[(p.seq % PORTS) as usize].push(p);
    }
    let moved = ports[0].remove(10);
    ports[0].insert(10 + late, moved);
    let files = ports
        .iter()
        .enumerate()
        .map(|(port, pkts)| {
            let mut file = synth::capture_header(0, port as u8, g, 1250)
                .emit()
                .to_vec();
            for (i, p) in pkts.iter().enumerate() {
                let mut bytes = p.bytes.clone();
                hmtt_format::Packet::new_unchecked(&mut bytes[..]).set_port(port as u8);
                synth::append_record(&mut file, i as u64, &bytes).unwrap();
            }
            (format!("board0-port{port}"), file)
        })
        .collect();
    let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
    let mut sink = VecSink::default();
    let opts = MergeOptions {
        reorder_depth: depth,
        ..Default::default()
    };
    let report = merge(&set, &opts, &mut sink, &mut |_| {}).unwrap();
    (report, sink.0.len())
}

/// Every packet merged in its place (the workload's own LOST words aside).
fn all_placed(report: &MergeReport) -> bool {
    let b = &report.boards[0];
    b.gaps.is_empty() && b.packets_late == 0 && b.packets_duplicate == 0 && b.packets_rejected == 0
}

#[test]
fn a_packet_k_late_needs_depth_k() {
    let (clean, all_records) = merge_displaced(0, 0);
    assert!(all_placed(&clean), "{clean}");
    for late in 1..=4 {
        let (report, records) = merge_displaced(late, late);
        assert!(all_placed(&report), "late {late}, depth {late}: {report}");
        assert_eq!(records, all_records);
        let (report, records) = merge_displaced(late, late - 1);
        let b = &report.boards[0];
        assert_eq!(
            b.packets_late,
            1,
            "late {late}, depth {}: {report}",
            late - 1
        );
        assert_eq!(report.packets_missing(), 1);
        assert!(records < all_records);
    }
}
