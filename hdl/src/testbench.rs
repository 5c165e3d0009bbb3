//! What a Verilog simulation of the whole board core needs besides the
//! generated `top` (module [`BoardTop`](crate::board_top::BoardTop)): the
//! testbench `verilog/board_run_tb.v` ([`TESTBENCH`]), the wrapper that packs
//! the generated module's per-lane and per-port ports into vectors for it
//! ([`board_wrapper`]), the pins of a command as the testbench reads them
//! ([`command_pins`], [`pin_word`], [`pin_record`]), and the reading of what it prints
//! ([`parse_line`], [`PortFrames`], [`frame_payload`]).
//!
//! The testbench runs the stream as the golden model does (board.md "End of
//! a stream"): it stops reporting at the packet holding the last word pushed
//! up to the stream's last clock, and says so (`CUT`); see the file's header.

use std::fmt::Write as _;

use hmtt_format::command::{Command, DdrCmd};

use crate::crc32::ethernet_fcs;
use crate::dcbu::{kind, CommandPins};
use crate::framer::ETHERTYPE_HMTT;
use crate::gmii::{GmiiDecoder, GmiiError, WireFrame, MIN_GAP};

/// The testbench (Verilog-2005 with delays: Icarus, or Verilator with
/// `--binary --timing`); needs the macros `LANES`, `PORTS` and `COUNTERS`
/// (`HardwareCounter::ALL.len()`).
pub const TESTBENCH: &str = include_str!("../verilog/board_run_tb.v");
/// Its module name.
pub const TESTBENCH_MODULE: &str = "board_run_tb";
/// The wrapper's module name.
pub const WRAPPER_MODULE: &str = "board_lanes";

/// The board's monotonic counters are on the wrapper's `counters` vector,
/// 32 bits each, in [`HardwareCounter::ALL`]'s order; the testbench prints
/// them extended to 64 bits as `C <index> <value>`.
pub use hmtt_format::counters::HardwareCounter;

/// Bits of one lane's pins in a [`pin_word`].
pub const PIN_BITS: usize = 30;

/// `board_lanes`: the generated `top` (a `BoardTop` with `lanes` lanes and
/// `ports` ports) with its ports packed: `pins` ([`PIN_BITS`] per lane,
/// lane 0 lowest), `txd`/`tx_en`/`tx_er` per port, the [`HardwareCounter`]s,
/// `fifo_fill`, the Statistic Unit's records sent, unsent and overrun
/// (`stats`, 32 bits each; 0 without the unit), the sticky errors and the
/// observation outputs.
pub fn board_wrapper(lanes: usize, ports: usize) -> String {
    let (l, p) = (lanes, ports);
    let mut v = String::new();
    let obs = "obs_tick, obs_tick_valid, obs_pop, obs_close, obs_fill_tick, obs_fill_valid, \
               obs_stats_tick, obs_stats_tick_valid, obs_stats_end";
    let w = &mut v;
    let _ = writeln!(
        w,
        "module {WRAPPER_MODULE}(fabric_clock, eth_clock, pins, txd, tx_en, tx_er, fifo_fill, counters, stats, packet_error, frame_underrun, {obs});"
    );
    let _ = writeln!(
        w,
        "input fabric_clock, eth_clock; input [{}:0] pins;",
        PIN_BITS * l - 1
    );
    let _ = writeln!(
        w,
        "output [{}:0] txd; output [{}:0] tx_en, tx_er; output [31:0] fifo_fill; output [{}:0] counters; output packet_error, frame_underrun;",
        8 * p - 1,
        p - 1,
        32 * HardwareCounter::ALL.len() - 1
    );
    let _ = writeln!(
        w,
        "output [63:0] obs_tick, obs_fill_tick; output obs_tick_valid, obs_pop, obs_close, obs_fill_valid;"
    );
    let _ = writeln!(
        w,
        "output [95:0] stats; output [63:0] obs_stats_tick, obs_stats_end; output obs_stats_tick_valid;"
    );
    let _ = write!(
        w,
        "top core(.fabric_clock(fabric_clock), .eth_clock(eth_clock), .fifo_fill(fifo_fill), \
         .packet_error(packet_error), .frame_underrun(frame_underrun), \
         .stats_records_sent(stats[31:0]), .stats_records_unsent(stats[63:32]), \
         .stats_overrun(stats[95:64])"
    );
    for o in obs.split(", ") {
        let _ = write!(w, ", .{o}({o})");
    }
    for (i, c) in HardwareCounter::ALL.iter().enumerate() {
        let c = c.name();
        let _ = write!(w, ", .{c}(counters[{}:{}])", 32 * i + 31, 32 * i);
    }
    for j in 0..l {
        let b = PIN_BITS * j;
        let _ = write!(
            w,
            ", .pins${j}$addr(pins[{}:{b}]), .pins${j}$ba(pins[{}:{}]), .pins${j}$cke(pins[{}]), \
             .pins${j}$we_n(pins[{}]), .pins${j}$cas_n(pins[{}]), .pins${j}$ras_n(pins[{}]), \
             .pins${j}$cs_n(pins[{}:{}])",
            b + 17,
            b + 21,
            b + 18,
            b + 22,
            b + 23,
            b + 24,
            b + 25,
            b + 29,
            b + 26
        );
    }
    for q in 0..p {
        let _ = write!(
            w,
            ", .txd${q}(txd[{}:{}]), .tx_en${q}(tx_en[{q}]), .tx_er${q}(tx_er[{q}])",
            8 * q + 7,
            8 * q
        );
    }
    let _ = writeln!(w, ");\nendmodule");
    v
}

