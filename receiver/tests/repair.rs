//! `hmtt capture --repair` on the files a killed capture leaves: the space
//! preallocated past their ends is given back and a partial last record
//! is cut; files that are not captures are left alone.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use hmtt_format::capture::{emit_record_header, CaptureEnd, CaptureHeader, CaptureReader};
use hmtt_receiver::repair::repair_dir;

/// A capture file of `n` 100-byte records.
fn capture_bytes(n: usize) -> Vec<u8> {
    let header = CaptureHeader {
        board: 0,
        port: 0,
        stripe: 0,
        start_ns: 1,
        geometry: None,
        source_kind: hmtt_format::capture::SourceKind::Udp,
        tick_ps: 1250,
        source_name: "test".into(),
    };
    let mut f = header.emit().to_vec();
    for i in 0..n {
        f.extend_from_slice(&emit_record_header(i as u64, 100, 0));
        f.extend_from_slice(&[i as u8; 100]);
    }
    f
}

#[test]
fn a_killed_captures_files_get_their_space_back_and_end_on_a_whole_record() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = capture_bytes(50);
    let path = tmp.path().join("t-p00-s00000.hmttcap");
    let mut cut = whole.clone();
    cut.extend_from_slice(&emit_record_header(50, 100, 0));
    cut.extend_from_slice(&[7; 30]);
    std::fs::write(&path, &cut).unwrap();
    // As the writer preallocates: space past the end, the length unchanged.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    // SAFETY: fallocate on an open descriptor.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, 8 << 20) };
    drop(f);
    let prealloc = r == 0;
    let blocks_before = std::fs::metadata(&path).unwrap().blocks() * 512;
    let other = tmp.path().join("notes.hmttcap");
    std::fs::write(&other, b"not a capture").unwrap();

    let repaired = repair_dir(tmp.path()).unwrap();
    assert_eq!(repaired.len(), 2);
    let notes = repaired.iter().find(|r| r.path == other).unwrap();
    assert!(notes.not_a_capture);
    assert_eq!(std::fs::read(&other).unwrap(), b"not a capture");
    let r = repaired.iter().find(|r| r.path == path).unwrap();
    assert_eq!(r.cut_bytes, 16 + 30);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, whole);
    let (_, mut records) = CaptureReader::new(&bytes).unwrap();
    assert_eq!(records.by_ref().count(), 50);
    assert_eq!(records.end(), Some(CaptureEnd::Clean));
    if prealloc {
        assert!(blocks_before >= 8 << 20);
        assert!(r.freed_bytes >= (8 << 20) - (64 << 10), "{r:?}");
        assert!(std::fs::metadata(&path).unwrap().blocks() * 512 < 64 << 10);
    } else {
        println!("no preallocation on this filesystem: only the cut is checked");
    }
    // A second repair finds nothing to do.
    let again = repair_dir(tmp.path()).unwrap();
    assert!(again.iter().all(|r| r.cut_bytes == 0 && r.freed_bytes == 0));
}
