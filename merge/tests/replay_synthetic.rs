//! Replay on hand-built traces whose answer is known reference by
//! reference: the miss classes, DMA buffers that cover part of a page,
//! exits and frames given to another process, sequence numbers that wrap,
//! logs longer and shorter than the trace, lost tags with and without a
//! GAP, the views (pid, physical and virtual ranges, event windows), a
//! mapped trace file read in blocks, and the virtual trace file written by
//! `VtraceWriter` read back. Then the kernel log's version 2: a fork whose
//! child shares frames copy-on-write, decided by SWITCH records; a
//! MAP_SHARED region in two processes at different pages; a vfork child
//! using its parent's pages until its EXEC; tags of two CPUs out of order
//! within the window and beyond it; and the unattributed share the CLI's
//! threshold reads.

use hmtt_format::config::log_tag_event;
use hmtt_format::events::EventNames;
use hmtt_format::klog::CLONE_VM;
use hmtt_format::klog::{DmaDirection, Event, Name, RecordRepr};
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::{VirtualRecord, VtraceView};
use hmtt_merge::replay::writer::VtraceInfo;
use hmtt_merge::replay::{
    Ambiguity, LostWindow, Miss, ReplayFilter, ReplayOutput, ReplayReport, Replayer, Unplaced,
    VirtualRef, VtraceWriter, DEFAULT_MAX_UNATTRIBUTED,
};

const PAGE: u64 = 4096;

/// A trace and its kernel log, built in time order.
#[derive(Default)]
struct Run {
    log: Vec<RecordRepr>,
    trace: Vec<TraceRecord>,
    tick: u64,
}

impl Run {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
    /// A log record announced by its tag on `boards`.
    fn log(&mut self, pid: u32, event: Event, boards: &[u8]) {
        let seq = self.log.len() as u64;
        self.log.push(RecordRepr {
            seq,
            cpu: 0,
            pid,
            time_ns: 0,
            event,
        });
        for &b in boards {
            let t = self.next_tick();
            self.trace.push(TraceRecord::new(
                t,
                b,
                RecordKind::Tag { write: true },
                u64::from(log_tag_event(seq)),
            ));
        }
    }
    /// A log record whose tag never reaches the trace.
    fn log_untagged(&mut self, pid: u32, event: Event) {
        self.log(pid, event, &[]);
    }
    /// A log record made on `cpu`, tagged on board 0.
    fn log_cpu(&mut self, cpu: u16, pid: u32, event: Event) {
        self.log(pid, event, &[0]);
        self.log.last_mut().unwrap().cpu = cpu;
    }
    /// A log record made on `cpu` whose tag comes later (see `tag`).
    fn log_later(&mut self, cpu: u16, pid: u32, event: Event) -> u64 {
        self.log(pid, event, &[]);
        let r = self.log.last_mut().unwrap();
        r.cpu = cpu;
        r.seq
    }
    /// The tag of record `seq`, on board 0.
    fn tag(&mut self, seq: u64) {
        let t = self.next_tick();
        self.trace.push(TraceRecord::new(
            t,
            0,
            RecordKind::Tag { write: true },
            u64::from(log_tag_event(seq)),
        ));
    }
    fn switch(&mut self, cpu: u16, prev: u32, next: u32) {
        self.log_cpu(cpu, next, Event::Switch { prev });
    }
    fn map(&mut self, pid: u32, vpn: u64, pfn: u64) {
        self.map_on(pid, vpn, pfn, &[0]);
    }
    fn map_on(&mut self, pid: u32, vpn: u64, pfn: u64, boards: &[u8]) {
        self.log(
            pid,
            Event::Map {
                vpn,
                pfn,
                pte_phys: 0x7000 * PAGE + vpn * 8,
            },
            boards,
        );
    }
    fn access(&mut self, board: u8, write: bool, pa: u64) {
        let t = self.next_tick();
        self.trace.push(TraceRecord::access(t, board, write, pa));
    }
    fn record(&mut self, kind: RecordKind, board: u8, value: u64) {
        let t = self.next_tick();
        self.trace.push(TraceRecord::new(t, board, kind, value));
    }
}

fn replay(run: &Run, filter: ReplayFilter) -> (Vec<VirtualRef>, ReplayReport) {
    let mut r = Replayer::new(&run.log, filter);
    let mut refs = Vec::new();
    r.run(&run.trace[..], &mut |v| refs.push(*v));
    (refs, r.report)
}

fn dma_map(addr: u64, size: u64, dir: DmaDirection) -> Event {
    Event::DmaMap {
        addr,
        size,
        dir,
        device: Name::new("nic"),
    }
}
fn dma_unmap(addr: u64, size: u64, dir: DmaDirection) -> Event {
    Event::DmaUnmap {
        addr,
        size,
        dir,
        device: Name::new("nic"),
    }
}

