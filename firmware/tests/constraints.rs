//! The constraint files, the top levels' ports and constraints/README.md's
//! pinout tables agree.

use hmtt_firmware::board::Board;
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
fn top_ports(board: Board, choice: TopChoice) -> Vec<String> {
    let top = tops::generate(board, choice).unwrap();
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
            assert_eq!(top_ports(board, choice), constrained, "{board} {choice:?}");
        }
        let mut balls: Vec<&String> = pins.values().collect();
        balls.sort();
        let before = balls.len();
        balls.dedup();
        assert_eq!(before, balls.len(), "{board}: a ball is used twice");
    }
}
