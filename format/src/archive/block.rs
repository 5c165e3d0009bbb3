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

use crate::trace::TraceRecord;

/// Recently used lines an access is coded against (on a lackey trace 16
/// leave 4% of accesses wide, 4 leave 30%).
pub const SLOTS: usize = 16;
/// Zigzag deltas below this (-3..=2 lines) fit the OP byte.
pub const SMALL_DELTAS: u8 = 6;
/// OP codes below this: an access with a small delta.
const OP_WIDE: u8 = 2 * SLOTS as u8 * SMALL_DELTAS;
/// OP codes `OP_WIDE..OP_WIDE + 2 * SLOTS`: an access whose zigzag delta
/// follows in AUX.
const OP_WIDE_END: u8 = OP_WIDE + 2 * SLOTS as u8;
/// Any other record: its low 6 bits and its value follow in AUX.
pub const OP_OTHER: u8 = 0xFD;
/// The board changes (before the record that follows): its id follows in AUX.
pub const OP_BOARD: u8 = 0xFE;
/// A time step at least this big is written in AUX.
const DT_WIDE: u8 = 0xFF;

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
    #[inline]
    fn varint(&mut self) -> Result<u64, ColumnError> {
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

/// The slot to code `line` against, and the delta from it: the most
/// recently used slot within a small delta, else the closest slot (the
/// most recent of equals). One pass over the slots. (Only the encoder
/// chooses; the decoder reads the choice.)
#[inline]
fn choose(slots: &[u64; SLOTS], line: u64) -> (usize, i64) {
    let mut best = (0, line.wrapping_sub(slots[0]) as i64);
    for (s, &l) in slots.iter().enumerate() {
        let d = line.wrapping_sub(l) as i64;
        if zigzag(d) < u64::from(SMALL_DELTAS) {
            return (s, d);
        }
        if d.unsigned_abs() < best.1.unsigned_abs() {
            best = (s, d);
        }
    }
    best
}

/// Moves slot `s` to the front with `line` in it. A wide step starts a
/// new stream: it takes the least recently used slot (`s = SLOTS - 1`) and
/// leaves the one it was coded against in place.
#[inline]
fn touch(slots: &mut [u64; SLOTS], s: usize, line: u64) {
    for i in (1..=s.min(SLOTS - 1)).rev() {
        slots[i] = slots[i - 1];
    }
    slots[0] = line;
}

/// Turns `records` into columns (appended to `out`, which the caller
/// clears). The block's state starts afresh: previous tick `first_tick`
/// (the first record's), board 0, every slot line 0.
pub fn encode(records: &[TraceRecord], out: &mut Columns) {
    let Some(first) = records.first() else {
        return;
    };
    let mut prev = first.tick;
    let mut board = 0u8;
    let mut slots = [0u64; SLOTS];
    out.op.reserve(records.len() + 16);
    out.dt.reserve(records.len());
    for r in records {
        let b = (r.packed >> BOARD_SHIFT) as u8;
        if b != board {
            out.op.push(OP_BOARD);
            out.aux.push(b);
            board = b;
        }
        let dt = r.tick.wrapping_sub(prev);
        prev = r.tick;
        if dt < u64::from(DT_WIDE) {
            out.dt.push(dt as u8);
        } else {
            out.dt.push(DT_WIDE);
            put_varint(&mut out.aux, dt - u64::from(DT_WIDE));
        }
        let low = (r.packed & 0x3f) as u8;
        let value = (r.packed >> VALUE_SHIFT) & VALUE_MASK;
        if low <= 1 {
            let (s, d) = choose(&slots, value);
            let z = zigzag(d);
            if z < u64::from(SMALL_DELTAS) {
                touch(&mut slots, s, value);
                out.op.push(((s as u8 * SMALL_DELTAS + z as u8) << 1) | low);
            } else {
                touch(&mut slots, SLOTS - 1, value);
                out.op.push(OP_WIDE + ((s as u8) << 1) + low);
                put_varint(&mut out.aux, z - u64::from(SMALL_DELTAS));
            }
        } else {
            out.op.push(OP_OTHER);
            out.aux.push(low);
            put_varint(&mut out.aux, value);
        }
    }
}

/// Turns columns back into `n` records (appended to `out`) whose first
/// tick is `first_tick`. Every byte of every column must be used.
pub fn decode(
    cols: &Columns,
    n: usize,
    first_tick: u64,
    out: &mut Vec<TraceRecord>,
) -> Result<(), ColumnError> {
    let mut ops = cols.op.iter().copied();
    let mut aux = Reader {
        bytes: &cols.aux,
        pos: 0,
        name: "AUX",
    };
    if cols.dt.len() < n {
        return Err(ColumnError::Short("DT"));
    }
    if cols.dt.len() > n {
        return Err(ColumnError::Long("DT"));
    }
    let mut tick = first_tick;
    let mut board_bits = 0u64;
    let mut slots = [0u64; SLOTS];
    out.reserve(n);
    for &dt in &cols.dt {
        let mut code = ops.next().ok_or(ColumnError::Short("OP"))?;
        while code == OP_BOARD {
            board_bits = u64::from(aux.byte()?) << BOARD_SHIFT;
            code = ops.next().ok_or(ColumnError::Short("OP"))?;
        }
        tick = tick.wrapping_add(if dt == DT_WIDE {
            aux.varint()?.wrapping_add(u64::from(DT_WIDE))
        } else {
            u64::from(dt)
        });
        let (low, value) = if code < OP_WIDE {
            let (s, d) = SMALL_CODES[usize::from(code)];
            let s = usize::from(s);
            let line = slots[s].wrapping_add(d as u64) & VALUE_MASK;
            touch(&mut slots, s, line);
            (u64::from(code & 1), line)
        } else if code < OP_WIDE_END {
            let write = code & 1;
            let s = usize::from((code - OP_WIDE) >> 1);
            let z = aux.varint()?.wrapping_add(u64::from(SMALL_DELTAS));
            let line = slots[s].wrapping_add(unzigzag(z) as u64) & VALUE_MASK;
            touch(&mut slots, SLOTS - 1, line);
            (u64::from(write), line)
        } else if code == OP_OTHER {
            let low = u64::from(aux.byte()? & 0x3f);
            (low, aux.varint()? & VALUE_MASK)
        } else {
            return Err(ColumnError::ReservedOp(code));
        };
        out.push(TraceRecord {
            tick,
            packed: board_bits | (value << VALUE_SHIFT) | low,
        });
    }
    if ops.next().is_some() {
        return Err(ColumnError::Long("OP"));
    }
    aux.finished()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::RecordKind;
    use proptest::prelude::*;

    fn round_trip(records: &[TraceRecord]) -> Columns {
        let mut cols = Columns::default();
        encode(records, &mut cols);
        let mut back = Vec::new();
        decode(
            &cols,
            records.len(),
            records.first().map_or(0, |r| r.tick),
            &mut back,
        )
        .unwrap();
        assert_eq!(back, records);
        cols
    }

    #[test]
    fn interleaved_streams_cost_one_op_and_one_dt_byte_each() {
        // Two sequential streams far apart, interleaved, one tick apart.
        let recs: Vec<_> = (0..1000u64)
            .map(|i| {
                let base = if i % 2 == 0 { 0x1000_0000 } else { 0x7fff_0000 };
                TraceRecord::access(i, 0, i % 3 == 0, base + (i / 2) * 64)
            })
            .collect();
        let cols = round_trip(&recs);
        assert_eq!(cols.op.len(), recs.len());
        assert_eq!(cols.dt.len(), recs.len());
        // The two first references to each stream are wide (slots start at 0).
        assert!(cols.aux.len() <= 8, "{:?}", cols.aux);
    }

    #[test]
    fn rare_records_board_switches_and_long_steps_round_trip() {
        let recs = vec![
            TraceRecord::access(5, 0, false, 0x40),
            TraceRecord::new(5, 1, RecordKind::Tag { write: true }, 0x10003),
            TraceRecord::access(1 << 40, 1, true, (1 << 56) - 64),
            TraceRecord::new(u64::MAX, 255, RecordKind::GapBegin, 7),
            TraceRecord::new(3, 2, RecordKind::Reserved(12), (1 << 50) - 1),
            // bits 4..5 set: kept as they are.
            TraceRecord {
                tick: 4,
                packed: 0x30,
            },
        ];
        round_trip(&recs);
    }

    #[test]
    fn damaged_columns_are_errors() {
        let recs: Vec<_> = (0..50u64)
            .map(|i| TraceRecord::access(i * 300, 0, false, i * 640))
            .collect();
        let mut cols = Columns::default();
        encode(&recs, &mut cols);
        let mut out = Vec::new();
        let mut short = cols.clone();
        short.aux.pop();
        assert!(decode(&short, 50, 0, &mut out).is_err());
        let mut long = cols.clone();
        long.op.push(0);
        assert!(decode(&long, 49, 0, &mut out).is_err());
        assert_eq!(decode(&long, 50, 0, &mut out), Err(ColumnError::Long("OP")));
        let mut reserved = cols.clone();
        reserved.op[3] = 0xFF;
        assert_eq!(
            decode(&reserved, 50, 0, &mut out),
            Err(ColumnError::ReservedOp(0xFF))
        );
        let bad = Columns {
            op: vec![OP_OTHER],
            dt: vec![0],
            aux: vec![
                0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        };
        assert_eq!(decode(&bad, 1, 0, &mut out), Err(ColumnError::BadVarint));
    }

    proptest! {
        #[test]
        fn any_records_round_trip(recs in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..200)) {
            let recs: Vec<_> = recs.into_iter().map(|(tick, packed)| TraceRecord { tick, packed }).collect();
            round_trip(&recs);
        }

        #[test]
        fn sorted_accesses_round_trip(steps in proptest::collection::vec((0u64..600, -40i64..40, 0u8..3, any::<bool>()), 0..300)) {
            let mut tick = 1000;
            let mut line = 1u64 << 30;
            let recs: Vec<_> = steps.into_iter().map(|(dt, dl, board, w)| {
                tick += dt;
                line = line.wrapping_add(dl as u64);
                TraceRecord::access(tick, board, w, line << 6)
            }).collect();
            round_trip(&recs);
        }
    }
}
