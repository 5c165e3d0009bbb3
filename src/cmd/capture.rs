//! `hmtt capture`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hmtt_receiver::report::SummaryReport;
use hmtt_receiver::{Capture, CaptureConfig, RxPath};

use crate::output::status;
use crate::shared::{parse_number, size_in};

/// Arguments of `hmtt capture`.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  hmtt capture --udp-ports 5000-5002 -o /disk0/hmtt -o /disk1/hmtt --name run1
  hmtt capture --udp-ports 5000-5011 --rx ring -o /disk0/hmtt --rcvbuf 64M
  hmtt capture -i pcap:eth1 -i pcap:eth2 -o /raid/hmtt --duration 60
  hmtt capture -i file:board.pcapng -o out --pcapng
  hmtt capture --run run.toml
  hmtt capture --repair -o /disk0/hmtt -o /disk1/hmtt

A received packet is handed to the writer (and written, so a kill cannot
lose it) once its buffer of 64 packets is full or at most 100 ms after
the buffer's first packet arrived (150 ms when the input then falls
silent: the receive timeout is 50 ms; with --rx ring, a block of packets
reaches the buffer at most two 10 ms block timeouts after its first
packet arrived, and a part-filled buffer is handed on as soon as no
block is ready). A kill (SIGKILL) thus loses at
most the last 150 ms of packets; the files end on whole records, and
`--repair` gives back the space preallocated past their ends.")]
pub struct Args {
    /// Input, repeatable: udp:HOST:PORT, pcap:INTERFACE or file:PATH (.pcap/.pcapng);
    /// port ids are given in order (0, 1, ...).
    #[arg(short, long = "input", value_name = "SPEC")]
    inputs: Vec<String>,
    /// UDP ports to listen on, e.g. 5000-5002 (port ids 0, 1, ... after --input's).
    #[arg(long, value_name = "FIRST-LAST")]
    udp_ports: Option<String>,
    /// Address the --udp-ports sockets bind to.
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// Output directory, repeatable (one per disk); stripes go round-robin over them.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// TOML run file (inputs, dirs, options); command-line options override it.
    #[arg(long, value_name = "FILE")]
    run: Option<PathBuf>,
    /// Run name: files are NAME-pPP-sSSSSS.hmttcap.
    #[arg(long)]
    name: Option<String>,
    /// Stripe size, 1M to 16T (K, M, G, T suffixes, powers of 1024): a
    /// port's capture moves to the next directory after it [default: 256M].
    #[arg(long, value_name = "SIZE", value_parser = size_in(1 << 20, 1 << 44, "1M to 16T"))]
    stripe_size: Option<u64>,
    /// --stripe-size in MiB: its old spelling, kept for one release
    /// (renamed::RENAMED_OPTIONS).
    #[arg(long, hide = true, conflicts_with = "stripe_size",
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    stripe_mib: Option<u64>,
    /// Socket receive buffer to ask for, 1M to 2047M (the kernel takes at
    /// most 2 GiB); with --rx ring, each port's ring (allocated at the
    /// start) [default: 256M].
    #[arg(long, value_name = "SIZE", value_parser = size_in(1 << 20, 2047 << 20, "1M to 2047M"))]
    rcvbuf: Option<u64>,
    /// --rcvbuf in MiB: its old spelling, kept for one release
    /// (renamed::RENAMED_OPTIONS).
    #[arg(long, hide = true, conflicts_with = "rcvbuf",
          value_parser = clap::value_parser!(u64).range(1..=2047))]
    rcvbuf_mib: Option<u64>,
    /// How UDP inputs receive: `socket` (recvmmsg on a UDP socket) or
    /// `ring` (an AF_PACKET TPACKET_V3 ring per port, no system call per packet;
    /// needs CAP_NET_RAW and IPv4; --rcvbuf is then the ring's size,
    /// allocated at the start).
    #[arg(long, value_enum, value_name = "PATH")]
    rx: Option<Rx>,
    /// Stop after this many seconds (finite, at least 0, at most 2^64-1).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    duration: Option<Duration>,
    /// Stop after this many valid packets over all ports.
    #[arg(long, value_name = "N")]
    packets: Option<u64>,
    /// Also write NAME-pPP.pcapng per port (opens in Wireshark).
    #[arg(long)]
    pcapng: bool,
    /// Where to write the JSON summary (default: first output dir).
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Overwrite capture files of the same name.
    #[arg(long)]
    overwrite: bool,
    /// No preallocation of stripe files.
    #[arg(long)]
    no_prealloc: bool,
    /// Instead of capturing, repair the capture files in the output
    /// directories after a killed capture: give back the space
    /// preallocated past their ends and cut a partial last record or an
    /// all-zero tail (files a running capture is writing are left alone).
    #[arg(long)]
    repair: bool,
}

