//! `serve` options and plan.

use super::parse::{listen_addr, size};
use super::{FilterArgs, Globals};
use anyhow::Result;
use clap::{Args, ValueEnum};
use gpuledger::findings::window::{parse_since, Since};
use gpuledger::serve::{MetricsOptions, Series};
use gpuledger::units::parse_interval;
use std::net::SocketAddr;
use std::time::Duration;

/// `serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT (host names resolve, e.g. localhost:9464), or :PORT for
    /// every interface as Prometheus exporters do. Loopback by default.
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT", value_parser = listen_addr)]
    pub listen: SocketAddr,
    /// Sampling interval (10ms or more).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Duration,
    /// Fold processes with less resident GPU memory than this into pid="other".
    #[arg(long, default_value = "64MiB", value_name = "SIZE", value_parser = size)]
    pub min_process_bytes: u64,
    /// Most per-process series; further processes are folded into pid="other".
    #[arg(long, default_value_t = 5000, value_name = "N")]
    pub max_series: usize,
    /// What the per-process series are keyed by: per-process (pid, comm, rank, job labels) or
    /// per-job (no pid: a job's processes of one rank add up, so restarts make no new series).
    #[arg(long, value_enum, default_value = "per-process", value_name = "KEY")]
    pub series: SeriesArg,
    /// Show command lines and environment values in /snapshot.json as they are. By default
    /// secrets in them (the values of password, token, secret, API-key… options and variables,
    /// URL passwords, Authorization headers, mysql/sshpass -p) are replaced by <redacted>:
    /// anyone who reaches the port reads them.
    #[arg(long)]
    pub show_cmdline: bool,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Kernel-log findings before this are history (info, not a current verdict): a duration
    /// before now (30m, 2h, 1day) or an RFC 3339 time; default the last hour.
    #[arg(long, value_name = "DURATION|TIME", value_parser = parse_since)]
    pub since: Option<Since>,
}

/// `--series` ([`Series`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeriesArg {
    /// One series per process, with its pid.
    PerProcess,
    /// No pid: one series per job, rank and comm.
    PerJob,
}

impl From<SeriesArg> for Series {
    fn from(a: SeriesArg) -> Series {
        match a {
            SeriesArg::PerProcess => Series::PerProcess,
            SeriesArg::PerJob => Series::PerJob,
        }
    }
}

/// A checked `serve`.
#[derive(Debug, Clone)]
pub struct ServePlan {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Sampling interval.
    pub interval: Duration,
    /// Cardinality bounds.
    pub metrics: MetricsOptions,
    /// `--pid`/`--device`, resolved against the first sample.
    pub filter: FilterArgs,
    /// `--show-cmdline`.
    pub show_cmdline: bool,
    /// `--since`.
    pub since: Since,
}

impl ServeArgs {
    /// The plan; clap has checked each value.
    pub fn plan(&self, _: &Globals) -> Result<ServePlan> {
        Ok(ServePlan {
            listen: self.listen,
            interval: self.interval,
            metrics: MetricsOptions {
                min_process_bytes: self.min_process_bytes,
                max_process_series: self.max_series,
                series: self.series.into(),
            },
            filter: self.filter.clone(),
            show_cmdline: self.show_cmdline,
            since: self.since.unwrap_or_default(),
        })
    }
}
