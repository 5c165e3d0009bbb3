//! Record-by-record comparison of a merged trace with what it should hold
//! (a simulation's ground truth, typically). Gap markers are not records of
//! the traced machine and are left out of the comparison. Packets lost on
//! the way take their events out of what the trace should hold
//! ([`LostEvents`]), and the merge must report exactly the losses it can
//! see ([`reported_missing`], [`visible_losses`]).

use std::collections::{BTreeSet, HashMap};

use hmtt_format::record::BoardEvent;
use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::truth::{RefKind, TruthRecord};
use hmtt_format::Packet;

use crate::report::MergeReport;

mod report;
pub use report::{FirstRecords, VerdictReport};

/// Why the ground truth cannot be put in trace form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("an I-code at tick {0} of the ground truth has no event index")]
    IcodeWithoutEvent(u64),
    #[error("the ground truth names channel {0}, which has no board")]
    NoBoard(u8),
}

/// The trace record a merge must produce for a ground-truth reference;
/// `board_ids[channel]` is the id of the channel's board.
pub fn expected_record(r: &TruthRecord, board_ids: &[u8]) -> Result<TraceRecord, VerifyError> {
    let board = *board_ids
        .get(usize::from(r.board))
        .ok_or(VerifyError::NoBoard(r.board))?;
    if r.kind != RefKind::Icode {
        return Ok(TraceRecord::access(r.tick, board, r.write, r.pa));
    }
    let index = r.event.ok_or(VerifyError::IcodeWithoutEvent(r.tick))?;
    let kind = if index < 64 {
        RecordKind::Cmd
    } else {
        RecordKind::Tag { write: r.write }
    };
    Ok(TraceRecord::new(r.tick, board, kind, u64::from(index)))
}

/// The events that lost packets carried, which the trace cannot hold:
/// counted by (board, tick, kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostEvents(HashMap<(u8, u64, u8), u32>);

/// The events of lost packets, each with its board.
impl<'a> FromIterator<(u8, &'a [u8])> for LostEvents {
    fn from_iter<I: IntoIterator<Item = (u8, &'a [u8])>>(packets: I) -> LostEvents {
        let mut lost = LostEvents::default();
        for (board, bytes) in packets {
            lost.add_packet(board, bytes);
        }
        lost
    }
}

impl LostEvents {
    /// Counts the events of a lost packet of `board`.
    pub fn add_packet(&mut self, board: u8, bytes: &[u8]) {
        let Ok(p) = Packet::new_checked(bytes) else {
            return;
        };
        for e in p.events().flatten() {
            let kind = match e.event {
                BoardEvent::Access { write: false, .. } => RecordKind::Read,
                BoardEvent::Access { write: true, .. } => RecordKind::Write,
                BoardEvent::Tag { write, .. } => RecordKind::Tag { write },
                BoardEvent::Cmd { .. } => RecordKind::Cmd,
                BoardEvent::Lost { .. } => RecordKind::Lost,
            };
            *self.0.entry((board, e.tick, kind.bits())).or_default() += 1;
        }
    }

    /// Whether `r` is one of the lost events (each is taken once).
    fn take(&mut self, r: &TraceRecord) -> bool {
        let key = (r.board(), r.tick, r.kind().bits());
        match self.0.get_mut(&key) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

/// The records a merge of the captures must produce: the ground truth in
/// trace form, without the events of the packets lost on the way.
pub fn expected_trace(
    truth: &[TruthRecord],
    board_ids: &[u8],
    mut lost: LostEvents,
) -> Result<Vec<TraceRecord>, VerifyError> {
    let mut expected = Vec::with_capacity(truth.len());
    for r in truth {
        let rec = expected_record(r, board_ids)?;
        if !lost.take(&rec) {
            expected.push(rec);
        }
    }
    Ok(expected)
}

/// The packets a merge reports missing (in its gaps), as (board, seq).
pub fn reported_missing(report: &MergeReport) -> BTreeSet<(u8, u64)> {
    report
        .boards
        .iter()
        .flat_map(|b| {
            b.gaps
                .iter()
                .flat_map(move |g| (g.first_seq..=g.last_seq).map(move |s| (b.board, s)))
        })
        .collect()
}

/// Of the packets `lost`, those a merge can see: a loss after a board's
/// last merged packet leaves no gap anyone can see.
pub fn visible_losses(lost: &BTreeSet<(u8, u64)>, report: &MergeReport) -> BTreeSet<(u8, u64)> {
    lost.iter()
        .copied()
        .filter(|(b, s)| {
            report
                .boards
                .iter()
                .find(|r| r.board == *b)
                .and_then(|r| r.last_seq)
                .is_some_and(|last| *s < last)
        })
        .collect()
}

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

/// A merged trace judged against what it should hold and the losses and
/// duplicates made on purpose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub comparison: Comparison,
    /// Packets the merge reports missing, as (board, seq).
    pub reported: BTreeSet<(u8, u64)>,
    /// Packets lost that the merge can see ([`visible_losses`]).
    pub visible: BTreeSet<(u8, u64)>,
    /// Duplicate packets the merge dropped.
    pub duplicates: u64,
    /// Packets sent twice (and not lost).
    pub duplicates_sent: u64,
}

impl Verdict {
    /// `got` against `expected`, and `report` against the packets `lost`
    /// and `duplicated` on the way.
    pub fn new(
        expected: &[TraceRecord],
        got: impl IntoIterator<Item = TraceRecord>,
        report: &MergeReport,
        lost: &BTreeSet<(u8, u64)>,
        duplicated: &BTreeSet<(u8, u64)>,
    ) -> Verdict {
        Verdict {
            comparison: compare(expected.iter().copied(), got),
            reported: reported_missing(report),
            visible: visible_losses(lost, report),
            duplicates: report.packets_duplicate(),
            duplicates_sent: duplicated.iter().filter(|d| !lost.contains(d)).count() as u64,
        }
    }

