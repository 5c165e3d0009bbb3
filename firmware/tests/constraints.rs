//! The constraint files, the top levels' ports, the boards' required clocks
//! and constraints/README.md's pinout and summary tables agree.

use hmtt_firmware::board::{Board, Units, REQUIRED_MARGIN};
use hmtt_firmware::error::FirmwareError;
use hmtt_firmware::tops::{self, TopChoice};
use std::collections::BTreeMap;

/// port -> ball/pin, from an LPF or PCF.
fn constraint_pins(board: Board) -> BTreeMap<String, String> {
    let (_, text) = board.constraints();
    let mut pins = BTreeMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        if let Some(rest) = line.strip_prefix("LOCATE COMP \"") {
            let (port, rest) = rest.split_once('"').unwrap();
            let site = rest.split('"').nth(1).unwrap();
            assert!(
                pins.insert(port.to_string(), site.to_string()).is_none(),
                "{port} twice"
            );
        } else if let Some(rest) = line.strip_prefix("set_io ") {
            let mut words = rest.split_whitespace();
            let port = words.next().unwrap();
            let pin = words.next().unwrap();
            assert!(
                pins.insert(port.to_string(), pin.to_string()).is_none(),
                "{port} twice"
            );
        }
    }
    pins
}

/// port -> ball/pin, from the README table of `board`.
fn readme_pins(board: Board) -> BTreeMap<String, String> {
    let text = include_str!("../../constraints/README.md");
    let heading = match board {
        Board::Ecp5_85f => "### ECP5 pinout",
        Board::Ice40Hx8k => "### iCE40 pinout",
    };
    let section = text.split(heading).nth(1).expect("pinout section");
    let mut pins = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if let Some(port) = cells[1].strip_prefix('`').and_then(|p| p.strip_suffix('`')) {
            pins.insert(port.to_string(), cells[2].to_string());
        }
    }
    pins
}

/// The top-level ports of the generated Verilog, expanded to bits.
fn top_ports(board: Board, choice: TopChoice, units: Units) -> Vec<String> {
    let top = tops::generate(board, choice, units).unwrap();
    let module = top.verilog.split("module top(").nth(1).unwrap();
    let body = module.split("endmodule").next().unwrap();
    let mut ports = Vec::new();
    for line in body.lines() {
        let line = line.trim();
        let Some(decl) = line
            .strip_prefix("input ")
            .or_else(|| line.strip_prefix("output "))
        else {
            continue;
        };
        let words: Vec<&str> = decl
            .trim_end_matches(';')
            .split_whitespace()
            .filter(|w| *w != "wire" && *w != "reg")
            .collect();
        match words.as_slice() {
            [range, name] => {
                let msb: usize = range
                    .strip_prefix('[')
                    .and_then(|r| r.strip_suffix(":0]"))
                    .unwrap()
                    .parse()
                    .unwrap();
                ports.extend((0..=msb).map(|i| format!("{name}[{i}]")));
            }
            [name] => ports.push(name.to_string()),
            _ => panic!("unexpected port declaration `{line}`"),
        }
    }
    ports.sort();
    ports
}

#[test]
fn readme_tables_match_constraint_files() {
    for board in Board::ALL {
        assert_eq!(readme_pins(board), constraint_pins(board), "{board}");
    }
}

#[test]
fn every_top_port_is_constrained_exactly_once() {
    for board in Board::ALL {
        let pins = constraint_pins(board);
        let constrained: Vec<String> = pins.keys().cloned().collect();
        for choice in [TopChoice::Board, TopChoice::FlowProbe] {
            assert_eq!(
                top_ports(board, choice, Units::None),
                constrained,
                "{board} {choice:?}"
            );
        }
        // The units are inside the core: the board with them has the same pins.
        if board.can_hold(Units::Statistics) {
            assert_eq!(
                top_ports(board, TopChoice::Board, Units::Statistics),
                constrained,
                "{board} with the Statistic Unit"
            );
        }
        let mut balls: Vec<&String> = pins.values().collect();
        balls.sort();
        let before = balls.len();
        balls.dedup();
        assert_eq!(before, balls.len(), "{board}: a ball is used twice");
    }
}

