use std::io::Cursor;

use super::*;
use crate::events::EventNames;
use crate::indexed::{CommonHeader, IndexBuilder};
use crate::trace::{RecordKind, TraceHeader, HEADER_LEN as TRACE_HEADER_LEN};

/// A complete trace file of `records` with `names`, laid out as the merge
/// writes it (index stride 4096).
fn trace_file(records: &[TraceRecord], names: &EventNames) -> Vec<u8> {
    let mut idx = IndexBuilder::new(crate::trace::DEFAULT_INDEX_STRIDE);
    idx.push_block(0, records);
    let names_bytes = names.emit_section();
    let h = TraceHeader {
        common: CommonHeader {
            first_tick: records.first().map_or(0, |r| r.tick),
            last_tick: records.last().map_or(0, |r| r.tick),
            start_ns: 1_700_000_000_000_000_000,
            tick_ps: 1250,
            ..CommonHeader::finished(
                TRACE_HEADER_LEN,
                RECORD_LEN,
                records.len() as u64,
                &idx,
                names_bytes.len(),
            )
        },
        geometry_bytes: (15, 0x13, 7),
        boards: 2,
        packets: 10,
        packets_missing: 1,
        packets_duplicate: 2,
        packets_rejected: 3,
    };
    let mut f = h.emit().to_vec();
    for r in records {
        f.extend_from_slice(&r.to_bytes());
    }
    f.extend_from_slice(&idx.emit());
    f.extend_from_slice(&names_bytes);
    crate::indexed::seal_file(&mut f);
    f
}

/// A trace like the merge's: two boards, mostly accesses in a few
/// streams, some tags, a loss and a gap.
fn sample_records(n: u64) -> Vec<TraceRecord> {
    let mut tick = 1000u64;
    (0..n)
        .map(|i| {
            tick += [4, 4, 8, 4, 300, 4, 0, 12][(i % 8) as usize];
            let board = ((i / 7) % 2) as u8;
            match i % 997 {
                5 => TraceRecord::new(tick, board, RecordKind::Tag { write: true }, 0x10000 + i),
                6 => TraceRecord::new(tick, board, RecordKind::Lost, 3),
                7 => TraceRecord::new(tick, board, RecordKind::GapBegin, 2),
                8 => TraceRecord::new(tick, board, RecordKind::GapEnd, 2),
                _ => {
                    let stream = (i * 7 % 3) * 0x4000_0000;
                    TraceRecord::access(tick, board, i % 5 == 0, stream + (i / 3) * 64)
                }
            }
        })
        .collect()
}

fn names() -> EventNames {
    EventNames::from_iter(vec![(0x40, "sort_begin".into()), (0x41, "sort_end".into())])
}

fn pack_bytes(trace: &[u8], block_records: u32) -> Vec<u8> {
    let opts = ArchiveOptions {
        block_records,
        ..ArchiveOptions::default()
    };
    let (out, summary) = pack(trace, Cursor::new(Vec::new()), opts).unwrap();
    let bytes = out.into_inner();
    assert_eq!(summary.bytes, bytes.len() as u64);
    bytes
}

fn unpack_bytes(archive: &[u8]) -> Result<Vec<u8>, ArchiveError> {
    let view = ArchiveView::new_checked(archive)?;
    let mut out = Vec::new();
    let n = unpack(&view, &mut out)?;
    assert_eq!(n, out.len() as u64);
    Ok(out)
}

#[test]
fn unpack_gives_the_trace_back_byte_for_byte() {
    let recs = sample_records(10_000);
    let trace = trace_file(&recs, &names());
    for block_records in [1, 999, 4096, 10_000, 1 << 18] {
        let archive = pack_bytes(&trace, block_records);
        assert!(unpack_bytes(&archive).unwrap() == trace, "{block_records}");
        let view = ArchiveView::new_checked(&archive).unwrap();
        assert_eq!(
            view.block_count(),
            10_000usize.div_ceil(block_records as usize)
        );
        assert_eq!(view.names(), &names());
        assert_eq!(
            view.trace_header(),
            TraceView::new_checked(&trace).unwrap().header()
        );
    }
    // The archive is far smaller than the trace.
    let archive = pack_bytes(&trace, 1 << 18);
    assert!(archive.len() * 8 < trace.len(), "{}", archive.len());
}

#[test]
fn a_trace_whose_records_are_not_aligned_packs_the_same() {
    let trace = trace_file(&sample_records(5000), &names());
    // u64 storage, so that one byte in is surely misaligned.
    let mut store = vec![0u64; trace.len() / 8 + 2];
    // SAFETY: u64 storage seen as its bytes.
    let bytes = unsafe {
        core::slice::from_raw_parts_mut(store.as_mut_ptr().cast::<u8>(), store.len() * 8)
    };
    bytes[1..1 + trace.len()].copy_from_slice(&trace);
    let misaligned = &bytes[1..1 + trace.len()];
    assert!(crate::trace::records_in_bytes(&misaligned[TRACE_HEADER_LEN..]).is_none());
    assert!(pack_bytes(misaligned, 999) == pack_bytes(&trace, 999));
}

