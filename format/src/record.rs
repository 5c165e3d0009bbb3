//! The 32-bit record word (format.md §4) and the encoder rules (§4.1).
//!
//! ```text
//!  31      26 25 24   23 ........................ 0
//!  [  dt:6  ][K][W ][        line_lo:24           ]   K=0 ACCESS
//!  [  dt:6  ][K][ op:4 ][       payload:21        ]   K=1 CONTROL
//! ```

/// Largest `dt` a word carries.
pub const DT_MAX: u32 = 63;
/// Ticks one unit of TIME payload stands for.
pub const TIME_UNIT: u64 = 64;
/// Largest CONTROL payload.
pub const PAYLOAD_MAX: u32 = (1 << 21) - 1;
/// Mask of `line_lo`.
pub const LINE_LO_MASK: u64 = (1 << 24) - 1;
/// Event indices carried by a TAG word: 20 bits.
pub const TAG_EVENT_MAX: u32 = (1 << 20) - 1;

/// The word's bit fields, for code that takes words apart by hand (the
/// merge's word loops, the HDL encoder) instead of through [`RecordWord`].
pub mod field {
    /// `dt` is bits 31..26.
    pub const DT_SHIFT: u32 = 26;
    /// The K bit: 0 ACCESS, 1 CONTROL.
    pub const K_SHIFT: u32 = 25;
    pub const K_BIT: u32 = 1 << K_SHIFT;
    /// The W bit of an ACCESS word (bit 24; the opcode's top bit in a
    /// CONTROL word).
    pub const W_SHIFT: u32 = 24;
    pub const W_BIT: u32 = 1 << W_SHIFT;
    /// The opcode of a CONTROL word is bits 24..21.
    pub const OP_SHIFT: u32 = 21;
    pub const OP_MASK: u32 = 0xf;
    pub const LINE_LO_MASK: u32 = (1 << 24) - 1;
    pub const PAYLOAD_MASK: u32 = (1 << 21) - 1;
    pub const TAG_WRITE_BIT: u32 = 1 << 20;
    pub const TAG_EVENT_MASK: u32 = (1 << 20) - 1;
    /// Bits 25..21, the K bit and the opcode as one number `kind`: below
    /// [`KIND_TIME`] an ACCESS word, then TIME, LINE_HI and the rare
    /// CONTROL words; one shift and mask tells the common words apart.
    pub const KIND_SHIFT: u32 = OP_SHIFT;
    pub const KIND_MASK: u32 = K_BIT >> KIND_SHIFT | OP_MASK;
    /// `kind` of a TIME word.
    pub const KIND_TIME: u32 = K_BIT >> KIND_SHIFT;
    /// `kind` of a LINE_HI word.
    pub const KIND_LINE_HI: u32 = K_BIT >> KIND_SHIFT | 1;
}

/// CONTROL opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    Time,
    LineHi,
    Tag,
    Cmd,
    Lost,
    Pad,
    /// 5..=14: a decoder reports these as corrupt input.
    Reserved(u8),
}

impl Opcode {
    pub fn from_bits(op: u8) -> Opcode {
        match op & 0xf {
            0 => Opcode::Time,
            1 => Opcode::LineHi,
            2 => Opcode::Tag,
            3 => Opcode::Cmd,
            4 => Opcode::Lost,
            15 => Opcode::Pad,
            other => Opcode::Reserved(other),
        }
    }
    pub const fn bits(self) -> u8 {
        match self {
            Opcode::Time => 0,
            Opcode::LineHi => 1,
            Opcode::Tag => 2,
            Opcode::Cmd => 3,
            Opcode::Lost => 4,
            Opcode::Pad => 15,
            Opcode::Reserved(b) => b & 0xf,
        }
    }
}

/// A field value does not fit its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("dt {0} exceeds {DT_MAX}")]
    DtTooLarge(u32),
    #[error("line_lo {0:#x} exceeds 24 bits")]
    LineLoTooLarge(u64),
    #[error("payload {0:#x} exceeds 21 bits")]
    PayloadTooLarge(u32),
    #[error("tag event index {0:#x} exceeds 20 bits")]
    TagEventTooLarge(u32),
}

/// One record word as it travels on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordWord(pub u32);

/// A record word split into its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    Access { dt: u8, write: bool, line_lo: u32 },
    Control { dt: u8, op: Opcode, payload: u32 },
}

impl RecordWord {
    /// An ACCESS word.
    pub fn access(dt: u32, write: bool, line_lo: u64) -> Result<RecordWord, RecordError> {
        if dt > DT_MAX {
            return Err(RecordError::DtTooLarge(dt));
        }
        if line_lo > LINE_LO_MASK {
            return Err(RecordError::LineLoTooLarge(line_lo));
        }
        Ok(Self::access_unchecked(dt, write, line_lo))
    }

