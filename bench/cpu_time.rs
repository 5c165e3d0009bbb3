//! CPU time for the benches' figures (included by path by each bench that
//! reports CPU seconds): getrusage's user and system seconds, to the
//! microsecond.

/// User and system CPU seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuTime {
    pub user: f64,
    pub system: f64,
}

impl CpuTime {
    /// User + system.
    pub fn total(self) -> f64 {
        self.user + self.system
    }
}

fn usage(who: libc::c_int) -> CpuTime {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let secs = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    CpuTime {
        user: secs(u.ru_utime),
        system: secs(u.ru_stime),
    }
}

/// This process, all its threads.
pub fn this_process() -> CpuTime {
    usage(libc::RUSAGE_SELF)
}

/// The child processes this process waited for.
#[allow(dead_code)] // not every bench starts children
pub fn waited_children() -> CpuTime {
    usage(libc::RUSAGE_CHILDREN)
}
