//! Reassembly, multi-board merge and fault handling on synthetic captures
//! whose content is known event by event.

use hmtt_format::capture::CaptureEnd;
use hmtt_format::record::{BoardEvent, TimedEvent};
use hmtt_format::trace::{RecordKind, TraceRecord, TraceView};
use hmtt_format::{AddressMapping, Geometry};
use hmtt_merge::synth::{self, SynthPacket};
use hmtt_merge::{merge, CaptureSet, MergeError, MergeOptions, MergeReport, VecSink};

const TICK_PS: u16 = 1250;
const SKEW: u64 = hmtt_merge::input::DEFAULT_MAX_START_SKEW_NS;

fn record_of(board: u8, e: &TimedEvent, m: &AddressMapping) -> TraceRecord {
    match e.event {
        BoardEvent::Access { line, write } => {
            TraceRecord::access(e.tick, board, write, m.pa_of(line))
        }
        BoardEvent::Tag { event, write } => {
            TraceRecord::new(e.tick, board, RecordKind::Tag { write }, u64::from(event))
        }
        BoardEvent::Cmd { code } => {
            TraceRecord::new(e.tick, board, RecordKind::Cmd, u64::from(code))
        }
        BoardEvent::Lost { count } => {
            TraceRecord::new(e.tick, board, RecordKind::Lost, u64::from(count))
        }
    }
}

/// Events of the packets kept (by seq), as records.
fn expected(
    board: u8,
    events: &[TimedEvent],
    packets: &[SynthPacket],
    keep: impl Fn(u64) -> bool,
) -> Vec<TraceRecord> {
    let m = AddressMapping::linear(Geometry::ddr3_default());
    let mut out = Vec::new();
    let mut at = 0;
    for p in packets {
        if keep(p.seq) {
            out.extend(
                events[at..at + p.events]
                    .iter()
                    .map(|e| record_of(board, e, &m)),
            );
        }
        at += p.events;
    }
    assert_eq!(at, events.len());
    out
}

fn without_gaps(v: &[TraceRecord]) -> Vec<TraceRecord> {
    v.iter()
        .copied()
        .filter(|r| !matches!(r.kind(), RecordKind::GapBegin | RecordKind::GapEnd))
        .collect()
}

fn run(files: Vec<Vec<u8>>) -> Result<(MergeReport, Vec<TraceRecord>), MergeError> {
    let named = files
        .into_iter()
        .enumerate()
        .map(|(i, f)| (format!("port{i}.hmttcap"), f))
        .collect();
    let set = CaptureSet::from_memory(named, SKEW)?;
    let mut sink = VecSink::default();
    let report = merge(&set, &MergeOptions::default(), &mut sink, &mut |_| {})?;
    Ok((report, sink.0))
}

fn board_files(
    board: u8,
    seed: u64,
    n: usize,
    ports: u8,
) -> (Vec<TimedEvent>, Vec<SynthPacket>, Vec<Vec<u8>>) {
    let g = Geometry::ddr3_default();
    let events = synth::workload(seed, n, g);
    let packets = synth::packets(board, g, TICK_PS, 360, &events);
    let files = synth::deal(
        &synth::capture_header(board, 0, g, TICK_PS),
        ports,
        &packets,
    );
    (events, packets, files)
}

#[test]
fn one_board_three_ports_is_exact() {
    let (events, packets, files) = board_files(0, 1, 50_000, 3);
    assert!(packets.len() > 100);
    let (report, got) = run(files).unwrap();
    assert_eq!(got, expected(0, &events, &packets, |_| true));
    assert!(
        report.is_clean() || report.boards[0].references_lost > 0,
        "{report}"
    );
    assert_eq!(report.packets(), packets.len() as u64);
    assert_eq!(report.packets_missing(), 0);
    assert_eq!(report.records, got.len() as u64);
}

#[test]
fn two_boards_interleave_by_time() {
    let (ev0, p0, mut files) = board_files(0, 2, 30_000, 3);
    let (ev1, p1, files1) = board_files(1, 3, 30_000, 3);
    files.extend(files1);
    let (report, got) = run(files).unwrap();
    let mut want = expected(0, &ev0, &p0, |_| true);
    want.extend(expected(1, &ev1, &p1, |_| true));
    // Stable sort: each board keeps its order; ties go to board 0.
    want.sort_by_key(|r| (r.tick, r.board()));
    assert_eq!(got.len(), want.len());
    assert!(got.windows(2).all(|w| w[0].tick <= w[1].tick));
    assert_eq!(got, want);
    assert_eq!(report.boards.len(), 2);
}

