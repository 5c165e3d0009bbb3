//! Which process a reference to a frame with several owners belongs to.
//!
//! The kernel log's SWITCH records say, per CPU, which traced process runs
//! (0: none). A hardware trace does not say which CPU made a reference, so a
//! frame mapped by several processes is decided by who runs:
//! - exactly one of its owners runs (on any CPU): that owner;
//! - several run at once (several CPUs): genuinely ambiguous; the owner
//!   switched in last is taken, and the reference is counted
//!   ([`Ambiguity::SeveralRunning`]);
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
//! has the child as a further owner, at the same virtual page. Its MAP and
//! UNMAP records, whichever pid they carry, change the shared space.
//!
//! A frame with one owner is that owner's whoever runs (the kernel working
//! on the process's pages, or while another process runs).

use hmtt_format::klog::CLONE_VM;

use super::frames::{FastMap, FrameTable, Owner};

/// Why a reference was attributed by rule rather than for certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ambiguity {
    /// Several of the frame's owners were running at once (several CPUs).
    SeveralRunning,
    /// The frame has several owners and none of them was running.
    NoneRunning,
    /// The process maps the frame at several virtual pages.
    SeveralPages,
}

impl Ambiguity {
    pub const ALL: [Ambiguity; 3] = [
        Ambiguity::SeveralRunning,
        Ambiguity::NoneRunning,
        Ambiguity::SeveralPages,
    ];

    /// 1..=3 (0 stands for "certain").
    pub fn code(self) -> u8 {
        match self {
            Ambiguity::SeveralRunning => 1,
            Ambiguity::NoneRunning => 2,
            Ambiguity::SeveralPages => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<Ambiguity> {
        match code {
            1 => Some(Ambiguity::SeveralRunning),
            2 => Some(Ambiguity::NoneRunning),
            3 => Some(Ambiguity::SeveralPages),
            _ => None,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Ambiguity::SeveralRunning => "several owners running at once",
            Ambiguity::NoneRunning => "several owners, none running",
            Ambiguity::SeveralPages => "one process, several virtual pages",
        }
    }
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
    /// Candidates of a decision (reused).
    scratch: Vec<Owner>,
}

impl Processes {
    pub fn new(switches: bool) -> Processes {
        Processes {
            switches,
            ..Processes::default()
        }
    }

    /// The process whose address space `pid`'s MAP and UNMAP records change.
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
    /// with CLONE_VM children pass to one of them).
    pub fn exit(&mut self, pid: u32, frames: &mut FrameTable) {
        self.leave_space(pid, frames);
        self.last_ran.remove(&pid);
    }

    fn leave_space(&mut self, pid: u32, frames: &mut FrameTable) {
        if let Some(owner) = self.vm_owner.remove(&pid) {
            if let Some(users) = self.vm_users.get_mut(&owner) {
                users.retain(|&u| u != pid);
                if users.is_empty() {
                    self.vm_users.remove(&owner);
                }
            }
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
    /// is attributed to, and why, if by rule.
    pub fn decide(&mut self, owners: &[Owner]) -> (u32, u64, Option<Ambiguity>) {
        let mut cands = std::mem::take(&mut self.scratch);
        cands.clear();
        for o in owners {
            cands.push(*o);
            if let Some(users) = self.vm_users.get(&o.pid) {
                cands.extend(users.iter().map(|&pid| Owner { pid, ..*o }));
            }
        }
        let first = cands[0].pid;
        let mut cause = None;
        let pid = if cands.iter().all(|c| c.pid == first) {
            first
        } else {
            // The running candidate switched in last, and whether another
            // candidate runs too (threads of one process on two CPUs are
            // one process).
            let running = self
                .running
                .iter()
                .filter(|&&(p, _)| p != 0 && cands.iter().any(|c| c.pid == p));
            match running.clone().max_by_key(|&&(_, since)| since) {
                Some(&(p, _)) => {
                    if running.clone().any(|&(q, _)| q != p) {
                        cause = Some(Ambiguity::SeveralRunning);
                    }
                    p
                }
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
        let vpn = best.vpn;
        self.scratch = cands;
        (pid, vpn, cause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(list: &[(u32, u64)]) -> Vec<Owner> {
        list.iter()
            .enumerate()
            .map(|(i, &(pid, vpn))| Owner {
                pid,
                vpn,
                stamp: i as u64 + 1,
            })
            .collect()
    }

    #[test]
    fn who_runs_decides() {
        let mut p = Processes::new(true);
        let shared = owners(&[(1, 0x40), (2, 0x40)]);
        // Nobody runs: the latest mapping, counted.
        assert_eq!(p.decide(&shared), (2, 0x40, Some(Ambiguity::NoneRunning)));
        p.switch(0, 0, 1, 10);
        assert_eq!(p.decide(&shared), (1, 0x40, None));
        p.switch(0, 1, 2, 11);
        assert_eq!(p.decide(&shared), (2, 0x40, None));
        // Process 1 on CPU 1 as well: the one switched in last.
        p.switch(1, 0, 1, 12);
        assert_eq!(
            p.decide(&shared),
            (1, 0x40, Some(Ambiguity::SeveralRunning))
        );
        // Both leave: the one that ran last.
        p.switch(0, 2, 0, 13);
        p.switch(1, 1, 0, 14);
        assert_eq!(p.decide(&shared), (1, 0x40, Some(Ambiguity::NoneRunning)));
        // Two threads of process 3 on two CPUs are one process.
        let other = owners(&[(3, 0x50), (4, 0x60)]);
        p.switch(0, 0, 3, 15);
        p.switch(1, 0, 3, 16);
        assert_eq!(p.decide(&other), (3, 0x50, None));
        // One process at two pages.
        let twice = owners(&[(5, 0x1), (5, 0x2)]);
        assert_eq!(p.decide(&twice), (5, 0x2, Some(Ambiguity::SeveralPages)));
    }

    #[test]
    fn a_vfork_child_uses_its_parents_pages_until_it_execs() {
        let mut frames = FrameTable::default();
        let mut p = Processes::new(true);
        frames.map(7, 1, 0x70);
        p.fork(2, 1, CLONE_VM, 0, 1, &mut frames);
        assert_eq!(p.space_of(2), 1);
        assert!(p.has_vm_users(1));
        let one = owners(&[(1, 0x70)]);
        // The parent ran last (at the FORK).
        assert_eq!(p.decide(&one), (1, 0x70, None));
        p.switch(0, 1, 2, 2);
        assert_eq!(p.decide(&one), (2, 0x70, None));
        p.exec(2, 0, 3, &mut frames);
        assert_eq!(p.space_of(2), 2);
        assert!(!p.has_vm_users(1));
        // The parent exits while a CLONE_VM child still uses its space.
        p.fork(3, 1, CLONE_VM, 0, 4, &mut frames);
        p.exit(1, &mut frames);
        assert_eq!(p.space_of(3), 3);
        assert!(matches!(
            frames.lookup(7).0,
            super::super::frames::Owners::One { pid: 3, vpn: 0x70 }
        ));
    }
}
