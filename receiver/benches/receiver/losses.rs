//! Where a step's lost datagrams went, and where the receiver's threads
//! spent their CPU over the send.
//!
//! A datagram the sender counted as sent and the capture did not write
//! was refused at the capture CPU's backlog (the sender's ENOBUFS, and
//! the kernel's `dropped` column of /proc/net/softnet_stat), dropped by
//! the capture's kernel buffer (a ring's `tp_drops`, tcpdump's "dropped
//! by kernel"), received but not written (the receiver's writer), or lost
//! somewhere none of these counts (`elsewhere`: the rest).

use std::collections::BTreeMap;

/// Per-CPU counters of /proc/net/softnet_stat (global, whatever the
/// namespace): datagrams the CPU's backlog refused (`netdev_max_backlog`)
/// and the times its receive softirq ran out of budget or time.
#[derive(Clone, Copy, Default)]
pub struct Softnet {
    pub dropped: u64,
    pub squeezed: u64,
}

impl Softnet {
    /// The counters of `cpu`, or every CPU's summed when `None`.
    pub fn read(cpu: Option<usize>) -> Softnet {
        let text = std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default();
        let mut sum = Softnet::default();
        for (line_no, line) in text.lines().enumerate() {
            let f: Vec<u64> = line
                .split_whitespace()
                .map(|h| u64::from_str_radix(h, 16).unwrap_or(0))
                .collect();
            // Since Linux 5.10 the 13th column is the CPU's number; lines
            // of offline CPUs are left out, so the line number is not.
            let this_cpu = f.get(12).map_or(line_no, |&c| c as usize);
            if cpu.is_none_or(|c| c == this_cpu) {
                sum.dropped += f.get(1).copied().unwrap_or(0);
                sum.squeezed += f.get(2).copied().unwrap_or(0);
            }
        }
        sum
    }

    pub fn since(self, earlier: Softnet) -> Softnet {
        Softnet {
            dropped: self.dropped.wrapping_sub(earlier.dropped),
            squeezed: self.squeezed.wrapping_sub(earlier.squeezed),
        }
    }
}

/// Where a step's lost datagrams went (see the module's notes).
#[derive(Clone, Copy, Default)]
pub struct Losses {
    /// Refused at the capture CPU's backlog, as the sender counted them.
    pub refused: u64,
    /// The capture CPU's softnet `dropped` over the step (any traffic).
    pub backlog: u64,
    /// The capture CPU's softnet `time_squeeze` over the step.
    pub squeezed: u64,
    /// Dropped by the capture's own kernel buffer (ring or socket).
    pub kernel: Option<u64>,
    /// Received by the receiver but not written.
    pub unwritten: u64,
}

impl Losses {
    /// One line: the lost datagrams by place; `elsewhere` is the rest.
    pub fn describe(&self, lost: u64) -> String {
        let kernel = self.kernel.unwrap_or(0);
        let counted = self.refused + kernel + self.unwritten;
        let mut text = format!(
            "lost {lost}: refused at the backlog {} (softnet dropped {}, squeezed {}), \
             capture's kernel buffer {}",
            self.refused,
            self.backlog,
            self.squeezed,
            self.kernel.map_or("?".into(), |k| k.to_string()),
        );
        if self.unwritten > 0 {
            text.push_str(&format!(", not written {}", self.unwritten));
        }
        if lost >= counted {
            text.push_str(&format!(", elsewhere {}", lost - counted));
        } else {
            text.push_str(&format!(", counted {} more than lost", counted - lost));
        }
        text
    }
}

/// CPU ticks and last CPU of each thread of this process, by thread id.
pub struct Threads(BTreeMap<u32, (String, u64, usize)>);

impl Threads {
    pub fn read() -> Threads {
        let mut map = BTreeMap::new();
        let Ok(entries) = std::fs::read_dir("/proc/self/task") else {
            return Threads(map);
        };
        for e in entries.flatten() {
            let Ok(tid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let name = stat[open + 1..close].to_string();
            // After the name: state is field 3; utime, stime (ticks) 14
            // and 15; the CPU it last ran on 39.
            let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            map.insert(tid, (name, num(11) + num(12), num(36) as usize));
        }
        Threads(map)
    }

    /// Each receiver thread kind's cores over `seconds` since `earlier`
    /// (threads named `hmtt-recv-N` summed as `recv`, `hmtt-writer-N` as
    /// `writer`), with the CPUs they last ran on.
    pub fn describe_since(&self, earlier: &Threads, seconds: f64) -> String {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let mut kinds: BTreeMap<&str, (u64, Vec<usize>)> = BTreeMap::new();
        for (tid, (name, ticks, cpu)) in &self.0 {
            let kind = if name.starts_with("hmtt-recv") {
                "recv"
            } else if name.starts_with("hmtt-writer") {
                "writer"
            } else {
                continue;
            };
            let before = earlier.0.get(tid).map_or(0, |t| t.1);
            let e = kinds.entry(kind).or_default();
            e.0 += ticks.saturating_sub(before);
            if !e.1.contains(cpu) {
                e.1.push(*cpu);
            }
        }
        kinds
            .iter()
            .map(|(kind, (ticks, cpus))| {
                let cpus: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
                format!(
                    "{kind} {:.2} cores on CPU {}",
                    *ticks as f64 / hz / seconds.max(1e-9),
                    cpus.join(",")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
