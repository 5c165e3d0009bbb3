//! The DDR state machine unit (paper Fig. 5, simplified; board.md step 1):
//! ACT stores the open row of (rank, bank); RD/WR turn the open row and the
//! column into a line index. Everything else is accepted and ignored.

use hmtt_format::command::{Command, DdrCmd};
use hmtt_format::geometry::Geometry;

/// A memory reference seen on the bus: one 64-byte line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    /// Line index `{rank, row, bank, column >> 3}`.
    pub line: u64,
    pub write: bool,
    pub rank: u32,
    pub row: u32,
}

/// What one command did to the DSMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DsmuOutcome {
    /// ACT, PRE, PREA, REF, MRS, ZQ, NOP: state updated or nothing to do.
    Accepted,
    /// RD/RDA/WR/WRA with an open row.
    Reference(Reference),
    /// A reference to a bank precharged since its last ACT. The reference is
    /// still emitted with the last opened row (board.md: the open row survives
    /// PRE); only a diagnostic, a legal stream never does this.
    ReferenceAfterPrecharge(Reference),
    /// RD/WR to a bank with no row opened since reset: nothing emitted.
    ProtocolError,
    /// ACT/RD/WR whose rank, bank, row or column does not fit the geometry.
    OutOfRange,
    /// A mnemonic the board does not know.
    Unknown,
}

const NO_ROW: u32 = u32::MAX;

/// Per-(rank, bank) open rows.
#[derive(Debug, Clone)]
pub struct Dsmu {
    row_shift: u32,
    bank_shift: u32,
    rank_shift: u32,
    ranks: u32,
    banks: u32,
    rows: u32,
    columns: u32,
    /// Indexed by `rank * banks + bank`.
    open_row: Vec<u32>,
    precharged: Vec<bool>,
}

impl Dsmu {
    pub fn new(g: &Geometry) -> Dsmu {
        let bank_shift = g.col_line_bits();
        let row_shift = bank_shift + g.bank_bits();
        let rank_shift = row_shift + g.row_bits();
        let n = (g.ranks() * g.banks()) as usize;
        Dsmu {
            row_shift,
            bank_shift,
            rank_shift,
            ranks: g.ranks(),
            banks: g.banks(),
            rows: g.rows(),
            columns: g.lines_per_row() << 3,
            open_row: vec![NO_ROW; n],
            precharged: vec![false; n],
        }
    }

    /// The open row of (rank, bank), if any row was activated since reset.
    pub fn open_row(&self, rank: u32, bank: u32) -> Option<u32> {
        if rank >= self.ranks || bank >= self.banks {
            return None;
        }
        let r = self.open_row[(rank * self.banks + bank) as usize];
        (r != NO_ROW).then_some(r)
    }

