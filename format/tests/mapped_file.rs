//! [`MappedFile`]'s guard against a file cut short under the reader, in a
//! process of its own: the cut it provokes is remembered process-wide
//! ([`hmtt_format::mapped_file::cut_inputs`]) and would fail other tests'
//! commits.

use std::fs::File;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

use hmtt_format::atomic_file::AtomicFile;
use hmtt_format::mapped_file::{check_inputs, cut_inputs, is_input_cut, MappedFile};

/// Larger than any page size Linux uses on x86-64 or arm64.
const UNIT: usize = 64 * 1024;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hmtt-mapped-{}-{name}", std::process::id()))
}

#[test]
fn a_file_cut_under_the_map_reads_zeros_is_reported_and_no_output_is_committed() {
    let path = temp("cut");
    let mut f = File::create(&path).unwrap();
    f.write_all(&vec![0xabu8; UNIT * 8]).unwrap();
    drop(f);
    let whole = temp("whole");
    std::fs::write(&whole, b"hello").unwrap();
    let untouched = MappedFile::open(&whole).unwrap();
    let mapped = MappedFile::open(&path).unwrap();
    assert_eq!(mapped[UNIT * 7], 0xab);
    assert!(!mapped.was_cut());
    assert!(check_inputs().is_ok());

    // Another program truncates the file in place.
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(UNIT as u64 * 2)
        .unwrap();
    assert_eq!(mapped[UNIT], 0xab, "before the cut: the file's bytes");
    let past: u64 = mapped[UNIT * 3..].iter().map(|&b| u64::from(b)).sum();
    assert_eq!(past, 0, "past the cut: zeros, not SIGBUS");
    assert!(mapped.was_cut());
    assert!(!untouched.was_cut(), "only the cut file is marked");
    assert_eq!(&untouched[..], b"hello");
    let e = mapped.check().unwrap_err();
    assert!(e.to_string().contains("cut short"), "{e}");

    // No output is put in place while an input is cut, even after the
    // input is closed.
    drop(mapped);
    assert_eq!(cut_inputs(), std::slice::from_ref(&path));
    let out = temp("out.csv");
    let mut o = AtomicFile::create(&out).unwrap();
    o.write_all(b"derived from a cut input").unwrap();
    let e = o.commit().unwrap_err();
    assert!(e.to_string().contains("was not written"), "{e}");
    assert!(is_input_cut(&e), "the cut is the error's source: {e:?}");
    assert!(!out.exists(), "no output under the final name");
    assert!(check_inputs().is_err());

    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&whole).unwrap();
}

#[test]
fn an_empty_file_maps_to_no_bytes() {
    let empty = temp("empty");
    std::fs::write(&empty, b"").unwrap();
    assert!(MappedFile::open(&empty).unwrap().is_empty());
    std::fs::remove_file(&empty).unwrap();
}

#[test]
fn a_fault_outside_any_mapped_input_still_ends_the_process() {
    // A child of this test binary maps a file without the guard, cuts it
    // and reads past the cut: it must still die of SIGBUS, not read zeros.
    let name = "a_fault_outside_any_mapped_input_still_ends_the_process";
    if std::env::var_os("HMTT_MAPPED_CHILD").is_some() {
        let guarded = temp("guarded");
        std::fs::write(&guarded, b"x").unwrap();
        let _guarded = MappedFile::open(&guarded).unwrap();
        let path = temp("unguarded");
        std::fs::write(&path, vec![1u8; UNIT * 4]).unwrap();
        let f = File::open(&path).unwrap();
        // SAFETY: the point of the test is the fault.
        let raw = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&guarded);
        let x = std::hint::black_box(raw[UNIT * 2]);
        println!("read {x} past the end of an unguarded map");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env("HMTT_MAPPED_CHILD", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "SIGBUS expected: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}
