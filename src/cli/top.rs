//! `top` options and plan.

use super::snapshot::SortArg;
use super::{FilterArgs, Globals};
use anyhow::Result;
use clap::Args;
use gpuledger::ledger::SortKey;
use gpuledger::units::parse_interval;
use std::time::Duration;

/// `top` options.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Refresh interval (10ms or more).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// First order of the process table, the snapshot's by default (the s key cycles it).
    #[arg(long, value_enum, default_value = "rank", value_name = "KEY")]
    pub sort: SortArg,
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// A checked `top`.
#[derive(Debug, Clone)]
pub struct TopPlan {
    /// Refresh interval.
    pub interval: Duration,
    /// First process order.
    pub sort: SortKey,
    /// `--pid`/`--device`, resolved against the first sample.
    pub filter: FilterArgs,
}

impl TopArgs {
    /// The plan; clap has checked each value.
    pub fn plan(&self, _: &Globals) -> Result<TopPlan> {
        Ok(TopPlan {
            interval: self.interval,
            sort: self.sort.key(),
            filter: self.filter.clone(),
        })
    }
}