/// One lane's pins packed as the wrapper's `pins` takes them: `addr` in
/// bits 0..18, `ba` 18..22, `cke` 22, `we_n` 23, `cas_n` 24, `ras_n` 25,
/// `cs_n` 26..30.
pub fn pin_word(p: &CommandPins) -> u32 {
    (p.addr as u32 & 0x3FFFF)
        | (p.ba as u32 & 0xF) << 18
        | u32::from(p.cke) << 22
        | u32::from(p.we_n) << 23
        | u32::from(p.cas_n) << 24
        | u32::from(p.ras_n) << 25
        | (p.cs_n as u32 & 0xF) << 26
}

/// Bytes of one command in the testbench's input ([`pin_record`]).
pub const PIN_RECORD_BYTES: usize = 12;

/// One command as the testbench reads it: its tick and [`pin_word`], both
/// big-endian (Verilog's `$fread` fills a 96-bit register from the first
/// byte down).
pub fn pin_record(tick: u64, word: u32) -> [u8; PIN_RECORD_BYTES] {
    let mut r = [0u8; PIN_RECORD_BYTES];
    r[..8].copy_from_slice(&tick.to_be_bytes());
    r[8..].copy_from_slice(&word.to_be_bytes());
    r
}

/// A command the DIMM's pins cannot carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("rank {0} is beyond the 4 chip selects the pins carry")]
    Rank(u32),
    #[error("bank {0} is beyond the 4 bank-address pins (0..=15)")]
    Bank(u32),
    #[error("row {0} is beyond the 18 address pins (0..=262143)")]
    Row(u32),
    #[error("column {0} is beyond the column pins A[9:0] and A11 (0..=2047)")]
    Column(u32),
}

/// The DCBU's code of a command kind.
pub fn kind_code(cmd: DdrCmd) -> u64 {
    match cmd {
        DdrCmd::Act => kind::ACT,
        DdrCmd::Rd => kind::RD,
        DdrCmd::Wr => kind::WR,
        DdrCmd::Rda => kind::RDA,
        DdrCmd::Wra => kind::WRA,
        DdrCmd::Pre => kind::PRE,
        DdrCmd::Prea => kind::PREA,
        DdrCmd::Ref => kind::REF,
        DdrCmd::Mrs => kind::MRS,
        DdrCmd::Zq => kind::ZQ,
        DdrCmd::Nop => kind::NOP,
        DdrCmd::Unknown => kind::UNKNOWN,
    }
}

/// The pins a memory controller drives for `c`
/// ([`CommandPins::for_command`]); an unknown mnemonic is a chip select
/// with CKE low, which the DCBU counts as unknown. Refuses what the pins
/// cannot carry: the hardware would see another command.
pub fn command_pins(c: &Command) -> Result<CommandPins, PinError> {
    if c.rank > 3 {
        return Err(PinError::Rank(c.rank));
    }
    if c.bank > 15 {
        return Err(PinError::Bank(c.bank));
    }
    match c.cmd {
        DdrCmd::Act if c.arg > 0x3FFFF => return Err(PinError::Row(c.arg)),
        DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra if c.arg > 0x7FF => {
            return Err(PinError::Column(c.arg))
        }
        _ => {}
    }
    Ok(CommandPins::for_command(
        kind_code(c.cmd),
        c.rank.into(),
        c.bank.into(),
        c.arg.into(),
    ))
}

