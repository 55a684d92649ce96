//! `gpuledger top`.

use super::{Ctx, UsageError};
use crate::cli::FilterArgs;
use anyhow::{Context, Result};
use gpuledger::ledger::SortKey;
use gpuledger::outputs::top::TopOptions;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(ctx: &Ctx, interval: Duration, sort: SortKey, filter: &FilterArgs) -> Result<ExitCode> {
    // Checked before the terminal is touched: without one, raw mode fails half-way through setup.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(UsageError(
            "top needs a terminal on stdin and stdout; for a log of snapshots use \
             `gpuledger --loop 1s` (JSON Lines with --format json), or \
             `gpuledger record --all --interval 1s` for a recording"
                .into(),
        )
        .into());
    }
    let mut sampler = Sampler::new(ctx.open_root()?, Scope::All, SamplerOptions::default());
    let filter = super::live_filter(&mut sampler, filter)?;
    let opts = TopOptions {
        interval,
        sort,
        filter,
        color: ctx.paint.color,
    };
    gpuledger::outputs::top::run(sampler, &opts, &ctx.thresholds).context("top")?;
    Ok(ExitCode::SUCCESS)
}
