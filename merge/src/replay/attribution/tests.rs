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

fn fixed(p: &mut Processes, owners: &[Owner]) -> (u32, u64, Option<Ambiguity>) {
    let mut contenders = Vec::new();
    match p.decide(owners, &mut contenders) {
        Decision::Fixed(pid, vpn, why) => (pid, vpn, why),
        Decision::Contested => panic!("contested: {contenders:?}"),
    }
}

#[test]
fn who_runs_decides() {
    let mut p = Processes::new(true);
    let shared = owners(&[(1, 0x40), (2, 0x40)]);
    // Nobody runs: the latest mapping, counted.
    assert_eq!(
        fixed(&mut p, &shared),
        (2, 0x40, Some(Ambiguity::NoneRunning))
    );
    p.switch(0, 0, 1, 10);
    assert_eq!(fixed(&mut p, &shared), (1, 0x40, None));
    assert!(!p.contested());
    p.switch(0, 1, 2, 11);
    assert_eq!(fixed(&mut p, &shared), (2, 0x40, None));
    // Process 1 on CPU 1 as well: decided per reference, the one
    // switched in last first.
    p.switch(1, 0, 1, 12);
    assert!(p.contested());
    let mut contenders = Vec::new();
    assert_eq!(p.decide(&shared, &mut contenders), Decision::Contested);
    assert_eq!(contenders, vec![(1, 0x40), (2, 0x40)]);
    // Both leave: the one that ran last.
    p.switch(0, 2, 0, 13);
    p.switch(1, 1, 0, 14);
    assert_eq!(
        fixed(&mut p, &shared),
        (1, 0x40, Some(Ambiguity::NoneRunning))
    );
    // Two threads of process 3 on two CPUs are one process.
    let other = owners(&[(3, 0x50), (4, 0x60)]);
    p.switch(0, 0, 3, 15);
    p.switch(1, 0, 3, 16);
    assert_eq!(fixed(&mut p, &other), (3, 0x50, None));
    // One process at two pages.
    let twice = owners(&[(5, 0x1), (5, 0x2)]);
    assert_eq!(
        fixed(&mut p, &twice),
        (5, 0x2, Some(Ambiguity::SeveralPages))
    );
}

#[test]
fn a_contested_reference_goes_to_the_cpu_around_it_then_its_burst() {
    // Processes 1 and 2 map the frame at the same page (copy-on-write)
    // and walk it alike.
    let cow = [(1, 0x40), (2, 0x40)];
    let mut c = Contest::default();
    c.certain(1, 0x40_000, false, 10);
    c.certain(2, 0x40_040, false, 11);
    // Telling references of the CPU running process 1 before and
    // after it: process 1's, though process 2 is nearer and later.
    assert_eq!(
        c.decide(&cow, 0x80, false, 12, (1, 1), 0),
        (1, 0x40, Ambiguity::ByCpu)
    );
    // Process 2's CPU after it: process 1's burst goes on while its
    // stream does, without a pause...
    assert_eq!(
        c.decide(&cow, 0xc0, false, 13, (1, 2), 0),
        (1, 0x40, Ambiguity::ByBurst)
    );
    // ...but not after a pause long enough for the other CPU to have
    // taken over: then a reference far from its streams is the other
    // CPU's process's...
    let later = 13 + BURST_PAUSE + 1;
    let elsewhere = [(1, 0x80), (2, 0x80)];
    assert_eq!(
        c.decide(&elsewhere, 0x800, false, later, (1, 2), 0),
        (2, 0x80, Ambiguity::ByBurst)
    );
    // ...and one near them is left to the other rules.
    let (_, _, why) = c.decide(&cow, 0x100, false, 2 * later, (1, 2), 0);
    assert_ne!(why, Ambiguity::ByBurst);
    // A process the CPUs around it do not run is no contender.
    let (_, _, why) = c.decide(&cow, 0x140, false, 400, (3, 3), 0);
    assert_ne!(why, Ambiguity::ByCpu);
}

#[test]
fn only_one_cpu_running_an_owner_tells_the_cpu() {
    let mut p = Processes::new(true);
    let mut frames = FrameTable::default();
    p.switch(0, 0, 1, 1);
    p.switch(1, 0, 2, 2);
    let one = Owners::One { pid: 1, vpn: 0x40 };
    assert_eq!(p.only_cpu(&one), Some(0));
    assert_eq!(p.only_cpu(&Owners::One { pid: 2, vpn: 0x40 }), Some(1));
    let both = owners(&[(1, 0x40), (2, 0x40)]);
    assert_eq!(p.only_cpu(&Owners::Several(&both)), None);
    assert_eq!(p.only_cpu(&Owners::None), None);
    // A CLONE_VM child of 1 runs on CPU 1: 1's frames are used on both.
    p.fork(3, 1, CLONE_VM, 0, 3, &mut frames);
    p.switch(1, 2, 3, 4);
    assert_eq!(p.only_cpu(&one), None);
    assert_eq!(p.runner(1), 3);
    assert_eq!(p.runner(7), 0);
}

