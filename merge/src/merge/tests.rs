//! The two-way merge and the k-way tree against sorting, and whole merges
//! of synthetic captures.

use super::*;
use crate::synth;
use hmtt_format::record::TimedEvent;
use hmtt_format::trace::RecordKind;
use hmtt_format::Geometry;
use proptest::prelude::*;

fn sorted_run(ticks: Vec<u64>, board: u8) -> Vec<TraceRecord> {
    let mut ticks = ticks;
    ticks.sort_unstable();
    ticks
        .into_iter()
        .enumerate()
        .map(|(i, t)| TraceRecord::new(t, board, RecordKind::Cmd, i as u64))
        .collect()
}

proptest! {
    #[test]
    fn merge_two_is_a_stable_merge(
        a in proptest::collection::vec(0u64..50, 0..60),
        b in proptest::collection::vec(0u64..50, 0..60),
        room in 1usize..130,
    ) {
        let (a, b) = (sorted_run(a, 0), sorted_run(b, 1));
        let mut out = vec![TraceRecord::default(); room];
        let (i, j) = merge_two(&a, &b, &mut out);
        prop_assert!(i <= a.len() && j <= b.len() && i + j <= room);
        // It stops only when out is full or a run is used up.
        prop_assert!(i + j == room || i == a.len() || j == b.len());
        let mut want: Vec<TraceRecord> = a[..i].iter().chain(&b[..j]).copied().collect();
        want.sort_by_key(|r| (r.tick, r.board()));
        prop_assert_eq!(&out[..i + j], &want[..]);
        // Nothing left behind comes before what was taken.
        let last = out[..i + j].last().map(|r| (r.tick, r.board()));
        if let Some(last) = last {
            for r in a[i..].iter().chain(&b[j..]) {
                prop_assert!((r.tick, r.board()) >= last);
            }
        }
    }
}

/// `boards` boards of a mixed workload (with gaps in time long enough
/// that one board runs alone for a while), merged with `opts`; compared
/// with each board decoded alone and stably sorted by (tick, board).
fn check_boards(boards: u8, events: usize, opts: &MergeOptions) {
    let g = Geometry::ddr3_default();
    let mut files = Vec::new();
    let mut per_board: Vec<Vec<TimedEvent>> = Vec::new();
    for b in 0..boards {
        let mut ev = synth::workload(100 + u64::from(b), events, g);
        // A long stretch where only this board is busy.
        let shift = u64::from(b) * 3_000_000;
        for e in ev.iter_mut().skip(events / 2) {
            e.tick += shift;
        }
        let packets = synth::packets(b, g, 1250, 360, &ev);
        for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 3, &packets)
            .into_iter()
            .enumerate()
        {
            files.push((format!("b{b}p{p}"), f));
        }
        per_board.push(ev);
    }
    let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
    let mut sink = VecSink::default();
    let report = merge(&set, opts, &mut sink, &mut |_| {}).unwrap();
    let mut want = Vec::new();
    for b in 0..boards {
        let one = CaptureSet::from_memory(
            set.sources
                .iter()
                .filter(|s| s.board == b)
                .map(|s| (s.name.clone(), s.data().to_vec()))
                .collect(),
            u64::MAX,
        )
        .unwrap();
        // Decoded alone, then given the board's channel as the merge
        // of all boards would.
        let mut alone = VecSink::default();
        let o = MergeOptions {
            interleave_shift: None,
            ..opts.clone()
        };
        merge(&one, &o, &mut alone, &mut |_| {}).unwrap();
        assert_eq!(alone.0.len(), per_board[usize::from(b)].len());
        let join = opts.interleave_shift.map(|shift| ChannelJoin {
            channels: u64::from(boards),
            channel: u64::from(b),
            shift,
        });
        want.extend(alone.0.into_iter().map(|r| match join {
            Some(j) if r.is_access() && boards > 1 => {
                TraceRecord::access(r.tick, b, r.kind() == RecordKind::Write, j.join(r.pa()))
            }
            _ => r,
        }));
    }
    want.sort_by_key(|r| (r.tick, r.board()));
    assert_eq!(report.records, want.len() as u64);
    assert_eq!(sink.0.len(), want.len());
    assert!(sink.0 == want, "{boards} boards differ");
}

