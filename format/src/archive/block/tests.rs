use super::*;
use crate::trace::RecordKind;
use proptest::prelude::*;

/// The instruction sets this CPU can decode with.
fn isas() -> Vec<Isa> {
    let mut isas = vec![Isa::Portable];
    if Isa::detect() != Isa::Portable {
        isas.push(Isa::detect());
    }
    isas
}

/// `cols` decoded with `isa`, `run` records at a time.
fn decode_with(
    cols: &Columns,
    n: usize,
    first_tick: u64,
    isa: Isa,
    run: usize,
) -> Result<Vec<TraceRecord>, ColumnError> {
    let mut d = ColumnDecoder::with_isa(cols, n, first_tick, isa)?;
    let mut out = Vec::new();
    while d.remaining() > 0 {
        d.decode_into(&mut out, run)?;
    }
    d.finish()?;
    Ok(out)
}

/// Encodes and decodes `records`, whole and in runs of several
/// lengths, with every instruction set this CPU has.
fn round_trip(records: &[TraceRecord]) -> Columns {
    let mut cols = Columns::default();
    encode(records, &mut cols);
    let first_tick = records.first().map_or(0, |r| r.tick);
    let mut back = Vec::new();
    decode(&cols, records.len(), first_tick, &mut back).unwrap();
    assert_eq!(back, records);
    for isa in isas() {
        for run in [1, 3, 8, 33, usize::MAX] {
            let back = decode_with(&cols, records.len(), first_tick, isa, run).unwrap();
            assert_eq!(back, records, "{isa:?}, runs of {run}");
        }
    }
    cols
}

#[test]
fn interleaved_streams_cost_one_op_and_one_dt_byte_each() {
    // Two sequential streams far apart, interleaved, one tick apart.
    let recs: Vec<_> = (0..1000u64)
        .map(|i| {
            let base = if i % 2 == 0 { 0x1000_0000 } else { 0x7fff_0000 };
            TraceRecord::access(i, 0, i % 3 == 0, base + (i / 2) * 64)
        })
        .collect();
    let cols = round_trip(&recs);
    assert_eq!(cols.op.len(), recs.len());
    assert_eq!(cols.dt.len(), recs.len());
    // The two first references to each stream are wide (slots start at 0).
    assert!(cols.aux.len() <= 8, "{:?}", cols.aux);
}

#[test]
fn rare_records_board_switches_and_long_steps_round_trip() {
    let recs = vec![
        TraceRecord::access(5, 0, false, 0x40),
        TraceRecord::new(5, 1, RecordKind::Tag { write: true }, 0x10003),
        TraceRecord::access(1 << 40, 1, true, (1 << 56) - 64),
        TraceRecord::new(u64::MAX, 255, RecordKind::GapBegin, 7),
        TraceRecord::new(3, 2, RecordKind::Reserved(12), (1 << 50) - 1),
        // bits 4..5 set: kept as they are.
        TraceRecord {
            tick: 4,
            packed: 0x30,
        },
    ];
    round_trip(&recs);
}

#[test]
fn damaged_columns_are_errors() {
    let recs: Vec<_> = (0..50u64)
        .map(|i| TraceRecord::access(i * 300, 0, false, i * 640))
        .collect();
    let mut cols = Columns::default();
    encode(&recs, &mut cols);
    let mut out = Vec::new();
    let mut short = cols.clone();
    short.aux.pop();
    assert!(decode(&short, 50, 0, &mut out).is_err());
    let mut long = cols.clone();
    long.op.push(0);
    assert!(decode(&long, 49, 0, &mut out).is_err());
    assert_eq!(decode(&long, 50, 0, &mut out), Err(ColumnError::Long("OP")));
    let mut reserved = cols.clone();
    reserved.op[3] = 0xFF;
    assert_eq!(
        decode(&reserved, 50, 0, &mut out),
        Err(ColumnError::ReservedOp(0xFF))
    );
    let bad = Columns {
        op: vec![OP_OTHER],
        dt: vec![0],
        aux: vec![
            0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ],
    };
    assert_eq!(decode(&bad, 1, 0, &mut out), Err(ColumnError::BadVarint));
    for isa in isas() {
        assert_eq!(
            decode_with(&long, 50, 0, isa, 7),
            Err(ColumnError::Long("OP"))
        );
        assert_eq!(
            decode_with(&reserved, 50, 0, isa, 7),
            Err(ColumnError::ReservedOp(0xFF))
        );
        assert_eq!(
            decode_with(&short, 50, 0, isa, 7),
            Err(ColumnError::Short("AUX"))
        );
    }
}

