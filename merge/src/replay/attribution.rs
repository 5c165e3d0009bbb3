//! Which process a reference to a frame with several owners belongs to.
//!
//! The kernel log's SWITCH records say, per CPU, which traced process runs
//! (0: none). A hardware trace does not say which CPU made a reference, so a
//! frame mapped by several processes is decided by who runs:
//! - exactly one of its owners runs (on any CPU): that owner;
//! - several run at once (several CPUs): the trace does not say which CPU
//!   made the reference, so each reference is decided on its own
//!   ([`Contest`]), and counted by the rule that decided it:
//!   - the CPU around it ([`Ambiguity::ByCpu`]): the nearest reference
//!     before it and the nearest after it that only one CPU can have made
//!     (a log tag, written by the CPU that logged the record, or a frame
//!     whose owners run on one CPU only) were made by the same CPU: the
//!     process that CPU runs. A CPU issues its references in bursts (on
//!     a real machine as long as its caches keep it busy, under QEMU's
//!     single-threaded TCG a whole time slice), so a reference between
//!     two of one CPU's is that CPU's unless the bursts interleave more
//!     finely than the references that tell the CPUs apart;
//!   - a CPU's burst ([`Ambiguity::ByBurst`]): the telling references
//!     around it are of two CPUs: the process of the CPU before it while
//!     the reference continues its streams with no pause of over
//!     `BURST_PAUSE` records; after such a pause, one that does not
//!     continue them goes to the process of the CPU after it (a pause is
//!     where the other CPU may have taken over, or the same CPU ran the
//!     kernel: the streams tell which);
//!   - locality ([`Ambiguity::ByLocality`]): the running owner whose recent
//!     references (virtual lines) are nearest to this line, if one is
//!     within a page and strictly nearer than the others: a process walking
//!     its data continues where it was, on each owner's own virtual page;
//!   - recency ([`Ambiguity::ByRecency`]): else the running owner whose
//!     last reference to a frame only it maps (certain) came last: the
//!     process issuing references right now;
//!   - else the owner switched in last ([`Ambiguity::SeveralRunning`]);
//! - none runs (the kernel or an untraced process touches the frame, or the
//!   log has no SWITCH records): the owner that ran last, then the one that
//!   mapped the frame last, and the reference is counted
//!   ([`Ambiguity::NoneRunning`]).
//!
//! The process chosen may map the frame at several virtual pages (the zero
//! page, a region mapped twice): its latest mapping is taken and the
//! reference counted ([`Ambiguity::SeveralPages`]).
//!
//! A child forked with CLONE_VM (vfork, posix_spawn) uses its parent's
//! address space until it execs or exits: every frame of that address space
//! has the child as a further owner, at the same virtual page. Faults in the
//! shared space are logged under the space's owner (the parent); records
//! under the child's pid are of its own new space (an execve under way). A
//! vfork parent (CLONE_VFORK) sleeps until its child has let go of the
//! space (its exec or exit), so the parent's next SWITCH in ends the
//! sharing too.
//!
//! A frame with one owner is that owner's whoever runs (the kernel working
//! on the process's pages, or while another process runs).

use hmtt_format::klog::CLONE_VM;

/// `CLONE_VFORK` (as in `<linux/sched.h>`): the parent sleeps until the
/// child releases the address space.
const CLONE_VFORK: u64 = 0x4000;

use super::frames::{FastMap, FrameTable, Owner, Owners};

/// Why a reference was attributed by rule rather than for certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ambiguity {
    /// Several of the frame's owners were running at once (several CPUs),
    /// and neither locality nor recency told them apart: the one switched
    /// in last.
    SeveralRunning,
    /// The frame has several owners and none of them was running.
    NoneRunning,
    /// The process maps the frame at several virtual pages.
    SeveralPages,
    /// Several owners running at once: the one whose recent references
    /// are nearest to the line.
    ByLocality,
    /// Several owners running at once: the one whose certain reference
    /// came last.
    ByRecency,
    /// Several owners running at once: the one running on the CPU that
    /// made the nearest telling references before and after it.
    ByCpu,
    /// Several owners running at once, the telling references before and
    /// after it not of one CPU: the one the CPU before it runs, whose
    /// recent lines it continues without a pause; after a pause, if it
    /// does not continue them, the one the CPU after it runs.
    ByBurst,
}

