//! Receive buffers. A batch holds up to a fixed number of records and goes
//! from a receive thread to a writer, which writes its records with one
//! gather write. A *slot* batch is one allocation of fixed slots, each a
//! capture record header followed by the datagram, so a datagram received
//! by the socket path lies where the kernel put it. A *ring* batch holds
//! the record headers only: its datagrams stay in the AF_PACKET ring's
//! blocks, which the batch keeps from the kernel until it is written.

use std::io::IoSlice;
use std::ops::Range;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use hmtt_format::capture::{emit_record_header, RECORD_HEADER_LEN};

use crate::ring::BlockLease;

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// A packet that passed `Packet::new_checked`.
    Valid,
    /// A datagram that did not parse: goes to the reject file.
    Reject,
}

/// The records of a ring batch: their headers here, their datagrams in
/// ring blocks that `blocks` keeps from the kernel.
#[derive(Default)]
struct InRing {
    headers: Vec<[u8; RECORD_HEADER_LEN]>,
    /// Where each record's datagram starts (its length is in `lens`).
    payloads: Vec<*const u8>,
    blocks: Vec<Arc<BlockLease>>,
}

/// One filled buffer on its way from a receive thread to a writer.
pub struct Batch {
    buf: Box<[u8]>,
    stride: usize,
    cap: usize,
    lens: Vec<u32>,
    kinds: Vec<SlotKind>,
    used: usize,
    in_ring: Option<InRing>,
    /// Port id of the records.
    pub port: u8,
    /// Index of the input that owns this batch (its pool).
    pub input: usize,
    /// Stripe the records belong to and the directory it lives in.
    pub stripe: u16,
    pub dir: usize,
    /// Receive time of the first record (for flushing part-filled batches).
    pub first_ns: u64,
}

// SAFETY: the only non-Send fields are the ring batch's payload pointers,
// which point into ring blocks that the batch's leases keep mapped and out
// of the kernel's hands (see `BlockLease`); nothing else aliases them.
unsafe impl Send for Batch {}

impl Batch {
    /// A slot batch of `slots` slots holding datagrams of up to `cap` bytes.
    pub fn new(slots: usize, cap: usize, input: usize, port: u8) -> Batch {
        let stride = (RECORD_HEADER_LEN + cap).next_multiple_of(8);
        Batch {
            buf: vec![0u8; stride * slots].into_boxed_slice(),
            stride,
            cap,
            lens: vec![0; slots],
            kinds: vec![SlotKind::Reject; slots],
            used: 0,
            in_ring: None,
            port,
            input,
            stripe: 0,
            dir: 0,
            first_ns: 0,
        }
    }

    /// A ring batch of up to `slots` records of up to `cap` bytes each.
    pub fn new_in_ring(slots: usize, cap: usize, input: usize, port: u8) -> Batch {
        Batch {
            buf: Box::default(),
            stride: 0,
            cap,
            lens: vec![0; slots],
            kinds: vec![SlotKind::Reject; slots],
            used: 0,
            in_ring: Some(InRing {
                headers: Vec::with_capacity(slots),
                payloads: Vec::with_capacity(slots),
                blocks: Vec::with_capacity(2),
            }),
            port,
            input,
            stripe: 0,
            dir: 0,
            first_ns: 0,
        }
    }

