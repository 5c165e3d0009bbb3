//! DCBU: JEDEC DDR3 truth-table decoding per lane, lanes in order, and its
//! generated Verilog through yosys.

use hmtt_hdl::dcbu::{kind, CommandPins, Dcbu};
use rust_hdl::prelude::*;

type Decoded = (u64, u64, u64, u64);

/// Drives `per_clock[k][j]` on lane j of clock k; returns the decoded
/// (kind, rank, bank, arg) per tick.
fn decode<const L: usize>(per_clock: Vec<[CommandPins; L]>) -> Vec<Decoded> {
    let mut uut = Dcbu::<L>::default();
    uut.connect_all();
    let mut sim = Simulation::new();
    sim.add_clock(5, |x: &mut Box<Dcbu<L>>| x.clock.next = !x.clock.val());
    let (tx, rx) = std::sync::mpsc::channel();
    let clocks = per_clock.len() + 3;
    sim.add_testbench(move |mut sim: Sim<Dcbu<L>>| {
        let mut x = sim.init()?;
        let mut out = vec![];
        for k in 0..clocks {
            for j in 0..L {
                let p = per_clock.get(k).map_or(CommandPins::DESELECT, |c| c[j]);
                let pins = &mut x.pins[j];
                pins.cs_n.next = p.cs_n.to_bits();
                pins.ras_n.next = p.ras_n;
                pins.cas_n.next = p.cas_n;
                pins.we_n.next = p.we_n;
                pins.cke.next = p.cke;
                pins.ba.next = p.ba.to_bits();
                pins.addr.next = p.addr.to_bits();
            }
            wait_clock_cycle!(sim, clock, x);
            if x.tick_valid.val() {
                assert_eq!(x.tick.val().to_u64(), out.len() as u64, "tick of lane 0");
                for j in 0..L {
                    out.push((
                        x.cmd_kind[j].val().to_u64(),
                        x.cmd_rank[j].val().to_u64(),
                        x.cmd_bank[j].val().to_u64(),
                        x.cmd_arg[j].val().to_u64(),
                    ));
                }
            }
        }
        tx.send(out).unwrap();
        sim.done(x)
    });
    sim.run(Box::new(uut), 1_000_000).unwrap();
    rx.recv().unwrap()
}

#[test]
fn dcbu_decodes_every_command_in_lane_order() {
    use kind::*;
    let cmds: Vec<(u64, u64, u64, u64)> = vec![
        (ACT, 1, 5, 0x2_ABCD),
        (RD, 1, 5, 0x7F8),
        (WR, 0, 15, 0x408),
        (RDA, 3, 2, 0x10),
        (WRA, 2, 7, 0x3F8),
        (PRE, 1, 3, 0),
        (PREA, 0, 0, 0),
        (REF, 1, 0, 0),
        (MRS, 0, 2, 0),
        (ZQ, 0, 0, 0),
        (NOP, 0, 0, 0),
        (UNKNOWN, 1, 0, 0),
    ];
    let pins: Vec<CommandPins> = cmds
        .iter()
        .map(|&(k, r, b, a)| CommandPins::for_command(k, r, b, a))
        .chain([CommandPins::DESELECT; 4])
        .collect();
    let per_clock: Vec<[CommandPins; 4]> =
        pins.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect();
    let got = decode::<4>(per_clock);
    for (i, &(k, r, b, a)) in cmds.iter().enumerate() {
        let arg = if (ACT..=WRA).contains(&k) { a } else { 0 };
        let (rank, bank) = if k == UNKNOWN { (r, 0) } else { (r, b) };
        assert_eq!(got[i], (k, rank, bank, arg), "tick {i}");
    }
    for (i, d) in got.iter().enumerate().skip(cmds.len()).take(4) {
        assert_eq!(d.0, NONE, "deselect at tick {i}");
    }
}

#[test]
fn dcbu_single_lane_matches_four_lanes() {
    use kind::*;
    let cmds = [
        (ACT, 0, 1, 42),
        (RD, 0, 1, 16),
        (WRA, 0, 1, 0x7F8),
        (REF, 1, 0, 0),
    ];
    let per_clock: Vec<[CommandPins; 1]> = cmds
        .iter()
        .map(|&(k, r, b, a)| [CommandPins::for_command(k, r, b, a)])
        .collect();
    let got = decode::<1>(per_clock);
    let want: Vec<Decoded> = cmds
        .iter()
        .map(|&(k, r, b, a)| (k, r, b, if k == REF { 0 } else { a }))
        .collect();
    assert_eq!(&got[..4], &want[..]);
}

#[test]
fn dcbu_verilog_passes_yosys() {
    let mut uut = Dcbu::<1>::default();
    uut.connect_all();
    yosys_validate("hmtt_dcbu_l1", &generate_verilog(&uut)).unwrap();
    let mut uut = Dcbu::<4>::default();
    uut.connect_all();
    yosys_validate("hmtt_dcbu_l4", &generate_verilog(&uut)).unwrap();
}
