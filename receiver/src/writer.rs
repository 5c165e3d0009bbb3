//! Writer threads: one per output directory. A writer appends the records
//! of the batches it finds queued for a port's current stripe file with
//! one gather write, keeps rejected datagrams in a separate file next to
//! it, preallocates stripe files, and on a write error (a full disk) cuts
//! the file back to its last whole record and stops writing that directory.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use hmtt_format::capture::{lock_while_writing, CaptureHeader, SourceKind, UNKNOWN_ID};
use hmtt_format::packet::Packet;

use crate::batch::{Batch, Pool, SlotKind};
use crate::stats::{DirSummary, Shared};

/// What a writer needs to know about each input.
#[derive(Debug, Clone)]
pub struct InputMeta {
    pub port: u8,
    pub kind: SourceKind,
    pub name: String,
}

/// Settings common to all writers.
#[derive(Debug, Clone)]
pub struct WriterSettings {
    pub name: String,
    pub stripe_bytes: u64,
    pub preallocate: bool,
    pub overwrite: bool,
    pub start_ns: u64,
}

/// Name of a port's stripe file (`reject`: its reject file).
pub fn file_name(name: &str, port: u8, stripe: u16, reject: bool) -> String {
    let kind = if reject { ".reject" } else { "" };
    format!(
        "{name}-p{port:02}-s{stripe:05}{kind}.{}",
        hmtt_format::capture::EXTENSION
    )
}

struct OpenCapture {
    file: File,
    path: PathBuf,
    stripe: u16,
    /// Bytes in the file (header included), all whole records.
    len: u64,
}

/// A file written by this writer.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    pub input: usize,
    pub path: PathBuf,
    pub reject: bool,
}

/// What a writer reports at the end.
pub struct WriterReport {
    pub dir: DirSummary,
    pub files: Vec<WrittenFile>,
}

pub struct Writer {
    index: usize,
    dir: PathBuf,
    settings: WriterSettings,
    inputs: Vec<InputMeta>,
    pools: Vec<Pool>,
    shared: Arc<Shared>,
    open: HashMap<(usize, bool), OpenCapture>,
    files: Vec<WrittenFile>,
    bytes_written: u64,
    error: Option<String>,
    can_preallocate: bool,
}

/// Batches taken from the queue at a time, at most. Only batches already
/// queued are taken (the writer never waits for more, so no record reaches
/// the page cache later), and a file's batches among them go out in one
/// gather write: fewer writes when the writer falls behind.
const GATHER_BATCHES: usize = 16;

fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || e.kind() == io::ErrorKind::StorageFull
}

impl Writer {
    pub fn new(
        index: usize,
        dir: PathBuf,
        settings: WriterSettings,
        inputs: Vec<InputMeta>,
        pools: Vec<Pool>,
        shared: Arc<Shared>,
    ) -> Writer {
        let can_preallocate = settings.preallocate;
        Writer {
            index,
            dir,
            settings,
            inputs,
            pools,
            shared,
            open: HashMap::new(),
            files: Vec::new(),
            bytes_written: 0,
            error: None,
            can_preallocate,
        }
    }

    /// Writes batches until every receive thread has hung up.
    pub fn run(mut self, rx: Receiver<Batch>) -> WriterReport {
        let mut taken: Vec<Batch> = Vec::with_capacity(GATHER_BATCHES);
        while let Ok(first) = rx.recv() {
            taken.push(first);
            while taken.len() < GATHER_BATCHES {
                match rx.try_recv() {
                    Ok(batch) => taken.push(batch),
                    Err(_) => break,
                }
            }
            self.write_taken(&taken);
            for mut batch in taken.drain(..) {
                batch.clear();
                let input = batch.input;
                self.pools[input].give(batch);
            }
        }
        self.close_all();
        WriterReport {
            dir: DirSummary {
                path: self.dir.clone(),
                bytes_written: self.bytes_written,
                files: self.files.len() as u64,
                failed: self.error.is_some(),
                error: self.error.clone(),
            },
            files: self.files,
        }
    }

    fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Writes batches taken together: each port's batches of one stripe,
    /// in the order they came, with one gather write per file.
    fn write_taken(&mut self, taken: &[Batch]) {
        let mut done = vec![false; taken.len()];
        for i in 0..taken.len() {
            if done[i] {
                continue;
            }
            let mut group: Vec<&Batch> = Vec::new();
            for j in i..taken.len() {
                if !done[j]
                    && taken[j].input == taken[i].input
                    && taken[j].stripe == taken[i].stripe
                {
                    done[j] = true;
                    group.push(&taken[j]);
                }
            }
            self.write_group(&group);
        }
    }

