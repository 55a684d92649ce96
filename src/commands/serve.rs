//! `gpuledger serve`.

use anyhow::{bail, Context, Result};
use gpuledger::findings::Thresholds;
use gpuledger::sampler::{Sampler, SamplerOptions, Scope};
use gpuledger::serve::{serve, MetricsOptions, ServeOptions};
use gpuledger::units::{parse_duration, parse_size_spec, SizeSpec};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

pub fn run(
    root: Option<&Path>,
    listen: SocketAddr,
    interval: &str,
    min_process_bytes: &str,
    max_series: usize,
    thresholds: Thresholds,
) -> Result<ExitCode> {
    let interval = parse_duration(interval).map_err(anyhow::Error::msg)?;
    let min_process_bytes =
        match parse_size_spec(min_process_bytes).context("in --min-process-bytes")? {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(_) => bail!("--min-process-bytes takes a size such as 64MiB"),
        };
    let sampler = Sampler::new(
        super::open_root(root)?,
        Scope::All,
        SamplerOptions::default(),
    );
    let opts = ServeOptions {
        listen,
        interval,
        thresholds,
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
