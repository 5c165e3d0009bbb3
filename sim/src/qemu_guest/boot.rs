//! The guest of `hmtt qemu`: the kit (kernel, modules, plugin), the
//! busybox initramfs and its `/init`, QEMU's command line, and the running
//! guest with its console and log port. What the plugin streams is read
//! by the host side, [`super::trace_records`].

use super::{io_err, names, QemuError};
use crate::qemu::{GuestConfigSpace, GuestPidSpace};
use hmtt_format::klog::RECORD_LEN;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the guest is made of: `kmod-hmtt/scripts/qemu-kit.sh DIR` fills a
/// directory with these names.
#[derive(Debug, Clone)]
pub struct Kit {
    pub kernel: PathBuf,
    pub module: PathBuf,
    /// `hmtt_qemu_pid.ko`: each context switch as a store the plugin sees.
    pub pid_module: PathBuf,
    /// `hmtt_qemu_guest` (static): I-codes, the log drain, the clock.
    pub helper: PathBuf,
    pub plugin: PathBuf,
    /// A static busybox.
    pub busybox: PathBuf,
}

impl Kit {
    pub fn in_dir(dir: &Path) -> Kit {
        Kit {
            kernel: dir.join("vmlinux"),
            module: dir.join("hmtt.ko"),
            pid_module: dir.join("hmtt_qemu_pid.ko"),
            helper: dir.join("hmtt_qemu_guest"),
            plugin: dir.join("libqemu_plugin_hmtt.so"),
            busybox: PathBuf::from("/bin/busybox"),
        }
    }

    fn check(&self, traced: bool) -> Result<(), QemuError> {
        let mut need = vec![
            &self.kernel,
            &self.module,
            &self.pid_module,
            &self.helper,
            &self.busybox,
        ];
        if traced {
            need.push(&self.plugin);
        }
        for p in need {
            if !p.is_file() {
                return Err(QemuError::Guest(format!(
                    "{} missing: run kmod-hmtt/scripts/qemu-kit.sh (busybox: apt-get install busybox-static)",
                    p.display()
                )));
            }
        }
        Ok(())
    }
}

/// Most vCPUs a guest may have (`-smp`).
pub const MAX_VCPUS: u32 = 64;

/// One guest run.
#[derive(Debug, Clone)]
pub struct GuestRun {
    pub kit: Kit,
    /// The command and its arguments, run from `/work` with `/work` first
    /// in `PATH`.
    pub command: Vec<String>,
    /// Files copied into the guest's `/work` (static binaries, data).
    pub adds: Vec<PathBuf>,
    /// Kernel modules (`.ko`, built against the kit's kernel) copied into
    /// the guest's `/modules` and loaded with `insmod`, in this order,
    /// after the trace begins and before the command: their init work is
    /// traced, and they may use `hmtt.ko`'s in-kernel API.
    pub modules: Vec<PathBuf>,
    /// Guest RAM; at most 2 GiB (QEMU 7.2 misplaces ROM accesses by the RAM
    /// size, and RAM must stay below the 4 GiB hole).
    pub memory_bytes: u64,
    /// vCPUs (`-smp`), 1 to [`MAX_VCPUS`]. QEMU runs them all on one
    /// thread (`-accel tcg,thread=single`), one at a time, so the plugin
    /// records every vCPU's accesses in one order, the order they ran in.
    pub vcpus: u32,
    pub space: GuestConfigSpace,
    /// Where `hmtt_qemu_pid.ko` announces each context switch.
    pub pids: GuestPidSpace,
    /// Kernel log ring records (`hmtt.ko log_records`).
    pub log_records: u64,
    /// Give up on the guest after this long.
    pub timeout: Duration,
    /// Print the guest's console as it comes.
    pub show_console: bool,
    /// QEMU `-device` specifications of devices to attach (their drivers,
    /// if modules, go in `modules`), e.g.
    /// `virtio-rng-pci,disable-legacy=on,iommu_platform=on`.
    pub devices: Vec<String>,
}

impl GuestRun {
    pub fn new(kit: Kit, command: Vec<String>) -> GuestRun {
        GuestRun {
            kit,
            command,
            adds: Vec::new(),
            modules: Vec::new(),
            memory_bytes: 512 << 20,
            vcpus: 1,
            space: GuestConfigSpace::DEFAULT,
            pids: GuestPidSpace::DEFAULT,
            log_records: 1 << 16,
            timeout: Duration::from_secs(600),
            show_console: true,
            devices: Vec::new(),
        }
    }

