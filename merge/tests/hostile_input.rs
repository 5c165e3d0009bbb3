//! Merges of synthetic captures with one forged packet field: the packet is
//! rejected and counted, no gap is made of its forged `seq`, and the trace
//! stays in time order.

use hmtt_format::trace::TraceRecord;
use hmtt_format::{Geometry, Packet};
use hmtt_merge::reassemble::MAX_SEQ_JUMP;
use hmtt_merge::{merge, synth, CaptureSet, MergeOptions, MergeReport, VecSink};

const PORTS: u8 = 2;

/// A board's packets (2 ports) after `forge` changed some of them.
fn merged(forge: impl FnOnce(&mut [synth::SynthPacket])) -> (MergeReport, Vec<TraceRecord>) {
    let g = Geometry::ddr3_default();
    let events = synth::workload(7, 60_000, g);
    let mut packets = synth::packets(0, g, 1250, 360, &events);
    assert!(packets.len() > 100);
    forge(&mut packets);
    let files = synth::deal(&synth::capture_header(0, 0, g, 1250), PORTS, &packets)
        .into_iter()
        .enumerate()
        .map(|(p, f)| (format!("board0-port{p}"), f))
        .collect();
    let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
    let mut sink = VecSink::default();
    let report = merge(&set, &MergeOptions::default(), &mut sink, &mut |_| {}).unwrap();
    (report, sink.0)
}

fn set_t0(p: &mut synth::SynthPacket, t0: u64) {
    Packet::new_unchecked(&mut p.bytes[..]).set_t0(t0);
}

fn set_seq(p: &mut synth::SynthPacket, seq: u64) {
    Packet::new_unchecked(&mut p.bytes[..]).set_seq(seq);
}

fn assert_in_time_order(records: &[TraceRecord]) {
    if let Some(i) = records.windows(2).position(|w| w[1].tick < w[0].tick) {
        panic!(
            "record {} at tick {} follows tick {}",
            i + 1,
            records[i + 1].tick,
            records[i].tick
        );
    }
}

/// One packet (index `i`) lost: what the merge must report for a packet
/// whose forged field made it unusable.
fn assert_one_rejected(report: &MergeReport, i: u64) {
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected, 1, "{report}");
    assert_eq!(b.gaps.len(), 1, "{report}");
    assert_eq!((b.gaps[0].first_seq, b.gaps[0].last_seq), (i, i));
}

#[test]
fn the_clean_stream_merges_without_rejects() {
    let (report, records) = merged(|_| {});
    let b = &report.boards[0];
    assert_eq!((b.packets_rejected, b.gaps.len()), (0, 0), "{report}");
    assert_in_time_order(&records);
}

#[test]
fn a_t0_near_2_pow_64_is_rejected_and_time_stays_in_order() {
    // The repro: 2^64-100 written over one packet's t0.
    let (report, records) = merged(|p| set_t0(&mut p[40], u64::MAX - 99));
    assert_one_rejected(&report, 40);
    assert_in_time_order(&records);
    assert!(records.last().unwrap().tick < 1 << 40);
}

#[test]
fn a_t0_jump_no_loss_explains_is_rejected() {
    for t0 in [1u64 << 50, 1 << 62] {
        let (report, records) = merged(|p| set_t0(&mut p[40], t0));
        assert_one_rejected(&report, 40);
        assert_in_time_order(&records);
    }
}

#[test]
fn a_corrupt_t0_in_the_last_or_first_packet_is_rejected() {
    let (report, records) = merged(|p| {
        let last = p.len() - 1;
        set_t0(&mut p[last], 1 << 60)
    });
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected, 1, "{report}");
    assert_in_time_order(&records);
    let (report, records) = merged(|p| set_t0(&mut p[0], 1 << 60));
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected, 1, "{report}");
    assert_eq!(b.first_seq, Some(1));
    assert_in_time_order(&records);
}

#[test]
fn a_forged_seq_far_ahead_is_rejected_not_a_gap() {
    for forged in [u64::MAX, u64::MAX - 2, 1 << 40, 1000 + MAX_SEQ_JUMP] {
        let (report, records) = merged(|p| set_seq(&mut p[40], forged));
        assert_one_rejected(&report, 40);
        assert_eq!(report.packets_missing(), 1);
        assert_in_time_order(&records);
    }
}

#[test]
fn a_forged_first_seq_far_behind_is_rejected() {
    let (report, _) = merged(|p| {
        for (i, pkt) in p.iter_mut().enumerate() {
            set_seq(pkt, 1_000_000 + i as u64);
        }
        set_seq(&mut p[0], 3);
    });
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected, 1, "{report}");
    assert_eq!(b.first_seq, Some(1_000_001));
    // A board counts from 0: what came before the capture is a gap.
    assert_eq!(b.gaps.len(), 1);
    assert_eq!((b.gaps[0].first_seq, b.gaps[0].last_seq), (0, 1_000_000));
}

#[test]
fn a_real_long_loss_is_still_a_gap() {
    // Every packet after 40 renumbered far ahead, as after a long outage:
    // the packets after the jump carry on from it.
    let jump = 10 * MAX_SEQ_JUMP;
    let (report, records) = merged(|p| {
        for pkt in p.iter_mut().skip(41) {
            let seq = Packet::new_unchecked(&pkt.bytes[..]).seq();
            set_seq(pkt, seq + jump);
        }
    });
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected, 0, "{report}");
    assert_eq!(report.packets_missing(), jump);
    assert_in_time_order(&records);
}

#[test]
fn two_packets_forged_to_the_last_seq_are_rejected() {
    let (report, records) = merged(|p| {
        set_seq(&mut p[40], u64::MAX);
        set_seq(&mut p[41], u64::MAX);
    });
    let b = &report.boards[0];
    assert_eq!(b.packets_rejected + b.packets_duplicate, 2, "{report}");
    assert_eq!(report.packets_missing(), 2);
    assert_in_time_order(&records);
}