#[test]
fn a_contested_reference_goes_to_the_nearer_then_the_later() {
    let mut c = Contest::default();
    // Process 1 maps the frame at page 0x40, process 2 at 0x90.
    let both = [(1, 0x40), (2, 0x90)];
    // Nothing known: the first (switched in last), counted so.
    assert_eq!(
        c.decide(&both, 0x100, false, 0, (0, 0), 0),
        (1, 0x40, Ambiguity::SeveralRunning)
    );
    // Process 2's certain reference next to its view of the frame.
    c.certain(2, 0x90_000 + 0x800, false, 2);
    assert_eq!(
        c.decide(&both, 0x840, false, 0, (0, 0), 0),
        (2, 0x90, Ambiguity::ByLocality)
    );
    // Process 1 continues its own stream (line 0x100 of its page).
    assert_eq!(
        c.decide(&both, 0x140, false, 0, (0, 0), 0),
        (1, 0x40, Ambiguity::ByLocality)
    );
    // Same page number for both (copy-on-write): equally near, so
    // the one whose certain reference came last.
    let cow = [(1, 0x40), (2, 0x40)];
    let mut c = Contest::default();
    c.certain(1, 0x40_000, false, 5);
    c.certain(2, 0x40_000, false, 6);
    assert_eq!(
        c.decide(&cow, 0x40, false, 0, (0, 0), 0),
        (2, 0x40, Ambiguity::ByRecency)
    );
    // That line is process 2's now: the same line again is nearer it.
    assert_eq!(
        c.decide(&cow, 0x40, false, 0, (0, 0), 0),
        (2, 0x40, Ambiguity::ByLocality)
    );
    // Far from both: the later certain reference.
    c.forget(2);
    c.certain(1, 0x7000_0000, false, 9);
    let far = [(1, 0x80), (2, 0x80)];
    assert_eq!(
        c.decide(&far, 0x100, false, 0, (0, 0), 0),
        (1, 0x80, Ambiguity::ByRecency)
    );
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
    assert_eq!(fixed(&mut p, &one), (1, 0x70, None));
    p.switch(0, 1, 2, 2);
    assert_eq!(fixed(&mut p, &one), (2, 0x70, None));
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

#[test]
fn an_exiting_process_keeps_its_pages_until_its_last_switch_out() {
    use super::super::frames::Owners;
    let mut frames = FrameTable::default();
    let mut p = Processes::new(true);
    frames.map(7, 1, 0x70);
    frames.map(8, 1, 0x80);
    frames.map(9, 1, 0x90);
    p.switch(0, 0, 1, 1);
    p.exit(1, &mut frames);
    // do_exit reads the process's memory after EXIT, then logs the
    // teardown's UNMAPs.
    assert!(matches!(
        frames.lookup(7).0,
        Owners::One { pid: 1, vpn: 0x70 }
    ));
    frames.unmap(7, 1, 0x70);
    assert!(matches!(frames.lookup(7).0, Owners::None));
    assert!(matches!(
        frames.lookup(8).0,
        Owners::One { pid: 1, vpn: 0x80 }
    ));
    // Another process's switch out changes nothing.
    p.switched_out(2, &mut frames);
    assert!(matches!(
        frames.lookup(8).0,
        Owners::One { pid: 1, vpn: 0x80 }
    ));
    // Its last switch out ends what the log did not unmap.
    p.switch(0, 1, 0, 5);
    p.switched_out(1, &mut frames);
    assert!(matches!(frames.lookup(8).0, Owners::None));
    assert!(matches!(frames.lookup(9).0, Owners::None));

    // Without SWITCH records the end is not seen: EXIT ends at once.
    let mut p = Processes::new(false);
    frames.map(7, 3, 0x70);
    p.exit(3, &mut frames);
    assert!(matches!(frames.lookup(7).0, Owners::None));

    // A pid used again (FORK) before the switch out: the old pages end.
    let mut p = Processes::new(true);
    frames.map(7, 4, 0x70);
    p.exit(4, &mut frames);
    p.fork(4, 1, 0, 0, 9, &mut frames);
    assert!(matches!(frames.lookup(7).0, Owners::None));
}