#[test]
fn empty_and_unfinished_traces_round_trip() {
    let empty = trace_file(&[], &EventNames::default());
    let archive = pack_bytes(&empty, 100);
    assert_eq!(ArchiveView::new_checked(&archive).unwrap().block_count(), 0);
    assert_eq!(unpack_bytes(&archive).unwrap(), empty);

    // A writer that died: no complete flag, a record cut in the middle.
    let recs = sample_records(300);
    let mut unfinished = TraceHeader::default().emit().to_vec();
    for r in &recs {
        unfinished.extend_from_slice(&r.to_bytes());
    }
    unfinished.truncate(unfinished.len() - 5);
    let archive = pack_bytes(&unfinished, 64);
    assert_eq!(unpack_bytes(&archive).unwrap(), unfinished);
    let any = AnyTrace::new_checked(&archive).unwrap();
    let plain = TraceView::new_checked(&unfinished).unwrap();
    assert_eq!(any.header(), plain.header());
    assert_eq!(any.len(), 299);
    let back: Vec<_> = any.records().map(Result::unwrap).collect();
    assert!(plain.records().eq(back));
}

#[test]
fn a_seek_decodes_the_block_that_holds_the_time_and_the_one_before() {
    let recs = sample_records(50_000);
    let trace = trace_file(&recs, &names());
    let archive = pack_bytes(&trace, 4096);
    let plain = AnyTrace::new_checked(&trace).unwrap();
    for t in [
        0,
        1,
        1001,
        1004,
        500_000,
        recs[4095].tick,
        recs[4096].tick,
        recs[49_999].tick,
        u64::MAX,
    ] {
        let any = AnyTrace::new_checked(&archive).unwrap();
        assert!(matches!(any, AnyTrace::Archive(_)));
        assert_eq!(any.blocks_decoded(), 0);
        let got: Vec<_> = any
            .records_from_tick(t)
            .unwrap()
            .take(10)
            .map(Result::unwrap)
            .collect();
        let want: Vec<_> = plain
            .records_from_tick(t)
            .unwrap()
            .take(10)
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want, "tick {t}");
        // The seek decoded at most the block of the first record and the
        // one before it (to check the last tick the seek skipped by);
        // reading on decoded only the blocks of the records read.
        let p = recs.partition_point(|r| r.tick < t);
        let mut blocks: std::collections::BTreeSet<usize> =
            (p..(p + 10).min(recs.len())).map(|i| i / 4096).collect();
        let landed = if p == recs.len() {
            recs.len().div_ceil(4096)
        } else {
            p / 4096
        };
        if landed > 0 {
            blocks.insert(landed - 1);
        }
        assert_eq!(any.blocks_decoded(), blocks.len() as u64, "tick {t}");
    }
    // Reading on decodes each block once.
    let any = AnyTrace::new_checked(&archive).unwrap();
    assert_eq!(any.records().count(), recs.len());
    assert_eq!(any.blocks_decoded(), 50_000u64.div_ceil(4096));
}

#[test]
fn damaged_archives_are_errors_or_read_back_unchanged() {
    let recs = sample_records(3000);
    let trace = trace_file(&recs, &names());
    let archive = pack_bytes(&trace, 1000);
    for pos in 0..archive.len() {
        for flip in [0x01u8, 0x80] {
            let mut bad = archive.clone();
            bad[pos] ^= flip;
            // Reserved fields may change without harm; anything else is an
            // error, never a different trace.
            if let Ok(back) = unpack_bytes(&bad) {
                assert!(back == trace, "byte {pos} ^ {flip:#x}: a different trace");
            }
        }
    }
    for len in 0..archive.len() {
        let err = unpack_bytes(&archive[..len]).unwrap_err().to_string();
        assert!(!err.is_empty());
    }
    let mut incomplete = archive.clone();
    incomplete[12] = 0;
    assert!(matches!(
        ArchiveView::new_checked(&incomplete),
        Err(ArchiveError::Incomplete)
    ));
    let msg = ArchiveView::new_checked(&trace).unwrap_err().to_string();
    assert!(msg.starts_with("not an hmtt trace archive"), "{msg}");
}

