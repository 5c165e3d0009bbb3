//! One archive block (format.md §13.3): records turned into three byte
//! columns (OP, DT, AUX) that a general-purpose entropy coder squeezes far
//! better than the 16-byte records, and back.
//!
//! An access's line is coded against one of 16 recently used lines
//! (move-to-front), so interleaved streams (stack, heap, a few arrays)
//! each see their own small deltas; the common record is one OP byte
//! (slot, small delta, write bit) and one DT byte.
//! Everything rare (wide deltas, board switches, other kinds, long time
//! steps) goes to AUX. Pure: no I/O, no compression here.

use std::mem::MaybeUninit;

use crate::trace::TraceRecord;

/// Recently used lines an access is coded against (on a lackey trace 16
/// leave 4% of accesses wide, 4 leave 30%).
pub const SLOTS: usize = 16;
/// Zigzag deltas below this (-3..=2 lines) fit the OP byte.
pub const SMALL_DELTAS: u8 = 6;
/// OP codes below this: an access with a small delta.
pub(super) const OP_WIDE: u8 = 2 * SLOTS as u8 * SMALL_DELTAS;
/// OP codes `OP_WIDE..OP_WIDE + 2 * SLOTS`: an access whose zigzag delta
/// follows in AUX.
const OP_WIDE_END: u8 = OP_WIDE + 2 * SLOTS as u8;
/// Any other record: its low 6 bits and its value follow in AUX.
pub const OP_OTHER: u8 = 0xFD;
/// The board changes (before the record that follows): its id follows in AUX.
pub const OP_BOARD: u8 = 0xFE;
/// A time step at least this big is written in AUX.
pub(super) const DT_WIDE: u8 = 0xFF;

const VALUE_SHIFT: u32 = 6;
const VALUE_MASK: u64 = (1 << 50) - 1;
const BOARD_SHIFT: u32 = 56;

const _: () = assert!(OP_WIDE_END as u16 <= OP_OTHER as u16);

/// Why a block's columns cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    #[error("the {0} column ends early")]
    Short(&'static str),
    #[error("the {0} column holds more than its records")]
    Long(&'static str),
    #[error("reserved OP code {0:#04x}")]
    ReservedOp(u8),
    #[error("a varint in the AUX column is too long")]
    BadVarint,
}

/// The three columns of one block, before entropy coding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    pub op: Vec<u8>,
    pub dt: Vec<u8>,
    pub aux: Vec<u8>,
}

impl Columns {
    pub fn clear(&mut self) {
        self.op.clear();
        self.dt.clear();
        self.aux.clear();
    }
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// Slot and delta of each small-delta OP code (the write bit is bit 0).
const SMALL_CODES: [(u8, i64); OP_WIDE as usize] = {
    let mut t = [(0u8, 0i64); OP_WIDE as usize];
    let mut code = 0;
    while code < OP_WIDE as usize {
        let c = (code >> 1) as u8;
        let z = (c % SMALL_DELTAS) as i64;
        t[code] = (c / SMALL_DELTAS, (z >> 1) ^ -(z & 1));
        code += 1;
    }
    t
};

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads the columns in order, each with its own position.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    name: &'static str,
}

impl<'a> Reader<'a> {
    #[inline]
    fn byte(&mut self) -> Result<u8, ColumnError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or(ColumnError::Short(self.name))?;
        self.pos += 1;
        Ok(b)
    }
    /// A varint: eight bytes read at once while they are there and hold
    /// its end (deltas and steps take one to four), else byte by byte.
    #[inline(always)]
    fn varint(&mut self) -> Result<u64, ColumnError> {
        if let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
            let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            let ends = !x & 0x8080_8080_8080_8080;
            if ends != 0 {
                let last_bit = ends.trailing_zeros();
                let x = x & (u64::MAX >> (63 - last_bit));
                let mut v = 0;
                for k in 0..8 {
                    v |= (x >> k) & (0x7f << (7 * k));
                }
                self.pos += (last_bit / 8 + 1) as usize;
                return Ok(v);
            }
        }
        self.varint_bytes()
    }
    #[cold]
    #[inline(never)]
    fn varint_bytes(&mut self) -> Result<u64, ColumnError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(ColumnError::BadVarint)
    }
    fn finished(&self) -> Result<(), ColumnError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(ColumnError::Long(self.name))
        }
    }
}

