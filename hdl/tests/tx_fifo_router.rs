//! The TX FIFO's write crossbar (`tx_fifo::BankWriteRouter`): its generated
//! Verilog (shifter network and register) under Icarus against the
//! definition "stream position `base + k` goes to bank `(base + k) mod B`,
//! one clock later", for every
//! combination of group counts (the keeper's and TIME group, then one
//! group of up to three words per slot) and random bases and words, at the
//! sizes the boards and tests use (E = 1..4). Also the RustHDL model
//! against the same definition.

mod verilog_support;

use std::fmt::Write as _;
use std::process::Command;

use hmtt_hdl::encoder::GROUPS;
use hmtt_hdl::tx_fifo::BankWriteRouter;
use rust_hdl::prelude::*;
use verilog_support::*;

/// One clock's input: first position, words per group (group 0 at most
/// 2, groups `1..=E` at most 3, the others none).
#[derive(Clone, Debug)]
struct Vector {
    base: u32,
    groups: Vec<Vec<u32>>,
}

/// The most words group `g` carries.
fn group_max(g: usize) -> usize {
    if g == 0 {
        2
    } else {
        3
    }
}

/// Per bank: `Some(word)` where the bank is written.
fn expected(v: &Vector, banks: usize) -> Vec<Option<u32>> {
    let mut out = vec![None; banks];
    for (position, word) in (v.base as usize..).zip(v.groups.iter().flatten()) {
        out[position % banks] = Some(*word);
    }
    out
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every combination of group counts for `E` slots, each with
/// `per_combination` random bases (the first always 0 mod B and one B - 1)
/// and words.
fn vectors(slots: usize, banks: usize, per_combination: usize) -> Vec<Vector> {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ (slots * 31 + banks) as u64);
    let mut out = vec![];
    let combinations: usize = (0..=slots).map(|g| group_max(g) + 1).product();
    for combination in 0..combinations {
        let mut rest = combination;
        let counts: Vec<usize> = (0..GROUPS)
            .map(|g| {
                if g > slots {
                    return 0;
                }
                let c = rest % (group_max(g) + 1);
                rest /= group_max(g) + 1;
                c
            })
            .collect();
        for n in 0..per_combination {
            let base = match n {
                0 => (rng.next() as u32) & !(banks as u32 - 1),
                1 => (rng.next() as u32) | (banks as u32 - 1),
                _ => rng.next() as u32,
            };
            let groups = counts
                .iter()
                .map(|&c| (0..c).map(|_| rng.next() as u32).collect())
                .collect();
            out.push(Vector { base, groups });
        }
    }
    out
}

fn testbench(banks: usize) -> String {
    let mut tb = String::new();
    writeln!(tb, "module tb;").unwrap();
    writeln!(tb, "reg clock = 1'b0;").unwrap();
    writeln!(tb, "reg [31:0] base;").unwrap();
    let mut ports = vec![".clock(clock)".to_string(), ".base(base)".to_string()];
    for g in 0..GROUPS {
        writeln!(tb, "reg [1:0] count_{g};").unwrap();
        ports.push(format!(".count${g}(count_{g})"));
        for i in 0..3 {
            writeln!(tb, "reg [31:0] w_{g}_{i};").unwrap();
            ports.push(format!(".word{i}${g}(w_{g}_{i})"));
        }
    }
    for b in 0..banks {
        writeln!(tb, "wire en_{b}; wire [31:0] data_{b};").unwrap();
        ports.push(format!(".write_enable${b}(en_{b})"));
        ports.push(format!(".write_data${b}(data_{b})"));
    }
    writeln!(tb, "top uut({});", ports.join(", ")).unwrap();
    writeln!(tb, "integer fin, fout, got;").unwrap();
    writeln!(tb, "initial begin").unwrap();
    writeln!(tb, "  fin = $fopen(\"vectors.txt\", \"r\");").unwrap();
    writeln!(tb, "  fout = $fopen(\"out.txt\", \"w\");").unwrap();
    let mut reads = vec!["base".to_string()];
    for g in 0..GROUPS {
        reads.push(format!("count_{g}"));
        for i in 0..3 {
            reads.push(format!("w_{g}_{i}"));
        }
    }
    let format = vec!["%h"; reads.len()].join(" ");
    writeln!(
        tb,
        "  got = $fscanf(fin, \"{format}\\n\", {});",
        reads.join(", ")
    )
    .unwrap();
    writeln!(tb, "  while (got == {}) begin", reads.len()).unwrap();
    writeln!(tb, "    #1 clock = 1'b1;").unwrap();
    writeln!(tb, "    #1 clock = 1'b0;").unwrap();
    writeln!(tb, "    #1;").unwrap();
    let outs: Vec<String> = (0..banks).map(|b| format!("en_{b}, data_{b}")).collect();
    let out_format = vec!["%b %h"; banks].join(" ");
    writeln!(
        tb,
        "    $fwrite(fout, \"{out_format}\\n\", {});",
        outs.join(", ")
    )
    .unwrap();
    writeln!(
        tb,
        "    got = $fscanf(fin, \"{format}\\n\", {});",
        reads.join(", ")
    )
    .unwrap();
    writeln!(tb, "  end").unwrap();
    writeln!(tb, "  $fclose(fout);").unwrap();
    writeln!(tb, "  $finish;").unwrap();
    writeln!(tb, "end").unwrap();
    writeln!(tb, "endmodule").unwrap();
    tb
}

