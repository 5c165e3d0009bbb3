//! `hmtt board` on small command files: files, summary, errors, options.

use super::*;
use std::path::PathBuf;

use clap::Parser;
use hmtt_board_model::DrainRate;
use hmtt_firmware::Board as Core;
use hmtt_format::capture::CaptureReader;
use hmtt_format::geometry::Geometry;
use hmtt_format::packet::Packet;
use hmtt_format::record::BoardEvent;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hmtt-board-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn args(extra: &[&str]) -> Args {
    let mut v = vec!["hmtt-board"];
    v.extend_from_slice(extra);
    Cli::try_parse_from(v).unwrap().args
}

#[test]
fn writes_one_capture_per_port_and_a_summary() {
    let dir = scratch("ok");
    let cmds = dir.join("cmds.txt");
    let mut text = String::from("# a tiny stream\n0 ACT 0 1 0x55\n");
    for i in 0..40u64 {
        text.push_str(&format!("{} RD 0 1 {}\n", 5 + i * 7, (i % 128) * 8));
        text.push_str(&format!("{} REF\n", 6 + i * 7));
    }
    text.push_str("400 CKE 0 0 0\n");
    std::fs::write(&cmds, text).unwrap();
    let out = dir.join("out");
    run(args(&[
        "--commands",
        cmds.to_str().unwrap(),
        "--ports",
        "2",
        "--max-words",
        "8",
        "--out",
        out.to_str().unwrap(),
    ]))
    .unwrap();
    let mut events = vec![];
    let mut seqs = vec![];
    for port in 0..2u8 {
        let data = std::fs::read(out.join(format!("board0-port{port}.hmttcap"))).unwrap();
        let (h, r) = CaptureReader::new(&data).unwrap();
        assert_eq!(h.port, port);
        assert_eq!(h.source_kind, hmtt_format::capture::SourceKind::Simulation);
        assert_eq!(h.geometry, Some(Geometry::ddr3_default()));
        for rec in r {
            let p = Packet::new_checked(rec.packet).unwrap();
            assert_eq!(p.port(), port);
            seqs.push(p.seq());
            events.extend(p.events().map(|e| (p.seq(), e.unwrap())));
        }
    }
    seqs.sort();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    events.sort_by_key(|e| e.0);
    let ticks: Vec<u64> = events.iter().map(|e| e.1.tick).collect();
    assert_eq!(ticks, (0..40).map(|i| 5 + i * 7).collect::<Vec<_>>());
    assert!(matches!(
        events[0].1.event,
        BoardEvent::Access { write: false, .. }
    ));
    let summary = std::fs::read_to_string(out.join("board0-summary.json")).unwrap();
    assert!(summary.contains("\"unknown_commands\": 1"), "{summary}");
    assert!(summary.contains("\"references\": 40"), "{summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn malformed_file_names_the_file_and_line() {
    let dir = scratch("bad");
    let cmds = dir.join("bad.txt");
    std::fs::write(&cmds, "0 ACT 0 0 1\n\n3 RD 0 zero 8\n").unwrap();
    let e = run(args(&[
        "--commands",
        cmds.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]))
    .unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains(&format!("{}:3", cmds.display())), "{msg}");
    assert!(msg.contains("bank 'zero' is not a number"), "{msg}");
    let e = run(args(&[
        "--commands",
        dir.join("missing.txt").to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]))
    .unwrap_err();
    assert!(format!("{e:#}").contains("missing.txt"), "{e:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_core_gives_its_configuration_and_refuses_its_build_parameters() {
    let with = |extra: &[&str]| {
        let mut v = vec!["--commands", "x", "--out", "o"];
        v.extend_from_slice(extra);
        let a = args(&v);
        let core = core(&a);
        config(&a, core.as_ref()).map(|c| (core.map(|c| c.board), c))
    };
    let (core, cfg) = with(&["--core", "ice40-hx8k"]).unwrap();
    assert_eq!(core, Some(Core::Ice40Hx8k));
    let spec = CoreSpec::of(Core::Ice40Hx8k);
    assert_eq!(cfg, spec.board_config());
    assert_eq!(cfg.geometry, Geometry::preset("ddr-512m").unwrap());
    // The Verilator engine runs the ECP5 core unless told otherwise.
    let (core, cfg) = with(&["--engine", "verilator"]).unwrap();
    assert_eq!(core, Some(Core::Ecp5_85f));
    assert_eq!(cfg, CoreSpec::of(Core::Ecp5_85f).board_config());
    // Run-time constants change; the line rate follows the packet size.
    let (_, cfg) = with(&[
        "--core",
        "ecp5-85f",
        "--max-words",
        "100",
        "--board-id",
        "3",
    ])
    .unwrap();
    assert_eq!((cfg.max_words, cfg.board_id), (100, 3));
    assert_eq!(cfg.drain, DrainRate::line_rate(cfg.ports, 100, cfg.tick_ps));
    for bad in [
        &["--core", "ice40-hx8k", "--ports", "3"][..],
        &["--core", "ice40-hx8k", "--max-words", "600"],
        &["--core", "ecp5-85f", "--fifo-depth", "4096"],
        &["--core", "ecp5-85f", "--tags-only"],
        &["--engine", "verilator", "--refs-per-clock", "1"],
    ] {
        let e = with(bad).map(|_| ()).unwrap_err();
        assert!(
            format!("{e:#}").contains("core cannot run this"),
            "{bad:?}: {e:#}"
        );
    }
}

#[test]
fn options_shape_the_board() {
    let a = args(&[
        "--commands",
        "x",
        "--geometry",
        "ddr4-64g",
        "--drain",
        "1/7",
        "--config-window",
        "3,100,2",
        "--board-id",
        "4",
        "--tracing-off",
        "--out",
        "o",
    ]);
    let cfg = config(&a, None).unwrap();
    assert_eq!(cfg.drain, DrainRate { num: 1, den: 7 });
    assert_eq!(
        (cfg.window.rank, cfg.window.row_first, cfg.window.row_count),
        (3, 100, 2)
    );
    assert_eq!(cfg.board_id, 4);
    assert!(!cfg.start_tracing);
    // 1/7 word per tick would be 8/7 per clock at 8 lanes: 4 lanes.
    assert_eq!((cfg.lanes, cfg.refs_per_clock), (4, 3));
    let bad = args(&["--commands", "x", "--drain", "7/7", "--out", "o"]);
    assert!(config(&bad, None).is_err());
    let lanes = |extra: &[&str]| {
        let mut v = vec!["--commands", "x", "--out", "o"];
        v.extend_from_slice(extra);
        config(&args(&v), None).map(|c| (c.lanes, c.refs_per_clock))
    };
    assert_eq!(lanes(&[]).unwrap(), (8, 3));
    assert_eq!(
        lanes(&["--lanes", "4", "--refs-per-clock", "2"]).unwrap(),
        (4, 2)
    );
    assert_eq!(lanes(&["--lanes", "2"]).unwrap(), (2, 2));
    // DDR-200 with 3 ports: 0.88 words per tick, one lane by default;
    // 8 lanes would pop 7 words per clock.
    assert_eq!(lanes(&["--tick-ps", "10000"]).unwrap(), (1, 1));
    assert!(lanes(&["--tick-ps", "10000", "--lanes", "8"]).is_err());
    assert!(lanes(&["--lanes", "3"]).is_err());
    assert!(lanes(&["--lanes", "4", "--refs-per-clock", "5"]).is_err());
    let range = args(&[
        "--commands",
        "x",
        "--config-base",
        "0x10000000",
        "--out",
        "o",
    ]);
    let cfg = config(&range, None).unwrap();
    let g = Geometry::ddr3_default();
    assert_eq!(cfg.window.first_line(&g), 0x1000_0000 / 64);
}
