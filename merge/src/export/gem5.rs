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
        Ok(Gem5Writer {
            out,
            meta: meta.clone(),
            next_id: 0,
            buf,
        })
    }
}

impl<W: Write> RecordWriter for Gem5Writer<W> {
    fn write(&mut self, v: &VirtualRecord) -> Result<(), ExportError> {
        if !v.is_access() {
            return Ok(());
        }
        let packet = Packet {
            tick: self.meta.ps_since_start(v.tick),
            cmd: if v.is_write() {
                CMD_WRITE_REQ
            } else {
                CMD_READ_REQ
            },
            addr: v.pa(),
            size: LINE_BYTES,
            flags: None,
            pkt_id: Some(self.next_id),
            pc: None,
        };
        self.next_id += 1;
        self.buf.clear();
        packet
            .encode_length_delimited(&mut self.buf)
            .map_err(|e| ExportError::Invalid(e.to_string()))?;
        self.out.write_all(&self.buf)?;
        Ok(())
    }
    fn finish(mut self: Box<Self>) -> Result<(), ExportError> {
        Ok(self.out.flush()?)
    }
}
