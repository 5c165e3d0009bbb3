use super::*;
use proptest::prelude::*;

fn one_pass(lines: &[u64], window: usize) -> StreamReport {
    let mut s = Streams::new(window, DEFAULT_MIN_LEN);
    for &line in lines {
        s.access(0, line);
    }
    s.finish()
}

/// The report of `lines` cut at `cut`, each part run apart and merged;
/// `None` when the merge did not converge.
fn merged(lines: &[u64], cut: usize, window: usize) -> Option<StreamReport> {
    let mut first = Streams::new(window, DEFAULT_MIN_LEN);
    for &line in &lines[..cut] {
        first.access(0, line);
    }
    let mut later = Streams::for_later_part(window, DEFAULT_MIN_LEN);
    for &line in &lines[cut..] {
        later.access(0, line);
    }
    first.merge(later).ok()?;
    Some(first.finish())
}

/// A descending chain of the part before is continued by the later
/// part's first reference, which the part alone takes for the start
/// of an ascending chain: its ascending chain is one longer than the
/// one-pass detector's.
#[test]
fn a_chain_the_part_alone_starts_earlier_is_merged_shorter() {
    let before = [1000, 500, 10, 9];
    let after: Vec<u64> = (8..400).chain(5000..5100).collect();
    let lines: Vec<u64> = before.iter().copied().chain(after).collect();
    for window in [4, 32, 100] {
        let merged = merged(&lines, before.len(), window).expect("converges");
        assert_eq!(merged, one_pass(&lines, window), "window {window}");
    }
}

/// The same, a later part's chain born among its first references
/// (continuing one of the part before) ending past them, taken in runs:
/// the loop keeps the chain's end for the merge.
#[test]
fn a_chain_of_the_head_ending_in_a_run_is_merged() {
    let before = [1000, 500, 10, 9];
    let after: Vec<u64> = (8..HEAD_REFERENCES + 5000)
        .chain((0..5000).map(|i| (1 << 30) + i * 7))
        .collect();
    let lines: Vec<u64> = before.iter().copied().chain(after).collect();
    for window in [4, 32] {
        let mut first = Streams::new(window, DEFAULT_MIN_LEN);
        for &line in &before {
            first.access(0, line);
        }
        let mut later = Streams::for_later_part(window, DEFAULT_MIN_LEN);
        for run in lines[before.len()..].chunks(2048) {
            later.access_run(0, run.iter().copied());
        }
        first.merge(later).expect("converges");
        assert_eq!(first.finish(), one_pass(&lines, window), "window {window}");
    }
}

proptest! {
    /// A run taken at once gives the detector of its references taken
    /// one at a time, for any window (with and without the index), for
    /// the part that follows another (which keeps its first references)
    /// and with chain ends of another address space in the window.
    #[test]
    fn a_run_is_its_references_one_at_a_time(
        steps in prop::collection::vec((-2i64..3, 0u8..4), 1..2000),
        runs in prop::collection::vec(1usize..300, 1..20),
        window in prop::sample::select(vec![1usize, 3, 32, 64, 65]),
        later in any::<bool>(),
        head_left in 0u64..1000,
        foreign in 0usize..80,
    ) {
        let make = || if later {
            Streams::for_later_part(window, DEFAULT_MIN_LEN)
        } else {
            Streams::new(window, DEFAULT_MIN_LEN)
        };
        let mut at = 1u64 << 20;
        let lines: Vec<u64> = steps
            .iter()
            .map(|&(step, jump)| {
                at = if jump == 0 { at + 4096 } else { at.wrapping_add_signed(step) };
                at
            })
            .collect();
        let (mut one, mut run) = (make(), make());
        // Chain ends of another address space on the lines to come, which
        // the runs' references must neither continue nor lose.
        for &line in lines.iter().take(foreign) {
            one.access(1, line.wrapping_sub(1));
            run.access(1, line.wrapping_sub(1));
        }
        if later {
            // A later part's first references, all but `head_left`: short
            // chains, then one that the references above continue, so
            // that chains born among them end in the loop.
            let filler = HEAD_REFERENCES - head_left;
            let first: Vec<u64> = (0..filler)
                .map(|i| match filler - i {
                    ..=8 => (1 << 20) - (filler - i),
                    _ => (1 << 30) + (i / 6 % 50) * 4096 + i % 6,
                })
                .collect();
            for &line in &first {
                one.access(0, line);
            }
            run.access_run(0, first.iter().copied());
        }
        for &line in &lines {
            one.access(0, line);
        }
        let mut rest = &lines[..];
        for &n in runs.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at(n.min(rest.len()));
            run.access_run(0, now.iter().copied());
            rest = later;
        }
        prop_assert_eq!(one.pos, run.pos);
        // The counters between runs are those of the chains that
        // ended (a partial analysis saves them), not only the report.
        let counters = |s: &Streams| {
            (s.references, s.stream_references, s.streams, s.longest, s.lengths)
        };
        prop_assert_eq!(counters(&one), counters(&run));
        let ends = |s: &Streams| {
            s.ring
                .iter()
                .map(|e| (e.space, e.line, e.dir, e.len, e.live, e.born))
                .collect::<Vec<_>>()
        };
        prop_assert_eq!(ends(&one), ends(&run));
        prop_assert_eq!(&one.lines, &run.lines);
        prop_assert_eq!(&one.slots_expecting, &run.slots_expecting);
        // What a later part keeps for the merge.
        let head = |s: &Streams| serde_json::to_string(&s.head).expect("JSON");
        prop_assert_eq!(head(&one), head(&run));
        prop_assert_eq!(one.finish(), run.finish());
    }

    /// Runs up and down from near where the run before ended (turns
    /// at a line are common, and the ones at the cut are those that
    /// make the parts' chains differ), jumps between them, cut
    /// anywhere: merged or refused, never different.
    #[test]
    fn parts_merge_into_the_one_pass_report(
        runs in prop::collection::vec((-3i64..4, 1u64..40, any::<bool>(), 0u64..8), 1..200),
        cut_share in 0.0f64..1.0,
        window in prop::sample::select(vec![1usize, 3, 32, 64, 65, 100]),
    ) {
        let (mut lines, mut at) = (Vec::new(), 1u64 << 20);
        for (from_end, len, up, jump) in runs {
            at = at.wrapping_add_signed(from_end);
            if jump == 0 {
                at += 1 << 10;
            }
            for _ in 0..len {
                lines.push(at);
                at = if up { at + 1 } else { at - 1 };
            }
        }
        let cut = ((lines.len() as f64) * cut_share) as usize;
        if let Some(merged) = merged(&lines, cut, window) {
            prop_assert_eq!(merged, one_pass(&lines, window));
        }
    }
}