    /// The trace holds exactly what it should, and the report says exactly
    /// which packets were lost and how many came twice.
    pub fn is_exact(&self) -> bool {
        self.comparison.is_exact()
            && self.reported == self.visible
            && self.duplicates == self.duplicates_sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{BoardReport, Gap};
    use hmtt_format::Geometry;

    fn truth(tick: u64, board: u8, kind: RefKind, event: Option<u32>) -> TruthRecord {
        TruthRecord {
            tick,
            board,
            pa: 0x1234_5640,
            line: 0,
            write: true,
            kind,
            owner: None,
            event,
        }
    }

    #[test]
    fn the_truth_in_trace_form_less_the_lost_events() {
        let ids = [4, 7];
        let rows = [
            truth(10, 0, RefKind::Cpu, None),
            truth(11, 1, RefKind::Icode, Some(3)),
            truth(12, 1, RefKind::Icode, Some(0x10002)),
            truth(13, 0, RefKind::Dma, None),
        ];
        let want = [
            TraceRecord::access(10, 4, true, 0x1234_5640),
            TraceRecord::new(11, 7, RecordKind::Cmd, 3),
            TraceRecord::new(12, 7, RecordKind::Tag { write: true }, 0x10002),
            TraceRecord::access(13, 4, true, 0x1234_5640),
        ];
        let all = expected_trace(&rows, &ids, LostEvents::default()).unwrap();
        assert_eq!(all, want);
        // A lost packet of board 4 that carried the write at tick 13.
        let mut p = synth_packet(
            4,
            &[(
                13,
                BoardEvent::Access {
                    line: 9,
                    write: true,
                },
            )],
        );
        let mut lost = LostEvents::default();
        lost.add_packet(4, &p);
        let collected: LostEvents = [(4, &p[..])].into_iter().collect();
        assert_eq!(collected, lost);
        assert_eq!(expected_trace(&rows, &ids, lost).unwrap(), want[..3]);
        p[0] ^= 0xff;
        let mut garbage = LostEvents::default();
        garbage.add_packet(4, &p);
        assert_eq!(garbage, LostEvents::default());
        assert_eq!(
            expected_record(&truth(1, 2, RefKind::Cpu, None), &ids),
            Err(VerifyError::NoBoard(2))
        );
        assert_eq!(
            expected_record(&truth(1, 0, RefKind::Icode, None), &ids),
            Err(VerifyError::IcodeWithoutEvent(1))
        );
    }

    fn synth_packet(board: u8, events: &[(u64, BoardEvent)]) -> Vec<u8> {
        let mut pk = crate::synth::Packetizer::new(board, Geometry::ddr3_default(), 1250, 360);
        let mut out = Vec::new();
        for &(tick, event) in events {
            pk.event(tick, event, &mut |p| out.push(p));
        }
        pk.close(&mut |p| out.push(p));
        out.remove(0).bytes
    }

    #[test]
    fn only_losses_before_a_boards_last_packet_are_visible() {
        let report = MergeReport {
            boards: vec![BoardReport {
                board: 1,
                last_seq: Some(9),
                gaps: vec![Gap {
                    board: 1,
                    first_seq: 3,
                    last_seq: 4,
                    from_tick: 0,
                    to_tick: 0,
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(reported_missing(&report), BTreeSet::from([(1, 3), (1, 4)]));
        let lost = BTreeSet::from([(1, 3), (1, 4), (1, 10), (2, 0)]);
        assert_eq!(
            visible_losses(&lost, &report),
            BTreeSet::from([(1, 3), (1, 4)])
        );
        let recs = [TraceRecord::new(5, 1, RecordKind::Cmd, 2)];
        let sent_twice = BTreeSet::from([(1, 3)]);
        let v = Verdict::new(&recs, recs, &report, &lost, &sent_twice);
        assert!(v.is_exact(), "{v:?}");
        assert_eq!(v.duplicates_sent, 0);
        let v = Verdict::new(&recs, [], &report, &lost, &sent_twice);
        assert!(!v.is_exact());
        let v = Verdict::new(&recs, recs, &report, &BTreeSet::new(), &sent_twice);
        assert!(
            !v.is_exact(),
            "a gap nobody made, and a duplicate not dropped"
        );
    }
}
