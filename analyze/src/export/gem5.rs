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

use hmtt_format::text::Lines;
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

/// `n` as a protobuf varint at `buf[at..]`; the position after it. A
/// loop: a trace's varints keep their length from packet to packet, so
/// its exit is predicted (spreading the 7-bit groups by masks and shifts
/// without a loop measured no faster).
#[inline(always)]
fn put_varint(buf: &mut [u8], mut at: usize, mut n: u64) -> usize {
    while n >= 0x80 {
        buf[at] = n as u8 | 0x80;
        n >>= 7;
        at += 1;
    }
    buf[at] = n as u8;
    at + 1
}

/// Bytes a packet is written into: under 128, with 8 past the last
/// varint.
const PACKET_CELL: usize = 64;

/// Writes a reference's [`Packet`] with its length varint at the start of
/// `buf`, returning its length: the bytes
/// `prost` writes for it (its fields in tag order, each a key byte and a
/// varint; the required ones always, the absent optional ones not).
#[inline(always)]
fn put_packet(
    buf: &mut [u8; PACKET_CELL],
    tick: u64,
    write: bool,
    addr: u64,
    pkt_id: u64,
) -> usize {
    // Five keys and five varints of at most 10 bytes: under 128 bytes, so
    // the length is one varint byte. `cmd` and `size` are one byte each.
    const _: () = assert!(CMD_WRITE_REQ < 0x80 && CMD_READ_REQ < 0x80 && LINE_BYTES < 0x80);
    buf[1] = 0x08;
    let cmd = if write { CMD_WRITE_REQ } else { CMD_READ_REQ };
    let mut at = put_varint(buf, 2, tick);
    buf[at..at + 3].copy_from_slice(&[0x10, cmd as u8, 0x18]);
    at = put_varint(buf, at + 3, addr);
    buf[at..at + 3].copy_from_slice(&[0x20, LINE_BYTES as u8, 0x30]);
    at = put_varint(buf, at + 3, pkt_id);
    buf[0] = (at - 1) as u8;
    at
}

pub struct Gem5Writer<W: Write> {
    out: W,
    meta: TraceMeta,
    next_id: u64,
    packets: Lines,
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
        Ok(Gem5Writer {
            out,
            meta: meta.clone(),
            next_id: 0,
            packets: Lines::new(CHUNK, PACKET_CELL),
        })
    }
}

impl<W: Write> Gem5Writer<W> {
    #[inline]
    fn push(&mut self, tick: u64, write: bool, pa: u64) {
        let ps = self.meta.ps_since_start(tick);
        let len = put_packet(self.packets.cell(), ps, write, pa, self.next_id);
        self.packets.advance(len);
        self.next_id += 1;
    }
}

impl<W: Write> RecordWriter for Gem5Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        self.push(v.tick, v.is_write(), v.pa());
        Ok(self.out.write_all(self.packets.take())?)
    }
    fn write_block(&mut self, records: &[TraceRecord]) -> Result<(), ExportError> {
        for r in records.iter().filter(|r| r.is_access()) {
            self.push(r.tick, r.kind() == RecordKind::Write, r.pa());
            if self.packets.is_full() {
                self.out.write_all(self.packets.take())?;
            }
        }
        Ok(self.out.write_all(self.packets.take())?)
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
            (128, CMD_READ_REQ, (1 << 56) - 1, 1 << 56),
            ((1 << 14) - 1, CMD_WRITE_REQ, 1 << 14, (1 << 49) - 1),
            ((1 << 63) + 5, CMD_READ_REQ, 1 << 62, 1 << 42),
        ]
        .into_iter()
        .chain((0..64).map(|shift| (1 << shift, CMD_READ_REQ, (1 << shift) - 1, 0)))
        {
            let mut cell = [0; PACKET_CELL];
            let len = put_packet(&mut cell, tick, cmd == CMD_WRITE_REQ, addr, id);
            let fast = cell[..len].to_vec();
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
