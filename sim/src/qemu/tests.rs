use super::*;

fn bytes_of(accesses: &[QemuAccess]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in accesses {
        a.write_to(&mut out);
    }
    out
}

fn read_all(bytes: &[u8]) -> io::Result<Vec<QemuAccess>> {
    let mut r = QemuReader::new(bytes);
    let mut read = Vec::new();
    while let Some(a) = r.next_access()? {
        read.push(a);
    }
    Ok(read)
}

fn access(vaddr: u64, paddr: u64, size: u32, frames: Frames) -> QemuAccess {
    QemuAccess {
        vcpu: 0,
        vaddr,
        paddr,
        size,
        store: false,
        frames,
    }
}

#[test]
fn records_round_trip() {
    let one = QemuAccess {
        vcpu: 3,
        vaddr: 0x7fff_1234_5678,
        paddr: 0x1234_5678,
        size: 8,
        store: true,
        frames: Frames::OnePage,
    };
    let crossing = |frames| QemuAccess {
        vaddr: 0x7fff_1234_5ffc,
        paddr: 0x1234_5ffc,
        frames,
        ..one
    };
    let untranslated = QemuAccess {
        paddr: 0,
        frames: Frames::Untranslated,
        ..one
    };
    let all = [
        one,
        crossing(Frames::TwoPages(0x0800_0000)),
        crossing(Frames::NextNotRam),
        crossing(Frames::NextUntranslated),
        untranslated,
    ];
    let bytes = bytes_of(&all);
    assert_eq!(bytes.len(), 5 * RECORD_BYTES + 3 * NEXT_PAGE_BYTES);
    assert_eq!(read_all(&bytes).unwrap(), all);
}

#[test]
fn a_page_crossing_access_continues_at_the_next_pages_frame() {
    // 8 bytes from 4 before a page's end: two lines, on two frames
    // that are not neighbours.
    let a = access(
        0x7f00_0000_0ffc,
        0x0123_4ffc,
        8,
        Frames::TwoPages(0x0800_0000),
    );
    assert_eq!(
        a.lines().collect::<Vec<_>>(),
        [
            (0x0123_4fc0, 0x7f00_0000_0fc0),
            (0x0800_0000, 0x7f00_0000_1000)
        ]
    );
    // Not the next physical frame, as adding 64 to the first line gave.
    assert!(a.lines().all(|(pa, _)| pa != 0x0123_5000));
    // Within one page: every line of the access on its frame.
    let within = access(0x7f00_0000_0f3c, 0x0123_4f3c, 8, Frames::OnePage);
    assert_eq!(
        within.lines().collect::<Vec<_>>(),
        [
            (0x0123_4f00, 0x7f00_0000_0f00),
            (0x0123_4f40, 0x7f00_0000_0f40)
        ]
    );
    // A 16-byte access ending exactly at the page's end stays on it.
    let to_end = access(0x7f00_0000_0ff0, 0x0123_4ff0, 16, Frames::OnePage);
    assert!(!to_end.crosses_page());
    assert_eq!(to_end.lines().count(), 1);
    // A second page not known or not RAM: the first page's line only.
    for frames in [Frames::NextUntranslated, Frames::NextNotRam] {
        let a = access(0x7f00_0000_0ffc, 0x0123_4ffc, 8, frames);
        assert_eq!(
            a.lines().collect::<Vec<_>>(),
            [(0x0123_4fc0, 0x7f00_0000_0fc0)]
        );
    }
    let none = access(0x7f00_0000_0ffc, 0, 8, Frames::Untranslated);
    assert_eq!(none.lines().count(), 0);
}

