//! The word loops against the format crate's word-by-word decoder.

use super::*;
use hmtt_format::record::{BoardEvent, RecordWord, WordDecoder};
use proptest::prelude::*;

/// The format crate's word-by-word decoder, as records.
fn reference(
    words: &[u32],
    t0: u64,
    board: u8,
    pa_of: impl Fn(u64) -> u64,
) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
    let mut dec = WordDecoder::new(t0);
    let (mut out, mut counts, mut lost, mut corrupt) = (Vec::new(), [0u64; 6], 0, 0);
    for &w in words {
        match dec.feed(RecordWord(w)) {
            Ok(Some(ev)) => out.push(match ev.event {
                BoardEvent::Access { line, write } => {
                    counts[usize::from(write)] += 1;
                    TraceRecord::access(ev.tick, board, write, pa_of(line))
                }
                BoardEvent::Tag { event, write } => {
                    counts[2 + usize::from(write)] += 1;
                    TraceRecord::new(ev.tick, board, RecordKind::Tag { write }, u64::from(event))
                }
                BoardEvent::Cmd { code } => {
                    counts[4] += 1;
                    TraceRecord::new(ev.tick, board, RecordKind::Cmd, u64::from(code))
                }
                BoardEvent::Lost { count } => {
                    counts[5] += 1;
                    lost += u64::from(count);
                    TraceRecord::new(ev.tick, board, RecordKind::Lost, u64::from(count))
                }
            }),
            Ok(None) => {}
            Err(_) => corrupt += 1,
        }
    }
    (out, counts, lost, corrupt, dec.time())
}

/// The batch decoder's records and counts; `how`: the linear
/// mapping's word loop to use instead of the generic one.
fn fast<M: LineToPa>(
    words: &[u32],
    t0: u64,
    board: u8,
    map: M,
) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
    run_batch(words, |bytes, out, c| {
        decode_words(bytes, t0, board, map, out, c)
    })
}

fn fast_by<M: LineToPa>(
    words: &[u32],
    t0: u64,
    board: u8,
    map: M,
    how: WordLoop,
) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
    run_batch(words, |bytes, out, c| {
        decode_words_by(bytes, t0, board, map, out, c, how)
    })
}

fn run_batch(
    words: &[u32],
    decode: impl FnOnce(&[u8], &mut Vec<TraceRecord>, &mut WordCounts) -> u64,
) -> (Vec<TraceRecord>, [u64; 6], u64, u64, u64) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    // Records already in the buffer stay and the new ones follow.
    let mut out = vec![TraceRecord::default(); 3];
    let mut c = WordCounts::default();
    let end = decode(&bytes, &mut out, &mut c);
    assert_eq!(out[..3], [TraceRecord::default(); 3]);
    out.drain(..3);
    let counts = [
        c.accesses - c.writes,
        c.writes,
        c.control[0],
        c.control[1],
        c.control[2],
        c.control[3],
    ];
    (out, counts, c.lost, c.corrupt, end)
}

/// Every word loop this machine has.
fn word_loops() -> Vec<WordLoop> {
    let mut loops = vec![WordLoop::Scalar];
    if WordLoop::detect() != WordLoop::Scalar {
        loops.push(WordLoop::detect());
    }
    loops
}

/// Mostly ACCESS words, with every CONTROL opcode (reserved ones too).
fn word() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => any::<u32>().prop_map(|w| w & !(1 << 25)),
        2 => any::<u32>().prop_map(|w| w | (1 << 25)),
        1 => (0u32..64, 0u32..16, any::<u32>())
            .prop_map(|(dt, op, p)| (dt << 26) | (1 << 25) | (op << 21) | (p & 0x1f_ffff)),
    ]
}

