//! The DDR command stream, text form (format.md §1).
//!
//! `<cycle> <CMD> <rank> <bank> <arg>`, one per line, `#` comments.

use std::fmt;

/// The command mnemonics the board knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DdrCmd {
    /// Activate: `arg` is the row.
    Act,
    /// Read: `arg` is the column.
    Rd,
    /// Write: `arg` is the column.
    Wr,
    /// Read with auto-precharge.
    Rda,
    /// Write with auto-precharge.
    Wra,
    /// Precharge one bank.
    Pre,
    /// Precharge all banks.
    Prea,
    /// Refresh.
    Ref,
    /// Mode register set.
    Mrs,
    /// ZQ calibration.
    Zq,
    /// No operation.
    Nop,
    /// A well-formed line with a mnemonic the board does not know: counted
    /// and skipped, never an error.
    Unknown,
}

impl DdrCmd {
    pub const ALL: [DdrCmd; 12] = [
        DdrCmd::Act,
        DdrCmd::Rd,
        DdrCmd::Wr,
        DdrCmd::Rda,
        DdrCmd::Wra,
        DdrCmd::Pre,
        DdrCmd::Prea,
        DdrCmd::Ref,
        DdrCmd::Mrs,
        DdrCmd::Zq,
        DdrCmd::Nop,
        DdrCmd::Unknown,
    ];

    pub fn mnemonic(self) -> &'static str {
        match self {
            DdrCmd::Act => "ACT",
            DdrCmd::Rd => "RD",
            DdrCmd::Wr => "WR",
            DdrCmd::Rda => "RDA",
            DdrCmd::Wra => "WRA",
            DdrCmd::Pre => "PRE",
            DdrCmd::Prea => "PREA",
            DdrCmd::Ref => "REF",
            DdrCmd::Mrs => "MRS",
            DdrCmd::Zq => "ZQ",
            DdrCmd::Nop => "NOP",
            DdrCmd::Unknown => "UNKNOWN",
        }
    }

    fn from_mnemonic(s: &str) -> DdrCmd {
        match s {
            "ACT" => DdrCmd::Act,
            "RD" => DdrCmd::Rd,
            "WR" => DdrCmd::Wr,
            "RDA" => DdrCmd::Rda,
            "WRA" => DdrCmd::Wra,
            "PRE" => DdrCmd::Pre,
            "PREA" => DdrCmd::Prea,
            "REF" => DdrCmd::Ref,
            "MRS" => DdrCmd::Mrs,
            "ZQ" => DdrCmd::Zq,
            "NOP" => DdrCmd::Nop,
            _ => DdrCmd::Unknown,
        }
    }

    /// ACT and the column commands need rank, bank and arg.
    pub fn needs_all_fields(self) -> bool {
        matches!(
            self,
            DdrCmd::Act | DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra
        )
    }

    /// RD, RDA, WR or WRA: a data transfer the board records.
    pub fn is_column(self) -> bool {
        matches!(self, DdrCmd::Rd | DdrCmd::Wr | DdrCmd::Rda | DdrCmd::Wra)
    }

    /// WR or WRA.
    pub fn is_write(self) -> bool {
        matches!(self, DdrCmd::Wr | DdrCmd::Wra)
    }
}

/// One command of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Command {
    pub cycle: u64,
    pub cmd: DdrCmd,
    pub rank: u32,
    pub bank: u32,
    /// Row for ACT, column (not line) for RD/WR.
    pub arg: u32,
}

use crate::text::{put_decimal, window, RisingDecimal};

/// Writes the text lines of a stream of commands in cycle order, each its
/// `Display` form and a newline, without `fmt` machinery: the cycle through a
/// [`RisingDecimal`] (its digits above the last four are made once for
/// every ten thousand cycles), each line put together in place with copies
/// of fixed size (a call of `memcpy` per piece cost as much as the
/// digits). Making command lines was the largest cost of writing a command
/// file.
#[derive(Default)]
pub struct CommandLines {
    cycle: RisingDecimal,
}

/// Room for the longest mnemonic, UNKNOWN.
const MNEMONIC_ROOM: usize = 8;

/// Room for the longest line: 20 digits of cycle, a mnemonic of at most
/// seven letters, three numbers of at most ten digits, separators and a
/// newline make 62.
const LINE_ROOM: usize = 64;

impl CommandLines {
    pub fn new() -> CommandLines {
        CommandLines::default()
    }

