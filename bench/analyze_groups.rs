//! `hmtt analyze`'s figure groups one at a time: one pass over a trace's
//! blocks per group (decoding included, and measured alone first), CPU
//! seconds of the process (user + system) and M references per CPU-second.
//! bench/analyze.sh runs it on its trace.
//!
//! `cargo bench -p hmtt-analyze --bench analyze_groups -- TRACE`
//! (a .hmtttrace or its .hmttz archive). `HMTT_BENCH_GROUP=TEXT` runs
//! only the rows whose label holds TEXT (and decoding alone).

use hmtt_analyze::{
    bank_parallelism, banks, mix, page_hotness, reuse_distance, reuse_sampled, streams, timeline,
    AnalyzeOptions, TraceInput, RUN_RECORDS,
};
use hmtt_format::archive::AnyTrace;
use hmtt_format::trace::TraceRecord;
use hmtt_format::trace_blocks::BlockReader;
use hmtt_format::{AddressMapping, Geometry, TickLength};

/// A tick of 1 ns: the reports' times are not what is timed here.
const ONE_NS: TickLength = match TickLength::of_ps(1000) {
    Some(t) => t,
    None => unreachable!(),
};

#[path = "cpu_time.rs"]
mod cpu_time;

fn cpu_seconds() -> f64 {
    cpu_time::this_process().total()
}

/// Whether `HMTT_BENCH_GROUP` (all rows without it) chooses this row.
fn chosen(label: &str) -> bool {
    std::env::var("HMTT_BENCH_GROUP").map_or(true, |g| label.contains(&g))
}

/// One pass of `f` over the trace's records, a run of
/// [`RUN_RECORDS`] at a time (its READ/WRITE records only, as `hmtt
/// analyze` gives them to each figure); prints its CPU time.
fn pass(trace: &AnyTrace, label: &str, mut f: impl FnMut(&[TraceRecord])) -> f64 {
    if !chosen(label) && label != "decoding alone" {
        return 0.0;
    }
    let start = cpu_seconds();
    let mut reader = BlockReader::new(trace);
    let mut refs = 0u64;
    let mut accesses = Vec::with_capacity(RUN_RECORDS);
    for b in 0..reader.block_count() {
        reader
            .block_runs(b, RUN_RECORDS, |run| {
                let run = if run.iter().all(|r| r.is_access()) {
                    run
                } else {
                    accesses.clear();
                    accesses.extend(run.iter().filter(|r| r.is_access()));
                    &accesses
                };
                refs += run.len() as u64;
                f(run);
            })
            .expect("a readable trace");
    }
    let cpu = cpu_seconds() - start;
    println!(
        "  {label:<40} {cpu:8.2} cpu_s {:10.1} M refs/cpu-s",
        refs as f64 / cpu / 1e6
    );
    cpu
}

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .expect("usage: analyze_groups TRACE");
    let file = std::fs::File::open(&path).expect("the trace opens");
    // SAFETY: a benchmark's own input file, not changed while it runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("the trace maps");
    let trace = AnyTrace::new_checked(&map).expect("a trace or archive");
    let (a, b, c) = trace.header().geometry_bytes;
    let geometry = Geometry::from_header_bytes(a, b, c).unwrap_or_default();

    pass(&trace, "decoding alone", |run| {
        std::hint::black_box(run);
    });
    let mut m = mix::MixCounts::default();
    let mut t = timeline::Timeline::new(800, timeline::DEFAULT_INTERVALS);
    pass(&trace, "mix + bandwidth timeline", |run| {
        m.add_run(run);
        t.add_run(run);
    });
    std::hint::black_box((m.mix(), t.report(ONE_NS, 0, &|_| String::new())));
    let decoder = banks::BankDecoder::new(AddressMapping::linear(geometry), 1, 12);
    let mut counts = banks::BankCounts::default();
    let mut rows = hmtt_analyze::row_locality::RowLocality::default();
    let mut blp = bank_parallelism::BankParallelism::new(80);
    pass(&trace, "banks + bank parallelism + row locality", |run| {
        for r in run {
            if let Some((id, row)) = decoder.bank_row(r.board(), r.pa()) {
                counts.add(id, r.packed & 1 == 1);
                rows.add(id, row);
                std::hint::black_box(blp.add(r.tick, id));
            }
        }
    });
    std::hint::black_box((
        counts.report(&geometry, ""),
        rows.report(),
        blp.report(ONE_NS),
    ));
    let mut pages = page_hotness::PageHotness::new(geometry.capacity_bytes());
    pass(&trace, "hot pages", |run| {
        for r in run {
            pages.add(r.pa(), r.packed & 1 == 1);
        }
    });
    std::hint::black_box(pages.report(32, 1));
    let mut s = streams::Streams::new(streams::DEFAULT_WINDOW, streams::DEFAULT_MIN_LEN);
    pass(&trace, "streams", |run| {
        s.access_run(0, run.iter().map(|r| r.pa() >> 6));
    });
    std::hint::black_box(s.finish());
    let mut sampled = reuse_sampled::SampledReuse::new(reuse_sampled::ReuseMode::FixedRate(0.01));
    pass(&trace, "reuse distance, sampled 1 % (SHARDS)", |run| {
        for r in run {
            sampled.access(r.pa() >> 6);
        }
    });
    std::hint::black_box(sampled.report());
    let mut exact = reuse_distance::ReuseDistance::new(geometry.lines());
    pass(&trace, "reuse distance, exact", |run| {
        for r in run {
            exact.access(r.pa() >> 6);
        }
    });
    std::hint::black_box(exact.report());

    let input = TraceInput::Physical(&trace);
    let opts = AnalyzeOptions::default();
    for (label, reuse) in [
        ("every figure, reuse exact", reuse_sampled::ReuseMode::Exact),
        (
            "every figure, reuse sampled 1 %",
            reuse_sampled::ReuseMode::FixedRate(0.01),
        ),
    ] {
        if !chosen(label) {
            continue;
        }
        let opts = AnalyzeOptions {
            reuse,
            ..opts.clone()
        };
        let start = cpu_seconds();
        let (report, _) = hmtt_analyze::analyze(&input, &opts).expect("analysed");
        let cpu = cpu_seconds() - start;
        println!(
            "  {label:<40} {cpu:8.2} cpu_s {:10.1} M refs/cpu-s",
            report.mix.references() as f64 / cpu / 1e6
        );
    }
}