proptest! {
    #[test]
    fn batch_decode_equals_the_word_decoder(
        words in proptest::collection::vec(word(), 0..400),
        t0 in 0u64..(1 << 60),
        board: u8,
    ) {
        let g = Geometry::preset("ddr4-64g").unwrap();
        let linear = AddressMapping::linear(g);
        let mask = g.lines() - 1;
        let want = reference(&words, t0, board, |l| linear.pa_of(l));
        prop_assert_eq!(&fast(&words, t0, board, Linear::new(mask)), &want);
        for how in word_loops() {
            prop_assert_eq!(&fast_by(&words, t0, board, Linear::new(mask), how), &want, "{:?}", how);
        }
        let join = ChannelJoin { channels: 3, channel: 2, shift: 12 };
        prop_assert_eq!(
            fast(&words, t0, board, LinearJoin { mask, join }),
            reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
        );
        prop_assert_eq!(
            fast(&words, t0, board, Mapped { mapping: &linear, join: Some(join) }),
            reference(&words, t0, board, |l| join.join(linear.pa_of(l)))
        );
        for how in word_loops() {
            let joined = reference(&words, t0, board, |l| join.join(linear.pa_of(l)));
            prop_assert_eq!(&fast_by(&words, t0, board, LinearJoin { mask, join }, how), &joined, "{:?}", how);
            let mapped = Mapped { mapping: &linear, join: Some(join) };
            prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &joined, "{:?}", how);
        }
    }
}

/// Runs of ACCESS, TIME and LINE_HI words (the vector loop's case)
/// with now and then any other word, so that eight-word steps both
/// with and without a rare word occur; LINE_HI payloads above the
/// geometry's lines too.
fn plain_word() -> impl Strategy<Value = u32> {
    let control = |op: u32| {
        (0u32..64, any::<u32>())
            .prop_map(move |(dt, p)| (dt << 26) | (1 << 25) | (op << 21) | (p & 0x1f_ffff))
    };
    prop_oneof![
        40 => any::<u32>().prop_map(|w| w & !(1 << 25)),
        4 => control(0),
        8 => control(1),
        1 => (0u32..16).prop_flat_map(control),
    ]
}

proptest! {
    #[test]
    fn every_word_loop_equals_the_word_decoder_on_plain_runs(
        words in proptest::collection::vec(plain_word(), 0..600),
        t0 in 0u64..(1 << 62),
        board: u8,
        preset in prop_oneof![Just("ddr4-64g"), Just("ddr3-4g"), Just("ddr2-2g"), Just("ddr-512m")],
    ) {
        let g = Geometry::preset(preset).unwrap();
        let linear = AddressMapping::linear(g);
        let mask = g.lines() - 1;
        let want = reference(&words, t0, board, |l| linear.pa_of(l));
        let join = ChannelJoin { channels: 3, channel: 1, shift: 13 };
        let joined = reference(&words, t0, board, |l| join.join(linear.pa_of(l)));
        // A hashed mapping where the geometry has one.
        let xor = (preset == "ddr3-4g").then(|| {
            AddressMapping::from_toml(hmtt_format::mapping::DDR3_BANK_XOR_TOML, g).unwrap()
        });
        for how in word_loops() {
            prop_assert_eq!(&fast_by(&words, t0, board, Linear::new(mask), how), &want, "{:?}", how);
            prop_assert_eq!(&fast_by(&words, t0, board, LinearJoin { mask, join }, how), &joined, "{:?}", how);
            let mapped = Mapped { mapping: &linear, join: None };
            prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &want, "{:?}", how);
            if let Some(xor) = &xor {
                let mapped = Mapped { mapping: xor, join: Some(join) };
                let hashed = reference(&words, t0, board, |l| join.join(xor.pa_of(l)));
                prop_assert_eq!(&fast_by(&words, t0, board, mapped, how), &hashed, "{:?}", how);
            }
        }
    }
}

#[test]
fn the_vector_loop_is_used_where_the_cpu_has_it() {
    #[cfg(target_arch = "x86_64")]
    assert_eq!(
        WordLoop::detect() == WordLoop::Avx2,
        std::arch::is_x86_feature_detected!("avx2")
    );
}