    /// The text lines of `cmds`, made in `room` (kept between calls: it
    /// grows to the room the longest batch needs and is zeroed only then).
    pub fn lines<'a>(&mut self, cmds: &[Command], room: &'a mut Vec<u8>) -> &'a [u8] {
        let need = cmds.len() * LINE_ROOM;
        if room.len() < need {
            room.resize(need, 0);
        }
        let mut end = 0;
        for c in cmds {
            end += self.line(c, window(room, end));
        }
        &room[..end]
    }

    /// `c`'s line at the start of `line`; returns its length.
    #[inline]
    fn line(&mut self, c: &Command, line: &mut [u8; LINE_ROOM]) -> usize {
        let mut n = self.cycle.write(window(line, 0), c.cycle);
        line[n] = b' ';
        let mnemonic = c.cmd.mnemonic().as_bytes();
        let mut padded = [b' '; MNEMONIC_ROOM];
        padded[..mnemonic.len()].copy_from_slice(mnemonic);
        line[n + 1..n + 1 + MNEMONIC_ROOM].copy_from_slice(&padded);
        n += 1 + mnemonic.len();
        for v in [c.rank, c.bank, c.arg] {
            line[n] = b' ';
            n = put_decimal(line, n + 1, u64::from(v));
        }
        line[n] = b'\n';
        n + 1
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} {}",
            self.cycle,
            self.cmd.mnemonic(),
            self.rank,
            self.bank,
            self.arg
        )
    }
}

/// What is wrong with a line; `CommandReader` adds the file and line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("missing {0}")]
    Missing(&'static str),
    #[error("{field} '{text}' is not a number")]
    NotANumber { field: &'static str, text: String },
    #[error("{field} {value} is too large")]
    TooLarge { field: &'static str, value: u64 },
    #[error("unexpected trailing text '{0}'")]
    Trailing(String),
    #[error("cycle {cycle} is before the previous command's cycle {previous}")]
    CycleDecreased { cycle: u64, previous: u64 },
}

/// A line error with its place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {error}")]
pub struct ParseError {
    pub source_name: String,
    pub line: usize,
    pub error: LineError,
}

fn number(field: &'static str, text: &str) -> Result<u64, LineError> {
    let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else {
        text.parse::<u64>()
    };
    parsed.map_err(|_| LineError::NotANumber {
        field,
        text: text.to_string(),
    })
}

fn number_u32(field: &'static str, text: &str) -> Result<u32, LineError> {
    let v = number(field, text)?;
    u32::try_from(v).map_err(|_| LineError::TooLarge { field, value: v })
}

/// Parses one line. `Ok(None)` for blank and comment lines.
pub fn parse_line(line: &str) -> Result<Option<Command>, LineError> {
    let body = match line.find('#') {
        Some(i) => &line[..i],
        None => line,
    };
    let mut it = body.split_ascii_whitespace();
    let Some(cycle) = it.next() else {
        return Ok(None);
    };
    let cycle = number("cycle", cycle)?;
    let cmd = DdrCmd::from_mnemonic(it.next().ok_or(LineError::Missing("command"))?);
    let mut field = |name: &'static str| -> Result<u32, LineError> {
        match it.next() {
            Some(t) => number_u32(name, t),
            None if cmd.needs_all_fields() => Err(LineError::Missing(name)),
            None => Ok(0),
        }
    };
    let rank = field("rank")?;
    let bank = field("bank")?;
    let arg = field("arg")?;
    if let Some(extra) = it.next() {
        return Err(LineError::Trailing(extra.to_string()));
    }
    Ok(Some(Command {
        cycle,
        cmd,
        rank,
        bank,
        arg,
    }))
}

/// Parses a whole text stream, line by line, checking that cycles never
/// decrease. Works on any `BufRead` source; the name is used in errors.
pub struct CommandReader<R> {
    input: R,
    source_name: String,
    line_no: usize,
    previous_cycle: u64,
    buf: String,
    done: bool,
}

/// An I/O or parse failure while reading a stream.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("{source_name}: read failed after line {line}: {error}")]
    Io {
        source_name: String,
        line: usize,
        error: std::io::Error,
    },
}

impl<R: std::io::BufRead> CommandReader<R> {
    pub fn new(input: R, source_name: impl Into<String>) -> Self {
        CommandReader {
            input,
            source_name: source_name.into(),
            line_no: 0,
            previous_cycle: 0,
            buf: String::new(),
            done: false,
        }
    }