    fn check(&self) -> Result<(), QemuError> {
        if self.command.is_empty() {
            return Err(QemuError::Guest("no command to run in the guest".into()));
        }
        if !(1..=MAX_VCPUS).contains(&self.vcpus) {
            return Err(QemuError::Guest(format!(
                "{} vCPUs: a guest has 1 to {MAX_VCPUS}",
                self.vcpus
            )));
        }
        if self.memory_bytes > 2 << 30 || self.memory_bytes < 64 << 20 {
            return Err(QemuError::Guest(
                "guest memory must be 64 MiB to 2 GiB".into(),
            ));
        }
        if self.space.base + self.space.size > self.memory_bytes {
            return Err(QemuError::Guest(format!(
                "the configuration space {:#x}+{:#x} is not inside guest RAM",
                self.space.base, self.space.size
            )));
        }
        let (p, c) = (&self.pids, &self.space);
        if p.base + p.size > self.memory_bytes
            || (p.base < c.base + c.size && c.base < p.base + p.size)
        {
            return Err(QemuError::Guest(format!(
                "the pid range {:#x}+{:#x} is not inside guest RAM beside the configuration space",
                p.base, p.size
            )));
        }
        let mut names = Vec::new();
        for m in &self.modules {
            let name = guest_name(m)?;
            if names.contains(&name) {
                return Err(QemuError::Guest(format!(
                    "two kernel modules are named {name}"
                )));
            }
            names.push(name);
        }
        Ok(())
    }

    /// The guest's `insmod` lines of the extra modules, each powering the
    /// guest off with a failure line if the module does not load.
    fn module_loads(&self) -> String {
        self.modules
            .iter()
            .filter_map(|m| guest_name(m).ok())
            .map(|name| {
                let path = shell_quote(&format!("/modules/{name}"));
                let failed = shell_quote(&format!("HMTT-QEMU-FAIL insmod {name}"));
                format!("if ! insmod {path}; then\n\techo {failed}\n\tpoweroff -f\nfi\n")
            })
            .collect()
    }

    /// The command name the kernel gives the program (`trace_comm`).
    fn comm(&self) -> String {
        let base = self.command[0].rsplit('/').next().unwrap_or_default();
        base.chars().take(15).collect()
    }
}

/// The name a file keeps inside the guest.
pub(super) fn guest_name(p: &Path) -> Result<&str, QemuError> {
    p.file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| QemuError::Guest(format!("{}: no file name", p.display())))
}

pub(super) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's `/init`.
pub fn init_script(run: &GuestRun) -> String {
    let command: Vec<String> = run.command.iter().map(|a| shell_quote(a)).collect();
    format!(
        r#"#!/bin/sh
export PATH=/work:/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
if ! insmod /hmtt.ko cfg_base={base:#x} cfg_size={size:#x} log_records={records} trace_comm={comm}; then
	echo "HMTT-QEMU-FAIL insmod hmtt.ko"
	poweroff -f
fi
if ! insmod /hmtt_qemu_pid.ko base={pid_base:#x} size={pid_size:#x}; then
	echo "HMTT-QEMU-FAIL insmod hmtt_qemu_pid.ko"
	poweroff -f
fi
cd /work
echo "HMTT-QEMU-RUN"
t0=$(hmtt_qemu_guest now)
hmtt_qemu_guest icode 0
{modules}{command}
status=$?
hmtt_qemu_guest icode 1
t1=$(hmtt_qemu_guest now)
echo "HMTT-QEMU-TIME $t0 $t1"
hmtt_qemu_guest drain /dev/ttyS1
echo "HMTT-QEMU-END $status"
poweroff -f
"#,
        base = run.space.base,
        size = run.space.size,
        pid_base = run.pids.base,
        pid_size = run.pids.size,
        records = run.log_records,
        comm = shell_quote(&run.comm()),
        modules = run.module_loads(),
        command = command.join(" "),
    )
}

/// An uncompressed newc cpio archive, as the kernel unpacks an initramfs.
pub(super) struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

impl Cpio {
    fn new() -> Cpio {
        Cpio {
            out: Vec::new(),
            ino: 1,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) {
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            data.len(),
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.ino += 1;
        self.out.extend_from_slice(header.as_bytes());
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        self.entry(name, 0o040755, &[]);
    }

    fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, 0o100000 | mode, data);
    }

    fn symlink(&mut self, name: &str, target: &str) {
        self.entry(name, 0o120777, target.as_bytes());
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[]);
        self.out
    }
}

