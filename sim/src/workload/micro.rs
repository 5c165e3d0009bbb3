//! The paper's verification micro-benchmarks (sequential and random
//! reads and writes, read after write, strided) and the process every
//! simple workload runs in: exec, rounds of its body on fresh buffers,
//! free, exit.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

use super::quicksort::Quicksort;
use super::{Op, Workload, HEAP_BASE, PAGE};

/// One process running a (non-composite) workload: exec, the body, free,
/// exit.
pub(super) struct Process {
    pid: u32,
    workload: Workload,
    rounds: u32,
    round: u32,
    seed: u64,
    body: Option<Body>,
    queue: VecDeque<Op>,
    started: bool,
    finished: bool,
}

impl Process {
    pub(super) fn new(workload: Workload, pid: u32, seed: u64) -> Process {
        let (workload, rounds) = match workload {
            Workload::Rounds { inner, rounds } => (*inner, rounds.max(1)),
            w => (w, 1),
        };
        Process {
            pid,
            workload,
            rounds,
            round: 0,
            seed,
            body: None,
            queue: VecDeque::new(),
            started: false,
            finished: false,
        }
    }

    fn buffer_base(&self, round: u32, len: u64) -> u64 {
        // Rounds use disjoint buffers one guard page apart.
        let span = len.div_ceil(PAGE) * PAGE + PAGE;
        HEAP_BASE + u64::from(round) * span
    }
}

impl Iterator for Process {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.queue.pop_front() {
                return Some(op);
            }
            if self.finished {
                return None;
            }
            if !self.started {
                self.started = true;
                let name = self.workload.short_name();
                self.queue.push_back(Op::Exec {
                    pid: self.pid,
                    name: name.to_string(),
                });
                continue;
            }
            match &mut self.body {
                None => {
                    let len = body_len(&self.workload);
                    let base = self.buffer_base(self.round, len);
                    let seed = self.seed ^ (u64::from(self.round) << 32);
                    self.body = Some(Body::new(&self.workload, self.pid, base, seed));
                    self.queue.push_back(Op::Event {
                        pid: self.pid,
                        name: format!("{}_begin", self.workload.short_name()),
                    });
                }
                Some(body) => {
                    if body.step(&mut self.queue) {
                        continue;
                    }
                    let (base, len) = (body.base, body.len);
                    self.body = None;
                    self.queue.push_back(Op::Event {
                        pid: self.pid,
                        name: format!("{}_end", self.workload.short_name()),
                    });
                    self.queue.push_back(Op::Free {
                        pid: self.pid,
                        vaddr: base,
                        len,
                    });
                    self.round += 1;
                    if self.round == self.rounds {
                        self.queue.push_back(Op::Exit { pid: self.pid });
                        self.finished = true;
                    }
                }
            }
        }
    }
}

fn body_len(w: &Workload) -> u64 {
    match *w {
        Workload::SeqRead { bytes, .. }
        | Workload::SeqWrite { bytes, .. }
        | Workload::ReadAfterWrite { bytes, .. }
        | Workload::RandomRead { bytes, .. } => bytes.max(1),
        Workload::Quicksort { n } => n.max(1) * 4,
        _ => PAGE,
    }
}

/// The state of one round of a process's work.
struct Body {
    pid: u32,
    base: u64,
    len: u64,
    kind: BodyKind,
}

enum BodyKind {
    Linear {
        unit: u32,
        stride: u64,
        next: u64,
        write: bool,
        read_back: bool,
    },
    Random {
        unit: u32,
        left: u64,
        rng: Box<ChaCha8Rng>,
    },
    Sort(Box<Quicksort>),
}

impl Body {
    fn new(w: &Workload, pid: u32, base: u64, seed: u64) -> Body {
        let len = body_len(w);
        let kind = match *w {
            Workload::SeqRead { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: false,
                read_back: false,
            },
            Workload::SeqWrite { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: true,
                read_back: false,
            },
            Workload::ReadAfterWrite { unit, stride, .. } => BodyKind::Linear {
                unit,
                stride: stride.max(1),
                next: 0,
                write: true,
                read_back: true,
            },
            Workload::RandomRead { unit, count, .. } => BodyKind::Random {
                unit,
                left: count,
                rng: Box::new(ChaCha8Rng::seed_from_u64(seed)),
            },
            Workload::Quicksort { n } => BodyKind::Sort(Box::new(Quicksort::new(n.max(1), seed))),
            _ => BodyKind::Linear {
                unit: 1,
                stride: 1,
                next: len,
                write: false,
                read_back: false,
            },
        };
        Body {
            pid,
            base,
            len,
            kind,
        }
    }

    /// Pushes the next few ops; false when the round is over.
    fn step(&mut self, out: &mut VecDeque<Op>) -> bool {
        let (pid, base, len) = (self.pid, self.base, self.len);
        let access = |off: u64, write: bool, size: u32| Op::Access {
            pid,
            vaddr: base + off,
            write,
            size,
        };
        match &mut self.kind {
            BodyKind::Linear {
                unit,
                stride,
                next,
                write,
                read_back,
            } => {
                if *next >= len {
                    return false;
                }
                let size = (*unit as u64).min(len - *next) as u32;
                out.push_back(access(*next, *write, size));
                if *read_back {
                    out.push_back(access(*next, false, size));
                }
                *next += *stride;
                true
            }
            BodyKind::Random { unit, left, rng } => {
                if *left == 0 {
                    return false;
                }
                *left -= 1;
                let units = (len / u64::from(*unit)).max(1);
                let off = rng.gen_range(0..units) * u64::from(*unit);
                let size = (u64::from(*unit)).min(len - off) as u32;
                out.push_back(access(off, false, size));
                true
            }
            BodyKind::Sort(q) => q.step(&mut |off, write| out.push_back(access(off, write, 4))),
        }
    }
}
