//! `gpuledger top`.

use super::{Ctx, UsageError};
use anyhow::{Context, Result};
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(ctx: &Ctx, interval: Duration) -> Result<ExitCode> {
    // Checked before the terminal is touched: without one, raw mode fails half-way through setup.
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(UsageError(
            "top needs a terminal on stdin and stdout; for a log of snapshots use \
             `gpuledger record --all --interval 1s`, or `gpuledger --json` for one snapshot"
                .into(),
        )
        .into());
    }
    let sampler = Sampler::new(ctx.open_root()?, Scope::All, SamplerOptions::default());
    gpuledger::outputs::top::run(sampler, interval, &ctx.thresholds).context("top")?;
    Ok(ExitCode::SUCCESS)
}