impl Ambiguity {
    pub const ALL: [Ambiguity; 7] = [
        Ambiguity::ByCpu,
        Ambiguity::ByBurst,
        Ambiguity::ByLocality,
        Ambiguity::ByRecency,
        Ambiguity::SeveralRunning,
        Ambiguity::NoneRunning,
        Ambiguity::SeveralPages,
    ];

    /// 1..=7 (0 stands for "certain"); fits in 3 bits.
    pub fn code(self) -> u8 {
        match self {
            Ambiguity::SeveralRunning => 1,
            Ambiguity::NoneRunning => 2,
            Ambiguity::SeveralPages => 3,
            Ambiguity::ByLocality => 4,
            Ambiguity::ByRecency => 5,
            Ambiguity::ByCpu => 6,
            Ambiguity::ByBurst => 7,
        }
    }

    pub fn from_code(code: u8) -> Option<Ambiguity> {
        match code {
            1 => Some(Ambiguity::SeveralRunning),
            2 => Some(Ambiguity::NoneRunning),
            3 => Some(Ambiguity::SeveralPages),
            4 => Some(Ambiguity::ByLocality),
            5 => Some(Ambiguity::ByRecency),
            6 => Some(Ambiguity::ByCpu),
            7 => Some(Ambiguity::ByBurst),
            _ => None,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Ambiguity::SeveralRunning => "several owners running, no nearer nor later one",
            Ambiguity::NoneRunning => "several owners, none running",
            Ambiguity::SeveralPages => "one process, several virtual pages",
            Ambiguity::ByLocality => "several owners running, one nearer",
            Ambiguity::ByRecency => "several owners running, one referenced later",
            Ambiguity::ByCpu => "several owners running, one CPU around it",
            Ambiguity::ByBurst => "several owners running, one CPU's burst",
        }
    }

    /// How the reference was attributed.
    pub fn rule(self) -> &'static str {
        match self {
            Ambiguity::SeveralRunning => "given to the one switched in last",
            Ambiguity::NoneRunning => "given to the one that ran last",
            Ambiguity::SeveralPages => "given to its latest mapping",
            Ambiguity::ByLocality => "given to the one whose recent lines are nearest",
            Ambiguity::ByRecency => "given to the one whose certain reference came last",
            Ambiguity::ByCpu => "given to the one that CPU runs",
            Ambiguity::ByBurst => "given to the process of the CPU before or after it",
        }
    }
}

/// Lines remembered per process: a few streams (input, output, stack),
/// each by direction.
const HISTORY: usize = 8;
/// A line at most this far (bytes) from one of a process's recent lines
/// continues its references; farther, locality says nothing.
const NEAR: u64 = 4096;

/// A CPU's burst of references is taken to go on across at most this
/// many trace records without one of them (other CPUs' references, or
/// its own to frames no traced process maps).
const BURST_PAUSE: u64 = 256;

/// A stream the process has not referenced in this many of its own
/// references since is over: a process that wrote a buffer and moved on
/// does not claim another's writes just past its end.
const EXPIRE: u64 = 256;

/// A process's recent references while processes that share frames run
/// at once.
#[derive(Clone, Copy, Default)]
struct Recent {
    /// Virtual lines with the direction in bit 0 (1: write), and when
    /// each was last referenced, counted in `made` (0: empty).
    lines: [u64; HISTORY],
    when: [u64; HISTORY],
    /// The references noted for the process.
    made: u64,
    /// Position of its last certain reference (0: none seen).
    certain: u64,
    /// Position of its last reference noted, certain or decided.
    last_at: u64,
}

/// A line and a direction, as `Recent` keeps them.
#[inline]
fn stream_key(vline: u64, write: bool) -> u64 {
    vline | u64::from(write)
}

impl Recent {
    /// The distance from `vline` to the nearest recent line referenced in
    /// the same direction (a stream is read or written: a process reading
    /// a buffer another fills is told apart by that); lines referenced in
    /// the other direction count as beyond `NEAR`.
    fn distance(&self, vline: u64, write: bool) -> u64 {
        let key = stream_key(vline, write);
        let mut d = u64::MAX;
        for i in 0..HISTORY {
            if self.when[i] != 0 && self.made - self.when[i] <= EXPIRE {
                let (line, dir) = (self.lines[i] & !1, self.lines[i] & 1);
                let gap = line.abs_diff(vline);
                d = d.min(if dir == key & 1 {
                    gap
                } else {
                    gap.saturating_add(NEAR + 1)
                });
            }
        }
        d
    }