    pub fn slots(&self) -> usize {
        self.lens.len()
    }
    pub fn len(&self) -> usize {
        self.used
    }
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }
    pub fn is_full(&self) -> bool {
        self.used == self.slots()
    }
    /// Payload capacity of a slot.
    pub fn capacity(&self) -> usize {
        self.cap
    }
    /// Empties the batch; a ring batch gives its blocks back to the kernel
    /// (once no other batch holds them).
    pub fn clear(&mut self) {
        self.used = 0;
        if let Some(r) = &mut self.in_ring {
            r.headers.clear();
            r.payloads.clear();
            r.blocks.clear();
        }
    }

    /// The payload area of slot `i` of a slot batch (for the kernel or a
    /// copy to fill).
    pub fn payload_area(&mut self, i: usize) -> &mut [u8] {
        debug_assert!(self.in_ring.is_none());
        let off = i * self.stride + RECORD_HEADER_LEN;
        &mut self.buf[off..off + self.cap]
    }

    /// Raw pointer to the payload area of slot `i`, for recvmmsg's iovecs.
    pub fn payload_ptr(&mut self, i: usize) -> *mut u8 {
        self.payload_area(i).as_mut_ptr()
    }

    /// Marks the next slot of a slot batch as holding `len` payload bytes
    /// received at `recv_ns`, writes its record header and returns the
    /// payload.
    pub fn commit(&mut self, len: usize, recv_ns: u64, flags: u32, kind: SlotKind) -> &[u8] {
        let i = self.used;
        debug_assert!(len <= self.cap && self.in_ring.is_none());
        if i == 0 {
            self.first_ns = recv_ns;
        }
        let off = i * self.stride;
        self.buf[off..off + RECORD_HEADER_LEN]
            .copy_from_slice(&emit_record_header(recv_ns, len as u32, flags));
        self.lens[i] = len as u32;
        self.kinds[i] = kind;
        self.used += 1;
        &self.buf[off + RECORD_HEADER_LEN..off + RECORD_HEADER_LEN + len]
    }

    /// Adds to a ring batch a record of the bytes `range` of the ring block
    /// `block` (at most [`Batch::capacity`] of them), received at `recv_ns`;
    /// returns them. The batch keeps the block until it is cleared.
    pub fn commit_in_ring(
        &mut self,
        block: &Arc<BlockLease>,
        range: Range<usize>,
        recv_ns: u64,
        flags: u32,
        kind: SlotKind,
    ) -> &[u8] {
        let i = self.used;
        let r = self.in_ring.as_mut().expect("a ring batch");
        let bytes = block.bytes(range);
        debug_assert!(bytes.len() <= self.cap);
        if i == 0 {
            self.first_ns = recv_ns;
        }
        if !r.blocks.last().is_some_and(|b| Arc::ptr_eq(b, block)) {
            r.blocks.push(block.clone());
        }
        r.headers
            .push(emit_record_header(recv_ns, bytes.len() as u32, flags));
        r.payloads.push(bytes.as_ptr());
        self.lens[i] = bytes.len() as u32;
        self.kinds[i] = kind;
        self.used += 1;
        self.packet(i)
    }

    /// Changes the kind of the last committed slot.
    pub fn set_last_kind(&mut self, kind: SlotKind) {
        if self.used > 0 {
            self.kinds[self.used - 1] = kind;
        }
    }

    /// The packet of record `i`.
    pub fn packet(&self, i: usize) -> &[u8] {
        let len = self.lens[i] as usize;
        match &self.in_ring {
            // SAFETY: the datagram lies in a block that `blocks` keeps
            // mapped and ours; `commit_in_ring` took it from the block.
            Some(r) => unsafe { std::slice::from_raw_parts(r.payloads[i], len) },
            None => {
                let off = i * self.stride + RECORD_HEADER_LEN;
                &self.buf[off..off + len]
            }
        }
    }

    /// The record header of record `i`.
    fn header(&self, i: usize) -> &[u8] {
        match &self.in_ring {
            Some(r) => &r.headers[i],
            None => {
                let off = i * self.stride;
                &self.buf[off..off + RECORD_HEADER_LEN]
            }
        }
    }

    /// Receive time of record `i`.
    pub fn recv_ns(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.header(i)[..8].try_into().expect("8 bytes"))
    }

    /// Bytes of record `i` (its header and packet).
    pub fn record_len(&self, i: usize) -> usize {
        RECORD_HEADER_LEN + self.lens[i] as usize
    }

    pub fn kind(&self, i: usize) -> SlotKind {
        self.kinds[i]
    }

    /// Indices of the records of one kind, in order.
    pub fn indices(&self, kind: SlotKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.used).filter(move |&i| self.kinds[i] == kind)
    }

    /// Record `i` as the slices a gather write takes: one for a slot
    /// batch, its header and its packet for a ring batch.
    pub fn push_io_slices<'a>(&'a self, i: usize, out: &mut Vec<IoSlice<'a>>) {
        match &self.in_ring {
            Some(r) => {
                out.push(IoSlice::new(&r.headers[i]));
                out.push(IoSlice::new(self.packet(i)));
            }
            None => {
                let off = i * self.stride;
                out.push(IoSlice::new(&self.buf[off..off + self.record_len(i)]));
            }
        }
    }

    /// Bytes of records of one kind.
    pub fn bytes(&self, kind: SlotKind) -> u64 {
        self.indices(kind).map(|i| self.record_len(i) as u64).sum()
    }
}

/// Free batches of one input; writers give them back after writing.
#[derive(Clone)]
pub struct Pool {
    pub free_tx: Sender<Batch>,
    pub free_rx: Receiver<Batch>,
}

impl Pool {
    /// `count` slot batches.
    pub fn new(count: usize, slots: usize, cap: usize, input: usize, port: u8) -> Pool {
        Pool::of(count, || Batch::new(slots, cap, input, port))
    }

    /// `count` ring batches.
    pub fn new_in_ring(count: usize, slots: usize, cap: usize, input: usize, port: u8) -> Pool {
        Pool::of(count, || Batch::new_in_ring(slots, cap, input, port))
    }

    fn of(count: usize, make: impl Fn() -> Batch) -> Pool {
        let (free_tx, free_rx) = crossbeam_channel::bounded(count);
        for _ in 0..count {
            free_tx.send(make()).expect("pool has room");
        }
        Pool { free_tx, free_rx }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::capture::{CaptureHeader, CaptureReader, SourceKind};

    fn file_of(b: &Batch, kind: SlotKind) -> Vec<u8> {
        let header = CaptureHeader {
            board: 0,
            port: 3,
            stripe: 0,
            start_ns: 0,
            geometry: None,
            source_kind: SourceKind::Udp,
            tick_ps: 0,
            source_name: String::new(),
        };
        let mut file = header.emit().to_vec();
        let mut slices = Vec::new();
        for i in b.indices(kind) {
            b.push_io_slices(i, &mut slices);
        }
        for s in &slices {
            file.extend_from_slice(s);
        }
        file
    }

    #[test]
    fn records_are_contiguous_and_readable() {
        let mut b = Batch::new(4, 100, 0, 3);
        b.payload_area(0)[..8].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        b.commit(8, 11, 0, SlotKind::Valid);
        b.payload_area(1)[..3].copy_from_slice(&[9, 9, 9]);
        b.commit(3, 12, 0, SlotKind::Reject);
        b.payload_area(2)[..4].copy_from_slice(&[7, 7, 7, 7]);
        b.commit(4, 13, 1, SlotKind::Valid);
        assert_eq!(b.len(), 3);
        let file = file_of(&b, SlotKind::Valid);
        let (_, rd) = CaptureReader::new(&file).unwrap();
        let got: Vec<_> = rd
            .map(|r| (r.recv_ns, r.flags, r.packet.to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![
                (11, 0, vec![1, 2, 3, 4, 5, 6, 7, 8]),
                (13, 1, vec![7, 7, 7, 7])
            ]
        );
        assert_eq!(b.bytes(SlotKind::Reject), 16 + 3);
        assert_eq!(b.packet(1), &[9, 9, 9]);
        assert_eq!(b.recv_ns(2), 13);
    }
}
