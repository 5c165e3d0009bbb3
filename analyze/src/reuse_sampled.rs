//! Reuse distances estimated from a spatially hashed sample of the lines
//! (SHARDS: Waldspurger, Park, Garthwaite and Ahmad, "Efficient MRC
//! Construction with SHARDS", FAST 2015). A line is in the sample when its
//! hash, taken modulo [`MODULUS`], is below a threshold `T`, so the sample
//! keeps every reference to a sampled line and the rate is `R = T /
//! MODULUS`. Exact stack distances over the sampled lines, divided by
//! `R`, estimate the distances over all lines; each sampled reference
//! stands for `1 / R` references.
//!
//! - Fixed rate (`--reuse sampled[:RATE]`, default 1 %): `T` stays put;
//!   memory is about `R` times the distinct lines.
//! - Fixed size (`--reuse sampled-size[:LINES]`): at most `LINES` lines are
//!   sampled. When one more would be, the lines with the largest hash
//!   leave the sample and `T` drops to that hash, so the rate only falls;
//!   references are weighted by the rate at their time. Memory is bounded
//!   whatever the trace.
//!
//! The report has the exact histogram's shape (`cold`, `buckets`,
//! `distinct_lines`, all estimates) plus how it was sampled.

use std::collections::BinaryHeap;

use serde::Serialize;

use super::log2_bucket;
use super::reuse_distance::{bucket_range, ReuseReport, StackDistances};

/// The hash space the threshold is taken in.
pub const MODULUS: u64 = 1 << 24;
/// Default rate of `--reuse sampled`.
pub const DEFAULT_RATE: f64 = 0.01;
/// Default lines of `--reuse sampled-size`.
pub const DEFAULT_SIZE: usize = 8192;

/// How the reuse distances are computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReuseMode {
    /// Every reference, exact (the default).
    Exact,
    /// SHARDS at a fixed rate (0 < rate <= 1).
    FixedRate(f64),
    /// SHARDS keeping at most this many lines.
    FixedSize(usize),
}

impl std::fmt::Display for ReuseMode {
    /// As [`ReuseMode::from_str`] reads it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReuseMode::Exact => f.write_str("exact"),
            ReuseMode::FixedRate(r) => write!(f, "sampled:{r}"),
            ReuseMode::FixedSize(n) => write!(f, "sampled-size:{n}"),
        }
    }
}

impl std::str::FromStr for ReuseMode {
    type Err = String;
    /// `exact`, `sampled`, `sampled:RATE` (a fraction, or a percentage
    /// with `%`), `sampled-size` or `sampled-size:LINES`.
    fn from_str(s: &str) -> Result<ReuseMode, String> {
        let (kind, arg) = match s.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (s, None),
        };
        match (kind, arg) {
            ("exact", None) => Ok(ReuseMode::Exact),
            ("sampled", None) => Ok(ReuseMode::FixedRate(DEFAULT_RATE)),
            ("sampled", Some(a)) => {
                let rate = match a.strip_suffix('%') {
                    Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
                    None => a.trim().parse::<f64>(),
                }
                .map_err(|_| format!("'{a}' is not a sampling rate (e.g. 0.01 or 1%)"))?;
                if rate > 0.0 && rate <= 1.0 && rate * MODULUS as f64 >= 1.0 {
                    Ok(ReuseMode::FixedRate(rate))
                } else {
                    Err(format!(
                        "a sampling rate is in [{:e}, 1], not {a}",
                        1.0 / MODULUS as f64
                    ))
                }
            }
            ("sampled-size", None) => Ok(ReuseMode::FixedSize(DEFAULT_SIZE)),
            ("sampled-size", Some(a)) => match a.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(ReuseMode::FixedSize(n)),
                _ => Err(format!("'{a}' is not a number of lines (at least 1)")),
            },
            _ => Err(format!(
                "'{s}' is not a reuse mode: exact, sampled[:RATE] or sampled-size[:LINES]"
            )),
        }
    }
}

/// The reuse histograms asked for (`--reuse`): one mode, or the exact
/// histogram with a sampled estimate made beside it in the same pass
/// (`exact,sampled:0.01`), to see how far the estimate is from the truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReuseModes {
    /// The histogram of the report's `reuse` (the exact one when two are
    /// asked).
    pub first: ReuseMode,
    /// The sampled estimate beside it (the report's `reuse_sampled`).
    pub beside: Option<ReuseMode>,
}

impl ReuseModes {
    /// One mode.
    pub fn one(mode: ReuseMode) -> ReuseModes {
        ReuseModes {
            first: mode,
            beside: None,
        }
    }
}

impl std::fmt::Display for ReuseModes {
    /// As [`ReuseModes::from_str`] reads it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.beside {
            None => write!(f, "{}", self.first),
            Some(b) => write!(f, "{},{b}", self.first),
        }
    }
}

