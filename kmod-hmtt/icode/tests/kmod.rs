//! The kernel module, end to end: it builds against Debian's
//! linux-headers-amd64, and under QEMU (software emulation) with
//! `memmap=8M$0x10000000` it loads, maps exactly the reserved range, refuses
//! bad requests, logs page tables and DMA, and unloads cleanly
//! (kmod-hmtt/test/guest/init prints the in-guest verdicts). The host then
//! parses the drained log with hmtt_format::klog and reads guest physical
//! memory (QEMU's RAM file) to check what landed where.
//!
//! Needs make, gcc, linux-headers-amd64, qemu-system-x86, busybox-static,
//! cpio and the kernel image from kmod-hmtt/scripts/fetch-kernel.sh.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use hmtt_format::config::log_tag_event;
use hmtt_format::klog::{self, Event, Kind};

const CFG_BASE: u64 = 0x1000_0000;
const CFG_SIZE: u64 = 0x80_0000;
const PATTERN_MAGIC: u64 = 0x484d_5454_0000_0000;

fn kmod_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn kernel_version() -> String {
    run(
        &mut Command::new(kmod_dir().join("scripts/kernel-version.sh")),
        "kernel-version.sh (is linux-headers-amd64 installed?)",
    )
    .trim()
    .to_string()
}

/// hmtt.ko, hmtt_dmatest.ko and the guest program, built once per run.
fn built() -> &'static Path {
    static BUILD: OnceLock<PathBuf> = OnceLock::new();
    BUILD.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kmod-build");
        run(
            Command::new(kmod_dir().join("scripts/build.sh"))
                .arg(&dir)
                .arg("--test"),
            "building the kernel module (needs make, gcc, linux-headers-amd64)",
        );
        dir
    })
}

fn modinfo(ko: &Path, field: &str) -> String {
    run(
        Command::new("modinfo").args(["-F", field]).arg(ko),
        "modinfo (apt-get install kmod)",
    )
}

#[test]
fn module_builds_against_debian_headers() {
    let ko = built().join("module/hmtt.ko");
    assert!(ko.is_file(), "{} missing", ko.display());
    let kver = kernel_version();
    let vermagic = modinfo(&ko, "vermagic");
    assert!(
        vermagic.starts_with(&format!("{kver} ")),
        "vermagic {vermagic:?} is not for {kver}"
    );
    assert_eq!(modinfo(&ko, "license").trim(), "GPL");
    let params: BTreeSet<String> = modinfo(&ko, "parm")
        .lines()
        .filter_map(|l| l.split(':').next().map(str::to_string))
        .collect();
    for p in [
        "cfg_base",
        "cfg_size",
        "log_records",
        "trace_comm",
        "dma_log",
        "allow_cache_disable",
    ] {
        assert!(params.contains(p), "parameter {p} missing: {params:?}");
    }
    let symvers = std::fs::read_to_string(built().join("module/Module.symvers")).unwrap();
    for sym in ["hmtt_icode", "hmtt_printk"] {
        assert!(
            symvers
                .lines()
                .any(|l| l.split('\t').nth(1) == Some(sym) && l.contains("EXPORT_SYMBOL_GPL")),
            "{sym} not exported:\n{symvers}"
        );
    }
    // The test module links against the exported API.
    assert!(built().join("test/dmatest/hmtt_dmatest.ko").is_file());
}

/// Every in-guest check the init script and the guest program make.
const EXPECTED_PASSES: &[&str] = &[
    "refuse-no-base",
    "refuse-ram",
    "refuse-half-ram",
    "refuse-unreserved",
    "refuse-small",
    "refuse-ram-message",
    "load",
    "iomem-claimed",
    "devtmpfs-mode",
    "perm-node",
    "perm-node-log",
    "perm-group-member",
    "perm-outsider",
    "info",
    "mmap-whole",
    "user-icode",
    "user-icode-logrange",
    "kernel-icode",
    "mmap-too-long",
    "mmap-offset-end",
    "mmap-straddle",
    "mmap-far",
    "mmap-private",
    "mmap-last-page",
    "ioctl-unknown",
    "ioctl-unknown-nr",
    "ioctl-icode-far",
    "ioctl-icode-logtag",
    "ioctl-icode-flags",
    "ioctl-info-null",
    "ioctl-icode-badptr",
    "ioctl-snapshot-negpid",
    "ioctl-trace-nopid",
    "ioctl-cache-disable-off",
    "ioctl-cache-disable-range",
    "log-ioctl",
    "log-single-reader",
    "log-short-read",
    "log-seq",
    "ptlog-map",
    "ptlog-snapshot",
    "ptlog-unmap",
    "exec-record",
    "exit-record",
    "exec-ptlog",
    "exec-early",
    "fork-record",
    "switch",
    "fork-snapshot",
    "cow-child",
    "cow-parent",
    "shm-write",
    "shm-read",
    "fork-exit",
    "vfork-record",
    "vfork-shared-mm",
    "vfork-exec-early",
    "pipeline",
    "mremap",
    "thp",
    "thp-collapse",
    "filemap-shared",
    "filemap-private",
    "migrate",
    "stress",
    "dmatest-load",
    "dma-single",
    "dma-sg0",
    "dma-sg1",
    "dma-coherent",
    "unload",
    "unload-clean",
    "reload",
    "mapping-icode",
    "mapping-tags",
    "mapping-outside",
    "mapping-not-bijective",
    "mapping-nbits",
    "mapping-linear-again",
    "overrun",
    "cache-disable",
    "dmesg-clean",
    "no-oops",
];

