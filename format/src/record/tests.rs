use super::*;
use proptest::prelude::*;

#[test]
fn the_kind_field_tells_access_time_and_line_hi_apart() {
    let kind = |w: RecordWord| (w.0 >> field::KIND_SHIFT) & field::KIND_MASK;
    for write in [false, true] {
        let w = RecordWord::access_unchecked(DT_MAX, write, LINE_LO_MASK);
        assert!(kind(w) < field::KIND_TIME, "{w:?}");
        assert_eq!((w.0 >> field::W_SHIFT) & 1, u32::from(write));
    }
    let control = |op| RecordWord::control_unchecked(DT_MAX, op, PAYLOAD_MAX);
    assert_eq!(kind(control(Opcode::Time)), field::KIND_TIME);
    assert_eq!(kind(control(Opcode::LineHi)), field::KIND_LINE_HI);
    for op in [Opcode::Tag, Opcode::Cmd, Opcode::Lost, Opcode::Pad] {
        assert!(kind(control(op)) > field::KIND_LINE_HI, "{op:?}");
        assert_eq!((control(op).0 >> field::K_SHIFT) & 1, 1);
    }
    assert_eq!(control(Opcode::Time).dt(), DT_MAX);
    assert_eq!(control(Opcode::Time).0 >> field::DT_SHIFT, DT_MAX);
}

#[test]
fn word_layout_matches_the_spec() {
    let w = RecordWord::access(63, true, 0xabcdef).unwrap();
    assert_eq!(w.0, (63 << 26) | (1 << 24) | 0xabcdef);
    assert!(!w.is_control());
    let c = RecordWord::control(5, Opcode::Lost, 0x1fffff).unwrap();
    assert_eq!(c.0, (5 << 26) | (1 << 25) | (4 << 21) | 0x1fffff);
    assert_eq!(c.opcode(), Opcode::Lost);
    assert_eq!(
        RecordWord::control(0, Opcode::Pad, 0).unwrap().0,
        (1 << 25) | (15 << 21)
    );
    assert_eq!(
        RecordWord::access(64, false, 0),
        Err(RecordError::DtTooLarge(64))
    );
    assert_eq!(
        RecordWord::access(0, false, 1 << 24),
        Err(RecordError::LineLoTooLarge(1 << 24))
    );
    assert_eq!(
        RecordWord::control(0, Opcode::Tag, 1 << 21),
        Err(RecordError::PayloadTooLarge(1 << 21))
    );
    assert_eq!(
        RecordWord::tag_payload(1 << 20, false),
        Err(RecordError::TagEventTooLarge(1 << 20))
    );
    assert_eq!(RecordWord::from_le_bytes(w.to_le_bytes()), w);
}

#[test]
fn every_opcode_round_trips() {
    for bits in 0u8..16 {
        let op = Opcode::from_bits(bits);
        assert_eq!(op.bits(), bits);
        let w = RecordWord::control(17, op, 12345).unwrap();
        assert_eq!(
            w.split(),
            Word::Control {
                dt: 17,
                op,
                payload: 12345
            }
        );
    }
    assert!(matches!(Opcode::from_bits(5), Opcode::Reserved(5)));
    assert!(matches!(Opcode::from_bits(14), Opcode::Reserved(14)));
}

#[test]
fn reserved_opcode_is_reported_and_time_still_counts() {
    let mut d = WordDecoder::new(100);
    let bad = RecordWord::control(7, Opcode::Reserved(9), 0).unwrap();
    assert!(matches!(
        d.feed(bad),
        Err(CorruptWord::ReservedOpcode {
            op: 9,
            tick: 107,
            ..
        })
    ));
    let ok = d.feed(RecordWord::access(1, false, 5).unwrap()).unwrap();
    assert_eq!(ok.unwrap().tick, 108);
}