/// One line the testbench prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TbLine {
    /// A packet closed (the next `seq`) and leaves at `tick`.
    Close { tick: u64 },
    /// A frame from the first preamble byte through the FCS.
    Frame {
        port: usize,
        clock: u64,
        bytes: Vec<u8>,
    },
    /// `tx_er` was high, or a frame was longer than the testbench holds.
    TxError { port: usize, clock: u64 },
    /// Fabric clocks simulated so far.
    Progress { clocks: u64 },
    /// Counter [`HardwareCounter::ALL`]`[index]` at the cut.
    Counter { index: usize, value: u64 },
    /// The golden model's run ends with packet `packets - 1`, the packets
    /// holding `words` popped words.
    Cut { packets: u64, words: u64 },
    /// The Statistic Unit's records sent, unsent and overrun once its last
    /// record of the stream (the interval open at the end, closed at its
    /// natural end) was decided.
    Statistics {
        records_sent: u64,
        records_unsent: u64,
        overrun: u64,
    },
    /// Sticky errors and fabric clocks simulated, at the end.
    Status {
        packet_error: bool,
        frame_underrun: bool,
        clocks: u64,
    },
    /// Every frame up to the cut is out.
    Done,
    /// Not every frame up to the cut came out in time.
    Timeout,
}

/// A line of the testbench's that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("testbench output line {line:?}: {reason}")]
pub struct TbParseError {
    pub line: String,
    pub reason: &'static str,
}

/// Parses one line of the testbench's output; `None` for lines that are
/// not the testbench's (Verilator's own, starting with `- `).
pub fn parse_line(line: &str) -> Result<Option<TbLine>, TbParseError> {
    let bad = |reason| TbParseError {
        line: line.chars().take(120).collect(),
        reason,
    };
    let mut f = line.split_ascii_whitespace();
    let tag = match f.next() {
        Some(t) => t,
        None => return Ok(None),
    };
    let mut num = |what| {
        f.next()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| bad(what))
    };
    let parsed = match tag {
        "X" => TbLine::Close { tick: num("tick")? },
        "F" => {
            let port = num("port")? as usize;
            let clock = num("clock")?;
            let hex = f.next().unwrap_or("");
            TbLine::Frame {
                port,
                clock,
                bytes: decode_hex(hex).ok_or_else(|| bad("frame bytes are not hex"))?,
            }
        }
        "E" => TbLine::TxError {
            port: num("port")? as usize,
            clock: num("clock")?,
        },
        "P" => TbLine::Progress {
            clocks: num("clocks")?,
        },
        "C" => TbLine::Counter {
            index: num("index")? as usize,
            value: num("value")?,
        },
        "CUT" => TbLine::Cut {
            packets: num("packets")?,
            words: num("words")?,
        },
        "SU" => TbLine::Statistics {
            records_sent: num("records_sent")?,
            records_unsent: num("records_unsent")?,
            overrun: num("overrun")?,
        },
        "S" => TbLine::Status {
            packet_error: num("packet_error")? != 0,
            frame_underrun: num("frame_underrun")? != 0,
            clocks: num("clocks")?,
        },
        "DONE" => TbLine::Done,
        "TIMEOUT" => TbLine::Timeout,
        "-" => return Ok(None),
        _ => return Err(bad("unknown line")),
    };
    Ok(Some(parsed))
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// A frame that is not a well-formed HMTT frame of its port.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("port {port}: GMII error {error:?}")]
    Gmii { port: usize, error: GmiiError },
    #[error("port {port}: the testbench gave a frame out of order (clock {clock})")]
    OutOfOrder { port: usize, clock: u64 },
    #[error("port {port}: frame of {len} bytes is too short")]
    Short { port: usize, len: usize },
    #[error("port {port}: bad FCS")]
    Fcs { port: usize },
    #[error("port {port}: not an IPv4/UDP frame to UDP port {expected} nor an HMTT raw frame")]
    NotHmtt { port: usize, expected: u16 },
    #[error("port {port}: {reason}")]
    Length { port: usize, reason: &'static str },
}