    /// An ACCESS word; fields are truncated to their widths.
    #[inline]
    pub fn access_unchecked(dt: u32, write: bool, line_lo: u64) -> RecordWord {
        let w = if write { field::W_BIT } else { 0 };
        RecordWord(((dt & DT_MAX) << field::DT_SHIFT) | w | (line_lo as u32 & field::LINE_LO_MASK))
    }

    /// A CONTROL word.
    pub fn control(dt: u32, op: Opcode, payload: u32) -> Result<RecordWord, RecordError> {
        if dt > DT_MAX {
            return Err(RecordError::DtTooLarge(dt));
        }
        if payload > PAYLOAD_MAX {
            return Err(RecordError::PayloadTooLarge(payload));
        }
        Ok(Self::control_unchecked(dt, op, payload))
    }

    /// A CONTROL word; fields are truncated to their widths.
    #[inline]
    pub fn control_unchecked(dt: u32, op: Opcode, payload: u32) -> RecordWord {
        RecordWord(
            ((dt & DT_MAX) << field::DT_SHIFT)
                | field::K_BIT
                | ((u32::from(op.bits()) & field::OP_MASK) << field::OP_SHIFT)
                | (payload & field::PAYLOAD_MASK),
        )
    }

    /// The payload of a TAG word.
    pub fn tag_payload(event: u32, write: bool) -> Result<u32, RecordError> {
        if event > TAG_EVENT_MAX {
            return Err(RecordError::TagEventTooLarge(event));
        }
        Ok(event | if write { field::TAG_WRITE_BIT } else { 0 })
    }

    /// Splits a TAG payload into (event index, write).
    pub fn split_tag_payload(payload: u32) -> (u32, bool) {
        (
            payload & field::TAG_EVENT_MASK,
            payload & field::TAG_WRITE_BIT != 0,
        )
    }

    #[inline]
    pub fn dt(self) -> u32 {
        self.0 >> field::DT_SHIFT
    }
    /// The opcode field (bits 24..21) of a CONTROL word, as a number.
    #[inline]
    pub fn op_bits(self) -> u32 {
        (self.0 >> field::OP_SHIFT) & field::OP_MASK
    }
    #[inline]
    pub fn is_control(self) -> bool {
        self.0 & field::K_BIT != 0
    }
    /// Write bit of an ACCESS word.
    #[inline]
    pub fn is_write(self) -> bool {
        self.0 & field::W_BIT != 0
    }
    #[inline]
    pub fn line_lo(self) -> u32 {
        self.0 & field::LINE_LO_MASK
    }
    #[inline]
    pub fn opcode(self) -> Opcode {
        Opcode::from_bits(((self.0 >> field::OP_SHIFT) & field::OP_MASK) as u8)
    }
    #[inline]
    pub fn payload(self) -> u32 {
        self.0 & field::PAYLOAD_MASK
    }

    pub fn split(self) -> Word {
        let dt = self.dt() as u8;
        if self.is_control() {
            Word::Control {
                dt,
                op: self.opcode(),
                payload: self.payload(),
            }
        } else {
            Word::Access {
                dt,
                write: self.is_write(),
                line_lo: self.line_lo(),
            }
        }
    }

    pub fn to_le_bytes(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
    pub fn from_le_bytes(b: [u8; 4]) -> RecordWord {
        RecordWord(u32::from_le_bytes(b))
    }
}

/// What the board records, before encoding (format.md §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoardEvent {
    Access { line: u64, write: bool },
    Tag { event: u32, write: bool },
    Cmd { code: u32 },
    Lost { count: u32 },
}

/// A decoded record with its absolute time in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimedEvent {
    pub tick: u64,
    pub event: BoardEvent,
}

/// The words one event needs, at most: one TIME word, LINE_HI, the event's
/// word. The keeper (see [`EventEncoder::time_filler`]) keeps every gap
/// short enough for one TIME word; an event whose gap would need two cannot
/// be encoded and is dropped (format.md §4.1).
pub const MAX_WORDS_PER_EVENT: usize = 3;

/// The gap at which the keeper pushes a filler TIME word: `64 * (2^21-1)`
/// ticks (about 0.17 s at DDR3-1600), the most one TIME word can carry.
pub const KEEPER_GAP: u64 = PAYLOAD_MAX as u64 * TIME_UNIT;

/// The smallest gap that one TIME word cannot carry: `64 * 2^21` ticks. An
/// event (or LOST) this far from `last` is dropped.
pub const GAP_TOO_LONG: u64 = (PAYLOAD_MAX as u64 + 1) * TIME_UNIT;