/// Writes the initramfs of `run` to `path`.
pub fn write_initramfs(run: &GuestRun, path: &Path) -> Result<(), QemuError> {
    let read = |p: &Path| std::fs::read(p).map_err(io_err(p));
    let mut c = Cpio::new();
    for d in ["bin", "dev", "modules", "proc", "sys", "tmp", "work"] {
        c.dir(d);
    }
    c.file("bin/busybox", 0o755, &read(&run.kit.busybox)?);
    c.symlink("bin/sh", "busybox");
    c.file("bin/hmtt_qemu_guest", 0o755, &read(&run.kit.helper)?);
    c.file("hmtt.ko", 0o644, &read(&run.kit.module)?);
    c.file("hmtt_qemu_pid.ko", 0o644, &read(&run.kit.pid_module)?);
    c.file("init", 0o755, init_script(run).as_bytes());
    for add in &run.adds {
        c.file(&format!("work/{}", guest_name(add)?), 0o755, &read(add)?);
    }
    for module in &run.modules {
        c.file(
            &format!("modules/{}", guest_name(module)?),
            0o644,
            &read(module)?,
        );
    }
    std::fs::write(path, c.finish()).map_err(io_err(path))
}

/// The QEMU command line; `plugin_out` adds the plugin writing there.
/// `no_timer_check`: on a loaded host the TCG guest's check of the IO-APIC
/// timer can miss its ticks and panic the boot ("IO-APIC + timer doesn't
/// work!"), as seen with 2 vCPUs on this machine at a load of 19.
/// Every vCPU runs on one thread (single-threaded TCG, round-robin), with
/// the plugin or without, so that the plugin sees every vCPU's accesses in
/// one order and a plain run is timed the same way.
pub fn qemu_command(
    run: &GuestRun,
    initrd: &Path,
    guest_log: &Path,
    plugin_out: Option<&Path>,
) -> Command {
    let mib = run.memory_bytes >> 20;
    let mut c = Command::new("qemu-system-x86_64");
    c.args([
        "-machine",
        "pc",
        "-accel",
        "tcg,thread=single",
        "-cpu",
        "max",
    ])
    .args(["-smp", &run.vcpus.to_string(), "-m", &format!("{mib}M")])
    .arg("-kernel")
    .arg(&run.kit.kernel)
    .arg("-initrd")
    .arg(initrd)
    .arg("-append")
    .arg(format!(
        "console=ttyS0 memmap={}K${:#x} memmap={}K${:#x} panic=-1 oops=panic loglevel=4 no_timer_check",
        run.space.size >> 10,
        run.space.base,
        run.pids.size >> 10,
        run.pids.base
    ))
    .args(["-nic", "none", "-nographic", "-no-reboot"])
    .args(["-serial", "mon:stdio", "-chardev"])
    .arg(format!("file,id=hmttlog,path={}", guest_log.display()))
    .args(["-serial", "chardev:hmttlog"]);
    for device in &run.devices {
        c.arg("-device").arg(device);
    }
    if let Some(out) = plugin_out {
        c.arg("-plugin").arg(format!(
            "{},out={},cfg_base={:#x},pid_base={:#x},pid_size={:#x},ram_size={}",
            run.kit.plugin.display(),
            out.display(),
            run.space.base,
            run.pids.base,
            run.pids.size,
            run.memory_bytes
        ));
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    c
}

/// What the guest did.
#[derive(Debug, Clone)]
pub struct GuestOutcome {
    pub console: String,
    /// The command's exit status in the guest.
    pub status: i32,
    /// Guest seconds from just before the trace began to just after it
    /// ended (the command and the two I-code helpers).
    pub command_secs: f64,
    /// Host seconds from starting QEMU to its exit.
    pub wall_secs: f64,
    /// Kernel log records drained from the guest.
    pub log_records: u64,
}

/// A running QEMU with its console reader and watchdog.
pub(super) struct Guest {
    child: Arc<Mutex<Child>>,
    console: std::thread::JoinHandle<String>,
    started: Instant,
}

pub(super) fn start(
    run: &GuestRun,
    cmd: &mut Command,
    console_path: &Path,
    fifo: Option<PathBuf>,
) -> Result<Guest, QemuError> {
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(io_err(Path::new("qemu-system-x86_64")))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let child = Arc::new(Mutex::new(child));
    let mut log = File::create(console_path).map_err(io_err(console_path))?;
    let show = run.show_console;
    let console = std::thread::spawn(move || {
        let mut text = String::new();
        let mut r = BufReader::new(stdout);
        let mut line = Vec::new();
        while matches!(r.read_until(b'\n', &mut line), Ok(n) if n > 0) {
            let s = String::from_utf8_lossy(&line).replace('\r', "");
            let _ = log.write_all(s.as_bytes());
            if show {
                print!("{s}");
                let _ = std::io::stdout().flush();
            }
            text.push_str(&s);
            line.clear();
        }
        // QEMU has exited: a reader still waiting for the plugin to open
        // the FIFO is let go (it then reads an empty stream).
        if let Some(f) = fifo {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags_nonblock()
                .open(f);
        }
        text
    });
    let watched = Arc::clone(&child);
    let timeout = run.timeout;
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        let mut c = watched.lock().unwrap_or_else(|e| e.into_inner());
        match c.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if started.elapsed() > timeout => {
                let _ = c.kill();
                return;
            }
            Ok(None) => {}
        }
    });
    Ok(Guest {
        child,
        console,
        started,
    })
}

