//! Writing the board's packets as capture files (format.md §7, source kind
//! Simulation), one per port, and finding the config window of a physical
//! range under an address mapping.

use hmtt_format::tick::TickLength;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use hmtt_format::capture::{emit_record_header, CaptureHeader, SourceKind};
use hmtt_format::config::ConfigWindow;
use hmtt_format::geometry::LINE_BYTES;
use hmtt_format::mapping::AddressMapping;

use super::{BoardConfig, BoardPacket};

/// Capture file name of board `board`, port `port` (as `hmtt sim` writes).
pub fn capture_file_name(board: u8, port: u8) -> String {
    format!("board{board}-port{port}.hmttcap")
}

/// An I/O failure with the file it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct OutputError {
    pub path: PathBuf,
    #[source]
    pub error: std::io::Error,
}

/// One port's capture file once written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PortFile {
    pub port: u8,
    pub path: PathBuf,
    pub packets: u64,
    pub bytes: u64,
}

/// The capture files of one board, one per port, written as packets come.
/// A packet's receive time is `start_ns` plus its leave tick in whole
/// nanoseconds (`start_ns` alone where the tick length is 0, unknown).
pub struct CaptureWriters {
    files: Vec<(BufWriter<File>, PortFile)>,
    start_ns: u64,
    tick: Option<TickLength>,
}

impl CaptureWriters {
    /// Creates (truncates) `dir/board<B>-port<P>.hmttcap` for every port.
    pub fn create(
        dir: &Path,
        cfg: &BoardConfig,
        start_ns: u64,
        source_name: &str,
    ) -> Result<CaptureWriters, OutputError> {
        let mut files = Vec::with_capacity(usize::from(cfg.ports));
        for port in 0..cfg.ports {
            let path = dir.join(capture_file_name(cfg.board_id, port));
            let header = CaptureHeader {
                board: cfg.board_id,
                port,
                stripe: 0,
                start_ns,
                geometry: Some(cfg.geometry),
                source_kind: SourceKind::Simulation,
                tick_ps: cfg.tick_ps,
                source_name: source_name.into(),
            }
            .emit();
            let err = |error| OutputError {
                path: path.clone(),
                error,
            };
            let mut f = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(err)?);
            f.write_all(&header).map_err(err)?;
            files.push((
                f,
                PortFile {
                    port,
                    path,
                    packets: 0,
                    bytes: header.len() as u64,
                },
            ));
        }
        Ok(CaptureWriters {
            files,
            start_ns,
            tick: TickLength::of_ps(cfg.tick_ps),
        })
    }

    /// Appends packets to their ports' files.
    pub fn write(&mut self, packets: &[BoardPacket]) -> Result<(), OutputError> {
        for p in packets {
            let (f, info) = &mut self.files[usize::from(p.port)];
            let leave_ns = self.tick.map_or(0, |t| t.whole_ns(p.leave_tick));
            let recv_ns = self.start_ns.saturating_add(leave_ns);
            let rec = emit_record_header(recv_ns, p.bytes.len() as u32, 0);
            f.write_all(&rec)
                .and_then(|_| f.write_all(&p.bytes))
                .map_err(|error| OutputError {
                    path: info.path.clone(),
                    error,
                })?;
            info.packets += 1;
            info.bytes += (rec.len() + p.bytes.len()) as u64;
        }
        Ok(())
    }

    /// Flushes every file; returns what was written.
    pub fn finish(self) -> Result<Vec<PortFile>, OutputError> {
        let mut out = Vec::with_capacity(self.files.len());
        for (mut f, info) in self.files {
            f.flush().map_err(|error| OutputError {
                path: info.path.clone(),
                error,
            })?;
            out.push(info);
        }
        Ok(out)
    }
}

/// The JSON summary of one run of the board (`hmtt board`'s summary file).
/// The golden model fills every counter ([`super::BoardCounters`]); another
/// engine (the core's Verilog under Verilator) gives its own counters type
/// `C` with the same keys, absent figures as null, and says in
/// `measurement` where each figure came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunSummary<C = super::BoardCounters> {
    /// What ran the board: `model` (the golden model) or `verilator`.
    pub engine: String,
    /// The firmware core whose build parameters the run used, if any.
    pub core: Option<String>,
    /// Where the commands came from.
    pub source: String,
    /// `rank_bits,bank_bits,row_bits,col_line_bits`.
    pub geometry: String,
    pub board_id: u8,
    /// Lanes `L` (ticks per fabric clock) and references per clock `E`.
    pub lanes: u32,
    pub refs_per_clock: u32,
    pub ports: u8,
    pub fifo_depth: usize,
    pub max_words: usize,
    pub idle_flush_ticks: u64,
    pub drain: super::DrainRate,
    pub drain_words_per_tick: f64,
    pub tick_ps: u16,
    /// Config window: rank, first row, row count.
    pub window: [u32; 3],
    pub start_mode: super::Mode,
    /// The mode at the end; null when the engine cannot see it.
    pub end_mode: Option<super::Mode>,
    pub counters: C,
    /// How an engine other than the model measured its figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measurement: Option<serde_json::Value>,
    pub files: Vec<PortFile>,
}

impl RunSummary {
    /// The golden model's summary.
    pub fn new(
        source: impl Into<String>,
        cfg: &BoardConfig,
        end_mode: super::Mode,
        counters: super::BoardCounters,
        files: Vec<PortFile>,
    ) -> RunSummary {
        RunSummary::with_counters("model", source, cfg, Some(end_mode), counters, files)
    }
}

