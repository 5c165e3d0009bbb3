use super::*;
use proptest::prelude::*;

/// The counters of the chains that ended (references, references in
/// streams, streams, longest, lengths), then the chain ends (space, line,
/// direction, length, live, birth) in slot order.
type State = (
    u64,
    u64,
    u64,
    u64,
    [u64; 65],
    Vec<(u32, u64, i8, u64, bool, u64)>,
);

/// The detector's rules written out plainly, without the index of
/// expected lines or the run loop: the oracle the detector is held to.
///
/// - A ring of `window` slots, written in turn: each reference writes the
///   slot at `pos`, then `pos` moves on by one (round the ring).
/// - A reference to `line` of `space` continues a live chain end of the
///   same space when it is the end's line + 1 (the end ascending or a
///   single reference) or its line - 1 (descending or single), wrapping;
///   of those it continues the newest (the slots from `pos - 1` down,
///   round the ring). That end dies, and the new end takes its chain:
///   the direction it was continued in, its length + 1, its birth.
///   Otherwise the reference starts a chain of its own (direction 0,
///   length 1, born at its own index).
/// - The end the new one overwrites, if live (not the one just
///   continued), ends its chain: counted by length (`log2_bucket`), in
///   the longest, and as a stream of `len` references from `min_len` on.
/// - At the end, the live ends end in slot order.
struct PlainStreams {
    ring: Vec<ChainEnd>,
    pos: usize,
    min_len: u64,
    references: u64,
    stream_references: u64,
    streams: u64,
    longest: u64,
    lengths: [u64; 65],
}

impl PlainStreams {
    fn new(window: usize, min_len: u64) -> PlainStreams {
        PlainStreams {
            ring: vec![ChainEnd::default(); window.max(1)],
            pos: 0,
            min_len: min_len.max(1),
            references: 0,
            stream_references: 0,
            streams: 0,
            longest: 0,
            lengths: [0; 65],
        }
    }

    fn continues(e: &ChainEnd, space: u32, line: u64) -> Option<i8> {
        if !e.live || e.space != space {
            None
        } else if line == e.line.wrapping_add(1) && e.dir >= 0 {
            Some(1)
        } else if line == e.line.wrapping_sub(1) && e.dir <= 0 {
            Some(-1)
        } else {
            None
        }
    }

    fn access(&mut self, space: u32, line: u64) {
        let w = self.ring.len();
        let newest_first = (1..=w).map(|back| (self.pos + w - back) % w);
        let joined = newest_first
            .filter_map(|j| Self::continues(&self.ring[j], space, line).map(|dir| (j, dir)))
            .next();
        let (dir, len, born) = match joined {
            Some((j, dir)) => {
                self.ring[j].live = false;
                (dir, self.ring[j].len + 1, self.ring[j].born)
            }
            None => (0, 1, self.references),
        };
        let old = self.ring[self.pos];
        if old.live {
            self.close(old.len);
        }
        self.ring[self.pos] = ChainEnd {
            space,
            line,
            dir,
            len,
            live: true,
            born,
        };
        self.pos = (self.pos + 1) % w;
        self.references += 1;
    }

    fn close(&mut self, len: u64) {
        self.lengths[log2_bucket(len)] += 1;
        self.longest = self.longest.max(len);
        if len >= self.min_len {
            self.streams += 1;
            self.stream_references += len;
        }
    }

    /// The counters of the chains that ended, and the chain ends.
    fn state(&self) -> State {
        (
            self.references,
            self.stream_references,
            self.streams,
            self.longest,
            self.lengths,
            self.ring
                .iter()
                .map(|e| (e.space, e.line, e.dir, e.len, e.live, e.born))
                .collect(),
        )
    }

    fn finish(&mut self) {
        for k in 0..self.ring.len() {
            if self.ring[k].live {
                self.ring[k].live = false;
                self.close(self.ring[k].len);
            }
        }
    }
}

/// [`PlainStreams::state`] of the detector.
fn state_of(s: &Streams) -> State {
    (
        s.references,
        s.stream_references,
        s.streams,
        s.longest,
        s.lengths,
        s.ring
            .iter()
            .map(|e| (e.space, e.line, e.dir, e.len, e.live, e.born))
            .collect(),
    )
}