#[test]
fn a_damaged_block_is_an_error_item_of_the_reader() {
    let recs = sample_records(3000);
    let archive = pack_bytes(&trace_file(&recs, &names()), 1000);
    let view = ArchiveView::new_checked(&archive).unwrap();
    let second = *view.block_entry(1).unwrap();
    let mut bad = archive.clone();
    let mid = (second.offset + u64::from(second.len) / 2) as usize;
    bad[mid] ^= 0x55;
    let any = AnyTrace::new_checked(&bad).unwrap();
    let items: Vec<_> = any.records().collect();
    assert_eq!(items.len(), 1001);
    assert!(items[..1000].iter().all(Result::is_ok));
    let msg = items[1000].as_ref().unwrap_err().to_string();
    assert!(msg.starts_with("archive block 1 damaged"), "{msg}");
}

#[test]
fn header_round_trip_and_known_bytes() {
    let h = ArchiveHeader {
        flags: FLAG_COMPLETE,
        trace_header_len: 128,
        record_count: 5,
        block_count: 1,
        block_records: 1 << 18,
        trailer_offset: 200,
        trailer_len: 30,
        trailer_raw_len: 300,
    };
    let b = h.emit();
    assert_eq!(&b[0..16], b"HMTTARC\0\x01\x00\x40\x00\x01\x00\x80\x00");
    assert_eq!(ArchiveHeader::parse(&b).unwrap(), (h, HEADER_LEN));
}

/// The index entry of block `b` in `archive`'s bytes.
fn entry_at(archive: &[u8], blocks: usize, b: usize) -> usize {
    archive.len() - (blocks - b) * BLOCK_ENTRY_LEN
}

#[test]
fn a_seek_past_a_block_whose_index_lowers_its_last_tick_is_an_error() {
    let recs = sample_records(20_000);
    let archive = pack_bytes(&trace_file(&recs, &names()), 4096);
    let blocks = 20_000usize.div_ceil(4096);
    // Block 2's last tick lowered to its first: a seek between the two
    // would skip the block's records.
    let at = entry_at(&archive, blocks, 2);
    let first = crate::bytes::u64_at(&archive[at..], field::ENTRY_FIRST_TICK);
    let mut bad = archive.clone();
    crate::bytes::put_u64(&mut bad[at..], field::ENTRY_LAST_TICK, first);
    let t = recs[2 * 4096 + 100].tick;
    let any = AnyTrace::new_checked(&bad).unwrap();
    let err = match any.records_from_tick(t) {
        Err(e) => e.to_string(),
        Ok(mut it) => it
            .find_map(Result::err)
            .expect("the lie is found")
            .to_string(),
    };
    assert!(err.contains("archive block 2"), "{err}");
    // The untouched archive seeks there and reads on.
    let any = AnyTrace::new_checked(&archive).unwrap();
    let got = any.records_from_tick(t).unwrap().next().unwrap().unwrap();
    assert_eq!(got, recs[2 * 4096 + 100]);
}

#[test]
fn claimed_counts_larger_than_the_file_can_hold_are_refused_before_allocating() {
    let recs = sample_records(3000);
    let archive = pack_bytes(&trace_file(&recs, &names()), 4096);
    // More records a block than any archive may have.
    let mut bad = archive.clone();
    crate::bytes::put_u32(&mut bad, field::BLOCK_RECORDS, u32::MAX);
    let msg = ArchiveView::new_checked(&bad).unwrap_err().to_string();
    assert!(msg.contains("records a block"), "{msg}");
    // One block claiming MAX_BLOCK_RECORDS everywhere it is counted: the
    // header, the index and the block's own header agree, but its small
    // DT frame cannot hold that many bytes.
    let n = MAX_BLOCK_RECORDS;
    let mut bad = archive.clone();
    crate::bytes::put_u32(&mut bad, field::BLOCK_RECORDS, n);
    crate::bytes::put_u64(&mut bad, field::RECORD_COUNT, u64::from(n));
    let at = entry_at(&bad, 1, 0);
    crate::bytes::put_u32(&mut bad[at..], field::ENTRY_RECORDS, n);
    let block = crate::bytes::u64_at(&bad[at..], field::ENTRY_OFFSET) as usize;
    crate::bytes::put_u32(&mut bad[block..], field::BLOCK_RECORD_COUNT, n);
    for c in 0..COLUMNS.len() {
        let raw = field::BLOCK_COLUMNS + 8 * c;
        crate::bytes::put_u32(&mut bad[block..], raw..raw + 4, n);
    }
    match ArchiveView::new_checked(&bad) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(view) => {
            let mut out = Vec::new();
            let msg = view.decode_block(0, &mut out).unwrap_err().to_string();
            assert!(msg.contains("claims"), "{msg}");
            assert!(
                out.capacity() < 1 << 20,
                "{} records allocated",
                out.capacity()
            );
        }
    }
}

#[test]
fn a_writer_refuses_more_records_a_block_than_readers_take() {
    let opts = ArchiveOptions::with_level(MAX_BLOCK_RECORDS + 1, 1);
    assert!(ArchiveWriter::new(Cursor::new(Vec::new()), opts).is_err());
}