fn drop_packets(files: &[Vec<u8>], ports: u8, drop: impl Fn(u64) -> bool) -> Vec<Vec<u8>> {
    rebuild(files, ports, |seq, pkt, out| {
        if !drop(seq) {
            out.push(pkt.to_vec());
        }
    })
}

/// Rewrites each port file through `f(seq, packet, out)`.
fn rebuild(
    files: &[Vec<u8>],
    _ports: u8,
    mut f: impl FnMut(u64, &[u8], &mut Vec<Vec<u8>>),
) -> Vec<Vec<u8>> {
    files
        .iter()
        .map(|file| {
            let (h, reader) = hmtt_format::capture::CaptureReader::new(file).unwrap();
            let mut pkts = Vec::new();
            for r in reader {
                let seq = hmtt_format::Packet::new_checked(r.packet).unwrap().seq();
                f(seq, r.packet, &mut pkts);
            }
            let mut out = h.emit().to_vec();
            for (i, p) in pkts.iter().enumerate() {
                synth::append_record(&mut out, i as u64, p).unwrap();
            }
            out
        })
        .collect()
}

#[test]
fn dropped_packets_are_reported_exactly_and_the_rest_matches() {
    let (events, packets, files) = board_files(0, 4, 40_000, 3);
    let dropped = [0u64, 7, 8, 9, 50, 51, 100, packets.len() as u64 - 2];
    let files = drop_packets(&files, 3, |s| dropped.contains(&s));
    let (report, got) = run(files).unwrap();
    let gaps: Vec<(u64, u64)> = report.boards[0]
        .gaps
        .iter()
        .map(|g| (g.first_seq, g.last_seq))
        .collect();
    let last = packets.len() as u64 - 2;
    assert_eq!(
        gaps,
        vec![(0, 0), (7, 9), (50, 51), (100, 100), (last, last)]
    );
    assert_eq!(report.packets_missing(), dropped.len() as u64);
    assert_eq!(
        without_gaps(&got),
        expected(0, &events, &packets, |s| !dropped.contains(&s))
    );
    // Each gap's window is the time between its neighbours.
    let g = &report.boards[0].gaps[2];
    let before = packets[49].bytes.clone();
    let after = hmtt_format::Packet::new_checked(&packets[52].bytes[..]).unwrap();
    assert!(g.from_tick >= hmtt_format::Packet::new_checked(&before[..]).unwrap().t0());
    assert_eq!(g.to_tick, after.t0());
    let markers: Vec<_> = got
        .iter()
        .filter(|r| r.kind() == RecordKind::GapBegin)
        .map(|r| r.value())
        .collect();
    assert_eq!(markers, vec![1, 3, 2, 1, 1]);
    assert!(report.to_string().contains("seq 7..=9 (3 packets)"));
}

#[test]
fn a_packet_with_a_damaged_geometry_or_tick_is_rejected_not_fatal() {
    let (events, packets, mut files) = board_files(0, 6, 30_000, 3);
    // Packet seq 20 (port 2) gets another row count, seq 31 (port 1) another
    // tick length: bit flips in flight, not another run.
    for (seq, offset, value) in [(20u64, 26usize, 17u8), (31, 30, 0xc5)] {
        let file = &mut files[(seq % 3) as usize];
        let (_, reader) = hmtt_format::capture::CaptureReader::new(file).unwrap();
        let at = reader
            .map(|r| {
                (
                    r.offset,
                    hmtt_format::Packet::new_checked(r.packet).unwrap().seq(),
                )
            })
            .find(|&(_, s)| s == seq)
            .unwrap()
            .0;
        file[at + 16 + offset] = value;
    }
    let (report, got) = run(files).unwrap();
    assert_eq!(report.packets_rejected(), 2, "{report}");
    let gaps: Vec<(u64, u64)> = report.boards[0]
        .gaps
        .iter()
        .map(|g| (g.first_seq, g.last_seq))
        .collect();
    assert_eq!(gaps, vec![(20, 20), (31, 31)]);
    assert_eq!(
        without_gaps(&got),
        expected(0, &events, &packets, |s| s != 20 && s != 31)
    );
    let text = report.to_string();
    assert!(text.contains("geometry"), "{text}");
    assert!(text.contains("tick"), "{text}");
}

#[test]
fn duplicates_are_dropped_and_counted() {
    let (events, packets, files) = board_files(0, 5, 20_000, 3);
    let files = rebuild(&files, 3, |seq, pkt, out| {
        out.push(pkt.to_vec());
        if seq % 10 == 3 {
            out.push(pkt.to_vec());
        }
    });
    let dups = packets.iter().filter(|p| p.seq % 10 == 3).count() as u64;
    let (report, got) = run(files).unwrap();
    assert_eq!(report.packets_duplicate(), dups);
    assert_eq!(report.packets_missing(), 0);
    assert_eq!(got, expected(0, &events, &packets, |_| true));
}

