use super::*;

fn record(g: Geometry) -> StatsRecord {
    let n = CounterLayout::new(&g).len();
    StatsRecord {
        board: 2,
        flags: 1,
        start_tick: 4096,
        end_tick: 8192,
        interval_log2: 12,
        geometry: g,
        tick_ps: 1250,
        unsent_before: 3,
        counters: (0..n as u32).map(|i| i * 7 + 1).collect(),
        reuse: None,
    }
}

fn reuse(hot: usize) -> ReuseRecord {
    ReuseRecord {
        depth: REUSE_DEPTH,
        page_shift: PAGE_LINE_SHIFT,
        hot_entries: 8,
        histogram: (0..=u32::from(REUSE_DEPTH)).map(|i| i * 3).collect(),
        skipped: 5,
        hot: (0..hot as u64)
            .map(|i| HotPage {
                page: (i << 33) | 7,
                count: 100 - i as u32,
            })
            .collect(),
    }
}

#[test]
fn records_with_the_rdhpu_section_come_back_with_or_without_counters() {
    let g = Geometry::ddr3_default();
    for counters in [true, false] {
        let mut r = record(g);
        if !counters {
            r.counters.clear();
        }
        r.reuse = Some(reuse(5));
        let packets = r.emit_packets(0, 3, 100);
        assert!(packets.iter().all(|(_, _, b)| b[4] == 2));
        let mut a = StatsAssembler::default();
        let got: Vec<StatsRecord> = packets
            .iter()
            .filter_map(|(_, _, b)| a.push(StatsPart::parse(b).unwrap()))
            .collect();
        assert_eq!(got, vec![r]);
        assert_eq!(a.finish(), 0);
    }
}

#[test]
fn a_record_of_counters_alone_is_a_version_1_packet() {
    let r = record(Geometry::ddr3_default());
    let (_, _, b) = r.emit_packets(0, 1, 1000).remove(0);
    assert_eq!(b[4], 1);
    assert_eq!(b.len(), 48 + 4 * r.counters.len());
}

#[test]
fn a_version_2_header_with_bad_sections_is_refused() {
    let mut r = record(Geometry::ddr3_default());
    r.reuse = Some(reuse(1));
    let (_, _, b) = r.emit_packets(0, 1, 1000).remove(0);
    for (at, value) in [(48, 1), (48, 6), (49, 3), (50, 0), (52, 40), (54, 1)] {
        let mut v = b.clone();
        v[at] = value;
        if at == 50 {
            v[51] = 0;
        }
        assert!(
            matches!(StatsPart::parse(&v), Err(StatsError::BadSections { .. })),
            "byte {at} = {value}"
        );
    }
}

#[test]
fn a_record_comes_back_from_its_packets_in_any_order() {
    let g = Geometry::preset("ddr4-64g").unwrap();
    let r = record(g);
    let packets = r.emit_packets(10, 3, 356);
    assert_eq!(packets.len(), r.counters.len().div_ceil(356));
    assert!(packets.iter().all(|(_, _, b)| b.len() <= 48 + 4 * 356));
    let mut a = StatsAssembler::default();
    let mut got = None;
    for (seq, port, b) in packets.iter().rev() {
        let p = StatsPart::parse(b).unwrap();
        assert_eq!((p.seq, p.port), (*seq, *port));
        assert_eq!(u64::from(p.port), p.seq % 3);
        got = a.push(p).or(got);
    }
    assert_eq!(got.unwrap(), r);
    assert_eq!(a.finish(), 0);
}

#[test]
fn layout_offsets_are_disjoint_and_cover_the_record() {
    let g = Geometry::ddr3_default();
    let l = CounterLayout::new(&g);
    let mut seen = vec![false; l.len()];
    for r in 0..l.ranks {
        for b in 0..l.banks {
            for c in BankCounter::ALL {
                assert!(!std::mem::replace(&mut seen[l.bank(r, b, c)], true));
            }
        }
        for c in RankCounter::ALL {
            assert!(!std::mem::replace(&mut seen[l.rank(r, c)], true));
        }
    }
    for bit in 0..l.line_bits {
        assert!(!std::mem::replace(&mut seen[l.toggles(bit)], true));
    }
    assert!(!std::mem::replace(&mut seen[l.over_limit()], true));
    assert!(!std::mem::replace(&mut seen[l.lost_fifo()], true));
    assert!(seen.iter().all(|&s| s));
    assert_eq!(l.len(), 2 * 8 * 8 + 2 * 2 + 26 + 2);
}

#[test]
fn damaged_packets_are_refused() {
    let r = record(Geometry::ddr3_default());
    let (_, _, b) = r.emit_packets(0, 1, 1000).remove(0);
    assert_eq!(
        StatsPart::parse(&b[..b.len() - 4]).unwrap_err(),
        StatsError::BadLength {
            got: b.len() - 4,
            want: b.len()
        }
    );
    let mut v = b.clone();
    v[4] = 2;
    assert_eq!(
        StatsPart::parse(&v).unwrap_err(),
        StatsError::BadLength {
            got: b.len(),
            want: b.len() + 8
        }
    );
    v[4] = 3;
    assert_eq!(StatsPart::parse(&v).unwrap_err(), StatsError::BadVersion(3));
    let mut v = b.clone();
    v[47] = 0;
    assert!(matches!(
        StatsPart::parse(&v),
        Err(StatsError::BadPart { .. })
    ));
    assert_eq!(StatsPart::parse(b"HMTT").unwrap_err(), StatsError::BadMagic);
}

#[test]
fn records_left_open_by_lost_parts_are_given_up_oldest_first_and_counted() {
    let g = Geometry::ddr3_default();
    let mut assembler = StatsAssembler::default();
    // Ten records of two parts each; only the first part of each arrives.
    for i in 0..10u64 {
        let mut r = record(g);
        r.start_tick = 4096 * (i + 1);
        r.end_tick = r.start_tick + 4096;
        let packets = r.emit_packets(0, 1, CounterLayout::new(&g).len() / 2 + 1);
        assert_eq!(packets.len(), 2);
        let part = StatsPart::parse(&packets[0].2).unwrap();
        assert!(assembler.push(part).is_none());
    }
    assert_eq!(assembler.open_records(), 10);
    assembler.give_up_beyond(4);
    assert_eq!(assembler.open_records(), 4);
    assert_eq!(assembler.incomplete_parts, 6);
    // The youngest four are the ones kept: their second parts complete them.
    for i in 6..10u64 {
        let mut r = record(g);
        r.start_tick = 4096 * (i + 1);
        r.end_tick = r.start_tick + 4096;
        let packets = r.emit_packets(0, 1, CounterLayout::new(&g).len() / 2 + 1);
        let done = assembler.push(StatsPart::parse(&packets[1].2).unwrap());
        assert_eq!(done, Some(r));
    }
    assert_eq!(assembler.finish(), 6);
}
