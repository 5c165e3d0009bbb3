use super::*;

// A DMA_MAP record laid out by hand from docs/format.md section 8.
const DMA_MAP_BYTES: [u8; RECORD_LEN] = [
    0x2a, 0, 0, 0, 0, 0, 0, 0, // seq 42
    5, 0, // kind DMA_MAP
    3, 0, // cpu 3
    0x39, 0x30, 0, 0, // pid 12345
    0x00, 0x10, 0x34, 0x12, 0, 0, 0, 0, // a: address 0x12341000
    0x00, 0x10, 0, 0, 0, 0, 0, 0, // b: size 4096
    1, 0, 0, 0, 0, 0, 0, 0, // c: to device
    0x00, 0xca, 0x9a, 0x3b, 0, 0, 0, 0, // time 1e9 ns
    b'h', b'm', b't', b't', b'_', b'd', b'm', b'a', b't', b'e', b's', b't', 0, 0, 0, 0,
];

#[test]
fn read_image_reports_a_cut_and_seq_holes() {
    let record = |seq| {
        RecordRepr {
            seq,
            cpu: 0,
            pid: 1,
            time_ns: seq,
            event: Event::Overrun { lost: 0 },
        }
        .to_bytes()
    };
    let header = FileHeaderRepr { start_ns: 5 }.to_bytes();
    let mut file = header.to_vec();
    for seq in [0, 1, 2, 5, 4, 9, 9, 10] {
        file.extend_from_slice(&record(seq));
    }
    let whole = read_image(&file).unwrap();
    assert_eq!(whole.cut_short_bytes, 0);
    let seqs: Vec<u64> = whole.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 4, 5, 9, 10]);
    assert_eq!(
        (whole.seq_holes, whole.seq_missing, whole.duplicates),
        (2, 4, 1)
    );
    file.extend_from_slice(&record(11)[..40]);
    let cut = read_image(&file).unwrap();
    assert_eq!(cut.cut_short_bytes, 40);
    assert_eq!(cut.records, whole.records);
    file.truncate(HEADER_LEN);
    file.extend_from_slice(&record(u64::MAX));
    file.extend_from_slice(&record(0));
    let forged = read_image(&file).unwrap();
    assert_eq!((forged.seq_holes, forged.seq_missing), (1, u64::MAX - 1));
}

#[test]
fn dma_record_parses_and_emits_byte_for_byte() {
    let record = Record::new_checked(&DMA_MAP_BYTES[..]).unwrap();
    let repr = RecordRepr::parse(&record).unwrap();
    assert_eq!(
        repr,
        RecordRepr {
            seq: 42,
            cpu: 3,
            pid: 12345,
            time_ns: 1_000_000_000,
            event: Event::DmaMap {
                addr: 0x1234_1000,
                size: 4096,
                dir: DmaDirection::ToDevice,
                device: Name::new("hmtt_dmatest"),
            },
        }
    );
    assert_eq!(repr.to_bytes(), DMA_MAP_BYTES);
    assert_eq!(crate::config::log_tag_event(repr.seq), 0x1002a);
}

#[test]
fn every_kind_round_trips() {
    let name = Name::new("a_sixteen_byte_n");
    let events = [
        Event::Map {
            vpn: 0x0007_fff1_2345,
            pfn: 0x1_2345,
            pte_phys: 0x1234_5678,
        },
        Event::Unmap {
            vpn: 1,
            pfn: 2,
            pte_phys: 3,
        },
        Event::SnapshotMap {
            vpn: u64::MAX,
            pfn: u64::MAX - 1,
            pte_phys: u64::MAX - 2,
        },
        Event::Exec { comm: name },
        Event::Exit {
            comm: Name::new("sh"),
        },
        Event::DmaMap {
            addr: 0xfee0_0000,
            size: 1,
            dir: DmaDirection::Bidirectional,
            device: Name::new("0000:00:03.0"),
        },
        Event::DmaUnmap {
            addr: 0,
            size: u64::MAX,
            dir: DmaDirection::None,
            device: Name::default(),
        },
        Event::Overrun { lost: 77 },
        Event::Fork {
            parent: 4242,
            flags: CLONE_VM | 0x4000,
            comm: Name::new("sh"),
        },
        Event::Switch { prev: 17 },
        Event::CpuArea {
            frame: 0x1ec0b,
            frames: 3,
            owner: 1,
            area: Name::new("cpu-entry-area"),
        },
    ];
    for (i, event) in events.into_iter().enumerate() {
        let repr = RecordRepr {
            seq: 1 << i,
            cpu: i as u16,
            pid: 1000 + i as u32,
            time_ns: 99 * i as u64,
            event,
        };
        let bytes = repr.to_bytes();
        let view = Record::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.kind(), event.kind() as u16);
        assert_eq!(RecordRepr::parse(&view).unwrap(), repr, "kind {i}");
    }
}

