//! What to capture and where: inputs (ports), output directories, stop
//! conditions. Built from the command line or read from a TOML run file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::ReceiverError;

/// Where one port's packets come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A UDP socket bound to this address (`0.0.0.0:5000`; port 0 = any free port).
    Udp(String),
    /// Live capture of Ethernet frames on a network interface with libpcap.
    PcapLive(String),
    /// Frames read back from a .pcap or .pcapng file.
    PcapFile(PathBuf),
}

impl Source {
    /// Parses `udp:ADDR`, `pcap:IFACE`, `file:PATH`; a bare `HOST:PORT` is UDP.
    pub fn parse(spec: &str) -> Result<Source, ReceiverError> {
        let bad = || {
            ReceiverError::Config(format!(
                "input `{spec}`: expected udp:HOST:PORT, pcap:INTERFACE or file:PATH"
            ))
        };
        if let Some(rest) = spec.strip_prefix("udp:") {
            return if rest.is_empty() {
                Err(bad())
            } else {
                Ok(Source::Udp(rest.into()))
            };
        }
        if let Some(rest) = spec.strip_prefix("pcap:") {
            return if rest.is_empty() {
                Err(bad())
            } else {
                Ok(Source::PcapLive(rest.into()))
            };
        }
        if let Some(rest) = spec.strip_prefix("file:") {
            return if rest.is_empty() {
                Err(bad())
            } else {
                Ok(Source::PcapFile(rest.into()))
            };
        }
        if spec.parse::<std::net::SocketAddr>().is_ok() {
            return Ok(Source::Udp(spec.into()));
        }
        Err(bad())
    }

    /// The name written into capture headers and the summary.
    pub fn name(&self) -> String {
        match self {
            Source::Udp(a) => a.clone(),
            Source::PcapLive(i) => i.clone(),
            Source::PcapFile(p) => p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// How a UDP input receives its datagrams.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RxPath {
    /// A UDP socket read with `recvmmsg` (any system, no privilege).
    #[default]
    Socket,
    /// An AF_PACKET TPACKET_V3 ring (Linux, CAP_NET_RAW, IPv4): blocks of
    /// datagrams handed over without a system call each (see `ring`).
    Ring,
    /// An XDP program and AF_XDP sockets (Linux, root, IPv4, an input
    /// address on an interface): datagrams leave the driver before the
    /// kernel's IP and UDP layers (see `xdp`).
    Xdp,
}

/// One port to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub source: Source,
    /// The port id written into capture headers and file names.
    pub port: u8,
    /// pcap inputs: only UDP datagrams to this destination port are taken
    /// (frames with EtherType 0x88B5 always are). `None`: any UDP port.
    pub udp_port: Option<u16>,
}

impl Input {
    /// `n` UDP inputs on 127.0.0.1, port ids 0..n, on ports the system
    /// chooses (`Capture::local_addrs` tells which).
    pub fn loopback(n: u8) -> Vec<Input> {
        (0..n)
            .map(|port| Input {
                source: Source::Udp("127.0.0.1:0".into()),
                port,
                udp_port: None,
            })
            .collect()
    }
}

/// A whole capture run.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    pub inputs: Vec<Input>,
    /// Output directories (one per disk); stripes go round-robin over them.
    pub dirs: Vec<PathBuf>,
    /// File name prefix: `<name>-p<port>-s<stripe>.hmttcap`.
    pub name: String,
    /// A port's capture moves to the next stripe file (next directory) after this many bytes.
    pub stripe_bytes: u64,
    /// Preallocate each stripe file (fallocate) where the filesystem allows it.
    pub preallocate: bool,
    /// Overwrite existing capture files of the same name.
    pub overwrite: bool,
    /// Socket receive buffer asked for, bytes; with [`RxPath::Ring`] the
    /// ring's size (allocated in the kernel at the start); with
    /// [`RxPath::Xdp`] each port's AF_XDP frames (allocated at the start).
    pub rcvbuf_bytes: usize,
    /// How UDP inputs receive.
    pub rx: RxPath,
    /// With [`RxPath::Xdp`]: how the XDP program is attached.
    pub xdp_mode: crate::xdp::XdpMode,
    /// Datagrams per buffer handed to a writer (and per recvmmsg call at most).
    pub batch_packets: usize,
    /// Buffers per input (memory = inputs * buffers * batch_packets * 9 KiB).
    pub buffers_per_input: usize,
    /// Largest datagram kept whole; longer ones are cut and rejected.
    pub max_packet: usize,
    /// A partly filled buffer is handed on after this long (checked when a
    /// receive returns: at the latest after the 50 ms receive timeout), so
    /// a kill loses at most this plus 50 ms of received packets.
    pub flush_after: Duration,
    /// Also write `<name>-p<port>.pcapng` per port for Wireshark.
    pub pcapng: bool,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop once this many valid packets were received over all ports.
    pub packets: Option<u64>,
    /// Where the JSON summary goes (default: `<first dir>/<name>-summary.json`).
    pub summary: Option<PathBuf>,
    /// Draw per-port progress lines when stderr is a terminal.
    pub progress: bool,
    /// Show and/or write the boards' statistics records as they arrive.
    pub live: Option<crate::live::LiveOptions>,
}