/// The encoder state of §4.1: time and LINE_HI of the last word pushed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventEncoder {
    /// Time of the last word pushed into the FIFO (for a keeper filler, the
    /// time it stands for: the previous `last` plus [`KEEPER_GAP`]).
    pub last: u64,
    /// LINE_HI of the stream.
    pub hi: u32,
}

/// The words of one event, ready for an atomic push.
#[derive(Debug, Clone, Copy)]
pub struct EncodedEvent {
    words: [RecordWord; MAX_WORDS_PER_EVENT],
    len: usize,
    /// Encoder state after the push.
    pub next: EventEncoder,
}

impl EncodedEvent {
    pub fn words(&self) -> &[RecordWord] {
        &self.words[..self.len]
    }
    /// All the slots, the words first (`len` of them), then zero words.
    #[inline]
    pub fn padded(&self) -> [RecordWord; MAX_WORDS_PER_EVENT] {
        self.words
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl EventEncoder {
    /// The words for `event` at tick `t` (≥ `self.last`): at most one TIME
    /// word, then LINE_HI if an access changes it, then the event's word.
    /// `None` when the gap needs more than one TIME word (`t - last >=`
    /// [`GAP_TOO_LONG`]): the keeper ([`EventEncoder::time_filler`]) should
    /// have shortened it, and the event is dropped.
    #[inline]
    pub fn encode(&self, t: u64, event: BoardEvent) -> Option<EncodedEvent> {
        debug_assert!(t >= self.last, "time went backwards");
        let mut gap = t.saturating_sub(self.last);
        if gap >= GAP_TOO_LONG {
            return None;
        }
        let mut words = [RecordWord(0); MAX_WORDS_PER_EVENT];
        let mut len = 0;
        if gap >= TIME_UNIT {
            words[0] = RecordWord::control_unchecked(0, Opcode::Time, (gap / TIME_UNIT) as u32);
            len = 1;
            gap %= TIME_UNIT;
        }
        let mut hi = self.hi;
        let word = match event {
            BoardEvent::Access { line, write } => {
                let line_hi = (line >> 24) as u32;
                if line_hi != hi {
                    words[len] = RecordWord::control_unchecked(gap as u32, Opcode::LineHi, line_hi);
                    len += 1;
                    gap = 0;
                    hi = line_hi;
                }
                RecordWord::access_unchecked(gap as u32, write, line & LINE_LO_MASK)
            }
            BoardEvent::Tag { event, write } => RecordWord::control_unchecked(
                gap as u32,
                Opcode::Tag,
                (event & field::TAG_EVENT_MASK) | if write { field::TAG_WRITE_BIT } else { 0 },
            ),
            BoardEvent::Cmd { code } => {
                RecordWord::control_unchecked(gap as u32, Opcode::Cmd, code & PAYLOAD_MAX)
            }
            BoardEvent::Lost { count } => {
                RecordWord::control_unchecked(gap as u32, Opcode::Lost, count.min(PAYLOAD_MAX))
            }
        };
        words[len] = word;
        len += 1;
        Some(EncodedEvent {
            words,
            len,
            next: EventEncoder { last: t, hi },
        })
    }

    /// The common case of [`EventEncoder::encode`] without building a word
    /// array: the event's only word and the state after it, when the event
    /// needs exactly one word (a gap below 64 ticks and, for an access, no
    /// LINE_HI change); `None` otherwise, and then `encode` gives the words.
    /// The word is always the one `encode` gives.
    #[inline]
    pub fn encode_single(&self, t: u64, event: BoardEvent) -> Option<(RecordWord, EventEncoder)> {
        let gap = t.checked_sub(self.last)?;
        if gap >= TIME_UNIT {
            return None;
        }
        let dt = gap as u32;
        let word = match event {
            BoardEvent::Access { line, write } => {
                if (line >> 24) as u32 != self.hi {
                    return None;
                }
                RecordWord::access_unchecked(dt, write, line & LINE_LO_MASK)
            }
            BoardEvent::Tag { event, write } => RecordWord::control_unchecked(
                dt,
                Opcode::Tag,
                (event & field::TAG_EVENT_MASK) | if write { field::TAG_WRITE_BIT } else { 0 },
            ),
            BoardEvent::Cmd { code } => {
                RecordWord::control_unchecked(dt, Opcode::Cmd, code & PAYLOAD_MAX)
            }
            BoardEvent::Lost { count } => {
                RecordWord::control_unchecked(dt, Opcode::Lost, count.min(PAYLOAD_MAX))
            }
        };
        Some((
            word,
            EventEncoder {
                last: t,
                hi: self.hi,
            },
        ))
    }

    /// The common cases of [`EventEncoder::encode`] without a word array:
    /// an event that needs no LINE_HI word, as `(TIME word if the gap is 64
    /// or more, the event's word, state after)`; `None` when it needs a
    /// LINE_HI word or the gap is too long, and then `encode` decides. The
    /// words are always those `encode` gives.
    #[inline]
    pub fn encode_short(
        &self,
        t: u64,
        event: BoardEvent,
    ) -> Option<(Option<RecordWord>, RecordWord, EventEncoder)> {
        let gap = t.checked_sub(self.last)?;
        if gap >= GAP_TOO_LONG {
            return None;
        }
        let time = (gap >= TIME_UNIT)
            .then(|| RecordWord::control_unchecked(0, Opcode::Time, (gap / TIME_UNIT) as u32));
        let probe = EventEncoder {
            last: t - gap % TIME_UNIT,
            hi: self.hi,
        };
        let (word, next) = probe.encode_single(t, event)?;
        Some((time, word, next))
    }

    /// The keeper (format.md §4.1): at a tick `t` with `t - last >=`
    /// [`KEEPER_GAP`], one filler TIME word (`dt = 0`, payload `2^21-1`) and
    /// the state after it (`last + KEEPER_GAP`, whatever `t` is). `None`
    /// while the gap is shorter. The board pushes at most one filler per
    /// fabric clock, at the clock's tick, before the clock's events
    /// (board.md 2.2); an encoder without a FIFO (a packet
    /// synthesizer) pushes fillers until this gives `None`, then encodes.
    #[inline]
    pub fn time_filler(&self, t: u64) -> Option<(RecordWord, EventEncoder)> {
        if t.saturating_sub(self.last) < KEEPER_GAP {
            return None;
        }
        Some((
            RecordWord::control_unchecked(0, Opcode::Time, PAYLOAD_MAX),
            EventEncoder {
                last: self.last + KEEPER_GAP,
                hi: self.hi,
            },
        ))
    }

    /// The first tick at which the keeper is due: `last + KEEPER_GAP`.
    #[inline]
    pub fn keeper_tick(&self) -> u64 {
        self.last.saturating_add(KEEPER_GAP)
    }

    /// Whether an event at `t` is too far from `last` to be encoded.
    #[inline]
    pub fn gap_too_long(&self, t: u64) -> bool {
        t.saturating_sub(self.last) >= GAP_TOO_LONG
    }
}

/// A reason a word could not be decoded; the decoder goes on after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CorruptWord {
    #[error("reserved opcode {op} in word {word:#010x} at tick {tick}")]
    ReservedOpcode { op: u8, word: u32, tick: u64 },
}

/// Decodes words of one packet into timed events (format.md §4).
#[derive(Debug, Clone)]
pub struct WordDecoder {
    time: u64,
    line_hi: u64,
}

impl WordDecoder {
    /// A decoder at the start of a packet with time origin `t0`.
    pub fn new(t0: u64) -> WordDecoder {
        WordDecoder {
            time: t0,
            line_hi: 0,
        }
    }