    /// `vline` referenced: it continues the stream of that direction
    /// whose line is within `NEAR`, or replaces the oldest.
    fn note(&mut self, vline: u64, write: bool, pos: u64) {
        let key = stream_key(vline, write);
        self.made += 1;
        self.last_at = pos;
        let mut slot = 0;
        let mut best = u64::MAX;
        for i in 0..HISTORY {
            if self.when[i] != 0
                && self.lines[i] & 1 == key & 1
                && (self.lines[i] & !1).abs_diff(vline) <= NEAR
            {
                slot = i;
                break;
            }
            if self.when[i] < best {
                best = self.when[i];
                slot = i;
            }
        }
        self.lines[slot] = key;
        self.when[slot] = self.made;
    }
}

/// Decides references to frames several running processes map, one by
/// one, from what each process referenced lately (see the module's
/// documentation). Only kept up to date while several CPUs run traced
/// processes ([`Processes::contested`]).
#[derive(Default)]
pub struct Contest {
    recent: Vec<(u32, Recent)>,
}

impl Contest {
    fn recent(&mut self, pid: u32) -> &mut Recent {
        let i = match self.recent.iter().position(|(p, _)| *p == pid) {
            Some(i) => i,
            None => {
                self.recent.push((pid, Recent::default()));
                self.recent.len() - 1
            }
        };
        &mut self.recent[i].1
    }

    fn get(&self, pid: u32) -> Option<&Recent> {
        self.recent.iter().find(|(p, _)| *p == pid).map(|(_, r)| r)
    }

    /// `pid` referenced `vaddr` at `pos` (a position in the trace), for
    /// certain: a frame only it maps.
    pub fn certain(&mut self, pid: u32, vaddr: u64, write: bool, pos: u64) {
        let r = self.recent(pid);
        r.certain = pos.max(1);
        r.note(vaddr & !LINE_MASK, write, pos);
    }

    fn forget(&mut self, pid: u32) {
        self.recent.retain(|(p, _)| *p != pid);
    }

    /// A reference (a write if `write`) to page offset `offset`
    /// of a frame that the running `contenders` map, (pid, virtual page)
    /// each, the one switched in last first: the (pid, virtual page) it is
    /// given to, and by which rule. `pos`: its position in the trace.
    /// `around`: the processes running on the CPUs that made the telling
    /// references before and after it (0: none, or not known); `told_at`:
    /// the position of the telling reference before it (0: not known).
    pub fn decide(
        &mut self,
        contenders: &[(u32, u64)],
        offset: u64,
        write: bool,
        pos: u64,
        around: (u32, u32),
        told_at: u64,
    ) -> (u32, u64, Ambiguity) {
        let line = offset & !LINE_MASK;
        let vline = |vpn: u64| (vpn << PAGE_SHIFT) | line;
        let contender = |pid: u32| {
            contenders
                .iter()
                .find(|&&(p, _)| p == pid && pid != 0)
                .copied()
        };
        let before = contender(around.0);
        // Given to (pid, vpn), by the rule `why`: its stream goes on there.
        let give = |c: &mut Contest, (pid, vpn): (u32, u64), why| {
            c.recent(pid).note(vline(vpn), write, pos);
            (pid, vpn, why)
        };
        if let Some((pid, vpn)) = before {
            // One CPU before and after it: that CPU's, its bursts being
            // longer than the gaps between telling references.
            if around.1 == around.0 {
                return give(self, (pid, vpn), Ambiguity::ByCpu);
            }
            // Another CPU's after it: the burst before it goes on while
            // the references continue its process's streams without a
            // pause, and right after its CPU's telling reference (such as
            // its return from the kernel, where a new stream may start).
            // After a pause (where the other CPU may have taken over), a
            // reference that does not continue them is the other CPU's.
            let (near, paused) = self.get(pid).map_or((false, true), |r| {
                (
                    r.distance(vline(vpn), write) <= NEAR,
                    pos - r.last_at.min(pos) > BURST_PAUSE,
                )
            });
            let told_lately = told_at != 0 && pos.saturating_sub(told_at) <= BURST_PAUSE;
            if (near && !paused) || told_lately {
                return give(self, (pid, vpn), Ambiguity::ByBurst);
            }
            if paused && !near {
                if let Some(next) = contender(around.1) {
                    return give(self, next, Ambiguity::ByBurst);
                }
            }
        }
        let (mut best, mut nearest, mut second) = (0, u64::MAX, u64::MAX);
        let (mut latest, mut latest_at, mut tied) = (0, 0, false);
        for (i, &(pid, vpn)) in contenders.iter().enumerate() {
            let Some(r) = self.get(pid) else { continue };
            let d = r.distance(vline(vpn), write);
            if d < nearest {
                (second, nearest, best) = (nearest, d, i);
            } else if d < second {
                second = d;
            }
            if r.certain > latest_at {
                (latest, latest_at, tied) = (i, r.certain, false);
            } else if r.certain == latest_at && latest_at != 0 {
                tied = true;
            }
        }
        let (i, why) = if nearest <= NEAR && nearest < second {
            (best, Ambiguity::ByLocality)
        } else if latest_at != 0 && !tied {
            (latest, Ambiguity::ByRecency)
        } else {
            (0, Ambiguity::SeveralRunning)
        };
        give(self, contenders[i], why)
    }
}

