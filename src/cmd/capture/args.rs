//! The arguments of `hmtt capture`.

use std::path::PathBuf;
use std::time::Duration;

use crate::shared::size_in;

/// Arguments of `hmtt capture`.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  hmtt capture --udp-ports 5000-5002 -o /disk0/hmtt -o /disk1/hmtt --name run1
  hmtt capture --udp-ports 5000-5011 --rx ring -o /disk0/hmtt --rcvbuf 64M
  hmtt capture --udp-ports 5000-5002 --bind 10.0.0.1 --rx xdp -o /disk0/hmtt
  hmtt capture -i pcap:eth1 -i pcap:eth2 -o /raid/hmtt --duration 60
  hmtt capture -i file:board.pcapng -o out --pcapng
  hmtt capture --run run.toml
  hmtt capture --repair -o /disk0/hmtt -o /disk1/hmtt
  hmtt capture --udp-ports 5000-5002 -o out --live --live-jsonl stats.fifo

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
    pub(super) inputs: Vec<String>,
    /// UDP ports to listen on, e.g. 5000-5002 (port ids 0, 1, ... after --input's).
    #[arg(long, value_name = "FIRST-LAST")]
    pub(super) udp_ports: Option<String>,
    /// Address the --udp-ports sockets bind to.
    #[arg(long, default_value = "0.0.0.0")]
    pub(super) bind: String,
    /// Output directory, repeatable (one per disk); stripes go round-robin over them.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub(super) dirs: Vec<PathBuf>,
    /// TOML run file (inputs, dirs, options); command-line options override it.
    #[arg(long, value_name = "FILE")]
    pub(super) run: Option<PathBuf>,
    /// Run name: files are NAME-pPP-sSSSSS.hmttcap.
    #[arg(long)]
    pub(super) name: Option<String>,
    /// Stripe size, 1M to 16T (K, M, G, T suffixes, powers of 1024): a
    /// port's capture moves to the next directory after it [default: 256M].
    #[arg(long, value_name = "SIZE", value_parser = size_in(1 << 20, 1 << 44, "1M to 16T"))]
    pub(super) stripe_size: Option<u64>,
    /// --stripe-size in MiB: its old spelling, kept for one release
    /// (renamed::RENAMED_OPTIONS).
    #[arg(long, hide = true, conflicts_with = "stripe_size",
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub(super) stripe_mib: Option<u64>,
    /// Socket receive buffer to ask for, 1M to 2047M (the kernel takes at
    /// most 2 GiB); with --rx ring, each port's ring (allocated at the
    /// start) [default: 256M].
    #[arg(long, value_name = "SIZE", value_parser = size_in(1 << 20, 2047 << 20, "1M to 2047M"))]
    pub(super) rcvbuf: Option<u64>,
    /// --rcvbuf in MiB: its old spelling, kept for one release
    /// (renamed::RENAMED_OPTIONS).
    #[arg(long, hide = true, conflicts_with = "rcvbuf",
          value_parser = clap::value_parser!(u64).range(1..=2047))]
    pub(super) rcvbuf_mib: Option<u64>,
    /// How UDP inputs receive: `socket` (recvmmsg on a UDP socket) or
    /// `ring` (an AF_PACKET TPACKET_V3 ring per port, no system call per packet;
    /// needs CAP_NET_RAW and IPv4; --rcvbuf is then the ring's size,
    /// allocated at the start), or `xdp` (an XDP program and AF_XDP sockets
    /// on the interface of each input's address; needs root and IPv4;
    /// --rcvbuf is then each port's frames, allocated at the start).
    #[arg(long, value_enum, value_name = "PATH")]
    pub(super) rx: Option<Rx>,
    /// With --rx xdp: attach the XDP program in the driver (`native`), after
    /// the kernel built its packet (`generic`, any interface), or native
    /// where the driver has it, else generic (`auto`) [default: auto].
    #[arg(long, value_enum, value_name = "MODE")]
    pub(super) xdp_mode: Option<XdpMode>,
    /// Stop after this many seconds (finite, at least 0, at most 2^64-1).
    #[arg(long, value_name = "SECONDS", value_parser = super::seconds)]
    pub(super) duration: Option<Duration>,
    /// Stop after this many valid packets over all ports.
    #[arg(long, value_name = "N")]
    pub(super) packets: Option<u64>,
    /// Also write NAME-pPP.pcapng per port (opens in Wireshark).
    #[arg(long)]
    pub(super) pcapng: bool,
    /// Where to write the JSON summary (default: first output dir).
    #[arg(long, value_name = "FILE")]
    pub(super) summary: Option<PathBuf>,
    /// Overwrite capture files of the same name.
    #[arg(long)]
    pub(super) overwrite: bool,
    /// No preallocation of stripe files.
    #[arg(long)]
    pub(super) no_prealloc: bool,
    /// Instead of capturing, repair the capture files in the output
    /// directories after a killed capture: give back the space
    /// preallocated past their ends and cut a partial last record or an
    /// all-zero tail (files a running capture is writing are left alone).
    #[arg(long)]
    pub(super) repair: bool,
    /// Show the boards' statistics records as they arrive (docs/guide.md,
    /// "Live view"): per board, once a second, bandwidth, row-hit rate,
    /// references lost and the hottest pages; instead of the progress lines.
    #[arg(long)]
    pub(super) live: bool,
    /// Write each statistics record as it arrives, as a line of JSON
    /// (the side file's lines, docs/format.md §5.3), to FILE, a FIFO a
    /// program reads, or `-` (standard output).
    #[arg(long, value_name = "FILE")]
    pub(super) live_jsonl: Option<PathBuf>,
}

/// `--rx`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rx {
    Socket,
    Ring,
    Xdp,
}

/// `--xdp-mode`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum XdpMode {
    Auto,
    Native,
    Generic,
}