/// The 16 slots of the decoder, most recent first, kept as lines at
/// fixed positions and an order: nibble `r` of `order` is the position of
/// the line of rank `r`. Moving a rank to the front is then a few bit
/// operations, without branches, instead of moving up to 15 lines. The
/// lines are kept where a record's packed word holds them (shifted by
/// `VALUE_SHIFT`, modulo 2^64): a delta adds there as well, and a record
/// takes its line with one mask.
#[derive(Clone, Copy)]
struct Recent {
    lines: [u64; SLOTS],
    order: u64,
}

impl Recent {
    fn new() -> Recent {
        Recent {
            lines: [0; SLOTS],
            order: 0xFEDC_BA98_7654_3210,
        }
    }

    #[inline(always)]
    fn position(&self, rank: usize) -> usize {
        ((self.order >> (4 * rank)) & 0xF) as usize
    }

    /// The line of `rank` plus `delta` (shifted as the lines are) becomes
    /// the line of `replaces` and moves to the front (rank 15: the least
    /// recent line is dropped for a new stream); returns it.
    #[inline(always)]
    fn step(&mut self, rank: usize, replaces: usize, delta: u64) -> u64 {
        let line = self.lines[self.position(rank)].wrapping_add(delta);
        let p = self.position(replaces);
        self.lines[p] = line;
        let before = (1u64 << (4 * replaces)) - 1;
        // `replaces` and the ranks before it (all 16 for rank 15: the
        // shift by 4 then leaves 0, which wraps to every bit).
        let through = ((1u64 << (4 * replaces)) << 4).wrapping_sub(1);
        self.order = (self.order & !through) | ((self.order & before) << 4) | p as u64;
        line
    }
}

/// A delta the OP byte holds (zigzag below `SMALL_DELTAS`: -3..=2).
#[inline(always)]
fn is_small(d: i64) -> bool {
    (d.wrapping_add(3) as u64) < u64::from(SMALL_DELTAS)
}

/// AUX bytes of the rare cases of one record, kept out of the loop.
#[cold]
#[inline(never)]
fn put_varint_cold(out: &mut Vec<u8>, v: u64) {
    put_varint(out, v);
}

/// The rank to code `line` against among `slots` (the recently used
/// lines, most recent first), and whether its delta is small: the most
/// recent within a small delta, else the closest (the most recent of
/// equals). Only the encoder chooses; the decoder reads the choice.
#[inline(always)]
fn choose(slots: &[u64; SLOTS], line: u64) -> (usize, bool) {
    // Low 4 bits: the rank; above: the distance. The closest is found
    // by a tree of minimums (4 steps deep), not a chain of 16.
    let mut keys = [0u64; SLOTS];
    for (rank, &l) in slots.iter().enumerate() {
        let d = line.wrapping_sub(l) as i64;
        if is_small(d) {
            return (rank, true);
        }
        keys[rank] = (d.unsigned_abs() << 4) | rank as u64;
    }
    let mut width = SLOTS;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            keys[i] = keys[i].min(keys[i + width]);
        }
    }
    ((keys[0] & 0xF) as usize, false)
}

/// Turns `records` into columns (appended to `out`, which the caller
/// clears). The block's state starts afresh: previous tick `first_tick`
/// (the first record's), board 0, every slot line 0.
pub fn encode(records: &[TraceRecord], out: &mut Columns) {
    let Some(first) = records.first() else {
        return;
    };
    // Local columns: their lengths stay in registers (pushes through
    // `out` would reload them after every store).
    let mut op = std::mem::take(&mut out.op);
    let mut dt_col = std::mem::take(&mut out.dt);
    let mut aux = std::mem::take(&mut out.aux);
    op.reserve(records.len() + 16);
    dt_col.reserve(records.len());
    let mut prev = first.tick;
    let mut board = 0u8;
    // Lines by rank (values are 50 bits, so distances fit the key above).
    let mut slots = [0u64; SLOTS];
    for r in records {
        let b = (r.packed >> BOARD_SHIFT) as u8;
        if b != board {
            op.push(OP_BOARD);
            aux.push(b);
            board = b;
        }
        let dt = r.tick.wrapping_sub(prev);
        prev = r.tick;
        if dt < u64::from(DT_WIDE) {
            dt_col.push(dt as u8);
        } else {
            dt_col.push(DT_WIDE);
            put_varint_cold(&mut aux, dt - u64::from(DT_WIDE));
        }
        let low = (r.packed & 0x3f) as u8;
        let value = (r.packed >> VALUE_SHIFT) & VALUE_MASK;
        if low <= 1 {
            let (s, small) = choose(&slots, value);
            let z = zigzag(value.wrapping_sub(slots[s]) as i64);
            if small {
                for i in (1..=s).rev() {
                    slots[i] = slots[i - 1];
                }
                op.push(((s as u8 * SMALL_DELTAS + z as u8) << 1) | low);
            } else {
                // A new stream takes the least recently used slot.
                slots.copy_within(0..SLOTS - 1, 1);
                op.push(OP_WIDE + ((s as u8) << 1) + low);
                put_varint(&mut aux, z - u64::from(SMALL_DELTAS));
            }
            slots[0] = value;
        } else {
            op.push(OP_OTHER);
            aux.push(low);
            put_varint_cold(&mut aux, value);
        }
    }
    out.op = op;
    out.dt = dt_col;
    out.aux = aux;
}