#[test]
fn header_round_trips_and_is_checked() {
    let repr = FileHeaderRepr {
        start_ns: 1_700_000_000_123_456_789,
    };
    let bytes = repr.to_bytes();
    assert_eq!(&bytes[..8], b"HMTTLOG\0");
    assert_eq!(&bytes[8..12], &[3, 0, 64, 0]);
    assert_eq!(&bytes[12..16], &[0; 4]);
    assert_eq!(&bytes[24..32], &[0; 8]);
    let view = FileHeader::new_checked(&bytes[..]).unwrap();
    assert_eq!(FileHeaderRepr::parse(&view).unwrap(), repr);

    let mut bad = bytes;
    bad[0] = b'X';
    assert!(matches!(
        FileHeaderRepr::parse(&FileHeader::new_unchecked(&bad[..])),
        Err(Error::BadMagic(_))
    ));
    for version in [1, 2] {
        let mut old = bytes;
        old[8] = version;
        assert_eq!(
            FileHeaderRepr::parse(&FileHeader::new_unchecked(&old[..])),
            Ok(repr)
        );
    }
    let mut bad = bytes;
    bad[8] = 4;
    assert_eq!(
        FileHeaderRepr::parse(&FileHeader::new_unchecked(&bad[..])),
        Err(Error::UnsupportedVersion(4))
    );
    let mut bad = bytes;
    bad[10] = 32;
    assert_eq!(
        FileHeaderRepr::parse(&FileHeader::new_unchecked(&bad[..])),
        Err(Error::BadRecordSize(32))
    );
}

#[test]
fn short_buffers_are_refused_not_panicking() {
    for len in 0..HEADER_LEN {
        assert_eq!(
            FileHeader::new_checked(&[0u8; HEADER_LEN][..len]).err(),
            Some(Error::Truncated {
                need: HEADER_LEN,
                got: len
            })
        );
    }
    for len in 0..RECORD_LEN {
        let record = Record::new_unchecked(&DMA_MAP_BYTES[..len]);
        assert_eq!(
            RecordRepr::parse(&record),
            Err(Error::Truncated {
                need: RECORD_LEN,
                got: len
            })
        );
    }
}

#[test]
fn unknown_kind_and_direction_are_errors() {
    for kind in [0u16, 12, 0xffff] {
        let mut bytes = DMA_MAP_BYTES;
        bytes[8..10].copy_from_slice(&kind.to_le_bytes());
        assert_eq!(
            RecordRepr::parse(&Record::new_unchecked(&bytes[..])),
            Err(Error::UnknownKind(kind))
        );
    }
    let mut bytes = DMA_MAP_BYTES;
    bytes[32] = 4;
    assert_eq!(
        RecordRepr::parse(&Record::new_unchecked(&bytes[..])),
        Err(Error::BadDirection(4))
    );
}

#[test]
fn names_are_nul_padded_and_cut() {
    let name = Name::new("a_name_longer_than_sixteen_bytes");
    assert_eq!(name.as_bytes(), b"a_name_longer_th");
    assert_eq!(Name::new("cat").field(), *b"cat\0\0\0\0\0\0\0\0\0\0\0\0\0");
    assert_eq!(Name::new("cat").to_string(), "cat");
    // Garbage after the first NUL is not part of the name.
    let field = *b"ls\0junkjunkjunk!";
    assert_eq!(Name::from_field(field), Name::new("ls"));
}

#[test]
fn file_iterates_records_and_reports_a_cut_tail() {
    let mut file = FileHeaderRepr { start_ns: 5 }.to_bytes().to_vec();
    for seq in 0..3u64 {
        let repr = RecordRepr {
            seq,
            cpu: 0,
            pid: 1,
            time_ns: seq,
            event: Event::Overrun { lost: seq },
        };
        file.extend_from_slice(&repr.to_bytes());
    }
    file.extend_from_slice(&[0xee; 10]);
    let (header, records) = parse_file(&file).unwrap();
    assert_eq!(header.start_ns, 5);
    assert_eq!(records.remainder(), 10);
    let seqs: Vec<u64> = records.map(|r| r.unwrap().seq).collect();
    assert_eq!(seqs, [0, 1, 2]);
}

#[test]
fn a_cpu_area_beyond_a_16_bit_cpu_is_refused() {
    let mut bytes = RecordRepr {
        seq: 0,
        cpu: 0,
        pid: 0,
        time_ns: 0,
        event: Event::CpuArea {
            frame: 1,
            frames: 1,
            owner: 0,
            area: Name::new("percpu"),
        },
    }
    .to_bytes();
    Record::new_unchecked(&mut bytes[..]).set_c(1 << 16);
    assert_eq!(
        RecordRepr::parse(&Record::new_checked(&bytes[..]).unwrap()),
        Err(Error::BadCpu(1 << 16))
    );
}
