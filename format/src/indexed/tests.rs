use super::*;
use proptest::prelude::*;

const TEST_FILE: FileType = FileType {
    name: "test",
    magic: *b"TESTIDX\0",
    version: 3,
    header_len: 160,
    record_len: 24,
};

struct Rec(u64);
impl Timed for Rec {
    fn tick(&self) -> u64 {
        self.0
    }
}

/// A complete file of records whose ticks are `ticks`.
fn file(ticks: &[u64], stride: u64, names: &EventNames) -> Vec<u8> {
    let ty = &TEST_FILE;
    let recs: Vec<Rec> = ticks.iter().map(|&t| Rec(t)).collect();
    let mut idx = IndexBuilder::new(stride);
    idx.push_block(0, &recs);
    let index = idx.emit();
    let names_bytes = names.emit_section();
    let records_end = ty.header_len + ticks.len() * ty.record_len;
    let h = CommonHeader {
        flags: FLAG_COMPLETE,
        record_count: ticks.len() as u64,
        index_offset: records_end as u64,
        index_count: idx.entries().len() as u64,
        index_stride: stride,
        names_offset: (records_end + index.len()) as u64,
        names_len: names_bytes.len() as u64,
        ..Default::default()
    };
    let mut f = vec![0u8; ty.header_len];
    h.emit(ty, &mut f);
    for t in ticks {
        let mut r = vec![0xa5u8; ty.record_len];
        r[0..8].copy_from_slice(&t.to_le_bytes());
        f.extend_from_slice(&r);
    }
    f.extend_from_slice(&index);
    f.extend_from_slice(&names_bytes);
    seal_file(&mut f);
    f
}

fn open(data: &[u8]) -> Result<(CommonHeader, Body<'_>), TraceFileError> {
    let (mut h, len) = CommonHeader::parse(&TEST_FILE, data)?;
    let body = Body::new_checked(&TEST_FILE, &mut h, len, data)?;
    Ok((h, body))
}

#[test]
fn header_round_trip_and_known_bytes() {
    let h = CommonHeader {
        version: 3,
        flags: FLAG_COMPLETE,
        record_count: 2,
        tick_ps: 1250,
        names_len: 9,
        checksums_offset: 77,
        tail_crc: 0xdead_beef,
        ..Default::default()
    };
    let mut b = [0u8; 160];
    h.emit(&TEST_FILE, &mut b);
    seal_header(&mut b);
    assert_eq!(&b[0..8], b"TESTIDX\0");
    assert_eq!(&b[8..16], &[3, 0, 160, 0, 24, 0, 1, 0]);
    assert_eq!(&b[16..24], &2u64.to_le_bytes());
    assert_eq!(&b[72..74], &1250u16.to_le_bytes());
    assert_eq!(&b[88..96], &9u64.to_le_bytes());
    assert_eq!(&b[128..136], &77u64.to_le_bytes());
    assert_eq!(&b[136..140], &0xdead_beefu32.to_le_bytes());
    assert_eq!(CommonHeader::parse(&TEST_FILE, &b).unwrap(), (h, 160));
    // The CRC-32C check value of "123456789" (RFC 3720).
    assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
}

/// `f` with the header checksum made right again after a change.
fn resealed(mut f: Vec<u8>) -> Vec<u8> {
    seal_header(&mut f[..160]);
    f
}

#[test]
fn bad_files_are_refused_with_a_reason() {
    let f = file(&[1, 2, 3], 4096, &EventNames::default());
    let file = "test";
    assert!(matches!(
        open(&f[..10]),
        Err(TraceFileError::TooShort { len: 10, .. })
    ));
    let mut bad = f.clone();
    bad[0] = b'X';
    assert!(matches!(open(&bad), Err(TraceFileError::BadMagic { .. })));
    let mut bad = f.clone();
    bad[8] = 2;
    assert_eq!(
        open(&bad).unwrap_err(),
        TraceFileError::BadVersion {
            file,
            version: 2,
            supported: 3
        }
    );
    let mut bad = f.clone();
    bad[12] = 16;
    assert!(matches!(
        open(&bad),
        Err(TraceFileError::BadRecordLen { len: 16, .. })
    ));
    let mut bad = f.clone();
    bad[10] = 12;
    assert!(matches!(
        open(&bad),
        Err(TraceFileError::BadHeaderLen { len: 12, .. })
    ));
    let mut bad = f.clone();
    bad[16..24].copy_from_slice(&5u64.to_le_bytes());
    assert!(matches!(
        open(&bad),
        Err(TraceFileError::HeaderChecksum { len: 160, .. })
    ));
    assert_eq!(
        open(&resealed(bad)).unwrap_err(),
        TraceFileError::BadRecordCount {
            file,
            count: 5,
            room: 3
        }
    );
    let mut bad = f.clone();
    bad[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        open(&resealed(bad)),
        Err(TraceFileError::BadIndex { .. })
    ));
    let mut bad = f.clone();
    bad[88..96].copy_from_slice(&3u64.to_le_bytes());
    assert!(matches!(
        open(&resealed(bad)),
        Err(TraceFileError::BadNames { .. })
    ));
    let mut bad = f.clone();
    bad[128..136].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        open(&resealed(bad)),
        Err(TraceFileError::BadChecksums { .. })
    ));
    // A complete file cut short.
    let err = open(&f[..160 + 24 + 5]).unwrap_err();
    assert_eq!(
        err,
        TraceFileError::BadRecordCount {
            file,
            count: 3,
            room: 1
        }
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("test claims 3 records") && msg.contains("room for 1"),
        "{msg}"
    );
}