pub(super) trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

impl Guest {
    pub(super) fn finish(
        self,
        run: &GuestRun,
        guest_log: &Path,
    ) -> Result<GuestOutcome, QemuError> {
        let console = self
            .console
            .join()
            .map_err(|_| QemuError::Guest("the console reader panicked".into()))?;
        let status = loop {
            let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = c
                .try_wait()
                .map_err(io_err(Path::new("qemu-system-x86_64")))?
            {
                break s;
            }
            drop(c);
            std::thread::sleep(Duration::from_millis(50));
        };
        let wall_secs = self.started.elapsed().as_secs_f64();
        let field = |tag: &str| {
            console
                .lines()
                .find_map(|l| l.trim().strip_prefix(tag).map(str::to_string))
        };
        let tail = || {
            let lines: Vec<&str> = console.lines().rev().take(20).collect();
            lines.into_iter().rev().collect::<Vec<_>>().join("\n")
        };
        if let Some(failed) = field("HMTT-QEMU-FAIL ") {
            return Err(QemuError::Guest(format!(
                "the guest could not {failed}; last console lines:\n{}",
                tail()
            )));
        }
        let Some(end) = field("HMTT-QEMU-END ") else {
            return Err(QemuError::Guest(format!(
                "the guest did not finish within {:?} (qemu: {status}); last console lines:\n{}",
                run.timeout,
                tail()
            )));
        };
        let times: Vec<f64> = field("HMTT-QEMU-TIME ")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        let log_len = std::fs::metadata(guest_log)
            .map_err(io_err(guest_log))?
            .len();
        Ok(GuestOutcome {
            status: end.trim().parse().unwrap_or(-1),
            command_secs: match times[..] {
                [t0, t1] => t1 - t0,
                _ => f64::NAN,
            },
            wall_secs,
            log_records: log_len / RECORD_LEN as u64,
            console,
        })
    }
}

pub(super) fn prepare(
    run: &GuestRun,
    dir: &Path,
    traced: bool,
) -> Result<(PathBuf, PathBuf), QemuError> {
    run.check()?;
    run.kit.check(traced)?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let initrd = dir.join(names::INITRAMFS);
    write_initramfs(run, &initrd)?;
    let guest_log = dir.join(names::GUEST_LOG_RAW);
    Ok((initrd, guest_log))
}