/// One port's frames as the testbench prints them, through the GMII
/// decoder (preamble, SFD, inter-frame gap).
#[derive(Debug)]
pub struct PortFrames {
    port: usize,
    decoder: GmiiDecoder,
    next_clock: u64,
}

impl PortFrames {
    pub fn new(port: usize) -> PortFrames {
        PortFrames {
            port,
            decoder: GmiiDecoder::new(),
            next_clock: 0,
        }
    }

    /// A frame line's bytes, `clock` the Ethernet clock of its first byte;
    /// returns the frame without preamble and SFD.
    pub fn frame(&mut self, clock: u64, bytes: &[u8]) -> Result<WireFrame, FrameError> {
        let port = self.port;
        if clock < self.next_clock {
            return Err(FrameError::OutOfOrder { port, clock });
        }
        // Only how many idle clocks up to a frame gap matters to the decoder.
        let idle = (clock - self.next_clock).min(MIN_GAP as u64 + 1);
        for _ in 0..idle {
            self.decoder.sample(false, false, 0);
        }
        for &b in bytes {
            self.decoder.sample(true, false, b);
        }
        self.decoder.sample(false, false, 0);
        self.next_clock = clock + bytes.len() as u64 + 1;
        if let Some(error) = self.decoder.errors().first() {
            return Err(FrameError::Gmii {
                port,
                error: error.clone(),
            });
        }
        let mut frames = self.decoder.take_frames();
        match frames.pop() {
            Some(f) if frames.is_empty() => Ok(f),
            _ => Err(FrameError::Short {
                port,
                len: bytes.len(),
            }),
        }
    }
}