const PAGE_SHIFT: u32 = 12;
const LINE_MASK: u64 = 63;

/// What decides a frame with several owners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// One (pid, virtual page) for every reference until the log changes
    /// something, and why, if by rule.
    Fixed(u32, u64, Option<Ambiguity>),
    /// Several owners run at once: each reference is decided on its own
    /// among the contenders [`Processes::decide`] left.
    Contested,
}

/// The processes as the log tells them: who runs where, and which share an
/// address space.
#[derive(Default)]
pub struct Processes {
    /// The log has SWITCH records: who runs is known (otherwise every
    /// frame with several owners goes to its latest mapping, as the
    /// version 1 log only allows).
    pub switches: bool,
    /// By CPU: the traced process running (0: none) and the sequence
    /// number of the record that put it there.
    running: Vec<(u32, u64)>,
    /// CPUs running a traced process.
    busy: usize,
    /// Sequence number of each process's last switch in or out.
    last_ran: FastMap<u32, u64>,
    /// CLONE_VM child → the process whose address space it uses.
    vm_owner: FastMap<u32, u32>,
    /// The reverse: process → the CLONE_VM children using its space.
    vm_users: FastMap<u32, Vec<u32>>,
    /// vfork parent → its children still using its space.
    vfork_waiting: FastMap<u32, Vec<u32>>,
    /// Processes that logged EXIT but still hold their own address space:
    /// the kernel reads their memory (the robust-futex list) and logs the
    /// UNMAPs of its teardown after EXIT, until their last switch out.
    exiting: Vec<u32>,
    /// Candidates of a decision (reused).
    scratch: Vec<Owner>,
    /// Who referenced what lately, while several CPUs run traced
    /// processes.
    pub contest: Contest,
}

impl Processes {
    pub fn new(switches: bool) -> Processes {
        Processes {
            switches,
            ..Processes::default()
        }
    }

    /// The process whose address space `pid` uses.
    #[inline]
    pub fn space_of(&self, pid: u32) -> u32 {
        if self.vm_owner.is_empty() {
            return pid;
        }
        self.vm_owner.get(&pid).copied().unwrap_or(pid)
    }

    /// Whether a traced process runs on some CPU (known only from a log
    /// with SWITCH records).
    #[inline]
    pub fn traced_running(&self) -> bool {
        self.busy > 0
    }

    /// Whether several CPUs run traced processes: frames several of them
    /// map are then decided reference by reference.
    #[inline]
    pub fn contested(&self) -> bool {
        self.busy > 1
    }

    /// The traced process running on `cpu` (0: none, or not known).
    pub fn runner(&self, cpu: u16) -> u32 {
        self.running.get(usize::from(cpu)).map_or(0, |&(p, _)| p)
    }

    /// The one CPU running a process that uses a frame of `owners` (an
    /// owner or a CLONE_VM child using an owner's space), if exactly one
    /// CPU does: a reference to the frame by a traced process was that
    /// CPU's.
    pub fn only_cpu(&self, owners: &Owners<'_>) -> Option<u16> {
        let maps = |pid: u32| match owners {
            Owners::None => false,
            Owners::One { pid: o, .. } => *o == pid,
            Owners::Several(list) => list.iter().any(|o| o.pid == pid),
        };
        let mut found = None;
        for (cpu, &(pid, _)) in self.running.iter().enumerate() {
            if pid != 0 && (maps(pid) || maps(self.space_of(pid))) {
                if found.is_some() {
                    return None;
                }
                found = u16::try_from(cpu).ok();
            }
        }
        found
    }