    /// Writes batches of one input and stripe.
    fn write_group(&mut self, group: &[&Batch]) {
        let shared = self.shared.clone();
        let counters = &shared.ports[group[0].input];
        let valid: u64 = group
            .iter()
            .map(|b| b.records(SlotKind::Valid).count() as u64)
            .sum();
        let rejects = group.iter().map(|b| b.len() as u64).sum::<u64>() - valid;
        if self.failed() {
            counters.unwritten_packets.fetch_add(valid, Relaxed);
            return;
        }
        if valid > 0 {
            let n = self.append(group, SlotKind::Valid);
            counters.written_packets.fetch_add(n, Relaxed);
            counters.unwritten_packets.fetch_add(valid - n, Relaxed);
        }
        if rejects > 0 && !self.failed() {
            let n = self.append(group, SlotKind::Reject);
            counters.written_rejects.fetch_add(n, Relaxed);
        }
    }

    /// Appends the group's records of one kind (it has some); returns how
    /// many are on disk.
    fn append(&mut self, group: &[&Batch], kind: SlotKind) -> u64 {
        let reject = kind == SlotKind::Reject;
        // A new file's header comes from the first batch with records of
        // this kind, as when each batch was written alone.
        let batch = *group
            .iter()
            .find(|b| b.records(kind).next().is_some())
            .expect("the group has records of this kind");
        let key = (batch.input, reject);
        if self
            .open
            .get(&key)
            .is_some_and(|f| f.stripe != batch.stripe)
        {
            if let Some(f) = self.open.remove(&key) {
                self.close(f);
            }
        }
        if !self.open.contains_key(&key) {
            match self.create(batch, reject) {
                Ok(f) => {
                    self.open.insert(key, f);
                }
                Err(e) => {
                    self.fail(format!(
                        "{}: cannot create a capture file: {e}",
                        self.dir.display()
                    ));
                    return 0;
                }
            }
        }
        let records: Vec<&[u8]> = group.iter().flat_map(|b| b.records(kind)).collect();
        let f = self.open.get_mut(&key).expect("opened above");
        match write_all_vectored(&mut f.file, &records) {
            Ok(n) => {
                f.len += n as u64;
                self.bytes_written += n as u64;
                records.len() as u64
            }
            Err((done, e)) => {
                // Keep the file readable: cut it back to its last whole record.
                let mut whole = 0usize;
                let mut count = 0u64;
                for r in &records {
                    if whole + r.len() > done {
                        break;
                    }
                    whole += r.len();
                    count += 1;
                }
                f.len += whole as u64;
                self.bytes_written += whole as u64;
                let _ = f.file.set_len(f.len);
                let what = if is_full(&e) {
                    "output disk full"
                } else {
                    "write error"
                };
                let msg = format!(
                    "{}: {what} ({e}) after {} bytes; {} kept up to its last whole record ({} bytes); no more writes to this directory",
                    self.dir.display(),
                    self.bytes_written,
                    f.path.display(),
                    f.len
                );
                self.fail(msg);
                count
            }
        }
    }

    fn fail(&mut self, msg: String) {
        self.shared.dir_failed[self.index].store(true, Relaxed);
        self.shared.error(msg.clone());
        self.error = Some(msg);
        if self.shared.dir_failed.iter().all(|f| f.load(Relaxed)) {
            self.shared.request_stop("every output directory failed");
        }
    }

    fn create(&mut self, batch: &Batch, reject: bool) -> io::Result<OpenCapture> {
        let meta = &self.inputs[batch.input];
        let path = self.dir.join(file_name(
            &self.settings.name,
            meta.port,
            batch.stripe,
            reject,
        ));
        let mut opts = OpenOptions::new();
        opts.write(true);
        if self.settings.overwrite {
            opts.create(true).truncate(true);
        } else {
            opts.create_new(true);
        }
        let mut file = opts
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        // Board and geometry come from the first valid trace packet of the
        // file (a statistics packet's header has another layout).
        let first = (0..batch.len())
            .filter(|&i| {
                batch.kind(i) == SlotKind::Valid
                    && !hmtt_format::stats::is_stats_packet(batch.packet(i))
            })
            .map(|i| Packet::new_unchecked(batch.packet(i)))
            .next();
        let header = CaptureHeader {
            board: first.as_ref().map_or(UNKNOWN_ID, |p| p.board()),
            port: meta.port,
            stripe: batch.stripe,
            start_ns: self.settings.start_ns,
            geometry: first.as_ref().and_then(|p| p.geometry().ok()),
            source_kind: meta.kind,
            tick_ps: first.as_ref().map_or(0, |p| p.tick_ps()),
            source_name: meta.name.clone(),
        };
        if let Err(e) = lock_while_writing(&file) {
            tracing::debug!("{}: not locked while written ({e})", path.display());
        }
        if self.can_preallocate && !reject {
            self.preallocate(&file, &path);
        }
        self.files.push(WrittenFile {
            input: batch.input,
            path: path.clone(),
            reject,
        });
        let h = header.emit();
        if let Err(e) = file.write_all(&h) {
            let _ = file.set_len(0);
            return Err(e);
        }
        self.bytes_written += h.len() as u64;
        Ok(OpenCapture {
            file,
            path,
            stripe: batch.stripe,
            len: h.len() as u64,
        })
    }