/// How the decoder reads an access's OP code (below `OP_WIDE_END`) one
/// record at a time: the rank it is coded against, the rank its line then
/// takes the place of (the same for a small delta, the least recent for a
/// wide one: a new stream), its small delta, and whether the delta is in
/// AUX instead.
#[derive(Clone, Copy)]
struct AccessCode {
    rank: u8,
    replaces: u8,
    wide: bool,
    delta: i8,
}

const ACCESS_CODES: [AccessCode; OP_WIDE_END as usize] = {
    let mut t = [AccessCode {
        rank: 0,
        replaces: 0,
        wide: false,
        delta: 0,
    }; OP_WIDE_END as usize];
    let mut code = 0;
    while code < OP_WIDE_END as usize {
        t[code] = if code < OP_WIDE as usize {
            let (s, d) = SMALL_CODES[code];
            AccessCode {
                rank: s,
                replaces: s,
                wide: false,
                delta: d as i8,
            }
        } else {
            AccessCode {
                rank: ((code - OP_WIDE as usize) >> 1) as u8,
                replaces: SLOTS as u8 - 1,
                wide: true,
                delta: 0,
            }
        };
        code += 1;
    }
    t
};

/// What a small-delta access code (below `OP_WIDE`) does, as the common
/// loop ([`common_records`]) takes it without a branch: the shift of its
/// rank's nibble in the order, the order's nibbles before that rank (they
/// move back one) and after it (they stay), its delta shifted as the
/// lines are, and its write bit.
#[derive(Clone, Copy)]
struct SmallStep {
    shift: u64,
    before: u64,
    after: u64,
    delta: u64,
    write: u64,
}

/// [`SmallStep`] by OP code; the codes from `OP_WIDE` on never reach the
/// common loop (256 entries: a byte indexes it without a bounds check).
static SMALL_STEPS: [SmallStep; 256] = {
    let mut t = [SmallStep {
        shift: 0,
        before: 0,
        after: 0,
        delta: 0,
        write: 0,
    }; 256];
    let mut code = 0;
    while code < OP_WIDE as usize {
        let (rank, delta) = SMALL_CODES[code];
        let shift = 4 * rank as u32;
        t[code] = SmallStep {
            shift: shift as u64,
            before: (1 << shift) - 1,
            // Rank 15 keeps no nibble after it.
            after: if rank as usize == SLOTS - 1 {
                0
            } else {
                !((1 << (shift + 4)) - 1)
            },
            delta: (delta << VALUE_SHIFT) as u64,
            write: code as u64 & 1,
        };
        code += 1;
    }
    t
};

/// A line's bits in a record's packed word.
const PACKED_VALUE_MASK: u64 = VALUE_MASK << VALUE_SHIFT;

/// Turns columns back into `n` records (appended to `out`) whose first
/// tick is `first_tick`. Every byte of every column must be used.
pub fn decode(
    cols: &Columns,
    n: usize,
    first_tick: u64,
    out: &mut Vec<TraceRecord>,
) -> Result<(), ColumnError> {
    let mut d = ColumnDecoder::new(cols, n, first_tick)?;
    d.decode_into(out, n)?;
    d.finish()
}

/// What the decoder carries from record to record.
#[derive(Clone, Copy)]
struct State {
    tick: u64,
    board_bits: u64,
    recent: Recent,
}

/// The instructions the decoder's loops are compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    /// Any CPU: the common runs found eight bytes at a time in a `u64`.
    Portable,
    /// AVX2 (and BMI2, which every CPU with AVX2 but a few early VIA
    /// ones has): the common runs found 32 bytes at a time.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi2")
        {
            return Isa::Avx2;
        }
        Isa::Portable
    }
}