/// The encoder as format.md §13 words it: lines in an array by rank,
/// moved one by one; the closest line found in one pass.
fn reference_encode(records: &[TraceRecord]) -> Columns {
    let mut out = Columns::default();
    let Some(first) = records.first() else {
        return out;
    };
    let mut prev = first.tick;
    let mut board = 0u8;
    let mut slots = [0u64; SLOTS];
    for r in records {
        let b = (r.packed >> BOARD_SHIFT) as u8;
        if b != board {
            out.op.push(OP_BOARD);
            out.aux.push(b);
            board = b;
        }
        let dt = r.tick.wrapping_sub(prev);
        prev = r.tick;
        if dt < u64::from(DT_WIDE) {
            out.dt.push(dt as u8);
        } else {
            out.dt.push(DT_WIDE);
            put_varint(&mut out.aux, dt - u64::from(DT_WIDE));
        }
        let low = (r.packed & 0x3f) as u8;
        let value = (r.packed >> VALUE_SHIFT) & VALUE_MASK;
        if low > 1 {
            out.op.push(OP_OTHER);
            out.aux.push(low);
            put_varint(&mut out.aux, value);
            continue;
        }
        let mut best = (0, value.wrapping_sub(slots[0]) as i64);
        let mut small = false;
        for (s, &l) in slots.iter().enumerate() {
            let d = value.wrapping_sub(l) as i64;
            if zigzag(d) < u64::from(SMALL_DELTAS) {
                best = (s, d);
                small = true;
                break;
            }
            if d.unsigned_abs() < best.1.unsigned_abs() {
                best = (s, d);
            }
        }
        let (s, d) = best;
        let z = zigzag(d);
        let moved = if small { s } else { SLOTS - 1 };
        for i in (1..=moved).rev() {
            slots[i] = slots[i - 1];
        }
        slots[0] = value;
        if small {
            out.op.push(((s as u8 * SMALL_DELTAS + z as u8) << 1) | low);
        } else {
            out.op.push(OP_WIDE + ((s as u8) << 1) + low);
            put_varint(&mut out.aux, z - u64::from(SMALL_DELTAS));
        }
    }
    out
}

fn same_as_reference(records: &[TraceRecord]) {
    let cols = round_trip(records);
    assert_eq!(cols, reference_encode(records));
}

#[test]
fn ties_and_rank_fifteen_code_as_the_reference_does() {
    // Sixteen streams far apart fill every slot; then a line equally
    // far from two of them (the more recent wins, a wide step that
    // drops the least recent line), a small step from rank 15 (the
    // decoder's order then wraps around), wide steps and a small
    // step from rank 1.
    let mut recs: Vec<_> = (0..16u64)
        .map(|i| TraceRecord::access(i, 0, false, (i + 1) << 30))
        .collect();
    recs.push(TraceRecord::access(20, 0, false, (3 << 30) + (1 << 29)));
    recs.push(TraceRecord::access(21, 0, true, (2 << 30) + 64));
    recs.push(TraceRecord::access(22, 0, false, (1 << 30) + (1 << 20)));
    recs.push(TraceRecord::access(23, 0, false, 64 << 40));
    recs.push(TraceRecord::access(
        24,
        0,
        false,
        (1 << 30) + (1 << 20) - 128,
    ));
    same_as_reference(&recs);
}

proptest! {
    #[test]
    fn any_columns_decode_alike_with_every_isa(
        op in proptest::collection::vec(prop_oneof![8 => 0u8..0xC0, 1 => any::<u8>()], 0..300),
        dt in proptest::collection::vec(prop_oneof![8 => 0u8..0xFF, 1 => any::<u8>()], 0..300),
        aux in proptest::collection::vec(any::<u8>(), 0..64),
        first_tick in any::<u64>(),
        run in 1usize..80,
    ) {
        // Damaged columns among them: the same records or the same error.
        let cols = Columns { op, dt, aux };
        let n = cols.dt.len();
        let whole = decode_with(&cols, n, first_tick, Isa::Portable, usize::MAX);
        for isa in isas() {
            prop_assert_eq!(&decode_with(&cols, n, first_tick, isa, run), &whole, "{:?}", isa);
        }
    }

    #[test]
    fn many_streams_code_as_the_reference_does(steps in proptest::collection::vec((0usize..24, -5i64..5, any::<bool>(), 0u64..300), 0..600)) {
        // Up to 24 streams (more than the slots), small and wide steps.
        let mut lines: Vec<u64> = (0..24u64).map(|i| (i * 0x1234_5678) << 6).collect();
        let mut tick = 0u64;
        let recs: Vec<_> = steps.into_iter().map(|(s, dl, w, dt)| {
            tick += dt;
            lines[s] = lines[s].wrapping_add((dl * 64) as u64) & ((1 << 56) - 64);
            TraceRecord::access(tick, 0, w, lines[s])
        }).collect();
        same_as_reference(&recs);
    }

    #[test]
    fn any_records_round_trip(recs in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..200)) {
        let recs: Vec<_> = recs.into_iter().map(|(tick, packed)| TraceRecord { tick, packed }).collect();
        same_as_reference(&recs);
    }

    #[test]
    fn sorted_accesses_round_trip(steps in proptest::collection::vec((0u64..600, -40i64..40, 0u8..3, any::<bool>()), 0..300)) {
        let mut tick = 1000;
        let mut line = 1u64 << 30;
        let recs: Vec<_> = steps.into_iter().map(|(dt, dl, board, w)| {
            tick += dt;
            line = line.wrapping_add(dl as u64);
            TraceRecord::access(tick, board, w, line << 6)
        }).collect();
        same_as_reference(&recs);
    }
}
