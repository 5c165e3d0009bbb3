//! Trace-file workloads: the `R|W <address>` and Valgrind lackey parsers,
//! their errors (naming file and line), and a trace run end to end.

mod machine_common;

use hmtt_format::truth::RefKind;
use hmtt_sim::machine::{simulate, SimConfig};
use hmtt_sim::workload::{
    parse_trace, parse_trace_opts, read_trace, Op, TraceFormat, Workload, WorkloadError,
};
use machine_common::*;
use std::io::Write;

fn access(pid: u32, vaddr: u64, write: bool, size: u32) -> Op {
    Op::Access {
        pid,
        vaddr,
        write,
        size,
    }
}

#[test]
fn read_write_lines() {
    let text = "R 0x1000\nW 4096 16   # a store\n\n# comment\nr 0x2000 8 77\nw 10 1 77\n";
    let ops = parse_trace(text, TraceFormat::ReadWrite, "t.txt").unwrap();
    assert_eq!(
        ops,
        vec![
            Op::Exec {
                pid: 1000,
                name: "trace".into()
            },
            access(1000, 0x1000, false, 8),
            access(1000, 4096, true, 16),
            Op::Exec {
                pid: 77,
                name: "trace".into()
            },
            access(77, 0x2000, false, 8),
            access(77, 10, true, 1),
            Op::Exit { pid: 1000 },
            Op::Exit { pid: 77 },
        ]
    );
}

#[test]
fn malformed_read_write_lines_name_file_and_line() {
    let cases = [
        ("R 1\nX 0x10\n", "t.txt:2: expected R or W, found 'X'"),
        ("R zz\n", "t.txt:1: address 'zz' is not a number"),
        ("\n\nW\n", "t.txt:3: missing address"),
        ("R 1 0\n", "t.txt:1: size '0' is not in 1..=1048576"),
        (
            "R 1 8 1 extra\n",
            "t.txt:1: unexpected trailing text 'extra'",
        ),
        ("R 1 8 -3\n", "t.txt:1: pid '-3' is not a 32-bit number"),
    ];
    for (text, want) in cases {
        let e = parse_trace(text, TraceFormat::ReadWrite, "t.txt").unwrap_err();
        assert!(matches!(e, WorkloadError::Parse { .. }));
        assert_eq!(e.to_string(), want);
    }
}

const LACKEY: &str = "==12345== Lackey, an example Valgrind tool
==12345== Command: ./a.out
I  04011f8,3
 S 7ff000398,8
I  04011fb,4
 L 04b1e70,8
 M 7ff0003a8,4
==12345== 
";

#[test]
fn lackey_loads_stores_and_modifies() {
    let ops = parse_trace(LACKEY, TraceFormat::Lackey, "l.txt").unwrap();
    assert_eq!(
        ops,
        vec![
            Op::Exec {
                pid: 1000,
                name: "trace".into()
            },
            access(1000, 0x7ff000398, true, 8),
            access(1000, 0x04b1e70, false, 8),
            access(1000, 0x7ff0003a8, false, 4),
            access(1000, 0x7ff0003a8, true, 4),
            Op::Exit { pid: 1000 },
        ]
    );
    let with_i = parse_trace_opts(LACKEY, TraceFormat::Lackey, "l.txt", true).unwrap();
    assert_eq!(with_i[1], access(1000, 0x04011f8, false, 3));
    assert_eq!(with_i.len(), ops.len() + 2);
}

#[test]
fn malformed_lackey_lines_name_file_and_line() {
    let cases = [
        (
            " L 04b1e70\n",
            "l.txt:1: expected '<kind> <hex address>,<size>', found 'L 04b1e70'",
        ),
        (
            "I  04011f8,3\n L zz,8\n",
            "l.txt:2: address 'zz' is not hexadecimal",
        ),
        (
            " X 10,8\n",
            "l.txt:1: unknown lackey record 'X' (expected I, L, S or M)",
        ),
        (" S 10,0\n", "l.txt:1: size '0' is not a positive number"),
        (" S 10,x\n", "l.txt:1: size 'x' is not a positive number"),
    ];
    for (text, want) in cases {
        let e = parse_trace(text, TraceFormat::Lackey, "l.txt").unwrap_err();
        assert_eq!(e.to_string(), want);
    }
}

#[test]
fn trace_files_are_read_guessed_and_simulated_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prog.lackey");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(LACKEY.as_bytes()).unwrap();
    // A few thousand more references over 40 pages.
    for i in 0..4000u64 {
        let kind = ["L", "S", "M"][(i % 3) as usize];
        writeln!(f, " {kind} {:x},8", 0x7fe000000 + (i * 40) % (40 * 4096)).unwrap();
    }
    drop(f);
    let w = read_trace(&path, None).unwrap();
    assert!(
        matches!(&w, Workload::TraceFile { .. }),
        "read as the run goes"
    );
    let ops: Vec<Op> = w.ops(1).collect::<Result<_, _>>().unwrap();
    // Exec, 4 from the header lines, 4000 plus one more per M, Exit.
    assert_eq!(ops.len(), 1 + 4 + 4000 + 4000 / 3 + 1);
    // The same operations as the text parsed whole.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(ops, parse_trace(&text, TraceFormat::Lackey, "x").unwrap());
    for cache in [None, Some(Default::default())] {
        let cfg = SimConfig::default().workload(w.clone()).cache(cache);
        let out = simulate(&cfg).unwrap();
        assert_commands_legal(&cfg, &out);
        assert_packets_match_truth(&out);
        assert!(out.truth.iter().any(|r| r.kind == RefKind::Cpu));
    }
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "R 0x10\nR 0x20\nQ 0x30\n").unwrap();
    let e = read_trace(&bad, None).unwrap_err().to_string();
    assert_eq!(
        e,
        format!("{}:3: expected R or W, found 'Q'", bad.display())
    );
    let e = read_trace(&dir.path().join("missing"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
    // A file that breaks after it was checked: the run stops with the
    // error (file and line), not with a shorter trace.
    let changing = dir.path().join("changing.txt");
    std::fs::write(&changing, "R 0x1000\nW 0x2000\nR 0x3000\n").unwrap();
    let w = read_trace(&changing, None).unwrap();
    std::fs::write(&changing, "R 0x1000\nW 0x2000\nX 0x3000\n").unwrap();
    let e = simulate(&SimConfig::default().workload(w.clone()))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!("{}:3: expected R or W, found 'X'", changing.display())
    );
    std::fs::remove_file(&changing).unwrap();
    let e = simulate(&SimConfig::default().workload(w))
        .unwrap_err()
        .to_string();
    assert!(e.contains("changing.txt"), "{e}");
}