#[test]
fn reordered_packets_are_put_back() {
    let (events, packets, files) = board_files(0, 6, 30_000, 3);
    // Within each port, swap neighbours and move some packets 10 places on.
    let files = rebuild(&files, 3, |_, pkt, out| out.push(pkt.to_vec()))
        .into_iter()
        .map(|f| {
            let (h, r) = hmtt_format::capture::CaptureReader::new(&f).unwrap();
            let mut pkts: Vec<Vec<u8>> = r.map(|r| r.packet.to_vec()).collect();
            for i in (0..pkts.len() - 1).step_by(4) {
                pkts.swap(i, i + 1);
            }
            if pkts.len() > 30 {
                let p = pkts.remove(5);
                pkts.insert(15, p);
            }
            let mut out = h.emit().to_vec();
            for p in &pkts {
                synth::append_record(&mut out, 0, p).unwrap();
            }
            out
        })
        .collect();
    let (report, got) = run(files).unwrap();
    assert_eq!(report.packets_missing(), 0, "{report}");
    assert_eq!(report.packets_duplicate(), 0);
    assert_eq!(got, expected(0, &events, &packets, |_| true));
}

#[test]
fn a_truncated_file_loses_only_its_tail() {
    let (events, packets, mut files) = board_files(0, 7, 30_000, 3);
    // Cut port 1's file in the middle of a record.
    let (_, reader) = hmtt_format::capture::CaptureReader::new(&files[1]).unwrap();
    let recs: Vec<_> = reader.map(|r| (r.offset, r.packet.len())).collect();
    let (cut_at, len) = recs[recs.len() / 2];
    let kept_on_port1 = (recs.len() / 2) as u64;
    files[1].truncate(cut_at + 16 + len / 2);
    let leftover = 16 + len / 2;
    let (report, got) = run(files).unwrap();
    let b = &report.boards[0];
    assert_eq!(b.file_damage.len(), 1);
    assert_eq!(
        b.file_damage[0].end,
        CaptureEnd::Truncated {
            offset: cut_at,
            leftover
        }
    );
    let lost = |s: u64| s % 3 == 1 && s / 3 >= kept_on_port1;
    let want_missing = packets.iter().filter(|p| lost(p.seq)).count() as u64;
    // Port 1's packets after the cut are gaps, except a last one past the
    // other ports' end, which no one can see missing.
    let last = packets.len() as u64 - 1;
    let visible = want_missing - u64::from(lost(last));
    assert_eq!(report.packets_missing(), visible);
    assert!(b
        .gaps
        .iter()
        .all(|g| g.first_seq == g.last_seq && lost(g.first_seq)));
    assert_eq!(
        without_gaps(&got),
        expected(0, &events, &packets, |s| !lost(s))
    );
    assert!(report.to_string().contains("is cut short"));
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let g = Geometry::ddr3_default();
    let (_, _, files) = board_files(0, 8, 2_000, 2);
    // Not a capture.
    let e = run(vec![
        b"hello, this is not a capture file at all........................".to_vec(),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("not a usable capture file"), "{e}");
    // The cause is the error's source, given once: not in its message too.
    let e = run(vec![vec![]]).unwrap_err();
    let cause = std::error::Error::source(&e).map(|c| c.to_string());
    assert!(
        e.to_string().ends_with("not a usable capture file")
            && cause.as_deref().is_some_and(|c| c.contains("too short")),
        "{e}: {cause:?}"
    );
    assert!(matches!(run(vec![]), Err(MergeError::NoInput)));
    // A file header that disagrees with its packets' geometry.
    let mut f = files[0].clone();
    let mut h = synth::capture_header(0, 0, Geometry::preset("ddr2-2g").unwrap(), TICK_PS);
    h.port = 0;
    f[..64].copy_from_slice(&h.emit());
    let e = run(vec![f]).unwrap_err();
    assert!(matches!(e, MergeError::WrongGeometry { .. }), "{e}");
    assert!(e.to_string().contains("geometry"));
    // Two boards with different geometries.
    let ev = synth::workload(9, 1000, Geometry::preset("ddr2-2g").unwrap());
    let other = synth::packets(1, Geometry::preset("ddr2-2g").unwrap(), TICK_PS, 360, &ev);
    let other = synth::deal(
        &synth::capture_header(1, 0, Geometry::preset("ddr2-2g").unwrap(), TICK_PS),
        1,
        &other,
    );
    let e = run(vec![files[0].clone(), other[0].clone()]).unwrap_err();
    assert!(matches!(e, MergeError::MixedRuns(_)), "{e}");
    // Different tick lengths.
    let ev = synth::workload(9, 1000, g);
    let other = synth::packets(1, g, 2500, 360, &ev);
    let other = synth::deal(&synth::capture_header(1, 0, g, 2500), 1, &other);
    let e = run(vec![files[0].clone(), other[0].clone()]).unwrap_err();
    assert!(e.to_string().contains("tick"), "{e}");
    // Start times an hour apart.
    let mut late = files[1].clone();
    let mut h = synth::capture_header(0, 1, g, TICK_PS);
    h.start_ns += 3600 * 1_000_000_000;
    late[..64].copy_from_slice(&h.emit());
    let e = run(vec![files[0].clone(), late]).unwrap_err();
    assert!(e.to_string().contains("apart"), "{e}");
    // The same port and stripe twice.
    let e = run(vec![files[0].clone(), files[0].clone()]).unwrap_err();
    assert!(e.to_string().contains("both stripe 0"), "{e}");
    // Garbage packets inside a valid file are counted, not fatal.
    let mut f = files[0].clone();
    synth::append_record(&mut f, 0, &[0u8; 40]).unwrap();
    let (report, _) = run(vec![f, files[1].clone()]).unwrap();
    assert_eq!(report.packets_rejected(), 1);
}

#[test]
fn every_prefix_of_a_file_merges_without_panic() {
    let (_, _, files) = board_files(0, 10, 3_000, 1);
    let f = &files[0];
    for cut in (0..f.len()).step_by(97) {
        let _ = run(vec![f[..cut].to_vec()]);
    }
    // Random bytes after a valid header are reported, never a panic.
    let mut rng = synth::Rng(99);
    for _ in 0..50 {
        let mut g = f.clone();
        for _ in 0..20 {
            let i = 64 + rng.below((g.len() - 64) as u64) as usize;
            g[i] = rng.next_u64() as u8;
        }
        let _ = run(vec![g]);
    }
}

#[test]
fn the_trace_file_round_trips_and_seeks() {
    let (events, packets, files) = board_files(0, 11, 20_000, 3);
    let set = CaptureSet::from_memory(
        files
            .into_iter()
            .enumerate()
            .map(|(i, f)| (format!("p{i}"), f))
            .collect(),
        SKEW,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.hmtttrace");
    let mut w = hmtt_merge::TraceWriter::create(&path).unwrap();
    let report = merge(&set, &MergeOptions::default(), &mut w, &mut |_| {}).unwrap();
    let names = hmtt_format::events::EventNames::from_iter(vec![(0x40, "start".into())]);
    w.finish(&report, set.geometry, set.start_ns, &names)
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let v = TraceView::new_checked(&bytes).unwrap();
    let want = expected(0, &events, &packets, |_| true);
    assert!(v.records().eq(want.iter().copied()));
    assert_eq!(v.header().packets, packets.len() as u64);
    assert_eq!(v.header().common.tick_ps, TICK_PS);
    assert_eq!(v.names().name_of(0x40), Some("start"));
    assert!(v.index().count() > 1);
    let t = want[want.len() / 3].tick;
    assert_eq!(
        v.seek_tick(t),
        want.iter().position(|r| r.tick >= t).unwrap()
    );
}

#[test]
fn a_hashed_mapping_gives_physical_addresses() {
    let g = Geometry::ddr3_default();
    let toml = r#"
version = 1
kind = "xor"
col_line = [[6], [7], [8], [9], [10], [11], [12]]
bank = [[13, 17], [14, 18], [15, 19]]
row = [[16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30]]
rank = [[31]]
"#;
    let m = AddressMapping::from_toml(toml, g).unwrap();
    let pas = [0x1234_5640u64, 0x8000_0000, 0xdead_bec0, 0x40];
    let events: Vec<TimedEvent> = pas
        .iter()
        .enumerate()
        .map(|(i, &pa)| TimedEvent {
            tick: i as u64 * 10,
            event: BoardEvent::Access {
                line: m.line_of(pa).unwrap(),
                write: false,
            },
        })
        .collect();
    let packets = synth::packets(0, g, TICK_PS, 360, &events);
    let files = synth::deal(&synth::capture_header(0, 0, g, TICK_PS), 1, &packets);
    let set = CaptureSet::from_memory(vec![("p".into(), files[0].clone())], SKEW).unwrap();
    let mut sink = VecSink::default();
    let opts = MergeOptions {
        mapping_toml: Some(toml.into()),
        ..Default::default()
    };
    merge(&set, &opts, &mut sink, &mut |_| {}).unwrap();
    let got: Vec<u64> = sink.0.iter().map(|r| r.pa()).collect();
    assert_eq!(got, pas);
}