impl std::str::FromStr for ReuseModes {
    type Err = String;
    /// A [`ReuseMode`], or `exact` and a sampled mode separated by a comma
    /// (in either order).
    fn from_str(s: &str) -> Result<ReuseModes, String> {
        let modes = s
            .split(',')
            .map(|m| m.trim().parse::<ReuseMode>())
            .collect::<Result<Vec<_>, _>>()?;
        match modes[..] {
            [one] => Ok(ReuseModes::one(one)),
            [ReuseMode::Exact, ReuseMode::Exact] => Err(format!(
                "'{s}': exact twice; pair exact with a sampled mode"
            )),
            [ReuseMode::Exact, sampled] | [sampled, ReuseMode::Exact] => Ok(ReuseModes {
                first: ReuseMode::Exact,
                beside: Some(sampled),
            }),
            [_, _] => Err(format!(
                "'{s}': two sampled modes; a sampled mode is drawn beside the exact one (exact,{})",
                modes[0]
            )),
            _ => Err(format!(
                "'{s}': at most two reuse modes, exact and a sampled one (e.g. exact,sampled:0.01)"
            )),
        }
    }
}

/// How a sampled histogram was made.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sampling {
    /// "fixed-rate" or "fixed-size".
    pub mode: String,
    /// The sampling rate at the end (fixed size: the lowest it fell to).
    pub rate: f64,
    /// Fixed size: the most lines kept.
    pub max_lines: Option<u64>,
    /// References to sampled lines (each reuse distance measured exactly
    /// among them).
    pub sampled_references: u64,
}

/// The line's place in the hash space: a 64-bit mix (splitmix64's
/// finaliser), so nearby lines are sampled independently.
#[inline(always)]
pub fn line_hash(line: u64) -> u64 {
    let mut z = line.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & (MODULUS - 1)
}

/// The sampled histogram in the making.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct SampledReuse {
    stack: StackDistances,
    threshold: u64,
    /// Fixed size: the sampled lines by hash, largest on top.
    heap: Option<(BinaryHeap<(u64, u64)>, usize)>,
    /// Estimated references per bucket, and cold (fixed size: each
    /// reference weighted by the rate of its time).
    #[serde(with = "super::serde_tables::array")]
    buckets: [f64; 65],
    cold: f64,
    /// Fixed rate: sampled references per bucket, and cold (weighted at
    /// the end, so parts of a trace merge to the same sums).
    #[serde(with = "super::serde_tables::array")]
    sampled_buckets: [u64; 65],
    sampled_cold: u64,
    sampled_references: u64,
    /// A part of a trace that follows another (fixed rate only): the first
    /// references to each sampled line, in order, as for the exact
    /// histogram.
    firsts: Option<Vec<u64>>,
}

impl SampledReuse {
    /// A fixed-rate or a fixed-size sample (not [`ReuseMode::Exact`]).
    pub fn new(mode: ReuseMode) -> SampledReuse {
        let (threshold, heap) = match mode {
            ReuseMode::FixedRate(rate) => (((rate * MODULUS as f64).round() as u64).max(1), None),
            ReuseMode::FixedSize(n) => (MODULUS, Some((BinaryHeap::new(), n.max(1)))),
            ReuseMode::Exact => (MODULUS, None),
        };
        SampledReuse {
            stack: StackDistances::new(0),
            threshold,
            heap,
            buckets: [0.0; 65],
            cold: 0.0,
            sampled_buckets: [0; 65],
            sampled_cold: 0,
            sampled_references: 0,
            firsts: None,
        }
    }

    /// Whether parts of a trace can be measured apart and merged: the fixed
    /// rate only (the fixed size's threshold depends on every line before).
    pub fn mergeable(mode: ReuseMode) -> bool {
        !matches!(mode, ReuseMode::FixedSize(_))
    }

    /// A fixed-rate sample of a part of a trace that follows another.
    pub fn for_later_part(mode: ReuseMode) -> SampledReuse {
        SampledReuse {
            firsts: Some(Vec::new()),
            ..SampledReuse::new(mode)
        }
    }

    /// Adds the part of the trace that follows this one, as
    /// [`super::reuse_distance::ReuseDistance::merge`] does.
    pub fn merge(&mut self, later: SampledReuse) {
        let weight = 1.0 / self.rate();
        for &line in later.firsts.iter().flatten() {
            let d = self.stack.access(line);
            self.count(d, weight);
        }
        for line in later.stack.lines_by_last_use() {
            self.stack.access(line);
        }
        for (a, b) in self.sampled_buckets.iter_mut().zip(later.sampled_buckets) {
            *a += b;
        }
        self.sampled_cold += later.sampled_cold;
        self.sampled_references += later.sampled_references;
    }

    #[inline]
    fn count(&mut self, distance: Option<u64>, weight: f64) {
        let fixed_rate = self.heap.is_none();
        match distance {
            Some(d) => {
                let k = log2_bucket((d as f64 * weight) as u64);
                if fixed_rate {
                    self.sampled_buckets[k] += 1;
                } else {
                    self.buckets[k] += weight;
                }
            }
            None if fixed_rate => self.sampled_cold += 1,
            None => self.cold += weight,
        }
    }

