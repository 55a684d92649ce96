//! `demo` and `simulate` options and plans.

use super::parse::{nonzero_bytes, scenario, scenario_value};
use super::{Globals, OutputArgs};
use anyhow::Result;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use gpuledger::sim::{Backing, Scenario, SimParams, Visibility};
use gpuledger::units::parse_duration;
use std::path::PathBuf;
use std::time::Duration;

/// `demo` options.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the simulated trees and recordings in this directory.
    #[arg(short = 'o', long = "output", alias = "keep", value_name = "DIR")]
    pub output: Option<PathBuf>,
}

impl DemoArgs {
    /// The plan: where to keep the runs, if anywhere.
    pub fn plan(&self, _: &Globals) -> Result<Option<PathBuf>> {
        Ok(self.output.clone())
    }
}

/// `simulate` options.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The scenario (--help describes each).
    #[arg(value_parser = PossibleValuesParser::new(Scenario::ALL.map(scenario_value)).try_map(scenario))]
    pub scenario: Scenario,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Ranks (one GPU each, 1 to 64); default from the scenario.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub ranks: Option<u32>,
    /// What the runtime does with peer registrations: back them with pinned host pages
    /// (compute-runtime 26.09+ on Battlemage, where EnableDeferBacking=1 is the default) or keep
    /// them as bookkeeping (26.05, or NEOReadDebugKeys=1 EnableDeferBacking=0).
    #[arg(long, value_enum, default_value = "pinned")]
    pub backing: BackingArg,
    /// Host RAM of the simulated machine.
    #[arg(long, default_value = "64GiB", value_name = "SIZE", value_parser = nonzero_bytes)]
    pub host_mem: u64,
    /// Allocator segment sizes, comma-separated (default: six of the seed's 3,174,400 KiB).
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', value_parser = nonzero_bytes)]
    pub segments: Vec<u64>,
    /// Simulate a kernel without GPUActive (before Linux 7.1): pins show only as unaccounted.
    #[arg(long)]
    pub no_gpu_accounting: bool,
    /// Cards each rank sees, as a device mask in its environment would set them: all, its own
    /// card only, or pairs (ranks 0-1 see cards 0-1, ranks 2-3 cards 2-3, ...).
    #[arg(long, default_value = "all", value_name = "WHICH",
          value_parser = clap::builder::PossibleValuesParser::new(Visibility::ALL.map(Visibility::name)).try_map(super::parse::visibility))]
    pub visible: Visibility,
    /// Keep rewriting the tree in place for this long as the job runs (e.g. 60s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub live: Option<Duration>,
    /// Write the tree as it stands this far into the run (e.g. 8s), instead of the moment the
    /// job dies or, when it survives, its plateau.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, conflicts_with = "live")]
    pub at: Option<Duration>,
}

/// Backing modes ([`Backing`]). The hidden aliases are the names earlier releases used, which
/// read the reverse of the driver's switch: `eager` was pinned, `deferred` registered-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackingArg {
    /// Pinned at registration (26.22-like; EnableDeferBacking=1).
    #[value(alias = "eager")]
    Pinned,
    /// Registered only, not backed (26.05-like; EnableDeferBacking=0).
    #[value(alias = "deferred")]
    RegisteredOnly,
}

/// A checked `simulate`.
#[derive(Debug, Clone)]
pub struct SimulatePlan {
    /// The scenario with every option (and the environment's overrides) applied.
    pub params: SimParams,
    /// The directory of the tree.
    pub output: PathBuf,
    /// `--force`: replace what a non-empty directory holds.
    pub force: bool,
    /// `--live`: rewrite the tree for this long.
    pub live: Option<Duration>,
    /// `--at`: the moment written.
    pub at: Option<Duration>,
}

impl SimulateArgs {
    /// The plan; clap has checked the values and that -o is given.
    pub fn plan(&self, _: &Globals) -> Result<SimulatePlan> {
        let mut p = SimParams::new(self.scenario);
        if let Some(r) = self.ranks {
            p.ranks = r;
        }
        p.backing = match self.backing {
            BackingArg::Pinned => Backing::Pinned,
            BackingArg::RegisteredOnly => Backing::RegisteredOnly,
        };
        p.host_mem = self.host_mem;
        if !self.segments.is_empty() {
            p.segments = self.segments.clone();
        }
        p.gpu_accounting = !self.no_gpu_accounting;
        p.visibility = self.visible;
        p.apply_env(|k| std::env::var(k).ok());
        if let Some(d) = self.live {
            p.duration_s = d.as_secs_f64().max(1.0);
        }
        let Some(output) = self.output.output.clone() else {
            anyhow::bail!("simulate needs -o DIR");
        };
        Ok(SimulatePlan {
            params: p,
            output,
            force: self.output.force,
            live: self.live,
            at: self.at,
        })
    }
}