/// Decodes a block's columns a run of records at a time (a reader that
/// works on a few thousand records at once keeps them in cache, where a
/// whole block of a million would not be): [`ColumnDecoder::decode_into`]
/// until [`ColumnDecoder::remaining`] is 0, then [`ColumnDecoder::finish`]
/// checks that every byte was used. The records are those of [`decode`].
///
/// Most records are small-delta accesses with a time step in the DT byte:
/// the decoder finds how many follow in a row ([`super::scan`]), takes
/// them in a loop without a branch a record ([`common_records`]), and
/// every other record alone ([`any_record`]).
pub struct ColumnDecoder<'c> {
    ops: &'c [u8],
    dt: &'c [u8],
    aux: Reader<'c>,
    next_op: usize,
    next_dt: usize,
    state: State,
    isa: Isa,
}

impl<'c> ColumnDecoder<'c> {
    /// The decoder of `n` records whose first tick is `first_tick`.
    pub fn new(cols: &'c Columns, n: usize, first_tick: u64) -> Result<Self, ColumnError> {
        Self::with_isa(cols, n, first_tick, Isa::detect())
    }

    fn with_isa(
        cols: &'c Columns,
        n: usize,
        first_tick: u64,
        isa: Isa,
    ) -> Result<Self, ColumnError> {
        if cols.dt.len() < n {
            return Err(ColumnError::Short("DT"));
        }
        if cols.dt.len() > n {
            return Err(ColumnError::Long("DT"));
        }
        Ok(ColumnDecoder {
            ops: &cols.op,
            dt: &cols.dt,
            aux: Reader {
                bytes: &cols.aux,
                pos: 0,
                name: "AUX",
            },
            next_op: 0,
            next_dt: 0,
            state: State {
                tick: first_tick,
                board_bits: 0,
                recent: Recent::new(),
            },
            isa,
        })
    }

    /// Records not decoded yet.
    pub fn remaining(&self) -> usize {
        self.dt.len() - self.next_dt
    }

    /// Decodes the next `max` records (fewer at the end), appended to `out`.
    pub fn decode_into(
        &mut self,
        out: &mut Vec<TraceRecord>,
        max: usize,
    ) -> Result<(), ColumnError> {
        match self.isa {
            // SAFETY: `Isa::detect` found AVX2 and BMI2.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { self.decode_into_avx2(out, max) },
            Isa::Portable => self.decode_records::<false>(out, max),
        }
    }

    /// [`ColumnDecoder::decode_into`] compiled for AVX2 and BMI2.
    ///
    /// # Safety
    /// The CPU must have AVX2 and BMI2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2")]
    unsafe fn decode_into_avx2(
        &mut self,
        out: &mut Vec<TraceRecord>,
        max: usize,
    ) -> Result<(), ColumnError> {
        self.decode_records::<true>(out, max)
    }

    /// [`ColumnDecoder::decode_into`]; `AVX2`: compiled into a function
    /// with AVX2 and BMI2 enabled, and finds the common runs with AVX2.
    #[inline(always)]
    fn decode_records<const AVX2: bool>(
        &mut self,
        out: &mut Vec<TraceRecord>,
        max: usize,
    ) -> Result<(), ColumnError> {
        let n = max.min(self.remaining());
        let dts = &self.dt[self.next_dt..self.next_dt + n];
        // The state in locals: stores to `out` cannot alias them.
        let ops = self.ops;
        let mut aux = Reader {
            bytes: self.aux.bytes,
            pos: self.aux.pos,
            name: self.aux.name,
        };
        let mut next_op = self.next_op;
        let mut state = self.state;
        out.reserve(n);
        // Records are written in place (no capacity check a record) and
        // counted in once all of them are.
        let spare = &mut out.spare_capacity_mut()[..n];
        let mut done = 0;
        while done < n {
            let len = (n - done).min(ops.len() - next_op);
            let run_ops = &ops[next_op..next_op + len];
            let run_dts = &dts[done..done + len];
            let common = common_run::<AVX2>(run_ops, run_dts);
            common_records(
                &run_ops[..common],
                &run_dts[..common],
                &mut spare[done..done + common],
                &mut state,
            );
            next_op += common;
            done += common;
            if done < n {
                spare[done].write(any_record(
                    ops,
                    &mut next_op,
                    dts[done],
                    &mut aux,
                    &mut state,
                )?);
                done += 1;
            }
        }
        // SAFETY: the loop wrote all `n` records after the old length,
        // within the reserved capacity; an early error returns before
        // this, leaving them unused.
        unsafe { out.set_len(out.len() + n) };
        self.next_dt += n;
        self.aux.pos = aux.pos;
        self.next_op = next_op;
        self.state = state;
        Ok(())
    }

