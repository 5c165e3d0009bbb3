//! gem5's packet trace (the format of its `src/proto/packet.proto`, read
//! by the trace-driven traffic generator): the four bytes `gem5` (the magic
//! number 0x356d6567, little-endian), then a `PacketHeader` message, then
//! one `Packet` message per memory reference, each message preceded by its
//! length as a varint. The messages below are this project's own
//! declaration of the same fields.
//!
//! `tick_freq` is 10^12 (one gem5 tick per picosecond, gem5's default);
//! a packet's `tick` is the picoseconds since the trace's first record,
//! `cmd` is gem5's `MemCmd` (1 = ReadReq, 4 = WriteReq), `addr` the physical
//! byte address, `size` the 64-byte line, `pkt_id` the reference's number
//! from 0. Only references are written.

use std::io::Write;

use hmtt_format::trace::{RecordKind, TraceRecord};
use hmtt_format::vtrace::VirtualRecord;
use prost::Message;

use super::{ExportError, RecordWriter, TraceMeta};

/// The stream's first four bytes.
pub const MAGIC: [u8; 4] = *b"gem5";
/// gem5 ticks per second written in the header.
pub const TICK_FREQ: u64 = 1_000_000_000_000;
/// `MemCmd::ReadReq`.
pub const CMD_READ_REQ: u32 = 1;
/// `MemCmd::WriteReq`.
pub const CMD_WRITE_REQ: u32 = 4;
/// Bytes of one reference (a cache line).
pub const LINE_BYTES: u32 = 64;

#[derive(Clone, PartialEq, Message)]
pub struct PacketHeader {
    #[prost(string, required, tag = "1")]
    pub obj_id: String,
    #[prost(uint32, optional, tag = "2")]
    pub ver: Option<u32>,
    #[prost(uint64, required, tag = "3")]
    pub tick_freq: u64,
    #[prost(message, repeated, tag = "4")]
    pub id_strings: Vec<IdStringEntry>,
}

#[derive(Clone, PartialEq, Message)]
pub struct IdStringEntry {
    #[prost(uint32, optional, tag = "1")]
    pub key: Option<u32>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Packet {
    #[prost(uint64, required, tag = "1")]
    pub tick: u64,
    #[prost(uint32, required, tag = "2")]
    pub cmd: u32,
    #[prost(uint64, required, tag = "3")]
    pub addr: u64,
    #[prost(uint32, required, tag = "4")]
    pub size: u32,
    #[prost(uint32, optional, tag = "5")]
    pub flags: Option<u32>,
    #[prost(uint64, optional, tag = "6")]
    pub pkt_id: Option<u64>,
    #[prost(uint64, optional, tag = "7")]
    pub pc: Option<u64>,
}

/// Bytes of packets gathered before one write to the output.
const CHUNK: usize = 1 << 16;

/// `n` as a protobuf varint at `buf[at..]`; the position after it.
#[inline]
fn put_varint(buf: &mut [u8], mut at: usize, mut n: u64) -> usize {
    while n >= 0x80 {
        buf[at] = n as u8 | 0x80;
        n >>= 7;
        at += 1;
    }
    buf[at] = n as u8;
    at + 1
}

/// Appends a reference's [`Packet`] with its length varint: the bytes
/// `prost` writes for it (its fields in tag order, each a key byte and a
/// varint; the required ones always, the absent optional ones not).
#[inline]
fn push_packet(out: &mut Vec<u8>, tick: u64, cmd: u32, addr: u64, pkt_id: u64) {
    // Five keys and five varints of at most 10 bytes: under 128 bytes, so
    // the length is one varint byte.
    let start = out.len();
    let buf = super::text::room::<64>(out);
    let mut at = 1;
    for (key, value) in [
        (0x08, tick),
        (0x10, u64::from(cmd)),
        (0x18, addr),
        (0x20, u64::from(LINE_BYTES)),
        (0x30, pkt_id),
    ] {
        buf[at] = key;
        at = put_varint(buf, at + 1, value);
    }
    buf[0] = (at - 1) as u8;
    out.truncate(start + at);
}

pub struct Gem5Writer<W: Write> {
    out: W,
    meta: TraceMeta,
    next_id: u64,
    buf: Vec<u8>,
}

impl<W: Write> Gem5Writer<W> {
    pub fn new(mut out: W, meta: &TraceMeta) -> Result<Self, ExportError> {
        out.write_all(&MAGIC)?;
        let header = PacketHeader {
            obj_id: "hmtt".into(),
            ver: None,
            tick_freq: TICK_FREQ,
            id_strings: Vec::new(),
        };
        let mut buf = Vec::with_capacity(64);
        header
            .encode_length_delimited(&mut buf)
            .map_err(|e| ExportError::Invalid(e.to_string()))?;
        out.write_all(&buf)?;
        buf.reserve(CHUNK + 128);
        Ok(Gem5Writer {
            out,
            meta: meta.clone(),
            next_id: 0,
            buf,
        })
    }
}

impl<W: Write> Gem5Writer<W> {
    #[inline]
    fn push(&mut self, tick: u64, write: bool, pa: u64) {
        let cmd = if write { CMD_WRITE_REQ } else { CMD_READ_REQ };
        let ps = self.meta.ps_since_start(tick);
        push_packet(&mut self.buf, ps, cmd, pa, self.next_id);
        self.next_id += 1;
    }
}

impl<W: Write> RecordWriter for Gem5Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        self.buf.clear();
        self.push(v.tick, v.is_write(), v.pa());
        Ok(self.out.write_all(&self.buf)?)
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        self.buf.clear();
        for r in records.iter().filter(|r| r.is_access()) {
            self.push(r.tick, r.kind() == RecordKind::Write, r.pa());
            if self.buf.len() >= CHUNK {
                self.out.write_all(&self.buf)?;
                self.buf.clear();
            }
        }
        Ok(self.out.write_all(&self.buf)?)
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_the_bytes_prost_writes() {
        for (tick, cmd, addr, id) in [
            (0, CMD_READ_REQ, 0, 0),
            (1, CMD_WRITE_REQ, 64, 1),
            (127, CMD_READ_REQ, 0x7f_ffc0, 128),
            (u64::MAX, CMD_WRITE_REQ, u64::MAX, u64::MAX),
            (1 << 35, CMD_READ_REQ, 0x3fff_ffff_ffc0, 300),
        ] {
            let mut fast = Vec::new();
            push_packet(&mut fast, tick, cmd, addr, id);
            let packet = Packet {
                tick,
                cmd,
                addr,
                size: LINE_BYTES,
                flags: None,
                pkt_id: Some(id),
                pc: None,
            };
            assert_eq!(fast, packet.encode_length_delimited_to_vec());
        }
    }
}