/// `--rx`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Rx {
    Socket,
    Ring,
}

/// `hmtt capture --repair`.
fn repair(dirs: &[PathBuf]) -> anyhow::Result<()> {
    anyhow::ensure!(
        !dirs.is_empty(),
        "--repair needs the output directories (-o)"
    );
    for dir in dirs {
        for f in hmtt_receiver::repair::repair_dir(dir)? {
            if f.being_written {
                status!(
                    "{}: a running capture is writing it, left alone",
                    f.path.display()
                );
            } else if f.not_a_capture {
                status!("{}: not a capture file, left alone", f.path.display());
            } else if f.cut_bytes > 0 || f.zero_bytes > 0 || f.freed_bytes > 0 {
                status!(
                    "{}: {} bytes of a partial record cut, {} bytes of zeros (space no record was written into) cut, {} bytes of preallocated space given back",
                    f.path.display(),
                    f.cut_bytes,
                    f.zero_bytes,
                    f.freed_bytes
                );
            }
        }
    }
    Ok(())
}

fn udp_range(spec: &str, bind: &str) -> anyhow::Result<Vec<String>> {
    let (a, b) = spec.split_once('-').unwrap_or((spec, spec));
    let port = |p: &str| -> anyhow::Result<u16> {
        u16::try_from(parse_number(p)?).with_context(|| format!("port {p} is above 65535"))
    };
    let a = port(a).with_context(|| format!("--udp-ports `{spec}`"))?;
    let b = port(b).with_context(|| format!("--udp-ports `{spec}`"))?;
    anyhow::ensure!(a <= b, "--udp-ports `{spec}`: first port after last");
    Ok((a..=b).map(|p| format!("udp:{bind}:{p}")).collect())
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut config = match &args.run {
        Some(path) => CaptureConfig::from_toml_file(path)?,
        None => CaptureConfig::new(Vec::new(), Vec::new()),
    };
    if args.repair {
        let dirs = if args.dirs.is_empty() {
            &config.dirs
        } else {
            &args.dirs
        };
        return repair(dirs);
    }
    let mut specs = args.inputs.clone();
    if let Some(r) = &args.udp_ports {
        specs.extend(udp_range(r, &args.bind)?);
    }
    if !specs.is_empty() {
        config.inputs = CaptureConfig::inputs_from_specs(&specs)?;
    }
    if !args.dirs.is_empty() {
        config.dirs = args.dirs.clone();
    }
    if let Some(n) = args.name {
        config.name = n;
    }
    if let Some(b) = args.stripe_size.or(args.stripe_mib.map(|m| m << 20)) {
        config.stripe_bytes = b;
    }
    if let Some(b) = args.rcvbuf.or(args.rcvbuf_mib.map(|m| m << 20)) {
        config.rcvbuf_bytes = b as usize;
    }
    if let Some(rx) = args.rx {
        config.rx = match rx {
            Rx::Socket => RxPath::Socket,
            Rx::Ring => RxPath::Ring,
        };
    }
    if let Some(d) = args.duration {
        config.duration = Some(d);
    }
    if args.packets.is_some() {
        config.packets = args.packets;
    }
    config.pcapng |= args.pcapng;
    config.overwrite |= args.overwrite;
    config.preallocate &= !args.no_prealloc;
    if args.summary.is_some() {
        config.summary = args.summary;
    }
    config.progress = !crate::output::quiet();
    config.validate()?;
    let summary_path = config.summary_path();

    let stop = Arc::new(AtomicBool::new(false));
    hmtt_receiver::stop_on_signals(&stop).context("installing the SIGINT/SIGTERM handler")?;
    let handle = Capture::start(config, stop)?;
    for (i, b) in handle.buffer_bytes().iter().enumerate() {
        if let Some(b) = b {
            tracing::info!("input {i}: receive buffer {b} bytes");
        }
    }
    let summary = handle.wait()?;
    let report = SummaryReport {
        summary: &summary,
        summary_path: &summary_path,
    };
    // Dropped if standard error is closed, as status! lines are.
    let _ = write!(std::io::stderr(), "{report}");
    anyhow::ensure!(
        summary.ok,
        "capture incomplete: {} error(s), see {}",
        summary.errors.len(),
        summary_path.display()
    );
    Ok(())
}

/// clap's parser of `--duration`: `Duration::from_secs_f64` panics on what
/// it cannot hold (NaN, infinities, negatives, 2^64 seconds and more).
fn seconds(s: &str) -> Result<Duration, String> {
    let x: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    Duration::try_from_secs_f64(x)
        .map_err(|_| format!("'{s}' is not a number of seconds from 0 to 2^64-1"))
}