#[test]
fn misses_are_classified_and_dma_is_counted_by_direction() {
    let mut run = Run::default();
    run.map(1, 0x40, 0x100);
    let pte_frame = (0x7000 * PAGE + 0x40 * 8) / PAGE;
    // A buffer over a page nobody maps, one over the mapped page, and one
    // that covers only the upper half of a page.
    run.log(0, dma_map(0x200 * PAGE, PAGE, DmaDirection::ToDevice), &[0]);
    run.log(
        0,
        dma_map(0x100 * PAGE, PAGE, DmaDirection::FromDevice),
        &[0],
    );
    run.log(
        0,
        dma_map(0x300 * PAGE + 2048, 3 * PAGE, DmaDirection::FromDevice),
        &[0],
    );
    let refs = [
        (0x100 * PAGE + 0x40, true),
        (pte_frame * PAGE + 0x200, true),
        (0x500 * PAGE, false),
        (0x200 * PAGE + 64, false),
        (0x300 * PAGE, false),
        (0x300 * PAGE + 2048, true),
        (0x301 * PAGE, false),
    ];
    for &(pa, w) in &refs {
        run.access(0, w, pa);
    }
    run.log(
        0,
        dma_unmap(0x200 * PAGE, PAGE, DmaDirection::ToDevice),
        &[0],
    );
    run.access(0, false, 0x200 * PAGE + 64);
    run.log(
        1,
        Event::Exit {
            comm: Name::new("a"),
        },
        &[0],
    );
    run.access(0, false, 0x100 * PAGE);

    let (got, rep) = replay(&run, ReplayFilter::default());
    let view: Vec<_> = got.iter().map(|v| (v.owner, v.dma, v.miss)).collect();
    assert_eq!(
        view,
        vec![
            (Some((1, 0x40 * PAGE + 0x40)), true, None),
            (None, false, Some(Miss::Kernel)),
            (None, false, Some(Miss::Unmapped)),
            (None, true, Some(Miss::Dma)),
            (None, false, Some(Miss::Unmapped)),
            (None, true, Some(Miss::Dma)),
            (None, true, Some(Miss::Dma)),
            (None, false, Some(Miss::Unmapped)),
            // The process is gone but the device still owns the buffer.
            (None, true, Some(Miss::Dma)),
        ]
    );
    assert_eq!(rep.references, 9);
    assert_eq!(rep.translated, 1);
    assert_eq!(rep.misses, [3, 1, 4]);
    assert_eq!(rep.miss_count(Miss::Kernel), 1);
    // [cpu read, cpu write, dma read, dma write]
    assert_eq!(rep.table3, [3, 1, 3, 2]);
    let mut t4: Vec<_> = rep.dma_requests.clone().into_iter().collect();
    t4.sort();
    assert_eq!(
        t4,
        vec![
            ("from device (DMA write)", vec![PAGE, 3 * PAGE]),
            ("to device (DMA read)", vec![PAGE]),
        ]
    );
    assert_eq!(rep.unplaced_count, 0);
}

#[test]
fn an_exit_frees_only_the_frames_still_owned() {
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.map(1, 0x11, 0x101);
    // Frame 0x101 goes to process 2 before process 1 exits.
    run.log(
        1,
        Event::Unmap {
            vpn: 0x11,
            pfn: 0x101,
            pte_phys: 0,
        },
        &[0],
    );
    run.map(2, 0x20, 0x101);
    run.log(
        1,
        Event::Exit {
            comm: Name::new("a"),
        },
        &[0],
    );
    run.access(0, false, 0x100 * PAGE);
    run.access(0, true, 0x101 * PAGE + 128);
    let (got, _) = replay(&run, ReplayFilter::default());
    assert_eq!(got[0].owner, None);
    assert_eq!(got[1].owner, Some((2, 0x20 * PAGE + 128)));
}

#[test]
fn sequence_numbers_wrap_and_every_record_is_placed() {
    // 70_000 records: the tags' 16 bits wrap once. Frame 0x100 changes
    // owner with every MAP; a reference after each of a sample checks it.
    let mut run = Run::default();
    let n = 70_000u64;
    for i in 0..n {
        run.map((i % 7) as u32 + 1, 0x1000 + i, 0x100);
        if i % 997 == 0 || (65_530..65_542).contains(&i) {
            run.access(0, false, 0x100 * PAGE + 64);
        }
    }
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(rep.tags_placed, n);
    assert_eq!(rep.unplaced_count, 0);
    let mut want = Vec::new();
    for i in 0..n {
        if i % 997 == 0 || (65_530..65_542).contains(&i) {
            want.push(Some(((i % 7) as u32 + 1, (0x1000 + i) * PAGE + 64)));
        }
    }
    assert_eq!(got.iter().map(|v| v.owner).collect::<Vec<_>>(), want);
}

