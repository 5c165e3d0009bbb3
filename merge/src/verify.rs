//! Record-by-record comparison of a merged trace with what it should hold
//! (a simulation's ground truth, typically). Gap markers are not records of
//! the traced machine and are left out of the comparison.

use hmtt_format::trace::{RecordKind, TraceRecord};

/// The outcome of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub expected: u64,
    pub got: u64,
    /// Records equal at the same position.
    pub matched: u64,
    /// Position (in the gap-free sequences) of the first difference.
    pub first_difference: Option<(u64, Option<TraceRecord>, Option<TraceRecord>)>,
}

impl Comparison {
    pub fn is_exact(&self) -> bool {
        self.first_difference.is_none()
    }
    /// Share of the expected records found in place, in percent.
    pub fn match_percent(&self) -> f64 {
        if self.expected == 0 {
            return if self.got == 0 { 100.0 } else { 0.0 };
        }
        100.0 * self.matched as f64 / self.expected as f64
    }
}

fn is_marker(r: &TraceRecord) -> bool {
    matches!(r.kind(), RecordKind::GapBegin | RecordKind::GapEnd)
}

/// Compares in order, ignoring gap markers on both sides.
pub fn compare(
    expected: impl IntoIterator<Item = TraceRecord>,
    got: impl IntoIterator<Item = TraceRecord>,
) -> Comparison {
    let mut e = expected.into_iter().filter(|r| !is_marker(r));
    let mut g = got.into_iter().filter(|r| !is_marker(r));
    let mut c = Comparison::default();
    loop {
        match (e.next(), g.next()) {
            (None, None) => return c,
            (a, b) => {
                c.expected += u64::from(a.is_some());
                c.got += u64::from(b.is_some());
                if a.is_some() && a == b {
                    c.matched += 1;
                } else if c.first_difference.is_none() {
                    c.first_difference = Some((c.expected.max(c.got) - 1, a, b));
                }
            }
        }
    }
}
