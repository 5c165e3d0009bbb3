//! Trace archives through the binary: sim → merge → pack → unpack gives
//! the trace back byte for byte; `merge --compress` writes the archive of
//! the very trace `merge` writes; `dump`, `stats` and `replay` print the
//! same from the archive as from the trace; a seek with `--from-ns` and
//! `--limit` decodes one block (the count `hmtt -v dump` logs); damaged or
//! cut archives are refused with a clear message, not a panic.

mod support;
use support::cli::{
    fails, mix_merged_on_2_boards, ok, ok_with_stderr, pack_in_small_blocks, s, scratch,
};

#[test]
fn archives_round_trip_and_read_like_the_trace() {
    let dir = scratch("round");
    let (sim, trace) = mix_merged_on_2_boards(&dir);
    let trace_bytes = std::fs::read(&trace).unwrap();
    let records = (trace_bytes.len() - 128) / 16;
    assert!(records > 5000, "{records}");

    // Small blocks, so that the trace spans many.
    let archive = dir.join("run.hmttz");
    let out = pack_in_small_blocks(&trace, &archive);
    assert!(out.contains("bits per record"), "{out}");
    let archive_len = std::fs::metadata(&archive).unwrap().len() as usize;
    assert!(archive_len * 4 < trace_bytes.len(), "{archive_len}");
    let back = dir.join("back.hmtttrace");
    ok(&["unpack", s(&archive), "-o", s(&back)]);
    assert!(
        std::fs::read(&back).unwrap() == trace_bytes,
        "unpack differs"
    );

    // merge --compress and merge -o *.hmttz: the same trace inside.
    for (name, extra) in [("m1.hmttz", &["--compress"][..]), ("m2.hmttz", &[][..])] {
        let merged = dir.join(name);
        let mut args = vec!["merge", s(&sim), "-o", s(&merged), "-q"];
        args.extend_from_slice(extra);
        ok(&args);
        let back = dir.join(format!("{name}.hmtttrace"));
        ok(&["unpack", s(&merged), "-o", s(&back)]);
        assert!(std::fs::read(&back).unwrap() == trace_bytes, "{name}");
    }

    for args in [
        &["dump"][..],
        &["dump", "--csv", "--board", "1"][..],
        &["stats"][..],
    ] {
        let mut a = args.to_vec();
        a.push(s(&trace));
        let from_trace = ok(&a);
        *a.last_mut().unwrap() = s(&archive);
        let from_archive = ok(&a);
        assert_eq!(
            from_trace.replace(s(&trace), "FILE"),
            from_archive.replace(s(&archive), "FILE"),
            "{args:?}"
        );
    }
    let log = sim.join("pagetable.hmttlog");
    let (csv1, csv2) = (dir.join("r1.csv"), dir.join("r2.csv"));
    ok(&["replay", s(&trace), "--log", s(&log), "--csv", s(&csv1)]);
    ok(&["replay", s(&archive), "--log", s(&log), "--csv", s(&csv2)]);
    let csv = std::fs::read(&csv1).unwrap();
    assert!(
        csv.len() > 1000 && csv == std::fs::read(&csv2).unwrap(),
        "replay differs"
    );
}

#[test]
fn a_seek_decodes_the_block_of_its_time_and_the_one_before() {
    let dir = scratch("seek");
    let (_, trace) = mix_merged_on_2_boards(&dir);
    let archive = dir.join("run.hmttz");
    pack_in_small_blocks(&trace, &archive);
    // A time in the middle of the trace, from the trace's own dump.
    let full = ok(&["dump", "--csv", s(&trace)]);
    let lines: Vec<&str> = full.lines().skip(1).collect();
    let blocks = lines.len().div_ceil(1000);
    assert!(blocks >= 5, "{blocks}");
    // In the middle of a block, so the ten records lie in that block.
    let mid = lines[blocks / 2 * 1000 + 500];
    let ns: f64 = mid.split(',').next().unwrap().parse().unwrap();
    let from = format!("{ns}");
    let want = ok(&["dump", s(&trace), "--from-ns", &from, "--limit", "10"]);
    let (got, log) = ok_with_stderr(&[
        "-v",
        "dump",
        s(&archive),
        "--from-ns",
        &from,
        "--limit",
        "10",
    ]);
    assert_eq!(got, want);
    assert_eq!(got.lines().count(), 11);
    // The block before is decoded too, to check the last tick the seek
    // skipped it by against the index (docs/format.md §13).
    assert!(
        log.contains(&format!("decoded 2 of {blocks} archive blocks")),
        "{log}"
    );
    // Without a seek every block is decoded.
    let (_, log) = ok_with_stderr(&["-v", "dump", s(&archive)]);
    assert!(
        log.contains(&format!("decoded {blocks} of {blocks} archive blocks")),
        "{log}"
    );
}

#[test]
fn damaged_and_cut_archives_are_refused_clearly() {
    let dir = scratch("bad");
    let (_, trace) = mix_merged_on_2_boards(&dir);
    let archive = dir.join("run.hmttz");
    pack_in_small_blocks(&trace, &archive);
    let bytes = std::fs::read(&archive).unwrap();

    let cut = dir.join("cut.hmttz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    for cmd in ["dump", "stats"] {
        let err = fails(&[cmd, s(&cut)]);
        assert!(err.contains("archive damaged"), "{cmd}: {err}");
    }
    let err = fails(&["unpack", s(&cut), "-o", s(&dir.join("x"))]);
    assert!(err.contains("not a usable trace archive"), "{err}");

    // A flipped byte inside the first block's columns: the index is fine,
    // the block is not.
    let mut bad = bytes.clone();
    bad[64 + 40 + 20] ^= 0x5a;
    let damaged = dir.join("damaged.hmttz");
    std::fs::write(&damaged, &bad).unwrap();
    for cmd in [&["dump"][..], &["stats"][..]] {
        let mut a = cmd.to_vec();
        a.push(s(&damaged));
        let err = fails(&a);
        assert!(err.contains("archive block 0 damaged"), "{cmd:?}: {err}");
    }
    let err = fails(&["unpack", s(&damaged), "-o", s(&dir.join("y"))]);
    assert!(err.contains("archive block 0 damaged"), "{err}");

    // A trace file is not an archive.
    let err = fails(&["unpack", s(&trace), "-o", s(&dir.join("z"))]);
    assert!(err.contains("not an hmtt trace archive"), "{err}");
}