#[test]
fn units_a_top_cannot_hold_are_refused() {
    for (board, choice) in [
        (Board::Ice40Hx8k, TopChoice::Board),
        (Board::Ice40Hx8k, TopChoice::FlowProbe),
        (Board::Ecp5_85f, TopChoice::FlowProbe),
    ] {
        match tops::generate(board, choice, Units::Statistics) {
            Err(e @ FirmwareError::UnitsUnavailable { .. }) => {
                assert!(e.to_string().contains("statistics"), "{e}")
            }
            Err(e) => panic!("{board} {choice:?}: wrong error {e}"),
            Ok(top) => panic!("{board} {choice:?}: built {}", top.name),
        }
    }
}

/// clock name -> MHz, from the constraint file's FREQUENCY / set_frequency lines.
fn constraint_frequencies(board: Board) -> BTreeMap<String, f64> {
    let (_, text) = board.constraints();
    let mut freqs = BTreeMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        if let Some(rest) = line
            .strip_prefix("FREQUENCY PORT \"")
            .or_else(|| line.strip_prefix("FREQUENCY NET \""))
        {
            let (name, rest) = rest.split_once('"').unwrap();
            let mhz = rest.split_whitespace().next().unwrap().parse().unwrap();
            freqs.insert(name.to_string(), mhz);
        } else if let Some(rest) = line.strip_prefix("set_frequency ") {
            let mut words = rest.split_whitespace();
            let name = words.next().unwrap();
            let mhz = words.next().unwrap().parse().unwrap();
            freqs.insert(name.to_string(), mhz);
        }
    }
    freqs
}

/// The constraint files constrain the clocks the reports require (each
/// required clock by its net, or derived by nextpnr from the DIMM clock pin
/// through a PLL), the DIMM clock pin runs at the board's DIMM CK (the ECP5
/// takes CK / 2 from the board's divider), and constraints/README.md's
/// summary row states each board's L and its command-path clocks.
#[test]
fn clock_constraints_and_readme_agree_with_the_boards() {
    let readme = include_str!("../../constraints/README.md");
    for board in Board::ALL {
        let freqs = constraint_frequencies(board);
        for clock in board.required_clocks() {
            if let Some(&mhz) = freqs.get(clock.net) {
                // At the requirement, or above it for the tools to aim at,
                // by at most twice the report's margin (constraints/README.md
                // says which and why).
                let most = clock.required_mhz * (1.0 + 2.0 * REQUIRED_MARGIN);
                assert!(
                    mhz >= clock.required_mhz && mhz <= most + 1e-9,
                    "{board}: {} at {mhz}",
                    clock.net
                );
            } else {
                // Not constrained by name: nextpnr derives it from the PLL.
                assert_eq!(
                    (board, clock.domain),
                    (Board::Ice40Hx8k, "fabric"),
                    "{board}: {} not constrained",
                    clock.net
                );
            }
        }
        let ddr_ck = freqs["ddr_ck"];
        let ck_divider = match board {
            Board::Ecp5_85f => 2.0,
            Board::Ice40Hx8k => 1.0,
        };
        assert_eq!(ddr_ck * ck_divider, board.dimm().ck_mhz, "{board}: ddr_ck");
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{board}`")))
            .unwrap_or_else(|| panic!("{board}: no summary row"));
        assert!(row.contains(&format!("L = {}", board.lanes())), "{row}");
        for clock in board.required_clocks() {
            if clock.ticks_per_clock > 0 {
                assert!(
                    row.contains(&format!("{} MHz", clock.required_mhz)),
                    "{board}: {} MHz not in `{row}`",
                    clock.required_mhz
                );
            }
        }
    }
}