/// The HMTT packet a frame of `port` carries (the UDP payload, to UDP port
/// `5000 + port`, or a raw frame's payload), after checking the FCS.
pub fn frame_payload(frame: &[u8], port: usize) -> Result<&[u8], FrameError> {
    const ETH: usize = 14;
    const IP_UDP: usize = 28;
    const HMTT_HEADER: usize = hmtt_format::packet::HEADER_LEN;
    if frame.len() < ETH + 4 + HMTT_HEADER {
        return Err(FrameError::Short {
            port,
            len: frame.len(),
        });
    }
    let (body, fcs) = frame.split_at(frame.len() - 4);
    if ethernet_fcs(body).to_le_bytes() != fcs {
        return Err(FrameError::Fcs { port });
    }
    let expected = hmtt_format::packet::UDP_BASE_PORT + port as u16;
    let ethertype = u16::from_be_bytes([body[12], body[13]]);
    let payload = if ethertype == 0x0800 && body.len() >= ETH + IP_UDP && body[23] == 17 {
        let dst_port = u16::from_be_bytes([body[36], body[37]]);
        if dst_port != expected {
            return Err(FrameError::NotHmtt { port, expected });
        }
        let udp_len = usize::from(u16::from_be_bytes([body[38], body[39]]));
        body.get(ETH + 20 + 8..ETH + 20 + udp_len.max(8))
            .ok_or(FrameError::Length {
                port,
                reason: "UDP length beyond the frame",
            })?
    } else if ethertype == ETHERTYPE_HMTT {
        // Raw frames may be padded: the header's word count says how long.
        let p = &body[ETH..];
        let nwords = usize::from(u16::from_le_bytes([p[24], p[25]]));
        p.get(..HMTT_HEADER + 4 * nwords)
            .ok_or(FrameError::Length {
                port,
                reason: "HMTT word count beyond the frame",
            })?
    } else {
        return Err(FrameError::NotHmtt { port, expected });
    };
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gmii::{PREAMBLE, SFD};

    #[test]
    fn pin_words_pack_the_lane_as_the_wrapper_unpacks_it() {
        assert_eq!(pin_word(&CommandPins::DESELECT), 0x3FC0_0000);
        assert_eq!(
            pin_record(0x0102, 0x3FC0_0000),
            [0, 0, 0, 0, 0, 0, 1, 2, 0x3F, 0xC0, 0, 0]
        );
        let c = Command {
            cycle: 5,
            cmd: DdrCmd::Wra,
            rank: 2,
            bank: 9,
            arg: 0x5A5,
        };
        let w = pin_word(&command_pins(&c).unwrap());
        assert_eq!(w >> 26, 0b1011, "cs_n: rank 2 selected");
        assert_eq!((w >> 23) & 7, 0b100, "ras_n cas_n we_n = 1 0 0");
        assert_eq!((w >> 22) & 1, 1, "cke");
        assert_eq!((w >> 18) & 0xF, 9, "ba");
        // Column 0x5A5: A[9:0] = 0x1A5, A11 = column bit 10, A10 = AP.
        assert_eq!(w & 0x3FFFF, 0x1A5 | 1 << 11 | 1 << 10);
        let unknown = Command {
            cmd: DdrCmd::Unknown,
            ..c
        };
        assert_eq!((pin_word(&command_pins(&unknown).unwrap()) >> 22) & 1, 0);
        let bad = |cmd, rank, bank, arg| {
            command_pins(&Command {
                cycle: 0,
                cmd,
                rank,
                bank,
                arg,
            })
        };
        assert_eq!(bad(DdrCmd::Ref, 4, 0, 0), Err(PinError::Rank(4)));
        assert_eq!(bad(DdrCmd::Pre, 0, 16, 0), Err(PinError::Bank(16)));
        assert_eq!(bad(DdrCmd::Act, 0, 0, 1 << 18), Err(PinError::Row(1 << 18)));
        assert_eq!(bad(DdrCmd::Rd, 0, 0, 2048), Err(PinError::Column(2048)));
        assert!(bad(DdrCmd::Mrs, 3, 15, 1 << 20).is_ok());
    }

    #[test]
    fn wrapper_connects_every_lane_and_port() {
        let v = board_wrapper(2, 3);
        for name in ["pins$1$cs_n(pins[59:56])", "pins$0$addr(pins[17:0])"] {
            assert!(v.contains(name), "{name} in {v}");
        }
        assert!(v.contains(".txd$2(txd[23:16])"));
        assert!(v.contains(".clocks_over_limit(counters[351:320])"));
        assert!(v.contains(".stats_records_unsent(stats[63:32])"));
        assert!(v.contains(".obs_stats_end(obs_stats_end)"));
    }

    #[test]
    fn lines_parse() {
        assert_eq!(
            parse_line("X 1024").unwrap(),
            Some(TbLine::Close { tick: 1024 })
        );
        assert_eq!(
            parse_line("F 2 77 55d5ff").unwrap(),
            Some(TbLine::Frame {
                port: 2,
                clock: 77,
                bytes: vec![0x55, 0xd5, 0xff]
            })
        );
        assert_eq!(
            parse_line("CUT 3 700").unwrap(),
            Some(TbLine::Cut {
                packets: 3,
                words: 700
            })
        );
        assert_eq!(
            parse_line("SU 4 2 0").unwrap(),
            Some(TbLine::Statistics {
                records_sent: 4,
                records_unsent: 2,
                overrun: 0
            })
        );
        assert_eq!(
            parse_line("- board_run_tb.v:9: Verilog $finish").unwrap(),
            None
        );
        assert!(parse_line("F 1 2 5").is_err());
        assert!(parse_line("Q").is_err());
        assert!(parse_line("C 1").is_err());
    }

    fn wire(payload: &[u8]) -> Vec<u8> {
        // Raw frame: broadcast, source, EtherType 0x88B5, payload, FCS.
        let mut body = vec![0xff; 6];
        body.extend_from_slice(&[2, 0, 0, 0, 0, 1]);
        body.extend_from_slice(&ETHERTYPE_HMTT.to_be_bytes());
        body.extend_from_slice(payload);
        let fcs = ethernet_fcs(&body);
        body.extend_from_slice(&fcs.to_le_bytes());
        let mut w = PREAMBLE.to_vec();
        w.push(SFD);
        w.extend_from_slice(&body);
        w
    }

    #[test]
    fn frames_check_gap_preamble_and_fcs() {
        let mut payload = vec![0u8; 32 + 8];
        payload[24] = 2;
        let w = wire(&payload);
        let mut port = PortFrames::new(0);
        let f = port.frame(10, &w).unwrap();
        assert_eq!(frame_payload(&f.bytes, 0).unwrap(), &payload[..]);
        // The next frame 5 idle clocks after this one: too short a gap.
        let next = 10 + w.len() as u64 + 5;
        assert!(matches!(port.frame(next, &w), Err(FrameError::Gmii { .. })));
        let mut broken = f.bytes.clone();
        broken[20] ^= 1;
        assert_eq!(frame_payload(&broken, 0), Err(FrameError::Fcs { port: 0 }));
    }
}
