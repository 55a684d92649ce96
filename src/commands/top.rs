//! `gpuledger top`.

use crate::cli::{Globals, TopPlan, UsageError};
use anyhow::{Context, Result};
use gpuledger::outputs::top::TopOptions;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Runs `top` until q.
pub fn run(g: &Globals, plan: TopPlan) -> Result<ExitCode> {
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
    let mut sampler = Sampler::new(g.open_root()?, Scope::All, SamplerOptions::default());
    let filter = super::live_filter(&mut sampler, &plan.filter)?;
    let opts = TopOptions {
        interval: plan.interval,
        sort: plan.sort,
        filter,
        color: g.paint.color,
    };
    gpuledger::outputs::top::run(sampler, &opts, &g.thresholds).context("top")?;
    Ok(ExitCode::SUCCESS)
}
