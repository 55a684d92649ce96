//! `gpuledger serve`.

use crate::cli::{Globals, ServePlan};
use anyhow::Result;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::serve::{serve, ServeOptions};
use std::process::ExitCode;

/// Runs `serve` until killed.
pub fn run(g: &Globals, plan: ServePlan) -> Result<ExitCode> {
    let interval = plan.interval;
    let mut sampler = Sampler::new(g.open_root()?, Scope::All, SamplerOptions::default());
    let filter = super::live_filter(&mut sampler, &plan.filter)?;
    let opts = ServeOptions {
        listen: plan.listen,
        interval,
        thresholds: g.thresholds.clone(),
        metrics: plan.metrics,
        connections: Default::default(),
        filter,
        show_cmdline: plan.show_cmdline,
        since: plan.since,
    };
    serve(sampler, opts, |addr| {
        eprintln!("gpuledger serve: http://{addr}/metrics (also /healthz, /snapshot.json), sampling every {interval:?}");
    })?;
    Ok(ExitCode::SUCCESS)
}
