//! `capture` options and plan.

use super::{Globals, OutputArgs};
use anyhow::Result;
use clap::Args;
use gpuledger::redact::Cmdlines;
use std::path::PathBuf;

/// Where `capture` writes without `-o`.
pub const DEFAULT_CAPTURE: &str = "gpuledger-capture.tar.zst";

/// `capture` options.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// Only these pids (default: every process holding GPU fds). A capture is evidence: it
    /// is never filtered by device, and --pid here chooses what is captured, not shown.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<u32>,
    /// Keep command lines and environment values as they are. By default secrets in them
    /// (the values of password, token, secret, API-key… options and variables, URL passwords,
    /// Authorization headers, mysql/sshpass -p) are replaced by <redacted>: a capture is sent.
    #[arg(long)]
    pub show_cmdline: bool,
}

/// A checked `capture`.
#[derive(Debug, Clone)]
pub struct CapturePlan {
    /// FILE.tar.zst for an archive, or a directory for a plain tree.
    pub output: PathBuf,
    /// `--force`: replace what is there.
    pub force: bool,
    /// Only these pids; `None` for every GPU process.
    pub pids: Option<Vec<u32>>,
    /// `--show-cmdline`, or secrets hidden.
    pub cmdlines: Cmdlines,
}

impl CaptureArgs {
    /// The plan; whether the output is free is checked when writing (an empty directory is).
    pub fn plan(&self, _: &Globals) -> Result<CapturePlan> {
        Ok(CapturePlan {
            output: self
                .output
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_CAPTURE)),
            force: self.output.force,
            pids: (!self.pids.is_empty()).then(|| self.pids.clone()),
            cmdlines: if self.show_cmdline {
                Cmdlines::AsIs
            } else {
                Cmdlines::Redacted
            },
        })
    }
}
