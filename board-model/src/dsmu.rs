//! The DDR state machine unit (paper Fig. 5, simplified; board.md step 2):
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

/// Per-(rank, bank) entry: the line index of column 0 of the open row,
/// `{rank, row, bank, 0}`, or these flags.
const NEVER_OPENED: u64 = 1 << 63;
const PRECHARGED: u64 = 1 << 62;
/// A (rank, bank) slot outside the geometry: always `NEVER_OPENED` too.
const OUTSIDE: u64 = 1 << 61;

/// Entries are kept for every (rank, bank) below 16 (the geometry has at
/// most 8 ranks and 16 banks), indexed by `rank << 4 | bank`, so that an
/// index needs no shift by the geometry's bank bits; the slots outside
/// the geometry are marked.
const SLOT_BITS: u32 = 4;
const SLOTS: usize = 1 << (2 * SLOT_BITS);

/// Per-(rank, bank) open rows.
#[derive(Debug, Clone)]
pub struct Dsmu {
    row_shift: u32,
    row_bits: u32,
    banks: u32,
    /// Bits above the geometry's widths (set bits mean out of range).
    row_over: u32,
    /// Columns (not lines): `col_line_bits + 3` bits.
    column_over: u32,
    /// Indexed by `rank << 4 | bank`.
    entries: Box<[u64; SLOTS]>,
    /// `{rank, 0, bank, 0}` per slot, `u64::MAX` outside the geometry.
    keys: Box<[u64; SLOTS]>,
}

impl Dsmu {
    pub fn new(g: &Geometry) -> Dsmu {
        let bank_shift = g.col_line_bits();
        let row_shift = bank_shift + g.bank_bits();
        let rank_shift = row_shift + g.row_bits();
        let mut entries = Box::new([NEVER_OPENED | OUTSIDE; SLOTS]);
        let mut keys = Box::new([u64::MAX; SLOTS]);
        for rank in 0..g.ranks() {
            for bank in 0..g.banks() {
                let i = slot(rank, bank);
                entries[i] = NEVER_OPENED;
                keys[i] = (u64::from(rank) << rank_shift) | (u64::from(bank) << bank_shift);
            }
        }
        Dsmu {
            row_shift,
            row_bits: g.row_bits(),
            banks: g.banks(),
            row_over: !(g.rows() - 1),
            column_over: !((g.lines_per_row() << 3) - 1),
            entries,
            keys,
        }
    }

    /// The open row of (rank, bank), if any row was activated since reset.
    pub fn open_row(&self, rank: u32, bank: u32) -> Option<u32> {
        if (rank | bank) >> SLOT_BITS != 0 {
            return None;
        }
        let e = self.entries[slot(rank, bank)];
        (e & NEVER_OPENED == 0).then(|| self.row_of(e))
    }

    #[inline(always)]
    fn row_of(&self, e: u64) -> u32 {
        ((e >> self.row_shift) & ((1 << self.row_bits) - 1)) as u32
    }