#[test]
fn gap_of_exactly_64_uses_time() {
    let enc = EventEncoder::default();
    let e = enc
        .encode(
            64,
            BoardEvent::Access {
                line: 1,
                write: false,
            },
        )
        .unwrap();
    assert_eq!(e.words().len(), 2);
    assert_eq!(e.words()[0].opcode(), Opcode::Time);
    assert_eq!(e.words()[0].payload(), 1);
    assert_eq!(e.words()[1].dt(), 0);
    let e = enc
        .encode(
            63,
            BoardEvent::Access {
                line: 1,
                write: false,
            },
        )
        .unwrap();
    assert_eq!(e.words().len(), 1);
    assert_eq!(e.words()[0].dt(), 63);
}

#[test]
fn line_hi_only_when_it_changes() {
    let enc = EventEncoder::default();
    let line = (0x15 << 24) | 0x42;
    let e = enc
        .encode(3, BoardEvent::Access { line, write: true })
        .unwrap();
    assert_eq!(e.words().len(), 2);
    assert_eq!(e.words()[0].opcode(), Opcode::LineHi);
    assert_eq!(e.words()[0].dt(), 3);
    assert_eq!(e.words()[1].dt(), 0);
    let e2 = e
        .next
        .encode(
            4,
            BoardEvent::Access {
                line: line + 1,
                write: false,
            },
        )
        .unwrap();
    assert_eq!(e2.words().len(), 1);
    // A tag does not change LINE_HI.
    let e3 = e2
        .next
        .encode(
            4,
            BoardEvent::Tag {
                event: 70,
                write: false,
            },
        )
        .unwrap();
    assert_eq!(e3.next.hi, 0x15);
}

#[test]
fn huge_gaps_need_fillers() {
    let enc = EventEncoder::default();
    let t = 1u64 << 40;
    assert!(enc.encode(t, BoardEvent::Cmd { code: 0 }).is_none());
    let mut state = enc;
    let mut words = vec![];
    while let Some((w, next)) = state.time_filler(t) {
        words.push(w);
        state = next;
    }
    let e = state.encode(t, BoardEvent::Cmd { code: 0 }).unwrap();
    words.extend_from_slice(e.words());
    let mut d = WordDecoder::new(0);
    let events: Vec<_> = words.iter().filter_map(|w| d.feed(*w).unwrap()).collect();
    assert_eq!(
        events,
        vec![TimedEvent {
            tick: t,
            event: BoardEvent::Cmd { code: 0 }
        }]
    );
}

#[test]
fn keeper_is_due_at_exactly_one_full_time_word() {
    let enc = EventEncoder { last: 1000, hi: 7 };
    assert_eq!(enc.keeper_tick(), 1000 + KEEPER_GAP);
    assert!(enc.time_filler(1000 + KEEPER_GAP - 1).is_none());
    let (w, next) = enc.time_filler(1000 + KEEPER_GAP).unwrap();
    assert_eq!(
        w,
        RecordWord::control_unchecked(0, Opcode::Time, PAYLOAD_MAX)
    );
    assert_eq!(
        next,
        EventEncoder {
            last: 1000 + KEEPER_GAP,
            hi: 7
        }
    );
    // A late filler still stands for exactly KEEPER_GAP ticks.
    let (_, late) = enc.time_filler(1000 + KEEPER_GAP + 500).unwrap();
    assert_eq!(late.last, 1000 + KEEPER_GAP);
}

#[test]
fn an_event_carries_at_most_one_time_word() {
    let enc = EventEncoder { last: 10, hi: 0 };
    let ev = BoardEvent::Access {
        line: 3 << 24,
        write: false,
    };
    // The longest gap one TIME word carries: TIME, LINE_HI, ACCESS.
    let e = enc.encode(10 + GAP_TOO_LONG - 1, ev).unwrap();
    assert_eq!(e.len(), MAX_WORDS_PER_EVENT);
    assert_eq!(e.words()[0].payload(), PAYLOAD_MAX);
    assert_eq!(e.words()[1].dt(), 63);
    assert!(!enc.gap_too_long(10 + GAP_TOO_LONG - 1));
    // One tick more needs two TIME words: not encodable.
    assert!(enc.gap_too_long(10 + GAP_TOO_LONG));
    assert!(enc.encode(10 + GAP_TOO_LONG, ev).is_none());
    assert!(enc
        .encode(10 + GAP_TOO_LONG, BoardEvent::Lost { count: 1 })
        .is_none());
}

