//! Stream shapes of the simple and composite workloads.

use super::*;

#[test]
fn quicksort_really_sorts_and_reports_its_references() {
    let mut q = Quicksort::new(500, 7);
    let mut refs = 0u64;
    while q.step(&mut |off, _| {
        assert!(off < 2000 && off % 4 == 0);
        refs += 1;
    }) {}
    assert!(q.data().windows(2).all(|w| w[0] <= w[1]));
    // Fill (500 stores) plus at least n log n comparisons' loads.
    assert!(refs > 500 + 500 * 8, "{refs}");
}

#[test]
fn seq_read_stream_shape() {
    let w = Workload::SeqRead {
        bytes: 4096,
        unit: 64,
        stride: 64,
    };
    let ops: Vec<Op> = w.ops(1).collect::<Result<_, _>>().unwrap();
    assert!(matches!(&ops[0], Op::Exec { pid: FIRST_PID, .. }));
    assert!(matches!(ops.last(), Some(Op::Exit { pid: FIRST_PID })));
    let reads: Vec<u64> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Access {
                vaddr,
                write: false,
                size: 64,
                ..
            } => Some(*vaddr),
            _ => None,
        })
        .collect();
    assert_eq!(
        reads,
        (0..64).map(|i| HEAP_BASE + 64 * i).collect::<Vec<_>>()
    );
}

#[test]
fn processes_get_distinct_pids_and_interleave() {
    let w = Workload::default().processes(3, 4);
    let ops: Vec<Op> = w.ops(9).collect::<Result<_, _>>().unwrap();
    let mut pids: Vec<u32> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Exec { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    pids.sort();
    assert_eq!(pids, [FIRST_PID, FIRST_PID + 1, FIRST_PID + 2]);
    let switches = ops
        .windows(2)
        .filter(|w| pid_of(&w[0]) != pid_of(&w[1]))
        .count();
    assert!(switches > 10);
}

fn pid_of(op: &Op) -> Option<u32> {
    match op {
        Op::Access { pid, .. } | Op::Exec { pid, .. } | Op::Exit { pid } => Some(*pid),
        _ => None,
    }
}

#[test]
fn a_spec_gives_its_kind_its_default_size_and_refuses_what_cannot_be() {
    let spec = WorkloadSpec::sized(WorkloadKind::SeqRead, None, 4096, 64, 4096);
    assert!(matches!(
        spec.build().unwrap(),
        Workload::SeqRead {
            bytes: 4096,
            unit: 64,
            stride: 64
        }
    ));
    let too_large = WorkloadSpec {
        n: Some(MAX_WORKLOAD_SIZE + 1),
        ..spec
    };
    assert!(matches!(too_large.build(), Err(WorkloadError::TooLarge(_))));
    let wide = WorkloadSpec {
        unit: 1 << 32,
        ..spec
    };
    assert!(matches!(wide.build(), Err(WorkloadError::UnitTooLarge(_))));
    let trace = WorkloadSpec {
        kind: WorkloadKind::Trace,
        ..spec
    };
    let e = trace.build().unwrap_err();
    assert_eq!(e.to_string(), "--workload trace needs --trace FILE");
}
