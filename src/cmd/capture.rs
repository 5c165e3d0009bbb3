//! `hmtt capture`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hmtt_receiver::live::LiveOptions;
use hmtt_receiver::report::SummaryReport;
use hmtt_receiver::xdp::XdpMode;
use hmtt_receiver::{Capture, CaptureConfig, RxPath};

use crate::output::status;
use crate::shared::parse_number;

mod args;
pub use args::Args;
use args::Rx;

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
            Rx::Xdp => RxPath::Xdp,
        };
    }
    if let Some(m) = args.xdp_mode {
        config.xdp_mode = match m {
            args::XdpMode::Auto => XdpMode::Auto,
            args::XdpMode::Native => XdpMode::Native,
            args::XdpMode::Generic => XdpMode::Generic,
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
    if args.live || args.live_jsonl.is_some() {
        config.live = Some(LiveOptions {
            view: args.live,
            lines: args.live_jsonl,
            ..LiveOptions::default()
        });
    }
    // The live view's lines take the place of the progress lines.
    config.progress = !crate::output::quiet() && !args.live;
    config.validate()?;
    let summary_path = config.summary_path();

    let stop = Arc::new(AtomicBool::new(false));
    hmtt_receiver::stop_on_signals(&stop).context("installing the SIGINT/SIGTERM handler")?;
    let mut handle = Capture::start(config, stop)?;
    let view = handle.live_snapshots().map(|snapshots| {
        std::thread::spawn(move || {
            for snapshot in snapshots {
                status!("{snapshot}");
            }
        })
    });
    for (i, b) in handle.buffer_bytes().iter().enumerate() {
        if let Some(b) = b {
            tracing::info!("input {i}: receive buffer {b} bytes");
        }
    }
    let summary = handle.wait()?;
    if let Some(view) = view {
        let _ = view.join();
    }
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