    /// The fields the fast path needs, borrowed once for a run of
    /// commands.
    #[inline(always)]
    pub fn view(&mut self) -> DsmuView<'_> {
        DsmuView {
            row_shift: self.row_shift,
            row_over: self.row_over,
            column_over: self.column_over,
            entries: &mut self.entries,
            keys: &self.keys,
        }
    }

    /// Applies one command.
    #[inline]
    pub fn command(&mut self, c: &Command) -> DsmuOutcome {
        match c.cmd {
            DdrCmd::Rd | DdrCmd::Rda | DdrCmd::Wr | DdrCmd::Wra => {
                if (c.rank | c.bank) >> SLOT_BITS != 0 || c.arg & self.column_over != 0 {
                    return DsmuOutcome::OutOfRange;
                }
                let e = self.entries[slot(c.rank, c.bank)];
                if e & OUTSIDE != 0 {
                    return DsmuOutcome::OutOfRange;
                }
                let r = Reference {
                    line: (e & !(NEVER_OPENED | PRECHARGED)) | u64::from(c.arg >> 3),
                    write: c.cmd.is_write(),
                    rank: c.rank,
                    row: self.row_of(e),
                };
                if e & (NEVER_OPENED | PRECHARGED) == 0 {
                    DsmuOutcome::Reference(r)
                } else if e & NEVER_OPENED != 0 {
                    DsmuOutcome::ProtocolError
                } else {
                    DsmuOutcome::ReferenceAfterPrecharge(r)
                }
            }
            DdrCmd::Act => {
                if self.view().activate(c.rank, c.bank, c.arg) {
                    DsmuOutcome::Accepted
                } else {
                    DsmuOutcome::OutOfRange
                }
            }
            DdrCmd::Pre => {
                self.view().precharge(c.rank, c.bank);
                DsmuOutcome::Accepted
            }
            DdrCmd::Prea => {
                if c.rank >> SLOT_BITS == 0 && self.entries[slot(c.rank, 0)] & OUTSIDE == 0 {
                    let first = slot(c.rank, 0);
                    let banks = self.banks as usize;
                    for e in &mut self.entries[first..first + banks] {
                        *e |= PRECHARGED;
                    }
                }
                DsmuOutcome::Accepted
            }
            DdrCmd::Ref | DdrCmd::Mrs | DdrCmd::Zq | DdrCmd::Nop => DsmuOutcome::Accepted,
            DdrCmd::Unknown => DsmuOutcome::Unknown,
        }
    }
}

/// The entry slot of (rank, bank), both below 16.
#[inline(always)]
fn slot(rank: u32, bank: u32) -> usize {
    ((rank << SLOT_BITS) | bank) as usize
}

/// The DSMU for a run of commands ([`Dsmu::view`]): what it needs copied
/// out, so that it stays in registers.
pub struct DsmuView<'a> {
    row_shift: u32,
    row_over: u32,
    column_over: u32,
    entries: &'a mut [u64; SLOTS],
    keys: &'a [u64; SLOTS],
}

impl DsmuView<'_> {
    /// The slot of (rank, bank) if both are below 16.
    #[inline(always)]
    fn slot(rank: u32, bank: u32) -> Option<usize> {
        ((rank | bank) >> SLOT_BITS == 0).then(|| slot(rank, bank))
    }

    /// The fast path of RD/RDA/WR/WRA: the line of `column` in the open
    /// row of (rank, bank) when everything is in range and the bank has
    /// been activated and not precharged since; `None` otherwise (then
    /// [`Dsmu::command`] says what it is).
    #[inline(always)]
    pub fn column_line(&mut self, rank: u32, bank: u32, column: u32) -> Option<u64> {
        let i = Self::slot(rank, bank)?;
        if column & self.column_over != 0 {
            return None;
        }
        // Slots outside the geometry are never opened.
        let e = self.entries[i & (SLOTS - 1)];
        if e & (NEVER_OPENED | PRECHARGED) != 0 {
            return None;
        }
        Some(e | u64::from(column >> 3))
    }

    /// ACT: opens `row` in (rank, bank); `false` (nothing done) when out
    /// of range.
    #[inline(always)]
    pub fn activate(&mut self, rank: u32, bank: u32, row: u32) -> bool {
        let Some(i) = Self::slot(rank, bank) else {
            return false;
        };
        let key = self.keys[i & (SLOTS - 1)];
        if key == u64::MAX || row & self.row_over != 0 {
            return false;
        }
        self.entries[i & (SLOTS - 1)] = key | (u64::from(row) << self.row_shift);
        true
    }

    /// PRE: marks (rank, bank) precharged (nothing when out of range: a
    /// slot outside the geometry stays never opened).
    #[inline(always)]
    pub fn precharge(&mut self, rank: u32, bank: u32) {
        if let Some(i) = Self::slot(rank, bank) {
            self.entries[i & (SLOTS - 1)] |= PRECHARGED;
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