    fn rate(&self) -> f64 {
        self.threshold as f64 / MODULUS as f64
    }

    /// A reference to `line`.
    #[inline(always)]
    pub fn access(&mut self, line: u64) {
        let h = line_hash(line);
        if h >= self.threshold {
            return;
        }
        self.sampled(line, h);
    }

    #[inline(never)]
    fn sampled(&mut self, line: u64, hash: u64) {
        self.sampled_references += 1;
        let d = self.stack.access(line);
        let weight = 1.0 / self.rate();
        match d {
            Some(_) => self.count(d, weight),
            None if self.firsts.is_some() => self.firsts.as_mut().expect("some").push(line),
            None => {
                self.count(None, weight);
                if let Some((heap, max)) = self.heap.as_mut() {
                    heap.push((hash, line));
                    if heap.len() > *max {
                        // Every line of the largest hash leaves; the
                        // threshold drops to it.
                        let top = heap.peek().map_or(0, |e| e.0);
                        while heap.peek().is_some_and(|e| e.0 == top) {
                            let (_, l) = heap.pop().expect("peeked");
                            self.stack.forget(l);
                        }
                        self.threshold = top;
                    }
                }
            }
        }
    }

    pub fn report(&self) -> ReuseReport {
        let weight = 1.0 / self.rate();
        let (buckets, cold) = if self.heap.is_none() {
            (
                self.sampled_buckets.map(|n| n as f64 * weight),
                self.sampled_cold as f64 * weight,
            )
        } else {
            (self.buckets, self.cold)
        };
        let last = buckets.iter().rposition(|&n| n > 0.0).map_or(0, |i| i + 1);
        let cold = cold.round() as u64;
        ReuseReport {
            cold,
            buckets: (0..last)
                .map(|k| {
                    let (lo, hi) = bucket_range(k);
                    (lo, hi, buckets[k].round() as u64)
                })
                .collect(),
            distinct_lines: cold,
            sampling: Some(Sampling {
                mode: if self.heap.is_some() {
                    "fixed-size"
                } else {
                    "fixed-rate"
                }
                .to_string(),
                rate: self.rate(),
                max_lines: self.heap.as_ref().map(|h| h.1 as u64),
                sampled_references: self.sampled_references,
            }),
        }
    }
}

/// The mean absolute error of `estimate`'s reuse CDF against `exact`'s:
/// the share of references with a distance at most each bucket's top
/// (first uses counted as infinite distances), averaged over the buckets
/// whose top is at least `from`, up to the last either histogram fills.
/// A sample at rate R tells distances from about 1/R lines on: below, the
/// distances between sampled lines are mostly 0.
pub fn cdf_mean_absolute_error(exact: &ReuseReport, estimate: &ReuseReport, from: u64) -> f64 {
    let cdf = |r: &ReuseReport| -> Vec<(u64, f64)> {
        let total = r.cold + r.buckets.iter().map(|b| b.2).sum::<u64>();
        let mut acc = 0u64;
        r.buckets
            .iter()
            .map(|b| {
                acc += b.2;
                (b.1, acc as f64 / total.max(1) as f64)
            })
            .collect()
    };
    let (a, b) = (cdf(exact), cdf(estimate));
    let n = a.len().max(b.len());
    let at = |c: &[(u64, f64)], k: usize| c.get(k).or(c.last()).map_or(0.0, |e| e.1);
    let ks: Vec<usize> = (0..n)
        .filter(|&k| super::reuse_distance::bucket_range(k).1 >= from)
        .collect();
    if ks.is_empty() {
        return 0.0;
    }
    ks.iter()
        .map(|&k| (at(&a, k) - at(&b, k)).abs())
        .sum::<f64>()
        / ks.len() as f64
}

#[cfg(test)]
mod tests {
    use super::{ReuseMode, ReuseModes};

    #[test]
    fn exact_pairs_with_one_sampled_mode_in_either_order() {
        let both = ReuseModes {
            first: ReuseMode::Exact,
            beside: Some(ReuseMode::FixedRate(0.05)),
        };
        assert_eq!("exact,sampled:0.05".parse(), Ok(both));
        assert_eq!("sampled:5%, exact".parse(), Ok(both));
        assert_eq!(both.to_string(), "exact,sampled:0.05");
        assert_eq!(
            "sampled-size".parse(),
            Ok(ReuseModes::one(ReuseMode::FixedSize(super::DEFAULT_SIZE)))
        );
        for bad in [
            "exact,exact",
            "sampled,sampled-size",
            "exact,sampled,sampled",
            "exact,",
            "",
        ] {
            assert!(bad.parse::<ReuseModes>().is_err(), "{bad}");
        }
    }
}