fn read_u64(ram: &File, phys: u64) -> u64 {
    let mut b = [0u8; 8];
    ram.read_exact_at(&mut b, phys)
        .unwrap_or_else(|e| panic!("guest RAM at {phys:#x}: {e}"));
    u64::from_le_bytes(b)
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex from the guest"))
        .collect()
}

/// The records of the .hmttlog the guest printed as `PREFIX <hex>` lines.
fn guest_log(console: &str, prefix: &str) -> Vec<klog::RecordRepr> {
    let bytes: Vec<u8> = console
        .lines()
        .filter_map(|l| l.strip_prefix(prefix)?.strip_prefix(' '))
        .flat_map(|h| hex_bytes(h.trim()))
        .collect();
    let (_, records) = klog::parse_file(&bytes)
        .unwrap_or_else(|e| panic!("the guest's {prefix} log does not parse: {e}"));
    assert_eq!(records.remainder(), 0, "{prefix} log cut inside a record");
    records
        .map(|r| r.expect("every kernel record parses"))
        .collect()
}

#[test]
fn qemu_guest_loads_maps_logs_and_unloads() {
    let kver = kernel_version();
    let cache = std::env::var_os("HMTT_KMOD_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| kmod_dir().join("../target/kmod-cache"));
    let image = cache.join(format!("vmlinuz-{kver}"));
    assert!(
        image.is_file(),
        "kernel image {} missing: run kmod-hmtt/scripts/fetch-kernel.sh (scripts/setup.sh does)",
        image.display()
    );
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kmod-qemu");
    let build = built();
    run(
        Command::new(kmod_dir().join("scripts/qemu-test.sh"))
            .arg(&out)
            .env("HMTT_PREBUILT", build)
            .env("HMTT_KMOD_CACHE", &cache),
        "qemu-test.sh (needs qemu-system-x86, busybox-static, cpio)",
    );
    let console = std::fs::read_to_string(out.join("console.log")).unwrap();
    let ram_path = out.join("guest-ram");
    let ram = File::open(&ram_path).unwrap();
    // The RAM file is 512 MiB (sparse); keep only the console.
    let _ = std::fs::remove_file(&ram_path);

    let fails: Vec<&str> = console.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert!(
        fails.is_empty(),
        "guest checks failed:\n{}",
        fails.join("\n")
    );
    let passes: BTreeSet<&str> = console
        .lines()
        .filter_map(|l| l.strip_prefix("PASS "))
        .map(str::trim)
        .collect();
    let missing: Vec<&&str> = EXPECTED_PASSES
        .iter()
        .filter(|p| !passes.contains(**p))
        .collect();
    assert!(
        missing.is_empty(),
        "guest checks that did not report: {missing:?}\nconsole: {}",
        out.join("console.log").display()
    );

    // The .hmttlog files the guest drained, parsed on the host.
    let records = guest_log(&console, "HEX");
    assert!(records.len() > 100, "only {} records", records.len());
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.seq, i as u64, "seq numbers run from 0 without holes");
    }
    // Second load, 16-record ring: gapless seqs, losses reported.
    let overrun_session = guest_log(&console, "HEX2");
    for (i, r) in overrun_session.iter().enumerate() {
        assert_eq!(r.seq, i as u64, "second session: seq from 0 without holes");
    }
    let lost: u64 = overrun_session
        .iter()
        .filter_map(|r| match r.event {
            Event::Overrun { lost } => Some(lost),
            _ => None,
        })
        .sum();
    assert!(lost > 0, "the 16-record ring reported no loss");
    let kinds: BTreeSet<u16> = records.iter().map(|r| r.event.kind() as u16).collect();
    for kind in [
        Kind::Map,
        Kind::Unmap,
        Kind::SnapshotMap,
        Kind::Exec,
        Kind::Exit,
        Kind::DmaMap,
        Kind::DmaUnmap,
        Kind::Fork,
        Kind::Switch,
        Kind::CpuArea,
    ] {
        assert!(kinds.contains(&(kind as u16)), "no {kind:?} record");
    }
    // The guest's two CPUs each have an entry area and per-CPU pages, in
    // frames of their own.
    let mut cpu_frames: BTreeMap<u64, u16> = BTreeMap::new();
    let mut areas: BTreeSet<(u16, String)> = BTreeSet::new();
    for r in &records {
        if let Event::CpuArea {
            frame,
            frames,
            owner,
            area,
        } = r.event
        {
            assert!((1..=64).contains(&frames), "{r:?}");
            areas.insert((owner, area.to_string()));
            for f in frame..frame + frames {
                let other = cpu_frames.insert(f, owner);
                assert!(
                    other.is_none_or(|o| o == owner),
                    "frame {f:#x} given to CPUs {other:?} and {owner}"
                );
            }
        }
    }
    let expected: BTreeSet<(u16, String)> = (0..2u16)
        .flat_map(|c| [(c, "cpu-entry-area".to_string()), (c, "percpu".to_string())])
        .collect();
    assert_eq!(areas, expected, "CPU_AREA records of the 2 CPUs");
    assert!(
        !kinds.contains(&(Kind::Overrun as u16)),
        "the ring overflowed"
    );
    let dma_maps = records
        .iter()
        .filter(|r| {
            matches!(r.event, Event::DmaMap { device, .. } if device.as_bytes() == b"hmtt_dmatest")
        })
        .count();
    assert_eq!(dma_maps, 4, "the test module maps 4 buffers");

    // Guest physical memory: the user mapping covered exactly the reserved
    // range (each page's second word holds the marker written through it).
    for off in (0..CFG_SIZE).step_by(4096) {
        assert_eq!(
            read_u64(&ram, CFG_BASE + off + 8),
            PATTERN_MAGIC | off,
            "page {off:#x} of the configuration space"
        );
    }
    for off in (4096..=0x10000).step_by(4096) {
        for phys in [CFG_BASE - off, CFG_BASE + CFG_SIZE + off - 4096] {
            assert_ne!(
                read_u64(&ram, phys + 8) & 0xffff_ffff_0000_0000,
                PATTERN_MAGIC,
                "marker outside the reserved range at {phys:#x}"
            );
        }
    }
    // Stores by the user library (0x42 by hand, 0x43 by hmtt_icode), the
    // module's ioctl (0x41) and the test module's hmtt_icode() calls
    // around its DMA work (0x76, 0x77).
    for (event, value) in [
        (0x41u64, 0x41u64),
        (0x42, 0x4242),
        (0x43, 0x43),
        (0x76, 0x76),
        (0x77, 0x77),
    ] {
        assert_eq!(
            read_u64(&ram, CFG_BASE + event * 64),
            value,
            "line {event:#x}"
        );
    }
    // The sleeper process is still alive at power-off: each MAP record's
    // PTE address holds a present entry for the logged frame.
    let sleeper: Vec<u64> = console
        .lines()
        .find_map(|l| l.strip_prefix("SLEEPER "))
        .expect("the sleeper reported its pages")
        .split_whitespace()
        .map(|f| match f.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => f.parse().unwrap(),
        })
        .collect();
    let (pid, vpn0, pages) = (sleeper[0], sleeper[1], sleeper[2]);
    for vpn in vpn0..vpn0 + pages {
        let (pfn, pte_phys) = records
            .iter()
            .find_map(|r| match r.event {
                Event::Map {
                    vpn: v,
                    pfn,
                    pte_phys,
                } if v == vpn && u64::from(r.pid) == pid => Some((pfn, pte_phys)),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no MAP record for the sleeper's page {vpn:#x}"));
        let pte = read_u64(&ram, pte_phys);
        assert_eq!(pte & 1, 1, "PTE at {pte_phys:#x} is not present: {pte:#x}");
        assert_eq!(
            (pte & 0x000f_ffff_ffff_f000) >> 12,
            pfn,
            "PTE at {pte_phys:#x} ({pte:#x}) does not map frame {pfn:#x}"
        );
    }

    // Every record was announced at its tag line 0x10000 + (seq & 0xffff);
    // the second session's tags overwrite the first's.
    let mut latest: BTreeMap<u32, u64> = BTreeMap::new();
    for r in records.iter().chain(&overrun_session) {
        latest.insert(log_tag_event(r.seq), r.seq);
    }
    for (event, seq) in latest {
        assert_eq!(
            read_u64(&ram, CFG_BASE + u64::from(event) * 64),
            seq,
            "tag line {event:#x}"
        );
    }
}
