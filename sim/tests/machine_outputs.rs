//! `SimOutput::write_dir` writes files every reader of the project takes
//! back unchanged: command text, capture files, kernel log, ground truth,
//! events file.

use hmtt_format::capture::{CaptureEnd, CaptureReader, SourceKind};
use hmtt_format::command::CommandReader;
use hmtt_format::klog;
use hmtt_format::truth;
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::outdir::files;
use hmtt_sim::workload::Workload;

#[test]
fn every_output_file_reads_back() {
    let cfg = SimConfig::default()
        .workload(Workload::mix(8 << 10))
        .boards(2)
        .ports(3);
    let out = simulate(&cfg).unwrap();
    let dir = tempfile::tempdir().unwrap();
    out.write_dir(dir.path(), true).unwrap();

    for (b, cmds) in out.commands.iter().enumerate() {
        let name = files::commands(b);
        let text = std::fs::read(dir.path().join(&name)).unwrap();
        let back: Vec<_> = CommandReader::new(&text[..], name)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(&back, cmds);
    }

    for (cfg_b, packets) in out.board_configs.iter().zip(&out.packets) {
        let mut seen = 0;
        for port in 0..cfg_b.ports {
            let data =
                std::fs::read(dir.path().join(files::capture(cfg_b.board_id, port))).unwrap();
            let (header, mut reader) = CaptureReader::new(&data).unwrap();
            assert_eq!((header.board, header.port), (cfg_b.board_id, port));
            assert_eq!(header.source_kind, SourceKind::Simulation);
            assert_eq!(header.geometry, Some(cfg_b.geometry));
            assert_eq!(header.tick_ps, cfg_b.tick_ps);
            let recs: Vec<_> = reader.by_ref().collect();
            assert_eq!(reader.end(), Some(CaptureEnd::Clean));
            let want: Vec<&[u8]> = packets
                .iter()
                .filter(|p| p.port == port)
                .map(|p| &p.bytes[..])
                .collect();
            let got: Vec<&[u8]> = recs.iter().map(|r| r.packet).collect();
            assert_eq!(got, want);
            assert!(recs.windows(2).all(|w| w[0].recv_ns <= w[1].recv_ns));
            seen += recs.len();
        }
        assert_eq!(seen, packets.len());
    }

    let log = std::fs::read(dir.path().join(files::KLOG)).unwrap();
    let (header, records) = klog::parse_file(&log).unwrap();
    assert_eq!(header.start_ns, cfg.wall_start_ns);
    let back: Vec<_> = records.collect::<Result<_, _>>().unwrap();
    assert_eq!(back, out.klog);

    let t = std::fs::read(dir.path().join(files::TRUTH)).unwrap();
    let (h, rows) = truth::read_binary(&t).unwrap();
    assert_eq!((h.boards, h.tick_ps), (2, out.tick_ps));
    assert_eq!(rows, out.truth);
    let csv = std::fs::read_to_string(dir.path().join(files::TRUTH_CSV)).unwrap();
    assert_eq!(csv.lines().count(), out.truth.len() + 1);
    assert_eq!(csv.lines().next(), Some(truth::CSV_HEADER));

    let events = std::fs::read_to_string(dir.path().join(files::EVENTS)).unwrap();
    assert!(events.starts_with("[events]\n"));
    for (name, index) in &out.events {
        assert!(events.contains(&format!("{name} = {index}\n")));
    }
    assert!(!out.events.is_empty());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(files::SUMMARY)).unwrap())
            .unwrap();
    assert_eq!(summary["truth_records"], out.truth.len());
}