#[test]
fn logs_longer_or_shorter_than_the_trace_are_reported() {
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.access(0, false, 0x100 * PAGE);
    run.log_untagged(
        1,
        Event::Exit {
            comm: Name::new("a"),
        },
    );
    run.log_untagged(
        2,
        Event::Exit {
            comm: Name::new("b"),
        },
    );
    let (_, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(rep.tags_placed, 1);
    assert_eq!(
        rep.unplaced,
        vec![
            Unplaced::NoTag { board: 0, seq: 1 },
            Unplaced::NoTag { board: 0, seq: 2 }
        ]
    );

    // The trace has tags for records the log does not hold.
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.map(1, 0x11, 0x101);
    let short = Run {
        log: run.log[..1].to_vec(),
        trace: run.trace.clone(),
        tick: 0,
    };
    let (_, rep) = replay(&short, ReplayFilter::default());
    assert_eq!(rep.tags_placed, 2);
    assert_eq!(rep.tags_without_record, 1);
    assert_eq!(rep.unplaced_count, 0);
}

#[test]
fn lost_tags_are_applied_at_the_end_of_their_window_and_the_window_is_named() {
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.access(0, false, 0x100 * PAGE);
    // Packets lost: the UNMAP and the MAP to process 2 were in them.
    run.record(RecordKind::GapBegin, 0, 0);
    let gap_from = run.tick;
    run.log_untagged(
        1,
        Event::Unmap {
            vpn: 0x10,
            pfn: 0x100,
            pte_phys: 0,
        },
    );
    run.log_untagged(
        2,
        Event::Map {
            vpn: 0x20,
            pfn: 0x100,
            pte_phys: 0,
        },
    );
    run.record(RecordKind::GapEnd, 0, 3);
    let gap_to = run.tick;
    run.access(0, false, 0x100 * PAGE);
    run.map(3, 0x30, 0x200);
    // A tag lost without a GAP (a capture cut short): found by the next tag.
    run.log_untagged(
        3,
        Event::Exit {
            comm: Name::new("c"),
        },
    );
    run.map(4, 0x40, 0x300);
    run.access(0, false, 0x200 * PAGE);
    run.access(0, false, 0x300 * PAGE);
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(
        got.iter().map(|v| v.owner).collect::<Vec<_>>(),
        vec![
            Some((1, 0x10 * PAGE)),
            Some((2, 0x20 * PAGE)),
            None,
            Some((4, 0x40 * PAGE))
        ]
    );
    assert_eq!(
        rep.lost_windows,
        vec![LostWindow {
            board: 0,
            from_tick: gap_from,
            to_tick: gap_to,
            packets: 3
        }]
    );
    assert_eq!(rep.unplaced_count, 3);
    assert!(rep.unplaced.contains(&Unplaced::LostTag {
        board: 0,
        seq: 1,
        tick: gap_to
    }));
    assert!(matches!(
        rep.unplaced[2],
        Unplaced::LostTag {
            board: 0,
            seq: 4,
            ..
        }
    ));
}

/// Two processes, two boards, two user events around a phase.
fn views_run() -> (Run, Vec<(u8, u64, u32)>) {
    let mut run = Run::default();
    run.map_on(1, 0x10, 0x100, &[0, 1]);
    run.map_on(2, 0x20, 0x200, &[0, 1]);
    run.map_on(1, 0x11, 0x201, &[0, 1]);
    run.log(
        0,
        Event::Exec {
            comm: Name::new("x"),
        },
        &[0, 1],
    );
    let mut refs = Vec::new();
    for phase in 0..3u64 {
        let in_window = phase % 2 == 1;
        if in_window {
            run.record(RecordKind::Tag { write: false }, 0, 0x40);
            run.record(RecordKind::Tag { write: false }, 1, 0x40);
        }
        for i in 0..40u64 {
            let (board, pa) = match i % 4 {
                0 => (0, 0x100 * PAGE + i * 64),
                1 => (1, 0x200 * PAGE + i * 64),
                2 => (0, 0x201 * PAGE + i * 64),
                _ => (1, 0x900 * PAGE + i * 64),
            };
            run.access(board, i % 3 == 0, pa);
            refs.push((board, pa, u32::from(in_window)));
        }
        if in_window {
            run.record(RecordKind::Tag { write: false }, 0, 0x41);
            run.record(RecordKind::Tag { write: false }, 1, 0x41);
        }
    }
    (run, refs)
}

#[test]
fn views_select_by_pid_ranges_and_event_window() {
    let (run, refs) = views_run();
    let (all, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(all.len(), refs.len());
    assert_eq!(rep.selected, refs.len() as u64);
    let select = |f: ReplayFilter| {
        let (got, rep) = replay(&run, f);
        assert_eq!(
            rep.references,
            refs.len() as u64,
            "the view does not change the counts"
        );
        got
    };
    let by_pid = select(ReplayFilter {
        pid: Some(1),
        ..Default::default()
    });
    assert_eq!(
        by_pid,
        all.iter()
            .filter(|v| v.owner.map(|o| o.0) == Some(1))
            .copied()
            .collect::<Vec<_>>()
    );
    assert_eq!(by_pid.len(), 60);
    let pa = (0x200 * PAGE, 0x202 * PAGE);
    let by_pa = select(ReplayFilter {
        pa: Some(pa),
        ..Default::default()
    });
    assert_eq!(by_pa.len(), 60);
    assert!(by_pa.iter().all(|v| (pa.0..pa.1).contains(&v.pa)));
    let va = (0x11 * PAGE, 0x21 * PAGE);
    let by_va = select(ReplayFilter {
        va: Some(va),
        ..Default::default()
    });
    assert_eq!(
        by_va.iter().map(|v| v.owner.unwrap().0).collect::<Vec<_>>(),
        all.iter()
            .filter_map(|v| v.owner)
            .filter(|o| (va.0..va.1).contains(&o.1))
            .map(|o| o.0)
            .collect::<Vec<_>>()
    );
    assert_eq!(by_va.len(), 60);
    let window = select(ReplayFilter {
        window: Some((0x40, 0x41)),
        ..Default::default()
    });
    let want: Vec<_> = refs
        .iter()
        .filter(|r| r.2 == 1)
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(
        window.iter().map(|v| (v.board, v.pa)).collect::<Vec<_>>(),
        want
    );
    let window_and_pid = select(ReplayFilter {
        window: Some((0x40, 0x41)),
        pid: Some(2),
        ..Default::default()
    });
    assert_eq!(window_and_pid.len(), 10);
}

#[test]
fn a_trace_file_in_blocks_and_the_virtual_trace_file_round_trip() {
    // More records than one block, read from a trace file through its view.
    let mut run = Run::default();
    for f in 0..64u64 {
        run.map_on(1 + (f % 3) as u32, 0x1000 + f, 0x100 + f, &[0, 1]);
    }
    run.log(
        0,
        dma_map(0x120 * PAGE, 2 * PAGE, DmaDirection::ToDevice),
        &[0],
    );
    for i in 0..20_000u64 {
        run.access(
            (i % 2) as u8,
            i % 5 == 0,
            0x100 * PAGE + (i * 64 * 7) % (80 * PAGE),
        );
    }
    run.record(RecordKind::Lost, 1, 12);
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("t.hmtttrace");
    let mut w = hmtt_merge::TraceWriter::create(&trace_path).unwrap();
    hmtt_merge::RecordSink::write(&mut w, &run.trace).unwrap();
    w.finish(&Default::default(), None, 0, &EventNames::default())
        .unwrap();
    let bytes = std::fs::read(&trace_path).unwrap();
    let view = hmtt_format::trace::TraceView::new_checked(&bytes).unwrap();

    let mut from_slice = Vec::new();
    let mut r = Replayer::new(&run.log, ReplayFilter::default());
    r.run_blocks(&run.trace[..], ReplayOutput { markers: true }, &mut |b| {
        from_slice.extend_from_slice(b)
    });
    let mut from_file = Vec::new();
    let mut r2 = Replayer::new(&run.log, ReplayFilter::default());
    let path = dir.path().join("v.hmttvtrace");
    let mut vw = VtraceWriter::create(&path).unwrap();
    r2.run_blocks(&view, ReplayOutput { markers: true }, &mut |b| {
        from_file.extend_from_slice(b);
        vw.write(b).unwrap();
    });
    assert_eq!(from_slice, from_file);
    assert_eq!(from_file.len(), run.trace.len(), "markers kept");
    assert!(from_file.iter().any(|v| v.is_dma()));
    assert!(from_file.iter().any(|v| v.miss() == Some(Miss::Unmapped)));
    let names = EventNames::from_iter(vec![(0x40, "phase_begin".into())]);
    let info = VtraceInfo {
        start_ns: 5,
        tick_ps: 1250,
        boards: 2,
        selection: false,
        names: names.clone(),
    };
    let size = vw.finish(&info, &r2.report).unwrap();
    let file = std::fs::read(&path).unwrap();
    assert_eq!(file.len() as u64, size);
    let v = VtraceView::new_checked(&file).unwrap();
    assert!(v.records().eq(from_file.iter().copied()));
    let h = v.header();
    assert!(h.is_complete() && !h.is_selection());
    assert_eq!(
        (h.references, h.translated, h.boards, h.common.tick_ps),
        (r2.report.references, r2.report.translated, 2, 1250)
    );
    assert_eq!(h.common.first_tick, run.trace[0].tick);
    assert_eq!(v.names(), &names);
    let t = from_file[12_345].tick;
    assert_eq!(v.seek_tick(t), 12_345);
    // Every reference's fields agree with the physical record.
    for (vr, pr) in from_file.iter().zip(&run.trace) {
        assert_eq!(vr.physical(), *pr);
        if let Some((_, va)) = vr.owner() {
            assert_eq!(va & (PAGE - 1), pr.pa() & (PAGE - 1));
        }
    }
    // A view of the file keeps the markers but only the selected references.
    let mut sel: Vec<VirtualRecord> = Vec::new();
    let mut r3 = Replayer::new(
        &run.log,
        ReplayFilter {
            pid: Some(2),
            ..Default::default()
        },
    );
    r3.run_blocks(&view, ReplayOutput { markers: true }, &mut |b| {
        sel.extend_from_slice(b)
    });
    assert!(sel
        .iter()
        .all(|v| !v.is_access() || v.owner().map(|o| o.0) == Some(2)));
    assert_eq!(
        sel.iter().filter(|v| !v.is_access()).count(),
        run.trace.iter().filter(|r| !r.is_access()).count()
    );
}

#[test]
fn sequence_numbers_near_the_top_of_their_range_still_align() {
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.map(1, 0x11, 0x101);
    run.access(0, false, 0x101 * PAGE);
    run.log_untagged(
        1,
        Event::Exit {
            comm: Name::new("a"),
        },
    );
    let base = u64::MAX - 10;
    for (i, r) in run.log.iter_mut().enumerate() {
        r.seq = base + i as u64;
    }
    // The tags carry the low 16 bits of the new numbers.
    let mut k = 0;
    for r in run.trace.iter_mut() {
        if let RecordKind::Tag { .. } = r.kind() {
            *r = TraceRecord::new(
                r.tick,
                r.board(),
                r.kind(),
                u64::from(log_tag_event(base + k)),
            );
            k += 1;
        }
    }
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(got[0].owner, Some((1, 0x11 * PAGE)));
    assert_eq!(rep.tags_placed, 2);
    assert_eq!(
        rep.unplaced,
        vec![Unplaced::NoTag {
            board: 0,
            seq: base + 2
        }]
    );
}

fn map_event(vpn: u64, pfn: u64) -> Event {
    Event::Map {
        vpn,
        pfn,
        pte_phys: 0x7000 * PAGE + vpn * 8,
    }
}
fn snapshot(vpn: u64, pfn: u64) -> Event {
    Event::SnapshotMap {
        vpn,
        pfn,
        pte_phys: 0x7100 * PAGE + vpn * 8,
    }
}
fn unmap_event(vpn: u64, pfn: u64) -> Event {
    Event::Unmap {
        vpn,
        pfn,
        pte_phys: 0x7000 * PAGE + vpn * 8,
    }
}
fn fork(parent: u32, flags: u64) -> Event {
    Event::Fork {
        parent,
        flags,
        comm: Name::new("child"),
    }
}
fn owners(refs: &[VirtualRef]) -> Vec<Option<(u32, u64)>> {
    refs.iter().map(|v| v.owner).collect()
}

#[test]
fn a_forked_childs_copy_on_write_frames_go_to_the_process_that_runs() {
    let mut run = Run::default();
    run.switch(0, 0, 1);
    run.log_cpu(0, 1, map_event(0x40, 0x100));
    run.log_cpu(0, 1, map_event(0x41, 0x101));
    // fork(): the child's copies of the parent's entries follow FORK.
    run.log_cpu(0, 2, fork(1, 0x11));
    run.log_cpu(0, 2, snapshot(0x40, 0x100));
    run.log_cpu(0, 2, snapshot(0x41, 0x101));
    run.access(0, false, 0x100 * PAGE + 0x40);
    run.switch(0, 1, 2);
    run.access(0, false, 0x100 * PAGE + 0x80);
    // The child writes page 0x41: its copy-on-write break maps a new frame
    // (no UNMAP of the shared one: the entry was replaced).
    run.log_cpu(0, 2, map_event(0x41, 0x200));
    run.access(0, true, 0x200 * PAGE);
    // Frame 0x101 is the parent's alone now, whoever runs.
    run.access(0, false, 0x101 * PAGE);
    // The parent runs on CPU 1 at the same time: ambiguous. The telling
    // reference before it is CPU 1's (its SWITCH tag), the one after it
    // CPU 0's (the UNMAP's tag): CPU 1's burst goes on, as the reference
    // continues the parent's stream (its certain reference to the next
    // page, 0x41, just before), and it is counted so.
    run.switch(1, 0, 1);
    run.access(0, false, 0x100 * PAGE + 0xc0);
    // The child's UNMAP of the shared page leaves the parent's mapping.
    run.log_cpu(0, 2, unmap_event(0x40, 0x100));
    run.access(0, false, 0x100 * PAGE + 0x100);
    run.log_cpu(
        0,
        2,
        Event::Exit {
            comm: Name::new("child"),
        },
    );
    // Between its EXIT and its last switch out the kernel still reads the
    // exiting child's memory (its robust-futex list): still the child's.
    run.access(0, false, 0x200 * PAGE);
    // Its last switch out: what its teardown did not unmap ends.
    run.switch(0, 2, 1);
    run.access(0, false, 0x200 * PAGE);
    run.access(0, false, 0x101 * PAGE);
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(
        owners(&got),
        vec![
            Some((1, 0x40 * PAGE + 0x40)),
            Some((2, 0x40 * PAGE + 0x80)),
            Some((2, 0x41 * PAGE)),
            Some((1, 0x41 * PAGE)),
            Some((1, 0x40 * PAGE + 0xc0)),
            Some((1, 0x40 * PAGE + 0x100)),
            Some((2, 0x41 * PAGE)),
            None,
            Some((1, 0x41 * PAGE)),
        ]
    );
    assert_eq!(rep.ambiguous_count(Ambiguity::ByBurst), 1);
    assert_eq!(rep.ambiguous_count(Ambiguity::ByLocality), 0);
    assert_eq!(rep.ambiguous_count(Ambiguity::SeveralRunning), 0);
    assert_eq!(rep.ambiguous_count(Ambiguity::NoneRunning), 0);
    assert_eq!(rep.miss_count(Miss::Unmapped), 1);
    assert_eq!(rep.unattributed(), 2);
    assert!(rep.switches);
    assert_eq!(rep.while_traced, 9);
    assert_eq!(rep.unplaced_count, 0);
    // With --pid, each process's view.
    let (child, _) = replay(
        &run,
        ReplayFilter {
            pid: Some(2),
            ..Default::default()
        },
    );
    assert_eq!(child.len(), 3);
}

#[test]
fn a_shared_region_at_different_pages_of_two_processes() {
    let mut run = Run::default();
    run.log_cpu(0, 1, map_event(0x10, 0x300));
    run.log_cpu(0, 2, map_event(0x77, 0x300));
    run.switch(0, 0, 1);
    run.access(0, true, 0x300 * PAGE + 0x40);
    run.switch(0, 1, 2);
    run.access(0, true, 0x300 * PAGE + 0x80);
    // Neither runs: the one that ran last, counted.
    run.switch(0, 2, 0);
    run.access(0, false, 0x300 * PAGE + 0xc0);
    // Process 2 unmaps its view: process 1's stays, for certain.
    run.log_cpu(0, 2, unmap_event(0x77, 0x300));
    run.access(0, false, 0x300 * PAGE + 0x40);
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(
        owners(&got),
        vec![
            Some((1, 0x10 * PAGE + 0x40)),
            Some((2, 0x77 * PAGE + 0x80)),
            Some((2, 0x77 * PAGE + 0xc0)),
            Some((1, 0x10 * PAGE + 0x40)),
        ]
    );
    assert_eq!(rep.ambiguous_count(Ambiguity::NoneRunning), 1);
    assert_eq!(rep.unattributed(), 1);
    // Two references were made while a traced process ran, none of them
    // unattributed: 0% by the threshold's measure.
    assert_eq!((rep.while_traced, rep.unattributed_while_traced), (2, 0));
    assert_eq!(rep.unattributed_percent(), 0.0);
}

#[test]
fn a_vfork_child_uses_its_parents_pages_until_its_exec() {
    // The sequence hmtt.ko logs for vfork + execve (notes of the kmod work).
    let mut run = Run::default();
    run.switch(0, 0, 1);
    run.log_cpu(0, 1, map_event(0x10, 0x400));
    run.log_cpu(0, 3, fork(1, CLONE_VM | 0x4000 | 0x11));
    run.switch(0, 1, 3);
    run.access(0, true, 0x400 * PAGE + 0x40);
    // The child's fault in the shared space: logged under the parent's pid.
    run.log_cpu(0, 1, map_event(0x11, 0x401));
    run.access(0, true, 0x401 * PAGE);
    // Its execve: a page of the new stack, under its own pid.
    run.log_cpu(0, 3, map_event(0xffe, 0x402));
    run.access(0, true, 0x402 * PAGE);
    // The new space is installed: the vfork parent wakes on CPU 1.
    run.switch(1, 0, 1);
    run.access(0, false, 0x400 * PAGE);
    // The stack moves into place, EXEC, its snapshot, the loader's fault.
    run.log_cpu(0, 3, unmap_event(0xffe, 0x402));
    run.log_cpu(0, 3, map_event(0x7ff0, 0x402));
    run.log_cpu(
        0,
        3,
        Event::Exec {
            comm: Name::new("prog"),
        },
    );
    run.log_cpu(0, 3, snapshot(0x7ff0, 0x402));
    run.log_cpu(0, 3, map_event(0x20, 0x500));
    run.access(0, true, 0x500 * PAGE);
    run.access(0, true, 0x402 * PAGE + 0x40);
    run.access(0, false, 0x401 * PAGE + 0x40);
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(
        owners(&got),
        vec![
            Some((3, 0x10 * PAGE + 0x40)),
            Some((3, 0x11 * PAGE)),
            Some((3, 0xffe * PAGE)),
            Some((1, 0x10 * PAGE)),
            Some((3, 0x20 * PAGE)),
            Some((3, 0x7ff0 * PAGE + 0x40)),
            Some((1, 0x11 * PAGE + 0x40)),
        ]
    );
    assert_eq!(rep.unattributed(), 0);
}

#[test]
fn an_exec_drops_the_old_image_and_its_snapshot_gives_the_new_one() {
    let mut run = Run::default();
    run.log_cpu(0, 5, map_event(0x10, 0x600));
    run.log_cpu(
        0,
        5,
        Event::Exec {
            comm: Name::new("prog"),
        },
    );
    run.log_cpu(0, 5, snapshot(0x7ff0, 0x601));
    // execve's own writes to the new image (the stack, the .bss tail) come
    // after the EXEC record's tag and its snapshot: attributed.
    run.access(0, true, 0x601 * PAGE + 0x80);
    run.access(0, false, 0x600 * PAGE);
    let (got, _) = replay(&run, ReplayFilter::default());
    assert_eq!(owners(&got), vec![Some((5, 0x7ff0 * PAGE + 0x80)), None]);
}

#[test]
fn tags_of_two_cpus_out_of_order_within_the_window_are_placed() {
    let mut run = Run::default();
    let a = run.log_later(0, 1, map_event(0x10, 0x100));
    let b = run.log_later(1, 2, map_event(0x20, 0x200));
    let c = run.log_later(0, 1, unmap_event(0x10, 0x100));
    let d = run.log_later(0, 3, map_event(0x30, 0x100));
    // CPU 1's tag reaches the bus after CPU 0's later ones.
    run.tag(a);
    run.access(0, false, 0x100 * PAGE);
    run.tag(c);
    run.tag(d);
    run.access(0, false, 0x100 * PAGE + 64);
    run.access(0, false, 0x200 * PAGE);
    run.tag(b);
    run.access(0, false, 0x200 * PAGE + 64);
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(
        owners(&got),
        vec![
            Some((1, 0x10 * PAGE)),
            Some((3, 0x30 * PAGE + 64)),
            None,
            Some((2, 0x20 * PAGE + 64)),
        ]
    );
    assert_eq!(rep.records_placed(), 4);
    assert_eq!(rep.tags_reordered, 1);
    assert_eq!((rep.unplaced_count, rep.tags_late), (0, 0));
    assert_eq!(rep.tags_without_record, 0);
}

#[test]
fn a_tag_later_than_the_window_is_counted_and_changes_nothing() {
    let mut run = Run::default();
    // CPU 1's MAP, then 300 records of CPU 0; CPU 1's tag comes after
    // them all, past a window of 64 (and once the seq numbers wrapped, as
    // in the run the issue describes).
    let base = 65_536 - 100;
    for i in 0..base {
        run.log_later(0, 9, map_event(0x9000 + i, 0x9000 + i));
    }
    for i in 0..base {
        run.tag(i);
    }
    let late = run.log_later(1, 2, map_event(0x20, 0x200));
    let mut cpu0 = Vec::new();
    for i in 0..300 {
        cpu0.push(run.log_later(0, 1, map_event(0x1000 + i, 0x1000 + i)));
    }
    for &s in &cpu0 {
        run.tag(s);
    }
    run.access(0, false, 0x200 * PAGE);
    run.tag(late);
    run.access(0, false, 0x1000 * PAGE);
    let mut r = Replayer::new(&run.log, ReplayFilter::default()).with_tag_window(64);
    let mut got = Vec::new();
    r.run(&run.trace[..], &mut |v| got.push(*v));
    let rep = r.report;
    // Given up as lost once the window moved 64 past it: applied there,
    // before the reference, and counted once.
    assert_eq!(
        owners(&got),
        vec![Some((2, 0x20 * PAGE)), Some((1, 0x1000 * PAGE))]
    );
    assert_eq!(rep.unplaced_count, 1);
    assert_eq!(rep.lost_tags, 1);
    assert!(matches!(
        rep.unplaced[0],
        Unplaced::LostTag { seq, .. } if seq == late
    ));
    assert_eq!(rep.tags_late, 1);
    assert_eq!(rep.tags_without_record, 0);
    assert_eq!(rep.records_placed(), run.log.len() as u64 - 1);
    // The default window (4096) places the same tag: nothing lost.
    let (got, rep) = replay(&run, ReplayFilter::default());
    assert_eq!(owners(&got), vec![None, Some((1, 0x1000 * PAGE))]);
    assert_eq!((rep.unplaced_count, rep.tags_late), (0, 0));
    assert_eq!(rep.tags_reordered, 1);
}

#[test]
fn the_unattributed_share_and_its_default_threshold() {
    // No SWITCH records: the share is of the references to frames a traced
    // process maps (the kernel's own are not counted), and no default
    // threshold applies.
    let mut run = Run::default();
    run.map(1, 0x10, 0x100);
    run.access(0, false, 0x100 * PAGE);
    run.access(0, false, 0x900 * PAGE);
    run.access(0, false, 0x901 * PAGE);
    // Process 2 maps the frame too: nobody runs, decided by rule.
    run.map(2, 0x10, 0x100);
    run.access(0, false, 0x100 * PAGE);
    let (_, rep) = replay(&run, ReplayFilter::default());
    assert!(!rep.switches);
    assert_eq!((rep.attributable, rep.unattributed_attributable), (2, 1));
    assert_eq!(rep.unattributed_percent(), 50.0);
    assert_eq!(rep.unattributed(), 3);
    assert_eq!(rep.unattributed_limit(None), None);
    assert_eq!(rep.unattributed_limit(Some(10.0)), Some(10.0));
    // With SWITCH records: of those made while a traced process ran; the
    // default applies.
    // Process 1 runs: the frames both map are its, for certain; the
    // unmapped frame is not counted.
    run.map(2, 0x11, 0x101);
    run.map(1, 0x11, 0x101);
    run.switch(0, 0, 1);
    run.access(0, false, 0x100 * PAGE);
    run.access(0, false, 0x902 * PAGE);
    run.access(0, false, 0x101 * PAGE);
    run.switch(0, 1, 0);
    run.access(0, false, 0x101 * PAGE);
    run.access(0, false, 0x903 * PAGE);
    let (_, rep) = replay(&run, ReplayFilter::default());
    assert_eq!((rep.while_traced, rep.unattributed_while_traced), (3, 1));
    assert_eq!((rep.attributable, rep.unattributed_attributable), (2, 0));
    assert_eq!(rep.unattributed_percent(), 0.0);
    assert_eq!(rep.unattributed(), 6);
    assert_eq!(rep.unattributed_limit(None), Some(DEFAULT_MAX_UNATTRIBUTED));
}

fn cpu_area(frame: u64, owner: u16) -> Event {
    Event::CpuArea {
        frame,
        frames: 1,
        owner,
        area: Name::new("cpu-entry-area"),
    }
}

/// Two processes share a frame and run at once on two CPUs; references
/// to each CPU's own frames (its CPU_AREA) tell who made the shared
/// references between them.
fn shared_frame_between_cpu_area_references(with_areas: bool) -> Run {
    let mut run = Run::default();
    run.switch(0, 0, 1);
    run.switch(1, 0, 2);
    run.map(1, 0x40, 0x300);
    run.map(2, 0x80, 0x300);
    if with_areas {
        run.log_cpu(0, 0, cpu_area(0x900, 0));
        run.log_cpu(1, 0, cpu_area(0x901, 1));
    }
    for (cpu_frame, offsets) in [(0x901, [0x0, 0x40]), (0x900, [0x80, 0xc0])] {
        run.access(0, false, cpu_frame * PAGE);
        for off in offsets {
            run.access(0, true, 0x300 * PAGE + off);
        }
        run.access(0, false, cpu_frame * PAGE + 0x40);
    }
    run
}

#[test]
fn a_cpus_own_frames_tell_which_process_made_a_shared_reference() {
    let (got, rep) = replay(
        &shared_frame_between_cpu_area_references(true),
        ReplayFilter::default(),
    );
    let shared: Vec<_> = got
        .iter()
        .filter(|v| v.pa >> 12 == 0x300)
        .map(|v| v.owner)
        .collect();
    assert_eq!(
        shared,
        vec![
            Some((2, 0x80 * PAGE)),
            Some((2, 0x80 * PAGE + 0x40)),
            Some((1, 0x40 * PAGE + 0x80)),
            Some((1, 0x40 * PAGE + 0xc0)),
        ]
    );
    assert_eq!(rep.ambiguous_count(Ambiguity::ByCpu), 4);
    assert_eq!(rep.unplaced_count, 0);
    assert_eq!((rep.cpu_area_frames, rep.cpu_area_cpus), (2, 2));
    // Without the records nothing tells the CPU: other rules decide.
    let (_, without) = replay(
        &shared_frame_between_cpu_area_references(false),
        ReplayFilter::default(),
    );
    assert_eq!(without.ambiguous_count(Ambiguity::ByCpu), 0);
}
