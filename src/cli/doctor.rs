//! `doctor` options and plan.

use super::parse::nonzero_bytes;
use super::{Format, FormatArgs, Globals};
use anyhow::Result;
use clap::Args;
use gpuledger::findings::window::{parse_since, Since};
use gpuledger::findings::Severity;
use std::path::PathBuf;

/// `doctor` options.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub output: FormatArgs,
    /// Device memory each rank allocates, to project the pinned host RAM against this machine.
    #[arg(long, value_name = "SIZE", value_parser = nonzero_bytes)]
    pub vram_per_rank: Option<u64>,
    /// Kernel-log findings before this are history (info, not a current verdict): a duration
    /// before now (30m, 2h, 1day) or an RFC 3339 time; default the last hour.
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    pub since: Option<Since>,
    /// A directory of known-issues entry files read over the built-in base (after
    /// /etc/gpuledger/known-issues.d): new ids are added, an id already known is replaced when
    /// the file's entry is dated later.
    #[arg(long, value_name = "DIR")]
    pub known_issues: Option<PathBuf>,
    /// The job's command, after `--`: its environment is this shell's, read and not run.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A checked `doctor`.
#[derive(Debug, Clone)]
pub struct DoctorPlan {
    /// Table or JSON (gpuledger.doctor/1).
    pub format: Format,
    /// `--fail-on`, over the snapshot's findings and the known issues that apply.
    pub fail_on: Option<Severity>,
    /// `--vram-per-rank`.
    pub vram_per_rank: Option<u64>,
    /// The job's command (read, not run).
    pub command: Vec<String>,
    /// `--since`.
    pub since: Since,
    /// `--known-issues`.
    pub known_issues: Option<PathBuf>,
}

impl DoctorArgs {
    /// The plan.
    pub fn plan(&self, _: &Globals) -> Result<DoctorPlan> {
        Ok(DoctorPlan {
            format: self.output.format(),
            fail_on: self.output.fail_on(),
            vram_per_rank: self.vram_per_rank,
            command: self.command.clone(),
            since: self.since.unwrap_or_default(),
            known_issues: self.known_issues.clone(),
        })
    }
}