    /// Checks, once every record is decoded, that no column holds more.
    pub fn finish(&self) -> Result<(), ColumnError> {
        if self.remaining() != 0 {
            // Records left undecoded: the DT column holds more than were read.
            return Err(ColumnError::Long("DT"));
        }
        if self.next_op != self.ops.len() {
            return Err(ColumnError::Long("OP"));
        }
        self.aux.finished()
    }
}

/// [`super::scan::common_run`], with AVX2 when `AVX2` (inlined into a
/// function compiled for it).
#[inline(always)]
fn common_run<const AVX2: bool>(ops: &[u8], dts: &[u8]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: `AVX2` is only set in functions compiled for AVX2,
        // called once the CPU was found to have it.
        return unsafe { super::scan::common_run_avx2(ops, dts) };
    }
    super::scan::common_run(ops, dts)
}

/// Records whose OP codes are small-delta accesses and whose time steps
/// fit the DT byte (a run [`super::scan::common_run`] found), one OP and
/// one DT byte each, into `out` (as long as both): the same steps for
/// every code, from [`SMALL_STEPS`], without a branch (most are rank 0,
/// but the others come unpredictably).
#[inline(always)]
fn common_records(ops: &[u8], dts: &[u8], out: &mut [MaybeUninit<TraceRecord>], state: &mut State) {
    let board_bits = state.board_bits;
    let mut tick = state.tick;
    let Recent {
        mut lines,
        mut order,
    } = state.recent;
    for ((slot, &code), &dt) in out.iter_mut().zip(ops).zip(dts) {
        let step = &SMALL_STEPS[usize::from(code)];
        tick = tick.wrapping_add(u64::from(dt));
        let p = (order >> step.shift) & 0xF;
        let line = lines[p as usize].wrapping_add(step.delta);
        lines[p as usize] = line;
        order = (order & step.after) | ((order & step.before) << 4) | p;
        slot.write(TraceRecord {
            tick,
            packed: (line & PACKED_VALUE_MASK) | board_bits | step.write,
        });
    }
    state.tick = tick;
    state.recent = Recent { lines, order };
}

/// The next record, of any kind, read one at a time: a record that ends a
/// common run (a board switch before it, a wide time step, a wide delta,
/// a record other than an access), or the columns end early.
#[inline(never)]
fn any_record(
    ops: &[u8],
    next_op: &mut usize,
    dt: u8,
    aux: &mut Reader<'_>,
    state: &mut State,
) -> Result<TraceRecord, ColumnError> {
    let mut code = *ops.get(*next_op).ok_or(ColumnError::Short("OP"))?;
    *next_op += 1;
    if code == OP_BOARD {
        (code, state.board_bits) = board_switch(ops, next_op, aux)?;
    }
    state.tick = state.tick.wrapping_add(if dt == DT_WIDE {
        aux.varint()?.wrapping_add(u64::from(DT_WIDE))
    } else {
        u64::from(dt)
    });
    let (low, line) = if code < OP_WIDE_END {
        let a = ACCESS_CODES[usize::from(code)];
        let delta = if a.wide {
            unzigzag(aux.varint()?.wrapping_add(u64::from(SMALL_DELTAS)))
        } else {
            i64::from(a.delta)
        };
        let line = state.recent.step(
            usize::from(a.rank),
            usize::from(a.replaces),
            (delta as u64) << VALUE_SHIFT,
        );
        (u64::from(code & 1), line)
    } else if code == OP_OTHER {
        let low = u64::from(aux.byte()? & 0x3f);
        (low, aux.varint()? << VALUE_SHIFT)
    } else {
        return Err(ColumnError::ReservedOp(code));
    };
    Ok(TraceRecord {
        tick: state.tick,
        packed: state.board_bits | (line & PACKED_VALUE_MASK) | low,
    })
}

/// The OP code after one or more board switches, and the board's bits.
#[cold]
#[inline(never)]
fn board_switch(
    ops: &[u8],
    next_op: &mut usize,
    aux: &mut Reader<'_>,
) -> Result<(u8, u64), ColumnError> {
    let mut code = OP_BOARD;
    let mut board_bits = 0;
    while code == OP_BOARD {
        board_bits = u64::from(aux.byte()?) << BOARD_SHIFT;
        code = *ops.get(*next_op).ok_or(ColumnError::Short("OP"))?;
        *next_op += 1;
    }
    Ok((code, board_bits))
}

#[cfg(test)]
mod tests;