/// `mib` MiB in bytes, when `mib` is 1..=`max` (the same ranges as
/// `hmtt capture`'s options).
fn mib_in(key: &str, mib: u64, max: u64) -> Result<u64, ReceiverError> {
    if !(1..=max).contains(&mib) {
        return Err(ReceiverError::Config(format!(
            "{key} = {mib} is out of its range 1..={max}"
        )));
    }
    Ok(mib << 20)
}

impl CaptureConfig {
    /// A configuration with defaults for the given inputs and directories.
    pub fn new(inputs: Vec<Input>, dirs: Vec<PathBuf>) -> CaptureConfig {
        CaptureConfig {
            inputs,
            dirs,
            name: "capture".into(),
            stripe_bytes: 256 << 20,
            preallocate: true,
            overwrite: false,
            rcvbuf_bytes: 256 << 20,
            rx: RxPath::Socket,
            xdp_mode: crate::xdp::XdpMode::Auto,
            batch_packets: 64,
            buffers_per_input: 64,
            max_packet: hmtt_format::capture::MAX_RECORD_LEN,
            flush_after: Duration::from_millis(100),
            pcapng: false,
            duration: None,
            packets: None,
            summary: None,
            progress: true,
            live: None,
        }
    }

    /// A capture of a known number of `packets` sent over loopback to
    /// `ports` inputs on one machine (`hmtt demo`): files named `name` in
    /// `dir`, quiet, not preallocated, a 64 MiB socket buffer, and a time
    /// bound that grows with the packets (30 s plus 1 s per 20000).
    pub fn loopback_run(ports: u8, dir: &Path, name: &str, packets: u64) -> CaptureConfig {
        CaptureConfig {
            name: name.into(),
            progress: false,
            preallocate: false,
            rcvbuf_bytes: 64 << 20,
            packets: Some(packets),
            duration: Some(Duration::from_secs(30 + packets / 20_000)),
            ..CaptureConfig::new(Input::loopback(ports), vec![dir.to_path_buf()])
        }
    }