/// Lines of interleaved chains that try the detector: `ops` as (chain,
/// what it does) over `chains` cursors that start on lines whose low bits
/// collide (the index's buckets), at both ends of the line numbers
/// (wrapping), and on hot lines revisited.
fn adversarial_lines(ops: &[(usize, u8)], chains: usize, spread: u64) -> Vec<u64> {
    let starts = [0, 1, u64::MAX, u64::MAX - 1, 1 << 20, (1 << 20) + 2];
    let mut at: Vec<u64> = (0..chains)
        .map(|c| starts[c % starts.len()].wrapping_add((c / starts.len()) as u64 * spread))
        .collect();
    let mut up = vec![true; chains];
    ops.iter()
        .map(|&(c, what)| {
            let c = c % chains;
            match what % 16 {
                // The same line again.
                0 => {}
                // A turn.
                1 => up[c] = !up[c],
                // A jump to the line of another chain (two ends on one
                // line, or one line apart).
                2 => at[c] = at[(c + 1) % chains].wrapping_add(u64::from(what >> 4 & 1)),
                // A jump to a line of the same bucket.
                3 => at[c] = at[c].wrapping_add(1024 * u64::from(what >> 4)),
                _ => {
                    at[c] = if up[c] {
                        at[c].wrapping_add(1)
                    } else {
                        at[c].wrapping_sub(1)
                    }
                }
            }
            at[c]
        })
        .collect()
}

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
    /// The detector, a run at a time and a reference at a time, is the
    /// plain rules' detector: the same chain ends in the same slots (so
    /// the same eviction victims), the same counters between runs (a
    /// partial analysis saves them), the same report; over interleaved
    /// chains on colliding buckets, turns, hot lines, lines at both ends
    /// of the range, runs of another address space.
    #[test]
    fn the_detector_follows_its_rules(
        ops in prop::collection::vec((0usize..64, any::<u8>()), 1..3000),
        chains in 1usize..40,
        spread in prop::sample::select(vec![2u64, 1024, 4096, 1 << 30]),
        runs in prop::collection::vec((1usize..400, 0u32..3), 1..12),
        window in prop::sample::select(vec![1usize, 2, 3, 31, 32, 33, 63, 64, 65, 100]),
        min_len in 1u64..5,
    ) {
        let lines = adversarial_lines(&ops, chains, spread);
        let mut plain = PlainStreams::new(window, min_len);
        let mut each = Streams::new(window, min_len);
        let mut run = Streams::new(window, min_len);
        let mut rest = &lines[..];
        for &(n, space) in runs.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            // Space 2 is taken as 0, so that most runs continue chains.
            let space = space % 2;
            let (now, later) = rest.split_at(n.min(rest.len()));
            for &line in now {
                plain.access(space, line);
                each.access(space, line);
            }
            run.access_run(space, now.iter().copied());
            prop_assert_eq!(state_of(&each), plain.state());
            prop_assert_eq!(state_of(&run), plain.state());
            prop_assert_eq!((each.pos, run.pos), (plain.pos, plain.pos));
            rest = later;
        }
        plain.finish();
        let (a, b) = (each.finish(), run.finish());
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(state_of(&each), plain.state());
        prop_assert_eq!(state_of(&run), plain.state());
    }

    /// Parts cut anywhere (the ranges of `--threads N`), each run a run at
    /// a time, merged in order: the plain rules' one-pass counters, or a
    /// refusal, never different.
    #[test]
    fn merged_parts_follow_the_rules(
        ops in prop::collection::vec((0usize..64, any::<u8>()), 1..3000),
        chains in 1usize..40,
        spread in prop::sample::select(vec![2u64, 1024, 1 << 30]),
        cuts in prop::collection::vec(0.0f64..1.0, 1..4),
        run_len in 1usize..700,
        window in prop::sample::select(vec![1usize, 3, 32, 64, 65]),
    ) {
        let lines = adversarial_lines(&ops, chains, spread);
        let mut plain = PlainStreams::new(window, DEFAULT_MIN_LEN);
        for &line in &lines {
            plain.access(0, line);
        }
        plain.finish();
        let mut cuts: Vec<usize> = cuts
            .iter()
            .map(|c| (lines.len() as f64 * c) as usize)
            .chain([0, lines.len()])
            .collect();
        cuts.sort_unstable();
        let mut whole: Option<Streams> = None;
        for part in cuts.windows(2) {
            let mut s = if whole.is_none() {
                Streams::new(window, DEFAULT_MIN_LEN)
            } else {
                Streams::for_later_part(window, DEFAULT_MIN_LEN)
            };
            for run in lines[part[0]..part[1]].chunks(run_len) {
                s.access_run(0, run.iter().copied());
            }
            whole = match whole {
                None => Some(s),
                Some(mut w) => {
                    if w.merge(s).is_err() {
                        return Ok(());
                    }
                    Some(w)
                }
            };
        }
        let mut whole = whole.expect("a first part");
        whole.finish();
        let counters = |s: State| {
            (s.0, s.1, s.2, s.3, s.4)
        };
        prop_assert_eq!(counters(state_of(&whole)), counters(plain.state()));
    }

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