#[test]
fn every_changed_byte_of_a_finished_file_is_refused() {
    let ticks: Vec<u64> = (0..40).collect();
    let names = EventNames::from_iter(vec![(7, "seven".into())]);
    let f = file(&ticks, 16, &names);
    assert!(open(&f).is_ok());
    for i in 0..f.len() {
        let mut bad = f.clone();
        bad[i] ^= 0x10;
        assert!(
            open(&bad).is_err(),
            "byte {i} of {} changed unseen",
            f.len()
        );
    }
    // The block checksum names the block and where it lies.
    let mut bad = f.clone();
    bad[160 + 17 * 24] ^= 1;
    let err = open(&bad).unwrap_err();
    assert!(
        matches!(
            err,
            TraceFileError::BlockChecksum {
                block: 1,
                first_record: 16,
                end_record: 32,
                offset: 544,
                end: 928,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("block 1 (records 16..32, bytes 544..928)"),
        "{msg}"
    );
}

#[test]
fn a_file_of_the_unchecked_version_is_read_without_checksums() {
    let f = file(&[1, 2, 3], 2, &EventNames::default());
    let records_end = 160 + 3 * 24;
    let mut old = f[..128].to_vec();
    old[8..10].copy_from_slice(&UNCHECKED_VERSION.to_le_bytes());
    old[10..12].copy_from_slice(&128u16.to_le_bytes());
    old.extend_from_slice(&f[160..records_end]);
    let index_offset = old.len() as u64;
    old.extend_from_slice(&f[records_end..records_end + 32]);
    old[24..32].copy_from_slice(&index_offset.to_le_bytes());
    old[80..88].copy_from_slice(&(index_offset + 32).to_le_bytes());
    let (h, body) = open(&old).unwrap();
    assert!(!h.has_checksums() && h.is_complete());
    assert_eq!((body.len(), body.index().count()), (3, 2));
    // Nothing to verify: a changed record goes unseen.
    old[128] ^= 1;
    assert!(open(&old).is_ok());
    // A checked file whose version says 1 is refused, not read unchecked.
    let mut downgraded = f.clone();
    downgraded[8..10].copy_from_slice(&UNCHECKED_VERSION.to_le_bytes());
    assert!(matches!(
        open(&downgraded),
        Err(TraceFileError::BadHeaderLen { len: 160, .. })
    ));
}

#[test]
fn an_unfinished_file_reads_up_to_its_last_whole_record() {
    let mut f = vec![0u8; 160];
    CommonHeader::default().emit(&TEST_FILE, &mut f);
    for t in 0..10u64 {
        let mut r = [0u8; 24];
        r[0..8].copy_from_slice(&(t * 2).to_le_bytes());
        f.extend_from_slice(&r);
    }
    f.truncate(f.len() - 5);
    let (h, body) = open(&f).unwrap();
    assert_eq!((h.record_count, body.len()), (9, 9));
    assert_eq!(body.records_from(7).count(), 2);
    assert_eq!(body.seek_tick(5), 3);
    assert_eq!(body.seek_tick(100), 9);
}

proptest! {
    #[test]
    fn index_and_seek_agree_with_a_scan(
        mut ticks in proptest::collection::vec(0u64..1000, 0..300),
        stride in 1u64..50,
        probes in proptest::collection::vec(0u64..1100, 1..10),
    ) {
        ticks.sort_unstable();
        let f = file(&ticks, stride, &EventNames::default());
        let (_, body) = open(&f).unwrap();
        prop_assert_eq!(body.len(), ticks.len());
        prop_assert_eq!(body.index().count() as u64, (ticks.len() as u64).div_ceil(stride));
        for e in body.index() {
            prop_assert_eq!(e.tick, ticks[e.record as usize]);
        }
        for t in probes {
            let want = ticks.iter().position(|&x| x >= t).unwrap_or(ticks.len());
            prop_assert_eq!(body.seek_tick(t), want, "tick {}", t);
        }
    }

    #[test]
    fn names_round_trip(names in proptest::collection::vec((any::<u32>(), "[a-z_]{0,20}"), 0..20)) {
        let t = EventNames::from_iter(names);
        prop_assert_eq!(EventNames::parse_section(&t.emit_section()), Some(t.clone()));
        let f = file(&[5], 1, &t);
        let (_, body) = open(&f).unwrap();
        prop_assert_eq!(body.names(), &t);
    }
}