#[test]
fn the_machine_runs_the_second_pages_line_on_its_frame() {
    let mut m = Machine::new(crate::machine::SimConfig::default()).unwrap();
    let a = QemuAccess {
        store: true,
        ..access(
            0x7f00_0000_1ff8,
            0x0200_0ff8,
            16,
            Frames::TwoPages(0x0100_0000),
        )
    };
    let mut seen = Vec::new();
    m.guest_access(&a, &GuestConfigSpace::DEFAULT, Some(7), |r| seen.push(*r))
        .unwrap();
    let got: Vec<(u64, u64, bool, Option<u32>)> = seen
        .iter()
        .map(|r| (r.paddr, r.vaddr, r.write, r.pid))
        .collect();
    assert_eq!(
        got,
        [
            (0x0200_0fc0, 0x7f00_0000_1fc0, true, Some(7)),
            (0x0100_0000, 0x7f00_0000_2000, true, Some(7)),
        ]
    );
}

#[test]
fn reader_refuses_records_that_contradict_themselves() {
    let refused = |a: QemuAccess, what: &str| {
        let e = read_all(&bytes_of(&[a])).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        assert!(e.to_string().contains(what), "{e}");
    };
    // Crossing a page without the second page's frame (the plugin's
    // older records): never the next physical frame silently.
    refused(
        access(0x7f00_0000_0ffc, 0x0123_4ffc, 8, Frames::OnePage),
        "run onto the next page",
    );
    refused(
        access(0x7f00_0000_0ff0, 0x0123_4ff0, 8, Frames::TwoPages(0x1000)),
        "stay on one page",
    );
    refused(
        access(0x7f00_0000_0ffc, 0x0123_4ffc, 8, Frames::TwoPages(0x1040)),
        "not a page's first byte",
    );
    // An access wider than any QEMU reports (issue 41: 20,000 records
    // of 32 KiB each grew the memory path to 2.5 GB).
    refused(
        access(0x1000, 0x1000, 128, Frames::OnePage),
        "an access of 128 bytes",
    );
    refused(
        access(
            0x7f00_0000_8000,
            0x8000,
            1 << 15,
            Frames::TwoPages(0x1_0000),
        ),
        "an access of 32768 bytes",
    );
    assert_eq!(
        read_all(&bytes_of(&[access(0x1000, 0x1000, 64, Frames::OnePage)]))
            .unwrap()
            .len(),
        1
    );
    // Unknown info bits, and two contradicting ones.
    let mut bytes = bytes_of(&[access(0, 0, 1, Frames::OnePage)]);

    bytes[18] = 0x10;
    assert!(read_all(&bytes)
        .unwrap_err()
        .to_string()
        .contains("unknown bits"));
    let mut bytes = bytes_of(&[access(0, 0, 1, Frames::Untranslated)]);
    bytes[16] |= 1 << 6;
    assert!(read_all(&bytes)
        .unwrap_err()
        .to_string()
        .contains("contradicts"));
    // A crossing record cut inside its word.
    let bytes = bytes_of(&[access(0xffc, 0xffc, 8, Frames::TwoPages(0x3000))]);
    let e = read_all(&bytes[..RECORD_BYTES + 3]).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn reader_refuses_a_cut_record() {
    let a = access(1, 2, 4, Frames::OnePage);
    let mut bytes = bytes_of(&[a]);
    bytes.extend_from_slice(&bytes_of(&[a])[..10]);
    let mut r = QemuReader::new(&bytes[..]);
    assert_eq!(r.next_access().unwrap(), Some(a));
    assert!(r.next_access().is_err());
}

#[test]
fn reader_refuses_a_range_past_the_address_space() {
    let ok = access(0, u64::MAX - 7, 8, Frames::OnePage);
    let wraps = QemuAccess {
        paddr: u64::MAX - 6,
        ..ok
    };
    let bytes = bytes_of(&[ok, wraps]);
    let mut r = QemuReader::new(&bytes[..]);
    assert_eq!(r.next_access().unwrap(), Some(ok));
    let e = r.next_access().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().starts_with("record 1: 8 bytes"), "{e}");
}

