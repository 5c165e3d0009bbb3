//! The controller's streams against the checker, and the checker against
//! streams that break each rule.

use super::*;
use hmtt_format::{Command, DdrCmd, DdrCoord, Geometry};

fn coord(rank: u32, bank: u32, row: u32, col_line: u32) -> DdrCoord {
    DdrCoord {
        rank,
        bank,
        row,
        col_line,
    }
}

fn run(scheduler: Scheduler, reqs: &[(u64, DdrCoord, bool)]) -> (Vec<Command>, Vec<Issued<usize>>) {
    let g = Geometry::ddr3_default();
    let mut c = Controller::new(
        ControllerConfig {
            scheduler,
            ..Default::default()
        },
        g,
    );
    for (i, &(arrival, coord, write)) in reqs.iter().enumerate() {
        c.run_until(arrival);
        if c.is_full() {
            c.make_room();
        }
        c.enqueue(Request {
            arrival,
            coord,
            write,
            barrier: false,
            meta: i,
        });
    }
    c.drain();
    (c.take_commands(), c.take_issued())
}

#[test]
fn checking_in_pieces_finds_what_checking_whole_finds() {
    let g = Geometry::ddr3_default();
    let tm = Timing::DDR3_1600;
    // Broken on purpose: ACT then RD too soon, a second ACT to the open
    // bank, a RD to a precharged bank, a time going back, no refresh.
    let mut cmds = Vec::new();
    for i in 0..40u64 {
        let t = i * 3 + if i == 30 { 0 } else { 7 };
        let cmd = match i % 4 {
            0 => DdrCmd::Act,
            1 => DdrCmd::Rd,
            2 => DdrCmd::Pre,
            _ => DdrCmd::Wr,
        };
        cmds.push(Command {
            cycle: t + i * 4000,
            cmd,
            rank: (i % 2) as u32,
            bank: (i % 3) as u32,
            arg: 8 * (i as u32 % 5),
        });
    }
    let whole = check(&cmds, &g, &tm);
    assert!(whole.len() > 10, "{}", whole.len());
    for piece in [1, 3, 7, 40] {
        let mut c = StreamChecker::new(&g, &tm, 5);
        for p in cmds.chunks(piece) {
            c.feed(p);
        }
        // The stream's end adds the ranks never refreshed.
        assert_eq!(c.violations() + 2, whole.len() as u64);
        let (kept, total) = c.finish();
        assert_eq!(total, whole.len() as u64);
        assert_eq!(kept[..], whole[..5]);
    }
}

#[test]
fn open_page_hits_need_one_act() {
    let reqs: Vec<_> = (0..8).map(|i| (0, coord(0, 1, 5, i), i % 2 == 1)).collect();
    let (cmds, issued) = run(Scheduler::Fcfs, &reqs);
    let g = Geometry::ddr3_default();
    assert!(check(&cmds, &g, &Timing::DDR3_1600).is_empty());
    assert_eq!(cmds.iter().filter(|c| c.cmd == DdrCmd::Act).count(), 1);
    let order: Vec<usize> = issued.iter().map(|i| i.meta).collect();
    assert_eq!(order, (0..8).collect::<Vec<_>>());
}

#[test]
fn frfcfs_serves_row_hits_first_and_stays_legal() {
    // Alternate two rows of one bank: FR-FCFS groups them.
    let reqs: Vec<_> = (0..12)
        .map(|i| (0, coord(0, 0, (i % 2) as u32, i as u32 / 2), false))
        .collect();
    let (cmds_in, _) = run(Scheduler::Fcfs, &reqs);
    let (cmds_fr, issued) = run(Scheduler::FrFcfs, &reqs);
    let g = Geometry::ddr3_default();
    assert_eq!(check(&cmds_in, &g, &Timing::DDR3_1600), vec![]);
    assert_eq!(check(&cmds_fr, &g, &Timing::DDR3_1600), vec![]);
    let acts = |c: &[Command]| c.iter().filter(|c| c.cmd == DdrCmd::Act).count();
    assert_eq!(acts(&cmds_in), 12);
    assert!(acts(&cmds_fr) < 12);
    assert_eq!(issued.len(), 12);
}

