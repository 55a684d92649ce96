//! `project` options and plan.

use super::parse::{nonzero_bytes, size};
use super::Globals;
use anyhow::Result;
use clap::{ArgGroup, Args, ValueEnum};
use gpuledger::timeline::project::{Peers, MAX_RANKS};
use std::path::PathBuf;

/// Peer sets for `project`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeersArg {
    /// Every other rank's device (one Level Zero context over all cards).
    All,
    /// Ring neighbours only.
    Ring,
}

/// `project` options.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("basis").args(["from", "vram_per_rank"]).required(true)))]
pub struct ProjectArgs {
    /// Ranks to project to.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=i64::from(MAX_RANKS)))]
    pub ranks: u32,
    /// Take the per-peer mirror size from a recording (largest host-class bytes a rank held on
    /// a device other than its home).
    #[arg(long, value_name = "RECORDING", conflicts_with = "vram_per_rank")]
    pub from: Option<PathBuf>,
    /// Or give each rank's VRAM working set.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub vram_per_rank: Option<u64>,
    /// Peers each rank's segments are mirrored on.
    #[arg(long, value_enum, default_value = "all")]
    pub peers: PeersArg,
    /// Host RAM to project against (default: this machine's MemTotal, minus what is in use).
    #[arg(long, value_name = "SIZE", value_parser = nonzero_bytes)]
    pub host_mem: Option<u64>,
}

/// Where the per-peer mirror size comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// The largest per-peer mirror in a recording.
    Recording(PathBuf),
    /// Each rank's VRAM working set.
    VramPerRank(u64),
}

/// A checked `project`.
#[derive(Debug, Clone)]
pub struct ProjectPlan {
    /// Ranks to project to (2 to `MAX_RANKS`).
    pub ranks: u32,
    /// The per-peer mirror size's source.
    pub basis: Basis,
    /// Peer set.
    pub peers: Peers,
    /// `--host-mem`; `None` for this machine's.
    pub host_mem: Option<u64>,
}

impl ProjectArgs {
    /// The plan; clap has checked the rank range and that exactly one basis is given.
    pub fn plan(&self, _: &Globals) -> Result<ProjectPlan> {
        let basis = match (&self.from, self.vram_per_rank) {
            (Some(f), _) => Basis::Recording(f.clone()),
            (None, Some(v)) => Basis::VramPerRank(v),
            (None, None) => anyhow::bail!("project needs --from RECORDING or --vram-per-rank SIZE"),
        };
        Ok(ProjectPlan {
            ranks: self.ranks,
            basis,
            peers: match self.peers {
                PeersArg::All => Peers::All,
                PeersArg::Ring => Peers::Ring,
            },
            host_mem: self.host_mem,
        })
    }
}