impl<C: serde::Serialize> RunSummary<C> {
    /// A summary of `engine`'s run with its own counters type.
    pub fn with_counters(
        engine: impl Into<String>,
        source: impl Into<String>,
        cfg: &BoardConfig,
        end_mode: Option<super::Mode>,
        counters: C,
        files: Vec<PortFile>,
    ) -> RunSummary<C> {
        RunSummary {
            engine: engine.into(),
            core: None,
            source: source.into(),
            geometry: cfg.geometry.to_string(),
            board_id: cfg.board_id,
            lanes: cfg.lanes,
            refs_per_clock: cfg.refs_per_clock,
            ports: cfg.ports,
            fifo_depth: cfg.fifo_depth,
            max_words: cfg.max_words,
            idle_flush_ticks: cfg.idle_flush_ticks,
            drain: cfg.drain,
            drain_words_per_tick: cfg.drain.words_per_tick(),
            tick_ps: cfg.tick_ps,
            window: [cfg.window.rank, cfg.window.row_first, cfg.window.row_count],
            start_mode: super::Mode {
                tracing: cfg.start_tracing,
                tags_only: cfg.start_tags_only,
            },
            end_mode,
            counters,
            measurement: None,
            files,
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

/// Why a physical range is not a config window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("config space {base:#x}+{bytes:#x} is not a whole number of lines inside the DIMM's {capacity:#x} bytes")]
    Outside {
        base: u64,
        bytes: u64,
        capacity: u64,
    },
    #[error("config space {base:#x}+{bytes:#x} spans ranks {first} and {other} under this mapping; the board matches one rank")]
    SeveralRanks {
        base: u64,
        bytes: u64,
        first: u32,
        other: u32,
    },
    #[error("config space {base:#x}+{bytes:#x} maps to rows {first}..={last} but does not fill them (all banks and columns); the board matches whole rows")]
    NotWholeRows {
        base: u64,
        bytes: u64,
        first: u32,
        last: u32,
    },
    #[error(transparent)]
    Window(#[from] hmtt_format::config::WindowError),
}

/// The config window that the physical range `[base, base + bytes)` maps to
/// under `mapping`: it must map onto whole rows of one rank (all banks and
/// columns), as the board compares only rank and row.
pub fn window_for_range(
    mapping: &AddressMapping,
    base: u64,
    bytes: u64,
) -> Result<ConfigWindow, RangeError> {
    let g = *mapping.geometry();
    let capacity = g.capacity_bytes();
    let outside = RangeError::Outside {
        base,
        bytes,
        capacity,
    };
    if bytes == 0
        || !base.is_multiple_of(LINE_BYTES)
        || !bytes.is_multiple_of(LINE_BYTES)
        || base.checked_add(bytes).is_none_or(|end| end > capacity)
    {
        return Err(outside);
    }
    let lines = bytes / LINE_BYTES;
    let mut rank = None;
    let (mut first, mut last) = (u32::MAX, 0u32);
    for i in 0..lines {
        let c = g.coord(
            mapping
                .line_of(base + i * LINE_BYTES)
                .map_err(|_| outside.clone())?,
        );
        match rank {
            None => rank = Some(c.rank),
            Some(r) if r != c.rank => {
                return Err(RangeError::SeveralRanks {
                    base,
                    bytes,
                    first: r,
                    other: c.rank,
                })
            }
            _ => {}
        }
        first = first.min(c.row);
        last = last.max(c.row);
    }
    let rows = u64::from(last - first) + 1;
    // A bijection: as many distinct lines as the rows hold means all of them.
    if rows * u64::from(g.banks()) * u64::from(g.lines_per_row()) != lines {
        return Err(RangeError::NotWholeRows {
            base,
            bytes,
            first,
            last,
        });
    }
    Ok(ConfigWindow::new(
        &g,
        rank.expect("at least one line"),
        first,
        last - first + 1,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmtt_format::geometry::Geometry;

    #[test]
    fn linear_top_of_memory_is_the_default_window() {
        let g = Geometry::ddr3_default();
        let m = AddressMapping::linear(g);
        let w = window_for_range(&m, g.capacity_bytes() - (8 << 20), 8 << 20).unwrap();
        assert_eq!(w, ConfigWindow::top_of_memory(&g, 8 << 20).unwrap());
        assert!(matches!(
            window_for_range(&m, g.capacity_bytes() - (8 << 20) + 64, 8 << 20),
            Err(RangeError::Outside { .. })
        ));
        assert!(matches!(
            window_for_range(&m, 4096, 8 << 20),
            Err(RangeError::NotWholeRows { .. })
        ));
        assert!(matches!(
            window_for_range(&m, (2 << 30) - (4 << 20), 8 << 20),
            Err(RangeError::SeveralRanks { .. })
        ));
    }

    #[test]
    fn xor_bank_hashing_keeps_whole_rows() {
        let g = Geometry::ddr3_default();
        // Bank bits XORed with low row bits: rows stay whole.
        let m = AddressMapping::from_toml(hmtt_format::mapping::DDR3_BANK_XOR_TOML, g).unwrap();
        let base = g.capacity_bytes() - (8 << 20);
        let w = window_for_range(&m, base, 8 << 20).unwrap();
        assert_eq!(w.rank, 1);
        assert_eq!(w.row_count, 128);
    }
}