#[test]
fn tccd_binds_one_rank_and_the_data_bus_binds_two() {
    let g = Geometry::ddr3_default();
    let t = Timing::DDR3_1600;
    let cmd = |cycle, cmd, rank, bank, arg| Command {
        cycle,
        cmd,
        rank,
        bank,
        arg,
    };
    let opened = |rest: &[Command]| {
        let mut s = vec![
            cmd(100, DdrCmd::Act, 0, 0, 1),
            cmd(106, DdrCmd::Act, 1, 0, 1),
        ];
        s.extend_from_slice(rest);
        check(&s, &g, &t)
    };
    // WR on rank 0, RD on rank 1: write data [128, 132), read data from
    // 120 + 3 + 11 = 134, after the rank switch (tRTRS 2).
    let wr_rd = [cmd(120, DdrCmd::Wr, 0, 0, 0), cmd(123, DdrCmd::Rd, 1, 0, 0)];
    assert_eq!(opened(&wr_rd), vec![]);
    // One tick closer, the read's data leaves no rank-switch gap.
    let too_close = [cmd(120, DdrCmd::Wr, 0, 0, 0), cmd(122, DdrCmd::Rd, 1, 0, 0)];
    assert!(opened(&too_close)[0].rule.starts_with("data bus"));
    // Same rank, 3 ticks apart: tCCD.
    let same_rank = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(123, DdrCmd::Rd, 0, 0, 8)];
    assert!(opened(&same_rank)[0].rule.starts_with("tCCD"));
    // Reads on two ranks need a burst and the switch between them.
    let rd_rd = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(125, DdrCmd::Rd, 1, 0, 0)];
    assert!(!opened(&rd_rd).is_empty());
    let rd_rd = [cmd(120, DdrCmd::Rd, 0, 0, 0), cmd(126, DdrCmd::Rd, 1, 0, 0)];
    assert_eq!(opened(&rd_rd), vec![]);
}

#[test]
fn checker_catches_violations() {
    let g = Geometry::ddr3_default();
    let t = Timing::DDR3_1600;
    let cmd = |cycle, cmd, bank, arg| Command {
        cycle,
        cmd,
        rank: 0,
        bank,
        arg,
    };
    let bad = [
        vec![cmd(100, DdrCmd::Rd, 0, 0)],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(105, DdrCmd::Rd, 0, 0)],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(120, DdrCmd::Pre, 0, 0)],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(101, DdrCmd::Act, 1, 1)],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(200, DdrCmd::Act, 0, 2)],
        vec![
            cmd(100, DdrCmd::Act, 0, 1),
            cmd(120, DdrCmd::Rd, 0, 0),
            cmd(122, DdrCmd::Rd, 0, 8),
        ],
        vec![
            cmd(100, DdrCmd::Act, 0, 1),
            cmd(120, DdrCmd::Wr, 0, 0),
            cmd(125, DdrCmd::Rd, 0, 8),
        ],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(200, DdrCmd::Ref, 0, 0)],
        vec![cmd(100, DdrCmd::Act, 0, 1), cmd(100, DdrCmd::Act, 1, 1)],
    ];
    for (i, stream) in bad.iter().enumerate() {
        assert!(!check(stream, &g, &t).is_empty(), "case {i} passed");
    }
    let good = vec![
        cmd(100, DdrCmd::Act, 0, 1),
        cmd(111, DdrCmd::Rd, 0, 0),
        cmd(115, DdrCmd::Rd, 0, 8),
        cmd(128, DdrCmd::Pre, 0, 0),
        cmd(139, DdrCmd::Ref, 0, 0),
    ];
    assert_eq!(check(&good, &g, &t), vec![]);
}