    /// Inputs from source specs, port ids in order (0, 1, ...).
    pub fn inputs_from_specs(specs: &[String]) -> Result<Vec<Input>, ReceiverError> {
        specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Ok(Input {
                    source: Source::parse(s)?,
                    port: u8::try_from(i)
                        .map_err(|_| ReceiverError::Config("more than 255 inputs".into()))?,
                    udp_port: None,
                })
            })
            .collect()
    }

    /// Reads a TOML run file (see `RunFile`).
    pub fn from_toml_file(path: &Path) -> Result<CaptureConfig, ReceiverError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ReceiverError::Config(format!("{}: {e}", path.display())))?;
        CaptureConfig::from_toml(&text).map_err(|e| match e {
            ReceiverError::Config(m) => ReceiverError::Config(format!("{}: {m}", path.display())),
            e => e,
        })
    }

    /// Parses a TOML run file.
    pub fn from_toml(text: &str) -> Result<CaptureConfig, ReceiverError> {
        let run: RunFile =
            toml::from_str(text).map_err(|e| ReceiverError::Config(e.to_string()))?;
        let mut inputs = Vec::new();
        for (i, spec) in run.input.iter().enumerate() {
            let given = [spec.udp.is_some(), spec.pcap.is_some(), spec.file.is_some()];
            if given.iter().filter(|&&g| g).count() != 1 {
                return Err(ReceiverError::Config(format!(
                    "input {i}: give exactly one of udp, pcap, file"
                )));
            }
            let source = if let Some(a) = &spec.udp {
                Source::Udp(a.clone())
            } else if let Some(d) = &spec.pcap {
                Source::PcapLive(d.clone())
            } else {
                Source::PcapFile(spec.file.clone().expect("checked above"))
            };
            let default_port = u8::try_from(i)
                .map_err(|_| ReceiverError::Config("more than 255 inputs".into()))?;
            inputs.push(Input {
                source,
                port: spec.port.unwrap_or(default_port),
                udp_port: spec.udp_port,
            });
        }
        let mut c = CaptureConfig::new(inputs, run.dirs);
        if let Some(n) = run.name {
            c.name = n;
        }
        if let Some(m) = run.stripe_mib {
            c.stripe_bytes = mib_in("stripe_mib", m, 1 << 24)?;
        }
        if let Some(p) = run.preallocate {
            c.preallocate = p;
        }
        if let Some(b) = run.rcvbuf_mib {
            c.rcvbuf_bytes = mib_in("rcvbuf_mib", b as u64, 2047)? as usize;
        }
        if let Some(rx) = run.rx {
            c.rx = rx;
        }
        if let Some(m) = run.xdp_mode {
            c.xdp_mode = m;
        }
        if let Some(b) = run.batch_packets {
            c.batch_packets = b;
        }
        if let Some(b) = run.buffers_per_input {
            c.buffers_per_input = b;
        }
        c.pcapng = run.pcapng.unwrap_or(false);
        c.duration = run.duration_s.map(Duration::from_secs_f64);
        c.packets = run.packets;
        c.summary = run.summary;
        c.validate()?;
        Ok(c)
    }

    /// Checks what can be checked before opening anything.
    pub fn validate(&self) -> Result<(), ReceiverError> {
        if self.inputs.is_empty() {
            return Err(ReceiverError::Config(
                "no inputs: give at least one port to capture".into(),
            ));
        }
        if self.dirs.is_empty() {
            return Err(ReceiverError::Config("no output directory".into()));
        }
        let mut ports: Vec<u8> = self.inputs.iter().map(|i| i.port).collect();
        ports.sort_unstable();
        if ports.windows(2).any(|w| w[0] == w[1]) {
            return Err(ReceiverError::Config(
                "two inputs have the same port id".into(),
            ));
        }
        if self.batch_packets == 0 || self.batch_packets > 1024 {
            return Err(ReceiverError::Config(
                "batch_packets must be in 1..=1024".into(),
            ));
        }
        if self.buffers_per_input < 2 {
            return Err(ReceiverError::Config(
                "buffers_per_input must be at least 2".into(),
            ));
        }
        if self.max_packet < hmtt_format::packet::HEADER_LEN
            || self.max_packet > hmtt_format::capture::MAX_RECORD_LEN
        {
            return Err(ReceiverError::Config(format!(
                "max_packet must be in {}..={}",
                hmtt_format::packet::HEADER_LEN,
                hmtt_format::capture::MAX_RECORD_LEN
            )));
        }
        if self.stripe_bytes == 0 {
            return Err(ReceiverError::Config("stripe size must not be 0".into()));
        }
        Ok(())
    }

    /// The summary file's path.
    pub fn summary_path(&self) -> PathBuf {
        self.summary
            .clone()
            .unwrap_or_else(|| self.dirs[0].join(format!("{}-summary.json", self.name)))
    }
}

/// The TOML run file.
///
/// ```toml
/// name = "run1"
/// dirs = ["/disk0/hmtt", "/disk1/hmtt"]
/// stripe_mib = 256
/// rx = "ring"          # or "socket" (the default), or "xdp"
/// xdp_mode = "auto"    # with rx = "xdp": or "native", "generic"
/// duration_s = 60.0
/// [[input]]
/// udp = "0.0.0.0:5000"
/// [[input]]
/// pcap = "eth2"        # raw frames: UDP/IPv4 or EtherType 0x88B5
/// port = 1
/// udp_port = 5001
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunFile {
    pub name: Option<String>,
    pub dirs: Vec<PathBuf>,
    pub stripe_mib: Option<u64>,
    pub preallocate: Option<bool>,
    pub rcvbuf_mib: Option<usize>,
    pub rx: Option<RxPath>,
    pub xdp_mode: Option<crate::xdp::XdpMode>,
    pub batch_packets: Option<usize>,
    pub buffers_per_input: Option<usize>,
    pub pcapng: Option<bool>,
    pub duration_s: Option<f64>,
    pub packets: Option<u64>,
    pub summary: Option<PathBuf>,
    #[serde(default)]
    pub input: Vec<InputSpec>,
}