/// Boots the guest without the plugin (plain TCG), for comparison.
pub fn run_plain(run: &GuestRun, dir: &Path) -> Result<GuestOutcome, QemuError> {
    let (initrd, guest_log) = prepare(run, dir, false)?;
    let mut cmd = qemu_command(run, &initrd, &guest_log, None);
    let guest = start(run, &mut cmd, &dir.join(names::CONSOLE), None)?;
    guest.finish(run, &guest_log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_quotes_the_command_and_traces_its_name() {
        let mut run = GuestRun::new(
            Kit::in_dir(Path::new("/k")),
            vec!["/work/my sort".into(), "it's".into()],
        );
        run.log_records = 4096;
        let s = init_script(&run);
        assert!(s.contains("'/work/my sort' 'it'\\''s'\n"), "{s}");
        assert!(s.contains("trace_comm='my sort'"), "{s}");
        assert!(s.contains("cfg_base=0x10000000 cfg_size=0x800000 log_records=4096"));
        // The pid range follows the configuration space; its module loads
        // before the trace begins.
        let pids = s
            .find("insmod /hmtt_qemu_pid.ko base=0x10800000 size=0x40000")
            .unwrap();
        assert!(pids < s.find("hmtt_qemu_guest icode 0").unwrap());
    }
    #[test]
    fn modules_load_in_order_inside_the_trace_before_the_command() {
        let mut run = GuestRun::new(Kit::in_dir(Path::new("/k")), vec!["prog".into()]);
        run.modules = vec!["/a/one.ko".into(), "/b/two's.ko".into()];
        run.check().unwrap();
        let s = init_script(&run);
        let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("{needle} in {s}"));
        let one = at("if ! insmod '/modules/one.ko'; then\n\techo 'HMTT-QEMU-FAIL insmod one.ko'\n\tpoweroff -f\nfi\n");
        let two = at("insmod '/modules/two'\\''s.ko'");
        assert!(at("hmtt_qemu_guest icode 0") < one);
        assert!(one < two);
        assert!(two < at("'prog'\nstatus=$?"));

        run.modules.push("/c/one.ko".into());
        assert!(matches!(run.check(), Err(QemuError::Guest(m)) if m.contains("one.ko")));
    }
    #[test]
    fn both_ranges_are_reserved_and_given_to_the_plugin() {
        let run = GuestRun::new(Kit::in_dir(Path::new("/k")), vec!["prog".into()]);
        let cmd = qemu_command(
            &run,
            Path::new("/i"),
            Path::new("/l"),
            Some(Path::new("/f")),
        );
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let append = &args[args.iter().position(|a| a == "-append").unwrap() + 1];
        assert!(append.contains("memmap=8192K$0x10000000 memmap=256K$0x10800000"));
        let plugin = &args[args.iter().position(|a| a == "-plugin").unwrap() + 1];
        assert!(plugin.contains("cfg_base=0x10000000,pid_base=0x10800000,pid_size=0x40000,"));
    }
    #[test]
    fn several_vcpus_run_on_one_thread() {
        let mut run = GuestRun::new(Kit::in_dir(Path::new("/k")), vec!["prog".into()]);
        run.vcpus = 2;
        run.check().unwrap();
        for plugin in [Some(Path::new("/f")), None] {
            let cmd = qemu_command(&run, Path::new("/i"), Path::new("/l"), plugin);
            let args: Vec<String> = cmd
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let after = |flag: &str| &args[args.iter().position(|a| a == flag).unwrap() + 1];
            assert_eq!(after("-smp"), "2");
            assert_eq!(after("-accel"), "tcg,thread=single");
        }
        for vcpus in [0, MAX_VCPUS + 1] {
            run.vcpus = vcpus;
            assert!(matches!(run.check(), Err(QemuError::Guest(m)) if m.contains("vCPUs")));
        }
    }
    #[test]
    fn a_pid_range_overlapping_the_configuration_space_is_refused() {
        let mut run = GuestRun::new(Kit::in_dir(Path::new("/k")), vec!["prog".into()]);
        assert!(run.check().is_ok());
        run.pids.base = run.space.base + run.space.size - 8;
        assert!(run.check().is_err());
        run.pids.base = run.memory_bytes - 8;
        assert!(run.check().is_err());
    }
    #[test]
    fn devices_are_attached() {
        let mut run = GuestRun::new(Kit::in_dir(Path::new("/k")), vec!["prog".into()]);
        run.devices = vec!["virtio-rng-pci,iommu_platform=on".into()];
        let cmd = qemu_command(&run, Path::new("/i"), Path::new("/l"), None);
        let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
        let at = args.iter().position(|a| *a == "-device").expect("-device");
        assert_eq!(args[at + 1], "virtio-rng-pci,iommu_platform=on");
        assert_eq!(args.iter().filter(|a| **a == "-device").count(), 1);
    }
    #[test]
    fn cpio_entries_are_aligned_and_end_with_the_trailer() {
        let mut c = Cpio::new();
        c.dir("bin");
        c.file("bin/x", 0o755, b"abcde");
        let out = c.finish();
        assert_eq!(out.len() % 4, 0);
        assert!(out.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("bin/x\0"));
        assert!(text.contains("TRAILER!!!\0"));
        // The file's data starts 4-aligned right after its padded name.
        let at = out.windows(5).position(|w| w == b"abcde").unwrap();
        assert_eq!(at % 4, 0);
    }
}