#[test]
fn one_to_four_boards_merge_like_a_stable_sort() {
    for decode_threads in [false, true] {
        let opts = MergeOptions {
            decode_threads,
            ..Default::default()
        };
        for boards in 1..=4 {
            check_boards(boards, 40_000, &opts);
        }
    }
}

#[test]
fn damaged_packets_in_a_decode_thread_are_counted_as_without_threads() {
    // Board 1's first port file ends with packets of another geometry:
    // rejected and counted the same way with and without decode threads.
    let g = Geometry::ddr3_default();
    let other = Geometry::preset("ddr2-2g").unwrap();
    let mut files = Vec::new();
    for b in 0..2u8 {
        let ev = synth::workload(50 + u64::from(b), 20_000, g);
        let packets = synth::packets(b, g, 1250, 360, &ev);
        for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 2, &packets)
            .into_iter()
            .enumerate()
        {
            files.push((format!("b{b}p{p}"), f));
        }
    }
    let ev = synth::workload(99, 2_000, other);
    let foreign = synth::packets(1, other, 1250, 360, &ev);
    for p in &foreign {
        synth::append_record(&mut files[2].1, 0, &p.bytes).unwrap();
    }
    let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
    let mut runs = Vec::new();
    for decode_threads in [false, true] {
        let opts = MergeOptions {
            decode_threads,
            ..Default::default()
        };
        let mut sink = VecSink::default();
        let report = merge(&set, &opts, &mut sink, &mut |_| {}).unwrap();
        assert_eq!(report.boards[0].packets_rejected, 0);
        assert_eq!(
            report.boards[1].packets_rejected,
            foreign.len() as u64,
            "{report}"
        );
        assert!(report.to_string().contains("geometry"), "{report}");
        runs.push((report.records, sink.0));
    }
    assert_eq!(runs[0].0, 40_000);
    assert!(runs[0] == runs[1], "threaded and unthreaded merges differ");
}

#[test]
fn records_built_in_the_writers_blocks_equal_the_block_path() {
    let g = Geometry::ddr3_default();
    for boards in 1..=3u8 {
        let mut files = Vec::new();
        for b in 0..boards {
            // Enough records to fill several of the writer's blocks.
            let ev = synth::workload(7 + u64::from(b), 150_000, g);
            let packets = synth::packets(b, g, 1250, 360, &ev);
            for (p, f) in synth::deal(&synth::capture_header(b, 0, g, 1250), 2, &packets)
                .into_iter()
                .enumerate()
            {
                files.push((format!("b{b}p{p}"), f));
            }
        }
        let set = CaptureSet::from_memory(files, u64::MAX).unwrap();
        let opts = MergeOptions::default();
        let mut vec = VecSink::default();
        merge(&set, &opts, &mut vec, &mut |_| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.hmtttrace");
        let mut w = crate::TraceWriter::create(&path).unwrap();
        assert!(w.spare().is_some_and(|s| !s.is_empty()));
        let report = merge(&set, &opts, &mut w, &mut |_| {}).unwrap();
        w.finish(&report, set.geometry, set.start_ns, &Default::default())
            .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let v = hmtt_format::trace::TraceView::new_checked(&bytes).unwrap();
        assert_eq!(v.len(), vec.0.len(), "{boards} boards");
        assert!(v.records().eq(vec.0.iter().copied()), "{boards} boards");
        assert_eq!(v.index().count(), vec.0.len().div_ceil(4096));
        assert_eq!(v.header().common.last_tick, vec.0.last().unwrap().tick);
    }
}

#[test]
fn interleaved_channels_merge_like_a_stable_sort() {
    for boards in 2..=3 {
        let opts = MergeOptions {
            interleave_shift: Some(12),
            ..Default::default()
        };
        check_boards(boards, 20_000, &opts);
    }
}
