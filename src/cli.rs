//! Command-line definition (clap derive). Parsing only; `commands` does the work.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Shows, proves and prevents GPU-driver memory blowups.
///
/// With no command, prints a snapshot of this machine: host memory (with GPUActive or the
/// unaccounted residual), DRM devices, GPU memory per process × device split into device-local
/// (VRAM) and host-class (GTT/system) bytes, and findings such as the peer-mirror pattern.
#[derive(Debug, Parser)]
#[command(name = "gpuledger", version, propagate_version = true)]
pub struct Cli {
    /// Read a capture tree or a capture archive (.tar.zst) instead of the live machine.
    #[arg(long, global = true, value_name = "DIR|FILE")]
    pub root: Option<PathBuf>,

    /// Set a finding threshold, e.g. --threshold peer.min_bytes=512MiB (see --explain).
    #[arg(long = "threshold", global = true, value_name = "NAME=VALUE")]
    pub thresholds: Vec<String>,

    #[command(flatten)]
    pub snapshot: SnapshotArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options of the default snapshot command.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Print the gpuledger.snapshot/1 JSON document instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Exit with status 3 when a finding of this severity or worse exists.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,

    /// Explain a finding (peer_mirror, driver_held_host, host_pressure, evicted_to_host) and exit.
    #[arg(long, value_name = "FINDING")]
    pub explain: Option<String>,
}

/// Severity for --fail-on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Warning or critical.
    Warning,
    /// Critical only.
    Critical,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a capture of this machine (host counters, DRM devices, GPU processes' fdinfo) for
    /// offline analysis with --root, or to attach to a bug report.
    Capture {
        /// Output: FILE.tar.zst for an archive, or a directory for a plain tree.
        #[arg(short, long, default_value = "gpuledger-capture.tar.zst")]
        output: PathBuf,
        /// Only these pids (default: every process holding GPU fds).
        #[arg(long = "pid", value_name = "PID")]
        pids: Vec<u32>,
    },
}
