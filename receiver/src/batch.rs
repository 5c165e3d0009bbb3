//! Receive buffers. A batch is one allocation of fixed slots; each slot holds
//! a capture record header followed by the datagram, so a received packet is
//! written to disk straight from where the kernel put it (one gather write per
//! batch, no copy in user space).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use hmtt_format::capture::{emit_record_header, RECORD_HEADER_LEN};

/// What a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// A packet that passed `Packet::new_checked`.
    Valid,
    /// A datagram that did not parse: goes to the reject file.
    Reject,
}

/// One filled buffer on its way from a receive thread to a writer.
pub struct Batch {
    buf: Box<[u8]>,
    stride: usize,
    cap: usize,
    lens: Vec<u32>,
    kinds: Vec<SlotKind>,
    used: usize,
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

impl Batch {
    /// A batch of `slots` slots holding datagrams of up to `cap` bytes.
    pub fn new(slots: usize, cap: usize, input: usize, port: u8) -> Batch {
        let stride = (RECORD_HEADER_LEN + cap).next_multiple_of(8);
        Batch {
            buf: vec![0u8; stride * slots].into_boxed_slice(),
            stride,
            cap,
            lens: vec![0; slots],
            kinds: vec![SlotKind::Reject; slots],
            used: 0,
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
    pub fn clear(&mut self) {
        self.used = 0;
    }

    /// The payload area of slot `i` (for the kernel or a copy to fill).
    pub fn payload_area(&mut self, i: usize) -> &mut [u8] {
        let off = i * self.stride + RECORD_HEADER_LEN;
        &mut self.buf[off..off + self.cap]
    }

    /// Raw pointer to the payload area of slot `i`, for recvmmsg's iovecs.
    pub fn payload_ptr(&mut self, i: usize) -> *mut u8 {
        self.payload_area(i).as_mut_ptr()
    }

    /// Marks the next slot as holding `len` payload bytes received at
    /// `recv_ns`, writes its record header and returns the payload.
    pub fn commit(&mut self, len: usize, recv_ns: u64, flags: u32, kind: SlotKind) -> &[u8] {
        let i = self.used;
        debug_assert!(len <= self.cap);
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

    /// Changes the kind of the last committed slot.
    pub fn set_last_kind(&mut self, kind: SlotKind) {
        if self.used > 0 {
            self.kinds[self.used - 1] = kind;
        }
    }

    /// Whole records (record header + packet) of slot `i`.
    pub fn record(&self, i: usize) -> &[u8] {
        let off = i * self.stride;
        &self.buf[off..off + RECORD_HEADER_LEN + self.lens[i] as usize]
    }
    /// The packet of slot `i`.
    pub fn packet(&self, i: usize) -> &[u8] {
        &self.record(i)[RECORD_HEADER_LEN..]
    }
    pub fn kind(&self, i: usize) -> SlotKind {
        self.kinds[i]
    }

    /// Records of one kind, in order.
    pub fn records(&self, kind: SlotKind) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.used)
            .filter(move |&i| self.kinds[i] == kind)
            .map(move |i| self.record(i))
    }

    /// Bytes of records of one kind.
    pub fn bytes(&self, kind: SlotKind) -> u64 {
        self.records(kind).map(|r| r.len() as u64).sum()
    }
}

/// Free batches of one input; writers give them back after writing. The
/// batch given back last is taken first: it was just read by a writer, so
/// its lines and pages are still in the caches and TLBs, where a queue
/// would cycle through every batch of the pool (tens of MiB at 9 KiB a
/// slot) and each copy into a slot would start with misses.
#[derive(Clone)]
pub struct Pool {
    shared: Arc<(Mutex<FreeList>, Condvar)>,
}

struct FreeList {
    batches: Vec<Batch>,
    /// Takers waiting for a batch.
    waiting: usize,
}

impl Pool {
    pub fn new(count: usize, slots: usize, cap: usize, input: usize, port: u8) -> Pool {
        let batches = (0..count)
            .map(|_| Batch::new(slots, cap, input, port))
            .collect();
        Pool {
            shared: Arc::new((
                Mutex::new(FreeList {
                    batches,
                    waiting: 0,
                }),
                Condvar::new(),
            )),
        }
    }

    fn free_list(&self) -> MutexGuard<'_, FreeList> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives a written batch back; wakes a taker only if one waits.
    pub fn give(&self, batch: Batch) {
        let mut free = self.free_list();
        free.batches.push(batch);
        if free.waiting > 0 {
            drop(free);
            self.shared.1.notify_one();
        }
    }

    /// The batch given back last; waits for a writer while none is free.
    pub fn take(&self) -> Batch {
        let mut free = self.free_list();
        loop {
            if let Some(batch) = free.batches.pop() {
                return batch;
            }
            free.waiting += 1;
            free = self.shared.1.wait(free).unwrap_or_else(|e| e.into_inner());
            free.waiting -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::capture::{CaptureHeader, CaptureReader, SourceKind};

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
        for r in b.records(SlotKind::Valid) {
            file.extend_from_slice(r);
        }
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
    }

    #[test]
    fn the_pool_hands_out_the_batch_given_back_last_and_waits_when_empty() {
        let pool = Pool::new(2, 1, 8, 0, 0);
        let mut a = pool.take();
        let mut b = pool.take();
        a.first_ns = 1;
        b.first_ns = 2;
        pool.give(a);
        pool.give(b);
        assert_eq!(pool.take().first_ns, 2);
        let a = pool.take();
        assert_eq!(a.first_ns, 1);
        // Empty: a taker waits until a writer gives one back.
        let giver = pool.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            giver.give(a);
        });
        assert_eq!(pool.take().first_ns, 1);
        t.join().unwrap();
    }
}