    /// Applies one command.
    #[inline]
    pub fn command(&mut self, c: &Command) -> DsmuOutcome {
        match c.cmd {
            DdrCmd::Act => {
                if c.rank >= self.ranks || c.bank >= self.banks || c.arg >= self.rows {
                    return DsmuOutcome::OutOfRange;
                }
                let i = (c.rank * self.banks + c.bank) as usize;
                self.open_row[i] = c.arg;
                self.precharged[i] = false;
                DsmuOutcome::Accepted
            }
            DdrCmd::Rd | DdrCmd::Rda | DdrCmd::Wr | DdrCmd::Wra => {
                if c.rank >= self.ranks || c.bank >= self.banks || c.arg >= self.columns {
                    return DsmuOutcome::OutOfRange;
                }
                let i = (c.rank * self.banks + c.bank) as usize;
                let row = self.open_row[i];
                if row == NO_ROW {
                    return DsmuOutcome::ProtocolError;
                }
                let line = (u64::from(c.rank) << self.rank_shift)
                    | (u64::from(row) << self.row_shift)
                    | (u64::from(c.bank) << self.bank_shift)
                    | u64::from(c.arg >> 3);
                let r = Reference {
                    line,
                    write: c.cmd.is_write(),
                    rank: c.rank,
                    row,
                };
                if self.precharged[i] {
                    DsmuOutcome::ReferenceAfterPrecharge(r)
                } else {
                    DsmuOutcome::Reference(r)
                }
            }
            DdrCmd::Pre => {
                if c.rank < self.ranks && c.bank < self.banks {
                    self.precharged[(c.rank * self.banks + c.bank) as usize] = true;
                }
                DsmuOutcome::Accepted
            }
            DdrCmd::Prea => {
                if c.rank < self.ranks {
                    let first = (c.rank * self.banks) as usize;
                    self.precharged[first..first + self.banks as usize].fill(true);
                }
                DsmuOutcome::Accepted
            }
            DdrCmd::Ref | DdrCmd::Mrs | DdrCmd::Zq | DdrCmd::Nop => DsmuOutcome::Accepted,
            DdrCmd::Unknown => DsmuOutcome::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::DdrCoord;

    fn cmd(cmd: DdrCmd, rank: u32, bank: u32, arg: u32) -> Command {
        Command {
            cycle: 0,
            cmd,
            rank,
            bank,
            arg,
        }
    }

    #[test]
    fn act_then_column_gives_the_line_index() {
        let g = Geometry::preset("ddr4-64g").unwrap();
        let mut d = Dsmu::new(&g);
        assert_eq!(
            d.command(&cmd(DdrCmd::Act, 3, 15, 0x1_2345)),
            DsmuOutcome::Accepted
        );
        for (c, write) in [
            (DdrCmd::Rd, false),
            (DdrCmd::Rda, false),
            (DdrCmd::Wr, true),
            (DdrCmd::Wra, true),
        ] {
            let out = d.command(&cmd(c, 3, 15, 0x3f7));
            let expect = g.line_index_unchecked(DdrCoord {
                rank: 3,
                bank: 15,
                row: 0x1_2345,
                col_line: 0x3f7 >> 3,
            });
            assert_eq!(
                out,
                DsmuOutcome::Reference(Reference {
                    line: expect,
                    write,
                    rank: 3,
                    row: 0x1_2345
                })
            );
        }
    }

    #[test]
    fn protocol_errors_out_of_range_and_unknown() {
        let g = Geometry::ddr3_default();
        let mut d = Dsmu::new(&g);
        assert_eq!(
            d.command(&cmd(DdrCmd::Rd, 0, 0, 8)),
            DsmuOutcome::ProtocolError
        );
        assert_eq!(
            d.command(&cmd(DdrCmd::Act, 2, 0, 1)),
            DsmuOutcome::OutOfRange
        );
        assert_eq!(
            d.command(&cmd(DdrCmd::Act, 0, 8, 1)),
            DsmuOutcome::OutOfRange
        );
        assert_eq!(
            d.command(&cmd(DdrCmd::Act, 0, 0, 1 << 15)),
            DsmuOutcome::OutOfRange
        );
        d.command(&cmd(DdrCmd::Act, 0, 0, 7));
        assert_eq!(
            d.command(&cmd(DdrCmd::Wr, 0, 0, 1 << 10)),
            DsmuOutcome::OutOfRange
        );
        assert_eq!(
            d.command(&cmd(DdrCmd::Unknown, 0, 0, 0)),
            DsmuOutcome::Unknown
        );
        // Another bank of the same rank is still closed.
        assert_eq!(
            d.command(&cmd(DdrCmd::Rd, 0, 1, 0)),
            DsmuOutcome::ProtocolError
        );
    }

    #[test]
    fn open_row_survives_precharge_and_is_flagged() {
        let g = Geometry::ddr3_default();
        let mut d = Dsmu::new(&g);
        d.command(&cmd(DdrCmd::Act, 1, 2, 99));
        for c in [DdrCmd::Ref, DdrCmd::Mrs, DdrCmd::Zq, DdrCmd::Nop] {
            assert_eq!(d.command(&cmd(c, 1, 2, 0)), DsmuOutcome::Accepted);
        }
        assert!(matches!(
            d.command(&cmd(DdrCmd::Rd, 1, 2, 0)),
            DsmuOutcome::Reference(_)
        ));
        d.command(&cmd(DdrCmd::Prea, 1, 0, 0));
        assert!(matches!(
            d.command(&cmd(DdrCmd::Rd, 1, 2, 0)),
            DsmuOutcome::ReferenceAfterPrecharge(Reference { row: 99, .. })
        ));
        d.command(&cmd(DdrCmd::Act, 1, 2, 100));
        assert!(matches!(
            d.command(&cmd(DdrCmd::Rd, 1, 2, 0)),
            DsmuOutcome::Reference(Reference { row: 100, .. })
        ));
        d.command(&cmd(DdrCmd::Pre, 1, 2, 0));
        assert!(matches!(
            d.command(&cmd(DdrCmd::Wr, 1, 2, 0)),
            DsmuOutcome::ReferenceAfterPrecharge(_)
        ));
        assert_eq!(d.open_row(1, 2), Some(100));
        assert_eq!(d.open_row(0, 2), None);
    }
}