/// One `[[input]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    pub udp: Option<String>,
    pub pcap: Option<String>,
    pub file: Option<PathBuf>,
    pub port: Option<u8>,
    pub udp_port: Option<u16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_run_expects_its_packets_on_loopback() {
        let c = CaptureConfig::loopback_run(6, Path::new("d"), "demo", 40_000);
        assert_eq!(c.inputs.len(), 6);
        assert!(c
            .inputs
            .iter()
            .all(|i| matches!(&i.source, Source::Udp(a) if a == "127.0.0.1:0")));
        assert_eq!(
            (c.name.as_str(), c.dirs.as_slice()),
            ("demo", &[PathBuf::from("d")][..])
        );
        assert_eq!(c.packets, Some(40_000));
        assert_eq!(c.duration, Some(Duration::from_secs(32)));
        assert!(!c.progress && !c.preallocate);
    }

    #[test]
    fn specs_parse() {
        assert_eq!(
            Source::parse("udp:0.0.0.0:5000").unwrap(),
            Source::Udp("0.0.0.0:5000".into())
        );
        assert_eq!(
            Source::parse("127.0.0.1:5001").unwrap(),
            Source::Udp("127.0.0.1:5001".into())
        );
        assert_eq!(
            Source::parse("pcap:eth1").unwrap(),
            Source::PcapLive("eth1".into())
        );
        assert_eq!(
            Source::parse("file:a.pcap").unwrap(),
            Source::PcapFile("a.pcap".into())
        );
        assert!(Source::parse("eth1").is_err());
        assert!(Source::parse("udp:").is_err());
    }

    #[test]
    fn run_file_parses_and_checks() {
        let c = CaptureConfig::from_toml(
            r#"
            name = "r"
            dirs = ["/a", "/b"]
            stripe_mib = 4
            packets = 10
            rx = "ring"
            [[input]]
            udp = "0.0.0.0:5000"
            [[input]]
            pcap = "eth2"
            port = 7
            udp_port = 5001
            "#,
        )
        .unwrap();
        assert_eq!(c.inputs.len(), 2);
        assert_eq!(c.inputs[1].port, 7);
        assert_eq!(c.inputs[1].udp_port, Some(5001));
        assert_eq!(c.stripe_bytes, 4 << 20);
        assert_eq!(c.packets, Some(10));
        assert_eq!(c.rx, RxPath::Ring);
        let c = CaptureConfig::from_toml(
            "dirs=['/a']\nrx='xdp'\nxdp_mode='generic'\n[[input]]\nudp='10.0.0.1:5000'\n",
        )
        .unwrap();
        assert_eq!(
            (c.rx, c.xdp_mode),
            (RxPath::Xdp, crate::xdp::XdpMode::Generic)
        );
        assert!(CaptureConfig::from_toml("dirs=['/a']\nxdp_mode='fast'\n").is_err());
        assert!(CaptureConfig::from_toml("dirs=['/a']\nrx='mmap'\n").is_err());
        let err =
            CaptureConfig::from_toml("dirs=['/a']\n[[input]]\nudp='x:1'\npcap='e'\n").unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
        let err = CaptureConfig::from_toml("dirs=['/a']\n[[input]]\nudp='127.0.0.1:1'\nport=0\n[[input]]\nudp='127.0.0.1:2'\nport=0\n").unwrap_err();
        assert!(err.to_string().contains("same port"), "{err}");
        assert!(CaptureConfig::from_toml("dirs=['/a']\nbogus=1\n").is_err());
        // Sizes that would overflow bytes, or mean nothing, are refused.
        for bad in [
            "stripe_mib = 17592186044416",
            "stripe_mib = 0",
            "rcvbuf_mib = 4096",
        ] {
            let text = format!("dirs=['/a']\n{bad}\n[[input]]\nudp='127.0.0.1:1'\n");
            let err = CaptureConfig::from_toml(&text).unwrap_err();
            assert!(err.to_string().contains("out of its range"), "{bad}: {err}");
        }
    }
}
