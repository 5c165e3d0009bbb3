//! The zero-loss rate of each tool as a measured figure: the listed
//! target rates in turn (every tool at one rate before the next rate),
//! up to each tool's first loss; then, in rounds (each tool one probe a
//! round, so the tools alternate in time), a bisection between a tool's
//! highest target without loss and its lowest with loss, until they are
//! at most HMTT_BENCH_RESOLUTION Gb/s apart (default 0.25). Every target,
//! listed or probed, runs HMTT_BENCH_REPEATS times (default 2) and counts
//! as loss-free only if every run lost nothing (it stops at the first
//! that lost), so a lucky run does not count; its zero-loss rate is the
//! slowest of its runs' sent rates (the sender may fall short of a
//! target).

/// One capture run, as the search sees it.
pub trait Run {
    fn sent(&self) -> u64;
    fn got(&self) -> u64;
    /// The rate sent, Gb/s.
    fn rate(&self) -> f64;
}

/// How the search runs.
#[derive(Clone, Copy)]
pub struct Settings {
    pub repeats: usize,
    pub resolution: f64,
}

impl Settings {
    pub fn from_env() -> Settings {
        let get = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
        Settings {
            repeats: get("HMTT_BENCH_REPEATS").map_or(2, |r| r.max(1.0) as usize),
            resolution: get("HMTT_BENCH_RESOLUTION").map_or(0.25, |r| r.max(0.01)),
        }
    }
}

/// A target with loss: its sent rate and loss (%) in the run that lost.
#[derive(Clone, Copy)]
pub struct Lossy {
    pub target: f64,
    pub rate: f64,
    pub loss_percent: f64,
}

/// What a tool's search found.
pub struct Bounds<Step> {
    /// The highest target without loss in any run, and of its runs the
    /// one that sent slowest.
    pub clean: Option<(f64, Step)>,
    /// The lowest target with loss.
    pub lossy: Option<Lossy>,
}

impl<Step: Run> Bounds<Step> {
    /// The next target to probe, or None when the bounds are close enough
    /// (or there is no loss to bound the rate from above).
    fn next_target(&self, resolution: f64) -> Option<f64> {
        let low = self.clean.as_ref().map_or(0.0, |(t, _)| *t);
        let high = self.lossy?.target;
        // Targets on a 0.05 Gb/s grid, strictly between the bounds.
        let mid = ((low + high) / 2.0 * 20.0).round() / 20.0;
        (high - low > resolution + 1e-9 && mid > low && mid < high).then_some(mid)
    }

    fn record(&mut self, target: f64, outcome: Result<Step, Lossy>) {
        match outcome {
            Ok(step) => {
                if self.clean.as_ref().is_none_or(|(t, _)| target > *t) {
                    self.clean = Some((target, step));
                }
            }
            Err(lossy) => {
                if self.lossy.is_none_or(|l| target < l.target) {
                    self.lossy = Some(lossy);
                }
            }
        }
    }
}

/// Runs tool `t` at `target` up to `repeats` times, stopping at the first
/// run that lost: Ok(the slowest run) if none lost.
fn probe<Step: Run>(
    settings: Settings,
    t: usize,
    target: f64,
    run_once: &mut impl FnMut(usize, f64) -> Step,
) -> Result<Step, Lossy> {
    let mut slowest: Option<Step> = None;
    for _ in 0..settings.repeats {
        let step = run_once(t, target);
        let lost = step.sent().saturating_sub(step.got());
        if lost > 0 {
            return Err(Lossy {
                target,
                rate: step.rate(),
                loss_percent: lost as f64 * 100.0 / step.sent().max(1) as f64,
            });
        }
        if slowest.as_ref().is_none_or(|s| step.rate() < s.rate()) {
            slowest = Some(step);
        }
    }
    Ok(slowest.expect("at least one run"))
}

