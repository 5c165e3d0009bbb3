//! `hmtt qemu`: trace real software under QEMU TCG with the real `hmtt.ko`
//! and the `qemu-plugin-hmtt` plugin as the DIMM; writes the layout of
//! `hmtt sim --out`.

use anyhow::{bail, Context};
use hmtt_format::text::parse_size;
use hmtt_sim::dram::Scheduler;
use hmtt_sim::machine::SimConfig;
use hmtt_sim::qemu_guest::{run_plain, run_traced, GuestRun, Kit};
use hmtt_sim::send::{resolve, UdpSink};
use hmtt_sim::stream::{PacketSink, StreamOutputs};
use std::path::PathBuf;
use std::time::Duration;

use crate::output::{status, to_stdout};
use crate::shared::CacheArgs;

/// Arguments of `hmtt qemu`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  kmod-hmtt/scripts/qemu-kit.sh target/qemu-kit
  hmtt qemu --kit target/qemu-kit --out run/ --cache off --truth-csv \\
      --add target/qemu-kit/hmtt_sort --events target/qemu-kit/hmtt_sort.events.toml -- hmtt_sort 4096
  hmtt qemu --kit target/qemu-kit --out two/ --smp 2 --add target/qemu-kit/hmtt_sort \\
      -- sh -c 'hmtt_sort 4096 & hmtt_sort 4096; wait'
  hmtt qemu --kit target/qemu-kit --out dma/ --module target/qemu-kit/hmtt_dmatest.ko \\
      --events target/qemu-kit/hmtt_dmatest.events.toml -- true
  hmtt qemu --kit target/qemu-kit --out plain/ --plain --add target/qemu-kit/hmtt_sort -- hmtt_sort 4096")]
pub struct Args {
    /// Output directory (the layout of `hmtt sim --out`, plus console.log
    /// and, with --truth-csv, qemu-refs.csv).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Directory made by kmod-hmtt/scripts/qemu-kit.sh (kernel, hmtt.ko,
    /// guest helper, plugin).
    #[arg(long, default_value = "target/qemu-kit")]
    pub kit: PathBuf,
    /// Static binaries and data files put into the guest's /work (repeatable).
    #[arg(long)]
    pub add: Vec<PathBuf>,
    /// Kernel module loaded in the guest after the trace begins and before
    /// the command, so that its init work is traced (repeatable, loaded in
    /// order; built against the kit's kernel).
    #[arg(long = "module")]
    pub modules: Vec<PathBuf>,
    /// QEMU device to attach, as for `qemu-system-x86_64 -device`
    /// (repeatable); its driver, if a module, goes in with --module.
    #[arg(long = "device")]
    pub devices: Vec<String>,
    /// Events file naming I-codes of the program or the modules
    /// (repeatable; merged into events.toml).
    #[arg(long)]
    pub events: Vec<PathBuf>,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// fcfs or frfcfs (fcfs keeps the references in program order).
    #[arg(long, default_value = "fcfs")]
    pub scheduler: Scheduler,
    /// Also write the ground truth as CSV, and qemu-refs.csv (every line
    /// reference as the plugin saw it, in program order, with the process
    /// the guest ran: hmtt_qemu_pid.ko announces each context switch).
    #[arg(long)]
    pub truth_csv: bool,
    /// Send the packets over UDP (as `hmtt sim --send`).
    #[arg(long, value_delimiter = ',')]
    pub send: Vec<String>,
    /// Guest RAM (at most 2G).
    #[arg(long, default_value = "512M", value_parser = parse_size)]
    pub memory: u64,
    /// vCPUs of the guest (1 to 64). QEMU runs them on one thread, one at
    /// a time (-accel tcg,thread=single), so the trace holds every vCPU's
    /// accesses in one order, the order they ran in.
    #[arg(long, default_value_t = 1)]
    pub smp: u32,
    /// Kernel log ring records in the guest (1..=16777216).
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub log_records: u64,
    /// Give up on the guest after this many seconds (1..=604800, a week).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub timeout: u64,
    /// Boot without the plugin (plain TCG) and only time the command.
    #[arg(long)]
    pub plain: bool,
    /// The command run in the guest, and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let mut guest = GuestRun::new(Kit::in_dir(&a.kit), a.command.clone());
    guest.adds = a.add.clone();
    guest.modules = a.modules.clone();
    guest.devices = a.devices.clone();
    guest.memory_bytes = a.memory;
    guest.vcpus = a.smp;
    guest.log_records = a.log_records;
    guest.timeout = Duration::from_secs(a.timeout);
    if a.plain {
        let g = run_plain(&guest, &a.out)?;
        return to_stdout("printing the run", |out| {
            writeln!(
                out,
                "plain TCG: command took {:.3} s in the guest, QEMU ran {:.1} s, exit status {}",
                g.command_secs, g.wall_secs, g.status
            )
        });
    }
    let mut cfg = SimConfig::default().starting_now();
    cfg.cache = a.cache.config();
    cfg.controller.scheduler = a.scheduler;
    let mut sink = if a.send.is_empty() {
        None
    } else {
        Some(UdpSink::new(&resolve(&a.send)?, 1, cfg.board.ports, None)?)
    };
    let outputs = StreamOutputs {
        dir: Some(&a.out),
        truth_csv: a.truth_csv,
        captures_only: false,
        check: false,
        packets: sink.as_mut().map(|s| s as &mut (dyn PacketSink + Send)),
    };
    let t = run_traced(&guest, &a.out, cfg, outputs, &a.events).context("hmtt qemu")?;
    to_stdout("printing the run", |out| {
        write!(out, "{t}")?;
        writeln!(out, "wrote {}", a.out.display())
    })?;
    let p = &t.streamed.pages;
    if p.lost() > 0 {
        status!(
            "WARNING: QEMU's TLB did not translate {} accesses (none of their lines traced) and the second page of {} page-crossing ones (only their first page's lines traced)",
            p.untranslated, p.next_untranslated
        );
    }
    if t.guest.status != 0 {
        bail!("the guest command exited with status {}", t.guest.status);
    }
    Ok(())
}