fn any_event() -> impl Strategy<Value = BoardEvent> {
    prop_oneof![
        (0u64..(1 << 45), any::<bool>())
            .prop_map(|(line, write)| BoardEvent::Access { line, write }),
        (0u32..(1 << 20), any::<bool>())
            .prop_map(|(event, write)| BoardEvent::Tag { event, write }),
        (0u32..64).prop_map(|code| BoardEvent::Cmd { code }),
        (1u32..=PAYLOAD_MAX).prop_map(|count| BoardEvent::Lost { count }),
    ]
}

proptest! {
    #[test]
    fn encode_then_decode_gives_the_events_back(
        evs in proptest::collection::vec((0u64..300_000_000, any_event()), 1..200)
    ) {
        let mut enc = EventEncoder::default();
        let mut t = 0u64;
        let mut words = vec![];
        let mut expect = vec![];
        for (gap, ev) in evs {
            // Gaps around the 64-tick boundary matter most.
            let gap = if gap.is_multiple_of(3) { gap % 130 } else { gap };
            t += gap;
            while let Some((w, next)) = enc.time_filler(t) {
                words.push(w);
                enc = next;
            }
            let e = enc.encode(t, ev).unwrap();
            prop_assert!(e.words().iter().filter(|w| w.is_control() && w.opcode() == Opcode::Time).count() <= 1);
            words.extend_from_slice(e.words());
            enc = e.next;
            expect.push(TimedEvent { tick: t, event: ev });
        }
        let mut d = WordDecoder::new(0);
        let got: Vec<_> = words.iter().filter_map(|w| d.feed(*w).unwrap()).collect();
        prop_assert_eq!(got, expect);
    }

    #[test]
    fn encode_single_is_encode_when_one_word_is_enough(
        last in 0u64..1000, gap in 0u64..200, hi in 0u32..4, ev in any_event()
    ) {
        let enc = EventEncoder { last, hi };
        let ev = match ev {
            // Keep LINE_HI near `hi` so both cases occur.
            BoardEvent::Access { line, write } => BoardEvent::Access {
                line: (u64::from(hi + (line as u32 & 1)) << 24) | (line & LINE_LO_MASK),
                write,
            },
            other => other,
        };
        let full = enc.encode(last + gap, ev).unwrap();
        match enc.encode_single(last + gap, ev) {
            Some((w, next)) => {
                prop_assert_eq!(full.words(), &[w][..]);
                prop_assert_eq!(full.next, next);
            }
            None => prop_assert!(full.len() > 1),
        }
    }

    #[test]
    fn encode_short_is_encode_when_no_line_hi_is_needed(
        last in 0u64..1000, gap in prop_oneof![0u64..300, 0u64..(GAP_TOO_LONG + 10)],
        hi in 0u32..4, ev in any_event()
    ) {
        let enc = EventEncoder { last, hi };
        let ev = match ev {
            BoardEvent::Access { line, write } => BoardEvent::Access {
                line: (u64::from(hi + (line as u32 & 1)) << 24) | (line & LINE_LO_MASK),
                write,
            },
            other => other,
        };
        let full = enc.encode(last + gap, ev);
        match enc.encode_short(last + gap, ev) {
            Some((time, w, next)) => {
                let full = full.unwrap();
                let mut words: Vec<RecordWord> = time.into_iter().collect();
                words.push(w);
                prop_assert_eq!(full.words(), &words[..]);
                prop_assert_eq!(full.next, next);
            }
            None => prop_assert!(full.is_none_or(|f| f.words().iter().any(|w| w.is_control() && w.opcode() == Opcode::LineHi))),
        }
    }

    #[test]
    fn access_fields_round_trip(dt in 0u32..64, write in any::<bool>(), lo in 0u64..(1 << 24)) {
        let w = RecordWord::access(dt, write, lo).unwrap();
        prop_assert_eq!(w.split(), Word::Access { dt: dt as u8, write, line_lo: lo as u32 });
    }
}
