//! `hmtt icode`: inject I-codes through `/dev/hmtt` (or a plain file
//! standing in for it), naming user events through the events file.

use std::path::PathBuf;

use anyhow::Context;
use hmtt_format::config::{ConfigWindow, InnerCommand};
use hmtt_format::geometry::Geometry;
use hmtt_icode::{Access, ConfigSpace, EventRegistry};

use crate::output::to_stdout;
use crate::shared::parse_number;

/// Arguments of `hmtt icode`.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    hmtt icode begin 0x40 end\n  \
    hmtt icode --events-file events.toml --register sort-begin\n  \
    hmtt icode --file space.bin --base 0x10000000 0x41   (dry run on a plain file)\n  \
    hmtt icode --info")]
pub struct Args {
    /// Events, in order: a number (decimal or 0x-hex), an inner command
    /// by its name as dumps print it, in any case and with - or _
    /// (begin-tracing, END_TRACING, tags-only, trace-all, insert-tag,
    /// sync; begin and end for short), or a user event name from the
    /// events file.
    #[arg(required_unless_present_any = ["info", "load_kernel_mapping"])]
    pub events: Vec<String>,
    /// The configuration-space device.
    #[arg(long, default_value = "/dev/hmtt")]
    pub device: PathBuf,
    /// Map this plain file instead of the device (a dry run; stores land in it).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Physical base address of --file.
    #[arg(long, default_value = "0x10000000", value_parser = parse_number)]
    pub base: u64,
    /// Events file (TOML, docs/format.md section 9) that names user events.
    #[arg(long)]
    pub events_file: Option<PathBuf>,
    /// Register names not yet in the events file at the next free index.
    #[arg(long, requires = "events_file")]
    pub register: bool,
    /// Touch with loads (as in the paper) instead of stores.
    #[arg(long)]
    pub read: bool,
    /// Have the kernel module touch the line (HMTT_IOC_ICODE) instead of
    /// the user mapping (with its loaded mapping: see --load-kernel-mapping).
    #[arg(long, conflicts_with = "file")]
    pub via_kernel: bool,
    /// Address mapping file (TOML) of a hashed memory controller; the window
    /// is then the top of memory of --geometry, the size of the space.
    #[arg(long)]
    pub mapping: Option<PathBuf>,
    /// DIMM geometry for --mapping: a preset name or rank,bank,row,col_line bits.
    #[arg(long, default_value = "ddr3-4g")]
    pub geometry: Geometry,
    /// With --mapping: also load it into the kernel module, so that its own
    /// touches (kernel-log tags, --via-kernel) follow it (needs root).
    #[arg(long, requires = "mapping")]
    pub load_kernel_mapping: bool,
    /// Print the module's view (base, size, log counters) and exit.
    #[arg(long, conflicts_with = "file")]
    pub info: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut space = match &args.file {
        Some(file) => ConfigSpace::from_file(file, args.base)?,
        None => ConfigSpace::open_device(&args.device)?,
    };
    if args.info {
        let info = space.info()?;
        to_stdout("writing the module's state", |out| {
            writeln!(out, "base        {:#x}", info.base)?;
            writeln!(out, "size        {:#x}", info.size)?;
            writeln!(out, "line size   {}", info.line_size)?;
            writeln!(out, "version     {}", info.version)?;
            writeln!(out, "log ring    {} records", info.log_capacity)?;
            writeln!(out, "log written {}", info.log_written)?;
            writeln!(out, "log lost    {}", info.log_overruns)?;
            writeln!(out, "icodes      {}", info.icodes)?;
            writeln!(out, "last phys   {:#x}", info.last_phys)?;
            writeln!(out, "hook misses {}", info.probe_misses)?;
            Ok(())
        })?;
        return Ok(());
    }
    if let Some(path) = &args.mapping {
        let mapping = hmtt_merge::side_files::read_mapping(path, args.geometry)?;
        let window = ConfigWindow::top_of_memory(&args.geometry, space.size())
            .context("the configuration space as a window at the top of memory")?;
        space = space.with_mapping(mapping, window);
        if args.load_kernel_mapping {
            space.load_kernel_mapping()?;
        }
    }
    let access = if args.read {
        Access::Read
    } else {
        Access::Write
    };
    let mut registry = match &args.events_file {
        Some(path) => Some(EventRegistry::open(path)?),
        None => None,
    };
    let mut registered = false;

    // Resolve every event before touching anything: all or nothing.
    let mut indices = Vec::with_capacity(args.events.len());
    for event in &args.events {
        let index = if let Ok(n) = parse_number(event) {
            u32::try_from(n).with_context(|| format!("event {event} is too large"))?
        } else if let Some(command) = InnerCommand::from_name(event) {
            command.index()
        } else if let Some(registry) = registry.as_mut() {
            match registry.get(event) {
                Some(index) => index,
                None if args.register => {
                    registered = true;
                    registry.register(event)?
                }
                None => anyhow::bail!(
                    "event {event:?} is not in {}; pass --register to add it",
                    registry
                        .path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ),
            }
        } else {
            anyhow::bail!(
                "event {event:?} is not a number or an inner command; named events need --events-file"
            );
        };
        space.offset_of(index)?;
        indices.push(index);
    }
    if registered {
        if let Some(registry) = &registry {
            registry.save()?;
        }
    }
    for (event, index) in args.events.iter().zip(indices) {
        if args.via_kernel {
            let phys = space.kernel_icode(index, access)?;
            tracing::info!(event, index, phys, "I-code by the kernel");
        } else {
            space.touch(index, access)?;
            tracing::info!(event, index, "I-code");
        }
    }
    Ok(())
}