    /// Whether CLONE_VM children use `pid`'s address space.
    #[inline]
    pub fn has_vm_users(&self, pid: u32) -> bool {
        !self.vm_users.is_empty() && self.vm_users.contains_key(&pid)
    }

    fn runs(&mut self, cpu: u16, pid: u32, seq: u64) {
        if !self.switches {
            return;
        }
        let cpu = usize::from(cpu);
        if self.running.len() <= cpu {
            self.running.resize(cpu + 1, (0, 0));
        }
        let was = self.running[cpu].0;
        self.busy = self.busy + usize::from(pid != 0) - usize::from(was != 0);
        self.running[cpu] = (pid, seq);
        if pid != 0 {
            self.last_ran.insert(pid, seq);
        }
    }

    /// SWITCH: `cpu` switched from `prev` to `next`.
    pub fn switch(&mut self, cpu: u16, prev: u32, next: u32, seq: u64) {
        if prev != 0 && self.switches {
            self.last_ran.insert(prev, seq);
        }
        // A vfork parent runs again: its children have let go of its space.
        if !self.vfork_waiting.is_empty() {
            if let Some(children) = self.vfork_waiting.remove(&next) {
                for c in children {
                    self.detach(c);
                }
            }
        }
        self.runs(cpu, next, seq);
    }

    /// FORK: `child` made by `parent` (running on `cpu`).
    pub fn fork(
        &mut self,
        child: u32,
        parent: u32,
        flags: u64,
        cpu: u16,
        seq: u64,
        frames: &mut FrameTable,
    ) {
        // A pid seen before belonged to a process that is gone.
        self.leave_space(child, frames);
        if flags & CLONE_VM != 0 {
            let owner = self.space_of(parent);
            if owner != child {
                self.vm_owner.insert(child, owner);
                self.vm_users.entry(owner).or_default().push(child);
                if flags & CLONE_VFORK != 0 {
                    self.vfork_waiting.entry(parent).or_default().push(child);
                }
            }
        }
        self.runs(cpu, parent, seq);
    }

    /// EXEC: `pid` (running on `cpu`) starts a new image; its old address
    /// space is no longer its own.
    pub fn exec(&mut self, pid: u32, cpu: u16, seq: u64, frames: &mut FrameTable) {
        self.leave_space(pid, frames);
        self.runs(cpu, pid, seq);
    }

    /// EXIT: `pid`'s mappings end (those of an address space it shares
    /// with CLONE_VM children pass to one of them). An address space of
    /// its own lives on until the process's last switch out ([`Self::
    /// switched_out`]): `do_exit` still reads it and logs each page's
    /// UNMAP after EXIT. Without SWITCH records that end is not seen, and
    /// the mappings end at once.
    pub fn exit(&mut self, pid: u32, frames: &mut FrameTable) {
        let own_space = !self.vm_owner.contains_key(&pid) && !self.has_vm_users(pid);
        if self.switches && own_space {
            if !self.exiting.contains(&pid) {
                self.exiting.push(pid);
            }
            return;
        }
        self.end(pid, frames);
    }

    /// `prev` was switched out: an exiting process's teardown is over, and
    /// what its log did not unmap ends.
    pub fn switched_out(&mut self, prev: u32, frames: &mut FrameTable) {
        if self.exiting.contains(&prev) {
            self.end(prev, frames);
        }
    }

    fn end(&mut self, pid: u32, frames: &mut FrameTable) {
        self.leave_space(pid, frames);
        self.last_ran.remove(&pid);
        self.contest.forget(pid);
    }

    /// A CLONE_VM child stops using its owner's space; whether it was one.
    fn detach(&mut self, pid: u32) -> bool {
        let Some(owner) = self.vm_owner.remove(&pid) else {
            return false;
        };
        if let Some(users) = self.vm_users.get_mut(&owner) {
            users.retain(|&u| u != pid);
            if users.is_empty() {
                self.vm_users.remove(&owner);
            }
        }
        self.vfork_waiting.retain(|_, children| {
            children.retain(|&c| c != pid);
            !children.is_empty()
        });
        true
    }