    /// Time of the last word decoded (or `t0`).
    pub fn time(&self) -> u64 {
        self.time
    }

    /// Current LINE_HI value.
    pub fn line_hi(&self) -> u64 {
        self.line_hi
    }

    /// Feeds one word; returns the event it records, if any.
    #[inline]
    pub fn feed(&mut self, w: RecordWord) -> Result<Option<TimedEvent>, CorruptWord> {
        self.time += u64::from(w.dt());
        if !w.is_control() {
            return Ok(Some(TimedEvent {
                tick: self.time,
                event: BoardEvent::Access {
                    line: (self.line_hi << 24) | u64::from(w.line_lo()),
                    write: w.is_write(),
                },
            }));
        }
        let payload = w.payload();
        let event = match w.opcode() {
            Opcode::Time => {
                self.time += u64::from(payload) * TIME_UNIT;
                return Ok(None);
            }
            Opcode::LineHi => {
                self.line_hi = u64::from(payload);
                return Ok(None);
            }
            Opcode::Pad => return Ok(None),
            Opcode::Tag => {
                let (event, write) = RecordWord::split_tag_payload(payload);
                BoardEvent::Tag { event, write }
            }
            Opcode::Cmd => BoardEvent::Cmd { code: payload },
            Opcode::Lost => BoardEvent::Lost { count: payload },
            Opcode::Reserved(op) => {
                return Err(CorruptWord::ReservedOpcode {
                    op,
                    word: w.0,
                    tick: self.time,
                })
            }
        };
        Ok(Some(TimedEvent {
            tick: self.time,
            event,
        }))
    }
}

#[cfg(test)]
mod tests;