    /// Lines read so far.
    pub fn line_no(&self) -> usize {
        self.line_no
    }
}

impl<R: std::io::BufRead> Iterator for CommandReader<R> {
    type Item = Result<Command, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(error) => {
                    self.done = true;
                    return Some(Err(ReadError::Io {
                        source_name: self.source_name.clone(),
                        line: self.line_no,
                        error,
                    }));
                }
            }
            self.line_no += 1;
            let err = |error| {
                ReadError::Parse(ParseError {
                    source_name: self.source_name.clone(),
                    line: self.line_no,
                    error,
                })
            };
            match parse_line(&self.buf) {
                Ok(None) => continue,
                Ok(Some(c)) => {
                    if c.cycle < self.previous_cycle {
                        let e = err(LineError::CycleDecreased {
                            cycle: c.cycle,
                            previous: self.previous_cycle,
                        });
                        self.done = true;
                        return Some(Err(e));
                    }
                    self.previous_cycle = c.cycle;
                    return Some(Ok(c));
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(err(e)));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn command_lines_are_display(
            cycle in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>(), 0u64..1000],
            k in 0usize..DdrCmd::ALL.len(),
            rank in prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()],
            bank in 0u32..100,
            arg in any::<u32>(),
        ) {
            let c = Command { cycle, cmd: DdrCmd::ALL[k], rank, bank, arg };
            let mut room = b"left from before".to_vec();
            let text = CommandLines::new().lines(&[c, c], &mut room);
            let expected = format!("{c}\n{c}\n");
            prop_assert_eq!(text, expected.as_bytes());
        }
    }

    #[test]
    fn parses_every_mnemonic() {
        for cmd in DdrCmd::ALL {
            if cmd == DdrCmd::Unknown {
                continue;
            }
            let c = parse_line(&format!("12 {} 1 2 3", cmd.mnemonic()))
                .unwrap()
                .unwrap();
            assert_eq!(
                c,
                Command {
                    cycle: 12,
                    cmd,
                    rank: 1,
                    bank: 2,
                    arg: 3
                }
            );
            assert_eq!(parse_line(&c.to_string()).unwrap().unwrap(), c);
        }
    }

    #[test]
    fn comments_hex_short_forms_and_unknown() {
        assert_eq!(parse_line("   # nothing").unwrap(), None);
        assert_eq!(parse_line("").unwrap(), None);
        let c = parse_line("0x10 ACT 0 0x7 0x1fff # open").unwrap().unwrap();
        assert_eq!((c.cycle, c.bank, c.arg), (16, 7, 0x1fff));
        let c = parse_line("5 REF").unwrap().unwrap();
        assert_eq!((c.cmd, c.rank), (DdrCmd::Ref, 0));
        let c = parse_line("5 PREA 1").unwrap().unwrap();
        assert_eq!((c.cmd, c.rank), (DdrCmd::Prea, 1));
        let c = parse_line("6 CKE 0 0 0").unwrap().unwrap();
        assert_eq!(c.cmd, DdrCmd::Unknown);
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(parse_line("5"), Err(LineError::Missing("command")));
        assert_eq!(parse_line("5 RD 0 1"), Err(LineError::Missing("arg")));
        assert!(matches!(
            parse_line("x RD 0 1 2"),
            Err(LineError::NotANumber { field: "cycle", .. })
        ));
        assert!(matches!(
            parse_line("1 RD 0 1 2 3"),
            Err(LineError::Trailing(_))
        ));
        assert!(matches!(
            parse_line("1 ACT 0 0 99999999999"),
            Err(LineError::TooLarge { field: "arg", .. })
        ));
    }

    #[test]
    fn reader_names_file_and_line() {
        let text = "0 ACT 0 0 5\n\n# c\n4 RD 0 0 8\n3 RD 0 0 8\n";
        let mut r = CommandReader::new(text.as_bytes(), "cmds.txt");
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err();
        assert_eq!(
            e.to_string(),
            "cmds.txt:5: cycle 3 is before the previous command's cycle 4"
        );
        assert!(r.next().is_none());
        let mut r = CommandReader::new("1 RD 0 zz 3\n".as_bytes(), "f");
        assert_eq!(
            r.next().unwrap().unwrap_err().to_string(),
            "f:1: bank 'zz' is not a number"
        );
    }
}
