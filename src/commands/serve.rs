//! `gpuledger serve`.

use super::Ctx;
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
    min_process_bytes: u64,
    max_series: usize,
) -> Result<ExitCode> {
    let sampler = Sampler::new(ctx.open_root()?, Scope::All, SamplerOptions::default());
    let opts = ServeOptions {
        listen,
        interval,
        thresholds: ctx.thresholds.clone(),
        metrics: MetricsOptions {
            min_process_bytes,
            max_process_series: max_series,
        },
        connections: Default::default(),
    };
    serve(sampler, opts, |addr| {
        eprintln!("gpuledger serve: http://{addr}/metrics (also /healthz, /snapshot.json), sampling every {interval:?}");
    })?;
    Ok(ExitCode::SUCCESS)
}