/// Searches every tool's zero-loss rate (see the module's notes).
/// `run_once(tool, target)` runs one capture and prints its row. Returns
/// each tool's bounds and, per listed target, each tool's loss-free step
/// (for comparing CPU at one rate).
#[allow(clippy::type_complexity)]
pub fn zero_loss_rates<Step: Run + Clone>(
    tools: usize,
    targets: &[f64],
    settings: Settings,
    mut run_once: impl FnMut(usize, f64) -> Step,
) -> (Vec<Bounds<Step>>, Vec<(f64, Vec<Option<Step>>)>) {
    let mut bounds: Vec<Bounds<Step>> = (0..tools)
        .map(|_| Bounds {
            clean: None,
            lossy: None,
        })
        .collect();
    let mut listed = Vec::new();
    for &target in targets {
        let mut steps = Vec::new();
        for (t, b) in bounds.iter_mut().enumerate() {
            if b.lossy.is_some() {
                steps.push(None);
                continue;
            }
            let outcome = probe(settings, t, target, &mut run_once);
            steps.push(outcome.as_ref().ok().cloned());
            b.record(target, outcome);
        }
        listed.push((target, steps));
    }
    loop {
        let round: Vec<(usize, f64)> = bounds
            .iter()
            .enumerate()
            .filter_map(|(t, b)| Some((t, b.next_target(settings.resolution)?)))
            .collect();
        if round.is_empty() {
            break;
        }
        for (t, target) in round {
            let outcome = probe(settings, t, target, &mut run_once);
            bounds[t].record(target, outcome);
        }
    }
    (bounds, listed)
}

// The bench is built with cfg(test) but runs no test harness: these run
// in tests/bench_search.rs.
#[cfg(test)]
#[allow(dead_code)]
mod tests {
    use super::*;

    /// Sent rate and packets lost.
    #[derive(Clone)]
    struct Step(f64, u64);

    impl Run for Step {
        fn sent(&self) -> u64 {
            1000
        }
        fn got(&self) -> u64 {
            1000 - self.1
        }
        fn rate(&self) -> f64 {
            self.0
        }
    }

    /// A tool that loses above `limit` Gb/s, and in the second run at `fluke`.
    fn search(limit: f64, fluke: f64, targets: &[f64]) -> Bounds<Step> {
        let settings = Settings {
            repeats: 2,
            resolution: 0.25,
        };
        let mut runs_at_fluke = 0;
        let (mut b, _) = zero_loss_rates(1, targets, settings, |_, g| {
            let at_fluke = (g - fluke).abs() < 1e-9;
            runs_at_fluke += u32::from(at_fluke);
            Step(g, u64::from(g > limit || (at_fluke && runs_at_fluke == 2)))
        });
        b.pop().unwrap()
    }

    #[test]
    fn bisects_to_the_resolution() {
        let b = search(8.6, -1.0, &[2.0, 4.0, 6.0, 8.0, 10.0]);
        let (clean, lossy) = (b.clean.unwrap().0, b.lossy.unwrap().target);
        assert!(
            clean <= 8.6 && lossy > 8.6 && lossy - clean <= 0.25,
            "{clean} {lossy}"
        );
        // Loss at the first target: the bisection goes below it.
        let b = search(1.3, -1.0, &[2.0, 4.0]);
        let (clean, lossy) = (b.clean.unwrap().0, b.lossy.unwrap().target);
        assert!(
            clean <= 1.3 && lossy > 1.3 && lossy - clean <= 0.25,
            "{clean} {lossy}"
        );
        // No loss at all: nothing to bisect.
        assert!(search(99.0, -1.0, &[2.0, 4.0]).lossy.is_none());
    }

    #[test]
    fn one_lossy_run_of_a_target_makes_it_lossy() {
        // A loss in the second run at 6 stops the list there.
        let b = search(8.6, 6.0, &[2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(b.lossy.unwrap().target, 6.0);
        assert!(b.clean.unwrap().0 < 6.0);
    }
}