fn icarus_router<const E: usize, const B: usize>(per_combination: usize) {
    require_tool("iverilog");
    let mut uut = BankWriteRouter::<E, B>::default();
    uut.connect_all();
    let dir = work_dir(&format!("router_e{E}_b{B}"));
    std::fs::write(dir.join("top.v"), generate_verilog(&uut)).unwrap();
    std::fs::write(dir.join("tb.v"), testbench(B)).unwrap();
    let vectors = vectors(E, B, per_combination);
    let mut text = String::new();
    for v in &vectors {
        write!(text, "{:x}", v.base).unwrap();
        for group in &v.groups {
            write!(text, " {:x}", group.len()).unwrap();
            for i in 0..3 {
                write!(
                    text,
                    " {:x}",
                    group.get(i).copied().unwrap_or(0xdead_0000 + i as u32)
                )
                .unwrap();
            }
        }
        writeln!(text).unwrap();
    }
    std::fs::write(dir.join("vectors.txt"), text).unwrap();
    let status = Command::new("iverilog")
        .args(["-g2005", "-o", "router.vvp", "tb.v", "top.v"])
        .current_dir(&dir)
        .status()
        .expect("run iverilog");
    assert!(status.success(), "iverilog failed");
    let out = Command::new("vvp")
        .args(["-n", "router.vvp"])
        .current_dir(&dir)
        .output()
        .expect("run vvp");
    assert!(out.status.success(), "vvp failed");
    let text = std::fs::read_to_string(dir.join("out.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), vectors.len(), "one output line per vector");
    for (v, line) in vectors.iter().zip(&lines) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        for (b, want) in expected(v, B).into_iter().enumerate() {
            let enabled = fields[2 * b] == "1";
            let data = u32::from_str_radix(fields[2 * b + 1], 16).unwrap_or(u32::MAX);
            match want {
                Some(word) => assert!(
                    enabled && data == word,
                    "E={E} B={B} bank {b}: got ({enabled}, {data:#x}) want {word:#x} for {v:?}"
                ),
                None => assert!(!enabled, "E={E} B={B} bank {b} written for {v:?}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn router_verilog_puts_every_word_in_its_bank() {
    icarus_router::<1, 8>(16);
    icarus_router::<2, 8>(8);
    icarus_router::<3, 16>(3);
    icarus_router::<4, 16>(1);
}

#[test]
fn router_model_puts_every_word_in_its_bank() {
    let mut uut = BankWriteRouter::<3, 16>::default();
    uut.connect_all();
    let mut before: Vec<Option<u32>> = vec![None; 16];
    for v in vectors(3, 16, 1) {
        uut.base.next = (v.base as u64).to_bits();
        for (g, group) in v.groups.iter().enumerate() {
            let w = |i: usize| (group.get(i).copied().unwrap_or(0x5555) as u64).to_bits();
            uut.count[g].next = (group.len() as u64).to_bits();
            uut.word0[g].next = w(0);
            uut.word1[g].next = w(1);
            uut.word2[g].next = w(2);
        }
        // Inputs settle into `val()` at the next update; then a rising
        // clock edge registers them, and the next pass gives the outputs.
        for clock in [false, false] {
            uut.clock.next = clock.into();
            uut.update_all();
        }
        // Before the edge the outputs still hold the last clock's writes.
        for (b, want) in before.iter().enumerate() {
            assert_eq!(
                uut.write_enable[b].val(),
                want.is_some(),
                "bank {b} before {v:?}"
            );
        }
        for _ in 0..3 {
            uut.clock.next = true.into();
            uut.update_all();
        }
        before = expected(&v, 16);
        for (b, want) in expected(&v, 16).into_iter().enumerate() {
            assert_eq!(uut.write_enable[b].val(), want.is_some(), "bank {b} {v:?}");
            if let Some(word) = want {
                assert_eq!(uut.write_data[b].val().to_u32(), word, "bank {b} {v:?}");
            }
        }
    }
}