    fn preallocate(&mut self, file: &File, path: &Path) {
        let len = self.settings.stripe_bytes.min(i64::MAX as u64 / 2) as i64
            + hmtt_format::capture::KILLED_PREALLOCATION_MIN as i64;
        // SAFETY: fallocate on an open descriptor; KEEP_SIZE leaves the file
        // length alone so a crash never exposes unwritten space.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
            ) {
                tracing::info!(
                    "{}: no preallocation on this filesystem",
                    self.dir.display()
                );
                self.can_preallocate = false;
            } else {
                tracing::warn!(
                    "{}: preallocation failed ({e}); writing without",
                    path.display()
                );
            }
        }
    }

    fn close(&mut self, f: OpenCapture) {
        // Give back preallocated space past the end.
        if let Err(e) = f.file.set_len(f.len) {
            tracing::warn!("{}: {e}", f.path.display());
        }
    }

    fn close_all(&mut self) {
        let open: Vec<_> = self.open.drain().map(|(_, f)| f).collect();
        for f in open {
            self.close(f);
        }
    }
}

/// Writes all of `records` with gather writes. On error returns how many
/// bytes were written before it.
fn write_all_vectored(file: &mut File, records: &[&[u8]]) -> Result<usize, (usize, io::Error)> {
    let mut done = 0usize;
    let total: usize = records.iter().map(|r| r.len()).sum();
    let mut slices: Vec<IoSlice<'_>> = records.iter().map(|r| IoSlice::new(r)).collect();
    let mut rest: &mut [IoSlice<'_>] = &mut slices;
    while done < total {
        // writev takes at most IOV_MAX (1024) slices per call.
        let n = rest.len().min(1024);
        match file.write_vectored(&rest[..n]) {
            Ok(0) => {
                return Err((
                    done,
                    io::Error::new(io::ErrorKind::WriteZero, "write returned 0"),
                ))
            }
            Ok(k) => {
                done += k;
                IoSlice::advance_slices(&mut rest, k);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((done, e)),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;
    use hmtt_format::packet::{PacketHeader, FLAG_TRACING};
    use hmtt_format::record::RecordWord;
    use std::sync::atomic::AtomicBool;

    fn packet(port: u8, seq: u32) -> Vec<u8> {
        let words: Vec<RecordWord> = (0..8)
            .map(|i| RecordWord::access_unchecked(i, false, u64::from(seq) * 64 + u64::from(i)))
            .collect();
        PacketHeader {
            flags: FLAG_TRACING,
            board: 3,
            port,
            seq: seq.into(),
            t0: u64::from(seq) * 1000,
            nwords: words.len() as u16,
            geometry: Geometry::ddr3_default(),
            tick_ps: 1250,
        }
        .build(&words)
    }

    /// Batches queued before the writer runs are taken together: each
    /// file must still get its own records, in the order received, and a
    /// stripe change must still start a new file.
    #[test]
    fn batches_taken_together_keep_each_files_records_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let pools: Vec<Pool> = (0..2).map(|i| Pool::new(8, 4, 9000, i, i as u8)).collect();
        let metas: Vec<InputMeta> = (0..2)
            .map(|i| InputMeta {
                port: i as u8,
                kind: SourceKind::Udp,
                name: format!("in{i}"),
            })
            .collect();
        let shared = Arc::new(Shared::new(2, 1, Arc::new(AtomicBool::new(false)), None));
        let settings = WriterSettings {
            name: "t".into(),
            stripe_bytes: 1 << 20,
            preallocate: false,
            overwrite: false,
            start_ns: 0,
        };
        let writer = Writer::new(
            0,
            dir.path().to_path_buf(),
            settings,
            metas,
            pools.clone(),
            shared.clone(),
        );
        let (tx, rx) = crossbeam_channel::unbounded();
        // (input, stripe) of each batch, interleaved as receive threads send them.
        let order = [(0, 0), (1, 0), (0, 0), (0, 1), (1, 0), (0, 1)];
        let mut expected: HashMap<(usize, u16), Vec<u8>> = HashMap::new();
        let mut seq = 0u32;
        for &(input, stripe) in &order {
            let mut batch = pools[input].take();
            batch.stripe = stripe;
            for _ in 0..3 {
                let p = packet(input as u8, seq);
                seq += 1;
                batch.payload_area(batch.len())[..p.len()].copy_from_slice(&p);
                batch.commit(p.len(), u64::from(seq), 0, SlotKind::Valid);
                let i = batch.len() - 1;
                expected
                    .entry((input, stripe))
                    .or_default()
                    .extend_from_slice(batch.record(i));
            }
            tx.send(batch).unwrap();
        }
        drop(tx);
        let report = writer.run(rx);
        assert!(!report.dir.failed);
        assert_eq!(report.files.len(), 3);
        for ((input, stripe), records) in &expected {
            let path = dir
                .path()
                .join(file_name("t", *input as u8, *stripe, false));
            let bytes = std::fs::read(&path).unwrap();
            let records_start = hmtt_format::capture::HEADER_LEN;
            assert_eq!(&bytes[records_start..], &records[..], "{}", path.display());
        }
        let written: u64 = shared
            .ports
            .iter()
            .map(|p| p.written_packets.load(Relaxed))
            .sum();
        assert_eq!(written, 18);
    }
}