/// Hands out at most 5 bytes a call, so records straddle reads.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(5).min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn reader_joins_records_cut_by_reads() {
    // Every seventh access crosses a page, so words straddle reads too.
    let accesses: Vec<QemuAccess> = (0..1000u64)
        .map(|i| QemuAccess {
            vcpu: (i % 3) as u32,
            vaddr: i * 0x1000 + if i % 7 == 0 { 0xffc } else { 7 },
            paddr: i * 0x40,
            size: if i % 7 == 0 { 8 } else { 1 << (i % 3) },
            store: i % 2 == 0,
            frames: if i % 7 == 0 {
                Frames::TwoPages(i * 0x2000)
            } else {
                Frames::OnePage
            },
        })
        .collect();
    let bytes = bytes_of(&accesses);
    let mut r = QemuReader::new(Trickle(&bytes));
    let mut read = Vec::new();
    while let Some(a) = r.next_access().unwrap() {
        read.push(a);
    }
    assert_eq!(read, accesses);
}

#[test]
fn reference_rows() {
    let mut out = Vec::new();
    let r = LineReference {
        vcpu: 0,
        pid: Some(87),
        vaddr: 0x7fff_1234_5640,
        paddr: 0x1234_5640,
        write: true,
        kind: RefKind::Cpu,
        event: None,
    };
    // One row reused for both, as the writer does.
    let mut row = Row::new();
    reference_row_into(&mut row, 7, &r);
    out.extend_from_slice(row.as_bytes());
    let icode = LineReference {
        pid: None,
        write: false,
        kind: RefKind::Icode,
        event: Some(0x10005),
        ..r
    };
    row.clear();
    reference_row_into(&mut row, 8, &icode);
    out.extend_from_slice(row.as_bytes());
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "7,0,87,0x7fff12345640,0x12345640,W,cpu,\n8,0,,0x7fff12345640,0x12345640,R,icode,0x10005\n"
    );
}

#[test]
fn user_and_kernel_halves() {
    let at = |vaddr| access(vaddr, 0, 1, Frames::OnePage);
    assert!(at(0x7fff_ffff_f000).is_user());
    assert!(at(0x00ff_ffff_ffff_f000).is_user());
    assert!(!at(0xffff_8880_0000_0000).is_user());
    assert!(!at(0xff1a_0000_0000_0000).is_user());
}

#[test]
fn context_switches_name_the_current_process() {
    let pids = GuestPidSpace {
        base: 0x1080_0000,
        size: 0x40,
    };
    let store = |vcpu, paddr| QemuAccess {
        vcpu,
        store: true,
        ..access(0xffff_8880_1080_0000, paddr, 1, Frames::OnePage)
    };
    let mut tasks = GuestTasks::default();
    assert_eq!(tasks.current(0), None);
    assert!(tasks.take(&store(0, 0x1080_0000 + 87 % 7 * 8), &pids));
    assert_eq!(tasks.current(0), Some(3));
    assert!(tasks.take(&store(1, 0x1080_0010), &pids));
    assert_eq!((tasks.current(0), tasks.current(1)), (Some(3), Some(2)));
    // The last slot: a tgid past the range.
    assert!(tasks.take(&store(0, 0x1080_0038), &pids));
    assert_eq!(tasks.current(0), None);
    // Outside the range: an access, not a switch.
    assert!(!tasks.take(&store(0, 0x1080_0040), &pids));
    assert!(!tasks.take(&store(0, 0x107f_fff8), &pids));
    // A forged vCPU index is not followed (no table that large).
    assert!(tasks.take(&store(u32::MAX, 0x1080_0008), &pids));
    assert_eq!(tasks.current(u32::MAX), None);
    assert_eq!(tasks.switches(), 3);
}

#[test]
fn config_space_events() {
    let s = GuestConfigSpace {
        base: 0x1000_0000,
        size: 0x80_0000,
    };
    assert_eq!(s.event_of(0x1000_0000), Some(0));
    assert_eq!(s.event_of(0x1000_0048), Some(1));
    assert_eq!(s.event_of(0x1080_0000), None);
    assert_eq!(s.event_of(0x0fff_ffff), None);
}
