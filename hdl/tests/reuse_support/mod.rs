//! What the RDHPU's tests share: reference streams given clock by clock,
//! the golden model's records for them (`ReuseUnit` with `P = 1`), and
//! the RustHDL unit's.
#![allow(dead_code)]

use hmtt_board_model::reuse_unit::{ReuseConfig, ReuseUnit};
use hmtt_format::stats::{HotPage, ReuseRecord, PAGE_LINE_SHIFT};
use hmtt_hdl::reuse::{ReuseDistanceUnit, DEPTH, HOT, MIN_INTERVAL, RECORD_LATENCY};
use rust_hdl::prelude::*;

/// One fabric clock of the unit's inputs: the pages of its references in
/// lane order (lane, page), and whether it opens the next interval.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub refs: Vec<(usize, u64)>,
    pub close: bool,
}

/// An interval's record: the histogram (distance 0..127, then deeper or
/// new), the skipped references, and the hot pages (page, count).
pub type Record = (Vec<u32>, u32, Vec<(u64, u32)>);

fn record_of(r: &ReuseRecord) -> Record {
    (
        r.histogram.clone(),
        r.skipped,
        r.hot
            .iter()
            .map(|&HotPage { page, count }| (page, count))
            .collect(),
    )
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The golden model's records: one per close, in order.
pub fn model_records(lanes: usize, clocks: &[Inputs]) -> Vec<Record> {
    let mut unit = ReuseUnit::new(
        ReuseConfig {
            start_enabled: true,
            hot_pages: HOT as u8,
            refs_per_clock: 1,
        },
        lanes as u32,
    );
    let mut records = Vec::new();
    for (c, clock) in clocks.iter().enumerate() {
        if clock.close {
            records.push(record_of(&unit.take_record()));
        }
        for &(lane, page) in &clock.refs {
            unit.reference(page << PAGE_LINE_SHIFT, (c * lanes + lane) as u64);
        }
    }
    records
}

/// The RustHDL unit's records, one per close, and whether it flagged an
/// overrun.
pub fn hdl_records<const L: usize, const W: usize>(clocks: &[Inputs]) -> (Vec<Record>, bool) {
    hdl_records_read_by::<L, W>(clocks, None)
}

/// As [`hdl_records`], the histogram read by a reader that pauses at
/// random (`pauses`: its seed) and shifts past the last bin.
pub fn hdl_records_read_by<const L: usize, const W: usize>(
    clocks: &[Inputs],
    pauses: Option<u64>,
) -> (Vec<Record>, bool) {
    // 128 cells make a block too large for a test thread's stack.
    let clocks = clocks.to_vec();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || hdl_records_on_this_thread::<L, W>(&clocks, pauses))
        .expect("simulation thread")
        .join()
        .expect("simulation")
}