    fn leave_space(&mut self, pid: u32, frames: &mut FrameTable) {
        self.exiting.retain(|&p| p != pid);
        // A CLONE_VM child's own pages are of the space its execve builds
        // (dropped at its EXEC; its SNAPSHOT_MAPs follow).
        if self.detach(pid) {
            frames.drop_pid(pid);
            return;
        }
        match self.vm_users.remove(&pid) {
            // The space lives on with the children that use it.
            Some(users) => {
                let heir = users[0];
                frames.hand_over(pid, heir);
                self.vm_owner.remove(&heir);
                for &u in &users[1..] {
                    self.vm_owner.insert(u, heir);
                }
                if users.len() > 1 {
                    self.vm_users.insert(heir, users[1..].to_vec());
                }
            }
            None => frames.drop_pid(pid),
        }
    }

    /// Decides a frame owned by `owners` (one or more) and by the CLONE_VM
    /// children of those owners: the (pid, virtual page) a reference to it
    /// is attributed to, and why, if by rule; or, when several of them run
    /// at once, [`Decision::Contested`] with `contenders` set to the
    /// running ones, (pid, latest virtual page) each, the one switched in
    /// last first.
    pub fn decide(&mut self, owners: &[Owner], contenders: &mut Vec<(u32, u64)>) -> Decision {
        contenders.clear();
        let mut cands = std::mem::take(&mut self.scratch);
        cands.clear();
        for o in owners {
            cands.push(*o);
            if let Some(users) = self.vm_users.get(&o.pid) {
                cands.extend(users.iter().map(|&pid| Owner { pid, ..*o }));
            }
        }
        let first = cands[0].pid;
        if !cands.iter().all(|c| c.pid == first) {
            let mut running: Vec<(u64, u32)> = self
                .running
                .iter()
                .filter(|&&(p, _)| p != 0 && cands.iter().any(|c| c.pid == p))
                .map(|&(p, since)| (since, p))
                .collect();
            running.sort_unstable_by(|a, b| b.cmp(a));
            let mut pids: Vec<u32> = Vec::with_capacity(running.len());
            for &(_, p) in &running {
                if !pids.contains(&p) {
                    pids.push(p);
                }
            }
            if pids.len() > 1 {
                for p in pids {
                    let best = cands
                        .iter()
                        .filter(|c| c.pid == p)
                        .max_by_key(|c| c.stamp)
                        .expect("a running candidate");
                    contenders.push((p, best.vpn));
                }
                self.scratch = cands;
                return Decision::Contested;
            }
        }
        let (pid, vpn, why) = self.decide_one(&cands);
        self.scratch = cands;
        Decision::Fixed(pid, vpn, why)
    }

    /// [`Self::decide`] of the candidates `cands` (the owners and their
    /// address space's users) when at most one of them runs.
    fn decide_one(&self, cands: &[Owner]) -> (u32, u64, Option<Ambiguity>) {
        let first = cands[0].pid;
        let mut cause = None;
        let pid = if cands.iter().all(|c| c.pid == first) {
            first
        } else {
            // The one running candidate ([`Self::decide`] has handed
            // several running ones to the caller as contested), on however
            // many CPUs its threads run.
            let running = self
                .running
                .iter()
                .filter(|&&(p, _)| p != 0 && cands.iter().any(|c| c.pid == p));
            match running.max_by_key(|&&(_, since)| since) {
                Some(&(p, _)) => p,
                None => {
                    cause = Some(Ambiguity::NoneRunning);
                    let ran = |p: u32| self.last_ran.get(&p).copied().unwrap_or(0);
                    cands
                        .iter()
                        .max_by_key(|c| (ran(c.pid), c.stamp))
                        .map_or(first, |c| c.pid)
                }
            }
        };
        let best = cands
            .iter()
            .filter(|c| c.pid == pid)
            .max_by_key(|c| c.stamp)
            .copied()
            .unwrap_or(cands[0]);
        if cands.iter().any(|c| c.pid == pid && c.vpn != best.vpn) {
            cause = cause.or(Some(Ambiguity::SeveralPages));
        }
        (pid, best.vpn, cause)
    }
}

#[cfg(test)]
mod tests;
