//! `gpuledger serve`.

use super::Ctx;
use crate::cli::FilterArgs;
use anyhow::Result;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::serve::{serve, MetricsOptions, ServeOptions};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(
    ctx: &Ctx,
    listen: SocketAddr,
    interval: Duration,
    metrics: MetricsOptions,
    filter: &FilterArgs,
    show_cmdline: bool,
) -> Result<ExitCode> {
    let mut sampler = Sampler::new(ctx.open_root()?, Scope::All, SamplerOptions::default());
    let filter = super::live_filter(&mut sampler, filter)?;
    let opts = ServeOptions {
        listen,
        interval,
        thresholds: ctx.thresholds.clone(),
        metrics,
        connections: Default::default(),
        filter,
        show_cmdline,
    };
    serve(sampler, opts, |addr| {
        eprintln!("gpuledger serve: http://{addr}/metrics (also /healthz, /snapshot.json), sampling every {interval:?}");
    })?;
    Ok(ExitCode::SUCCESS)
}