fn hdl_records_on_this_thread<const L: usize, const W: usize>(
    clocks: &[Inputs],
    pauses: Option<u64>,
) -> (Vec<Record>, bool) {
    let closes = clocks.iter().filter(|c| c.close).count();
    let clocks = clocks.to_vec();
    let mut uut = ReuseDistanceUnit::<L, W>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<ReuseDistanceUnit<L, W>>| {
        x.clock.next = !x.clock.val()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    sim.add_testbench(move |mut sim: Sim<ReuseDistanceUnit<L, W>>| {
        let mut x = sim.init()?;
        let mut reader = RecordReader::new(&clocks);
        if let Some(seed) = pauses {
            reader = reader.pausing(seed);
        }
        let reading_clocks = if pauses.is_some() { 3 * DEPTH } else { DEPTH };
        let mut clock = 0usize;
        while reader.records.len() < closes {
            let input = clocks.get(clock).cloned().unwrap_or_default();
            x.hist_shift.next = reader.shifts();
            let mut valid = 0u64;
            for j in 0..L {
                x.ref_page[j].next = 0.into();
            }
            for &(lane, page) in &input.refs {
                assert!(lane < L && valid & (1 << lane) == 0, "one reference a lane");
                valid |= 1 << lane;
                x.ref_page[lane].next = page.to_bits();
            }
            x.ref_valid.next = valid.to_bits();
            x.close.next = input.close;
            wait_clock_cycle!(sim, clock, x);
            clock += 1;
            reader.read(
                clock,
                x.record_valid.val(),
                x.record_skipped.val().to_u32(),
                (0..HOT)
                    .map(|j| (x.hot_page[j].val().to_u64(), x.hot_count[j].val().to_u32()))
                    .collect(),
                x.hist_value.val().to_u32(),
            );
            assert!(
                clock < clocks.len() + RECORD_LATENCY + reading_clocks + 8,
                "no record for a close"
            );
        }
        let records = std::mem::take(&mut reader.records);
        let overrun = x.overrun.val();
        tx.send((records, overrun)).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), u64::MAX / 2).unwrap();
    rx.recv().unwrap()
}

/// Checks the unit against the model on `clocks`, closes at least
/// `MIN_INTERVAL` apart; returns the records.
pub fn cosim<const L: usize, const W: usize>(clocks: &[Inputs]) -> Vec<Record> {
    cosim_read_by::<L, W>(clocks, None)
}

/// As [`cosim`], the histogram read by a pausing reader
/// ([`hdl_records_read_by`]).
pub fn cosim_read_by<const L: usize, const W: usize>(
    clocks: &[Inputs],
    pauses: Option<u64>,
) -> Vec<Record> {
    let model = model_records(L, clocks);
    let (hw, overrun) = hdl_records_read_by::<L, W>(clocks, pauses);
    assert!(!overrun, "closes far enough apart");
    assert_records_equal(&hw, &model);
    hw
}

/// `n` clocks with closes after the given interval lengths (clocks),
/// cycled, and one at the end; `refs(rng, clock)` gives each clock's
/// references.
pub fn stream(
    seed: u64,
    n: usize,
    intervals: &[usize],
    mut refs: impl FnMut(&mut Rng, usize) -> Vec<(usize, u64)>,
) -> Vec<Inputs> {
    let mut rng = Rng(seed);
    let mut clocks: Vec<Inputs> = (0..n)
        .map(|c| Inputs {
            refs: refs(&mut rng, c),
            close: false,
        })
        .collect();
    let mut at = 0;
    for &len in intervals.iter().cycle() {
        at += len;
        if at >= n {
            break;
        }
        clocks[at].close = true;
    }
    let last_close = clocks.iter().rposition(|c| c.close).unwrap_or(0);
    let end = n.max(last_close + MIN_INTERVAL);
    clocks.resize(end, Inputs::default());
    clocks.push(Inputs {
        refs: Vec::new(),
        close: true,
    });
    clocks
}

/// A page near the recent ones most of the time: a working set of
/// `set` pages that drifts, and now and then one far away.
pub fn local_page(rng: &mut Rng, base: &mut u64, set: u64, page_mask: u64) -> u64 {
    if rng.below(50) == 0 {
        *base = rng.next() & page_mask;
    }
    if rng.below(20) == 0 {
        return rng.next() & page_mask;
    }
    (*base + rng.below(set)) & page_mask
}

/// Gathers the records from the unit's outputs clock by clock, and says
/// when to shift the histogram's chain: from the clock of `record_valid`
/// on, one bin a clock, or if pausing, in a random two clocks of three
/// and then twice past the last bin (which must read 0).
pub struct RecordReader {
    close_clocks: Vec<usize>,
    reading: Option<Record>,
    pub records: Vec<Record>,
    pauses: Option<Rng>,
    shifting: bool,
    past_last: usize,
}

impl RecordReader {
    pub fn new(clocks: &[Inputs]) -> RecordReader {
        RecordReader {
            close_clocks: (0..clocks.len()).filter(|&c| clocks[c].close).collect(),
            reading: None,
            records: Vec::new(),
            pauses: None,
            shifting: false,
            past_last: 0,
        }
    }

    pub fn pausing(self, seed: u64) -> RecordReader {
        RecordReader {
            pauses: Some(Rng(seed)),
            ..self
        }
    }

    /// `hist_shift` for the clock to come.
    pub fn shifts(&mut self) -> bool {
        let wanted = self.reading.is_some() || self.past_last > 0;
        self.shifting = wanted && self.pauses.as_mut().is_none_or(|rng| rng.below(3) != 0);
        self.shifting
    }

    /// The outputs in `clock`.
    pub fn read(
        &mut self,
        clock: usize,
        record_valid: bool,
        skipped: u32,
        hot: Vec<(u64, u32)>,
        hist_value: u32,
    ) {
        if self.shifting && self.past_last > 0 {
            assert_eq!(hist_value, 0, "a bin past the last");
            self.past_last -= 1;
        }
        if let Some(record) = self.reading.as_mut().filter(|_| self.shifting) {
            record.0.push(hist_value);
        }
        if record_valid {
            assert!(self.reading.is_none(), "a record before the last was read");
            let close = self.close_clocks[self.records.len()];
            assert_eq!(clock - close, RECORD_LATENCY, "record latency");
            let hot = hot.into_iter().filter(|&(_, count)| count > 0).collect();
            self.reading = Some((vec![hist_value], skipped, hot));
        }
        if self
            .reading
            .as_ref()
            .is_some_and(|r| r.0.len() == DEPTH + 1)
        {
            self.records.push(self.reading.take().unwrap());
            if self.pauses.is_some() {
                self.past_last = 2;
            }
        }
    }

    /// The clocks a run needs: through the last record's histogram.
    pub fn clocks_needed(clocks: &[Inputs]) -> usize {
        let last_close = clocks.iter().rposition(|c| c.close).expect("a close");
        last_close + RECORD_LATENCY + DEPTH + 1
    }
}

/// Checks the records against the model's.
pub fn assert_records_equal(hw: &[Record], model: &[Record]) {
    assert_eq!(hw.len(), model.len());
    for (i, (h, m)) in hw.iter().zip(model).enumerate() {
        assert_eq!(h.0, m.0, "interval {i}: histogram");
        assert_eq!(h.1, m.1, "interval {i}: skipped");
        assert_eq!(h.2, m.2, "interval {i}: hot pages");
    }
}
