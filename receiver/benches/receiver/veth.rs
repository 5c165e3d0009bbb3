//! HMTT_BENCH_PATH=veth-rps: the sender and the capture on cores of their
//! own, as on a host whose NIC's receive work runs on the receiving cores.
//!
//! Two named network namespaces, `hmttb-s-PID` (the sender) and
//! `hmttb-c-PID` (the capture), joined by a veth pair (MTU 9000). A veth
//! without XDP or GRO hands each frame to `netif_rx`, so with receive
//! packet steering on the capturing end (`rps_cpus` = the capture's CPU)
//! the whole receive path (the packet taps' copy into their rings, IP and
//! UDP) runs in the capture CPU's softirq, whichever process it
//! interrupts. The sender thread is pinned to the first CPU, the capture
//! (the bench's main thread, so every capture thread and tcpdump, which
//! inherit it) to the last. The namespaces, and with them the veth pair
//! and any nftables table in them, are deleted when [`VethPath`] drops,
//! and leftovers of a killed run (a namespace whose PID is gone) when the
//! next one starts.

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::process::Command;

const PREFIX: &str = "hmttb-";
pub const CAPTURE_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
pub const SENDER_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
/// Locally administered unicast addresses, set on the two ends.
pub const CAPTURE_MAC: [u8; 6] = [0x02, 0x68, 0x6d, 0x74, 0x74, 0x01];
pub const SENDER_MAC: [u8; 6] = [0x02, 0x68, 0x6d, 0x74, 0x74, 0x02];

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        io::Error::new(e.kind(), format!("the `ip` tool (iproute2) is needed: {e}"))
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

fn mac_text(mac: [u8; 6]) -> String {
    mac.map(|b| format!("{b:02x}")).join(":")
}

/// Deletes the namespaces of earlier runs whose process is gone.
fn delete_leftovers() {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            match ip(&["netns", "del", &name]) {
                Ok(()) => println!("deleted namespace {name}, left by a killed run"),
                Err(e) => eprintln!("receiver bench: {e}"),
            }
        }
    }
}

/// The two namespaces and their veth pair; deletes them on drop.
pub struct VethPath {
    names: Vec<String>,
    capture_ns: Option<File>,
    sender_ns: Option<File>,
    pub capture_dev: String,
    pub sender_dev: String,
    pub capture_cpu: usize,
    pub sender_cpu: usize,
}

impl VethPath {
    pub fn create() -> io::Result<VethPath> {
        delete_leftovers();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus < 2 {
            return Err(io::Error::other("veth-rps needs two CPUs"));
        }
        let pid = std::process::id();
        let mut path = VethPath {
            names: Vec::new(),
            capture_ns: None,
            sender_ns: None,
            capture_dev: format!("hbc{pid}"),
            sender_dev: format!("hbs{pid}"),
            capture_cpu: cpus - 1,
            sender_cpu: 0,
        };
        // Each name is kept as soon as it exists, so that a failure below
        // still deletes it (on drop).
        let (cap, snd) = (format!("{PREFIX}c-{pid}"), format!("{PREFIX}s-{pid}"));
        for ns in [&cap, &snd] {
            ip(&["netns", "add", ns])?;
            path.names.push(ns.clone());
        }
        ip(&[
            "link",
            "add",
            &path.capture_dev,
            "netns",
            &cap,
            "type",
            "veth",
            "peer",
            "name",
            &path.sender_dev,
            "netns",
            &snd,
        ])?;
        for (ns, dev, addr, mac) in [
            (&cap, &path.capture_dev, CAPTURE_IP, CAPTURE_MAC),
            (&snd, &path.sender_dev, SENDER_IP, SENDER_MAC),
        ] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            let mac = mac_text(mac);
            ip(&["-n", ns, "link", "set", dev, "address", &mac, "mtu", "9000"])?;
        }
        // sysfs shows the devices of the namespace that mounted it: `ip
        // netns exec` mounts the capture namespace's own.
        let rps = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", path.capture_dev);
        let mask = format!("{:x}", 1u64 << path.capture_cpu);
        let script = format!("echo {mask} > {rps} && cat {rps}");
        let out = Command::new("ip")
            .args(["netns", "exec", &cap, "sh", "-c", &script])
            .output()?;
        let read_back = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || read_back.trim().trim_start_matches('0') != mask {
            return Err(io::Error::other(format!(
                "setting {rps} to {mask}: {}{}",
                read_back.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        for (ns, dev) in [(&cap, &path.capture_dev), (&snd, &path.sender_dev)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        path.capture_ns = Some(File::open(format!("/run/netns/{cap}"))?);
        path.sender_ns = Some(File::open(format!("/run/netns/{snd}"))?);
        Ok(path)
    }

    /// The sender's namespace, for [`enter`] in a sender thread.
    pub fn sender_ns(&self) -> RawFd {
        self.sender_ns.as_ref().expect("created").as_raw_fd()
    }

    /// Moves the calling thread into the capture's namespace and onto its CPU.
    pub fn enter_capture(&self) -> io::Result<()> {
        enter(self.capture_ns.as_ref().expect("created").as_raw_fd())?;
        pin_to_cpu(self.capture_cpu)
    }
}

impl Drop for VethPath {
    fn drop(&mut self) {
        self.capture_ns = None;
        self.sender_ns = None;
        for ns in &self.names {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("receiver bench: {e}");
            }
        }
    }
}

/// Moves the calling thread into the network namespace `fd`.
pub fn enter(fd: RawFd) -> io::Result<()> {
    // SAFETY: setns on an open namespace file; affects this thread only.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns: {e}")));
    }
    Ok(())
}

/// Pins the calling thread (and the threads and children it starts) to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data, filled by CPU_SET; the call
    // reads it and affects this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("pinning to CPU {cpu}: {e}"),
            ));
        }
    }
    Ok(())
}

/// Sets the calling thread's nice value (Linux: a thread's own, not its process's).
pub fn set_nice(nice: i32) -> io::Result<()> {
    // SAFETY: setpriority with who = 0 names the calling thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("nice {nice}: {e}")));
    }
    Ok(())
}

/// One CPU's time from /proc/stat, in seconds.
#[derive(Clone, Copy, Default)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq.
    pub busy: f64,
    /// irq + softirq: the receive path's work in interrupt context.
    pub interrupts: f64,
}

impl CpuTimes {
    pub fn read(cpu: usize) -> CpuTimes {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let label = format!("cpu{cpu}");
        let Some(line) = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(label.as_str()))
        else {
            return CpuTimes::default();
        };
        // user nice system idle iowait irq softirq steal ... (USER_HZ ticks)
        let t: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().unwrap_or(0.0))
            .collect();
        let field = |i: usize| t.get(i).copied().unwrap_or(0.0);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        CpuTimes {
            busy: (field(0) + field(1) + field(2) + field(5) + field(6)) / hz,
            interrupts: (field(5) + field(6)) / hz,
        }
    }

    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            busy: self.busy - earlier.busy,
            interrupts: self.interrupts - earlier.interrupts,
        }
    }
}
